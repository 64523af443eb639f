//! Composite resource claims: the controller that binds each claim to an
//! XR, keeps the two in sync and copies the XR's connection Secret into the
//! claim's namespace. The XRD controller starts one per claim kind through
//! [`ClaimControllers`]; [`run`] runs it.
//!
//! - `triggers.rs`: everything that wakes a claim;
//! - `reconcile.rs`: one claim's reconcile, in named phases;
//! - `context.rs`: what one claim kind's controller holds;
//! - `offer.rs`: offering and withdrawing the claim kind; `binding.rs`: how
//!   claim and XR map onto each other; `connection.rs`: the connection
//!   Secret copy.
//!
//! Matches upstream's `claim` reconciler with the server-side syncer.

mod binding;
mod connection;
mod context;
pub mod offer;
mod reconcile;
mod triggers;
mod writes;

use std::future::Future;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use kube::api::ApiResource;
use plait_model::CompositeResourceDefinition;

use crate::clusters::cluster::KubeCluster;
use crate::clusters::fence::Shards;
use crate::controllers::children::Children;
use crate::controllers::fair_queue::{Abandoned, FairQueue};
use crate::controllers::kit::{self, ObjectError, Policy, ReconcileFailure};
use crate::controllers::timing::Timing;

pub use context::ClaimContext;
pub use offer::{OfferError, Offered};
pub use reconcile::reconcile;

pub const FINALIZER: &str = "finalizer.apiextensions.crossplane.io";
/// The field manager of what the claim controller writes, as upstream.
pub const CLAIM_FIELD_MANAGER: &str = "apiextensions.crossplane.io/claim";

/// How often a claim waiting on its XR's deletion looks again.
const DELETE_POLL: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error(transparent)]
    Object(#[from] ObjectError),
    #[error("reconcile of claim {claim} {abandoned}")]
    TimedOut { claim: String, abandoned: Abandoned },
    /// The API server could not be reached or asked to be asked later: the
    /// claim backs off without a condition or an event, which could not be
    /// written either.
    #[error("claim {claim}: the API server is unavailable: {message}")]
    Unavailable { claim: String, message: String },
}

impl ReconcileFailure for ClaimError {
    fn metric_label(&self) -> &'static str {
        match self {
            ClaimError::Object(error) => error.metric_label(),
            ClaimError::TimedOut { .. } => "timeout",
            ClaimError::Unavailable { .. } => "unavailable",
        }
    }
}

/// The running claim controllers, by XRD name; each serves a claim kind and
/// the XR kind it binds.
pub struct ClaimControllers {
    cluster: KubeCluster,
    timing: Timing,
    shards: Option<Arc<Shards>>,
    fair_queue: Arc<FairQueue>,
    children: Children<(ApiResource, ApiResource), ClaimContext>,
}

impl ClaimControllers {
    pub fn new(
        cluster: KubeCluster,
        timing: Timing,
        shards: Option<Arc<Shards>>,
        fair_queue: Arc<FairQueue>,
    ) -> ClaimControllers {
        ClaimControllers {
            cluster,
            timing,
            shards,
            fair_queue,
            children: Children::new("claim controller"),
        }
    }

    fn xr_of(&self, xrd: &str) -> Option<ApiResource> {
        self.children.get(xrd).map(|((_, xr), _)| xr)
    }

    /// Starts the claim controller for `xrd`, or refreshes the XRD it sees
    /// when one already runs for the same kinds.
    pub fn start(&self, xrd: &CompositeResourceDefinition, claim: ApiResource, xr: ApiResource) {
        let (cluster, timing, shards, fair_queue) =
            (&self.cluster, &self.timing, &self.shards, &self.fair_queue);
        let (claim_for_context, xr_for_context) = (claim.clone(), xr.clone());
        self.children.ensure(
            xrd.metadata.name(),
            (claim.clone(), xr.clone()),
            |running| {
                if let Ok(mut x) = running.xrd.write() {
                    *x = xrd.clone();
                }
            },
            move || {
                Arc::new(ClaimContext {
                    cluster: cluster.clone(),
                    timing: timing.clone(),
                    xrd: RwLock::new(xrd.clone()),
                    policy: Policy::new(claim_for_context.clone(), timing),
                    claim: claim_for_context,
                    xr: xr_for_context,
                    shards: shards.clone(),
                    fair_queue: fair_queue.clone(),
                    store: OnceLock::new(),
                })
            },
            run,
        );
    }

    /// Stops the claim controller for `xrd`, if one runs.
    pub fn stop(&self, xrd: &str) {
        self.children.stop(xrd);
    }

    /// Stops every claim controller, letting running reconciles finish.
    pub async fn shutdown(&self) {
        self.children.shutdown().await;
    }
}

/// Runs the controller of `ctx`'s claim kind until `stop`.
pub async fn run(ctx: Arc<ClaimContext>, stop: impl Future<Output = ()> + Send + Sync + 'static) {
    let controller = triggers::controller(&ctx);
    kit::run(controller, reconcile, ctx, stop).await;
}

#[cfg(test)]
mod tests {
    use kube::api::ApiResource;

    /// The claim and XR kinds of an example XRD.
    pub fn resources() -> (ApiResource, ApiResource) {
        let make = |kind: &str, plural: &str| ApiResource {
            group: "example.org".into(),
            version: "v1".into(),
            api_version: "example.org/v1".into(),
            kind: kind.into(),
            plural: plural.into(),
        };
        (make("App", "apps"), make("XApp", "xapps"))
    }
}
