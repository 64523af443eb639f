//! Field-level validation errors, rendered like Kubernetes' `field.Error`.

use std::fmt;

use serde_json::Value;

/// A path to a field, rendered `spec.pipeline[1].functionRef.name`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldPath(String);

impl FieldPath {
    /// A path starting at a top-level field.
    pub fn new(root: &str) -> Self {
        FieldPath(root.to_string())
    }

    /// The path of a named child field.
    pub fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            FieldPath(name.to_string())
        } else {
            FieldPath(format!("{}.{name}", self.0))
        }
    }

    /// The path of an array element.
    pub fn index(&self, i: usize) -> Self {
        FieldPath(format!("{}[{i}]", self.0))
    }

    /// A path below this one, given relative to it.
    pub fn join(&self, rel: &FieldPath) -> Self {
        if rel.0.is_empty() {
            self.clone()
        } else if rel.0.starts_with('[') || self.0.is_empty() {
            FieldPath(format!("{}{}", self.0, rel.0))
        } else {
            FieldPath(format!("{}.{}", self.0, rel.0))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What is wrong with a field.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldErrorKind {
    Required,
    Invalid(Value),
    Duplicate(Value),
    NotSupported {
        value: Value,
        supported: Vec<String>,
    },
}

/// One validation failure of one field.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub path: FieldPath,
    pub kind: FieldErrorKind,
    pub detail: String,
}

impl FieldError {
    pub fn required(path: FieldPath, detail: impl Into<String>) -> Self {
        FieldError {
            path,
            kind: FieldErrorKind::Required,
            detail: detail.into(),
        }
    }

    pub fn invalid(path: FieldPath, value: impl Into<Value>, detail: impl Into<String>) -> Self {
        FieldError {
            path,
            kind: FieldErrorKind::Invalid(value.into()),
            detail: detail.into(),
        }
    }

    pub fn duplicate(path: FieldPath, value: impl Into<Value>) -> Self {
        FieldError {
            path,
            kind: FieldErrorKind::Duplicate(value.into()),
            detail: String::new(),
        }
    }

    pub fn not_supported(path: FieldPath, value: impl Into<Value>, supported: &[&str]) -> Self {
        FieldError {
            path,
            kind: FieldErrorKind::NotSupported {
                value: value.into(),
                supported: supported.iter().map(|s| s.to_string()).collect(),
            },
            detail: String::new(),
        }
    }

    /// The same error, with its path placed below `prefix`.
    pub fn under(mut self, prefix: &FieldPath) -> Self {
        self.path = prefix.join(&self.path);
        self
    }
}

/// Renders a value the way `field.Error` does: strings quoted, everything else as JSON.
fn render_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.path)?;
        match &self.kind {
            FieldErrorKind::Required => f.write_str("Required value")?,
            FieldErrorKind::Invalid(v) => write!(f, "Invalid value: {}", render_value(v))?,
            FieldErrorKind::Duplicate(v) => write!(f, "Duplicate value: {}", render_value(v))?,
            FieldErrorKind::NotSupported { value, supported } => {
                write!(f, "Unsupported value: {}", render_value(value))?;
                if !supported.is_empty() {
                    let quoted: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
                    write!(f, ": supported values: {}", quoted.join(", "))?;
                }
            }
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

impl std::error::Error for FieldError {}

/// Joins errors one per line, for callers that report them as one message.
pub fn render_errors(errs: &[FieldError]) -> String {
    errs.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}
