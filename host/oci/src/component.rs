//! Whether some bytes are a plait function: a WebAssembly component that
//! exports plait's world and imports only what plait's runtime provides.
//!
//! The check reads only the component's top-level import and export
//! sections, so it is cheap enough to run on every pull, before compiling.
//! Compiling and linking (`plait_runtime::Runtime::load`) remains the final
//! word on types; this check gives the clear error first.

use wasmparser::{ComponentExternalKind, ComponentTypeRef, Encoding, Parser, Payload};

/// The export plait calls: `run-function` of the `plait:function` world.
pub const RUN_FUNCTION_EXPORT: &str = "run-function";

/// The package and version range of plait's own interfaces.
const PLAIT_PACKAGE: &str = "plait:function";
const PLAIT_MAJOR: &str = "1.";
const PLAIT_INTERFACES: [&str; 2] = ["types", "log"];

/// WASI 0.2 interfaces the runtime links (`wasmtime_wasi::p2::add_to_linker_sync`),
/// by package. Any 0.2.x version links: wasmtime matches semver-compatible imports.
const WASI_VERSION_PREFIX: &str = "0.2.";
const WASI_INTERFACES: [(&str, &[&str]); 6] = [
    ("wasi:io", &["error", "poll", "streams"]),
    ("wasi:clocks", &["wall-clock", "monotonic-clock"]),
    ("wasi:filesystem", &["types", "preopens"]),
    ("wasi:random", &["random", "insecure", "insecure-seed"]),
    (
        "wasi:cli",
        &[
            "exit",
            "environment",
            "stdin",
            "stdout",
            "stderr",
            "terminal-input",
            "terminal-output",
            "terminal-stdin",
            "terminal-stdout",
            "terminal-stderr",
        ],
    ),
    (
        "wasi:sockets",
        &[
            "tcp",
            "udp",
            "tcp-create-socket",
            "udp-create-socket",
            "instance-network",
            "network",
            "ip-name-lookup",
        ],
    ),
];

/// The Wasm binary magic, shared by core modules and components.
const WASM_MAGIC: &[u8; 4] = b"\0asm";

/// The top-level imports and exports of a component.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ComponentWorld {
    pub imports: Vec<String>,
    pub exports: Vec<String>,
}

/// Why some bytes are not a plait function.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ComponentError {
    #[error("not WebAssembly: the bytes do not start with the Wasm magic \\0asm")]
    NotWasm,
    #[error(
        "a core WebAssembly module, not a component: build it for wasm32-wasip2 or wrap it with `wasm-tools component new`"
    )]
    CoreModule,
    #[error("not a valid WebAssembly component: {0}")]
    Malformed(String),
    #[error("{}", incompatible_text(.missing_exports, .unsupported_imports))]
    IncompatibleWorld {
        missing_exports: Vec<String>,
        unsupported_imports: Vec<String>,
    },
}

fn incompatible_text(missing_exports: &[String], unsupported_imports: &[String]) -> String {
    let mut parts = Vec::new();
    if !missing_exports.is_empty() {
        parts.push(format!(
            "it does not export {} (plait's world plait:function/function@1.0.0 exports run-function)",
            missing_exports.join(", ")
        ));
    }
    if !unsupported_imports.is_empty() {
        parts.push(format!(
            "it imports {}, which plait does not provide (plait provides plait:function/log@1.0.0 and the WASI 0.2 cli, clocks, filesystem, io, random and sockets interfaces)",
            unsupported_imports.join(", ")
        ));
    }
    format!(
        "the component does not fit plait's function world: {}",
        parts.join("; ")
    )
}

/// Reads the top-level imports and exports of a component.
pub fn read_world(wasm: &[u8]) -> Result<ComponentWorld, ComponentError> {
    if !wasm.starts_with(WASM_MAGIC) {
        return Err(ComponentError::NotWasm);
    }
    let mut world = ComponentWorld::default();
    // Nested modules and components each open with a `Version` and close
    // with an `End`; only depth 1 is the component's own interface.
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload.map_err(|e| ComponentError::Malformed(e.to_string()))?;
        match payload {
            Payload::Version { encoding, .. } => {
                if depth == 0 && encoding == Encoding::Module {
                    return Err(ComponentError::CoreModule);
                }
                depth += 1;
            }
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(reader) if depth == 1 => {
                for import in reader {
                    let import = import.map_err(|e| ComponentError::Malformed(e.to_string()))?;
                    // Imported types name types of the interfaces imported;
                    // the linker supplies them with those interfaces.
                    if !matches!(import.ty, ComponentTypeRef::Type(_)) {
                        world.imports.push(import.name.name.to_string());
                    }
                }
            }
            Payload::ComponentExportSection(reader) if depth == 1 => {
                for export in reader {
                    let export = export.map_err(|e| ComponentError::Malformed(e.to_string()))?;
                    let name = export.name.name;
                    // Exported types are only names for the functions' types.
                    if export.kind != ComponentExternalKind::Type {
                        world.exports.push(name.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    Ok(world)
}

/// Whether plait's runtime provides an import of this name.
pub fn is_supported_import(name: &str) -> bool {
    let Some((path, version)) = name.split_once('@') else {
        return false;
    };
    let Some((package, interface)) = path.split_once('/') else {
        return false;
    };
    if package == PLAIT_PACKAGE {
        return version.starts_with(PLAIT_MAJOR) && PLAIT_INTERFACES.contains(&interface);
    }
    version.starts_with(WASI_VERSION_PREFIX)
        && WASI_INTERFACES
            .iter()
            .any(|(p, interfaces)| *p == package && interfaces.contains(&interface))
}

/// Reads a component and checks it fits plait's function world.
pub fn check(wasm: &[u8]) -> Result<ComponentWorld, ComponentError> {
    let world = read_world(wasm)?;
    let missing_exports: Vec<String> = if world.exports.iter().any(|e| e == RUN_FUNCTION_EXPORT) {
        Vec::new()
    } else {
        vec![RUN_FUNCTION_EXPORT.to_string()]
    };
    let unsupported_imports: Vec<String> = world
        .imports
        .iter()
        .filter(|i| !is_supported_import(i))
        .cloned()
        .collect();
    if missing_exports.is_empty() && unsupported_imports.is_empty() {
        Ok(world)
    } else {
        Err(ComponentError::IncompatibleWorld {
            missing_exports,
            unsupported_imports,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use plait_runtime::Builtin;

    #[test]
    fn builtins_fit_the_world() {
        for builtin in Builtin::ALL {
            let world = check(builtin.wasm()).unwrap();
            assert_eq!(world.exports, vec![RUN_FUNCTION_EXPORT], "{builtin:?}");
            assert!(
                world
                    .imports
                    .iter()
                    .any(|i| i.starts_with("plait:function/")),
                "{builtin:?}: {:?}",
                world.imports
            );
        }
    }

    #[test]
    fn imports_are_supported_by_package_interface_and_version() {
        let cases = [
            ("plait:function/log@1.0.0", true),
            ("plait:function/types@1.0.0", true),
            ("plait:function/log@2.0.0", false),
            ("plait:function/secrets@1.0.0", false),
            ("wasi:cli/environment@0.2.0", true),
            ("wasi:io/streams@0.2.6", true),
            ("wasi:sockets/ip-name-lookup@0.2.3", true),
            ("wasi:http/outgoing-handler@0.2.0", false),
            ("wasi:cli/environment@0.3.0", false),
            ("wasi:keyvalue/store@0.2.0-draft", false),
            ("wasi:cli/environment", false),
            ("log", false),
        ];
        for (name, want) in cases {
            assert_eq!(is_supported_import(name), want, "{name}");
        }
    }

    #[test]
    fn bytes_that_are_not_plait_functions_are_refused_with_the_reason() {
        let unsupported =
            wat::parse_str(r#"(component (import "wasi:http/outgoing-handler@0.2.0" (instance)))"#)
                .unwrap();
        let cases: [(&[u8], ComponentError); 4] = [
            (b"PK\x03\x04 not wasm", ComponentError::NotWasm),
            (b"\0asm\x01\0\0\0", ComponentError::CoreModule),
            (
                &unsupported,
                ComponentError::IncompatibleWorld {
                    missing_exports: vec!["run-function".into()],
                    unsupported_imports: vec!["wasi:http/outgoing-handler@0.2.0".into()],
                },
            ),
            (
                b"\0asm\x0d\0\x01\0\xff",
                ComponentError::Malformed(String::new()),
            ),
        ];
        for (bytes, want) in cases {
            match (check(bytes), want) {
                (Err(ComponentError::Malformed(_)), ComponentError::Malformed(_)) => {}
                (got, want) => assert_eq!(got, Err(want)),
            }
        }
    }

    #[test]
    fn incompatible_world_messages_name_the_import_and_the_export() {
        let error = ComponentError::IncompatibleWorld {
            missing_exports: vec!["run-function".into()],
            unsupported_imports: vec!["wasi:http/outgoing-handler@0.2.0".into()],
        };
        let text = error.to_string();
        assert!(text.contains("does not export run-function"), "{text}");
        assert!(
            text.contains("imports wasi:http/outgoing-handler@0.2.0, which plait does not provide"),
            "{text}"
        );
    }
}
