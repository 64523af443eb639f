//! XRs spread over replicas by shard. With `--shards N` every replica runs
//! every controller, but reconciles only the XRs (and claims) of the shards
//! it holds: an object belongs to shard `fnv1a(uid) % N`, and each shard is
//! a `coordination.k8s.io` Lease (`plait-shard-<i>`) held with client-go's
//! algorithm (`leader.rs`). Each replica also renews a member Lease of its
//! own, so every replica knows how many are alive and holds at most its fair
//! share, `ceil(N / live members)`: it takes free or expired shards up to
//! that share and hands back the ones above it, so a new replica gets work
//! and a dead one's shards are taken over once their Leases expire.
//!
//! An object is never reconciled by two replicas at once: a replica holds a
//! shard until the renew deadline after its last successful renewal
//! attempt, which is before any other replica may take it (the lease
//! duration is longer, and runs from when that replica saw the Lease
//! change). While the hold lasts the shard's reconciles run; when it ends
//! (handed back, or not renewed in time) they are cut short and their
//! writes refused, and a shard handed back is released only once its
//! reconciles have ended.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc::UnboundedReceiver;
use futures::stream::BoxStream;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use plait_reconcile::{Cluster, ClusterError, Event};
use serde_json::Value;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::leader::{Elector, LeaderElection, LeaderError};
use crate::vocabulary::broadcast::Broadcast;
use crate::vocabulary::metrics::ReconcileResult;

const SHARD_PREFIX: &str = "plait-shard-";
const MEMBER_PREFIX: &str = "plait-member-";

/// How many shards, where their Leases live, who this replica is, and
/// client-go's three durations.
#[derive(Debug, Clone)]
pub struct Sharding {
    pub count: u32,
    pub election: LeaderElection,
}

impl Sharding {
    /// `count` shards with Leases in `namespace`, held as `identity`, with
    /// client-go's default durations.
    pub fn new(count: u32, namespace: &str, identity: &str) -> Sharding {
        Sharding {
            count: count.max(1),
            election: LeaderElection::new(namespace, "", identity),
        }
    }

    /// Refuses durations client-go's algorithm cannot honour.
    pub fn check(&self) -> Result<(), LeaderError> {
        self.election.check()
    }

    fn lease(&self, name: String) -> LeaderElection {
        LeaderElection {
            name,
            ..self.election.clone()
        }
    }
}

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

    fn held_until(&self, shard: u32) -> Option<Instant> {
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
    fn hold(&self, shard: u32, until: Instant) {
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
    fn stop(&self, shard: u32) {
        self.held
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&shard);
        self.stopped.notify_waiters();
    }

    /// Waits until no reconcile of `shard` runs, or `patience` passes.
    async fn settled(&self, shard: u32, patience: Duration) {
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

impl Fenced<'_> {
    fn check(&self) -> Result<(), ClusterError> {
        self.fence.map_or(Ok(()), ShardFence::check)
    }
}

impl Cluster for Fenced<'_> {
    fn get(&self, object: &plait_reconcile::ObjectRef) -> Result<Option<Value>, ClusterError> {
        self.cluster.get(object)
    }

    fn list(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        labels: &BTreeMap<String, String>,
    ) -> Result<Vec<Value>, ClusterError> {
        self.cluster.list(api_version, kind, namespace, labels)
    }

    fn apply(&self, object: &Value, field_manager: &str) -> Result<Value, ClusterError> {
        self.check()?;
        self.cluster.apply(object, field_manager)
    }

    fn apply_status(&self, object: &Value, field_manager: &str) -> Result<Value, ClusterError> {
        self.check()?;
        self.cluster.apply_status(object, field_manager)
    }

    fn observe(&self, object: &plait_reconcile::ObjectRef) -> Result<Option<Value>, ClusterError> {
        self.cluster.observe(object)
    }

    fn applied_unchanged(&self, object: &Value, observed: &Value, field_manager: &str) -> bool {
        self.cluster
            .applied_unchanged(object, observed, field_manager)
    }

    fn delete(
        &self,
        object: &plait_reconcile::ObjectRef,
        uid: Option<&str>,
    ) -> Result<(), ClusterError> {
        self.check()?;
        self.cluster.delete(object, uid)
    }

    fn is_namespaced(&self, api_version: &str, kind: &str) -> Result<Option<bool>, ClusterError> {
        self.cluster.is_namespaced(api_version, kind)
    }

    fn schema(&self, api_version: &str, kind: &str) -> Result<Option<Value>, ClusterError> {
        self.cluster.schema(api_version, kind)
    }

    fn record_event(&self, event: Event) {
        self.cluster.record_event(event);
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

/// The most shards one of `members` live replicas holds.
pub fn fair_share(count: u32, members: usize) -> usize {
    let members = members.max(1);
    usize::try_from(count)
        .unwrap_or(usize::MAX)
        .div_ceil(members)
}

/// When each member Lease was last seen to change, to count the live ones
/// by this replica's clock alone.
#[derive(Default)]
struct Members {
    seen: HashMap<String, Seen>,
}

struct Seen {
    holder: Option<String>,
    renewed: Option<String>,
    changed: Instant,
}

impl Members {
    fn observe(&mut self, leases: &[Lease], now: Instant) {
        for lease in leases {
            let Some(name) = lease.metadata.name.clone() else {
                continue;
            };
            let spec = lease.spec.as_ref();
            let renewed = spec
                .and_then(|s| s.renew_time.as_ref())
                .map(|t| t.0.to_string());
            let holder = spec
                .and_then(|s| s.holder_identity.clone())
                .filter(|h| !h.is_empty());
            let changed = self
                .seen
                .get(&name)
                .is_none_or(|seen| seen.renewed != renewed);
            if changed {
                self.seen.insert(
                    name,
                    Seen {
                        holder,
                        renewed,
                        changed: now,
                    },
                );
            }
        }
        let names: BTreeSet<&str> = leases
            .iter()
            .filter_map(|l| l.metadata.name.as_deref())
            .collect();
        self.seen.retain(|name, _| names.contains(name.as_str()));
    }

    /// The identities of the members whose Leases changed within `lease_duration`.
    fn live_identities(&self, lease_duration: Duration, now: Instant) -> BTreeSet<String> {
        self.seen
            .values()
            .filter(|seen| now.duration_since(seen.changed) < lease_duration)
            .filter_map(|seen| seen.holder.clone())
            .collect()
    }
}

/// The name of the member Lease of `identity`: a hash, since an identity
/// need not be a valid object name.
fn member_lease(identity: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(identity.as_bytes());
    format!("{MEMBER_PREFIX}{}", &hex::encode(digest)[..16])
}

/// Holds this replica's fair share of shards until `stop` resolves, then
/// hands them all back.
pub async fn run(
    client: Client,
    sharding: Sharding,
    shards: Arc<Shards>,
    stop: impl Future<Output = ()>,
) -> Result<(), LeaderError> {
    let config = &sharding.election;
    sharding.check()?;
    let mut member = Elector::new(
        sharding.lease(member_lease(&config.identity)),
        client.clone(),
    );
    let mut electors: Vec<Elector> = (0..sharding.count)
        .map(|i| Elector::new(sharding.lease(format!("{SHARD_PREFIX}{i}")), client.clone()))
        .collect();
    let mut members = Members::default();
    let leases: Api<Lease> = Api::namespaced(client, &config.namespace);
    tokio::pin!(stop);
    loop {
        if let Err(e) = member.try_acquire_or_renew().await {
            tracing::warn!(error = %e, "cannot renew this replica's member Lease");
        }
        let listed = match leases.list(&ListParams::default()).await {
            Ok(list) => list.items,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list the shard and member Leases");
                Vec::new()
            }
        };
        let (member_leases, shard_leases): (Vec<Lease>, Vec<Lease>) = listed
            .into_iter()
            .filter(|l| {
                l.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with(MEMBER_PREFIX) || n.starts_with(SHARD_PREFIX))
            })
            .partition(|l| {
                l.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with(MEMBER_PREFIX))
            });
        members.observe(&member_leases, Instant::now());
        let live = members.live_identities(config.lease_duration, Instant::now());
        // This replica counts itself even before its own Lease is listed.
        let live_count = live.len().max(1);
        let share = fair_share(sharding.count, live_count);
        let floor = usize::try_from(sharding.count).unwrap_or(usize::MAX) / live_count;
        let mut holding: HashMap<String, usize> = live.iter().map(|m| (m.clone(), 0)).collect();
        for lease in &shard_leases {
            if let Some(holder) = lease.spec.as_ref().and_then(|s| s.holder_identity.as_ref())
                && let Some(n) = holding.get_mut(holder)
            {
                *n += 1;
            }
        }
        let starving = holding
            .iter()
            .any(|(member, n)| member != &config.identity && *n < floor);

        for shard in shards.held() {
            let (Some(elector), Some(deadline)) =
                (electors.get_mut(shard as usize), shards.held_until(shard))
            else {
                continue;
            };
            let attempt = Instant::now();
            match tokio::time::timeout_at(deadline, elector.try_acquire_or_renew()).await {
                Ok(Ok(true)) => shards.hold(shard, attempt + config.renew_deadline),
                outcome => {
                    if Instant::now() >= deadline {
                        tracing::error!(
                            shard,
                            ?outcome,
                            "lost the shard: its Lease could not be renewed within the renew deadline"
                        );
                        shards.stop(shard);
                    }
                }
            }
        }
        let held = shards.held();
        // Above the fair share, or at it while another replica has less
        // than its floor: hand back what evens the replicas out.
        let extra = if held.len() > share {
            held.len() - share
        } else {
            usize::from(starving && held.len() > floor)
        };
        for &shard in held.iter().rev().take(extra) {
            tracing::info!(
                shard,
                share,
                live = live_count,
                "handing a shard back to even out the replicas"
            );
            shards.stop(shard);
            shards.settled(shard, config.renew_deadline).await;
            if let Some(elector) = electors.get(shard as usize) {
                elector.release().await;
            }
        }
        // While another replica is below its floor, take no more than ours.
        let target = if starving { floor } else { share };
        for shard in 0..sharding.count {
            if shards.held().len() >= target {
                break;
            }
            if shards.holds(shard) {
                continue;
            }
            let Some(elector) = electors.get_mut(shard as usize) else {
                continue;
            };
            let attempt = Instant::now();
            if let Ok(true) = elector.try_acquire_or_renew().await {
                tracing::info!(shard, share, live = live_count, "took a shard");
                shards.hold(shard, attempt + config.renew_deadline);
            }
        }

        tokio::select! {
            _ = &mut stop => break,
            _ = tokio::time::sleep(config.retry_period) => {}
        }
    }
    for shard in shards.held() {
        shards.stop(shard);
        shards.settled(shard, config.renew_deadline).await;
        if let Some(elector) = electors.get(shard as usize) {
            elector.release().await;
        }
    }
    member.release().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn each_replica_holds_at_most_its_fair_share() {
        // (shards, live members, share)
        let cases = [
            (4, 1, 4),
            (4, 2, 2),
            (4, 3, 2),
            (4, 4, 1),
            (4, 5, 1),
            (3, 0, 3),
        ];
        for (count, members, share) in cases {
            assert_eq!(fair_share(count, members), share, "{count} over {members}");
        }
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

    #[test]
    fn a_member_is_live_while_its_lease_keeps_changing() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
        let lease = |name: &str, renewed: i64| Lease {
            metadata: kube::api::ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            spec: Some(k8s_openapi::api::coordination::v1::LeaseSpec {
                holder_identity: Some(format!("replica-{name}")),
                renew_time: Some(MicroTime(
                    k8s_openapi::jiff::Timestamp::from_second(renewed).unwrap_or_default(),
                )),
                ..Default::default()
            }),
        };
        let start = Instant::now();
        let duration = Duration::from_secs(15);
        let mut members = Members::default();
        members.observe(&[lease("a", 1), lease("b", 1)], start);
        assert_eq!(members.live_identities(duration, start).len(), 2);
        let later = start + Duration::from_secs(10);
        members.observe(&[lease("a", 2), lease("b", 1)], later);
        // b has not changed for 16 s by our clock; a changed 6 s ago.
        let after = start + Duration::from_secs(16);
        assert_eq!(
            members.live_identities(duration, after),
            BTreeSet::from(["replica-a".to_string()])
        );
        members.observe(&[lease("a", 3)], after);
        assert_eq!(members.seen.len(), 1, "deleted Leases are forgotten");
    }
}
