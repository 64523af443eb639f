//! The Usages deletion sequencing composes: one per pair of observed
//! resources where the later one in a sequence uses the earlier one, so
//! Crossplane deletes them in reverse order.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::input::UsageVersion;

pub const PROTECTION_API_VERSION: &str = "protection.crossplane.io/v1beta1";
pub const APIEXTENSIONS_API_VERSION: &str = "apiextensions.crossplane.io/v1beta1";
const USAGE_NAME_SUFFIX: &str = "dependency";
const DEPENDENCY_REASON: &str = "dependency";
const MAX_NAME_LENGTH: usize = 63;
const HASH_LENGTH: usize = 6;

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Whether an observed resource is itself a Usage of the version in use,
/// which is never sequenced.
pub fn is_usage(object: &Value, version: UsageVersion) -> bool {
    let api_version = text(object, "/apiVersion");
    let kind = text(object, "/kind");
    match version {
        UsageVersion::V1 => api_version == APIEXTENSIONS_API_VERSION && kind == "Usage",
        UsageVersion::V2 => {
            api_version == PROTECTION_API_VERSION && matches!(kind, "Usage" | "ClusterUsage")
        }
    }
}

/// A Usage that keeps `of` from being deleted while `by` exists. A v2 Usage
/// of a namespaced resource is a namespaced `Usage`, otherwise a
/// `ClusterUsage`; v1 has only the cluster-scoped `Usage`.
pub fn usage(of: &Value, by: &Value, replay_deletion: bool, version: UsageVersion) -> Value {
    let name = format!(
        "{}-{}-{}-{}",
        text(by, "/kind"),
        text(by, "/metadata/name"),
        text(of, "/kind"),
        text(of, "/metadata/name")
    )
    .to_lowercase();
    let mut metadata = json!({"name": kubernetes_name(&name, USAGE_NAME_SUFFIX)});
    let (api_version, kind) = match version {
        UsageVersion::V1 => (APIEXTENSIONS_API_VERSION, "Usage"),
        UsageVersion::V2 => match text(of, "/metadata/namespace") {
            "" => (PROTECTION_API_VERSION, "ClusterUsage"),
            namespace => {
                metadata["namespace"] = namespace.into();
                (PROTECTION_API_VERSION, "Usage")
            }
        },
    };
    let reference = |object: &Value| {
        json!({
            "apiVersion": text(object, "/apiVersion"),
            "kind": text(object, "/kind"),
            "resourceRef": {"name": text(object, "/metadata/name")},
        })
    };
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": metadata,
        "spec": {
            "by": reference(by),
            "of": reference(of),
            "reason": DEPENDENCY_REASON,
            "replayDeletion": replay_deletion,
        },
    })
}

/// `name-<6 hex of its SHA-256>-suffix`, the name cut short (ending in a
/// hyphen) to keep the whole within Kubernetes' 63 characters.
pub fn kubernetes_name(name: &str, suffix: &str) -> String {
    let hash = hex::encode(Sha256::digest(name.as_bytes()));
    let full_suffix = format!("{}-{suffix}", &hash[..HASH_LENGTH]);
    let full_name = format!("{name}-{full_suffix}");
    if full_name.len() <= MAX_NAME_LENGTH {
        return full_name;
    }
    // Go slices bytes; a cut through a multi-byte character keeps its
    // leading bytes, which Rust strings cannot, so the cut moves back to
    // the character's start.
    let mut cut = MAX_NAME_LENGTH - full_suffix.len() - 1;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let truncated = &name[..cut];
    let hyphen = if truncated.ends_with('-') { "" } else { "-" };
    format!("{truncated}{hyphen}{full_suffix}")
}
