//! The blocking primitives the runtime shares between loads and calls.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

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

/// Locks a mutex, ignoring poisoning: every critical section here leaves
/// its data consistent, so a panic elsewhere does not invalidate it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
