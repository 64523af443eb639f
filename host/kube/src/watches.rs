//! Watches on composed resource kinds, started as XRs compose them, so a
//! composed resource changed or deleted out of band brings its XR back to
//! reconcile within moments rather than at the next poll.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::channel::mpsc::UnboundedSender;
use kube::api::{Api, ApiResource, DynamicObject, PartialObjectMeta};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, watcher};
use plait_reconcile::LABEL_COMPOSITE;
use tokio::task::JoinHandle;

use crate::cluster::KubeCluster;

/// Where an XR kind's controller takes reconcile requests.
#[derive(Clone)]
pub struct Route {
    pub sender: UnboundedSender<ObjectRef<DynamicObject>>,
    pub resource: ApiResource,
    pub namespaced: bool,
}

/// One metadata watch per composed kind, shared by every XR kind.
#[derive(Default)]
pub struct ComposedWatches {
    watches: Mutex<HashMap<(String, String), JoinHandle<()>>>,
    /// By the XR's group and kind: owner references may name any served version.
    routes: Arc<Mutex<HashMap<(String, String), Route>>>,
}

fn group_of(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(g, _)| g)
}

impl ComposedWatches {
    pub fn route(&self, group: &str, kind: &str, route: Route) {
        if let Ok(mut routes) = self.routes.lock() {
            routes.insert((group.into(), kind.into()), route);
        }
    }

    /// Where the controller of `group`/`kind` takes reconcile requests, while it runs.
    pub fn route_of(&self, group: &str, kind: &str) -> Option<Route> {
        self.routes
            .lock()
            .ok()
            .and_then(|r| r.get(&(group.to_string(), kind.to_string())).cloned())
    }

    pub fn unroute(&self, group: &str, kind: &str) {
        if let Ok(mut routes) = self.routes.lock() {
            routes.remove(&(group.to_string(), kind.to_string()));
        }
    }

    /// Starts watching `api_version`/`kind` unless already watching it.
    pub async fn ensure(&self, cluster: &KubeCluster, api_version: &str, kind: &str) {
        let key = (api_version.to_string(), kind.to_string());
        if self
            .watches
            .lock()
            .map(|w| w.contains_key(&key))
            .unwrap_or(true)
        {
            return;
        }
        let served = match cluster.served_kind(api_version, kind).await {
            Ok(Some(served)) => served,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(api_version, kind, error = %e, "cannot watch composed kind");
                return;
            }
        };
        // Metadata only: owner references are all a watch needs.
        let api: Api<PartialObjectMeta<DynamicObject>> =
            Api::all_with(cluster.client().clone(), &served.resource);
        let routes = self.routes.clone();
        let config = watcher::Config::default().labels(LABEL_COMPOSITE);
        let task = tokio::spawn(async move {
            let mut events = watcher(api, config)
                .default_backoff()
                .touched_objects()
                .boxed();
            while let Some(event) = events.next().await {
                let object = match event {
                    Ok(object) => object,
                    Err(e) => {
                        tracing::debug!(error = %e, "composed resource watch interrupted");
                        continue;
                    }
                };
                let namespace = object.metadata.namespace.clone();
                for owner in object.metadata.owner_references.iter().flatten() {
                    if owner.controller != Some(true) {
                        continue;
                    }
                    let key = (group_of(&owner.api_version).to_string(), owner.kind.clone());
                    let Some(route) = routes.lock().ok().and_then(|r| r.get(&key).cloned()) else {
                        continue;
                    };
                    let mut reference = ObjectRef::new_with(&owner.name, route.resource.clone());
                    if route.namespaced
                        && let Some(ns) = &namespace
                    {
                        reference = reference.within(ns);
                    }
                    // A closed channel means that XR kind's controller stopped.
                    let _ = route.sender.unbounded_send(reference);
                }
            }
        });
        match self.watches.lock() {
            Ok(mut watches) => {
                if let Some(previous) = watches.insert(key, task) {
                    previous.abort();
                }
            }
            Err(_) => task.abort(),
        }
    }

    /// Stops every watch.
    pub fn stop(&self) {
        if let Ok(mut watches) = self.watches.lock() {
            for (_, task) in watches.drain() {
                task.abort();
            }
        }
    }
}

impl Drop for ComposedWatches {
    fn drop(&mut self) {
        self.stop();
    }
}
