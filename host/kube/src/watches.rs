//! Watches on composed resource kinds, started as XRs compose them and
//! stopped once no XR composes the kind any more, so a composed resource
//! changed or deleted out of band brings its XR back to reconcile within
//! moments rather than at the next poll.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::channel::mpsc::UnboundedSender;
use kube::api::{Api, ApiResource, DynamicObject, PartialObjectMeta};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, watcher};
use plait_reconcile::LABEL_COMPOSITE;
use tokio::task::JoinHandle;

use crate::api::group_of;
use crate::cluster::KubeCluster;
use crate::metrics::{Trigger, metrics};
use crate::writes;

/// Where an XR kind's controller takes reconcile requests.
#[derive(Clone)]
pub struct Route {
    pub sender: UnboundedSender<ObjectRef<DynamicObject>>,
    pub resource: ApiResource,
    pub namespaced: bool,
}

/// A composed kind: apiVersion and kind.
pub type Kind = (String, String);

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
    watches: HashMap<Kind, JoinHandle<()>>,
}

/// One metadata watch per composed kind, shared by every XR kind.
#[derive(Default)]
pub struct ComposedWatches {
    /// Users and watches change under one lock, so a watch is never stopped
    /// while an XR that has just started composing its kind counts on it.
    state: Mutex<State>,
    /// By the XR's group and kind: owner references may name any served version.
    routes: Arc<Mutex<HashMap<(String, String), Route>>>,
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
                    if let Some(task) = state.watches.remove(&kind) {
                        tracing::debug!(
                            api_version = kind.0,
                            kind = kind.1,
                            "no XR composes this kind; watch stopped"
                        );
                        task.abort();
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
        // Metadata only: owner references are all a watch needs.
        let api: Api<PartialObjectMeta<DynamicObject>> =
            Api::all_with(cluster.client().clone(), &served.resource);
        let routes = self.routes.clone();
        let config = watcher::Config::default().labels(LABEL_COMPOSITE);
        let writes = cluster.writes().clone();
        let task = tokio::spawn(async move {
            // A composed resource's own apply does not bring its XR back:
            // the reconcile that applied it already knows the result.
            let mut events = writes::changes_by_others(
                watcher(api, config).default_backoff(),
                writes,
                served.resource,
                true,
            )
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
                    if route.sender.unbounded_send(reference).is_ok() {
                        metrics().triggered(&route.resource.kind, Trigger::Composed, 1);
                    }
                }
            }
        });
        match self.state.lock() {
            // Discovery took a while: the kind may have been released, or
            // another reconcile started its watch, in the meantime.
            Ok(mut state) if state.users.is_used(&key) && !state.watches.contains_key(&key) => {
                state.watches.insert(key, task);
            }
            _ => task.abort(),
        }
    }

    /// Stops every watch.
    pub fn stop(&self) {
        if let Ok(mut state) = self.state.lock() {
            for (_, task) in state.watches.drain() {
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
