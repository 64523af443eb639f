//! [`ClaimWrites`]: every read and write the claim controller's phases make
//! of the claim, its XR and their connection Secrets, behind one trait so
//! the phases' decisions run the same over the API server
//! ([`ClaimContext`]) and over the in-memory cluster the unit tests use
//! ([`MemoryCluster`]).

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use plait_reconcile::{Cluster, ClusterError, Event, MemoryCluster, ObjectRef};
use serde_json::{Value, json};

use super::context::ClaimContext;
use super::{CLAIM_FIELD_MANAGER, ClaimError};
use crate::access::client::{applied, is_unavailable};
use crate::controllers::kit::ObjectError;
use crate::vocabulary::api::FINALIZER_MANAGER;
use crate::vocabulary::object::{self, is_stale_write, is_status, text};

/// Why a claim controller's request failed, as the phase tells its cases
/// apart; each displays the cause as the API server gave it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WriteError {
    /// The object changed since it was read: the next reconcile reads it again.
    #[error("{0}")]
    Stale(String),
    /// The object is not there.
    #[error("{0}")]
    NotFound(String),
    /// The API server could not be reached, or cannot serve the request now.
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Failed(String),
}

impl WriteError {
    /// A kube error, stale when `stale` says so of it.
    fn kube(stale: fn(&kube::Error) -> bool) -> impl FnOnce(kube::Error) -> WriteError {
        move |error| {
            if stale(&error) {
                WriteError::Stale(error.to_string())
            } else if is_status(&error, 404) {
                WriteError::NotFound(error.to_string())
            } else if is_unavailable(&error) {
                WriteError::Unavailable(error.to_string())
            } else {
                WriteError::Failed(error.to_string())
            }
        }
    }

    fn cluster(error: ClusterError) -> WriteError {
        match error {
            ClusterError::Conflict { .. } => WriteError::Stale(error.to_string()),
            ClusterError::Unavailable { .. } => WriteError::Unavailable(error.to_string()),
            _ => WriteError::Failed(error.to_string()),
        }
    }
}

fn is_conflict(error: &kube::Error) -> bool {
    is_status(error, 409)
}

/// The reads and writes a claim's phases make. Objects go in and come
/// back as JSON; each write returns the object as stored after it.
pub(crate) trait ClaimWrites {
    /// Records an event about the claim.
    fn publish(&self, event: Event);
    /// Applies the claim's status as the claim controller, unless `stored`
    /// (the claim as last read or written) shows it would change nothing.
    async fn write_status(&self, claim: &Value, stored: &Value) -> Result<(), ClaimError>;
    /// Adds `finalizer` to the claim's finalizers.
    async fn add_finalizer(&self, claim: &Value, finalizer: &str) -> Result<Value, WriteError>;
    /// Removes `finalizer` from the claim's; a claim without it is left as it is.
    async fn remove_finalizer(&self, claim: &Value, finalizer: &str) -> Result<(), WriteError>;
    /// Server-side applies `fields` of the claim as the claim controller,
    /// unless `stored` shows it would change nothing; returns the claim as
    /// stored after.
    async fn apply_claim(&self, fields: &Value, stored: &Value) -> Result<Value, WriteError>;
    /// The XR `xr` names, if it exists.
    async fn xr(&self, xr: &ObjectRef) -> Result<Option<Value>, WriteError>;
    /// Server-side applies the XR as the claim controller, unless `stored`
    /// (the XR as last read) shows it would change nothing; returns the XR
    /// as stored after.
    async fn apply_xr(&self, xr: &Value, stored: Option<&Value>) -> Result<Value, WriteError>;
    /// Deletes the XR, in the foreground (it stays until what it owns is
    /// gone) or in the background.
    async fn delete_xr(&self, xr: &ObjectRef, foreground: bool) -> Result<(), WriteError>;
    /// The Secret `name` in `namespace`.
    async fn secret(&self, namespace: &str, name: &str) -> Result<Value, WriteError>;
    /// Server-side applies `secret` as the claim controller.
    async fn apply_secret(&self, secret: &Value) -> Result<(), WriteError>;
}

fn name_of(object: &Value) -> &str {
    text(object, "/metadata/name").unwrap_or_default()
}

fn status_error(claim: &Value) -> impl FnOnce(ClusterError) -> ObjectError {
    ObjectError::cluster(
        format!("claim {}", name_of(claim)),
        "cannot write its status",
    )
}

impl ClaimContext {
    /// The claims of `claim`'s namespace.
    fn claims(&self, claim: &Value) -> Api<DynamicObject> {
        object::api_for(
            self.cluster.client(),
            &self.claim,
            text(claim, "/metadata/namespace"),
        )
    }

    fn xrs(&self) -> Api<DynamicObject> {
        Api::all_with(self.cluster.client().clone(), &self.xr)
    }

    fn claim_json(&self, object: &DynamicObject) -> Result<Value, WriteError> {
        self.claim_value(object)
            .map_err(|e| WriteError::Failed(e.to_string()))
    }
}

impl ClaimWrites for ClaimContext {
    fn publish(&self, event: Event) {
        self.cluster.publish(event);
    }

    async fn write_status(&self, claim: &Value, stored: &Value) -> Result<(), ClaimError> {
        if self
            .cluster
            .already_applied(claim, true, CLAIM_FIELD_MANAGER, stored)
        {
            return Ok(());
        }
        self.cluster
            .apply_async(claim, CLAIM_FIELD_MANAGER, true)
            .await
            .map_err(status_error(claim))?;
        Ok(())
    }

    async fn add_finalizer(&self, claim: &Value, finalizer: &str) -> Result<Value, WriteError> {
        let patched = object::add_finalizer(&self.claims(claim), &self.claim, claim, finalizer)
            .await
            .map_err(WriteError::kube(is_stale_write))?;
        self.claim_json(&patched)
    }

    async fn remove_finalizer(&self, claim: &Value, finalizer: &str) -> Result<(), WriteError> {
        object::remove_finalizer(&self.claims(claim), claim, finalizer)
            .await
            .map_err(WriteError::kube(is_stale_write))?;
        Ok(())
    }

    async fn apply_claim(&self, fields: &Value, stored: &Value) -> Result<Value, WriteError> {
        if self
            .cluster
            .already_applied(fields, false, CLAIM_FIELD_MANAGER, stored)
        {
            return Ok(stored.clone());
        }
        let params = PatchParams::apply(CLAIM_FIELD_MANAGER).force();
        let body = applied(fields, false);
        let updated = self
            .claims(fields)
            .patch(name_of(fields), &params, &Patch::Apply(&body))
            .await
            .map_err(WriteError::kube(is_conflict))?;
        self.cluster
            .remember_apply(&updated, &self.claim, CLAIM_FIELD_MANAGER, false, &body);
        self.claim_json(&updated)
    }

    async fn xr(&self, xr: &ObjectRef) -> Result<Option<Value>, WriteError> {
        let found = self
            .xrs()
            .get_opt(&xr.name)
            .await
            .map_err(WriteError::kube(|_| false))?;
        found
            .map(|x| self.xr_value(&x))
            .transpose()
            .map_err(|e| WriteError::Failed(e.to_string()))
    }

    async fn apply_xr(&self, xr: &Value, stored: Option<&Value>) -> Result<Value, WriteError> {
        if let Some(stored) = stored
            && self
                .cluster
                .already_applied(xr, false, CLAIM_FIELD_MANAGER, stored)
        {
            return Ok(stored.clone());
        }
        let params = PatchParams::apply(CLAIM_FIELD_MANAGER).force();
        let body = applied(xr, false);
        let updated = self
            .xrs()
            .patch(name_of(xr), &params, &Patch::Apply(&body))
            .await
            .map_err(WriteError::kube(|_| false))?;
        self.cluster
            .remember_apply(&updated, &self.xr, CLAIM_FIELD_MANAGER, false, &body);
        self.xr_value(&updated)
            .map_err(|e| WriteError::Failed(e.to_string()))
    }

    async fn delete_xr(&self, xr: &ObjectRef, foreground: bool) -> Result<(), WriteError> {
        let params = if foreground {
            DeleteParams::foreground()
        } else {
            DeleteParams::background()
        };
        self.xrs()
            .delete(&xr.name, &params)
            .await
            .map_err(WriteError::kube(|_| false))?;
        Ok(())
    }

    async fn secret(&self, namespace: &str, name: &str) -> Result<Value, WriteError> {
        let secret = Api::<Secret>::namespaced(self.cluster.client().clone(), namespace)
            .get(name)
            .await
            .map_err(WriteError::kube(|_| false))?;
        serde_json::to_value(secret).map_err(|e| WriteError::Failed(e.to_string()))
    }

    async fn apply_secret(&self, secret: &Value) -> Result<(), WriteError> {
        let namespace = text(secret, "/metadata/namespace").unwrap_or_default();
        Api::<Secret>::namespaced(self.cluster.client().clone(), namespace)
            .patch(
                name_of(secret),
                &PatchParams::apply(CLAIM_FIELD_MANAGER).force(),
                &Patch::Apply(secret),
            )
            .await
            .map_err(WriteError::kube(|_| false))?;
        Ok(())
    }
}

/// The in-memory cluster answers as the API server would: a deleted
/// object that still has finalizers (or is deleted in the foreground,
/// which adds one) stays, marked deleted, until they are gone.
impl ClaimWrites for MemoryCluster {
    fn publish(&self, event: Event) {
        self.record_event(event);
    }

    async fn write_status(&self, claim: &Value, stored: &Value) -> Result<(), ClaimError> {
        let status_applier = format!("{CLAIM_FIELD_MANAGER}/status");
        let body = plait_reconcile::status_body(claim);
        if self.applied_unchanged(&body, stored, &status_applier) {
            return Ok(());
        }
        self.apply_status(claim, CLAIM_FIELD_MANAGER)
            .map_err(status_error(claim))?;
        Ok(())
    }

    async fn add_finalizer(&self, claim: &Value, finalizer: &str) -> Result<Value, WriteError> {
        let mut finalizers = finalizers(claim);
        if !finalizers.iter().any(|f| f == finalizer) {
            finalizers.push(finalizer.into());
        }
        self.apply(&metadata_entry(claim, json!(finalizers)), FINALIZER_MANAGER)
            .map_err(WriteError::cluster)
    }

    async fn remove_finalizer(&self, claim: &Value, finalizer: &str) -> Result<(), WriteError> {
        let mut finalizers = finalizers(claim);
        let Some(index) = finalizers.iter().position(|f| f == finalizer) else {
            return Ok(());
        };
        finalizers.remove(index);
        let stored = self
            .apply(&metadata_entry(claim, json!(finalizers)), FINALIZER_MANAGER)
            .map_err(WriteError::cluster)?;
        release_if_done(self, &stored)
    }

    async fn apply_claim(&self, fields: &Value, stored: &Value) -> Result<Value, WriteError> {
        let body = applied(fields, false);
        if self.applied_unchanged(&body, stored, CLAIM_FIELD_MANAGER) {
            return Ok(stored.clone());
        }
        self.apply(&body, CLAIM_FIELD_MANAGER)
            .map_err(WriteError::cluster)
    }

    async fn xr(&self, xr: &ObjectRef) -> Result<Option<Value>, WriteError> {
        self.get(xr).map_err(WriteError::cluster)
    }

    async fn apply_xr(&self, xr: &Value, stored: Option<&Value>) -> Result<Value, WriteError> {
        let body = applied(xr, false);
        if let Some(stored) = stored
            && self.applied_unchanged(&body, stored, CLAIM_FIELD_MANAGER)
        {
            return Ok(stored.clone());
        }
        self.apply(&body, CLAIM_FIELD_MANAGER)
            .map_err(WriteError::cluster)
    }

    async fn delete_xr(&self, xr: &ObjectRef, foreground: bool) -> Result<(), WriteError> {
        let Some(stored) = self.get(xr).map_err(WriteError::cluster)? else {
            return Err(WriteError::NotFound(format!("{xr} not found")));
        };
        let mut finalizers = finalizers(&stored);
        if foreground && !finalizers.iter().any(|f| f == FOREGROUND_DELETION) {
            finalizers.push(FOREGROUND_DELETION.into());
        }
        if finalizers.is_empty() {
            return Cluster::delete(self, xr, None).map_err(WriteError::cluster);
        }
        let mut marked = metadata_entry(&stored, json!(finalizers));
        marked["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        self.apply(&marked, DELETION_MANAGER)
            .map_err(WriteError::cluster)?;
        Ok(())
    }

    async fn secret(&self, namespace: &str, name: &str) -> Result<Value, WriteError> {
        let reference = ObjectRef {
            api_version: "v1".into(),
            kind: "Secret".into(),
            namespace: Some(namespace.into()),
            name: name.into(),
        };
        self.get(&reference)
            .map_err(WriteError::cluster)?
            .ok_or_else(|| WriteError::NotFound(format!("secrets {name:?} not found")))
    }

    async fn apply_secret(&self, secret: &Value) -> Result<(), WriteError> {
        self.apply(secret, CLAIM_FIELD_MANAGER)
            .map_err(WriteError::cluster)?;
        Ok(())
    }
}

/// The finalizer the API server adds to an object deleted in the foreground.
const FOREGROUND_DELETION: &str = "foregroundDeletion";
/// Who marks an object deleted in the in-memory cluster.
const DELETION_MANAGER: &str = "plait-memory-deletion";

fn finalizers(object: &Value) -> Vec<Value> {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// An apply body of `object`'s identity with `finalizers`.
fn metadata_entry(object: &Value, finalizers: Value) -> Value {
    let mut entry = json!({
        "apiVersion": object["apiVersion"],
        "kind": object["kind"],
        "metadata": {"name": object["metadata"]["name"], "finalizers": finalizers},
    });
    if let Some(namespace) = text(object, "/metadata/namespace") {
        entry["metadata"]["namespace"] = json!(namespace);
    }
    entry
}

/// A deleted object whose last finalizer went is gone, as the API server does.
fn release_if_done(cluster: &MemoryCluster, stored: &Value) -> Result<(), WriteError> {
    let deleted = stored.pointer("/metadata/deletionTimestamp").is_some();
    if !deleted || !finalizers(stored).is_empty() {
        return Ok(());
    }
    let Some(reference) = ObjectRef::of(stored) else {
        return Ok(());
    };
    Cluster::delete(cluster, &reference, None).map_err(WriteError::cluster)
}
