//! What the runtime counts: cache outcomes of loads, and calls; and how much
//! of the guest memory budget is held.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters since the runtime was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RuntimeStats {
    /// Loads answered by a module already in memory.
    pub memory_hits: u64,
    /// Loads answered by a verified artifact in the cache directory.
    pub disk_hits: u64,
    /// Loads that had to compile.
    pub cache_misses: u64,
    /// Successful compilations.
    pub compiles: u64,
    /// Calls made, successful or not.
    pub calls: u64,
    /// Calls that ended in a [`CallError`](crate::CallError).
    pub call_failures: u64,
    /// The guest memory budget (see
    /// [`RuntimeConfig::memory_budget`](crate::RuntimeConfig::memory_budget)),
    /// after lowering it to what the pool can hold.
    pub memory_budget_bytes: u64,
    /// How much of the budget live calls hold now.
    pub memory_reserved_bytes: u64,
}

/// The live counterpart of [`RuntimeStats`], shared by every clone of a
/// runtime.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) memory_hits: AtomicU64,
    pub(crate) disk_hits: AtomicU64,
    pub(crate) cache_misses: AtomicU64,
    pub(crate) compiles: AtomicU64,
    pub(crate) calls: AtomicU64,
    pub(crate) call_failures: AtomicU64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> RuntimeStats {
        let get = |n: &AtomicU64| n.load(Ordering::Relaxed);
        RuntimeStats {
            memory_hits: get(&self.memory_hits),
            disk_hits: get(&self.disk_hits),
            cache_misses: get(&self.cache_misses),
            compiles: get(&self.compiles),
            calls: get(&self.calls),
            call_failures: get(&self.call_failures),
            ..RuntimeStats::default()
        }
    }
}
