//! [`Cluster`] over a Kubernetes API server.
//!
//! The reconciler is synchronous (it runs Wasm guests), so reconciles run on
//! blocking threads and every call here bridges back onto the Tokio runtime
//! with [`Handle::block_on`]. Calling these methods from inside an async task
//! would deadlock the runtime; callers use `spawn_blocking`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, Preconditions,
};
use kube::discovery::{Scope, pinned_kind};
use kube::runtime::events::{Event as KubeEvent, EventType as KubeEventType, Recorder, Reporter};
use kube::{Client, Resource};
use plait_reconcile::{Cluster, ClusterError, Event, EventType, ObjectRef};
use serde_json::{Map, Value, json};
use tokio::runtime::Handle;

use crate::environment::{AccessReviews, EnvironmentConfigs};
use crate::openapi::OpenApi;
use crate::watches::ComposedCache;
use crate::writes::{OwnWrites, WrittenObject, body_digest};

/// The component name events are reported under.
pub const REPORTER: &str = "plait";

/// Metadata fields a client may send in an apply; everything else under
/// `metadata` is owned by the API server and rejected or ignored.
const APPLIED_METADATA: &[&str] = &[
    "name",
    "namespace",
    "generateName",
    "labels",
    "annotations",
    "finalizers",
    "ownerReferences",
];

/// A served kind: how to reach it and whether it is namespaced.
#[derive(Debug, Clone)]
pub struct ServedKind {
    pub resource: ApiResource,
    pub namespaced: bool,
}

/// Served kinds by apiVersion and kind.
type KindCache = HashMap<(String, String), ServedKind>;

/// A [`Cluster`] backed by a real API server.
#[derive(Clone)]
pub struct KubeCluster {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    handle: Handle,
    /// Positive discovery answers only: a kind that is missing now may be
    /// served a moment later, when its CRD is established.
    kinds: Mutex<KindCache>,
    recorder: Recorder,
    openapi: OpenApi,
    shared: Shared,
    /// For a tenant's cluster, what the API server said the tenant may read
    /// from the EnvironmentConfig store; `None` for the controller's own,
    /// which may read all of it.
    access: Option<AccessReviews>,
}

/// What every cluster the controller reads and writes through shares,
/// tenants' included: what its writes produced, the composed resources its
/// watches cache, and the EnvironmentConfigs its watch keeps.
#[derive(Clone, Default)]
pub struct Shared {
    pub writes: Arc<OwnWrites>,
    pub composed: Arc<ComposedCache>,
    pub environment: Arc<EnvironmentConfigs>,
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
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: REPORTER.into(),
                instance: std::env::var("POD_NAME").ok(),
            },
        );
        KubeCluster {
            inner: Arc::new(Inner {
                client,
                handle,
                kinds: Mutex::new(HashMap::new()),
                recorder,
                openapi: OpenApi::default(),
                shared,
                access,
            }),
        }
    }

    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// What this controller's writes produced.
    pub fn writes(&self) -> &Arc<OwnWrites> {
        &self.inner.shared.writes
    }

    /// What this cluster shares with the others the controller uses.
    pub fn shared(&self) -> &Shared {
        &self.inner.shared
    }

    /// Records a write whose result is `stored`.
    pub fn wrote(&self, stored: &DynamicObject, resource: &ApiResource) {
        if let (Some(name), Some(version)) =
            (&stored.metadata.name, &stored.metadata.resource_version)
        {
            self.inner.shared.writes.wrote(
                WrittenObject::new(
                    &resource.api_version,
                    &resource.kind,
                    stored.metadata.namespace.as_deref(),
                    name,
                ),
                version,
            );
        }
    }

    /// Discovers how `apiVersion`/`kind` is served; `None` when it is not.
    pub async fn served_kind(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<ServedKind>, ClusterError> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(found) = self.lock_kinds()?.get(&key) {
            return Ok(Some(found.clone()));
        }
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, caps) = match pinned_kind(&self.inner.client, &gvk).await {
            Ok(found) => found,
            // A group that is no longer served answers with a bare 404.
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(None),
            Err(kube::Error::Discovery(_)) => return Ok(None),
            Err(e) => {
                return Err(ClusterError::Other(format!(
                    "cannot discover {kind}.{api_version}: {e}"
                )));
            }
        };
        let served = ServedKind {
            resource,
            namespaced: caps.scope == Scope::Namespaced,
        };
        self.lock_kinds()?.insert(key, served.clone());
        Ok(Some(served))
    }

    /// Forgets what discovery said about a kind, after its CRD changed or went away.
    pub fn forget_kind(&self, api_version: &str, kind: &str) {
        if let Ok(mut kinds) = self.inner.kinds.lock() {
            kinds.remove(&(api_version.to_string(), kind.to_string()));
        }
    }

    /// The API for the object's kind, in its namespace when the kind is namespaced.
    pub async fn api_for(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
    ) -> Result<(Api<DynamicObject>, ServedKind), ClusterError> {
        let served = self
            .served_kind(api_version, kind)
            .await?
            .ok_or_else(|| ClusterError::Other(format!("{kind}.{api_version} is not served")))?;
        let client = self.inner.client.clone();
        let api = match (served.namespaced, namespace) {
            (true, Some(ns)) => Api::namespaced_with(client, ns, &served.resource),
            _ => Api::all_with(client, &served.resource),
        };
        Ok((api, served))
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
            Some(reviews) => reviews.may(&self.inner.client, verb).await,
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
        // An unserved kind has no objects.
        if self
            .served_kind(&object.api_version, &object.kind)
            .await?
            .is_none()
        {
            return Ok(None);
        }
        let (api, served) = self
            .api_for(
                &object.api_version,
                &object.kind,
                object.namespace.as_deref(),
            )
            .await?;
        if served.namespaced && object.namespace.is_none() {
            return Err(object_error(object, "namespaced kind needs a namespace"));
        }
        let found = api
            .get_opt(&object.name)
            .await
            .map_err(|e| object_error(object, e))?;
        found.map(|o| to_value(&o)).transpose()
    }

    pub async fn apply_async(
        &self,
        object: &Value,
        field_manager: &str,
        status: bool,
    ) -> Result<Value, ClusterError> {
        let reference = ObjectRef::of(object).ok_or_else(|| {
            ClusterError::Other(
                "cannot apply an object without apiVersion, kind and metadata.name".into(),
            )
        })?;
        let (api, served) = self
            .api_for(
                &reference.api_version,
                &reference.kind,
                reference.namespace.as_deref(),
            )
            .await?;
        let body = applied(object, status);
        let params = PatchParams::apply(field_manager).force();
        let patch = Patch::Apply(&body);
        let stored = if status {
            api.patch_status(&reference.name, &params, &patch).await
        } else {
            api.patch(&reference.name, &params, &patch).await
        }
        .map_err(|e| match e {
            kube::Error::Api(status) if status.code == 409 => ClusterError::Conflict {
                object: reference.to_string(),
                message: status.message,
            },
            other => object_error(&reference, other),
        })?;
        self.wrote(&stored, &served.resource);
        if let Some(version) = &stored.metadata.resource_version {
            self.writes().applied(
                WrittenObject::of(&reference),
                &applier(field_manager, status),
                body_digest(&body),
                version,
            );
        }
        to_value(&stored)
    }

    /// Whether applying `object` (its status, when `status`) by
    /// `field_manager` is known to change nothing: the last such apply sent
    /// the same body and left the object at the resourceVersion `current`
    /// (the object as last read) carries.
    pub fn already_applied(
        &self,
        object: &Value,
        status: bool,
        field_manager: &str,
        current: &Value,
    ) -> bool {
        let (Some(reference), Some(version)) = (
            ObjectRef::of(object),
            current
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str),
        ) else {
            return false;
        };
        self.writes().is_applied(
            &WrittenObject::of(&reference),
            &applier(field_manager, status),
            &body_digest(&applied(object, status)),
            version,
        )
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

    pub async fn delete_async(
        &self,
        object: &ObjectRef,
        uid: Option<&str>,
    ) -> Result<(), ClusterError> {
        let (api, _) = self
            .api_for(
                &object.api_version,
                &object.kind,
                object.namespace.as_deref(),
            )
            .await?;
        // Foreground, as upstream: the resource is gone only once what it owns is.
        let mut params = DeleteParams::foreground();
        if let Some(uid) = uid {
            params = params.preconditions(Preconditions {
                uid: Some(uid.to_string()),
                resource_version: None,
            });
        }
        self.inner.shared.writes.forget(&WrittenObject::of(object));
        match api.delete(&object.name, &params).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
            Err(e) => Err(object_error(object, e)),
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
        if self.served_kind(api_version, kind).await?.is_none() {
            return Ok(Vec::new());
        }
        let (api, _) = self.api_for(api_version, kind, namespace).await?;
        let selector = labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        let params = ListParams::default().labels(&selector);
        let list = api
            .list(&params)
            .await
            .map_err(|e| ClusterError::Other(format!("cannot list {kind}.{api_version}: {e}")))?;
        list.items
            .iter()
            .map(|o| {
                let mut value = to_value(o)?;
                // List items come without apiVersion and kind.
                value["apiVersion"] = json!(api_version);
                value["kind"] = json!(kind);
                Ok(value)
            })
            .collect()
    }

    /// Publishes an event without waiting for it: events are best effort.
    pub fn publish(&self, event: Event) {
        let inner = self.inner.clone();
        let this = self.clone();
        self.inner.handle.spawn(async move {
            let reference = match this.object_reference(&event.regarding).await {
                Ok(r) => r,
                Err(e) => {
                    tracing::debug!(object = %event.regarding, error = %e, "cannot resolve the object of an event");
                    return;
                }
            };
            let kube_event = KubeEvent {
                type_: match event.event_type {
                    EventType::Normal => KubeEventType::Normal,
                    EventType::Warning => KubeEventType::Warning,
                },
                reason: event.reason.clone(),
                note: Some(truncate(&event.message, 1024)),
                action: event.reason,
                secondary: None,
            };
            if let Err(e) = inner.recorder.publish(&kube_event, &reference).await {
                tracing::debug!(object = %event.regarding, error = %e, "cannot publish event");
            }
        });
    }

    async fn object_reference(
        &self,
        object: &ObjectRef,
    ) -> Result<k8s_openapi::api::core::v1::ObjectReference, ClusterError> {
        let found = self
            .get_async(object)
            .await?
            .ok_or_else(|| object_error(object, "not found"))?;
        let dynamic: DynamicObject = serde_json::from_value(found)
            .map_err(|e| object_error(object, format!("cannot decode: {e}")))?;
        let served = self
            .served_kind(&object.api_version, &object.kind)
            .await?
            .ok_or_else(|| object_error(object, "kind is not served"))?;
        Ok(dynamic.object_ref(&served.resource))
    }

    fn lock_kinds(&self) -> Result<std::sync::MutexGuard<'_, KindCache>, ClusterError> {
        self.inner
            .kinds
            .lock()
            .map_err(|_| ClusterError::Other("discovery cache lock poisoned".into()))
    }
}

/// `client`, with every request it sends counted in
/// `plait_api_requests_total` by verb and resource, whichever controller or
/// watch sends it.
pub fn counted(client: Client) -> Client {
    let namespace = client.default_namespace().to_string();
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        let (verb, resource) = describe(request.method(), request.uri());
        crate::metrics::metrics().api_request(verb, &resource);
        let client = client.clone();
        async move { client.send(request).await }
    });
    Client::new(service, namespace)
}

/// The verb and resource of a request, as Kubernetes' audit log names them
/// (`get`/`list`/`watch`/`create`/`update`/`patch`/`delete`; the plural,
/// with a subresource after a slash); paths that name no resource
/// (discovery, OpenAPI) are `(discovery)`.
fn describe(method: &http::Method, uri: &http::Uri) -> (&'static str, String) {
    let segments: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
    let rest = match segments.as_slice() {
        ["api", _version, rest @ ..] => rest,
        ["apis", _group, _version, rest @ ..] => rest,
        _ => &[][..],
    };
    let rest = match rest {
        ["namespaces", _namespace, resource, more @ ..] => {
            let mut named = vec![*resource];
            named.extend(more);
            named
        }
        other => other.to_vec(),
    };
    let (resource, collection) = match rest.as_slice() {
        [] => return (verb(method, false, false), "(discovery)".into()),
        [resource] => ((*resource).to_string(), true),
        [resource, _name] => ((*resource).to_string(), false),
        [resource, _name, subresource, ..] => (format!("{resource}/{subresource}"), false),
    };
    let watch = uri
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
    (verb(method, collection, watch), resource)
}

fn verb(method: &http::Method, collection: bool, watch: bool) -> &'static str {
    match *method {
        http::Method::GET if watch => "watch",
        http::Method::GET if collection => "list",
        http::Method::GET => "get",
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE if collection => "deletecollection",
        http::Method::DELETE => "delete",
        _ => "other",
    }
}

fn object_error(object: &ObjectRef, message: impl std::fmt::Display) -> ClusterError {
    ClusterError::Object {
        object: object.to_string(),
        message: message.to_string(),
    }
}

/// Who made an apply, as [`OwnWrites`] remembers it: the field manager,
/// and the status subresource apart from the object's main resource.
fn applier(field_manager: &str, status: bool) -> String {
    if status {
        format!("{field_manager}/status")
    } else {
        field_manager.to_string()
    }
}

/// The object as JSON, without `managedFields`: nothing the controller or
/// a function reads is in them, and they are often bigger than the rest.
fn to_value(object: &DynamicObject) -> Result<Value, ClusterError> {
    let mut value = serde_json::to_value(object).map_err(|e| {
        ClusterError::Other(format!(
            "cannot encode {}: {e}",
            object.metadata.name.as_deref().unwrap_or("")
        ))
    })?;
    crate::object::drop_managed_fields(&mut value);
    Ok(value)
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

/// The body of a server-side apply: what a client may own. A status apply
/// carries only identity and status; a main-resource apply everything but status.
pub fn applied(object: &Value, status: bool) -> Value {
    let mut body = Map::new();
    for key in ["apiVersion", "kind"] {
        if let Some(v) = object.get(key) {
            body.insert(key.into(), v.clone());
        }
    }
    let mut metadata = Map::new();
    if let Some(source) = object.get("metadata").and_then(Value::as_object) {
        // A main-resource apply keeps the resourceVersion it was read at, so
        // an apply computed from a stale read (the XR's spec changed while its
        // pipeline ran) conflicts and is retried instead of reverting the change.
        let keep: &[&str] = if status {
            &["name", "namespace"]
        } else {
            APPLIED_METADATA
        };
        if !status && let Some(v) = source.get("resourceVersion").filter(|v| !v.is_null()) {
            metadata.insert("resourceVersion".into(), v.clone());
        }
        for key in keep {
            if let Some(v) = source.get(*key).filter(|v| !v.is_null()) {
                metadata.insert((*key).into(), v.clone());
            }
        }
    }
    body.insert("metadata".into(), Value::Object(metadata));
    if let Some(fields) = object.as_object() {
        for (key, value) in fields {
            let wanted = match key.as_str() {
                "apiVersion" | "kind" | "metadata" => false,
                "status" => status,
                _ => !status,
            };
            if wanted {
                body.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(body)
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
        self.inner.handle.block_on(
            self.inner
                .openapi
                .schema(&self.inner.client, api_version, kind),
        )
    }

    fn record_event(&self, event: Event) {
        self.publish(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::unwrap_used)]
    fn requests_are_counted_by_verb_and_resource() {
        let cases = [
            (
                "GET",
                "/api/v1/namespaces/ns/configmaps/a",
                "get",
                "configmaps",
            ),
            (
                "GET",
                "/api/v1/namespaces/ns/configmaps?labelSelector=x",
                "list",
                "configmaps",
            ),
            (
                "GET",
                "/api/v1/configmaps?watch=true&resourceVersion=1",
                "watch",
                "configmaps",
            ),
            ("GET", "/api/v1/namespaces/ns", "get", "namespaces"),
            ("GET", "/api/v1/namespaces", "list", "namespaces"),
            (
                "PATCH",
                "/apis/example.org/v1/namespaces/ns/apps/a/status?fieldManager=m",
                "patch",
                "apps/status",
            ),
            (
                "PATCH",
                "/apis/apiextensions.crossplane.io/v1/compositions/c",
                "patch",
                "compositions",
            ),
            (
                "POST",
                "/apis/events.k8s.io/v1/namespaces/ns/events",
                "create",
                "events",
            ),
            (
                "PUT",
                "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l",
                "update",
                "leases",
            ),
            (
                "DELETE",
                "/api/v1/namespaces/ns/configmaps/a",
                "delete",
                "configmaps",
            ),
            ("GET", "/apis/example.org/v1", "get", "(discovery)"),
            ("GET", "/openapi/v3", "get", "(discovery)"),
        ];
        for (method, uri, want_verb, want_resource) in cases {
            let method: http::Method = method.parse().unwrap();
            let uri: http::Uri = uri.parse().unwrap();
            let (verb, resource) = describe(&method, &uri);
            assert_eq!(
                (verb, resource.as_str()),
                (want_verb, want_resource),
                "{method} {uri}"
            );
        }
    }

    #[test]
    fn applied_bodies_keep_only_what_a_client_may_own() {
        let object = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": "a", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                "managedFields": [{}], "creationTimestamp": "t", "generation": 2,
                "labels": {"l": "1"}, "finalizers": ["f"],
            },
            "data": {"k": "v"},
            "status": {"s": 1},
        });
        let cases = [
            (
                false,
                json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7", "labels": {"l": "1"}, "finalizers": ["f"]},
                    "data": {"k": "v"},
                }),
            ),
            (
                true,
                json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "a", "namespace": "ns"},
                    "status": {"s": 1},
                }),
            ),
        ];
        for (status, want) in cases {
            assert_eq!(applied(&object, status), want, "status={status}");
        }
    }

    #[test]
    fn event_notes_are_cut_at_a_character_boundary() {
        let cases = [("abc", 5, "abc"), ("abcdef", 3, "abc"), ("aé", 2, "a")];
        for (text, max, want) in cases {
            assert_eq!(truncate(text, max), want);
        }
    }
}
