//! KCL in the sandbox (the built-in function-kcl): a program's items
//! become composed resources, a project function's package is read from
//! the directory granted at `/src`, a KCL error is a fatal result with
//! KCL's message and never a trap, and a program that loops, recurses
//! without end or builds a huge value stops with an error: at the call's
//! deadline or memory limit (the runtime's error, which the pipeline
//! reports under the step's name), or KCL's own recursion limit.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use plait_runtime::{
    Builtin, CallError, CallLimits, CallOutput, Module, ReadOnlyDir, Runtime, RuntimeConfig,
};
use plait_sdk::{Request, Resource, Severity, State};
use serde_json::json;

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        Runtime::new(RuntimeConfig {
            memory_budget: usize::MAX,
            ..RuntimeConfig::default()
        })
        .unwrap()
    })
}

fn function_kcl() -> Arc<Module> {
    runtime().builtin(Builtin::Kcl).unwrap()
}

fn request(source: &str) -> Request {
    let mut request = request_without_input();
    request.input = Some(json!({
        "apiVersion": "krm.kcl.dev/v1alpha1",
        "kind": "KCLInput",
        "spec": {"source": source},
    }));
    request
}

fn request_without_input() -> Request {
    Request {
        tag: "t1".into(),
        observed: State {
            composite: Some(Resource::new(json!({
                "apiVersion": "example.org/v1",
                "kind": "XBucketSet",
                "metadata": {"name": "b"},
                "spec": {"count": 3, "region": "eu-west-1"},
            }))),
            ..State::default()
        },
        ..Request::default()
    }
}

fn call(source: &str, limits: &CallLimits) -> Result<CallOutput, CallError> {
    runtime().call(&function_kcl(), &request(source), limits)
}

/// The one fatal result of a call that must have failed in KCL.
fn fatal_message(source: &str) -> String {
    let output = call(source, &CallLimits::default()).expect("a KCL error is not a trap");
    let [result] = output.response.results.as_slice() else {
        panic!("one result: {:?}", output.response.results);
    };
    assert_eq!(result.severity, Severity::Fatal);
    result.message.clone()
}

const BUCKETS: &str = r#"
_xr = option("params").oxr
items = [{
    apiVersion = "s3.aws.upbound.io/v1beta1"
    kind = "Bucket"
    metadata.name = "${_xr.metadata.name}-${i}"
    spec.forProvider.region = _xr.spec.region
} for i in range(_xr.spec.count)]
"#;

#[test]
fn a_programs_items_become_composed_resources_named_by_metadata_name() {
    let output = call(BUCKETS, &CallLimits::default()).unwrap();
    assert!(
        output.response.results.is_empty(),
        "{:?}",
        output.response.results
    );
    let desired = &output.response.desired.resources;
    assert_eq!(desired.keys().collect::<Vec<_>>(), ["b-0", "b-1", "b-2"]);
    assert_eq!(
        desired["b-1"].resource,
        json!({
            "apiVersion": "s3.aws.upbound.io/v1beta1",
            "kind": "Bucket",
            "metadata": {"name": "b-1"},
            "spec": {"forProvider": {"region": "eu-west-1"}},
        })
    );
}

#[test]
fn a_step_without_input_runs_the_package_granted_at_src() {
    let scratch = tempfile::tempdir().unwrap();
    let src = scratch.path().join("function");
    let lib = scratch.path().join("lib");
    std::fs::create_dir_all(src.join("buckets")).unwrap();
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(
        src.join("kcl.mod"),
        "[package]\nname = \"function\"\n\n[dependencies]\nlib = { path = \"/lib\" }\n",
    )
    .unwrap();
    std::fs::write(
        src.join("main.k"),
        "import buckets\n\nitems = buckets.items\n",
    )
    .unwrap();
    std::fs::write(
        src.join("buckets/buckets.k"),
        format!("import lib\n{}", BUCKETS.replace("\"Bucket\"", "lib.kind")),
    )
    .unwrap();
    std::fs::write(lib.join("kcl.mod"), "[package]\nname = \"lib\"\n").unwrap();
    std::fs::write(lib.join("lib.k"), "kind = \"Bucket\"\n").unwrap();
    let limits = CallLimits {
        read_only_dirs: vec![
            ReadOnlyDir {
                host: src,
                guest: "/src".into(),
            },
            ReadOnlyDir {
                host: lib,
                guest: "/lib".into(),
            },
        ],
        ..CallLimits::default()
    };
    let output = runtime()
        .call(&function_kcl(), &request_without_input(), &limits)
        .unwrap();
    assert!(
        output.response.results.is_empty(),
        "{:?}",
        output.response.results
    );
    let desired = &output.response.desired.resources;
    assert_eq!(desired.keys().collect::<Vec<_>>(), ["b-0", "b-1", "b-2"]);
    assert_eq!(desired["b-2"].resource["kind"], "Bucket");

    // Without the grant there is no default source: upstream's refusal.
    let message = runtime()
        .call(
            &function_kcl(),
            &request_without_input(),
            &CallLimits::default(),
        )
        .unwrap()
        .response
        .results[0]
        .message
        .clone();
    assert_eq!(
        message,
        "invalid function input: spec.source: Required value: kcl source cannot be empty"
    );
}

#[test]
fn a_kcl_error_is_a_fatal_result_with_kcls_message() {
    let cases = [
        ("assert False, \"no region given\"\n", "no region given"),
        ("a = \n", "InvalidSyntax"),
        ("a = 1\na = 2\n", "ImmutableError"),
    ];
    for (source, expected) in cases {
        let message = fatal_message(source);
        assert!(
            message.starts_with("failed to run kcl function pipelines: ")
                && message.contains(expected),
            "{source}: {message}"
        );
    }
}

#[test]
fn endless_recursion_stops_at_kcls_recursion_limit_without_a_trap() {
    let message = fatal_message("f = lambda n: int -> int {\n    f(n + 1)\n}\na = f(0)\n");
    assert!(
        message.contains("maximum recursion depth exceeded"),
        "{message}"
    );
}

#[test]
fn an_endless_loop_stops_at_the_deadline() {
    // Ten billion iterations that keep nothing.
    let source = "a = [i for i in range(100000) for j in range(100000) if i < 0]\n";
    let limits = CallLimits {
        deadline: Duration::from_millis(300),
        ..CallLimits::default()
    };
    let started = Instant::now();
    let err = call(source, &limits).unwrap_err();
    assert_eq!(err.kind(), "deadline", "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(
        call(BUCKETS, &CallLimits::default()).is_ok(),
        "the runtime serves on"
    );
}

#[test]
fn a_huge_value_stops_at_the_memory_limit() {
    // A gigabyte of strings.
    let source = "a = [\"${i}\" * 1000 for i in range(1000000)]\n";
    let limits = CallLimits {
        memory_bytes: 64 << 20,
        ..CallLimits::default()
    };
    match call(source, &limits).unwrap_err() {
        CallError::MemoryLimit { limit, .. } => assert_eq!(limit, limits.memory_bytes),
        other => panic!("unexpected {other}"),
    }
    assert!(
        call(BUCKETS, &CallLimits::default()).is_ok(),
        "the runtime serves on"
    );
}
