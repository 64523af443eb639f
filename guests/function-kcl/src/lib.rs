//! function-kcl, as a plait function.
//!
//! Runs the step's KCL program (`spec.source`, or the KCL package the host
//! grants at [`DEFAULT_SOURCE_DIR`] when the input gives none) with
//! plait's KCL, giving it `option("params")` and the other options
//! upstream (function-kcl v0.12.2) gives, then applies the resources it
//! outputs to the desired state as `spec.target` says, with upstream's
//! special `meta.krm.kcl.dev/v1alpha1` items for connection details,
//! requirements, conditions, events and context. Messages and byte-level
//! quirks follow upstream; what differs is listed in docs/kcl.md.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod config;
mod input;
mod output;
mod params;
mod process;

use std::path::Path;
use std::time::Duration;

use plait_go_compat::input::{from_sorted_value, get_input_error};
use plait_kcl::embed::{self, Embedded};
use plait_kcl::loader::FileSystem;
use plait_sdk::{Function, FunctionError, LogLevel, Ready, Request, Resource, Response};
use serde_json::{Map, Value};

use config::{ConfigError, Route};
use input::KclInput;
use output::OutputError;
use process::{Outcome, ProcessError, Target};

/// Where the host grants a project function's KCL package (upstream's
/// `FUNCTION_KCL_DEFAULT_SOURCE` in a project build).
pub const DEFAULT_SOURCE_DIR: &str = "/src";

/// Where the host grants an `oci://` source it fetched for the step.
pub const FETCHED_SOURCE_DIR: &str = "/kcl/source";
/// Where the host grants each registry dependency it fetched, by name.
pub const FETCHED_DEPENDENCIES_DIR: &str = "/kcl/deps";

/// The TTL upstream gives its responses (function-sdk-go's default).
pub const DEFAULT_TTL: Duration = Duration::from_secs(60);

/// The name upstream gives an inline program's file.
const INLINE_FILE_NAME: &str = "prog.k";

/// The stack a KCL evaluation may use in the guest: wasmtime's own stack
/// for the guest's calls (512 KiB) must not run out before KCL's recursion
/// error.
const STACK_BUDGET: usize = 256 << 10;

/// The `function-kcl` built-in.
pub struct FunctionKcl;

/// Why the step failed; the message becomes a fatal result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    #[error("cannot get Function input from *v1.RunFunctionRequest: {0}")]
    Input(String),
    #[error("invalid function input: {0}")]
    InvalidInput(String),
    #[error("{field}: {reason}")]
    Unsupported { field: String, reason: String },
    #[error("failed to run kcl function pipelines: {0}")]
    Pipeline(String),
    #[error("cannot parse data resources from the pipeline output in *v1.RunFunctionResponse: {0}")]
    DataResources(String),
    #[error("cannot process xr and state with the pipeline output in *v1.RunFunctionResponse: {0}")]
    Process(#[source] ProcessError),
}

impl Function for FunctionKcl {
    fn run(request: Request) -> Result<Response, FunctionError> {
        Ok(respond(&request, &plait_kcl::loader::NativeFs))
    }
}

/// The response to `request`, reading a default source through `fs`.
pub fn respond(request: &Request, fs: &dyn FileSystem) -> Response {
    let mut response = Response::from_request(request);
    response.ttl = Some(DEFAULT_TTL);
    if let Err(e) = compose(request, fs, &mut response) {
        response.fatal(e.to_string());
    }
    response
}

fn compose(request: &Request, fs: &dyn FileSystem, response: &mut Response) -> Result<(), Error> {
    let mut input: KclInput = match &request.input {
        None => KclInput::default(),
        Some(value) => from_sorted_value(value.clone())
            .map_err(|e| Error::Input(get_input_error("v1alpha1.KCLInput", e)))?,
    };
    if input.spec.source.is_empty() && fs.is_dir(Path::new(DEFAULT_SOURCE_DIR)) {
        input.spec.source = DEFAULT_SOURCE_DIR.into();
    }
    take_registry_credentials(request, &mut input);
    let target = validate(&input)?;
    let source = Source::of(&input.spec.source);
    refuse_unsupported(&input)?;

    let params = params::params(&input, request);
    let program = Embedded {
        name: INLINE_FILE_NAME.into(),
        source: String::new(),
        options: params::options(&input, &params),
        step_limit: None,
        stack_budget: Some(STACK_BUDGET),
    };
    let route = match source {
        Source::Inline if input.spec.config.vendor => Route::InlineVendor,
        Source::Inline => Route::Inline,
        Source::Local(_) | Source::Remote(_) => Route::Path,
    };
    let compile = config::compile(&input.spec.config, route, fs).map_err(|e| match e {
        ConfigError::Settings(message) => Error::Pipeline(message),
        ConfigError::Unsupported(reason) => Error::Unsupported {
            field: "spec.config.settings".into(),
            reason,
        },
    })?;
    if compile.dropped_arguments {
        plait_sdk::log(
            LogLevel::Info,
            "spec.config.arguments are not given to an inline program unless spec.config.vendor is true, as function-kcl v0.12.2 does not give them",
        );
    }
    let directory = match source {
        Source::Inline => None,
        Source::Local(dir) => {
            if !fs.is_dir(Path::new(dir)) {
                return Err(Error::Unsupported {
                    field: "spec.source".into(),
                    reason: format!(
                        "the local path \"{dir}\" is not a directory granted to the function (plait grants a project function's package at {DEFAULT_SOURCE_DIR}); give the KCL code inline instead"
                    ),
                });
            }
            Some(dir)
        }
        Source::Remote(location)
            if location.starts_with("oci://") && fs.is_dir(Path::new(FETCHED_SOURCE_DIR)) =>
        {
            Some(FETCHED_SOURCE_DIR)
        }
        Source::Remote(location) => return Err(remote_refusal(location)),
    };
    let mut run = compile.run;
    run.packages = external_packages(&input.spec.dependencies, directory, fs)?;
    let ran = match directory {
        None => embed::run_with(
            &Embedded {
                source: input.spec.source.clone(),
                ..program
            },
            fs,
            &run,
        ),
        Some(dir) => embed::run_directory_with(Path::new(dir), fs, &program, &run),
    };
    let output = ran.map_err(|e| {
        log_prints(&e.logs);
        Error::Pipeline(api_message(&e))
    })?;
    log_prints(&output.logs);

    let documents = output.documents;
    let items =
        output::resources(documents, &output.values, compile.sort_keys).map_err(|e| match e {
            OutputError::ItemNotAnObject { .. } => Error::DataResources(e.to_string()),
            other => Error::Pipeline(other.to_string()),
        })?;
    let mut bases = Vec::new();
    for r in &input.spec.resources {
        match &r.base {
            Some(base @ Value::Object(_)) => bases.push((r.name.clone(), base.clone())),
            Some(other) => {
                return Err(Error::DataResources(format!(
                    "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                    json_kind(other)
                )));
            }
            None => {}
        }
    }

    let observed = params::composite(&request.observed);
    let mut composite = params::composite(&request.desired);
    params::force_type(&mut composite, &observed);
    let mut outcome = Outcome {
        composite,
        composite_connection_details: request
            .desired
            .composite
            .as_ref()
            .map(|c| c.connection_details.clone())
            .unwrap_or_default(),
        desired: request.desired.resources.clone(),
        ..Outcome::default()
    };
    process::process(target, items, &observed, bases, &mut outcome).map_err(Error::Process)?;
    finish(request, outcome, response);
    Ok(())
}

/// Writes what the output asked for into the response, in upstream's
/// order: requirements, conditions, events (either of which may still
/// fail the step), context, then the desired state.
fn finish(request: &Request, outcome: Outcome, response: &mut Response) {
    // plait has one map of requirements; Crossplane answers both kinds
    // from the same resources.
    let mut requirements = outcome.extra_resources;
    requirements.extend(outcome.required_resources);
    response.requirements.resources.extend(requirements);
    match process::conditions(&outcome.conditions) {
        Ok(conditions) => response.conditions.extend(conditions),
        Err(message) => {
            response.fatal(message);
            return;
        }
    }
    match process::events(&outcome.events) {
        Ok(results) => response.results.extend(results),
        Err(message) => {
            response.fatal(message);
            return;
        }
    }
    if !outcome.context.is_empty() {
        let mut context = match &request.context {
            Value::Object(map) => map.clone(),
            _ => Map::new(),
        };
        process::deep_merge(&mut context, outcome.context);
        response.context = Value::Object(context);
    }
    response.desired.composite = Some(Resource {
        resource: outcome.composite,
        connection_details: outcome.composite_connection_details,
        ready: Ready::Unspecified,
    });
    // Upstream's desired composed resources carry no connection details.
    response.desired.resources = outcome
        .desired
        .into_iter()
        .map(|(name, r)| {
            let resource = Resource {
                resource: r.resource,
                ready: r.ready,
                ..Resource::default()
            };
            (name, resource)
        })
        .collect();
}

/// The `kcl-registry` credential fills `spec.credentials`, as upstream
/// does (the program sees it in `option("resource_list")`).
fn take_registry_credentials(request: &Request, input: &mut KclInput) {
    let Some(data) = request.credentials.get("kcl-registry") else {
        return;
    };
    let text = |key: &str| {
        data.get(key)
            .map(|v| String::from_utf8_lossy(v).into_owned())
    };
    let Some(password) = text("password") else {
        plait_sdk::log(
            LogLevel::Info,
            "Warning: required password not found in the credentials",
        );
        return;
    };
    let credentials = &mut input.spec.credentials;
    credentials.password = password;
    if let Some(username) = text("username") {
        credentials.username = username;
        if let Some(url) = text("url") {
            credentials.url = url;
        }
    }
}

/// Upstream's `Validate`: a source is required, and `PatchResources`
/// needs resources with names and bases.
fn validate(input: &KclInput) -> Result<Target, Error> {
    let spec = &input.spec;
    if spec.source.is_empty() {
        return Err(Error::InvalidInput(
            "spec.source: Required value: kcl source cannot be empty".into(),
        ));
    }
    let target = Target::parse(&spec.target);
    if target == Target::PatchResources {
        if spec.resources.is_empty() {
            return Err(Error::InvalidInput(
                "spec.Resources: Required value: PatchResources target requires at least one resource"
                    .into(),
            ));
        }
        for (i, r) in spec.resources.iter().enumerate() {
            if r.name.is_empty() {
                return Err(Error::InvalidInput(format!(
                    "spec.Resources[{i}].name: Required value: name cannot be empty"
                )));
            }
            if r.base.is_none() {
                return Err(Error::InvalidInput(format!(
                    "spec.Resources[{i}].base: Required value: base cannot be empty"
                )));
            }
        }
    }
    Ok(target)
}

/// Where the program comes from, as krm-kcl tells sources apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source<'a> {
    Inline,
    /// A path in the function's file system (upstream: the pod's).
    Local(&'a str),
    /// Fetched by upstream from a registry, a git host or a URL.
    Remote(&'a str),
}

impl<'a> Source<'a> {
    fn of(source: &'a str) -> Source<'a> {
        let remote = [
            "oci://",
            "http://",
            "https://",
            "git::",
            "github.com",
            "gitlab.com/",
            "bitbucket.org/",
        ];
        if remote.iter().any(|p| source.starts_with(p)) {
            Source::Remote(source)
        } else if source.starts_with('/') || source.starts_with('.') {
            Source::Local(source)
        } else {
            Source::Inline
        }
    }
}

/// A source upstream fetches from the network and the host did not:
/// refused with what to do instead, as the guest never fetches anything.
fn remote_refusal(location: &str) -> Error {
    let reason = if location.starts_with("oci://") {
        format!(
            "\"{location}\" names an OCI KCL module, which the host did not fetch for this step (plait fetches the OCI modules of a step whose input is krm.kcl.dev/v1alpha1 before the step runs, and grants them at {FETCHED_SOURCE_DIR}); put the KCL code inline in spec.source instead"
        )
    } else {
        format!(
            "\"{location}\" names a git repository or URL, which plait does not fetch; publish the module to an OCI registry (kcl mod push oci://REGISTRY/REPOSITORY?tag=TAG) and set spec.source to oci://REGISTRY/REPOSITORY:TAG, or put the KCL code inline in spec.source"
        )
    };
    Error::Unsupported {
        field: "spec.source".into(),
        reason,
    }
}

/// The external packages the program imports, by name, as kpm resolves
/// them into one namespace: `spec.dependencies`' path entries where they
/// name a granted directory, and every registry module the host fetched
/// for the step (granted at [`FETCHED_DEPENDENCIES_DIR`]`/<name>`), named
/// by `spec.dependencies` or by the `kcl.mod` of the source or of a
/// fetched module. A dependency of `spec.dependencies` that is not there
/// fails the step, naming it.
fn external_packages(
    dependencies: &str,
    directory: Option<&str>,
    fs: &dyn FileSystem,
) -> Result<Vec<(String, std::path::PathBuf)>, Error> {
    let fetched = |name: &str| Path::new(FETCHED_DEPENDENCIES_DIR).join(name);
    let mut packages: Vec<(String, std::path::PathBuf)> = Vec::new();
    for (name, path) in dependency_entries(dependencies) {
        let dir = match &path {
            Some(path) => std::path::PathBuf::from(path),
            None => fetched(&name),
        };
        if !fs.is_dir(&dir) {
            let reason = match path {
                Some(path) => format!(
                    "the path \"{path}\" is not a directory granted to the function; name the module in an OCI registry instead ({name} = {{ oci = \"oci://REGISTRY/REPOSITORY\", tag = \"TAG\" }})"
                ),
                None => format!(
                    "the host did not fetch this dependency for the step (plait fetches the OCI dependencies of a step whose input is krm.kcl.dev/v1alpha1 before the step runs, and grants them at {})",
                    dir.display()
                ),
            };
            return Err(Error::Unsupported {
                field: format!("spec.dependencies.{name}"),
                reason,
            });
        }
        if !packages.iter().any(|(known, _)| *known == name) {
            packages.push((name, dir));
        }
    }
    // The modules the fetched ones depend on, breadth first; the first of
    // a name wins, as the host fetched only that one.
    let mut pending: Vec<std::path::PathBuf> = directory
        .map(std::path::PathBuf::from)
        .into_iter()
        .chain(packages.iter().map(|(_, dir)| dir.clone()))
        .collect();
    let mut next = 0;
    while let Some(dir) = pending.get(next).cloned() {
        next += 1;
        let Ok(text) = fs.read_to_string(&dir.join("kcl.mod")) else {
            continue;
        };
        let section = mod_dependencies_section(&text);
        for (name, path) in dependency_entries(&section) {
            if path.is_some() || packages.iter().any(|(known, _)| *known == name) {
                continue;
            }
            let dir = fetched(&name);
            if fs.is_dir(&dir) {
                pending.push(dir.clone());
                packages.push((name, dir));
            }
        }
    }
    Ok(packages)
}

/// The `[dependencies]` section of a `kcl.mod`, without its header.
fn mod_dependencies_section(kcl_mod: &str) -> String {
    let mut inside = false;
    let mut section = String::new();
    for line in kcl_mod.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            inside = trimmed == "[dependencies]";
        } else if inside {
            section.push_str(line);
            section.push('\n');
        }
    }
    section
}

/// The entries of a `[dependencies]` body: each name, and the path a
/// `{ path = "…" }` entry gives.
fn dependency_entries(text: &str) -> Vec<(String, Option<String>)> {
    let mut entries = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let name = name.trim().trim_matches('"').to_string();
        if name.is_empty() {
            continue;
        }
        let path = value
            .trim()
            .strip_prefix('{')
            .and_then(|v| v.strip_suffix('}'))
            .and_then(|table| {
                table.split(',').find_map(|field| {
                    let (key, v) = field.split_once('=')?;
                    (key.trim() == "path").then(|| v.trim().trim_matches('"').to_string())
                })
            });
        entries.push((name, path));
    }
    entries
}

/// Compile options plait's KCL does not offer are refused with what to do
/// instead.
fn refuse_unsupported(input: &KclInput) -> Result<(), Error> {
    let spec = &input.spec;
    let config = &spec.config;
    let unsupported = [("overrides", !config.overrides.is_empty())];
    if let Some((name, _)) = unsupported.iter().find(|(_, set)| *set) {
        return Err(Error::Unsupported {
            field: format!("spec.config.{name}"),
            reason: "plait's built-in function-kcl does not support this option yet; remove it"
                .into(),
        });
    }
    Ok(())
}

/// A KCL error as KCL's API reports it to upstream (without the source
/// lines `kcl run` shows): `error[code]: Kind`, then each position as
/// `---> File path:line:column: message`, the notes after the last, a
/// blank line after each. A run-time error (`E3…`) prints its kind alone
/// and its line without a column.
fn api_message(error: &plait_kcl::RunError) -> String {
    let mut out = String::new();
    for e in error.errors() {
        let run_time = e.kind.code().starts_with("E3");
        if run_time {
            out.push_str(&format!("{}\n", e.kind.title()));
        } else {
            out.push_str(&format!("error[{}]: {}\n", e.kind.code(), e.kind.title()));
        }
        if e.labels.is_empty() {
            out.push_str(&format!("{}\n", e.message));
        }
        for (i, label) in e.labels.iter().enumerate() {
            let path = error
                .sources
                .get(label.span.file)
                .map_or("", |f| f.path.as_str());
            let position = if run_time {
                format!("{path}:{}", label.span.line)
            } else {
                format!("{path}:{}:{}", label.span.line, label.span.column + 1)
            };
            out.push_str(&format!("---> File {position}: {}\n", label.message));
            if i + 1 == e.labels.len() {
                for note in &e.notes {
                    if !note.starts_with("suggestion: ") {
                        out.push_str("note: ");
                    }
                    out.push_str(&format!("{note}\n"));
                }
            }
            out.push('\n');
        }
    }
    out
}

/// What the program's `print()` calls wrote goes to the function's log.
fn log_prints(logs: &str) {
    if !logs.is_empty() {
        plait_sdk::log(LogLevel::Info, logs.trim_end());
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

plait_sdk::export_function!(FunctionKcl);

#[cfg(test)]
mod tests;
