//! `plait test`: runs `CompositionTest` documents (`meta.dev.upbound.io/
//! v1alpha1`, as `up test run` runs them): each test renders its XR with its
//! Composition offline (`plait render`'s reconcile) and asserts the rendered
//! objects. Tests are YAML files, or KCL programs that emit them, run with
//! plait's KCL against the project's generated models.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use plait_kcl::r#import::{Document, ImportOptions, Layout};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::RenderArgs;
use crate::files;
use crate::function::RegistryArgs;
use crate::kcl;
use crate::project::{self, Models, Project, ProjectFunction};
use crate::render;

const TEST_API_VERSION: &str = "meta.dev.upbound.io/v1alpha1";
const TEST_KIND: &str = "CompositionTest";
/// `up test run`'s timeout for a test that gives none.
const DEFAULT_TIMEOUT_SECONDS: u64 = 30;
/// The fields of a CompositionTest's spec, as `up` defines them.
const SPEC_FIELDS: &[&str] = &[
    "timeoutSeconds",
    "validate",
    "xr",
    "xrPath",
    "xrd",
    "xrdPath",
    "composition",
    "compositionPath",
    "observedResources",
    "extraResources",
    "context",
    "assertResources",
    "functionCredentialsPath",
];
/// The file a KCL test's program starts from.
const KCL_MAIN: &str = "main.k";
/// How deep a test directory is searched.
const MAX_SEARCH_DEPTH: usize = 16;
/// The annotation naming a composed resource's template.
const RESOURCE_NAME_ANNOTATION: &str = "crossplane.io/composition-resource-name";
/// Where validation reports an owner reference's UID.
const OWNER_UID_FIELD: &str = "metadata.ownerReferences.uid";
/// The kinds render adds beside the resources (results, context): never validated.
const RENDER_API_VERSION: &str = "render.crossplane.io/v1beta1";
/// The CRDs of the test kinds (CompositionTest, E2ETest, OperationTest),
/// for the KCL models tests import (`models.io.upbound.dev.meta.v1alpha1`).
const COMPOSITION_TEST_CRD: &str = include_str!("compositiontest-crd.yaml");

#[derive(clap::Args)]
pub struct TestArgs {
    /// CompositionTest YAML files, KCL test directories (holding a main.k)
    /// or directories holding either, searched recursively; by default the
    /// project's `tests` directory.
    pub paths: Vec<PathBuf>,
    /// The up (upbound.yaml) or Crossplane CLI project the tests belong to:
    /// their paths are relative to its root, its KCL functions run, and its
    /// models are what KCL tests import. By default the project above each test.
    #[arg(long)]
    pub project: Option<PathBuf>,
    /// Functions: a file or directory of pkg.crossplane.io Function objects
    /// (as `plait render` takes them).
    #[arg(long)]
    pub functions: Option<PathBuf>,
    /// CRDs of the project's dependencies (file or directory, repeatable):
    /// with the project's XRDs, the KCL models that tests and functions
    /// import are generated from them, and `validate: true` checks against them.
    #[arg(long = "crds")]
    pub crds: Vec<PathBuf>,
    /// Output: `text` (a line per test, the differences of a failure and
    /// the summary) or `json`.
    #[arg(short = 'o', long = "output", default_value = "text")]
    pub output: OutputFormat,
    /// How Functions whose package is an OCI reference are pulled.
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

/// One CompositionTest, as found.
struct Test {
    name: String,
    /// The file (YAML) or directory (KCL) it came from.
    source: PathBuf,
    document: Value,
    /// The project's root, when the test belongs to one.
    project_root: Option<PathBuf>,
    /// What the test's relative paths start from.
    base: Base,
}

/// The models generated for each project in this run, by its root: a
/// project's models come from the same XRDs and CRDs for every test.
type ModelsByProject = BTreeMap<PathBuf, Models>;

/// What a test's relative paths start from.
#[derive(Debug, Clone)]
enum Base {
    /// The project's root, which `up` reads the project from as a file
    /// system of its own: a path is read from its root, and `..` at the
    /// root stays there (tests written in `tests/NAME/` often give
    /// `../../examples/xr.yaml`).
    ProjectRoot(PathBuf),
    /// Outside a project, the test file's directory.
    Directory(PathBuf),
}

impl Base {
    fn resolve(&self, relative: &str) -> PathBuf {
        match self {
            Base::Directory(dir) => dir.join(relative),
            Base::ProjectRoot(root) => {
                let mut inside = PathBuf::new();
                for component in Path::new(relative).components() {
                    match component {
                        std::path::Component::Normal(part) => inside.push(part),
                        std::path::Component::ParentDir => {
                            inside.pop();
                        }
                        _ => {}
                    }
                }
                root.join(inside)
            }
        }
    }
}

/// Where tests come from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum TestSource {
    Yaml(PathBuf),
    Kcl(PathBuf),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TestResult {
    name: String,
    source: String,
    passed: bool,
    seconds: f64,
    /// Why it failed: a line per difference, or the error that stopped it.
    failures: Vec<String>,
}

#[derive(Serialize)]
struct Report {
    tests: Vec<TestResult>,
    passed: usize,
    failed: usize,
}

/// Runs the command: prints the report, exits non-zero when a test failed.
pub fn main(args: &TestArgs) -> ExitCode {
    match run(args) {
        Ok(report) => {
            let printed = match args.output {
                OutputFormat::Text => Ok(text_report(&report)),
                OutputFormat::Json => serde_json::to_string_pretty(&report)
                    .map(|json| json + "\n")
                    .context("cannot write JSON"),
            };
            match printed {
                Ok(text) => print!("{text}"),
                Err(error) => {
                    eprintln!("plait: {error:#}");
                    return ExitCode::FAILURE;
                }
            }
            if report.failed > 0 {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(error) => {
            eprintln!("plait: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &TestArgs) -> Result<Report> {
    let given_project = match &args.project {
        Some(dir) => Some(Project::open(dir)?),
        None => None,
    };
    let paths = if args.paths.is_empty() {
        let project = match &given_project {
            Some(project) => Some(Project::open(&project.root)?),
            None => project_around(&std::env::current_dir()?)?,
        };
        let Some(project) = project else {
            bail!("no tests given, and no project here whose tests directory to run");
        };
        vec![project.root.join("tests")]
    } else {
        args.paths.clone()
    };
    let mut sources = Vec::new();
    for path in &paths {
        discover(path, 0, &mut sources)?;
    }
    sources.dedup();
    let mut results = Vec::new();
    let mut found = 0;
    let mut models = ModelsByProject::new();
    for source in &sources {
        let started = Instant::now();
        match load(source, given_project.as_ref(), &args.crds, &mut models) {
            Ok(tests) => {
                for test in tests {
                    found += 1;
                    let started = Instant::now();
                    let failures = match run_test(&test, args, &mut models) {
                        Ok(failures) => failures,
                        Err(error) => vec![format!("error: {error:#}")],
                    };
                    results.push(TestResult {
                        name: test.name,
                        source: test.source.display().to_string(),
                        passed: failures.is_empty(),
                        seconds: started.elapsed().as_secs_f64(),
                        failures,
                    });
                }
            }
            Err(error) => {
                found += 1;
                let path = match source {
                    TestSource::Yaml(path) | TestSource::Kcl(path) => path,
                };
                results.push(TestResult {
                    name: path.display().to_string(),
                    source: path.display().to_string(),
                    passed: false,
                    seconds: started.elapsed().as_secs_f64(),
                    failures: vec![format!("error: {error:#}")],
                });
            }
        }
    }
    if found == 0 {
        bail!(
            "no {TEST_KIND} found in {}",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let passed = results.iter().filter(|r| r.passed).count();
    Ok(Report {
        failed: results.len() - passed,
        passed,
        tests: results,
    })
}

/// The project `dir` is the root of, or lies in.
fn project_around(dir: &Path) -> Result<Option<Project>> {
    for candidate in dir.ancestors() {
        if candidate.join(project::UPBOUND_PROJECT_FILE).is_file()
            || candidate.join(project::CROSSPLANE_PROJECT_FILE).is_file()
        {
            return Project::open(candidate).map(Some);
        }
    }
    Ok(None)
}

/// The test sources under `path`: a YAML file, a KCL test (a directory
/// with a main.k, or a `.k` file of one), or a directory searched for them.
fn discover(path: &Path, depth: usize, out: &mut Vec<TestSource>) -> Result<()> {
    if path.is_file() {
        if path.extension().and_then(|e| e.to_str()) == Some("k") {
            let dir = path.parent().unwrap_or(Path::new("."));
            out.push(TestSource::Kcl(dir.to_path_buf()));
        } else {
            out.push(TestSource::Yaml(path.to_path_buf()));
        }
        return Ok(());
    }
    if !path.is_dir() {
        bail!("{}: no such file or directory", path.display());
    }
    if path.join(KCL_MAIN).is_file() {
        out.push(TestSource::Kcl(path.to_path_buf()));
        return Ok(());
    }
    if depth > MAX_SEARCH_DEPTH {
        bail!(
            "{} is more than {MAX_SEARCH_DEPTH} directories deep",
            path.display()
        );
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .with_context(|| format!("cannot read directory {}", path.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            !p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('.'))
        })
        .collect();
    entries.sort();
    for entry in entries {
        let is_yaml = matches!(
            entry.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        );
        if entry.is_dir() {
            discover(&entry, depth + 1, out)?;
        } else if is_yaml {
            out.push(TestSource::Yaml(entry));
        }
    }
    Ok(())
}

/// The CompositionTests of one source; documents of other kinds are
/// skipped (a tests directory holds `E2ETest`s and fixtures too).
fn load(
    source: &TestSource,
    given_project: Option<&Project>,
    crds: &[PathBuf],
    models: &mut ModelsByProject,
) -> Result<Vec<Test>> {
    let path = match source {
        TestSource::Yaml(path) | TestSource::Kcl(path) => path,
    };
    let project = match given_project {
        Some(project) => Some(Project::open(&project.root)?),
        None => Project::find_above(&path.join(KCL_MAIN))?,
    };
    let documents = match source {
        TestSource::Yaml(file) => files::read_documents(file)?
            .into_iter()
            .map(|(_, document)| document)
            .collect(),
        TestSource::Kcl(dir) => run_kcl_test(dir, project.as_ref(), crds, models)?,
    };
    let base = match (&project, source) {
        (Some(project), _) => Base::ProjectRoot(project.root.clone()),
        (None, TestSource::Kcl(dir)) => Base::Directory(dir.clone()),
        (None, TestSource::Yaml(file)) => {
            Base::Directory(file.parent().unwrap_or(Path::new(".")).to_path_buf())
        }
    };
    let mut tests = Vec::new();
    for (index, document) in documents.into_iter().enumerate() {
        if document["kind"] != TEST_KIND {
            continue;
        }
        if document["apiVersion"] != TEST_API_VERSION {
            bail!(
                "{}: document {index}: a {TEST_KIND} is {TEST_API_VERSION}, found apiVersion {}",
                path.display(),
                document["apiVersion"]
            );
        }
        let name = document
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| format!("{} [{index}]", path.display()));
        tests.push(Test {
            name,
            source: path.clone(),
            document,
            project_root: project.as_ref().map(|p| p.root.clone()),
            base: base.clone(),
        });
    }
    Ok(tests)
}

/// Runs a KCL test program and returns the documents it emits: a stream,
/// or the `items` list `up`'s tests assign.
fn run_kcl_test(
    dir: &Path,
    project: Option<&Project>,
    crds: &[PathBuf],
    models: &mut ModelsByProject,
) -> Result<Vec<Value>> {
    // The program runs staged as the project's functions are, its models
    // (a `kcl.mod` path dependency leading to the project's models
    // directory) written in.
    let staged = match project {
        Some(project) => {
            // The project's paths are absolute: so must the test's be, for
            // its links to lead to the project's models.
            let dir = std::fs::canonicalize(dir)
                .with_context(|| format!("cannot read {}", dir.display()))?;
            let name = dir
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("test")
                .to_string();
            let function = ProjectFunction {
                name: name.clone(),
                dir,
                is_kcl: true,
            };
            let models = test_models(project, crds, models)?;
            Some(project::stage(
                project,
                &BTreeMap::from([(name, function)]),
                &models,
            )?)
        }
        None => None,
    };
    let work_dir = staged
        .as_ref()
        .and_then(|s| s.grants.values().next())
        .and_then(|grants| grants.first())
        .map(|grant| grant.host.clone())
        .unwrap_or_else(|| dir.to_path_buf());
    let options = plait_kcl::RunOptions {
        inputs: vec![work_dir.clone()],
        file_root: Some(work_dir.clone()),
        work_dir: Some(work_dir),
        ..Default::default()
    };
    let output = plait_kcl::run(&options)
        .map_err(|error| anyhow::anyhow!("{}: KCL failed:\n{}", dir.display(), error.render()))?;
    let documents = plait_model::parse_documents(&output.yaml, &dir.display().to_string())?;
    let mut tests = Vec::new();
    for document in documents {
        match document.get("items") {
            Some(Value::Array(items)) if document.get("kind").is_none() => {
                tests.extend(items.iter().cloned())
            }
            _ => tests.push(document),
        }
    }
    Ok(tests)
}

/// Whether a step of the Composition calls one of the project's functions
/// (which run on the project's models).
fn project_calls_its_functions(project: &Project, composition: &Path) -> Result<bool> {
    let functions = project.functions()?;
    let composition = files::read_one(composition, "Composition")?;
    let steps = composition
        .pointer("/spec/pipeline")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    Ok(steps.iter().any(|step| {
        step.pointer("/functionRef/name")
            .and_then(Value::as_str)
            .is_some_and(|name| functions.contains_key(name))
    }))
}

/// The models a project's KCL tests and functions import: the project's
/// (its XRDs and the CRDs given, or those its tool generated) and the test
/// kinds'; generated once per project in a run.
fn test_models(project: &Project, crds: &[PathBuf], cache: &mut ModelsByProject) -> Result<Models> {
    if let Some(models) = cache.get(&project.root) {
        return Ok(models.clone());
    }
    let models = generate_test_models(project, crds)?;
    cache.insert(project.root.clone(), models.clone());
    Ok(models)
}

fn generate_test_models(project: &Project, crds: &[PathBuf]) -> Result<Models> {
    match render::project_models(project, crds)? {
        Models::Existing(dir) => Ok(Models::Existing(dir)),
        Models::Generated(mut files) => {
            let test_crds =
                plait_model::parse_documents(COMPOSITION_TEST_CRD, "the test kinds' CRDs")?
                    .into_iter()
                    .map(|value| Document {
                        name: "the test kinds' CRDs".to_string(),
                        value,
                    })
                    .collect();
            let options = ImportOptions {
                layout: Layout::Upbound,
                ..ImportOptions::default()
            };
            for (path, text) in kcl::models(test_crds, &options)? {
                files.entry(PathBuf::from(path)).or_insert(text);
            }
            Ok(Models::Generated(files))
        }
    }
}

/// The spec of a test, its fields checked.
struct Spec<'a> {
    fields: &'a Map<String, Value>,
}

impl<'a> Spec<'a> {
    fn of(document: &'a Value) -> Result<Spec<'a>> {
        let fields = document
            .get("spec")
            .and_then(Value::as_object)
            .context("spec: missing, or not an object")?;
        if let Some(unknown) = fields.keys().find(|k| !SPEC_FIELDS.contains(&k.as_str())) {
            bail!(
                "spec.{unknown}: unknown field (a {TEST_KIND} has {})",
                SPEC_FIELDS.join(", ")
            );
        }
        Ok(Spec { fields })
    }

    fn string(&self, field: &str) -> Result<Option<&'a str>> {
        match self.fields.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => bail!("spec.{field}: expected a path (a string), found {other}"),
        }
    }

    fn object(&self, field: &str) -> Result<Option<&'a Value>> {
        match self.fields.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(object @ Value::Object(_)) => Ok(Some(object)),
            Some(other) => bail!("spec.{field}: expected an object, found {other}"),
        }
    }

    fn objects(&self, field: &str) -> Result<Vec<&'a Value>> {
        match self.fields.get(field) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(index, item)| match item {
                    Value::Object(_) => Ok(item),
                    other => bail!("spec.{field}[{index}]: expected an object, found {other}"),
                })
                .collect(),
            Some(other) => bail!("spec.{field}: expected a list of objects, found {other}"),
        }
    }

    /// The file an inline object (written to `scratch`) or a path (below
    /// `base`) gives, for the one of the two fields set.
    fn file(
        &self,
        inline: &str,
        path: &str,
        base: &Base,
        scratch: &Path,
    ) -> Result<Option<PathBuf>> {
        match (self.object(inline)?, self.string(path)?) {
            (Some(_), Some(_)) => bail!("spec: only one of {inline:?} or {path:?} may be given"),
            (Some(object), None) => {
                let file = scratch.join(format!("{inline}.yaml"));
                write_documents(&file, &[object])?;
                Ok(Some(file))
            }
            (None, Some(relative)) => {
                let file = base.resolve(relative);
                if !file.is_file() {
                    bail!("spec.{path}: {} is not a file", file.display());
                }
                // `up` reads the first document of the file, as a YAML
                // reader of one object does: an example XR file often
                // carries a Secret after the XR.
                let documents =
                    files::read_documents(&file).with_context(|| format!("spec.{path}"))?;
                match documents.as_slice() {
                    [] => bail!("spec.{path}: {} holds no document", file.display()),
                    [_] => Ok(Some(file)),
                    [(_, first), ..] => {
                        let copy = scratch.join(format!("{inline}.yaml"));
                        write_documents(&copy, &[first])?;
                        Ok(Some(copy))
                    }
                }
            }
            (None, None) => Ok(None),
        }
    }

    fn timeout(&self) -> Result<Duration> {
        match self.fields.get("timeoutSeconds") {
            None | Some(Value::Null) => Ok(Duration::from_secs(DEFAULT_TIMEOUT_SECONDS)),
            Some(value) => match value.as_u64().filter(|s| *s > 0) {
                Some(seconds) => Ok(Duration::from_secs(seconds)),
                None => {
                    bail!("spec.timeoutSeconds: expected a positive whole number, found {value}")
                }
            },
        }
    }

    fn validate(&self) -> Result<bool> {
        match self.fields.get("validate") {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(validate)) => Ok(*validate),
            Some(other) => bail!("spec.validate: expected true or false, found {other}"),
        }
    }
}

fn write_documents(file: &Path, documents: &[&Value]) -> Result<()> {
    let owned: Vec<Value> = documents.iter().map(|d| (*d).clone()).collect();
    std::fs::write(file, files::to_yaml_stream(&owned)?)
        .with_context(|| format!("cannot write {}", file.display()))
}

/// Runs one test: the differences found (none when it passed), or the
/// error that stopped it.
fn run_test(test: &Test, args: &TestArgs, models: &mut ModelsByProject) -> Result<Vec<String>> {
    let spec = Spec::of(&test.document)?;
    let scratch = tempfile::Builder::new()
        .prefix("plait-test-")
        .tempdir()
        .context("cannot create a scratch directory")?;
    let scratch = scratch.path();
    let xr_file = spec
        .file("xr", "xrPath", &test.base, scratch)?
        .context("spec: needs the composite resource, as xr or xrPath")?;
    // `up` renders an XR given without a UID with none: its functions see
    // none, and what it composes names UID "" as owner. plait renders it
    // with UID "" to match, where `plait render` derives one.
    let mut xr = files::read_one(&xr_file, "composite resource")?;
    let without_uid = xr.pointer("/metadata/uid").is_none();
    let xr_file = if without_uid {
        xr["metadata"]["uid"] = Value::String(String::new());
        let file = scratch.join("xr-without-uid.yaml");
        write_documents(&file, &[&xr])?;
        file
    } else {
        xr_file
    };
    let composition = spec
        .file("composition", "compositionPath", &test.base, scratch)?
        .context("spec: needs the Composition, as composition or compositionPath")?;
    let xrd = spec.file("xrd", "xrdPath", &test.base, scratch)?;
    let mut observed_resources = Vec::new();
    let observed = name_observed(spec.objects("observedResources")?, &xr);
    let observed: Vec<&Value> = observed.iter().collect();
    if !observed.is_empty() {
        let file = scratch.join("observed.yaml");
        write_documents(&file, &observed)?;
        observed_resources.push(file);
    }
    let mut required_resources = Vec::new();
    let extra = spec.objects("extraResources")?;
    if !extra.is_empty() {
        let file = scratch.join("extra-resources.yaml");
        write_documents(&file, &extra)?;
        required_resources.push(file);
    }
    let function_credentials = spec
        .string("functionCredentialsPath")?
        .map(|relative| test.base.resolve(relative))
        .into_iter()
        .collect();
    let mut context_values = Vec::new();
    for (index, entry) in spec.objects("context")?.into_iter().enumerate() {
        let Some(entries) = entry.as_object() else {
            bail!("spec.context[{index}]: expected an object");
        };
        for (key, value) in entries {
            context_values.push((key.clone(), value.to_string()));
        }
    }
    let assertions = spec.objects("assertResources")?;
    let render_args = RenderArgs {
        composite_resource: xr_file,
        composition,
        functions: args.functions.clone(),
        observed_resources,
        required_resources,
        required_schemas: Vec::new(),
        context_files: Vec::new(),
        context_values,
        include_function_results: true,
        include_full_xr: true,
        include_context: true,
        function_credentials,
        xrd: xrd.clone(),
        timeout: spec.timeout()?,
        project: test.project_root.clone(),
        crds: args.crds.clone(),
        registry: args.registry.clone(),
    };
    let project = match &test.project_root {
        Some(root) => Some(Project::open(root)?),
        None => None,
    };
    let project_models = match &project {
        Some(project) if project_calls_its_functions(project, &render_args.composition)? => {
            Some(test_models(project, &args.crds, models)?)
        }
        _ => None,
    };
    let rendered = render::render(&render_args, project, project_models.as_ref())?;
    tracing::debug!(test = %test.name, ran = %rendered.ran, "rendered");
    let mut documents = rendered.documents;
    if without_uid {
        as_up_renders(&mut documents);
    }
    let mut failures = Vec::new();
    if spec.validate()? {
        failures.extend(validate(
            &documents,
            xrd.as_deref(),
            test,
            &args.crds,
            without_uid,
        )?);
    }
    for expected in assertions {
        failures.extend(assert_resource(expected, &documents));
    }
    Ok(failures)
}

/// The observed resources, each without a name given the one plait's
/// render gives the resource it composes from the same template (and a
/// namespaced XR's namespace): `up`'s render observes a resource by its
/// template's annotation alone, where plait's, as `crossplane render`,
/// observes only named ones.
fn name_observed(observed: Vec<&Value>, xr: &Value) -> Vec<Value> {
    let text = |object: &Value, pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let uid = text(xr, "/metadata/uid").unwrap_or_default();
    let composite_label = text(xr, "/metadata/labels/crossplane.io~1composite")
        .or_else(|| text(xr, "/metadata/name"))
        .unwrap_or_default();
    let mut named = Vec::new();
    for object in observed {
        let mut object = object.clone();
        let unnamed = text(&object, "/metadata/name").is_none_or(|n| n.is_empty());
        let template = object
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(RESOURCE_NAME_ANNOTATION))
            .and_then(Value::as_str)
            .map(str::to_string);
        if let (true, Some(template)) = (unnamed, template) {
            let prefix = text(&object, "/metadata/generateName")
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| format!("{composite_label}-"));
            let name = plait_reconcile::compose::deterministic_name(&prefix, &uid, &template);
            object["metadata"]["name"] = Value::String(name);
            // A namespaced XR composes into its own namespace only.
            if let Some(namespace) = xr.pointer("/metadata/namespace")
                && object.pointer("/metadata/namespace").is_none()
            {
                object["metadata"]["namespace"] = namespace.clone();
            }
        }
        named.push(object);
    }
    named
}

/// The rendered objects as `up`'s render prints them for an XR given
/// without a UID: the XR without one, and no composed resource named (each
/// has the `generateName` its name came from; a name a function gave is
/// kept), where plait's render, as `crossplane render` does, names them.
fn as_up_renders(documents: &mut [Value]) {
    let text = |object: &Value, pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let Some(xr) = documents.first_mut() else {
        return;
    };
    if text(xr, "/metadata/uid").as_deref() == Some("")
        && let Some(metadata) = xr.get_mut("metadata").and_then(Value::as_object_mut)
    {
        metadata.remove("uid");
    }
    let composite_label = text(xr, "/metadata/labels/crossplane.io~1composite")
        .or_else(|| text(xr, "/metadata/name"))
        .unwrap_or_default();
    for document in documents.iter_mut().skip(1) {
        let (Some(name), Some(template)) = (
            text(document, "/metadata/name"),
            document
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(RESOURCE_NAME_ANNOTATION))
                .and_then(Value::as_str)
                .map(str::to_string),
        ) else {
            continue;
        };
        let prefix = text(document, "/metadata/generateName")
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| format!("{composite_label}-"));
        if name != plait_reconcile::compose::deterministic_name(&prefix, "", &template) {
            continue;
        }
        if let Some(metadata) = document.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.remove("name");
            metadata.insert("generateName".into(), Value::String(prefix));
        }
    }
}

/// `validate: true`: the rendered XR and composed resources checked against
/// the schemas of the built-in kinds, the XRD and the CRDs given; a kind
/// without a schema is not checked.
fn validate(
    documents: &[Value],
    xrd: Option<&Path>,
    test: &Test,
    crds: &[PathBuf],
    without_uid: bool,
) -> Result<Vec<String>> {
    let mut catalog = plait_validate::Catalog::builtin()?;
    let mut definitions = Vec::new();
    if let Some(root) = &test.project_root {
        definitions.extend(Project::open(root)?.definitions()?);
    }
    if let Some(file) = xrd {
        definitions.push(files::read_one(file, "XRD")?);
    }
    for path in crds {
        definitions.extend(
            files::read_documents_recursive(path)?
                .into_iter()
                .map(|(_, d)| d),
        );
    }
    for definition in &definitions {
        catalog.add_definition(definition).with_context(|| {
            format!(
                "{:?}: cannot read the schemas it defines",
                definition["metadata"]["name"].as_str().unwrap_or_default()
            )
        })?;
    }
    let validator = plait_validate::Validator::new(catalog);
    let mut failures = Vec::new();
    for document in documents
        .iter()
        .filter(|d| d["apiVersion"] != RENDER_API_VERSION)
    {
        let outcome = validator.validate(document, None);
        if outcome.status != plait_validate::Status::Invalid {
            continue;
        }
        for finding in &outcome.findings {
            // An XR given without a UID owns what it composes with UID "",
            // as `up` renders it; a cluster would have given it one.
            if without_uid && finding.message.starts_with(OWNER_UID_FIELD) {
                continue;
            }
            failures.push(format!(
                "validate: {}: {}",
                describe(document),
                finding.message
            ));
        }
    }
    Ok(failures)
}

/// Asserts one expected object as `up test run` does: the first rendered
/// object of its apiVersion, kind and `metadata.name` (absent is `""`, as
/// composed resources' names are) that carries every annotation it
/// asserts is compared with it, and only that one.
fn assert_resource(expected: &Value, rendered: &[Value]) -> Option<String> {
    let text = |value: &Value, pointer: &str| {
        value
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let identity = |value: &Value| {
        (
            text(value, "/apiVersion"),
            text(value, "/kind"),
            text(value, "/metadata/name"),
        )
    };
    let wanted = identity(expected);
    let annotations = expected
        .pointer("/metadata/annotations")
        .and_then(Value::as_object);
    let matching = rendered.iter().find(|candidate| {
        identity(candidate) == wanted
            && annotations.is_none_or(|annotations| {
                annotations.iter().all(|(key, value)| {
                    candidate
                        .pointer("/metadata/annotations")
                        .and_then(|a| a.get(key))
                        == Some(value)
                })
            })
    });
    let Some(actual) = matching else {
        let mut lines = vec![format!(
            "{}: no rendered resource has its apiVersion, kind, name and annotations",
            describe(expected)
        )];
        for candidate in rendered.iter().filter(|c| {
            (text(c, "/apiVersion"), text(c, "/kind")) == (wanted.0.clone(), wanted.1.clone())
        }) {
            lines.push(format!("  rendered: {}", describe(candidate)));
        }
        return Some(lines.join("\n"));
    };
    let mut differences = Vec::new();
    compare("", expected, actual, &mut differences);
    if differences.is_empty() {
        return None;
    }
    let mut lines = vec![format!("{}:", describe(expected))];
    lines.extend(differences.into_iter().map(|d| format!("  {d}")));
    Some(lines.join("\n"))
}

/// How a failure names an object: its apiVersion, kind, name and template.
fn describe(object: &Value) -> String {
    let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
    let mut out = format!(
        "{}, Kind={}",
        text("/apiVersion").unwrap_or_default(),
        text("/kind").unwrap_or_default()
    );
    if let Some(name) = text("/metadata/name") {
        out.push_str(&format!(" {name:?}"));
    }
    if let Some(template) = object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(RESOURCE_NAME_ANNOTATION))
        .and_then(Value::as_str)
    {
        out.push_str(&format!(" (resource {template:?})"));
    }
    out
}

/// The subset match `up test run` asserts with: every field of an expected
/// object must be in the actual one and match; a list matches a list of the
/// same length item by item; numbers match by value (`1` is `1.0`); other
/// values must be equal.
fn compare(path: &str, expected: &Value, actual: &Value, out: &mut Vec<String>) {
    match (expected, actual) {
        (Value::Object(expected), Value::Object(actual)) => {
            for (key, want) in expected {
                let child = child_path(path, key);
                match actual.get(key) {
                    Some(got) => compare(&child, want, got, out),
                    None => out.push(format!("{child}: missing, expected {}", brief(want))),
                }
            }
        }
        (Value::Array(expected), Value::Array(actual)) if expected.len() == actual.len() => {
            for (index, (want, got)) in expected.iter().zip(actual).enumerate() {
                compare(&format!("{path}[{index}]"), want, got, out);
            }
        }
        (Value::Array(expected), Value::Array(actual)) => out.push(format!(
            "{}: expected {} items, got {}: {}",
            shown(path),
            expected.len(),
            actual.len(),
            brief(&Value::Array(actual.clone()))
        )),
        (Value::Number(want), Value::Number(got)) if want.as_f64() == got.as_f64() => {}
        (want, got) if want == got => {}
        (want, got) => out.push(format!(
            "{}: expected {}, got {}",
            shown(path),
            brief(want),
            brief(got)
        )),
    }
}

fn shown(path: &str) -> &str {
    if path.is_empty() {
        "(the object)"
    } else {
        path
    }
}

/// `path.key`, or `path["key"]` for a key that is not a plain name.
fn child_path(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (path.is_empty(), plain) {
        (true, true) => key.to_string(),
        (false, true) => format!("{path}.{key}"),
        (_, false) => format!("{path}[{key:?}]"),
    }
}

/// A value as compact JSON, cut short when long.
fn brief(value: &Value) -> String {
    const MAX: usize = 120;
    let text = value.to_string();
    if text.chars().count() <= MAX {
        return text;
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{cut}…")
}

fn text_report(report: &Report) -> String {
    let mut out = String::new();
    for result in &report.tests {
        let verdict = if result.passed { "PASS" } else { "FAIL" };
        out.push_str(&format!(
            "{verdict} {} ({}, {:.2}s)\n",
            result.name, result.source, result.seconds
        ));
        for failure in &result.failures {
            for line in failure.lines() {
                out.push_str(&format!("    {line}\n"));
            }
        }
    }
    out.push_str(&format!(
        "{} passed, {} failed\n",
        report.passed, report.failed
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_assertion_is_a_subset_match_as_up_compares() {
        let rendered = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"labels": {"app": "a", "tier": "web"}, "uid": "1234"},
            "spec": {"ports": [{"port": 80, "name": "http"}], "replicas": 2, "flag": false},
        });
        let cases: [(&str, Value, Vec<&str>); 9] = [
            (
                "fields left out are not checked",
                json!({"metadata": {"labels": {"app": "a"}}}),
                vec![],
            ),
            (
                "a list matches item by item, each a subset",
                json!({"spec": {"ports": [{"port": 80}]}}),
                vec![],
            ),
            (
                "numbers match by value",
                json!({"spec": {"replicas": 2.0}}),
                vec![],
            ),
            (
                "a different value",
                json!({"spec": {"replicas": 3}}),
                vec!["spec.replicas: expected 3, got 2"],
            ),
            (
                "a missing field",
                json!({"spec": {"paused": true}}),
                vec!["spec.paused: missing, expected true"],
            ),
            (
                "lists of different lengths",
                json!({"spec": {"ports": [{"port": 80}, {"port": 443}]}}),
                vec!["spec.ports: expected 2 items, got 1: [{\"name\":\"http\",\"port\":80}]"],
            ),
            (
                "an empty UID is a value like any other",
                json!({"metadata": {"uid": ""}}),
                vec!["metadata.uid: expected \"\", got \"1234\""],
            ),
            (
                "false is not missing",
                json!({"spec": {"flag": false}}),
                vec![],
            ),
            (
                "keys that are not plain names are quoted",
                json!({"metadata": {"labels": {"app.kubernetes.io/name": "a"}}}),
                vec!["metadata.labels[\"app.kubernetes.io/name\"]: missing, expected \"a\""],
            ),
        ];
        for (case, expected, want) in cases {
            let mut got = Vec::new();
            compare("", &expected, &rendered, &mut got);
            assert_eq!(got, want, "{case}");
        }
    }

    #[test]
    fn an_assertion_compares_the_first_object_of_its_identity_and_annotations() {
        let composed = |template: &str, size: u64| {
            json!({"apiVersion": "example.org/v1", "kind": "Disk",
                "metadata": {"generateName": "xr-", "annotations": {RESOURCE_NAME_ANNOTATION: template}},
                "spec": {"size": size}})
        };
        let rendered = [
            json!({"apiVersion": "example.org/v1", "kind": "XR", "metadata": {"name": "xr"}}),
            composed("small", 1),
            composed("large", 10),
        ];
        let assertion = |annotations: Value, size: u64| {
            json!({"apiVersion": "example.org/v1", "kind": "Disk",
                "metadata": {"annotations": annotations}, "spec": {"size": size}})
        };
        let cases: [(&str, Value, Option<&str>); 5] = [
            (
                "the annotation picks the object",
                assertion(json!({RESOURCE_NAME_ANNOTATION: "large"}), 10),
                None,
            ),
            (
                "without one the first of the kind is compared, and only it",
                assertion(json!({}), 10),
                Some("example.org/v1, Kind=Disk:\n  spec.size: expected 10, got 1"),
            ),
            (
                "no object carries the annotation",
                assertion(json!({RESOURCE_NAME_ANNOTATION: "medium"}), 5),
                Some(
                    "example.org/v1, Kind=Disk (resource \"medium\"): no rendered resource has its apiVersion, kind, name and annotations\n  rendered: example.org/v1, Kind=Disk (resource \"small\")\n  rendered: example.org/v1, Kind=Disk (resource \"large\")",
                ),
            ),
            (
                "an unnamed composed resource is found by the name \"\", but has no name field",
                json!({"apiVersion": "example.org/v1", "kind": "Disk", "metadata": {"name": ""}, "spec": {"size": 1}}),
                Some("example.org/v1, Kind=Disk \"\":\n  metadata.name: missing, expected \"\""),
            ),
            (
                "the XR by its name",
                json!({"apiVersion": "example.org/v1", "kind": "XR", "metadata": {"name": "other"}}),
                Some(
                    "example.org/v1, Kind=XR \"other\": no rendered resource has its apiVersion, kind, name and annotations\n  rendered: example.org/v1, Kind=XR \"xr\"",
                ),
            ),
        ];
        for (case, expected, want) in cases {
            assert_eq!(
                assert_resource(&expected, &rendered).as_deref(),
                want,
                "{case}"
            );
        }
    }

    #[test]
    fn a_projects_paths_are_read_from_its_root_and_stay_inside_it() {
        let project = Base::ProjectRoot(PathBuf::from("/p"));
        let directory = Base::Directory(PathBuf::from("/p/tests/t"));
        let cases = [
            (&project, "examples/xr.yaml", "/p/examples/xr.yaml"),
            (&project, "../../examples/xr.yaml", "/p/examples/xr.yaml"),
            (
                &project,
                "/apis/composition.yaml",
                "/p/apis/composition.yaml",
            ),
            (
                &project,
                "apis/../examples/./xr.yaml",
                "/p/examples/xr.yaml",
            ),
            (
                &directory,
                "../../examples/xr.yaml",
                "/p/tests/t/../../examples/xr.yaml",
            ),
        ];
        for (base, relative, want) in cases {
            assert_eq!(
                base.resolve(relative),
                PathBuf::from(want),
                "{base:?} {relative}"
            );
        }
    }

    #[test]
    fn composed_resources_read_as_ups_render_prints_them() {
        let name =
            |template: &str| plait_reconcile::compose::deterministic_name("xr-", "", template);
        let mut documents = vec![
            json!({"apiVersion": "example.org/v1", "kind": "XR", "metadata": {"name": "xr", "uid": ""}}),
            json!({"kind": "Disk", "metadata": {"name": name("disk"), "generateName": "xr-",
                "annotations": {RESOURCE_NAME_ANNOTATION: "disk"}}}),
            json!({"kind": "Disk", "metadata": {"name": name("observed"),
                "annotations": {RESOURCE_NAME_ANNOTATION: "observed"}}}),
            json!({"kind": "Disk", "metadata": {"name": "chosen-by-the-function", "generateName": "xr-",
                "annotations": {RESOURCE_NAME_ANNOTATION: "named"}}}),
        ];
        as_up_renders(&mut documents);
        assert_eq!(
            documents[0]["metadata"],
            json!({"name": "xr"}),
            "the XR has no UID"
        );
        assert_eq!(
            documents[1]["metadata"],
            json!({"generateName": "xr-", "annotations": {RESOURCE_NAME_ANNOTATION: "disk"}})
        );
        assert_eq!(
            documents[2]["metadata"],
            json!({"generateName": "xr-", "annotations": {RESOURCE_NAME_ANNOTATION: "observed"}}),
            "a name derived from the XR's name keeps its generateName"
        );
        assert_eq!(documents[3]["metadata"]["name"], "chosen-by-the-function");
    }
}
