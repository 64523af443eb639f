//! What a function costs per language: component size, first load (compile
//! and write the disk cache), cached load (a new runtime reading that
//! cache), per-call time for the example's request, and start-up: a call
//! with an empty request, which every example answers at once (it finds
//! no composite), so what it measures is a fresh instance's start (for Go,
//! the runtime and every package's init) and the conversions around it.
//! For the examples in examples/functions.
//!
//! `make bench-functions` builds the examples and runs this; it prints a
//! Markdown table.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use plait_runtime::{CallLimits, Runtime, RuntimeConfig};
use plait_sdk::{Request, Resource, State};
use serde_json::{Value, json};

const CALLS: usize = 50;
const LOADS: usize = 5;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/functions")
        .join(name)
}

fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml_ng::from_str(&text).unwrap()
}

fn request(name: &str) -> Request {
    let dir = example(name);
    let mut request = Request {
        observed: State {
            composite: Some(Resource::new(yaml(&dir.join("xr.yaml")))),
            ..State::default()
        },
        ..Request::default()
    };
    match name {
        "c-labels" => {
            request.input = Some(json!({"labels": {"team": "web"}}));
            request.desired.resources.insert(
                "web".into(),
                Resource::new(
                    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
                ),
            );
        }
        "js-database" => {
            request
                .required_resources
                .insert("password".into(), vec![yaml(&dir.join("required.yaml"))]);
        }
        "go-volume" => {
            request
                .required_resources
                .insert("defaults".into(), vec![yaml(&dir.join("required.yaml"))]);
        }
        _ => {}
    }
    request
}

fn millis(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let rows = [
        ("Rust", "rust-app"),
        ("Python", "python-tenant"),
        ("JavaScript", "js-database"),
        ("C", "c-labels"),
        ("Go", "go-volume"),
    ];
    println!(
        "| language | example | size | first load (compile) | cached load (median of {LOADS}) | call (median of {CALLS}) | start-up call (median of {CALLS}) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (language, name) in rows {
        let wasm_path = example(name).join("function.wasm");
        let Ok(wasm) = std::fs::read(&wasm_path) else {
            eprintln!(
                "{} is missing: run `make functions` (or its build.sh) first",
                wasm_path.display()
            );
            std::process::exit(1);
        };
        let cache = tempfile::tempdir().unwrap();
        let config = RuntimeConfig {
            cache_dir: Some(cache.path().to_path_buf()),
            ..RuntimeConfig::default()
        };
        let start = Instant::now();
        Runtime::new(config.clone()).unwrap().load(&wasm).unwrap();
        let compile = start.elapsed();

        // Each load is a new runtime, as after a restart: nothing in memory,
        // the artifact in the disk cache.
        let mut loads: Vec<Duration> = (0..LOADS)
            .map(|_| {
                let runtime = Runtime::new(config.clone()).unwrap();
                let start = Instant::now();
                runtime.load(&wasm).unwrap();
                start.elapsed()
            })
            .collect();
        loads.sort();
        let cached = loads[LOADS / 2];

        let runtime = Runtime::new(config).unwrap();
        let module = runtime.load(&wasm).unwrap();
        let request = request(name);
        let limits = CallLimits::default();
        let mut calls: Vec<Duration> = (0..CALLS)
            .map(|_| {
                let start = Instant::now();
                runtime.call(&module, &request, &limits).unwrap();
                start.elapsed()
            })
            .collect();
        calls.sort();
        // Calls that fail (no composite) still start an instance and run it.
        let empty = Request::default();
        let mut starts: Vec<Duration> = (0..CALLS)
            .map(|_| {
                let start = Instant::now();
                let _ = runtime.call(&module, &empty, &limits);
                start.elapsed()
            })
            .collect();
        starts.sort();
        println!(
            "| {language} | {name} | {:.1} MB | {} | {} | {:.0} µs | {:.0} µs |",
            wasm.len() as f64 / 1e6,
            millis(compile),
            millis(cached),
            calls[CALLS / 2].as_secs_f64() * 1e6,
            starts[CALLS / 2].as_secs_f64() * 1e6,
        );
    }
}
