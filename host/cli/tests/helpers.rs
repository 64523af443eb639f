//! The Python, JavaScript, C and Go function helpers, tested on their own:
//! `python3` against the bindings componentize-py generates from
//! wit/function.wit, `node --test` against the shapes componentize-js
//! passes, the C helpers compiled natively (`cc`) against the header
//! `wit-bindgen c` generates, and the Go SDK's conversions with `go test`
//! (natively: the canonical-ABI glue is proven by the Go examples). The suites live beside the helpers
//! (guests/sdk-*/test*); this runs them and fails with their output.
//!
//! componentize-py and wit-bindgen come from `make toolchains` (under
//! ~/.cache/plait/bin).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

mod common;
use common::{repo, tools_bin};

fn check(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn python_helpers_pass_their_suite() {
    let bindings = tempfile::tempdir().unwrap();
    let out = Command::new(tools_bin().join("componentize-py"))
        .args(["-d", "wit", "-w", "function", "bindings"])
        .arg(bindings.path())
        .current_dir(repo())
        .output()
        .expect("componentize-py runs: run `make toolchains`");
    check("componentize-py bindings", &out);
    let path = std::env::join_paths([
        bindings.path().to_path_buf(),
        repo().join("guests/sdk-python"),
    ])
    .unwrap();
    let out = Command::new("python3")
        .args([
            "-m",
            "unittest",
            "discover",
            "-v",
            "-s",
            "guests/sdk-python/tests",
        ])
        .env("PYTHONPATH", path)
        // Nothing written beside the helpers: the checkout stays clean.
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(repo())
        .output()
        .expect("python3 runs");
    check("the Python helper suite", &out);
    // unittest reports on stderr; an empty discovery would also succeed.
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(
        report.contains("Ran ") && !report.contains("Ran 0 tests"),
        "{report}"
    );
}

#[test]
fn go_modules_pass_their_suites() {
    // (module, what it is)
    let modules = [
        ("guests/sdk-go", "the Go SDK suite"),
        ("guests/go-templating", "the built-in go-templating suite"),
    ];
    for (module, what) in modules {
        let out = Command::new("go")
            .args(["test", "-count=1", "-v", "./..."])
            .current_dir(repo().join(module))
            .output()
            .expect("go runs");
        check(what, &out);
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(
            report.contains("--- PASS") && !report.contains("--- FAIL"),
            "{what}: {report}"
        );
    }
}

#[test]
fn js_helpers_pass_their_suite() {
    let out = Command::new("node")
        .args(["--test", "guests/sdk-js/test/plait-function.test.mjs"])
        .current_dir(repo())
        .output()
        .expect("node runs");
    check("the JavaScript helper suite", &out);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("# fail 0") && !report.contains("# pass 0"),
        "{report}"
    );
}

#[test]
fn c_helpers_pass_their_suite() {
    let dir = tempfile::tempdir().unwrap();
    let gen_dir = dir.path().join("gen");
    let out = Command::new(tools_bin().join("wit-bindgen"))
        .args(["c", "wit", "--world", "function", "--out-dir"])
        .arg(&gen_dir)
        .current_dir(repo())
        .output()
        .expect("wit-bindgen runs: run `make toolchains`");
    check("wit-bindgen c", &out);
    let binary = dir.path().join("test_plait_function");
    let out = Command::new("cc")
        .args(["-Wall", "-Wextra", "-Werror", "-Iguests/sdk-c"])
        .arg(format!("-I{}", gen_dir.display()))
        .args([
            "guests/sdk-c/test/test_plait_function.c",
            "guests/sdk-c/plait_function.c",
            "-o",
        ])
        .arg(&binary)
        .current_dir(repo())
        .output()
        .expect("cc runs");
    check("compiling the C helper suite", &out);
    let out = Command::new(&binary).output().unwrap();
    check("the C helper suite", &out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("0 failures"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
