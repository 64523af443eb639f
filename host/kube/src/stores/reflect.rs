//! The one way every watch-fed store is filled: a kube-runtime reflector
//! over all objects of a resource (or those a watch config selects),
//! objects kept without `managedFields`, and label selection over a store.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::{BoxFuture, Shared};
use futures::{FutureExt, Stream, StreamExt};
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::reflector::Store;
use kube::runtime::reflector::store::Writer;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::Value;

use crate::vocabulary::object;

/// The watch events of the objects of `resource` that `config` selects,
/// each taken into `writer`'s store (without `managedFields`) before it is
/// yielded; a failed watch backs off and resumes.
pub fn reflector(
    client: &Client,
    resource: &ApiResource,
    config: watcher::Config,
    writer: Writer<DynamicObject>,
) -> impl Stream<Item = Result<watcher::Event<DynamicObject>, watcher::Error>> + Send + 'static + use<>
{
    let api: Api<DynamicObject> = Api::all_with(client.clone(), resource);
    watcher(api, config)
        .default_backoff()
        .modify(object::trim)
        .reflect(writer)
}

/// A reflector of every object of `resource` into `writer`'s store,
/// without `managedFields`, yielding each object it takes in once the
/// store has it.
pub fn reflect(
    client: &Client,
    resource: ApiResource,
    writer: Writer<DynamicObject>,
) -> impl Stream<Item = Arc<DynamicObject>> + Send + 'static {
    let kind = resource.kind.clone();
    reflector(client, &resource, watcher::Config::default(), writer).filter_map(move |event| {
        let object = match event {
            Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => Some(Arc::new(o)),
            Ok(_) => None,
            Err(error) => {
                tracing::debug!(kind, %error, "watch failed; retrying");
                None
            }
        };
        futures::future::ready(object)
    })
}

/// A future any number of tasks may await (each a clone) that ends once
/// every store of `stores` has listed its objects: `false` if a store's
/// writer went first (the controller is stopping). kube-runtime's
/// `Store::wait_until_ready` wakes only the last task that polled it, so a
/// store many tasks wait for is waited for through this, its one waiter.
pub fn listed_once(stores: Vec<Store<DynamicObject>>) -> Shared<BoxFuture<'static, bool>> {
    async move {
        for store in stores {
            if store.wait_until_ready().await.is_err() {
                return false;
            }
        }
        true
    }
    .boxed()
    .shared()
}

/// The stored objects whose labels include `labels`, as JSON.
pub fn listed(
    store: &Store<DynamicObject>,
    resource: &ApiResource,
    labels: &BTreeMap<String, String>,
) -> Vec<Value> {
    labelled(store, labels)
        .filter_map(|o| object::to_value(&o, resource).ok())
        .collect()
}

/// The stored objects whose labels include `labels`.
pub fn labelled(
    store: &Store<DynamicObject>,
    labels: &BTreeMap<String, String>,
) -> impl Iterator<Item = Arc<DynamicObject>> {
    store.state().into_iter().filter(move |o| {
        labels.iter().all(|(k, v)| {
            o.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(k))
                .is_some_and(|found| found == v)
        })
    })
}
