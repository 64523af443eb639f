//! Go's `encoding/json` output: `Marshal` of a JSON value and the encoder's
//! UTF-8 sanitising.

use serde_json::Value;

use crate::float::{format_float, format_float_f};
use crate::value::GoNumber;

/// Go's `encoding/json.Marshal` of a JSON value: sorted keys, HTML-safe
/// string escaping and Go's float layout (`1e+21`, `1e-7`, `3`).
pub fn go_json(value: &Value) -> String {
    let mut out = String::new();
    write_go_json(&mut out, value);
    out
}

fn write_go_json(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match GoNumber::of(n) {
            GoNumber::Int(i) => out.push_str(&i.to_string()),
            GoNumber::Float(f) => out.push_str(&go_json_float(f)),
        },
        Value::String(s) => write_go_json_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                write_go_json(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (n, (k, v)) in map.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                write_go_json_string(out, k);
                out.push(':');
                write_go_json(out, v);
            }
            out.push('}');
        }
    }
}

/// encoding/json's float layout: `'f'` unless |f| < 1e-6 or >= 1e21, and
/// two-digit negative exponents shortened (`e-07` to `e-7`).
fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let mut s = format_float(f, 'e', None);
        let n = s.len();
        if n >= 4 && &s[n - 4..n - 1] == "e-0" {
            s.remove(n - 2);
        }
        return s;
    }
    format_float_f(f)
}

fn write_go_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Turns bytes into a string the way Go's JSON encoder sanitises them: each
/// byte of an invalid UTF-8 sequence becomes U+FFFD.
pub fn go_lossy(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                let bad = e.error_len().unwrap_or(after.len());
                out.extend(std::iter::repeat_n('\u{FFFD}', bad));
                rest = &after[bad..];
            }
        }
    }
}

/// The text of Go's `json.UnmarshalTypeError` for a decoded value that is
/// not of the Go type asked for.
pub fn unmarshal_type_error(value: &Value, go_type: &str) -> String {
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    format!("json: cannot unmarshal {kind} into Go value of type {go_type}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    use serde_json::json;
    #[test]
    fn go_json_matches_encoding_json() {
        let cases = [
            (
                "sorted keys",
                json!({"b": 1, "a": [true, null]}),
                r#"{"a":[true,null],"b":1}"#,
            ),
            ("html escaped", json!("<a&b>"), r#""\u003ca\u0026b\u003e""#),
            (
                "control chars",
                json!("\n\t\u{1}\u{8}"),
                r#""\n\t\u0001\b""#,
            ),
            ("line separator", json!("\u{2028}"), r#""\u2028""#),
            ("integral float", json!(3.0), "3"),
            ("large float", json!(1e21), "1e+21"),
            ("small float", json!(1e-7), "1e-7"),
            ("three digit exponent", json!(1e-100), "1e-100"),
            ("just below 1e21", json!(1e20), "100000000000000000000"),
            ("fraction", json!(0.5), "0.5"),
            ("unicode kept", json!("é☃"), r#""é☃""#),
        ];
        for (rule, value, want) in cases {
            assert_eq!(go_json(&value), want, "{rule}");
        }
    }

    #[test]
    fn unmarshal_type_error_names_the_json_kind() {
        assert_eq!(
            unmarshal_type_error(&json!([1]), "map[string]interface {}"),
            "json: cannot unmarshal array into Go value of type map[string]interface {}"
        );
        assert_eq!(
            unmarshal_type_error(&json!(true), "[]interface {}"),
            "json: cannot unmarshal bool into Go value of type []interface {}"
        );
    }

    #[test]
    fn go_lossy_replaces_each_invalid_byte() {
        let cases: [(&[u8], &str); 4] = [
            (b"abc", "abc"),
            (b"a\xe2\x86", "a\u{FFFD}\u{FFFD}"),
            (b"\xff", "\u{FFFD}"),
            (b"x\xe2\x86y", "x\u{FFFD}\u{FFFD}y"),
        ];
        for (input, want) in cases {
            assert_eq!(go_lossy(input), want, "{input:?}");
        }
    }
}
