//! Connection details of legacy (LegacyCluster) XRs, published to the
//! Secret their `spec.writeConnectionSecretToRef` names, as upstream's
//! composite reconciler does. Claims copy this Secret into their namespace.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use plait_model::{CompositeResourceDefinition, Composition};
use plait_reconcile::{COMPOSITE_FIELD_MANAGER, ClusterError};
use serde_json::{Value, json};

use crate::clusters::cluster::KubeCluster;
use crate::controllers::timing::now;
use crate::vocabulary::api::CONNECTION_SECRET_TYPE;
use crate::vocabulary::object::text;

#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error("spec.writeConnectionSecretToRef: cannot set default: {0}")]
    Default(#[source] kube::Error),
    #[error("cannot get connection secret {namespace}/{name}: {source}")]
    Get {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "cannot publish connection details: connection secret {namespace}/{name} is controlled by another resource"
    )]
    NotControlled { namespace: String, name: String },
    #[error("cannot publish connection details to {namespace}/{name}: {source}")]
    Apply {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("status.connectionDetails.lastPublishedTime: {0}")]
    Stamp(#[source] kube::Error),
}

/// The details to publish: only the XRD's `connectionSecretKeys` when it lists any.
pub fn filter_keys(
    details: &BTreeMap<String, Vec<u8>>,
    keys: Option<&[String]>,
) -> BTreeMap<String, Vec<u8>> {
    details
        .iter()
        .filter(|(k, _)| keys.is_none_or(|keys| keys.is_empty() || keys.contains(k)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Publishes `details` to the XR's connection Secret, defaulting the
/// Secret's reference from the Composition's `writeConnectionSecretsToNamespace`.
/// Publishing is additive: keys the Secret has and the XR no longer
/// reports stay. True when the Secret changed.
pub async fn publish(
    cluster: &KubeCluster,
    xr: &Value,
    composition: &Composition,
    xrd: &CompositeResourceDefinition,
    details: &BTreeMap<String, Vec<u8>>,
) -> Result<bool, PublishError> {
    let (Some(api_version), Some(kind), Some(xr_name), Some(uid)) = (
        text(xr, "/apiVersion"),
        text(xr, "/kind"),
        text(xr, "/metadata/name"),
        text(xr, "/metadata/uid"),
    ) else {
        return Ok(false);
    };
    let (xrs, _) = cluster.api_for(api_version, kind, None).await?;
    let (name, namespace) = match (
        text(xr, "/spec/writeConnectionSecretToRef/name"),
        text(xr, "/spec/writeConnectionSecretToRef/namespace"),
    ) {
        (Some(n), Some(ns)) => (n.to_string(), ns.to_string()),
        _ => {
            let Some(ns) = &composition.spec.write_connection_secrets_to_namespace else {
                return Ok(false);
            };
            let reference = json!({"name": uid, "namespace": ns});
            let patch = json!({"spec": {"writeConnectionSecretToRef": reference}});
            xrs.patch(xr_name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(PublishError::Default)?;
            (uid.to_string(), ns.clone())
        }
    };
    let secrets: Api<Secret> = Api::namespaced(cluster.client().clone(), &namespace);
    let existing = secrets
        .get_opt(&name)
        .await
        .map_err(|source| PublishError::Get {
            namespace: namespace.clone(),
            name: name.clone(),
            source,
        })?;
    let keys = xrd.spec.connection_secret_keys.as_deref();
    let data = match published_data(existing.as_ref(), uid, details, keys) {
        Published::Changed(data) => data,
        Published::Unchanged => return Ok(false),
        Published::NotControlled => {
            return Err(PublishError::NotControlled { namespace, name });
        }
    };
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "ownerReferences": [{
                "apiVersion": api_version,
                "kind": kind,
                "name": xr_name,
                "uid": uid,
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "type": CONNECTION_SECRET_TYPE,
        "data": data,
    });
    secrets
        .patch(
            &name,
            &PatchParams::apply(COMPOSITE_FIELD_MANAGER).force(),
            &Patch::Apply(&secret),
        )
        .await
        .map_err(|source| PublishError::Apply {
            namespace: namespace.clone(),
            name: name.clone(),
            source,
        })?;
    // The new publish time is what tells a claim's controller to copy the Secret.
    let status = json!({"status": {"connectionDetails": {"lastPublishedTime": now()}}});
    xrs.patch_status(xr_name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .map_err(PublishError::Stamp)?;
    Ok(true)
}

/// What the XR's connection Secret is to hold.
enum Published {
    /// These keys, the Secret's own and the XR's details over them.
    Changed(BTreeMap<String, ByteString>),
    /// What it holds already.
    Unchanged,
    /// Nothing: another object controls the Secret.
    NotControlled,
}

/// Adds the XR's `details` (filtered by the XRD's `keys`) to what the
/// `existing` Secret holds, unless another object than the XR (`uid`)
/// controls it.
fn published_data(
    existing: Option<&Secret>,
    uid: &str,
    details: &BTreeMap<String, Vec<u8>>,
    keys: Option<&[String]>,
) -> Published {
    let mut data: BTreeMap<String, ByteString> = BTreeMap::new();
    if let Some(existing) = existing {
        let owner = existing
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true));
        if owner.is_some_and(|o| o.uid != uid) {
            return Published::NotControlled;
        }
        data = existing.data.clone().unwrap_or_default();
    }
    for (k, v) in filter_keys(details, keys) {
        data.insert(k, ByteString(v));
    }
    if existing.is_some_and(|e| e.data.clone().unwrap_or_default() == data) {
        return Published::Unchanged;
    }
    Published::Changed(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_secret_keys_filter_published_details() {
        let details: BTreeMap<String, Vec<u8>> = [("user", "u"), ("password", "p")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect();
        let cases: [(Option<Vec<String>>, &[&str]); 3] = [
            (None, &["password", "user"]),
            (Some(vec![]), &["password", "user"]),
            (Some(vec!["user".into(), "absent".into()]), &["user"]),
        ];
        for (keys, want) in cases {
            let got = filter_keys(&details, keys.as_deref());
            assert_eq!(
                got.keys().map(String::as_str).collect::<Vec<_>>(),
                want,
                "{keys:?}"
            );
        }
    }
}
