//! What one of the two Usage controllers (Usage or ClusterUsage) works
//! with: the cluster, the tenants a namespaced Usage acts as, its policy,
//! and the events it publishes.

use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject};
use plait_reconcile::{ClusterError, Event, EventType, ObjectRef};
use serde_json::Value;

use super::UsageError;
use super::spec::{self, Target};
use super::webhook::Protection;
use crate::clusters::cluster::KubeCluster;
use crate::clusters::tenants::TenantClusters;
use crate::controllers::kit::{Controlled, Policy, ReconcileFailure};
use crate::controllers::timing::Timing;

/// What one of the two controllers (Usage or ClusterUsage) works with.
pub struct UsageContext {
    pub(super) cluster: KubeCluster,
    /// With `--tenant-service-account`, a namespaced Usage reads, labels
    /// and deletes the resources it names as its namespace's tenant, so a
    /// tenant protects only what it may change itself.
    tenants: Option<Arc<TenantClusters>>,
    pub(super) poll_interval: Duration,
    pub(super) policy: Policy,
    /// Whether deletions of what Usages protect are refused at all.
    pub(super) protection: Arc<Protection>,
}

impl UsageContext {
    pub(super) fn new(
        cluster: KubeCluster,
        tenants: Option<Arc<TenantClusters>>,
        resource: ApiResource,
        timing: &Timing,
        protection: Arc<Protection>,
    ) -> UsageContext {
        UsageContext {
            cluster,
            tenants,
            poll_interval: timing.poll_interval,
            policy: Policy::new(resource, timing),
            protection,
        }
    }

    /// Whether the API server serves `target`'s kind; discovery's error
    /// otherwise.
    pub(super) async fn serves(&self, target: &Target) -> Result<bool, ClusterError> {
        Ok(self
            .cluster
            .served_kind(&target.api_version, &target.kind)
            .await?
            .is_some())
    }

    pub(super) fn client(&self) -> &kube::Client {
        self.cluster.client()
    }

    /// The cluster the resources `usage` names are read and written
    /// through: its tenant's for a namespaced Usage when tenants act as
    /// themselves, else the controller's.
    pub(super) fn acting_for(&self, usage: &Value) -> Result<KubeCluster, ClusterError> {
        match (&self.tenants, spec::namespace(usage)) {
            (Some(tenants), Some(namespace)) => tenants.of(namespace),
            _ => Ok(self.cluster.clone()),
        }
    }

    /// The API of `target`, a resource `usage` names, as [`Self::acting_for`].
    pub(super) async fn api_of(
        &self,
        usage: &Value,
        target: &ObjectRef,
    ) -> Result<Api<DynamicObject>, ClusterError> {
        let (api, _) = self
            .acting_for(usage)?
            .api_for(
                &target.api_version,
                &target.kind,
                target.namespace.as_deref(),
            )
            .await?;
        Ok(api)
    }

    pub(super) fn warn(&self, usage: &ObjectRef, reason: &str, message: String) {
        self.publish(usage, EventType::Warning, reason, message);
    }

    /// A warning event for a step that failed; a lost race (the object
    /// changed meanwhile) is retried quietly instead.
    pub(super) fn failed(&self, usage: &ObjectRef, reason: &str, error: &UsageError) {
        if !error.is_conflict() {
            self.warn(usage, reason, error.to_string());
        }
    }

    pub(super) fn publish(
        &self,
        usage: &ObjectRef,
        event_type: EventType,
        reason: &str,
        message: String,
    ) {
        self.cluster.publish(Event {
            regarding: usage.clone(),
            event_type,
            reason: reason.into(),
            message,
        });
    }
}

impl Controlled for UsageContext {
    fn policy(&self) -> &Policy {
        &self.policy
    }
}
