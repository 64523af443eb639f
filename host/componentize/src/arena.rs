//! The arena the Go SDK reserves for the WASI adapter.
//!
//! The adapter allocates its stack and state on its first WASI call. A Go
//! module's runtime makes that call while it starts, on a stack where no
//! Go export may run, so the adapter must not allocate through the Go
//! module's `cabi_realloc`; nor with `memory.grow`, since Go's heap takes
//! every page past its data sooner or later. plait's Go SDK reserves an
//! arena in the module's data, marked so this step finds it, and this
//! step adds a `cabi_realloc_adapter` in plain WebAssembly that hands it
//! out; wit-component gives that to the adapter.

use crate::ComponentizeError;
use crate::sections::{extend_section, find, leb_u32};

/// What the Go SDK's arena starts with, before its size (u32, little
/// endian): guests/sdk-go/component/abi.go.
const ARENA_MARKER: &[u8] = b"plait-sdk-go:adapter-arena:v1:";

/// The export wit-component gives the adapter as its `cabi_realloc`.
const ADAPTER_REALLOC: &str = "cabi_realloc_adapter";

/// Where the arena is: its first usable byte and the byte past its end.
#[derive(Debug, PartialEq, Eq)]
struct Arena {
    start: u32,
    end: u32,
}

/// The module with a `cabi_realloc_adapter` over the Go SDK's arena, or
/// unchanged when it has no arena (any module not built with the SDK) or
/// already exports one.
pub(crate) fn with_adapter_arena(core: &[u8]) -> Result<Vec<u8>, ComponentizeError> {
    let Some(arena) = find_arena(core)? else {
        return Ok(core.to_vec());
    };
    add_adapter_realloc(core, &arena)
}

fn find_arena(core: &[u8]) -> Result<Option<Arena>, ComponentizeError> {
    let mut found = None;
    for payload in wasmparser::Parser::new(0).parse_all(core) {
        match payload? {
            wasmparser::Payload::ExportSection(exports) => {
                for export in exports {
                    if export?.name == ADAPTER_REALLOC {
                        return Ok(None);
                    }
                }
            }
            wasmparser::Payload::DataSection(data) => {
                for segment in data {
                    let segment = segment?;
                    let wasmparser::DataKind::Active { offset_expr, .. } = segment.kind else {
                        continue;
                    };
                    let Some(at) = find(segment.data, ARENA_MARKER) else {
                        continue;
                    };
                    let base = match offset_expr.get_operators_reader().read()? {
                        wasmparser::Operator::I32Const { value } => value as u32,
                        other => {
                            return Err(ComponentizeError::Arena(format!(
                                "the SDK's arena is in a data segment at {other:?}"
                            )));
                        }
                    };
                    // The linker leaves trailing zero bytes out of a
                    // segment: the size's missing high bytes are zero.
                    let mut size = [0u8; 4];
                    let size_bytes = segment
                        .data
                        .get(at + ARENA_MARKER.len()..)
                        .unwrap_or_default();
                    for (to, from) in size.iter_mut().zip(size_bytes) {
                        *to = *from;
                    }
                    let size = u32::from_le_bytes(size);
                    let address = base.checked_add(u32::try_from(at)?).ok_or_else(|| {
                        ComponentizeError::Arena("the SDK's arena is past 4 GiB".into())
                    })?;
                    let end = address.checked_add(size).ok_or_else(|| {
                        ComponentizeError::Arena("the SDK's arena is past 4 GiB".into())
                    })?;
                    let start = (address + ARENA_MARKER.len() as u32 + 4).next_multiple_of(16);
                    if start >= end {
                        return Err(ComponentizeError::Arena(format!(
                            "the SDK's arena of {size} bytes is too small"
                        )));
                    }
                    if found.replace(Arena { start, end }).is_some() {
                        return Err(ComponentizeError::Arena(
                            "the module has two arenas for the WASI adapter".into(),
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(found)
}

/// The module with one more function, `cabi_realloc_adapter(old, old_size,
/// align, new_size)`: a bump allocator over the arena, which traps when the
/// arena is full or when asked to grow an allocation (the adapter never
/// does). Types, functions and globals are appended, so no index moves.
fn add_adapter_realloc(core: &[u8], arena: &Arena) -> Result<Vec<u8>, ComponentizeError> {
    use wasmparser::{Payload, TypeRef};

    let (mut types, mut funcs, mut globals) = (None, None, None);
    let (mut imported_funcs, mut imported_globals) = (0u32, 0u32);
    for payload in wasmparser::Parser::new(0).parse_all(core) {
        match payload? {
            Payload::TypeSection(r) => types = Some(r.count()),
            Payload::ImportSection(r) => {
                for import in r.into_imports() {
                    match import?.ty {
                        TypeRef::Func(_) => imported_funcs += 1,
                        TypeRef::Global(_) => imported_globals += 1,
                        _ => {}
                    }
                }
            }
            Payload::FunctionSection(r) => funcs = Some(r.count()),
            Payload::GlobalSection(r) => globals = Some(r.count()),
            _ => {}
        }
    }
    let (Some(types), Some(funcs), Some(globals)) = (types, funcs, globals) else {
        return Err(ComponentizeError::Arena(
            "a module with the SDK's arena has type, function and global sections".into(),
        ));
    };
    let function = imported_funcs + funcs;
    let global = imported_globals + globals;

    // (param $old i32 $old_size i32 $align i32 $new_size i32) (result i32) (local $p i32)
    let mut body = wasm_encoder::Function::new([(1, wasm_encoder::ValType::I32)]);
    let (old, align, new_size, p) = (0, 2, 3, 4);
    body.instructions()
        // Only fresh allocations.
        .local_get(old)
        .if_(wasm_encoder::BlockType::Empty)
        .unreachable()
        .end()
        // p = (next + align - 1) & -align
        .global_get(global)
        .local_get(align)
        .i32_add()
        .i32_const(1)
        .i32_sub()
        .i32_const(0)
        .local_get(align)
        .i32_sub()
        .i32_and()
        .local_tee(p)
        // p + new_size past the end, or wrapping round: trap.
        .local_get(new_size)
        .i32_add()
        .i32_const(arena.end.cast_signed())
        .i32_gt_u()
        .local_get(p)
        .local_get(new_size)
        .i32_add()
        .local_get(p)
        .i32_lt_u()
        .i32_or()
        .if_(wasm_encoder::BlockType::Empty)
        .unreachable()
        .end()
        .local_get(p)
        .local_get(new_size)
        .i32_add()
        .global_set(global)
        .local_get(p)
        .end();
    let mut code = Vec::new();
    wasm_encoder::Encode::encode(&body, &mut code);

    // (func (param i32 i32 i32 i32) (result i32))
    let ty = [0x60, 4, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7f];
    let mut func = Vec::new();
    leb_u32(types, &mut func);
    // (global (mut i32) (i32.const start))
    let mut glob = vec![0x7f, 0x01, 0x41];
    wasm_encoder::Encode::encode(&arena.start.cast_signed(), &mut glob);
    glob.push(0x0b);
    let mut export = Vec::new();
    wasm_encoder::Encode::encode(ADAPTER_REALLOC, &mut export);
    export.push(0x00);
    leb_u32(function, &mut export);

    let (header, sections) = core
        .split_at_checked(8)
        .ok_or(ComponentizeError::NotAModule)?;
    let mut out = header.to_vec();
    let mut reader = wasmparser::BinaryReader::new(sections, 8);
    while !reader.eof() {
        let id = reader.read_u8()?;
        let size = reader.read_var_u32()?;
        let content = reader.read_bytes(usize::try_from(size)?)?;
        match id {
            1 => extend_section(&mut out, id, content, &ty)?,
            3 => extend_section(&mut out, id, content, &func)?,
            6 => extend_section(&mut out, id, content, &glob)?,
            7 => extend_section(&mut out, id, content, &export)?,
            10 => extend_section(&mut out, id, content, &code)?,
            _ => {
                out.push(id);
                leb_u32(size, &mut out);
                out.extend_from_slice(content);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A module shaped like a Go one (types, functions, globals, exports,
    /// code, data) with the SDK's arena marker at 1024 + 16.
    fn module_with_arena(marker: &[u8], size: u32) -> Vec<u8> {
        let mut data = vec![0u8; 16];
        data.extend_from_slice(marker);
        data.extend_from_slice(&size.to_le_bytes());
        let hex: String = data.iter().map(|b| format!("\\{b:02x}")).collect();
        wat::parse_str(format!(
            r#"(module
                 (import "wasi_snapshot_preview1" "sched_yield" (func (result i32)))
                 (memory (export "memory") 1)
                 (global $sp (mut i32) (i32.const 0))
                 (func (export "f") (result i32) global.get $sp)
                 (data (i32.const 1024) "{hex}"))"#
        ))
        .unwrap()
    }

    #[test]
    fn the_sdks_arena_is_found_by_its_marker() {
        let cases = [
            (
                module_with_arena(ARENA_MARKER, 4096),
                Some(Arena {
                    start: 1088,
                    end: 1040 + 4096,
                }),
            ),
            (module_with_arena(b"some-other-bytes", 4096), None),
        ];
        for (module, want) in cases {
            assert_eq!(find_arena(&module).unwrap(), want);
        }
        let err = find_arena(&module_with_arena(ARENA_MARKER, 8)).unwrap_err();
        assert!(err.to_string().contains("too small"), "{err}");
    }

    /// The added allocator hands out aligned, disjoint pieces of the arena
    /// and traps rather than run past it or grow an allocation.
    #[test]
    fn the_added_allocator_bump_allocates_inside_the_arena() {
        let module = with_adapter_arena(&module_with_arena(ARENA_MARKER, 4096)).unwrap();
        wasmparser::Validator::new().validate_all(&module).unwrap();
        let engine = wasmtime::Engine::default();
        let compiled = wasmtime::Module::new(&engine, &module).unwrap();
        let mut linker = wasmtime::Linker::new(&engine);
        linker
            .func_wrap("wasi_snapshot_preview1", "sched_yield", || 0i32)
            .unwrap();
        // (old, old_size, align, new_size)
        type Call = (i32, i32, i32, i32);
        let realloc = |calls: &[Call]| {
            let mut store = wasmtime::Store::new(&engine, ());
            let instance = linker.instantiate(&mut store, &compiled).unwrap();
            let f = instance
                .get_typed_func::<(i32, i32, i32, i32), i32>(&mut store, ADAPTER_REALLOC)
                .unwrap();
            calls
                .iter()
                .map(|&args| f.call(&mut store, args).ok())
                .collect::<Vec<_>>()
        };
        // The arena is [1040, 5136); allocations start at 1088 (16-aligned
        // past the marker and its size).
        let cases: [(&[Call], Vec<Option<i32>>); 4] = [
            (
                &[(0, 0, 16, 100), (0, 0, 8, 10), (0, 0, 64, 1)],
                vec![Some(1088), Some(1192), Some(1216)],
            ),
            // The rest of the arena fits exactly; one byte more does not.
            (&[(0, 0, 1, 5136 - 1088)], vec![Some(1088)]),
            (&[(0, 0, 1, 5136 - 1088 + 1)], vec![None]),
            // Growing an allocation is refused.
            (&[(0, 0, 8, 16), (1088, 16, 8, 32)], vec![Some(1088), None]),
        ];
        for (calls, want) in cases {
            assert_eq!(realloc(calls), want, "{calls:?}");
        }
        // A module that already has one, or no arena, is left alone.
        assert_eq!(with_adapter_arena(&module).unwrap(), module);
        let plain = module_with_arena(b"no marker here", 0);
        assert_eq!(with_adapter_arena(&plain).unwrap(), plain);
    }
}
