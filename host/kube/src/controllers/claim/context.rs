//! What the controller of one claim kind works with.

use std::sync::{Arc, OnceLock, RwLock};

use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::Store;
use plait_model::CompositeResourceDefinition;
use serde_json::Value;

use super::ClaimError;
use crate::clusters::cluster::KubeCluster;
use crate::clusters::fence::Shards;
use crate::controllers::fair_queue::FairQueue;
use crate::controllers::kit::{Controlled, ObjectError, Policy};
use crate::controllers::timing::Timing;
use crate::vocabulary::object;

/// What every claim of one kind shares.
pub struct ClaimContext {
    pub cluster: KubeCluster,
    pub timing: Timing,
    pub xrd: RwLock<CompositeResourceDefinition>,
    pub claim: ApiResource,
    pub xr: ApiResource,
    pub(super) policy: Policy,
    /// The shards this replica reconciles, when claims are sharded.
    pub(super) shards: Option<Arc<Shards>>,
    /// The queue every XR and claim reconcile waits in for its turn.
    pub(super) fair_queue: Arc<FairQueue>,
    /// The claims as the controller's watch last saw them, once it runs.
    pub(super) store: OnceLock<Store<DynamicObject>>,
}

impl ClaimContext {
    /// `claim` as the watch has it now: it may have changed, or gone,
    /// while its reconcile waited for its turn.
    pub(super) fn current(&self, claim: Arc<DynamicObject>) -> Option<Arc<DynamicObject>> {
        let Some(store) = self.store.get() else {
            return Some(claim);
        };
        store.get(&kube::runtime::reflector::ObjectRef::from_obj_with(
            claim.as_ref(),
            self.claim.clone(),
        ))
    }

    pub(super) fn claim_value(&self, object: &DynamicObject) -> Result<Value, ClaimError> {
        self.value(object, &self.claim)
    }

    pub(super) fn xr_value(&self, object: &DynamicObject) -> Result<Value, ClaimError> {
        self.value(object, &self.xr)
    }

    fn value(&self, object: &DynamicObject, resource: &ApiResource) -> Result<Value, ClaimError> {
        Ok(
            object::to_value(object, resource).map_err(ObjectError::encode(format!(
                "claim {}",
                object.metadata.name.clone().unwrap_or_default()
            )))?,
        )
    }
}

impl ClaimContext {
    /// Reads claims from `store`, the controller's watch cache, from now on.
    pub(super) fn watch_with(&self, store: Store<DynamicObject>) {
        // Set once, when the controller starts.
        let _ = self.store.set(store);
    }
}

impl Controlled for ClaimContext {
    fn policy(&self) -> &Policy {
        &self.policy
    }
}
