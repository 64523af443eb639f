//! [`RevisionWrites`]: every read and write a Composition's phases make,
//! behind one trait, so the phases run the same over the API server
//! ([`CompositionContext`]) and over the in-memory cluster the unit tests
//! use ([`MemoryCluster`]).

use std::collections::BTreeMap;

use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use plait_functions::{FUNCTION_API_VERSION, FUNCTION_KIND};
use plait_reconcile::{
    Cluster, ClusterError, Event, EventType, MemoryCluster, ObjectRef, merge_patch,
};
use serde_json::{Value, json};

use super::LABEL_COMPOSITION_NAME;
use super::context::CompositionContext;
use crate::access::client::{LIST_PAGE, request_error};
use crate::vocabulary::api::{
    COMPOSITION_API_VERSION, COMPOSITION_KIND, FIELD_MANAGER, REVISION_KIND, revision_resource,
};
use crate::vocabulary::object::{is_status, text};

/// The reads and writes of a Composition's reconcile. Every error is a
/// [`ClusterError`], a conflict when the write was computed from a
/// revision that changed since it was read.
pub(super) trait RevisionWrites {
    /// Records a Normal event on the Composition `composition`.
    fn publish(&self, composition: &str, reason: &str, message: String);
    /// The revisions labelled with the Composition's name.
    async fn revisions(&self, composition: &str) -> Result<Vec<Value>, ClusterError>;
    /// The Function `name`, if there is one.
    async fn function(&self, name: &str) -> Result<Option<Value>, ClusterError>;
    /// Every object of a kind with few objects: the XRDs.
    async fn all(&self, api_version: &str, kind: &str) -> Result<Vec<Value>, ClusterError>;
    /// Shows `visit` every object of a kind with many: the XRs a
    /// Composition composes, which are not all held at once.
    async fn each(
        &self,
        api_version: &str,
        kind: &str,
        visit: impl FnMut(&Value) + Send,
    ) -> Result<(), ClusterError>;
    /// Merge-patches the revision `name`, guarded by the resourceVersion
    /// the patch carries; returns the revision's resourceVersion after.
    async fn patch_revision(&self, name: &str, patch: &Value) -> Result<Value, ClusterError>;
    /// Creates `revision`.
    async fn create_revision(&self, revision: &Value) -> Result<(), ClusterError>;
    /// Deletes the revision `name`; one that is gone already is no error.
    async fn delete_revision(&self, name: &str) -> Result<(), ClusterError>;
}

fn composition_event(composition: &str, reason: &str, message: String) -> Event {
    Event {
        regarding: ObjectRef {
            api_version: COMPOSITION_API_VERSION.into(),
            kind: COMPOSITION_KIND.into(),
            namespace: None,
            name: composition.into(),
        },
        event_type: EventType::Normal,
        reason: reason.into(),
        message,
    }
}

fn labelled(composition: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(LABEL_COMPOSITION_NAME.to_string(), composition.to_string())])
}

fn function_ref(name: &str) -> ObjectRef {
    ObjectRef {
        api_version: FUNCTION_API_VERSION.into(),
        kind: FUNCTION_KIND.into(),
        namespace: None,
        name: name.into(),
    }
}

fn revision_ref(name: &str) -> ObjectRef {
    ObjectRef {
        api_version: COMPOSITION_API_VERSION.into(),
        kind: REVISION_KIND.into(),
        namespace: None,
        name: name.into(),
    }
}

impl CompositionContext {
    fn revision_api(&self) -> Api<DynamicObject> {
        Api::all_with(self.cluster.client().clone(), &revision_resource())
    }
}

impl RevisionWrites for CompositionContext {
    fn publish(&self, composition: &str, reason: &str, message: String) {
        self.cluster
            .publish(composition_event(composition, reason, message));
    }

    async fn revisions(&self, composition: &str) -> Result<Vec<Value>, ClusterError> {
        self.cluster
            .list_async(
                COMPOSITION_API_VERSION,
                REVISION_KIND,
                None,
                &labelled(composition),
            )
            .await
    }

    async fn function(&self, name: &str) -> Result<Option<Value>, ClusterError> {
        // From the API server: the watch event that brought a Function's
        // change here may be ahead of any store.
        self.cluster.get_async(&function_ref(name)).await
    }

    async fn all(&self, api_version: &str, kind: &str) -> Result<Vec<Value>, ClusterError> {
        self.cluster
            .list_async(api_version, kind, None, &BTreeMap::new())
            .await
    }

    async fn each(
        &self,
        api_version: &str,
        kind: &str,
        mut visit: impl FnMut(&Value) + Send,
    ) -> Result<(), ClusterError> {
        self.cluster
            .visit_live(
                api_version,
                kind,
                None,
                &BTreeMap::new(),
                LIST_PAGE,
                |object| visit(&object),
            )
            .await
    }

    async fn patch_revision(&self, name: &str, patch: &Value) -> Result<Value, ClusterError> {
        let patched = self
            .cluster
            .merge_patch_async(&revision_ref(name), patch, FIELD_MANAGER)
            .await?;
        Ok(patched
            .pointer("/metadata/resourceVersion")
            .cloned()
            .unwrap_or(Value::Null))
    }

    async fn create_revision(&self, revision: &Value) -> Result<(), ClusterError> {
        let name = text(revision, "/metadata/name").unwrap_or_default();
        let dynamic: DynamicObject =
            serde_json::from_value(revision.clone()).map_err(|e| ClusterError::Object {
                object: revision_ref(name).to_string(),
                message: format!("cannot be encoded: {e}"),
            })?;
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..PostParams::default()
        };
        self.revision_api()
            .create(&params, &dynamic)
            .await
            .map_err(request_error(&revision_ref(name)))?;
        Ok(())
    }

    async fn delete_revision(&self, name: &str) -> Result<(), ClusterError> {
        match self
            .revision_api()
            .delete(name, &DeleteParams::background())
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_status(&e, 404) => Ok(()),
            Err(e) => Err(request_error(&revision_ref(name))(e)),
        }
    }
}

/// The in-memory cluster keeps a revision's resourceVersion as a counter
/// its writes move on, so a patch guarded by an older one conflicts as it
/// does on the API server.
impl RevisionWrites for MemoryCluster {
    fn publish(&self, composition: &str, reason: &str, message: String) {
        self.record_event(composition_event(composition, reason, message));
    }

    async fn revisions(&self, composition: &str) -> Result<Vec<Value>, ClusterError> {
        self.list(
            COMPOSITION_API_VERSION,
            REVISION_KIND,
            None,
            &labelled(composition),
        )
    }

    async fn function(&self, name: &str) -> Result<Option<Value>, ClusterError> {
        self.get(&function_ref(name))
    }

    async fn all(&self, api_version: &str, kind: &str) -> Result<Vec<Value>, ClusterError> {
        self.list(api_version, kind, None, &BTreeMap::new())
    }

    async fn each(
        &self,
        api_version: &str,
        kind: &str,
        mut visit: impl FnMut(&Value) + Send,
    ) -> Result<(), ClusterError> {
        for object in self.list(api_version, kind, None, &BTreeMap::new())? {
            visit(&object);
        }
        Ok(())
    }

    async fn patch_revision(&self, name: &str, patch: &Value) -> Result<Value, ClusterError> {
        let reference = revision_ref(name);
        let mut stored = self.get(&reference)?.ok_or_else(|| ClusterError::Object {
            object: reference.to_string(),
            message: "not found".into(),
        })?;
        let version = stored.pointer("/metadata/resourceVersion").cloned();
        let guard = patch.pointer("/metadata/resourceVersion");
        if guard.is_some_and(|g| !g.is_null() && Some(g) != version.as_ref()) {
            return Err(ClusterError::Conflict {
                object: reference.to_string(),
                message: "the object has been modified".into(),
            });
        }
        merge_patch(&mut stored, patch);
        let next = version
            .as_ref()
            .and_then(Value::as_str)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
            + 1;
        stored["metadata"]["resourceVersion"] = json!(next.to_string());
        self.seed([stored])?;
        Ok(json!(next.to_string()))
    }

    async fn create_revision(&self, revision: &Value) -> Result<(), ClusterError> {
        let name = text(revision, "/metadata/name").unwrap_or_default();
        if self.get(&revision_ref(name))?.is_some() {
            return Err(ClusterError::Object {
                object: revision_ref(name).to_string(),
                message: "already exists".into(),
            });
        }
        let mut created = revision.clone();
        created["metadata"]["resourceVersion"] = json!("1");
        self.seed([created])
    }

    async fn delete_revision(&self, name: &str) -> Result<(), ClusterError> {
        Cluster::delete(self, &revision_ref(name), None)
    }
}
