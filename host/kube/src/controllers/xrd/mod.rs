//! The XRD controller: turns each XRD into a CRD and runs a controller for
//! the XR kind it defines, for as long as the XRD exists.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams};
use kube::runtime::controller::Action;
use plait_model::{CompositeResourceDefinition, Manifest};
use plait_reconcile::{ObjectRef, SYNCED, set_condition};
use serde_json::{Value, json};

use crate::access::install;
use crate::clusters::cluster::KubeCluster;
use crate::clusters::fence::Shards;
use crate::clusters::tenants::TenantClusters;
use crate::controllers::children::Children;
use crate::controllers::claim::{ClaimControllers, OfferError, Offered, offer};
use crate::controllers::composite::{self, XrContext, XrShared};
use crate::controllers::fair_queue::FairQueue;
use crate::controllers::function::Functions;
use crate::controllers::kit::{self, Controlled, ObjectError, Policy, ReconcileFailure};
use crate::controllers::timing::{Timing, now};
use crate::controllers::watches::ComposedWatches;
use crate::stores::catalog::Catalog;
use crate::vocabulary::api::{FIELD_MANAGER, XRD_KIND, defined_resource, xrd_resource};
use crate::vocabulary::metrics::ReconcileResult;
use crate::vocabulary::object::{self, has_finalizer, is_status};
use plait_model::crd::{composite_crd, validate_claim_names};

pub const FINALIZER: &str = "defined.apiextensions.crossplane.io";

#[derive(Debug, thiserror::Error)]
pub enum XrdError {
    #[error(transparent)]
    Object(#[from] ObjectError),
    #[error("XRD {xrd:?}: {source}")]
    Offer {
        xrd: String,
        #[source]
        source: OfferError,
    },
}

impl ReconcileFailure for XrdError {
    fn metric_label(&self) -> &'static str {
        match self {
            XrdError::Object(error) => error.metric_label(),
            XrdError::Offer { .. } => "offer",
        }
    }
}

/// The XRD controller's context: what it shares with the XR controllers it
/// starts, and the claim and XR controllers it runs.
pub struct XrdContext {
    /// What every XR controller shares.
    pub shared: XrShared,
    /// The claim controllers of XRDs that offer claims.
    pub claims: ClaimControllers,
    /// The XR controllers, one per XRD, each serving its XR kind.
    xrs: Children<ApiResource, XrContext>,
    policy: Policy,
}

impl Controlled for XrdContext {
    fn policy(&self) -> &Policy {
        &self.policy
    }
}

impl XrdContext {
    pub fn new(
        cluster: KubeCluster,
        functions: Functions,
        catalog: Arc<Catalog>,
        timing: Timing,
        tenants: Option<Arc<TenantClusters>>,
        shards: Option<Arc<Shards>>,
    ) -> XrdContext {
        let watches = Arc::new(ComposedWatches::new(cluster.shared().composed.clone()));
        let fair_queue = FairQueue::new(timing.fair_queue_limits());
        XrdContext {
            claims: ClaimControllers::new(
                cluster.clone(),
                timing.clone(),
                shards.clone(),
                fair_queue.clone(),
            ),
            policy: Policy::new(xrd_resource(), &timing),
            shared: XrShared {
                cluster,
                tenants,
                functions,
                catalog,
                watches,
                timing,
                shards,
                fair_queue,
            },
            xrs: Children::new("XR controller"),
        }
    }

    /// Keeps the controller of the XR kind `xrd` defines running, serving
    /// `resource`; a running one only takes in the XRD.
    fn start(&self, xrd: &CompositeResourceDefinition, resource: ApiResource, namespaced: bool) {
        let replaced = self.xrs.ensure(
            xrd.metadata.name(),
            resource.clone(),
            |running| {
                if let Ok(mut x) = running.xrd.write() {
                    *x = xrd.clone();
                }
            },
            || Arc::new(XrContext::new(&self.shared, xrd.clone(), resource.clone())),
            |context, stop| composite::run(context, namespaced, stop),
        );
        // The previous controller served another version or kind: its
        // route goes, unless the new controller took the same one over.
        if let Some(previous) = replaced
            && (previous.group != resource.group || previous.kind != resource.kind)
        {
            self.shared.watches.unroute(&previous.group, &previous.kind);
        }
    }

    fn stop_controller(&self, xrd: &str) {
        if let Some(resource) = self.xrs.stop(xrd) {
            self.shared.watches.unroute(&resource.group, &resource.kind);
        }
    }

    /// Stops every XR controller and watch, letting running reconciles finish.
    pub async fn shutdown(&self) {
        self.claims.shutdown().await;
        for resource in self.xrs.shutdown().await {
            self.shared.watches.unroute(&resource.group, &resource.kind);
        }
        self.shared.watches.stop();
    }
}

fn kube_error(xrd: &str, what: &'static str) -> impl FnOnce(kube::Error) -> XrdError {
    let object = ObjectError::kube(format!("XRD {xrd:?}"), what);
    move |source| object(source).into()
}

/// Reconciles one XRD.
pub async fn reconcile(
    object: Arc<DynamicObject>,
    manager: Arc<XrdContext>,
) -> Result<Action, XrdError> {
    let target = Arc::clone(&object);
    kit::counted(manager.as_ref(), &target, reconcile_xrd(object, &manager)).await
}

async fn reconcile_xrd(
    object: Arc<DynamicObject>,
    manager: &XrdContext,
) -> Result<(Action, ReconcileResult), XrdError> {
    let name = object.metadata.name.clone().unwrap_or_default();
    let mut value = object::to_value(&object, &manager.policy.resource)
        .map_err(ObjectError::encode(format!("XRD {name:?}")))?;
    let client = manager.shared.cluster.client().clone();
    let xrds: Api<DynamicObject> = Api::all_with(client.clone(), &xrd_resource());
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());

    if value.pointer("/metadata/deletionTimestamp").is_some() {
        let action = delete(manager, &name, value, &xrds, &crds).await?;
        return Ok((action, ReconcileResult::Deleting));
    }

    let xrd = match CompositeResourceDefinition::from_value(value.clone()) {
        Ok(xrd) => xrd,
        Err(e) => return invalid(manager, &name, value, &e.to_string()).await,
    };
    // Checked ahead of validation to report it as upstream does.
    if xrd.spec.claim_names.is_some()
        && let Err(e) = validate_claim_names(&xrd)
    {
        let message =
            format!("cannot render composite resource claim CustomResourceDefinition: {e}");
        return invalid(manager, &name, value, &message).await;
    }
    if let Err(errors) = xrd.validate() {
        let message = format!("invalid XRD: {}", plait_model::render_errors(&errors));
        return invalid(manager, &name, value, &message).await;
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
        Err(e) => return invalid(manager, &name, value, &e.to_string()).await,
    };
    if let Err(message) = serve_crd(manager, &crd, &name).await {
        return invalid(manager, &name, value, &message).await;
    }
    manager
        .shared
        .cluster
        .forget_kind(&gvk.api_version(), &gvk.kind);
    let resource = defined_resource(&gvk, &xrd.spec.names.plural);
    manager.start(&xrd, resource.clone(), xrd.is_namespaced());
    let offered = match offer::offer(&manager.claims, &xrd, &value, resource).await {
        Ok(offered) => offered,
        Err(OfferError::Invalid(message)) => {
            return invalid(manager, &name, value, &message).await;
        }
        Err(source) => return Err(XrdError::Offer { xrd: name, source }),
    };

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
    write_status(manager, &value).await?;
    manager
        .policy
        .backoff
        .succeeded(&ObjectRef::of(&value).unwrap_or_else(|| xrd_ref(&name)));
    if offered == Offered::Withdrawing {
        return Ok((
            Action::requeue(Duration::from_secs(2)),
            ReconcileResult::Success,
        ));
    }
    Ok((
        Action::requeue(manager.shared.timing.poll_interval),
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
async fn serve_crd(manager: &XrdContext, crd: &Value, name: &str) -> Result<(), String> {
    let reference = ObjectRef {
        api_version: "apiextensions.k8s.io/v1".into(),
        kind: "CustomResourceDefinition".into(),
        namespace: None,
        name: name.into(),
    };
    let current = manager
        .shared
        .cluster
        .get_async(&reference)
        .await
        .map_err(|e| format!("cannot read CustomResourceDefinition: {e}"))?;
    let unchanged = current.as_ref().is_some_and(|current| {
        manager
            .shared
            .cluster
            .already_applied(crd, false, FIELD_MANAGER, current)
            && object::condition(current, "Established").is_some_and(|c| c["status"] == "True")
    });
    if unchanged {
        return Ok(());
    }
    manager
        .shared
        .cluster
        .apply_async(crd, FIELD_MANAGER, false)
        .await
        .map_err(|e| format!("cannot apply CustomResourceDefinition: {e}"))?;
    install::established(
        manager.shared.cluster.client(),
        name,
        install::ESTABLISH_TIMEOUT,
    )
    .await
    .map_err(|_| "waiting for the CustomResourceDefinition to be established".to_string())
}

/// Writes the XRD's status, unless this controller last wrote exactly that
/// status and the XRD has not changed since.
async fn write_status(manager: &XrdContext, xrd: &Value) -> Result<(), XrdError> {
    if manager
        .shared
        .cluster
        .already_applied(xrd, true, FIELD_MANAGER, xrd)
    {
        return Ok(());
    }
    let name = xrd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    manager
        .shared
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
    manager: &XrdContext,
    name: &str,
    mut value: Value,
    message: &str,
) -> Result<(Action, ReconcileResult), XrdError> {
    tracing::warn!(xrd = name, message, "XRD not established");
    manager.shared.cluster.publish(plait_reconcile::Event {
        regarding: xrd_ref(name),
        event_type: plait_reconcile::EventType::Warning,
        reason: "ReconcileError".into(),
        message: message.into(),
    });
    set_condition(
        &mut value,
        SYNCED,
        "False",
        "ReconcileError",
        Some(message),
        &now(),
    );
    write_status(manager, &value).await?;
    Ok((
        Action::requeue(
            manager
                .shared
                .timing
                .poll_interval
                .min(Duration::from_secs(30)),
        ),
        ReconcileResult::NotSynced,
    ))
}

/// Deletes every XR of the kind, then stops its controller, removes the CRD
/// and releases the XRD.
async fn delete(
    manager: &XrdContext,
    name: &str,
    mut value: Value,
    xrds: &Api<DynamicObject>,
    crds: &Api<CustomResourceDefinition>,
) -> Result<Action, XrdError> {
    if !has_finalizer(&value, FINALIZER) {
        return Ok(Action::await_change());
    }
    set_condition(
        &mut value,
        "Established",
        "False",
        "TerminatingCompositeResource",
        None,
        &now(),
    );
    offer::terminating(&mut value, &now());
    write_status(manager, &value).await?;

    // Claims go first: deleting them deletes their XRs.
    let claims_gone = match CompositeResourceDefinition::from_value(value.clone()) {
        Ok(xrd) => offer::withdraw(&manager.claims, &xrd, &value)
            .await
            .map_err(|source| XrdError::Offer {
                xrd: name.into(),
                source,
            })?,
        Err(_) => {
            manager.claims.stop(name);
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
                Api::all_with(manager.shared.cluster.client().clone(), &resource);
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
                    let api = object::api_for(manager.shared.cluster.client(), &resource, ns);
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
        manager.stop_controller(name);
        crds.delete(name, &DeleteParams::background())
            .await
            .map_err(kube_error(
                name,
                "cannot delete its CustomResourceDefinition",
            ))?;
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    manager.stop_controller(name);
    match object::remove_finalizer(xrds, &value, FINALIZER).await {
        Ok(_) => {}
        Err(e) if is_status(&e, 404) => {}
        Err(e) => return Err(kube_error(name, "cannot remove finalizer")(e)),
    }
    Ok(Action::await_change())
}
