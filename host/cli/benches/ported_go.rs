//! A real Go function ported to plait against plait's built-in: upstream
//! function-patch-and-transform v0.10.7 with its main.go replaced (what
//! tests/differential/build-ported.sh builds, started from its snapshot)
//! beside the built-in patch-and-transform, on the same request of 10
//! composed resources. For each: the component's size, its first load
//! (compiling it) and the process's peak memory meanwhile, the compiled
//! artifact the disk cache keeps, a load from that cache (a restart), and
//! per-call medians of instantiating alone and of a whole call, each on a
//! fresh instance as in the controller.
//!
//! `cargo bench -p plait --bench ported_go` (needs Go; the port is cached
//! under ~/.cache/plait/).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

#[path = "../../runtime/benches/support/measure.rs"]
mod measure;

use measure::{median, peak_memory_mb, reset_peak_memory};
use plait_patch_and_transform::bench_input;
use plait_runtime::{Builtin, CallLimits, Runtime, RuntimeConfig};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The ported component, built (or found in the cache) by build-ported.sh.
fn ported_patch_and_transform() -> Vec<u8> {
    let out = Command::new(repo().join("tests/differential/build-ported.sh"))
        .arg("function-patch-and-transform")
        .env("PLAIT", env!("CARGO_BIN_EXE_plait"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "build-ported.sh failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .map(PathBuf::from)
        .unwrap();
    std::fs::read(path).unwrap()
}

/// Bytes of every file under `dir`.
fn size_on_disk(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| {
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                size_on_disk(&entry.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

fn megabytes(bytes: u64) -> String {
    // Sizes of components are far below 2^52 bytes.
    #[allow(clippy::cast_precision_loss)]
    let megabytes = bytes as f64 / 1e6;
    format!("{megabytes:.1} MB")
}

fn main() {
    let quick = !std::env::args().any(|arg| arg == "--bench");
    let ported = ported_patch_and_transform();
    let request = bench_input::request(10);
    let limits = CallLimits::default();
    println!(
        "{:<30} {:>9} {:>11} {:>8} {:>10} {:>12} {:>12} {:>10}",
        "component",
        "size",
        "first load",
        "peak",
        "on disk",
        "cached load",
        "instantiate",
        "per call"
    );
    let rows: [(&str, &[u8]); 2] = [
        (
            "built-in patch-and-transform",
            Builtin::PatchAndTransform.wasm(),
        ),
        ("ported patch-and-transform", &ported),
    ];
    for (name, wasm) in rows {
        let cache = tempfile::tempdir().unwrap();
        let config = RuntimeConfig {
            cache_dir: Some(cache.path().to_path_buf()),
            ..RuntimeConfig::default()
        };
        reset_peak_memory();
        let runtime = Runtime::new(config.clone()).unwrap();
        let start = Instant::now();
        let module = runtime.load(wasm).unwrap();
        let output = runtime.call(&module, &request, &limits).unwrap();
        let first = start.elapsed();
        let peak = peak_memory_mb();
        assert_eq!(
            output.response.desired.resources.len(),
            10,
            "{name}: {:?}",
            output.response.results
        );
        let on_disk = size_on_disk(cache.path());
        drop(module);
        drop(runtime);

        let restarted = Runtime::new(config).unwrap();
        let start = Instant::now();
        let module = restarted.load(wasm).unwrap();
        let cached_load = start.elapsed();
        let (instantiate, per_call) = if quick {
            (Duration::ZERO, Duration::ZERO)
        } else {
            (
                median(|| {
                    restarted.instantiate(&module, &limits).unwrap();
                }),
                median(|| {
                    restarted.call(&module, &request, &limits).unwrap();
                }),
            )
        };
        println!(
            "{:<30} {:>9} {:>11.1?} {:>5} MB {:>10} {:>12.1?} {:>12.2?} {:>10.2?}",
            name,
            megabytes(u64::try_from(wasm.len()).unwrap_or(u64::MAX)),
            first,
            peak,
            megabytes(on_disk),
            cached_load,
            instantiate,
            per_call
        );
    }
}
