//! The blocking primitives the runtime shares between loads and calls.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// A counting semaphore; std has none and compiles block a thread anyway.
pub(crate) struct Semaphore {
    permits: Mutex<usize>,
    freed: Condvar,
}

pub(crate) struct Permit<'a>(&'a Semaphore);

impl Semaphore {
    pub(crate) fn new(permits: usize) -> Semaphore {
        Semaphore {
            permits: Mutex::new(permits.max(1)),
            freed: Condvar::new(),
        }
    }

    pub(crate) fn acquire(&self) -> Permit<'_> {
        let mut permits = lock(&self.permits);
        while *permits == 0 {
            permits = self
                .freed
                .wait(permits)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *permits -= 1;
        Permit(self)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        *lock(&self.0.permits) += 1;
        self.0.freed.notify_one();
    }
}

/// A pool of bytes that calls reserve before they instantiate and give back
/// when their store is gone: it bounds the sum of the memory caps of live
/// calls, which the instance pool alone does not (64 slots of 1 GiB).
pub(crate) struct Budget {
    total: usize,
    state: Mutex<BudgetState>,
    freed: Condvar,
}

struct BudgetState {
    reserved: usize,
    /// Calls waiting for bytes: a release wakes them only if there are any,
    /// so an uncontended call costs a lock and an unlock, no syscall.
    waiting: usize,
}

/// Bytes held from a [`Budget`] until dropped.
pub(crate) struct Reservation {
    budget: Arc<Budget>,
    bytes: usize,
}

/// Why a reservation was not granted.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// More than the whole budget: waiting cannot help.
    TooLarge,
    /// The deadline passed while other calls held the bytes.
    TimedOut { waited: Duration },
}

impl Budget {
    pub(crate) fn new(total: usize) -> Budget {
        Budget {
            total,
            state: Mutex::new(BudgetState {
                reserved: 0,
                waiting: 0,
            }),
            freed: Condvar::new(),
        }
    }

    pub(crate) fn total(&self) -> usize {
        self.total
    }

    pub(crate) fn reserved(&self) -> usize {
        lock(&self.state).reserved
    }

    /// Reserves `bytes`, waiting for other reservations to be dropped until
    /// `patience` has passed.
    pub(crate) fn reserve(
        self: &Arc<Self>,
        bytes: usize,
        patience: Duration,
    ) -> Result<Reservation, Refused> {
        if bytes > self.total {
            return Err(Refused::TooLarge);
        }
        let mut state = lock(&self.state);
        if self.total - state.reserved < bytes {
            state = self.wait_for(state, bytes, patience)?;
        }
        state.reserved += bytes;
        Ok(Reservation {
            budget: self.clone(),
            bytes,
        })
    }

    /// Gives `bytes` back, waking whoever waits for them.
    fn release(&self, bytes: usize) {
        let mut state = lock(&self.state);
        state.reserved -= bytes;
        if state.waiting > 0 {
            self.freed.notify_all();
        }
    }

    /// Waits until `bytes` are free. Every release wakes every waiter, each
    /// rechecks: releases come in all sizes, so any waiter may now fit.
    fn wait_for<'a>(
        &'a self,
        mut state: MutexGuard<'a, BudgetState>,
        bytes: usize,
        patience: Duration,
    ) -> Result<MutexGuard<'a, BudgetState>, Refused> {
        let started = Instant::now();
        state.waiting += 1;
        while self.total - state.reserved < bytes {
            let waited = started.elapsed();
            let Some(left) = patience.checked_sub(waited).filter(|l| !l.is_zero()) else {
                state.waiting -= 1;
                return Err(Refused::TimedOut { waited });
            };
            state = self
                .freed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        state.waiting -= 1;
        Ok(state)
    }
}

impl Reservation {
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The bytes of the budget no call holds now.
    pub(crate) fn budget_free(&self) -> usize {
        self.budget.total - self.budget.reserved()
    }

    /// Holds only `bytes` (when that is less), giving the rest back.
    pub(crate) fn shrink_to(&mut self, bytes: usize) {
        if bytes < self.bytes {
            self.budget.release(self.bytes - bytes);
            self.bytes = bytes;
        }
    }

    /// Holds `bytes` again (when that is more), waiting for the difference
    /// until `patience` has passed.
    pub(crate) fn grow_to(&mut self, bytes: usize, patience: Duration) -> Result<(), Refused> {
        let Some(more) = bytes.checked_sub(self.bytes).filter(|more| *more > 0) else {
            return Ok(());
        };
        let budget = &self.budget;
        let mut state = lock(&budget.state);
        if budget.total - state.reserved < more {
            state = budget.wait_for(state, more, patience)?;
        }
        state.reserved += more;
        self.bytes = bytes;
        Ok(())
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.release(self.bytes);
    }
}

/// Locks a mutex, ignoring poisoning: every critical section here leaves
/// its data consistent, so a panic elsewhere does not invalidate it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_fit_the_budget_or_are_refused() {
        let patience = Duration::from_millis(20);
        // (budget, held by others, asked, outcome)
        let cases = [
            ("fits an empty budget", 100, 0, 100, Ok(())),
            ("fits beside others", 100, 40, 60, Ok(())),
            (
                "larger than the budget",
                100,
                0,
                101,
                Err(Refused::TooLarge),
            ),
            (
                "larger than the budget while others hold",
                100,
                50,
                101,
                Err(Refused::TooLarge),
            ),
        ];
        for (case, total, held, asked, outcome) in cases {
            let budget = Arc::new(Budget::new(total));
            let _held = budget.reserve(held, patience).map_err(|e| format!("{e:?}"));
            let got = budget.reserve(asked, patience).map(drop);
            assert_eq!(got, outcome, "{case}");
            assert_eq!(budget.reserved(), held, "{case}: released");
        }
    }

    #[test]
    fn a_reservation_that_does_not_fit_times_out_after_its_patience() {
        let budget = Arc::new(Budget::new(100));
        let _held = budget.reserve(60, Duration::ZERO);
        let patience = Duration::from_millis(30);
        match budget.reserve(50, patience).map(drop) {
            Err(Refused::TimedOut { waited }) => assert!(waited >= patience, "{waited:?}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(budget.reserved(), 60);
    }

    #[test]
    fn a_waiting_reservation_gets_the_bytes_another_releases() {
        let budget = Arc::new(Budget::new(100));
        let held = budget.reserve(80, Duration::ZERO);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| budget.reserve(50, Duration::from_secs(10)).map(drop));
            while lock(&budget.state).waiting == 0 {
                std::thread::yield_now();
            }
            drop(held);
            assert_eq!(waiter.join().ok(), Some(Ok(())));
        });
        assert_eq!(budget.reserved(), 0);
    }

    #[test]
    fn a_shrunk_reservation_lends_bytes_until_it_grows_back() {
        let budget = Arc::new(Budget::new(100));
        let mut paused = budget.reserve(60, Duration::ZERO).ok().unwrap();
        paused.shrink_to(10);
        assert_eq!(budget.reserved(), 10);
        let other = budget.reserve(80, Duration::ZERO).ok().unwrap();
        // Growing back waits for the bytes lent out.
        let patience = Duration::from_millis(20);
        assert!(matches!(
            paused.grow_to(60, patience),
            Err(Refused::TimedOut { .. })
        ));
        assert_eq!(paused.bytes(), 10, "a refused growth holds what it held");
        drop(other);
        assert_eq!(paused.grow_to(60, patience), Ok(()));
        assert_eq!((paused.bytes(), budget.reserved()), (60, 60));
        // Shrinking to more, or growing to less, changes nothing.
        paused.shrink_to(70);
        assert_eq!(paused.grow_to(30, patience), Ok(()));
        assert_eq!(budget.reserved(), 60);
        drop(paused);
        assert_eq!(budget.reserved(), 0);
    }
}
