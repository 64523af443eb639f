//! The Composition controller: keeps one CompositionRevision per distinct
//! state of each Composition, numbered in the order the states were seen,
//! and garbage-collects old revisions no XR uses.
//!
//! XRs compose from a revision, never from the Composition itself, so an XR
//! pinned to a revision (`compositionUpdatePolicy: Manual`) keeps its output
//! however the Composition is edited later.
//!
//! Revisions are upstream Crossplane's: a Pipeline-mode Composition's
//! revision carries upstream's hash, name and labels, so the revisions a
//! running Crossplane made are adopted as they are and taking over makes
//! none. A revision also records, per step, the digest its Function
//! resolved to when the revision was made
//! ([`plait_functions::DIGESTS_ANNOTATION`]); a Function that moves to a
//! new package digest makes a new revision of every Composition that runs
//! it, which `Automatic` XRs follow and `Manual` ones do not, exactly as for
//! an edit of the Composition.
//!
//! - `triggers.rs`: everything that wakes a Composition;
//! - `reconcile.rs`: one Composition's reconcile, in named phases;
//! - `context.rs`: what the controller holds;
//! - `writes.rs`: every read and write the phases make, over the API
//!   server and over the in-memory cluster;
//! - `revisions.rs`: what the revisions should be, decided without the
//!   cluster (hash, name, labels, the changes they need, collection).

mod context;
mod reconcile;
mod revisions;
mod triggers;
mod writes;

use std::future::Future;
use std::sync::Arc;

use plait_model::composition_hash::HashError;

use crate::controllers::kit::{self, ObjectError, ReconcileFailure};

pub use context::CompositionContext;
pub use plait_model::composition_hash::{LABEL_COMPOSITION_HASH, LABEL_COMPOSITION_NAME};
pub use reconcile::reconcile;
pub use revisions::{latest, match_labels};

/// Why a Composition's revisions cannot be kept. A conflict means another
/// writer changed the revisions first (with sharded replicas, every
/// replica keeps revisions), and the next reconcile reads what it made.
#[derive(Debug, thiserror::Error)]
pub enum CompositionError {
    #[error(transparent)]
    Object(#[from] ObjectError),
    /// The Composition has a field upstream's Go types cannot hold, so its
    /// revision hash cannot be upstream's.
    #[error("Composition {composition:?} cannot be hashed as upstream hashes it: {source}")]
    Hash {
        composition: String,
        #[source]
        source: HashError,
    },
}

impl ReconcileFailure for CompositionError {
    fn metric_label(&self) -> &'static str {
        match self {
            CompositionError::Object(error) => error.metric_label(),
            CompositionError::Hash { .. } => "invalid",
        }
    }

    fn is_conflict(&self) -> bool {
        match self {
            CompositionError::Object(error) => error.is_conflict(),
            CompositionError::Hash { .. } => false,
        }
    }
}

/// Runs the Composition controller until `shutdown` resolves.
pub async fn run(
    ctx: Arc<CompositionContext>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let controller = triggers::controller(&ctx);
    kit::run(controller, reconcile, ctx, shutdown).await;
}
