//! `plait function push/pull/inspect` and `plait render` with Functions
//! pulled from a registry, end to end against Debian's docker-registry.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use plait_runtime::Builtin;
use plait_testregistry::Registry;

mod common;
use common::repo;

/// Runs plait with its own cache and Docker config, so neither the user's
/// credentials nor earlier pulls leak in.
fn plait(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plait"))
        .args(args)
        .current_dir(repo())
        .env("PLAIT_CACHE_DIR", home.join("cache"))
        .env("DOCKER_CONFIG", home.join("docker"))
        .output()
        .expect("plait runs")
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "plait failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn builtin_file(home: &Path) -> PathBuf {
    let path = home.join("patch-and-transform.wasm");
    std::fs::write(&path, Builtin::PatchAndTransform.wasm()).unwrap();
    path
}

#[test]
fn push_pull_and_inspect_round_trip_a_function() {
    let registry = Registry::start();
    let home = tempfile::tempdir().unwrap();
    let file = builtin_file(home.path());
    let reference = registry.reference("fn/patch-and-transform", "v1");

    let pushed = stdout(&plait(
        home.path(),
        &[
            "function",
            "push",
            file.to_str().unwrap(),
            &reference,
            "--insecure",
            "--author",
            "plait tests",
        ],
    ));
    let pinned = pushed.trim();
    let (_, digest) = pinned.split_once('@').unwrap();
    assert_eq!(pinned, format!("{reference}@{digest}"));
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{digest}"
    );

    let by_digest = format!("{}/fn/patch-and-transform@{digest}", registry.addr);
    for (name, source) in [("tag", &reference), ("digest", &by_digest)] {
        let out = home.path().join(format!("{name}.wasm"));
        let printed = stdout(&plait(
            home.path(),
            &[
                "function",
                "pull",
                source,
                "-o",
                out.to_str().unwrap(),
                "--insecure",
            ],
        ));
        assert!(printed.trim().ends_with(digest), "{name}: {printed}");
        assert_eq!(
            std::fs::read(&out).unwrap(),
            Builtin::PatchAndTransform.wasm(),
            "{name}"
        );
    }

    let inspected = stdout(&plait(
        home.path(),
        &["function", "inspect", &reference, "--insecure"],
    ));
    let inspected: serde_json::Value = serde_yaml_ng::from_str(&inspected).unwrap();
    assert_eq!(inspected["digest"], digest);
    assert_eq!(
        inspected["component"]["size"],
        Builtin::PatchAndTransform.wasm().len()
    );
    assert_eq!(
        inspected["component"]["digest"],
        Builtin::PatchAndTransform.digest()
    );
    assert_eq!(inspected["world"], "plait:function/function@1.0.0");
    assert_eq!(inspected["created"], "1970-01-01T00:00:00Z");
    assert_eq!(inspected["author"], "plait tests");
    assert_eq!(inspected["exports"], serde_json::json!(["run-function"]));
    assert!(
        inspected["imports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i.as_str().is_some_and(|i| i.starts_with("plait:function/"))),
        "{inspected}"
    );
}

#[test]
fn function_commands_fail_with_a_specific_message() {
    let registry = Registry::start_with_auth("alice", "wonderland");
    let home = tempfile::tempdir().unwrap();
    let file = builtin_file(home.path());
    let not_wasm = home.path().join("script.wasm");
    std::fs::write(&not_wasm, "#!/bin/sh\n").unwrap();
    let core_module = home.path().join("core.wasm");
    std::fs::write(&core_module, b"\0asm\x01\0\0\0").unwrap();
    let wrong = home.path().join("wrong.json");
    let right = home.path().join("right.json");
    for (path, password) in [(&wrong, "looking-glass"), (&right, "wonderland")] {
        let auth = base64_encode(&format!("alice:{password}"));
        std::fs::write(
            path,
            format!(r#"{{"auths":{{"{}":{{"auth":"{auth}"}}}}}}"#, registry.addr),
        )
        .unwrap();
    }
    let reference = registry.reference("fn/p", "v1");
    let missing = registry.reference("fn/p", "v2");
    let (file, not_wasm, core_module, wrong, right) = (
        file.to_str().unwrap(),
        not_wasm.to_str().unwrap(),
        core_module.to_str().unwrap(),
        wrong.to_str().unwrap(),
        right.to_str().unwrap(),
    );
    let ok = plait(
        home.path(),
        &[
            "function",
            "push",
            file,
            &reference,
            "--insecure",
            "--docker-config",
            right,
        ],
    );
    stdout(&ok);

    let cases: [(&[&str], &str); 7] = [
        (
            &["function", "push", "no-such.wasm", &reference, "--insecure"],
            "cannot read no-such.wasm",
        ),
        (
            &["function", "push", not_wasm, &reference, "--insecure"],
            "do not start with the Wasm magic",
        ),
        (
            &["function", "push", core_module, &reference, "--insecure"],
            "a core WebAssembly module, not a component",
        ),
        (
            &[
                "function",
                "push",
                file,
                &reference,
                "--insecure",
                "--docker-config",
                wrong,
            ],
            "unauthorized",
        ),
        (
            &[
                "function",
                "pull",
                &reference,
                "--insecure",
                "--docker-config",
                wrong,
            ],
            "unauthorized",
        ),
        (
            &[
                "function",
                "inspect",
                &missing,
                "--insecure",
                "--docker-config",
                right,
            ],
            "not found",
        ),
        (
            &["function", "pull", "Not A Reference", "--insecure"],
            "invalid OCI reference \"Not A Reference\"",
        ),
    ];
    for (args, want) in cases {
        let output = plait(home.path(), args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} succeeded");
        assert!(stderr.starts_with("plait: "), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}

fn base64_encode(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[test]
fn render_runs_a_function_pulled_from_a_registry_like_the_builtin() {
    let registry = Registry::start();
    let home = tempfile::tempdir().unwrap();
    let file = builtin_file(home.path());
    let reference = registry.reference("crossplane/fn-pat", "v1");
    stdout(&plait(
        home.path(),
        &[
            "function",
            "push",
            file.to_str().unwrap(),
            &reference,
            "--insecure",
        ],
    ));
    let functions = home.path().join("functions.yaml");
    std::fs::write(
        &functions,
        format!(
            "apiVersion: pkg.crossplane.io/v1\nkind: Function\nmetadata:\n  name: function-patch-and-transform\nspec:\n  package: {reference}\n"
        ),
    )
    .unwrap();
    let example = "examples/getting-started";
    let args = [
        "render",
        "examples/getting-started/xr.yaml",
        "examples/getting-started/composition.yaml",
        functions.to_str().unwrap(),
        "--xrd",
        "examples/getting-started/xrd.yaml",
        "--insecure",
    ];
    let output = plait(home.path(), &args);
    let rendered = stdout(&output);
    let want = std::fs::read_to_string(repo().join(example).join("expected.yaml")).unwrap();
    assert_eq!(rendered, want);
    // stderr says which component each step ran, and what it was pulled as.
    let stderr = String::from_utf8_lossy(&output.stderr);
    let ran = format!(
        "ran function \"function-patch-and-transform\": component {}, pulled as {reference}@sha256:",
        Builtin::PatchAndTransform.digest()
    );
    assert!(
        stderr.lines().any(|line| line.starts_with("step ")) && stderr.contains(&ran),
        "{stderr}"
    );
    // The first render with an empty cache compiles the component and says
    // so, with its size and how long it took.
    for said in [
        "compiling the component (once; then loaded from the cache)",
        "size=",
        "compiled the component",
    ] {
        assert!(stderr.contains(said), "{said:?} in {stderr}");
    }

    // Pulled once: the blob is in the cache by digest.
    let blob = home.path().join("cache/blobs/sha256").join(
        Builtin::PatchAndTransform
            .digest()
            .trim_start_matches("sha256:"),
    );
    assert!(blob.exists(), "{}", blob.display());

    // A package that cannot be pulled names the Function.
    std::fs::write(
        &functions,
        format!(
            "apiVersion: pkg.crossplane.io/v1\nkind: Function\nmetadata:\n  name: function-patch-and-transform\nspec:\n  package: {}\n",
            registry.reference("crossplane/absent", "v1")
        ),
    )
    .unwrap();
    let output = plait(home.path(), &args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("Function \"function-patch-and-transform\": cannot pull its package")
            && stderr.contains("not found"),
        "{stderr}"
    );
}
