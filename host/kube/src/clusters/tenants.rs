//! A cluster per tenant: with `plait controller --tenant-service-account
//! NAME`, a namespaced (or claimed) XR's pipeline reads and writes through
//! a [`KubeCluster`] whose client impersonates the tenant's service
//! account, sharing the controller's stores and its record of writes.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use plait_reconcile::ClusterError;
use tokio::runtime::Handle;

use crate::access::impersonation::Impersonation;
use crate::clusters::cluster::{KubeCluster, Shared};

/// One cluster per tenant, each seen as the tenant's service account.
pub struct TenantClusters {
    impersonation: Impersonation,
    handle: Handle,
    /// The controller's own writes (which tenants' writes are too) and its
    /// cache of composed resources.
    shared: Shared,
    by_namespace: Mutex<HashMap<String, KubeCluster>>,
}

impl TenantClusters {
    pub fn new(impersonation: Impersonation, handle: Handle, shared: Shared) -> TenantClusters {
        TenantClusters {
            impersonation,
            handle,
            shared,
            by_namespace: Mutex::new(HashMap::new()),
        }
    }

    /// The cluster as the tenant of `namespace` sees it.
    pub fn of(&self, namespace: &str) -> Result<KubeCluster, ClusterError> {
        let mut clusters = self
            .by_namespace
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(cluster) = clusters.get(namespace) {
            return Ok(cluster.clone());
        }
        let client = self.impersonation.client(namespace)?;
        let cluster = KubeCluster::tenant(client, self.handle.clone(), self.shared.clone());
        clusters.insert(namespace.to_string(), cluster.clone());
        Ok(cluster)
    }
}
