//! The Composition controller: keeps one CompositionRevision per distinct
//! state of each Composition, numbered in the order the states were seen,
//! and garbage-collects old revisions no XR uses.
//!
//! XRs compose from a revision, never from the Composition itself, so an XR
//! pinned to a revision (`compositionUpdatePolicy: Manual`) keeps its output
//! however the Composition is edited later.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::{Controller, watcher};
use plait_reconcile::{ClusterError, Event, EventType, ObjectRef};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::adapter::cluster::KubeCluster;
use crate::controllers::reconciler::{self, Controlled, ReconcileFailure};
use crate::controllers::timing::Backoff;
use crate::vocabulary::api::{
    COMPOSITION_API_VERSION, COMPOSITION_KIND, REVISION_KIND, XRD_API_VERSION, XRD_KIND,
    composition_resource, group_of, revision_resource,
};
use crate::vocabulary::metrics::ReconcileResult;
use crate::vocabulary::object::{is_status, text};

pub const LABEL_COMPOSITION_NAME: &str = "crossplane.io/composition-name";
pub const LABEL_COMPOSITION_HASH: &str = "crossplane.io/composition-hash";
/// Revisions kept besides the latest when a Composition sets no
/// `revisionHistoryLimit`, as upstream defaults it.
pub const DEFAULT_REVISION_HISTORY_LIMIT: i64 = 1;

#[derive(Debug, thiserror::Error)]
pub enum RevisionError {
    #[error("Composition {composition:?}: {what}: {source}")]
    Kube {
        composition: String,
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("Composition {composition:?}: {source}")]
    Cluster {
        composition: String,
        #[source]
        source: ClusterError,
    },
    #[error("Composition {composition:?}: cannot be encoded: {source}")]
    Encode {
        composition: String,
        #[source]
        source: serde_json::Error,
    },
}

impl ReconcileFailure for RevisionError {
    /// Another writer changed the revisions first (with sharded replicas,
    /// every replica keeps revisions): the next reconcile reads what it made.
    fn is_conflict(&self) -> bool {
        match self {
            RevisionError::Kube { source, .. } => crate::vocabulary::object::is_stale_write(source),
            RevisionError::Cluster { source, .. } => {
                matches!(source, ClusterError::Conflict { .. })
            }
            RevisionError::Encode { .. } => false,
        }
    }

    fn metric_label(&self) -> &'static str {
        match self {
            RevisionError::Kube { .. } => "kube",
            RevisionError::Cluster { .. } => "cluster",
            RevisionError::Encode { .. } => "encode",
        }
    }
}

fn labels_of(object: &Value) -> Map<String, Value> {
    object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// The hash identifying a state of a Composition: SHA-256 over the canonical
/// (key-sorted) JSON of its labels, annotations and spec, as upstream hashes
/// those three, so a relabelled Composition gets a revision with the new labels.
pub fn composition_hash(composition: &Value) -> String {
    let part = |pointer: &str| {
        composition
            .pointer(pointer)
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or_else(|| json!({}))
    };
    let canonical = json!([
        part("/metadata/labels"),
        part("/metadata/annotations"),
        part("/spec")
    ]);
    hex::encode(Sha256::digest(canonical.to_string()))
}

/// Revision `number` of `composition` as it stands.
pub fn new_revision(composition: &Value, number: i64) -> Value {
    let name = text(composition, "/metadata/name").unwrap_or_default();
    let hash = composition_hash(composition);
    let mut labels = labels_of(composition);
    labels.insert(LABEL_COMPOSITION_NAME.into(), json!(name));
    // A label value holds at most 63 characters.
    labels.insert(LABEL_COMPOSITION_HASH.into(), json!(hash[..63]));
    let mut spec = composition
        .get("spec")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    // How many revisions to keep concerns the Composition, not a revision.
    spec.remove("revisionHistoryLimit");
    spec.insert("revision".into(), json!(number));
    json!({
        "apiVersion": COMPOSITION_API_VERSION,
        "kind": REVISION_KIND,
        "metadata": {
            "name": format!("{name}-{}", &hash[..7]),
            "labels": labels,
            "ownerReferences": [controller_reference(composition)],
        },
        "spec": spec,
    })
}

fn controller_reference(composition: &Value) -> Value {
    json!({
        "apiVersion": COMPOSITION_API_VERSION,
        "kind": COMPOSITION_KIND,
        "name": composition.pointer("/metadata/name"),
        "uid": composition.pointer("/metadata/uid"),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// The UID of the object's controller, if it has one.
fn controller_uid(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller") == Some(&Value::Bool(true)))?
        .get("uid")?
        .as_str()
}

fn revision_number(revision: &Value) -> i64 {
    revision
        .pointer("/spec/revision")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// The revision with the highest number among those `composition` controls.
pub fn latest<'a>(composition: &Value, revisions: &'a [Value]) -> Option<&'a Value> {
    let uid = text(composition, "/metadata/uid")?;
    revisions
        .iter()
        .filter(|r| controller_uid(r) == Some(uid))
        .filter(|r| revision_number(r) > 0)
        .max_by_key(|r| revision_number(r))
}

/// One change a Composition's revisions need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A revision of this Composition that lost its owner reference (as
    /// after a backup and restore) is taken back under its control.
    Adopt(String),
    /// An older revision matches the Composition again: it becomes the latest.
    Renumber { name: String, revision: i64 },
    /// No revision matches the Composition: revision `n` is created.
    Create(i64),
}

/// What it takes for the latest revision to match `composition`, given the
/// revisions labelled with its name.
pub fn plan(composition: &Value, revisions: &[Value]) -> Vec<Change> {
    let uid = text(composition, "/metadata/uid");
    let hash = composition_hash(composition);
    let latest_number = latest(composition, revisions).map_or(0, revision_number);
    let mut changes = Vec::new();
    let mut matching = None;
    for revision in revisions {
        let Some(name) = text(revision, "/metadata/name") else {
            continue;
        };
        match controller_uid(revision) {
            None => changes.push(Change::Adopt(name.to_string())),
            Some(owner) if Some(owner) != uid => continue,
            Some(_) => {}
        }
        if text(revision, "/metadata/labels/crossplane.io~1composition-hash") != Some(&hash[..63]) {
            continue;
        }
        matching = Some((name, revision_number(revision)));
    }
    match matching {
        Some((name, number)) if number != latest_number => changes.push(Change::Renumber {
            name: name.to_string(),
            revision: latest_number + 1,
        }),
        Some(_) => {}
        None => changes.push(Change::Create(latest_number + 1)),
    }
    changes
}

/// The match labels of a `{matchLabels: {...}}` selector.
pub fn match_labels(selector: Option<&Value>) -> Option<BTreeMap<String, String>> {
    let labels = selector?.get("matchLabels")?.as_object()?;
    Some(
        labels
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect(),
    )
}

fn selects(labels: &BTreeMap<String, String>, revision: &Value) -> bool {
    labels.iter().all(|(k, v)| {
        revision.pointer("/metadata/labels").and_then(|l| l.get(k)) == Some(&json!(v))
    })
}

/// Names of `revisions` (sorted oldest first) that XRs use or would select
/// on their next reconcile: the one each XR references, and the newest
/// matching each revision selector an XR of this Composition (or the XRD's
/// default) carries.
pub fn in_use(
    composition: &str,
    revisions: &[&Value],
    xrs: &[Value],
    default_selector: Option<&BTreeMap<String, String>>,
) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    let mut selectors: Vec<BTreeMap<String, String>> =
        default_selector.into_iter().cloned().collect();
    for xr in xrs {
        // Which schema an XR follows is not known here, so both places are read.
        for machinery in ["/spec/crossplane", "/spec"] {
            if let Some(name) = text(xr, &format!("{machinery}/compositionRevisionRef/name")) {
                used.insert(name.to_string());
            }
            let composition_ref = text(xr, &format!("{machinery}/compositionRef/name"));
            if composition_ref.is_some_and(|c| c != composition) {
                continue;
            }
            if let Some(labels) =
                match_labels(xr.pointer(&format!("{machinery}/compositionRevisionSelector")))
            {
                selectors.push(labels);
            }
        }
    }
    for labels in &selectors {
        if let Some(newest) = revisions.iter().rev().find(|r| selects(labels, r))
            && let Some(name) = text(newest, "/metadata/name")
        {
            used.insert(name.to_string());
        }
    }
    used
}

/// The revisions to delete: beyond `limit` besides the latest, oldest
/// first, never the latest and never one in use. A limit of 0 keeps all.
pub fn collectable(
    composition: &Value,
    revisions: &[Value],
    limit: i64,
    used: &BTreeSet<String>,
) -> Vec<String> {
    let owned = owned_oldest_first(composition, revisions);
    let Ok(limit) = usize::try_from(limit) else {
        return Vec::new();
    };
    if limit == 0 || owned.len() <= limit + 1 {
        return Vec::new();
    }
    let older = &owned[..owned.len() - 1];
    older
        .iter()
        .filter_map(|r| text(r, "/metadata/name"))
        .filter(|name| !used.contains(*name))
        .take(older.len() - limit)
        .map(str::to_string)
        .collect()
}

fn owned_oldest_first<'a>(composition: &Value, revisions: &'a [Value]) -> Vec<&'a Value> {
    let uid = text(composition, "/metadata/uid");
    let mut owned: Vec<&Value> = revisions
        .iter()
        .filter(|r| uid.is_some() && controller_uid(r) == uid)
        .collect();
    owned.sort_by_key(|r| revision_number(r));
    owned
}

/// What the Composition controller works with.
pub struct RevisionContext {
    pub cluster: KubeCluster,
    pub poll_interval: Duration,
    resource: ApiResource,
    backoff: Backoff<ObjectRef>,
    conflicts: Backoff<ObjectRef>,
}

impl RevisionContext {
    pub fn new(
        cluster: KubeCluster,
        timing: &crate::controllers::timing::Timing,
    ) -> RevisionContext {
        RevisionContext {
            cluster,
            poll_interval: timing.poll_interval,
            resource: composition_resource(),
            backoff: Backoff::of(timing),
            conflicts: Backoff::conflicts(timing),
        }
    }
}

impl Controlled for RevisionContext {
    fn resource(&self) -> &ApiResource {
        &self.resource
    }

    fn backoff(&self) -> &Backoff<ObjectRef> {
        &self.backoff
    }

    fn conflicts(&self) -> &Backoff<ObjectRef> {
        &self.conflicts
    }
}

fn kube_error(
    composition: &str,
    what: impl Into<String>,
) -> impl FnOnce(kube::Error) -> RevisionError {
    let composition = composition.to_string();
    let what = what.into();
    move |source| RevisionError::Kube {
        composition,
        what,
        source,
    }
}

fn cluster_error(composition: &str) -> impl FnOnce(ClusterError) -> RevisionError {
    let composition = composition.to_string();
    move |source| RevisionError::Cluster {
        composition,
        source,
    }
}

/// Runs the Composition controller until `shutdown` resolves.
pub async fn run(
    ctx: Arc<RevisionContext>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let client = ctx.cluster.client().clone();
    let compositions: Api<DynamicObject> = Api::all_with(client.clone(), &composition_resource());
    let revisions: Api<DynamicObject> = Api::all_with(client, &revision_resource());
    Controller::new_with(
        compositions,
        watcher::Config::default(),
        composition_resource(),
    )
    .owns_with(revisions, revision_resource(), watcher::Config::default())
    .graceful_shutdown_on(shutdown)
    .run(reconcile, reconciler::error_policy, ctx)
    .for_each(|_| futures::future::ready(()))
    .await;
}

/// Reconciles one Composition's revisions.
pub async fn reconcile(
    object: Arc<DynamicObject>,
    ctx: Arc<RevisionContext>,
) -> Result<Action, RevisionError> {
    let target = Arc::clone(&object);
    reconciler::counted(ctx.as_ref(), &target, reconcile_composition(object, &ctx)).await
}

async fn reconcile_composition(
    object: Arc<DynamicObject>,
    ctx: &RevisionContext,
) -> Result<(Action, ReconcileResult), RevisionError> {
    let name = object.metadata.name.clone().unwrap_or_default();
    if object.metadata.deletion_timestamp.is_some() {
        // Revisions go with the Composition through their owner references.
        return Ok((Action::await_change(), ReconcileResult::Deleting));
    }
    let composition =
        crate::vocabulary::object::to_value(&object, &ctx.resource).map_err(|source| {
            RevisionError::Encode {
                composition: name.clone(),
                source,
            }
        })?;
    let api: Api<DynamicObject> = Api::all_with(ctx.cluster.client().clone(), &revision_resource());
    let labelled = BTreeMap::from([(LABEL_COMPOSITION_NAME.to_string(), name.clone())]);
    let mut revisions = ctx
        .cluster
        .list_async(COMPOSITION_API_VERSION, REVISION_KIND, None, &labelled)
        .await
        .map_err(cluster_error(&name))?;

    for change in plan(&composition, &revisions) {
        match change {
            Change::Adopt(revision) => {
                let Some(found) = revisions
                    .iter_mut()
                    .find(|r| text(r, "/metadata/name") == Some(revision.as_str()))
                else {
                    continue;
                };
                let mut owners = found
                    .pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                owners.push(controller_reference(&composition));
                let patch = json!({"metadata": {
                    "ownerReferences": owners,
                    "resourceVersion": found.pointer("/metadata/resourceVersion"),
                }});
                let patched = api
                    .patch(&revision, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(kube_error(&name, format!("cannot adopt {revision}")))?;
                found["metadata"]["ownerReferences"] = json!(owners);
                found["metadata"]["resourceVersion"] = json!(patched.metadata.resource_version);
            }
            Change::Renumber {
                name: revision,
                revision: number,
            } => {
                let resource_version = revisions
                    .iter()
                    .find(|r| text(r, "/metadata/name") == Some(revision.as_str()))
                    .and_then(|r| r.pointer("/metadata/resourceVersion").cloned());
                let patch = json!({
                    "metadata": {"resourceVersion": resource_version},
                    "spec": {"revision": number},
                });
                api.patch(&revision, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(kube_error(&name, format!("cannot renumber {revision}")))?;
                publish(
                    ctx,
                    &name,
                    "UpdateRevision",
                    format!("Revision {revision} is current again, as revision {number}"),
                );
                return Ok((Action::requeue(Duration::ZERO), ReconcileResult::Success));
            }
            Change::Create(number) => {
                let revision = new_revision(&composition, number);
                let dynamic: DynamicObject =
                    serde_json::from_value(revision).map_err(|source| RevisionError::Encode {
                        composition: name.clone(),
                        source,
                    })?;
                api.create(&PostParams::default(), &dynamic)
                    .await
                    .map_err(kube_error(&name, "cannot create CompositionRevision"))?;
                tracing::info!(composition = name, revision = number, "created revision");
                publish(
                    ctx,
                    &name,
                    "CreateRevision",
                    format!("Created new revision {number}"),
                );
                // The new revision comes back through the watch, for collection.
                return Ok((Action::await_change(), ReconcileResult::Success));
            }
        }
    }

    collect_garbage(ctx, &composition, &revisions, &api).await?;
    ctx.backoff
        .succeeded(&crate::controllers::reconciler::reference(
            &object,
            &ctx.resource,
        ));
    Ok((Action::requeue(ctx.poll_interval), ReconcileResult::Success))
}

async fn collect_garbage(
    ctx: &RevisionContext,
    composition: &Value,
    revisions: &[Value],
    api: &Api<DynamicObject>,
) -> Result<(), RevisionError> {
    let name = text(composition, "/metadata/name").unwrap_or_default();
    let limit = composition
        .pointer("/spec/revisionHistoryLimit")
        .and_then(Value::as_i64)
        .unwrap_or(DEFAULT_REVISION_HISTORY_LIMIT);
    if collectable(composition, revisions, limit, &BTreeSet::new()).is_empty() {
        return Ok(());
    }
    let (Some(api_version), Some(kind)) = (
        text(composition, "/spec/compositeTypeRef/apiVersion"),
        text(composition, "/spec/compositeTypeRef/kind"),
    ) else {
        return Ok(());
    };
    let none = BTreeMap::new();
    // Deletes nothing when it cannot tell which revisions are in use.
    let xrs = ctx
        .cluster
        .list_async(api_version, kind, None, &none)
        .await
        .map_err(cluster_error(name))?;
    let group = group_of(api_version);
    let xrds = ctx
        .cluster
        .list_async(XRD_API_VERSION, XRD_KIND, None, &none)
        .await
        .map_err(cluster_error(name))?;
    let default_selector = xrds
        .iter()
        .find(|x| {
            text(x, "/spec/group") == Some(group) && text(x, "/spec/names/kind") == Some(kind)
        })
        .and_then(|x| match_labels(x.pointer("/spec/defaultCompositionRevisionSelector")));
    let owned = owned_oldest_first(composition, revisions);
    let used = in_use(name, &owned, &xrs, default_selector.as_ref());
    for revision in collectable(composition, revisions, limit, &used) {
        match api.delete(&revision, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(e) if is_status(&e, 404) => {}
            Err(e) => {
                return Err(kube_error(
                    name,
                    format!("cannot delete CompositionRevision {revision}"),
                )(e));
            }
        }
        tracing::info!(composition = name, revision, "deleted unused revision");
    }
    Ok(())
}

fn publish(ctx: &RevisionContext, composition: &str, reason: &str, message: String) {
    ctx.cluster.publish(Event {
        regarding: ObjectRef {
            api_version: COMPOSITION_API_VERSION.into(),
            kind: COMPOSITION_KIND.into(),
            namespace: None,
            name: composition.into(),
        },
        event_type: EventType::Normal,
        reason: reason.into(),
        message,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stores::catalog::composition_of;

    fn composition(spec: Value) -> Value {
        json!({
            "apiVersion": COMPOSITION_API_VERSION, "kind": COMPOSITION_KIND,
            "metadata": {"name": "c", "uid": "cuid", "labels": {"channel": "dev"}},
            "spec": spec,
        })
    }

    /// A revision of `c` numbered `number`, made from `spec`, controlled by `owner`.
    fn revision(spec: Value, number: i64, owner: Option<&str>) -> Value {
        let mut r = new_revision(&composition(spec), number);
        match owner {
            Some(uid) => r["metadata"]["ownerReferences"][0]["uid"] = json!(uid),
            None => r["metadata"]["ownerReferences"] = json!([]),
        }
        r
    }

    #[test]
    fn a_revision_copies_the_composition_with_its_number_labels_and_owner() {
        let mut c = composition(json!({"mode": "Pipeline", "revisionHistoryLimit": 3}));
        let hash = composition_hash(&c);
        let r = new_revision(&c, 4);
        assert_eq!(r["metadata"]["name"], format!("c-{}", &hash[..7]));
        assert_eq!(
            r["metadata"]["labels"],
            json!({"channel": "dev", LABEL_COMPOSITION_NAME: "c", LABEL_COMPOSITION_HASH: &hash[..63]})
        );
        assert_eq!(r["spec"], json!({"mode": "Pipeline", "revision": 4}));
        assert_eq!(r["metadata"]["ownerReferences"][0]["uid"], "cuid");
        assert_eq!(r["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(composition_of(&r)["spec"], json!({"mode": "Pipeline"}));
        // Labels count towards the hash; key order does not.
        c["metadata"]["labels"]["channel"] = json!("prod");
        assert_ne!(composition_hash(&c), hash);
        let reordered: Value = serde_json::from_str(
            r#"{"spec": {"revisionHistoryLimit": 3, "mode": "Pipeline"}, "metadata": {"labels": {"channel": "dev"}, "name": "c"}}"#,
        )
        .unwrap();
        assert_eq!(composition_hash(&reordered), hash);
    }

    #[test]
    fn plan_creates_renumbers_or_adopts_as_upstream() {
        let one = json!({"mode": "Pipeline", "v": 1});
        let two = json!({"mode": "Pipeline", "v": 2});
        let c1_name = revision(one.clone(), 1, Some("cuid"))["metadata"]["name"].clone();
        let cases = [
            (
                "first revision",
                one.clone(),
                vec![],
                vec![Change::Create(1)],
            ),
            (
                "current matches the latest",
                one.clone(),
                vec![revision(one.clone(), 1, Some("cuid"))],
                vec![],
            ),
            (
                "edited",
                two.clone(),
                vec![revision(one.clone(), 1, Some("cuid"))],
                vec![Change::Create(2)],
            ),
            (
                "back to an older state",
                one.clone(),
                vec![
                    revision(one.clone(), 1, Some("cuid")),
                    revision(two.clone(), 2, Some("cuid")),
                ],
                vec![Change::Renumber {
                    name: c1_name.as_str().unwrap().into(),
                    revision: 3,
                }],
            ),
            (
                "another Composition's revision of the same name is not counted",
                two.clone(),
                vec![revision(one.clone(), 5, Some("other"))],
                vec![Change::Create(1)],
            ),
            (
                "an orphaned revision is adopted",
                one.clone(),
                vec![revision(one.clone(), 1, None)],
                vec![
                    Change::Adopt(c1_name.as_str().unwrap().into()),
                    Change::Renumber {
                        name: c1_name.as_str().unwrap().into(),
                        revision: 1,
                    },
                ],
            ),
        ];
        for (what, spec, revisions, want) in cases {
            assert_eq!(plan(&composition(spec), &revisions), want, "{what}");
        }
    }

    #[test]
    fn old_revisions_beyond_the_limit_are_collected_unless_in_use() {
        let revisions: Vec<Value> = (1..=4)
            .map(|n| revision(json!({"v": n}), n, Some("cuid")))
            .collect();
        let name = |n: usize| {
            revisions[n - 1]["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_string()
        };
        let used = |ns: &[usize]| ns.iter().map(|n| name(*n)).collect::<BTreeSet<_>>();
        let c = composition(json!({}));
        // (limit, in use, want deleted)
        let cases: &[(i64, &[usize], &[usize])] = &[
            (1, &[], &[1, 2]),
            (2, &[], &[1]),
            (3, &[], &[]),
            (0, &[], &[]),
            (1, &[1], &[2, 3]),
            (1, &[1, 2], &[3]),
            (1, &[4], &[1, 2]),
        ];
        for (limit, in_use, want) in cases {
            let got = collectable(&c, &revisions, *limit, &used(in_use));
            let want: Vec<String> = want.iter().map(|n| name(*n)).collect();
            assert_eq!(got, want, "limit {limit}, in use {in_use:?}");
        }
    }

    #[test]
    fn revisions_in_use_are_referenced_or_newest_selected() {
        let mut revisions: Vec<Value> = (1..=3)
            .map(|n| revision(json!({"v": n}), n, Some("cuid")))
            .collect();
        revisions[0]["metadata"]["labels"]["channel"] = json!("stable");
        let name = |n: usize| {
            revisions[n - 1]["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_string()
        };
        let refs: Vec<&Value> = revisions.iter().collect();
        let stable = BTreeMap::from([("channel".to_string(), "stable".to_string())]);
        let cases = [
            (
                "a v2 XR's reference",
                vec![
                    json!({"spec": {"crossplane": {"compositionRevisionRef": {"name": name(2)}}}}),
                ],
                None,
                vec![name(2)],
            ),
            (
                "a v1 XR's reference",
                vec![json!({"spec": {"compositionRevisionRef": {"name": name(1)}}})],
                None,
                vec![name(1)],
            ),
            (
                "the newest revision an XR's selector matches",
                vec![
                    json!({"spec": {"crossplane": {"compositionRef": {"name": "c"}, "compositionRevisionSelector": {"matchLabels": {"channel": "dev"}}}}}),
                ],
                None,
                vec![name(3)],
            ),
            (
                "a selector of an XR of another Composition",
                vec![
                    json!({"spec": {"crossplane": {"compositionRef": {"name": "x"}, "compositionRevisionSelector": {"matchLabels": {"channel": "stable"}}}}}),
                ],
                None,
                vec![],
            ),
            (
                "the XRD's default selector",
                vec![],
                Some(&stable),
                vec![name(1)],
            ),
        ];
        for (what, xrs, default, want) in cases {
            let got = in_use("c", &refs, &xrs, default);
            assert_eq!(got, want.into_iter().collect::<BTreeSet<_>>(), "{what}");
        }
    }
}
