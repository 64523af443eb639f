//! The typical Composition program (composition.k, with
//! composition.params.json as `option("params")`) evaluated natively by
//! plait-kcl, as the KCL function will run it (`embed::run`: text and JSON
//! values in, JSON documents out), beside the real KCL (kcl-lib, skipped
//! with a notice when its venv is absent). The same program in the sandbox,
//! with the component's size, compile time and memory, is
//! plait-runtime's `kcl` bench.
//!
//! `cargo bench -p plait-kcl --bench composition`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

#[path = "support/kcl_lib.rs"]
mod kcl_lib;

use plait_kcl::embed::{self, Embedded};

// The evaluator allocates tens of thousands of small blocks per call. With
// the C library's allocator they cost a third of a native call, and more in
// a process whose heap other work has fragmented, which made the native
// figure slower than the same evaluator in the sandbox (where a size-class
// allocator serves them in a few instructions). The plait binary runs KCL
// with jemalloc: so does this bench.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const PROGRAM: &str = include_str!("composition.k");
const PARAMS: &str = include_str!("composition.params.json");
const RUNS: usize = 1001;

fn main() {
    let quick = !std::env::args().any(|arg| arg == "--bench");
    let program = Embedded {
        name: "composition.k".into(),
        source: PROGRAM.into(),
        options: vec![("params".into(), serde_json::from_str(PARAMS).unwrap())],
        step_limit: None,
        stack_budget: None,
    };
    let output = embed::run(&program).unwrap_or_else(|e| panic!("{}", e.render()));
    let items = output.documents[0]["items"].as_array().map_or(0, Vec::len);
    println!(
        "a typical Composition program: {} lines of KCL, {items} resources composed",
        PROGRAM.lines().count()
    );
    if quick {
        return;
    }
    let mut samples: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            embed::run(&program).unwrap();
            start.elapsed()
        })
        .collect();
    samples.sort();
    let native = samples[RUNS / 2];
    println!(
        "{:<48} {native:>10.2?}",
        "per call natively (plait-kcl, median)"
    );
    match kcl_lib::median(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("benches")
            .as_path(),
        200,
    ) {
        Ok(kcl) => {
            println!(
                "{:<48} {kcl:>10.2?}",
                "per call natively (kcl-lib 0.12.3, median)"
            );
            println!(
                "{:<48} {:>9.1}x",
                "kcl-lib / plait-kcl",
                kcl.as_secs_f64() / native.as_secs_f64()
            );
        }
        Err(notice) => println!("{notice}"),
    }
}
