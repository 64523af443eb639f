//! One XR's reconcile. [`reconcile`] waits for the XR's turn in the fair
//! queue and counts how it went; [`compose`] then runs the phases in
//! order: lifecycle (pause, deletion), selection (Composition, revision,
//! pipeline), defaults, the pipeline run through `plait_reconcile::Reconcile`
//! (the core `plait render` runs too), and what follows a run (watches,
//! connection details, the next look). What the first three decide for the
//! XR (its finalizer, its Composition and revision, defaults) is written in
//! the pipeline phase's one write of the XR's resource references, before
//! anything is composed.

use std::collections::BTreeSet;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::api::DynamicObject;
use kube::runtime::controller::Action;
use plait_functions::{CacheScope, PipelineFunctions};
use plait_model::CompositeResourceDefinition;
use plait_pipeline::{ReadGrants, Tenant};
use plait_reconcile::{
    CompositeScope, Event, EventType, ObjectRef, Outcome, Reconcile, ReconcileError, SYNCED, holds,
    merge_patch, set_condition,
};
use serde_json::{Value, json};

use super::context::XrContext;
use super::writes::XrWrites;
use super::{FINALIZER, XrError, connection, delete, select};
use crate::access::writes::WrittenObject;
use crate::clusters::cluster::KubeCluster;
use crate::clusters::fence::{self, Fenced, ShardFence};
use crate::controllers::fair_queue::{self, Permit, thread_cpu};
use crate::controllers::kit::{self, Lifecycle, ObjectError};
use crate::controllers::runs;
use crate::controllers::timing::now;
use crate::stores::catalog::CompiledPipeline;
use crate::stores::composed::Kind;
use crate::vocabulary::api::RECONCILE_PAUSED;
use crate::vocabulary::metrics::{
    CallMetrics, ReconcileResult, ThrottleListener, Trigger, metrics,
};
use crate::vocabulary::object;
use crate::vocabulary::object::text;

pub async fn reconcile(object: Arc<DynamicObject>, ctx: Arc<XrContext>) -> Result<Action, XrError> {
    let tenant = ctx.tenant(&object);
    let name = object.metadata.name.clone().unwrap_or_default();
    let limit = ctx.shared.timing.abandon_after();
    let shared = &ctx;
    let ran = ctx
        .shared
        .fair_queue
        .run(&tenant, limit, |permit| async move {
            let reference = shared.policy.reference(&object);
            let Some(object) = shared.current(object) else {
                // Gone while it waited: nothing to do, and nothing it read
                // wakes it any more.
                shared.shared.required.forget(&reference);
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
        ctx.shared.shards.as_deref(),
        &target,
        reconcile_xr(object, ctx, permit),
    );
    let reconciled = kit::counted(ctx.as_ref(), &target, admitted).await;
    let next = match &reconciled {
        Ok(action) if *action == Action::await_change() => None,
        Ok(action)
            if *action
                == Action::requeue(ctx.shared.timing.poll_interval_of(
                    &serde_json::json!({"metadata": {"annotations": target.metadata.annotations}}),
                )) =>
        {
            Some(Trigger::Poll)
        }
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
        let written = ctx
            .shared
            .cluster
            .writes()
            .recent(&WrittenObject::of(&reference));
        ctx.latest.record(&reference, &handed, written, &xr);
    }
    reconciled
}

/// How a phase ends: the reconcile goes on with what the phase made, or it
/// is done, with its next look and its result.
type Phase<T> = Result<ControlFlow<(Action, ReconcileResult), T>, XrError>;

/// One XR's reconcile after its prologue, phase by phase; each phase either
/// hands the next what it needs or ends the reconcile.
async fn compose(
    xr: &mut Value,
    reference: &ObjectRef,
    xrd: &CompositeResourceDefinition,
    scope: CompositeScope,
    ctx: &XrContext,
    permit: &Permit,
) -> Result<(Action, ReconcileResult), XrError> {
    // 1. Lifecycle: paused, deleted, or live.
    match lifecycle(xr, reference, ctx).await? {
        Before::Compose => {}
        Before::Done(result) => return Ok((Action::await_change(), result)),
        Before::Delete => {
            fair_queue::stage("deleting its composed resources");
            let action = delete::delete(xr.clone(), reference.clone(), scope, ctx).await?;
            return Ok((action, ReconcileResult::Deleting));
        }
    }
    // 2. Selection: the Composition, its revision and the revision's pipeline.
    let selection = match selection(xr, reference, xrd, scope, ctx).await? {
        ControlFlow::Continue(selection) => selection,
        ControlFlow::Break(done) => return Ok(done),
    };
    let pipeline = selection.pipeline;
    // 3. What upstream defaults on the XR before its pipeline runs.
    let secret_ref = default_connection_secret_ref(xr, scope, &pipeline);
    let unwritten = unwritten(xr, scope, selection.machinery, secret_ref);
    // 4. The pipeline, through the reconcile core `plait render` runs too.
    let changes_before = ctx.shared.required.mark();
    let (outcome, recorder) = match pipeline_run(
        xr,
        reference,
        scope,
        &pipeline,
        unwritten.clone(),
        ctx,
        permit,
    )
    .await?
    {
        ControlFlow::Continue(ran) => ran,
        ControlFlow::Break(done) => return Ok(done),
    };
    // The selection is told of once the XR records it.
    if unwritten.is_none_or(|patch| holds(xr, &patch)) {
        for event in selection.events {
            ctx.publish(event);
        }
    }
    runs::record(reference, &pipeline, &recorder, &outcome);
    // 5. What follows a run: watches on the composed kinds and on what its
    // functions required, connection details, and when to look again.
    after_run(
        outcome,
        reference,
        xrd,
        scope,
        &pipeline,
        changes_before,
        ctx,
    )
    .await
}

/// What the lifecycle phase leaves to the reconcile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Before {
    /// The XR is live and finalized: compose it.
    Compose,
    /// The XR is being deleted: delete what it composed, then let it go.
    Delete,
    /// Nothing more to do until the XR changes.
    Done(ReconcileResult),
}

/// Where the XR stands before anything is composed for it: a paused XR
/// only says so, a deleted one has its composed resources deleted, and a
/// live one is composed (one without the finalizer gets it in the write that
/// records its resource references, before any of them is created).
async fn lifecycle(
    xr: &mut Value,
    reference: &ObjectRef,
    writes: &impl XrWrites,
) -> Result<Before, XrError> {
    match Lifecycle::of(xr, FINALIZER) {
        Lifecycle::Paused => {
            writes.publish(Event {
                regarding: reference.clone(),
                event_type: EventType::Normal,
                reason: "ReconciliationPaused".into(),
                message: "Reconciliation is paused via the pause annotation".into(),
            });
            write_condition(writes, xr, "ReconcilePaused", RECONCILE_PAUSED).await?;
            Ok(Before::Done(ReconcileResult::Paused))
        }
        Lifecycle::Released => Ok(Before::Done(ReconcileResult::Deleting)),
        Lifecycle::Deleting => Ok(Before::Delete),
        Lifecycle::Unfinalized | Lifecycle::Live => Ok(Before::Compose),
    }
}

/// The Composition and revision the XR composes with, and the revision's
/// compiled pipeline; an XR that cannot select one says why on `Synced`,
/// except a new XR whose revision is on its way, which waits for it quietly.
async fn selection(
    xr: &mut Value,
    reference: &ObjectRef,
    xrd: &CompositeResourceDefinition,
    scope: CompositeScope,
    ctx: &XrContext,
) -> Phase<select::Selection> {
    fair_queue::stage("selecting its Composition revision");
    let selected = match select::composition(ctx, xrd, xr, reference, scope).await {
        Ok(selected) => select::revision(ctx, xrd, xr, reference, scope, selected).await,
        Err(failure) => Err(failure),
    };
    match selected {
        Ok(selection) => Ok(ControlFlow::Continue(selection)),
        Err(select::Failure::Synced(message)) => Ok(ControlFlow::Break(
            not_synced(ctx, xr, reference, &message).await?,
        )),
        Err(select::Failure::Awaiting(message)) => {
            // Not a failure of this XR's: no backoff to grow, and nothing to
            // retry until a revision of its kind arrives (the poll, or the
            // end of the quiet wait, is the backstop).
            ctx.policy.backoff.succeeded(reference);
            let created = text(xr, "/metadata/creationTimestamp");
            if let Some(left) = quiet_wait(created, Timestamp::now()) {
                tracing::debug!(composite = %reference, reason = message, "waiting for its revision");
                return Ok(ControlFlow::Break((
                    Action::requeue(left),
                    ReconcileResult::NotSynced,
                )));
            }
            let (_, result) = not_synced(ctx, xr, reference, &message).await?;
            Ok(ControlFlow::Break((
                Action::requeue(ctx.shared.timing.poll_interval),
                result,
            )))
        }
        Err(select::Failure::Error(e)) => Err(e),
    }
}

/// How long a new XR whose revision is not in the catalog yet waits for it
/// without a word: its Composition's first revision is usually on its way
/// (created with the Composition), and the catalog wakes the XR once it holds it.
const AWAIT_REVISION_QUIETLY: Duration = Duration::from_secs(30);

/// How much longer an XR created at `created` (RFC 3339) waits quietly for
/// its revision at `now`; `None` once it should say why it waits.
fn quiet_wait(created: Option<&str>, now: Timestamp) -> Option<Duration> {
    let created: Timestamp = created?.parse().ok()?;
    let age = Duration::try_from(now.duration_since(created)).unwrap_or_default();
    AWAIT_REVISION_QUIETLY
        .checked_sub(age)
        .filter(|left| !left.is_zero())
}

/// Upstream defaults a v1 XR's connection Secret reference before its
/// pipeline runs, so patches from it reach composed resources.
fn default_connection_secret_ref(
    xr: &Value,
    scope: CompositeScope,
    pipeline: &CompiledPipeline,
) -> Option<Value> {
    let namespace = pipeline
        .composition
        .spec
        .write_connection_secrets_to_namespace
        .as_deref();
    plait_reconcile::default_connection_secret_ref(xr, scope, namespace)
}

/// What the reconcile decided for the XR that the XR does not record yet,
/// as a merge patch: the finalizer, the Composition and revision it composes
/// from (`machinery`), and a v1 XR's connection Secret reference. The
/// pipeline phase writes it with the resource references, in one write
/// before anything is composed: the finalizer is on the XR before anything
/// it would clean up exists.
pub(super) fn unwritten(
    xr: &Value,
    scope: CompositeScope,
    machinery: serde_json::Map<String, Value>,
    secret_ref: Option<Value>,
) -> Option<Value> {
    let mut patch = json!({});
    if !object::has_finalizer(xr, FINALIZER) {
        let mut finalizers = object::finalizers(xr);
        finalizers.push(FINALIZER.into());
        patch["metadata"] = json!({ "finalizers": finalizers });
    }
    if !machinery.is_empty() {
        merge_patch(&mut patch, &scope.wrap_machinery(Value::Object(machinery)));
    }
    if let Some(secret_ref) = secret_ref {
        merge_patch(
            &mut patch,
            &json!({"spec": {"writeConnectionSecretToRef": secret_ref}}),
        );
    }
    (patch != json!({})).then_some(patch)
}

/// Runs the XR's pipeline and applies what it desires, on a blocking
/// thread, as the XR's tenant, and fenced by its shard; returns what the
/// run did and what its calls recorded. A run that lost a race with a
/// change to the XR, or could not act as its tenant, ends the reconcile.
async fn pipeline_run(
    xr: &mut Value,
    reference: &ObjectRef,
    scope: CompositeScope,
    pipeline: &Arc<CompiledPipeline>,
    unwritten: Option<Value>,
    ctx: &XrContext,
    permit: &Permit,
) -> Phase<(Outcome, Arc<runs::Recorder>)> {
    let tenant = plait_reconcile::tenant_of(xr, scope);
    let composing = match ctx.composing_cluster(&tenant) {
        Ok(composing) => composing,
        Err(e) => {
            let done = not_synced(ctx, xr, reference, &e.to_string()).await?;
            return Ok(ControlFlow::Break(done));
        }
    };
    let recorder = runs::Recorder::new(Arc::new(CallMetrics {
        tenant: tenant.clone(),
        on_throttle: Some(throttle_listener(ctx, reference, &tenant)),
    }));
    let run = Blocking {
        cluster: ctx.shared.cluster.clone(),
        composing,
        functions: calls(
            ctx,
            pipeline,
            reference,
            xr,
            &tenant,
            permit,
            recorder.clone(),
        ),
        xr: xr.clone(),
        unwritten,
        scope,
        pipeline: pipeline.clone(),
        fence: ShardFence::of(
            ctx.shared.shards.as_ref(),
            text(xr, "/metadata/uid").unwrap_or_default(),
        ),
        circuit_open: ctx
            .breaker
            .is_open(&(reference.namespace.clone(), reference.name.clone())),
        cpu: permit.clone(),
    };
    fair_queue::stage("running its pipeline");
    let ran = tokio::task::spawn_blocking(move || run.run())
        .await
        .map_err(|source| XrError::Join {
            object: reference.clone(),
            source,
        })?;
    match ran {
        Ok(outcome) => {
            *xr = outcome.xr.clone();
            Ok(ControlFlow::Continue((outcome, recorder)))
        }
        // The XR changed while its pipeline ran, so it was read stale:
        // nothing is wrong with it, and the next reconcile reads the new version.
        Err(e) if e.is_conflict() => Ok(ControlFlow::Break(kit::conflicted(ctx, reference))),
        Err(e) if e.is_unavailable() => Err(XrError::Unavailable {
            object: reference.clone(),
            source: Box::new(e),
        }),
        Err(e) => Ok(ControlFlow::Break(
            not_synced(ctx, xr, reference, &e.to_string()).await?,
        )),
    }
}

/// What a pipeline run takes onto its blocking thread.
struct Blocking {
    cluster: KubeCluster,
    /// The cluster as the XR's tenant.
    composing: KubeCluster,
    functions: PipelineFunctions,
    xr: Value,
    /// What the XR does not record yet, written with its resource references.
    unwritten: Option<Value>,
    scope: CompositeScope,
    pipeline: Arc<CompiledPipeline>,
    fence: Option<ShardFence>,
    circuit_open: bool,
    cpu: Permit,
}

impl Blocking {
    fn run(self) -> Result<Outcome, ReconcileError> {
        let started = thread_cpu();
        let grants = self.functions.read_grants(ReadGrants::tenant_defaults());
        // Writes stop once the XR's shard is lost, even if this thread
        // outlives the reconcile that started it.
        let fenced = Fenced {
            cluster: &self.cluster,
            fence: self.fence.as_ref(),
        };
        let fenced_tenant = Fenced {
            cluster: &self.composing,
            fence: self.fence.as_ref(),
        };
        let ran = Reconcile {
            cluster: &fenced,
            runner: &self.functions,
            xr: self.xr,
            scope: self.scope,
            steps: &self.pipeline.steps,
            context: json!({}),
            clock: &now,
            grants: &grants,
            as_tenant: Some(&fenced_tenant),
            circuit_open: self.circuit_open,
            observe_created: true,
            unwritten: self.unwritten,
        }
        .run();
        self.cpu.add_cpu(thread_cpu().saturating_sub(started));
        ran
    }
}

/// After a run: the composed kinds watched, a refused read counted, the
/// legacy connection Secret published, and the next look chosen.
async fn after_run(
    outcome: Outcome,
    reference: &ObjectRef,
    xrd: &CompositeResourceDefinition,
    scope: CompositeScope,
    pipeline: &CompiledPipeline,
    changes_before: u64,
    ctx: &XrContext,
) -> Result<(Action, ReconcileResult), XrError> {
    let mut kinds = referenced_kinds(&outcome.xr, scope);
    kinds.extend(outcome.composed.values().filter_map(kind_of));
    fair_queue::stage("watching its composed kinds");
    ctx.shared
        .watches
        .track(&ctx.shared.cluster, reference, kinds)
        .await;
    fair_queue::stage("watching what its functions required");
    ctx.shared
        .required
        .track(
            &ctx.shared.cluster,
            reference,
            &outcome.required,
            changes_before,
        )
        .await;
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
        fair_queue::stage("publishing its connection details");
        let details = &outcome.connection_details;
        let published = connection::publish(
            &ctx.shared.cluster,
            &outcome.xr,
            &pipeline.composition,
            xrd,
            details,
        )
        .await;
        if let Err(error) = published {
            tracing::info!(composite = %reference, %error, "cannot publish connection details");
            ctx.shared.cluster.publish(Event {
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
    let created = !outcome.created.is_empty();
    let poll_interval = ctx.shared.timing.poll_interval_of(&outcome.xr);
    let next = match next_look(created, outcome.ttl, poll_interval) {
        NextLook::Soon => ctx.creating.failed(reference),
        NextLook::After(after) => {
            ctx.creating.succeeded(reference);
            after
        }
    };
    Ok((Action::requeue(next), ReconcileResult::Success))
}

/// When a reconcile that synced looks at the XR again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NextLook {
    /// Soon, sooner the fewer reconciles in a row created resources: the
    /// watch events of this controller's own writes do not bring the XR
    /// back, so an XR that has just created resources looks again to
    /// observe them.
    Soon,
    /// After the pipeline's TTL, or the poll interval if that is sooner or
    /// the pipeline set none.
    After(Duration),
}

fn next_look(created: bool, ttl: Option<Duration>, poll_interval: Duration) -> NextLook {
    if created {
        return NextLook::Soon;
    }
    NextLook::After(
        ttl.filter(|t| !t.is_zero())
            .map_or(poll_interval, |t| t.min(poll_interval)),
    )
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
    let mut functions = PipelineFunctions::new(
        pipeline.functions.clone(),
        ctx.shared.timing.reconcile_timeout,
    )
    .observed_by(recorder)
    .sharing(ctx.shared.functions.share.clone(), tenant.clone())
    .noticing(permit.notice());
    if let Some(last) = pipeline.steps.last() {
        functions = functions.ending_with(last.name.clone());
    }
    match &ctx.shared.functions.response_cache {
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
    let (cluster, reference) = (ctx.shared.cluster.clone(), reference.clone());
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
    ctx.shared.cluster.publish(Event {
        regarding: reference.clone(),
        event_type: EventType::Warning,
        reason: "ReconcileError".into(),
        message: message.into(),
    });
    write_condition(ctx, xr, "ReconcileError", message).await?;
    Ok((
        Action::requeue(ctx.policy.backoff.failed(reference)),
        ReconcileResult::NotSynced,
    ))
}

/// Sets `Synced=False` with `reason`, writing the status only when that changed it.
async fn write_condition(
    writes: &impl XrWrites,
    xr: &mut Value,
    reason: &str,
    message: &str,
) -> Result<(), XrError> {
    let mut updated = xr.clone();
    set_condition(&mut updated, SYNCED, "False", reason, Some(message), &now());
    if updated.get("status") != xr.get("status") {
        fair_queue::stage("writing its status");
        *xr = writes.write_status(&updated).await?;
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

#[cfg(test)]
mod tests {
    use plait_reconcile::{Cluster, MemoryCluster};

    use super::*;

    fn xr(paused: bool, deleting: bool, finalizers: &[&str], conditions: Value) -> Value {
        let mut xr = json!({
            "apiVersion": "example.org/v1",
            "kind": "XApp",
            "metadata": {"name": "app", "namespace": "team-a", "finalizers": finalizers},
            "spec": {},
            "status": {"conditions": conditions},
        });
        if paused {
            xr["metadata"]["annotations"] = json!({"crossplane.io/paused": "true"});
        }
        if deleting {
            xr["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        xr
    }

    #[tokio::test]
    async fn the_lifecycle_phase_pauses_deletes_or_composes_with_only_the_writes_it_needs() {
        let paused_condition = json!([{
            "type": "Synced", "status": "False", "reason": "ReconcilePaused",
            "message": RECONCILE_PAUSED, "lastTransitionTime": "t0",
        }]);
        let none = json!([]);
        // (XR, what the phase leaves, writes to the XR, events, finalizers after)
        let cases = [
            (
                xr(true, false, &[FINALIZER], none.clone()),
                Before::Done(ReconcileResult::Paused),
                vec!["status"],
                vec!["ReconciliationPaused"],
                vec![FINALIZER],
            ),
            (
                xr(true, true, &[FINALIZER], paused_condition),
                Before::Done(ReconcileResult::Paused),
                vec![],
                vec!["ReconciliationPaused"],
                vec![FINALIZER],
            ),
            (
                xr(false, true, &[FINALIZER], none.clone()),
                Before::Delete,
                vec![],
                vec![],
                vec![FINALIZER],
            ),
            (
                xr(false, true, &["other"], none.clone()),
                Before::Done(ReconcileResult::Deleting),
                vec![],
                vec![],
                vec!["other"],
            ),
            (
                xr(false, false, &["other"], none.clone()),
                Before::Compose,
                vec![],
                vec![],
                vec!["other"],
            ),
            (
                xr(false, false, &[FINALIZER], none),
                Before::Compose,
                vec![],
                vec![],
                vec![FINALIZER],
            ),
        ];
        for (seeded, want, want_writes, want_events, want_finalizers) in cases {
            let cluster = MemoryCluster::new();
            cluster.seed([seeded.clone()]).unwrap();
            let reference = ObjectRef::of(&seeded).unwrap();
            let mut current = cluster.get(&reference).unwrap().unwrap();
            let before = lifecycle(&mut current, &reference, &cluster).await.unwrap();
            assert_eq!(before, want, "{seeded}");
            let writes: Vec<&str> = cluster.writes().into_iter().map(|(_, w)| w).collect();
            assert_eq!(writes, want_writes, "{seeded}");
            let events: Vec<String> = cluster.events().into_iter().map(|e| e.reason).collect();
            assert_eq!(events, want_events, "{seeded}");
            let stored = cluster.get(&reference).unwrap().unwrap();
            assert_eq!(
                stored["metadata"]["finalizers"],
                json!(want_finalizers),
                "{seeded}"
            );
            if want == Before::Done(ReconcileResult::Paused) {
                let synced = crate::vocabulary::object::condition(&stored, SYNCED).unwrap();
                assert_eq!(synced["reason"], "ReconcilePaused", "{seeded}");
                assert_eq!(current, stored, "the phase goes on from the XR as stored");
            }
        }
    }

    #[test]
    fn what_the_xr_does_not_record_yet_is_one_merge_patch_with_its_finalizer_first() {
        let machinery = |fields: Value| fields.as_object().cloned().unwrap_or_default();
        let secret = json!({"name": "uid", "namespace": "crossplane-system"});
        // (finalizers, scope, machinery, secret reference, the patch)
        let cases = [
            (
                vec!["other"],
                CompositeScope::Namespaced,
                json!({}),
                None,
                Some(json!({"metadata": {"finalizers": ["other", FINALIZER]}})),
            ),
            (
                vec![],
                CompositeScope::Namespaced,
                json!({"compositionRef": {"name": "c"}, "compositionRevisionRef": {"name": "c-1"}}),
                None,
                Some(json!({
                    "metadata": {"finalizers": [FINALIZER]},
                    "spec": {"crossplane": {"compositionRef": {"name": "c"}, "compositionRevisionRef": {"name": "c-1"}}},
                })),
            ),
            (
                vec![FINALIZER],
                CompositeScope::LegacyCluster,
                json!({"compositionRevisionRef": {"name": "c-2"}}),
                Some(secret.clone()),
                Some(json!({"spec": {
                    "compositionRevisionRef": {"name": "c-2"},
                    "writeConnectionSecretToRef": secret,
                }})),
            ),
            (
                vec![FINALIZER],
                CompositeScope::Namespaced,
                json!({}),
                None,
                None,
            ),
        ];
        for (finalizers, scope, fields, secret_ref, want) in cases {
            let xr = xr(false, false, &finalizers, json!([]));
            let got = unwritten(&xr, scope, machinery(fields.clone()), secret_ref);
            assert_eq!(got, want, "{finalizers:?} {fields}");
        }
    }

    #[test]
    fn a_new_xr_waits_quietly_for_its_revision_then_says_why() {
        let now: Timestamp = "2026-01-01T00:01:00Z".parse().unwrap();
        // (created, how much longer it waits quietly)
        let cases = [
            (Some("2026-01-01T00:01:00Z"), Some(AWAIT_REVISION_QUIETLY)),
            (Some("2026-01-01T00:00:50Z"), Some(Duration::from_secs(20))),
            (Some("2026-01-01T00:00:30Z"), None),
            (Some("2026-01-01T00:00:00Z"), None),
            (Some("not a time"), None),
            (None, None),
        ];
        for (created, want) in cases {
            assert_eq!(quiet_wait(created, now), want, "{created:?}");
        }
    }

    #[test]
    fn an_xr_that_synced_looks_again_soon_after_creating_else_at_its_ttl_or_the_poll() {
        let poll = Duration::from_secs(60);
        let cases = [
            (true, None, NextLook::Soon),
            (true, Some(Duration::from_secs(5)), NextLook::Soon),
            (false, None, NextLook::After(poll)),
            (false, Some(Duration::ZERO), NextLook::After(poll)),
            (
                false,
                Some(Duration::from_secs(5)),
                NextLook::After(Duration::from_secs(5)),
            ),
            (false, Some(Duration::from_secs(600)), NextLook::After(poll)),
        ];
        for (created, ttl, want) in cases {
            assert_eq!(next_look(created, ttl, poll), want, "{created} {ttl:?}");
        }
    }
}
