//! Acting as each tenant for what its XRs compose and read, so the tenant's
//! own RBAC bounds them: with `plait controller --tenant-service-account
//! NAME`, everything a namespaced (or claimed) XR's pipeline reads and
//! writes goes through a client impersonating
//! `system:serviceaccount:<namespace>:NAME`.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use kube::{Client, Config};
use plait_reconcile::ClusterError;
use tokio::runtime::Handle;

use crate::cluster::{KubeCluster, Shared};

/// Which identity a tenant's pipelines act as.
#[derive(Debug, Clone)]
pub struct Impersonation {
    /// How the controller connects; each tenant's client is this config
    /// impersonating the tenant's service account.
    pub config: Config,
    /// The service account, in each tenant's namespace, tenants act as.
    pub service_account: String,
}

impl Impersonation {
    /// The user a tenant in `namespace` acts as.
    pub fn user(&self, namespace: &str) -> String {
        format!("system:serviceaccount:{namespace}:{}", self.service_account)
    }
}

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
        let mut config = self.impersonation.config.clone();
        config.auth_info.impersonate = Some(self.impersonation.user(namespace));
        let client = Client::try_from(config).map_err(|e| {
            ClusterError::Other(format!(
                "cannot make a client acting as {}: {e}",
                self.impersonation.user(namespace)
            ))
        })?;
        let cluster = KubeCluster::tenant(
            crate::cluster::counted(client),
            self.handle.clone(),
            self.shared.clone(),
        );
        clusters.insert(namespace.to_string(), cluster.clone());
        Ok(cluster)
    }
}
