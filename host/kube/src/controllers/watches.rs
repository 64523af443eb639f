//! Watches on composed resource kinds, started as XRs compose them and
//! stopped once no XR composes the kind any more, so a composed resource
//! changed or deleted out of band brings its XR back to reconcile within
//! moments rather than at the next poll. Each watch also fills the
//! [`ComposedCache`] reconciles observe composed resources from.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::channel::mpsc::UnboundedSender;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher;
use plait_reconcile::LABEL_COMPOSITE;
use tokio::task::JoinHandle;

use crate::access::writes;
use crate::clusters::cluster::KubeCluster;
use crate::controllers::breaker::CircuitBreaker;
use crate::stores::composed::{CachedKind, ComposedCache, Kind};
use crate::stores::reflect::reflector;
use crate::vocabulary::api::group_of;
use crate::vocabulary::metrics::{Trigger, metrics};

/// Where an XR kind's controller takes reconcile requests.
#[derive(Clone)]
pub struct Route {
    pub sender: UnboundedSender<ObjectRef<DynamicObject>>,
    pub resource: ApiResource,
    pub namespaced: bool,
    /// The circuits of that kind's XRs, which composed-resource events pass.
    pub breaker: Arc<CircuitBreaker>,
}

/// Which XRs compose which kinds.
#[derive(Debug, Default)]
pub struct KindUsers {
    by_xr: HashMap<plait_reconcile::ObjectRef, BTreeSet<Kind>>,
    counts: HashMap<Kind, usize>,
}

impl KindUsers {
    /// Records that `xr` now composes exactly `kinds`, returning the kinds
    /// that no XR composes any more.
    pub fn set(&mut self, xr: &plait_reconcile::ObjectRef, kinds: BTreeSet<Kind>) -> Vec<Kind> {
        let before = if kinds.is_empty() {
            self.by_xr.remove(xr).unwrap_or_default()
        } else {
            self.by_xr
                .insert(xr.clone(), kinds.clone())
                .unwrap_or_default()
        };
        for kind in kinds.difference(&before) {
            *self.counts.entry(kind.clone()).or_insert(0) += 1;
        }
        let mut released = Vec::new();
        for kind in before.difference(&kinds) {
            if let Some(n) = self.counts.get_mut(kind) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.counts.remove(kind);
                    released.push(kind.clone());
                }
            }
        }
        released
    }

    pub fn is_used(&self, kind: &Kind) -> bool {
        self.counts.contains_key(kind)
    }
}

#[derive(Default)]
struct State {
    users: KindUsers,
    watches: HashMap<Kind, Watch>,
}

struct Watch {
    task: JoinHandle<()>,
    live: Arc<AtomicBool>,
}

impl ComposedWatches {
    /// Stops the watch of `kind`; its cached objects are read no more.
    fn stop_watch(&self, kind: &Kind, watch: Watch) {
        watch.live.store(false, Ordering::Release);
        self.cache.remove(kind);
        watch.task.abort();
    }
}

/// One watch per composed kind, shared by every XR kind.
#[derive(Default)]
pub struct ComposedWatches {
    /// Users and watches change under one lock, so a watch is never stopped
    /// while an XR that has just started composing its kind counts on it.
    state: Mutex<State>,
    /// By the XR's group and kind: owner references may name any served version.
    routes: Arc<Mutex<HashMap<(String, String), Route>>>,
    cache: Arc<ComposedCache>,
}

impl ComposedWatches {
    /// Watches that fill `cache`.
    pub fn new(cache: Arc<ComposedCache>) -> ComposedWatches {
        ComposedWatches {
            state: Mutex::default(),
            routes: Arc::default(),
            cache,
        }
    }

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

    /// Records the kinds `xr` composes (none once it is gone), stopping the
    /// watches no XR needs any more and starting the missing ones.
    pub async fn track(
        &self,
        cluster: &KubeCluster,
        xr: &plait_reconcile::ObjectRef,
        kinds: BTreeSet<Kind>,
    ) {
        let missing: Vec<Kind> = match self.state.lock() {
            Ok(mut state) => {
                for kind in state.users.set(xr, kinds.clone()) {
                    if let Some(watch) = state.watches.remove(&kind) {
                        tracing::debug!(
                            api_version = kind.0,
                            kind = kind.1,
                            "no XR composes this kind; watch stopped"
                        );
                        self.stop_watch(&kind, watch);
                    }
                }
                kinds
                    .into_iter()
                    .filter(|k| !state.watches.contains_key(k))
                    .collect()
            }
            Err(_) => return,
        };
        for (api_version, kind) in missing {
            self.start(cluster, &api_version, &kind).await;
        }
    }

    /// Starts watching `api_version`/`kind` if some XR composes it and no watch runs.
    async fn start(&self, cluster: &KubeCluster, api_version: &str, kind: &str) {
        let key = (api_version.to_string(), kind.to_string());
        let served = match cluster.served_kind(api_version, kind).await {
            Ok(Some(served)) => served,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(api_version, kind, error = %e, "cannot watch composed kind");
                return;
            }
        };
        let routes = self.routes.clone();
        let config = watcher::Config::default().labels(LABEL_COMPOSITE);
        let writes = cluster.writes().clone();
        let writer = Writer::new(served.resource.clone());
        let cache = self.cache.clone();
        let live = Arc::new(AtomicBool::new(true));
        let cached = CachedKind {
            store: writer.as_reader(),
            resource: served.resource.clone(),
            live: live.clone(),
        };
        let cached_key = key.clone();
        let listed = async move {
            if cached.store.wait_until_ready().await.is_ok() {
                cache.insert(cached_key, cached);
            }
        };
        // Full objects, trimmed: reconciles observe composed resources from them.
        let events = reflector(cluster.client(), &served.resource, config, writer);
        let task = tokio::spawn(async move {
            // A composed resource's own apply does not bring its XR back:
            // the reconcile that applied it already knows the result.
            let mut events =
                writes::changes_by_others(events, writes, served.resource, true).boxed();
            let routing = async move {
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
                        let Some(route) = routes.lock().ok().and_then(|r| r.get(&key).cloned())
                        else {
                            continue;
                        };
                        let mut reference =
                            ObjectRef::new_with(&owner.name, route.resource.clone());
                        if route.namespaced
                            && let Some(ns) = &namespace
                        {
                            reference = reference.within(ns);
                        }
                        let xr = (reference.namespace.clone(), reference.name.clone());
                        if !route.breaker.event(&xr).is_allowed() {
                            continue;
                        }
                        // A closed channel means that XR kind's controller stopped.
                        if route.sender.unbounded_send(reference).is_ok() {
                            metrics().triggered(&route.resource.kind, Trigger::Composed, 1);
                        }
                    }
                }
            };
            futures::join!(listed, routing);
        });
        match self.state.lock() {
            // Discovery took a while: the kind may have been released, or
            // another reconcile started its watch, in the meantime.
            Ok(mut state) if state.users.is_used(&key) && !state.watches.contains_key(&key) => {
                state.watches.insert(key, Watch { task, live });
            }
            _ => {
                live.store(false, Ordering::Release);
                task.abort();
            }
        }
    }

    /// Stops every watch.
    pub fn stop(&self) {
        if let Ok(mut state) = self.state.lock() {
            let watches: Vec<_> = state.watches.drain().collect();
            for (kind, watch) in watches {
                self.stop_watch(&kind, watch);
            }
        }
    }
}

impl Drop for ComposedWatches {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xr(name: &str) -> plait_reconcile::ObjectRef {
        plait_reconcile::ObjectRef {
            api_version: "example.org/v1".into(),
            kind: "App".into(),
            namespace: Some("ns".into()),
            name: name.into(),
        }
    }

    fn kinds(names: &[&str]) -> BTreeSet<Kind> {
        names
            .iter()
            .map(|k| ("v1".to_string(), k.to_string()))
            .collect()
    }

    #[test]
    fn a_kind_is_released_when_its_last_xr_stops_composing_it() {
        // (xr, kinds it composes now, kinds released)
        let steps: &[(&str, &[&str], &[&str])] = &[
            ("a", &["ConfigMap", "Secret"], &[]),
            ("b", &["ConfigMap"], &[]),
            ("a", &["ConfigMap", "Secret"], &[]),
            ("a", &["ConfigMap"], &["Secret"]),
            ("a", &[], &[]),
            ("b", &["Service"], &["ConfigMap"]),
            ("c", &[], &[]),
            ("b", &[], &["Service"]),
        ];
        let mut users = KindUsers::default();
        for (i, (name, now, want)) in steps.iter().enumerate() {
            let released: BTreeSet<Kind> = users.set(&xr(name), kinds(now)).into_iter().collect();
            assert_eq!(released, kinds(want), "step {i}");
        }
        assert!(users.by_xr.is_empty() && users.counts.is_empty());
    }
}
