//! The built-in function-sequencer, function-cidr, function-extra-resources
//! and function-status-transformer, each on a request shaped like
//! upstream's examples: the time of the first call (compiling the
//! component) and the process's peak memory while it ran, then per-call medians of instantiating alone and of a whole
//! call, each on a fresh instance as in the controller.
//!
//! `cargo bench -p plait-runtime --bench ecosystem -- --bench`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

// The shared helpers also measure peak memory, which these small
// built-ins' figures leave out.
#[allow(dead_code)]
#[path = "support/measure.rs"]
mod measure;

use measure::{median, peak_memory_mb, reset_peak_memory};
use plait_runtime::{Builtin, CallLimits, Runtime, RuntimeConfig};
use plait_sdk::{Ready, Request, Resource, State};
use serde_json::{Value, json};

fn xr() -> Value {
    json!({"apiVersion": "platform.upbound.io/v1alpha1", "kind": "XCIDR", "metadata": {"name": "example"},
           "spec": {"parameters": {"cidrFunc": "cidrsubnets", "cidrBlock": "10.0.0.0/16", "newBits": [8, 8, 4, 4, 2]}}})
}

fn composed(ready: bool) -> Resource {
    Resource {
        resource: json!({"apiVersion": "s3.aws.upbound.io/v1beta1", "kind": "Bucket", "metadata": {"name": "b"},
            "status": {"conditions": [{"type": "Synced", "status": "False", "reason": "ReconcileError",
                "message": "failed to create the bucket: quota exceeded"}]}}),
        ready: if ready { Ready::True } else { Ready::False },
        ..Resource::default()
    }
}

/// Ten composed resources, five observed and ready.
fn state() -> (State, State) {
    let names = (0..10).map(|i| format!("bucket-{i}"));
    let desired = names.clone().map(|n| (n, composed(true))).collect();
    let observed = names.take(5).map(|n| (n, composed(true))).collect();
    (
        State {
            composite: Some(Resource::new(xr())),
            resources: observed,
        },
        State {
            composite: Some(Resource::new(xr())),
            resources: desired,
        },
    )
}

fn request(input: Value) -> Request {
    let (observed, desired) = state();
    Request {
        input: Some(input),
        observed,
        desired,
        ..Request::default()
    }
}

fn requests() -> [(&'static str, Builtin, Request); 4] {
    let sequencer = request(json!({
        "apiVersion": "sequencer.fn.crossplane.io/v1beta1", "kind": "Input",
        "rules": [{"sequence": ["bucket-[0-4]", "bucket-[5-7]", "bucket-[89]"]}],
    }));
    let cidr = request(json!({
        "apiVersion": "cidr.fn.crossplane.io/v1beta1", "kind": "Parameters",
        "cidrFuncField": "spec.parameters.cidrFunc", "prefixField": "spec.parameters.cidrBlock",
        "newBitsField": "spec.parameters.newBits",
    }));
    let mut extra = request(json!({
        "apiVersion": "extra-resources.fn.crossplane.io/v1beta1", "kind": "Input",
        "spec": {"extraResources": [{"kind": "XCluster", "into": "XCluster", "apiVersion": "example.crossplane.io/v1",
            "type": "Selector", "selector": {"maxMatch": 2, "minMatch": 1,
                "matchLabels": [{"key": "type", "type": "Value", "value": "cluster"}]}}]},
    }));
    extra.required_resources = [(
        "XCluster".to_string(),
        (0..10)
            .map(|i| {
                json!({"apiVersion": "example.crossplane.io/v1", "kind": "XCluster",
                "metadata": {"name": format!("cluster-{i}"), "labels": {"type": "cluster"}}})
            })
            .collect(),
    )]
    .into();
    let status = request(json!({
        "apiVersion": "function-status-transformer.fn.crossplane.io/v1beta1", "kind": "StatusTransformation",
        "statusConditionHooks": [{
            "matchers": [{"type": "AnyResourceMatchesAnyCondition", "resources": [{"name": "bucket-.*"}],
                "conditions": [{"type": "Synced", "status": "False", "reason": "ReconcileError",
                    "message": "failed to create the bucket: (?P<Error>.+)"}]}],
            "setConditions": [{"target": "CompositeAndClaim", "condition": {"type": "BucketsReady", "status": "False",
                "reason": "FailedToCreate", "message": "Encountered an error creating the buckets: {{ .Error }}"}}],
            "createEvents": [{"target": "CompositeAndClaim", "event": {"type": "Warning", "reason": "FailedToCreate",
                "message": "Encountered an error creating the buckets: {{ .Error }}"}}],
        }],
    }));
    [
        ("function-sequencer", Builtin::Sequencer, sequencer),
        ("function-cidr", Builtin::Cidr, cidr),
        ("function-extra-resources", Builtin::ExtraResources, extra),
        (
            "function-status-transformer",
            Builtin::StatusTransformer,
            status,
        ),
    ]
}

fn main() {
    let quick = !std::env::args().any(|arg| arg == "--bench");
    let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
    let limits = CallLimits::default();
    println!(
        "{:<30} {:>10} {:>12} {:>10} {:>12} {:>12}",
        "built-in", "size", "first call", "peak", "instantiate", "per call"
    );
    for (name, builtin, request) in requests() {
        let wasm = builtin.wasm();
        reset_peak_memory();
        let start = Instant::now();
        let module = runtime.load(wasm).unwrap();
        let output = runtime.call(&module, &request, &limits).unwrap();
        let first = start.elapsed();
        let peak = peak_memory_mb();
        assert!(
            !output.response.is_fatal(),
            "{name}: {:?}",
            output.response.results
        );
        let (instantiate, per_call) = if quick {
            (Duration::ZERO, Duration::ZERO)
        } else {
            (
                median(|| {
                    runtime.instantiate(&module, &limits).unwrap();
                }),
                median(|| {
                    runtime.call(&module, &request, &limits).unwrap();
                }),
            )
        };
        println!(
            "{:<30} {:>7} KB {:>12.1?} {:>7} MB {:>12.2?} {:>12.2?}",
            name,
            wasm.len() / 1024,
            first,
            peak,
            instantiate,
            per_call
        );
    }
}
