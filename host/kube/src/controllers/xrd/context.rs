//! What the XRD controller works with: the `XrShared` it hands every XR
//! controller it starts, and the XR and claim controllers it runs.

use std::sync::Arc;

use kube::api::ApiResource;
use plait_model::CompositeResourceDefinition;

use crate::clusters::cluster::KubeCluster;
use crate::clusters::fence::Shards;
use crate::clusters::tenants::TenantClusters;
use crate::controllers::children::Children;
use crate::controllers::claim::ClaimControllers;
use crate::controllers::composite::{self, XrContext, XrShared};
use crate::controllers::fair_queue::FairQueue;
use crate::controllers::function::Functions;
use crate::controllers::kit::{Controlled, Policy};
use crate::controllers::required::RequiredWatches;
use crate::controllers::timing::Timing;
use crate::controllers::watches::ComposedWatches;
use crate::stores::catalog::Catalog;
use crate::vocabulary::api::xrd_resource;

/// The XRD controller's context: what it shares with the XR controllers it
/// starts, and the claim and XR controllers it runs.
pub struct XrdContext {
    /// What every XR controller shares.
    pub shared: XrShared,
    /// The claim controllers of XRDs that offer claims.
    pub claims: ClaimControllers,
    /// The XR controllers, one per XRD, each serving its XR kind.
    xrs: Children<ApiResource, XrContext>,
    pub(super) policy: Policy,
}

impl Controlled for XrdContext {
    fn policy(&self) -> &Policy {
        &self.policy
    }
}

impl XrdContext {
    pub fn new(
        cluster: KubeCluster,
        functions: Functions,
        catalog: Arc<Catalog>,
        timing: Timing,
        tenants: Option<Arc<TenantClusters>>,
        shards: Option<Arc<Shards>>,
    ) -> XrdContext {
        let watches = Arc::new(ComposedWatches::new(cluster.shared().composed.clone()));
        let required = Arc::new(RequiredWatches::new(
            watches.clone(),
            &cluster.shared().environment,
        ));
        let fair_queue = FairQueue::new(timing.fair_queue_limits());
        XrdContext {
            claims: ClaimControllers::new(
                cluster.clone(),
                timing.clone(),
                shards.clone(),
                fair_queue.clone(),
            ),
            policy: Policy::new(xrd_resource(), &timing),
            shared: XrShared {
                cluster,
                tenants,
                functions,
                catalog,
                watches,
                required,
                timing,
                shards,
                fair_queue,
            },
            xrs: Children::new("XR controller"),
        }
    }

    /// Keeps the controller of the XR kind `xrd` defines running, serving
    /// `resource`; a running one only takes in the XRD.
    pub(super) fn start(
        &self,
        xrd: &CompositeResourceDefinition,
        resource: ApiResource,
        namespaced: bool,
    ) {
        let replaced = self.xrs.ensure(
            xrd.metadata.name(),
            resource.clone(),
            |running| {
                if let Ok(mut x) = running.xrd.write() {
                    *x = xrd.clone();
                }
            },
            || Arc::new(XrContext::new(&self.shared, xrd.clone(), resource.clone())),
            |context, stop| composite::run(context, namespaced, stop),
        );
        // The previous controller served another version or kind: its
        // route goes, unless the new controller took the same one over.
        if let Some(previous) = replaced
            && (previous.group != resource.group || previous.kind != resource.kind)
        {
            self.shared.watches.unroute(&previous.group, &previous.kind);
        }
    }

    pub(super) fn stop_controller(&self, xrd: &str) {
        if let Some(resource) = self.xrs.stop(xrd) {
            self.shared.watches.unroute(&resource.group, &resource.kind);
        }
    }

    /// Stops every XR controller and watch, letting running reconciles finish.
    pub async fn shutdown(&self) {
        self.claims.shutdown().await;
        for resource in self.xrs.shutdown().await {
            self.shared.watches.unroute(&resource.group, &resource.kind);
        }
        self.shared.watches.stop();
        self.shared.required.stop();
    }
}
