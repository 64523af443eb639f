//! What the Composition controller works with: the cluster, its policy and
//! poll interval, and the events it publishes on a Composition.

use std::time::Duration;

use plait_reconcile::{ClusterError, Event, EventType, ObjectRef};

use crate::clusters::cluster::KubeCluster;
use crate::controllers::kit::{Controlled, ObjectError, Policy};
use crate::controllers::timing::Timing;
use crate::vocabulary::api::{COMPOSITION_API_VERSION, COMPOSITION_KIND, composition_resource};

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

    /// Records a Normal event on the Composition `composition`.
    pub(super) fn publish(&self, composition: &str, reason: &str, message: String) {
        self.cluster.publish(Event {
            regarding: ObjectRef {
                api_version: COMPOSITION_API_VERSION.into(),
                kind: COMPOSITION_KIND.into(),
                namespace: None,
                name: composition.into(),
            },
            event_type: EventType::Normal,
            reason: reason.into(),
            message,
        });
    }
}

impl Controlled for CompositionContext {
    fn policy(&self) -> &Policy {
        &self.policy
    }
}

/// A failed API request about `composition`'s revisions, saying `what` failed.
pub(super) fn kube_error(
    composition: &str,
    what: impl Into<String>,
) -> impl FnOnce(kube::Error) -> ObjectError {
    ObjectError::kube(format!("Composition {composition:?}"), what.into())
}

/// A failed read through the cluster about `composition`, saying `what` failed.
pub(super) fn cluster_error(
    composition: &str,
    what: &'static str,
) -> impl FnOnce(ClusterError) -> ObjectError {
    ObjectError::cluster(format!("Composition {composition:?}"), what)
}
