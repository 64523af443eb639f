//! What every controller does the same way, in one place:
//!
//! - [`Policy`]: the kind a controller reconciles and its per-object
//!   backoffs, which [`counted`] and [`error_policy`] read through
//!   [`Controlled`];
//! - [`run`]: the tail of every controller, from the built
//!   `kube::runtime::Controller` to the future that runs it until its stop
//!   signal;
//! - [`ObjectError`]: the failures every controller shares (a request to
//!   the API server, a read or write through the `Cluster` trait, encoding
//!   the object), each with its metric label;
//! - [`Lifecycle`]: where an object stands before its reconcile proper:
//!   paused, being deleted, lacking the controller's finalizer, or live.
//!
//! Counting each reconcile in `plait_reconciles_total` by kind and result;
//! after a conflict (the object changed while it was reconciled), retrying
//! soon and quietly; after an error, logging it and backing off per object.
//!
//! Condition types are `plait_reconcile::{SYNCED, READY}`, and JSON pointers
//! to annotations and labels are `plait_reconcile::pointer`.

use std::borrow::Cow;
use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use plait_reconcile::{ClusterError, ObjectRef, pointer};
use serde_json::Value;

use crate::controllers::timing::{Backoff, Timing};
use crate::vocabulary::api::ANNOTATION_PAUSED;
use crate::vocabulary::metrics::{ReconcileResult, metrics};
use crate::vocabulary::object::{self, has_finalizer};

/// The kind a controller reconciles and how it backs off, per object.
pub struct Policy {
    /// The kind the controller reconciles.
    pub resource: ApiResource,
    /// Consecutive failures per object.
    pub backoff: Backoff<ObjectRef>,
    /// Consecutive conflicts per object.
    pub conflicts: Backoff<ObjectRef>,
}

impl Policy {
    /// The policy of a controller of `resource`, with the backoffs `timing` sets.
    pub fn new(resource: ApiResource, timing: &Timing) -> Policy {
        Policy {
            resource,
            backoff: Backoff::of(timing),
            conflicts: Backoff::conflicts(timing),
        }
    }

    /// How `object`, one of this controller's, is named in logs, events and backoff.
    pub fn reference(&self, object: &DynamicObject) -> ObjectRef {
        reference(object, &self.resource)
    }

    /// The outcome of a reconcile that found `object` changed under it:
    /// retried after the conflict backoff.
    pub fn conflicted(&self, object: &ObjectRef) -> (Action, ReconcileResult) {
        tracing::debug!(object = %object, "changed while reconciled; retrying");
        (
            Action::requeue(self.conflicts.failed(object)),
            ReconcileResult::Conflict,
        )
    }

    /// Forgets the backoffs of an object that is gone.
    pub fn forget(&self, object: &ObjectRef) {
        self.backoff.succeeded(object);
        self.conflicts.succeeded(object);
    }
}

/// A controller's context: it holds the controller's [`Policy`].
pub trait Controlled: Send + Sync + 'static {
    fn policy(&self) -> &Policy;
}

/// A controller's reconcile error.
pub trait ReconcileFailure: std::error::Error + Send + Sync + 'static {
    /// The error's cause, as the `error` label of `plait_reconcile_errors_total`.
    fn metric_label(&self) -> &'static str;
    /// Whether the reconcile only lost a race with another write to the
    /// object: nothing is wrong, and a retry from a fresh read succeeds.
    fn is_conflict(&self) -> bool {
        false
    }
}

/// The failures every controller shares, each naming the object (as its
/// controller names it in messages) and, where a request failed, what the
/// controller was doing.
#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    /// A request to the API server failed.
    #[error("{object}: {what}: {source}")]
    Kube {
        object: String,
        what: Cow<'static, str>,
        #[source]
        source: Box<kube::Error>,
    },
    /// A read or write through the `Cluster` trait failed.
    #[error("{object}: {what}: {source}")]
    Cluster {
        object: String,
        what: Cow<'static, str>,
        #[source]
        source: ClusterError,
    },
    /// The object could not be turned into JSON.
    #[error("{object}: cannot be encoded: {source}")]
    Encode {
        object: String,
        #[source]
        source: serde_json::Error,
    },
}

impl ObjectError {
    /// Wraps a failed API request about `object` while doing `what`.
    pub fn kube(
        object: impl Display,
        what: impl Into<Cow<'static, str>>,
    ) -> impl FnOnce(kube::Error) -> Self {
        move |source| ObjectError::Kube {
            object: object.to_string(),
            what: what.into(),
            source: Box::new(source),
        }
    }

    /// Wraps a failed `Cluster` read or write about `object` while doing `what`.
    pub fn cluster(
        object: impl Display,
        what: impl Into<Cow<'static, str>>,
    ) -> impl FnOnce(ClusterError) -> Self {
        move |source| ObjectError::Cluster {
            object: object.to_string(),
            what: what.into(),
            source,
        }
    }

    /// Wraps a failure to encode `object`.
    pub fn encode(object: impl Display) -> impl FnOnce(serde_json::Error) -> Self {
        move |source| ObjectError::Encode {
            object: object.to_string(),
            source,
        }
    }
}

impl ReconcileFailure for ObjectError {
    fn metric_label(&self) -> &'static str {
        match self {
            ObjectError::Kube { .. } => "kube",
            ObjectError::Cluster {
                source: ClusterError::Conflict { .. },
                ..
            } => "conflict",
            ObjectError::Cluster {
                source: ClusterError::Unavailable { .. },
                ..
            } => "unavailable",
            ObjectError::Cluster { .. } => "cluster",
            ObjectError::Encode { .. } => "encode",
        }
    }

    fn is_conflict(&self) -> bool {
        match self {
            ObjectError::Kube { source, .. } => object::is_stale_write(source),
            ObjectError::Cluster { source, .. } => matches!(source, ClusterError::Conflict { .. }),
            ObjectError::Encode { .. } => false,
        }
    }
}

/// How the object a controller was handed is named in logs, events and backoff.
pub fn reference(object: &DynamicObject, resource: &ApiResource) -> ObjectRef {
    ObjectRef {
        api_version: resource.api_version.clone(),
        kind: resource.kind.clone(),
        namespace: object.metadata.namespace.clone(),
        name: object.metadata.name.clone().unwrap_or_default(),
    }
}

/// Runs one reconcile of `object` and counts how it ended; a conflict is
/// retried after the object's conflict backoff, not reported as an error.
pub async fn counted<C, E>(
    ctx: &C,
    object: &DynamicObject,
    reconcile: impl Future<Output = Result<(Action, ReconcileResult), E>>,
) -> Result<Action, E>
where
    C: Controlled,
    E: ReconcileFailure,
{
    let started = Instant::now();
    let result = reconcile.await;
    let policy = ctx.policy();
    let kind = &policy.resource.kind;
    let reference = policy.reference(object);
    let (result, label) = match result {
        Ok((action, label)) => {
            if label != ReconcileResult::Conflict {
                policy.conflicts.succeeded(&reference);
            }
            (Ok(action), label)
        }
        Err(error) if error.is_conflict() => {
            tracing::debug!(object = %reference, error = %error, "changed while reconciled; retrying");
            (
                Ok(Action::requeue(policy.conflicts.failed(&reference))),
                ReconcileResult::Conflict,
            )
        }
        Err(error) => {
            metrics().reconcile_failed(kind, error.metric_label());
            (Err(error), ReconcileResult::Error)
        }
    };
    metrics().reconciled(kind, label, started.elapsed());
    result
}

/// The outcome of a reconcile that found the object changed under it.
pub fn conflicted<C: Controlled>(ctx: &C, reference: &ObjectRef) -> (Action, ReconcileResult) {
    ctx.policy().conflicted(reference)
}

/// The requeue after a reconcile that returned an error.
pub fn error_policy<C, E>(object: Arc<DynamicObject>, error: &E, ctx: Arc<C>) -> Action
where
    C: Controlled,
    E: ReconcileFailure,
{
    let reference = ctx.policy().reference(&object);
    tracing::warn!(object = %reference, error = %error, cause = error.metric_label(), "reconcile failed");
    Action::requeue(ctx.policy().backoff.failed(&reference))
}

/// Runs `controller`, built with everything that wakes it, with `reconcile`
/// and the shared [`error_policy`], until `stop` resolves; running
/// reconciles finish first.
pub async fn run<C, E, R, Fut>(
    controller: Controller<DynamicObject>,
    reconcile: R,
    ctx: Arc<C>,
    stop: impl Future<Output = ()> + Send + Sync + 'static,
) where
    C: Controlled,
    E: ReconcileFailure,
    R: FnMut(Arc<DynamicObject>, Arc<C>) -> Fut,
    Fut: futures::TryFuture<Ok = Action, Error = E> + Send + 'static,
{
    controller
        .graceful_shutdown_on(stop)
        .run(reconcile, error_policy, ctx)
        .for_each(|_| futures::future::ready(()))
        .await
}

/// Where an object stands before its reconcile proper, in the order the
/// XR and claim controllers look, as upstream: the pause annotation wins
/// over deletion, and a live object first gets the controller's finalizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifecycle {
    /// `crossplane.io/paused: "true"`: nothing but the `Synced` condition is written.
    Paused,
    /// Being deleted, with the controller's finalizer still on it: its
    /// cleanup runs, and the finalizer goes last.
    Deleting,
    /// Being deleted, and the controller's finalizer is already gone:
    /// nothing is left for the controller to do.
    Released,
    /// Live, without the controller's finalizer yet: it is added before
    /// anything is created for the object.
    Unfinalized,
    /// Live and finalized: the reconcile proper runs.
    Live,
}

impl Lifecycle {
    /// Where `object` stands for the controller whose finalizer is `finalizer`.
    pub fn of(object: &Value, finalizer: &str) -> Lifecycle {
        let finalized = has_finalizer(object, finalizer);
        if object::text(object, &pointer::annotation(ANNOTATION_PAUSED)) == Some("true") {
            Lifecycle::Paused
        } else if object.pointer("/metadata/deletionTimestamp").is_some() {
            if finalized {
                Lifecycle::Deleting
            } else {
                Lifecycle::Released
            }
        } else if finalized {
            Lifecycle::Live
        } else {
            Lifecycle::Unfinalized
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_object_stands_where_its_pause_deletion_and_finalizer_put_it() {
        let object = |annotations: Value, deleting: bool, finalizers: Value| {
            let mut o = json!({"metadata": {"name": "x", "annotations": annotations, "finalizers": finalizers}});
            if deleting {
                o["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
            }
            o
        };
        let paused = json!({"crossplane.io/paused": "true"});
        let unpaused = json!({"crossplane.io/paused": "false"});
        let ours = json!(["f"]);
        let theirs = json!(["other"]);
        let cases = [
            (
                object(paused.clone(), true, ours.clone()),
                Lifecycle::Paused,
            ),
            (object(paused, false, theirs.clone()), Lifecycle::Paused),
            (
                object(unpaused.clone(), true, ours.clone()),
                Lifecycle::Deleting,
            ),
            (object(json!({}), true, theirs.clone()), Lifecycle::Released),
            (object(unpaused, false, theirs), Lifecycle::Unfinalized),
            (object(json!({}), false, ours), Lifecycle::Live),
        ];
        for (object, want) in cases {
            assert_eq!(Lifecycle::of(&object, "f"), want, "{object}");
        }
    }

    #[test]
    fn only_a_lost_race_counts_as_a_conflict() {
        let conflict = ClusterError::Conflict {
            object: "XR/a".into(),
            message: "the object has been modified".into(),
        };
        let other = ClusterError::Other("unreachable".into());
        let cases = [
            (
                ObjectError::cluster("XR a", "write")(conflict),
                true,
                "conflict",
            ),
            (
                ObjectError::cluster("XR a", "write")(other),
                false,
                "cluster",
            ),
        ];
        for (error, conflicts, label) in cases {
            assert_eq!(error.is_conflict(), conflicts, "{error}");
            assert_eq!(error.metric_label(), label, "{error}");
        }
    }
}
