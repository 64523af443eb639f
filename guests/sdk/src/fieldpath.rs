//! Reading and writing JSON values by a simple field path.
//!
//! A path is a dotted list of object keys with `[N]` array indexes and
//! `[key]` for keys that contain dots: `spec.containers[0].image`,
//! `metadata.labels[app.kubernetes.io/name]`. This is the common subset of
//! Crossplane's field paths; it has no wildcards.
//!
//! ```
//! use plait_sdk::fieldpath::{get, set};
//! use serde_json::json;
//!
//! let mut object = json!({"spec": {"containers": [{"name": "app"}]}});
//! set(&mut object, "spec.containers[0].image", json!("nginx:1.27")).unwrap();
//! set(&mut object, "metadata.labels[app.kubernetes.io/name]", json!("web")).unwrap();
//! assert_eq!(get(&object, "spec.containers[0].image"), Some(&json!("nginx:1.27")));
//! assert_eq!(object["metadata"]["labels"]["app.kubernetes.io/name"], "web");
//! assert_eq!(get(&object, "spec.replicas"), None);
//! ```

use serde_json::{Map, Value};

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Field(String),
    Index(usize),
}

/// Why a path could not be parsed or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("invalid field path {path:?}: {reason}")]
    Invalid { path: String, reason: &'static str },
    #[error("cannot set {path:?}: {at:?} is {found}, not {wanted}")]
    WrongType {
        path: String,
        at: String,
        found: &'static str,
        wanted: &'static str,
    },
}

/// Splits a path into its segments.
pub fn parse(path: &str) -> Result<Vec<Segment>, PathError> {
    let invalid = |reason| PathError::Invalid {
        path: path.to_string(),
        reason,
    };
    let mut segments = Vec::new();
    let mut rest = path;
    if rest.is_empty() {
        return Err(invalid("it is empty"));
    }
    loop {
        if let Some(after) = rest.strip_prefix('[') {
            let close = after.find(']').ok_or(invalid("a '[' is not closed"))?;
            let inner = &after[..close];
            if inner.is_empty() {
                return Err(invalid("'[]' names nothing"));
            }
            segments.push(match inner.parse::<usize>() {
                Ok(index) => Segment::Index(index),
                Err(_) => Segment::Field(inner.to_string()),
            });
            rest = &after[close + 1..];
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            if end == 0 {
                return Err(invalid("a field name is empty"));
            }
            segments.push(Segment::Field(rest[..end].to_string()));
            rest = &rest[end..];
        }
        if rest.is_empty() {
            return Ok(segments);
        }
        if let Some(after) = rest.strip_prefix('.') {
            if after.is_empty() {
                return Err(invalid("it ends with '.'"));
            }
            rest = after;
        } else if !rest.starts_with('[') {
            return Err(invalid("a ']' must be followed by '.' or '['"));
        }
    }
}

/// The value at `path`, or `None` when the path is invalid or leads nowhere.
pub fn get<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    parse(path)
        .ok()?
        .iter()
        .try_fold(value, |current, segment| match segment {
            Segment::Field(key) => current.as_object()?.get(key),
            Segment::Index(index) => current.as_array()?.get(*index),
        })
}

/// Sets the value at `path`, creating missing objects and arrays on the way
/// (arrays are padded with `null`). Fails when the path is invalid or
/// crosses a value of the wrong type.
pub fn set(value: &mut Value, path: &str, new: Value) -> Result<(), PathError> {
    let segments = parse(path)?;
    let mut current = value;
    for (i, segment) in segments.iter().enumerate() {
        let wrong_type = |current: &Value, wanted| PathError::WrongType {
            path: path.to_string(),
            at: render(&segments[..i]),
            found: type_name(current),
            wanted,
        };
        current = match segment {
            Segment::Field(key) => {
                if current.is_null() {
                    *current = Value::Object(Map::new());
                }
                let Value::Object(map) = current else {
                    return Err(wrong_type(current, "an object"));
                };
                map.entry(key.clone()).or_insert(Value::Null)
            }
            Segment::Index(index) => {
                if current.is_null() {
                    *current = Value::Array(Vec::new());
                }
                let Value::Array(items) = current else {
                    return Err(wrong_type(current, "an array"));
                };
                if items.len() <= *index {
                    items.resize(index + 1, Value::Null);
                }
                &mut items[*index]
            }
        };
    }
    *current = new;
    Ok(())
}

/// Removes the value at `path`, returning it; `None` when nothing was there.
pub fn remove(value: &mut Value, path: &str) -> Option<Value> {
    let mut segments = parse(path).ok()?;
    let last = segments.pop()?;
    let mut current = value;
    for segment in &segments {
        current = match segment {
            Segment::Field(key) => current.as_object_mut()?.get_mut(key)?,
            Segment::Index(index) => current.as_array_mut()?.get_mut(*index)?,
        };
    }
    match last {
        Segment::Field(key) => current.as_object_mut()?.remove(&key),
        Segment::Index(index) => {
            let items = current.as_array_mut()?;
            (index < items.len()).then(|| items.remove(index))
        }
    }
}

fn render(segments: &[Segment]) -> String {
    let mut out = String::new();
    for segment in segments {
        match segment {
            Segment::Field(key) if key.contains('.') => out.push_str(&format!("[{key}]")),
            Segment::Field(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Index(index) => out.push_str(&format!("[{index}]")),
        }
    }
    out
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn paths_parse_into_fields_indexes_and_bracketed_keys() {
        let f = |s: &str| Segment::Field(s.into());
        let cases: [(&str, Result<Vec<Segment>, &str>); 8] = [
            ("spec", Ok(vec![f("spec")])),
            (
                "spec.containers[0].image",
                Ok(vec![
                    f("spec"),
                    f("containers"),
                    Segment::Index(0),
                    f("image"),
                ]),
            ),
            (
                "metadata.labels[app.kubernetes.io/name]",
                Ok(vec![
                    f("metadata"),
                    f("labels"),
                    f("app.kubernetes.io/name"),
                ]),
            ),
            (
                "a[1][2]",
                Ok(vec![f("a"), Segment::Index(1), Segment::Index(2)]),
            ),
            ("", Err("empty")),
            ("a..b", Err("field name is empty")),
            ("a[0", Err("not closed")),
            ("a[0]b", Err("followed by")),
        ];
        for (path, want) in cases {
            match (parse(path), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{path}"),
                (Err(got), Err(want)) => assert!(got.to_string().contains(want), "{path}: {got}"),
                (got, want) => panic!("{path}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn set_creates_what_is_missing_and_refuses_to_cross_wrong_types() {
        let cases = [
            (json!({}), "a.b", Ok(json!({"a": {"b": 1}}))),
            (json!(null), "a[2]", Ok(json!({"a": [null, null, 1]}))),
            (json!({"a": [0]}), "a[0]", Ok(json!({"a": [1]}))),
            (
                json!({"a": "text"}),
                "a.b",
                Err("\"a\" is a string, not an object"),
            ),
            (json!({"a": {}}), "a[0]", Err("is an object, not an array")),
        ];
        for (mut value, path, want) in cases {
            match (set(&mut value, path, json!(1)), want) {
                (Ok(()), Ok(want)) => assert_eq!(value, want, "{path}"),
                (Err(got), Err(want)) => assert!(got.to_string().contains(want), "{path}: {got}"),
                (got, want) => panic!("{path}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn remove_returns_what_was_there() {
        let mut value = json!({"a": {"b": 1, "c": [1, 2]}});
        assert_eq!(remove(&mut value, "a.b"), Some(json!(1)));
        assert_eq!(remove(&mut value, "a.c[0]"), Some(json!(1)));
        assert_eq!(remove(&mut value, "a.c[5]"), None);
        assert_eq!(remove(&mut value, "x.y"), None);
        assert_eq!(value, json!({"a": {"c": [2]}}));
    }
}
