//! patch-and-transform through the sandbox against the same logic compiled
//! natively, on Compositions of 1, 10 and 100 resources. Prints per-call
//! medians and the Wasm/native ratio.
//!
//! `cargo bench -p plait-runtime --bench patch_and_transform`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use plait_patch_and_transform::{PatchAndTransform, bench_input};
use plait_runtime::{Builtin, CallLimits, Runtime, RuntimeConfig};
use plait_sdk::Function;

/// Batches per measurement; the median batch is reported.
const BATCHES: usize = 31;
/// Each batch runs at least this long, so timer resolution does not matter.
const BATCH_TIME: Duration = Duration::from_millis(20);

/// Median per-iteration time of `run`.
fn median_per_call(mut run: impl FnMut()) -> Duration {
    let start = Instant::now();
    let mut warmup = 0u32;
    while start.elapsed() < BATCH_TIME * 5 {
        run();
        warmup += 1;
    }
    let per_batch = (warmup / 5).max(1);
    let mut samples: Vec<Duration> = (0..BATCHES)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..per_batch {
                run();
            }
            start.elapsed() / per_batch
        })
        .collect();
    samples.sort();
    samples[BATCHES / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not, and
    // then one quick pass proves the benchmark still works.
    let quick = !std::env::args().any(|arg| arg == "--bench");
    let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
    let module = runtime.builtin(Builtin::PatchAndTransform).unwrap();
    let limits = CallLimits::default();

    let start = Instant::now();
    runtime.instantiate(&module, &limits).unwrap();
    println!("first instantiation: {:?}", start.elapsed());

    println!(
        "{:>9} {:>12} {:>12} {:>7}",
        "resources", "native", "wasm", "ratio"
    );
    for resources in [1, 10, 100] {
        let request = bench_input::request(resources);
        let native_output = PatchAndTransform::run(request.clone()).unwrap();
        let wasm_output = runtime.call(&module, &request, &limits).unwrap().response;
        assert_eq!(
            serde_json::to_value(&native_output).unwrap(),
            serde_json::to_value(&wasm_output).unwrap(),
            "native and Wasm disagree for {resources} resources"
        );
        if quick {
            continue;
        }
        // The native run consumes its request; cloning it is part of neither
        // measurement, so it is timed alone and subtracted.
        let clone = median_per_call(|| {
            black_box(request.clone());
        });
        let native = median_per_call(|| {
            black_box(PatchAndTransform::run(request.clone()).unwrap());
        })
        .saturating_sub(clone);
        let wasm = median_per_call(|| {
            black_box(runtime.call(&module, &request, &limits).unwrap());
        });
        println!(
            "{resources:>9} {:>12} {:>12} {:>6.2}x",
            format!("{native:.1?}"),
            format!("{wasm:.1?}"),
            wasm.as_secs_f64() / native.as_secs_f64()
        );
    }
}
