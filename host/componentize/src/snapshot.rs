//! Pre-initialising a reactor: its `_initialize` (for Go, the runtime's
//! start and every package's `init`) runs once, here, and the state it
//! leaves (memory and globals) becomes the module's initial state, with
//! `_initialize` no longer exported. Every instance of the component then
//! starts where initialisation ended, so no call pays for it.
//!
//! The snapshot must be the same bytes every time the same module is
//! componentized, so what initialisation can observe is fixed: the clocks
//! start at zero (1970 for the wall clock) and advance one nanosecond per
//! read, randomness is a fixed stream, the arguments are the one the host
//! passes every call (`function`), and there is no environment and no
//! preopened directory. NaNs are canonicalised, so a float computed while
//! initialising is the same on every machine. Output written while
//! initialising is dropped (it is quoted if initialisation fails).

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use wasmtime::{
    Caller, Config, Engine, Extern, FuncType, Instance, Linker, Module, Store, StoreLimits,
    StoreLimitsBuilder, Val,
};
use wasmtime_wizer::{InstanceState, SnapshotVal, Wizer};

use crate::ComponentizeError;

/// The reactor's initialisation function (WASI's name, which Go uses).
pub(crate) const INITIALIZE: &str = "_initialize";

const WASI: &str = "wasi_snapshot_preview1";

/// The one argument the host passes every call (`plait-runtime`'s program
/// name): Go reads its arguments while it starts.
const PROGRAM_NAME: &str = "function";

/// Initialisation may use this much memory...
const MEMORY_LIMIT: usize = 1 << 30;
/// ...and run about this many instructions: a module whose `init` never
/// ends fails the build instead of hanging it.
const FUEL: u64 = 200_000_000_000;

/// How much of what initialisation printed a failure quotes.
const OUTPUT_LIMIT: usize = 16 << 10;

/// WASI errnos.
const SUCCESS: i32 = 0;
const EBADF: i32 = 8;
const ENOSYS: i32 = 52;

/// The last value initialisation read from each clock: the module's own
/// clock reads go on from these, never back.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Clocks {
    pub(crate) realtime: u64,
    pub(crate) monotonic: u64,
}

/// A module whose initialisation has run.
pub(crate) struct Snapshot {
    pub(crate) module: Vec<u8>,
    pub(crate) clocks: Clocks,
}

/// Whether `core` exports a reactor's `_initialize`.
pub(crate) fn has_initialize(core: &[u8]) -> Result<bool, ComponentizeError> {
    for payload in wasmparser::Parser::new(0).parse_all(core) {
        if let wasmparser::Payload::ExportSection(exports) = payload? {
            for export in exports {
                let export = export?;
                if export.name == INITIALIZE && export.kind == wasmparser::ExternalKind::Func {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

/// Runs `core`'s `_initialize` and returns the module that starts where it
/// ended.
pub(crate) fn preinitialize(core: &[u8]) -> Result<Snapshot, ComponentizeError> {
    preinitialize_within(core, FUEL)
}

/// As [`preinitialize`], failing once initialisation has run about `fuel`
/// instructions.
fn preinitialize_within(core: &[u8], fuel: u64) -> Result<Snapshot, ComponentizeError> {
    let failed = |e: wasmtime::Error| ComponentizeError::Snapshot(format!("{e:#}"));
    let mut wizer = Wizer::new();
    wizer.init_func(INITIALIZE);
    let core = coalesce_data(core)?;
    let (context, instrumented) = wizer.instrument(&core).map_err(failed)?;

    let mut config = Config::new();
    // The code runs once: compiling it fast matters more than running it.
    config.cranelift_opt_level(wasmtime::OptLevel::None);
    config.cranelift_nan_canonicalization(true);
    config.consume_fuel(true);
    let engine = Engine::new(&config).map_err(failed)?;
    let module = Module::new(&engine, &instrumented).map_err(failed)?;
    let linker = deterministic_imports(&engine, &module)?;
    let mut store = Store::new(
        &engine,
        Init {
            limits: StoreLimitsBuilder::new().memory_size(MEMORY_LIMIT).build(),
            ..Init::default()
        },
    );
    store.limiter(|init| &mut init.limits);
    store.set_fuel(fuel).map_err(failed)?;
    let instance = linker.instantiate(&mut store, &module).map_err(failed)?;
    let initialize = instance
        .get_typed_func::<(), ()>(&mut store, INITIALIZE)
        .map_err(failed)?;
    if let Err(e) = initialize.call(&mut store, ()) {
        let output = String::from_utf8_lossy(&store.data().output).into_owned();
        let out_of_fuel = store.get_fuel().is_ok_and(|fuel| fuel == 0);
        let why = if out_of_fuel {
            format!("it ran more than {fuel} instructions")
        } else {
            format!("{e:#}")
        };
        return Err(ComponentizeError::Snapshot(if output.is_empty() {
            format!("its {INITIALIZE} failed: {why}")
        } else {
            format!("its {INITIALIZE} failed: {why}; it printed:\n{output}")
        }));
    }
    let clocks = store.data().clocks;
    let mut state = Initialised {
        store: &mut store,
        instance,
        missing: None,
    };
    let module = ready(wizer.snapshot(&context, &mut state)).map_err(failed)?;
    if let Some(name) = state.missing {
        return Err(ComponentizeError::Snapshot(format!(
            "cannot read {name} of the initialised instance"
        )));
    }
    Ok(Snapshot { module, clocks })
}

/// Active data segments closer than this are written as one.
const SEGMENT_GAP: usize = 256;

/// `core` with its active data segments merged into fewer, the same bytes
/// at the same places. Wizer keeps an empty segment in place of each of
/// the module's own (so that indices stay put) besides its own ones, and Go
/// writes as many segments as engines accept (100,000): merged, there is
/// room for both. A module that could name a segment (one with a data
/// count section, which `memory.init` needs) is left as it is.
fn coalesce_data(core: &[u8]) -> Result<Vec<u8>, ComponentizeError> {
    let mut segments: Vec<(u32, Vec<u8>)> = Vec::new();
    let mut passive: Vec<&[u8]> = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(core) {
        match payload? {
            wasmparser::Payload::DataCountSection { .. } => return Ok(core.to_vec()),
            wasmparser::Payload::DataSection(reader) => {
                for segment in reader {
                    let segment = segment?;
                    match segment.kind {
                        wasmparser::DataKind::Passive => passive.push(segment.data),
                        wasmparser::DataKind::Active {
                            memory_index: 0,
                            offset_expr,
                        } => match offset_expr.get_operators_reader().read()? {
                            wasmparser::Operator::I32Const { value } => {
                                segments.push((value.cast_unsigned(), segment.data.to_vec()));
                            }
                            _ => return Ok(core.to_vec()),
                        },
                        wasmparser::DataKind::Active { .. } => return Ok(core.to_vec()),
                    }
                }
            }
            _ => {}
        }
    }
    segments.sort_by_key(|(offset, _)| *offset);
    let mut merged: Vec<(u32, Vec<u8>)> = Vec::new();
    for (offset, data) in segments {
        let start = usize::try_from(offset)?;
        match merged.last_mut() {
            Some((last, bytes)) => {
                let end = usize::try_from(*last)? + bytes.len();
                if start < end {
                    // Overlapping segments: the later one wins, which
                    // merging would have to reproduce; leave them be.
                    return Ok(core.to_vec());
                }
                if start - end <= SEGMENT_GAP {
                    bytes.resize(start - usize::try_from(*last)?, 0);
                    bytes.extend_from_slice(&data);
                } else {
                    merged.push((offset, data));
                }
            }
            None => merged.push((offset, data)),
        }
    }
    let mut data = wasm_encoder::DataSection::new();
    for bytes in passive {
        data.passive(bytes.iter().copied());
    }
    for (offset, bytes) in merged {
        let offset = wasm_encoder::ConstExpr::i32_const(offset.cast_signed());
        data.active(0, &offset, bytes);
    }
    let mut module = wasm_encoder::Module::new();
    for payload in wasmparser::Parser::new(0).parse_all(core) {
        let payload = payload?;
        if let wasmparser::Payload::DataSection(_) = payload {
            module.section(&data);
        } else if let Some((id, range)) = payload.as_section() {
            let range = usize::try_from(range.start)?..usize::try_from(range.end)?;
            module.section(&wasm_encoder::RawSection {
                id,
                data: core.get(range).unwrap_or_default(),
            });
        }
    }
    Ok(module.finish())
}

/// What initialisation sees of the world.
#[derive(Default)]
struct Init {
    limits: StoreLimits,
    clocks: Clocks,
    random: SplitMix64,
    output: Vec<u8>,
}

/// A fixed stream of "random" bytes (SplitMix64 from seed 0): the snapshot
/// must not depend on when or where it was taken.
#[derive(Default)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Every function `module` imports, answered deterministically: the WASI
/// calls a runtime makes while it starts, plait's log (dropped), and a
/// trap naming anything else.
fn deterministic_imports(
    engine: &Engine,
    module: &Module,
) -> Result<Linker<Init>, ComponentizeError> {
    let mut linker = Linker::new(engine);
    // Go imports some WASI functions more than once.
    linker.allow_shadowing(true);
    for import in module.imports() {
        let wasmtime::ExternType::Func(ty) = import.ty() else {
            // wizer refuses imported globals, tables and memories.
            continue;
        };
        let (module_name, name) = (import.module().to_string(), import.name().to_string());
        let result = if module_name == WASI {
            define_wasi(&mut linker, &name, ty)
        } else if module_name.starts_with("plait:function/log") {
            linker
                .func_new(&module_name, &name, ty, |_, _, _| Ok(()))
                .map(drop)
        } else {
            let what = format!("{module_name}.{name}");
            linker
                .func_new(&module_name, &name, ty, move |_, _, _| {
                    wasmtime::bail!(
                        "it called {what}, which plait does not provide while a module initialises"
                    )
                })
                .map(drop)
        };
        result.map_err(|e| ComponentizeError::Snapshot(format!("{e:#}")))?;
    }
    Ok(linker)
}

fn define_wasi(linker: &mut Linker<Init>, name: &str, ty: FuncType) -> wasmtime::Result<()> {
    let returns_errno = ty.results().len() == 1;
    let what = name.to_string();
    linker.func_new(WASI, name, ty, move |mut caller, params, results| {
        let errno = match what.as_str() {
            "proc_exit" => {
                let code = int(params, 0);
                wasmtime::bail!("it exited with code {code}");
            }
            _ => wasi_call(&mut caller, &what, params)?,
        };
        if returns_errno && let Some(result) = results.first_mut() {
            *result = Val::I32(errno);
        }
        Ok(())
    })?;
    Ok(())
}

/// One WASI call: its errno, having written its results.
fn wasi_call(caller: &mut Caller<'_, Init>, name: &str, params: &[Val]) -> wasmtime::Result<i32> {
    let arg = |i| u32::try_from(int(params, i)).unwrap_or(u32::MAX);
    Ok(match name {
        "args_sizes_get" => {
            write(caller, arg(0), &1u32.to_le_bytes())?;
            let size = u32::try_from(PROGRAM_NAME.len() + 1)?;
            write(caller, arg(1), &size.to_le_bytes())?;
            SUCCESS
        }
        "args_get" => {
            let (argv, buf) = (arg(0), arg(1));
            write(caller, argv, &buf.to_le_bytes())?;
            write(caller, buf, format!("{PROGRAM_NAME}\0").as_bytes())?;
            SUCCESS
        }
        "environ_sizes_get" => {
            write(caller, arg(0), &0u32.to_le_bytes())?;
            write(caller, arg(1), &0u32.to_le_bytes())?;
            SUCCESS
        }
        "environ_get" | "sched_yield" => SUCCESS,
        "clock_res_get" => {
            write(caller, arg(1), &1u64.to_le_bytes())?;
            SUCCESS
        }
        "clock_time_get" => {
            let clocks = &mut caller.data_mut().clocks;
            let clock = if int(params, 0) == 0 {
                &mut clocks.realtime
            } else {
                &mut clocks.monotonic
            };
            *clock += 1;
            let now = *clock;
            write(caller, arg(2), &now.to_le_bytes())?;
            SUCCESS
        }
        "poll_oneoff" => poll_clocks(caller, arg(0), arg(1), arg(2), arg(3))?,
        "random_get" => {
            let (buf, len) = (arg(0), usize::try_from(arg(1))?);
            let mut bytes = Vec::with_capacity(len + 8);
            while bytes.len() < len {
                bytes.extend_from_slice(&caller.data_mut().random.next().to_le_bytes());
            }
            bytes.truncate(len);
            write(caller, buf, &bytes)?;
            SUCCESS
        }
        "fd_fdstat_get" if arg(0) <= 2 => {
            // A character device, blocking, with every right: stdio as a
            // terminal has it.
            let mut stat = [0u8; 24];
            stat[0] = 2;
            stat[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
            write(caller, arg(1), &stat)?;
            SUCCESS
        }
        "fd_write" if (1..=2).contains(&arg(0)) => {
            let (iovs, count, written) = (arg(1), arg(2), arg(3));
            let mut total = 0u32;
            for i in 0..count {
                let iov = read(caller, iovs + i * 8, 8)?;
                let base = u32::from_le_bytes(iov[0..4].try_into()?);
                let len = u32::from_le_bytes(iov[4..8].try_into()?);
                let bytes = read(caller, base, len)?;
                let output = &mut caller.data_mut().output;
                let room = OUTPUT_LIMIT.saturating_sub(output.len());
                output.extend_from_slice(&bytes[..bytes.len().min(room)]);
                total += len;
            }
            write(caller, written, &total.to_le_bytes())?;
            SUCCESS
        }
        // No preopened directory, and no other descriptor but stdio.
        "fd_prestat_get"
        | "fd_prestat_dir_name"
        | "fd_fdstat_get"
        | "fd_write"
        | "fd_read"
        | "fd_close"
        | "fd_seek"
        | "fd_filestat_get" => EBADF,
        _ => ENOSYS,
    })
}

/// WASI's `poll_oneoff` over clock subscriptions only, as Go's runtime
/// sleeps (`usleep`, while its collector stops the world): the sleep ends at
/// once, with the monotonic clock moved past it, so initialising stays
/// deterministic and never waits. A subscription to a descriptor is ENOSYS:
/// no descriptor but stdio exists here.
fn poll_clocks(
    caller: &mut Caller<'_, Init>,
    subscriptions: u32,
    events: u32,
    count: u32,
    written: u32,
) -> wasmtime::Result<i32> {
    const SUBSCRIPTION: u32 = 48;
    const EVENT: u32 = 32;
    const CLOCK: u8 = 0;
    const ABSTIME: u16 = 1;
    let mut longest = 0u64;
    for i in 0..count {
        let subscription = read(caller, subscriptions + i * SUBSCRIPTION, SUBSCRIPTION)?;
        if subscription[8] != CLOCK {
            return Ok(ENOSYS);
        }
        let timeout = u64::from_le_bytes(subscription[24..32].try_into()?);
        let flags = u16::from_le_bytes(subscription[40..42].try_into()?);
        let monotonic = caller.data().clocks.monotonic;
        let wait = if flags & ABSTIME != 0 {
            timeout.saturating_sub(monotonic)
        } else {
            timeout
        };
        longest = longest.max(wait);
        let mut event = [0u8; EVENT as usize];
        event[0..8].copy_from_slice(&subscription[0..8]);
        event[10] = CLOCK;
        write(caller, events + i * EVENT, &event)?;
    }
    let clocks = &mut caller.data_mut().clocks;
    clocks.monotonic = clocks.monotonic.saturating_add(longest);
    clocks.realtime = clocks.realtime.saturating_add(longest);
    write(caller, written, &count.to_le_bytes())?;
    Ok(SUCCESS)
}

fn int(params: &[Val], index: usize) -> i64 {
    match params.get(index) {
        Some(Val::I32(v)) => i64::from(*v as u32),
        Some(Val::I64(v)) => *v,
        _ => 0,
    }
}

fn memory(caller: &mut Caller<'_, Init>) -> wasmtime::Result<wasmtime::Memory> {
    match caller.get_export("memory") {
        Some(Extern::Memory(memory)) => Ok(memory),
        _ => wasmtime::bail!("it called WASI without exporting its memory"),
    }
}

fn write(caller: &mut Caller<'_, Init>, at: u32, bytes: &[u8]) -> wasmtime::Result<()> {
    let memory = memory(caller)?;
    memory.write(caller, usize::try_from(at)?, bytes)?;
    Ok(())
}

fn read(caller: &mut Caller<'_, Init>, at: u32, len: u32) -> wasmtime::Result<Vec<u8>> {
    let memory = memory(caller)?;
    let mut bytes = vec![0; usize::try_from(len)?];
    memory.read(&*caller, usize::try_from(at)?, &mut bytes)?;
    Ok(bytes)
}

/// The initialised instance, as wizer reads it.
struct Initialised<'a> {
    store: &'a mut Store<Init>,
    instance: Instance,
    /// An export wizer asked for that the instance does not have.
    missing: Option<String>,
}

impl InstanceState for Initialised<'_> {
    fn global_get(
        &mut self,
        name: &str,
        _: wasmtime_wizer::ValType,
    ) -> impl Future<Output = SnapshotVal> + Send {
        let value = self
            .instance
            .get_global(&mut *self.store, name)
            .map(|global| global.get(&mut *self.store));
        let value = match value {
            Some(Val::I32(x)) => SnapshotVal::I32(x),
            Some(Val::I64(x)) => SnapshotVal::I64(x),
            Some(Val::F32(x)) => SnapshotVal::F32(x),
            Some(Val::F64(x)) => SnapshotVal::F64(x),
            Some(Val::V128(x)) => SnapshotVal::V128(x.as_u128()),
            _ => {
                self.missing = Some(format!("global {name}"));
                SnapshotVal::I32(0)
            }
        };
        std::future::ready(value)
    }

    fn memory_contents(
        &mut self,
        name: &str,
        contents: impl FnOnce(&[u8]) + Send,
    ) -> impl Future<Output = ()> + Send {
        match self.instance.get_memory(&mut *self.store, name) {
            Some(memory) => contents(memory.data(&*self.store)),
            None => self.missing = Some(format!("memory {name}")),
        }
        std::future::ready(())
    }
}

/// The output of a future that is ready at once: wizer's snapshot is async
/// only for hosts that read the instance asynchronously, and this one reads
/// it in place.
fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut context = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A reactor whose initialisation reads the clock and randomness into
    /// memory and sets a global; `state` returns the global.
    const REACTOR: &str = r#"(module
        (import "wasi_snapshot_preview1" "clock_time_get" (func $clock (param i32 i64 i32) (result i32)))
        (import "wasi_snapshot_preview1" "random_get" (func $random (param i32 i32) (result i32)))
        (memory (export "memory") 1)
        (global $state (mut i32) (i32.const 0))
        (func (export "_initialize")
            (drop (call $clock (i32.const 1) (i64.const 0) (i32.const 64)))
            (drop (call $clock (i32.const 1) (i64.const 0) (i32.const 64)))
            (drop (call $random (i32.const 128) (i32.const 8)))
            (global.set $state (i32.const 7)))
        (func (export "state") (result i32) (global.get $state)))"#;

    fn instantiate(module: &[u8]) -> (Store<()>, Instance) {
        let engine = Engine::default();
        let module = Module::new(&engine, module).unwrap();
        let mut linker = Linker::new(&engine);
        linker
            .func_wrap(WASI, "clock_time_get", |_: i32, _: i64, _: i32| -> i32 {
                ENOSYS
            })
            .unwrap();
        linker
            .func_wrap(WASI, "random_get", |_: i32, _: i32| -> i32 { ENOSYS })
            .unwrap();
        let mut store = Store::new(&engine, ());
        let instance = linker.instantiate(&mut store, &module).unwrap();
        (store, instance)
    }

    #[test]
    fn a_reactor_starts_where_its_initialisation_ended() {
        let core = wat::parse_str(REACTOR).unwrap();
        assert!(has_initialize(&core).unwrap());
        let snapshot = preinitialize(&core).unwrap();
        assert!(!has_initialize(&snapshot.module).unwrap());
        assert_eq!(
            snapshot.clocks,
            Clocks {
                realtime: 0,
                monotonic: 2
            }
        );
        let (mut store, instance) = instantiate(&snapshot.module);
        let state = instance
            .get_typed_func::<(), i32>(&mut store, "state")
            .unwrap();
        assert_eq!(state.call(&mut store, ()).unwrap(), 7);
        let memory = instance.get_memory(&mut store, "memory").unwrap();
        let data = memory.data(&store);
        assert_eq!(data[64..72], 2u64.to_le_bytes());
        assert_eq!(data[128..136], SplitMix64::default().next().to_le_bytes());
    }

    /// The active data segments of `module`: (offset, bytes).
    fn segments(module: &[u8]) -> Vec<(i32, Vec<u8>)> {
        let mut found = Vec::new();
        for payload in wasmparser::Parser::new(0).parse_all(module) {
            if let wasmparser::Payload::DataSection(reader) = payload.unwrap() {
                for segment in reader {
                    let segment = segment.unwrap();
                    if let wasmparser::DataKind::Active { offset_expr, .. } = segment.kind
                        && let wasmparser::Operator::I32Const { value } =
                            offset_expr.get_operators_reader().read().unwrap()
                    {
                        found.push((value, segment.data.to_vec()));
                    }
                }
            }
        }
        found
    }

    #[test]
    fn close_data_segments_are_merged_and_far_ones_kept_apart() {
        let core = wat::parse_str(
            r#"(module (memory 1)
                (data (i32.const 16) "ab")
                (data (i32.const 20) "cd")
                (data (i32.const 4000) "ef"))"#,
        )
        .unwrap();
        assert_eq!(
            segments(&coalesce_data(&core).unwrap()),
            [(16, b"ab\0\0cd".to_vec()), (4000, b"ef".to_vec())]
        );
    }

    #[test]
    fn the_same_module_always_gives_the_same_snapshot() {
        let core = wat::parse_str(REACTOR).unwrap();
        assert_eq!(
            preinitialize(&core).unwrap().module,
            preinitialize(&core).unwrap().module
        );
    }

    #[test]
    fn a_sleep_while_initialising_ends_at_once_with_the_clock_moved_past_it() {
        // (the subscription's type tag, its timeout in ns, the errno, the
        // monotonic clock after, the events written)
        let cases = [(0, 1_000, SUCCESS, 1_000, 1), (1, 1_000, ENOSYS, 0, 0)];
        for (tag, timeout, errno, monotonic, events) in cases {
            let wat = format!(
                r#"(module
                    (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
                    (memory (export "memory") 1)
                    (global $errno (mut i32) (i32.const -1))
                    (func (export "_initialize")
                        (i64.store (i32.const 0) (i64.const 42))
                        (i32.store8 (i32.const 8) (i32.const {tag}))
                        (i32.store (i32.const 16) (i32.const 1))
                        (i64.store (i32.const 24) (i64.const {timeout}))
                        (global.set $errno (call $poll (i32.const 0) (i32.const 256) (i32.const 1) (i32.const 512))))
                    (func (export "errno") (result i32) (global.get $errno)))"#
            );
            let snapshot = preinitialize(&wat::parse_str(&wat).unwrap()).unwrap();
            assert_eq!(snapshot.clocks.monotonic, monotonic, "tag {tag}");
            let engine = Engine::default();
            let module = Module::new(&engine, &snapshot.module).unwrap();
            let mut store = Store::new(&engine, ());
            // What initialising left in memory, as the snapshot's data.
            let data = segments(&snapshot.module);
            let byte_at = |at: i32| -> u8 {
                data.iter()
                    .find_map(|(offset, bytes)| {
                        usize::try_from(at - offset)
                            .ok()
                            .and_then(|i| bytes.get(i).copied())
                    })
                    .unwrap_or(0)
            };
            assert_eq!(byte_at(512), events, "tag {tag}: events written");
            if events == 1 {
                assert_eq!(
                    byte_at(256),
                    42,
                    "the event carries the subscription's userdata"
                );
            }
            let mut linker = Linker::new(&engine);
            linker
                .func_wrap(
                    WASI,
                    "poll_oneoff",
                    |_: i32, _: i32, _: i32, _: i32| -> i32 { ENOSYS },
                )
                .unwrap();
            let instance = linker.instantiate(&mut store, &module).unwrap();
            let got = instance
                .get_typed_func::<(), i32>(&mut store, "errno")
                .unwrap()
                .call(&mut store, ())
                .unwrap();
            assert_eq!(got, errno, "tag {tag}");
        }
    }

    #[test]
    fn an_initialisation_that_fails_says_why() {
        // (what _initialize does, what the error says)
        let cases = [
            ("(call $exit (i32.const 3))", "it exited with code 3"),
            ("(call $other)", "it called env.other"),
            ("unreachable", "unreachable"),
            ("(loop $forever (br $forever))", "instructions"),
        ];
        for (body, want) in cases {
            let wat = format!(
                r#"(module
                    (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
                    (import "env" "other" (func $other))
                    (memory (export "memory") 1)
                    (func (export "_initialize") {body}))"#
            );
            let core = wat::parse_str(&wat).unwrap();
            let err = preinitialize_within(&core, 1_000_000)
                .err()
                .unwrap()
                .to_string();
            assert!(err.contains(want), "{body}: {err}");
        }
    }
}
