//! The controller of one XR kind: selects a Composition revision, runs the
//! shared reconcile core on a blocking thread, publishes legacy connection
//! Secrets, and handles pause and deletion. The XRD controller starts one
//! per XRD with [`run`].
//!
//! - `triggers.rs`: everything that wakes an XR;
//! - `reconcile.rs`: one XR's reconcile, in named phases;
//! - `context.rs`: what the XR controllers share ([`XrShared`]) and what
//!   one kind's controller holds ([`XrContext`]);
//! - `writes.rs`: the one trait the phases write the XR through, over the
//!   API server or the in-memory cluster;
//! - `select.rs`, `delete.rs`, `connection.rs`, `latest.rs`: the phases'
//!   parts (selection, deletion, legacy connection Secrets, what each XR's
//!   last reconcile stored).

mod connection;
mod context;
mod delete;
mod latest;
#[cfg(test)]
mod outcome;
mod reconcile;
mod select;
mod triggers;
mod writes;

use std::future::Future;
use std::sync::Arc;

use plait_reconcile::ObjectRef;

use crate::controllers::fair_queue::Abandoned;
use crate::controllers::kit::{self, ObjectError, ReconcileFailure};
use crate::controllers::watches::Route;

pub use context::{XrContext, XrShared};
pub use reconcile::reconcile;

pub const FINALIZER: &str = "composite.apiextensions.crossplane.io";

#[derive(Debug, thiserror::Error)]
pub enum XrError {
    #[error(transparent)]
    Object(#[from] ObjectError),
    #[error("reconcile of {object} did not finish: {source}")]
    Join {
        object: ObjectRef,
        #[source]
        source: tokio::task::JoinError,
    },
    #[error("reconcile of {object} {abandoned}")]
    TimedOut {
        object: String,
        abandoned: Abandoned,
    },
    /// The API server could not be reached or asked to be asked later: the
    /// XR backs off without a condition or an event, which could not be
    /// written either.
    #[error("{object}: the API server is unavailable: {source}")]
    Unavailable {
        object: ObjectRef,
        #[source]
        source: Box<plait_reconcile::ReconcileError>,
    },
}

impl ReconcileFailure for XrError {
    fn is_conflict(&self) -> bool {
        match self {
            XrError::Object(error) => error.is_conflict(),
            _ => false,
        }
    }

    fn metric_label(&self) -> &'static str {
        match self {
            XrError::Object(error) => error.metric_label(),
            XrError::Join { .. } => "join",
            XrError::TimedOut { .. } => "timeout",
            XrError::Unavailable { .. } => "unavailable",
        }
    }
}

/// Runs the controller of `ctx`'s XR kind until `stop`: routes the
/// composed resources' events to it, and reconciles whatever its triggers
/// wake.
pub async fn run(
    ctx: Arc<XrContext>,
    namespaced: bool,
    stop: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let (sender, routed) = futures::channel::mpsc::unbounded();
    let resource = &ctx.policy.resource;
    ctx.shared.watches.route(
        &resource.group,
        &resource.kind,
        Route {
            sender,
            resource: resource.clone(),
            namespaced,
            breaker: ctx.breaker.clone(),
        },
    );
    let controller = triggers::controller(&ctx, routed);
    kit::run(controller, reconcile, ctx, stop).await;
}
