//! One XRD's reconcile: validate it, serve its CRD, run the controller of
//! the XR kind it defines (and offer its claim kind), report `Synced` and
//! `Established`; on deletion, delete its XRs, then its CRD.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams};
use kube::runtime::controller::Action;
use plait_model::crd::{composite_crd, validate_claim_names};
use plait_model::{CompositeResourceDefinition, Manifest};
use plait_reconcile::{ObjectRef, SYNCED, set_condition};
use serde_json::{Value, json};

use super::context::XrdContext;
use super::{FINALIZER, XrdError};
use crate::access::install;
use crate::controllers::claim::{OfferError, Offered, offer};
use crate::controllers::kit::{self, ObjectError};
use crate::controllers::timing::now;
use crate::vocabulary::api::{FIELD_MANAGER, XRD_KIND, defined_resource, xrd_resource};
use crate::vocabulary::metrics::ReconcileResult;
use crate::vocabulary::object::{self, has_finalizer, is_status};

fn kube_error(xrd: &str, what: &'static str) -> impl FnOnce(kube::Error) -> XrdError {
    let object = ObjectError::kube(format!("XRD {xrd:?}"), what);
    move |source| object(source).into()
}

/// Reconciles one XRD.
pub async fn reconcile(
    object: Arc<DynamicObject>,
    ctx: Arc<XrdContext>,
) -> Result<Action, XrdError> {
    let target = Arc::clone(&object);
    kit::counted(ctx.as_ref(), &target, reconcile_xrd(object, &ctx)).await
}

async fn reconcile_xrd(
    object: Arc<DynamicObject>,
    ctx: &XrdContext,
) -> Result<(Action, ReconcileResult), XrdError> {
    let name = object.metadata.name.clone().unwrap_or_default();
    let mut value = object::to_value(&object, &ctx.policy.resource)
        .map_err(ObjectError::encode(format!("XRD {name:?}")))?;
    let client = ctx.shared.cluster.client().clone();
    let xrds: Api<DynamicObject> = Api::all_with(client.clone(), &xrd_resource());
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());

    if value.pointer("/metadata/deletionTimestamp").is_some() {
        let action = delete(ctx, &name, value, &xrds, &crds).await?;
        return Ok((action, ReconcileResult::Deleting));
    }

    let xrd = match CompositeResourceDefinition::from_value(value.clone()) {
        Ok(xrd) => xrd,
        Err(e) => return invalid(ctx, &name, value, &e.to_string()).await,
    };
    // Checked ahead of validation to report it as upstream does.
    if xrd.spec.claim_names.is_some()
        && let Err(e) = validate_claim_names(&xrd)
    {
        let message =
            format!("cannot render composite resource claim CustomResourceDefinition: {e}");
        return invalid(ctx, &name, value, &message).await;
    }
    if let Err(errors) = xrd.validate() {
        let message = format!("invalid XRD: {}", plait_model::render_errors(&errors));
        return invalid(ctx, &name, value, &message).await;
    }
    let gvk = xrd.composite_gvk();

    if !has_finalizer(&value, FINALIZER) {
        object::add_finalizer(
            &xrds,
            &crate::vocabulary::api::xrd_resource(),
            &value,
            FINALIZER,
        )
        .await
        .map_err(kube_error(&name, "cannot add finalizer"))?;
    }

    let crd = match composite_crd(&xrd) {
        Ok(crd) => crd,
        Err(e) => return invalid(ctx, &name, value, &e.to_string()).await,
    };
    if let Err(message) = serve_crd(ctx, &crd, &name).await {
        return invalid(ctx, &name, value, &message).await;
    }
    ctx.shared
        .cluster
        .forget_kind(&gvk.api_version(), &gvk.kind);
    let resource = defined_resource(&gvk, &xrd.spec.names.plural);
    ctx.start(&xrd, resource.clone(), xrd.is_namespaced());
    let offered = match offer::offer(&ctx.claims, &xrd, &value, resource).await {
        Ok(offered) => offered,
        Err(OfferError::Invalid(message)) => {
            return invalid(ctx, &name, value, &message).await;
        }
        Err(source) => return Err(XrdError::Offer { xrd: name, source }),
    };

    let read = value.clone();
    let now = now();
    set_condition(&mut value, SYNCED, "True", "ReconcileSuccess", None, &now);
    set_condition(
        &mut value,
        "Established",
        "True",
        "WatchingCompositeResource",
        None,
        &now,
    );
    if !value["status"]["controllers"].is_object() {
        value["status"]["controllers"] = json!({});
    }
    value["status"]["controllers"]["compositeResourceType"] =
        json!({"apiVersion": gvk.api_version(), "kind": gvk.kind});
    offer::offered_status(&mut value, &offered, &now);
    write_status(ctx, &value, &read).await?;
    ctx.policy
        .backoff
        .succeeded(&ObjectRef::of(&value).unwrap_or_else(|| xrd_ref(&name)));
    if offered == Offered::Withdrawing {
        return Ok((
            Action::requeue(Duration::from_secs(2)),
            ReconcileResult::Success,
        ));
    }
    Ok((
        Action::requeue(ctx.shared.timing.poll_interval),
        ReconcileResult::Success,
    ))
}

fn xrd_ref(name: &str) -> ObjectRef {
    ObjectRef {
        api_version: xrd_resource().api_version,
        kind: XRD_KIND.into(),
        namespace: None,
        name: name.into(),
    }
}

/// Applies the CRD that serves the XRD's kind and waits until it is
/// established; neither when it is established and this controller's last
/// apply of it sent the same CRD, with nobody changing it since.
async fn serve_crd(ctx: &XrdContext, crd: &Value, name: &str) -> Result<(), String> {
    let reference = ObjectRef {
        api_version: "apiextensions.k8s.io/v1".into(),
        kind: "CustomResourceDefinition".into(),
        namespace: None,
        name: name.into(),
    };
    let current = ctx
        .shared
        .cluster
        .get_async(&reference)
        .await
        .map_err(|e| format!("cannot read CustomResourceDefinition: {e}"))?;
    let unchanged = current.as_ref().is_some_and(|current| {
        ctx.shared
            .cluster
            .already_applied(crd, false, FIELD_MANAGER, current)
            && object::condition(current, "Established").is_some_and(|c| c["status"] == "True")
    });
    if unchanged {
        return Ok(());
    }
    ctx.shared
        .cluster
        .apply_async(crd, FIELD_MANAGER, false)
        .await
        .map_err(|e| format!("cannot apply CustomResourceDefinition: {e}"))?;
    install::established(
        ctx.shared.cluster.client(),
        name,
        install::ESTABLISH_TIMEOUT,
    )
    .await
    .map_err(|_| "waiting for the CustomResourceDefinition to be established".to_string())
}

/// Writes the XRD's status, unless this controller last wrote exactly that
/// status and the XRD as `read` still has it.
async fn write_status(ctx: &XrdContext, xrd: &Value, read: &Value) -> Result<(), XrdError> {
    if ctx
        .shared
        .cluster
        .already_applied(xrd, true, FIELD_MANAGER, read)
    {
        return Ok(());
    }
    let name = xrd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    ctx.shared
        .cluster
        .apply_async(xrd, FIELD_MANAGER, true)
        .await
        .map_err(ObjectError::cluster(
            format!("XRD {name:?}"),
            "cannot write its status",
        ))?;
    Ok(())
}

/// Reports an XRD that cannot be served as it stands, naming what is wrong.
async fn invalid(
    ctx: &XrdContext,
    name: &str,
    mut value: Value,
    message: &str,
) -> Result<(Action, ReconcileResult), XrdError> {
    tracing::warn!(xrd = name, message, "XRD not established");
    ctx.shared.cluster.publish(plait_reconcile::Event {
        regarding: xrd_ref(name),
        event_type: plait_reconcile::EventType::Warning,
        reason: "ReconcileError".into(),
        message: message.into(),
    });
    let read = value.clone();
    set_condition(
        &mut value,
        SYNCED,
        "False",
        "ReconcileError",
        Some(message),
        &now(),
    );
    write_status(ctx, &value, &read).await?;
    Ok((
        Action::requeue(ctx.shared.timing.poll_interval.min(Duration::from_secs(30))),
        ReconcileResult::NotSynced,
    ))
}

/// Deletes every XR of the kind, then stops its controller, removes the CRD
/// and releases the XRD.
async fn delete(
    ctx: &XrdContext,
    name: &str,
    mut value: Value,
    xrds: &Api<DynamicObject>,
    crds: &Api<CustomResourceDefinition>,
) -> Result<Action, XrdError> {
    if !has_finalizer(&value, FINALIZER) {
        return Ok(Action::await_change());
    }
    let read = value.clone();
    set_condition(
        &mut value,
        "Established",
        "False",
        "TerminatingCompositeResource",
        None,
        &now(),
    );
    offer::terminating(&mut value, &now());
    write_status(ctx, &value, &read).await?;

    // Claims go first: deleting them deletes their XRs.
    let claims_gone = match CompositeResourceDefinition::from_value(value.clone()) {
        Ok(xrd) => offer::withdraw(&ctx.claims, &xrd, &value)
            .await
            .map_err(|source| XrdError::Offer {
                xrd: name.into(),
                source,
            })?,
        Err(_) => {
            ctx.claims.stop(name);
            true
        }
    };
    if !claims_gone {
        return Ok(Action::requeue(Duration::from_secs(2)));
    }

    if let Some(crd) = crds
        .get_opt(name)
        .await
        .map_err(kube_error(name, "cannot get its CustomResourceDefinition"))?
    {
        let served = crd.spec.versions.iter().find(|v| v.storage);
        if let Some(version) = served {
            let resource = ApiResource {
                group: crd.spec.group.clone(),
                version: version.name.clone(),
                api_version: format!("{}/{}", crd.spec.group, version.name),
                kind: crd.spec.names.kind.clone(),
                plural: crd.spec.names.plural.clone(),
            };
            let xrs: Api<DynamicObject> =
                Api::all_with(ctx.shared.cluster.client().clone(), &resource);
            let list = xrs
                .list_metadata(&ListParams::default())
                .await
                .map_err(kube_error(name, "cannot list its composite resources"))?;
            if !list.items.is_empty() {
                for item in &list.items {
                    let (Some(xr_name), ns) = (
                        item.metadata.name.as_deref(),
                        item.metadata.namespace.as_deref(),
                    ) else {
                        continue;
                    };
                    if item.metadata.deletion_timestamp.is_some() {
                        continue;
                    }
                    let api = object::api_for(ctx.shared.cluster.client(), &resource, ns);
                    match api.delete(xr_name, &DeleteParams::background()).await {
                        Ok(_) => {}
                        Err(e) if is_status(&e, 404) => {}
                        Err(e) => {
                            return Err(kube_error(name, "cannot delete a composite resource")(e));
                        }
                    }
                }
                // The XR controller keeps running to release them.
                return Ok(Action::requeue(Duration::from_secs(2)));
            }
        }
        ctx.stop_controller(name);
        crds.delete(name, &DeleteParams::background())
            .await
            .map_err(kube_error(
                name,
                "cannot delete its CustomResourceDefinition",
            ))?;
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    ctx.stop_controller(name);
    match object::remove_finalizer(xrds, &value, FINALIZER).await {
        Ok(_) => {}
        Err(e) if is_status(&e, 404) => {}
        Err(e) => return Err(kube_error(name, "cannot remove finalizer")(e)),
    }
    Ok(Action::await_change())
}
