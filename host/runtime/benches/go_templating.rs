//! The built-in go-templating component against the built-in
//! patch-and-transform on the same 10 Buckets: the time of the first call
//! (compiling the component) and the process's peak memory while it ran,
//! then per-call medians of instantiating alone and of a whole call, each
//! on a fresh instance as in the controller. go-templating is measured as
//! built in (started from its snapshot) and, built again from its source,
//! componentized without the snapshot (every instance starts Go's runtime
//! and runs every package's init).
//!
//! `cargo bench -p plait-runtime --bench go_templating`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

#[path = "support/measure.rs"]
mod measure;

use measure::{median, peak_memory_mb, reset_peak_memory};
use plait_patch_and_transform::bench_input;
use plait_runtime::{Builtin, CallLimits, Runtime, RuntimeConfig};
use plait_sdk::Request;
use serde_json::json;

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

/// go-templating componentized without its snapshot, from its source.
fn go_templating_initialised_every_call() -> Vec<u8> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = tempfile::tempdir().unwrap();
    let name = "plait-go-templating";
    plait_guest_build::build_go_guest("guests/go-templating", name, &root, out.path()).unwrap();
    let core = std::fs::read(out.path().join(format!("{name}.core.wasm"))).unwrap();
    plait_componentize::componentize_with(&core, plait_componentize::Initialise::EveryCall).unwrap()
}

fn main() {
    let quick = !std::env::args().any(|arg| arg == "--bench");
    let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
    let limits = CallLimits::default();
    let pt_request = bench_input::request(10);
    let gt_request = go_templating_request(&pt_request);
    let every_call = go_templating_initialised_every_call();
    println!(
        "{:<34} {:>10} {:>12} {:>10} {:>12} {:>12}",
        "component", "size", "first call", "peak", "instantiate", "per call"
    );
    let rows: [(&str, &[u8], &Request); 3] = [
        (
            "patch-and-transform",
            Builtin::PatchAndTransform.wasm(),
            &pt_request,
        ),
        (
            "go-templating (snapshot)",
            Builtin::GoTemplating.wasm(),
            &gt_request,
        ),
        ("go-templating (init every call)", &every_call, &gt_request),
    ];
    for (name, wasm, request) in rows {
        reset_peak_memory();
        let start = Instant::now();
        let module = runtime.load(wasm).unwrap();
        let output = runtime.call(&module, request, &limits).unwrap();
        let first = start.elapsed();
        let peak = peak_memory_mb();
        assert_eq!(
            output.response.desired.resources.len(),
            10,
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
                    runtime.call(&module, request, &limits).unwrap();
                }),
            )
        };
        println!(
            "{:<34} {:>7} KB {:>12.1?} {:>7} MB {:>12.2?} {:>12.2?}",
            name,
            wasm.len() / 1024,
            first,
            peak,
            instantiate,
            per_call
        );
    }
}
