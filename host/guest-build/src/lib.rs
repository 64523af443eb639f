//! Builds a workspace guest crate into a WebAssembly component, for build
//! scripts that embed guests and for tests that need guest binaries.
//!
//! The guest is built by a nested `cargo build` with its own target directory:
//! the outer build holds the lock on the workspace target directory, so sharing
//! it would deadlock. Environment that the outer cargo sets for *its* build
//! (wrappers, flags, target, cfg/feature variables) is removed so the nested
//! build sees a clean, host-independent configuration.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The target every guest is built for.
pub const GUEST_TARGET: &str = "wasm32-wasip2";

/// The cargo profile guests are built with (defined in the workspace root).
pub const GUEST_PROFILE: &str = "guest";

/// Variables the outer cargo sets that would change or break the nested build.
const LEAKING_VARS: &[&str] = &[
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTC_WRAPPER",
    "RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_BUILD_TARGET",
    "CARGO_BUILD_RUSTFLAGS",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET_DIR",
    "CARGO_MAKEFLAGS",
    "MAKEFLAGS",
    "MFLAGS",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "CARGO_MANIFEST_LINKS",
    "CARGO_PKG_NAME",
    "CARGO_CRATE_NAME",
    "CARGO_BIN_NAME",
    "OUT_DIR",
    "TARGET",
    "HOST",
    "PROFILE",
    "OPT_LEVEL",
    "DEBUG",
    "NUM_JOBS",
    "RUSTC",
    "RUSTDOC",
    "RUSTC_LINKER",
];

/// Prefixes of per-build variables the outer cargo sets for build scripts.
const LEAKING_PREFIXES: &[&str] = &["CARGO_CFG_", "CARGO_FEATURE_", "DEP_", "CARGO_PKG_"];

/// Whether the nested build must not inherit `name` from the outer build.
fn leaks(name: &str) -> bool {
    LEAKING_VARS.contains(&name) || LEAKING_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Removes from `command` what the outer build set for its own build.
fn remove_leaks(command: &mut Command) {
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(leaks) {
            command.env_remove(&name);
        }
    }
}

/// The file name cargo gives a cdylib built for wasm: dashes become underscores.
pub fn wasm_file_name(package: &str) -> String {
    format!("{}.wasm", package.replace('-', "_"))
}

/// The target directory nested guest builds use.
pub fn guest_target_dir(workspace_root: &Path) -> PathBuf {
    workspace_root.join("target").join("guests")
}

/// Builds `package` (a workspace member) for `wasm32-wasip2` with the `guest`
/// profile and copies the component to `out_dir`, returning its path.
///
/// Meant for build scripts: it prints `cargo:rerun-if-changed` for the
/// package's directory, every crate under `guests/` (the SDK and the crates
/// guests share) and the WIT contract.
pub fn build_guest(
    package: &str,
    workspace_root: &Path,
    out_dir: &Path,
) -> Result<PathBuf, String> {
    let package_dir = package_dir(package, workspace_root)?;
    for dir in [
        package_dir.as_path(),
        &workspace_root.join("guests"),
        &workspace_root.join("wit"),
    ] {
        println!("cargo:rerun-if-changed={}", dir.display());
    }

    let target_dir = guest_target_dir(workspace_root);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut command = Command::new(cargo);
    command
        .current_dir(workspace_root)
        .args(["build", "--package", package, "--target", GUEST_TARGET])
        .args(["--profile", GUEST_PROFILE])
        .env("CARGO_TARGET_DIR", &target_dir);
    remove_leaks(&mut command);
    // The target dir is removed above as a leak and set again here, so the
    // order of these two steps matters.
    command.env("CARGO_TARGET_DIR", &target_dir);

    let output = command
        .output()
        .map_err(|e| format!("cannot run cargo to build guest {package}: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(explain_failure(package, &stderr));
    }

    let built = target_dir
        .join(GUEST_TARGET)
        .join(GUEST_PROFILE)
        .join(wasm_file_name(package));
    std::fs::create_dir_all(out_dir)
        .map_err(|e| format!("cannot create {}: {e}", out_dir.display()))?;
    let dest = out_dir.join(wasm_file_name(package));
    std::fs::copy(&built, &dest).map_err(|e| {
        format!(
            "guest {package} built but {} cannot be copied to {}: {e}",
            built.display(),
            dest.display()
        )
    })?;
    Ok(dest)
}

/// The Go toolchain's command: `PLAIT_GO` when set, else `go` from PATH.
fn go_command() -> OsString {
    std::env::var_os("PLAIT_GO").unwrap_or_else(|| OsString::from("go"))
}

/// Builds the Go function in `workspace_root/dir` (a `package main` on
/// plait's Go SDK) as a `GOOS=wasip1` reactor, makes it a component with
/// `plait-componentize` and writes it to `out_dir/<name>.wasm`, returning
/// its path. Needs Go 1.24 or newer (`go:wasmexport`).
///
/// Meant for build scripts: it prints `cargo:rerun-if-changed` for the
/// function's directory, the Go SDK and the WIT contract.
pub fn build_go_guest(
    dir: &str,
    name: &str,
    workspace_root: &Path,
    out_dir: &Path,
) -> Result<PathBuf, String> {
    let source = workspace_root.join(dir);
    for watched in [
        source.clone(),
        workspace_root.join("guests/sdk-go"),
        workspace_root.join("wit"),
    ] {
        println!("cargo:rerun-if-changed={}", watched.display());
    }
    println!("cargo:rerun-if-env-changed=PLAIT_GO");
    std::fs::create_dir_all(out_dir)
        .map_err(|e| format!("cannot create {}: {e}", out_dir.display()))?;
    let core = out_dir.join(format!("{name}.core.wasm"));
    let mut command = Command::new(go_command());
    command
        .current_dir(&source)
        .args([
            "build",
            "-buildmode=c-shared",
            "-trimpath",
            "-ldflags=-s -w",
            "-o",
        ])
        .arg(&core)
        .arg(".")
        .env("GOOS", "wasip1")
        .env("GOARCH", "wasm")
        .env("CGO_ENABLED", "0");
    remove_leaks(&mut command);
    let output = command.output().map_err(|e| {
        format!(
            "building the Go function {dir} needs Go 1.24 or newer on PATH (or PLAIT_GO): \
             cannot run it: {e}"
        )
    })?;
    if !output.status.success() {
        return Err(format!(
            "building the Go function {dir} failed (Go 1.24 or newer is needed):\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let module =
        std::fs::read(&core).map_err(|e| format!("cannot read {}: {e}", core.display()))?;
    let component = plait_componentize::componentize(&module)
        .map_err(|e| format!("the Go function {dir} is not a plait component: {e}"))?;
    let dest = out_dir.join(format!("{}.wasm", name.replace('-', "_")));
    std::fs::write(&dest, component)
        .map_err(|e| format!("cannot write {}: {e}", dest.display()))?;
    Ok(dest)
}

/// Finds a workspace member's directory by reading its manifest name, so the
/// rerun-if-changed lines point at the right place wherever the crate lives.
fn package_dir(package: &str, workspace_root: &Path) -> Result<PathBuf, String> {
    let candidates = ["guests", "tests/guests"].iter().flat_map(|parent| {
        std::fs::read_dir(workspace_root.join(parent))
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
    });
    for dir in candidates {
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        if manifest_names(&manifest, package) {
            return Ok(dir);
        }
    }
    Err(format!(
        "no guest crate named {package} under {}/guests or {}/tests/guests",
        workspace_root.display(),
        workspace_root.display()
    ))
}

/// Whether a Cargo.toml's `[package]` section has `name = "<package>"`.
fn manifest_names(manifest: &str, package: &str) -> bool {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package
            && let Some((key, value)) = line.split_once('=')
            && key.trim() == "name"
        {
            return value.trim().trim_matches('"') == package;
        }
    }
    false
}

/// Turns cargo's stderr into an error, with the fix for a missing target.
fn explain_failure(package: &str, stderr: &str) -> String {
    let missing_target = stderr.contains("target may not be installed")
        || stderr.contains("can't find crate for `core`")
        || stderr.contains("can't find crate for `std`");
    if missing_target {
        format!(
            "building guest {package} failed: the {GUEST_TARGET} target is not installed; \
             run `rustup target add {GUEST_TARGET}`\n{stderr}"
        )
    } else {
        format!("building guest {package} failed:\n{stderr}")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn vars_set_by_the_outer_build_are_removed() {
        let cases = [
            ("RUSTC_WRAPPER", true),
            ("RUSTC_WORKSPACE_WRAPPER", true),
            ("CARGO_ENCODED_RUSTFLAGS", true),
            ("CARGO_TARGET_DIR", true),
            ("CARGO_MAKEFLAGS", true),
            ("CARGO_CFG_TARGET_OS", true),
            ("CARGO_FEATURE_DEFAULT", true),
            ("CARGO_PRIMARY_PACKAGE", true),
            ("PATH", false),
            ("HOME", false),
            ("CARGO_HOME", false),
            ("RUSTUP_HOME", false),
            ("RUSTUP_TOOLCHAIN", false),
        ];
        for (name, expected) in cases {
            assert_eq!(leaks(name), expected, "{name}");
        }
    }

    #[test]
    fn wasm_file_names_use_underscores() {
        assert_eq!(
            wasm_file_name("plait-patch-and-transform"),
            "plait_patch_and_transform.wasm"
        );
        assert_eq!(wasm_file_name("plain"), "plain.wasm");
    }

    #[test]
    fn manifest_name_is_read_from_the_package_section() {
        let cases = [
            ("[package]\nname = \"a-b\"\n", "a-b", true),
            ("[package]\nname = \"a-b\"\n", "a", false),
            (
                "[lib]\nname = \"a-b\"\n[package]\nname = \"c\"\n",
                "a-b",
                false,
            ),
            ("[dependencies]\nname = \"x\"\n", "x", false),
        ];
        for (manifest, package, expected) in cases {
            assert_eq!(manifest_names(manifest, package), expected, "{manifest}");
        }
    }

    #[test]
    fn a_missing_target_says_how_to_install_it() {
        let stderr = "error[E0463]: can't find crate for `core`\n  = note: the `wasm32-wasip2` target may not be installed";
        let message = explain_failure("p", stderr);
        assert!(
            message.contains("rustup target add wasm32-wasip2"),
            "{message}"
        );
        let other = explain_failure("p", "error: could not compile `p`");
        assert!(!other.contains("rustup target add"), "{other}");
    }

    #[test]
    fn an_unknown_package_is_an_error() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let err = package_dir("plait-no-such-guest", &root).unwrap_err();
        assert!(err.contains("plait-no-such-guest"), "{err}");
        assert!(package_dir("plait-sdk", &root).is_ok());
    }
}
