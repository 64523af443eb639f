//! API access: the kube client every controller, watch and cluster sends
//! its requests through, counted by verb and resource, with what discovery
//! said of each kind and what the controller's own writes produced.
//!
//! Everything here asks the API server; nothing reads a watch-fed store.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use kube::Client;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, Preconditions,
};
use kube::discovery::{Scope, pinned_kind};
use plait_reconcile::{
    COMPOSED_FIELD_MANAGER_PREFIX, COMPOSITE_FIELD_MANAGER, ClusterError, ObjectRef,
};
use serde_json::{Map, Value, json};

use crate::access::openapi::OpenApi;
use crate::access::writes::{OwnWrites, WrittenObject, body_digest, without_resource_version};

/// Objects per page of a list from the API server: a kind with many objects
/// (the XRs of a kind, at scale) is never decoded whole at once.
pub const LIST_PAGE: u32 = 500;

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

/// One identity's access to the API server: its client, what discovery
/// said of each kind, kinds' OpenAPI schemas, and the record of its writes
/// (shared by every identity the controller acts as).
pub struct KubeApi {
    client: Client,
    /// Positive discovery answers only: a kind that is missing now may be
    /// served a moment later, when its CRD is established.
    kinds: Mutex<KindCache>,
    openapi: OpenApi,
    writes: Arc<OwnWrites>,
}

impl KubeApi {
    /// Access through `client`, recording its writes in `writes`.
    pub fn new(client: Client, writes: Arc<OwnWrites>) -> KubeApi {
        KubeApi {
            client,
            kinds: Mutex::new(HashMap::new()),
            openapi: OpenApi::default(),
            writes,
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// What this controller's writes produced.
    pub fn writes(&self) -> &Arc<OwnWrites> {
        &self.writes
    }

    /// Records a write whose result is `stored`.
    pub fn wrote(&self, stored: &DynamicObject, resource: &ApiResource) {
        let Some(name) = &stored.metadata.name else {
            return;
        };
        let object = WrittenObject::new(
            &resource.api_version,
            &resource.kind,
            stored.metadata.namespace.as_deref(),
            name,
        );
        if let Some(uid) = &stored.metadata.uid {
            self.writes.identified(object.clone(), uid);
        }
        if let Some(version) = &stored.metadata.resource_version {
            self.writes.wrote(object, version);
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
        let (resource, caps) = match pinned_kind(&self.client, &gvk).await {
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
        if let Ok(mut kinds) = self.kinds.lock() {
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
        let client = self.client.clone();
        let api = match (served.namespaced, namespace) {
            (true, Some(ns)) => Api::namespaced_with(client, ns, &served.resource),
            _ => Api::all_with(client, &served.resource),
        };
        Ok((api, served))
    }

    /// The object as the API server has it now; `None` when it or its kind is not there.
    pub async fn get_live(&self, object: &ObjectRef) -> Result<Option<Value>, ClusterError> {
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
            .map_err(request_error(object))?;
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
        let _sending = self.writes.sending(WrittenObject::of(&reference));
        let stored = if status {
            api.patch_status(&reference.name, &params, &patch).await
        } else {
            api.patch(&reference.name, &params, &patch).await
        }
        .map_err(request_error(&reference))?;
        let stored = if !status
            && field_manager.starts_with(COMPOSED_FIELD_MANAGER_PREFIX)
            && owned_by_earlier_manager(&stored)
        {
            // Composed resources applied before they had a field manager of
            // their own: an apply of nothing by the earlier manager leaves
            // what the new one now owns too and removes what only it owned
            // (fields the Composition no longer sets).
            let mut nothing = json!({
                "apiVersion": reference.api_version,
                "kind": reference.kind,
                "metadata": {"name": reference.name},
            });
            if let Some(namespace) = &reference.namespace {
                nothing["metadata"]["namespace"] = json!(namespace);
            }
            let params = PatchParams::apply(COMPOSITE_FIELD_MANAGER).force();
            api.patch(&reference.name, &params, &Patch::Apply(&nothing))
                .await
                .map_err(request_error(&reference))?
        } else {
            stored
        };
        self.wrote(&stored, &served.resource);
        self.remember_apply(&stored, &served.resource, field_manager, status, &body);
        to_value(&stored)
    }

    /// Remembers what a server-side apply of `body` by `field_manager` (its
    /// status, when `status`) sent and the object it left, `stored`, so
    /// [`Self::already_applied`] knows when the same apply would change
    /// nothing. The version is not counted among the controller's own
    /// writes, which the XR controller reads its watch by (see
    /// [`Self::wrote`]): the claim controller's applies to an XR are not.
    pub fn remember_apply(
        &self,
        stored: &DynamicObject,
        resource: &ApiResource,
        field_manager: &str,
        status: bool,
        body: &Value,
    ) {
        let (Some(name), Some(version)) =
            (&stored.metadata.name, &stored.metadata.resource_version)
        else {
            return;
        };
        let object = WrittenObject::new(
            &resource.api_version,
            &resource.kind,
            stored.metadata.namespace.as_deref(),
            name,
        );
        if let Some(uid) = &stored.metadata.uid {
            self.writes.identified(object.clone(), uid);
        }
        self.writes().applied(
            object,
            &applier(field_manager, status),
            body_digest(body),
            version,
        );
    }

    /// JSON merge patch of `object` by `field_manager`; a `resourceVersion`
    /// in `patch` the object has moved on from makes it a conflict.
    pub async fn merge_patch_async(
        &self,
        object: &ObjectRef,
        patch: &Value,
        field_manager: &str,
    ) -> Result<Value, ClusterError> {
        let (api, served) = self
            .api_for(
                &object.api_version,
                &object.kind,
                object.namespace.as_deref(),
            )
            .await?;
        let params = PatchParams {
            field_manager: Some(field_manager.to_string()),
            ..PatchParams::default()
        };
        let _sending = self.writes.sending(WrittenObject::of(object));
        let stored = api
            .patch(&object.name, &params, &Patch::Merge(patch))
            .await
            .map_err(request_error(object))?;
        self.wrote(&stored, &served.resource);
        to_value(&stored)
    }

    /// Whether applying `object` (its status, when `status`) by
    /// `field_manager` is known to change nothing: the last such apply sent
    /// the same body, and `current` (the object as last read) is either the
    /// version that apply left or still holds every field of the body with
    /// its value: then the manager owns exactly those fields, as they are.
    /// Writes since by others, or by this controller's other appliers (a
    /// status write after a spec apply), do not make the apply necessary.
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
        let written = WrittenObject::of(&reference);
        let applier = applier(field_manager, status);
        let body = applied(object, status);
        let digest = body_digest(&body);
        if self
            .writes()
            .is_applied(&written, &applier, &digest, version)
        {
            return true;
        }
        // The same object, not one deleted and made again under its name.
        let same_object = current
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .is_some_and(|uid| self.writes().uid(&written).as_deref() == Some(uid));
        same_object
            && self.writes().sent(&written, &applier, &digest)
            && plait_reconcile::holds(current, &without_resource_version(body))
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
        self.writes.forget(&WrittenObject::of(object));
        match api.delete(&object.name, &params).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
            Err(e) => Err(request_error(object)(e)),
        }
    }

    /// The objects of `api_version`/`kind` whose labels include `labels`,
    /// as the API server lists them now.
    pub async fn list_live(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        labels: &BTreeMap<String, String>,
    ) -> Result<Vec<Value>, ClusterError> {
        let mut objects = Vec::new();
        self.visit_live(api_version, kind, namespace, labels, LIST_PAGE, |object| {
            objects.push(object)
        })
        .await?;
        Ok(objects)
    }

    /// Shows `visit` each object of `api_version`/`kind` whose labels
    /// include `labels`, as the API server lists them now, `page` objects
    /// at a time ([`LIST_PAGE`] but in tests): only one page is ever held
    /// decoded.
    pub async fn visit_live(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        labels: &BTreeMap<String, String>,
        page: u32,
        mut visit: impl FnMut(Value) + Send,
    ) -> Result<(), ClusterError> {
        if self.served_kind(api_version, kind).await?.is_none() {
            return Ok(());
        }
        let (api, _) = self.api_for(api_version, kind, namespace).await?;
        let selector = labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut params = ListParams::default().labels(&selector).limit(page);
        loop {
            let listed = api.list(&params).await.map_err(|e| {
                ClusterError::Other(format!("cannot list {kind}.{api_version}: {e}"))
            })?;
            for object in &listed.items {
                let mut value = to_value(object)?;
                // List items come without apiVersion and kind.
                value["apiVersion"] = json!(api_version);
                value["kind"] = json!(kind);
                visit(value);
            }
            match listed.metadata.continue_.filter(|token| !token.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => return Ok(()),
            }
        }
    }

    /// The OpenAPI v3 schema the API server serves for `api_version`/`kind`.
    pub async fn schema(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<Value>, ClusterError> {
        self.openapi.schema(&self.client, api_version, kind).await
    }

    fn lock_kinds(&self) -> Result<std::sync::MutexGuard<'_, KindCache>, ClusterError> {
        self.kinds
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
        crate::vocabulary::metrics::metrics().api_request(verb, &resource);
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

pub(crate) fn object_error(object: &ObjectRef, message: impl std::fmt::Display) -> ClusterError {
    ClusterError::Object {
        object: object.to_string(),
        message: message.to_string(),
    }
}

/// Whether a request failed because the API server could not be reached,
/// or answered that it cannot serve it now (429, 503): nothing is wrong with
/// the request, and nothing could be written about it either.
pub fn is_unavailable(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status.code == 429 || status.code == 503,
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// A failed request about `object`: a conflict when the API server answered
/// 409 (the object changed since it was read, or is there already), invalid
/// when it answered 422 (the object as sent breaks its schema or a rule),
/// unavailable when it could not be reached or answered 429 or 503.
pub fn request_error(object: &ObjectRef) -> impl FnOnce(kube::Error) -> ClusterError + '_ {
    move |error| match error {
        kube::Error::Api(status) if status.code == 409 => ClusterError::Conflict {
            object: object.to_string(),
            message: status.message,
        },
        kube::Error::Api(status) if status.code == 422 => ClusterError::Invalid {
            object: object.to_string(),
            message: status.message,
        },
        kube::Error::Api(status) if status.code == 429 || status.code == 503 => {
            ClusterError::Unavailable {
                object: object.to_string(),
                message: status.message,
            }
        }
        error if is_unavailable(&error) => ClusterError::Unavailable {
            object: object.to_string(),
            message: error.to_string(),
        },
        other => object_error(object, other),
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

/// Whether `stored` has fields applied by [`COMPOSITE_FIELD_MANAGER`] and
/// is not itself an XR, whose own reconcile applies under that manager.
fn owned_by_earlier_manager(stored: &DynamicObject) -> bool {
    let spec = &stored.data["spec"];
    let is_xr = ["crossplane", "resourceRefs", "compositionRef"]
        .iter()
        .any(|field| spec.get(field).is_some());
    !is_xr
        && stored
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .any(|entry| {
                entry.manager.as_deref() == Some(COMPOSITE_FIELD_MANAGER)
                    && entry.operation.as_deref() == Some("Apply")
            })
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
    crate::vocabulary::object::drop_managed_fields(&mut value);
    Ok(value)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_request_is_named_by_what_the_caller_should_do_about_it() {
        let object = ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("a".into()),
            name: "b".into(),
        };
        let api = |code: u16| {
            let mut status = kube::core::Status::failure("refused", "Reason");
            status.code = code;
            kube::Error::Api(Box::new(status))
        };
        let unreachable = kube::Error::Service("connection refused".into());
        // (the error, what it becomes)
        let cases = [
            (api(409), "Conflict"),
            (api(422), "Invalid"),
            (api(429), "Unavailable"),
            (api(503), "Unavailable"),
            (api(403), "Object"),
            (api(500), "Object"),
            (unreachable, "Unavailable"),
            (kube::Error::LinesCodecMaxLineLengthExceeded, "Object"),
        ];
        for (error, want) in cases {
            let shown = error.to_string();
            let got = match request_error(&object)(error) {
                ClusterError::Conflict { .. } => "Conflict",
                ClusterError::Invalid { .. } => "Invalid",
                ClusterError::Unavailable { .. } => "Unavailable",
                ClusterError::Object { .. } => "Object",
                ClusterError::Other(_) => "Other",
            };
            assert_eq!(got, want, "{shown}");
        }
    }

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
}
