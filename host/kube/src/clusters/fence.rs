//! The shards this replica holds, and the fence a sharded reconcile and
//! its writes pass: an object belongs to shard `fnv1a(uid) % N`; its
//! reconcile runs only while this replica holds that shard ([`admitted`]),
//! and the writes of the pipeline it started go ahead only while the hold
//! lasts ([`Fenced`], the reconcile core's `Cluster` with a fence). Which
//! shards are held is decided by the shard Leases (`process/shards.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc::UnboundedReceiver;
use futures::stream::BoxStream;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use plait_reconcile::{Cluster, ClusterError, Forwarding};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::vocabulary::broadcast::Broadcast;
use crate::vocabulary::metrics::ReconcileResult;

/// The shard of an object with `uid` among `count`: FNV-1a, so every
/// replica and every version agrees.
pub fn shard_of(uid: &str, count: u32) -> u32 {
    let hash = uid.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    u32::try_from(hash % u64::from(count.max(1))).unwrap_or(0)
}

/// The shards this replica holds, each until when, and the reconciles
/// running in each.
pub struct Shards {
    count: u32,
    /// Each held shard and the end of its hold: its Lease's last renewal
    /// attempt plus the renew deadline. The Lease cannot expire for other
    /// replicas before then (the lease duration is longer), so a hold that
    /// has ended is no hold, even before the renewing loop notices.
    held: RwLock<BTreeMap<u32, Instant>>,
    running: Vec<AtomicUsize>,
    /// Woken whenever a shard is given up.
    stopped: Notify,
    /// Told of each shard this replica takes.
    taken: Broadcast<u32>,
}

/// A reconcile of an object of a held shard; the shard is not handed back
/// while it lasts.
pub struct Reconciling<'a> {
    shards: &'a Shards,
    shard: u32,
    running: &'a AtomicUsize,
}

impl Drop for Reconciling<'_> {
    fn drop(&mut self) {
        self.running.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Reconciling<'_> {
    /// Resolves once this replica no longer holds the shard: given up, or
    /// its hold ended without a renewal.
    pub async fn lost(&self) {
        loop {
            let stopped = self.shards.stopped.notified();
            match self.shards.held_until(self.shard) {
                Some(until) if Instant::now() < until => {
                    tokio::select! {
                        () = tokio::time::sleep_until(until) => {}
                        () = stopped => {}
                    }
                }
                _ => return,
            }
        }
    }
}

impl Shards {
    pub fn new(count: u32) -> Shards {
        let count = count.max(1);
        Shards {
            count,
            held: RwLock::default(),
            running: (0..count).map(|_| AtomicUsize::new(0)).collect(),
            stopped: Notify::new(),
            taken: Broadcast::default(),
        }
    }

    pub fn count(&self) -> u32 {
        self.count
    }

    /// Starts a reconcile of the object with `uid` when its shard is held;
    /// `None` when another replica's it is.
    pub fn enter(&self, uid: &str) -> Option<Reconciling<'_>> {
        let shard = shard_of(uid, self.count);
        let running = self.running.get(usize::try_from(shard).ok()?)?;
        // Counted before the check, so a shard being handed back either
        // sees this reconcile or this reconcile sees it gone.
        running.fetch_add(1, Ordering::AcqRel);
        let reconciling = Reconciling {
            shards: self,
            shard,
            running,
        };
        self.holds(shard).then_some(reconciling)
    }

    /// Whether the shard of the object with `uid` is held here.
    pub fn holds_object(&self, uid: &str) -> bool {
        self.holds(shard_of(uid, self.count))
    }

    pub fn holds(&self, shard: u32) -> bool {
        self.held_until(shard)
            .is_some_and(|until| Instant::now() < until)
    }

    pub(crate) fn held_until(&self, shard: u32) -> Option<Instant> {
        self.held
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&shard)
            .copied()
    }

    /// The shards held now.
    pub fn held(&self) -> BTreeSet<u32> {
        let now = Instant::now();
        self.held
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(_, until)| now < **until)
            .map(|(shard, _)| *shard)
            .collect()
    }

    /// Shards as this replica takes them, so their objects are reconciled.
    pub fn subscribe(&self) -> UnboundedReceiver<u32> {
        self.taken.subscribe()
    }

    /// Holds `shard` until `until`: taking it, or renewing the hold.
    pub(crate) fn hold(&self, shard: u32, until: Instant) {
        let now = Instant::now();
        let taken = self
            .held
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(shard, until)
            .is_none_or(|before| before <= now);
        if taken {
            self.taken.send(&shard);
        }
    }

    /// Stops reconciling `shard`'s objects: reconciles already running stop
    /// writing, and those waiting on [`Reconciling::lost`] end.
    pub(crate) fn stop(&self, shard: u32) {
        self.held
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&shard);
        self.stopped.notify_waiters();
    }

    /// Waits until no reconcile of `shard` runs, or `patience` passes.
    pub(crate) async fn settled(&self, shard: u32, patience: Duration) {
        let Some(running) = usize::try_from(shard)
            .ok()
            .and_then(|i| self.running.get(i))
        else {
            return;
        };
        let until = Instant::now() + patience;
        while running.load(Ordering::Acquire) > 0 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Runs `reconcile` of `object` when this replica reconciles it: always
/// when objects are not sharded; when its shard is held here, until the
/// reconcile ends or the shard is lost, whichever comes first (a reconcile
/// cut short by a lost shard ends `skipped`: the shard's new holder
/// reconciles the object); `skipped` when another replica holds its shard.
pub async fn admitted<E>(
    shards: Option<&Shards>,
    object: &DynamicObject,
    reconcile: impl Future<Output = Result<(Action, ReconcileResult), E>>,
) -> Result<(Action, ReconcileResult), E> {
    let Some(shards) = shards else {
        return reconcile.await;
    };
    let Some(reconciling) = shards.enter(object.metadata.uid.as_deref().unwrap_or_default()) else {
        return Ok((Action::await_change(), ReconcileResult::Skipped));
    };
    tokio::select! {
        biased;
        () = reconciling.lost() => {
            tracing::warn!(
                object = object.metadata.name.as_deref().unwrap_or_default(),
                shard = reconciling.shard,
                "shard lost during the reconcile: stopped it"
            );
            Ok((Action::await_change(), ReconcileResult::Skipped))
        }
        reconciled = reconcile => reconciled,
    }
}

/// What lets a reconcile's writes go ahead: that this replica still holds
/// the shard of the object being reconciled. A reconcile's pipeline runs on
/// a blocking thread that outlives the reconcile when [`admitted`] cuts it
/// short, so its writes check for themselves ([`Fenced`]).
#[derive(Clone)]
pub struct ShardFence {
    shards: Arc<Shards>,
    shard: u32,
}

impl ShardFence {
    /// The fence of the object with `uid`; `None` when objects are not sharded.
    pub fn of(shards: Option<&Arc<Shards>>, uid: &str) -> Option<ShardFence> {
        shards.map(|shards| ShardFence {
            shard: shard_of(uid, shards.count),
            shards: shards.clone(),
        })
    }

    fn check(&self) -> Result<(), ClusterError> {
        match self.shards.holds(self.shard) {
            true => Ok(()),
            false => Err(ClusterError::Other(format!(
                "shard {} is no longer held by this replica; the write was not sent",
                self.shard
            ))),
        }
    }
}

/// A cluster whose writes go ahead only while its fence (if any) holds.
pub struct Fenced<'a> {
    pub cluster: &'a dyn Cluster,
    pub fence: Option<&'a ShardFence>,
}

impl Forwarding for Fenced<'_> {
    fn inner(&self) -> &dyn Cluster {
        self.cluster
    }

    fn before_write(&self) -> Result<(), ClusterError> {
        self.fence.map_or(Ok(()), ShardFence::check)
    }
}

/// The objects of `store` to reconcile as this replica takes their shards:
/// none when objects are not sharded.
pub fn shard_taken(
    shards: Option<&Shards>,
    store: Store<DynamicObject>,
    resource: ApiResource,
) -> BoxStream<'static, ObjectRef<DynamicObject>> {
    let Some(shards) = shards else {
        return futures::stream::empty().boxed();
    };
    let count = shards.count();
    shards
        .subscribe()
        .flat_map(move |shard| {
            let objects: Vec<ObjectRef<DynamicObject>> = store
                .state()
                .iter()
                .filter(|o| {
                    o.metadata
                        .uid
                        .as_deref()
                        .is_some_and(|uid| shard_of(uid, count) == shard)
                })
                .map(|o| ObjectRef::from_obj_with(o.as_ref(), resource.clone()))
                .collect();
            futures::stream::iter(objects)
        })
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::coordination::v1::Lease;

    #[test]
    fn objects_spread_over_shards_stably() {
        let mut per_shard = [0usize; 4];
        for i in 0..4000 {
            let uid = format!("5c1f0d2e-0000-4000-8000-{i:012}");
            let shard = shard_of(&uid, 4);
            assert_eq!(shard, shard_of(&uid, 4), "stable");
            per_shard[shard as usize] += 1;
        }
        for (shard, n) in per_shard.iter().enumerate() {
            assert!((800..1200).contains(n), "shard {shard} got {n} of 4000");
        }
        assert_eq!(shard_of("anything", 1), 0);
        assert_eq!(shard_of("anything", 0), 0);
    }

    /// A UID of an object in `shard` of `count`.
    fn uid_in(shard: u32, count: u32) -> String {
        (0..)
            .map(|i| format!("uid-{i}"))
            .find(|u| shard_of(u, count) == shard)
            .unwrap_or_default()
    }

    fn object(uid: &str) -> DynamicObject {
        let mut object = DynamicObject::new("xr", &ApiResource::erase::<Lease>(&()));
        object.metadata.uid = Some(uid.into());
        object
    }

    const HOLD: Duration = Duration::from_secs(10);

    #[tokio::test(start_paused = true)]
    async fn only_held_shards_admit_reconciles_and_they_are_counted_while_they_run() {
        let shards = Shards::new(2);
        let (a, b) = (uid_in(0, 2), uid_in(1, 2));
        assert!(shards.enter(&a).is_none(), "nothing held yet");
        shards.hold(0, Instant::now() + HOLD);
        let running = shards.enter(&a);
        assert!(running.is_some());
        assert!(shards.enter(&b).is_none(), "shard 1 is another replica's");
        assert_eq!(shards.running[0].load(Ordering::Acquire), 1);
        drop(running);
        assert_eq!(shards.running[0].load(Ordering::Acquire), 0);
        assert_eq!(
            shards.running[1].load(Ordering::Acquire),
            0,
            "refused ones are not counted"
        );
        shards.stop(0);
        assert!(shards.enter(&a).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_hold_ends_at_its_deadline_unless_renewed() {
        let shards = Shards::new(1);
        let uid = uid_in(0, 1);
        shards.hold(0, Instant::now() + HOLD);
        tokio::time::advance(HOLD / 2).await;
        assert!(shards.holds_object(&uid));
        shards.hold(0, Instant::now() + HOLD);
        tokio::time::advance(HOLD / 2 + Duration::from_secs(1)).await;
        assert!(shards.holds_object(&uid), "renewed half-way");
        tokio::time::advance(HOLD).await;
        assert!(!shards.holds_object(&uid), "not renewed since");
        assert!(shards.held().is_empty());
        assert!(shards.enter(&uid).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_reconcile_is_cut_short_when_its_shard_is_lost_and_ends_skipped() {
        // (how long the shard is held, whether it is given up a quarter of
        // the way through, how the reconcile ends)
        let cases = [
            (HOLD, false, ReconcileResult::Success),
            (HOLD, true, ReconcileResult::Skipped),
            // The hold ends, unrenewed, before the reconcile does.
            (HOLD / 4, false, ReconcileResult::Skipped),
        ];
        for (hold, given_up, want) in cases {
            let shards = Shards::new(1);
            shards.hold(0, Instant::now() + hold);
            let object = object(&uid_in(0, 1));
            let reconcile = async {
                tokio::time::sleep(HOLD / 2).await;
                Ok::<_, ()>((Action::await_change(), ReconcileResult::Success))
            };
            let giving_up = async {
                if given_up {
                    tokio::time::sleep(HOLD / 4).await;
                    shards.stop(0);
                }
            };
            let (admitted, ()) =
                futures::join!(admitted(Some(&shards), &object, reconcile), giving_up);
            assert_eq!(
                admitted.map(|(_, result)| result),
                Ok(want),
                "held {hold:?}, given up: {given_up}"
            );
            assert_eq!(shards.running[0].load(Ordering::Acquire), 0);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_fenced_cluster_refuses_writes_once_the_shard_is_lost_but_still_reads() {
        let shards = Arc::new(Shards::new(1));
        shards.hold(0, Instant::now() + HOLD);
        let memory = plait_reconcile::MemoryCluster::new();
        let fence = ShardFence::of(Some(&shards), &uid_in(0, 1));
        let fenced = Fenced {
            cluster: &memory,
            fence: fence.as_ref(),
        };
        let config_map = |name: &str| {
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": name, "namespace": "ns"}})
        };
        let reference = |name: &str| plait_reconcile::ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("ns".into()),
            name: name.into(),
        };
        assert!(fenced.apply(&config_map("held"), "plait").is_ok());
        shards.stop(0);
        let refused = fenced.apply(&config_map("lost"), "plait");
        assert!(
            refused
                .as_ref()
                .is_err_and(|e| e.to_string().contains("shard 0 is no longer held")),
            "{refused:?}"
        );
        assert!(fenced.apply_status(&config_map("held"), "plait").is_err());
        assert!(fenced.delete(&reference("held"), None).is_err());
        assert!(matches!(fenced.get(&reference("held")), Ok(Some(_))));
        assert_eq!(memory.objects().len(), 1, "only the write made while held");

        let unsharded = Fenced {
            cluster: &memory,
            fence: None,
        };
        assert!(unsharded.apply(&config_map("unsharded"), "plait").is_ok());
    }
}
