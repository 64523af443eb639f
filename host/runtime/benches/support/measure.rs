//! Measuring helpers the component benches share.

use std::time::{Duration, Instant};

/// Calls per measurement; the median is reported.
pub const CALLS: usize = 101;

/// The median time of [`CALLS`] runs of `call`.
pub fn median(mut call: impl FnMut()) -> Duration {
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

/// Forgets the process's peak memory so far (Linux), so the next reading
/// is the peak from now on.
pub fn reset_peak_memory() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The process's peak resident memory since the last reset, in MB (Linux).
pub fn peak_memory_mb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}
