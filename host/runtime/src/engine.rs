//! The wasmtime engine every call shares: its pooling allocator and the
//! epoch clock that call deadlines are counted in.

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::config::PoolConfig;
use crate::error::RuntimeError;

/// How often the epoch advances; call deadlines are counted in these ticks.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// An engine that interrupts on epochs and instantiates from a pool sized
/// by `pool`, compiling each component's functions on several threads when
/// `parallel_compilation`.
pub(crate) fn new_engine(
    pool: &PoolConfig,
    parallel_compilation: bool,
) -> Result<Engine, RuntimeError> {
    let mut allocation = PoolingAllocationConfig::new();
    allocation
        .total_component_instances(pool.total_component_instances)
        .total_core_instances(pool.total_core_instances)
        .total_memories(pool.total_memories)
        .total_tables(pool.total_tables)
        .table_elements(pool.table_elements)
        .max_memory_size(pool.max_memory_bytes)
        .max_core_instances_per_component(64)
        .max_memories_per_component(8)
        .max_tables_per_component(32)
        // An instance's metadata grows with the functions it can call
        // indirectly: 1.7 MiB for a Go component of 58,000 functions.
        .max_component_instance_size(1 << 22)
        .max_core_instance_size(1 << 22)
        .linear_memory_keep_resident(pool.keep_resident_bytes)
        .table_keep_resident(pool.keep_resident_bytes)
        .pagemap_scan(Enabled::Auto);
    let mut config = Config::new();
    config
        .parallel_compilation(parallel_compilation)
        .epoch_interruption(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(allocation));
    Engine::new(&config).map_err(|e| RuntimeError::Engine(e.to_string()))
}

/// Advances the engine's epoch every [`EPOCH_TICK`] until dropped.
pub(crate) struct Ticker {
    stop: mpsc::Sender<()>,
    /// Taken when the ticker drops, to wait for the thread.
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    pub(crate) fn start(engine: Engine) -> std::io::Result<Ticker> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("plait-epoch".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(EPOCH_TICK) {
                    engine.increment_epoch();
                }
            })?;
        Ok(Ticker {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        // Any message ends the thread's wait; if the thread is already gone
        // the send fails and there is nothing to stop.
        let _ = self.stop.send(());
        if let Some(thread) = self.thread.take() {
            // The thread only sleeps and ticks; it cannot panic, and a
            // failed join leaves nothing to clean up.
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::{Runtime, RuntimeConfig};

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
}
