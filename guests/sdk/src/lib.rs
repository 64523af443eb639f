//! The plait function contract, in Rust.
//!
//! A composition function receives a [`Request`] (observed state, the desired
//! state built by earlier steps, its input and the pipeline context) and
//! returns a [`Response`] whose desired state *replaces* the running one.
//! These plain types are shared by the host and by Rust guests; inside a
//! WebAssembly guest, [`export_function!`] connects a [`Function`] to the
//! component's `run-function` export.
//!
//! ```
//! use plait_sdk::{Function, FunctionError, Request, Response};
//!
//! struct AddLabel;
//!
//! impl Function for AddLabel {
//!     fn run(request: Request) -> Result<Response, FunctionError> {
//!         let mut response = Response::from_request(&request);
//!         for resource in response.desired.resources.values_mut() {
//!             resource.resource["metadata"]["labels"]["team"] = "payments".into();
//!         }
//!         Ok(response)
//!     }
//! }
//! # plait_sdk::export_function!(AddLabel);
//! ```
//!
//! The helpers on [`Request`], [`Response`] and [`Resource`] make the common
//! steps one line each: [`Request::composite_value`] reads an XR field,
//! [`Response::set_resource`] composes a resource, [`Response::set_ready`]
//! marks it ready, [`Response::set_composite_field`] writes XR status,
//! [`Response::add_condition`] and [`Response::add_result`] report, and
//! [`Response::require_resource`] asks for more input. [`fieldpath`] reads and
//! writes any JSON value by a path like `spec.containers[0].image`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[cfg(any(target_arch = "wasm32", test))]
pub mod allocator;
pub mod fieldpath;
#[cfg(target_arch = "wasm32")]
pub mod guest;
mod helpers;

/// Whether a resource is ready. `Unspecified` composed resources count as not ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Ready {
    #[default]
    Unspecified,
    True,
    False,
}

/// A Kubernetes object with its connection details and readiness.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Resource {
    pub resource: Value,
    pub connection_details: BTreeMap<String, Vec<u8>>,
    pub ready: Ready,
}

impl Resource {
    pub fn new(resource: Value) -> Self {
        Resource {
            resource,
            ..Resource::default()
        }
    }
}

/// Observed or desired state: the composite resource and its composed
/// resources keyed by their name in the Composition.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct State {
    pub composite: Option<Resource>,
    pub resources: BTreeMap<String, Resource>,
}

/// Features a host supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Capability {
    Capabilities,
    RequiredResources,
    Credentials,
    Conditions,
    RequiredSchemas,
}

impl Capability {
    pub const ALL: [Capability; 5] = [
        Capability::Capabilities,
        Capability::RequiredResources,
        Capability::Credentials,
        Capability::Conditions,
        Capability::RequiredSchemas,
    ];
}

/// Everything a function is called with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Request {
    pub tag: String,
    pub capabilities: Vec<Capability>,
    pub observed: State,
    pub desired: State,
    pub input: Option<Value>,
    /// A JSON object chained from step to step.
    pub context: Value,
    /// Resources the step asked for, by requirement name.
    pub required_resources: BTreeMap<String, Vec<Value>>,
    /// OpenAPI v3 schemas the step asked for; `None` when the kind is unknown.
    pub required_schemas: BTreeMap<String, Option<Value>>,
    /// Credentials declared on the step: name → key → bytes.
    pub credentials: BTreeMap<String, BTreeMap<String, Vec<u8>>>,
}

impl Default for Request {
    fn default() -> Self {
        Request {
            tag: String::new(),
            capabilities: Capability::ALL.to_vec(),
            observed: State::default(),
            desired: State::default(),
            input: None,
            context: Value::Object(Default::default()),
            required_resources: BTreeMap::new(),
            required_schemas: BTreeMap::new(),
            credentials: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Severity {
    Fatal,
    Warning,
    Normal,
}

/// Who sees a result or a condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Target {
    Composite,
    CompositeAndClaim,
}

/// A message for the people who own the composite resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionResult {
    pub severity: Severity,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

impl ConditionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }
}

/// A status condition a function sets on the composite resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: ConditionStatus,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
}

/// How a required resource is chosen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ResourceMatch {
    Name(String),
    Labels(BTreeMap<String, String>),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSelector {
    pub api_version: String,
    pub kind: String,
    #[serde(rename = "match")]
    pub matching: ResourceMatch,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SchemaSelector {
    pub api_version: String,
    pub kind: String,
}

/// What a step needs to be called again with.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Requirements {
    pub resources: BTreeMap<String, ResourceSelector>,
    pub schemas: BTreeMap<String, SchemaSelector>,
}

impl Requirements {
    pub fn is_empty(&self) -> bool {
        self.resources.is_empty() && self.schemas.is_empty()
    }
}

/// What a function returns. `desired` and `context` replace the running ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Response {
    pub tag: String,
    pub ttl: Option<Duration>,
    pub desired: State,
    pub results: Vec<FunctionResult>,
    pub context: Value,
    pub requirements: Requirements,
    pub conditions: Vec<Condition>,
    pub output: Option<Value>,
}

impl Default for Response {
    fn default() -> Self {
        Response {
            tag: String::new(),
            ttl: None,
            desired: State::default(),
            results: Vec::new(),
            context: Value::Object(Default::default()),
            requirements: Requirements::default(),
            conditions: Vec::new(),
            output: None,
        }
    }
}

impl Response {
    /// A response that passes the request's desired state and context through unchanged.
    pub fn from_request(request: &Request) -> Self {
        Response {
            tag: request.tag.clone(),
            desired: request.desired.clone(),
            context: request.context.clone(),
            ..Response::default()
        }
    }

    fn push_result(&mut self, severity: Severity, message: impl Into<String>) -> &mut Self {
        self.results.push(FunctionResult {
            severity,
            message: message.into(),
            reason: None,
            target: None,
        });
        self
    }

    /// Adds a fatal result: the pipeline stops and nothing is applied or deleted.
    pub fn fatal(&mut self, message: impl Into<String>) -> &mut Self {
        self.push_result(Severity::Fatal, message)
    }

    pub fn warning(&mut self, message: impl Into<String>) -> &mut Self {
        self.push_result(Severity::Warning, message)
    }

    pub fn normal(&mut self, message: impl Into<String>) -> &mut Self {
        self.push_result(Severity::Normal, message)
    }

    /// True when some result is fatal.
    pub fn is_fatal(&self) -> bool {
        self.results.iter().any(|r| r.severity == Severity::Fatal)
    }
}

/// A failure the function could not express as a fatal result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FunctionError {
    InvalidInput(String),
    Internal(String),
}

impl std::fmt::Display for FunctionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FunctionError::InvalidInput(m) => write!(f, "invalid input: {m}"),
            FunctionError::Internal(m) => write!(f, "internal error: {m}"),
        }
    }
}

impl std::error::Error for FunctionError {}

/// A composition function.
pub trait Function {
    fn run(request: Request) -> Result<Response, FunctionError>;

    /// Runs on a request whose step input is still the JSON text it crossed
    /// the component boundary as (`request.input` is `None`). The default
    /// parses the text into `request.input` and calls [`Function::run`]; a
    /// function that reads its input into its own types can parse the text
    /// straight into them instead, which skips building a [`Value`] tree
    /// only to take it apart again.
    fn run_with_input_text(
        mut request: Request,
        input: Option<&str>,
    ) -> Result<Response, FunctionError> {
        request.input = input
            .map(|text| parse_json_text("input", text))
            .transpose()
            .map_err(FunctionError::InvalidInput)?;
        Self::run(request)
    }
}

/// Log levels for [`log`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// The compact JSON text of `value`, as `Value::to_string` writes it but
/// without going through `fmt` for every token (the difference shows in
/// per-call time, where every resource crosses the boundary as text).
/// Serializing a `Value` into memory cannot fail; were it ever to, the
/// `Display` text is the same document.
pub fn json_text(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| value.to_string())
}

/// Parses one JSON text that crossed the component boundary; the error
/// names `what` it was (`context`, `input`, a resource).
pub fn parse_json_text(what: &str, text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| format!("{what} is not valid JSON: {e}"))
}

/// Disposes of a value a call no longer needs. plait runs every call in a
/// fresh instance and throws its memory away afterwards, so inside a
/// WebAssembly guest the value is forgotten rather than freed piece by piece
/// (a large JSON tree takes microseconds to walk); natively it is dropped.
pub fn discard<T>(value: T) {
    #[cfg(target_arch = "wasm32")]
    std::mem::forget(value);
    #[cfg(not(target_arch = "wasm32"))]
    drop(value);
}

/// Writes a line to the host's log, attributed to the running step.
/// Outside a WebAssembly guest (native tests) it does nothing.
pub fn log(level: LogLevel, message: &str) {
    #[cfg(target_arch = "wasm32")]
    guest::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    let _ = (level, message);
}

/// Exports a [`Function`] as the component's `run-function`, and installs
/// the allocator made for instances that live for one call
/// (`allocator::CallAllocator`) as the global allocator and as C's `malloc`
/// and friends, for wasi-libc.
/// Outside a WebAssembly build it expands to nothing, so a function crate
/// can also be compiled and tested natively.
#[macro_export]
macro_rules! export_function {
    ($function:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            $crate::__install_call_allocator!();

            struct PlaitExport;
            impl $crate::guest::bindings::Guest for PlaitExport {
                fn run_function(
                    request: $crate::guest::bindings::Request,
                ) -> ::core::result::Result<
                    $crate::guest::bindings::Response,
                    $crate::guest::bindings::Error,
                > {
                    $crate::guest::run::<$function>(request)
                }
            }
    $crate::guest::bindings::export!(PlaitExport with_types_in $crate::guest::bindings);
        };
    };
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Answers with its input as the step's output.
    struct EchoInput;

    impl Function for EchoInput {
        fn run(request: Request) -> Result<Response, FunctionError> {
            Ok(Response {
                output: request.input,
                ..Response::default()
            })
        }
    }

    #[test]
    fn input_text_is_parsed_into_the_request_by_default() {
        // The step's output, or how the error message starts.
        type Expected = Result<Option<Value>, &'static str>;
        let cases: [(Option<&str>, Expected); 4] = [
            (None, Ok(None)),
            (
                Some(r#"{"a": [1, 2.5]}"#),
                Ok(Some(serde_json::json!({"a": [1, 2.5]}))),
            ),
            (Some("null"), Ok(Some(Value::Null))),
            (Some(r#"{"a": "#), Err("input is not valid JSON: ")),
        ];
        for (text, expected) in cases {
            let got = EchoInput::run_with_input_text(Request::default(), text);
            match (got, expected) {
                (Ok(response), Ok(output)) => assert_eq!(response.output, output, "{text:?}"),
                (Err(FunctionError::InvalidInput(message)), Err(start)) => {
                    assert!(message.starts_with(start), "{text:?}: {message}");
                }
                (got, expected) => panic!("{text:?}: got {got:?}, expected {expected:?}"),
            }
        }
    }
}
