//! [`XrWrites`]: every write the XR controller's own phases make to the XR
//! (events, its status, its finalizer, merge patches of its spec), behind
//! one trait so the phases' decisions run the same over the API server
//! ([`XrContext`], through its `KubeCluster`) and over the in-memory
//! cluster `plait render` and the unit tests use ([`MemoryCluster`]).
//! What the pipeline writes goes through `plait_reconcile::Cluster`.

use plait_reconcile::{
    COMPOSITE_FIELD_MANAGER, Cluster, ClusterError, Event, MemoryCluster, ObjectRef,
};
use serde_json::Value;

use super::XrError;
use super::context::XrContext;
use crate::controllers::kit::ObjectError;
use crate::vocabulary::api::FINALIZER_MANAGER;
use crate::vocabulary::object;

/// The writes an XR's phases make to the XR itself; each returns the XR as
/// stored after it.
pub(crate) trait XrWrites {
    /// Records an event about the XR.
    fn publish(&self, event: Event);
    /// Applies the XR's status as the composite field manager.
    async fn write_status(&self, xr: &Value) -> Result<Value, XrError>;
    /// Adds `finalizer` to the XR's finalizers.
    async fn add_finalizer(&self, xr: &Value, finalizer: &str) -> Result<Value, XrError>;
    /// Merge-patches `fields` into the XR, `what` saying why in an error.
    async fn merge_patch(
        &self,
        xr: &Value,
        fields: Value,
        what: &'static str,
    ) -> Result<Value, XrError>;
}

fn reference_of(xr: &Value) -> Result<ObjectRef, XrError> {
    ObjectRef::of(xr).ok_or_else(|| {
        ObjectError::cluster(
            "composite resource",
            "cannot write an XR without apiVersion, kind and name",
        )(ClusterError::Other("no reference".into()))
        .into()
    })
}

impl XrWrites for XrContext {
    fn publish(&self, event: Event) {
        self.shared.cluster.publish(event);
    }

    async fn write_status(&self, xr: &Value) -> Result<Value, XrError> {
        let reference = reference_of(xr)?;
        Ok(self
            .shared
            .cluster
            .apply_async(xr, COMPOSITE_FIELD_MANAGER, true)
            .await
            .map_err(ObjectError::cluster(&reference, "cannot write its status"))?)
    }

    async fn add_finalizer(&self, xr: &Value, finalizer: &str) -> Result<Value, XrError> {
        let reference = reference_of(xr)?;
        let api = self.api(&reference);
        let patched = object::add_finalizer(&api, &self.policy.resource, xr, finalizer)
            .await
            .map_err(ObjectError::kube(&reference, "cannot add its finalizer"))?;
        self.stored(&patched, &reference)
    }

    async fn merge_patch(
        &self,
        xr: &Value,
        fields: Value,
        what: &'static str,
    ) -> Result<Value, XrError> {
        let reference = reference_of(xr)?;
        let patched = object::merge_patch(&self.api(&reference), xr, fields)
            .await
            .map_err(ObjectError::kube(&reference, what))?;
        self.stored(&patched, &reference)
    }
}

impl XrWrites for MemoryCluster {
    fn publish(&self, event: Event) {
        self.record_event(event);
    }

    async fn write_status(&self, xr: &Value) -> Result<Value, XrError> {
        let reference = reference_of(xr)?;
        Ok(self
            .apply_status(xr, COMPOSITE_FIELD_MANAGER)
            .map_err(ObjectError::cluster(&reference, "cannot write its status"))?)
    }

    async fn add_finalizer(&self, xr: &Value, finalizer: &str) -> Result<Value, XrError> {
        let reference = reference_of(xr)?;
        // Finalizers are a set to a server-side apply: the entry joins the others.
        let mut finalizers: Vec<Value> = xr
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if !finalizers.iter().any(|f| f == finalizer) {
            finalizers.push(finalizer.into());
        }
        let mut entry = serde_json::json!({
            "apiVersion": reference.api_version,
            "kind": reference.kind,
            "metadata": {"name": reference.name, "finalizers": finalizers},
        });
        if let Some(namespace) = &reference.namespace {
            entry["metadata"]["namespace"] = namespace.as_str().into();
        }
        Ok(self
            .apply(&entry, FINALIZER_MANAGER)
            .map_err(ObjectError::cluster(&reference, "cannot add its finalizer"))?)
    }

    async fn merge_patch(
        &self,
        xr: &Value,
        fields: Value,
        what: &'static str,
    ) -> Result<Value, XrError> {
        let reference = reference_of(xr)?;
        let mut patch = fields;
        patch["apiVersion"] = reference.api_version.as_str().into();
        patch["kind"] = reference.kind.as_str().into();
        patch["metadata"]["name"] = reference.name.as_str().into();
        if let Some(namespace) = &reference.namespace {
            patch["metadata"]["namespace"] = namespace.as_str().into();
        }
        Ok(self
            .apply(&patch, COMPOSITE_FIELD_MANAGER)
            .map_err(ObjectError::cluster(&reference, what))?)
    }
}
