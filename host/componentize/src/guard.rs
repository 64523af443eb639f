//! Keeping a module's `cabi_realloc` inside the component.
//!
//! The host lowers a request into the guest by calling the guest's
//! `cabi_realloc`, and while it runs the component model forbids the guest
//! to call any import: one that does traps with "cannot leave component
//! instance". Go's `cabi_realloc` allocates on Go's heap, and Go's
//! allocator and collector read the clock (`nanotime`, `walltime`) and
//! yield while waiting for their workers, through WASI imports. Whether a
//! given allocation does depends on the heap's state, so a Go function
//! trapped now and then, on a request of any size.
//!
//! This pass wraps the module's `cabi_realloc` so that, while it runs,
//! `clock_time_get` answers without leaving the component (the last time
//! read from the same clock, one nanosecond on, so time never stands
//! still or goes back) and `sched_yield` returns at once. Outside
//! `cabi_realloc` both call through as before. The wrappers are appended
//! as new functions and globals, the export is pointed at the wrapper, and
//! every call of the two imports is redirected: no other index moves.

use wasm_encoder::reencode::Reencode;
use wasm_encoder::{BlockType, Function, MemArg, ValType};
use wasmparser::{Payload, TypeRef};

use crate::ComponentizeError;
use crate::snapshot::Clocks;

const WASI: &str = "wasi_snapshot_preview1";
const REALLOC: &str = "cabi_realloc";

/// What the pass needs to know of the module.
#[derive(Debug, Default)]
struct Layout {
    /// The type index of every function, imported ones first.
    function_types: Vec<u32>,
    imported_functions: u32,
    defined_functions: u32,
    imported_globals: u32,
    defined_globals: u32,
    clock: Option<u32>,
    sched_yield: Option<u32>,
    realloc: Option<u32>,
}

impl Layout {
    fn of(core: &[u8]) -> Result<Layout, ComponentizeError> {
        let mut layout = Layout::default();
        for payload in wasmparser::Parser::new(0).parse_all(core) {
            match payload? {
                Payload::ImportSection(imports) => {
                    for import in imports.into_imports() {
                        let import = import?;
                        match import.ty {
                            TypeRef::Func(ty) => {
                                layout.function_types.push(ty);
                                let index = layout.imported_functions;
                                layout.imported_functions += 1;
                                if import.module == WASI && import.name == "clock_time_get" {
                                    layout.clock = Some(index);
                                } else if import.module == WASI && import.name == "sched_yield" {
                                    layout.sched_yield = Some(index);
                                }
                            }
                            TypeRef::Global(_) => layout.imported_globals += 1,
                            _ => {}
                        }
                    }
                }
                Payload::FunctionSection(functions) => {
                    layout.defined_functions = functions.count();
                    for ty in functions {
                        layout.function_types.push(ty?);
                    }
                }
                Payload::GlobalSection(globals) => layout.defined_globals = globals.count(),
                Payload::ExportSection(exports) => {
                    for export in exports {
                        let export = export?;
                        if export.name == REALLOC && export.kind == wasmparser::ExternalKind::Func {
                            layout.realloc = Some(export.index);
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(layout)
    }

    /// The type of function `index`; a function absent from the module
    /// is never called, so any type will do for its wrapper.
    fn type_of(&self, index: Option<u32>) -> Result<u32, ComponentizeError> {
        let Some(index) = index else {
            return Ok(0);
        };
        usize::try_from(index)
            .ok()
            .and_then(|i| self.function_types.get(i))
            .copied()
            .ok_or_else(|| ComponentizeError::Guard(format!("function {index} has no type")))
    }
}

/// The module with its `cabi_realloc` guarded, or unchanged when it has no
/// `cabi_realloc` or imports neither the clock nor `sched_yield`. `since`
/// is what the module last read from each clock before it was snapshotted:
/// the guard's answers go on from there.
pub(crate) fn guard_realloc(core: &[u8], since: Clocks) -> Result<Vec<u8>, ComponentizeError> {
    let layout = Layout::of(core)?;
    let Some(realloc) = layout.realloc else {
        return Ok(core.to_vec());
    };
    if layout.clock.is_none() && layout.sched_yield.is_none() {
        return Ok(core.to_vec());
    }
    if layout.defined_globals == 0 {
        return Err(ComponentizeError::Guard(
            "a module exporting cabi_realloc has no global section".into(),
        ));
    }
    let first_new_function = layout.imported_functions + layout.defined_functions;
    let first_new_global = layout.imported_globals + layout.defined_globals;
    let mut guard = Guard {
        realloc,
        clock: layout.clock,
        sched_yield: layout.sched_yield,
        clock_guard: first_new_function,
        yield_guard: first_new_function + 1,
        realloc_guard: first_new_function + 2,
        in_realloc: first_new_global,
        last_realtime: first_new_global + 1,
        last_monotonic: first_new_global + 2,
        since,
        types: Types {
            clock: layout.type_of(layout.clock)?,
            sched_yield: layout.type_of(layout.sched_yield)?,
            realloc: layout.type_of(Some(realloc))?,
        },
    };
    let mut module = wasm_encoder::Module::new();
    guard
        .parse_core_module(&mut module, wasmparser::Parser::new(0), core)
        .map_err(|e| ComponentizeError::Guard(format!("cannot rewrite the module: {e}")))?;
    Ok(module.finish())
}

/// The type indices the wrappers take: each that of the function it wraps.
#[derive(Debug)]
struct Types {
    clock: u32,
    sched_yield: u32,
    realloc: u32,
}

struct Guard {
    realloc: u32,
    clock: Option<u32>,
    sched_yield: Option<u32>,
    clock_guard: u32,
    yield_guard: u32,
    realloc_guard: u32,
    in_realloc: u32,
    last_realtime: u32,
    last_monotonic: u32,
    since: Clocks,
    types: Types,
}

impl Guard {
    /// `clock_time_get(id, precision, *time) -> errno`: inside
    /// `cabi_realloc`, the last time read from that clock plus one
    /// nanosecond; outside, the import's answer, remembered.
    fn clock_guard(&self) -> Function {
        let (id, precision, time, errno) = (0, 1, 2, 3);
        let store = MemArg {
            offset: 0,
            align: 3,
            memory_index: 0,
        };
        let mut body = Function::new([(1, ValType::I32)]);
        let Some(clock) = self.clock else {
            // Never called: the module does not import the clock.
            body.instructions().unreachable().end();
            return body;
        };
        let mut f = body.instructions();
        f.global_get(self.in_realloc)
            .if_(BlockType::Empty)
            .local_get(id);
        f.if_(BlockType::Empty);
        bump_and_store(&mut f, self.last_monotonic, time, store);
        f.else_();
        bump_and_store(&mut f, self.last_realtime, time, store);
        f.end().i32_const(0).return_();
        f.end();
        f.local_get(id)
            .local_get(precision)
            .local_get(time)
            .call(clock)
            .local_tee(errno)
            .i32_eqz()
            .if_(BlockType::Empty)
            .local_get(id)
            .i32_eqz()
            .if_(BlockType::Empty)
            .local_get(time)
            .i64_load(store)
            .global_set(self.last_realtime)
            .else_()
            .local_get(time)
            .i64_load(store)
            .global_set(self.last_monotonic)
            .end()
            .end()
            .local_get(errno)
            .end();
        body
    }

    /// `sched_yield() -> errno`: nothing to yield to inside `cabi_realloc`.
    fn yield_guard(&self) -> Function {
        let mut body = Function::new([]);
        let Some(sched_yield) = self.sched_yield else {
            body.instructions().unreachable().end();
            return body;
        };
        body.instructions()
            .global_get(self.in_realloc)
            .if_(BlockType::Empty)
            .i32_const(0)
            .return_()
            .end()
            .call(sched_yield)
            .end();
        body
    }

    /// `cabi_realloc(old, old_size, align, new_size)` with the flag set
    /// while the module's own runs.
    fn realloc_guard(&self) -> Function {
        let mut body = Function::new([]);
        body.instructions()
            .i32_const(1)
            .global_set(self.in_realloc)
            .local_get(0)
            .local_get(1)
            .local_get(2)
            .local_get(3)
            .call(self.realloc)
            .i32_const(0)
            .global_set(self.in_realloc)
            .end();
        body
    }
}

impl Reencode for Guard {
    type Error = std::convert::Infallible;

    fn function_index(
        &mut self,
        func: u32,
    ) -> Result<u32, wasm_encoder::reencode::Error<Self::Error>> {
        Ok(if Some(func) == self.clock {
            self.clock_guard
        } else if Some(func) == self.sched_yield {
            self.yield_guard
        } else {
            func
        })
    }

    fn parse_function_section(
        &mut self,
        functions: &mut wasm_encoder::FunctionSection,
        section: wasmparser::FunctionSectionReader<'_>,
    ) -> Result<(), wasm_encoder::reencode::Error<Self::Error>> {
        wasm_encoder::reencode::utils::parse_function_section(self, functions, section)?;
        functions.function(self.types.clock);
        functions.function(self.types.sched_yield);
        functions.function(self.types.realloc);
        Ok(())
    }

    fn parse_global_section(
        &mut self,
        globals: &mut wasm_encoder::GlobalSection,
        section: wasmparser::GlobalSectionReader<'_>,
    ) -> Result<(), wasm_encoder::reencode::Error<Self::Error>> {
        wasm_encoder::reencode::utils::parse_global_section(self, globals, section)?;
        let global = |val_type| wasm_encoder::GlobalType {
            val_type,
            mutable: true,
            shared: false,
        };
        globals.global(global(ValType::I32), &wasm_encoder::ConstExpr::i32_const(0));
        // Globals are signed; the clocks' nanoseconds are read back unsigned.
        let since = |nanos: u64| wasm_encoder::ConstExpr::i64_const(nanos.cast_signed());
        globals.global(global(ValType::I64), &since(self.since.realtime));
        globals.global(global(ValType::I64), &since(self.since.monotonic));
        Ok(())
    }

    fn parse_export(
        &mut self,
        exports: &mut wasm_encoder::ExportSection,
        export: wasmparser::Export<'_>,
    ) -> Result<(), wasm_encoder::reencode::Error<Self::Error>> {
        if export.name == REALLOC && export.kind == wasmparser::ExternalKind::Func {
            exports.export(REALLOC, wasm_encoder::ExportKind::Func, self.realloc_guard);
            return Ok(());
        }
        wasm_encoder::reencode::utils::parse_export(self, exports, export)
    }

    fn parse_code_section(
        &mut self,
        code: &mut wasm_encoder::CodeSection,
        section: wasmparser::CodeSectionReader<'_>,
    ) -> Result<(), wasm_encoder::reencode::Error<Self::Error>> {
        wasm_encoder::reencode::utils::parse_code_section(self, code, section)?;
        code.function(&self.clock_guard());
        code.function(&self.yield_guard());
        code.function(&self.realloc_guard());
        Ok(())
    }
}

/// `last += 1; *time = last`.
fn bump_and_store(f: &mut wasm_encoder::InstructionSink<'_>, last: u32, time: u32, store: MemArg) {
    f.global_get(last)
        .i64_const(1)
        .i64_add()
        .global_set(last)
        .local_get(time)
        .global_get(last)
        .i64_store(store);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A module shaped like a Go reactor: its `cabi_realloc` reads the
    /// clock and yields, as Go's allocator may; `now` reads it outside.
    const MODULE: &str = r#"(module
        (import "wasi_snapshot_preview1" "clock_time_get" (func $clock (param i32 i64 i32) (result i32)))
        (import "wasi_snapshot_preview1" "sched_yield" (func $yield (result i32)))
        (memory (export "memory") 1)
        (global $sp (mut i32) (i32.const 1024))
        (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
            (drop (call $yield))
            (drop (call $clock (i32.const 1) (i64.const 0) (i32.const 64)))
            (i64.load (i32.const 64))
            i32.wrap_i64)
        (func (export "now") (param $id i32) (result i64)
            (drop (call $clock (local.get $id) (i64.const 0) (i32.const 64)))
            (i64.load (i32.const 64))))"#;

    /// Host imports that count their calls and trap when called while the
    /// host is inside `cabi_realloc`, as the component model does.
    struct Host {
        in_realloc: bool,
        calls: u32,
        now: i64,
    }

    fn instance(module: &[u8]) -> (wasmtime::Store<Host>, wasmtime::Instance) {
        let engine = wasmtime::Engine::default();
        let module = wasmtime::Module::new(&engine, module).unwrap();
        let mut linker = wasmtime::Linker::<Host>::new(&engine);
        linker
            .func_wrap(
                "wasi_snapshot_preview1",
                "clock_time_get",
                |mut caller: wasmtime::Caller<'_, Host>,
                 id: i32,
                 _: i64,
                 out: i32|
                 -> wasmtime::Result<i32> {
                    if caller.data().in_realloc {
                        return Err(wasmtime::Error::msg("cannot leave component instance"));
                    }
                    caller.data_mut().calls += 1;
                    let now = caller.data().now + i64::from(id) * 1_000_000;
                    let memory = caller.get_export("memory").unwrap().into_memory().unwrap();
                    memory.write(&mut caller, out as usize, &now.to_le_bytes())?;
                    Ok(0)
                },
            )
            .unwrap();
        linker
            .func_wrap(
                "wasi_snapshot_preview1",
                "sched_yield",
                |caller: wasmtime::Caller<'_, Host>| -> wasmtime::Result<i32> {
                    if caller.data().in_realloc {
                        return Err(wasmtime::Error::msg("cannot leave component instance"));
                    }
                    Ok(0)
                },
            )
            .unwrap();
        let mut store = wasmtime::Store::new(
            &engine,
            Host {
                in_realloc: false,
                calls: 0,
                now: 5_000,
            },
        );
        let instance = linker.instantiate(&mut store, &module).unwrap();
        (store, instance)
    }

    fn realloc(store: &mut wasmtime::Store<Host>, instance: &wasmtime::Instance) -> Option<i32> {
        let f = instance
            .get_typed_func::<(i32, i32, i32, i32), i32>(&mut *store, REALLOC)
            .unwrap();
        store.data_mut().in_realloc = true;
        let got = f.call(&mut *store, (0, 0, 8, 16)).ok();
        store.data_mut().in_realloc = false;
        got
    }

    #[test]
    fn an_unguarded_realloc_that_reads_the_clock_traps() {
        let module = wat::parse_str(MODULE).unwrap();
        let (mut store, instance) = instance(&module);
        assert_eq!(realloc(&mut store, &instance), None);
    }

    #[test]
    fn a_guarded_realloc_reads_the_last_time_without_leaving() {
        let module = guard_realloc(&wat::parse_str(MODULE).unwrap(), Clocks::default()).unwrap();
        wasmparser::Validator::new().validate_all(&module).unwrap();
        let (mut store, instance) = instance(&module);
        let now = instance
            .get_typed_func::<i32, i64>(&mut store, "now")
            .unwrap();
        // Outside realloc the clock is the host's: monotonic (1) and realtime (0).
        assert_eq!(now.call(&mut store, 1).unwrap(), 1_005_000);
        assert_eq!(now.call(&mut store, 0).unwrap(), 5_000);
        assert_eq!(store.data().calls, 2);
        // Inside, the last monotonic time plus one, then plus two: time moves on.
        assert_eq!(realloc(&mut store, &instance), Some(1_005_001));
        assert_eq!(realloc(&mut store, &instance), Some(1_005_002));
        assert_eq!(
            store.data().calls,
            2,
            "the import was not called inside realloc"
        );
        // And outside again, the host's clock.
        store.data_mut().now = 9_000;
        assert_eq!(now.call(&mut store, 1).unwrap(), 1_009_000);
    }

    #[test]
    fn a_module_without_realloc_or_wasi_clock_is_left_alone() {
        let cases = [
            r#"(module (func (export "f")))"#,
            r#"(module (memory 1) (global (mut i32) (i32.const 0))
                (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32) i32.const 0))"#,
        ];
        for wat in cases {
            let module = wat::parse_str(wat).unwrap();
            assert_eq!(
                guard_realloc(&module, Clocks::default()).unwrap(),
                module,
                "{wat}"
            );
        }
    }
}
