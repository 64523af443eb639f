//! Copying an XR's connection Secret into the Secret its claim names.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use super::{CLAIM_FIELD_MANAGER, ClaimContext};
use crate::vocabulary::api::CONNECTION_SECRET_TYPE;
use crate::vocabulary::object::text;

/// Copies the XR's connection Secret into the claim's, in the claim's
/// namespace. True when the claim's Secret changed.
pub async fn propagate_connection(
    ctx: &ClaimContext,
    claim: &Value,
    xr: &Value,
) -> Result<bool, String> {
    let (Some(from_name), Some(from_ns), Some(to_name), Some(claim_uid)) = (
        text(xr, "/spec/writeConnectionSecretToRef/name"),
        text(xr, "/spec/writeConnectionSecretToRef/namespace"),
        text(claim, "/spec/writeConnectionSecretToRef/name"),
        text(claim, "/metadata/uid"),
    ) else {
        return Ok(false);
    };
    let client = ctx.cluster.client().clone();
    let from = Api::<Secret>::namespaced(client.clone(), from_ns)
        .get(from_name)
        .await
        .map_err(|e| {
            format!("cannot get composite resource's connection secret {from_ns}/{from_name}: {e}")
        })?;
    // Only a Secret the XR controls is copied, so a claim cannot use its
    // XR's reference to read a Secret it has no access to.
    let controlled =
        from.metadata.owner_references.iter().flatten().any(|o| {
            o.controller == Some(true) && Some(o.uid.as_str()) == text(xr, "/metadata/uid")
        });
    if !controlled {
        return Err(format!(
            "cannot establish control of existing connection secret {from_ns}/{from_name}"
        ));
    }
    let namespace = text(claim, "/metadata/namespace").unwrap_or_default();
    let secrets = Api::<Secret>::namespaced(client, namespace);
    let data = from.data.unwrap_or_default();
    if let Some(existing) = secrets
        .get_opt(to_name)
        .await
        .map_err(|e| format!("cannot get connection secret {namespace}/{to_name}: {e}"))?
    {
        let owner = existing
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true))
            .map(|o| o.uid.clone());
        if owner.as_deref().is_some_and(|u| u != claim_uid) {
            return Err(format!(
                "cannot create or update connection secret {namespace}/{to_name}: existing secret is not controlled by UID {claim_uid:?}"
            ));
        }
        if existing.data.unwrap_or_default() == data && owner.is_some() {
            return Ok(false);
        }
    }
    let encoded: BTreeMap<String, Value> = data
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or(Value::Null)))
        .collect();
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": to_name,
            "namespace": namespace,
            "ownerReferences": [{
                "apiVersion": claim["apiVersion"],
                "kind": claim["kind"],
                "name": claim["metadata"]["name"],
                "uid": claim_uid,
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "type": CONNECTION_SECRET_TYPE,
        "data": encoded,
    });
    secrets
        .patch(
            to_name,
            &PatchParams::apply(CLAIM_FIELD_MANAGER).force(),
            &Patch::Apply(&secret),
        )
        .await
        .map_err(|e| {
            format!("cannot create or update connection secret {namespace}/{to_name}: {e}")
        })?;
    Ok(true)
}
