//! The phase of a deleted Usage: wait for a composed Usage's user to go,
//! take the in-use label off, replay a refused deletion, and let the Usage
//! go.

use std::time::Duration;

use kube::api::{Api, DeleteParams, DynamicObject, PropagationPolicy};
use kube::runtime::controller::Action;
use plait_reconcile::{EventType, LABEL_COMPOSITE, ObjectRef, pointer};
use serde_json::Value;

use super::UsageError;
use super::admission::usages_of;
use super::context::UsageContext;
use super::resources::{get, kube_error, label_in_use, remove_own_finalizer};
use super::spec;
use crate::vocabulary::api::{ANNOTATION_DELETION_ATTEMPT, USAGE_FINALIZER};
use crate::vocabulary::metrics::ReconcileResult;
use crate::vocabulary::object::{has_finalizer, text};

/// How often a deleted Usage looks again whether its user is gone, as upstream.
const WAIT_FOR_USER: Duration = Duration::from_secs(30);

/// A deleted Usage: wait for a composed Usage's user to go, take the in-use
/// label off when no other Usage protects the resource, replay a refused
/// deletion when asked to, and let the Usage go.
pub(super) async fn release(
    ctx: &UsageContext,
    reference: &ObjectRef,
    usages: &Api<DynamicObject>,
    usage: &Value,
) -> Result<(Action, ReconcileResult), UsageError> {
    if !has_finalizer(usage, USAGE_FINALIZER) {
        return Ok((Action::await_change(), ReconcileResult::Deleting));
    }
    // A Usage composed together with its user goes when their composite
    // does; without this wait it would stop protecting at once. Upstream
    // waits whenever the Usage is composed, whoever composed the user.
    let composed = text(usage, &pointer::label(LABEL_COMPOSITE)).is_some();
    if composed && let Some(by) = spec::by(usage).filter(|by| by.name.is_some()) {
        match get(ctx, reference, usage, &by, "cannot get using").await {
            Ok(_) => {
                let message = format!(
                    "Waiting for the using resource (which is a {} named {}) to be deleted.",
                    plait_go_compat::strconv::quote(&by.kind),
                    plait_go_compat::strconv::quote(by.name.as_deref().unwrap_or_default()),
                );
                ctx.publish(reference, EventType::Normal, "WaitingUsingDeleted", message);
                return Ok((
                    Action::requeue(WAIT_FOR_USER.min(ctx.poll_interval)),
                    ReconcileResult::Deleting,
                ));
            }
            Err(UsageError::Missing { .. }) => {}
            Err(other) => {
                ctx.failed(reference, "GetUsingResource", &other);
                return Err(other);
            }
        }
    }

    let mut replay = None;
    if let Some(of) = spec::of(usage).filter(|of| of.name.is_some()) {
        match get(ctx, reference, usage, &of, "cannot get used").await {
            Ok(used) => {
                let others = usages_of(ctx.client(), &used)
                    .await
                    .map_err(kube_error(reference, "cannot find usages"))
                    .inspect_err(|e| ctx.failed(reference, "FindUsages", e))?;
                // This Usage is among them until its finalizer goes.
                if others.len() < 2 {
                    label_in_use(ctx, reference, usage, &used, false).await?;
                }
                let attempt = pointer::annotation(ANNOTATION_DELETION_ATTEMPT);
                if spec::replays_deletion(usage)
                    && let Some(policy) = used.pointer(&attempt).and_then(Value::as_str)
                {
                    replay = Some((used.clone(), policy.to_string()));
                }
            }
            Err(UsageError::Missing { .. }) => {}
            Err(other) => {
                ctx.failed(reference, "GetUsedResource", &other);
                return Err(other);
            }
        }
    }

    remove_own_finalizer(ctx, reference, usages, usage).await?;
    if let Some((used, policy)) = replay {
        replay_deletion(ctx, reference, usage, &used, &policy).await;
    }
    Ok((Action::await_change(), ReconcileResult::Deleting))
}

/// Deletes the used resource again, with the propagation policy of the
/// refused deletion. The Usage is gone by now, and so is the in-use label
/// unless another Usage still protects the resource (whose webhook refusal
/// then stands). Best effort, as upstream: a failure is logged.
async fn replay_deletion(
    ctx: &UsageContext,
    reference: &ObjectRef,
    usage: &Value,
    used: &Value,
    policy: &str,
) {
    let Some(target) = ObjectRef::of(used) else {
        return;
    };
    let propagation = match policy {
        "Orphan" => PropagationPolicy::Orphan,
        "Foreground" => PropagationPolicy::Foreground,
        _ => PropagationPolicy::Background,
    };
    let params = DeleteParams {
        propagation_policy: Some(propagation),
        ..DeleteParams::default()
    };
    let deleted = match ctx.api_of(usage, &target).await {
        Ok(api) => api
            .delete(&target.name, &params)
            .await
            .map(drop)
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    match deleted {
        Ok(()) => {
            tracing::info!(usage = %reference, used = %target, policy, "replayed the deletion of the used resource");
            ctx.publish(
                reference,
                EventType::Normal,
                "ReplayDeletion",
                format!("Replayed the deletion of {target} with propagation policy {policy}"),
            );
        }
        Err(error) => {
            tracing::info!(usage = %reference, used = %target, %error, "cannot replay the deletion of the used resource");
        }
    }
}
