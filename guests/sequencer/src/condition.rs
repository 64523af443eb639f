//! A rule's `condition`: a CEL expression over the request's `observed`
//! and `desired` state and its `context`, shaped as upstream's protobuf
//! messages are (`observed.composite.resource.spec…`,
//! `desired.resources["db"].ready`; every JSON number a double).

use std::collections::HashMap;
use std::sync::Arc;

use cel::{Context, Program, Value as CelValue};
use plait_sdk::{Ready, Request, Resource, State};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConditionError {
    #[error("cannot parse CEL condition: {0}")]
    Parse(String),
    #[error("cannot evaluate CEL condition: {0}")]
    Evaluate(String),
    #[error("CEL condition result is not bool")]
    NotBool,
}

/// The variables a condition may read.
const VARIABLES: [&str; 3] = ["observed", "desired", "context"];

/// Whether the rule's condition holds for this request.
pub fn holds(request: &Request, condition: &str) -> Result<bool, ConditionError> {
    let program = Program::compile(condition).map_err(|e| ConditionError::Parse(e.to_string()))?;
    let mut context = Context::default();
    for name in VARIABLES {
        let value = match name {
            "observed" => state(&request.observed),
            "desired" => state(&request.desired),
            _ => structure(&request.context),
        };
        context.add_variable_from_value(name, value);
    }
    match program.execute(&context) {
        Ok(CelValue::Bool(holds)) => Ok(holds),
        Ok(_) => Err(ConditionError::NotBool),
        Err(e) => Err(ConditionError::Evaluate(e.to_string())),
    }
}

/// An `apiextensions.fn.proto.v1.State`.
fn state(state: &State) -> CelValue {
    let empty = Resource::default();
    let resources: HashMap<String, CelValue> = state
        .resources
        .iter()
        .map(|(name, r)| (name.clone(), resource(r)))
        .collect();
    map([
        (
            "composite",
            resource(state.composite.as_ref().unwrap_or(&empty)),
        ),
        ("resources", resources.into()),
    ])
}

/// An `apiextensions.fn.proto.v1.Resource`: `ready` is the enum's number.
fn resource(resource: &Resource) -> CelValue {
    let connection_details: HashMap<String, CelValue> = resource
        .connection_details
        .iter()
        .map(|(key, bytes)| (key.clone(), CelValue::Bytes(Arc::new(bytes.clone()))))
        .collect();
    let ready = match resource.ready {
        Ready::Unspecified => 0,
        Ready::True => 1,
        Ready::False => 2,
    };
    map([
        ("resource", structure(&resource.resource)),
        ("connection_details", connection_details.into()),
        ("ready", CelValue::Int(ready)),
    ])
}

fn map<const N: usize>(fields: [(&str, CelValue); N]) -> CelValue {
    fields
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect::<HashMap<_, _>>()
        .into()
}

/// A `google.protobuf.Struct`: an unset one reads as empty.
fn structure(value: &Value) -> CelValue {
    match value {
        Value::Null => HashMap::<String, CelValue>::new().into(),
        value => json(value),
    }
}

/// A `google.protobuf.Struct` value: a missing object reads as an empty
/// one, and numbers are doubles.
fn json(value: &Value) -> CelValue {
    match value {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => CelValue::Float(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => CelValue::String(Arc::new(s.clone())),
        Value::Array(items) => CelValue::List(Arc::new(items.iter().map(json).collect())),
        Value::Object(members) => members
            .iter()
            .map(|(k, v)| (k.clone(), json(v)))
            .collect::<HashMap<_, _>>()
            .into(),
    }
}
