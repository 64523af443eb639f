//! KCL's speed and size: a typical Composition program
//! (guests/kcl/benches/composition.k, with composition.params.json as
//! `option("params")`) run by plait-kcl in the sandbox (the built-in
//! function-kcl, `Builtin::Kcl`, with the program as its input), by
//! plait-kcl natively, and by the real KCL natively (PyPI kcl-lib, timed
//! in-process; skipped with a notice when its venv is absent). Figures: the
//! component's size, its first compile, the median call on a fresh
//! instance, the least guest memory the call succeeds in, and the native
//! medians, each against its goal.
//!
//! `cargo bench -p plait-runtime --bench kcl`
//!
//! With `PLAIT_BENCH_KCL_BASELINE=<component.wasm>` (an earlier build of
//! the built-in, e.g. `target/guests/wasm32-wasip2/guest/plait_function_kcl.wasm`
//! copied aside), the bench also checks that the baseline gives the same
//! response and times both side by side, call for call alternating, so a
//! change is measured under the same load.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Instant;

#[path = "../../../guests/kcl/benches/support/kcl_lib.rs"]
mod kcl_lib;
#[path = "support/measure.rs"]
mod measure;

use measure::{median, peak_memory_mb, reset_peak_memory};
use plait_runtime::{Builtin, CallLimits, Module, Runtime, RuntimeConfig};
use plait_sdk::{Ready, Request, Resource, State};
use serde_json::{Value, json};

// The native figures allocate as the plait binary does (jemalloc): with
// the C library's allocator, in a process wasmtime has used, the evaluator's
// many small allocations made the native call slower than the sandboxed one
// (see guests/kcl/benches/composition.rs).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const PROGRAM: &str = include_str!("../../../guests/kcl/benches/composition.k");
const PARAMS: &str = include_str!("../../../guests/kcl/benches/composition.params.json");

const MIB: usize = 1 << 20;

/// The request function-kcl's params come from: the observed XR and
/// composed resources of `params`, the program as its `KCLInput`.
fn request(params: &Value) -> Request {
    let resources = params["ocds"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, ocd)| (name.clone(), Resource::new(ocd["Resource"].clone())))
        .collect();
    Request {
        tag: "bench".into(),
        observed: State {
            composite: Some(Resource::new(params["oxr"].clone())),
            resources,
        },
        input: Some(json!({
            "apiVersion": "krm.kcl.dev/v1alpha1",
            "kind": "KCLInput",
            "spec": {"source": PROGRAM},
        })),
        context: params["ctx"].clone(),
        ..Request::default()
    }
}

/// The least memory limit, to 64 KiB, the call succeeds within: the peak
/// of the guest's linear memory.
fn peak_guest_memory(runtime: &Runtime, module: &Module, request: &Request) -> usize {
    let fits = |bytes: usize| {
        let limits = CallLimits {
            memory_bytes: bytes,
            ..CallLimits::default()
        };
        runtime.call(module, request, &limits).is_ok()
    };
    let (mut low, mut high) = (0, 256 * MIB);
    assert!(fits(high), "the call fails within {high} bytes");
    while high - low > 64 << 10 {
        let mid = (low + high) / 2;
        if fits(mid) {
            high = mid;
        } else {
            low = mid;
        }
    }
    high
}

fn native(params: &Value) -> plait_kcl::embed::EmbeddedOutput {
    let program = plait_kcl::embed::Embedded {
        name: "main.k".into(),
        source: PROGRAM.into(),
        options: vec![("params".into(), params.clone())],
        step_limit: None,
        stack_budget: None,
    };
    plait_kcl::embed::run(&program).unwrap_or_else(|e| panic!("{}", e.render()))
}

fn row(what: &str, figure: String, goal: &str) {
    println!("{what:<44} {figure:>12}   {goal}");
}

fn main() {
    let quick = !std::env::args().any(|arg| arg == "--bench");
    let params: Value = serde_json::from_str(PARAMS).unwrap();
    let request = request(&params);
    let wasm = Builtin::Kcl.wasm();
    let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
    let limits = CallLimits::default();

    reset_peak_memory();
    let start = Instant::now();
    let module = runtime.load(wasm).unwrap();
    let compile = start.elapsed();
    let output = runtime.call(&module, &request, &limits).unwrap();
    let host_peak = peak_memory_mb();
    let response = &output.response;
    assert!(response.results.is_empty(), "{:?}", response.results);

    // The same documents natively: the program's items as function-kcl
    // composes them, each named and made ready by its annotations (which it
    // removes), the XR's item giving the desired XR its status.
    let expected = native(&params);
    let items = expected.documents[0]["items"].as_array().unwrap();
    let mut composed = 0;
    for item in items {
        if item["kind"] == params["oxr"]["kind"] {
            let composite = &response.desired.composite.as_ref().unwrap().resource;
            assert_eq!(composite["status"], item["status"]);
            continue;
        }
        composed += 1;
        let mut item = item.clone();
        let annotations = item["metadata"]["annotations"].as_object_mut().unwrap();
        let ready = annotations.remove("krm.kcl.dev/ready");
        let name = annotations
            .remove("krm.kcl.dev/composition-resource-name")
            .unwrap();
        let name = name.as_str().unwrap();
        let desired = &response.desired.resources[name];
        assert_eq!(desired.resource, item, "{name}");
        let ready = match ready.as_ref().and_then(Value::as_str) {
            Some("True") => Ready::True,
            _ => Ready::Unspecified,
        };
        assert_eq!(desired.ready, ready, "{name}");
    }
    assert_eq!(response.desired.resources.len(), composed);

    println!(
        "a typical Composition program: {} lines of KCL, {} resources composed",
        PROGRAM.lines().count(),
        items.len()
    );
    row(
        "component size (guest profile)",
        format!("{:.2} MB", wasm.len() as f64 / 1e6),
        "goal <= 4 MB",
    );
    row(
        "first compile of the component",
        format!("{compile:.2?}"),
        "goal <= 3 s",
    );
    row(
        "host process peak, compile and first call",
        format!("{host_peak} MB"),
        "",
    );
    if quick {
        return;
    }
    let per_call = median(|| {
        runtime.call(&module, &request, &limits).unwrap();
    });
    let instantiate = median(|| runtime.instantiate(&module, &limits).unwrap());
    let peak = peak_guest_memory(&runtime, &module, &request);
    let native_call = median(|| {
        native(&params);
    });
    row(
        "per call in Wasm, fresh instance",
        format!("{per_call:.2?}"),
        "goal <= 500 µs",
    );
    row("  of which instantiation", format!("{instantiate:.2?}"), "");
    if let Some(path) = std::env::var_os("PLAIT_BENCH_KCL_BASELINE") {
        side_by_side(&runtime, &module, Path::new(&path), &request, &limits);
    }
    row(
        "peak guest memory per call",
        format!("{:.2} MiB", peak as f64 / MIB as f64),
        "goal <= 16 MiB",
    );
    row(
        "per call natively (plait-kcl)",
        format!("{native_call:.2?}"),
        "",
    );
    row(
        "Wasm / native",
        format!("{:.2}x", per_call.as_secs_f64() / native_call.as_secs_f64()),
        "goal <= 3x",
    );
    let benches = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../guests/kcl/benches");
    match kcl_lib::median(&benches, 200) {
        Ok(kcl) => {
            row(
                "per call natively (kcl-lib 0.12.3, in-process)",
                format!("{kcl:.2?}"),
                "",
            );
            row(
                "kcl-lib / plait-kcl in Wasm",
                format!("{:.1}x", kcl.as_secs_f64() / per_call.as_secs_f64()),
                "",
            );
        }
        Err(notice) => println!("{notice}"),
    }
}

/// The built-in against an earlier build of it (`baseline`): the same
/// response, then each one's median call and first compile, measured
/// alternately.
fn side_by_side(
    runtime: &Runtime,
    module: &Module,
    baseline: &Path,
    request: &Request,
    limits: &CallLimits,
) {
    let wasm = std::fs::read(baseline)
        .unwrap_or_else(|e| panic!("PLAIT_BENCH_KCL_BASELINE {}: {e}", baseline.display()));
    let start = Instant::now();
    let old = runtime.load(&wasm).unwrap();
    let old_compile = start.elapsed();
    let start = Instant::now();
    runtime.load(Builtin::Kcl.wasm()).unwrap();
    let new_compile = start.elapsed();
    let old_response = runtime.call(&old, request, limits).unwrap().response;
    let new_response = runtime.call(module, request, limits).unwrap().response;
    assert_eq!(
        old_response, new_response,
        "the baseline's response differs"
    );
    let mut old_calls = Vec::new();
    let mut new_calls = Vec::new();
    for _ in 0..measure::CALLS {
        let start = Instant::now();
        runtime.call(&old, request, limits).unwrap();
        old_calls.push(start.elapsed());
        let start = Instant::now();
        runtime.call(module, request, limits).unwrap();
        new_calls.push(start.elapsed());
    }
    old_calls.sort();
    new_calls.sort();
    let (old_call, new_call) = (
        old_calls[old_calls.len() / 2],
        new_calls[new_calls.len() / 2],
    );
    row(
        "baseline: size",
        format!("{:.2} MB", wasm.len() as f64 / 1e6),
        "",
    );
    row(
        "first compile, baseline / this build",
        format!("{old_compile:.2?} / {new_compile:.2?}"),
        "",
    );
    row(
        "per call in Wasm, baseline / this build",
        format!("{old_call:.2?} / {new_call:.2?}"),
        "alternating",
    );
}
