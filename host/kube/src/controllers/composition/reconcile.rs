//! One Composition's reconcile, in named phases: (1) a deleted Composition
//! is left to Kubernetes' garbage collector, which deletes its revisions
//! through their owner references; (2) `observe` reads its revisions and
//! what its steps run now, and hashes it; (3) `revise` makes the changes
//! [`plan`] asks for, ending the reconcile once a revision is created or
//! renumbered; (4) `collect_garbage` deletes old revisions no XR uses.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use plait_functions::{DIGESTS_ANNOTATION, FUNCTION_API_VERSION, FUNCTION_KIND, Pins, current_pin};
use plait_reconcile::ObjectRef;
use serde_json::{Value, json};

use super::context::{CompositionContext, cluster_error, kube_error};
use super::revisions::{
    Change, DEFAULT_REVISION_HISTORY_LIMIT, collectable, controller_reference, desired_pins,
    in_use, latest, match_labels, new_revision, owned_oldest_first, pipeline_steps, plan,
    revision_hash,
};
use super::{CompositionError, LABEL_COMPOSITION_NAME};
use crate::controllers::kit::{self, ObjectError};
use crate::vocabulary::api::{
    COMPOSITION_API_VERSION, FIELD_MANAGER, REVISION_KIND, XRD_API_VERSION, XRD_KIND, group_of,
    revision_resource,
};
use crate::vocabulary::metrics::ReconcileResult;
use crate::vocabulary::object::{is_status, text};

/// How a reconcile ends: when to look again, and what the metrics count.
type End = (Action, ReconcileResult);

/// Reconciles one Composition's revisions.
pub async fn reconcile(
    object: Arc<DynamicObject>,
    ctx: Arc<CompositionContext>,
) -> Result<Action, CompositionError> {
    let target = Arc::clone(&object);
    kit::counted(ctx.as_ref(), &target, reconcile_composition(object, &ctx)).await
}

/// One Composition's reconcile, phase by phase.
async fn reconcile_composition(
    object: Arc<DynamicObject>,
    ctx: &CompositionContext,
) -> Result<End, CompositionError> {
    // 1. A deleted Composition's revisions go with it, through their owner references.
    if object.metadata.deletion_timestamp.is_some() {
        return Ok((Action::await_change(), ReconcileResult::Deleting));
    }
    // 2. What the Composition is now, and the revisions it has.
    let mut observed = observe(&object, ctx).await?;
    // 3. The latest revision made to match it.
    if let ControlFlow::Break(end) = revise(ctx, &mut observed).await? {
        return Ok(end);
    }
    // 4. Old revisions no XR uses.
    collect_garbage(ctx, &observed.composition, &observed.revisions).await?;
    ctx.policy
        .backoff
        .succeeded(&kit::reference(&object, &ctx.policy.resource));
    Ok((Action::requeue(ctx.poll_interval), ReconcileResult::Success))
}

/// A Composition as this reconcile found it.
struct Observed {
    name: String,
    composition: Value,
    /// The revisions labelled with its name, as listed (and then as changed
    /// by this reconcile).
    revisions: Vec<Value>,
    /// What its steps run now.
    pins: Pins,
    /// Its state's hash.
    hash: String,
}

/// Phase 2: the Composition as JSON, its revisions, what its steps run
/// now, and its hash.
async fn observe(
    object: &DynamicObject,
    ctx: &CompositionContext,
) -> Result<Observed, CompositionError> {
    let name = object.metadata.name.clone().unwrap_or_default();
    let composition = crate::vocabulary::object::to_value(object, &ctx.policy.resource)
        .map_err(ObjectError::encode(format!("Composition {name:?}")))?;
    let labelled = BTreeMap::from([(LABEL_COMPOSITION_NAME.to_string(), name.clone())]);
    let revisions = ctx
        .cluster
        .list_async(COMPOSITION_API_VERSION, REVISION_KIND, None, &labelled)
        .await
        .map_err(cluster_error(&name, "cannot list its revisions"))?;
    let pins = pins_for(ctx, &composition, &revisions).await?;
    let hash = revision_hash(&composition).map_err(|source| CompositionError::Hash {
        composition: name.clone(),
        source,
    })?;
    Ok(Observed {
        name,
        composition,
        revisions,
        pins,
        hash,
    })
}

/// What `composition`'s steps would run now ([`desired_pins`]), reading
/// each Function it names from the API server: the watch event that
/// brought a Function's change here may be ahead of any store.
async fn pins_for(
    ctx: &CompositionContext,
    composition: &Value,
    revisions: &[Value],
) -> Result<Pins, CompositionError> {
    let name = text(composition, "/metadata/name").unwrap_or_default();
    let recorded = match latest(composition, revisions).map(Pins::of_revision) {
        Some(Ok(pins)) => pins,
        Some(Err(error)) => {
            tracing::warn!(composition = name, %error, "the latest revision's digests cannot be read");
            Pins::default()
        }
        None => Pins::default(),
    };
    let mut current = BTreeMap::new();
    for (_, function) in pipeline_steps(composition) {
        if current.contains_key(function) {
            continue;
        }
        let object = ctx
            .cluster
            .get_async(&ObjectRef {
                api_version: FUNCTION_API_VERSION.into(),
                kind: FUNCTION_KIND.into(),
                namespace: None,
                name: function.into(),
            })
            .await
            .map_err(cluster_error(name, "cannot read a Function it runs"))?;
        current.insert(function, current_pin(function, object.as_ref()));
    }
    Ok(desired_pins(composition, &recorded, |function| {
        current.get(function).cloned().flatten()
    }))
}

/// Phase 3: each change the plan asks for, in order. A created or
/// renumbered revision ends the reconcile: it comes back through the
/// watch, and the next reconcile collects what it replaced.
async fn revise(
    ctx: &CompositionContext,
    observed: &mut Observed,
) -> Result<ControlFlow<End>, CompositionError> {
    let api: Api<DynamicObject> = Api::all_with(ctx.cluster.client().clone(), &revision_resource());
    let changes = plan(
        &observed.composition,
        &observed.hash,
        &observed.pins,
        &observed.revisions,
    );
    for change in changes {
        match change {
            Change::Adopt(revision) => adopt(&api, observed, &revision).await?,
            Change::RecordDigests(revision) => record_digests(&api, observed, &revision).await?,
            Change::Renumber { name, revision } => {
                renumber(ctx, &api, observed, &name, revision).await?;
                return Ok(ControlFlow::Break((
                    Action::requeue(Duration::ZERO),
                    ReconcileResult::Success,
                )));
            }
            Change::Create { name, revision } => {
                create(ctx, &api, observed, &name, revision).await?;
                return Ok(ControlFlow::Break((
                    Action::await_change(),
                    ReconcileResult::Success,
                )));
            }
        }
    }
    Ok(ControlFlow::Continue(()))
}

fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PatchParams::default()
    }
}

/// The revision named `name` among those observed.
fn observed_revision<'a>(observed: &'a mut Observed, name: &str) -> Option<&'a mut Value> {
    observed
        .revisions
        .iter_mut()
        .find(|r| text(r, "/metadata/name") == Some(name))
}

/// Takes a revision that lost its owner reference back under the
/// Composition's control.
async fn adopt(
    api: &Api<DynamicObject>,
    observed: &mut Observed,
    revision: &str,
) -> Result<(), CompositionError> {
    let owner = controller_reference(&observed.composition);
    let name = observed.name.clone();
    let Some(found) = observed_revision(observed, revision) else {
        return Ok(());
    };
    let mut owners = found
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    owners.push(owner);
    let patch = json!({"metadata": {
        "ownerReferences": owners,
        "resourceVersion": found.pointer("/metadata/resourceVersion"),
    }});
    let patched = api
        .patch(revision, &patch_params(), &Patch::Merge(&patch))
        .await
        .map_err(kube_error(&name, format!("cannot adopt {revision}")))?;
    found["metadata"]["ownerReferences"] = json!(owners);
    found["metadata"]["resourceVersion"] = json!(patched.metadata.resource_version);
    Ok(())
}

/// Records the digests the Composition's steps run on a revision that
/// matches it but records none, as one upstream made.
async fn record_digests(
    api: &Api<DynamicObject>,
    observed: &mut Observed,
    revision: &str,
) -> Result<(), CompositionError> {
    let annotation = observed.pins.annotation();
    let name = observed.name.clone();
    let Some(found) = observed_revision(observed, revision) else {
        return Ok(());
    };
    let patch = json!({"metadata": {
        "annotations": {DIGESTS_ANNOTATION: annotation},
        "resourceVersion": found.pointer("/metadata/resourceVersion"),
    }});
    let patched = api
        .patch(revision, &patch_params(), &Patch::Merge(&patch))
        .await
        .map_err(kube_error(
            &name,
            format!("cannot record the digests its steps run on {revision}"),
        ))?;
    found["metadata"]["resourceVersion"] = json!(patched.metadata.resource_version);
    tracing::info!(composition = name, revision, "recorded digests on revision");
    Ok(())
}

/// Makes an older revision that matches the Composition again the latest.
async fn renumber(
    ctx: &CompositionContext,
    api: &Api<DynamicObject>,
    observed: &Observed,
    revision: &str,
    number: i64,
) -> Result<(), CompositionError> {
    let resource_version = observed
        .revisions
        .iter()
        .find(|r| text(r, "/metadata/name") == Some(revision))
        .and_then(|r| r.pointer("/metadata/resourceVersion").cloned());
    let patch = json!({
        "metadata": {"resourceVersion": resource_version},
        "spec": {"revision": number},
    });
    api.patch(revision, &patch_params(), &Patch::Merge(&patch))
        .await
        .map_err(kube_error(
            &observed.name,
            format!("cannot renumber {revision}"),
        ))?;
    ctx.publish(
        &observed.name,
        "UpdateRevision",
        format!("Revision {revision} is current again, as revision {number}"),
    );
    Ok(())
}

/// Creates revision `number` of the Composition as it stands.
async fn create(
    ctx: &CompositionContext,
    api: &Api<DynamicObject>,
    observed: &Observed,
    revision: &str,
    number: i64,
) -> Result<(), CompositionError> {
    let name = &observed.name;
    let made = new_revision(
        &observed.composition,
        &observed.hash,
        &observed.pins,
        revision,
        number,
    );
    let dynamic: DynamicObject = serde_json::from_value(made)
        .map_err(ObjectError::encode(format!("Composition {name:?}")))?;
    let post_params = PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PostParams::default()
    };
    api.create(&post_params, &dynamic)
        .await
        .map_err(kube_error(
            name,
            format!("cannot create CompositionRevision {revision}"),
        ))?;
    tracing::info!(composition = name, revision, number, "created revision");
    ctx.publish(
        name,
        "CreateRevision",
        format!("Created new revision {number}"),
    );
    Ok(())
}

/// Phase 4: revisions beyond the Composition's `revisionHistoryLimit`
/// deleted, oldest first, sparing any an XR references or would select.
async fn collect_garbage(
    ctx: &CompositionContext,
    composition: &Value,
    revisions: &[Value],
) -> Result<(), CompositionError> {
    let name = text(composition, "/metadata/name").unwrap_or_default();
    let limit = composition
        .pointer("/spec/revisionHistoryLimit")
        .and_then(Value::as_i64)
        .unwrap_or(DEFAULT_REVISION_HISTORY_LIMIT);
    if collectable(composition, revisions, limit, &BTreeSet::new()).is_empty() {
        return Ok(());
    }
    // Deletes nothing when it cannot tell which revisions are in use.
    let Some(used) = revisions_in_use(ctx, composition, revisions).await? else {
        return Ok(());
    };
    let api: Api<DynamicObject> = Api::all_with(ctx.cluster.client().clone(), &revision_resource());
    for revision in collectable(composition, revisions, limit, &used) {
        match api.delete(&revision, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(e) if is_status(&e, 404) => {}
            Err(e) => {
                return Err(kube_error(
                    name,
                    format!("cannot delete CompositionRevision {revision}"),
                )(e)
                .into());
            }
        }
        tracing::info!(composition = name, revision, "deleted unused revision");
    }
    Ok(())
}

/// The names of the revisions XRs of the Composition's kind use or would
/// select ([`in_use`]); `None` when the Composition names no XR kind.
async fn revisions_in_use(
    ctx: &CompositionContext,
    composition: &Value,
    revisions: &[Value],
) -> Result<Option<BTreeSet<String>>, CompositionError> {
    let name = text(composition, "/metadata/name").unwrap_or_default();
    let (Some(api_version), Some(kind)) = (
        text(composition, "/spec/compositeTypeRef/apiVersion"),
        text(composition, "/spec/compositeTypeRef/kind"),
    ) else {
        return Ok(None);
    };
    let none = BTreeMap::new();
    let xrs = ctx
        .cluster
        .list_async(api_version, kind, None, &none)
        .await
        .map_err(cluster_error(
            name,
            "cannot list the composite resources it composes",
        ))?;
    let group = group_of(api_version);
    let xrds = ctx
        .cluster
        .list_async(XRD_API_VERSION, XRD_KIND, None, &none)
        .await
        .map_err(cluster_error(name, "cannot list XRDs"))?;
    let default_selector = xrds
        .iter()
        .find(|x| {
            text(x, "/spec/group") == Some(group) && text(x, "/spec/names/kind") == Some(kind)
        })
        .and_then(|x| match_labels(x.pointer("/spec/defaultCompositionRevisionSelector")));
    let owned = owned_oldest_first(composition, revisions);
    Ok(Some(in_use(name, &owned, &xrs, default_selector.as_ref())))
}
