//! Reading values by Crossplane field path (crossplane-runtime `fieldpath`),
//! with upstream's parse rules and error texts.

use std::fmt;

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Field(String),
    Index(usize),
}

/// Segments rendered as upstream does in error messages.
struct Rendered<'a>(&'a [Segment]);

impl fmt::Display for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Field(name) if name == "*" || name.contains('.') => write!(f, "[{name}]")?,
                Segment::Field(name) if i == 0 => write!(f, "{name}")?,
                Segment::Field(name) => write!(f, ".{name}")?,
                Segment::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("cannot parse path \"{path}\": {message} at position {position}")]
    Parse {
        path: String,
        message: String,
        position: usize,
    },
    #[error("{0}: no such field")]
    NoSuchField(String),
    #[error("{0}: no such element")]
    NoSuchElement(String),
    #[error("{0}: expected map, got nil")]
    ExpectedMap(String),
    #[error("{0}: not an object")]
    NotAnObject(String),
    #[error("{0}: not an array")]
    NotAnArray(String),
    #[error("{0}: not a string")]
    NotAString(String),
}

impl PathError {
    /// Whether the path merely does not exist (rather than being malformed
    /// or running into a value of the wrong shape).
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            PathError::NoSuchField(_) | PathError::NoSuchElement(_) | PathError::ExpectedMap(_)
        )
    }
}

fn field(name: &str) -> Segment {
    Segment::Field(name.trim_matches(['\'', '"']).to_string())
}

fn field_or_index(text: &str) -> Segment {
    match text.parse::<u32>() {
        // Only plain decimal digits count as an index; `parse` also takes a leading `+`.
        Ok(index) if !text.starts_with('+') => Segment::Index(index as usize),
        _ => field(text),
    }
}

fn parse(path: &str) -> Result<Vec<Segment>, PathError> {
    let error = |message: String, position: usize| PathError::Parse {
        path: path.to_string(),
        message,
        position,
    };
    let bytes = path.as_bytes();
    let mut segments = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b']' => return Err(error("unexpected ']'".into(), i)),
            b'.' => {
                if i > start {
                    segments.push(field(&path[start..i]));
                }
                if i == 0 || i == bytes.len() - 1 {
                    return Err(error("unexpected '.'".into(), i));
                }
                match bytes[i + 1] {
                    b'.' => return Err(error("unexpected '.'".into(), i + 1)),
                    b'[' => return Err(error("unexpected '['".into(), i + 1)),
                    _ => {}
                }
                i += 1;
                start = i;
            }
            b'[' => {
                if i > start {
                    segments.push(field(&path[start..i]));
                }
                let Some(close) = path[i..].find(']').map(|offset| i + offset) else {
                    return Err(error("unterminated '['".into(), i));
                };
                if close == i + 1 {
                    return Err(error("unexpected ']'".into(), close));
                }
                if let Some(inner) = path[i + 1..close].find('[') {
                    return Err(error("unexpected '['".into(), i + 1 + inner));
                }
                segments.push(field_or_index(&path[i + 1..close]));
                i = close + 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    if bytes.len() > start {
        segments.push(field(&path[start..]));
    }
    Ok(segments)
}

/// The value at `path`; `Ok(None)` for the empty path, which names nothing.
pub fn get_value<'a>(object: &'a Value, path: &str) -> Result<Option<&'a Value>, PathError> {
    let segments = parse(path)?;
    let mut current = object;
    for (i, segment) in segments.iter().enumerate() {
        let here = || Rendered(&segments[..i]).to_string();
        let through = || Rendered(&segments[..=i]).to_string();
        current = match segment {
            Segment::Index(index) => match current {
                Value::Array(items) => items
                    .get(*index)
                    .ok_or_else(|| PathError::NoSuchElement(through()))?,
                _ => return Err(PathError::NotAnArray(here())),
            },
            Segment::Field(name) => match current {
                Value::Object(map) => map
                    .get(name)
                    .ok_or_else(|| PathError::NoSuchField(through()))?,
                Value::Null => return Err(PathError::ExpectedMap(here())),
                _ => return Err(PathError::NotAnObject(here())),
            },
        };
    }
    Ok((!segments.is_empty()).then_some(current))
}

/// The string at `path`.
pub fn get_string<'a>(object: &'a Value, path: &str) -> Result<&'a str, PathError> {
    match get_value(object, path)? {
        Some(Value::String(s)) => Ok(s),
        _ => Err(PathError::NotAString(path.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_paths_as_crossplane_does() {
        let f = |s: &str| Segment::Field(s.into());
        let cases: Vec<(&str, Vec<Segment>)> = vec![
            ("", vec![]),
            ("spec.a", vec![f("spec"), f("a")]),
            ("a.0", vec![f("a"), f("0")]),
            ("a[0]b", vec![f("a"), Segment::Index(0), f("b")]),
            ("labels['app.hash']", vec![f("labels"), f("app.hash")]),
            ("metadata.'foo'", vec![f("metadata"), f("foo")]),
            ("a['0']", vec![f("a"), f("0")]),
            ("a[-1]", vec![f("a"), f("-1")]),
            ("a[4294967296]", vec![f("a"), f("4294967296")]),
            ("a[*].b", vec![f("a"), f("*"), f("b")]),
            (
                "spec[containers][0].name",
                vec![f("spec"), f("containers"), Segment::Index(0), f("name")],
            ),
        ];
        for (path, want) in cases {
            assert_eq!(parse(path), Ok(want), "{path}");
        }
    }

    #[test]
    fn reports_parse_errors_with_positions() {
        let cases = [
            (".a", "unexpected '.' at position 0"),
            ("a.", "unexpected '.' at position 1"),
            ("metadata..name", "unexpected '.' at position 9"),
            ("spec.containers.[0]", "unexpected '[' at position 16"),
            ("a]", "unexpected ']' at position 1"),
            ("spec[name", "unterminated '[' at position 4"),
            ("spec[]", "unexpected ']' at position 5"),
            ("spec[a[b]]", "unexpected '[' at position 6"),
        ];
        for (path, want) in cases {
            let got = get_value(&json!({}), path).unwrap_err().to_string();
            assert_eq!(
                got,
                format!("cannot parse path \"{path}\": {want}"),
                "{path}"
            );
        }
    }

    #[test]
    fn gets_values_and_names_what_is_missing() {
        let obj =
            json!({"spec": {"a": "x", "arr": [1, {"b": 2}], "nil": null, "dotted.key": {"c": 3}}});
        /// (path, value or error message, whether the error is NotFound)
        type Case = (&'static str, Result<Option<Value>, &'static str>, bool);
        let cases: Vec<Case> = vec![
            ("spec.a", Ok(Some(json!("x"))), false),
            ("spec.arr[1].b", Ok(Some(json!(2))), false),
            ("spec[dotted.key].c", Ok(Some(json!(3))), false),
            ("", Ok(None), false),
            ("spec.missing", Err("spec.missing: no such field"), true),
            ("spec.arr[3]", Err("spec.arr[3]: no such element"), true),
            ("spec.nil.x", Err("spec.nil: expected map, got nil"), true),
            ("spec.a.x", Err("spec.a: not an object"), false),
            ("spec.arr.x", Err("spec.arr: not an object"), false),
            ("spec[0]", Err("spec: not an array"), false),
            (
                "spec[dotted.key].d",
                Err("spec[dotted.key].d: no such field"),
                true,
            ),
        ];
        for (path, want, not_found) in cases {
            let got = get_value(&obj, path);
            match want {
                Ok(value) => assert_eq!(got.unwrap().cloned(), value, "{path}"),
                Err(message) => {
                    let err = got.unwrap_err();
                    assert_eq!(err.to_string(), message, "{path}");
                    assert_eq!(err.is_not_found(), not_found, "{path}");
                }
            }
        }
    }

    #[test]
    fn get_string_requires_a_string() {
        let obj = json!({"a": "x", "n": 1});
        assert_eq!(get_string(&obj, "a"), Ok("x"));
        assert_eq!(
            get_string(&obj, "n").unwrap_err().to_string(),
            "n: not a string"
        );
        assert_eq!(
            get_string(&obj, "m").unwrap_err().to_string(),
            "m: no such field"
        );
    }
}
