//! What the Composition controller works with: the cluster, its policy and
//! poll interval.

use std::time::Duration;

use plait_reconcile::ClusterError;

use crate::clusters::cluster::KubeCluster;
use crate::controllers::kit::{Controlled, ObjectError, Policy};
use crate::controllers::timing::Timing;
use crate::vocabulary::api::composition_resource;

/// What the Composition controller works with.
pub struct CompositionContext {
    pub cluster: KubeCluster,
    pub poll_interval: Duration,
    pub(super) policy: Policy,
}

impl CompositionContext {
    pub fn new(cluster: KubeCluster, timing: &Timing) -> CompositionContext {
        CompositionContext {
            cluster,
            poll_interval: timing.poll_interval,
            policy: Policy::new(composition_resource(), timing),
        }
    }
}

impl Controlled for CompositionContext {
    fn policy(&self) -> &Policy {
        &self.policy
    }
}

/// A failed read or write about `composition`, saying `what` failed.
pub(super) fn cluster_error(
    composition: &str,
    what: impl Into<std::borrow::Cow<'static, str>>,
) -> impl FnOnce(ClusterError) -> ObjectError {
    ObjectError::cluster(format!("Composition {composition:?}"), what)
}
