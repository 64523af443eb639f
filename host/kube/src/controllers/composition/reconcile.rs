//! One Composition's reconcile, in named phases: (1) a deleted Composition
//! is left to Kubernetes' garbage collector, which deletes its revisions
//! through their owner references; (2) `observe` reads its revisions and
//! what its steps run now, and hashes it; (3) `revise` makes the changes
//! [`plan`] asks for, ending the reconcile once a revision is created or
//! renumbered; (4) `collect_garbage` deletes old revisions no XR uses.
//! Every phase reads and writes through [`RevisionWrites`].

use std::collections::BTreeSet;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use kube::api::DynamicObject;
use kube::runtime::controller::Action;
use plait_functions::{DIGESTS_ANNOTATION, Pins, current_pin};
use serde_json::{Value, json};

use super::CompositionError;
use super::context::{CompositionContext, cluster_error};
use super::revisions::{
    Change, DEFAULT_REVISION_HISTORY_LIMIT, RevisionUses, collectable, controller_reference,
    desired_pins, latest, match_labels, new_revision, owned_oldest_first, pipeline_steps, plan,
    revision_hash,
};
use super::writes::RevisionWrites;
use crate::controllers::kit::{self, ObjectError};
use crate::vocabulary::api::{XRD_API_VERSION, XRD_KIND, group_of};
use crate::vocabulary::metrics::ReconcileResult;
use crate::vocabulary::object::text;

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

async fn reconcile_composition(
    object: Arc<DynamicObject>,
    ctx: &CompositionContext,
) -> Result<End, CompositionError> {
    // 1. A deleted Composition's revisions go with it, through their owner references.
    if object.metadata.deletion_timestamp.is_some() {
        return Ok((Action::await_change(), ReconcileResult::Deleting));
    }
    let name = object.metadata.name.clone().unwrap_or_default();
    let composition = crate::vocabulary::object::to_value(&object, &ctx.policy.resource)
        .map_err(ObjectError::encode(format!("Composition {name:?}")))?;
    let end = phases(ctx, composition, ctx.poll_interval).await?;
    if end.1 == ReconcileResult::Success {
        ctx.policy
            .backoff
            .succeeded(&kit::reference(&object, &ctx.policy.resource));
    }
    Ok(end)
}

/// Phases 2 to 4 of one live Composition's reconcile, through `writes`;
/// a Composition in sync is looked at again after `poll_interval`.
async fn phases(
    writes: &impl RevisionWrites,
    composition: Value,
    poll_interval: Duration,
) -> Result<End, CompositionError> {
    // 2. What the Composition is now, and the revisions it has.
    let mut observed = observe(writes, composition).await?;
    // 3. The latest revision made to match it.
    if let ControlFlow::Break(end) = revise(writes, &mut observed).await? {
        return Ok(end);
    }
    // 4. Old revisions no XR uses.
    collect_garbage(writes, &observed.composition, &observed.revisions).await?;
    Ok((Action::requeue(poll_interval), ReconcileResult::Success))
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

/// Phase 2: the Composition's revisions, what its steps run now, and its hash.
async fn observe(
    writes: &impl RevisionWrites,
    composition: Value,
) -> Result<Observed, CompositionError> {
    let name = text(&composition, "/metadata/name")
        .unwrap_or_default()
        .to_string();
    let revisions = writes
        .revisions(&name)
        .await
        .map_err(cluster_error(&name, "cannot list its revisions"))?;
    let pins = pins_for(writes, &composition, &revisions).await?;
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
/// each Function it names.
async fn pins_for(
    writes: &impl RevisionWrites,
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
    let mut current = std::collections::BTreeMap::new();
    for (_, function) in pipeline_steps(composition) {
        if current.contains_key(function) {
            continue;
        }
        let object = writes
            .function(function)
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
    writes: &impl RevisionWrites,
    observed: &mut Observed,
) -> Result<ControlFlow<End>, CompositionError> {
    let changes = plan(
        &observed.composition,
        &observed.hash,
        &observed.pins,
        &observed.revisions,
    );
    for change in changes {
        match change {
            Change::Adopt(revision) => adopt(writes, observed, &revision).await?,
            Change::RecordDigests(revision) => record_digests(writes, observed, &revision).await?,
            Change::Renumber { name, revision } => {
                renumber(writes, observed, &name, revision).await?;
                return Ok(ControlFlow::Break((
                    Action::requeue(Duration::ZERO),
                    ReconcileResult::Success,
                )));
            }
            Change::Create { name, revision } => {
                create(writes, observed, &name, revision).await?;
                return Ok(ControlFlow::Break((
                    Action::await_change(),
                    ReconcileResult::Success,
                )));
            }
        }
    }
    Ok(ControlFlow::Continue(()))
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
    writes: &impl RevisionWrites,
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
    let version = writes
        .patch_revision(revision, &patch)
        .await
        .map_err(cluster_error(&name, format!("cannot adopt {revision}")))?;
    found["metadata"]["ownerReferences"] = json!(owners);
    found["metadata"]["resourceVersion"] = version;
    Ok(())
}

/// Records the digests the Composition's steps run on a revision that
/// matches it but records none, as one upstream made.
async fn record_digests(
    writes: &impl RevisionWrites,
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
    let version = writes
        .patch_revision(revision, &patch)
        .await
        .map_err(cluster_error(
            &name,
            format!("cannot record the digests its steps run on {revision}"),
        ))?;
    found["metadata"]["annotations"][DIGESTS_ANNOTATION] = json!(annotation);
    found["metadata"]["resourceVersion"] = version;
    tracing::info!(composition = name, revision, "recorded digests on revision");
    Ok(())
}

/// Makes an older revision that matches the Composition again the latest.
async fn renumber(
    writes: &impl RevisionWrites,
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
    writes
        .patch_revision(revision, &patch)
        .await
        .map_err(cluster_error(
            &observed.name,
            format!("cannot renumber {revision}"),
        ))?;
    writes.publish(
        &observed.name,
        "UpdateRevision",
        format!("Revision {revision} is current again, as revision {number}"),
    );
    Ok(())
}

/// Creates revision `number` of the Composition as it stands.
async fn create(
    writes: &impl RevisionWrites,
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
    writes.create_revision(&made).await.map_err(cluster_error(
        name,
        format!("cannot create CompositionRevision {revision}"),
    ))?;
    tracing::info!(composition = name, revision, number, "created revision");
    writes.publish(
        name,
        "CreateRevision",
        format!("Created new revision {number}"),
    );
    Ok(())
}

/// Phase 4: revisions beyond the Composition's `revisionHistoryLimit`
/// deleted, oldest first, sparing any an XR references or would select.
async fn collect_garbage(
    writes: &impl RevisionWrites,
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
    let Some(used) = revisions_in_use(writes, composition, revisions).await? else {
        return Ok(());
    };
    for revision in collectable(composition, revisions, limit, &used) {
        writes
            .delete_revision(&revision)
            .await
            .map_err(cluster_error(
                name,
                format!("cannot delete CompositionRevision {revision}"),
            ))?;
        tracing::info!(composition = name, revision, "deleted unused revision");
    }
    Ok(())
}

/// The names of the revisions XRs of the Composition's kind use or would
/// select ([`in_use`]); `None` when the Composition names no XR kind.
async fn revisions_in_use(
    writes: &impl RevisionWrites,
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
    let mut uses = RevisionUses::new(name);
    writes
        .each(api_version, kind, |xr| uses.add(xr))
        .await
        .map_err(cluster_error(
            name,
            "cannot list the composite resources it composes",
        ))?;
    let group = group_of(api_version);
    let xrds = writes
        .all(XRD_API_VERSION, XRD_KIND)
        .await
        .map_err(cluster_error(name, "cannot list XRDs"))?;
    let default_selector = xrds
        .iter()
        .find(|x| {
            text(x, "/spec/group") == Some(group) && text(x, "/spec/names/kind") == Some(kind)
        })
        .and_then(|x| match_labels(x.pointer("/spec/defaultCompositionRevisionSelector")));
    let owned = owned_oldest_first(composition, revisions);
    Ok(Some(uses.in_use(&owned, default_selector.as_ref())))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use plait_reconcile::{Cluster, ClusterError, MemoryCluster, ObjectRef};

    use super::*;
    use crate::vocabulary::api::{COMPOSITION_API_VERSION, COMPOSITION_KIND};

    const POLL: Duration = Duration::from_secs(60);

    /// The Composition `c` of XApps, its one step's input `input`, keeping
    /// `history` revisions.
    fn composition(input: &str, history: i64) -> Value {
        json!({
            "apiVersion": COMPOSITION_API_VERSION, "kind": COMPOSITION_KIND,
            "metadata": {"name": "c", "uid": "cuid"},
            "spec": {
                "compositeTypeRef": {"apiVersion": "example.org/v1", "kind": "XApp"},
                "revisionHistoryLimit": history,
                "mode": "Pipeline",
                "pipeline": [{
                    "step": "compose",
                    "functionRef": {"name": "function-patch-and-transform"},
                    "input": {"apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources",
                              "resources": [{"name": input, "base": {"apiVersion": "v1", "kind": "ConfigMap"}}]},
                }],
            },
        })
    }

    /// The revisions of `c`, by number.
    async fn numbers(cluster: &MemoryCluster) -> Vec<i64> {
        let mut numbers: Vec<i64> = cluster
            .revisions("c")
            .await
            .unwrap()
            .iter()
            .filter_map(|r| r.pointer("/spec/revision").and_then(Value::as_i64))
            .collect();
        numbers.sort_unstable();
        numbers
    }

    fn revision_named(cluster: &MemoryCluster, number: i64) -> Value {
        cluster
            .list(
                COMPOSITION_API_VERSION,
                "CompositionRevision",
                None,
                &Default::default(),
            )
            .unwrap()
            .into_iter()
            .find(|r| r.pointer("/spec/revision").and_then(Value::as_i64) == Some(number))
            .unwrap()
    }

    /// An XR that references revision `number` of `c`.
    fn xr_using(cluster: &MemoryCluster, number: i64) -> Value {
        let revision = revision_named(cluster, number);
        json!({
            "apiVersion": "example.org/v1", "kind": "XApp",
            "metadata": {"name": "x", "namespace": "team"},
            "spec": {"crossplane": {"compositionRevisionRef": {"name": revision["metadata"]["name"]}}},
        })
    }

    /// When a reconcile that sent `events` looks again: a created revision
    /// comes back through the watch, a renumbered one at once.
    fn next_look(events: &[&str]) -> Action {
        match events {
            ["CreateRevision"] => Action::await_change(),
            ["UpdateRevision"] => Action::requeue(Duration::ZERO),
            _ => Action::requeue(POLL),
        }
    }

    #[tokio::test]
    async fn a_compositions_revisions_follow_its_edits_and_old_ones_go_unless_an_xr_uses_them() {
        /// What a reconcile meets and leaves: what it checks, the input of
        /// the Composition's step, the revision numbers after, the events.
        type Step = (
            &'static str,
            &'static str,
            &'static [i64],
            &'static [&'static str],
        );
        let created: &[&str] = &["CreateRevision"];
        // (history limit, whether an XR uses revision 1 once it exists, the reconciles)
        let flows: [(i64, bool, &[Step]); 3] = [
            (
                1,
                false,
                &[
                    ("new: revision 1", "a", &[1], created),
                    ("unchanged: nothing written", "a", &[1], &[]),
                    (
                        "edited: revision 2, 1 kept as history",
                        "b",
                        &[1, 2],
                        created,
                    ),
                    ("edited again: revision 3", "c", &[1, 2, 3], created),
                    ("then revision 1, beyond the limit, goes", "c", &[2, 3], &[]),
                ],
            ),
            (
                1,
                true,
                &[
                    ("new", "a", &[1], created),
                    ("edited", "b", &[1, 2], created),
                    ("edited again", "c", &[1, 2, 3], created),
                    (
                        "revision 1 stays while an XR uses it; 2 goes",
                        "c",
                        &[1, 3],
                        &[],
                    ),
                ],
            ),
            (
                3,
                false,
                &[
                    ("new", "a", &[1], created),
                    ("edited", "b", &[1, 2], created),
                    (
                        "edited back: revision 1 is current again as 3",
                        "a",
                        &[2, 3],
                        &["UpdateRevision"],
                    ),
                    ("then in sync", "a", &[2, 3], &[]),
                ],
            ),
        ];
        for (history, xr_uses_first, steps) in flows {
            let cluster = MemoryCluster::new();
            for &(what, input, want, events) in steps {
                let xrs = cluster.all("example.org/v1", "XApp").await.unwrap();
                if xr_uses_first && xrs.is_empty() && !numbers(&cluster).await.is_empty() {
                    cluster.seed([xr_using(&cluster, 1)]).unwrap();
                }
                let before = cluster.events().len();
                let (next, result) = phases(&cluster, composition(input, history), POLL)
                    .await
                    .unwrap();
                assert_eq!(result, ReconcileResult::Success, "{what}");
                assert_eq!(next, next_look(events), "{what}");
                assert_eq!(numbers(&cluster).await, want, "{what}");
                let reasons: Vec<String> = cluster.events()[before..]
                    .iter()
                    .map(|e| e.reason.clone())
                    .collect();
                assert_eq!(reasons, events, "{what}");
            }
        }
    }

    #[tokio::test]
    async fn a_revision_made_elsewhere_is_adopted_with_the_digests_its_steps_run() {
        let cluster = MemoryCluster::new();
        phases(&cluster, composition("a", 1), POLL).await.unwrap();
        let mut made = revision_named(&cluster, 1);
        // As upstream made it, or left after its Composition was recreated.
        made["metadata"]["annotations"] = json!({});
        made["metadata"]["ownerReferences"] = json!([]);
        cluster.seed([made]).unwrap();
        let (next, _) = phases(&cluster, composition("a", 1), POLL).await.unwrap();
        assert_eq!(next, Action::requeue(POLL));
        assert_eq!(numbers(&cluster).await, [1], "no new revision");
        let adopted = revision_named(&cluster, 1);
        assert_eq!(adopted["metadata"]["ownerReferences"][0]["uid"], "cuid");
        assert!(
            adopted["metadata"]["annotations"][DIGESTS_ANNOTATION].is_string(),
            "{adopted}"
        );
        let stale = {
            let mut patch = json!({"metadata": {"resourceVersion": "0"}});
            patch["spec"] = json!({"revision": 9});
            patch
        };
        let name = text(&adopted, "/metadata/name").unwrap();
        let conflict = cluster.patch_revision(name, &stale).await.unwrap_err();
        assert!(
            matches!(conflict, ClusterError::Conflict { .. }),
            "a patch from a stale read conflicts: {conflict}"
        );
        let reference = ObjectRef::of(&adopted).unwrap();
        assert_eq!(
            cluster.get(&reference).unwrap().unwrap()["spec"]["revision"],
            1
        );
    }
}
