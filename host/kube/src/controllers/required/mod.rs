//! Watching what XRs' functions required: when an object a function read
//! as a required resource (by name, or by labels: extra resources,
//! EnvironmentConfigs) appears, changes or goes, the XRs whose last
//! reconcile read it are queued at once, through their controllers' routes
//! and watch circuits, rather than at their next poll.
//!
//! Each reconcile records what its pipeline read ([`RequiredWatches::track`],
//! from `plait_reconcile::Outcome::required`) in the [`RequiredIndex`]; a
//! deleted XR is forgotten. Changes come from one watch per required kind:
//! EnvironmentConfigs from the watch that fills their store (told once the
//! store holds the change, so the woken reconcile reads it changed), any
//! other kind from a metadata-only watch (names, labels and versions; no
//! object bodies are kept) started with the first XR that requires the
//! kind and stopped with the last.

mod index;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};

use futures::StreamExt;
use kube::api::{Api, DynamicObject};
use kube::core::PartialObjectMeta;
use kube::runtime::{reflector, watcher};
use plait_reconcile::ObjectRef;
use plait_sdk::ResourceSelector;
use tokio::task::JoinHandle;

pub use index::{GroupKind, KindsChanged, Matching, Required, RequiredIndex};

use crate::clusters::cluster::KubeCluster;
use crate::controllers::watches::ComposedWatches;
use crate::stores::changes::{Change, SeenObjects};
use crate::stores::environment::{ENVIRONMENT_CONFIG_KIND, EnvironmentConfigs};
use crate::stores::reflect::watched;
use crate::vocabulary::api::{APIEXTENSIONS_GROUP, group_of};
use crate::vocabulary::metrics::{Trigger, metrics};

/// The index, the watches of required kinds, and where woken XRs go.
pub struct RequiredWatches {
    inner: Arc<Inner>,
}

struct Inner {
    index: RwLock<RequiredIndex>,
    /// The metadata watches of required kinds other than EnvironmentConfigs.
    watches: Mutex<HashMap<GroupKind, JoinHandle<()>>>,
    /// The XR controllers' routes, which the composed-resource watches use too.
    routes: Arc<ComposedWatches>,
    /// The task that takes in the EnvironmentConfig store's changes.
    environment: Mutex<Option<JoinHandle<()>>>,
    recent: Mutex<Recent>,
}

/// The changes told lately, numbered: a reconcile that read while one
/// arrived, before its reads were recorded, is queued for it when they are.
#[derive(Default)]
struct Recent {
    next: u64,
    changes: VecDeque<(u64, GroupKind, Change)>,
}

/// How many changes [`Recent`] keeps (a few hundred bytes each): more
/// than any reconcile sees told while it runs, but under a storm of
/// changes, where the poll remains the backstop.
const RECENT_CHANGES: usize = 8192;

fn environment_kind() -> GroupKind {
    (APIEXTENSIONS_GROUP.into(), ENVIRONMENT_CONFIG_KIND.into())
}

impl RequiredWatches {
    /// Watches whose woken XRs go through `routes`, taking EnvironmentConfig
    /// changes from `environment`'s store. Spawns a task: call from within
    /// the runtime.
    pub fn new(routes: Arc<ComposedWatches>, environment: &EnvironmentConfigs) -> RequiredWatches {
        let inner = Arc::new(Inner {
            index: RwLock::default(),
            watches: Mutex::default(),
            routes,
            environment: Mutex::default(),
            recent: Mutex::default(),
        });
        let weak = Arc::downgrade(&inner);
        let mut changes = environment.changes();
        let task = tokio::spawn(async move {
            let kind = environment_kind();
            while let Some(change) = changes.next().await {
                let Some(inner) = weak.upgrade() else { return };
                inner.wake(&kind, &change);
            }
        });
        *lock(&inner.environment) = Some(task);
        RequiredWatches { inner }
    }

    /// Where the changes stand now: a reconcile takes this before its
    /// pipeline reads anything, and hands it to [`RequiredWatches::track`].
    pub fn mark(&self) -> u64 {
        lock(&self.inner.recent).next
    }

    /// Records that `xr`'s last reconcile read exactly `read` (nothing, once
    /// it is gone), starting the watches of kinds no XR required before and
    /// stopping those of kinds no XR requires any more. A change to what it
    /// read told since `since` (the reconcile's [`RequiredWatches::mark`]),
    /// while its reads were not recorded yet, queues it again.
    pub async fn track(
        &self,
        cluster: &KubeCluster,
        xr: &ObjectRef,
        read: &[ResourceSelector],
        since: u64,
    ) {
        let required: Vec<Required> = read.iter().map(Required::of).collect();
        let changed = self.record(xr, &required);
        self.inner.missed(xr, &required, since);
        let versions: BTreeMap<GroupKind, &str> = read
            .iter()
            .zip(&required)
            .map(|(selector, required)| (required.kind.clone(), selector.api_version.as_str()))
            .collect();
        for kind in changed.added {
            if let Some(api_version) = versions.get(&kind) {
                self.inner.start(cluster, api_version, kind.clone()).await;
            }
        }
    }

    /// Forgets `xr`: it is gone, or going, and nothing it read wakes it.
    pub fn forget(&self, xr: &ObjectRef) {
        self.record(xr, &[]);
    }

    fn record(&self, xr: &ObjectRef, required: &[Required]) -> KindsChanged {
        let changed = self
            .inner
            .index
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .track(xr, required);
        let mut watches = lock(&self.inner.watches);
        for kind in &changed.released {
            if let Some(task) = watches.remove(kind) {
                tracing::debug!(
                    group = kind.0,
                    kind = kind.1,
                    "no XR requires this kind; watch stopped"
                );
                task.abort();
            }
        }
        changed
    }

    /// Stops every watch.
    pub fn stop(&self) {
        for (_, task) in lock(&self.inner.watches).drain() {
            task.abort();
        }
        if let Some(task) = lock(&self.inner.environment).take() {
            task.abort();
        }
    }
}

impl Drop for RequiredWatches {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Inner {
    /// Starts the metadata watch of `kind` (read at `api_version`), unless
    /// EnvironmentConfigs' own watch tells of it or a watch runs already.
    async fn start(self: &Arc<Self>, cluster: &KubeCluster, api_version: &str, kind: GroupKind) {
        if kind == environment_kind() || lock(&self.watches).contains_key(&kind) {
            return;
        }
        let served = match cluster.served_kind(api_version, &kind.1).await {
            Ok(Some(served)) => served,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(api_version, kind = kind.1, %error, "cannot watch required kind");
                return;
            }
        };
        let api: Api<PartialObjectMeta<DynamicObject>> =
            Api::all_with(cluster.client().clone(), &served.resource);
        let events = watched(api, watcher::Config::default());
        let weak: Weak<Inner> = Arc::downgrade(self);
        let watched_kind = kind.clone();
        let task = tokio::spawn(async move {
            let mut events = std::pin::pin!(events);
            let mut seen = SeenObjects::default();
            while let Some(event) = events.next().await {
                let event = match event {
                    Ok(event) => event,
                    Err(error) => {
                        tracing::debug!(kind = watched_kind.1, %error, "required kind's watch interrupted");
                        continue;
                    }
                };
                let Some(inner) = weak.upgrade() else { return };
                for change in seen.apply(&event) {
                    inner.wake(&watched_kind, &change);
                }
            }
        });
        let mut watches = lock(&self.watches);
        // Discovery took a while: the kind may have been released, or another
        // reconcile started its watch, in the meantime.
        let required = self
            .index
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .requires(&kind);
        if required && !watches.contains_key(&kind) {
            watches.insert(kind, task);
        } else {
            task.abort();
        }
    }

    /// Queues every XR that read the object `change` tells of. The change
    /// is numbered before the index is asked, and a reconcile records its
    /// reads before it looks at the changes since its mark: whichever comes
    /// second sees the other.
    fn wake(&self, kind: &GroupKind, change: &Change) {
        {
            let mut recent = lock(&self.recent);
            let number = recent.next;
            recent.next += 1;
            recent
                .changes
                .push_back((number, kind.clone(), change.clone()));
            if recent.changes.len() > RECENT_CHANGES {
                recent.changes.pop_front();
            }
        }
        let readers = self
            .index
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .readers_of(kind, change);
        self.queue(&kind.1, &change.name, readers.iter().map(Arc::as_ref));
    }

    /// Queues `xr` if something it `required` changed since `since`, before
    /// its reads were recorded.
    fn missed(&self, xr: &ObjectRef, required: &[Required], since: u64) {
        if required.is_empty() {
            return;
        }
        let missed = lock(&self.recent)
            .changes
            .iter()
            .filter(|(number, ..)| *number >= since)
            .any(|(_, kind, change)| required.iter().any(|r| r.matches(kind, change)));
        if missed {
            self.queue("(changed while it read)", &xr.name, [xr]);
        }
    }

    /// Queues `xrs` through their controllers' routes and watch circuits.
    fn queue<'a>(&self, required: &str, name: &str, xrs: impl IntoIterator<Item = &'a ObjectRef>) {
        let mut by_kind: BTreeMap<(&str, &str), Vec<&ObjectRef>> = BTreeMap::new();
        for xr in xrs {
            by_kind
                .entry((group_of(&xr.api_version), xr.kind.as_str()))
                .or_default()
                .push(xr);
        }
        for ((group, xr_kind), xrs) in by_kind {
            // A kind whose controller stopped has no route.
            let Some(route) = self.routes.route_of(group, xr_kind) else {
                continue;
            };
            let mut woken = 0;
            for xr in xrs {
                let key = (xr.namespace.clone(), xr.name.clone());
                if !route.breaker.event(&key).is_allowed() {
                    continue;
                }
                let mut reference =
                    reflector::ObjectRef::new_with(&xr.name, route.resource.clone());
                if route.namespaced
                    && let Some(namespace) = &xr.namespace
                {
                    reference = reference.within(namespace);
                }
                if route.sender.unbounded_send(reference).is_ok() {
                    woken += 1;
                }
            }
            tracing::debug!(
                required,
                name,
                kind = xr_kind,
                woken,
                "a required resource changed"
            );
            metrics().triggered(&route.resource.kind, Trigger::Required, woken);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
