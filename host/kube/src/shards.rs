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
//! An object is never reconciled by two replicas at once: a replica stops
//! reconciling a shard's objects before it lets the shard's Lease go, waits
//! for the reconciles already running, and treats a shard whose Lease it
//! could not renew within the renew deadline as lost, which is before any
//! other replica may take it (the lease duration is longer).

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use futures::stream::BoxStream;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::runtime::reflector::{ObjectRef, Store};
use tokio::time::Instant;

use crate::leader::{Elector, LeaderElection, LeaderError};

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

/// The shards this replica holds, and the reconciles running in each.
pub struct Shards {
    count: u32,
    held: RwLock<BTreeSet<u32>>,
    running: Vec<AtomicUsize>,
    subscribers: Mutex<Vec<UnboundedSender<u32>>>,
}

/// A reconcile of an object of a held shard; the shard is not handed back
/// while it lasts.
pub struct Reconciling<'a> {
    running: &'a AtomicUsize,
}

impl Drop for Reconciling<'_> {
    fn drop(&mut self) {
        self.running.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Shards {
    pub fn new(count: u32) -> Shards {
        let count = count.max(1);
        Shards {
            count,
            held: RwLock::default(),
            running: (0..count).map(|_| AtomicUsize::new(0)).collect(),
            subscribers: Mutex::default(),
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
        let reconciling = Reconciling { running };
        self.holds(shard).then_some(reconciling)
    }

    /// Whether the shard of the object with `uid` is held here.
    pub fn holds_object(&self, uid: &str) -> bool {
        self.holds(shard_of(uid, self.count))
    }

    pub fn holds(&self, shard: u32) -> bool {
        self.held
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&shard)
    }

    pub fn held(&self) -> BTreeSet<u32> {
        self.held
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Shards as this replica takes them, so their objects are reconciled.
    pub fn subscribe(&self) -> UnboundedReceiver<u32> {
        let (sender, receiver) = unbounded();
        self.subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(sender);
        receiver
    }

    fn take(&self, shard: u32) {
        self.held
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(shard);
        self.subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|subscriber| subscriber.unbounded_send(shard).is_ok());
    }

    /// Stops reconciling `shard`'s objects; reconciles already running go on.
    fn stop(&self, shard: u32) {
        self.held
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&shard);
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

/// Whether this replica reconciles an object now.
pub enum Admission<'a> {
    /// Objects are not sharded.
    Unsharded,
    /// Its shard is held here; the shard is not handed back while this lasts.
    Held { _reconciling: Reconciling<'a> },
    /// Another replica's shard holds it.
    Elsewhere,
}

/// The admission of `object` by `shards` (`None`: objects are not sharded).
pub fn admit<'a>(shards: Option<&'a Shards>, object: &DynamicObject) -> Admission<'a> {
    let Some(shards) = shards else {
        return Admission::Unsharded;
    };
    match shards.enter(object.metadata.uid.as_deref().unwrap_or_default()) {
        Some(reconciling) => Admission::Held {
            _reconciling: reconciling,
        },
        None => Admission::Elsewhere,
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
    let mut renewed: HashMap<u32, Instant> = HashMap::new();
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
            let Some(elector) = electors.get_mut(shard as usize) else {
                continue;
            };
            let last = renewed.get(&shard).copied().unwrap_or_else(Instant::now);
            let deadline = last + config.renew_deadline;
            match tokio::time::timeout_at(deadline, elector.try_acquire_or_renew()).await {
                Ok(Ok(true)) => {
                    renewed.insert(shard, Instant::now());
                }
                outcome => {
                    if Instant::now() >= deadline {
                        tracing::error!(
                            shard,
                            ?outcome,
                            "lost the shard: its Lease could not be renewed within the renew deadline"
                        );
                        shards.stop(shard);
                        renewed.remove(&shard);
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
            renewed.remove(&shard);
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
            if let Ok(true) = elector.try_acquire_or_renew().await {
                tracing::info!(shard, share, live = live_count, "took a shard");
                renewed.insert(shard, Instant::now());
                shards.take(shard);
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

    #[test]
    fn only_held_shards_admit_reconciles_and_they_are_counted_while_they_run() {
        let shards = Shards::new(2);
        let (a, b) = (
            (0..)
                .map(|i| format!("uid-{i}"))
                .find(|u| shard_of(u, 2) == 0)
                .unwrap_or_default(),
            (0..)
                .map(|i| format!("uid-{i}"))
                .find(|u| shard_of(u, 2) == 1)
                .unwrap_or_default(),
        );
        assert!(shards.enter(&a).is_none(), "nothing held yet");
        shards.take(0);
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
