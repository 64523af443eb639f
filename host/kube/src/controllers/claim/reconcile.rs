//! One claim's reconcile, in named phases: pause, the bound XR, deletion,
//! the finalizer, binding claim and XR, and the claim's status from its
//! XR's.

use std::ops::ControlFlow;
use std::sync::Arc;

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::runtime::controller::Action;
use plait_model::CompositeResourceDefinition;
use plait_pipeline::Tenant;
use plait_reconcile::{Event, EventType, ObjectRef, READY, SYNCED, set_condition};
use serde_json::{Value, json};

use super::binding::{claim_from_xr, claim_ref, desired_xr, status_from_xr, xr_name};
use super::context::ClaimContext;
use super::{CLAIM_FIELD_MANAGER, ClaimError, DELETE_POLL, FINALIZER, connection};
use crate::access::client::applied;
use crate::clusters::fence;
use crate::controllers::fair_queue;
use crate::controllers::kit::{self, Lifecycle, ObjectError};
use crate::controllers::timing::now;
use crate::vocabulary::api::RECONCILE_PAUSED;
use crate::vocabulary::metrics::{ReconcileResult, metrics};
use crate::vocabulary::object::{self, condition, is_status, put_condition, text};

/// Reconciles one claim once it is its turn; its tenant is its namespace.
pub async fn reconcile(
    object: Arc<DynamicObject>,
    ctx: Arc<ClaimContext>,
) -> Result<Action, ClaimError> {
    let tenant = Tenant::of_namespace(object.metadata.namespace.as_deref());
    let name = object.metadata.name.clone().unwrap_or_default();
    let shared = &ctx;
    let ran = ctx
        .fair_queue
        .run(&tenant, ctx.timing.abandon_after(), |_permit| async move {
            let Some(object) = shared.current(object) else {
                // Gone while it waited: nothing to do.
                return Ok(Action::await_change());
            };
            let target = Arc::clone(&object);
            let admitted = fence::admitted(
                shared.shards.as_deref(),
                &target,
                reconcile_claim(object, shared),
            );
            kit::counted(shared.as_ref(), &target, admitted).await
        })
        .await;
    ran.unwrap_or_else(|abandoned| {
        metrics().reconcile_failed(&ctx.claim.kind, "timeout");
        let claim = format!("{tenant}/{name}");
        tracing::warn!(claim, %abandoned, "reconcile abandoned");
        Err(ClaimError::TimedOut { claim, abandoned })
    })
}

/// How a phase ends: the reconcile goes on with what the phase made, or it
/// is done, with its next look and its result.
type Phase<T> = Result<ControlFlow<(Action, ReconcileResult), T>, ClaimError>;

/// One reconcile of one claim: what every phase reads.
struct ClaimReconcile<'a> {
    ctx: &'a ClaimContext,
    reference: ObjectRef,
    xrd: CompositeResourceDefinition,
    /// The claims of the claim's namespace.
    claims: Api<DynamicObject>,
    /// The XRs of the kind it binds.
    xrs: Api<DynamicObject>,
}

async fn reconcile_claim(
    object: Arc<DynamicObject>,
    ctx: &ClaimContext,
) -> Result<(Action, ReconcileResult), ClaimError> {
    let mut claim = ctx.claim_value(&object)?;
    let Some(reference) = ObjectRef::of(&claim) else {
        return Ok((Action::await_change(), ReconcileResult::Skipped));
    };
    let Some(xrd) = ctx.xrd.read().ok().map(|x| x.clone()) else {
        return Ok((Action::await_change(), ReconcileResult::Skipped));
    };
    let client = ctx.cluster.client().clone();
    let run = ClaimReconcile {
        claims: Api::namespaced_with(
            client.clone(),
            reference.namespace.as_deref().unwrap_or_default(),
            &ctx.claim,
        ),
        xrs: Api::all_with(client, &ctx.xr),
        ctx,
        reference,
        xrd,
    };
    match run.phases(&mut claim).await? {
        ControlFlow::Break(done) | ControlFlow::Continue(done) => Ok(done),
    }
}

impl ClaimReconcile<'_> {
    /// The phases in order: pause, the bound XR, deletion, the finalizer,
    /// binding, and the claim's status from its XR.
    async fn phases(&self, claim: &mut Value) -> Phase<(Action, ReconcileResult)> {
        let lifecycle = Lifecycle::of(claim, FINALIZER);
        if lifecycle == Lifecycle::Paused {
            return self.paused(claim).await;
        }
        let xr = match self.bound_xr(claim).await? {
            ControlFlow::Continue(xr) => xr,
            ControlFlow::Break(done) => return Ok(ControlFlow::Break(done)),
        };
        match lifecycle {
            Lifecycle::Released => {
                return Ok(ControlFlow::Break((
                    Action::await_change(),
                    ReconcileResult::Deleting,
                )));
            }
            Lifecycle::Deleting => {
                fair_queue::stage("deleting its XR");
                let done = delete(self, claim.clone(), xr).await?;
                return Ok(ControlFlow::Break(done));
            }
            Lifecycle::Unfinalized => {
                if let ControlFlow::Break(done) = self.finalize(claim).await? {
                    return Ok(ControlFlow::Break(done));
                }
            }
            Lifecycle::Paused | Lifecycle::Live => {}
        }
        let xr = match self.bind(claim, xr).await? {
            ControlFlow::Continue(xr) => xr,
            ControlFlow::Break(done) => return Ok(ControlFlow::Break(done)),
        };
        self.status_from(claim, &xr)
            .await
            .map(ControlFlow::Continue)
    }

    /// Reports a failed bind on `Synced` and in an event.
    async fn bind_failed<T>(&self, claim: &Value, message: String) -> Phase<T> {
        let done = failed(
            self.ctx,
            claim.clone(),
            &self.reference,
            "BindCompositeResource",
            message,
        )
        .await?;
        Ok(ControlFlow::Break(done))
    }

    /// A paused claim only says so.
    async fn paused(&self, claim: &mut Value) -> Phase<(Action, ReconcileResult)> {
        event(
            self.ctx,
            &self.reference,
            EventType::Normal,
            "ReconciliationPaused",
            RECONCILE_PAUSED,
        );
        set_condition(
            claim,
            SYNCED,
            "False",
            "ReconcilePaused",
            Some(RECONCILE_PAUSED),
            &now(),
        );
        write_status(self.ctx, claim).await?;
        Ok(ControlFlow::Break((
            Action::await_change(),
            ReconcileResult::Paused,
        )))
    }

    /// The XR the claim names, if it exists; one bound to another claim
    /// ends the reconcile until a human fixes the reference.
    async fn bound_xr(&self, claim: &Value) -> Phase<Option<Value>> {
        let mut xr = None;
        if let Some(name) = text(claim, "/spec/resourceRef/name") {
            fair_queue::stage("reading its XR");
            match self.xrs.get_opt(name).await {
                Ok(found) => xr = found.map(|x| self.ctx.xr_value(&x)).transpose()?,
                Err(e) => {
                    let message = format!("cannot get bound composite resource: {e}");
                    return self.bind_failed(claim, message).await;
                }
            }
        }
        let own_ref = claim_ref(claim, &self.ctx.claim);
        if let Some(message) = xr.as_ref().and_then(|x| bound_to_another(x, &own_ref)) {
            let reason = "BindCompositeResource";
            failed(self.ctx, claim.clone(), &self.reference, reason, message).await?;
            // A human has to fix the reference; the claim's next edit brings it back.
            return Ok(ControlFlow::Break((
                Action::await_change(),
                ReconcileResult::NotSynced,
            )));
        }
        Ok(ControlFlow::Continue(xr))
    }

    /// Adds the claim controller's finalizer.
    async fn finalize(&self, claim: &mut Value) -> Phase<()> {
        fair_queue::stage("adding its finalizer");
        let ctx = self.ctx;
        match object::add_finalizer(&self.claims, &ctx.claim, claim, FINALIZER).await {
            Ok(patched) => *claim = ctx.claim_value(&patched)?,
            Err(e) if object::is_stale_write(&e) => {
                return Ok(ControlFlow::Break(kit::conflicted(ctx, &self.reference)));
            }
            Err(e) => {
                let message = format!("cannot add finalizer to claim: {e}");
                return self.bind_failed(claim, message).await;
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Binds the claim and its XR: the claim records its XR first, so a
    /// crash in between cannot leak an XR the claim does not know about,
    /// then the XR is applied from the claim. Returns the XR as stored.
    async fn bind(&self, claim: &mut Value, xr: Option<Value>) -> Phase<Value> {
        let ctx = self.ctx;
        let own_ref = claim_ref(claim, &ctx.claim);
        let before = xr
            .as_ref()
            .and_then(|x| x.pointer("/spec/claimRef"))
            .cloned();
        let name = match text(claim, "/spec/resourceRef/name") {
            Some(n) => n.to_string(),
            None => match free_xr_name(&self.xrs, claim, &own_ref).await {
                Ok(n) => n,
                Err(e) => {
                    let message = format!(
                        "cannot bind and sync claim with composite resource: cannot generate a name for composite resource: {e}"
                    );
                    return self.bind_failed(claim, message).await;
                }
            },
        };
        let desired = desired_xr(claim, xr.as_ref(), &name, &self.xrd, &ctx.claim, &ctx.xr);
        let bound_view = xr.clone().unwrap_or_else(|| desired.clone());
        let claim_patch = claim_from_xr(claim, &bound_view, &self.xrd, &ctx.xr);
        fair_queue::stage("binding it to its XR");
        let params = PatchParams::apply(CLAIM_FIELD_MANAGER).force();
        let applied_claim = Patch::Apply(applied(&claim_patch, false));
        match self
            .claims
            .patch(&self.reference.name, &params, &applied_claim)
            .await
        {
            Ok(updated) => *claim = ctx.claim_value(&updated)?,
            Err(e) if is_status(&e, 409) => {
                return Ok(ControlFlow::Break(kit::conflicted(ctx, &self.reference)));
            }
            Err(e) => {
                let message = format!(
                    "cannot bind and sync claim with composite resource: cannot update composite resource claim: {e}"
                );
                return self.bind_failed(claim, message).await;
            }
        }
        let applied_xr = Patch::Apply(applied(&desired, false));
        let xr = match self.xrs.patch(&name, &params, &applied_xr).await {
            Ok(x) => ctx.xr_value(&x)?,
            Err(e) => {
                let message = format!(
                    "cannot bind and sync claim with composite resource: cannot apply composite resource {name:?}: {e}"
                );
                return self.bind_failed(claim, message).await;
            }
        };
        if before.as_ref() != Some(&own_ref) && xr.pointer("/spec/claimRef") == Some(&own_ref) {
            event(
                ctx,
                &self.reference,
                EventType::Normal,
                "BindCompositeResource",
                "Successfully bound composite resource",
            );
        }
        Ok(ControlFlow::Continue(xr))
    }

    /// The claim's status from its XR's: its status fields and the
    /// conditions it shares with the claim, `Ready` once the XR is ready
    /// and its connection Secret copied.
    async fn status_from(
        &self,
        claim: &mut Value,
        xr: &Value,
    ) -> Result<(Action, ReconcileResult), ClaimError> {
        let ctx = self.ctx;
        claim["status"] = status_from_xr(claim, xr);
        let now = now();
        set_condition(claim, SYNCED, "True", "ReconcileSuccess", None, &now);
        for c in &shared_conditions(xr) {
            put_condition(claim, c);
        }
        let poll = Action::requeue(ctx.timing.poll_interval);
        if condition(xr, READY).is_none_or(|c| c["status"] != "True") {
            event(
                ctx,
                &self.reference,
                EventType::Normal,
                "BindCompositeResource",
                "Composite resource is not yet ready",
            );
            set_condition(
                claim,
                READY,
                "False",
                "Waiting",
                Some("Claim is waiting for composite resource to become Ready"),
                &now,
            );
            write_status(ctx, claim).await?;
            return Ok((poll, ReconcileResult::Success));
        }
        fair_queue::stage("propagating its connection Secret");
        match connection::propagate_connection(ctx, claim, xr).await {
            Ok(true) => {
                claim["status"]["connectionDetails"] = json!({"lastPublishedTime": now});
                event(
                    ctx,
                    &self.reference,
                    EventType::Normal,
                    "PropagateConnectionSecret",
                    "Successfully propagated connection details from composite resource",
                );
            }
            Ok(false) => {}
            Err(e) => {
                let message =
                    format!("cannot propagate connection details from composite resource: {e}");
                let reason = "PropagateConnectionSecret";
                return failed(ctx, claim.clone(), &self.reference, reason, message).await;
            }
        }
        set_condition(claim, READY, "True", "Available", None, &now);
        write_status(ctx, claim).await?;
        ctx.policy.backoff.succeeded(&self.reference);
        Ok((poll, ReconcileResult::Success))
    }
}

/// Why the claim may not operate on `xr`: it is bound to another claim.
fn bound_to_another(xr: &Value, own_ref: &Value) -> Option<String> {
    let bound = xr.pointer("/spec/claimRef").filter(|r| !r.is_null())?;
    (bound != own_ref).then(|| {
        format!(
            "refusing to operate on composite resource {:?} that is not bound to this claim: bound to claim {:?}",
            text(xr, "/metadata/name").unwrap_or_default(),
            text(bound, "/name").unwrap_or_default(),
        )
    })
}

/// The XR's conditions it shares with its claim (`status.claimConditionTypes`).
fn shared_conditions(xr: &Value) -> Vec<Value> {
    xr.pointer("/status/claimConditionTypes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(|t| condition(xr, t).cloned())
        .collect()
}

/// Whether the claim's XR is deleted in the foreground: the claim's
/// `compositeDeletePolicy`, else the XRD's default.
fn deletes_in_foreground(claim: &Value, xrd: &CompositeResourceDefinition) -> bool {
    match text(claim, "/spec/compositeDeletePolicy") {
        Some(policy) => policy == "Foreground",
        None => {
            xrd.default_composite_delete_policy() == plait_model::CompositeDeletePolicy::Foreground
        }
    }
}

/// A name for a new XR that no XR bound to another claim has.
async fn free_xr_name(
    xrs: &Api<DynamicObject>,
    claim: &Value,
    own_ref: &Value,
) -> Result<String, kube::Error> {
    let claim_name = text(claim, "/metadata/name").unwrap_or_default();
    let uid = text(claim, "/metadata/uid").unwrap_or_default();
    let mut attempt = 0;
    loop {
        let candidate = xr_name(claim_name, uid, attempt);
        let taken = xrs
            .get_opt(&candidate)
            .await?
            .is_some_and(|x| x.data["spec"]["claimRef"] != *own_ref);
        if !taken || attempt >= 8 {
            return Ok(candidate);
        }
        attempt += 1;
    }
}

/// Deletes the XR with the claim's `compositeDeletePolicy`, then lets the
/// claim go. With `Foreground` the claim stays until the XR is gone.
async fn delete(
    run: &ClaimReconcile<'_>,
    mut claim: Value,
    xr: Option<Value>,
) -> Result<(Action, ReconcileResult), ClaimError> {
    let (ctx, reference) = (run.ctx, &run.reference);
    set_condition(&mut claim, READY, "False", "Deleting", None, &now());
    let foreground = deletes_in_foreground(&claim, &run.xrd);
    if let Some(xr) = &xr {
        let name = text(xr, "/metadata/name").unwrap_or_default();
        if foreground && xr.pointer("/metadata/deletionTimestamp").is_some() {
            write_status(ctx, &claim).await?;
            return Ok((Action::requeue(DELETE_POLL), ReconcileResult::Deleting));
        }
        let params = if foreground {
            DeleteParams::foreground()
        } else {
            DeleteParams::background()
        };
        match run.xrs.delete(name, &params).await {
            Ok(_) => {}
            Err(e) if is_status(&e, 404) => {}
            Err(e) => {
                let message = format!("cannot delete bound composite resource: {e}");
                return failed(ctx, claim, reference, "DeleteCompositeResource", message).await;
            }
        }
        if foreground {
            write_status(ctx, &claim).await?;
            return Ok((Action::requeue(DELETE_POLL), ReconcileResult::Deleting));
        }
    }
    event(
        ctx,
        reference,
        EventType::Normal,
        "DeleteCompositeResource",
        "Successfully deleted composite resource",
    );
    match object::remove_finalizer(&run.claims, &claim, FINALIZER).await {
        Ok(_) => {
            ctx.policy.backoff.succeeded(reference);
            Ok((Action::await_change(), ReconcileResult::Deleting))
        }
        Err(e) if is_status(&e, 404) => Ok((Action::await_change(), ReconcileResult::Deleting)),
        Err(e) if object::is_stale_write(&e) => Ok(kit::conflicted(ctx, reference)),
        Err(e) => {
            let message = format!("cannot remove finalizer from claim: {e}");
            failed(ctx, claim, reference, "DeleteCompositeResource", message).await
        }
    }
}

fn event(
    ctx: &ClaimContext,
    claim: &ObjectRef,
    event_type: EventType,
    reason: &str,
    message: &str,
) {
    ctx.cluster.publish(Event {
        regarding: claim.clone(),
        event_type,
        reason: reason.into(),
        message: message.into(),
    });
}

/// Reports a failed reconcile on the claim's `Synced` condition and in an event.
async fn failed(
    ctx: &ClaimContext,
    mut claim: Value,
    reference: &ObjectRef,
    reason: &str,
    message: String,
) -> Result<(Action, ReconcileResult), ClaimError> {
    tracing::info!(claim = %reference, error = %message, "claim not synced");
    event(ctx, reference, EventType::Warning, reason, &message);
    set_condition(
        &mut claim,
        SYNCED,
        "False",
        "ReconcileError",
        Some(&message),
        &now(),
    );
    write_status(ctx, &claim).await?;
    Ok((
        Action::requeue(ctx.policy.backoff.failed(reference)),
        ReconcileResult::NotSynced,
    ))
}

/// Server-side applies the claim's status as the claim controller.
async fn write_status(ctx: &ClaimContext, claim: &Value) -> Result<(), ClaimError> {
    fair_queue::stage("writing its status");
    ctx.cluster
        .apply_async(claim, CLAIM_FIELD_MANAGER, true)
        .await
        .map_err(ObjectError::cluster(
            format!(
                "claim {}",
                text(claim, "/metadata/name").unwrap_or_default()
            ),
            "cannot write its status",
        ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use plait_model::Manifest;
    use serde_json::json;

    use super::*;

    #[test]
    fn a_claim_refuses_an_xr_bound_to_another_claim_only() {
        let own = json!({"apiVersion": "example.org/v1", "kind": "App", "name": "a", "namespace": "team-a"});
        let other = json!({"apiVersion": "example.org/v1", "kind": "App", "name": "b", "namespace": "team-a"});
        let xr = |claim_ref: Value| json!({"metadata": {"name": "a-xyz"}, "spec": {"claimRef": claim_ref}});
        let cases = [
            (xr(own.clone()), None),
            (xr(Value::Null), None),
            (json!({"metadata": {"name": "a-xyz"}, "spec": {}}), None),
            (
                xr(other),
                Some(
                    "refusing to operate on composite resource \"a-xyz\" that is not bound to this claim: bound to claim \"b\"",
                ),
            ),
        ];
        for (xr, want) in cases {
            assert_eq!(bound_to_another(&xr, &own).as_deref(), want, "{xr}");
        }
    }

    #[test]
    fn a_claim_copies_only_the_conditions_its_xr_shares() {
        let xr = json!({"status": {
            "claimConditionTypes": ["DatabaseReady", "Missing"],
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "DatabaseReady", "status": "False", "reason": "Creating"},
            ],
        }});
        assert_eq!(
            shared_conditions(&xr),
            vec![json!({"type": "DatabaseReady", "status": "False", "reason": "Creating"})]
        );
        assert!(shared_conditions(&json!({})).is_empty());
    }

    #[test]
    fn the_claims_delete_policy_wins_over_the_xrds_default() {
        let xrd = |policy: Option<&str>| {
            let mut xrd = json!({
                "apiVersion": "apiextensions.crossplane.io/v1",
                "kind": "CompositeResourceDefinition",
                "metadata": {"name": "xapps.example.org"},
                "spec": {
                    "group": "example.org",
                    "names": {"kind": "XApp", "plural": "xapps"},
                    "claimNames": {"kind": "App", "plural": "apps"},
                    "versions": [{"name": "v1", "served": true, "referenceable": true}],
                },
            });
            if let Some(policy) = policy {
                xrd["spec"]["defaultCompositeDeletePolicy"] = json!(policy);
            }
            CompositeResourceDefinition::from_value(xrd).unwrap()
        };
        let claim = |policy: Option<&str>| match policy {
            Some(p) => json!({"spec": {"compositeDeletePolicy": p}}),
            None => json!({"spec": {}}),
        };
        let cases = [
            (None, None, false),
            (None, Some("Foreground"), true),
            (Some("Background"), Some("Foreground"), false),
            (Some("Foreground"), Some("Background"), true),
            (Some("Foreground"), None, true),
        ];
        for (claims, xrds, want) in cases {
            assert_eq!(
                deletes_in_foreground(&claim(claims), &xrd(xrds)),
                want,
                "{claims:?} {xrds:?}"
            );
        }
    }
}
