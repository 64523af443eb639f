//! Everything that wakes a claim of one kind, in one expression: its own
//! watch, a shard this replica takes over, and a change to the XR bound to
//! it (readiness, status, deletion).

use std::sync::Arc;

use kube::api::{Api, DynamicObject};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, controller, watcher};

use super::context::ClaimContext;
use crate::clusters::fence::shard_taken;
use crate::stores::reflect;
use crate::vocabulary::object::text;

/// The claim kind's controller, built with everything that wakes its claims.
pub fn controller(ctx: &Arc<ClaimContext>) -> Controller<DynamicObject> {
    let client = ctx.cluster.client().clone();
    let (claim, xr) = (ctx.claim.clone(), ctx.xr.clone());
    let claims: Api<DynamicObject> = Api::all_with(client.clone(), &claim);
    let xrs: Api<DynamicObject> = Api::all_with(client, &xr);
    // Every claim that is due goes to its reconcile at once, which waits
    // its turn in the fair queue.
    let controller = Controller::new_with(claims, watcher::Config::default(), claim.clone())
        .with_config(controller::Config::default().concurrency(0))
        .trigger_backoff(reflect::watch_backoff());
    ctx.watch_with(controller.store());
    let taken = shard_taken(ctx.shards.as_deref(), controller.store(), claim.clone());
    controller.reconcile_on(taken).watches_with(
        xrs,
        xr,
        watcher::Config::default(),
        move |xr: DynamicObject| bound_claim(&xr, &claim).into_iter(),
    )
}

/// The claim of `claim`'s kind that `xr` is bound to, if any.
fn bound_claim(
    xr: &DynamicObject,
    claim: &kube::api::ApiResource,
) -> Option<ObjectRef<DynamicObject>> {
    let claim_ref = &xr.data["spec"]["claimRef"];
    let ours = claim_ref["kind"] == claim.kind.as_str()
        && claim_ref["apiVersion"] == claim.api_version.as_str();
    match (
        ours,
        text(claim_ref, "/name"),
        text(claim_ref, "/namespace"),
    ) {
        (true, Some(name), Some(ns)) => Some(ObjectRef::new_with(name, claim.clone()).within(ns)),
        _ => None,
    }
}
