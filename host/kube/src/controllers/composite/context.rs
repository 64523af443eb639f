//! What an XR controller works with: [`XrShared`], the parts every XR
//! controller shares with the others and with the XRD controller that
//! starts them, and [`XrContext`], one XR kind's context built on them.

use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::Store;
use plait_model::CompositeResourceDefinition;
use plait_pipeline::Tenant;
use plait_reconcile::{ClusterError, CompositeScope, ObjectRef};

use super::latest::LatestStored;
use crate::access::writes::WrittenObject;
use crate::clusters::cluster::KubeCluster;
use crate::clusters::fence::Shards;
use crate::clusters::tenants::TenantClusters;
use crate::controllers::breaker::CircuitBreaker;
use crate::controllers::fair_queue::FairQueue;
use crate::controllers::function::Functions;
use crate::controllers::kit::{Controlled, Policy};
use crate::controllers::required::RequiredWatches;
use crate::controllers::timing::{Backoff, Timing};
use crate::controllers::watches::ComposedWatches;
use crate::stores::catalog::Catalog;
use crate::vocabulary::object;

/// The first look again at an XR whose reconcile created composed
/// resources, doubled while reconciles keep creating them.
const CREATED_BASE: Duration = Duration::from_millis(100);

/// What every XR controller shares: the XRD controller holds one and hands
/// it to each XR controller it starts.
#[derive(Clone)]
pub struct XrShared {
    pub cluster: KubeCluster,
    /// Each tenant's view of the cluster, when pipelines act as tenants.
    pub tenants: Option<Arc<TenantClusters>>,
    pub functions: Functions,
    /// Compositions, revisions and Functions, and the pipelines compiled from them.
    pub catalog: Arc<Catalog>,
    pub watches: Arc<ComposedWatches>,
    /// What each XR's functions last read as required resources, and the
    /// watches that queue it again when one of those changes.
    pub required: Arc<RequiredWatches>,
    pub timing: Timing,
    /// The shards this replica reconciles, when XRs and claims are sharded.
    pub shards: Option<Arc<Shards>>,
    /// The fair queue every XR and claim reconcile waits in for its turn.
    pub fair_queue: Arc<FairQueue>,
}

/// What every XR of one kind shares.
pub struct XrContext {
    pub shared: XrShared,
    /// The XRD, refreshed whenever the XRD controller sees it change.
    pub xrd: RwLock<CompositeResourceDefinition>,
    pub policy: Policy,
    /// The watch circuits of this kind's XRs.
    pub breaker: Arc<CircuitBreaker>,
    /// Reconciles in a row that created composed resources, per XR.
    pub(super) creating: Backoff<ObjectRef>,
    pub(super) latest: LatestStored,
    /// The XRs as the controller's watch last saw them, once it runs.
    store: OnceLock<Store<DynamicObject>>,
}

impl XrContext {
    /// The context of the controller of `resource`, the XR kind `xrd` defines.
    pub fn new(
        shared: &XrShared,
        xrd: CompositeResourceDefinition,
        resource: ApiResource,
    ) -> XrContext {
        let timing = &shared.timing;
        XrContext {
            breaker: Arc::new(CircuitBreaker::new(&resource.kind, timing.circuit_breaker)),
            creating: Backoff::new(CREATED_BASE, timing.poll_interval),
            latest: LatestStored::default(),
            store: OnceLock::new(),
            xrd: RwLock::new(xrd),
            policy: Policy::new(resource, timing),
            shared: shared.clone(),
        }
    }

    /// The cluster a pipeline for `tenant` reads and writes through: as the
    /// tenant when pipelines act as tenants, else as the controller.
    pub(super) fn composing_cluster(&self, tenant: &Tenant) -> Result<KubeCluster, ClusterError> {
        match (&self.shared.tenants, tenant) {
            (Some(tenants), Tenant::Namespace(namespace)) => tenants.of(namespace),
            _ => Ok(self.shared.cluster.clone()),
        }
    }

    pub(super) fn xrd(&self) -> Option<CompositeResourceDefinition> {
        self.xrd.read().ok().map(|x| x.clone())
    }

    /// The XR's API, in its namespace.
    pub(super) fn api(&self, reference: &ObjectRef) -> kube::Api<DynamicObject> {
        object::api_for(
            self.shared.cluster.client(),
            &self.policy.resource,
            reference.namespace.as_deref(),
        )
    }

    /// Reads XRs from `store`, the controller's watch cache, from now on.
    pub(super) fn watch_with(&self, store: Store<DynamicObject>) {
        // Set once, when the controller starts.
        let _ = self.store.set(store);
    }

    /// The tenant an XR's reconcile waits as: its namespace, its claim's, or the platform.
    pub(super) fn tenant(&self, xr: &DynamicObject) -> Tenant {
        let scope = self
            .xrd()
            .map_or(CompositeScope::Namespaced, |xrd| CompositeScope::of(&xrd));
        plait_reconcile::tenant_in(scope, xr.metadata.namespace.as_deref(), xr.data.get("spec"))
    }

    /// `xr` as the watch has it now: it may have changed, or gone, while
    /// its reconcile waited for its turn.
    pub(super) fn current(&self, xr: Arc<DynamicObject>) -> Option<Arc<DynamicObject>> {
        let Some(store) = self.store.get() else {
            return Some(xr);
        };
        store.get(&kube::runtime::reflector::ObjectRef::from_obj_with(
            xr.as_ref(),
            self.policy.resource.clone(),
        ))
    }

    /// Whether `xr` is this controller's to reconcile and no reconcile of
    /// it has finished here yet.
    pub(super) fn awaits_first_reconcile(&self, xr: &DynamicObject) -> bool {
        let ours = self.shared.shards.as_ref().is_none_or(|shards| {
            shards.holds_object(xr.metadata.uid.as_deref().unwrap_or_default())
        });
        ours && !self.latest.knows(&self.policy.reference(xr))
    }

    /// Forgets an XR that is gone.
    pub(super) fn forget(&self, reference: &ObjectRef) {
        self.policy.forget(reference);
        self.creating.succeeded(reference);
        self.latest.forget(reference);
        self.shared.required.forget(reference);
        self.breaker
            .forget(&(reference.namespace.clone(), reference.name.clone()));
        self.shared
            .cluster
            .writes()
            .forget(&WrittenObject::of(reference));
    }
}

impl Controlled for XrContext {
    fn policy(&self) -> &Policy {
        &self.policy
    }
}
