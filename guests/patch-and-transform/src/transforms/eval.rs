//! Resolution of transforms on a value, with upstream's error texts.

mod convert;
mod string;

use serde_json::{Number, Value};

use plait_go_compat::value::{GoNumber, go_type_name};

use super::input::{MapTransform, MatchTransform, MatchTransformPattern, MathTransform, Transform};
use super::validate::validate_math;
use convert::resolve_convert;
use plait_go_compat::regexp::compile_regexp;
use string::resolve_string;

/// A transform failure, rendered exactly as upstream.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct TransformError {
    pub message: String,
}

impl TransformError {
    fn new(message: impl Into<String>) -> Self {
        TransformError {
            message: message.into(),
        }
    }
}

/// Runs the transforms in order, each on the previous one's output.
pub fn resolve_all(transforms: &[Transform], input: Value) -> Result<Value, TransformError> {
    let mut value = input;
    for (i, t) in transforms.iter().enumerate() {
        value = resolve(t, value).map_err(|e| {
            TransformError::new(format!("transform at index {i} returned error: {e}"))
        })?;
    }
    Ok(value)
}

/// Runs one transform.
pub fn resolve(transform: &Transform, input: Value) -> Result<Value, TransformError> {
    let kind = transform.kind();
    let missing = || {
        TransformError::new(format!(
            "given transform type {kind} requires configuration"
        ))
    };
    let result = match kind {
        "math" => resolve_math(transform.math.as_ref().ok_or_else(missing)?, input),
        "map" => resolve_map(transform.map.as_ref().ok_or_else(missing)?, input),
        "match" => resolve_match(
            transform.match_transform.as_ref().ok_or_else(missing)?,
            input,
        ),
        "string" => {
            resolve_string(transform.string.as_ref().ok_or_else(missing)?, input).map(Value::String)
        }
        "convert" => resolve_convert(transform.convert.as_ref().ok_or_else(missing)?, input),
        other => {
            return Err(TransformError::new(format!(
                "transform type {other} is not supported"
            )));
        }
    };
    result.map_err(|inner| {
        TransformError::new(format!("{kind} transform could not resolve: {inner}"))
    })
}

/// A float64 result as a JSON value. Go would carry NaN and ±Inf on and fail
/// when marshalling them; they cannot exist in a JSON value, so fail here
/// with the marshalling error.
fn float_value(f: f64) -> Result<Value, String> {
    Number::from_f64(f).map(Value::Number).ok_or_else(|| {
        let shown = if f.is_nan() {
            "NaN"
        } else if f > 0.0 {
            "+Inf"
        } else {
            "-Inf"
        };
        format!("json: unsupported value: {shown}")
    })
}

fn number_of(value: &Value) -> Option<GoNumber> {
    match value {
        Value::Number(n) => Some(GoNumber::of(n)),
        _ => None,
    }
}

fn resolve_math(m: &MathTransform, input: Value) -> Result<Value, String> {
    validate_math(m).map_err(|e| e.to_string())?;
    let Some(n) = number_of(&input) else {
        return Err(format!(
            "input is required to be a number for math transformer, got {}",
            go_type_name(&input)
        ));
    };
    // Validation guarantees the operand of the selected type is set.
    let operand = |v: Option<i64>| {
        v.ok_or_else(|| format!("type {} is not supported for math transform type", m.kind()))
    };
    match m.kind() {
        "Multiply" => {
            let factor = operand(m.multiply)?;
            match n {
                GoNumber::Int(i) => Ok(Value::from(i.wrapping_mul(factor))),
                GoNumber::Float(f) => float_value(f * factor as f64),
            }
        }
        kind => {
            // Upstream compares the input truncated to int64, and returns
            // the untouched input when the clamp does not apply.
            let truncated = match n {
                GoNumber::Int(i) => i,
                GoNumber::Float(f) => f as i64,
            };
            let (bound, clamps) = if kind == "ClampMin" {
                let min = operand(m.clamp_min)?;
                (min, truncated < min)
            } else {
                let max = operand(m.clamp_max)?;
                (max, truncated > max)
            };
            Ok(if clamps { Value::from(bound) } else { input })
        }
    }
}

fn resolve_map(m: &MapTransform, input: Value) -> Result<Value, String> {
    let Value::String(key) = &input else {
        return Err(format!(
            "type {} is not supported for map transform",
            go_type_name(&input)
        ));
    };
    match m.pairs.get(key) {
        None => Err(format!("key {key} is not found in map")),
        // A null value is upstream's empty raw JSON, which fails to decode.
        Some(Value::Null) => Err(format!(
            "value for key {key} is not valid JSON: unexpected end of JSON input"
        )),
        Some(v) => Ok(v.clone()),
    }
}

fn resolve_match(m: &MatchTransform, input: Value) -> Result<Value, String> {
    for (i, p) in m.patterns.iter().enumerate() {
        let matched = pattern_matches(p, &input)
            .map_err(|e| format!("cannot match pattern at index {i}: {e}"))?;
        if matched {
            return Ok(p.result.clone());
        }
    }
    if m.fallback_to == "Input" {
        if !m.fallback_value.is_null() {
            return Err(
                "cannot set both a fallback value and the fallback to input flag".to_string(),
            );
        }
        return Ok(input);
    }
    Ok(m.fallback_value.clone())
}

fn pattern_matches(p: &MatchTransformPattern, input: &Value) -> Result<bool, String> {
    match p.pattern_type.as_str() {
        "literal" => {
            let literal = p
                .literal
                .as_ref()
                .ok_or("literal is required by type literal")?;
            let Value::String(s) = input else {
                return Err(format!("unsupported input type '{}'", go_type_name(input)));
            };
            Ok(s == literal)
        }
        "regexp" => {
            let re = p
                .regexp
                .as_ref()
                .ok_or("regexp is required by type regexp")?;
            let re = compile_regexp(re).map_err(|e| format!("cannot compile regexp: {e}"))?;
            match input {
                Value::Null => Err("unsupported input type 'null'".to_string()),
                Value::String(s) => Ok(re.is_match(s)),
                other => Err(format!("unsupported input type '{}'", go_type_name(other))),
            }
        }
        other => Err(format!("unsupported pattern type '{other}'")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::transforms::testing::check;

    #[test]
    fn map_transform() {
        let t = json!({"type": "map", "map": {"us-east": "use1", "a.b": 2, "n": null, "obj": {"k": [1]}}});
        check(vec![
            ("maps a key", t.clone(), json!("us-east"), Ok(json!("use1"))),
            (
                "keys may contain dots",
                t.clone(),
                json!("a.b"),
                Ok(json!(2)),
            ),
            (
                "values may be objects",
                t.clone(),
                json!("obj"),
                Ok(json!({"k": [1]})),
            ),
            (
                "lookup is case-sensitive",
                t.clone(),
                json!("US-EAST"),
                Err("map transform could not resolve: key US-EAST is not found in map"),
            ),
            (
                "null value is invalid JSON",
                t.clone(),
                json!("n"),
                Err(
                    "map transform could not resolve: value for key n is not valid JSON: unexpected end of JSON input",
                ),
            ),
            (
                "int input",
                t.clone(),
                json!(3),
                Err(
                    "map transform could not resolve: type int64 is not supported for map transform",
                ),
            ),
            (
                "float input",
                t.clone(),
                json!(3.5),
                Err(
                    "map transform could not resolve: type float64 is not supported for map transform",
                ),
            ),
            (
                "bool input",
                t.clone(),
                json!(true),
                Err(
                    "map transform could not resolve: type bool is not supported for map transform",
                ),
            ),
            (
                "null input",
                t.clone(),
                Value::Null,
                Err(
                    "map transform could not resolve: type <nil> is not supported for map transform",
                ),
            ),
            (
                "missing config",
                json!({"type": "map"}),
                json!("x"),
                Err("given transform type map requires configuration"),
            ),
        ]);
    }

    #[test]
    fn match_transform() {
        let lit = json!({"type": "match", "match": {"patterns": [
            {"type": "literal", "literal": "a", "result": 1},
            {"type": "regexp", "regexp": "^b.*", "result": {"x": true}},
            {"type": "literal", "literal": "c"},
        ], "fallbackValue": "fb"}});
        check(vec![
            (
                "literal match returns result",
                lit.clone(),
                json!("a"),
                Ok(json!(1)),
            ),
            (
                "regexp match",
                lit.clone(),
                json!("banana"),
                Ok(json!({"x": true})),
            ),
            (
                "absent result is null",
                lit.clone(),
                json!("c"),
                Ok(Value::Null),
            ),
            (
                "literal is case-sensitive, falls back",
                lit.clone(),
                json!("A"),
                Ok(json!("fb")),
            ),
            (
                "non-string input errors at first pattern",
                lit.clone(),
                json!(5.0),
                Err(
                    "match transform could not resolve: cannot match pattern at index 0: unsupported input type 'float64'",
                ),
            ),
            (
                "null input at a literal pattern",
                lit.clone(),
                Value::Null,
                Err(
                    "match transform could not resolve: cannot match pattern at index 0: unsupported input type '<nil>'",
                ),
            ),
            (
                "null input at a regexp pattern",
                json!({"type": "match", "match": {"patterns": [{"type": "regexp", "regexp": ".*", "result": 1}]}}),
                Value::Null,
                Err(
                    "match transform could not resolve: cannot match pattern at index 0: unsupported input type 'null'",
                ),
            ),
            (
                "regexp is unanchored",
                json!({"type": "match", "match": {"patterns": [{"type": "regexp", "regexp": "an", "result": 1}]}}),
                json!("banana"),
                Ok(json!(1)),
            ),
            (
                "first matching pattern wins",
                json!({"type": "match", "match": {"patterns": [
                    {"type": "regexp", "regexp": ".*", "result": "first"},
                    {"type": "literal", "literal": "x", "result": "second"},
                ]}}),
                json!("x"),
                Ok(json!("first")),
            ),
            (
                "no match, no fallback is null",
                json!({"type": "match", "match": {"patterns": [{"type": "literal", "literal": "x", "result": 1}]}}),
                json!("y"),
                Ok(Value::Null),
            ),
            (
                "fallbackTo Input returns input",
                json!({"type": "match", "match": {"patterns": [{"type": "literal", "literal": "x", "result": 1}], "fallbackTo": "Input"}}),
                json!("y"),
                Ok(json!("y")),
            ),
            (
                "fallbackTo Input with fallbackValue",
                json!({"type": "match", "match": {"patterns": [{"type": "literal", "literal": "x", "result": 1}], "fallbackTo": "Input", "fallbackValue": ""}}),
                json!("y"),
                Err(
                    "match transform could not resolve: cannot set both a fallback value and the fallback to input flag",
                ),
            ),
            (
                "fallbackTo Input with null fallbackValue",
                json!({"type": "match", "match": {"patterns": [{"type": "literal", "literal": "x", "result": 1}], "fallbackTo": "Input", "fallbackValue": null}}),
                json!("y"),
                Ok(json!("y")),
            ),
            (
                "unknown fallbackTo behaves like Value",
                json!({"type": "match", "match": {"patterns": [{"type": "literal", "literal": "x", "result": 1}], "fallbackTo": "Other", "fallbackValue": 7}}),
                json!("y"),
                Ok(json!(7)),
            ),
            (
                "empty pattern type errors at runtime",
                json!({"type": "match", "match": {"patterns": [{"literal": "x", "result": 1}]}}),
                json!("x"),
                Err(
                    "match transform could not resolve: cannot match pattern at index 0: unsupported pattern type ''",
                ),
            ),
            (
                "literal pattern without literal",
                json!({"type": "match", "match": {"patterns": [{"type": "literal", "result": 1}]}}),
                json!("x"),
                Err(
                    "match transform could not resolve: cannot match pattern at index 0: literal is required by type literal",
                ),
            ),
            (
                "regexp pattern without regexp",
                json!({"type": "match", "match": {"patterns": [{"type": "regexp", "result": 1}]}}),
                json!("x"),
                Err(
                    "match transform could not resolve: cannot match pattern at index 0: regexp is required by type regexp",
                ),
            ),
            (
                "regexp compile failure",
                json!({"type": "match", "match": {"patterns": [{"type": "regexp", "regexp": "(", "result": 1}]}}),
                json!("x"),
                Err(
                    "match transform could not resolve: cannot match pattern at index 0: cannot compile regexp: error parsing regexp: missing closing ): `(`",
                ),
            ),
            (
                "no patterns falls back",
                json!({"type": "match", "match": {"fallbackValue": [1]}}),
                json!("x"),
                Ok(json!([1])),
            ),
        ]);
    }

    #[test]
    fn math_transform() {
        let mul = |m: i64| json!({"type": "math", "math": {"type": "Multiply", "multiply": m}});
        check(vec![
            ("multiply int stays int", mul(2), json!(3), Ok(json!(6))),
            (
                "multiply float stays float",
                mul(3),
                json!(0.1),
                Ok(json!(0.30000000000000004)),
            ),
            (
                "multiply integral float stays float",
                mul(2),
                json!(1.5),
                Ok(json!(3.0)),
            ),
            (
                "multiply int wraps like Go",
                mul(2),
                json!(i64::MAX),
                Ok(json!(-2)),
            ),
            (
                "multiply without a math type is refused, as upstream",
                json!({"type": "math", "math": {"multiply": 2}}),
                json!(4),
                Err(
                    "math transform could not resolve: type: Required value: math transform type is required",
                ),
            ),
            (
                "legacy math without transform type",
                json!({"math": {"type": "Multiply", "multiply": 2}}),
                json!(4),
                Ok(json!(8)),
            ),
            (
                "multiply string input",
                mul(2),
                json!("3"),
                Err(
                    "math transform could not resolve: input is required to be a number for math transformer, got string",
                ),
            ),
            (
                "multiply bool input",
                mul(2),
                json!(true),
                Err(
                    "math transform could not resolve: input is required to be a number for math transformer, got bool",
                ),
            ),
            (
                "multiply null input",
                mul(2),
                Value::Null,
                Err(
                    "math transform could not resolve: input is required to be a number for math transformer, got <nil>",
                ),
            ),
            (
                "clampMin raises",
                json!({"type": "math", "math": {"type": "ClampMin", "clampMin": 5}}),
                json!(4.9),
                Ok(json!(5)),
            ),
            (
                "clampMin keeps larger",
                json!({"type": "math", "math": {"type": "ClampMin", "clampMin": 5}}),
                json!(7),
                Ok(json!(7)),
            ),
            (
                "clampMin compares truncated input",
                json!({"type": "math", "math": {"type": "ClampMin", "clampMin": -1}}),
                json!(-1.5),
                Ok(json!(-1.5)),
            ),
            (
                "clampMax compares truncated input",
                json!({"type": "math", "math": {"type": "ClampMax", "clampMax": 5}}),
                json!(5.5),
                Ok(json!(5.5)),
            ),
            (
                "clampMax lowers",
                json!({"type": "math", "math": {"type": "ClampMax", "clampMax": 5}}),
                json!(6),
                Ok(json!(5)),
            ),
            (
                "missing math type",
                json!({"type": "math", "math": {"clampMin": 1}}),
                json!(1),
                Err(
                    "math transform could not resolve: type: Required value: math transform type is required",
                ),
            ),
            (
                "unknown math type",
                json!({"type": "math", "math": {"type": "Divide"}}),
                json!(1),
                Err(
                    "math transform could not resolve: type: Invalid value: \"Divide\": unknown math transform type",
                ),
            ),
            (
                "multiply without value",
                json!({"type": "math", "math": {"type": "Multiply"}}),
                json!(1),
                Err(
                    "math transform could not resolve: multiply: Required value: must specify a value if a multiply math transform is specified",
                ),
            ),
            (
                "clampMin without value",
                json!({"type": "math", "math": {"type": "ClampMin"}}),
                json!(1),
                Err(
                    "math transform could not resolve: clampMin: Required value: must specify a value if a clamp min math transform is specified",
                ),
            ),
            (
                "clampMax without value",
                json!({"type": "math", "math": {"type": "ClampMax"}}),
                json!(1),
                Err(
                    "math transform could not resolve: clampMax: Required value: must specify a value if a clamp max math transform is specified",
                ),
            ),
            (
                "float overflow cannot be JSON",
                mul(10),
                json!(1e308),
                Err("math transform could not resolve: json: unsupported value: +Inf"),
            ),
        ]);
    }

    #[test]
    fn transform_type_dispatch() {
        check(vec![
            (
                "unknown type",
                json!({"type": "reverse"}),
                json!("x"),
                Err("transform type reverse is not supported"),
            ),
            (
                "no type and no config",
                json!({}),
                json!("x"),
                Err("transform type  is not supported"),
            ),
            (
                "no type and two configs",
                json!({"map": {"a": 1}, "string": {"fmt": "%s"}}),
                json!("a"),
                Err("transform type  is not supported"),
            ),
            (
                "missing math config",
                json!({"type": "math"}),
                json!(1),
                Err("given transform type math requires configuration"),
            ),
            (
                "missing match config",
                json!({"type": "match"}),
                json!(1),
                Err("given transform type match requires configuration"),
            ),
            (
                "missing string config",
                json!({"type": "string"}),
                json!(1),
                Err("given transform type string requires configuration"),
            ),
            (
                "missing convert config",
                json!({"type": "convert"}),
                json!(1),
                Err("given transform type convert requires configuration"),
            ),
            (
                "inferred map",
                json!({"map": {"a": "b"}}),
                json!("a"),
                Ok(json!("b")),
            ),
            (
                "inferred convert",
                json!({"convert": {"toType": "string"}}),
                json!(1),
                Ok(json!("1")),
            ),
        ]);
    }

    #[test]
    fn resolve_all_chains_and_wraps_errors() {
        let ts: Vec<Transform> = serde_json::from_value(json!([
            {"type": "map", "map": {"small": "1", "large": "3"}},
            {"type": "convert", "convert": {"toType": "int"}},
            {"type": "math", "math": {"type": "Multiply", "multiply": 2}},
            {"type": "string", "string": {"fmt": "%d-nodes"}},
        ]))
        .unwrap();
        assert_eq!(resolve_all(&ts, json!("large")), Ok(json!("6-nodes")));
        assert_eq!(
            resolve_all(&ts, json!("huge")).map_err(|e| e.message),
            Err("transform at index 0 returned error: map transform could not resolve: key huge is not found in map".to_string())
        );
        assert_eq!(resolve_all(&[], json!(1)), Ok(json!(1)));
    }
}
