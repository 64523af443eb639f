//! Functions in Rust, Python, JavaScript, C and Go, built from source with their
//! own build scripts and rendered by `plait render` against golden output;
//! and the projects `plait function new` writes, built and rendered.
//!
//! The toolchains come from `make toolchains` (under ~/.cache/plait/bin).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::{repo, tools_bin};

/// A command with a clean environment: only PATH (with the toolchains
/// first) and what cargo and rustup need, so the outer cargo's build
/// variables do not leak into nested builds.
fn clean_command(program: &str) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear();
    let path = std::env::var("PATH").unwrap_or_default();
    cmd.env("PATH", format!("{}:{path}", tools_bin().display()));
    for var in ["HOME", "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN"] {
        if let Some(value) = std::env::var_os(var) {
            cmd.env(var, value);
        }
    }
    // Rust functions share one target directory, so dependencies build once.
    cmd.env("CARGO_TARGET_DIR", repo().join("target/function-builds"));
    cmd
}

fn check(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn plait(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plait"))
        .args(args)
        .current_dir(dir)
        .env("PLAIT_CACHE_DIR", repo().join("target/plait-test-cache"))
        .output()
        .expect("plait runs")
}

/// Builds an example with its build script and renders it with and without
/// its observed resources.
fn example_renders_its_goldens(name: &str, extra: &[&str]) {
    assert!(
        tools_bin().exists(),
        "{} is missing: run `make toolchains`",
        tools_bin().display()
    );
    let dir = repo().join("examples/functions").join(name);
    let out = clean_command("sh")
        .arg("build.sh")
        // The Go example makes its component with `plait function componentize`.
        .env("PLAIT", env!("CARGO_BIN_EXE_plait"))
        .current_dir(&dir)
        .output()
        .unwrap();
    check(&format!("{name}/build.sh"), &out);
    let cases = [
        (vec![], "expected.yaml"),
        (vec!["-o", "observed.yaml"], "expected-observed.yaml"),
    ];
    for (observed, golden) in cases {
        let mut args = vec![
            "render",
            "xr.yaml",
            "composition.yaml",
            "functions.yaml",
            "--xrd",
            "xrd.yaml",
            "-r",
        ];
        args.extend(extra);
        args.extend(observed);
        let out = plait(&dir, &args);
        check(&format!("{name}: plait render"), &out);
        let want = std::fs::read_to_string(dir.join(golden)).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            want,
            "{name}/{golden}"
        );
    }
}

#[test]
fn rust_app_example_renders_deployment_service_and_autoscaler() {
    example_renders_its_goldens("rust-app", &[]);
}

#[test]
fn python_tenant_example_renders_namespace_quota_limits_and_role_bindings() {
    example_renders_its_goldens("python-tenant", &[]);
}

#[test]
fn js_database_example_renders_statefulset_service_and_connection_secret() {
    example_renders_its_goldens("js-database", &["-e", "required.yaml"]);
}

#[test]
fn c_labels_example_labels_what_patch_and_transform_composed() {
    example_renders_its_goldens("c-labels", &[]);
}

#[test]
fn go_volume_example_composes_a_claim_through_function_sdk_go() {
    example_renders_its_goldens("go-volume", &["-e", "required.yaml"]);
}

/// `plait function new` writes a project whose Makefile builds a component
/// that renders: the ConfigMap it composes becomes ready once observed.
fn scaffold_builds_and_renders(lang: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(format!("{lang}-greeting"));
    let dir_arg = dir.display().to_string();
    let out = plait(
        tmp.path(),
        &[
            "function", "new", "--lang", lang, "--dir", &dir_arg, "greeter",
        ],
    );
    check(&format!("plait function new --lang {lang}"), &out);
    if lang == "go" {
        // Without plait the Go project says so before Go's long build.
        let out = clean_command("make")
            .env("PLAIT", "/nonexistent/plait")
            .current_dir(&dir)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success()
                && stderr.contains("not found: put plait on PATH or run make PLAIT=")
                && !dir.join("gen").exists(),
            "{stderr}"
        );
    }
    let out = clean_command("make")
        .env(
            "WASI_ADAPTER",
            tools_bin().join("wasi_snapshot_preview1.reactor.wasm"),
        )
        // Go projects make their component with `plait function componentize`.
        .env("PLAIT", env!("CARGO_BIN_EXE_plait"))
        .current_dir(&dir)
        .output()
        .unwrap();
    check(&format!("make in the {lang} project"), &out);
    // Rust projects share the target directory; the Makefile reads it.
    let cases = [
        (vec![], "status: \"False\""),
        (vec!["-o", "observed.yaml"], "reason: Available"),
    ];
    for (observed, want) in cases {
        let mut args = vec!["render", "xr.yaml", "composition.yaml", "functions.yaml"];
        args.extend(observed);
        let out = plait(&dir, &args);
        check(&format!("{lang} project: plait render"), &out);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("kind: ConfigMap") && stdout.contains(want),
            "{lang}: want a ConfigMap and {want:?} in\n{stdout}"
        );
    }
}

#[test]
fn scaffolded_rust_project_builds_and_renders() {
    scaffold_builds_and_renders("rust");
}

#[test]
fn scaffolded_python_project_builds_and_renders() {
    scaffold_builds_and_renders("python");
}

#[test]
fn scaffolded_js_project_builds_and_renders() {
    scaffold_builds_and_renders("js");
}

#[test]
fn scaffolded_c_project_builds_and_renders() {
    scaffold_builds_and_renders("c");
}

#[test]
fn scaffolded_go_project_builds_and_renders() {
    scaffold_builds_and_renders("go");
}
