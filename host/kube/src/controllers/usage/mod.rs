//! The Usage and ClusterUsage controllers (`protection.crossplane.io`), as
//! upstream Crossplane's usage reconciler: resolve `resourceSelector`s into
//! `resourceRef`s written back to the spec, hold a finalizer, label the used
//! resource `crossplane.io/in-use: "true"` (which sends its deletions to the
//! admission webhook, [`refuse_deletion`]), make the using resource an
//! owner of the Usage, and report `Ready`. A deleted Usage composed beside
//! its user waits for the user to go, takes the label off once no other
//! Usage protects the resource, and with `replayDeletion` deletes the
//! resource again if a deletion of it was refused.
//!
//! - `triggers.rs`: everything that wakes a Usage;
//! - `reconcile.rs`: one Usage's reconcile, in named phases;
//! - `context.rs`: what the two controllers (Usage, ClusterUsage) hold;
//! - `spec.rs`: what a Usage's spec says, and the messages upstream gives;
//! - `release.rs`: the phase of a deleted Usage;
//! - `resources.rs`: reading and labelling the resources a Usage names;
//! - `admission.rs`: the webhook's answers on deletions and Usages;
//! - `webhook.rs`: whether the API server asks that webhook at all.

mod admission;
mod context;
mod reconcile;
mod release;
mod resources;
pub mod spec;
mod triggers;
mod webhook;

use std::sync::Arc;

use crate::clusters::cluster::KubeCluster;
use crate::clusters::tenants::TenantClusters;
use crate::controllers::kit::{self, ObjectError, ReconcileFailure};
use crate::controllers::timing::Timing;
use crate::vocabulary::api::{cluster_usage_resource, legacy_usage_resource, usage_resource};

pub use admission::{refuse_deletion, refuse_usage, usages_of};
pub use context::UsageContext;
pub use reconcile::reconcile;

#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error(transparent)]
    Object(#[from] ObjectError),
    #[error("{usage}: cannot resolve selectors: cannot resolve selector at \"{field}\": {message}")]
    Unresolved {
        usage: String,
        field: &'static str,
        message: String,
    },
    /// The kind is not served, as upstream's REST mapper says it.
    #[error("{usage}: {what}: {}", spec::no_kind_match(api_version, kind))]
    NoKind {
        usage: String,
        what: &'static str,
        api_version: String,
        kind: String,
    },
    #[error("{usage}: {what}: {kind} {name:?} not found")]
    Missing {
        usage: String,
        what: &'static str,
        kind: String,
        name: String,
    },
}

impl ReconcileFailure for UsageError {
    fn metric_label(&self) -> &'static str {
        match self {
            UsageError::Object(error) => error.metric_label(),
            UsageError::Unresolved { .. } => "selector",
            UsageError::Missing { .. } => "missing",
            UsageError::NoKind { .. } => "kind",
        }
    }

    fn is_conflict(&self) -> bool {
        match self {
            UsageError::Object(error) => error.is_conflict(),
            _ => false,
        }
    }
}

/// Runs the Usage, ClusterUsage and legacy Usage controllers until
/// `shutdown` resolves.
pub async fn run(
    cluster: KubeCluster,
    tenants: Option<Arc<TenantClusters>>,
    timing: Timing,
    shutdown: impl std::future::Future<Output = ()> + Clone + Send + Sync + 'static,
) {
    let protection = Arc::new(webhook::Protection::new(cluster.client().clone()));
    let kinds = [
        usage_resource(),
        cluster_usage_resource(),
        legacy_usage_resource(),
    ];
    let controllers = kinds.map(|resource| {
        let ctx = Arc::new(UsageContext::new(
            cluster.clone(),
            tenants.clone(),
            resource,
            &timing,
            protection.clone(),
        ));
        let controller = triggers::controller(&ctx);
        kit::run(controller, reconcile, ctx, shutdown.clone())
    });
    futures::future::join_all(controllers).await;
}
