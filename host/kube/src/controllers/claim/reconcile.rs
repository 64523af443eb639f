//! One claim's reconcile, in named phases: pause, the bound XR, deletion,
//! the finalizer, binding claim and XR, and the claim's status from its
//! XR's. The phases read and write through [`ClaimWrites`], so they run
//! the same over the API server and over the in-memory cluster.

use std::ops::ControlFlow;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kube::api::{ApiResource, DynamicObject};
use kube::runtime::controller::Action;
use plait_model::CompositeResourceDefinition;
use plait_pipeline::Tenant;
use plait_reconcile::{Event, EventType, ObjectRef, READY, SYNCED, set_condition};
use serde_json::{Value, json};

use super::binding::{claim_from_xr, claim_ref, desired_xr, status_from_xr, xr_name};
use super::context::ClaimContext;
use super::writes::{ClaimWrites, WriteError};
use super::{ClaimError, DELETE_POLL, FINALIZER, connection};
use crate::clusters::fence;
use crate::controllers::fair_queue;
use crate::controllers::kit::{self, Lifecycle, Policy};
use crate::controllers::timing::now;
use crate::vocabulary::api::RECONCILE_PAUSED;
use crate::vocabulary::metrics::{ReconcileResult, metrics};
use crate::vocabulary::object::{condition, put_condition, text};

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

/// One reconcile of one claim: what every phase reads, and what it writes
/// through.
struct ClaimReconcile<'a, W> {
    writes: &'a W,
    /// The claim as the API server last returned it: what a write that
    /// would change nothing is told by.
    stored: Mutex<Value>,
    policy: &'a Policy,
    /// The claim kind and the XR kind it binds.
    claim_kind: &'a ApiResource,
    xr_kind: &'a ApiResource,
    poll_interval: Duration,
    reference: ObjectRef,
    xrd: CompositeResourceDefinition,
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
    let run = ClaimReconcile {
        writes: ctx,
        stored: Mutex::new(claim.clone()),
        policy: &ctx.policy,
        claim_kind: &ctx.claim,
        xr_kind: &ctx.xr,
        poll_interval: ctx.timing.poll_interval,
        reference,
        xrd,
    };
    run.reconcile(&mut claim).await
}

impl<W: ClaimWrites> ClaimReconcile<'_, W> {
    async fn reconcile(&self, claim: &mut Value) -> Result<(Action, ReconcileResult), ClaimError> {
        match self.phases(claim).await? {
            ControlFlow::Break(done) | ControlFlow::Continue(done) => Ok(done),
        }
    }

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
                let done = self.delete(claim.clone(), xr).await?;
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

    /// Reports a bind that failed `doing` on `Synced` and in an event.
    async fn bind_failed<T>(&self, claim: &Value, doing: &str, error: WriteError) -> Phase<T> {
        let reason = "BindCompositeResource";
        let done = self
            .write_failed(claim.clone(), reason, doing, error)
            .await?;
        Ok(ControlFlow::Break(done))
    }

    /// A paused claim only says so.
    async fn paused(&self, claim: &mut Value) -> Phase<(Action, ReconcileResult)> {
        self.event(EventType::Normal, "ReconciliationPaused", RECONCILE_PAUSED);
        set_condition(
            claim,
            SYNCED,
            "False",
            "ReconcilePaused",
            Some(RECONCILE_PAUSED),
            &now(),
        );
        self.write_status(claim).await?;
        Ok(ControlFlow::Break((
            Action::await_change(),
            ReconcileResult::Paused,
        )))
    }

    /// The XR named `name`, of the kind the claim binds.
    fn xr_reference(&self, name: &str) -> ObjectRef {
        ObjectRef {
            api_version: self.xr_kind.api_version.clone(),
            kind: self.xr_kind.kind.clone(),
            namespace: None,
            name: name.into(),
        }
    }

    /// The XR the claim names, if it exists; one bound to another claim
    /// ends the reconcile until a human fixes the reference.
    async fn bound_xr(&self, claim: &Value) -> Phase<Option<Value>> {
        let mut xr = None;
        if let Some(name) = text(claim, "/spec/resourceRef/name") {
            fair_queue::stage("reading its XR");
            match self.writes.xr(&self.xr_reference(name)).await {
                Ok(found) => xr = found,
                Err(e) => {
                    return self
                        .bind_failed(claim, "cannot get bound composite resource", e)
                        .await;
                }
            }
        }
        let own_ref = claim_ref(claim, self.claim_kind);
        if let Some(message) = xr.as_ref().and_then(|x| bound_to_another(x, &own_ref)) {
            self.failed(claim.clone(), "BindCompositeResource", message)
                .await?;
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
        match self.writes.add_finalizer(claim, FINALIZER).await {
            Ok(stored) => self.stored(claim, stored),
            Err(WriteError::Stale(_)) => {
                return Ok(ControlFlow::Break(self.policy.conflicted(&self.reference)));
            }
            Err(e) => {
                return self
                    .bind_failed(claim, "cannot add finalizer to claim", e)
                    .await;
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Binds the claim and its XR: the claim records its XR first, so a
    /// crash in between cannot leak an XR the claim does not know about,
    /// then the XR is applied from the claim. Returns the XR as stored.
    async fn bind(&self, claim: &mut Value, xr: Option<Value>) -> Phase<Value> {
        let own_ref = claim_ref(claim, self.claim_kind);
        let before = xr
            .as_ref()
            .and_then(|x| x.pointer("/spec/claimRef"))
            .cloned();
        let name = match text(claim, "/spec/resourceRef/name") {
            Some(n) => n.to_string(),
            None => match self.free_xr_name(claim, &own_ref).await {
                Ok(n) => n,
                Err(e) => {
                    let doing = "cannot bind and sync claim with composite resource: cannot generate a name for composite resource";
                    return self.bind_failed(claim, doing, e).await;
                }
            },
        };
        let (claim_kind, xr_kind) = (self.claim_kind, self.xr_kind);
        let desired = desired_xr(claim, xr.as_ref(), &name, &self.xrd, claim_kind, xr_kind);
        let bound_view = xr.clone().unwrap_or_else(|| desired.clone());
        let claim_patch = claim_from_xr(claim, &bound_view, &self.xrd, xr_kind);
        fair_queue::stage("binding it to its XR");
        match self.writes.apply_claim(&claim_patch, claim).await {
            Ok(updated) => self.stored(claim, updated),
            Err(WriteError::Stale(_)) => {
                return Ok(ControlFlow::Break(self.policy.conflicted(&self.reference)));
            }
            Err(e) => {
                let doing = "cannot bind and sync claim with composite resource: cannot update composite resource claim";
                return self.bind_failed(claim, doing, e).await;
            }
        }
        let xr = match self.writes.apply_xr(&desired, xr.as_ref()).await {
            Ok(x) => x,
            Err(e) => {
                let doing = format!(
                    "cannot bind and sync claim with composite resource: cannot apply composite resource {name:?}"
                );
                return self.bind_failed(claim, &doing, e).await;
            }
        };
        if before.as_ref() != Some(&own_ref) && xr.pointer("/spec/claimRef") == Some(&own_ref) {
            self.event(
                EventType::Normal,
                "BindCompositeResource",
                "Successfully bound composite resource",
            );
        }
        Ok(ControlFlow::Continue(xr))
    }

    /// A name for a new XR that no XR bound to another claim has.
    async fn free_xr_name(&self, claim: &Value, own_ref: &Value) -> Result<String, WriteError> {
        let claim_name = text(claim, "/metadata/name").unwrap_or_default();
        let uid = text(claim, "/metadata/uid").unwrap_or_default();
        let mut attempt = 0;
        loop {
            let candidate = xr_name(claim_name, uid, attempt);
            let taken = self
                .writes
                .xr(&self.xr_reference(&candidate))
                .await?
                .is_some_and(|x| x["spec"]["claimRef"] != *own_ref);
            if !taken || attempt >= 8 {
                return Ok(candidate);
            }
            attempt += 1;
        }
    }

    /// The claim's status from its XR's: its status fields and the
    /// conditions it shares with the claim, `Ready` once the XR is ready
    /// and its connection Secret copied.
    async fn status_from(
        &self,
        claim: &mut Value,
        xr: &Value,
    ) -> Result<(Action, ReconcileResult), ClaimError> {
        claim["status"] = status_from_xr(claim, xr);
        let now = now();
        set_condition(claim, SYNCED, "True", "ReconcileSuccess", None, &now);
        for c in &shared_conditions(xr) {
            put_condition(claim, c);
        }
        let poll = Action::requeue(self.poll_interval);
        if condition(xr, READY).is_none_or(|c| c["status"] != "True") {
            self.event(
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
            self.write_status(claim).await?;
            return Ok((poll, ReconcileResult::Success));
        }
        fair_queue::stage("propagating its connection Secret");
        match connection::propagate_connection(self.writes, claim, xr).await {
            Ok(true) => {
                claim["status"]["connectionDetails"] = json!({"lastPublishedTime": now});
                self.event(
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
                return self.failed(claim.clone(), reason, message).await;
            }
        }
        set_condition(claim, READY, "True", "Available", None, &now);
        self.write_status(claim).await?;
        self.policy.backoff.succeeded(&self.reference);
        Ok((poll, ReconcileResult::Success))
    }

    /// Deletes the XR with the claim's `compositeDeletePolicy`, then lets the
    /// claim go. With `Foreground` the claim stays until the XR is gone.
    async fn delete(
        &self,
        mut claim: Value,
        xr: Option<Value>,
    ) -> Result<(Action, ReconcileResult), ClaimError> {
        set_condition(&mut claim, READY, "False", "Deleting", None, &now());
        let foreground = deletes_in_foreground(&claim, &self.xrd);
        if let Some(xr) = &xr {
            let name = text(xr, "/metadata/name").unwrap_or_default();
            if foreground && xr.pointer("/metadata/deletionTimestamp").is_some() {
                self.write_status(&claim).await?;
                return Ok((Action::requeue(DELETE_POLL), ReconcileResult::Deleting));
            }
            match self
                .writes
                .delete_xr(&self.xr_reference(name), foreground)
                .await
            {
                Ok(()) | Err(WriteError::NotFound(_)) => {}
                Err(e) => {
                    let (reason, doing) = (
                        "DeleteCompositeResource",
                        "cannot delete bound composite resource",
                    );
                    return self.write_failed(claim, reason, doing, e).await;
                }
            }
            if foreground {
                self.write_status(&claim).await?;
                return Ok((Action::requeue(DELETE_POLL), ReconcileResult::Deleting));
            }
        }
        self.event(
            EventType::Normal,
            "DeleteCompositeResource",
            "Successfully deleted composite resource",
        );
        match self.writes.remove_finalizer(&claim, FINALIZER).await {
            Ok(()) => {
                self.policy.backoff.succeeded(&self.reference);
                Ok((Action::await_change(), ReconcileResult::Deleting))
            }
            Err(WriteError::NotFound(_)) => Ok((Action::await_change(), ReconcileResult::Deleting)),
            Err(WriteError::Stale(_)) => Ok(self.policy.conflicted(&self.reference)),
            Err(e) => {
                let (reason, doing) = (
                    "DeleteCompositeResource",
                    "cannot remove finalizer from claim",
                );
                self.write_failed(claim, reason, doing, e).await
            }
        }
    }

    fn event(&self, event_type: EventType, reason: &str, message: &str) {
        self.writes.publish(Event {
            regarding: self.reference.clone(),
            event_type,
            reason: reason.into(),
            message: message.into(),
        });
    }

    /// Reports a read or write that failed `doing` as [`Self::failed`] does,
    /// unless the API server was unavailable: then nothing could be written
    /// about it either, and the claim backs off quietly.
    async fn write_failed(
        &self,
        claim: Value,
        reason: &str,
        doing: &str,
        error: WriteError,
    ) -> Result<(Action, ReconcileResult), ClaimError> {
        match error {
            WriteError::Unavailable(why) => Err(ClaimError::Unavailable {
                claim: self.reference.to_string(),
                message: format!("{doing}: {why}"),
            }),
            error => {
                self.failed(claim, reason, format!("{doing}: {error}"))
                    .await
            }
        }
    }

    /// Reports a failed reconcile on the claim's `Synced` condition and in an event.
    async fn failed(
        &self,
        mut claim: Value,
        reason: &str,
        message: String,
    ) -> Result<(Action, ReconcileResult), ClaimError> {
        tracing::info!(claim = %self.reference, error = %message, "claim not synced");
        self.event(EventType::Warning, reason, &message);
        set_condition(
            &mut claim,
            SYNCED,
            "False",
            "ReconcileError",
            Some(&message),
            &now(),
        );
        self.write_status(&claim).await?;
        Ok((
            Action::requeue(self.policy.backoff.failed(&self.reference)),
            ReconcileResult::NotSynced,
        ))
    }

    /// Server-side applies the claim's status as the claim controller.
    async fn write_status(&self, claim: &Value) -> Result<(), ClaimError> {
        fair_queue::stage("writing its status");
        let stored = self
            .stored
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        self.writes.write_status(claim, &stored).await
    }

    /// Takes `stored`, as a write returned it, as the claim to go on with.
    fn stored(&self, claim: &mut Value, stored: Value) {
        *self.stored.lock().unwrap_or_else(PoisonError::into_inner) = stored.clone();
        *claim = stored;
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

    /// What the claim phases decide, run over the in-memory cluster.
    mod over_memory {
        use plait_reconcile::{Cluster, MemoryCluster};

        use super::super::super::tests::resources;
        use super::*;
        use crate::controllers::kit::ReconcileFailure;
        use crate::controllers::timing::Timing;

        const POLL: Duration = Duration::from_secs(60);

        fn xrd(default_delete_policy: Option<&str>) -> CompositeResourceDefinition {
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
            if let Some(policy) = default_delete_policy {
                xrd["spec"]["defaultCompositeDeletePolicy"] = json!(policy);
            }
            CompositeResourceDefinition::from_value(xrd).unwrap()
        }

        /// The claim `app` in `team-a`, with `finalizers`, `spec` and `metadata` fields.
        fn claim(finalizers: &[&str], spec: Value, metadata: Value) -> Value {
            let mut claim = json!({
                "apiVersion": "example.org/v1",
                "kind": "App",
                "metadata": {"name": "app", "namespace": "team-a", "uid": "claim-uid",
                             "finalizers": finalizers},
                "spec": spec,
            });
            for (key, value) in metadata.as_object().cloned().unwrap_or_default() {
                claim["metadata"][key] = value;
            }
            claim
        }

        fn bound_spec(extra: Value) -> Value {
            let mut spec = json!({"resourceRef": {"apiVersion": "example.org/v1", "kind": "XApp", "name": "app-x"}});
            for (key, value) in extra.as_object().cloned().unwrap_or_default() {
                spec[key] = value;
            }
            spec
        }

        fn deleted() -> Value {
            json!({"deletionTimestamp": "2026-01-01T00:00:00Z"})
        }

        /// The XR `app-x`, bound to the claim `claim_name`, with `metadata` and `status` fields.
        fn xr(claim_name: &str, metadata: Value, status: Value) -> Value {
            let mut xr = json!({
                "apiVersion": "example.org/v1",
                "kind": "XApp",
                "metadata": {"name": "app-x"},
                "spec": {"claimRef": {"apiVersion": "example.org/v1", "kind": "App",
                                      "name": claim_name, "namespace": "team-a"}},
                "status": status,
            });
            for (key, value) in metadata.as_object().cloned().unwrap_or_default() {
                xr["metadata"][key] = value;
            }
            xr
        }

        fn ready() -> Value {
            json!({"conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]})
        }

        /// The XR after the reconcile: gone, or bound to a claim, maybe being deleted.
        #[derive(Debug, PartialEq)]
        enum XrAfter {
            Gone,
            Bound { claim: String, deleting: bool },
        }

        /// The claim after the reconcile: gone, or its finalizer, `Synced` and `Ready` reasons.
        #[derive(Debug, PartialEq)]
        enum ClaimAfter {
            Gone,
            Kept {
                finalized: bool,
                synced: Option<String>,
                ready: Option<String>,
            },
        }

        fn kept(finalized: bool, synced: Option<&str>, ready: Option<&str>) -> ClaimAfter {
            ClaimAfter::Kept {
                finalized,
                synced: synced.map(str::to_string),
                ready: ready.map(str::to_string),
            }
        }

        fn bound(claim: &str, deleting: bool) -> XrAfter {
            XrAfter::Bound {
                claim: claim.into(),
                deleting,
            }
        }

        struct Case {
            what: &'static str,
            claim: Value,
            xr: Option<Value>,
            xrd_delete_policy: Option<&'static str>,
            /// The next look; `None` for a backoff.
            action: Option<Action>,
            result: ReconcileResult,
            events: &'static [&'static str],
            claim_after: ClaimAfter,
            xr_after: XrAfter,
        }

        /// The reconcile of `claim` (as stored in `cluster`) of the claim and
        /// XR kinds `kinds`.
        fn over<'a>(
            cluster: &'a MemoryCluster,
            policy: &'a Policy,
            kinds: &'a (ApiResource, ApiResource),
            claim: &Value,
            xrd: CompositeResourceDefinition,
        ) -> ClaimReconcile<'a, MemoryCluster> {
            ClaimReconcile {
                writes: cluster,
                stored: Mutex::new(claim.clone()),
                policy,
                claim_kind: &kinds.0,
                xr_kind: &kinds.1,
                poll_interval: POLL,
                reference: ObjectRef::of(claim).unwrap(),
                xrd,
            }
        }

        fn reason(object: &Value, type_: &str) -> Option<String> {
            condition(object, type_).and_then(|c| c["reason"].as_str().map(str::to_string))
        }

        async fn check(case: Case) {
            let what = case.what;
            let cluster = MemoryCluster::new();
            cluster.seed([case.claim.clone()]).unwrap();
            cluster.seed(case.xr.clone()).unwrap();
            let kinds = resources();
            let policy = Policy::new(kinds.0.clone(), &Timing::default());
            let reference = ObjectRef::of(&case.claim).unwrap();
            let mut claim = cluster.get(&reference).unwrap().unwrap();
            let run = over(
                &cluster,
                &policy,
                &kinds,
                &claim,
                xrd(case.xrd_delete_policy),
            );
            let (action, result) = run.reconcile(&mut claim).await.unwrap();
            assert_eq!(result, case.result, "{what}");
            if let Some(want) = case.action {
                assert_eq!(action, want, "{what}");
            }
            let events: Vec<String> = cluster.events().into_iter().map(|e| e.reason).collect();
            assert_eq!(events, case.events, "{what}");
            let stored = cluster.get(&reference).unwrap();
            let claim_after = stored
                .as_ref()
                .map_or(ClaimAfter::Gone, |c| ClaimAfter::Kept {
                    finalized: crate::vocabulary::object::has_finalizer(c, FINALIZER),
                    synced: reason(c, SYNCED),
                    ready: reason(c, READY),
                });
            assert_eq!(claim_after, case.claim_after, "{what}");
            let xrs = cluster
                .list("example.org/v1", "XApp", None, &Default::default())
                .unwrap();
            assert!(xrs.len() <= 1, "{what}: one XR at most");
            let xr_after = xrs.first().map_or(XrAfter::Gone, |x| XrAfter::Bound {
                claim: text(x, "/spec/claimRef/name").unwrap_or_default().into(),
                deleting: x.pointer("/metadata/deletionTimestamp").is_some(),
            });
            assert_eq!(xr_after, case.xr_after, "{what}");
            if let (Some(claim), Some(xr)) = (&stored, xrs.first())
                && text(xr, "/spec/claimRef/name") == Some("app")
            {
                assert_eq!(
                    text(claim, "/spec/resourceRef/name"),
                    text(xr, "/metadata/name"),
                    "{what}: the claim records the XR bound to it"
                );
            }
        }

        #[tokio::test]
        async fn a_failed_write_is_reported_on_the_claim_unless_the_api_server_was_unavailable() {
            // (the failure; whether the claim then says `Synced=False` with a warning)
            let cases = [
                (WriteError::Failed("forbidden".into()), true),
                (WriteError::NotFound("not found".into()), true),
                (WriteError::Unavailable("connection refused".into()), false),
            ];
            for (error, reported) in cases {
                let what = format!("{error:?}");
                let cluster = MemoryCluster::new();
                let stored = claim(&[FINALIZER], bound_spec(json!({})), json!({}));
                cluster.seed([stored.clone()]).unwrap();
                let kinds = resources();
                let policy = Policy::new(kinds.0.clone(), &Timing::default());
                let reference = ObjectRef::of(&stored).unwrap();
                let run = over(&cluster, &policy, &kinds, &stored, xrd(None));
                let outcome = run
                    .write_failed(stored, "BindCompositeResource", "cannot apply", error)
                    .await;
                let events: Vec<String> = cluster.events().into_iter().map(|e| e.reason).collect();
                let synced = reason(&cluster.get(&reference).unwrap().unwrap(), SYNCED);
                if reported {
                    assert!(
                        matches!(outcome, Ok((_, ReconcileResult::NotSynced))),
                        "{what}: {outcome:?}"
                    );
                    assert_eq!(events, ["BindCompositeResource"], "{what}");
                    assert_eq!(synced.as_deref(), Some("ReconcileError"), "{what}");
                } else {
                    let error = outcome.expect_err(&what);
                    assert_eq!(error.metric_label(), "unavailable", "{what}");
                    assert!(events.is_empty(), "{what}: {events:?}");
                    assert_eq!(synced, None, "{what}: no status written");
                }
            }
        }

        #[tokio::test]
        async fn a_claim_is_bound_refused_or_paused_as_upstreams_claim_reconciler_does() {
            let none = json!({});
            let cases = [
                Case {
                    what: "a new claim is finalized, records a new XR bound to it and waits for it to be ready",
                    claim: claim(&[], json!({"parameters": {"size": 1}}), none.clone()),
                    xr: None,
                    xrd_delete_policy: None,
                    action: Some(Action::requeue(POLL)),
                    result: ReconcileResult::Success,
                    events: &["BindCompositeResource", "BindCompositeResource"],
                    claim_after: kept(true, Some("ReconcileSuccess"), Some("Waiting")),
                    xr_after: bound("app", false),
                },
                Case {
                    what: "a claim bound to a ready XR without a connection Secret is available",
                    claim: claim(&[FINALIZER], bound_spec(none.clone()), none.clone()),
                    xr: Some(xr("app", none.clone(), ready())),
                    xrd_delete_policy: None,
                    action: Some(Action::requeue(POLL)),
                    result: ReconcileResult::Success,
                    events: &[],
                    claim_after: kept(true, Some("ReconcileSuccess"), Some("Available")),
                    xr_after: bound("app", false),
                },
                Case {
                    what: "a claim naming an XR bound to another claim is refused until it changes",
                    claim: claim(&[FINALIZER], bound_spec(none.clone()), none.clone()),
                    xr: Some(xr("other", none.clone(), ready())),
                    xrd_delete_policy: None,
                    action: Some(Action::await_change()),
                    result: ReconcileResult::NotSynced,
                    events: &["BindCompositeResource"],
                    claim_after: kept(true, Some("ReconcileError"), None),
                    xr_after: bound("other", false),
                },
                Case {
                    what: "a paused claim only says so: no finalizer, no XR",
                    claim: claim(
                        &[],
                        json!({}),
                        json!({"annotations": {"crossplane.io/paused": "true"}}),
                    ),
                    xr: None,
                    xrd_delete_policy: None,
                    action: Some(Action::await_change()),
                    result: ReconcileResult::Paused,
                    events: &["ReconciliationPaused"],
                    claim_after: kept(false, Some("ReconcilePaused"), None),
                    xr_after: XrAfter::Gone,
                },
                Case {
                    what: "a paused claim being deleted keeps its XR and its finalizer",
                    claim: claim(
                        &[FINALIZER],
                        bound_spec(none.clone()),
                        json!({"annotations": {"crossplane.io/paused": "true"},
                               "deletionTimestamp": "2026-01-01T00:00:00Z"}),
                    ),
                    xr: Some(xr("app", none.clone(), ready())),
                    xrd_delete_policy: None,
                    action: Some(Action::await_change()),
                    result: ReconcileResult::Paused,
                    events: &["ReconciliationPaused"],
                    claim_after: kept(true, Some("ReconcilePaused"), None),
                    xr_after: bound("app", false),
                },
            ];
            for case in cases {
                check(case).await;
            }
        }

        #[tokio::test]
        async fn a_deleted_claim_deletes_its_xr_by_its_or_its_xrds_delete_policy_then_lets_go() {
            let none = json!({});
            let cases = [
                Case {
                    what: "a deleted claim deletes its XR in the background and lets its finalizer go",
                    claim: claim(&[FINALIZER], bound_spec(none.clone()), deleted()),
                    xr: Some(xr("app", none.clone(), ready())),
                    xrd_delete_policy: None,
                    action: Some(Action::await_change()),
                    result: ReconcileResult::Deleting,
                    events: &["DeleteCompositeResource"],
                    claim_after: ClaimAfter::Gone,
                    xr_after: XrAfter::Gone,
                },
                Case {
                    what: "a deleted claim whose policy is Foreground keeps its finalizer while its XR is deleted",
                    claim: claim(
                        &[FINALIZER],
                        bound_spec(json!({"compositeDeletePolicy": "Foreground"})),
                        deleted(),
                    ),
                    xr: Some(xr("app", none.clone(), ready())),
                    xrd_delete_policy: Some("Background"),
                    action: Some(Action::requeue(DELETE_POLL)),
                    result: ReconcileResult::Deleting,
                    events: &[],
                    claim_after: kept(true, None, Some("Deleting")),
                    xr_after: bound("app", true),
                },
                Case {
                    what: "a deleted claim without a policy deletes its XR in the foreground when its XRD defaults to it",
                    claim: claim(&[FINALIZER], bound_spec(none.clone()), deleted()),
                    xr: Some(xr("app", none.clone(), ready())),
                    xrd_delete_policy: Some("Foreground"),
                    action: Some(Action::requeue(DELETE_POLL)),
                    result: ReconcileResult::Deleting,
                    events: &[],
                    claim_after: kept(true, None, Some("Deleting")),
                    xr_after: bound("app", true),
                },
                Case {
                    what: "a deleted claim's Background policy wins over its XRD's Foreground default",
                    claim: claim(
                        &[FINALIZER],
                        bound_spec(json!({"compositeDeletePolicy": "Background"})),
                        deleted(),
                    ),
                    xr: Some(xr("app", none.clone(), ready())),
                    xrd_delete_policy: Some("Foreground"),
                    action: Some(Action::await_change()),
                    result: ReconcileResult::Deleting,
                    events: &["DeleteCompositeResource"],
                    claim_after: ClaimAfter::Gone,
                    xr_after: XrAfter::Gone,
                },
                Case {
                    what: "a deleted claim whose XR is being deleted in the foreground waits for it to go",
                    claim: claim(
                        &[FINALIZER],
                        bound_spec(json!({"compositeDeletePolicy": "Foreground"})),
                        deleted(),
                    ),
                    xr: Some(xr(
                        "app",
                        json!({"deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["foregroundDeletion"]}),
                        ready(),
                    )),
                    xrd_delete_policy: None,
                    action: Some(Action::requeue(DELETE_POLL)),
                    result: ReconcileResult::Deleting,
                    events: &[],
                    claim_after: kept(true, None, Some("Deleting")),
                    xr_after: bound("app", true),
                },
                Case {
                    what: "a deleted claim whose XR is gone lets its finalizer go",
                    claim: claim(&[FINALIZER, "other"], bound_spec(none.clone()), deleted()),
                    xr: None,
                    xrd_delete_policy: Some("Foreground"),
                    action: Some(Action::await_change()),
                    result: ReconcileResult::Deleting,
                    events: &["DeleteCompositeResource"],
                    claim_after: kept(false, None, None),
                    xr_after: XrAfter::Gone,
                },
            ];
            for case in cases {
                check(case).await;
            }
        }

        #[tokio::test]
        async fn a_ready_xrs_connection_secret_is_copied_to_the_claim_only_when_the_xr_controls_it()
        {
            let secret = |namespace: &str, name: &str, owner: &str, data: &str| {
                json!({
                    "apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": name, "namespace": namespace,
                                 "ownerReferences": [{"apiVersion": "example.org/v1", "kind": "XApp",
                                                      "name": "app-x", "uid": owner, "controller": true}]},
                    "data": {"password": data},
                })
            };
            // (what, the XR's Secret's controller, want Ready reason, want event)
            let cases = [
                (
                    "a Secret the XR controls is copied",
                    "xr-uid",
                    "Available",
                    "PropagateConnectionSecret",
                ),
                (
                    "a Secret the XR does not control is not",
                    "someone-else",
                    "",
                    "PropagateConnectionSecret",
                ),
            ];
            for (what, owner, want_ready, want_event) in cases {
                let cluster = MemoryCluster::new();
                let mut xr = xr("app", json!({"uid": "xr-uid"}), ready());
                xr["spec"]["writeConnectionSecretToRef"] =
                    json!({"name": "app-x-conn", "namespace": "crossplane-system"});
                let mut claimed = claim(&[FINALIZER], bound_spec(json!({})), json!({}));
                claimed["spec"]["writeConnectionSecretToRef"] = json!({"name": "app-conn"});
                cluster
                    .seed([
                        claimed.clone(),
                        xr,
                        secret("crossplane-system", "app-x-conn", owner, "cGFzcw=="),
                    ])
                    .unwrap();
                let (claim_kind, xr_kind) = resources();
                let policy = Policy::new(claim_kind.clone(), &Timing::default());
                let reference = ObjectRef::of(&claimed).unwrap();
                let run = ClaimReconcile {
                    writes: &cluster,
                    stored: Mutex::new(claimed.clone()),
                    policy: &policy,
                    claim_kind: &claim_kind,
                    xr_kind: &xr_kind,
                    poll_interval: POLL,
                    reference: reference.clone(),
                    xrd: xrd(None),
                };
                run.reconcile(&mut claimed).await.unwrap();
                let stored = cluster.get(&reference).unwrap().unwrap();
                let copied = cluster
                    .get(&ObjectRef {
                        api_version: "v1".into(),
                        kind: "Secret".into(),
                        namespace: Some("team-a".into()),
                        name: "app-conn".into(),
                    })
                    .unwrap();
                let events: Vec<String> = cluster.events().into_iter().map(|e| e.reason).collect();
                assert_eq!(events, [want_event], "{what}");
                if want_ready.is_empty() {
                    assert_eq!(
                        reason(&stored, SYNCED).as_deref(),
                        Some("ReconcileError"),
                        "{what}"
                    );
                    assert!(copied.is_none(), "{what}");
                } else {
                    assert_eq!(
                        reason(&stored, READY).as_deref(),
                        Some(want_ready),
                        "{what}"
                    );
                    let copied = copied.unwrap();
                    assert_eq!(copied["data"], json!({"password": "cGFzcw=="}), "{what}");
                    assert_eq!(
                        copied["metadata"]["ownerReferences"][0]["uid"], "claim-uid",
                        "{what}"
                    );
                }
            }
        }

        /// Reconciles the claim `app` once, as stored in `cluster`.
        async fn reconcile_stored(cluster: &MemoryCluster) -> ReconcileResult {
            let (claim_kind, xr_kind) = resources();
            let policy = Policy::new(claim_kind.clone(), &Timing::default());
            let reference = ObjectRef::of(&claim(&[], json!({}), json!({}))).unwrap();
            let mut claim = cluster.get(&reference).unwrap().unwrap();
            let run = ClaimReconcile {
                writes: cluster,
                stored: Mutex::new(claim.clone()),
                policy: &policy,
                claim_kind: &claim_kind,
                xr_kind: &xr_kind,
                poll_interval: POLL,
                reference,
                xrd: xrd(None),
            };
            run.reconcile(&mut claim).await.unwrap().1
        }

        #[tokio::test]
        async fn a_claim_reconciled_again_writes_only_what_changed_since() {
            fn ready_xr(cluster: &MemoryCluster) {
                let reference = ObjectRef::of(&xr("app", json!({}), json!({}))).unwrap();
                let mut stored = cluster.get(&reference).unwrap().unwrap();
                stored["status"] = ready();
                cluster.seed([stored]).unwrap();
            }
            fn pick_composition(cluster: &MemoryCluster) {
                let reference = ObjectRef::of(&claim(&[], json!({}), json!({}))).unwrap();
                let mut stored = cluster.get(&reference).unwrap().unwrap();
                stored["spec"]["compositionRef"] = json!({"name": "other"});
                cluster.seed([stored]).unwrap();
            }
            /// A change made between two reconciles.
            type Change = fn(&MemoryCluster);
            /// The writes a reconcile makes: the kind written, `apply` or `status`.
            type Writes = &'static [(&'static str, &'static str)];
            // (what changed between two reconciles, the second's writes)
            let cases: [(&str, Change, Writes); 3] = [
                ("nothing", |_| {}, &[]),
                ("its XR became ready", ready_xr, &[("App", "status")]),
                (
                    "a user picked a Composition on the claim",
                    pick_composition,
                    &[("App", "apply"), ("XApp", "apply")],
                ),
            ];
            for (what, change, want) in cases {
                let cluster = MemoryCluster::new();
                let bound = claim(&[FINALIZER], bound_spec(json!({})), json!({}));
                cluster
                    .seed([bound, xr("app", json!({}), json!({}))])
                    .unwrap();
                assert_eq!(reconcile_stored(&cluster).await, ReconcileResult::Success);
                let first = cluster.writes().len();
                assert!(first > 0, "{what}: the first reconcile binds and writes");
                change(&cluster);
                assert_eq!(reconcile_stored(&cluster).await, ReconcileResult::Success);
                let writes: Vec<(String, &str)> = cluster.writes()[first..]
                    .iter()
                    .map(|(r, w)| (r.kind.clone(), *w))
                    .collect();
                let want: Vec<(String, &str)> =
                    want.iter().map(|(k, w)| (k.to_string(), *w)).collect();
                assert_eq!(writes, want, "{what}");
            }
        }
    }
}
