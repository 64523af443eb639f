//! KCL in the sandbox (the kcl-eval test guest, which runs plait-kcl as
//! the KCL function will): a program's items become composed resources, a
//! KCL error is a fatal result with KCL's message and never a trap, and a
//! program that loops, recurses without end or builds a huge value stops
//! with an error: at the call's deadline or memory limit (the runtime's
//! error, which the pipeline reports under the step's name), or KCL's own
//! recursion limit.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use plait_runtime::{CallError, CallLimits, CallOutput, Module, Runtime, RuntimeConfig};
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

fn kcl_eval() -> Arc<Module> {
    static WASM: OnceLock<Vec<u8>> = OnceLock::new();
    let wasm = WASM.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("test-guests");
        let path = plait_guest_build::build_guest("plait-test-guest-kcl-eval", &root, &out)
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::read(path).unwrap()
    });
    runtime().load(wasm).unwrap()
}

fn request(source: &str) -> Request {
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
        input: Some(json!({"source": source})),
        ..Request::default()
    }
}

fn call(source: &str, limits: &CallLimits) -> Result<CallOutput, CallError> {
    runtime().call(&kcl_eval(), &request(source), limits)
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
fn a_kcl_error_is_a_fatal_result_with_kcls_message() {
    let cases = [
        ("assert False, \"no region given\"\n", "no region given"),
        ("a = \n", "InvalidSyntax"),
        ("a = 1\na = 2\n", "ImmutableError"),
    ];
    for (source, expected) in cases {
        let message = fatal_message(source);
        assert!(message.contains(expected), "{source}: {message}");
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
