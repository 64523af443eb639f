//! The built-in go-templating component against the built-in
//! patch-and-transform on the same 10 Buckets: the time of the first call
//! (compiling the component, or loading it from the cache), then per-call
//! medians of instantiating alone (for a Go component: starting Go's
//! runtime and running every package's init) and of a whole call, each on
//! a fresh instance as in the controller.
//!
//! `cargo bench -p plait-runtime --bench go_templating`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use plait_patch_and_transform::bench_input;
use plait_runtime::{Builtin, CallLimits, Runtime, RuntimeConfig};
use plait_sdk::Request;
use serde_json::json;

/// Calls per measurement; the median is reported.
const CALLS: usize = 101;

/// What the P&T bench Composition composes, as one Go template: a Bucket
/// per index with the same patches (names, external name, region map,
/// tags, readiness) and the ARNs written back to the XR's status.
const TEMPLATE: &str = r#"{{- $xr := .observed.composite.resource -}}
{{- $p := $xr.spec.parameters -}}
{{- $regions := dict "eu" "eu-west-1" "us" "us-east-1" "ap" "ap-southeast-1" -}}
{{- range $i := until 10 }}
---
apiVersion: s3.aws.upbound.io/v1beta1
kind: Bucket
metadata:
  annotations:
    gotemplating.fn.crossplane.io/composition-resource-name: bucket-{{ $i }}
    crossplane.io/external-name: {{ $p.prefix }}-bucket-{{ $i }}
  labels: {{ $xr.metadata.labels | toJson }}
spec:
  deletionPolicy: Delete
  forProvider:
    region: {{ get $regions $p.region }}
    tags:
      managed-by: crossplane
      environment: {{ $p.environment }}
      name: {{ $p.prefix }}-{{ $p.tier }}
{{- end }}
---
apiVersion: example.org/v1alpha1
kind: XBucketSet
status:
  buckets:
{{- range $name, $r := .observed.resources }}
    {{ $name | replace "-" "" }}: {{ $r.resource.status.atProvider.arn }}
{{- end }}
"#;

fn go_templating_request(pt: &Request) -> Request {
    Request {
        input: Some(json!({
            "apiVersion": "gotemplating.fn.crossplane.io/v1beta1",
            "kind": "GoTemplate",
            "source": "Inline",
            "inline": {"template": TEMPLATE},
        })),
        ..pt.clone()
    }
}

fn median(mut call: impl FnMut()) -> Duration {
    let mut samples: Vec<Duration> = (0..CALLS)
        .map(|_| {
            let start = Instant::now();
            call();
            start.elapsed()
        })
        .collect();
    samples.sort();
    samples[CALLS / 2]
}

fn main() {
    let quick = !std::env::args().any(|arg| arg == "--bench");
    let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
    let limits = CallLimits::default();
    let pt_request = bench_input::request(10);
    let gt_request = go_templating_request(&pt_request);
    println!(
        "{:<16} {:>10} {:>12} {:>12} {:>12}",
        "built-in", "size", "first call", "instantiate", "per call"
    );
    for (builtin, request) in [
        (Builtin::PatchAndTransform, &pt_request),
        (Builtin::GoTemplating, &gt_request),
    ] {
        let start = Instant::now();
        let module = runtime.builtin(builtin).unwrap();
        let output = runtime.call(&module, request, &limits).unwrap();
        let first = start.elapsed();
        assert_eq!(
            output.response.desired.resources.len(),
            10,
            "{builtin:?}: {:?}",
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
                    runtime.call(&module, request, &limits).unwrap();
                }),
            )
        };
        println!(
            "{:<16} {:>8} KB {:>12.1?} {:>12.2?} {:>12.2?}",
            builtin.name().trim_start_matches("function-"),
            builtin.wasm().len() / 1024,
            first,
            instantiate,
            per_call
        );
    }
}
