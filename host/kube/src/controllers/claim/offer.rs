//! Offering a claim kind: the claim CRD an XRD defines, its controller,
//! and withdrawing both when the XRD stops offering claims.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams};
use plait_model::CompositeResourceDefinition;
use plait_reconcile::set_condition;
use serde_json::{Value, json};

use super::ClaimControllers;
use crate::access::install::{self, CrdError};
use crate::vocabulary::api::defined_resource;
use crate::vocabulary::object::{is_status, text};
use plait_model::crd::{claim_crd, claim_crd_name};

/// What the XRD's `Offered` condition says.
#[derive(Debug, Clone, PartialEq)]
pub enum Offered {
    /// The XRD offers no claim and no claim CRD is left.
    No,
    /// The claim CRD is established and its controller runs.
    Yes(ApiResource),
    /// The XRD stopped offering claims; existing claims are being deleted.
    Withdrawing,
}

/// Why claims cannot be offered.
#[derive(Debug, thiserror::Error)]
pub enum OfferError {
    /// Reported on the XRD's `Synced` condition.
    #[error("{0}")]
    Invalid(String),
    #[error("{what}: {source}")]
    Kube {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    Cluster(#[from] plait_reconcile::ClusterError),
}

/// Applies the claim CRD `xrd` defines and runs its claim controller, or,
/// when the XRD no longer offers claims, withdraws them.
pub async fn offer(
    controllers: &ClaimControllers,
    xrd: &CompositeResourceDefinition,
    xrd_value: &Value,
    xr: ApiResource,
) -> Result<Offered, OfferError> {
    let (Some(gvk), Some(crd_name), Some(names)) = (
        xrd.claim_gvk(),
        claim_crd_name(xrd),
        xrd.spec.claim_names.as_ref(),
    ) else {
        return Ok(match withdraw(controllers, xrd, xrd_value).await? {
            true => Offered::No,
            false => Offered::Withdrawing,
        });
    };
    let crd = claim_crd(xrd).map_err(|e| {
        OfferError::Invalid(format!(
            "cannot render composite resource claim CustomResourceDefinition: {e}"
        ))
    })?;
    let client = controllers.cluster.client();
    if let Err(CrdError::Apply { source, .. }) = install::apply(client, &crd).await {
        return Err(OfferError::Invalid(format!(
            "cannot apply rendered composite resource claim CustomResourceDefinition: {source}"
        )));
    }
    if install::established(client, &crd_name, install::ESTABLISH_TIMEOUT)
        .await
        .is_err()
    {
        return Err(OfferError::Invalid(
            "waiting for composite resource claim CustomResourceDefinition to be established"
                .into(),
        ));
    }
    controllers
        .cluster
        .forget_kind(&gvk.api_version(), &gvk.kind);
    let claim = defined_resource(&gvk, &names.plural);
    controllers.start(xrd, claim.clone(), xr);
    Ok(Offered::Yes(claim))
}

/// The claim kind the XRD's status says it offered.
fn offered_type(xrd_value: &Value) -> Option<(String, String)> {
    let t = xrd_value.pointer("/status/controllers/compositeResourceClaimType")?;
    Some((
        text(t, "/apiVersion")?.to_string(),
        text(t, "/kind")?.to_string(),
    ))
}

/// Deletes every claim of the kind the XRD offered, then stops the claim
/// controller and deletes the claim CRD. True once nothing is left; the
/// controller keeps running until then so it can release the claims.
pub async fn withdraw(
    controllers: &ClaimControllers,
    xrd: &CompositeResourceDefinition,
    xrd_value: &Value,
) -> Result<bool, OfferError> {
    let name = xrd.metadata.name();
    let kube = |what: &str| {
        let what = what.to_string();
        move |source| OfferError::Kube { what, source }
    };
    let Some((api_version, kind)) = offered_type(xrd_value) else {
        controllers.stop(name);
        return Ok(true);
    };
    let served = controllers.cluster.served_kind(&api_version, &kind).await?;
    let Some(served) = served else {
        controllers.stop(name);
        return Ok(true);
    };
    let client = controllers.cluster.client().clone();
    let claims: Api<DynamicObject> = Api::all_with(client.clone(), &served.resource);
    let items = match claims.list_metadata(&ListParams::default()).await {
        Ok(list) => list.items,
        // The claim CRD went away since discovery last looked; a kind that
        // is no longer served answers with a bare 404.
        Err(e) if is_status(&e, 404) => {
            controllers.cluster.forget_kind(&api_version, &kind);
            Vec::new()
        }
        Err(e) => return Err(kube("cannot list defined composite resource claims")(e)),
    };
    if !items.is_empty() {
        // A controller must run to release the claims' finalizers, also
        // after a restart that found the XRD no longer offering them.
        if let Some(xr) = controllers.xr_of(name).or_else(|| xr_resource(xrd)) {
            controllers.start(xrd, served.resource.clone(), xr);
        }
        for item in &items {
            let (Some(claim), Some(ns)) = (&item.metadata.name, &item.metadata.namespace) else {
                continue;
            };
            if item.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let api: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), ns, &served.resource);
            match api.delete(claim, &DeleteParams::background()).await {
                Ok(_) => {}
                Err(e) if is_status(&e, 404) => {}
                Err(e) => {
                    let what =
                        format!("cannot delete defined composite resource claim {ns}/{claim}");
                    return Err(kube(&what)(e));
                }
            }
        }
        return Ok(false);
    }
    controllers.stop(name);
    let crd_name = format!("{}.{}", served.resource.plural, served.resource.group);
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    let uid = xrd.metadata.uid.as_deref();
    if let Some(crd) = crds
        .get_opt(&crd_name)
        .await
        .map_err(kube("cannot get the claim CustomResourceDefinition"))?
    {
        let ours = crd
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.controller == Some(true) && Some(o.uid.as_str()) == uid);
        if ours && crd.metadata.deletion_timestamp.is_some() {
            return Ok(false);
        }
        if ours {
            crds.delete(&crd_name, &DeleteParams::background())
                .await
                .map_err(kube("cannot delete the claim CustomResourceDefinition"))?;
            controllers.cluster.forget_kind(&api_version, &kind);
            return Ok(false);
        }
    }
    Ok(true)
}

fn xr_resource(xrd: &CompositeResourceDefinition) -> Option<ApiResource> {
    let gvk = xrd.composite_gvk();
    (!gvk.version.is_empty()).then(|| defined_resource(&gvk, &xrd.spec.names.plural))
}

/// Records on the XRD what [`offer`] or [`withdraw`] found: the `Offered`
/// condition and `status.controllers.compositeResourceClaimType`.
pub fn offered_status(xrd_value: &mut Value, offered: &Offered, now: &str) {
    match offered {
        Offered::Yes(claim) => {
            set_condition(
                xrd_value,
                "Offered",
                "True",
                "WatchingCompositeResourceClaim",
                None,
                now,
            );
            if !xrd_value["status"]["controllers"].is_object() {
                xrd_value["status"]["controllers"] = json!({});
            }
            xrd_value["status"]["controllers"]["compositeResourceClaimType"] =
                json!({"apiVersion": claim.api_version, "kind": claim.kind});
        }
        // The claim type stays recorded until the claims are gone: it is
        // how the next reconcile finds them.
        Offered::Withdrawing => terminating(xrd_value, now),
        Offered::No => {
            if let Some(controllers) = xrd_value
                .pointer_mut("/status/controllers")
                .and_then(Value::as_object_mut)
            {
                controllers.remove("compositeResourceClaimType");
            }
            if let Some(list) = xrd_value
                .pointer_mut("/status/conditions")
                .and_then(Value::as_array_mut)
            {
                list.retain(|c| c["type"] != "Offered");
            }
        }
    }
}

/// Marks the XRD's claims as going away, if it offered any.
pub fn terminating(xrd_value: &mut Value, now: &str) {
    if offered_type(xrd_value).is_some() {
        set_condition(
            xrd_value,
            "Offered",
            "False",
            "TerminatingCompositeResourceClaim",
            None,
            now,
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::tests::resources;
    use super::*;
    use crate::vocabulary::object::condition;

    #[test]
    fn offered_status_follows_what_offer_found() {
        let (claim_r, _) = resources();
        let offered = json!({"status": {
            "controllers": {
                "compositeResourceType": {"apiVersion": "example.org/v1", "kind": "XApp"},
                "compositeResourceClaimType": {"apiVersion": "example.org/v1", "kind": "App"},
            },
            "conditions": [{"type": "Offered", "status": "True", "reason": "WatchingCompositeResourceClaim"}],
        }});
        let cases = [
            (
                Offered::Yes(claim_r),
                Some(("True", "WatchingCompositeResourceClaim")),
                true,
            ),
            (
                Offered::Withdrawing,
                Some(("False", "TerminatingCompositeResourceClaim")),
                true,
            ),
            (Offered::No, None, false),
        ];
        for (state, want_condition, want_type) in cases {
            let mut xrd = offered.clone();
            offered_status(&mut xrd, &state, "now");
            let got = condition(&xrd, "Offered")
                .map(|c| (c["status"].as_str().unwrap(), c["reason"].as_str().unwrap()));
            assert_eq!(got, want_condition, "{state:?}");
            assert_eq!(
                xrd.pointer("/status/controllers/compositeResourceClaimType")
                    .is_some(),
                want_type,
                "{state:?}"
            );
            assert!(
                xrd.pointer("/status/controllers/compositeResourceType")
                    .is_some()
            );
        }
    }
}
