//! Composite resource claims: the controller that binds each claim to an
//! XR, keeps the two in sync and copies the XR's connection Secret into the
//! claim's namespace. Offering the claim kind is [`offer`]; how claim and XR
//! map onto each other is [`binding`].
//!
//! Matches upstream's `claim` reconciler with the server-side syncer.

mod binding;
mod connection;
pub mod offer;

use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::Store;
use kube::runtime::{Controller, controller, watcher};
use plait_model::CompositeResourceDefinition;
use plait_pipeline::Tenant;
use plait_reconcile::{Event, EventType, ObjectRef, READY, SYNCED, set_condition};
use serde_json::{Value, json};

use crate::access::client::applied;
use crate::adapter::cluster::KubeCluster;
use crate::adapter::fence::{self, Shards, shard_taken};
use crate::controllers::admission::{self, Abandoned, Admission};
use crate::controllers::children::Children;
use crate::controllers::kit::{self, Controlled, Lifecycle, ObjectError, Policy, ReconcileFailure};
use crate::controllers::timing::{Timing, now};
use crate::vocabulary::api::RECONCILE_PAUSED;
use crate::vocabulary::metrics::{ReconcileResult, metrics};
use crate::vocabulary::object::{self, condition, is_status, put_condition, text};

pub use binding::{claim_from_xr, desired_xr, status_from_xr};
use binding::{claim_ref, xr_name};
pub use offer::{OfferError, Offered};

pub const FINALIZER: &str = "finalizer.apiextensions.crossplane.io";
/// The field manager of what the claim controller writes, as upstream.
pub const CLAIM_FIELD_MANAGER: &str = "apiextensions.crossplane.io/claim";

/// How often a claim waiting on its XR's deletion looks again.
const DELETE_POLL: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error(transparent)]
    Object(#[from] ObjectError),
    #[error("reconcile of claim {claim} {abandoned}")]
    TimedOut { claim: String, abandoned: Abandoned },
}

impl ReconcileFailure for ClaimError {
    fn metric_label(&self) -> &'static str {
        match self {
            ClaimError::Object(error) => error.metric_label(),
            ClaimError::TimedOut { .. } => "timeout",
        }
    }
}

/// What every claim of one kind shares.
pub struct ClaimContext {
    pub cluster: KubeCluster,
    pub timing: Timing,
    pub xrd: RwLock<CompositeResourceDefinition>,
    pub claim: ApiResource,
    pub xr: ApiResource,
    policy: Policy,
    /// The shards this replica reconciles, when claims are sharded.
    shards: Option<Arc<Shards>>,
    /// The queue every XR and claim reconcile waits in for its turn.
    admission: Arc<Admission>,
    /// The claims as the controller's watch last saw them, once it runs.
    store: OnceLock<Store<DynamicObject>>,
}

impl ClaimContext {
    /// `claim` as the watch has it now: it may have changed, or gone,
    /// while its reconcile waited for its turn.
    fn current(&self, claim: Arc<DynamicObject>) -> Option<Arc<DynamicObject>> {
        let Some(store) = self.store.get() else {
            return Some(claim);
        };
        store.get(&kube::runtime::reflector::ObjectRef::from_obj_with(
            claim.as_ref(),
            self.claim.clone(),
        ))
    }

    fn claim_value(&self, object: &DynamicObject) -> Result<Value, ClaimError> {
        self.value(object, &self.claim)
    }

    fn xr_value(&self, object: &DynamicObject) -> Result<Value, ClaimError> {
        self.value(object, &self.xr)
    }

    fn value(&self, object: &DynamicObject, resource: &ApiResource) -> Result<Value, ClaimError> {
        Ok(
            object::to_value(object, resource).map_err(ObjectError::encode(format!(
                "claim {}",
                object.metadata.name.clone().unwrap_or_default()
            )))?,
        )
    }
}

impl ClaimContext {
    /// Reads claims from `store`, the controller's watch cache, from now on.
    fn watch_with(&self, store: Store<DynamicObject>) {
        // Set once, when the controller starts.
        let _ = self.store.set(store);
    }
}

impl Controlled for ClaimContext {
    fn policy(&self) -> &Policy {
        &self.policy
    }
}

/// The running claim controllers, by XRD name; each serves a claim kind and
/// the XR kind it binds.
pub struct ClaimControllers {
    cluster: KubeCluster,
    timing: Timing,
    shards: Option<Arc<Shards>>,
    admission: Arc<Admission>,
    children: Children<(ApiResource, ApiResource), ClaimContext>,
}

impl ClaimControllers {
    pub fn new(
        cluster: KubeCluster,
        timing: Timing,
        shards: Option<Arc<Shards>>,
        admission: Arc<Admission>,
    ) -> ClaimControllers {
        ClaimControllers {
            cluster,
            timing,
            shards,
            admission,
            children: Children::new("claim controller"),
        }
    }

    fn xr_of(&self, xrd: &str) -> Option<ApiResource> {
        self.children.get(xrd).map(|((_, xr), _)| xr)
    }

    /// Starts the claim controller for `xrd`, or refreshes the XRD it sees
    /// when one already runs for the same kinds.
    pub fn start(&self, xrd: &CompositeResourceDefinition, claim: ApiResource, xr: ApiResource) {
        let (cluster, timing, shards, admission) =
            (&self.cluster, &self.timing, &self.shards, &self.admission);
        let (claim_for_context, xr_for_context) = (claim.clone(), xr.clone());
        self.children.ensure(
            xrd.metadata.name(),
            (claim.clone(), xr.clone()),
            |running| {
                if let Ok(mut x) = running.xrd.write() {
                    *x = xrd.clone();
                }
            },
            move || {
                Arc::new(ClaimContext {
                    cluster: cluster.clone(),
                    timing: timing.clone(),
                    xrd: RwLock::new(xrd.clone()),
                    policy: Policy::new(claim_for_context.clone(), timing),
                    claim: claim_for_context,
                    xr: xr_for_context,
                    shards: shards.clone(),
                    admission: admission.clone(),
                    store: OnceLock::new(),
                })
            },
            |context, stop| {
                let client = cluster.client().clone();
                let claims: Api<DynamicObject> = Api::all_with(client.clone(), &claim);
                let xrs: Api<DynamicObject> = Api::all_with(client, &xr);
                let claim_for_map = claim.clone();
                // An XR change (readiness, status, deletion) brings its claim back.
                // Every claim that is due goes to its reconcile at once,
                // which waits its turn in the fair admission queue.
                let controller =
                    Controller::new_with(claims, watcher::Config::default(), claim.clone())
                        .with_config(controller::Config::default().concurrency(0));
                context.watch_with(controller.store());
                let taken = shard_taken(shards.as_deref(), controller.store(), claim);
                let controller = controller.reconcile_on(taken).watches_with(
                    xrs,
                    xr,
                    watcher::Config::default(),
                    move |xr: DynamicObject| {
                        let claim_ref = &xr.data["spec"]["claimRef"];
                        let ours = claim_ref["kind"] == claim_for_map.kind.as_str()
                            && claim_ref["apiVersion"] == claim_for_map.api_version.as_str();
                        let target = match (
                            ours,
                            text(claim_ref, "/name"),
                            text(claim_ref, "/namespace"),
                        ) {
                            (true, Some(name), Some(ns)) => Some(
                                kube::runtime::reflector::ObjectRef::new_with(
                                    name,
                                    claim_for_map.clone(),
                                )
                                .within(ns),
                            ),
                            _ => None,
                        };
                        target.into_iter()
                    },
                );
                kit::run(controller, reconcile, context, stop)
            },
        );
    }

    /// Stops the claim controller for `xrd`, if one runs.
    pub fn stop(&self, xrd: &str) {
        self.children.stop(xrd);
    }

    /// Stops every claim controller, letting running reconciles finish.
    pub async fn shutdown(&self) {
        self.children.shutdown().await;
    }
}

/// Reconciles one claim once it is its turn; its tenant is its namespace.
pub async fn reconcile(
    object: Arc<DynamicObject>,
    ctx: Arc<ClaimContext>,
) -> Result<Action, ClaimError> {
    let tenant = Tenant::of_namespace(object.metadata.namespace.as_deref());
    let name = object.metadata.name.clone().unwrap_or_default();
    let shared = &ctx;
    let ran = ctx
        .admission
        .run(&tenant, ctx.timing.abandon_after(), |_permit| async move {
            let Some(object) = shared.current(object) else {
                // Gone while it waited: nothing to do.
                return Ok(Action::await_change());
            };
            let target = Arc::clone(&object);
            let admitted = fence::admitted(
                shared.shards.as_deref(),
                &target,
                reconcile_claim(object, shared),
            );
            kit::counted(shared.as_ref(), &target, admitted).await
        })
        .await;
    ran.unwrap_or_else(|abandoned| {
        metrics().reconcile_failed(&ctx.claim.kind, "timeout");
        let claim = format!("{tenant}/{name}");
        tracing::warn!(claim, %abandoned, "reconcile abandoned");
        Err(ClaimError::TimedOut { claim, abandoned })
    })
}

async fn reconcile_claim(
    object: Arc<DynamicObject>,
    ctx: &ClaimContext,
) -> Result<(Action, ReconcileResult), ClaimError> {
    let mut claim = ctx.claim_value(&object)?;
    let Some(reference) = ObjectRef::of(&claim) else {
        return Ok((Action::await_change(), ReconcileResult::Skipped));
    };
    let Some(xrd) = ctx.xrd.read().ok().map(|x| x.clone()) else {
        return Ok((Action::await_change(), ReconcileResult::Skipped));
    };
    let claims = Api::<DynamicObject>::namespaced_with(
        ctx.cluster.client().clone(),
        reference.namespace.as_deref().unwrap_or_default(),
        &ctx.claim,
    );
    let xrs = Api::<DynamicObject>::all_with(ctx.cluster.client().clone(), &ctx.xr);
    let reference_ref = &reference;
    let bind_failed = move |claim: Value, message: String| {
        failed(ctx, claim, reference_ref, "BindCompositeResource", message)
    };

    let lifecycle = Lifecycle::of(&claim, FINALIZER);
    if lifecycle == Lifecycle::Paused {
        event(
            ctx,
            &reference,
            EventType::Normal,
            "ReconciliationPaused",
            RECONCILE_PAUSED,
        );
        set_condition(
            &mut claim,
            SYNCED,
            "False",
            "ReconcilePaused",
            Some(RECONCILE_PAUSED),
            &now(),
        );
        write_status(ctx, &claim).await?;
        return Ok((Action::await_change(), ReconcileResult::Paused));
    }

    let mut xr = None;
    if let Some(name) = text(&claim, "/spec/resourceRef/name") {
        admission::stage("reading its XR");
        match xrs.get_opt(name).await {
            Ok(found) => xr = found.map(|x| ctx.xr_value(&x)).transpose()?,
            Err(e) => {
                let message = format!("cannot get bound composite resource: {e}");
                return bind_failed(claim, message).await;
            }
        }
    }
    let own_ref = claim_ref(&claim, &ctx.claim);
    if let Some(x) = &xr
        && let Some(bound) = x.pointer("/spec/claimRef").filter(|r| !r.is_null())
        && *bound != own_ref
    {
        let message = format!(
            "refusing to operate on composite resource {:?} that is not bound to this claim: bound to claim {:?}",
            text(x, "/metadata/name").unwrap_or_default(),
            text(bound, "/name").unwrap_or_default(),
        );
        bind_failed(claim, message).await?;
        // A human has to fix the reference; the claim's next edit brings it back.
        return Ok((Action::await_change(), ReconcileResult::NotSynced));
    }

    match lifecycle {
        Lifecycle::Released => return Ok((Action::await_change(), ReconcileResult::Deleting)),
        Lifecycle::Deleting => {
            admission::stage("deleting its XR");
            return delete(ctx, &claims, &xrs, claim, xr, &reference).await;
        }
        _ => {}
    }

    if lifecycle == Lifecycle::Unfinalized {
        admission::stage("adding its finalizer");
        match object::add_finalizer(&claims, &ctx.claim, &claim, FINALIZER).await {
            Ok(patched) => claim = ctx.claim_value(&patched)?,
            Err(e) if object::is_stale_write(&e) => {
                return Ok(kit::conflicted(ctx, &reference));
            }
            Err(e) => {
                let message = format!("cannot add finalizer to claim: {e}");
                return bind_failed(claim, message).await;
            }
        }
    }

    let before = xr
        .as_ref()
        .and_then(|x| x.pointer("/spec/claimRef"))
        .cloned();
    let name = match text(&claim, "/spec/resourceRef/name") {
        Some(n) => n.to_string(),
        None => match free_xr_name(&xrs, &claim, &own_ref).await {
            Ok(n) => n,
            Err(e) => {
                let message = format!(
                    "cannot bind and sync claim with composite resource: cannot generate a name for composite resource: {e}"
                );
                return bind_failed(claim, message).await;
            }
        },
    };
    let desired = desired_xr(&claim, xr.as_ref(), &name, &xrd, &ctx.claim, &ctx.xr);
    let bound_view = xr.clone().unwrap_or_else(|| desired.clone());
    // The claim records its XR before the XR exists, so a crash in between
    // cannot leak an XR the claim does not know about.
    let claim_patch = claim_from_xr(&claim, &bound_view, &xrd, &ctx.xr);
    admission::stage("binding it to its XR");
    let params = PatchParams::apply(CLAIM_FIELD_MANAGER).force();
    let claim_name = reference.name.clone();
    match claims
        .patch(
            &claim_name,
            &params,
            &Patch::Apply(&applied(&claim_patch, false)),
        )
        .await
    {
        Ok(updated) => claim = ctx.claim_value(&updated)?,
        Err(e) if is_status(&e, 409) => return Ok(kit::conflicted(ctx, &reference)),
        Err(e) => {
            let message = format!(
                "cannot bind and sync claim with composite resource: cannot update composite resource claim: {e}"
            );
            return bind_failed(claim, message).await;
        }
    }
    let xr = match xrs
        .patch(&name, &params, &Patch::Apply(&applied(&desired, false)))
        .await
    {
        Ok(x) => ctx.xr_value(&x)?,
        Err(e) => {
            let message = format!(
                "cannot bind and sync claim with composite resource: cannot apply composite resource {name:?}: {e}"
            );
            return bind_failed(claim, message).await;
        }
    };
    if before.as_ref() != Some(&own_ref) && xr.pointer("/spec/claimRef") == Some(&own_ref) {
        event(
            ctx,
            &reference,
            EventType::Normal,
            "BindCompositeResource",
            "Successfully bound composite resource",
        );
    }

    claim["status"] = status_from_xr(&claim, &xr);
    let now = now();
    set_condition(&mut claim, SYNCED, "True", "ReconcileSuccess", None, &now);
    let copied: Vec<Value> = xr
        .pointer("/status/claimConditionTypes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(|t| condition(&xr, t).cloned())
        .collect();
    for c in &copied {
        put_condition(&mut claim, c);
    }

    if condition(&xr, READY).is_none_or(|c| c["status"] != "True") {
        event(
            ctx,
            &reference,
            EventType::Normal,
            "BindCompositeResource",
            "Composite resource is not yet ready",
        );
        set_condition(
            &mut claim,
            READY,
            "False",
            "Waiting",
            Some("Claim is waiting for composite resource to become Ready"),
            &now,
        );
        write_status(ctx, &claim).await?;
        return Ok((
            Action::requeue(ctx.timing.poll_interval),
            ReconcileResult::Success,
        ));
    }

    admission::stage("propagating its connection Secret");
    match connection::propagate_connection(ctx, &claim, &xr).await {
        Ok(true) => {
            claim["status"]["connectionDetails"] = json!({"lastPublishedTime": now});
            event(
                ctx,
                &reference,
                EventType::Normal,
                "PropagateConnectionSecret",
                "Successfully propagated connection details from composite resource",
            );
        }
        Ok(false) => {}
        Err(e) => {
            let message =
                format!("cannot propagate connection details from composite resource: {e}");
            return failed(ctx, claim, &reference, "PropagateConnectionSecret", message).await;
        }
    }
    set_condition(&mut claim, READY, "True", "Available", None, &now);
    write_status(ctx, &claim).await?;
    ctx.policy.backoff.succeeded(&reference);
    Ok((
        Action::requeue(ctx.timing.poll_interval),
        ReconcileResult::Success,
    ))
}

/// A name for a new XR that no XR bound to another claim has.
async fn free_xr_name(
    xrs: &Api<DynamicObject>,
    claim: &Value,
    own_ref: &Value,
) -> Result<String, kube::Error> {
    let claim_name = text(claim, "/metadata/name").unwrap_or_default();
    let uid = text(claim, "/metadata/uid").unwrap_or_default();
    let mut attempt = 0;
    loop {
        let candidate = xr_name(claim_name, uid, attempt);
        let taken = xrs
            .get_opt(&candidate)
            .await?
            .is_some_and(|x| x.data["spec"]["claimRef"] != *own_ref);
        if !taken || attempt >= 8 {
            return Ok(candidate);
        }
        attempt += 1;
    }
}

/// Deletes the XR with the claim's `compositeDeletePolicy`, then lets the
/// claim go. With `Foreground` the claim stays until the XR is gone.
async fn delete(
    ctx: &ClaimContext,
    claims: &Api<DynamicObject>,
    xrs: &Api<DynamicObject>,
    mut claim: Value,
    xr: Option<Value>,
    reference: &ObjectRef,
) -> Result<(Action, ReconcileResult), ClaimError> {
    set_condition(&mut claim, READY, "False", "Deleting", None, &now());
    let foreground = match text(&claim, "/spec/compositeDeletePolicy") {
        Some(p) => p == "Foreground",
        None => ctx
            .xrd
            .read()
            .map(|x| {
                x.default_composite_delete_policy()
                    == plait_model::CompositeDeletePolicy::Foreground
            })
            .unwrap_or(false),
    };
    if let Some(xr) = &xr {
        let name = text(xr, "/metadata/name").unwrap_or_default();
        if foreground && xr.pointer("/metadata/deletionTimestamp").is_some() {
            write_status(ctx, &claim).await?;
            return Ok((Action::requeue(DELETE_POLL), ReconcileResult::Deleting));
        }
        let params = if foreground {
            DeleteParams::foreground()
        } else {
            DeleteParams::background()
        };
        match xrs.delete(name, &params).await {
            Ok(_) => {}
            Err(e) if is_status(&e, 404) => {}
            Err(e) => {
                let message = format!("cannot delete bound composite resource: {e}");
                return failed(ctx, claim, reference, "DeleteCompositeResource", message).await;
            }
        }
        if foreground {
            write_status(ctx, &claim).await?;
            return Ok((Action::requeue(DELETE_POLL), ReconcileResult::Deleting));
        }
    }
    event(
        ctx,
        reference,
        EventType::Normal,
        "DeleteCompositeResource",
        "Successfully deleted composite resource",
    );
    match object::remove_finalizer(claims, &claim, FINALIZER).await {
        Ok(_) => {
            ctx.policy.backoff.succeeded(reference);
            Ok((Action::await_change(), ReconcileResult::Deleting))
        }
        Err(e) if is_status(&e, 404) => Ok((Action::await_change(), ReconcileResult::Deleting)),
        Err(e) if object::is_stale_write(&e) => Ok(kit::conflicted(ctx, reference)),
        Err(e) => {
            let message = format!("cannot remove finalizer from claim: {e}");
            failed(ctx, claim, reference, "DeleteCompositeResource", message).await
        }
    }
}

fn event(
    ctx: &ClaimContext,
    claim: &ObjectRef,
    event_type: EventType,
    reason: &str,
    message: &str,
) {
    ctx.cluster.publish(Event {
        regarding: claim.clone(),
        event_type,
        reason: reason.into(),
        message: message.into(),
    });
}

/// Reports a failed reconcile on the claim's `Synced` condition and in an event.
async fn failed(
    ctx: &ClaimContext,
    mut claim: Value,
    reference: &ObjectRef,
    reason: &str,
    message: String,
) -> Result<(Action, ReconcileResult), ClaimError> {
    tracing::info!(claim = %reference, error = %message, "claim not synced");
    event(ctx, reference, EventType::Warning, reason, &message);
    set_condition(
        &mut claim,
        SYNCED,
        "False",
        "ReconcileError",
        Some(&message),
        &now(),
    );
    write_status(ctx, &claim).await?;
    Ok((
        Action::requeue(ctx.policy.backoff.failed(reference)),
        ReconcileResult::NotSynced,
    ))
}

/// Server-side applies the claim's status as the claim controller.
async fn write_status(ctx: &ClaimContext, claim: &Value) -> Result<(), ClaimError> {
    admission::stage("writing its status");
    ctx.cluster
        .apply_async(claim, CLAIM_FIELD_MANAGER, true)
        .await
        .map_err(ObjectError::cluster(
            format!(
                "claim {}",
                text(claim, "/metadata/name").unwrap_or_default()
            ),
            "cannot write its status",
        ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use kube::api::ApiResource;

    /// The claim and XR kinds of an example XRD.
    pub fn resources() -> (ApiResource, ApiResource) {
        let make = |kind: &str, plural: &str| ApiResource {
            group: "example.org".into(),
            version: "v1".into(),
            api_version: "example.org/v1".into(),
            kind: kind.into(),
            plural: plural.into(),
        };
        (make("App", "apps"), make("XApp", "xapps"))
    }
}
