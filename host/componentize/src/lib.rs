//! A core WebAssembly module built for WASI preview 1 (Go's `GOOS=wasip1
//! -buildmode=c-shared`, or any toolchain without a component step)
//! becomes a plait component: plait's contract is embedded as the module's
//! component type and the preview 1 calls are adapted with wasmtime's
//! reactor adapter, so the author needs no other tool. `plait function
//! componentize` runs this, and so does the build of plait's built-in Go
//! functions.
//!
//! A reactor (a module exporting `_initialize`, as every Go one does) is
//! first pre-initialised (`snapshot`): its initialisation runs once, here,
//! deterministically, and the component starts from the state it left, so
//! no call pays for Go's runtime start and package `init`s. Two passes then
//! make a Go module safe to run: an allocator over the Go SDK's arena for
//! the WASI adapter (`arena`), and a `cabi_realloc` that never leaves the
//! component while the host lowers a request (`guard`).

mod arena;
mod guard;
mod sections;
mod snapshot;

use wit_component::{ComponentEncoder, StringEncoding};
use wit_parser::Resolve;

/// Why a core module cannot become a plait component.
#[derive(Debug, thiserror::Error)]
pub enum ComponentizeError {
    #[error("not a core WebAssembly module: {0}")]
    Parse(#[from] wasmparser::BinaryReaderError),
    #[error("not a core WebAssembly module")]
    NotAModule,
    #[error("the module is too large: {0}")]
    TooLarge(#[from] std::num::TryFromIntError),
    #[error("{0}")]
    Arena(String),
    #[error("{0}")]
    Guard(String),
    #[error("plait's contract: {0}")]
    Contract(String),
    #[error("cannot use the WASI preview 1 adapter: {0}")]
    Adapter(String),
    #[error("the module does not implement plait's world (plait:function@1.0.0): {0}")]
    World(String),
    #[error(
        "cannot pre-initialise the module: {0} (`plait function componentize --no-snapshot` makes a component that initialises in every call instead)"
    )]
    Snapshot(String),
}

/// When a reactor's initialisation runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Initialise {
    /// Once, while componentizing: every call starts from its snapshot.
    #[default]
    Snapshot,
    /// At the start of every call, as the module was built.
    EveryCall,
}

const WIT: &str = include_str!("../../../wit/function.wit");

/// The component of a core module that implements plait's world, a
/// reactor's initialisation snapshotted.
pub fn componentize(core: &[u8]) -> Result<Vec<u8>, ComponentizeError> {
    componentize_with(core, Initialise::Snapshot)
}

/// The component of a core module that implements plait's world, its
/// initialisation run as `initialise` says.
pub fn componentize_with(
    core: &[u8],
    initialise: Initialise,
) -> Result<Vec<u8>, ComponentizeError> {
    let mut resolve = Resolve::default();
    let package = resolve
        .push_str("function.wit", WIT)
        .map_err(|e| ComponentizeError::Contract(format!("{e:#}")))?;
    let world = resolve
        .select_world(&[package], Some("function"))
        .map_err(|e| ComponentizeError::Contract(format!("{e:#}")))?;
    let snapshot = match initialise {
        Initialise::Snapshot if snapshot::has_initialize(core)? => snapshot::preinitialize(core)?,
        _ => snapshot::Snapshot {
            module: core.to_vec(),
            clocks: snapshot::Clocks::default(),
        },
    };
    let mut module = guard::guard_realloc(
        &arena::with_adapter_arena(&snapshot.module)?,
        snapshot.clocks,
    )?;
    // Legacy (not canonical) names: `run-function`, `cabi_realloc`, the
    // import module `plait:function/log@1.0.0`, as wit-bindgen's C and the
    // Go SDK name them.
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        StringEncoding::UTF8,
        false,
    )
    .map_err(|e| ComponentizeError::Contract(format!("cannot embed it in the module: {e:#}")))?;
    ComponentEncoder::default()
        .validate(true)
        .module(&module)
        .map_err(|e| ComponentizeError::World(format!("{e:#}")))?
        .adapter(
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME,
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
        )
        .map_err(|e| ComponentizeError::Adapter(format!("{e:#}")))?
        .encode()
        .map_err(|e| ComponentizeError::World(format!("{e:#}")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A core module that is not plait's world says what is missing, with
    /// the cause (here: no `run-function` export); bytes that are no module
    /// say so.
    #[test]
    fn a_module_without_the_exports_is_refused_naming_the_world() {
        let cases: [(&[u8], &str); 2] = [
            (b"\0asm\x01\0\0\0", "does not implement plait's world"),
            (b"not wasm", "not a core WebAssembly module"),
        ];
        for (core, want) in cases {
            let err = format!("{:#}", componentize(core).unwrap_err());
            assert!(err.contains(want), "{err}");
        }
    }
}
