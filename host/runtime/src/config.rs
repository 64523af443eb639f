//! How a runtime is configured and how far one call may go.

use std::path::PathBuf;
use std::time::Duration;

/// Sizes of the instance pool. At most `total_component_instances` calls
/// run at once; more wait for a free slot. Each memory slot reserves 4 GiB of
/// address space (not RAM), so `total_memories` sets the virtual size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    pub total_component_instances: u32,
    pub total_core_instances: u32,
    pub total_memories: u32,
    pub total_tables: u32,
    /// The most elements one table may have. Go components put every
    /// function that can be called indirectly in one table: 57,973 entries
    /// for examples/functions/go-volume, 61,987 for function-auto-ready
    /// ported to plait. Each table slot reserves 8 bytes of address space
    /// per element (512 slots of 2^17: 512 MiB of address space, not RAM).
    pub table_elements: usize,
    /// The largest linear memory any instance may have; a call's
    /// `memory_bytes` above this is capped by it.
    pub max_memory_bytes: usize,
    /// How much of a freed slot's linear memory stays mapped for the next
    /// instance. Only the pages the last instance wrote are reset (found with
    /// Linux's `PAGEMAP_SCAN` where the kernel has it), so the next call
    /// starts from the module's original image without page faults. Memory
    /// above this is returned to the kernel. RAM held: up to this much per
    /// slot that has been used.
    pub keep_resident_bytes: usize,
}

impl Default for PoolConfig {
    fn default() -> Self {
        // Measured in the spike: Rust, Python and JS guests fit these.
        PoolConfig {
            total_component_instances: 64,
            total_core_instances: 512,
            total_memories: 128,
            total_tables: 512,
            table_elements: 1 << 17,
            max_memory_bytes: 1 << 30,
            // Measured with the patch-and-transform benchmark: 4 MiB and
            // above cut a 10-resource call by a sixth; the larger value
            // covers the bigger Compositions too.
            keep_resident_bytes: 16 << 20,
        }
    }
}

/// The budget [`memory_budget_for`] gives one call slot at the default
/// memory cap (256 MiB): what a runtime that calls one function at a time
/// (`plait render`, tests) needs.
pub const DEFAULT_MEMORY_BUDGET: usize = 512 << 20;

/// The guest memory budget that lets `slots` calls run at once with
/// `memory_limit` each and still lets a running call give way to another
/// tenant's: one limit per slot, and one more for what paused calls keep
/// (their guests' memory, a few MiB for most functions). With one limit
/// per slot only, a paused call's memory leaves too little for the call
/// it would give its slot to, so no running call pauses and a lighter
/// tenant's call waits for a long one to end.
pub fn memory_budget_for(slots: usize, memory_limit: usize) -> usize {
    slots.max(1).saturating_add(1).saturating_mul(memory_limit)
}

impl PoolConfig {
    /// The most memory the pool could give calls at once: every instance
    /// slot at its largest memory.
    pub fn memory_capacity(&self) -> usize {
        usize::try_from(self.total_component_instances)
            .unwrap_or(usize::MAX)
            .saturating_mul(self.max_memory_bytes)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// Where compiled components are kept across restarts; `None` keeps
    /// them in memory only. Only the host may write this directory.
    pub cache_dir: Option<PathBuf>,
    /// How many components may compile at once (compiling is CPU- and
    /// memory-heavy; calls are cheap).
    pub max_concurrent_compiles: usize,
    /// Whether one component's functions compile on every core at once:
    /// about twice as fast on two cores, and a quarter more memory at the
    /// peak (patch-and-transform: 0.9 s and 102–115 MiB for a whole `plait
    /// render`, against 2.0 s and 79–82 MiB on one thread).
    pub parallel_compilation: bool,
    pub pool: PoolConfig,
    /// The most guest memory live calls may hold at once, in bytes: each
    /// call reserves its memory cap (its `CallLimits::memory_bytes`, capped
    /// by the pool's `max_memory_bytes`) before it instantiates and returns
    /// it when its store is dropped; a call that does not fit waits, up to
    /// its deadline. A paused call holds only the memory its guest has
    /// grown. The pool alone would allow every slot its largest memory at
    /// once, far more than a pod's memory limit. Values above what the pool
    /// can hold are lowered to it. [`memory_budget_for`] sizes it for a
    /// number of concurrent calls.
    pub memory_budget: usize,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            cache_dir: None,
            max_concurrent_compiles: 2,
            parallel_compilation: true,
            pool: PoolConfig::default(),
            memory_budget: DEFAULT_MEMORY_BUDGET,
        }
    }
}

/// Bounds on one call, and the directories it may read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallLimits {
    /// Time the guest may run, checked at every epoch tick; time it is
    /// paused at a [`crate::Checkpoint`] does not count.
    pub deadline: Duration,
    /// The largest linear memory the guest may grow to; the pool's
    /// `max_memory_bytes` caps it.
    pub memory_bytes: usize,
    /// The cap on each of stdout, stderr and the log. Writing more to stdout
    /// or stderr fails the call; log lines past the cap are dropped.
    pub output_bytes: usize,
    /// The largest response (the sum of its texts) the host accepts.
    pub response_bytes: usize,
    /// Host directories the guest may read; none by default, and then the
    /// guest has no filesystem at all. Each is preopened read-only where
    /// the guest looks for it: the guest can list and read what is under
    /// it, and can create, change or remove nothing there, nor reach
    /// outside it (`..` and symbolic links that leave it are refused).
    pub read_only_dirs: Vec<ReadOnlyDir>,
}

/// A host directory a call may read, and the path the guest finds it at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOnlyDir {
    /// The directory on the host, opened when each call starts.
    pub host: PathBuf,
    /// Where the guest finds it: an absolute path, such as `/templates`.
    pub guest: String,
}

impl Default for CallLimits {
    fn default() -> Self {
        CallLimits {
            deadline: Duration::from_secs(10),
            memory_bytes: 256 << 20,
            output_bytes: 64 << 10,
            response_bytes: 16 << 20,
            read_only_dirs: Vec::new(),
        }
    }
}
