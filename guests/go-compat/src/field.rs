//! Kubernetes' `field.Error` (`k8s.io/apimachinery/pkg/util/validation/field`):
//! the path of the offending field, what is wrong with it, and its rendering
//! `spec.pipeline[1].step: Duplicate value: "a"`, which users and Crossplane's
//! own tests match byte for byte.

use std::fmt;

use serde_json::Value;

use crate::printf::format_v;
use crate::strconv::quote;

/// A path to a field, rendered `spec.pipeline[1].functionRef.name`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Path(String);

impl Path {
    /// A path starting at a top-level field.
    pub fn new(root: &str) -> Self {
        Path(root.to_string())
    }

    /// The path of a named child field.
    pub fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            Path(name.to_string())
        } else {
            Path(format!("{}.{name}", self.0))
        }
    }

    /// The path of an array element.
    pub fn index(&self, i: usize) -> Self {
        Path(format!("{}[{i}]", self.0))
    }

    /// The path of a map entry, `labels[app]`.
    pub fn key(&self, key: &str) -> Self {
        Path(format!("{}[{key}]", self.0))
    }

    /// A path below this one, given relative to it.
    pub fn join(&self, rel: &Path) -> Self {
        if rel.0.is_empty() {
            self.clone()
        } else if rel.0.starts_with('[') || self.0.is_empty() {
            Path(format!("{}{}", self.0, rel.0))
        } else {
            Path(format!("{}.{}", self.0, rel.0))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What is wrong with a field (Go's `field.ErrorType`, with its bad value).
#[derive(Debug, Clone, PartialEq)]
pub enum ErrorKind {
    Required,
    Invalid(Value),
    /// An invalid value the message leaves out (Go's `field.OmitValueType`).
    InvalidOmitted,
    Duplicate(Value),
    NotSupported(Value),
}

/// One validation failure of one field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{path}: {}", self.body())]
pub struct Error {
    pub path: Path,
    pub kind: ErrorKind,
    pub detail: String,
}

impl Error {
    pub fn required(path: Path, detail: impl Into<String>) -> Self {
        Error {
            path,
            kind: ErrorKind::Required,
            detail: detail.into(),
        }
    }

    pub fn invalid(path: Path, value: impl Into<Value>, detail: impl Into<String>) -> Self {
        Error {
            path,
            kind: ErrorKind::Invalid(value.into()),
            detail: detail.into(),
        }
    }

    /// An invalid value not worth repeating, such as a whole object.
    pub fn invalid_omitting_value(path: Path, detail: impl Into<String>) -> Self {
        Error {
            path,
            kind: ErrorKind::InvalidOmitted,
            detail: detail.into(),
        }
    }

    pub fn duplicate(path: Path, value: impl Into<Value>) -> Self {
        Error {
            path,
            kind: ErrorKind::Duplicate(value.into()),
            detail: String::new(),
        }
    }

    /// Go's `field.NotSupported`: the detail lists the supported values.
    pub fn not_supported(path: Path, value: impl Into<Value>, supported: &[&str]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Error {
            path,
            kind: ErrorKind::NotSupported(value.into()),
            detail,
        }
    }

    /// The same error, with its path placed below `prefix` (Crossplane's
    /// `WrapFieldError`).
    pub fn under(mut self, prefix: &Path) -> Self {
        self.path = prefix.join(&self.path);
        self
    }

    /// Go's `ErrorBody`: everything after the path.
    fn body(&self) -> String {
        let mut body = match &self.kind {
            ErrorKind::Required => "Required value".to_string(),
            ErrorKind::Invalid(v) => format!("Invalid value: {}", bad_value(v)),
            ErrorKind::InvalidOmitted => "Invalid value".to_string(),
            ErrorKind::Duplicate(v) => format!("Duplicate value: {}", bad_value(v)),
            ErrorKind::NotSupported(v) => format!("Unsupported value: {}", bad_value(v)),
        };
        if !self.detail.is_empty() {
            body.push_str(": ");
            body.push_str(&self.detail);
        }
        body
    }
}

/// How `field.Error` prints a bad value: strings `%q`, scalars `%v`. Go
/// prints containers as Go syntax (`%#v`); JSON reads better and no caller
/// matches on it.
fn bad_value(value: &Value) -> String {
    match value {
        Value::String(s) => quote(s),
        Value::Null => "null".to_string(),
        Value::Bool(_) | Value::Number(_) => format_v(value),
        Value::Array(_) | Value::Object(_) => value.to_string(),
    }
}

/// Joins errors one per line, for callers that report them as one message.
pub fn render_errors(errs: &[Error]) -> String {
    errs.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    #[test]
    fn renders_like_kubernetes() {
        let spec = Path::new("spec");
        let cases = [
            (
                Error::required(spec.child("group"), ""),
                "spec.group: Required value",
            ),
            (
                Error::required(Path::new("name"), "name is required"),
                "name: Required value: name is required",
            ),
            (
                Error::invalid(spec.child("x").index(2), "a\"b\n", "bad"),
                "spec.x[2]: Invalid value: \"a\\\"b\\n\": bad",
            ),
            (
                Error::invalid(spec.child("served"), false, "must be served"),
                "spec.served: Invalid value: false: must be served",
            ),
            (
                Error::invalid(Path::new("x"), json!(3), ""),
                "x: Invalid value: 3",
            ),
            (
                Error::invalid(Path::new("x"), json!([1, "a"]), "must be an object"),
                "x: Invalid value: [1,\"a\"]: must be an object",
            ),
            (
                Error::invalid_omitting_value(
                    Path::new("metadata").child("labels").key("a"),
                    "must be a string",
                ),
                "metadata.labels[a]: Invalid value: must be a string",
            ),
            (
                Error::duplicate(spec.child("versions").index(1).child("name"), "v1"),
                "spec.versions[1].name: Duplicate value: \"v1\"",
            ),
            (
                Error::not_supported(spec.child("scope"), "X", &["A", "B"]),
                "spec.scope: Unsupported value: \"X\": supported values: \"A\", \"B\"",
            ),
            (
                Error::not_supported(spec.child("scope"), "X", &[]),
                "spec.scope: Unsupported value: \"X\"",
            ),
        ];
        for (err, want) in cases {
            assert_eq!(err.to_string(), want);
        }
    }

    #[test]
    fn under_roots_the_path() {
        let prefix = Path::new("resources").index(0);
        let cases = [
            (Path::new("type"), "resources[0].type"),
            (Path::default(), "resources[0]"),
            (Path::default().index(3), "resources[0][3]"),
        ];
        for (path, want) in cases {
            let err = Error::required(path, "").under(&prefix);
            assert_eq!(err.path.as_str(), want);
        }
        let from_root = Error::required(Path::new("a"), "").under(&Path::default());
        assert_eq!(from_root.path.as_str(), "a");
    }

    #[test]
    fn render_errors_puts_one_per_line() {
        let errs = [
            Error::required(Path::new("a"), ""),
            Error::duplicate(Path::new("b"), "x"),
        ];
        assert_eq!(
            render_errors(&errs),
            "a: Required value\nb: Duplicate value: \"x\""
        );
    }
}
