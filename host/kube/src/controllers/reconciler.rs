//! What every controller does the same way: counting each reconcile in
//! `plait_reconciles_total` by kind and result; after a conflict (the object
//! changed while it was reconciled), retrying soon and quietly; after an
//! error, logging it and backing off per object.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use kube::api::{ApiResource, DynamicObject};
use kube::runtime::controller::Action;
use plait_reconcile::ObjectRef;

use crate::controllers::timing::Backoff;
use crate::vocabulary::metrics::{ReconcileResult, metrics};

/// What a controller's context tells the shared machinery.
pub trait Controlled: Send + Sync + 'static {
    /// The kind the controller reconciles.
    fn resource(&self) -> &ApiResource;
    /// Consecutive failures per object.
    fn backoff(&self) -> &Backoff<ObjectRef>;
    /// Consecutive conflicts per object.
    fn conflicts(&self) -> &Backoff<ObjectRef>;
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
    let kind = &ctx.resource().kind;
    let reference = reference(object, ctx.resource());
    let (result, label) = match result {
        Ok((action, label)) => {
            if label != ReconcileResult::Conflict {
                ctx.conflicts().succeeded(&reference);
            }
            (Ok(action), label)
        }
        Err(error) if error.is_conflict() => {
            tracing::debug!(object = %reference, error = %error, "changed while reconciled; retrying");
            (
                Ok(Action::requeue(ctx.conflicts().failed(&reference))),
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
    tracing::debug!(object = %reference, "changed while reconciled; retrying");
    (
        Action::requeue(ctx.conflicts().failed(reference)),
        ReconcileResult::Conflict,
    )
}

/// The requeue after a reconcile that returned an error.
pub fn error_policy<C, E>(object: Arc<DynamicObject>, error: &E, ctx: Arc<C>) -> Action
where
    C: Controlled,
    E: ReconcileFailure,
{
    let reference = reference(&object, ctx.resource());
    tracing::warn!(object = %reference, error = %error, cause = error.metric_label(), "reconcile failed");
    Action::requeue(ctx.backoff().failed(&reference))
}
