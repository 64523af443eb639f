//! The controller of one XR kind: selects a Composition, runs the shared
//! reconcile core on a blocking thread, and handles pause and deletion.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
use kube::runtime::controller::Action;
use plait_model::{CompositeResourceDefinition, Composition, Manifest, UpdatePolicy};
use plait_reconcile::{
    COMPOSITE_FIELD_MANAGER, ClusterError, CompositeScope, Event, EventType, ObjectRef, Reconcile,
    compose, pipeline_steps, set_condition,
};
use serde_json::{Value, json};

use crate::cluster::KubeCluster;
use crate::connection;
use crate::functions::{FunctionResolver, PipelineFunctions};
use crate::metrics::{ReconcileResult, metrics};
use crate::revisions;
use crate::watches::{ComposedWatches, Kind};

pub const FINALIZER: &str = "composite.apiextensions.crossplane.io";
pub const ANNOTATION_PAUSED: &str = "crossplane.io/paused";
pub const COMPOSITION_API_VERSION: &str = "apiextensions.crossplane.io/v1";
pub const COMPOSITION_KIND: &str = "Composition";

/// How soon an XR that changed while it was reconciled is reconciled again.
const CONFLICT_RETRY: Duration = Duration::from_millis(200);

/// How often and how patiently XRs are reconciled.
#[derive(Debug, Clone)]
pub struct Timing {
    /// Reconcile every XR at least this often, whatever the watches say.
    pub poll_interval: Duration,
    /// How long one pipeline run may take.
    pub reconcile_timeout: Duration,
    /// The first retry after an error; doubled per failure up to the poll interval.
    pub backoff_base: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            poll_interval: Duration::from_secs(60),
            reconcile_timeout: Duration::from_secs(120),
            backoff_base: Duration::from_secs(1),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum XrError {
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error("{object}: {message}")]
    Kube { object: String, message: String },
    #[error("composite resource {0}: cannot be encoded")]
    Encode(String),
    #[error("reconcile of {object} did not finish: {message}")]
    Join { object: String, message: String },
}

/// What every XR of one kind shares.
pub struct XrContext {
    pub cluster: KubeCluster,
    pub resolver: Arc<dyn FunctionResolver>,
    pub watches: Arc<ComposedWatches>,
    pub timing: Timing,
    /// The XRD, refreshed whenever the XRD controller sees it change.
    pub xrd: RwLock<CompositeResourceDefinition>,
    pub resource: ApiResource,
    /// Consecutive failures by XR, for backoff.
    failures: Mutex<HashMap<ObjectRef, u32>>,
}

impl XrContext {
    pub fn new(
        cluster: KubeCluster,
        resolver: Arc<dyn FunctionResolver>,
        watches: Arc<ComposedWatches>,
        timing: Timing,
        xrd: CompositeResourceDefinition,
        resource: ApiResource,
    ) -> XrContext {
        XrContext {
            cluster,
            resolver,
            watches,
            timing,
            xrd: RwLock::new(xrd),
            resource,
            failures: Mutex::new(HashMap::new()),
        }
    }

    fn xrd(&self) -> Option<CompositeResourceDefinition> {
        self.xrd.read().ok().map(|x| x.clone())
    }

    /// The requeue after a failed attempt, growing with each failure in a row.
    fn backoff(&self, xr: &ObjectRef) -> Duration {
        let failures = self
            .failures
            .lock()
            .map(|mut f| {
                let n = f.entry(xr.clone()).or_insert(0);
                *n = n.saturating_add(1);
                *n
            })
            .unwrap_or(1);
        backoff(
            self.timing.backoff_base,
            self.timing.poll_interval,
            failures,
        )
    }

    fn succeeded(&self, xr: &ObjectRef) {
        if let Ok(mut f) = self.failures.lock() {
            f.remove(xr);
        }
    }
}

/// `base * 2^(failures-1)`, capped.
pub fn backoff(base: Duration, cap: Duration, failures: u32) -> Duration {
    let factor = 2u32.saturating_pow(failures.saturating_sub(1).min(16));
    base.saturating_mul(factor).min(cap)
}

pub fn now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .round(k8s_openapi::jiff::Unit::Second)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| k8s_openapi::jiff::Timestamp::now().to_string())
}

fn text<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn machinery(scope: CompositeScope) -> &'static str {
    match scope {
        CompositeScope::LegacyCluster => "/spec",
        CompositeScope::Namespaced | CompositeScope::Cluster => "/spec/crossplane",
    }
}

/// Reconciles one XR, and counts how it went in the metrics.
pub async fn reconcile(object: Arc<DynamicObject>, ctx: Arc<XrContext>) -> Result<Action, XrError> {
    let started = Instant::now();
    let result = reconcile_xr(object, &ctx).await;
    let label = match &result {
        Ok((_, label)) => *label,
        Err(_) => ReconcileResult::Error,
    };
    metrics().reconciled(&ctx.resource.kind, label, started.elapsed());
    result.map(|(action, _)| action)
}

async fn reconcile_xr(
    object: Arc<DynamicObject>,
    ctx: &XrContext,
) -> Result<(Action, ReconcileResult), XrError> {
    let mut xr = serde_json::to_value(object.as_ref())
        .map_err(|_| XrError::Encode(object.metadata.name.clone().unwrap_or_default()))?;
    if xr.get("apiVersion").is_none() {
        xr["apiVersion"] = json!(ctx.resource.api_version);
        xr["kind"] = json!(ctx.resource.kind);
    }
    let Some(reference) = ObjectRef::of(&xr) else {
        return Ok((Action::await_change(), ReconcileResult::Skipped));
    };
    let Some(xrd) = ctx.xrd() else {
        return Ok((Action::await_change(), ReconcileResult::Skipped));
    };
    let scope = CompositeScope::of(&xrd);

    if text(&xr, "/metadata/annotations/crossplane.io~1paused") == Some("true") {
        ctx.cluster.publish(Event {
            regarding: reference.clone(),
            event_type: EventType::Normal,
            reason: "ReconciliationPaused".into(),
            message: "Reconciliation is paused via the pause annotation".into(),
        });
        set_condition(
            &mut xr,
            "Synced",
            "False",
            "ReconcilePaused",
            Some("Reconciliation (including deletion) is paused via the pause annotation"),
            &now(),
        );
        ctx.cluster
            .apply_async(&xr, COMPOSITE_FIELD_MANAGER, true)
            .await?;
        return Ok((Action::await_change(), ReconcileResult::Paused));
    }

    if xr.pointer("/metadata/deletionTimestamp").is_some() {
        return Ok((
            delete(xr, reference, scope, ctx).await?,
            ReconcileResult::Deleting,
        ));
    }

    if !has_finalizer(&xr) {
        xr = add_finalizer(ctx, &xr, &reference).await?;
    }

    let selected = match select_composition(ctx, &xrd, &mut xr, &reference, scope).await {
        Ok(name) => select_revision(ctx, &xrd, &mut xr, &reference, scope, &name).await,
        Err(failure) => Err(failure),
    };
    let composition = match selected {
        Ok(c) => c,
        Err(Failure::Synced(message)) => return not_synced(ctx, xr, &reference, &message).await,
        Err(Failure::Error(e)) => return Err(e),
    };
    let steps = match pipeline_steps(&composition) {
        Ok(steps) => steps,
        Err(e) => return not_synced(ctx, xr, &reference, &e.to_string()).await,
    };

    let cluster = ctx.cluster.clone();
    let resolver = ctx.resolver.clone();
    let timeout = ctx.timing.reconcile_timeout;
    let xr_for_run = xr.clone();
    let run = tokio::task::spawn_blocking(move || {
        let functions = PipelineFunctions::resolve(resolver.as_ref(), &cluster, &steps, timeout)
            .map_err(|e| e.to_string());
        let functions = match functions {
            Ok(f) => f,
            Err(message) => return Ok(Err(message)),
        };
        Reconcile {
            cluster: &cluster,
            runner: &functions,
            xr: xr_for_run,
            scope,
            steps: &steps,
            context: json!({}),
            now: now(),
        }
        .run()
        .map(Ok)
    })
    .await
    .map_err(|e| XrError::Join {
        object: reference.to_string(),
        message: e.to_string(),
    })?;
    let outcome = match run {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(resolve_error)) => return not_synced(ctx, xr, &reference, &resolve_error).await,
        // The XR changed while its pipeline ran (often through this
        // controller's own previous write), so it was read stale: nothing is
        // wrong with it, and the next reconcile reads the new version.
        Err(e) if e.is_conflict() => {
            tracing::debug!(composite = %reference, error = %e, "XR changed during reconcile; retrying");
            return Ok((Action::requeue(CONFLICT_RETRY), ReconcileResult::Conflict));
        }
        Err(e) => return not_synced(ctx, xr, &reference, &e.to_string()).await,
    };

    let mut kinds = referenced_kinds(&outcome.xr, scope);
    kinds.extend(outcome.composed.values().filter_map(kind_of));
    ctx.watches.track(&ctx.cluster, &reference, kinds).await;
    if let Some(error) = &outcome.error {
        tracing::info!(composite = %reference, %error, "reconcile did not sync");
        return Ok((
            Action::requeue(ctx.backoff(&reference)),
            ReconcileResult::NotSynced,
        ));
    }
    if scope == CompositeScope::LegacyCluster {
        let details = &outcome.connection_details;
        let published =
            connection::publish(&ctx.cluster, &outcome.xr, &composition, &xrd, details).await;
        if let Err(message) = published {
            tracing::info!(composite = %reference, error = message, "cannot publish connection details");
            ctx.cluster.publish(Event {
                regarding: reference.clone(),
                event_type: EventType::Warning,
                reason: "PublishConnectionSecret".into(),
                message,
            });
            return Ok((
                Action::requeue(ctx.backoff(&reference)),
                ReconcileResult::Error,
            ));
        }
    }
    ctx.succeeded(&reference);
    let next = outcome
        .ttl
        .filter(|t| !t.is_zero())
        .map_or(ctx.timing.poll_interval, |t| {
            t.min(ctx.timing.poll_interval)
        });
    tracing::debug!(composite = %reference, composed = outcome.composed.len(), "reconciled");
    Ok((Action::requeue(next), ReconcileResult::Success))
}

/// Where a reconcile stopped short of running the pipeline.
enum Failure {
    /// The XR cannot be composed as it stands; reported on its `Synced` condition.
    Synced(String),
    Error(XrError),
}

impl From<ClusterError> for Failure {
    fn from(e: ClusterError) -> Self {
        Failure::Error(e.into())
    }
}

async fn synced_false(
    ctx: &XrContext,
    mut xr: Value,
    reference: &ObjectRef,
    message: &str,
) -> Result<Action, XrError> {
    tracing::info!(composite = %reference, error = message, "cannot compose");
    ctx.cluster.publish(Event {
        regarding: reference.clone(),
        event_type: EventType::Warning,
        reason: "ReconcileError".into(),
        message: message.into(),
    });
    set_condition(
        &mut xr,
        "Synced",
        "False",
        "ReconcileError",
        Some(message),
        &now(),
    );
    ctx.cluster
        .apply_async(&xr, COMPOSITE_FIELD_MANAGER, true)
        .await?;
    Ok(Action::requeue(ctx.backoff(reference)))
}

async fn not_synced(
    ctx: &XrContext,
    xr: Value,
    reference: &ObjectRef,
    message: &str,
) -> Result<(Action, ReconcileResult), XrError> {
    let action = synced_false(ctx, xr, reference, message).await?;
    Ok((action, ReconcileResult::NotSynced))
}

fn has_finalizer(xr: &Value) -> bool {
    xr.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|v| v == FINALIZER))
}

fn api(ctx: &XrContext, reference: &ObjectRef) -> kube::Api<DynamicObject> {
    let client = ctx.cluster.client().clone();
    match &reference.namespace {
        Some(ns) => kube::Api::namespaced_with(client, ns, &ctx.resource),
        None => kube::Api::all_with(client, &ctx.resource),
    }
}

fn kube_error(reference: &ObjectRef, e: kube::Error) -> XrError {
    XrError::Kube {
        object: reference.to_string(),
        message: e.to_string(),
    }
}

/// Merge-patches the finalizers, guarded by the resourceVersion read, so a
/// concurrent change makes this fail rather than drop someone's finalizer.
async fn patch_finalizers(
    ctx: &XrContext,
    xr: &Value,
    reference: &ObjectRef,
    finalizers: Vec<Value>,
) -> Result<Value, XrError> {
    let patch = json!({"metadata": {
        "finalizers": finalizers,
        "resourceVersion": xr.pointer("/metadata/resourceVersion"),
    }});
    let patched = api(ctx, reference)
        .patch(
            &reference.name,
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .map_err(|e| kube_error(reference, e))?;
    let mut value =
        serde_json::to_value(&patched).map_err(|_| XrError::Encode(reference.to_string()))?;
    value["apiVersion"] = xr["apiVersion"].clone();
    value["kind"] = xr["kind"].clone();
    Ok(value)
}

async fn add_finalizer(
    ctx: &XrContext,
    xr: &Value,
    reference: &ObjectRef,
) -> Result<Value, XrError> {
    let mut finalizers = xr
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    finalizers.push(json!(FINALIZER));
    patch_finalizers(ctx, xr, reference, finalizers).await
}

/// Deletes what the XR composed and lets it go once all of it is gone.
/// Composed resources carry a controller reference to the XR, so Kubernetes'
/// garbage collector would remove them too; deleting them here means the XR
/// outlives them whatever propagation policy it was deleted with.
async fn delete(
    mut xr: Value,
    reference: ObjectRef,
    scope: CompositeScope,
    ctx: &XrContext,
) -> Result<Action, XrError> {
    if !has_finalizer(&xr) {
        return Ok(Action::await_change());
    }
    let uid = text(&xr, "/metadata/uid").unwrap_or_default().to_string();
    let refs = xr
        .pointer(&format!("{}/resourceRefs", machinery(scope)))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut remaining = Vec::new();
    let mut kinds = BTreeSet::new();
    for r in refs {
        let (Some(api_version), Some(kind), Some(name)) = (
            text(&r, "/apiVersion"),
            text(&r, "/kind"),
            text(&r, "/name"),
        ) else {
            continue;
        };
        let namespace = match scope {
            CompositeScope::Namespaced => reference.namespace.clone(),
            _ => text(&r, "/namespace").map(str::to_string),
        };
        let composed = ObjectRef {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace,
            name: name.into(),
        };
        let Some(object) = ctx.cluster.get_async(&composed).await? else {
            continue;
        };
        if compose::controller_uid(&object) != Some(uid.as_str()) {
            continue;
        }
        if object.pointer("/metadata/deletionTimestamp").is_none() {
            ctx.cluster
                .delete_async(&composed, text(&object, "/metadata/uid"))
                .await?;
        }
        kinds.insert((api_version.to_string(), kind.to_string()));
        remaining.push(composed.to_string());
    }
    ctx.watches.track(&ctx.cluster, &reference, kinds).await;
    if !remaining.is_empty() {
        set_condition(
            &mut xr,
            "Ready",
            "False",
            "Deleting",
            Some(&format!(
                "Waiting for composed resources to be deleted: {}",
                remaining.join(", ")
            )),
            &now(),
        );
        ctx.cluster
            .apply_async(&xr, COMPOSITE_FIELD_MANAGER, true)
            .await?;
        // The composed watches bring the XR back as each one goes; the
        // requeue covers a watch that is still starting.
        return Ok(Action::requeue(
            ctx.timing.poll_interval.min(Duration::from_secs(10)),
        ));
    }
    let finalizers = xr
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|f| f.iter().filter(|v| *v != FINALIZER).cloned().collect())
        .unwrap_or_default();
    match patch_finalizers(ctx, &xr, &reference, finalizers).await {
        Ok(_) => {}
        Err(XrError::Kube { message, .. }) if message.contains("NotFound") => {}
        Err(e) => return Err(e),
    }
    ctx.succeeded(&reference);
    Ok(Action::await_change())
}

fn kind_of(object: &Value) -> Option<Kind> {
    Some((
        text(object, "/apiVersion")?.to_string(),
        text(object, "/kind")?.to_string(),
    ))
}

/// The kinds of the XR's resource references.
fn referenced_kinds(xr: &Value, scope: CompositeScope) -> BTreeSet<Kind> {
    xr.pointer(&format!("{}/resourceRefs", machinery(scope)))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(kind_of)
        .collect()
}

/// Picks the XR's Composition as upstream does, persisting the choice.
async fn select_composition(
    ctx: &XrContext,
    xrd: &CompositeResourceDefinition,
    xr: &mut Value,
    reference: &ObjectRef,
    scope: CompositeScope,
) -> Result<String, Failure> {
    let machinery = machinery(scope);
    let current = text(xr, &format!("{machinery}/compositionRef/name")).map(str::to_string);
    let selector = xr
        .pointer(&format!("{machinery}/compositionSelector/matchLabels"))
        .and_then(Value::as_object)
        .cloned();
    let (chosen, message) = if let Some(enforced) = &xrd.spec.enforced_composition_ref {
        (
            enforced.name.clone(),
            "Enforced composition has been selected".to_string(),
        )
    } else if let Some(name) = &current {
        (name.clone(), String::new())
    } else if let (None, Some(default)) = (&selector, &xrd.spec.default_composition_ref) {
        (
            default.name.clone(),
            "Default composition has been selected".to_string(),
        )
    } else {
        let labels: BTreeMap<String, String> = selector
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.as_str().unwrap_or_default().to_string()))
            .collect();
        let mut candidates: Vec<String> = ctx
            .cluster
            .list_async(COMPOSITION_API_VERSION, COMPOSITION_KIND, None, &labels)
            .await?
            .into_iter()
            .filter(|c| {
                text(c, "/spec/compositeTypeRef/apiVersion") == Some(reference.api_version.as_str())
                    && text(c, "/spec/compositeTypeRef/kind") == Some(reference.kind.as_str())
            })
            .filter_map(|c| text(&c, "/metadata/name").map(str::to_string))
            .collect();
        // Upstream picks at random; the first by name is as valid and repeatable.
        candidates.sort();
        let Some(first) = candidates.into_iter().next() else {
            return Err(Failure::Synced(
                "cannot select Composition: no compatible Compositions found".into(),
            ));
        };
        let message = format!("Successfully selected composition: {first}");
        (first, message)
    };
    if current.as_deref() != Some(chosen.as_str()) {
        let patch = wrap_machinery(scope, json!({"compositionRef": {"name": chosen}}));
        *xr = merge_patch(ctx, xr, reference, &patch).await?;
        ctx.cluster.publish(Event {
            regarding: reference.clone(),
            event_type: EventType::Normal,
            reason: "SelectComposition".into(),
            message,
        });
    }
    Ok(chosen)
}

/// Picks the revision of `composition` the XR composes from, as upstream
/// does, persisting the choice and any defaulted revision selector.
async fn select_revision(
    ctx: &XrContext,
    xrd: &CompositeResourceDefinition,
    xr: &mut Value,
    reference: &ObjectRef,
    scope: CompositeScope,
    composition: &str,
) -> Result<Composition, Failure> {
    let machinery = machinery(scope);
    let policy = match text(xr, &format!("{machinery}/compositionUpdatePolicy")) {
        Some("Manual") => UpdatePolicy::Manual,
        Some(_) => UpdatePolicy::Automatic,
        None => xrd.default_composition_update_policy(),
    };
    let current = text(xr, &format!("{machinery}/compositionRevisionRef/name")).map(str::to_string);
    let mut selector =
        revisions::match_labels(xr.pointer(&format!("{machinery}/compositionRevisionSelector")));
    let mut persist = serde_json::Map::new();
    if selector.is_none()
        && current.is_none()
        && let Some(default) = xrd.spec.extra.get("defaultCompositionRevisionSelector")
    {
        selector = revisions::match_labels(Some(default));
        persist.insert("compositionRevisionSelector".into(), default.clone());
        ctx.cluster.publish(Event {
            regarding: reference.clone(),
            event_type: EventType::Normal,
            reason: "SelectComposition".into(),
            message: "Default revision selector has been selected".into(),
        });
    }
    let fetch = |message: String| Failure::Synced(format!("cannot fetch Composition: {message}"));
    let revision = match (&current, policy) {
        (Some(name), UpdatePolicy::Manual) => ctx
            .cluster
            .get_async(&revision_ref(name))
            .await?
            .ok_or_else(|| {
                fetch(format!(
                    "cannot get CompositionRevision {name:?}: not found"
                ))
            })?,
        _ => {
            let found = ctx
                .cluster
                .get_async(&ObjectRef {
                    api_version: COMPOSITION_API_VERSION.into(),
                    kind: COMPOSITION_KIND.into(),
                    namespace: None,
                    name: composition.into(),
                })
                .await?
                .ok_or_else(|| {
                    fetch(format!("cannot get Composition {composition:?}: not found"))
                })?;
            let mut labels = match policy {
                UpdatePolicy::Automatic => selector.unwrap_or_default(),
                UpdatePolicy::Manual => BTreeMap::new(),
            };
            labels.insert(revisions::LABEL_COMPOSITION_NAME.into(), composition.into());
            let candidates = ctx
                .cluster
                .list_async(
                    COMPOSITION_API_VERSION,
                    revisions::REVISION_KIND,
                    None,
                    &labels,
                )
                .await?;
            let latest = revisions::latest(&found, &candidates)
                .cloned()
                .ok_or_else(|| fetch("no compatible CompositionRevisions found".into()))?;
            let name = text(&latest, "/metadata/name").unwrap_or_default();
            if current.as_deref() != Some(name) {
                persist.insert("compositionRevisionRef".into(), json!({"name": name}));
            }
            latest
        }
    };
    if !persist.is_empty() {
        let patch = wrap_machinery(scope, Value::Object(persist));
        *xr = merge_patch(ctx, xr, reference, &patch).await?;
    }
    let name = text(&revision, "/metadata/name").unwrap_or_default();
    let composition = Composition::from_value(revisions::composition_of(&revision))
        .map_err(|e| Failure::Synced(format!("CompositionRevision {name:?} is invalid: {e}")))?;
    if let Err(errors) = composition.validate() {
        return Err(Failure::Synced(format!(
            "CompositionRevision {name:?} is invalid: {}",
            plait_model::render_errors(&errors)
        )));
    }
    let type_ref = &composition.spec.composite_type_ref;
    if type_ref.api_version != reference.api_version || type_ref.kind != reference.kind {
        return Err(Failure::Synced(
            "referenced composition is not compatible with this composite resource".into(),
        ));
    }
    Ok(composition)
}

fn revision_ref(name: &str) -> ObjectRef {
    ObjectRef {
        api_version: COMPOSITION_API_VERSION.into(),
        kind: revisions::REVISION_KIND.into(),
        namespace: None,
        name: name.into(),
    }
}

/// Merge-patches the XR, returning it as stored.
async fn merge_patch(
    ctx: &XrContext,
    xr: &Value,
    reference: &ObjectRef,
    patch: &Value,
) -> Result<Value, Failure> {
    let patched = api(ctx, reference)
        .patch(
            &reference.name,
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await
        .map_err(|e| Failure::Error(kube_error(reference, e)))?;
    let mut value = serde_json::to_value(&patched)
        .map_err(|_| Failure::Error(XrError::Encode(reference.to_string())))?;
    value["apiVersion"] = xr["apiVersion"].clone();
    value["kind"] = xr["kind"].clone();
    Ok(value)
}

fn wrap_machinery(scope: CompositeScope, fields: Value) -> Value {
    match scope {
        CompositeScope::LegacyCluster => json!({"spec": fields}),
        CompositeScope::Namespaced | CompositeScope::Cluster => {
            json!({"spec": {"crossplane": fields}})
        }
    }
}

/// The requeue after a reconcile that returned an error.
pub fn error_policy(object: Arc<DynamicObject>, error: &XrError, ctx: Arc<XrContext>) -> Action {
    let reference = ObjectRef {
        api_version: ctx.resource.api_version.clone(),
        kind: ctx.resource.kind.clone(),
        namespace: object.metadata.namespace.clone(),
        name: object.metadata.name.clone().unwrap_or_default(),
    };
    tracing::warn!(composite = %reference, %error, "reconcile failed");
    Action::requeue(ctx.backoff(&reference))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_per_failure_up_to_the_cap() {
        let base = Duration::from_secs(1);
        let cap = Duration::from_secs(60);
        let cases = [(1, 1), (2, 2), (3, 4), (6, 32), (7, 60), (1000, 60)];
        for (failures, want) in cases {
            assert_eq!(
                backoff(base, cap, failures),
                Duration::from_secs(want),
                "{failures}"
            );
        }
    }

    #[test]
    fn composition_ref_goes_where_the_scope_keeps_machinery() {
        let fields = json!({"compositionRef": {"name": "c"}});
        let cases = [
            (
                CompositeScope::Namespaced,
                json!({"spec": {"crossplane": {"compositionRef": {"name": "c"}}}}),
            ),
            (
                CompositeScope::Cluster,
                json!({"spec": {"crossplane": {"compositionRef": {"name": "c"}}}}),
            ),
            (
                CompositeScope::LegacyCluster,
                json!({"spec": {"compositionRef": {"name": "c"}}}),
            ),
        ];
        for (scope, want) in cases {
            assert_eq!(wrap_machinery(scope, fields.clone()), want, "{scope:?}");
        }
    }
}
