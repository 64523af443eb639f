//! [`Cluster`] over a Kubernetes API server: the one place the reconcile
//! core's reads and writes meet the controller's watch-fed stores and its
//! API access.
//!
//! The reconciler is synchronous (it runs Wasm guests), so reconciles run on
//! blocking threads and every call here bridges back onto the Tokio runtime
//! with [`Handle::block_on`]. Calling these methods from inside an async task
//! would deadlock the runtime; callers use `spawn_blocking`.

use std::collections::BTreeMap;
use std::ops::Deref;
use std::sync::Arc;

use kube::Client;
use plait_reconcile::{Cluster, ClusterError, Event, EventType, ObjectRef};
use serde_json::Value;
use tokio::runtime::Handle;

use crate::access::client::{KubeApi, object_error};
use crate::access::events::{Draft, EventCorrelator, Involved, Source, send};
use crate::access::writes::{OwnWrites, WrittenObject};
use crate::stores::composed::ComposedCache;
use crate::stores::environment::{AccessReviews, EnvironmentConfigs};

/// The component name events are reported under.
pub const REPORTER: &str = "plait";

/// A [`Cluster`] backed by a real API server: reads answered from the
/// watch-fed stores where they can be, everything else through its
/// [`KubeApi`], whose methods it offers as its own.
#[derive(Clone)]
pub struct KubeCluster {
    inner: Arc<Inner>,
}

struct Inner {
    api: KubeApi,
    handle: Handle,
    shared: Shared,
    /// For a tenant's cluster, what the API server said the tenant may read
    /// from the EnvironmentConfig store; `None` for the controller's own,
    /// which may read all of it.
    access: Option<AccessReviews>,
}

/// What every cluster the controller reads and writes through shares,
/// tenants' included: what its writes produced, the composed resources its
/// watches cache, the EnvironmentConfigs its watch keeps, and the one
/// correlator every event passes.
#[derive(Clone)]
pub struct Shared {
    pub writes: Arc<OwnWrites>,
    pub composed: Arc<ComposedCache>,
    pub environment: Arc<EnvironmentConfigs>,
    pub events: Arc<EventCorrelator>,
}

impl Default for Shared {
    fn default() -> Self {
        let component = REPORTER.to_string();
        let instance = std::env::var("POD_NAME").unwrap_or_else(|_| component.clone());
        Shared {
            writes: Arc::default(),
            composed: Arc::default(),
            environment: Arc::default(),
            events: Arc::new(EventCorrelator::new(Source {
                component,
                instance,
            })),
        }
    }
}

/// A cluster is API access with stores in front: what the API can do, it can.
impl Deref for KubeCluster {
    type Target = KubeApi;

    fn deref(&self) -> &KubeApi {
        &self.inner.api
    }
}

impl KubeCluster {
    /// A cluster over `client`, bridging onto the runtime behind `handle`.
    pub fn new(client: Client, handle: Handle) -> KubeCluster {
        KubeCluster::sharing(client, handle, Shared::default())
    }

    /// A cluster over `client` that shares `shared` with the other clusters
    /// the controller reads and writes through.
    pub fn sharing(client: Client, handle: Handle, shared: Shared) -> KubeCluster {
        KubeCluster::build(client, handle, shared, None)
    }

    /// A cluster over `client`, which acts as a tenant: it reads from the
    /// EnvironmentConfig store only what the API server says the tenant may read.
    pub fn tenant(client: Client, handle: Handle, shared: Shared) -> KubeCluster {
        KubeCluster::build(client, handle, shared, Some(AccessReviews::default()))
    }

    fn build(
        client: Client,
        handle: Handle,
        shared: Shared,
        access: Option<AccessReviews>,
    ) -> KubeCluster {
        KubeCluster {
            inner: Arc::new(Inner {
                api: KubeApi::new(client, shared.writes.clone()),
                handle,
                shared,
                access,
            }),
        }
    }

    /// What this cluster shares with the others the controller uses.
    pub fn shared(&self) -> &Shared {
        &self.inner.shared
    }

    /// Whether this cluster answers a `verb` of `api_version`/`kind` from
    /// the EnvironmentConfig store: the store can, and this cluster's
    /// identity may read it there.
    async fn reads_stored_environment(
        &self,
        api_version: &str,
        kind: &str,
        verb: &'static str,
    ) -> bool {
        if !self.inner.shared.environment.answers(api_version, kind) {
            return false;
        }
        match &self.inner.access {
            None => true,
            Some(reviews) => reviews.may(self.client(), verb).await,
        }
    }

    pub async fn get_async(&self, object: &ObjectRef) -> Result<Option<Value>, ClusterError> {
        if self
            .reads_stored_environment(&object.api_version, &object.kind, "get")
            .await
            && let Some(stored) =
                self.inner
                    .shared
                    .environment
                    .get(&object.api_version, &object.kind, &object.name)
        {
            return Ok(stored);
        }
        self.get_live(object).await
    }

    /// The composed resource from the watch cache, else from the API
    /// server (without `managedFields` either way, so what functions observe
    /// does not depend on where it was read).
    pub async fn observe_async(&self, object: &ObjectRef) -> Result<Option<Value>, ClusterError> {
        match self.inner.shared.composed.get(object) {
            Some(cached) => Ok(Some(cached)),
            None => self.get_async(object).await,
        }
    }

    pub async fn list_async(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        labels: &BTreeMap<String, String>,
    ) -> Result<Vec<Value>, ClusterError> {
        if self
            .reads_stored_environment(api_version, kind, "list")
            .await
            && let Some(stored) = self
                .inner
                .shared
                .environment
                .list(api_version, kind, labels)
        {
            return Ok(stored);
        }
        self.list_live(api_version, kind, namespace, labels).await
    }

    /// Publishes an event without waiting for it: events are best effort,
    /// and pass the correlator shared by every cluster of the process.
    pub fn publish(&self, event: Event) {
        let this = self.clone();
        self.inner.handle.spawn(async move {
            let involved = match this.involved(&event.regarding).await {
                Ok(involved) => involved,
                Err(e) => {
                    tracing::debug!(object = %event.regarding, error = %e, "cannot resolve the object of an event");
                    return;
                }
            };
            let draft = Draft {
                involved,
                warning: event.event_type == EventType::Warning,
                reason: event.reason,
                message: truncate(&event.message, 1024),
            };
            let correlated = this
                .inner
                .shared
                .events
                .correlate(&draft, std::time::SystemTime::now());
            if let Err(e) = send(this.client(), correlated).await {
                tracing::debug!(object = %event.regarding, error = %e, "cannot publish event");
            }
        });
    }

    /// The object an event is about, with its UID: the one a write of this
    /// process last found (no request), else read from the API server.
    async fn involved(&self, object: &ObjectRef) -> Result<Involved, ClusterError> {
        let known = self.writes().uid(&WrittenObject::of(object));
        let uid = match known {
            Some(uid) => uid,
            None => {
                let found = self
                    .get_async(object)
                    .await?
                    .ok_or_else(|| object_error(object, "not found"))?;
                found
                    .pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .ok_or_else(|| object_error(object, "has no UID"))?
                    .to_string()
            }
        };
        Ok(Involved {
            api_version: object.api_version.clone(),
            kind: object.kind.clone(),
            namespace: object.namespace.clone(),
            name: object.name.clone(),
            uid: Some(uid),
        })
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text[..cut].to_string()
}

impl Cluster for KubeCluster {
    fn get(&self, object: &ObjectRef) -> Result<Option<Value>, ClusterError> {
        self.inner.handle.block_on(self.get_async(object))
    }

    fn list(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        labels: &BTreeMap<String, String>,
    ) -> Result<Vec<Value>, ClusterError> {
        self.inner
            .handle
            .block_on(self.list_async(api_version, kind, namespace, labels))
    }

    fn apply(&self, object: &Value, field_manager: &str) -> Result<Value, ClusterError> {
        self.inner
            .handle
            .block_on(self.apply_async(object, field_manager, false))
    }

    fn apply_status(&self, object: &Value, field_manager: &str) -> Result<Value, ClusterError> {
        self.inner
            .handle
            .block_on(self.apply_async(object, field_manager, true))
    }

    fn merge_patch(
        &self,
        object: &ObjectRef,
        patch: &Value,
        field_manager: &str,
    ) -> Result<Value, ClusterError> {
        self.inner
            .handle
            .block_on(self.merge_patch_async(object, patch, field_manager))
    }

    fn observe(&self, object: &ObjectRef) -> Result<Option<Value>, ClusterError> {
        self.inner.handle.block_on(self.observe_async(object))
    }

    fn applied_unchanged(&self, object: &Value, observed: &Value, field_manager: &str) -> bool {
        self.already_applied(object, false, field_manager, observed)
    }

    fn delete(&self, object: &ObjectRef, uid: Option<&str>) -> Result<(), ClusterError> {
        self.inner.handle.block_on(self.delete_async(object, uid))
    }

    fn is_namespaced(&self, api_version: &str, kind: &str) -> Result<Option<bool>, ClusterError> {
        self.inner
            .handle
            .block_on(self.served_kind(api_version, kind))
            .map(|k| k.map(|k| k.namespaced))
    }

    fn schema(&self, api_version: &str, kind: &str) -> Result<Option<Value>, ClusterError> {
        self.inner
            .handle
            .block_on(self.inner.api.schema(api_version, kind))
    }

    fn record_event(&self, event: Event) {
        self.publish(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_notes_are_cut_at_a_character_boundary() {
        let cases = [("abc", 5, "abc"), ("abcdef", 3, "abc"), ("aé", 2, "a")];
        for (text, max, want) in cases {
            assert_eq!(truncate(text, max), want);
        }
    }
}
