//! JSON values as the API server hands them to CEL, by their schema: an
//! `integer` is an `int`, a `number` a `double` (even when written `5`), a
//! `date-time` string a `timestamp`, a `duration` string a `duration`, a
//! `byte` string `bytes`; where the schema says nothing, an integer is an
//! `int` and a fraction a `double`.

use std::collections::HashMap;
use std::sync::Arc;

use cel::Value as CelValue;
use cel::objects::{Key, Map};
use serde_json::Value;

fn schema_type(schema: Option<&Value>) -> Option<&str> {
    schema?.get("type")?.as_str()
}

fn format(schema: Option<&Value>) -> Option<&str> {
    schema?.get("format")?.as_str()
}

/// The schema of `key`'s value in an object of schema `schema`.
fn property<'s>(schema: Option<&'s Value>, key: &str) -> Option<&'s Value> {
    let schema = schema?;
    schema
        .get("properties")
        .and_then(|p| p.get(key))
        .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()))
}

pub fn to_cel(value: &Value, schema: Option<&Value>) -> CelValue {
    match value {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => {
            let as_double = schema_type(schema) == Some("number");
            match (n.as_i64(), n.as_f64()) {
                #[allow(clippy::cast_precision_loss)]
                (Some(i), _) if as_double => CelValue::Float(i as f64),
                (Some(i), _) => CelValue::Int(i),
                (None, Some(f)) => CelValue::Float(f),
                (None, None) => CelValue::Null,
            }
        }
        Value::String(s) => string(s, schema),
        Value::Array(items) => {
            let item_schema = schema.and_then(|s| s.get("items"));
            CelValue::List(Arc::new(
                items.iter().map(|i| to_cel(i, item_schema)).collect(),
            ))
        }
        Value::Object(fields) => {
            let map: HashMap<Key, CelValue> = fields
                .iter()
                .map(|(k, v)| {
                    (
                        Key::String(Arc::new(k.clone())),
                        to_cel(v, property(schema, k)),
                    )
                })
                .collect();
            CelValue::Map(Map { map: Arc::new(map) })
        }
    }
}

fn string(s: &str, schema: Option<&Value>) -> CelValue {
    if schema_type(schema) == Some("string") {
        match format(schema) {
            Some("date-time") => {
                if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
                    return CelValue::Timestamp(t);
                }
            }
            Some("duration") => {
                if let Some(d) = parse_duration(s) {
                    return CelValue::Duration(d);
                }
            }
            Some("byte") => {
                use base64::Engine;
                if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(s) {
                    return CelValue::Bytes(Arc::new(bytes));
                }
            }
            _ => {}
        }
    }
    CelValue::String(Arc::new(s.to_string()))
}

/// A duration as the OpenAPI `duration` format reads it: Go's
/// `time.ParseDuration` units, and days and weeks.
pub fn parse_duration(s: &str) -> Option<chrono::Duration> {
    let (negative, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(chrono::Duration::zero());
    }
    if rest.is_empty() {
        return None;
    }
    let mut nanos: f64 = 0.0;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match rest[..unit_end].trim() {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            "d" => 86400e9,
            "w" => 7.0 * 86400e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        nanos += number * scale;
    }
    if negative {
        nanos = -nanos;
    }
    #[allow(clippy::cast_possible_truncation)]
    Some(chrono::Duration::nanoseconds(nanos.round() as i64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_take_the_cel_type_their_schema_gives_them() {
        let schema = json!({"type": "object", "properties": {
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "when": {"type": "string", "format": "date-time"},
            "every": {"type": "string", "format": "duration"},
            "data": {"type": "string", "format": "byte"},
            "name": {"type": "string"},
        }});
        let value = json!({"count": 5, "ratio": 2, "when": "2024-01-01T00:00:00Z",
            "every": "1h30m", "data": "aGk=", "name": "x", "free": 1.5});
        let CelValue::Map(map) = to_cel(&value, Some(&schema)) else {
            panic!("not a map");
        };
        let get = |k: &str| map.map.get(&Key::String(Arc::new(k.to_string()))).cloned();
        assert!(matches!(get("count"), Some(CelValue::Int(5))));
        assert!(matches!(get("ratio"), Some(CelValue::Float(f)) if f == 2.0));
        assert!(matches!(get("when"), Some(CelValue::Timestamp(_))));
        assert!(
            matches!(get("every"), Some(CelValue::Duration(d)) if d == chrono::Duration::minutes(90))
        );
        assert!(matches!(get("data"), Some(CelValue::Bytes(b)) if b.as_slice() == b"hi"));
        assert!(matches!(get("name"), Some(CelValue::String(_))));
        assert!(matches!(get("free"), Some(CelValue::Float(f)) if f == 1.5));
    }

    #[test]
    fn durations_read_go_units_and_days() {
        let cases = [
            ("1h", Some(3600)),
            ("1h30m", Some(5400)),
            ("-2m", Some(-120)),
            ("1.5s", Some(1)),
            ("2d", Some(172_800)),
            ("0", Some(0)),
            ("1x", None),
            ("", None),
        ];
        for (text, seconds) in cases {
            assert_eq!(
                parse_duration(text).map(|d| d.num_seconds()),
                seconds,
                "{text}"
            );
        }
    }
}
