//! The XRD controller: turns each XRD into a CRD and runs a controller for
//! the XR kind it defines, for as long as the XRD exists.
//!
//! - `triggers.rs`: what wakes an XRD;
//! - `reconcile.rs`: one XRD's reconcile;
//! - `context.rs`: [`XrdContext`], what it shares with the XR controllers
//!   it starts.

mod context;
mod reconcile;
mod triggers;

use std::future::Future;
use std::sync::Arc;

use kube::Client;

use crate::controllers::claim::OfferError;
use crate::controllers::kit::{self, ObjectError, ReconcileFailure};

pub use context::XrdContext;
pub use reconcile::reconcile;

pub const FINALIZER: &str = "defined.apiextensions.crossplane.io";

#[derive(Debug, thiserror::Error)]
pub enum XrdError {
    #[error(transparent)]
    Object(#[from] ObjectError),
    #[error("XRD {xrd:?}: {source}")]
    Offer {
        xrd: String,
        #[source]
        source: OfferError,
    },
}

impl ReconcileFailure for XrdError {
    fn metric_label(&self) -> &'static str {
        match self {
            XrdError::Object(error) => error.metric_label(),
            XrdError::Offer { .. } => "offer",
        }
    }
}

/// Runs the XRD controller until `stop`.
pub async fn run(
    client: Client,
    ctx: Arc<XrdContext>,
    stop: impl Future<Output = ()> + Send + Sync + 'static,
) {
    kit::run(triggers::controller(client), reconcile, ctx, stop).await;
}
