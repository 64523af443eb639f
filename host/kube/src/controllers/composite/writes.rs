//! [`XrWrites`]: every write the XR controller's own phases make to the XR
//! outside its pipeline run (events, its status), behind one trait so the
//! phases' decisions run the same over the API server
//! ([`XrContext`], through its `KubeCluster`) and over the in-memory
//! cluster `plait render` and the unit tests use ([`MemoryCluster`]).
//! What the pipeline phase writes (the XR's finalizer, selection and
//! resource references in one write, composed resources, the XR's status)
//! goes through `plait_reconcile::Cluster`.

use plait_reconcile::{
    COMPOSITE_FIELD_MANAGER, Cluster, ClusterError, Event, MemoryCluster, ObjectRef,
};
use serde_json::Value;

use super::XrError;
use super::context::XrContext;
use crate::controllers::kit::ObjectError;

/// The writes an XR's phases make to the XR itself; each returns the XR as
/// stored after it.
pub(crate) trait XrWrites {
    /// Records an event about the XR.
    fn publish(&self, event: Event);
    /// Applies the XR's status as the composite field manager.
    async fn write_status(&self, xr: &Value) -> Result<Value, XrError>;
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
}
