//! The resourceVersions the controller's own writes produced, so a watch
//! event caused by its own write is told apart from a change made by
//! someone else, and a read the watch cache has not caught up with is told
//! apart from a current one.
//!
//! A reconcile writes its XR (finalizer, resource references, status) and
//! its composed resources; each write comes back as a watch event a moment
//! later. Reconciling the XR again for those events redoes work whose
//! result is already known, and under load (when the watch lags) starts
//! from a version the reconcile itself has replaced, so its next guarded
//! write conflicts: the self-inflicted load that made conflicts multiply.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::{Stream, StreamExt, future};
use kube::Resource;
use kube::api::ApiResource;
use kube::runtime::watcher;
use plait_reconcile::ObjectRef;

/// How many recent versions are kept per object: a first reconcile writes
/// its XR up to five times (finalizer, Composition and revision references,
/// resource references, status).
const VERSIONS_PER_OBJECT: usize = 8;

/// How many watch events of one watch may wait at once for a write of
/// their object to be answered; events still leave in the order they came.
const EVENTS_AWAITING_WRITES: usize = 64;

/// How long a watch event waits for a write of its object to be answered
/// before it is taken as someone else's change: at worst one reconcile too
/// many, never one too few.
const LONGEST_WAIT_FOR_WRITE: Duration = Duration::from_secs(5);

/// An object, independent of the API version it was written or watched at:
/// resourceVersions are shared by every version of a kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WrittenObject {
    group: String,
    kind: String,
    namespace: Option<String>,
    name: String,
}

impl WrittenObject {
    pub fn new(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Self {
        WrittenObject {
            group: crate::vocabulary::api::group_of(api_version).to_string(),
            kind: kind.to_string(),
            namespace: namespace.map(str::to_string),
            name: name.to_string(),
        }
    }

    pub fn of(reference: &ObjectRef) -> Self {
        WrittenObject::new(
            &reference.api_version,
            &reference.kind,
            reference.namespace.as_deref(),
            &reference.name,
        )
    }
}

/// The resourceVersions recent writes by this controller produced, per
/// object, and what its last server-side apply of each object sent.
#[derive(Debug, Default)]
pub struct OwnWrites {
    versions: Mutex<HashMap<WrittenObject, VecDeque<String>>>,
    /// By object and field manager (with `/status` for the status subresource).
    applied: Mutex<HashMap<(WrittenObject, String), LastApply>>,
    /// The UID each written object had, so an event about it names it
    /// without asking the API server.
    uids: Mutex<HashMap<WrittenObject, String>>,
    /// Writes sent and not answered yet, per object: the watch event of a
    /// write can arrive before its answer, and only the answer names the
    /// version the write made.
    sending: Mutex<HashMap<WrittenObject, usize>>,
    /// Woken whenever a write is answered (or fails).
    answered: tokio::sync::Notify,
}

/// A write of one object on its way to the API server; dropping it, once
/// the answer is recorded or the write failed, says it is no longer.
#[must_use]
pub struct Sending {
    writes: Arc<OwnWrites>,
    object: WrittenObject,
}

impl Drop for Sending {
    fn drop(&mut self) {
        {
            let mut sending = self
                .writes
                .sending
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(count) = sending.get_mut(&self.object) {
                *count -= 1;
                if *count == 0 {
                    sending.remove(&self.object);
                }
            }
        }
        self.writes.answered.notify_waiters();
    }
}

/// One field manager's last apply of an object: the SHA-256 of the body it
/// sent and the resourceVersion the object had afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LastApply {
    body: [u8; 32],
    resource_version: String,
}

/// The digest an applied body is remembered by: of its JSON, whose object
/// keys serde_json keeps sorted, so equal bodies always digest alike. The
/// resourceVersion a body may carry (a precondition, not a field) is left
/// out: two applies of the same fields set the same thing.
pub fn body_digest(body: &serde_json::Value) -> [u8; 32] {
    use sha2::Digest;
    let fields = without_resource_version(body.clone());
    sha2::Sha256::digest(fields.to_string().as_bytes()).into()
}

/// An apply body without the resourceVersion it is guarded by.
pub fn without_resource_version(mut body: serde_json::Value) -> serde_json::Value {
    if let Some(metadata) = body
        .get_mut("metadata")
        .and_then(serde_json::Value::as_object_mut)
    {
        metadata.remove("resourceVersion");
    }
    body
}

impl OwnWrites {
    /// Says that a write of `object` is about to be sent, until the
    /// returned guard is dropped (after [`Self::wrote`] recorded its answer).
    pub fn sending(self: &Arc<Self>, object: WrittenObject) -> Sending {
        *self
            .sending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(object.clone())
            .or_default() += 1;
        Sending {
            writes: self.clone(),
            object,
        }
    }

    fn is_sending(&self, object: &WrittenObject) -> bool {
        self.sending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(object)
    }

    /// Waits until no write of `object` is on its way, for at most `longest`.
    async fn answered(&self, object: &WrittenObject, longest: Duration) {
        let waiting = async {
            loop {
                let answered = self.answered.notified();
                tokio::pin!(answered);
                // Registered before the check, so an answer between the
                // check and the wait is not missed.
                answered.as_mut().enable();
                if !self.is_sending(object) {
                    return;
                }
                answered.await;
            }
        };
        let _ = tokio::time::timeout(longest, waiting).await;
    }

    /// Records that a write of `object` produced `resource_version`.
    pub fn wrote(&self, object: WrittenObject, resource_version: &str) {
        let mut versions = self.versions.lock().unwrap_or_else(PoisonError::into_inner);
        let recent = versions.entry(object).or_default();
        if recent.iter().any(|v| v == resource_version) {
            return;
        }
        if recent.len() == VERSIONS_PER_OBJECT {
            recent.pop_front();
        }
        recent.push_back(resource_version.to_string());
    }

    /// Records that a write found `object` with `uid`.
    pub fn identified(&self, object: WrittenObject, uid: &str) {
        let mut uids = self.uids.lock().unwrap_or_else(PoisonError::into_inner);
        if uids.get(&object).is_none_or(|known| known != uid) {
            uids.insert(object, uid.to_string());
        }
    }

    /// The UID `object` had when this controller last wrote it.
    pub fn uid(&self, object: &WrittenObject) -> Option<String> {
        self.uids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(object)
            .cloned()
    }

    /// Whether `resource_version` of `object` is one this controller wrote.
    pub fn is_own(&self, object: &WrittenObject, resource_version: &str) -> bool {
        self.versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(object)
            .is_some_and(|recent| recent.iter().any(|v| v == resource_version))
    }

    /// The versions this controller's recent writes of `object` produced, oldest first.
    pub fn recent(&self, object: &WrittenObject) -> Vec<String> {
        self.versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(object)
            .map(|recent| recent.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Records that `field_manager` applied `body` to `object`, which then
    /// stood at `resource_version`.
    pub fn applied(
        &self,
        object: WrittenObject,
        field_manager: &str,
        body: [u8; 32],
        resource_version: &str,
    ) {
        self.applied
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                (object, field_manager.to_string()),
                LastApply {
                    body,
                    resource_version: resource_version.to_string(),
                },
            );
    }

    /// Whether `field_manager`'s last apply of `object` sent `body` and left
    /// it at `resource_version`: applying `body` again to that version would
    /// change nothing, since server-side apply of an unchanged body is a no-op.
    pub fn is_applied(
        &self,
        object: &WrittenObject,
        field_manager: &str,
        body: &[u8; 32],
        resource_version: &str,
    ) -> bool {
        self.applied
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(object.clone(), field_manager.to_string()))
            .is_some_and(|last| &last.body == body && last.resource_version == resource_version)
    }

    /// Whether `field_manager`'s last apply of `object` sent `body`, at
    /// whatever version: it owns exactly the fields `body` sets.
    pub fn sent(&self, object: &WrittenObject, field_manager: &str, body: &[u8; 32]) -> bool {
        self.applied
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(object.clone(), field_manager.to_string()))
            .is_some_and(|last| &last.body == body)
    }

    /// Forgets an object that is gone.
    pub fn forget(&self, object: &WrittenObject) {
        self.versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(object);
        self.uids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(object);
        self.applied
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(applied, _), _| applied != object);
    }

    /// How many objects are remembered.
    pub fn len(&self) -> usize {
        self.versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// Which events of a watch of `resource` bring an object to reconcile:
/// changes made by others, and whatever a (re)list shows (a change made
/// while the watch was down is in it, even when a later write of this
/// controller's is what the list shows). Deletions come through when `deletes`.
pub fn changes_by_others<K, S>(
    events: S,
    writes: Arc<OwnWrites>,
    resource: ApiResource,
    deletes: bool,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static
where
    K: Resource + Send + 'static,
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
{
    events
        .map(move |event| {
            // An update is judged by the version it made, once any write of
            // its object on its way has been answered: its event may arrive
            // before the answer.
            let judged = match &event {
                Ok(watcher::Event::Apply(object)) => {
                    written_version(object.meta(), &resource).map(|w| (writes.clone(), w))
                }
                _ => None,
            };
            async move {
                if let Some((writes, (written, version))) = judged {
                    writes.answered(&written, LONGEST_WAIT_FOR_WRITE).await;
                    if writes.is_own(&written, &version) {
                        return None;
                    }
                }
                match event {
                    Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) => {
                        Some(Ok(object))
                    }
                    Ok(watcher::Event::Delete(object)) => deletes.then_some(Ok(object)),
                    Ok(watcher::Event::Init | watcher::Event::InitDone) => None,
                    Err(e) => Some(Err(e)),
                }
            }
        })
        .buffered(EVENTS_AWAITING_WRITES)
        .filter_map(future::ready)
}

/// The object an event of a watch of `resource` is about, and the version
/// it shows; `None` without a name or a version.
fn written_version(
    meta: &kube::api::ObjectMeta,
    resource: &ApiResource,
) -> Option<(WrittenObject, String)> {
    let (Some(name), Some(version)) = (&meta.name, &meta.resource_version) else {
        return None;
    };
    let written = WrittenObject::new(
        &resource.api_version,
        &resource.kind,
        meta.namespace.as_deref(),
        name,
    );
    Some((written, version.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_objects_uid_is_the_one_its_last_write_found_until_it_is_forgotten() {
        let writes = OwnWrites::default();
        let a = || WrittenObject::new("example.org/v1", "Widget", Some("ns"), "a");
        // (UID a write found, or None to forget the object; UID then known)
        let steps = [
            (Some("u1"), Some("u1")),
            (Some("u1"), Some("u1")),
            (Some("u2"), Some("u2")),
            (None, None),
            (Some("u3"), Some("u3")),
        ];
        assert_eq!(writes.uid(&a()), None, "before any write");
        for (i, (found, want)) in steps.into_iter().enumerate() {
            match found {
                Some(uid) => writes.identified(a(), uid),
                None => writes.forget(&a()),
            }
            assert_eq!(writes.uid(&a()).as_deref(), want, "step {i}");
        }
        let other_version = WrittenObject::new("example.org/v2", "Widget", Some("ns"), "a");
        assert_eq!(
            writes.uid(&other_version).as_deref(),
            Some("u3"),
            "another API version of the object"
        );
    }

    /// The kind the watch tests watch.
    fn widgets() -> ApiResource {
        ApiResource {
            group: "example.org".into(),
            version: "v1".into(),
            api_version: "example.org/v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
        }
    }

    fn object(api_version: &str, name: &str) -> WrittenObject {
        WrittenObject::new(api_version, "Widget", Some("ns"), name)
    }

    #[test]
    fn a_version_is_own_while_it_is_among_the_recent_writes() {
        let writes = OwnWrites::default();
        // (object, version written; versions then own; versions then not own)
        let steps: &[(&str, &str, &[&str], &[&str])] = &[
            ("a", "1", &["1"], &["2"]),
            ("a", "2", &["1", "2"], &["3"]),
            ("a", "3", &["1", "2", "3"], &[]),
            ("a", "4", &["1", "4"], &["5"]),
            ("a", "5", &["1", "5"], &["6"]),
            ("a", "6", &["1", "6"], &[]),
            ("a", "7", &["1", "7"], &[]),
            ("a", "8", &["1", "8"], &["9"]),
            ("a", "9", &["2", "9"], &["1"]),
            ("b", "10", &["2", "9"], &["10"]),
            ("a", "9", &["2", "3", "4", "9"], &["1"]),
        ];
        for (i, (name, version, own, not_own)) in steps.iter().enumerate() {
            writes.wrote(object("example.org/v1", name), version);
            for v in *own {
                assert!(
                    writes.is_own(&object("example.org/v1", "a"), v),
                    "step {i}: {v}"
                );
            }
            for v in *not_own {
                assert!(
                    !writes.is_own(&object("example.org/v1", "a"), v),
                    "step {i}: {v}"
                );
            }
        }
        assert_eq!(
            writes.recent(&object("example.org/v1", "a")),
            ["2", "3", "4", "5", "6", "7", "8", "9"]
        );
        assert_eq!(writes.len(), 2);
    }

    #[tokio::test]
    async fn only_changes_by_others_and_relists_come_through_a_watch() {
        use kube::api::DynamicObject;

        let resource = widgets();
        let widget = |name: &str, version: &str| {
            let mut object = DynamicObject::new(name, &resource).within("ns");
            object.metadata.resource_version = Some(version.into());
            object
        };
        let writes = Arc::new(OwnWrites::default());
        writes.wrote(object("example.org/v1", "a"), "2");
        // (event, whether deletes are wanted, the version that comes through)
        let cases = [
            (watcher::Event::Apply(widget("a", "1")), false, Some("1")),
            (watcher::Event::Apply(widget("a", "2")), false, None),
            (watcher::Event::Apply(widget("b", "2")), false, Some("2")),
            (
                watcher::Event::InitApply(widget("a", "2")),
                false,
                Some("2"),
            ),
            (watcher::Event::Delete(widget("a", "3")), false, None),
            (watcher::Event::Delete(widget("a", "3")), true, Some("3")),
            (watcher::Event::Init, true, None),
            (watcher::Event::InitDone, true, None),
        ];
        for (i, (event, deletes, want)) in cases.into_iter().enumerate() {
            let events = futures::stream::iter([Ok(event)]);
            let through: Vec<DynamicObject> =
                changes_by_others(events, writes.clone(), resource.clone(), deletes)
                    .filter_map(|r| future::ready(r.ok()))
                    .collect()
                    .await;
            let versions: Vec<_> = through
                .iter()
                .filter_map(|o| o.metadata.resource_version.as_deref())
                .collect();
            assert_eq!(versions, want.into_iter().collect::<Vec<_>>(), "case {i}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_watch_event_that_arrives_before_its_writes_answer_waits_for_the_answer() {
        use kube::api::DynamicObject;

        let resource = widgets();
        let mut widget = DynamicObject::new("a", &resource).within("ns");
        widget.metadata.resource_version = Some("5".into());
        // (the version the write in flight is answered with, or None when it
        // fails; after how long; whether the event for version 5 comes through)
        let cases = [
            (Some("5"), Duration::from_millis(20), false),
            (Some("4"), Duration::from_millis(20), true),
            (None, Duration::from_millis(20), true),
            // An answer that never comes in time: taken as someone else's.
            (Some("5"), LONGEST_WAIT_FOR_WRITE * 2, true),
        ];
        for (i, (answer, after, want_through)) in cases.into_iter().enumerate() {
            let writes = Arc::new(OwnWrites::default());
            let written = object("example.org/v1", "a");
            let sending = writes.sending(written.clone());
            let answering = {
                let writes = writes.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(after).await;
                    if let Some(version) = answer {
                        writes.wrote(written, version);
                    }
                    drop(sending);
                })
            };
            let events = futures::stream::iter([Ok(watcher::Event::Apply(widget.clone()))]);
            let through: Vec<DynamicObject> =
                changes_by_others(events, writes.clone(), resource.clone(), false)
                    .filter_map(|r| future::ready(r.ok()))
                    .collect()
                    .await;
            assert_eq!(!through.is_empty(), want_through, "case {i}");
            answering.await.unwrap();
        }
    }

    #[test]
    fn an_apply_is_known_unchanged_only_for_the_same_manager_body_and_version() {
        let writes = OwnWrites::default();
        let body = body_digest(&serde_json::json!({"data": {"a": "1"}, "kind": "ConfigMap"}));
        let same_body = body_digest(&serde_json::json!({"kind": "ConfigMap", "data": {"a": "1"}}));
        let other_body = body_digest(&serde_json::json!({"kind": "ConfigMap", "data": {"a": "2"}}));
        assert_eq!(body, same_body, "key order does not change a body's digest");
        let a = object("example.org/v1", "a");
        assert!(
            !writes.is_applied(&a, "m", &body, "5"),
            "nothing applied yet"
        );
        writes.applied(a.clone(), "m", body, "5");
        // (object, manager, body, version, known unchanged)
        let cases = [
            ("a", "m", body, "5", true),
            ("a", "m", body, "6", false),
            ("a", "m", other_body, "5", false),
            ("a", "other-manager", body, "5", false),
            ("b", "m", body, "5", false),
        ];
        for (name, manager, digest, version, want) in cases {
            assert_eq!(
                writes.is_applied(&object("example.org/v2", name), manager, &digest, version),
                want,
                "{name} {manager} {version}"
            );
        }
        writes.forget(&a);
        assert!(!writes.is_applied(&a, "m", &body, "5"), "forgotten");
    }

    #[test]
    fn versions_are_shared_by_every_api_version_of_a_kind() {
        let writes = OwnWrites::default();
        writes.wrote(object("example.org/v1", "a"), "7");
        assert!(writes.is_own(&object("example.org/v2", "a"), "7"));
        assert!(!writes.is_own(&object("other.org/v1", "a"), "7"));
        writes.forget(&object("example.org/v2", "a"));
        assert!(!writes.is_own(&object("example.org/v1", "a"), "7"));
        assert_eq!(writes.len(), 0);
    }
}
