//! Loader and checker for the patch-and-transform conformance corpus.
//!
//! Each YAML file under `cases/` holds `cases:`, a list of whole function
//! calls with their expected outcome (see `README.md` next to this file).
//! This file is shared by several test targets (native and through the Wasm
//! host) via `#[path]`, so it depends only on `plait_sdk`, serde,
//! serde_json and serde_yaml_ng.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use plait_sdk::{Ready, Request, Resource, Response, Severity, State};
use serde::Deserialize;
use serde_json::{Map, Value};

/// The input kind every case is run with unless it says otherwise.
const INPUT_API_VERSION: &str = "pt.fn.crossplane.io/v1beta1";
const INPUT_KIND: &str = "Resources";

/// A value in an expected subset that asserts the key is missing.
pub const ABSENT: &str = "<absent>";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    cases: Vec<Case>,
}

/// One conformance case: a whole function call and what must come out of it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    pub rule: String,
    pub input: Value,
    #[serde(default)]
    pub observed: Option<StateSpec>,
    #[serde(default)]
    pub desired: Option<StateSpec>,
    #[serde(default)]
    pub context: Option<Value>,
    pub expect: Expect,
    /// The file the case came from, for failure reports.
    #[serde(skip)]
    pub file: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateSpec {
    #[serde(default)]
    pub composite: Option<ResourceSpec>,
    #[serde(default)]
    pub resources: BTreeMap<String, ResourceSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResourceSpec {
    pub resource: Value,
    #[serde(default)]
    pub connection_details: BTreeMap<String, String>,
    #[serde(default)]
    pub ready: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Expect {
    /// Desired composed resources, each a deep subset of
    /// `{resource, ready, connectionDetails}`.
    #[serde(default)]
    pub resources: BTreeMap<String, Value>,
    /// Names that must not be desired composed resources.
    #[serde(default)]
    pub absent: Vec<String>,
    /// A deep subset of the desired XR `{resource, ready, connectionDetails}`.
    #[serde(default)]
    pub composite: Option<Value>,
    /// A deep subset of the response context.
    #[serde(default)]
    pub context: Option<Value>,
    /// Results that must appear, in this order (other results may interleave).
    #[serde(default)]
    pub results: Vec<ExpectedResult>,
    #[serde(default)]
    pub no_results: bool,
    /// A substring of the fatal result (or function error) message.
    #[serde(default)]
    pub fatal: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedResult {
    pub severity: String,
    pub message: String,
}

/// Loads every `*.yaml` file in `dir` (sorted by name). Panics on unreadable
/// or malformed files and on duplicate case names, since a broken corpus is a
/// test failure in itself.
pub fn load_cases(dir: &Path) -> Vec<Case> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read case directory {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();

    let mut cases = Vec::new();
    let mut names = BTreeSet::new();
    for path in files {
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let parsed: CaseFile = serde_yaml_ng::from_str(&text)
            .unwrap_or_else(|e| panic!("cannot parse {}: {e}", path.display()));
        for mut case in parsed.cases {
            assert!(
                names.insert(case.name.clone()),
                "duplicate case name {:?} in {file_name}",
                case.name
            );
            assert!(
                !case.rule.trim().is_empty(),
                "case {:?} in {file_name} has no rule",
                case.name
            );
            case.file = file_name.clone();
            cases.push(case);
        }
    }
    cases
}

fn ready_from(name: &str, value: Option<&str>) -> Ready {
    match value {
        None | Some("Unspecified") => Ready::Unspecified,
        Some("True") => Ready::True,
        Some("False") => Ready::False,
        Some(other) => panic!("{name}: ready must be True, False or Unspecified, not {other:?}"),
    }
}

fn ready_name(ready: Ready) -> &'static str {
    match ready {
        Ready::Unspecified => "Unspecified",
        Ready::True => "True",
        Ready::False => "False",
    }
}

fn resource_from(name: &str, spec: &ResourceSpec) -> Resource {
    Resource {
        resource: spec.resource.clone(),
        connection_details: spec
            .connection_details
            .iter()
            .map(|(k, v)| (k.clone(), v.as_bytes().to_vec()))
            .collect(),
        ready: ready_from(name, spec.ready.as_deref()),
    }
}

fn state_from(case: &str, spec: Option<&StateSpec>) -> State {
    let Some(spec) = spec else {
        return State::default();
    };
    State {
        composite: spec
            .composite
            .as_ref()
            .map(|c| resource_from(&format!("{case}: composite"), c)),
        resources: spec
            .resources
            .iter()
            .map(|(n, r)| (n.clone(), resource_from(&format!("{case}: {n}"), r)))
            .collect(),
    }
}

/// Builds the function request for a case: the input gets the
/// `pt.fn.crossplane.io/v1beta1` `Resources` kind unless it names its own.
pub fn request_for(case: &Case) -> Request {
    let mut input = case.input.clone();
    if let Value::Object(map) = &mut input {
        map.entry("apiVersion")
            .or_insert_with(|| Value::String(INPUT_API_VERSION.into()));
        map.entry("kind")
            .or_insert_with(|| Value::String(INPUT_KIND.into()));
    }
    Request {
        observed: state_from(&case.name, case.observed.as_ref()),
        desired: state_from(&case.name, case.desired.as_ref()),
        input: Some(input),
        context: case
            .context
            .clone()
            .unwrap_or_else(|| Value::Object(Map::new())),
        ..Request::default()
    }
}

/// The shape expectations are written against.
fn resource_view(resource: &Resource) -> Value {
    let details: Map<String, Value> = resource
        .connection_details
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                Value::String(String::from_utf8_lossy(v).into_owned()),
            )
        })
        .collect();
    let mut view = Map::new();
    view.insert("resource".into(), resource.resource.clone());
    view.insert(
        "ready".into(),
        Value::String(ready_name(resource.ready).into()),
    );
    view.insert("connectionDetails".into(), Value::Object(details));
    Value::Object(view)
}

fn severity_name(severity: Severity) -> &'static str {
    match severity {
        Severity::Fatal => "Fatal",
        Severity::Warning => "Warning",
        Severity::Normal => "Normal",
    }
}

/// Compares numbers strictly by kind: an expected integer needs an integral
/// JSON number (i64/u64), an expected float needs an f64 of the same value.
fn numbers_match(expected: &serde_json::Number, actual: &serde_json::Number) -> bool {
    let as_int = |n: &serde_json::Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (as_int(expected), as_int(actual)) {
        (Some(e), Some(a)) => e == a,
        (None, None) => expected.as_f64() == actual.as_f64(),
        _ => false,
    }
}

fn describe(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| format!("{value:?}"))
}

/// True for `"<absent>"` and for objects whose every leaf is `"<absent>"`.
fn only_absent_markers(expected: &Value) -> bool {
    match expected {
        Value::String(s) => s == ABSENT,
        Value::Object(map) => map.values().all(only_absent_markers),
        _ => false,
    }
}

/// Deep subset: maps by subset (a value of `"<absent>"` requires the key to be
/// missing), arrays element-wise and of equal length, scalars exactly.
fn subset(path: &str, expected: &Value, actual: Option<&Value>, errors: &mut Vec<String>) {
    if expected.as_str() == Some(ABSENT) {
        if let Some(a) = actual {
            errors.push(format!("{path}: expected absent, got {}", describe(a)));
        }
        return;
    }
    let Some(actual) = actual else {
        // Keys that must be absent are absent when their parent is.
        if !only_absent_markers(expected) {
            errors.push(format!(
                "{path}: expected {}, but it is missing",
                describe(expected)
            ));
        }
        return;
    };
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, ev) in e {
                subset(&format!("{path}.{k}"), ev, a.get(k), errors);
            }
        }
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                errors.push(format!(
                    "{path}: expected {} ({} items), got {} ({} items)",
                    describe(expected),
                    e.len(),
                    describe(actual),
                    a.len()
                ));
                return;
            }
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                subset(&format!("{path}[{i}]"), ev, Some(av), errors);
            }
        }
        (Value::Number(e), Value::Number(a)) => {
            if !numbers_match(e, a) {
                errors.push(format!("{path}: expected {e}, got {a}"));
            }
        }
        (e, a) if e == a => {}
        (e, a) => errors.push(format!(
            "{path}: expected {}, got {}",
            describe(e),
            describe(a)
        )),
    }
}

fn describe_results(response: &Response) -> String {
    if response.results.is_empty() {
        return "no results".into();
    }
    response
        .results
        .iter()
        .map(|r| format!("[{}] {}", severity_name(r.severity), r.message))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Checks a function outcome against the case's expectations. A function
/// error (`Err`) can only satisfy `expect.fatal`. All mismatches are reported
/// together.
pub fn check(case: &Case, outcome: Result<Response, String>) -> Result<(), String> {
    let expect = &case.expect;
    let mut errors = Vec::new();

    let response = match outcome {
        Ok(response) => response,
        Err(message) => {
            match &expect.fatal {
                Some(fatal) if message.contains(fatal.as_str()) => {}
                Some(fatal) => errors.push(format!(
                    "expected fatal containing {fatal:?}, function failed with {message:?}"
                )),
                None => errors.push(format!("function failed: {message}")),
            }
            return if errors.is_empty() {
                Ok(())
            } else {
                Err(errors.join("\n"))
            };
        }
    };

    let fatals: Vec<&str> = response
        .results
        .iter()
        .filter(|r| r.severity == Severity::Fatal)
        .map(|r| r.message.as_str())
        .collect();
    match &expect.fatal {
        Some(fatal) => {
            if !fatals.iter().any(|m| m.contains(fatal.as_str())) {
                errors.push(format!(
                    "expected a fatal result containing {fatal:?}; got {}",
                    describe_results(&response)
                ));
            }
        }
        None => {
            if !fatals.is_empty() {
                errors.push(format!(
                    "unexpected fatal result; got {}",
                    describe_results(&response)
                ));
            }
        }
    }

    if expect.no_results && !response.results.is_empty() {
        errors.push(format!(
            "expected no results; got {}",
            describe_results(&response)
        ));
    }

    let mut next = 0;
    for wanted in &expect.results {
        let found = response.results[next..].iter().position(|r| {
            severity_name(r.severity) == wanted.severity && r.message.contains(&wanted.message)
        });
        match found {
            Some(offset) => next += offset + 1,
            None => {
                errors.push(format!(
                    "expected (in order) a {} result containing {:?}; got {}",
                    wanted.severity,
                    wanted.message,
                    describe_results(&response)
                ));
                break;
            }
        }
    }

    for (name, wanted) in &expect.resources {
        let actual = response.desired.resources.get(name).map(resource_view);
        match actual {
            Some(actual) => subset(
                &format!("resources.{name}"),
                wanted,
                Some(&actual),
                &mut errors,
            ),
            None => errors.push(format!(
                "resources.{name}: not in desired state (desired: {:?})",
                response.desired.resources.keys().collect::<Vec<_>>()
            )),
        }
    }
    for name in &expect.absent {
        if response.desired.resources.contains_key(name) {
            errors.push(format!(
                "resources.{name}: expected absent from desired state"
            ));
        }
    }
    if let Some(wanted) = &expect.composite {
        let actual = response.desired.composite.as_ref().map(resource_view);
        subset("composite", wanted, actual.as_ref(), &mut errors);
    }
    if let Some(wanted) = &expect.context {
        subset("context", wanted, Some(&response.context), &mut errors);
    }

    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}
