use thiserror::Error;

/// Errors from reading manifests into the model.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ModelError {
    /// A document of a YAML stream is not valid YAML (or not representable as JSON).
    #[error("{file}: document {index}: {message}")]
    Yaml {
        file: String,
        index: usize,
        message: String,
    },
    /// A value does not fit the typed model; `path` is the failing field (`.` for the root).
    #[error("cannot decode {what}: {path}: {message}")]
    Decode {
        what: &'static str,
        path: String,
        message: String,
    },
    /// The object has a different apiVersion or kind than the type it is read into.
    #[error("expected {expected} ({api_versions}), got apiVersion {api_version:?}, kind {kind:?}")]
    WrongKind {
        expected: &'static str,
        api_versions: String,
        api_version: String,
        kind: String,
    },
    /// A composite resource cannot be defaulted from the given XRD.
    #[error("cannot apply defaults of XRD {xrd:?}: {message}")]
    Defaults { xrd: String, message: String },
}
