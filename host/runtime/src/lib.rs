//! The sandboxed WebAssembly runtime that runs composition functions.
//!
//! One [`Runtime`] holds one wasmtime engine (pooling allocator, epoch
//! interruption driven by a 10 ms ticker thread) and a cache of compiled
//! [`Module`]s keyed by the sha256 of the component. Every [`Runtime::call`]
//! gets a fresh store and instance, so a call that traps leaves nothing
//! behind, and runs with no filesystem, environment, arguments or network;
//! its stdout, stderr and log lines are captured up to a cap.

mod cache;
mod convert;
mod error;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, LazyLock, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use plait_sdk::LogLevel;
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store,
    StoreLimits, StoreLimitsBuilder,
};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

pub use cache::digest;
pub use error::{CallError, RuntimeError};

use cache::{DiskCache, Lookup};
use error::{FailureContext, classify};

#[allow(unsafe_code, clippy::all)]
mod bindings {
    wasmtime::component::bindgen!({ world: "function", path: "../../wit" });
}

use bindings::plait::function::log as wit_log;
use bindings::{Function, FunctionPre};

/// How often the epoch advances; call deadlines are counted in these ticks.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Sizes of the instance pool. At most `total_component_instances` calls
/// run at once; more wait for a free slot. Each memory slot reserves 4 GiB of
/// address space (not RAM), so `total_memories` sets the virtual size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    pub total_component_instances: u32,
    pub total_core_instances: u32,
    pub total_memories: u32,
    pub total_tables: u32,
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
            max_memory_bytes: 1 << 30,
            // Measured with the patch-and-transform benchmark: 4 MiB and
            // above cut a 10-resource call by a sixth; the larger value
            // covers the bigger Compositions too.
            keep_resident_bytes: 16 << 20,
        }
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
    pub pool: PoolConfig,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            cache_dir: None,
            max_concurrent_compiles: 2,
            pool: PoolConfig::default(),
        }
    }
}

/// Bounds on one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallLimits {
    /// Wall-clock time the guest may run, measured in epoch ticks.
    pub deadline: Duration,
    /// The largest linear memory the guest may grow to; the pool's
    /// `max_memory_bytes` caps it.
    pub memory_bytes: usize,
    /// The cap on each of stdout, stderr and the log. Writing more to stdout
    /// or stderr fails the call; log lines past the cap are dropped.
    pub output_bytes: usize,
    /// The largest response (the sum of its texts) the host accepts.
    pub response_bytes: usize,
}

impl Default for CallLimits {
    fn default() -> Self {
        CallLimits {
            deadline: Duration::from_secs(10),
            memory_bytes: 256 << 20,
            output_bytes: 64 << 10,
            response_bytes: 16 << 20,
        }
    }
}

/// A line the guest logged through the `log` import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub level: LogLevel,
    pub message: String,
}

/// What a successful call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutput {
    pub response: plait_sdk::Response,
    pub logs: Vec<LogLine>,
    pub stdout: String,
    pub stderr: String,
    pub duration: Duration,
}

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
    /// Calls that ended in a [`CallError`].
    pub call_failures: u64,
}

/// The functions built into the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Builtin {
    PatchAndTransform,
    AutoReady,
    EnvironmentConfigs,
}

static PATCH_AND_TRANSFORM_WASM: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/plait_patch_and_transform.wasm"));
static AUTO_READY_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/plait_auto_ready.wasm"));
static ENVIRONMENT_CONFIGS_WASM: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/plait_environment_configs.wasm"));

static BUILTIN_DIGESTS: LazyLock<[String; 3]> =
    LazyLock::new(|| Builtin::ALL.map(|b| digest(b.wasm())));

impl Builtin {
    pub const ALL: [Builtin; 3] = [
        Builtin::PatchAndTransform,
        Builtin::AutoReady,
        Builtin::EnvironmentConfigs,
    ];

    /// The function name a Composition step refers to.
    pub fn name(self) -> &'static str {
        match self {
            Builtin::PatchAndTransform => "function-patch-and-transform",
            Builtin::AutoReady => "function-auto-ready",
            Builtin::EnvironmentConfigs => "function-environment-configs",
        }
    }

    pub fn from_name(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The built-in a Function's package stands for: upstream's own package
    /// of a function plait ships, from any registry, at any version.
    pub fn from_package(package: &str) -> Option<Builtin> {
        let without_digest = package.split('@').next().unwrap_or(package);
        let repository = match without_digest.rsplit_once(':') {
            Some((repo, tag)) if !tag.contains('/') => repo,
            _ => without_digest,
        };
        Builtin::ALL.into_iter().find(|b| {
            repository
                .strip_suffix(b.name())
                .is_some_and(|rest| rest.ends_with("crossplane-contrib/"))
        })
    }

    /// The embedded component.
    pub fn wasm(self) -> &'static [u8] {
        match self {
            Builtin::PatchAndTransform => PATCH_AND_TRANSFORM_WASM,
            Builtin::AutoReady => AUTO_READY_WASM,
            Builtin::EnvironmentConfigs => ENVIRONMENT_CONFIGS_WASM,
        }
    }

    /// The `sha256:<hex>` of the embedded component.
    pub fn digest(self) -> &'static str {
        &BUILTIN_DIGESTS[self as usize]
    }
}

/// A compiled function, ready to instantiate.
pub struct Module {
    /// `sha256:<hex>` of the component bytes.
    pub digest: String,
    engine: Engine,
    pre: FunctionPre<CallState>,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module")
            .field("digest", &self.digest)
            .finish_non_exhaustive()
    }
}

/// The runtime. Cloning is cheap and clones share the engine and caches.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

/// One module slot per digest; holding its lock while compiling makes
/// concurrent loads of the same digest wait for one compilation.
type Slot = Arc<Mutex<Option<Arc<Module>>>>;

struct Inner {
    engine: Engine,
    linker: Linker<CallState>,
    disk: Option<DiskCache>,
    modules: Mutex<HashMap<String, Slot>>,
    compiles: Semaphore,
    /// One permit per component instance in the pool, so a burst of calls
    /// queues instead of failing to instantiate.
    instances: Semaphore,
    max_memory_bytes: usize,
    counters: Counters,
    ticker: Option<Ticker>,
}

#[derive(Default)]
struct Counters {
    memory_hits: AtomicU64,
    disk_hits: AtomicU64,
    cache_misses: AtomicU64,
    compiles: AtomicU64,
    calls: AtomicU64,
    call_failures: AtomicU64,
}

/// Advances the engine's epoch every [`EPOCH_TICK`] until the sender drops.
struct Ticker {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<()>,
}

impl Ticker {
    fn start(engine: Engine) -> std::io::Result<Ticker> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("plait-epoch".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(EPOCH_TICK) {
                    engine.increment_epoch();
                }
            })?;
        Ok(Ticker { stop, thread })
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(Ticker { stop, thread }) = self.ticker.take() {
            drop(stop);
            // The thread only sleeps and ticks; it cannot panic, and a
            // failed join leaves nothing to clean up.
            let _ = thread.join();
        }
    }
}

/// A counting semaphore; std has none and compiles block a thread anyway.
struct Semaphore {
    permits: Mutex<usize>,
    freed: Condvar,
}

struct Permit<'a>(&'a Semaphore);

impl Semaphore {
    fn new(permits: usize) -> Semaphore {
        Semaphore {
            permits: Mutex::new(permits.max(1)),
            freed: Condvar::new(),
        }
    }

    fn acquire(&self) -> Permit<'_> {
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
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What a store holds during one call.
struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: StoreLimits,
    log: LogSink,
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl bindings::plait::function::types::Host for CallState {}

impl wit_log::Host for CallState {
    fn log(&mut self, level: wit_log::Level, message: String) {
        let level = match level {
            wit_log::Level::Trace => LogLevel::Trace,
            wit_log::Level::Debug => LogLevel::Debug,
            wit_log::Level::Info => LogLevel::Info,
            wit_log::Level::Warn => LogLevel::Warn,
            wit_log::Level::Error => LogLevel::Error,
        };
        self.log.push(level, message);
    }
}

/// Log lines kept within a byte budget. Past it, the line that does not fit
/// is cut and a single marker records that lines were dropped: a chatty
/// guest loses log lines, never its result.
struct LogSink {
    lines: Vec<LogLine>,
    remaining: usize,
    limit: usize,
    truncated: bool,
}

impl LogSink {
    fn new(limit: usize) -> LogSink {
        LogSink {
            lines: Vec::new(),
            remaining: limit,
            limit,
            truncated: false,
        }
    }

    fn push(&mut self, level: LogLevel, mut message: String) {
        if self.truncated {
            return;
        }
        if message.len() <= self.remaining {
            self.remaining -= message.len();
            self.lines.push(LogLine { level, message });
            return;
        }
        let mut cut = self.remaining;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        if !message.is_empty() {
            self.lines.push(LogLine { level, message });
        }
        self.lines.push(LogLine {
            level: LogLevel::Warn,
            message: format!(
                "log truncated: the limit of {} bytes was reached",
                self.limit
            ),
        });
        self.remaining = 0;
        self.truncated = true;
    }
}

impl Runtime {
    pub fn new(config: RuntimeConfig) -> Result<Runtime, RuntimeError> {
        let engine_error = |e: wasmtime::Error| RuntimeError::Engine(e.to_string());
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(config.pool.total_component_instances)
            .total_core_instances(config.pool.total_core_instances)
            .total_memories(config.pool.total_memories)
            .total_tables(config.pool.total_tables)
            .max_memory_size(config.pool.max_memory_bytes)
            .max_core_instances_per_component(64)
            .max_memories_per_component(8)
            .max_tables_per_component(32)
            .max_component_instance_size(1 << 20)
            .max_core_instance_size(1 << 20)
            .linear_memory_keep_resident(config.pool.keep_resident_bytes)
            .table_keep_resident(config.pool.keep_resident_bytes)
            .pagemap_scan(Enabled::Auto);
        let mut engine_config = Config::new();
        engine_config
            .epoch_interruption(true)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&engine_config).map_err(engine_error)?;

        let mut linker = Linker::<CallState>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(engine_error)?;
        Function::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s).map_err(engine_error)?;

        let disk = config
            .cache_dir
            .map(|dir| {
                DiskCache::new(dir.clone(), &engine).map_err(|e| {
                    RuntimeError::Engine(format!("cannot use cache dir {}: {e}", dir.display()))
                })
            })
            .transpose()?;
        let ticker = Ticker::start(engine.clone())
            .map_err(|e| RuntimeError::Engine(format!("cannot start the epoch ticker: {e}")))?;

        Ok(Runtime {
            inner: Arc::new(Inner {
                engine,
                linker,
                disk,
                modules: Mutex::new(HashMap::new()),
                compiles: Semaphore::new(config.max_concurrent_compiles),
                instances: Semaphore::new(
                    usize::try_from(config.pool.total_component_instances).unwrap_or(usize::MAX),
                ),
                max_memory_bytes: config.pool.max_memory_bytes,
                counters: Counters::default(),
                ticker: Some(ticker),
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

    fn load_digest(&self, digest: String, wasm: &[u8]) -> Result<Arc<Module>, RuntimeError> {
        let inner = &self.inner;
        let slot = lock(&inner.modules)
            .entry(digest.clone())
            .or_default()
            .clone();
        let mut guard = lock(&slot);
        if let Some(module) = guard.as_ref() {
            inner.counters.memory_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(module.clone());
        }
        let loaded = self.load_uncached(digest.clone(), wasm);
        match &loaded {
            Ok(module) => *guard = Some(module.clone()),
            Err(_) => {
                // Forget the empty slot so rejected inputs do not pile up;
                // loads already waiting on it retry with their own copy.
                drop(guard);
                let mut modules = lock(&inner.modules);
                if modules.get(&digest).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
                    modules.remove(&digest);
                }
            }
        }
        loaded
    }

    /// Fetches a module from the disk cache or compiles it.
    fn load_uncached(&self, digest: String, wasm: &[u8]) -> Result<Arc<Module>, RuntimeError> {
        let inner = &self.inner;
        let component = match inner.disk.as_ref().map(|d| d.load(&inner.engine, &digest)) {
            Some(Lookup::Hit(component)) => {
                inner.counters.disk_hits.fetch_add(1, Ordering::Relaxed);
                component
            }
            Some(Lookup::Miss) | None => {
                inner.counters.cache_misses.fetch_add(1, Ordering::Relaxed);
                self.compile(&digest, wasm)?
            }
        };
        let pre = inner
            .linker
            .instantiate_pre(&component)
            .and_then(FunctionPre::new)
            .map_err(|e| RuntimeError::Link {
                digest: digest.clone(),
                message: format!("{e:#}"),
            })?;
        Ok(Arc::new(Module {
            digest,
            engine: inner.engine.clone(),
            pre,
        }))
    }

    fn compile(&self, digest: &str, wasm: &[u8]) -> Result<Component, RuntimeError> {
        let inner = &self.inner;
        let component = {
            let _permit = inner.compiles.acquire();
            Component::new(&inner.engine, wasm).map_err(|e| RuntimeError::Compile {
                digest: digest.to_string(),
                message: format!("{e:#}"),
            })?
        };
        inner.counters.compiles.fetch_add(1, Ordering::Relaxed);
        if let Some(disk) = &inner.disk {
            // The cache only saves time: failing to write it is not a load failure.
            let stored = component
                .serialize()
                .map_err(|e| e.to_string())
                .and_then(|bytes| disk.store(digest, &bytes).map_err(|e| e.to_string()));
            if let Err(error) = stored {
                tracing::warn!(digest, %error, "cannot write the compiled component to the cache");
            }
        }
        Ok(component)
    }

    /// Runs `module` on `request` in a fresh instance.
    pub fn call(
        &self,
        module: &Module,
        request: &plait_sdk::Request,
        limits: &CallLimits,
    ) -> Result<CallOutput, CallError> {
        let counters = &self.inner.counters;
        counters.calls.fetch_add(1, Ordering::Relaxed);
        let result = self.call_fresh(module, request, limits);
        if result.is_err() {
            counters.call_failures.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    /// Instantiates `module` in a fresh store and drops it: shows that a
    /// module links and starts within `limits` (e.g. when admitting a
    /// function), and isolates the cost of instantiation from the call.
    pub fn instantiate(&self, module: &Module, limits: &CallLimits) -> Result<(), CallError> {
        let _slot = self.inner.instances.acquire();
        let mut sandbox = self.sandbox(module, limits)?;
        module
            .pre
            .instantiate(&mut sandbox.store)
            .map(drop)
            .map_err(|e| sandbox.failure(e, true))
    }

    /// A fresh store for one call of `module`, with every limit applied.
    fn sandbox<'a>(
        &self,
        module: &'a Module,
        limits: &'a CallLimits,
    ) -> Result<Sandbox<'a>, CallError> {
        if !Engine::same(&module.engine, &self.inner.engine) {
            return Err(CallError::Instantiate {
                digest: module.digest.clone(),
                message: "the module was loaded by a different runtime".into(),
            });
        }
        let memory_limit = limits.memory_bytes.min(self.inner.max_memory_bytes);
        let stdout = MemoryOutputPipe::new(limits.output_bytes);
        let stderr = MemoryOutputPipe::new(limits.output_bytes);
        // No preopens, environment or arguments (the builder's defaults), and
        // no network: every address and name lookup is refused.
        let wasi = WasiCtx::builder()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .socket_addr_check(|_, _| Box::pin(async { false }))
            .build();
        let state = CallState {
            wasi,
            table: ResourceTable::new(),
            limits: StoreLimitsBuilder::new()
                .memory_size(memory_limit)
                .trap_on_grow_failure(true)
                .build(),
            log: LogSink::new(limits.output_bytes),
        };
        let mut store = Store::new(&self.inner.engine, state);
        store.limiter(|s| &mut s.limits);
        store.set_epoch_deadline(deadline_ticks(limits.deadline));
        Ok(Sandbox {
            store,
            stdout,
            stderr,
            digest: &module.digest,
            limits,
            memory_limit,
        })
    }

    fn call_fresh(
        &self,
        module: &Module,
        request: &plait_sdk::Request,
        limits: &CallLimits,
    ) -> Result<CallOutput, CallError> {
        let started = Instant::now();
        let digest = module.digest.as_str();
        let _slot = self.inner.instances.acquire();
        let mut sandbox = self.sandbox(module, limits)?;
        let instance: Function = module
            .pre
            .instantiate(&mut sandbox.store)
            .map_err(|e| sandbox.failure(e, true))?;
        let request = convert::request_to_wit(request);
        let result = instance
            .call_run_function(&mut sandbox.store, &request)
            .map_err(|e| sandbox.failure(e, false))?;
        let response = result.map_err(|e| CallError::Guest {
            digest: digest.to_string(),
            error: convert::error_from_wit(e),
        })?;

        let size = convert::response_size(&response);
        if size > limits.response_bytes {
            return Err(CallError::ResponseTooLarge {
                digest: digest.to_string(),
                size,
                limit: limits.response_bytes,
            });
        }
        let response = convert::response_from_wit(response).map_err(|detail| {
            CallError::MalformedResponse {
                digest: digest.to_string(),
                detail,
            }
        })?;
        let logs = std::mem::take(&mut sandbox.store.data_mut().log.lines);
        Ok(CallOutput {
            response,
            logs,
            stdout: String::from_utf8_lossy(&sandbox.stdout.contents()).into_owned(),
            stderr: String::from_utf8_lossy(&sandbox.stderr.contents()).into_owned(),
            duration: started.elapsed(),
        })
    }

    pub fn stats(&self) -> RuntimeStats {
        let c = &self.inner.counters;
        let get = |n: &AtomicU64| n.load(Ordering::Relaxed);
        RuntimeStats {
            memory_hits: get(&c.memory_hits),
            disk_hits: get(&c.disk_hits),
            cache_misses: get(&c.cache_misses),
            compiles: get(&c.compiles),
            calls: get(&c.calls),
            call_failures: get(&c.call_failures),
        }
    }
}

/// One call's store and the pipes that capture its output.
struct Sandbox<'a> {
    store: Store<CallState>,
    stdout: MemoryOutputPipe,
    stderr: MemoryOutputPipe,
    digest: &'a str,
    limits: &'a CallLimits,
    memory_limit: usize,
}

impl Sandbox<'_> {
    /// Attributes a failed instantiation or call to its cause.
    fn failure(&self, error: wasmtime::Error, on_instantiate: bool) -> CallError {
        let stderr = String::from_utf8_lossy(&self.stderr.contents()).into_owned();
        let full = |pipe: &MemoryOutputPipe| pipe.contents().len() >= self.limits.output_bytes;
        let cx = FailureContext {
            digest: self.digest,
            deadline: self.limits.deadline,
            memory_limit: self.memory_limit,
            output_limit: self.limits.output_bytes,
            output_full: full(&self.stdout) || full(&self.stderr),
            stderr_tail: tail(&stderr, STDERR_TAIL_BYTES),
        };
        match classify(&error, &cx) {
            // A trap while starting up is the module's fault, not the call's.
            CallError::Trap { message, .. } if on_instantiate => CallError::Instantiate {
                digest: self.digest.to_string(),
                message,
            },
            other => other,
        }
    }
}

/// How much of stderr a trap message quotes: a panic message fits.
const STDERR_TAIL_BYTES: usize = 1024;

/// The last `max` bytes of `text`, on a character boundary.
fn tail(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// Epoch ticks for a deadline. The next tick can come at any moment, so one
/// extra tick makes sure the guest gets at least the whole deadline.
fn deadline_ticks(deadline: Duration) -> u64 {
    let tick = EPOCH_TICK.as_nanos();
    // Capped far below u64::MAX: wasmtime adds the current epoch to it.
    let cap = u64::MAX / 2;
    let ticks = deadline.as_nanos().div_ceil(tick);
    u64::try_from(ticks).unwrap_or(cap).min(cap) + 1
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// Threads of this process named like the ticker. No other unit test
    /// creates a `Runtime`, so the count belongs to this test alone.
    fn ticker_threads() -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter(|t| {
                let comm = t.as_ref().unwrap().path().join("comm");
                std::fs::read_to_string(comm).is_ok_and(|name| name.trim() == "plait-epoch")
            })
            .count()
    }

    #[test]
    fn the_ticker_stops_with_the_last_runtime() {
        let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
        let clone = runtime.clone();
        // A new thread names itself once it runs.
        let started = Instant::now();
        while ticker_threads() == 0 && started.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(EPOCH_TICK);
        }
        assert_eq!(ticker_threads(), 1);
        drop(runtime);
        assert_eq!(ticker_threads(), 1);
        drop(clone);
        assert_eq!(ticker_threads(), 0);
    }

    #[test]
    fn upstream_packages_map_to_builtins() {
        let cases = [
            (
                "xpkg.crossplane.io/crossplane-contrib/function-patch-and-transform:v0.8.2",
                Some(Builtin::PatchAndTransform),
            ),
            (
                "xpkg.upbound.io/crossplane-contrib/function-patch-and-transform:v0.1.4",
                Some(Builtin::PatchAndTransform),
            ),
            (
                "xpkg.crossplane.io/crossplane-contrib/function-auto-ready:v0.6.3",
                Some(Builtin::AutoReady),
            ),
            (
                "xpkg.crossplane.io/crossplane-contrib/function-auto-ready@sha256:abcd",
                Some(Builtin::AutoReady),
            ),
            (
                "localhost:5000/crossplane-contrib/function-auto-ready",
                Some(Builtin::AutoReady),
            ),
            (
                "xpkg.crossplane.io/someone-else/function-patch-and-transform:v1",
                None,
            ),
            (
                "xpkg.crossplane.io/crossplane-contrib/function-go-templating:v0.9.0",
                None,
            ),
        ];
        for (package, want) in cases {
            assert_eq!(Builtin::from_package(package), want, "{package}");
        }
    }

    #[test]
    fn deadlines_round_up_to_whole_ticks_plus_one() {
        let cases = [
            (Duration::ZERO, 1),
            (Duration::from_millis(1), 2),
            (Duration::from_millis(10), 2),
            (Duration::from_millis(300), 31),
            (Duration::from_secs(10), 1001),
        ];
        for (deadline, ticks) in cases {
            assert_eq!(deadline_ticks(deadline), ticks, "{deadline:?}");
        }
    }

    #[test]
    fn log_lines_past_the_budget_are_cut_and_marked_once() {
        let mut sink = LogSink::new(10);
        sink.push(LogLevel::Info, "12345".into());
        sink.push(LogLevel::Warn, "abcdefgh".into());
        sink.push(LogLevel::Error, "dropped".into());
        let lines: Vec<_> = sink
            .lines
            .iter()
            .map(|l| (l.level, l.message.as_str()))
            .collect();
        assert_eq!(
            lines,
            vec![
                (LogLevel::Info, "12345"),
                (LogLevel::Warn, "abcde"),
                (
                    LogLevel::Warn,
                    "log truncated: the limit of 10 bytes was reached"
                ),
            ]
        );
    }

    #[test]
    fn log_truncation_respects_character_boundaries() {
        let mut sink = LogSink::new(3);
        sink.push(LogLevel::Info, "aéb".into());
        assert_eq!(sink.lines[0].message, "aé");
        let mut sink = LogSink::new(2);
        sink.push(LogLevel::Info, "aéb".into());
        assert_eq!(sink.lines[0].message, "a");
    }

    #[test]
    fn tails_respect_character_boundaries() {
        assert_eq!(tail("abc", 10), "abc");
        assert_eq!(tail("abc", 2), "bc");
        assert_eq!(tail("aé", 1), "");
        assert_eq!(tail("aé", 2), "é");
    }

    #[test]
    fn builtins_round_trip_through_their_names() {
        for builtin in Builtin::ALL {
            assert_eq!(Builtin::from_name(builtin.name()), Some(builtin));
            assert!(builtin.digest().starts_with("sha256:"));
            assert!(!builtin.wasm().is_empty());
        }
        assert_eq!(Builtin::from_name("function-go-templating"), None);
        assert_eq!(
            Builtin::from_name("function-patch-and-transform"),
            Some(Builtin::PatchAndTransform)
        );
        assert_eq!(
            Builtin::from_name("function-auto-ready"),
            Some(Builtin::AutoReady)
        );
    }
}
