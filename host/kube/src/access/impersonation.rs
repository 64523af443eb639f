//! Acting as each tenant for what its XRs compose and read, so the tenant's
//! own RBAC bounds them: with `plait controller --tenant-service-account
//! NAME`, everything a namespaced (or claimed) XR's pipeline reads and
//! writes goes through a client impersonating
//! `system:serviceaccount:<namespace>:NAME`.

use kube::{Client, Config};
use plait_reconcile::ClusterError;

use crate::access::client::counted;

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

    /// A client acting as the tenant of `namespace`, its requests counted
    /// like the controller's.
    pub fn client(&self, namespace: &str) -> Result<Client, ClusterError> {
        let mut config = self.config.clone();
        config.auth_info.impersonate = Some(self.user(namespace));
        let client = Client::try_from(config).map_err(|e| {
            ClusterError::Other(format!(
                "cannot make a client acting as {}: {e}",
                self.user(namespace)
            ))
        })?;
        Ok(counted(client))
    }
}
