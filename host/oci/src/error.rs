//! What can go wrong distributing a function, and the stable reason each
//! failure reports (for conditions, metrics and exit messages).

use std::path::PathBuf;

use oci_client::errors::{DigestError, OciDistributionError, OciErrorCode};

use crate::component::ComponentError;
use crate::signature::Refusal;

/// A CamelCase reason, stable enough for a condition's `reason` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    InvalidReference,
    NotFound,
    Unauthorized,
    DigestMismatch,
    NotAComponent,
    IncompatibleWorld,
    CompileError,
    TooLarge,
    UnsupportedArtifact,
    Unreachable,
    RegistryError,
    InvalidConfiguration,
    CacheError,
    /// Upstream's reason for a package whose signature did not verify.
    SignatureVerificationFailed,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::InvalidReference => "InvalidReference",
            Reason::NotFound => "NotFound",
            Reason::Unauthorized => "Unauthorized",
            Reason::DigestMismatch => "DigestMismatch",
            Reason::NotAComponent => "NotAComponent",
            Reason::IncompatibleWorld => "IncompatibleWorld",
            Reason::CompileError => "CompileError",
            Reason::TooLarge => "TooLarge",
            Reason::UnsupportedArtifact => "UnsupportedArtifact",
            Reason::Unreachable => "Unreachable",
            Reason::RegistryError => "RegistryError",
            Reason::InvalidConfiguration => "InvalidConfiguration",
            Reason::CacheError => "CacheError",
            Reason::SignatureVerificationFailed => "SignatureVerificationFailed",
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why pushing, pulling or loading a function failed. Every variant names
/// the reference (or file) at fault.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid OCI reference {reference:?}: {message}")]
    InvalidReference { reference: String, message: String },
    #[error("{reference}: not found in the registry: {message}")]
    NotFound { reference: String, message: String },
    #[error("{reference}: unauthorized (missing or wrong credentials): {message}")]
    Unauthorized { reference: String, message: String },
    #[error("{reference}: digest mismatch: expected {expected}, got {actual}")]
    DigestMismatch {
        reference: String,
        expected: String,
        actual: String,
    },
    #[error("{reference}: {source}")]
    Component {
        reference: String,
        source: ComponentError,
    },
    #[error("{reference}: cannot compile the component: {message}")]
    Compile { reference: String, message: String },
    #[error("{reference}: {what} is {size} bytes, more than the limit of {limit}")]
    TooLarge {
        reference: String,
        what: &'static str,
        size: u64,
        limit: u64,
    },
    #[error("{reference}: not a Wasm function artifact: {message}")]
    UnsupportedArtifact { reference: String, message: String },
    #[error("{reference}: not a KCL module: {message}")]
    NotAKclModule { reference: String, message: String },
    #[error("{reference}: cannot reach the registry{}: {message}", if *.timeout { " (timed out)" } else { "" })]
    Transport {
        reference: String,
        message: String,
        timeout: bool,
    },
    #[error("{reference}: registry error: {message}")]
    Registry {
        reference: String,
        message: String,
        /// Rate limits and server errors: worth trying again.
        transient: bool,
    },
    #[error("{source_name}: {message}")]
    Configuration {
        source_name: String,
        message: String,
    },
    #[error("cache {}: {message}", path.display())]
    Cache { path: PathBuf, message: String },
    #[error("{reference}: signature verification failed: {refusal}")]
    Signature {
        reference: String,
        #[source]
        refusal: Refusal,
    },
}

impl Error {
    pub fn reason(&self) -> Reason {
        match self {
            Error::InvalidReference { .. } => Reason::InvalidReference,
            Error::NotFound { .. } => Reason::NotFound,
            Error::Unauthorized { .. } => Reason::Unauthorized,
            Error::DigestMismatch { .. } => Reason::DigestMismatch,
            Error::Component { source, .. } => match source {
                ComponentError::IncompatibleWorld { .. } => Reason::IncompatibleWorld,
                ComponentError::NotWasm
                | ComponentError::CoreModule
                | ComponentError::Malformed(_) => Reason::NotAComponent,
            },
            Error::Compile { .. } => Reason::CompileError,
            Error::TooLarge { .. } => Reason::TooLarge,
            Error::UnsupportedArtifact { .. } | Error::NotAKclModule { .. } => {
                Reason::UnsupportedArtifact
            }
            Error::Transport { .. } => Reason::Unreachable,
            Error::Registry { .. } => Reason::RegistryError,
            Error::Configuration { .. } => Reason::InvalidConfiguration,
            Error::Cache { .. } => Reason::CacheError,
            Error::Signature { .. } => Reason::SignatureVerificationFailed,
        }
    }

    /// Whether trying again may help: the network or the registry, not the artifact.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Transport { .. } => true,
            Error::Registry { transient, .. } => *transient,
            _ => false,
        }
    }

    /// Attributes an error of the registry client to a cause.
    pub(crate) fn from_registry(reference: &str, error: OciDistributionError) -> Error {
        let reference = reference.to_string();
        match error {
            OciDistributionError::UnauthorizedError { url } => Error::Unauthorized {
                reference,
                message: format!("401 from {url}"),
            },
            OciDistributionError::AuthenticationFailure(message) => {
                Error::Unauthorized { reference, message }
            }
            OciDistributionError::DigestError(DigestError::VerificationError {
                expected,
                actual,
            }) => Error::DigestMismatch {
                reference,
                expected,
                actual,
            },
            OciDistributionError::ImageManifestNotFoundError(message) => {
                Error::NotFound { reference, message }
            }
            OciDistributionError::RegistryError { envelope, url } => {
                let message = format!("{envelope} ({url})");
                let code = envelope.errors.first().map(|e| &e.code);
                match code {
                    Some(
                        OciErrorCode::ManifestUnknown
                        | OciErrorCode::NameUnknown
                        | OciErrorCode::BlobUnknown
                        | OciErrorCode::NotFound,
                    ) => Error::NotFound { reference, message },
                    Some(OciErrorCode::Unauthorized | OciErrorCode::Denied) => {
                        Error::Unauthorized { reference, message }
                    }
                    code => Error::Registry {
                        reference,
                        message,
                        transient: code == Some(&OciErrorCode::Toomanyrequests),
                    },
                }
            }
            OciDistributionError::ServerError { code, url, message } => {
                let message = format!("HTTP {code} from {url}: {}", message.trim());
                match code {
                    401 | 403 => Error::Unauthorized { reference, message },
                    404 => Error::NotFound { reference, message },
                    _ => Error::Registry {
                        reference,
                        message,
                        transient: code == 429 || code >= 500,
                    },
                }
            }
            OciDistributionError::RequestError(error) => match error.status() {
                Some(status) => {
                    let code = status.as_u16();
                    let message = error_chain(&error);
                    match code {
                        401 | 403 => Error::Unauthorized { reference, message },
                        404 => Error::NotFound { reference, message },
                        _ => Error::Registry {
                            reference,
                            message,
                            transient: code == 429 || code >= 500,
                        },
                    }
                }
                None => Error::Transport {
                    reference,
                    timeout: error.is_timeout(),
                    message: error_chain(&error),
                },
            },
            other => Error::Registry {
                reference,
                message: other.to_string(),
                transient: false,
            },
        }
    }
}

impl Error {
    /// Attributes an error met while streaming a blob: the registry
    /// client reports digest mismatches through the stream.
    pub(crate) fn from_stream(reference: &str, error: std::io::Error) -> Error {
        if let Some(DigestError::VerificationError { expected, actual }) = error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<DigestError>())
        {
            return Error::DigestMismatch {
                reference: reference.to_string(),
                expected: expected.clone(),
                actual: actual.clone(),
            };
        }
        Error::Transport {
            reference: reference.to_string(),
            timeout: error.kind() == std::io::ErrorKind::TimedOut,
            message: error_chain(&error),
        }
    }
}

/// An error with its sources, so "error sending request" says why.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
