//! What a guest can do with the filesystem: nothing without a grant; with a
//! directory granted (`CallLimits::read_only_dirs`), read under it and
//! nothing else: no change to it, no way out of it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plait_runtime::{Builtin, CallLimits, CallOutput, ReadOnlyDir, Runtime, RuntimeConfig};
use plait_sdk::{Request, Resource, Severity, State};
use serde_json::{Value, json};

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| Runtime::new(RuntimeConfig::default()).unwrap())
}

/// The test guest that tries file operations and reports their outcomes.
fn files_guest() -> &'static [u8] {
    static BUILT: OnceLock<Vec<u8>> = OnceLock::new();
    BUILT.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("test-guests");
        let path = plait_guest_build::build_guest("plait-test-guest-files", &root, &out)
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::read(path).unwrap()
    })
}

/// A scratch tree: `data/` (the directory a test grants) holding `a.txt`,
/// `sub/b.txt` and `escape`, a symbolic link to `secret.txt` beside `data/`.
fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(data.join("sub")).unwrap();
    std::fs::write(data.join("a.txt"), "granted").unwrap();
    std::fs::write(data.join("sub/b.txt"), "nested").unwrap();
    std::fs::write(dir.path().join("secret.txt"), "outside").unwrap();
    std::os::unix::fs::symlink("../secret.txt", data.join("escape")).unwrap();
    dir
}

fn granting(dirs: Vec<ReadOnlyDir>) -> CallLimits {
    CallLimits {
        read_only_dirs: dirs,
        ..CallLimits::default()
    }
}

fn data_as(scratch: &Path, guest: &str) -> Vec<ReadOnlyDir> {
    vec![ReadOnlyDir {
        host: scratch.join("data"),
        guest: guest.into(),
    }]
}

/// What the files guest reports for each of `tries` under `limits`.
fn outcomes(limits: &CallLimits, tries: &[(&str, &str)]) -> Vec<String> {
    let module = runtime().load(files_guest()).unwrap();
    let request = Request {
        input: Some(json!({ "try": tries })),
        ..Request::default()
    };
    let out = runtime().call(&module, &request, limits).unwrap();
    serde_json::from_value(out.response.context["outcomes"].clone()).unwrap()
}

/// Whether an outcome is `ok` (with what it got) or an error.
fn ok(outcome: &str) -> Option<&str> {
    outcome.strip_prefix("ok: ")
}

#[test]
fn a_granted_directory_is_readable_and_nothing_else_is() {
    let dir = scratch();
    let limits = granting(data_as(dir.path(), "/data"));
    // (operation, guest path, what it reads, or None where it must fail)
    let cases: [(&str, &str, Option<&str>); 8] = [
        ("read", "/data/a.txt", Some("granted")),
        ("read", "/data/sub/b.txt", Some("nested")),
        ("list", "/data", Some("a.txt,escape,sub")),
        ("list", "/data/sub", Some("b.txt")),
        ("read", "/data/../secret.txt", None),
        ("read", "/data/escape", None),
        ("read", "/secret.txt", None),
        ("list", "/", None),
    ];
    let tries: Vec<(&str, &str)> = cases.iter().map(|(op, path, _)| (*op, *path)).collect();
    let got = outcomes(&limits, &tries);
    for ((operation, path, want), outcome) in cases.iter().zip(&got) {
        assert_eq!(ok(outcome), *want, "{operation} {path}: {outcome}");
    }
}

#[test]
fn a_granted_directory_cannot_be_changed() {
    let dir = scratch();
    let limits = granting(data_as(dir.path(), "/data"));
    let tries = [
        ("write", "/data/new.txt"),
        ("write", "/data/a.txt"),
        ("append", "/data/a.txt"),
        ("mkdir", "/data/new-dir"),
        ("remove", "/data/a.txt"),
        ("remove", "/data/sub/b.txt"),
        ("write", "/data/escape"),
    ];
    for ((operation, path), outcome) in tries.iter().zip(outcomes(&limits, &tries)) {
        assert!(
            outcome.starts_with("error: Operation not permitted"),
            "{operation} {path}: {outcome}"
        );
    }
    let data = dir.path().join("data");
    let mut names: Vec<String> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a.txt", "escape", "sub"]);
    assert_eq!(
        std::fs::read_to_string(data.join("a.txt")).unwrap(),
        "granted"
    );
    assert_eq!(
        std::fs::read_to_string(data.join("sub/b.txt")).unwrap(),
        "nested"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("secret.txt")).unwrap(),
        "outside"
    );
}

#[test]
fn without_a_grant_nothing_is_readable() {
    let dir = scratch();
    let data = dir.path().join("data");
    let host_path = data.join("a.txt");
    let tries = [
        ("read", "/data/a.txt"),
        ("read", host_path.to_str().unwrap()),
        ("list", "/"),
        ("list", "."),
        ("read", "a.txt"),
        ("write", "/new.txt"),
    ];
    for ((operation, path), outcome) in tries.iter().zip(outcomes(&CallLimits::default(), &tries)) {
        assert_eq!(ok(&outcome), None, "{operation} {path}: {outcome}");
    }
}

#[test]
fn a_grant_reaches_only_the_call_it_is_given_to() {
    let dir = scratch();
    let granted = granting(data_as(dir.path(), "/data"));
    let tries = [("read", "/data/a.txt")];
    let runs = [
        (&granted, Some("granted")),
        (&CallLimits::default(), None),
        (&granted, Some("granted")),
    ];
    for (limits, want) in runs {
        let got = outcomes(limits, &tries);
        assert_eq!(ok(&got[0]), want, "{limits:?}: {}", got[0]);
    }
}

#[test]
fn a_granted_directory_that_is_missing_fails_the_call_naming_it() {
    let dir = scratch();
    let missing = dir.path().join("missing");
    let limits = granting(vec![ReadOnlyDir {
        host: missing.clone(),
        guest: "/templates".into(),
    }]);
    let module = runtime().load(files_guest()).unwrap();
    let err = runtime()
        .call(&module, &Request::default(), &limits)
        .unwrap_err();
    assert_eq!(err.kind(), "directory", "{err}");
    let message = err.to_string();
    assert!(message.contains(&module.digest), "{message}");
    assert!(
        message.contains(&format!(
            "cannot be given {} to read as /templates",
            missing.display()
        )),
        "{message}"
    );
}

/// A template that composes one ConfigMap.
const TEMPLATE: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  annotations:
    gotemplating.fn.crossplane.io/composition-resource-name: from-a-file
data:
  composite: {{ .observed.composite.resource.metadata.name }}
";

/// The built-in go-templating reading its templates with `source:
/// FileSystem` (Go's `os`, through the WASI preopens) from `dir_path`: its
/// output, or the message of its fatal result.
fn go_templating(limits: &CallLimits, dir_path: &str) -> Result<CallOutput, String> {
    let module = runtime().builtin(Builtin::GoTemplating).unwrap();
    let request = Request {
        observed: State {
            composite: Some(Resource::new(json!({
                "apiVersion": "example.org/v1", "kind": "XR", "metadata": {"name": "x"},
            }))),
            ..State::default()
        },
        input: Some(json!({
            "apiVersion": "gotemplating.fn.crossplane.io/v1beta1",
            "kind": "GoTemplate",
            "source": "FileSystem",
            "fileSystem": {"dirPath": dir_path},
        })),
        ..Request::default()
    };
    let out = runtime()
        .call(&module, &request, limits)
        .map_err(|e| e.to_string())?;
    match out
        .response
        .results
        .iter()
        .find(|r| r.severity == Severity::Fatal)
    {
        Some(fatal) => Err(fatal.message.clone()),
        None => Ok(out),
    }
}

#[test]
fn go_templating_reads_its_templates_from_a_granted_directory_only() {
    let dir = tempfile::tempdir().unwrap();
    let templates = dir.path().join("templates");
    std::fs::create_dir(&templates).unwrap();
    std::fs::write(templates.join("one.tmpl"), TEMPLATE).unwrap();
    let granted = CallLimits {
        read_only_dirs: vec![ReadOnlyDir {
            host: templates.clone(),
            guest: "/templates".into(),
        }],
        ..CallLimits::default()
    };
    // (limits, dirPath, Ok(the ConfigMap's data) or part of the error)
    let cases: [(&CallLimits, &str, Result<Value, &str>); 3] = [
        (&granted, "/templates", Ok(json!({"composite": "x"}))),
        (
            &CallLimits::default(),
            "/templates",
            Err("cannot read tmpl from the folder {/templates}: open /templates"),
        ),
        (
            &granted,
            "/elsewhere",
            Err("cannot read tmpl from the folder {/elsewhere}: open /elsewhere"),
        ),
    ];
    for (limits, dir_path, want) in cases {
        let got = go_templating(limits, dir_path);
        match want {
            Ok(data) => {
                let out = got.unwrap_or_else(|e| panic!("{dir_path}: {e}"));
                let composed = &out.response.desired.resources["from-a-file"];
                assert_eq!(composed.resource["data"], data, "{dir_path}");
            }
            Err(message) => {
                let err = got.expect_err(dir_path);
                assert!(err.contains(message), "{dir_path}: {err}");
            }
        }
    }
}

/// A tree of `dirs` directories of `files_per_dir` files each, with names
/// from a few bytes to 200 and contents from empty to 8 KiB: what the files
/// guest's `tree` gets from it.
fn many_files(root: &Path, dirs: usize, files_per_dir: usize) -> String {
    let mut lines = Vec::new();
    for d in 0..dirs {
        let dir_name = format!("dir-{d}-{}", "d".repeat(d * 37 % 120));
        std::fs::create_dir_all(root.join(&dir_name)).unwrap();
        for f in 0..files_per_dir {
            let name = format!("{f:03}-{}.k", "n".repeat((f * 53 + d) % 190));
            let content = match f % 10 {
                0 => String::new(),
                9 => format!("{name}\n").repeat(8192 / name.len()),
                k => format!("{name}\n").repeat(k * 3),
            };
            std::fs::write(root.join(&dir_name).join(&name), &content).unwrap();
            lines.push(format!("{dir_name}/{name}={content}"));
        }
    }
    lines.sort();
    lines.join("\n")
}

#[test]
fn listing_and_reading_many_files_returns_every_name_and_content_intact() {
    // The directory entries' names and the bytes read come from WASI
    // through the guest's memory allocator and go back to wasi-libc, so a
    // guest whose C and Rust allocations disagree corrupts its memory here.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // (directories, files in each)
    let cases = [(1, 3), (4, 150)];
    for (dirs, files_per_dir) in cases {
        if data.exists() {
            std::fs::remove_dir_all(&data).unwrap();
        }
        let want = many_files(&data, dirs, files_per_dir);
        let limits = granting(data_as(dir.path(), "/data"));
        for outcome in outcomes(&limits, &[("tree", "/data"), ("tree", "/data")]) {
            let got =
                ok(&outcome).unwrap_or_else(|| panic!("{dirs}x{files_per_dir}: {outcome:.300}"));
            if let Some(at) = got.bytes().zip(want.bytes()).position(|(g, w)| g != w) {
                let from = at.saturating_sub(100);
                panic!(
                    "{dirs}x{files_per_dir}: differs at byte {at}: got {:?}, want {:?}",
                    &got[from..(at + 100).min(got.len())],
                    &want[from..(at + 100).min(want.len())]
                );
            }
            assert_eq!(got.len(), want.len(), "{dirs}x{files_per_dir}");
        }
    }
}
