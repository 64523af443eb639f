//! `plait validate EXTENSIONS RESOURCES`: every resource checked offline
//! against the schemas the extensions define (CRDs, XRDs as plait generates
//! their CRDs), the built-in Kubernetes kinds and plait's own kinds, with
//! Crossplane's output.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use plait_validate::{Catalog, Outcome, Status, Validator};
use serde::Serialize;
use serde_json::Value;

use crate::files;

#[derive(clap::Args)]
pub struct ValidateArgs {
    /// Where the schemas come from: a file or directory (searched
    /// recursively) of CRDs and XRDs, or `-` for standard input.
    pub extensions: PathBuf,
    /// The resources to validate: a file or directory (searched
    /// recursively), or `-` for standard input, such as `plait render`'s output.
    pub resources: PathBuf,
    /// The resources' previous states (file or directory), for rules that
    /// read `oldSelf`; matched by apiVersion, kind, namespace and name.
    #[arg(long = "old-resources")]
    pub old_resources: Option<PathBuf>,
    /// Fail when a resource's kind has no schema.
    #[arg(long = "error-on-missing-schemas")]
    pub error_on_missing_schemas: bool,
    /// Print only the resources that are not valid (and the total).
    #[arg(long = "skip-success-results")]
    pub skip_success_results: bool,
    /// Output format: `default` (Crossplane's lines), `json` or `yaml`.
    #[arg(short = 'o', long = "output", default_value = "default")]
    pub output: OutputFormat,
    /// Pull the extensions' packages again instead of reading the
    /// package.yaml files kept from before.
    #[arg(long = "clean-cache")]
    pub clean_cache: bool,
    /// How the extensions' Provider, Function and Configuration packages
    /// are pulled.
    #[command(flatten)]
    pub registry: crate::function::RegistryArgs,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    Default,
    Json,
    Yaml,
}

/// The counts Crossplane's total line gives.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Total {
    resources: usize,
    missing_schemas: usize,
    success: usize,
    failure: usize,
}

#[derive(Serialize)]
struct Report<'a> {
    resources: Vec<&'a Outcome>,
    total: &'a Total,
}

/// Runs the command; prints the report and exits non-zero when a resource
/// is invalid (or has no schema, with `--error-on-missing-schemas`).
pub fn main(args: &ValidateArgs) -> ExitCode {
    match run(args) {
        Ok((report, verdict)) => {
            print!("{report}");
            let _ = std::io::stdout().flush();
            match verdict {
                Ok(()) => ExitCode::SUCCESS,
                Err(message) => {
                    eprintln!("plait: {message}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(error) => {
            eprintln!("plait: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &ValidateArgs) -> Result<(String, Result<(), String>)> {
    let stdin = Path::new("-");
    if args.extensions == stdin && args.resources == stdin {
        bail!("cannot read both the extensions and the resources from standard input");
    }
    let extensions = files::read_documents_recursive(&args.extensions)
        .with_context(|| format!("cannot load extensions from {}", args.extensions.display()))?;
    let resources = files::read_documents_recursive(&args.resources)
        .with_context(|| format!("cannot load resources from {}", args.resources.display()))?;
    let old = match &args.old_resources {
        Some(path) => files::read_documents_recursive(path)
            .with_context(|| format!("cannot load old resources from {}", path.display()))?,
        None => Vec::new(),
    };

    let mut catalog = Catalog::builtin()?;
    let packages = crate::packages::references(&extensions);
    if !packages.is_empty() {
        let references: Vec<String> = packages.iter().map(|(r, _, _)| r.clone()).collect();
        let open = || {
            let references: Vec<&str> = references.iter().map(String::as_str).collect();
            args.registry.open(&references)
        };
        for definition in crate::packages::definitions(packages.clone(), open, args.clean_cache)? {
            catalog.add_definition(&definition).with_context(|| {
                format!(
                    "a package's {:?}: cannot read the schemas it defines",
                    definition
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                )
            })?;
        }
    }
    // Definitions given as files win over the packages'.
    for (file, extension) in &extensions {
        catalog
            .add_definition(extension)
            .with_context(|| format!("{}: cannot read the schemas it defines", file.display()))?;
    }
    let validator = Validator::new(catalog);
    let old: HashMap<_, _> = old
        .iter()
        .map(|(_, o)| (plait_validate::identity(o), o))
        .collect();
    let outcomes: Vec<Outcome> = resources
        .iter()
        .map(|(_, r)| validator.validate(r, old.get(&plait_validate::identity(r)).copied()))
        .collect();
    let total = totals(&outcomes);
    let report = match args.output {
        OutputFormat::Default => lines(&outcomes, &total, args.skip_success_results),
        OutputFormat::Json | OutputFormat::Yaml => {
            let report = Report {
                resources: outcomes
                    .iter()
                    .filter(|o| !(args.skip_success_results && o.status == Status::Valid))
                    .collect(),
                total: &total,
            };
            if args.output == OutputFormat::Json {
                let mut text =
                    serde_json::to_string_pretty(&report).context("cannot write JSON")?;
                text.push('\n');
                text
            } else {
                files::serialize_to_yaml(&report)?
            }
        }
    };
    let verdict = if total.failure > 0 {
        Err("could not validate all resources".to_string())
    } else if args.error_on_missing_schemas && total.missing_schemas > 0 {
        Err("could not validate all resources, schema(s) missing".to_string())
    } else {
        Ok(())
    };
    Ok((report, verdict))
}

fn totals(outcomes: &[Outcome]) -> Total {
    let count = |s: Status| outcomes.iter().filter(|o| o.status == s).count();
    Total {
        resources: outcomes.len(),
        missing_schemas: count(Status::MissingSchema),
        success: count(Status::Valid),
        failure: count(Status::Invalid),
    }
}

/// Crossplane's report: a line per problem, per valid resource, per
/// resource without a schema, and the total.
fn lines(outcomes: &[Outcome], total: &Total, skip_success: bool) -> String {
    let mut out = String::new();
    for outcome in outcomes {
        match outcome.status {
            Status::MissingSchema => {
                out.push_str(&format!(
                    "[!] could not find CRD/XRD for: {}\n",
                    outcome.gvk()
                ));
            }
            Status::Valid if !skip_success => {
                out.push_str(&format!(
                    "[✓] {}, {} validated successfully\n",
                    outcome.gvk(),
                    outcome.name
                ));
            }
            Status::Valid => {}
            Status::Invalid => {
                for finding in &outcome.findings {
                    out.push_str(&format!(
                        "[x] {} error {}, {} : {}\n",
                        finding.check.label(),
                        outcome.gvk(),
                        outcome.name,
                        finding.message
                    ));
                }
            }
        }
    }
    out.push_str(&format!(
        "Total {} resources: {} missing schemas, {} success cases, {} failure cases\n",
        total.resources, total.missing_schemas, total.success, total.failure
    ));
    out
}

/// Reads a single value, for tests of the report format.
#[cfg(test)]
fn outcome(validator: &Validator, object: Value) -> Outcome {
    validator.validate(&object, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_report_reads_as_crossplanes() {
        let mut catalog = Catalog::new();
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "things.example.org"},
            "spec": {"group": "example.org", "names": {"kind": "Thing", "plural": "things"},
                "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "required": ["size"], "properties": {"size": {"type": "integer"}}}},
                }}}]},
        });
        catalog
            .add_definition(&crd)
            .unwrap_or_else(|e| panic!("{e}"));
        let validator = Validator::new(catalog);
        let outcomes = vec![
            outcome(
                &validator,
                json!({"apiVersion": "example.org/v1", "kind": "Thing", "metadata": {"name": "good"}, "spec": {"size": 1}}),
            ),
            outcome(
                &validator,
                json!({"apiVersion": "example.org/v1", "kind": "Thing", "metadata": {"name": "bad"}, "spec": {}}),
            ),
            outcome(
                &validator,
                json!({"apiVersion": "example.org/v2", "kind": "Other", "metadata": {"name": "x"}}),
            ),
        ];
        let total = totals(&outcomes);
        assert_eq!(
            lines(&outcomes, &total, false),
            "[✓] example.org/v1, Kind=Thing, good validated successfully\n\
             [x] schema validation error example.org/v1, Kind=Thing, bad : spec.size: Required value\n\
             [!] could not find CRD/XRD for: example.org/v2, Kind=Other\n\
             Total 3 resources: 1 missing schemas, 1 success cases, 1 failure cases\n"
        );
        assert_eq!(
            lines(&outcomes, &total, true),
            "[x] schema validation error example.org/v1, Kind=Thing, bad : spec.size: Required value\n\
             [!] could not find CRD/XRD for: example.org/v2, Kind=Other\n\
             Total 3 resources: 1 missing schemas, 1 success cases, 1 failure cases\n"
        );
    }
}
