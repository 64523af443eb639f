//! What a store holds during one call: the guest's WASI context with its
//! captured stdout and stderr, its memory limit, its log lines, and the host
//! imports that give the guest access to them.

use plait_sdk::LogLevel;
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{Engine, ResourceLimiter, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxView, WasiView};

use crate::bindings::Function;
use crate::bindings::plait::function::log as wit_log;
use crate::config::ReadOnlyDir;
use crate::error::RuntimeError;
use crate::sync::Reservation;

/// A line the guest logged through the `log` import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub level: LogLevel,
    pub message: String,
}

/// What a store holds during one call.
pub(crate) struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) limits: MemoryInUse,
    /// The call's share of the guest memory budget, while it runs.
    pub(crate) memory: Option<Reservation>,
    pub(crate) log: LogSink,
    pub(crate) stdout: MemoryOutputPipe,
    pub(crate) stderr: MemoryOutputPipe,
}

/// The one argument a guest gets: its program name.
pub(crate) const PROGRAM_NAME: &str = "function";

impl CallState {
    /// State for a guest that may grow its memory to `memory_limit`, write
    /// `output_bytes` to each of stdout, stderr and the log, and read the
    /// directories `read_only_dirs` grant; a directory that cannot be opened
    /// is returned with why.
    pub(crate) fn new(
        memory_limit: usize,
        output_bytes: usize,
        read_only_dirs: &[ReadOnlyDir],
    ) -> Result<CallState, (ReadOnlyDir, String)> {
        let stdout = MemoryOutputPipe::new(output_bytes);
        let stderr = MemoryOutputPipe::new(output_bytes);
        // No environment, no network (every address and name lookup is
        // refused), and no preopens but the directories granted, read-only.
        // One argument, the program name every process has: Go's runtime
        // and libraries (klog, for one) read os.Args[0] while they start.
        let mut builder = WasiCtx::builder();
        builder
            .arg(PROGRAM_NAME)
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .socket_addr_check(|_, _| Box::pin(async { false }));
        for dir in read_only_dirs {
            builder
                .preopened_dir(&dir.host, &dir.guest, FsPerms::ReadOnly)
                .map_err(|e| (dir.clone(), e.to_string()))?;
        }
        let wasi = builder.build();
        Ok(CallState {
            wasi,
            table: ResourceTable::new(),
            limits: MemoryInUse {
                limits: StoreLimitsBuilder::new()
                    .memory_size(memory_limit)
                    .trap_on_grow_failure(true)
                    .build(),
                bytes: 0,
            },
            memory: None,
            log: LogSink::new(output_bytes),
            stdout,
            stderr,
        })
    }
}

/// The store's limits, counting the bytes of linear memory the guest has:
/// a paused call holds only those of its memory budget.
pub(crate) struct MemoryInUse {
    limits: StoreLimits,
    bytes: usize,
}

impl MemoryInUse {
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

impl ResourceLimiter for MemoryInUse {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = self.limits.memory_growing(current, desired, maximum)?;
        if allowed {
            // Counted when allowed: a growth the allocator then refuses
            // traps the call, which ends with its store.
            self.bytes += desired.saturating_sub(current);
        }
        Ok(allowed)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.memory_grow_failed(error)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

/// Everything a function may import: WASI and plait's own world.
pub(crate) fn linker(engine: &Engine) -> Result<Linker<CallState>, RuntimeError> {
    let engine_error = |e: wasmtime::Error| RuntimeError::Engine(e.to_string());
    let mut linker = Linker::<CallState>::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(engine_error)?;
    Function::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s).map_err(engine_error)?;
    Ok(linker)
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl crate::bindings::plait::function::types::Host for CallState {}

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
pub(crate) struct LogSink {
    pub(crate) lines: Vec<LogLine>,
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
