//! Spreading waits: retries of many objects, or of many watches, that
//! failed together must not come back together.

use std::hash::BuildHasher;
use std::time::Duration;

/// `wait` spread over [wait/2, wait*3/2) by `fraction` in [0, 1).
pub fn jittered(wait: Duration, fraction: f64) -> Duration {
    wait.mul_f64(0.5 + fraction.clamp(0.0, 1.0))
}

/// A number in [0, 1): each `RandomState` is freshly seeded, which is random
/// enough to spread retries.
pub fn random_fraction() -> f64 {
    let bits = std::collections::hash_map::RandomState::new().hash_one(0u8);
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_spreads_a_wait_around_itself() {
        // (fraction, wait in ms after jitter of 1000 ms)
        let cases = [(0.0, 500), (0.5, 1000), (0.999, 1499), (2.0, 1500)];
        for (fraction, want) in cases {
            assert_eq!(
                jittered(Duration::from_secs(1), fraction).as_millis(),
                want,
                "{fraction}"
            );
        }
    }
}
