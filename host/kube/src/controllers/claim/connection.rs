//! Copying an XR's connection Secret into the Secret its claim names.

use serde_json::{Value, json};

use super::writes::{ClaimWrites, WriteError};
use crate::vocabulary::api::CONNECTION_SECRET_TYPE;
use crate::vocabulary::object::text;

/// The UID of the object's controller, if it has one.
fn controller_uid(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|o| o.get("controller") == Some(&Value::Bool(true)))?
        .get("uid")?
        .as_str()
}

/// A Secret's data, empty when it has none.
fn data_of(secret: &Value) -> Value {
    secret
        .get("data")
        .filter(|d| !d.is_null())
        .cloned()
        .unwrap_or_else(|| json!({}))
}

/// Copies the XR's connection Secret into the claim's, in the claim's
/// namespace. True when the claim's Secret changed.
pub async fn propagate_connection(
    writes: &impl ClaimWrites,
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
    let from = writes.secret(from_ns, from_name).await.map_err(|e| {
        format!("cannot get composite resource's connection secret {from_ns}/{from_name}: {e}")
    })?;
    // Only a Secret the XR controls is copied, so a claim cannot use its
    // XR's reference to read a Secret it has no access to.
    if controller_uid(&from).is_none() || controller_uid(&from) != text(xr, "/metadata/uid") {
        return Err(format!(
            "cannot establish control of existing connection secret {from_ns}/{from_name}"
        ));
    }
    let namespace = text(claim, "/metadata/namespace").unwrap_or_default();
    let data = data_of(&from);
    let existing = match writes.secret(namespace, to_name).await {
        Ok(existing) => Some(existing),
        Err(WriteError::NotFound(_)) => None,
        Err(e) => {
            return Err(format!(
                "cannot get connection secret {namespace}/{to_name}: {e}"
            ));
        }
    };
    if let Some(existing) = existing {
        let owner = controller_uid(&existing);
        if owner.is_some_and(|u| u != claim_uid) {
            return Err(format!(
                "cannot create or update connection secret {namespace}/{to_name}: existing secret is not controlled by UID {claim_uid:?}"
            ));
        }
        if data_of(&existing) == data && owner.is_some() {
            return Ok(false);
        }
    }
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
        "data": data,
    });
    writes.apply_secret(&secret).await.map_err(|e| {
        format!("cannot create or update connection secret {namespace}/{to_name}: {e}")
    })?;
    Ok(true)
}
