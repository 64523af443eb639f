//! Sharing the function-call slots fairly between tenants.
//!
//! At most `slots` calls run at once. When a slot frees, it goes to the
//! waiting tenant that has used the least guest time (weighted by its
//! throttle), so a tenant whose functions loop until their deadline, or who
//! has ten times more XRs, gets no more than its share of the time while
//! others wait. A tenant that was idle starts from the least usage among the
//! tenants now active (as a fair scheduler's virtual time), so past idleness
//! earns no burst and past heavy use no starvation.
//!
//! Three rules keep pipelines moving:
//! - Within a tenant, calls are served in the order they asked: no call
//!   waits behind a later one of its own tenant.
//! - A pipeline that has already made a call is not sent to the back: its
//!   next call waits ahead of every tenant's first calls
//!   ([`Rank::Continuing`]), and the slot its call just left stays its own
//!   for a short grace ([`Turn::park`]) while it moves on to its next step,
//!   so a freed slot does not go to another tenant's long call in the moment
//!   between two steps.
//! - A call that has run for [`QUANTUM`] gives its slot to a waiting call
//!   of a tenant that has used less ([`Turn::give_way`]) and waits for a
//!   slot again as a continuing call: a long call does not hold a slot for
//!   its whole deadline while lighter tenants wait. The runtime pauses the
//!   guest at an epoch tick to do so, and its deadline counts only the time
//!   it runs.
//! - A tenant whose calls keep reaching their deadline is charged more for
//!   the time it uses: its throttle doubles with each such call (up to
//!   [`MAX_THROTTLE`]) and halves with each call that ends in time, so its
//!   share shrinks while it fails.

use plait_pipeline::Tenant;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How much more a failing tenant's time can count than an ordinary one's.
pub const MAX_THROTTLE: u32 = 16;

/// How far behind the least-served active tenant a tenant returning from
/// a pause may start: what it saved by using less is kept up to this, so a
/// light tenant whose calls come in bursts stays ahead of a heavy one, and
/// no tenant earns more than this by being idle.
pub const MAX_LEAD: Duration = Duration::from_secs(1);

/// How long a slot freed by a lighter tenant waits at least for that
/// tenant's next call before it goes to a heavier tenant's: the lighter
/// tenant's reconciles call in quick succession, the heavier tenant's call
/// may hold the slot for a whole deadline. The wait grows to a fifth of the
/// heavier tenant's recent calls ([`MAX_TENANT_GRACE`] at most), so what
/// the heavier tenant loses stays a small part of what it would take.
pub const TENANT_GRACE: Duration = Duration::from_millis(50);
/// The longest a freed slot waits for a lighter tenant's next call.
pub const MAX_TENANT_GRACE: Duration = Duration::from_secs(1);

/// How long a call runs at least before it gives way to a lighter
/// tenant's call: long enough that switching costs little, short enough
/// that a lighter tenant's call hardly waits.
pub const QUANTUM: Duration = Duration::from_millis(50);

/// How long an idle tenant's usage is remembered.
const FORGET_AFTER: Duration = Duration::from_secs(60);

/// How many calls run at once, overall and per tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareLimits {
    /// Calls at once over every tenant (at least one).
    pub slots: usize,
    /// Calls at once of one tenant; `None`: as many as there are slots.
    pub per_tenant: Option<usize>,
}

/// Where a call waits among the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rank {
    /// A later call of a pipeline that has already made one: served before
    /// any first call.
    Continuing,
    /// The first call of a pipeline.
    First,
}

/// Told when a call has to wait for a slot and when it stops waiting, so
/// whatever the caller holds that others need can be lent out meanwhile.
pub trait WaitNotice: Send + Sync {
    /// The call found no slot free for it and waits.
    fn waiting(&self);
    /// The call stopped waiting: it has a slot, or gave up.
    fn resumed(&self);
}

/// The slots and what each tenant has used.
pub struct FairShare {
    limits: ShareLimits,
    state: Mutex<State>,
    freed: Condvar,
}

#[derive(Default)]
struct State {
    /// Slots taken: running calls, parked ones and kept ones.
    taken: usize,
    next_ticket: u64,
    tenants: HashMap<Tenant, Account>,
    /// Throttles above 1, by tenant; kept while the tenant is idle.
    throttles: HashMap<Tenant, u32>,
    /// Slots a lighter tenant freed, kept for its next call until their grace ends.
    kept: Vec<(Tenant, Instant)>,
    /// Tickets of waiting calls that a call giving way handed its slot to.
    handed: Vec<u64>,
}

#[derive(Default)]
struct Account {
    /// Weighted time used.
    used: Duration,
    /// How long its recent calls held a slot (a moving average).
    recent_call: Duration,
    /// Since when the tenant has had no call waiting or running.
    idle_since: Option<Instant>,
    /// Waiting calls, served in (rank, ticket) order.
    waiting: BTreeSet<(Rank, u64)>,
    /// Slots held, by ticket: when the holder started, and until when it is
    /// parked (`None` while its call runs).
    holding: HashMap<u64, Held>,
}

#[derive(Clone, Copy)]
struct Held {
    since: Instant,
    parked_until: Option<Instant>,
}

impl Account {
    fn is_active(&self) -> bool {
        !self.waiting.is_empty() || !self.holding.is_empty()
    }

    /// Notes when the tenant has nothing waiting or running any more.
    fn went_idle(&mut self, now: Instant) {
        if !self.is_active() && self.idle_since.is_none() {
            self.idle_since = Some(now);
        }
    }
}

impl State {
    fn throttle(&self, tenant: &Tenant) -> u32 {
        self.throttles.get(tenant).copied().unwrap_or(1)
    }

    /// What `tenant` has used, its held slots included, weighted by its throttle.
    fn usage(&self, name: &Tenant, tenant: &Account, now: Instant) -> Duration {
        let holding: Duration = tenant
            .holding
            .values()
            .map(|held| now.saturating_duration_since(held.since))
            .sum();
        tenant.used + holding.saturating_mul(self.throttle(name))
    }

    /// The least usage among active tenants: where a newly active tenant starts.
    fn floor(&self, now: Instant) -> Duration {
        self.tenants
            .iter()
            .filter(|(_, t)| t.is_active())
            .map(|(name, t)| self.usage(name, t, now))
            .min()
            .unwrap_or_default()
    }

    /// The waiting call to serve next: the first of the tenant whose first
    /// waiting call has the best rank, then the least usage, then the
    /// earliest ticket; tenants at their own limit are passed over.
    fn next(&self, limits: ShareLimits, now: Instant) -> Option<(Tenant, u64)> {
        self.tenants
            .iter()
            .filter(|(_, t)| limits.per_tenant.is_none_or(|cap| t.holding.len() < cap))
            .filter_map(|(name, t)| {
                let (rank, ticket) = *t.waiting.first()?;
                Some(((rank, self.usage(name, t, now), ticket), name))
            })
            .min_by_key(|(key, _)| *key)
            .map(|((_, _, ticket), name)| (name.clone(), ticket))
    }

    /// The first waiting call of the tenant other than `tenant` that has
    /// used the least, if it has used less than `tenant`: the call a call
    /// of `tenant` gives its slot to.
    fn lighter_waiting(&self, tenant: &Tenant, limits: ShareLimits, now: Instant) -> Option<u64> {
        let mine = self.usage(tenant, self.tenants.get(tenant)?, now);
        self.tenants
            .iter()
            .filter(|(name, _)| *name != tenant)
            .filter(|(_, t)| limits.per_tenant.is_none_or(|cap| t.holding.len() < cap))
            .filter_map(|(name, t)| {
                let (_, ticket) = *t.waiting.first()?;
                Some((self.usage(name, t, now), ticket))
            })
            .filter(|(usage, _)| *usage < mine)
            .min()
            .map(|(_, ticket)| ticket)
    }

    /// Whether the running call `ticket` of `tenant` gives its slot away
    /// at `now`: it has run for [`QUANTUM`], every slot is taken (a free
    /// one serves the waiting call without it), and a waiting call of
    /// another tenant that has used less can take the slot.
    fn gives_way(&self, tenant: &Tenant, ticket: u64, limits: ShareLimits, now: Instant) -> bool {
        let ran = self
            .tenants
            .get(tenant)
            .and_then(|t| t.holding.get(&ticket))
            .is_some_and(|held| {
                held.parked_until.is_none() && now.saturating_duration_since(held.since) >= QUANTUM
            });
        ran && self.taken >= limits.slots && self.lighter_waiting(tenant, limits, now).is_some()
    }

    /// Frees the slots whose parking grace ran out; returns the earliest
    /// grace still running.
    fn reap(&mut self, now: Instant) -> Option<Instant> {
        let mut earliest: Option<Instant> = None;
        let mut freed = 0;
        let mut charges = Vec::new();
        for (name, tenant) in &mut self.tenants {
            tenant.holding.retain(|_, held| match held.parked_until {
                Some(until) if until <= now => {
                    charges.push((name.clone(), until.saturating_duration_since(held.since)));
                    freed += 1;
                    false
                }
                Some(until) => {
                    earliest = Some(earliest.map_or(until, |e| e.min(until)));
                    true
                }
                None => true,
            });
        }
        for (name, held) in charges {
            self.charge(&name, held, now);
        }
        let kept = self.kept.len();
        self.kept.retain(|(_, until)| *until > now);
        freed += kept - self.kept.len();
        if let Some(until) = self.kept.iter().map(|(_, until)| *until).min() {
            earliest = Some(earliest.map_or(until, |e| e.min(until)));
        }
        self.taken = self.taken.saturating_sub(freed);
        self.tenants.retain(|_, t| {
            t.idle_since
                .is_none_or(|idle| now.saturating_duration_since(idle) < FORGET_AFTER)
        });
        earliest
    }

    /// How long a slot `tenant` frees now is kept for its next call: only
    /// when it would go to a heavier tenant's call, for a fifth of that
    /// tenant's recent calls, within [TENANT_GRACE, MAX_TENANT_GRACE].
    fn keep_for(&self, tenant: &Tenant, limits: ShareLimits, now: Instant) -> Option<Duration> {
        let mine = self.tenants.get(tenant)?;
        let (next, _) = self.next(limits, now)?;
        let heavier = self.tenants.get(&next)?;
        (next != *tenant && self.usage(&next, heavier, now) > self.usage(tenant, mine, now))
            .then(|| (heavier.recent_call / 5).clamp(TENANT_GRACE, MAX_TENANT_GRACE))
    }

    /// Counts `held` against `tenant`, weighted.
    fn charge(&mut self, name: &Tenant, held: Duration, now: Instant) {
        let weighted = held.saturating_mul(self.throttle(name));
        if let Some(tenant) = self.tenants.get_mut(name) {
            tenant.used += weighted;
            tenant.recent_call = (tenant.recent_call + held) / 2;
            tenant.went_idle(now);
        }
    }
}

/// A slot taken by one tenant's call; dropping it frees the slot and
/// counts the time it was held against the tenant.
struct Slot {
    share: Arc<FairShare>,
    tenant: Tenant,
    ticket: u64,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.share.release(&self.tenant, self.ticket);
    }
}

/// A held slot; dropping it counts the time it was held against its tenant.
#[must_use = "the slot is held until the turn is dropped or parked"]
pub struct Turn {
    slot: Slot,
}

/// A slot kept for a pipeline between two of its calls, until its grace
/// runs out: [`Parked::resume`] takes it back, dropping it frees it at once.
pub struct Parked {
    slot: Slot,
}

/// How long a call waited for a slot before its deadline passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "waited {waited:?} for one of the {slots} function-call slots, which other tenants' calls held, until the pipeline's time ran out"
)]
pub struct NoTurn {
    pub waited: Duration,
    pub slots: usize,
}

impl FairShare {
    /// At most `slots` calls at once (at least one), any number per tenant.
    pub fn new(slots: usize) -> FairShare {
        FairShare::with_limits(ShareLimits {
            slots,
            per_tenant: None,
        })
    }

    pub fn with_limits(limits: ShareLimits) -> FairShare {
        FairShare {
            limits: ShareLimits {
                slots: limits.slots.max(1),
                per_tenant: limits.per_tenant.map(|n| n.max(1)),
            },
            state: Mutex::new(State::default()),
            freed: Condvar::new(),
        }
    }

    pub fn slots(&self) -> usize {
        self.limits.slots
    }

    pub fn limits(&self) -> ShareLimits {
        self.limits
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How much more `tenant`'s time counts because its calls reached their deadline.
    pub fn throttle(&self, tenant: &Tenant) -> u32 {
        self.lock().throttle(tenant)
    }

    /// Records how a call of `tenant` ended; returns the tenant's new
    /// throttle when this changed it.
    pub fn record(&self, tenant: &Tenant, reached_deadline: bool) -> Option<u32> {
        let mut state = self.lock();
        let was = state.throttle(tenant);
        let now = if reached_deadline {
            (was * 2).min(MAX_THROTTLE)
        } else {
            (was / 2).max(1)
        };
        if now == 1 {
            state.throttles.remove(tenant);
        } else {
            state.throttles.insert(tenant.clone(), now);
        }
        (now != was).then_some(now)
    }

    /// Waits for a slot for `tenant` until `deadline`, as a pipeline's first call.
    pub fn turn(self: &Arc<Self>, tenant: &Tenant, deadline: Instant) -> Result<Turn, NoTurn> {
        self.turn_ranked(tenant, deadline, Rank::First, None)
    }

    /// Waits for a slot for `tenant` until `deadline`, in `rank`; `notice`
    /// hears when the call has to wait and when it stops.
    pub fn turn_ranked(
        self: &Arc<Self>,
        tenant: &Tenant,
        deadline: Instant,
        rank: Rank,
        notice: Option<&dyn WaitNotice>,
    ) -> Result<Turn, NoTurn> {
        let started = Instant::now();
        let mut state = self.lock();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        let floor = state.floor(started);
        let entry = state.tenants.entry(tenant.clone()).or_default();
        if !entry.is_active() {
            entry.used = entry.used.max(floor.saturating_sub(MAX_LEAD));
            entry.idle_since = None;
        }
        entry.waiting.insert((rank, ticket));
        let mut told_waiting = false;
        let mut took_kept = false;
        loop {
            let now = Instant::now();
            let grace_ends = state.reap(now);
            let first_of_tenant =
                state.tenants.get(tenant).and_then(|t| t.waiting.first()) == Some(&(rank, ticket));
            if let Some(at) = state.handed.iter().position(|k| *k == ticket) {
                // A call giving way handed its slot to this one.
                state.handed.swap_remove(at);
                took_kept = true;
                break;
            }
            if first_of_tenant && let Some(at) = state.kept.iter().position(|(t, _)| t == tenant) {
                // The slot kept for this tenant passes to this call.
                state.kept.swap_remove(at);
                took_kept = true;
                break;
            }
            if state.taken < self.limits.slots
                && state
                    .next(self.limits, now)
                    .is_some_and(|(t, k)| k == ticket && t == *tenant)
            {
                break;
            }
            if now >= deadline {
                if let Some(t) = state.tenants.get_mut(tenant) {
                    t.waiting.remove(&(rank, ticket));
                    t.went_idle(now);
                }
                drop(state);
                // Another waiter may be next now that this one left.
                self.freed.notify_all();
                if told_waiting && let Some(notice) = notice {
                    notice.resumed();
                }
                return Err(NoTurn {
                    waited: started.elapsed(),
                    slots: self.limits.slots,
                });
            }
            if !told_waiting && let Some(notice) = notice {
                told_waiting = true;
                // Told without the lock: the notice may wake other work.
                drop(state);
                notice.waiting();
                state = self.lock();
                continue;
            }
            let until = grace_ends.map_or(deadline, |g| g.min(deadline));
            state = self
                .freed
                .wait_timeout(state, until.saturating_duration_since(now))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        if !took_kept {
            state.taken += 1;
        }
        if let Some(t) = state.tenants.get_mut(tenant) {
            t.waiting.remove(&(rank, ticket));
            t.holding.insert(
                ticket,
                Held {
                    since: Instant::now(),
                    parked_until: None,
                },
            );
        }
        drop(state);
        // The next waiter in line may be able to go too.
        self.freed.notify_all();
        if told_waiting && let Some(notice) = notice {
            notice.resumed();
        }
        Ok(Turn {
            slot: Slot {
                share: self.clone(),
                tenant: tenant.clone(),
                ticket,
            },
        })
    }

    /// Frees the slot `ticket` of `tenant` holds, charging its time.
    fn release(&self, tenant: &Tenant, ticket: u64) {
        let mut state = self.lock();
        let held = state
            .tenants
            .get_mut(tenant)
            .and_then(|t| t.holding.remove(&ticket));
        if let Some(held) = held {
            let now = Instant::now();
            state.taken = state.taken.saturating_sub(1);
            state.charge(tenant, now.saturating_duration_since(held.since), now);
            if let Some(grace) = state.keep_for(tenant, self.limits, now) {
                state.taken += 1;
                state.kept.push((tenant.clone(), now + grace));
            }
        }
        drop(state);
        self.freed.notify_all();
    }
}

impl Turn {
    pub fn tenant(&self) -> &Tenant {
        &self.slot.tenant
    }

    /// Whether this call should give its slot to another tenant's: it has
    /// run for [`QUANTUM`], every slot is taken, and a tenant that has used
    /// less than this one waits.
    pub fn should_give_way(&self) -> bool {
        let share = &self.slot.share;
        let mut state = share.lock();
        let now = Instant::now();
        state.reap(now);
        state.gives_way(&self.slot.tenant, self.slot.ticket, share.limits, now)
    }

    /// Hands this turn's slot to the waiting call of the tenant that has
    /// used the least, when it has used less than this one, and waits for a
    /// slot again until `deadline`, as a continuing call; `notice` hears
    /// about the wait. Returns the turn to go on with.
    pub fn give_way(
        self,
        deadline: Instant,
        notice: Option<&dyn WaitNotice>,
    ) -> Result<Turn, NoTurn> {
        let share = self.slot.share.clone();
        let tenant = self.slot.tenant.clone();
        {
            let mut state = share.lock();
            let now = Instant::now();
            let Some(next) = state.lighter_waiting(&tenant, share.limits, now) else {
                return Ok(self);
            };
            let held = state
                .tenants
                .get_mut(&tenant)
                .and_then(|t| t.holding.remove(&self.slot.ticket));
            if let Some(held) = held {
                state.charge(&tenant, now.saturating_duration_since(held.since), now);
                // The slot passes on taken: no other call can take it first.
                state.handed.push(next);
            }
        }
        // The slot no longer holds anything: dropping it frees nothing more.
        drop(self);
        share.freed.notify_all();
        share.turn_ranked(&tenant, deadline, Rank::Continuing, notice)
    }

    /// Keeps the slot for this turn's pipeline for `grace`, for its next call.
    pub fn park(self, grace: Duration) -> Parked {
        let slot = self.slot;
        {
            let mut state = slot.share.lock();
            if let Some(held) = state
                .tenants
                .get_mut(&slot.tenant)
                .and_then(|t| t.holding.get_mut(&slot.ticket))
            {
                held.parked_until = Some(Instant::now() + grace);
            }
        }
        // Waiters sleep until the earliest grace ends.
        slot.share.freed.notify_all();
        Parked { slot }
    }
}

impl Parked {
    /// The slot again, if its grace has not run out; else it is freed.
    pub fn resume(self) -> Option<Turn> {
        let slot = self.slot;
        let resumed = {
            let mut state = slot.share.lock();
            match state
                .tenants
                .get_mut(&slot.tenant)
                .and_then(|t| t.holding.get_mut(&slot.ticket))
            {
                Some(held)
                    if held
                        .parked_until
                        .is_some_and(|until| until > Instant::now()) =>
                {
                    held.parked_until = None;
                    true
                }
                _ => false,
            }
        };
        // Dropping the slot frees it, unless the grace already did.
        resumed.then_some(Turn { slot })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;

    use super::*;

    /// The tenant of namespace `name`.
    fn ns(name: &str) -> Tenant {
        Tenant::Namespace(name.into())
    }

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(30)
    }

    /// Runs `calls` calls of `each` for every tenant at once over `slots`
    /// slots; returns, per tenant, when its last call finished.
    fn race(slots: usize, tenants: &[(&str, usize, Duration)]) -> HashMap<String, Duration> {
        let share = Arc::new(FairShare::new(slots));
        let start = Instant::now();
        let running = Arc::new(AtomicUsize::new(0));
        let mut threads = Vec::new();
        for (tenant, calls, each) in tenants {
            for _ in 0..*calls {
                let (share, running) = (share.clone(), running.clone());
                let (tenant, each) = (tenant.to_string(), *each);
                threads.push(std::thread::spawn(move || {
                    let turn = share.turn(&ns(&tenant), far()).unwrap();
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    assert!(now <= share.slots(), "never more than the slots at once");
                    std::thread::sleep(each);
                    running.fetch_sub(1, Ordering::SeqCst);
                    drop(turn);
                    (tenant, start.elapsed())
                }));
            }
        }
        let mut done: HashMap<String, Duration> = HashMap::new();
        for thread in threads {
            let (tenant, at) = thread.join().unwrap();
            let last = done.entry(tenant).or_default();
            *last = (*last).max(at);
        }
        done
    }

    /// Waits until `share` has `n` calls waiting.
    fn until_waiting(share: &FairShare, n: usize) {
        let started = Instant::now();
        while share
            .lock()
            .tenants
            .values()
            .map(|t| t.waiting.len())
            .sum::<usize>()
            < n
        {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "never {n} waiting"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Starts a thread that waits for a turn of `tenant` in `rank` and
    /// reports `label` on `order` once it has it, holding it for `hold`.
    fn waiter(
        share: &Arc<FairShare>,
        tenant: &str,
        rank: Rank,
        label: &str,
        hold: Duration,
        order: &mpsc::Sender<String>,
    ) -> std::thread::JoinHandle<()> {
        let (share, tenant, label, order) = (
            share.clone(),
            tenant.to_string(),
            label.to_string(),
            order.clone(),
        );
        std::thread::spawn(move || {
            let turn = share.turn_ranked(&ns(&tenant), far(), rank, None).unwrap();
            order.send(label).unwrap();
            std::thread::sleep(hold);
            drop(turn);
        })
    }

    /// A scheduler's state at `now`: `running` calls (tenant, how long it
    /// has run; the first has ticket 0), each tenant's weighted time `used`
    /// before, the tenants whose first calls `wait`, and `throttles`.
    fn scene(
        now: Instant,
        running: &[(&str, Duration)],
        used: &[(&str, Duration)],
        wait: &[&str],
        throttles: &[(&str, u32)],
    ) -> State {
        let mut state = State::default();
        for (tenant, ran) in running {
            let ticket = state.next_ticket;
            state.next_ticket += 1;
            let since = now.checked_sub(*ran).unwrap();
            state.tenants.entry(ns(tenant)).or_default().holding.insert(
                ticket,
                Held {
                    since,
                    parked_until: None,
                },
            );
            state.taken += 1;
        }
        for (tenant, before) in used {
            state.tenants.entry(ns(tenant)).or_default().used = *before;
        }
        for tenant in wait {
            let ticket = state.next_ticket;
            state.next_ticket += 1;
            let account = state.tenants.entry(ns(tenant)).or_default();
            account.waiting.insert((Rank::First, ticket));
        }
        for (tenant, throttle) in throttles {
            state.throttles.insert(ns(tenant), *throttle);
        }
        state
    }

    #[test]
    fn a_running_call_gives_way_only_to_a_lighter_tenant_once_every_slot_is_taken_and_a_quantum_has_passed()
     {
        let ms = Duration::from_millis;
        let none: &[(&str, Duration)] = &[];
        let no_throttle: &[(&str, u32)] = &[];
        // (case, slots, per-tenant cap, running calls (the first is the one
        // asked about), used before, tenants waiting, throttles, gives way)
        #[allow(clippy::type_complexity)]
        let cases: &[(
            &str,
            usize,
            Option<usize>,
            &[(&str, Duration)],
            &[(&str, Duration)],
            &[&str],
            &[(&str, u32)],
            bool,
        )] = &[
            (
                "one slot, a lighter tenant waits, a quantum has passed",
                1,
                None,
                &[("a", QUANTUM)],
                none,
                &["b"],
                no_throttle,
                true,
            ),
            (
                "one slot, the call has run less than a quantum",
                1,
                None,
                &[("a", QUANTUM - ms(1))],
                none,
                &["b"],
                no_throttle,
                false,
            ),
            (
                "two slots both taken by the long tenant",
                2,
                None,
                &[("a", ms(200)), ("a", ms(200))],
                none,
                &["b"],
                no_throttle,
                true,
            ),
            (
                "two slots, one of them free for the waiting call",
                2,
                None,
                &[("a", ms(200))],
                none,
                &["b"],
                no_throttle,
                false,
            ),
            (
                "every slot taken, only the same tenant's calls wait",
                2,
                None,
                &[("a", ms(200)), ("b", ms(10))],
                none,
                &["a"],
                no_throttle,
                false,
            ),
            (
                "the waiting tenant has used more than the running call's",
                1,
                None,
                &[("a", ms(200))],
                &[("b", ms(500))],
                &["b"],
                no_throttle,
                false,
            ),
            (
                "the waiting tenant has used less than the running call's, its run included",
                1,
                None,
                &[("a", ms(200))],
                &[("b", ms(150))],
                &["b"],
                no_throttle,
                true,
            ),
            (
                "a throttled tenant's run counts more than the waiting tenant's use",
                1,
                None,
                &[("a", ms(200))],
                &[("b", ms(500))],
                &["b"],
                &[("a", 4)],
                true,
            ),
            (
                "the waiting tenant is at its own limit of calls",
                2,
                Some(1),
                &[("a", ms(200)), ("b", ms(10))],
                none,
                &["b"],
                no_throttle,
                false,
            ),
            (
                "the lighter of two waiting tenants may take the slot",
                2,
                Some(1),
                &[("a", ms(200)), ("b", ms(10))],
                none,
                &["b", "c"],
                no_throttle,
                true,
            ),
        ];
        let now = Instant::now() + Duration::from_secs(10);
        for (case, slots, per_tenant, running, used, wait, throttles, gives_way) in cases {
            let state = scene(now, running, used, wait, throttles);
            let limits = ShareLimits {
                slots: *slots,
                per_tenant: *per_tenant,
            };
            assert_eq!(
                state.gives_way(&ns(running[0].0), 0, limits, now),
                *gives_way,
                "{case}"
            );
        }
    }

    #[test]
    fn a_long_call_gives_its_slot_only_to_a_lighter_tenant_after_a_quantum() {
        // (who waits, how long the running call of A has run, A has used
        // before, A gives way)
        let cases = [
            ("b", QUANTUM * 2, Duration::from_millis(200), true),
            ("b", Duration::ZERO, Duration::from_millis(200), false),
            ("a", QUANTUM * 2, Duration::from_millis(200), false),
            // B has used more than A and A's running call together.
            ("b", QUANTUM * 2, Duration::ZERO, false),
        ];
        for (waiting, ran, a_before, gives_way) in cases {
            let share = Arc::new(FairShare::new(1));
            let b_before = share.turn(&ns("b"), far()).unwrap();
            std::thread::sleep(Duration::from_millis(150));
            drop(b_before);
            let before = share.turn(&ns("a"), far()).unwrap();
            std::thread::sleep(a_before);
            drop(before);
            let running = share.turn(&ns("a"), far()).unwrap();
            let (order, served) = mpsc::channel();
            let waiter = waiter(
                &share,
                waiting,
                Rank::First,
                waiting,
                Duration::ZERO,
                &order,
            );
            until_waiting(&share, 1);
            std::thread::sleep(ran);
            let case = format!("{waiting} waits, A ran {ran:?} after {a_before:?}");
            assert_eq!(running.should_give_way(), gives_way, "{case}");
            if gives_way {
                let resumed = std::thread::spawn(move || {
                    let turn = running.give_way(far(), None).unwrap();
                    drop(turn);
                });
                assert_eq!(served.recv().unwrap(), waiting, "{case}");
                resumed.join().unwrap();
            } else {
                drop(running);
                assert_eq!(served.recv().unwrap(), waiting, "{case}");
            }
            waiter.join().unwrap();
        }
    }

    #[test]
    fn a_slot_given_way_goes_to_the_lighter_call_and_comes_back_after_it() {
        let share = Arc::new(FairShare::new(1));
        let before = share.turn(&ns("a"), far()).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        drop(before);
        let running = share.turn(&ns("a"), far()).unwrap();
        let (order, served) = mpsc::channel();
        let b = waiter(
            &share,
            "b",
            Rank::First,
            "b",
            Duration::from_millis(50),
            &order,
        );
        until_waiting(&share, 1);
        std::thread::sleep(QUANTUM);
        let again = {
            let order = order.clone();
            std::thread::spawn(move || {
                let turn = running.give_way(far(), None).unwrap();
                order.send("a again".to_string()).unwrap();
                drop(turn);
            })
        };
        // B runs; A waits again.
        assert_eq!(served.recv().unwrap(), "b");
        until_waiting(&share, 1);
        // A third tenant's first call asks after A gave way: A, continuing,
        // is served before it.
        let c = waiter(&share, "c", Rank::First, "c", Duration::ZERO, &order);
        until_waiting(&share, 2);
        b.join().unwrap();
        again.join().unwrap();
        c.join().unwrap();
        let served: Vec<String> = served.try_iter().collect();
        assert_eq!(served, ["a again", "c"]);
        assert_eq!(share.lock().taken, 0, "every slot is free again");
    }

    #[test]
    fn a_tenant_with_short_calls_is_not_starved_by_one_with_long_calls() {
        // A's calls take 200 ms, B's 5 ms; both have 10. Served first come
        // first served, B would wait for A's 2 s of calls; shared by time,
        // B finishes while A is still running.
        let done = race(
            2,
            &[
                ("a", 10, Duration::from_millis(200)),
                ("b", 10, Duration::from_millis(5)),
            ],
        );
        assert!(done["b"] < Duration::from_millis(700), "{done:?}");
        assert!(done["a"] >= Duration::from_millis(1000), "{done:?}");
    }

    #[test]
    fn a_turn_not_given_before_the_deadline_says_how_long_it_waited() {
        let share = Arc::new(FairShare::new(1));
        let held = share.turn(&ns("a"), far()).unwrap();
        let refused = share
            .turn(&ns("b"), Instant::now() + Duration::from_millis(50))
            .err()
            .unwrap();
        assert_eq!(refused.slots, 1);
        assert!(refused.waited >= Duration::from_millis(50));
        drop(held);
        assert!(
            share
                .turn(&ns("b"), Instant::now() + Duration::from_millis(50))
                .is_ok()
        );
    }

    #[test]
    fn calls_of_one_tenant_are_served_in_the_order_they_asked() {
        let share = Arc::new(FairShare::new(1));
        let held = share.turn(&ns("a"), far()).unwrap();
        let (order, served) = mpsc::channel();
        let mut threads = Vec::new();
        for i in 0..8 {
            threads.push(waiter(
                &share,
                "a",
                Rank::First,
                &i.to_string(),
                Duration::ZERO,
                &order,
            ));
            until_waiting(&share, i + 1);
        }
        drop(held);
        for thread in threads {
            thread.join().unwrap();
        }
        let served: Vec<String> = served.try_iter().collect();
        assert_eq!(served, ["0", "1", "2", "3", "4", "5", "6", "7"]);
    }

    #[test]
    fn a_continuing_pipeline_goes_before_first_calls_of_every_tenant() {
        let share = Arc::new(FairShare::new(1));
        let held = share.turn(&ns("b"), far()).unwrap();
        let (order, served) = mpsc::channel();
        // A asked first and has used nothing; B's continuing call still goes first.
        let first = waiter(&share, "a", Rank::First, "a first", Duration::ZERO, &order);
        until_waiting(&share, 1);
        let continuing = waiter(
            &share,
            "b",
            Rank::Continuing,
            "b continuing",
            Duration::ZERO,
            &order,
        );
        until_waiting(&share, 2);
        drop(held);
        first.join().unwrap();
        continuing.join().unwrap();
        let served: Vec<String> = served.try_iter().collect();
        assert_eq!(served, ["b continuing", "a first"]);
    }

    #[test]
    fn a_parked_slot_waits_for_its_pipeline_until_its_grace_ends() {
        // (grace, the pipeline comes back after, gets its slot back, A's
        // waiting call ran in between)
        let cases = [
            (Duration::from_millis(500), Duration::from_millis(20), true),
            (Duration::from_millis(20), Duration::from_millis(300), false),
        ];
        for (grace, back_after, resumed) in cases {
            let share = Arc::new(FairShare::new(1));
            let turn = share.turn(&ns("b"), far()).unwrap();
            let (order, served) = mpsc::channel();
            let a = waiter(&share, "a", Rank::First, "a", Duration::ZERO, &order);
            until_waiting(&share, 1);
            let parked = turn.park(grace);
            std::thread::sleep(back_after);
            let again = parked.resume();
            assert_eq!(again.is_some(), resumed, "{grace:?} {back_after:?}");
            let a_ran_meanwhile = served.try_recv().is_ok();
            assert_eq!(a_ran_meanwhile, !resumed, "{grace:?} {back_after:?}");
            drop(again);
            a.join().unwrap();
        }
    }

    #[test]
    fn a_slot_a_lighter_tenant_frees_waits_a_moment_for_its_next_call() {
        // (B comes back after, B gets the slot before A's waiting call)
        let cases = [(Duration::from_millis(5), true), (TENANT_GRACE * 4, false)];
        for (back_after, b_first) in cases {
            let share = Arc::new(FairShare::new(1));
            // A has used more than B.
            let a_before = share.turn(&ns("a"), far()).unwrap();
            std::thread::sleep(Duration::from_millis(30));
            drop(a_before);
            let b = share.turn(&ns("b"), far()).unwrap();
            let (order, served) = mpsc::channel();
            let a = waiter(
                &share,
                "a",
                Rank::First,
                "a",
                Duration::from_millis(100),
                &order,
            );
            until_waiting(&share, 1);
            drop(b);
            std::thread::sleep(back_after);
            let again = share.turn(&ns("b"), far()).unwrap();
            order.send("b".into()).unwrap();
            drop(again);
            a.join().unwrap();
            let served: Vec<String> = served.try_iter().collect();
            assert_eq!(served[0] == "b", b_first, "{back_after:?}: {served:?}");
        }
    }

    #[test]
    fn a_tenant_back_from_a_pause_keeps_what_it_saved_up_to_the_lead() {
        let share = Arc::new(FairShare::new(1));
        // A holds the slot a long time; B used little and paused.
        drop(share.turn(&ns("b"), far()).unwrap());
        let a = share.turn(&ns("a"), far()).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let (order, served) = mpsc::channel();
        let a2 = waiter(&share, "a", Rank::First, "a", Duration::ZERO, &order);
        until_waiting(&share, 1);
        // B returns after A's second call asked: it still goes first.
        let b = waiter(&share, "b", Rank::First, "b", Duration::ZERO, &order);
        until_waiting(&share, 2);
        drop(a);
        a2.join().unwrap();
        b.join().unwrap();
        let served: Vec<String> = served.try_iter().collect();
        assert_eq!(served, ["b", "a"]);
    }

    #[test]
    fn a_tenant_at_its_own_limit_leaves_free_slots_to_others() {
        let share = Arc::new(FairShare::with_limits(ShareLimits {
            slots: 3,
            per_tenant: Some(1),
        }));
        let held = share.turn(&ns("a"), far()).unwrap();
        let refused = share.turn(&ns("a"), Instant::now() + Duration::from_millis(50));
        assert!(refused.is_err(), "a second call of a waits for its first");
        let b = share.turn(&ns("b"), Instant::now() + Duration::from_millis(50));
        assert!(b.is_ok(), "b takes a free slot beside a");
        drop(held);
    }

    #[test]
    fn the_throttle_doubles_per_deadline_reached_and_halves_per_call_in_time() {
        let share = FairShare::new(1);
        // (reached the deadline, the throttle after, reported as changed)
        let steps = [
            (true, 2, true),
            (true, 4, true),
            (true, 8, true),
            (true, 16, true),
            (true, 16, false),
            (false, 8, true),
            (false, 4, true),
            (false, 2, true),
            (false, 1, true),
            (false, 1, false),
        ];
        for (i, (deadline, want, changed)) in steps.into_iter().enumerate() {
            let reported = share.record(&ns("a"), deadline);
            assert_eq!(share.throttle(&ns("a")), want, "step {i}");
            assert_eq!(reported, changed.then_some(want), "step {i}");
        }
        assert_eq!(
            share.throttle(&ns("b")),
            1,
            "other tenants are not throttled"
        );
    }

    #[test]
    fn a_throttled_tenant_gets_a_smaller_share_of_the_slots() {
        // Both tenants ask for 20 ms calls all the time; A's time counts 4×.
        let share = Arc::new(FairShare::new(1));
        share.record(&ns("a"), true);
        share.record(&ns("a"), true);
        let stop = far();
        let counts: Arc<Mutex<HashMap<&str, usize>>> = Arc::default();
        let mut threads = Vec::new();
        for tenant in ["a", "a", "b", "b"] {
            let (share, counts) = (share.clone(), counts.clone());
            threads.push(std::thread::spawn(move || {
                let started = Instant::now();
                while started.elapsed() < Duration::from_millis(800) {
                    let turn = share.turn(&ns(tenant), stop).unwrap();
                    std::thread::sleep(Duration::from_millis(20));
                    drop(turn);
                    *counts.lock().unwrap().entry(tenant).or_default() += 1;
                }
            }));
        }
        for thread in threads {
            thread.join().unwrap();
        }
        let counts = counts.lock().unwrap();
        assert!(counts["b"] >= 2 * counts["a"], "{counts:?}");
        assert!(counts["a"] >= 1, "a still makes progress: {counts:?}");
    }

    /// Counts notices.
    #[derive(Default)]
    struct Notices(Mutex<Vec<&'static str>>);

    impl WaitNotice for Notices {
        fn waiting(&self) {
            self.0.lock().unwrap().push("waiting");
        }
        fn resumed(&self) {
            self.0.lock().unwrap().push("resumed");
        }
    }

    #[test]
    fn only_a_call_that_has_to_wait_is_noticed() {
        let share = Arc::new(FairShare::new(1));
        let quiet = Notices::default();
        let held = share
            .turn_ranked(&ns("a"), far(), Rank::First, Some(&quiet))
            .unwrap();
        assert!(quiet.0.lock().unwrap().is_empty());
        let noticed = Arc::new(Notices::default());
        let thread = {
            let (share, noticed) = (share.clone(), noticed.clone());
            std::thread::spawn(move || {
                let notice: &dyn WaitNotice = noticed.as_ref();
                share
                    .turn_ranked(&ns("b"), far(), Rank::First, Some(notice))
                    .map(drop)
                    .unwrap();
            })
        };
        until_waiting(&share, 1);
        drop(held);
        thread.join().unwrap();
        assert_eq!(*noticed.0.lock().unwrap(), ["waiting", "resumed"]);
    }
}
