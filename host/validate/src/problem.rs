//! One thing wrong with one field, rendered as Kubernetes' `field.Error`
//! renders it (`spec.replicas: Invalid value: "string": …`), so that the
//! output reads like the API server's answer to the same object.

use std::fmt;

use plait_go_compat::printf::format_v;
use plait_go_compat::strconv::quote;
use serde::Serialize;
use serde_json::Value;

/// What is wrong (Go's `field.ErrorType`), with the bad value where the
/// message shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", tag = "type", content = "value")]
pub enum ProblemKind {
    Required,
    Invalid(Value),
    /// A value of the wrong type or format (Go's `field.TypeInvalid`),
    /// rendered as `Invalid value`.
    TypeInvalid(Value),
    /// An invalid value the message leaves out, such as a whole object.
    InvalidOmitted,
    NotSupported(Value),
    Duplicate(Value),
    /// Longer than allowed; the message leaves the value out.
    TooLong,
    /// More entries than allowed, with how many there are.
    TooMany(Value),
    Forbidden,
    /// A name or key that refers to nothing (Go's `field.NotFound`).
    NotFound(Value),
    /// An invalid value Go prints as a struct without JSON names, in its
    /// field order: the text is that print (`{"Type":"x","RollingUpdate":null}`).
    #[serde(rename = "invalid")]
    InvalidStruct(String),
    /// A value outside the supported ones that Go prints as a struct.
    #[serde(rename = "notSupported")]
    NotSupportedStruct(String),
    /// The API server refuses the whole request before validating fields
    /// (the object cannot be decoded, or the apply patch cannot be typed):
    /// the detail is its whole message, the field where it points.
    Rejected,
}

/// A field and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Problem {
    /// The field, `spec.forProvider.tags[0]`; empty for the object itself
    /// (which the message names `<nil>`, as kube-apiserver's does).
    pub field: String,
    #[serde(flatten)]
    pub kind: ProblemKind,
    pub detail: String,
}

impl Problem {
    pub fn required(field: impl Into<String>) -> Self {
        Problem {
            field: field.into(),
            kind: ProblemKind::Required,
            detail: String::new(),
        }
    }

    pub fn invalid(field: impl Into<String>, value: Value, detail: impl Into<String>) -> Self {
        Problem {
            field: field.into(),
            kind: ProblemKind::Invalid(value),
            detail: detail.into(),
        }
    }

    /// Go's `field.TypeInvalid`: a wrong type or format.
    pub fn type_invalid(field: impl Into<String>, value: Value, detail: impl Into<String>) -> Self {
        Problem {
            field: field.into(),
            kind: ProblemKind::TypeInvalid(value),
            detail: detail.into(),
        }
    }

    /// Whether the API server leaves an object's rules unchecked after this
    /// problem (`hasBlockingErr`): a wrong type or format, a missing field,
    /// a value outside an enum, too long, too many.
    pub fn blocks_rules(&self) -> bool {
        matches!(
            self.kind,
            ProblemKind::TypeInvalid(_)
                | ProblemKind::Required
                | ProblemKind::NotSupported(_)
                | ProblemKind::TooLong
                | ProblemKind::TooMany(_)
                | ProblemKind::Rejected
        )
    }

    /// Go's `field.NotSupported`: the detail lists the supported values.
    pub fn not_supported(field: impl Into<String>, value: Value, supported: &[Value]) -> Self {
        let quoted: Vec<String> = supported
            .iter()
            .map(|v| match v {
                Value::String(s) => quote(s),
                other => quote(&format_v(other)),
            })
            .collect();
        let detail = if quoted.is_empty() {
            String::new()
        } else {
            format!("supported values: {}", quoted.join(", "))
        };
        Problem {
            field: field.into(),
            kind: ProblemKind::NotSupported(value),
            detail,
        }
    }

    pub fn too_long(field: impl Into<String>, max: u64) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        Problem {
            field: field.into(),
            kind: ProblemKind::TooLong,
            detail: format!("may not be more than {max} {unit}"),
        }
    }

    pub fn too_many(field: impl Into<String>, actual: usize, max: u64) -> Self {
        Problem {
            field: field.into(),
            kind: ProblemKind::TooMany(Value::from(actual)),
            detail: format!("must have at most {max} items"),
        }
    }

    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Problem {
            field: field.into(),
            kind: ProblemKind::Forbidden,
            detail: detail.into(),
        }
    }

    pub fn duplicate(field: impl Into<String>, value: Value) -> Self {
        Problem {
            field: field.into(),
            kind: ProblemKind::Duplicate(value),
            detail: String::new(),
        }
    }
}

impl From<plait_go_compat::field::Error> for Problem {
    fn from(e: plait_go_compat::field::Error) -> Self {
        use plait_go_compat::field::ErrorKind;
        let kind = match e.kind {
            ErrorKind::Required => ProblemKind::Required,
            ErrorKind::Invalid(v) => ProblemKind::Invalid(v),
            ErrorKind::InvalidOmitted => ProblemKind::InvalidOmitted,
            ErrorKind::Duplicate(v) => ProblemKind::Duplicate(v),
            ErrorKind::NotSupported(v) => ProblemKind::NotSupported(v),
        };
        Problem {
            field: e.path.to_string(),
            kind,
            detail: e.detail,
        }
    }
}

/// How `field.Error` prints a bad value: strings quoted, scalars as Go's
/// `%v`, containers as JSON.
fn bad_value(value: &Value) -> String {
    match value {
        Value::String(s) => quote(s),
        Value::Null => "null".to_string(),
        Value::Bool(_) | Value::Number(_) => format_v(value),
        Value::Array(_) | Value::Object(_) => value.to_string(),
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut body = match &self.kind {
            ProblemKind::Required => "Required value".to_string(),
            ProblemKind::InvalidOmitted => "Invalid value".to_string(),
            ProblemKind::Invalid(v) | ProblemKind::TypeInvalid(v) => {
                format!("Invalid value: {}", bad_value(v))
            }
            ProblemKind::NotSupported(v) => format!("Unsupported value: {}", bad_value(v)),
            ProblemKind::Duplicate(v) => format!("Duplicate value: {}", bad_value(v)),
            ProblemKind::TooLong => "Too long".to_string(),
            ProblemKind::TooMany(v) => format!("Too many: {}", bad_value(v)),
            ProblemKind::Forbidden => "Forbidden".to_string(),
            ProblemKind::NotFound(v) => format!("Not found: {}", bad_value(v)),
            ProblemKind::InvalidStruct(shown) => format!("Invalid value: {shown}"),
            ProblemKind::NotSupportedStruct(shown) => format!("Unsupported value: {shown}"),
            ProblemKind::Rejected => return f.write_str(&self.detail),
        };
        if !self.detail.is_empty() {
            body.push_str(": ");
            body.push_str(&self.detail);
        }
        // The object itself: Go's error has a nil path, which it prints so.
        let field = if self.field.is_empty() {
            "<nil>"
        } else {
            &self.field
        };
        write!(f, "{field}: {body}")
    }
}

/// A field path being walked, rendered `spec.items[0].name`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Path(String);

impl Path {
    pub(crate) fn root() -> Self {
        Path(String::new())
    }

    pub(crate) fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            Path(name.to_string())
        } else {
            Path(format!("{}.{name}", self.0))
        }
    }

    pub(crate) fn index(&self, i: usize) -> Self {
        Path(format!("{}[{i}]", self.0))
    }

    /// A map's entry, `data[my key]`.
    pub(crate) fn key(&self, key: &str) -> Self {
        Path(format!("{}[{key}]", self.0))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// How kube-openapi names the field inside its messages: `<root>` for
    /// the object itself.
    pub(crate) fn in_body(&self) -> &str {
        if self.0.is_empty() { "<root>" } else { &self.0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn problems_render_like_kubernetes_field_errors() {
        let cases = [
            (Problem::required("spec.x"), "spec.x: Required value"),
            (
                Problem::invalid(
                    "spec.n",
                    json!("string"),
                    "spec.n in body must be of type integer: \"string\"",
                ),
                "spec.n: Invalid value: \"string\": spec.n in body must be of type integer: \"string\"",
            ),
            (
                Problem::not_supported("spec.size", json!("xl"), &[json!("s"), json!("m")]),
                "spec.size: Unsupported value: \"xl\": supported values: \"s\", \"m\"",
            ),
            (
                Problem::too_long("metadata.name", 63),
                "metadata.name: Too long: may not be more than 63 bytes",
            ),
            (
                Problem::too_many("spec.items", 4, 3),
                "spec.items: Too many: 4: must have at most 3 items",
            ),
            (
                Problem::forbidden("spec.x", "may not change"),
                "spec.x: Forbidden: may not change",
            ),
            (
                Problem::invalid("", json!(2), "bad"),
                "<nil>: Invalid value: 2: bad",
            ),
            (
                Problem {
                    field: "spec.strategy".into(),
                    kind: ProblemKind::NotSupportedStruct(r#"{"Type":"x"}"#.into()),
                    detail: "supported values: \"Recreate\"".into(),
                },
                r#"spec.strategy: Unsupported value: {"Type":"x"}: supported values: "Recreate""#,
            ),
            (
                Problem {
                    field: "spec.x".into(),
                    kind: ProblemKind::Rejected,
                    detail: "Deployment in version \"v1\" cannot be handled as a Deployment".into(),
                },
                "Deployment in version \"v1\" cannot be handled as a Deployment",
            ),
        ];
        for (problem, want) in cases {
            assert_eq!(problem.to_string(), want);
        }
    }
}
