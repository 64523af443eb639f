//! Per-call costs: instantiating a built-in, and a whole call of a small guest.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use plait_runtime::{Builtin, CallLimits, Runtime, RuntimeConfig};
use plait_sdk::{Request, Resource, State};
use serde_json::json;

fn echo_wasm() -> Vec<u8> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bench-guests");
    let path = plait_guest_build::build_guest("plait-test-guest-echo", &root, &out)
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::read(path).unwrap()
}

fn request() -> Request {
    Request {
        tag: "bench".into(),
        desired: State {
            composite: None,
            resources: [(
                "bucket".to_string(),
                Resource::new(
                    json!({"apiVersion": "s3/v1", "kind": "Bucket", "spec": {"region": "eu"}}),
                ),
            )]
            .into(),
        },
        ..Request::default()
    }
}

fn benches(c: &mut Criterion) {
    let runtime = Runtime::new(RuntimeConfig::default()).unwrap();

    let pt = runtime.builtin(Builtin::PatchAndTransform).unwrap();
    c.bench_function("instantiate", |b| {
        b.iter(|| runtime.instantiate(&pt, &CallLimits::default()).unwrap())
    });

    let echo = runtime.load(&echo_wasm()).unwrap();
    let request = request();
    let limits = CallLimits::default();
    c.bench_function("call/echo", |b| {
        b.iter(|| runtime.call(&echo, &request, &limits).unwrap())
    });
}

criterion_group!(call, benches);
criterion_main!(call);
