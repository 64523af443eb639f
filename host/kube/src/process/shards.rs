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
//! writes refused (`clusters/fence.rs`), and a shard handed back is released only once its
//! reconciles have ended.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Client;
use kube::api::{Api, ListParams};
use tokio::time::Instant;

use crate::clusters::fence::Shards;
use crate::process::leader::{Elector, LeaderElection, LeaderError};

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

/// The member Leases and the shard Leases, as listed now; none when they
/// cannot be listed.
async fn member_and_shard_leases(leases: &Api<Lease>) -> (Vec<Lease>, Vec<Lease>) {
    let listed = match leases.list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(e) => {
            tracing::warn!(error = %e, "cannot list the shard and member Leases");
            Vec::new()
        }
    };
    let name_starts = |lease: &Lease, prefix: &str| {
        lease
            .metadata
            .name
            .as_deref()
            .is_some_and(|n| n.starts_with(prefix))
    };
    listed
        .into_iter()
        .filter(|l| name_starts(l, MEMBER_PREFIX) || name_starts(l, SHARD_PREFIX))
        .partition(|l| name_starts(l, MEMBER_PREFIX))
}

/// Renews the Lease of every shard held; a shard whose Lease could not be
/// renewed by its deadline is lost.
async fn renew_held(shards: &Shards, electors: &mut [Elector], renew_deadline: Duration) {
    for shard in shards.held() {
        let (Some(elector), Some(deadline)) =
            (electors.get_mut(shard as usize), shards.held_until(shard))
        else {
            continue;
        };
        let attempt = Instant::now();
        match tokio::time::timeout_at(deadline, elector.try_acquire_or_renew()).await {
            Ok(Ok(true)) => shards.hold(shard, attempt + renew_deadline),
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
        let (member_leases, shard_leases) = member_and_shard_leases(&leases).await;
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

        renew_held(&shards, &mut electors, config.renew_deadline).await;
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
