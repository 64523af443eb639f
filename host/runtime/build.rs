//! Builds the built-in guests and embeds them (see `Builtin`).

use std::path::{Path, PathBuf};

const BUILTINS: &[&str] = &[
    "plait-patch-and-transform",
    "plait-auto-ready",
    "plait-environment-configs",
    "plait-function-kcl",
    "plait-sequencer",
    "plait-cidr",
    "plait-extra-resources",
    "plait-status-transformer",
];

/// Built-ins written in Go: (directory, component name).
const GO_BUILTINS: &[(&str, &str)] = &[("guests/go-templating", "plait-go-templating")];

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let workspace_root = manifest_dir.join("../..");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    for package in BUILTINS {
        if let Err(e) =
            plait_guest_build::build_guest(package, &workspace_root, Path::new(&out_dir))
        {
            // A build script reports failure by panicking; the message is the error.
            panic!("{e}");
        }
    }
    for (dir, name) in GO_BUILTINS {
        if let Err(e) =
            plait_guest_build::build_go_guest(dir, name, &workspace_root, Path::new(&out_dir))
        {
            panic!("{e}");
        }
    }
}
