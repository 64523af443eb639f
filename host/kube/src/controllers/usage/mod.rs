//! The Usage and ClusterUsage controllers (`protection.crossplane.io`), as
//! upstream Crossplane's usage reconciler: resolve `resourceSelector`s into
//! `resourceRef`s written back to the spec, hold a finalizer, label the used
//! resource `crossplane.io/in-use: "true"` (which sends its deletions to the
//! admission webhook, [`refuse_deletion`]), make the using resource an
//! owner of the Usage, and report `Ready`. A deleted Usage composed beside
//! its user waits for the user to go, takes the label off once no other
//! Usage protects the resource, and with `replayDeletion` deletes the
//! resource again if a deletion of it was refused.

pub mod spec;

use std::sync::Arc;
use std::time::Duration;

use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams,
    PropagationPolicy,
};
use kube::runtime::controller::Action;
use kube::runtime::{Controller, watcher};
use plait_reconcile::{
    ClusterError, Event, EventType, LABEL_COMPOSITE, ObjectRef, pointer, set_condition,
};
use serde_json::{Value, json};

use crate::clusters::cluster::KubeCluster;
use crate::clusters::tenants::TenantClusters;
use crate::controllers::kit::{self, Controlled, ObjectError, Policy, ReconcileFailure};
use crate::controllers::timing::{Timing, now};
use crate::vocabulary::api::{
    ANNOTATION_DELETION_ATTEMPT, ANNOTATION_USAGE_DETAILS, LABEL_IN_USE, USAGE_FINALIZER,
    cluster_usage_resource, usage_resource,
};
use crate::vocabulary::metrics::ReconcileResult;
use crate::vocabulary::object::{
    add_finalizer, api_for, has_finalizer, merge_patch, remove_finalizer, text, to_value,
};
use spec::Target;

/// How often a deleted Usage looks again whether its user is gone, as upstream.
const WAIT_FOR_USER: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error(transparent)]
    Object(#[from] ObjectError),
    #[error("{usage}: cannot resolve selectors: cannot resolve selector at \"{field}\": {message}")]
    Unresolved {
        usage: String,
        field: &'static str,
        message: String,
    },
    #[error("{usage}: {what}: {kind} {name:?} not found")]
    Missing {
        usage: String,
        what: &'static str,
        kind: String,
        name: String,
    },
}

impl ReconcileFailure for UsageError {
    fn metric_label(&self) -> &'static str {
        match self {
            UsageError::Object(error) => error.metric_label(),
            UsageError::Unresolved { .. } => "selector",
            UsageError::Missing { .. } => "missing",
        }
    }

    fn is_conflict(&self) -> bool {
        match self {
            UsageError::Object(error) => error.is_conflict(),
            _ => false,
        }
    }
}

/// What one of the two controllers (Usage or ClusterUsage) works with.
pub struct UsageContext {
    cluster: KubeCluster,
    /// With `--tenant-service-account`, a namespaced Usage reads, labels
    /// and deletes the resources it names as its namespace's tenant, so a
    /// tenant protects only what it may change itself.
    tenants: Option<Arc<TenantClusters>>,
    poll_interval: Duration,
    policy: Policy,
}

impl UsageContext {
    fn new(
        cluster: KubeCluster,
        tenants: Option<Arc<TenantClusters>>,
        resource: ApiResource,
        timing: &Timing,
    ) -> UsageContext {
        UsageContext {
            cluster,
            tenants,
            poll_interval: timing.poll_interval,
            policy: Policy::new(resource, timing),
        }
    }

    fn client(&self) -> &kube::Client {
        self.cluster.client()
    }

    /// The cluster the resources `usage` names are read and written
    /// through: its tenant's for a namespaced Usage when tenants act as
    /// themselves, else the controller's.
    fn acting_for(&self, usage: &Value) -> Result<KubeCluster, ClusterError> {
        match (&self.tenants, spec::namespace(usage)) {
            (Some(tenants), Some(namespace)) => tenants.of(namespace),
            _ => Ok(self.cluster.clone()),
        }
    }

    /// The API of `target`, a resource `usage` names, as [`Self::acting_for`].
    async fn api_of(
        &self,
        usage: &Value,
        target: &ObjectRef,
    ) -> Result<Api<DynamicObject>, ClusterError> {
        let (api, _) = self
            .acting_for(usage)?
            .api_for(
                &target.api_version,
                &target.kind,
                target.namespace.as_deref(),
            )
            .await?;
        Ok(api)
    }

    fn warn(&self, usage: &ObjectRef, reason: &str, message: String) {
        self.publish(usage, EventType::Warning, reason, message);
    }

    /// A warning event for a step that failed; a lost race (the object
    /// changed meanwhile) is retried quietly instead.
    fn failed(&self, usage: &ObjectRef, reason: &str, error: &UsageError) {
        if !error.is_conflict() {
            self.warn(usage, reason, error.to_string());
        }
    }

    fn publish(&self, usage: &ObjectRef, event_type: EventType, reason: &str, message: String) {
        self.cluster.publish(Event {
            regarding: usage.clone(),
            event_type,
            reason: reason.into(),
            message,
        });
    }
}

impl Controlled for UsageContext {
    fn policy(&self) -> &Policy {
        &self.policy
    }
}

/// Runs the Usage and ClusterUsage controllers until `shutdown` resolves.
pub async fn run(
    cluster: KubeCluster,
    tenants: Option<Arc<TenantClusters>>,
    timing: Timing,
    shutdown: impl std::future::Future<Output = ()> + Clone + Send + Sync + 'static,
) {
    let controllers = [usage_resource(), cluster_usage_resource()].map(|resource| {
        let api: Api<DynamicObject> = Api::all_with(cluster.client().clone(), &resource);
        let ctx = Arc::new(UsageContext::new(
            cluster.clone(),
            tenants.clone(),
            resource.clone(),
            &timing,
        ));
        let controller = Controller::new_with(api, watcher::Config::default(), resource);
        kit::run(controller, reconcile, ctx, shutdown.clone())
    });
    futures::future::join_all(controllers).await;
}

/// Reconciles one Usage or ClusterUsage.
pub async fn reconcile(
    object: Arc<DynamicObject>,
    ctx: Arc<UsageContext>,
) -> Result<Action, UsageError> {
    kit::counted(ctx.as_ref(), &object, reconcile_usage(&object, &ctx)).await
}

/// Gives the Usage its finalizer and the annotation that describes it;
/// true when either was written.
async fn finalize_and_describe(
    ctx: &UsageContext,
    reference: &ObjectRef,
    usages: &Api<DynamicObject>,
    usage: &mut Value,
) -> Result<bool, UsageError> {
    let mut configured = false;
    if !has_finalizer(usage, USAGE_FINALIZER) {
        let stored = add_finalizer(usages, &ctx.policy.resource, usage, USAGE_FINALIZER)
            .await
            .map_err(kube_error(reference, "cannot add finalizer"))
            .inspect_err(|e| ctx.failed(reference, "AddFinalizer", e))?;
        *usage = stored_value(ctx, reference, &stored)?;
        configured = true;
    }
    let details = spec::details(usage);
    let annotation = pointer::annotation(ANNOTATION_USAGE_DETAILS);
    if text(usage, &annotation) != Some(details.as_str()) {
        let stored = merge_patch(
            usages,
            usage,
            json!({"metadata": {"annotations": {ANNOTATION_USAGE_DETAILS: details}}}),
        )
        .await
        .map_err(kube_error(
            reference,
            "cannot update usage resource with details annotation",
        ))
        .inspect_err(|e| ctx.failed(reference, "AddDetailsToUsage", e))?;
        *usage = stored_value(ctx, reference, &stored)?;
        configured = true;
    }
    Ok(configured)
}

async fn reconcile_usage(
    object: &DynamicObject,
    ctx: &UsageContext,
) -> Result<(Action, ReconcileResult), UsageError> {
    let reference = kit::reference(object, &ctx.policy.resource);
    let mut usage =
        to_value(object, &ctx.policy.resource).map_err(ObjectError::encode(&reference))?;
    let usages = api_for(ctx.client(), &ctx.policy.resource, spec::namespace(&usage));
    let deleting = object.metadata.deletion_timestamp.is_some();

    let refused = match refusal(&usage) {
        Some(refusal) => Some(refusal),
        None => cluster_scoped_refusal(ctx, &reference, &usage).await?,
    };
    if let Some(refusal) = refused {
        // Such a Usage never labelled anything: nothing to release.
        if deleting {
            remove_own_finalizer(ctx, &reference, &usages, &usage).await?;
            return Ok((Action::await_change(), ReconcileResult::Deleting));
        }
        ctx.warn(&reference, "InvalidUsage", refusal.clone());
        set_ready(ctx, &reference, &usages, &mut usage, false, Some(&refusal)).await?;
        // A change of the spec brings it back.
        return Ok((Action::await_change(), ReconcileResult::NotSynced));
    }

    // A deleted Usage resolves nothing: what it never resolved, it never
    // protected.
    if deleting {
        return release(ctx, &reference, &usages, &usage).await;
    }
    for (pointer, field) in [
        ("/spec/of", "spec.of.resourceSelector"),
        ("/spec/by", "spec.by.resourceSelector"),
    ] {
        if let Some(resolved) = resolve(ctx, &reference, &usage, pointer, field).await? {
            usage = resolved;
        }
    }

    let mut configured = finalize_and_describe(ctx, &reference, &usages, &mut usage).await?;

    let Some(of) = spec::of(&usage) else {
        return Ok((Action::await_change(), ReconcileResult::NotSynced));
    };
    let used = get(ctx, &reference, &usage, &of, "cannot get used")
        .await
        .inspect_err(|e| ctx.failed(&reference, "GetUsedResource", e))?;
    if text(&used, &pointer::label(LABEL_IN_USE)) != Some("true") {
        label_in_use(ctx, &reference, &usage, &used, true).await?;
        configured = true;
    }

    if let Some(by) = spec::by(&usage) {
        let using = get(ctx, &reference, &usage, &by, "cannot get using")
            .await
            .inspect_err(|e| ctx.failed(&reference, "GetUsingResource", e))?;
        if let Some(owners) = with_owner(&usage, &using) {
            let stored = merge_patch(
                &usages,
                &usage,
                json!({"metadata": {"ownerReferences": owners}}),
            )
            .await
            .map_err(kube_error(
                &reference,
                "cannot update usage resource with owner ref",
            ))
            .inspect_err(|e| ctx.failed(&reference, "AddOwnerRefToUsage", e))?;
            usage = stored_value(ctx, &reference, &stored)?;
            configured = true;
        }
    }

    configured |= set_ready(ctx, &reference, &usages, &mut usage, true, None).await?;
    if configured {
        ctx.publish(
            &reference,
            EventType::Normal,
            "UsageConfigured",
            "Usage configured successfully.".into(),
        );
    }
    ctx.policy.backoff.succeeded(&reference);
    // Neither the used nor the using resource is watched: the poll notices
    // when either goes.
    Ok((Action::requeue(ctx.poll_interval), ReconcileResult::Success))
}

/// Why plait will not act on this Usage, if it will not.
fn refusal(usage: &Value) -> Option<String> {
    if let Some(foreign) = spec::foreign_namespace(usage) {
        return Some(spec::foreign_namespace_message(usage, &foreign));
    }
    match spec::of(usage) {
        Some(of) if !of.api_version.is_empty() && !of.kind.is_empty() => None,
        _ => Some("spec.of needs an apiVersion and a kind".into()),
    }
}

/// Why a namespaced Usage may not protect its `of`: a kind the API server
/// serves cluster-scoped (its deletions go by ClusterUsages only).
async fn cluster_scoped_refusal(
    ctx: &UsageContext,
    reference: &ObjectRef,
    usage: &Value,
) -> Result<Option<String>, UsageError> {
    let (Some(_), Some(of)) = (spec::namespace(usage), spec::of(usage)) else {
        return Ok(None);
    };
    let served = ctx
        .cluster
        .served_kind(&of.api_version, &of.kind)
        .await
        .map_err(ObjectError::cluster(reference, "cannot get used"))?;
    Ok(served
        .filter(|served| !served.namespaced)
        .map(|_| spec::cluster_scoped_message(&of.api_version, &of.kind)))
}

/// Resolves the selector at `pointer` into a `resourceRef` and writes it
/// back to the spec, as upstream does; returns the Usage as stored, or
/// `None` when there was nothing to resolve.
async fn resolve(
    ctx: &UsageContext,
    reference: &ObjectRef,
    usage: &Value,
    pointer: &str,
    field: &'static str,
) -> Result<Option<Value>, UsageError> {
    let Some(target) = Target::at(usage, pointer) else {
        return Ok(None);
    };
    if target.name.is_some() {
        return Ok(None);
    }
    let unresolved = |message: String| UsageError::Unresolved {
        usage: reference.to_string(),
        field,
        message,
    };
    let result = async {
        let Some(selector) = &target.selector else {
            return Err(unresolved("no selector defined for resolving".into()));
        };
        // A namespaced Usage selects in its own namespace (any other was
        // refused before); a ClusterUsage among cluster-scoped resources.
        let namespace = spec::used_namespace(usage);
        let listed = match ctx.acting_for(usage) {
            Ok(cluster) => {
                cluster
                    .list_live(
                        &target.api_version,
                        &target.kind,
                        namespace,
                        &selector.match_labels,
                    )
                    .await
            }
            Err(e) => Err(e),
        };
        let candidates = listed
            .map_err(|e| unresolved(format!("cannot list resources matching labels: {e}")))?;
        let Some(picked) = spec::pick(usage, selector, &candidates) else {
            return Err(unresolved(spec::nothing_selected(
                &target.kind,
                selector,
                !candidates.is_empty(),
            )));
        };
        let mut resource_ref = json!({"name": text(picked, "/metadata/name")});
        // Persisted only for a resource outside the Usage's namespace, as upstream.
        if let Some(picked_namespace) = text(picked, "/metadata/namespace")
            && Some(picked_namespace) != spec::namespace(usage)
        {
            resource_ref["namespace"] = json!(picked_namespace);
        }
        Ok(resource_ref)
    }
    .await
    .inspect_err(|e| ctx.failed(reference, "ResolveSelectors", e))?;
    let key = pointer.trim_start_matches("/spec/");
    let usages = api_for(ctx.client(), &ctx.policy.resource, spec::namespace(usage));
    let stored = merge_patch(
        &usages,
        usage,
        json!({"spec": {key: {"resourceRef": result}}}),
    )
    .await
    .map_err(kube_error(
        reference,
        "cannot update usage after resolving selector",
    ))?;
    stored_value(ctx, reference, &stored).map(Some)
}

/// A deleted Usage: wait for a composed Usage's user to go, take the in-use
/// label off when no other Usage protects the resource, replay a refused
/// deletion when asked to, and let the Usage go.
async fn release(
    ctx: &UsageContext,
    reference: &ObjectRef,
    usages: &Api<DynamicObject>,
    usage: &Value,
) -> Result<(Action, ReconcileResult), UsageError> {
    if !has_finalizer(usage, USAGE_FINALIZER) {
        return Ok((Action::await_change(), ReconcileResult::Deleting));
    }
    // A Usage composed together with its user goes when their composite
    // does; without this wait it would stop protecting at once. Upstream
    // waits whenever the Usage is composed, whoever composed the user.
    let composed = text(usage, &pointer::label(LABEL_COMPOSITE)).is_some();
    if composed && let Some(by) = spec::by(usage).filter(|by| by.name.is_some()) {
        match get(ctx, reference, usage, &by, "cannot get using").await {
            Ok(_) => {
                let message = format!(
                    "Waiting for the using resource (which is a {} named {}) to be deleted.",
                    plait_go_compat::strconv::quote(&by.kind),
                    plait_go_compat::strconv::quote(by.name.as_deref().unwrap_or_default()),
                );
                ctx.publish(reference, EventType::Normal, "WaitingUsingDeleted", message);
                return Ok((
                    Action::requeue(WAIT_FOR_USER.min(ctx.poll_interval)),
                    ReconcileResult::Deleting,
                ));
            }
            Err(UsageError::Missing { .. }) => {}
            Err(other) => {
                ctx.failed(reference, "GetUsingResource", &other);
                return Err(other);
            }
        }
    }

    let mut replay = None;
    if let Some(of) = spec::of(usage).filter(|of| of.name.is_some()) {
        match get(ctx, reference, usage, &of, "cannot get used").await {
            Ok(used) => {
                let others = usages_of(ctx.client(), &used)
                    .await
                    .map_err(kube_error(reference, "cannot find usages"))
                    .inspect_err(|e| ctx.failed(reference, "FindUsages", e))?;
                // This Usage is among them until its finalizer goes.
                if others.len() < 2 {
                    label_in_use(ctx, reference, usage, &used, false).await?;
                }
                let attempt = pointer::annotation(ANNOTATION_DELETION_ATTEMPT);
                if spec::replays_deletion(usage)
                    && let Some(policy) = used.pointer(&attempt).and_then(Value::as_str)
                {
                    replay = Some((used.clone(), policy.to_string()));
                }
            }
            Err(UsageError::Missing { .. }) => {}
            Err(other) => {
                ctx.failed(reference, "GetUsedResource", &other);
                return Err(other);
            }
        }
    }

    remove_own_finalizer(ctx, reference, usages, usage).await?;
    if let Some((used, policy)) = replay {
        replay_deletion(ctx, reference, usage, &used, &policy).await;
    }
    Ok((Action::await_change(), ReconcileResult::Deleting))
}

async fn remove_own_finalizer(
    ctx: &UsageContext,
    reference: &ObjectRef,
    usages: &Api<DynamicObject>,
    usage: &Value,
) -> Result<(), UsageError> {
    remove_finalizer(usages, usage, USAGE_FINALIZER)
        .await
        .map(drop)
        .map_err(kube_error(reference, "cannot remove finalizer"))
        .inspect_err(|e| ctx.failed(reference, "RemoveFinalizer", e))
}

/// Deletes the used resource again, with the propagation policy of the
/// refused deletion. The Usage is gone by now, and so is the in-use label
/// unless another Usage still protects the resource (whose webhook refusal
/// then stands). Best effort, as upstream: a failure is logged.
async fn replay_deletion(
    ctx: &UsageContext,
    reference: &ObjectRef,
    usage: &Value,
    used: &Value,
    policy: &str,
) {
    let Some(target) = ObjectRef::of(used) else {
        return;
    };
    let propagation = match policy {
        "Orphan" => PropagationPolicy::Orphan,
        "Foreground" => PropagationPolicy::Foreground,
        _ => PropagationPolicy::Background,
    };
    let params = DeleteParams {
        propagation_policy: Some(propagation),
        ..DeleteParams::default()
    };
    let deleted = match ctx.api_of(usage, &target).await {
        Ok(api) => api
            .delete(&target.name, &params)
            .await
            .map(drop)
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    match deleted {
        Ok(()) => {
            tracing::info!(usage = %reference, used = %target, policy, "replayed the deletion of the used resource");
            ctx.publish(
                reference,
                EventType::Normal,
                "ReplayDeletion",
                format!("Replayed the deletion of {target} with propagation policy {policy}"),
            );
        }
        Err(error) => {
            tracing::info!(usage = %reference, used = %target, %error, "cannot replay the deletion of the used resource");
        }
    }
}

/// The object `target` names, seen from the Usage (in its namespace, or
/// cluster-scoped for a ClusterUsage).
async fn get(
    ctx: &UsageContext,
    reference: &ObjectRef,
    usage: &Value,
    target: &Target,
    what: &'static str,
) -> Result<Value, UsageError> {
    let name = target.name.clone().unwrap_or_default();
    let object = ObjectRef {
        api_version: target.api_version.clone(),
        kind: target.kind.clone(),
        namespace: spec::used_namespace(usage).map(str::to_string),
        name: name.clone(),
    };
    let found = match ctx.acting_for(usage) {
        Ok(cluster) => cluster.get_live(&object).await,
        Err(e) => Err(e),
    };
    match found {
        Ok(Some(found)) => Ok(found),
        Ok(None) => Err(UsageError::Missing {
            usage: reference.to_string(),
            what,
            kind: target.kind.clone(),
            name,
        }),
        Err(source) => Err(ObjectError::cluster(reference, what)(source).into()),
    }
}

/// Sets (`in_use`) or removes the in-use label of `used` by a merge patch
/// of that one label, which leaves every other field to its owner.
async fn label_in_use(
    ctx: &UsageContext,
    reference: &ObjectRef,
    usage: &Value,
    used: &Value,
    in_use: bool,
) -> Result<(), UsageError> {
    let (what, event) = if in_use {
        (
            "cannot add in use label to the used resource",
            "AddInUseLabel",
        )
    } else {
        (
            "cannot remove in use label from the used resource",
            "RemoveInUseLabel",
        )
    };
    let Some(target) = ObjectRef::of(used) else {
        return Ok(());
    };
    let value = if in_use { json!("true") } else { Value::Null };
    let patch = json!({"metadata": {"labels": {LABEL_IN_USE: value}}});
    let patched = match ctx.api_of(usage, &target).await {
        Err(source) => Err(ObjectError::cluster(reference, what)(source).into()),
        Ok(api) => match api
            .patch(&target.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(()),
            // Gone meanwhile: nothing left to label.
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(source) => Err(kube_error(reference, what)(source)),
        },
    };
    patched.inspect_err(|e| ctx.failed(reference, event, e))
}

/// The Usage's owner references with `using` among them, as upstream's
/// `AddOwnerReference` (not a controller); `None` when it is there already.
fn with_owner(usage: &Value, using: &Value) -> Option<Vec<Value>> {
    let uid = text(using, "/metadata/uid")?;
    let mut owners = usage
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if owners.iter().any(|o| o["uid"] == uid) {
        return None;
    }
    owners.push(json!({
        "apiVersion": using["apiVersion"],
        "kind": using["kind"],
        "name": using.pointer("/metadata/name"),
        "uid": uid,
    }));
    Some(owners)
}

/// Sets the `Ready` condition (upstream's `Available`, or `Unavailable`
/// with `message`) and writes the status when it changed; returns whether
/// it did.
async fn set_ready(
    ctx: &UsageContext,
    reference: &ObjectRef,
    usages: &Api<DynamicObject>,
    usage: &mut Value,
    ready: bool,
    message: Option<&str>,
) -> Result<bool, UsageError> {
    let before = usage.get("status").cloned();
    let (status, reason) = if ready {
        ("True", "Available")
    } else {
        ("False", "Unavailable")
    };
    set_condition(usage, "Ready", status, reason, message, &now());
    if usage.get("status") == before.as_ref() {
        return Ok(false);
    }
    let name = text(usage, "/metadata/name").unwrap_or_default();
    let patch = json!({
        "metadata": {"resourceVersion": usage.pointer("/metadata/resourceVersion")},
        "status": usage["status"],
    });
    let stored = usages
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(kube_error(reference, "cannot update status of usage"))?;
    *usage = stored_value(ctx, reference, &stored)?;
    Ok(true)
}

fn stored_value(
    ctx: &UsageContext,
    reference: &ObjectRef,
    stored: &DynamicObject,
) -> Result<Value, UsageError> {
    to_value(stored, &ctx.policy.resource)
        .map_err(|source| ObjectError::encode(&reference)(source).into())
}

fn kube_error(reference: &ObjectRef, what: &'static str) -> impl FnOnce(kube::Error) -> UsageError {
    let object = ObjectError::kube(reference, what);
    move |source| object(source).into()
}

/// The Usages and ClusterUsages that protect `object`: the Usages of its
/// namespace, or for a cluster-scoped object the ClusterUsages. Those being
/// deleted count until their finalizer goes, as upstream.
pub async fn usages_of(client: &kube::Client, object: &Value) -> Result<Vec<Value>, kube::Error> {
    let (resource, namespace) = match text(object, "/metadata/namespace") {
        Some(namespace) => (usage_resource(), Some(namespace)),
        None => (cluster_usage_resource(), None),
    };
    let list = api_for(client, &resource, namespace)
        .list(&ListParams::default())
        .await?;
    let mut found = Vec::new();
    for item in &list.items {
        let usage = to_value(item, &resource).map_err(kube::Error::SerdeError)?;
        if spec::refers_to(&usage, object) {
            found.push(usage);
        }
    }
    Ok(found)
}

/// The admission webhook's answer to a deletion of `object` with the
/// propagation `policy`: the refusal's message when a Usage protects it.
/// Unless `dry_run`, a refusal stamps the deletion attempt on the object
/// (`usage.crossplane.io/deletion-attempt-with-policy`), which a Usage with
/// `replayDeletion` acts on when it goes; a stamp that fails is logged and
/// the deletion refused all the same. An error means the Usages could not
/// be listed.
pub async fn refuse_deletion(
    client: &kube::Client,
    object: &Value,
    policy: &str,
    dry_run: bool,
) -> Result<Option<String>, kube::Error> {
    let usages = usages_of(client, object).await?;
    if usages.is_empty() {
        return Ok(None);
    }
    let message = spec::in_use_message(&usages);
    let attempt = pointer::annotation(ANNOTATION_DELETION_ATTEMPT);
    if !dry_run
        && object.pointer(&attempt).and_then(Value::as_str) != Some(policy)
        && let Some(target) = ObjectRef::of(object)
    {
        let patch = json!({"metadata": {"annotations": {ANNOTATION_DELETION_ATTEMPT: policy}}});
        let stamped = match discovered(client, &target).await {
            Ok(resource) => api_for(client, &resource, target.namespace.as_deref())
                .patch(&target.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map(drop),
            Err(e) => Err(e),
        };
        // The refusal stands either way: what protects the resource matters
        // more than remembering the attempt (upstream answers 500 instead).
        if let Err(error) = stamped {
            tracing::warn!(object = %target, %error, "cannot record the refused deletion; replayDeletion will not replay it");
        }
    }
    Ok(Some(message))
}

/// The admission webhook's answer to a Usage created or updated: why it is
/// refused, if it is. A namespaced Usage may protect only a resource of its
/// own namespace, so neither one in another namespace nor one of a
/// cluster-scoped kind (upstream refuses the latter too). A kind the API
/// server does not serve (yet) is admitted; the controller judges it later.
pub async fn refuse_usage(
    client: &kube::Client,
    usage: &Value,
) -> Result<Option<String>, kube::Error> {
    if let Some(foreign) = spec::foreign_namespace(usage) {
        return Ok(Some(spec::foreign_namespace_message(usage, &foreign)));
    }
    let (Some(_), Some(of)) = (spec::namespace(usage), spec::of(usage)) else {
        return Ok(None);
    };
    match kube::discovery::pinned_kind(client, &gvk_of(&of.api_version, &of.kind)).await {
        Ok((_, capabilities)) if capabilities.scope == kube::discovery::Scope::Cluster => Ok(Some(
            spec::cluster_scoped_message(&of.api_version, &of.kind),
        )),
        Ok(_) => Ok(None),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
        Err(kube::Error::Discovery(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

fn gvk_of(api_version: &str, kind: &str) -> kube::api::GroupVersionKind {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    kube::api::GroupVersionKind::gvk(group, version, kind)
}

/// The resource serving `object`'s kind, by discovery.
async fn discovered(client: &kube::Client, object: &ObjectRef) -> Result<ApiResource, kube::Error> {
    kube::discovery::pinned_kind(client, &gvk_of(&object.api_version, &object.kind))
        .await
        .map(|(resource, _)| resource)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_using_resource_is_added_once_as_a_plain_owner() {
        let using =
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "uid": "u1"}});
        let usage = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "example.org/v1", "kind": "XApp", "name": "app", "uid": "xr", "controller": true},
        ]}});
        let owners = with_owner(&usage, &using).unwrap_or_default();
        assert_eq!(owners.len(), 2);
        assert_eq!(owners[0]["uid"], "xr");
        assert_eq!(
            owners[1],
            json!({"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "u1"})
        );
        let owned = json!({"metadata": {"ownerReferences": owners}});
        assert_eq!(with_owner(&owned, &using), None);
    }

    #[test]
    fn a_usage_of_another_namespace_or_without_a_kind_is_refused() {
        let usage = |of: Value| json!({"kind": "Usage", "metadata": {"name": "u", "namespace": "team-a"}, "spec": {"of": of, "reason": "r"}});
        // (of, refused)
        let cases = [
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "resourceRef": {"name": "c"}}),
                false,
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "resourceRef": {"name": "c", "namespace": "team-b"}}),
                true,
            ),
            (
                json!({"apiVersion": "v1", "resourceRef": {"name": "c"}}),
                true,
            ),
        ];
        for (of, refused) in cases {
            assert_eq!(refusal(&usage(of.clone())).is_some(), refused, "{of}");
        }
    }
}
