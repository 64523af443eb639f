//! Checks a step's desired state before anyone uses it.
//!
//! A function is untrusted: its output must be well-formed Kubernetes objects,
//! within size and count caps, and a namespaced composite may compose only
//! namespaced resources in its own namespace. A violation names the resource
//! and the rule.

use plait_go_compat::field::{Error as FieldError, Path};
use plait_sdk::State;
use serde_json::Value;

/// How many composed resources a step may return.
pub const DEFAULT_MAX_RESOURCES: usize = 1_000;
/// How many bytes of JSON the whole desired state may take.
pub const DEFAULT_MAX_TOTAL_BYTES: usize = 16 << 20;

/// Answers whether a kind is namespaced; `None` when it is not known.
pub trait ScopeLookup {
    fn is_namespaced(&self, api_version: &str, kind: &str) -> Option<bool>;
}

/// Kinds every Kubernetes cluster serves, with their scope. Used when no
/// cluster is available to ask (rendering offline).
pub struct WellKnownScopes;

const CLUSTER_SCOPED: &[(&str, &str)] = &[
    ("v1", "Namespace"),
    ("v1", "Node"),
    ("v1", "PersistentVolume"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("storage.k8s.io/v1", "StorageClass"),
    ("storage.k8s.io/v1", "CSIDriver"),
    ("storage.k8s.io/v1", "VolumeAttachment"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("networking.k8s.io/v1", "IngressClass"),
    (
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
    ),
    ("apiregistration.k8s.io/v1", "APIService"),
    ("node.k8s.io/v1", "RuntimeClass"),
    ("certificates.k8s.io/v1", "CertificateSigningRequest"),
    (
        "apiextensions.crossplane.io/v1",
        "CompositeResourceDefinition",
    ),
    (
        "apiextensions.crossplane.io/v2",
        "CompositeResourceDefinition",
    ),
    ("apiextensions.crossplane.io/v1", "Composition"),
    ("apiextensions.crossplane.io/v1", "CompositionRevision"),
    ("apiextensions.crossplane.io/v1alpha1", "EnvironmentConfig"),
    ("apiextensions.crossplane.io/v1beta1", "EnvironmentConfig"),
    ("pkg.crossplane.io/v1", "Provider"),
    ("pkg.crossplane.io/v1", "Function"),
    ("pkg.crossplane.io/v1", "Configuration"),
    ("protection.crossplane.io/v1beta1", "ClusterUsage"),
    // Crossplane v1's Usage, deprecated but served.
    ("apiextensions.crossplane.io/v1alpha1", "Usage"),
    ("apiextensions.crossplane.io/v1beta1", "Usage"),
];

impl ScopeLookup for WellKnownScopes {
    fn is_namespaced(&self, api_version: &str, kind: &str) -> Option<bool> {
        if CLUSTER_SCOPED.contains(&(api_version, kind)) {
            return Some(false);
        }
        let core = !api_version.contains('/')
            || api_version.ends_with(".k8s.io/v1")
            || api_version.starts_with("apps/")
            || api_version.starts_with("batch/")
            || api_version.starts_with("autoscaling/")
            || api_version.starts_with("policy/");
        core.then_some(true)
    }
}

/// The rules a step's output must follow.
pub struct OutputRules<'a> {
    pub max_resources: usize,
    pub max_total_bytes: usize,
    /// The composite's namespace when it is namespaced: every composed
    /// resource must be namespaced and live there.
    pub namespace: Option<&'a str>,
    pub scopes: &'a dyn ScopeLookup,
}

impl Default for OutputRules<'_> {
    fn default() -> Self {
        OutputRules {
            max_resources: DEFAULT_MAX_RESOURCES,
            max_total_bytes: DEFAULT_MAX_TOTAL_BYTES,
            namespace: None,
            scopes: &WellKnownScopes,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    #[error("{count} composed resources exceed the limit of {limit}")]
    TooManyResources { count: usize, limit: usize },
    #[error("desired state is {size} bytes, over the limit of {limit}")]
    TooLarge { size: usize, limit: usize },
    #[error("{what}: {detail}")]
    InvalidObject { what: String, detail: String },
    #[error(
        "composed resource {name:?} ({kind}) is in namespace {actual:?}, but the composite resource is namespaced and may compose only in its own namespace {expected:?}"
    )]
    OtherNamespace {
        name: String,
        kind: String,
        actual: String,
        expected: String,
    },
    #[error(
        "composed resource {name:?} is a cluster-scoped {kind}, but a namespaced composite resource may compose only namespaced resources"
    )]
    ClusterScoped { name: String, kind: String },
    #[error(
        "composed resource {name:?} is a Usage of a resource in namespace {actual:?}, but a namespaced composite resource may protect only resources in its own namespace {expected:?}"
    )]
    UsageOfOtherNamespace {
        name: String,
        actual: String,
        expected: String,
    },
    #[error("context must be a JSON object, got {0}")]
    Context(&'static str),
}

pub fn check_context(context: &Value) -> Result<(), CheckError> {
    if context.is_object() {
        Ok(())
    } else {
        Err(CheckError::Context(json_type(context)))
    }
}

pub fn check_state(state: &State, rules: &OutputRules<'_>) -> Result<(), CheckError> {
    if state.resources.len() > rules.max_resources {
        return Err(CheckError::TooManyResources {
            count: state.resources.len(),
            limit: rules.max_resources,
        });
    }
    let mut size = 0;
    if let Some(composite) = &state.composite {
        check_composite(&composite.resource)?;
        size += encoded_len(&composite.resource);
    }
    for (name, resource) in &state.resources {
        check_composed(name, &resource.resource, rules)?;
        size += encoded_len(&resource.resource);
        if size > rules.max_total_bytes {
            return Err(CheckError::TooLarge {
                size,
                limit: rules.max_total_bytes,
            });
        }
    }
    Ok(())
}

fn encoded_len(value: &Value) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |v| v.len())
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn check_composite(object: &Value) -> Result<(), CheckError> {
    let invalid = |detail: String| CheckError::InvalidObject {
        what: "desired composite resource".into(),
        detail,
    };
    if !object.is_object() {
        return Err(invalid(format!(
            "must be a JSON object, got {}",
            json_type(object)
        )));
    }
    check_metadata(object).map_err(|e| invalid(e.to_string()))
}

fn check_composed(name: &str, object: &Value, rules: &OutputRules<'_>) -> Result<(), CheckError> {
    let invalid = |detail: String| CheckError::InvalidObject {
        what: format!("composed resource {name:?}"),
        detail,
    };
    if !is_dns_label_ish(name) {
        return Err(invalid(
            "its name in the Composition must be non-empty and at most 253 characters".into(),
        ));
    }
    let Some(map) = object.as_object() else {
        return Err(invalid(format!(
            "must be a JSON object, got {}",
            json_type(object)
        )));
    };
    let api_version = match map.get("apiVersion") {
        Some(Value::String(s)) if !s.is_empty() => s.as_str(),
        _ => {
            return Err(invalid(
                FieldError::required(Path::new("apiVersion"), "must be a non-empty string")
                    .to_string(),
            ));
        }
    };
    let kind = match map.get("kind") {
        Some(Value::String(s)) if !s.is_empty() => s.as_str(),
        _ => {
            return Err(invalid(
                FieldError::required(Path::new("kind"), "must be a non-empty string").to_string(),
            ));
        }
    };
    check_metadata(object).map_err(|e| invalid(e.to_string()))?;

    if let Some(expected) = rules.namespace {
        let resource_name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or(name)
            .to_string();
        if rules.scopes.is_namespaced(api_version, kind) == Some(false) {
            return Err(CheckError::ClusterScoped {
                name: resource_name,
                kind: kind.to_string(),
            });
        }
        if let Some(actual) = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            && !actual.is_empty()
            && actual != expected
        {
            return Err(CheckError::OtherNamespace {
                name: resource_name,
                kind: kind.to_string(),
                actual: actual.to_string(),
                expected: expected.to_string(),
            });
        }
        // A Usage names what it protects by namespace too: a tenant's
        // Usage must not block deletions in another tenant's namespace.
        if api_version.starts_with("protection.crossplane.io/")
            && kind == "Usage"
            && let Some(actual) = [
                "/spec/of/resourceRef/namespace",
                "/spec/of/resourceSelector/namespace",
            ]
            .into_iter()
            .filter_map(|pointer| object.pointer(pointer).and_then(Value::as_str))
            .find(|named| *named != expected)
        {
            return Err(CheckError::UsageOfOtherNamespace {
                name: resource_name,
                actual: actual.to_string(),
                expected: expected.to_string(),
            });
        }
    }
    Ok(())
}

fn is_dns_label_ish(name: &str) -> bool {
    !name.is_empty() && name.len() <= 253
}

fn check_metadata(object: &Value) -> Result<(), FieldError> {
    let Some(metadata) = object.get("metadata") else {
        return Ok(());
    };
    let path = Path::new("metadata");
    let Some(metadata) = metadata.as_object() else {
        return Err(FieldError::invalid_omitting_value(
            path,
            format!("must be an object, got {}", json_type(metadata)),
        ));
    };
    for field in ["name", "namespace", "generateName"] {
        match metadata.get(field) {
            None | Some(Value::Null) => {}
            // An empty name or namespace is no name or namespace, as the API
            // server reads it: the composer generates the name and the
            // namespace comes from the composite or the kind's scope.
            Some(Value::String(s)) if s.is_empty() => {}
            Some(Value::String(s)) => {
                let checked = if field == "generateName" {
                    // A prefix: the generated suffix is appended, so it may end in '-'.
                    s.trim_end_matches('-').to_string()
                } else {
                    s.clone()
                };
                if !(field == "generateName" && checked.is_empty())
                    && let Err(why) = rfc1123_subdomain(&checked)
                {
                    return Err(FieldError::invalid(path.child(field), s.as_str(), why));
                }
            }
            Some(other) => {
                return Err(FieldError::invalid_omitting_value(
                    path.child(field),
                    format!("must be a string, got {}", json_type(other)),
                ));
            }
        }
    }
    for field in ["labels", "annotations"] {
        match metadata.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) => {
                if let Some((key, _)) = map.iter().find(|(_, v)| !v.is_string()) {
                    return Err(FieldError::invalid_omitting_value(
                        path.child(field).key(key),
                        "must be a string",
                    ));
                }
            }
            Some(other) => {
                return Err(FieldError::invalid_omitting_value(
                    path.child(field),
                    format!("must be an object, got {}", json_type(other)),
                ));
            }
        }
    }
    Ok(())
}

/// Validates an RFC 1123 subdomain, as Kubernetes does for object names.
pub fn rfc1123_subdomain(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("must not be empty");
    }
    if name.len() > 253 {
        return Err("must be no more than 253 characters");
    }
    let valid_chars = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    let labels_ok = name.split('.').all(|label| {
        !label.is_empty()
            && label.as_bytes()[0].is_ascii_alphanumeric()
            && label.as_bytes()[label.len() - 1].is_ascii_alphanumeric()
    });
    if valid_chars && labels_ok {
        Ok(())
    } else {
        Err(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        )
    }
}
