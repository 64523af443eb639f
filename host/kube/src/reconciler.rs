//! What every controller does the same way: counting each reconcile in
//! `plait_reconciles_total` by kind and result, and after an error, logging
//! it and backing off per object.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use kube::api::{ApiResource, DynamicObject};
use kube::runtime::controller::Action;
use plait_reconcile::ObjectRef;

use crate::metrics::{ReconcileResult, metrics};
use crate::timing::Backoff;

/// What a controller's context tells the shared machinery.
pub trait Controlled: Send + Sync + 'static {
    /// The kind the controller reconciles.
    fn resource(&self) -> &ApiResource;
    /// Consecutive failures per object.
    fn backoff(&self) -> &Backoff<ObjectRef>;
}

/// A controller's reconcile error.
pub trait ReconcileFailure: std::error::Error + Send + Sync + 'static {
    /// The error's cause, as the `error` label of `plait_reconcile_errors_total`.
    fn metric_label(&self) -> &'static str;
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

/// Runs one reconcile and counts how it ended.
pub async fn counted<C, E>(
    ctx: &C,
    reconcile: impl Future<Output = Result<(Action, ReconcileResult), E>>,
) -> Result<Action, E>
where
    C: Controlled,
    E: ReconcileFailure,
{
    let started = Instant::now();
    let result = reconcile.await;
    let kind = &ctx.resource().kind;
    let label = match &result {
        Ok((_, label)) => *label,
        Err(error) => {
            metrics().reconcile_failed(kind, error.metric_label());
            ReconcileResult::Error
        }
    };
    metrics().reconciled(kind, label, started.elapsed());
    result.map(|(action, _)| action)
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
