//! JSON values as the Go values `encoding/json` decodes them to: strings,
//! bools, `int64` (integral numbers), `float64`, `map[string]interface {}`,
//! `[]interface {}` and `nil`.

use serde_json::{Number, Value};

pub(crate) const MAP_TYPE: &str = "map[string]interface {}";
pub(crate) const SLICE_TYPE: &str = "[]interface {}";

/// A JSON number as the Go value it decodes to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GoNumber {
    Int(i64),
    Float(f64),
}

impl GoNumber {
    /// Integers beyond int64 decode to float64 in Go.
    pub fn of(n: &Number) -> GoNumber {
        match n.as_i64() {
            Some(i) => GoNumber::Int(i),
            None => GoNumber::Float(n.as_f64().unwrap_or(f64::NAN)),
        }
    }
}

/// Go's `%T` of a JSON value.
pub fn go_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::String(_) => "string",
        Value::Number(n) => match GoNumber::of(n) {
            GoNumber::Int(_) => "int64",
            GoNumber::Float(_) => "float64",
        },
        Value::Array(_) => SLICE_TYPE,
        Value::Object(_) => MAP_TYPE,
    }
}
