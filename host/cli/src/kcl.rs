//! `plait kcl run`: runs KCL programs offline as `kcl run` does, with
//! plait's own KCL (the `plait-kcl` crate), so authors try the KCL a
//! Composition carries before a cluster runs it. `plait kcl import`:
//! writes the KCL models of CRDs and XRDs as `kcl import -m crd` (and, for
//! project functions, `up`) generates them.

use anyhow::Context as _;
use plait_kcl::r#import::{Document, DocumentKind, ImportOptions, Layout};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum KclCommand {
    /// Run KCL files or directories and print their values as YAML, as
    /// `kcl run` does (what `print()` wrote first; a top-level list of
    /// configs as a YAML stream). A KCL error is printed as KCL prints it,
    /// and the command exits 1.
    Run(RunArgs),
    /// Write the KCL models (schemas) of CRDs and XRDs, as `kcl import -m
    /// crd` does: a package `models` under the output directory, one file
    /// per CRD version. An XRD stands for the CRDs Crossplane derives from
    /// it (the XR's, and the claim's when it offers one), as `up` reads
    /// them; a document's kind tells which it is.
    Import(ImportArgs),
}

/// `kcl import`'s flags, for the CRD mode.
#[derive(clap::Args)]
pub struct ImportArgs {
    /// CRD or XRD files (YAML or JSON, multi-document streams too), or
    /// directories searched for `.yaml`/`.yml` files, whose documents of
    /// other kinds are skipped (as `up` reads a project's `apis/`).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// What the inputs are: `crd` (CRDs and XRDs, told apart by kind);
    /// `xrd` is the same. kcl's other modes are not supported.
    #[arg(short = 'm', long = "mode", default_value = "crd", value_parser = ["crd", "xrd"])]
    pub mode: String,
    /// The directory the `models` package is written into, as `kcl import
    /// -o` (the models go to `<DIR>/models`).
    #[arg(short = 'o', long = "output", value_name = "DIR", default_value = ".")]
    pub output: PathBuf,
    /// `kcl` lays models out as `kcl import` does (`models/v1beta1/…`);
    /// `up` as Upbound projects import them (`models/io/upbound/aws/ec2/
    /// v1beta1/vpc.k`, `managedFields` typed `any`), for `.up/kcl`.
    #[arg(long = "layout", default_value = "kcl", value_parser = ["kcl", "up"])]
    pub layout: String,
    /// Accepted as `kcl import -f` is: plait always overwrites the files it
    /// generates.
    #[arg(short = 'f', long = "force", hide = true)]
    pub force: bool,
    /// Accepted as `kcl import -s` is (`up` passes it): nothing is validated
    /// beyond what generation needs.
    #[arg(short = 's', long = "skip-validation", hide = true)]
    pub skip_validation: bool,
}

/// `kcl run`'s flags; KCL's own spellings (`--sort_keys`, `-k`, …) are
/// accepted too, so a command line written for `kcl` works as it is.
#[derive(clap::Args)]
pub struct RunArgs {
    /// The files and directories of the main package (every `.k` file of a
    /// directory); the current directory when none (and no `-Y`).
    pub inputs: Vec<PathBuf>,
    /// A top-level argument, read by `option("name")`; the value is parsed
    /// as KCL parses it (`-D replicas=3`, `-D 'labels={"app":"a"}'`).
    #[arg(short = 'D', long = "argument", value_name = "NAME=VALUE")]
    pub arguments: Vec<String>,
    /// Settings files (`kcl_options`, `kcl_cli_configs`), as `kcl run -Y`.
    #[arg(short = 'Y', long = "setting", value_name = "FILE", num_args = 1..)]
    pub settings: Vec<PathBuf>,
    /// Print only the value at this path (`-S app.spec`, `-S :list.[0]`).
    #[arg(
        short = 'S',
        long = "path-selector",
        alias = "path_selector",
        value_name = "PATH"
    )]
    pub path_selectors: Vec<String>,
    /// Sort the keys of every dict in the output.
    #[arg(short = 'k', long = "sort-keys", alias = "sort_keys")]
    pub sort_keys: bool,
    /// Leave out attributes whose value is None.
    #[arg(short = 'n', long = "disable-none", alias = "disable_none")]
    pub disable_none: bool,
    /// Also print hidden (`_name`) attributes.
    #[arg(short = 'H', long = "show-hidden", alias = "show_hidden")]
    pub show_hidden: bool,
    /// Fail when `+`, `-`, `*`, `**` or `<<` takes a number beyond 32 bits.
    #[arg(short = 'r', long = "strict-range-check", alias = "strict_range_check")]
    pub strict_range_check: bool,
    /// Accepted as `kcl run -d` is; plait prints no backtrace under an error.
    #[arg(short = 'd', long = "debug", hide = true)]
    pub debug: bool,
}

pub fn main(command: &KclCommand) -> ExitCode {
    match command {
        KclCommand::Run(args) => run(args),
        KclCommand::Import(args) => match import(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("plait: {error:#}");
                ExitCode::FAILURE
            }
        },
    }
}

fn import(args: &ImportArgs) -> anyhow::Result<()> {
    let mut documents = Vec::new();
    for input in &args.inputs {
        documents.extend(read_documents(input)?);
    }
    let options = ImportOptions {
        layout: if args.layout == "up" {
            Layout::Upbound
        } else {
            Layout::Kcl
        },
        keep_order: false,
    };
    let files = models(documents, &options)?;
    let root = args.output.join("models");
    for (path, text) in &files {
        let target = root.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&target, text)
            .with_context(|| format!("cannot write {}", target.display()))?;
    }
    tracing::info!(files = files.len(), dir = %root.display(), "wrote KCL models");
    Ok(())
}

/// The documents of a file, or of every `.yaml`/`.yml` file below a
/// directory (there, documents that are neither CRDs nor XRDs are skipped).
pub fn read_documents(input: &Path) -> anyhow::Result<Vec<Document>> {
    if input.is_dir() {
        let mut files = Vec::new();
        let mut stack = vec![input.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in
                std::fs::read_dir(&dir).with_context(|| format!("cannot read {}", dir.display()))?
            {
                let path = entry
                    .with_context(|| format!("cannot read {}", dir.display()))?
                    .path();
                if path.is_dir() {
                    stack.push(path);
                } else if matches!(
                    path.extension().and_then(|e| e.to_str()),
                    Some("yaml" | "yml")
                ) {
                    files.push(path);
                }
            }
        }
        files.sort();
        let mut documents = Vec::new();
        for file in files {
            documents.extend(
                parse_documents(&file)?.into_iter().filter(|d| {
                    plait_kcl::r#import::document_kind(&d.value) != DocumentKind::Other
                }),
            );
        }
        return Ok(documents);
    }
    parse_documents(input)
}

fn parse_documents(path: &Path) -> anyhow::Result<Vec<Document>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut documents = Vec::new();
    for (index, document) in serde_yaml_ng::Deserializer::from_str(&text).enumerate() {
        let value: Value = serde::Deserialize::deserialize(document)
            .with_context(|| format!("{}: document {}: not YAML", path.display(), index + 1))?;
        if value.is_null() {
            continue;
        }
        documents.push(Document {
            name: if index == 0 {
                path.display().to_string()
            } else {
                format!("{} (document {})", path.display(), index + 1)
            },
            value,
        });
    }
    Ok(documents)
}

/// The models of CRDs and XRDs: each XRD is replaced by the CRDs Crossplane
/// derives from it (the XR's, and the claim's when it offers claims), as
/// `up` generates its project's models; then `plait_kcl::import` writes
/// them. Path → text, relative to the `models` directory.
pub fn models(
    documents: Vec<Document>,
    options: &ImportOptions,
) -> anyhow::Result<BTreeMap<String, String>> {
    let mut crds = Vec::new();
    for document in documents {
        match plait_kcl::r#import::document_kind(&document.value) {
            DocumentKind::CompositeResourceDefinition => crds.extend(xrd_crds(&document)?),
            DocumentKind::CustomResourceDefinition => crds.push(document),
            DocumentKind::Other => anyhow::bail!(
                "{}: kind {:?} is neither a CustomResourceDefinition nor a CompositeResourceDefinition",
                document.name,
                document
                    .value
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or("")
            ),
        }
    }
    let files = plait_kcl::r#import::import(&crds, options)?;
    Ok(match options.layout {
        Layout::Upbound => files
            .into_iter()
            .map(|(path, text)| (upbound_namespaced_path(&path), text))
            .collect(),
        Layout::Kcl => files,
    })
}

/// `up` names the package of a namespaced provider's group
/// (`ec2.aws.m.upbound.io`) with the `m` joined to the part before it:
/// `io/upbound/awsm/ec2`, as its projects import `models.io.upbound.awsm.ec2`.
fn upbound_namespaced_path(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').collect();
    let mut joined: Vec<String> = Vec::with_capacity(parts.len());
    let mut index = 0;
    while index < parts.len() {
        // The reversed group reads `…/m/aws/…`: the `m` and the directory after it join.
        if parts[index] == "m" && index + 2 < parts.len() {
            joined.push(format!("{}m", parts[index + 1]));
            index += 2;
        } else {
            joined.push(parts[index].to_string());
            index += 1;
        }
    }
    joined.join("/")
}

fn xrd_crds(document: &Document) -> anyhow::Result<Vec<Document>> {
    let mut xrd: plait_model::CompositeResourceDefinition =
        serde_json::from_value(document.value.clone())
            .with_context(|| format!("{}: not a CompositeResourceDefinition", document.name))?;
    // The CRDs are owned by the XRD in a cluster; offline it has no UID.
    if xrd.metadata.uid.is_none() {
        xrd.metadata.uid = Some("00000000-0000-0000-0000-000000000000".to_string());
    }
    let mut crds = vec![Document {
        name: format!("{} (its composite CRD)", document.name),
        value: plait_model::crd::composite_crd(&xrd).with_context(|| document.name.clone())?,
    }];
    if xrd.spec.claim_names.is_some() {
        crds.push(Document {
            name: format!("{} (its claim CRD)", document.name),
            value: plait_model::crd::claim_crd(&xrd).with_context(|| document.name.clone())?,
        });
    }
    Ok(crds)
}

fn run(args: &RunArgs) -> ExitCode {
    let options = match options(args) {
        Ok(options) => options,
        Err(error) => return report(&error),
    };
    match plait_kcl::run(&options) {
        Ok(output) => {
            let mut stdout = std::io::stdout().lock();
            let printed = stdout
                .write_all(output.logs.as_bytes())
                .and_then(|()| stdout.write_all(output.yaml.as_bytes()))
                .and_then(|()| stdout.flush());
            match printed {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("plait: cannot write the output: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(error) => report(&error),
    }
}

/// The run's options from the command line; an argument KCL refuses is a
/// KCL error, reported as `kcl run` reports it.
fn options(args: &RunArgs) -> Result<plait_kcl::RunOptions, Box<plait_kcl::RunError>> {
    let arguments = args
        .arguments
        .iter()
        .map(|spec| plait_kcl::cli::top_level_argument(spec))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| {
            Box::new(plait_kcl::RunError::new(
                error,
                Default::default(),
                String::new(),
            ))
        })?;
    let work_dir = std::env::current_dir().ok();
    // As `kcl run`: no files and no settings file naming them is the
    // current directory.
    let inputs = if args.inputs.is_empty() && args.settings.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.inputs.clone()
    };
    Ok(plait_kcl::RunOptions {
        inputs,
        options: arguments,
        settings: args.settings.clone(),
        path_selectors: args.path_selectors.clone(),
        sort_keys: args.sort_keys,
        disable_none: args.disable_none,
        show_hidden: args.show_hidden,
        strict_range_check: args.strict_range_check,
        // The `file` module reads below the directory plait runs in, as a
        // function's files are granted to it: nothing outside.
        file_root: work_dir.clone(),
        work_dir,
        ..Default::default()
    })
}

/// Prints what the program printed before it failed, then the error as
/// KCL renders it.
fn report(error: &plait_kcl::RunError) -> ExitCode {
    print!("{}", error.logs);
    let _ = std::io::stdout().flush();
    eprint!("{}", error.render());
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(subcommand)]
        command: KclCommand,
    }

    fn parse(args: &[&str]) -> RunArgs {
        let cli = Cli::try_parse_from(["kcl"].iter().chain(args)).expect("parses");
        match cli.command {
            KclCommand::Run(args) => args,
            KclCommand::Import(_) => panic!("parsed as kcl import"),
        }
    }

    #[test]
    fn namespaced_provider_groups_get_the_package_names_up_gives_them() {
        let cases = [
            (
                "io/upbound/m/aws/ec2/v1beta1/vpc.k",
                "io/upbound/awsm/ec2/v1beta1/vpc.k",
            ),
            (
                "io/crossplane/m/helm/v1beta1/release.k",
                "io/crossplane/helmm/v1beta1/release.k",
            ),
            (
                "io/upbound/aws/ec2/v1beta1/vpc.k",
                "io/upbound/aws/ec2/v1beta1/vpc.k",
            ),
            ("io/upbound/m/v1beta1.k", "io/upbound/m/v1beta1.k"),
        ];
        for (generated, want) in cases {
            assert_eq!(upbound_namespaced_path(generated), want, "{generated}");
        }
    }

    #[test]
    fn kcl_import_flags_are_accepted_as_kcl_and_up_write_them() {
        let cases: [(&[&str], &str, &str, &str); 3] = [
            (&["import", "crd.yaml"], "crd", ".", "kcl"),
            (
                &["import", "-m", "crd", "-s", "-f", "-o", "out", "crd.yaml"],
                "crd",
                "out",
                "kcl",
            ),
            (
                &[
                    "import", "--mode", "xrd", "--layout", "up", "--output", ".up/kcl", "apis",
                ],
                "xrd",
                ".up/kcl",
                "up",
            ),
        ];
        for (args, mode, output, layout) in cases {
            let cli = Cli::try_parse_from(["kcl"].iter().chain(args)).expect("parses");
            let KclCommand::Import(import) = cli.command else {
                panic!("{args:?} parsed as kcl run");
            };
            assert_eq!(
                (import.mode.as_str(), import.layout.as_str()),
                (mode, layout),
                "{args:?}"
            );
            assert_eq!(import.output, PathBuf::from(output), "{args:?}");
        }
        let refused = Cli::try_parse_from(["kcl", "import", "-m", "openapi", "spec.yaml"]);
        assert!(
            refused.is_err(),
            "a mode plait does not implement is refused"
        );
    }

    /// Models generated from a project's XRDs and its providers' CRDs, in
    /// `up`'s layout, let project functions run with plait's KCL as they
    /// run with the real KCL on the same models (the expected outputs).
    #[test]
    fn imported_models_run_project_functions_as_kcl_does() {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kcl-models");
        let mut documents = Vec::new();
        for input in ["apis", "crds"] {
            documents.extend(read_documents(&data.join(input)).expect("reads the inputs"));
        }
        let options = ImportOptions {
            layout: Layout::Upbound,
            keep_order: false,
        };
        let files = models(documents, &options).expect("imports");
        for path in [
            "io/upbound/platform/v1alpha1/xapp.k",
            "io/upbound/platform/v1alpha1/app.k",
            "io/upbound/platformref/aws/v1alpha1/cluster.k",
            "io/upbound/aws/ec2/v1beta1/vpc.k",
            "io/upbound/aws/ec2/v1beta1/subnet.k",
            "io/crossplane/helm/v1beta1/release.k",
            "k8s/apimachinery/pkg/apis/meta/v1/object_meta.k",
            "kcl.mod",
        ] {
            assert!(files.contains_key(path), "{path} generated");
        }
        let project = tempfile::tempdir().expect("makes a directory");
        let models_dir = project.path().join(".up/kcl/models");
        for (path, text) in &files {
            let target = models_dir.join(path);
            std::fs::create_dir_all(target.parent().expect("has a parent")).expect("makes dirs");
            std::fs::write(target, text).expect("writes a model");
        }
        for function in ["xapp", "network"] {
            let source = data.join("functions").join(function);
            let dir = project.path().join("functions").join(function);
            std::fs::create_dir_all(&dir).expect("makes the function directory");
            for file in ["kcl.mod", "main.k"] {
                std::fs::copy(source.join(file), dir.join(file)).expect("copies the function");
            }
            let params = std::fs::read_to_string(source.join("params.json")).expect("reads params");
            let expected =
                std::fs::read_to_string(source.join("expected.yaml")).expect("reads expected");
            let run = plait_kcl::run(&plait_kcl::RunOptions {
                inputs: vec![dir.join("main.k")],
                work_dir: Some(dir.clone()),
                options: vec![("params".to_string(), params)],
                ..Default::default()
            });
            match run {
                Ok(output) => assert_eq!(output.yaml, expected, "{function}"),
                Err(error) => panic!("{function}: {}", error.render()),
            }
        }
    }

    #[test]
    fn documents_models_cannot_be_made_of_are_refused_naming_them() {
        let cases = [
            (
                serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap"}),
                "cm.yaml: kind \"ConfigMap\" is neither a CustomResourceDefinition nor a CompositeResourceDefinition",
            ),
            (
                serde_json::json!({
                    "apiVersion": "apiextensions.crossplane.io/v1",
                    "kind": "CompositeResourceDefinition",
                    "metadata": {"name": "xs.example.org"},
                    "spec": {"group": "example.org", "names": {"kind": "X", "plural": "xs"},
                        "versions": [{"name": "v1", "served": true, "referenceable": true,
                            "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
                                "properties": {"size": {"type": "colour"}}}}}}}]}
                }),
                "cm.yaml (its composite CRD): spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.size.type: unsupported type \"colour\"",
            ),
        ];
        for (value, message) in cases {
            let documents = vec![Document {
                name: "cm.yaml".into(),
                value,
            }];
            let error = models(documents, &ImportOptions::default()).expect_err(message);
            assert_eq!(format!("{error:#}"), message);
        }
    }

    #[test]
    fn kcl_spellings_of_the_flags_are_accepted() {
        for flags in [
            [
                "--sort-keys",
                "--disable-none",
                "--show-hidden",
                "--strict-range-check",
            ],
            [
                "--sort_keys",
                "--disable_none",
                "--show_hidden",
                "--strict_range_check",
            ],
            ["-k", "-n", "-H", "-r"],
        ] {
            let args = parse(&["run", "main.k", flags[0], flags[1], flags[2], flags[3]]);
            assert!(
                args.sort_keys && args.disable_none && args.show_hidden && args.strict_range_check,
                "{flags:?}"
            );
        }
    }

    #[test]
    fn repeated_and_multi_valued_flags_collect_in_order() {
        let args = parse(&[
            "run", "main.k", "-D", "a=1", "-D", "b=[1,2]", "-S", "x.y", "-d", "-Y", "one.yaml",
            "two.yaml",
        ]);
        assert_eq!(args.inputs, [PathBuf::from("main.k")]);
        assert_eq!(args.arguments, ["a=1", "b=[1,2]"]);
        assert_eq!(args.path_selectors, ["x.y"]);
        assert_eq!(
            args.settings,
            [PathBuf::from("one.yaml"), PathBuf::from("two.yaml")]
        );
        let options = options(&args).expect("valid arguments");
        assert_eq!(
            options.options,
            [
                ("a".to_string(), "1".to_string()),
                ("b".to_string(), "[1,2]".to_string())
            ]
        );
    }

    #[test]
    fn an_argument_kcl_refuses_is_its_evaluation_error() {
        for spec in ["key=", "=123", "key=value="] {
            let args = parse(&["run", "main.k", "-D", spec]);
            let error = options(&args).expect_err(spec);
            assert_eq!(
                error.render(),
                "error[E3M38]: EvaluationError\nInvalid value for top level arguments\n\n"
            );
        }
    }
}
