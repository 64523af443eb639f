//! How often and how patiently objects are reconciled, and the per-object
//! backoff every controller shares.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// How often and how patiently XRs are reconciled.
#[derive(Debug, Clone)]
pub struct Timing {
    /// Reconcile every XR at least this often, whatever the watches say.
    pub poll_interval: Duration,
    /// How long one pipeline run may take.
    pub reconcile_timeout: Duration,
    /// The first retry after an error; doubled per failure up to the poll interval.
    pub backoff_base: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            poll_interval: Duration::from_secs(60),
            reconcile_timeout: Duration::from_secs(120),
            backoff_base: Duration::from_secs(1),
        }
    }
}

/// Consecutive failures per object, and the requeue they earn:
/// `base * 2^(failures-1)`, capped.
pub struct Backoff<K> {
    base: Duration,
    cap: Duration,
    failures: Mutex<HashMap<K, u32>>,
}

impl<K: Eq + Hash + Clone> Backoff<K> {
    pub fn new(base: Duration, cap: Duration) -> Backoff<K> {
        Backoff {
            base,
            cap,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// The backoff of `timing`: from its base up to its poll interval.
    pub fn of(timing: &Timing) -> Backoff<K> {
        Backoff::new(timing.backoff_base, timing.poll_interval)
    }

    /// Counts one more failure of `key` and returns how long to wait.
    pub fn failed(&self, key: &K) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        let n = failures.entry(key.clone()).or_insert(0);
        *n = n.saturating_add(1);
        delay(self.base, self.cap, *n)
    }

    /// Forgets the failures of `key` after it succeeded.
    pub fn succeeded(&self, key: &K) {
        self.failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }
}

fn delay(base: Duration, cap: Duration, failures: u32) -> Duration {
    let factor = 2u32.saturating_pow(failures.saturating_sub(1).min(16));
    base.saturating_mul(factor).min(cap)
}

/// Now, to the second, as Kubernetes writes condition times.
pub fn now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .round(k8s_openapi::jiff::Unit::Second)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| k8s_openapi::jiff::Timestamp::now().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_per_failure_up_to_the_cap() {
        let backoff = Backoff::<&str>::new(Duration::from_secs(1), Duration::from_secs(60));
        let cases = [(1, 1), (2, 2), (3, 4), (6, 32), (7, 60), (1000, 60)];
        for (failures, want) in cases {
            assert_eq!(
                delay(backoff.base, backoff.cap, failures),
                Duration::from_secs(want),
                "{failures}"
            );
        }
    }

    #[test]
    fn backoff_counts_per_key_and_resets_on_success() {
        let backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(60));
        // (key, failed (true) or succeeded (false), the delay a failure earns)
        let steps = [
            ("a", true, 1),
            ("a", true, 2),
            ("b", true, 1),
            ("a", true, 4),
            ("a", false, 0),
            ("a", true, 1),
            ("b", true, 2),
        ];
        for (i, (key, failed, want)) in steps.into_iter().enumerate() {
            if failed {
                assert_eq!(backoff.failed(&key), Duration::from_secs(want), "step {i}");
            } else {
                backoff.succeeded(&key);
            }
        }
    }
}
