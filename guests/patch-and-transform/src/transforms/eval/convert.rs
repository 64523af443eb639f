//! The `convert` transform: casts between JSON types with Go's `strconv`
//! and `encoding/json` parsing and error texts.

use serde_json::Value;

use plait_go_compat::float::format_float_f;
use plait_go_compat::json::unmarshal_type_error;
use plait_go_compat::strconv::quote;
use plait_go_compat::value::{GoNumber, go_type_name};

use super::float_value;
use crate::quantity::parse_quantity;
use crate::transforms::input::ConvertTransform;
use crate::transforms::validate::{IO_TYPES, validate_convert};

fn parse_error(func: &str, input: &str, what: &str) -> String {
    format!("strconv.{func}: parsing {}: {what}", quote(input))
}

/// Go's `strconv.ParseInt(s, 10, 64)`.
fn go_parse_int(s: &str) -> Result<i64, String> {
    s.parse::<i64>().map_err(|e| {
        let what = match e.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                "value out of range"
            }
            _ => "invalid syntax",
        };
        parse_error("ParseInt", s, what)
    })
}

/// Go's `strconv.ParseBool`.
fn go_parse_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(parse_error("ParseBool", s, "invalid syntax")),
    }
}

/// Go's `strconv.ParseFloat(s, 64)`, except hexadecimal floats and
/// underscores, which Go accepts and this rejects as invalid syntax.
fn go_parse_float(s: &str) -> Result<f64, String> {
    let f: f64 = s
        .parse()
        .map_err(|_| parse_error("ParseFloat", s, "invalid syntax"))?;
    let unsigned = s.trim_start_matches(['+', '-']).to_ascii_lowercase();
    if f.is_infinite() && unsigned != "inf" && unsigned != "infinity" {
        return Err(parse_error("ParseFloat", s, "value out of range"));
    }
    Ok(f)
}

/// Go's `json.Unmarshal` error texts for the common failures.
fn go_json_error(e: &serde_json::Error) -> String {
    if e.is_eof() {
        "unexpected end of JSON input".to_string()
    } else {
        e.to_string()
    }
}

pub(super) fn resolve_convert(c: &ConvertTransform, input: Value) -> Result<Value, String> {
    validate_convert(c).map_err(|e| e.to_string())?;
    let from = go_type_name(&input);
    if !IO_TYPES.contains(&from) {
        return Err(format!("invalid input type {from}"));
    }
    let to = if c.to_type == "int" {
        "int64"
    } else {
        c.to_type.as_str()
    };
    if from == to {
        return Ok(input);
    }
    let format = c.format_or_none();
    let unsupported =
        || format!("conversion from {from} to {to} is not supported with format {format}");
    match (&input, to, format) {
        (Value::String(s), "int64", "none") => go_parse_int(s).map(Value::from),
        (Value::String(s), "bool", "none") => go_parse_bool(s).map(Value::from),
        (Value::String(s), "float64", "none") => float_value(go_parse_float(s)?),
        (Value::String(s), "float64", "quantity") => float_value(parse_quantity(s)?),
        (Value::String(s), "object" | "array", "json") => {
            let parsed: Value = serde_json::from_str(s).map_err(|e| go_json_error(&e))?;
            let (want, go_type) = if to == "object" {
                (parsed.is_object(), "map[string]interface {}")
            } else {
                (parsed.is_array(), "[]interface {}")
            };
            if want || parsed.is_null() {
                Ok(parsed)
            } else {
                Err(unmarshal_type_error(&parsed, go_type))
            }
        }
        (Value::Number(n), _, "none") => match (GoNumber::of(n), to) {
            (GoNumber::Int(i), "string") => Ok(Value::String(i.to_string())),
            (GoNumber::Int(i), "bool") => Ok(Value::Bool(i == 1)),
            (GoNumber::Int(i), "float64") => float_value(i as f64),
            (GoNumber::Float(f), "string") => Ok(Value::String(format_float_f(f))),
            (GoNumber::Float(f), "int64") => Ok(Value::from(f as i64)),
            (GoNumber::Float(f), "bool") => Ok(Value::Bool(f == 1.0)),
            _ => Err(unsupported()),
        },
        (Value::Bool(b), "string", "none") => Ok(Value::String(b.to_string())),
        (Value::Bool(b), "int64", "none") => Ok(Value::from(i64::from(*b))),
        (Value::Bool(b), "float64", "none") => float_value(if *b { 1.0 } else { 0.0 }),
        _ => Err(unsupported()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::transforms::testing::check;

    #[test]
    fn convert_transform() {
        let to = |t: &str| json!({"type": "convert", "convert": {"toType": t}});
        let tof =
            |t: &str, f: &str| json!({"type": "convert", "convert": {"toType": t, "format": f}});
        check(vec![
            ("string to int", to("int"), json!("+42"), Ok(json!(42))),
            ("string to int64", to("int64"), json!("-7"), Ok(json!(-7))),
            (
                "decimal string to int",
                to("int"),
                json!("4.2"),
                Err(
                    "convert transform could not resolve: strconv.ParseInt: parsing \"4.2\": invalid syntax",
                ),
            ),
            (
                "hex string to int",
                to("int"),
                json!("0x10"),
                Err(
                    "convert transform could not resolve: strconv.ParseInt: parsing \"0x10\": invalid syntax",
                ),
            ),
            (
                "space to int",
                to("int"),
                json!(" 1"),
                Err(
                    "convert transform could not resolve: strconv.ParseInt: parsing \" 1\": invalid syntax",
                ),
            ),
            (
                "int out of range",
                to("int"),
                json!("9223372036854775808"),
                Err(
                    "convert transform could not resolve: strconv.ParseInt: parsing \"9223372036854775808\": value out of range",
                ),
            ),
            ("string to bool", to("bool"), json!("True"), Ok(json!(true))),
            ("string 0 to bool", to("bool"), json!("0"), Ok(json!(false))),
            (
                "string yes to bool",
                to("bool"),
                json!("yes"),
                Err(
                    "convert transform could not resolve: strconv.ParseBool: parsing \"yes\": invalid syntax",
                ),
            ),
            (
                "string to float",
                to("float64"),
                json!("2.5"),
                Ok(json!(2.5)),
            ),
            (
                "string to float bad",
                to("float64"),
                json!("abc"),
                Err(
                    "convert transform could not resolve: strconv.ParseFloat: parsing \"abc\": invalid syntax",
                ),
            ),
            (
                "string to float overflow",
                to("float64"),
                json!("1e400"),
                Err(
                    "convert transform could not resolve: strconv.ParseFloat: parsing \"1e400\": value out of range",
                ),
            ),
            (
                "quantity",
                tof("float64", "quantity"),
                json!("1000m"),
                Ok(json!(1.0)),
            ),
            (
                "quantity gibi",
                tof("float64", "quantity"),
                json!("1Gi"),
                Ok(json!(1073741824.0)),
            ),
            (
                "quantity invalid",
                tof("float64", "quantity"),
                json!("abc"),
                Err(
                    "convert transform could not resolve: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                ),
            ),
            (
                "string to object",
                tof("object", "json"),
                json!("{\"a\":1}"),
                Ok(json!({"a": 1})),
            ),
            (
                "string array to object",
                tof("object", "json"),
                json!("[1]"),
                Err(
                    "convert transform could not resolve: json: cannot unmarshal array into Go value of type map[string]interface {}",
                ),
            ),
            (
                "string null to object",
                tof("object", "json"),
                json!("null"),
                Ok(Value::Null),
            ),
            (
                "string to array",
                tof("array", "json"),
                json!("[1,\"a\"]"),
                Ok(json!([1, "a"])),
            ),
            (
                "string null to array",
                tof("array", "json"),
                json!("null"),
                Ok(Value::Null),
            ),
            (
                "malformed json",
                tof("array", "json"),
                json!("[1,"),
                Err("convert transform could not resolve: unexpected end of JSON input"),
            ),
            (
                "object to array mismatch",
                tof("array", "json"),
                json!("{}"),
                Err(
                    "convert transform could not resolve: json: cannot unmarshal object into Go value of type []interface {}",
                ),
            ),
            ("int to string", to("string"), json!(42), Ok(json!("42"))),
            ("int 1 to bool", to("bool"), json!(1), Ok(json!(true))),
            ("int 2 to bool", to("bool"), json!(2), Ok(json!(false))),
            ("int to float", to("float64"), json!(3), Ok(json!(3.0))),
            (
                "bool to string",
                to("string"),
                json!(false),
                Ok(json!("false")),
            ),
            ("bool to int", to("int"), json!(true), Ok(json!(1))),
            ("bool to float", to("float64"), json!(true), Ok(json!(1.0))),
            (
                "float to string never uses exponent",
                to("string"),
                json!(1e21),
                Ok(json!("1000000000000000000000")),
            ),
            (
                "float to string",
                to("string"),
                json!(2.5),
                Ok(json!("2.5")),
            ),
            (
                "float to int truncates",
                to("int"),
                json!(2.7),
                Ok(json!(2)),
            ),
            (
                "negative float to int truncates toward zero",
                to("int64"),
                json!(-2.7),
                Ok(json!(-2)),
            ),
            ("float 1 to bool", to("bool"), json!(1.0), Ok(json!(true))),
            (
                "same type returns input, ignoring format",
                tof("string", "quantity"),
                json!("x"),
                Ok(json!("x")),
            ),
            ("int to int is identity", to("int"), json!(5), Ok(json!(5))),
            (
                "map input",
                to("string"),
                json!({"a": 1}),
                Err(
                    "convert transform could not resolve: invalid input type map[string]interface {}",
                ),
            ),
            (
                "array input",
                to("string"),
                json!([1]),
                Err("convert transform could not resolve: invalid input type []interface {}"),
            ),
            (
                "null input",
                to("string"),
                Value::Null,
                Err("convert transform could not resolve: invalid input type <nil>"),
            ),
            (
                "unsupported pair",
                to("object"),
                json!(1),
                Err(
                    "convert transform could not resolve: conversion from int64 to object is not supported with format none",
                ),
            ),
            (
                "wrong format",
                tof("int", "json"),
                json!("1"),
                Err(
                    "convert transform could not resolve: conversion from string to int64 is not supported with format json",
                ),
            ),
            (
                "invalid format",
                tof("string", "yaml"),
                json!(1),
                Err(
                    "convert transform could not resolve: format: Invalid value: \"yaml\": invalid format",
                ),
            ),
            (
                "invalid type",
                to("integer"),
                json!(1),
                Err(
                    "convert transform could not resolve: toType: Invalid value: \"integer\": invalid type",
                ),
            ),
        ]);
    }
}
