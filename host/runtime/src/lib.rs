//! The sandboxed WebAssembly runtime that runs composition functions.
//!
//! One [`Runtime`] holds one wasmtime engine (pooling allocator, epoch
//! interruption driven by a 10 ms ticker thread) and a cache of compiled
//! [`Module`]s keyed by the sha256 of the component. Every [`Runtime::call`]
//! gets a fresh store and instance, so a call that traps leaves nothing
//! behind, and runs with no environment, arguments or network, and no
//! filesystem but the directories its [`CallLimits`] grant it, read-only;
//! its stdout, stderr and log lines are captured up to a cap. Live calls
//! share a guest memory budget: each holds its memory cap while it runs
//! (a paused call only the memory its guest has).

mod builtins;
mod cache;
mod cache_dir;
mod call;
mod config;
mod convert;
mod engine;
mod error;
mod host_state;
mod modules;
mod stats;
mod sync;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use wasmtime::Engine;

pub use builtins::Builtin;
pub use cache::digest;
pub use cache_dir::{CacheDir, CacheDirError, sha256_hex};
pub use call::{CallOutput, Checkpoint, Stopped};
pub use config::{
    CallLimits, DEFAULT_MEMORY_BUDGET, PoolConfig, ReadOnlyDir, RuntimeConfig, memory_budget_for,
};
pub use engine::EPOCH_TICK;
pub use error::{CallError, RuntimeError};
pub use host_state::LogLine;
pub use modules::Module;
pub use stats::RuntimeStats;

use call::Sandbox;
use engine::Ticker;
use modules::Modules;
use stats::Counters;
use sync::{Budget, Refused, Semaphore};

#[allow(unsafe_code, clippy::all)]
mod bindings {
    wasmtime::component::bindgen!({ world: "function", path: "../../wit" });
}

/// The runtime. Cloning is cheap and clones share the engine and caches.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    modules: Modules,
    /// One permit per component instance in the pool, so a burst of calls
    /// queues instead of failing to instantiate.
    instances: Semaphore,
    /// Bounds the sum of the memory caps of live calls.
    memory: Arc<Budget>,
    max_memory_bytes: usize,
    counters: Counters,
    /// Held for its drop: the last clone of the runtime stops the ticker.
    _ticker: Ticker,
}

impl Runtime {
    pub fn new(config: RuntimeConfig) -> Result<Runtime, RuntimeError> {
        let engine = engine::new_engine(&config.pool, config.parallel_compilation)?;
        let memory_budget = config.memory_budget.min(config.pool.memory_capacity());
        let modules = Modules::new(&engine, config.cache_dir, config.max_concurrent_compiles)?;
        let ticker = Ticker::start(engine.clone())
            .map_err(|e| RuntimeError::Engine(format!("cannot start the epoch ticker: {e}")))?;
        Ok(Runtime {
            inner: Arc::new(Inner {
                engine,
                modules,
                instances: Semaphore::new(
                    usize::try_from(config.pool.total_component_instances).unwrap_or(usize::MAX),
                ),
                memory: Arc::new(Budget::new(memory_budget)),
                max_memory_bytes: config.pool.max_memory_bytes,
                counters: Counters::default(),
                _ticker: ticker,
            }),
        })
    }

    /// Compiles (or fetches from a cache) the component in `wasm`.
    pub fn load(&self, wasm: &[u8]) -> Result<Arc<Module>, RuntimeError> {
        self.load_digest(digest(wasm), wasm)
    }

    /// As [`Runtime::load`], for a caller that has already checked that
    /// `digest` (`sha256:<hex>`) is the sha256 of `wasm`, as plait-oci does
    /// for every layer it pulls or reads from its cache: the component is not
    /// hashed a second time (tens of milliseconds for an interpreter guest).
    pub fn load_verified(&self, digest: &str, wasm: &[u8]) -> Result<Arc<Module>, RuntimeError> {
        self.load_digest(digest.to_string(), wasm)
    }

    /// The module of a built-in function.
    pub fn builtin(&self, builtin: Builtin) -> Result<Arc<Module>, RuntimeError> {
        self.load_digest(builtin.digest().to_string(), builtin.wasm())
    }

    /// The module with `digest` if it is compiled and in memory already:
    /// what a load would answer at once, without compiling anything.
    pub fn loaded(&self, digest: &str) -> Option<Arc<Module>> {
        self.inner.modules.loaded(digest)
    }

    fn load_digest(&self, digest: String, wasm: &[u8]) -> Result<Arc<Module>, RuntimeError> {
        self.inner.modules.load(digest, wasm, &self.inner.counters)
    }

    /// Runs `module` on `request` in a fresh instance.
    pub fn call(
        &self,
        module: &Module,
        request: &plait_sdk::Request,
        limits: &CallLimits,
    ) -> Result<CallOutput, CallError> {
        self.call_pausable(module, request, limits, None)
    }

    /// As [`Runtime::call`], with the guest passing `checkpoint` at every
    /// epoch tick, where it may be paused; its deadline counts only the
    /// time it runs.
    pub fn call_pausable(
        &self,
        module: &Module,
        request: &plait_sdk::Request,
        limits: &CallLimits,
        checkpoint: Option<Arc<dyn Checkpoint>>,
    ) -> Result<CallOutput, CallError> {
        let counters = &self.inner.counters;
        counters.calls.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        let result = self.in_sandbox(module, limits, checkpoint, |sandbox| {
            sandbox.call(request, started)
        });
        if result.is_err() {
            counters.call_failures.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    /// Instantiates `module` in a fresh store and drops it: shows that a
    /// module links and starts within `limits` (e.g. when admitting a
    /// function), and isolates the cost of instantiation from the call.
    pub fn instantiate(&self, module: &Module, limits: &CallLimits) -> Result<(), CallError> {
        self.in_sandbox(module, limits, None, |mut sandbox| {
            sandbox.instantiate().map(drop)
        })
    }

    /// Runs `run` in a fresh store for `module` once the memory budget has
    /// room for the call's memory cap and the pool has a free instance,
    /// holding both until `run` returns (and with it, the store is dropped).
    /// Memory comes first so calls waiting for it hold no pool slot.
    fn in_sandbox<T>(
        &self,
        module: &Module,
        limits: &CallLimits,
        checkpoint: Option<Arc<dyn Checkpoint>>,
        run: impl FnOnce(Sandbox<'_>) -> Result<T, CallError>,
    ) -> Result<T, CallError> {
        let inner = &self.inner;
        let requested = limits.memory_bytes.min(inner.max_memory_bytes);
        let budget = inner.memory.total();
        let memory = inner
            .memory
            .reserve(requested, limits.deadline)
            .map_err(|refused| {
                let waited = match refused {
                    Refused::TooLarge => Duration::ZERO,
                    Refused::TimedOut { waited } => waited,
                };
                CallError::MemoryBudget {
                    digest: module.digest.clone(),
                    waited,
                    requested,
                    budget,
                }
            })?;
        let _slot = inner.instances.acquire();
        run(Sandbox::new(
            &inner.engine,
            inner.max_memory_bytes,
            module,
            limits,
            memory,
            checkpoint,
        )?)
    }

    pub fn stats(&self) -> RuntimeStats {
        let memory = &self.inner.memory;
        RuntimeStats {
            memory_budget_bytes: memory.total() as u64,
            memory_reserved_bytes: memory.reserved() as u64,
            ..self.inner.counters.snapshot()
        }
    }
}
