//! One Usage's reconcile, in named phases: (1) `refuse` what plait will
//! not act on, (2) `release` a deleted Usage (`release.rs`), (3)
//! `resolve_selectors` into `resourceRef`s, (4) `finalize_and_describe`,
//! (5) `protect` the used resource with the in-use label, (6)
//! `own_by_user`, (7) `set_ready`. A phase returns what the next needs, or
//! the reconcile's end.

use std::ops::ControlFlow;
use std::sync::Arc;

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::controller::Action;
use plait_reconcile::{EventType, ObjectRef, pointer, set_condition};
use serde_json::{Value, json};

use super::UsageError;
use super::context::UsageContext;
use super::release::release;
use super::resources::{get, kube_error, label_in_use, remove_own_finalizer, stored_value};
use super::spec::{self, Target};
use super::webhook::NOT_CONFIGURED_REASON;
use crate::controllers::kit::{self, ObjectError};
use crate::controllers::timing::now;
use crate::vocabulary::api::{ANNOTATION_USAGE_DETAILS, LABEL_IN_USE, USAGE_FINALIZER};
use crate::vocabulary::metrics::ReconcileResult;
use crate::vocabulary::object::{
    add_finalizer, api_for, has_finalizer, merge_patch, text, to_value,
};

/// How a reconcile ends: when to look again, and what the metrics count.
type End = (Action, ReconcileResult);

/// Reconciles one Usage or ClusterUsage.
pub async fn reconcile(
    object: Arc<DynamicObject>,
    ctx: Arc<UsageContext>,
) -> Result<Action, UsageError> {
    kit::counted(ctx.as_ref(), &object, reconcile_usage(&object, &ctx)).await
}

/// One Usage's reconcile, phase by phase.
async fn reconcile_usage(object: &DynamicObject, ctx: &UsageContext) -> Result<End, UsageError> {
    let reference = kit::reference(object, &ctx.policy.resource);
    let mut usage =
        to_value(object, &ctx.policy.resource).map_err(ObjectError::encode(&reference))?;
    let usages = api_for(ctx.client(), &ctx.policy.resource, spec::namespace(&usage));
    let deleting = object.metadata.deletion_timestamp.is_some();

    if let ControlFlow::Break(end) = refuse(ctx, &reference, &usages, &mut usage, deleting).await? {
        return Ok(end);
    }
    // A deleted Usage resolves nothing: what it never resolved, it never
    // protected.
    if deleting {
        return release(ctx, &reference, &usages, &usage).await;
    }
    let mut usage = resolve_selectors(ctx, &reference, usage).await?;
    let mut configured = finalize_and_describe(ctx, &reference, &usages, &mut usage).await?;
    let Some(of) = spec::of(&usage) else {
        return Ok((Action::await_change(), ReconcileResult::NotSynced));
    };
    configured |= protect(ctx, &reference, &usage, &of).await?;
    configured |= own_by_user(ctx, &reference, &usages, &mut usage).await?;
    let readiness = match ctx.protection.unprotected().await {
        None => Readiness::Available,
        Some(why) => Readiness::Unprotected(why),
    };
    let changed = set_ready(ctx, &reference, &usages, &mut usage, &readiness).await?;
    if changed && let Readiness::Unprotected(why) = &readiness {
        ctx.warn(&reference, NOT_CONFIGURED_REASON, why.clone());
    }
    configured |= changed;
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

/// Phase 1: a Usage plait will not act on is marked not ready and waits
/// for its spec to change; deleted, it only lets its finalizer go.
async fn refuse(
    ctx: &UsageContext,
    reference: &ObjectRef,
    usages: &Api<DynamicObject>,
    usage: &mut Value,
    deleting: bool,
) -> Result<ControlFlow<End>, UsageError> {
    let refused = match refusal(usage) {
        Some(refusal) => Some(refusal),
        None => cluster_scoped_refusal(ctx, reference, usage).await?,
    };
    let Some(refusal) = refused else {
        return Ok(ControlFlow::Continue(()));
    };
    // Such a Usage never labelled anything: nothing to release.
    if deleting {
        remove_own_finalizer(ctx, reference, usages, usage).await?;
        return Ok(ControlFlow::Break((
            Action::await_change(),
            ReconcileResult::Deleting,
        )));
    }
    ctx.warn(reference, "InvalidUsage", refusal.clone());
    set_ready(ctx, reference, usages, usage, &Readiness::Refused(refusal)).await?;
    // A change of the spec brings it back.
    Ok(ControlFlow::Break((
        Action::await_change(),
        ReconcileResult::NotSynced,
    )))
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

/// Phase 3: both selectors (`of`, `by`) resolved; returns the Usage as
/// stored after the last write.
async fn resolve_selectors(
    ctx: &UsageContext,
    reference: &ObjectRef,
    mut usage: Value,
) -> Result<Value, UsageError> {
    for (pointer, field) in [
        ("/spec/of", "spec.of.resourceSelector"),
        ("/spec/by", "spec.by.resourceSelector"),
    ] {
        if let Some(resolved) = resolve(ctx, reference, &usage, pointer, field).await? {
            usage = resolved;
        }
    }
    Ok(usage)
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
        let list_error =
            |e: String| unresolved(format!("cannot list resources matching labels: {e}"));
        if !ctx
            .serves(&target)
            .await
            .map_err(|e| list_error(e.to_string()))?
        {
            return Err(list_error(spec::no_kind_match(
                &target.api_version,
                &target.kind,
            )));
        }
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
        let candidates = listed.map_err(|e| list_error(e.to_string()))?;
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

/// Phase 4: gives the Usage its finalizer and the annotation that describes it;
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

/// Phase 5: the used resource labelled in use; true when the label was
/// written.
async fn protect(
    ctx: &UsageContext,
    reference: &ObjectRef,
    usage: &Value,
    of: &Target,
) -> Result<bool, UsageError> {
    let used = get(ctx, reference, usage, of, "cannot get used")
        .await
        .inspect_err(|e| ctx.failed(reference, "GetUsedResource", e))?;
    if text(&used, &pointer::label(LABEL_IN_USE)) == Some("true") {
        return Ok(false);
    }
    label_in_use(ctx, reference, usage, &used, true).await?;
    Ok(true)
}

/// Phase 6: the using resource, if the Usage names one, among the Usage's
/// owners; true when they were written.
async fn own_by_user(
    ctx: &UsageContext,
    reference: &ObjectRef,
    usages: &Api<DynamicObject>,
    usage: &mut Value,
) -> Result<bool, UsageError> {
    let Some(by) = spec::by(usage) else {
        return Ok(false);
    };
    let using = get(ctx, reference, usage, &by, "cannot get using")
        .await
        .inspect_err(|e| ctx.failed(reference, "GetUsingResource", e))?;
    let Some(owners) = with_owner(usage, &using) else {
        return Ok(false);
    };
    let stored = merge_patch(
        usages,
        usage,
        json!({"metadata": {"ownerReferences": owners}}),
    )
    .await
    .map_err(kube_error(
        reference,
        "cannot update usage resource with owner ref",
    ))
    .inspect_err(|e| ctx.failed(reference, "AddOwnerRefToUsage", e))?;
    *usage = stored_value(ctx, reference, &stored)?;
    Ok(true)
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

/// What a Usage's `Ready` condition says.
enum Readiness {
    /// It protects what it names (upstream's `Available`).
    Available,
    /// It is configured, but nothing refuses deletions: why.
    Unprotected(String),
    /// plait will not act on it: why.
    Refused(String),
}

/// Phase 7: sets the `Ready` condition and writes the status when it
/// changed; returns whether it did.
async fn set_ready(
    ctx: &UsageContext,
    reference: &ObjectRef,
    usages: &Api<DynamicObject>,
    usage: &mut Value,
    readiness: &Readiness,
) -> Result<bool, UsageError> {
    let before = usage.get("status").cloned();
    let (status, reason, message) = match readiness {
        Readiness::Available => ("True", "Available", None),
        Readiness::Unprotected(why) => ("False", NOT_CONFIGURED_REASON, Some(why.as_str())),
        Readiness::Refused(why) => ("False", "Unavailable", Some(why.as_str())),
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
