//! The controller of one XR kind: selects a Composition revision, runs the
//! shared reconcile core on a blocking thread, publishes legacy connection
//! Secrets, and handles pause and deletion.

mod connection;
mod delete;
mod latest;
mod select;

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use kube::api::{ApiResource, DynamicObject};
use kube::runtime::controller::Action;
use kube::runtime::reflector::Store;
use plait_functions::{CacheScope, PipelineFunctions};
use plait_model::CompositeResourceDefinition;
use plait_pipeline::{ReadGrants, Tenant};
use plait_reconcile::{
    COMPOSITE_FIELD_MANAGER, ClusterError, CompositeScope, Event, EventType, ObjectRef, Reconcile,
    SYNCED, set_condition,
};
use serde_json::{Value, json};

use crate::access::writes::WrittenObject;
use crate::adapter::cluster::KubeCluster;
use crate::adapter::fence::{self, Fenced, ShardFence, Shards};
use crate::adapter::tenants::TenantClusters;
use crate::controllers::admission::{self, Abandoned, Admission, Permit, thread_cpu};
use crate::controllers::breaker::CircuitBreaker;
use crate::controllers::function::Functions;
use crate::controllers::kit::{self, Controlled, Lifecycle, ObjectError, Policy, ReconcileFailure};
use crate::controllers::runs;
use crate::controllers::timing::{Backoff, Timing, now};
use crate::controllers::watches::ComposedWatches;
use crate::stores::catalog::{Catalog, CompiledPipeline};
use crate::stores::composed::Kind;
use crate::vocabulary::api::RECONCILE_PAUSED;
use crate::vocabulary::metrics::{
    CallMetrics, ReconcileResult, ThrottleListener, Trigger, metrics,
};
use crate::vocabulary::object::{self, text};

pub const FINALIZER: &str = "composite.apiextensions.crossplane.io";

/// The first look again at an XR whose reconcile created composed
/// resources, doubled while reconciles keep creating them.
const CREATED_BASE: Duration = Duration::from_millis(100);

#[derive(Debug, thiserror::Error)]
pub enum XrError {
    #[error(transparent)]
    Object(#[from] ObjectError),
    #[error("reconcile of {object} did not finish: {source}")]
    Join {
        object: ObjectRef,
        #[source]
        source: tokio::task::JoinError,
    },
    #[error("reconcile of {object} {abandoned}")]
    TimedOut {
        object: String,
        abandoned: Abandoned,
    },
}

impl ReconcileFailure for XrError {
    fn is_conflict(&self) -> bool {
        match self {
            XrError::Object(error) => error.is_conflict(),
            _ => false,
        }
    }

    fn metric_label(&self) -> &'static str {
        match self {
            XrError::Object(error) => error.metric_label(),
            XrError::Join { .. } => "join",
            XrError::TimedOut { .. } => "timeout",
        }
    }
}

/// What every XR of one kind shares.
pub struct XrContext {
    pub cluster: KubeCluster,
    /// Each tenant's view of the cluster, when pipelines act as tenants.
    tenants: Option<Arc<TenantClusters>>,
    pub functions: Functions,
    /// Compositions, revisions and Functions, and the pipelines compiled from them.
    pub catalog: Arc<Catalog>,
    pub watches: Arc<ComposedWatches>,
    pub timing: Timing,
    /// The XRD, refreshed whenever the XRD controller sees it change.
    pub xrd: RwLock<CompositeResourceDefinition>,
    pub policy: Policy,
    /// The watch circuits of this kind's XRs.
    pub breaker: Arc<CircuitBreaker>,
    /// The shards this replica reconciles, when XRs are sharded.
    pub shards: Option<Arc<Shards>>,
    /// Reconciles in a row that created composed resources, per XR.
    creating: Backoff<ObjectRef>,
    latest: latest::LatestStored,
    /// The queue every XR and claim reconcile waits in for its turn.
    admission: Arc<Admission>,
    /// The XRs as the controller's watch last saw them, once it runs.
    store: OnceLock<Store<DynamicObject>>,
}

impl XrContext {
    // Each argument is a separate part the XRD controller shares with every
    // XR kind; a struct holding them would only move this list.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cluster: KubeCluster,
        tenants: Option<Arc<TenantClusters>>,
        functions: Functions,
        catalog: Arc<Catalog>,
        watches: Arc<ComposedWatches>,
        timing: Timing,
        xrd: CompositeResourceDefinition,
        resource: ApiResource,
        shards: Option<Arc<Shards>>,
        admission: Arc<Admission>,
    ) -> XrContext {
        XrContext {
            cluster,
            tenants,
            functions,
            catalog,
            watches,
            breaker: Arc::new(CircuitBreaker::new(&resource.kind, timing.circuit_breaker)),
            shards,
            creating: Backoff::new(CREATED_BASE, timing.poll_interval),
            latest: latest::LatestStored::default(),
            admission,
            store: OnceLock::new(),
            xrd: RwLock::new(xrd),
            policy: Policy::new(resource, &timing),
            timing,
        }
    }

    /// The cluster a pipeline for `tenant` reads and writes through: as the
    /// tenant when pipelines act as tenants, else as the controller.
    fn composing_cluster(&self, tenant: &Tenant) -> Result<KubeCluster, ClusterError> {
        match (&self.tenants, tenant) {
            (Some(tenants), Tenant::Namespace(namespace)) => tenants.of(namespace),
            _ => Ok(self.cluster.clone()),
        }
    }

    fn xrd(&self) -> Option<CompositeResourceDefinition> {
        self.xrd.read().ok().map(|x| x.clone())
    }

    /// The XR's API, in its namespace.
    fn api(&self, reference: &ObjectRef) -> kube::Api<DynamicObject> {
        object::api_for(
            self.cluster.client(),
            &self.policy.resource,
            reference.namespace.as_deref(),
        )
    }

    /// Reads XRs from `store`, the controller's watch cache, from now on.
    pub fn watch_with(&self, store: Store<DynamicObject>) {
        // Set once, when the controller starts.
        let _ = self.store.set(store);
    }

    /// The tenant an XR's reconcile waits as: its namespace, its claim's, or the platform.
    fn tenant(&self, xr: &DynamicObject) -> Tenant {
        let scope = self
            .xrd()
            .map_or(CompositeScope::Namespaced, |xrd| CompositeScope::of(&xrd));
        plait_reconcile::tenant_in(scope, xr.metadata.namespace.as_deref(), xr.data.get("spec"))
    }

    /// `xr` as the watch has it now: it may have changed, or gone, while
    /// its reconcile waited for its turn.
    fn current(&self, xr: Arc<DynamicObject>) -> Option<Arc<DynamicObject>> {
        let Some(store) = self.store.get() else {
            return Some(xr);
        };
        store.get(&kube::runtime::reflector::ObjectRef::from_obj_with(
            xr.as_ref(),
            self.policy.resource.clone(),
        ))
    }

    /// Whether `xr` is this controller's to reconcile and no reconcile of
    /// it has finished here yet.
    pub fn awaits_first_reconcile(&self, xr: &DynamicObject) -> bool {
        let ours = self.shards.as_ref().is_none_or(|shards| {
            shards.holds_object(xr.metadata.uid.as_deref().unwrap_or_default())
        });
        ours && !self.has_reconciled(xr)
    }

    /// Whether a reconcile of `xr` has finished in this controller.
    fn has_reconciled(&self, xr: &DynamicObject) -> bool {
        self.latest.knows(&self.policy.reference(xr))
    }

    /// Forgets an XR that is gone.
    fn forget(&self, reference: &ObjectRef) {
        self.policy.forget(reference);
        self.creating.succeeded(reference);
        self.latest.forget(reference);
        self.breaker
            .forget(&(reference.namespace.clone(), reference.name.clone()));
        self.cluster.writes().forget(&WrittenObject::of(reference));
    }

    /// The XR as stored after a write, as JSON; the write is recorded as this controller's.
    fn stored(&self, patched: &DynamicObject, reference: &ObjectRef) -> Result<Value, XrError> {
        self.cluster.wrote(patched, &self.policy.resource);
        Ok(object::to_value(patched, &self.policy.resource)
            .map_err(ObjectError::encode(reference))?)
    }
}

impl Controlled for XrContext {
    fn policy(&self) -> &Policy {
        &self.policy
    }
}

/// Reconciles one XR once it is its turn, and counts how it went in the metrics.
pub async fn reconcile(object: Arc<DynamicObject>, ctx: Arc<XrContext>) -> Result<Action, XrError> {
    let tenant = ctx.tenant(&object);
    let name = object.metadata.name.clone().unwrap_or_default();
    let limit = ctx.timing.abandon_after();
    let shared = &ctx;
    let ran = ctx
        .admission
        .run(&tenant, limit, |permit| async move {
            let Some(object) = shared.current(object) else {
                // Gone while it waited: nothing to do.
                return Ok(Action::await_change());
            };
            reconcile_admitted(object, shared, &permit).await
        })
        .await;
    ran.unwrap_or_else(|abandoned| {
        metrics().reconcile_failed(&ctx.policy.resource.kind, "timeout");
        let object = format!("{}/{name}", ctx.policy.resource.kind);
        tracing::warn!(object, %abandoned, "reconcile abandoned");
        Err(XrError::TimedOut { object, abandoned })
    })
}

async fn reconcile_admitted(
    object: Arc<DynamicObject>,
    ctx: &Arc<XrContext>,
    permit: &Permit,
) -> Result<Action, XrError> {
    let target = Arc::clone(&object);
    let admitted = fence::admitted(
        ctx.shards.as_deref(),
        &target,
        reconcile_xr(object, ctx, permit),
    );
    let reconciled = kit::counted(ctx.as_ref(), &target, admitted).await;
    let next = match &reconciled {
        Ok(action) if *action == Action::await_change() => None,
        Ok(action) if *action == Action::requeue(ctx.timing.poll_interval) => Some(Trigger::Poll),
        // An error backs off through the error policy.
        _ => Some(Trigger::Requeue),
    };
    if let Some(trigger) = next {
        metrics().triggered(&ctx.policy.resource.kind, trigger, 1);
    }
    reconciled
}

async fn reconcile_xr(
    object: Arc<DynamicObject>,
    ctx: &XrContext,
    permit: &Permit,
) -> Result<(Action, ReconcileResult), XrError> {
    let mut handed =
        serde_json::to_value(object.as_ref()).map_err(ObjectError::encode(format!(
            "composite resource {}",
            object.metadata.name.clone().unwrap_or_default()
        )))?;
    if handed.get("apiVersion").is_none() {
        handed["apiVersion"] = json!(ctx.policy.resource.api_version);
        handed["kind"] = json!(ctx.policy.resource.kind);
    }
    let Some(reference) = ObjectRef::of(&handed) else {
        return Ok((Action::await_change(), ReconcileResult::Skipped));
    };
    let Some(xrd) = ctx.xrd() else {
        return Ok((Action::await_change(), ReconcileResult::Skipped));
    };
    let scope = CompositeScope::of(&xrd);
    // `xr` is, throughout, the XR as last stored: each write replaces it
    // with what the API server returned.
    let mut xr = ctx.latest.newest(&reference, handed.clone());
    let reconciled = compose(&mut xr, &reference, &xrd, scope, ctx, permit).await;
    if reconciled
        .as_ref()
        .is_ok_and(|(_, result)| *result != ReconcileResult::Deleting)
    {
        let written = ctx.cluster.writes().recent(&WrittenObject::of(&reference));
        ctx.latest.record(&reference, &handed, written, &xr);
    }
    reconciled
}

async fn compose(
    xr: &mut Value,
    reference: &ObjectRef,
    xrd: &CompositeResourceDefinition,
    scope: CompositeScope,
    ctx: &XrContext,
    permit: &Permit,
) -> Result<(Action, ReconcileResult), XrError> {
    match Lifecycle::of(xr, FINALIZER) {
        Lifecycle::Paused => {
            ctx.cluster.publish(Event {
                regarding: reference.clone(),
                event_type: EventType::Normal,
                reason: "ReconciliationPaused".into(),
                message: "Reconciliation is paused via the pause annotation".into(),
            });
            write_condition(ctx, xr, reference, "ReconcilePaused", RECONCILE_PAUSED).await?;
            return Ok((Action::await_change(), ReconcileResult::Paused));
        }
        Lifecycle::Released => return Ok((Action::await_change(), ReconcileResult::Deleting)),
        Lifecycle::Deleting => {
            admission::stage("deleting its composed resources");
            let action = delete::delete(xr.clone(), reference.clone(), scope, ctx).await?;
            return Ok((action, ReconcileResult::Deleting));
        }
        Lifecycle::Unfinalized => {
            admission::stage("adding its finalizer");
            let api = ctx.api(reference);
            let patched = object::add_finalizer(&api, &ctx.policy.resource, xr, FINALIZER)
                .await
                .map_err(ObjectError::kube(reference, "cannot add its finalizer"))?;
            *xr = ctx.stored(&patched, reference)?;
        }
        Lifecycle::Live => {}
    }

    admission::stage("selecting its Composition revision");
    let selected = match select::composition(ctx, xrd, xr, reference, scope).await {
        Ok(name) => select::revision(ctx, xrd, xr, reference, scope, &name).await,
        Err(failure) => Err(failure),
    };
    let pipeline = match selected {
        Ok(pipeline) => pipeline,
        Err(select::Failure::Synced(message)) => {
            return not_synced(ctx, xr, reference, &message).await;
        }
        Err(select::Failure::Awaiting(message)) => {
            let (_, result) = not_synced(ctx, xr, reference, &message).await?;
            // Not a failure of this XR's: no backoff to grow, and nothing to
            // retry until a revision of its kind arrives (the poll is the backstop).
            ctx.policy.backoff.succeeded(reference);
            return Ok((Action::requeue(ctx.timing.poll_interval), result));
        }
        Err(select::Failure::Error(e)) => return Err(e),
    };
    // Upstream defaults a v1 XR's connection Secret reference before its
    // pipeline runs, so patches from it reach composed resources.
    if let Some(secret_ref) = plait_reconcile::default_connection_secret_ref(
        xr,
        scope,
        pipeline
            .composition
            .spec
            .write_connection_secrets_to_namespace
            .as_deref(),
    ) {
        admission::stage("defaulting its connection Secret reference");
        let fields = json!({"spec": {"writeConnectionSecretToRef": secret_ref}});
        let patched = object::merge_patch(&ctx.api(reference), xr, fields)
            .await
            .map_err(ObjectError::kube(
                reference,
                "cannot default its connection Secret reference",
            ))?;
        *xr = ctx.stored(&patched, reference)?;
    }

    let cluster = ctx.cluster.clone();
    let tenant = plait_reconcile::tenant_of(xr, scope);
    let composing = match ctx.composing_cluster(&tenant) {
        Ok(composing) => composing,
        Err(e) => return not_synced(ctx, xr, reference, &e.to_string()).await,
    };
    let recorder = runs::Recorder::new(Arc::new(CallMetrics {
        tenant: tenant.clone(),
        on_throttle: Some(throttle_listener(ctx, reference, &tenant)),
    }));
    let functions = calls(
        ctx,
        &pipeline,
        reference,
        xr,
        &tenant,
        permit,
        recorder.clone(),
    );
    let circuit_open = ctx
        .breaker
        .is_open(&(reference.namespace.clone(), reference.name.clone()));
    let xr_for_run = xr.clone();
    let steps = pipeline.clone();
    let fence = ShardFence::of(
        ctx.shards.as_ref(),
        text(xr, "/metadata/uid").unwrap_or_default(),
    );
    let cpu = permit.clone();
    admission::stage("running its pipeline");
    let run = tokio::task::spawn_blocking(move || {
        let started = thread_cpu();
        let grants = functions.read_grants(ReadGrants::tenant_defaults());
        // Writes stop once the XR's shard is lost, even if this thread
        // outlives the reconcile that started it.
        let fenced = Fenced {
            cluster: &cluster,
            fence: fence.as_ref(),
        };
        let fenced_tenant = Fenced {
            cluster: &composing,
            fence: fence.as_ref(),
        };
        let ran = Reconcile {
            cluster: &fenced,
            runner: &functions,
            xr: xr_for_run,
            scope,
            steps: &steps.steps,
            context: json!({}),
            clock: &now,
            grants: &grants,
            as_tenant: Some(&fenced_tenant),
            circuit_open,
        }
        .run();
        cpu.add_cpu(thread_cpu().saturating_sub(started));
        ran
    })
    .await
    .map_err(|source| XrError::Join {
        object: reference.clone(),
        source,
    })?;
    let outcome = match run {
        Ok(outcome) => outcome,
        // The XR changed while its pipeline ran, so it was read stale:
        // nothing is wrong with it, and the next reconcile reads the new version.
        Err(e) if e.is_conflict() => return Ok(kit::conflicted(ctx, reference)),
        Err(e) => return not_synced(ctx, xr, reference, &e.to_string()).await,
    };
    *xr = outcome.xr.clone();
    runs::record(reference, &pipeline, &recorder, &outcome);

    let mut kinds = referenced_kinds(&outcome.xr, scope);
    kinds.extend(outcome.composed.values().filter_map(kind_of));
    admission::stage("watching its composed kinds");
    ctx.watches.track(&ctx.cluster, reference, kinds).await;
    if let Some(refused) = &outcome.refused {
        metrics().read_refused(&refused.tenant, &refused.function, &refused.target.kind);
    }
    if let Some(error) = &outcome.error {
        tracing::info!(composite = %reference, %error, "reconcile did not sync");
        return Ok((
            Action::requeue(ctx.policy.backoff.failed(reference)),
            ReconcileResult::NotSynced,
        ));
    }
    if scope == CompositeScope::LegacyCluster {
        admission::stage("publishing its connection details");
        let details = &outcome.connection_details;
        let published = connection::publish(
            &ctx.cluster,
            &outcome.xr,
            &pipeline.composition,
            xrd,
            details,
        )
        .await;
        if let Err(error) = published {
            tracing::info!(composite = %reference, %error, "cannot publish connection details");
            ctx.cluster.publish(Event {
                regarding: reference.clone(),
                event_type: EventType::Warning,
                reason: "PublishConnectionSecret".into(),
                message: error.to_string(),
            });
            return Ok((
                Action::requeue(ctx.policy.backoff.failed(reference)),
                ReconcileResult::Error,
            ));
        }
    }
    ctx.policy.backoff.succeeded(reference);
    tracing::debug!(composite = %reference, composed = outcome.composed.len(), "reconciled");
    // The watch events of this controller's own writes do not bring the XR
    // back, so an XR that has just created resources looks again soon to
    // observe them; one that created none waits for a change or the poll.
    if !outcome.created.is_empty() {
        return Ok((
            Action::requeue(ctx.creating.failed(reference)),
            ReconcileResult::Success,
        ));
    }
    ctx.creating.succeeded(reference);
    let next = outcome
        .ttl
        .filter(|t| !t.is_zero())
        .map_or(ctx.timing.poll_interval, |t| {
            t.min(ctx.timing.poll_interval)
        });
    Ok((Action::requeue(next), ReconcileResult::Success))
}

/// One reconcile's calls of `pipeline`'s functions for the XR: observed in
/// the metrics, in the tenant's share of call slots (lending the
/// reconcile's working slot while a call waits for one), answered from the
/// response cache when it is on.
fn calls(
    ctx: &XrContext,
    pipeline: &CompiledPipeline,
    reference: &ObjectRef,
    xr: &Value,
    tenant: &Tenant,
    permit: &Permit,
    recorder: Arc<runs::Recorder>,
) -> PipelineFunctions {
    let mut functions =
        PipelineFunctions::new(pipeline.functions.clone(), ctx.timing.reconcile_timeout)
            .observed_by(recorder)
            .sharing(ctx.functions.share.clone(), tenant.clone())
            .noticing(permit.notice());
    if let Some(last) = pipeline.steps.last() {
        functions = functions.ending_with(last.name.clone());
    }
    match &ctx.functions.response_cache {
        Some(cache) => {
            let uid = text(xr, "/metadata/uid").unwrap_or_default();
            let scope = CacheScope {
                xr: format!("{reference}/{uid}"),
                tenant: tenant.clone(),
            };
            functions.cached(cache.clone(), scope)
        }
        None => functions,
    }
}

/// Tells, on the XR, when one of its calls changed its tenant's throttle.
fn throttle_listener(ctx: &XrContext, reference: &ObjectRef, tenant: &Tenant) -> ThrottleListener {
    let (cluster, reference) = (ctx.cluster.clone(), reference.clone());
    let tenant = tenant.clone();
    Box::new(move |function: &str, throttle: u32| {
        throttle_event(&cluster, &reference, &tenant, function, throttle)
    })
}

/// Tells, on the XR whose call changed it, how much its tenant's time now
/// counts in the share of call slots.
fn throttle_event(
    cluster: &KubeCluster,
    reference: &ObjectRef,
    tenant: &Tenant,
    function: &str,
    throttle: u32,
) {
    let (event_type, reason, message) = if throttle > 1 {
        (
            EventType::Warning,
            "CallsThrottled",
            format!(
                "calls of function {function:?} reach their deadline: tenant \"{tenant}\"'s time now counts {throttle}× in the share of function-call slots, until its calls end in time again"
            ),
        )
    } else {
        (
            EventType::Normal,
            "CallsUnthrottled",
            format!(
                "calls of function {function:?} end in time again: tenant \"{tenant}\"'s time counts as anyone's in the share of function-call slots"
            ),
        )
    };
    tracing::info!(composite = %reference, %tenant, function, throttle, "{message}");
    cluster.publish(Event {
        regarding: reference.clone(),
        event_type,
        reason: reason.into(),
        message,
    });
}

/// Reports an XR that cannot be composed as it stands on its `Synced`
/// condition and in an event, and backs off.
async fn not_synced(
    ctx: &XrContext,
    xr: &mut Value,
    reference: &ObjectRef,
    message: &str,
) -> Result<(Action, ReconcileResult), XrError> {
    tracing::info!(composite = %reference, error = message, "cannot compose");
    ctx.cluster.publish(Event {
        regarding: reference.clone(),
        event_type: EventType::Warning,
        reason: "ReconcileError".into(),
        message: message.into(),
    });
    write_condition(ctx, xr, reference, "ReconcileError", message).await?;
    Ok((
        Action::requeue(ctx.policy.backoff.failed(reference)),
        ReconcileResult::NotSynced,
    ))
}

/// Sets `Synced=False` with `reason`, writing the status only when that changed it.
async fn write_condition(
    ctx: &XrContext,
    xr: &mut Value,
    reference: &ObjectRef,
    reason: &str,
    message: &str,
) -> Result<(), XrError> {
    let mut updated = xr.clone();
    set_condition(&mut updated, SYNCED, "False", reason, Some(message), &now());
    if updated.get("status") != xr.get("status") {
        admission::stage("writing its status");
        *xr = ctx
            .cluster
            .apply_async(&updated, COMPOSITE_FIELD_MANAGER, true)
            .await
            .map_err(ObjectError::cluster(reference, "cannot write its status"))?;
    }
    Ok(())
}

fn kind_of(object: &Value) -> Option<Kind> {
    Some((
        text(object, "/apiVersion")?.to_string(),
        text(object, "/kind")?.to_string(),
    ))
}

/// The kinds of the XR's resource references.
fn referenced_kinds(xr: &Value, scope: CompositeScope) -> BTreeSet<Kind> {
    xr.pointer(&format!("{}/resourceRefs", scope.machinery_pointer()))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(kind_of)
        .collect()
}
