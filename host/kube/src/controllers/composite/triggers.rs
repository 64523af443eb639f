//! Everything that wakes an XR of one kind, in one expression, as
//! kube-runtime's `Controller` builder reads: its own watch (less the
//! controller's own writes, and what its watch circuit holds back), the
//! composed resources and changed required resources routed to it, a new or renumbered
//! CompositionRevision of its kind, a shard this replica takes over, and
//! the sweep of XRs no reconcile has finished for yet.

use std::sync::Arc;

use futures::channel::mpsc::UnboundedReceiver;
use futures::{Stream, StreamExt, TryStreamExt};
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, controller, reflector, watcher};

use super::context::XrContext;
use crate::access::writes;
use crate::clusters::fence;
use crate::stores::reflect;
use crate::vocabulary::metrics::{Trigger, metrics};

/// The XR kind's controller, built with everything that wakes its XRs;
/// `routed` are the XRs the composed-resource watches name.
pub fn controller(
    ctx: &Arc<XrContext>,
    routed: UnboundedReceiver<ObjectRef<DynamicObject>>,
) -> Controller<DynamicObject> {
    let shared = &ctx.shared;
    let resource = ctx.policy.resource.clone();
    let writer = reflector::store::Writer::new(resource.clone());
    let store = writer.as_reader();
    let events = reflect::reflector(
        shared.cluster.client(),
        &resource,
        watcher::Config::default(),
        writer,
    );
    // A deleted XR is woken by nothing it read any more.
    let (required, policy) = (shared.required.clone(), ctx.clone());
    let events = events.inspect(move |event| {
        if let Ok(watcher::Event::Delete(xr)) = event {
            required.forget(&policy.policy.reference(xr));
        }
    });
    // The XR's own status and reference writes do not bring it back.
    let changed_kind = resource.kind.clone();
    let breaker = ctx.breaker.clone();
    let xrs = writes::changes_by_others(
        events,
        shared.cluster.writes().clone(),
        resource.clone(),
        false,
    )
    .try_filter(move |xr| {
        let key = (
            xr.metadata.namespace.clone(),
            xr.metadata.name.clone().unwrap_or_default(),
        );
        futures::future::ready(breaker.event(&key).is_allowed())
    })
    .inspect_ok(move |_| metrics().triggered(&changed_kind, Trigger::Changed, 1));
    ctx.watch_with(store.clone());
    // Every XR that is due goes to its reconcile at once, which waits its
    // turn in the fair queue: the controller's own limit would pick in
    // hash order.
    let controller = Controller::for_stream_with(xrs, store.clone(), resource.clone())
        .with_config(controller::Config::default().concurrency(0))
        .trigger_backoff(reflect::watch_backoff());
    let taken = fence::shard_taken(
        shared.shards.as_deref(),
        controller.store(),
        resource.clone(),
    );
    let unreconciled = never_reconciled(ctx, controller.store());
    controller
        .reconcile_on(unreconciled)
        .reconcile_on(taken)
        .reconcile_on(revised(ctx, store, resource))
        .reconcile_on(routed)
}

/// A new or renumbered CompositionRevision re-runs every XR of the kind it
/// composes; each XR's reconcile decides whether the change concerns it.
/// The revisions come from the catalog, once its store has them, so the
/// reconcile reads what woke it.
fn revised(
    ctx: &XrContext,
    store: Store<DynamicObject>,
    resource: ApiResource,
) -> impl Stream<Item = ObjectRef<DynamicObject>> + Send + 'static {
    let (api_version, kind) = (resource.api_version.clone(), resource.kind.clone());
    ctx.shared
        .catalog
        .subscribe_revisions()
        .flat_map(move |revision: Arc<DynamicObject>| {
            let type_ref = &revision.data["spec"]["compositeTypeRef"];
            let ours =
                type_ref["apiVersion"] == api_version.as_str() && type_ref["kind"] == kind.as_str();
            let xrs = if ours { store.state() } else { Vec::new() };
            metrics().triggered(&kind, Trigger::Revision, xrs.len());
            let woken: Vec<_> = xrs
                .iter()
                .map(|xr| ObjectRef::from_obj_with(xr.as_ref(), resource.clone()))
                .collect();
            futures::stream::iter(woken)
        })
}

/// Every poll interval, each XR no reconcile has finished for yet: a
/// trigger lost on the way to the queue must not leave an XR that has never
/// been reconciled, and so has no poll of its own, alone for good.
fn never_reconciled(
    ctx: &Arc<XrContext>,
    store: Store<DynamicObject>,
) -> impl Stream<Item = ObjectRef<DynamicObject>> + Send + 'static {
    let context = ctx.clone();
    let period = ctx.shared.timing.poll_interval;
    futures::stream::unfold((), move |()| {
        let (store, context) = (store.clone(), context.clone());
        async move {
            tokio::time::sleep(period).await;
            let resource = &context.policy.resource;
            let xrs: Vec<_> = store
                .state()
                .iter()
                .filter(|xr| context.awaits_first_reconcile(xr))
                .map(|xr| ObjectRef::from_obj_with(xr.as_ref(), resource.clone()))
                .collect();
            Some((futures::stream::iter(xrs), ()))
        }
    })
    .flatten()
}
