//! Sharing the function-call slots fairly between tenants.
//!
//! At most `slots` calls run at once. When a slot frees, it goes to the
//! waiting tenant that has used the least guest time so far, so a tenant
//! whose functions loop until their deadline, or who has ten times more XRs,
//! gets no more than its share of the time while others wait. A tenant that
//! was idle starts from the least usage among the tenants now active (as a
//! fair scheduler's virtual time), so past idleness earns no burst and past
//! heavy use no starvation.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The slots and what each tenant has used.
pub struct FairShare {
    slots: usize,
    state: Mutex<State>,
    freed: Condvar,
}

#[derive(Default)]
struct State {
    running: usize,
    /// Guest time used, by tenant, while the tenant was active.
    used: HashMap<String, Duration>,
    /// Calls waiting for a slot, by tenant.
    waiting: HashMap<String, usize>,
    /// When each running call started, by tenant: a call's time counts
    /// while it runs, so a long call does not look free until it ends.
    active: HashMap<String, Vec<Instant>>,
}

impl State {
    /// What `tenant` has used, its running calls included.
    fn usage(&self, tenant: &str, now: Instant) -> Duration {
        let running: Duration = self
            .active
            .get(tenant)
            .into_iter()
            .flatten()
            .map(|started| now.saturating_duration_since(*started))
            .sum();
        self.used.get(tenant).copied().unwrap_or_default() + running
    }

    /// The least usage among tenants that wait or run: where a newly
    /// active tenant starts.
    fn floor(&self, now: Instant) -> Duration {
        self.waiting
            .keys()
            .chain(self.active.keys())
            .map(|t| self.usage(t, now))
            .min()
            .unwrap_or_default()
    }

    /// Whether `tenant` is the waiting tenant with the least usage.
    fn is_next(&self, tenant: &str, now: Instant) -> bool {
        let mine = self.usage(tenant, now);
        self.waiting
            .keys()
            .all(|other| other == tenant || self.usage(other, now) >= mine)
    }
}

/// A held slot; dropping it counts the time it was held against its tenant.
pub struct Turn<'a> {
    share: &'a FairShare,
    tenant: String,
    started: Instant,
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
    /// At most `slots` calls at once (at least one).
    pub fn new(slots: usize) -> FairShare {
        FairShare {
            slots: slots.max(1),
            state: Mutex::new(State::default()),
            freed: Condvar::new(),
        }
    }

    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Waits for a slot for `tenant` until `deadline`.
    pub fn turn(&self, tenant: &str, deadline: Instant) -> Result<Turn<'_>, NoTurn> {
        let started = Instant::now();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if !state.waiting.contains_key(tenant) && !state.active.contains_key(tenant) {
            let floor = state.floor(started);
            let used = state.used.entry(tenant.to_string()).or_default();
            *used = (*used).max(floor);
        }
        *state.waiting.entry(tenant.to_string()).or_default() += 1;
        loop {
            if state.running < self.slots && state.is_next(tenant, Instant::now()) {
                break;
            }
            let now = Instant::now();
            if now >= deadline {
                leave(&mut state.waiting, tenant);
                // Another waiter may be next now that this one left.
                self.freed.notify_all();
                return Err(NoTurn {
                    waited: started.elapsed(),
                    slots: self.slots,
                });
            }
            state = self
                .freed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        leave(&mut state.waiting, tenant);
        state.running += 1;
        let now = Instant::now();
        state
            .active
            .entry(tenant.to_string())
            .or_default()
            .push(now);
        Ok(Turn {
            share: self,
            tenant: tenant.to_string(),
            started: now,
        })
    }
}

fn leave(counts: &mut HashMap<String, usize>, tenant: &str) {
    if let Some(n) = counts.get_mut(tenant) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            counts.remove(tenant);
        }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut state = self
            .share
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        state.running = state.running.saturating_sub(1);
        if let Some(starts) = state.active.get_mut(&self.tenant) {
            if let Some(at) = starts.iter().position(|s| *s == self.started) {
                starts.swap_remove(at);
            }
            if starts.is_empty() {
                state.active.remove(&self.tenant);
            }
        }
        *state.used.entry(self.tenant.clone()).or_default() += self.started.elapsed();
        // Idle tenants are forgotten: they restart from the floor anyway.
        if !state.waiting.contains_key(&self.tenant) && !state.active.contains_key(&self.tenant) {
            state.used.remove(&self.tenant);
        }
        drop(state);
        self.share.freed.notify_all();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

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
                    let turn = share
                        .turn(&tenant, start + Duration::from_secs(30))
                        .unwrap();
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
        let share = FairShare::new(1);
        let held = share
            .turn("a", Instant::now() + Duration::from_secs(5))
            .unwrap();
        let refused = share
            .turn("b", Instant::now() + Duration::from_millis(50))
            .err()
            .unwrap();
        assert_eq!(refused.slots, 1);
        assert!(refused.waited >= Duration::from_millis(50));
        drop(held);
        assert!(
            share
                .turn("b", Instant::now() + Duration::from_millis(50))
                .is_ok()
        );
    }
}
