//! How often and how patiently objects are reconciled, and the per-object
//! backoff every controller shares.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::controllers::breaker::BreakerLimits;
use crate::controllers::fair_queue::FairQueueLimits;
use crate::vocabulary::jitter::{jittered, random_fraction};

/// How often and how patiently XRs are reconciled.
#[derive(Debug, Clone)]
pub struct Timing {
    /// Reconcile every XR at least this often, whatever the watches say,
    /// unless its `crossplane.io/poll-interval` annotation says otherwise.
    pub poll_interval: Duration,
    /// The shortest poll interval an XR's annotation may ask for.
    pub min_poll_interval: Duration,
    /// How long one pipeline run may take.
    pub reconcile_timeout: Duration,
    /// The first retry after an error; doubled per failure up to the poll interval.
    pub backoff_base: Duration,
    /// How many XR and claim reconciles work at once, over every kind; the
    /// others wait their turn in the fair queue. A reconcile
    /// waiting for a function-call slot does not count.
    pub max_concurrent_reconciles: u16,
    /// How many reconciles of one tenant are admitted and unfinished at
    /// once, working or waiting for a function-call slot.
    pub tenant_max_reconciles: u16,
    /// How many watch events may wake one XR, before its circuit opens.
    pub circuit_breaker: BreakerLimits,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            poll_interval: Duration::from_secs(60),
            min_poll_interval: Duration::from_secs(1),
            reconcile_timeout: Duration::from_secs(120),
            backoff_base: Duration::from_secs(1),
            max_concurrent_reconciles: DEFAULT_MAX_CONCURRENT_RECONCILES,
            tenant_max_reconciles: DEFAULT_MAX_CONCURRENT_RECONCILES,
            circuit_breaker: BreakerLimits::default(),
        }
    }
}

impl Timing {
    /// How often `object` is polled: its `crossplane.io/poll-interval`
    /// annotation when that is a positive Go duration (raised to
    /// `min_poll_interval`), else `poll_interval`, as Crossplane's
    /// `effectivePollInterval`.
    pub fn poll_interval_of(&self, object: &serde_json::Value) -> Duration {
        let annotation = crate::vocabulary::object::text(
            object,
            &plait_reconcile::pointer::annotation(crate::vocabulary::api::ANNOTATION_POLL_INTERVAL),
        );
        match annotation.and_then(parse_go_duration) {
            Some(asked) if !asked.is_zero() => asked.max(self.min_poll_interval),
            _ => self.poll_interval,
        }
    }
}

/// Go's `time.ParseDuration` for a non-negative duration: decimal numbers,
/// each with a unit (`ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`), as in
/// `1h30m` or `1.5s`; `None` for anything else or a negative one.
pub fn parse_go_duration(text: &str) -> Option<Duration> {
    let unsigned = text.strip_prefix('+').unwrap_or(text);
    if unsigned == "0" {
        return Some(Duration::ZERO);
    }
    if unsigned.is_empty() || unsigned.starts_with('-') {
        return None;
    }
    let mut rest = unsigned;
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_end);
        if number.is_empty() || number == "." {
            return None;
        }
        let value: f64 = number.parse().ok()?;
        let unit_end = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_end);
        let nanos_per = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        total += value * nanos_per;
        rest = next;
    }
    // Go's durations are int64 nanoseconds.
    (total.is_finite() && total <= i64::MAX as f64).then(|| Duration::from_nanos(total as u64))
}

/// How long past its pipeline's timeout an admitted reconcile may take.
const ABANDON_MARGIN: Duration = Duration::from_secs(30);

impl Timing {
    /// How long an admitted reconcile may take before it is abandoned and
    /// retried: its pipeline's time and a margin for its reads and writes.
    pub fn abandon_after(&self) -> Duration {
        self.reconcile_timeout + ABANDON_MARGIN
    }

    /// The fair queue's limits.
    pub fn fair_queue_limits(&self) -> FairQueueLimits {
        FairQueueLimits {
            working: usize::from(self.max_concurrent_reconciles),
            per_tenant: usize::from(self.tenant_max_reconciles),
        }
    }
}

/// The first retry after an object changed under a write (a conflict);
/// doubled per conflict in a row.
const CONFLICT_BASE: Duration = Duration::from_millis(100);
/// The longest wait after conflicts in a row.
const CONFLICT_CAP: Duration = Duration::from_secs(10);

/// Enough to keep a few cores busy with function calls while other
/// reconciles wait on the API server; few enough that a backlog of thousands
/// of XRs does not become thousands of requests at once.
pub const DEFAULT_MAX_CONCURRENT_RECONCILES: u16 = 16;

/// Failed reconciles one controller retries per second, however many of its
/// objects fail, once the burst is spent. client-go's default controller
/// rate limiter allows 10 after 100; plait allows more, because 10,000 XRs
/// whose reconciles failed while the API server restarted must all be
/// retried soon after it is back, and a reconcile that finds the API
/// server away costs it one request.
const RETRY_RATE: f64 = 50.0;
/// Failed reconciles retried at their own backoff alone, before the rate
/// applies.
const RETRY_BURST: f64 = 500.0;

/// Consecutive failures per object, and the requeue they earn:
/// `base * 2^(failures-1)`, capped, and spread by jitter when many objects
/// fail together. A backoff of errors also spreads its retries within a
/// shared budget, so that an API server that went away or a function that
/// fails for every object is not met by every object at once.
pub struct Backoff<K> {
    base: Duration,
    cap: Duration,
    jitter: bool,
    failures: Mutex<HashMap<K, u32>>,
    budget: Option<Mutex<RetryBudget>>,
}

/// A token bucket of retries: each failure takes a token, and one that finds
/// none waits until its token would have come, as Go's `rate.Limiter`
/// reserves; never longer than the backoff's cap, which no token is taken for.
struct RetryBudget {
    rate: f64,
    burst: f64,
    /// Tokens left at `at`; below zero while retries are reserved ahead.
    tokens: f64,
    at: Instant,
}

impl RetryBudget {
    fn new(rate: f64, burst: f64, now: Instant) -> RetryBudget {
        RetryBudget {
            rate,
            burst,
            tokens: burst,
            at: now,
        }
    }

    /// How long a retry failed at `now` waits for its token, at most `cap`.
    fn reserve(&mut self, now: Instant, cap: Duration) -> Duration {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.at = self.at.max(now);
        let left = self.tokens - 1.0;
        if left >= 0.0 {
            self.tokens = left;
            return Duration::ZERO;
        }
        let wait = Duration::from_secs_f64(-left / self.rate);
        if wait > cap {
            return cap;
        }
        self.tokens = left;
        wait
    }
}

impl<K: Eq + Hash + Clone> Backoff<K> {
    pub fn new(base: Duration, cap: Duration) -> Backoff<K> {
        Backoff {
            base,
            cap,
            jitter: false,
            failures: Mutex::new(HashMap::new()),
            budget: None,
        }
    }

    /// The backoff after conflicts: short, because the object is fine and
    /// only changed, and jittered, because objects conflict in bursts (a
    /// busy API server delays many watches at once) and retries in step
    /// would conflict together again.
    pub fn conflicts(timing: &Timing) -> Backoff<K> {
        Backoff {
            jitter: true,
            ..Backoff::new(CONFLICT_BASE, CONFLICT_CAP.min(timing.poll_interval))
        }
    }

    /// The backoff of errors under `timing`: from its base up to its poll
    /// interval, within the shared retry budget.
    pub fn of(timing: &Timing) -> Backoff<K> {
        Backoff {
            budget: Some(Mutex::new(RetryBudget::new(
                RETRY_RATE,
                RETRY_BURST,
                Instant::now(),
            ))),
            ..Backoff::new(timing.backoff_base, timing.poll_interval)
        }
    }

    /// Counts one more failure of `key` and returns how long to wait.
    pub fn failed(&self, key: &K) -> Duration {
        self.failed_at(key, Instant::now())
    }

    fn failed_at(&self, key: &K, now: Instant) -> Duration {
        let n = {
            let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
            let n = failures.entry(key.clone()).or_insert(0);
            *n = n.saturating_add(1);
            *n
        };
        let own = delay(self.base, self.cap, n);
        let own = if self.jitter {
            jittered(own, random_fraction())
        } else {
            own
        };
        let budgeted = self.budget.as_ref().map_or(Duration::ZERO, |budget| {
            budget
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .reserve(now, self.cap)
        });
        own.max(budgeted)
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
    fn an_xrs_poll_interval_annotation_is_a_go_duration_raised_to_the_minimum() {
        let timing = Timing {
            poll_interval: Duration::from_secs(60),
            min_poll_interval: Duration::from_secs(5),
            ..Timing::default()
        };
        let xr = |interval: Option<&str>| match interval {
            Some(i) => {
                serde_json::json!({"metadata": {"annotations": {"crossplane.io/poll-interval": i}}})
            }
            None => serde_json::json!({"metadata": {}}),
        };
        let cases = [
            (None, 60_000),
            (Some("30s"), 30_000),
            (Some("1h30m"), 5_400_000),
            (Some("1.5m"), 90_000),
            (Some("2m500ms"), 120_500),
            (Some("1s"), 5_000),
            (Some("100ms"), 5_000),
            (Some("0"), 60_000),
            (Some("0s"), 60_000),
            (Some("-30s"), 60_000),
            (Some("30"), 60_000),
            (Some("5d"), 60_000),
            (Some(""), 60_000),
            (Some("s"), 60_000),
        ];
        for (interval, millis) in cases {
            assert_eq!(
                timing.poll_interval_of(&xr(interval)),
                Duration::from_millis(millis),
                "{interval:?}"
            );
        }
    }

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
    fn conflict_backoff_is_short_jittered_and_grows_per_conflict_in_a_row() {
        let backoff = Backoff::<&str>::conflicts(&Timing::default());
        let mut waits = Vec::new();
        for _ in 0..10 {
            waits.push(backoff.failed(&"a"));
        }
        // (conflicts in a row, the unjittered wait)
        for (n, wait) in waits.iter().enumerate() {
            let unjittered = delay(CONFLICT_BASE, CONFLICT_CAP, n as u32 + 1);
            assert!(
                *wait >= unjittered / 2 && *wait < unjittered.mul_f64(1.5),
                "conflict {}: {wait:?} against {unjittered:?}",
                n + 1
            );
        }
        assert!(waits[0] < Duration::from_millis(150));
        backoff.succeeded(&"a");
        assert!(backoff.failed(&"a") < Duration::from_millis(150));
        let spread: std::collections::BTreeSet<_> = (0..20)
            .map(|_| jittered(Duration::from_secs(1), random_fraction()))
            .collect();
        assert!(spread.len() > 10, "jitter does not spread: {spread:?}");
    }

    #[test]
    fn failures_of_many_objects_at_once_are_retried_within_the_budget() {
        let start = Instant::now();
        let backoff = Backoff::of(&Timing::default());
        // (objects failing at once, the longest wait among them)
        let cases = [
            // The burst: each retried after its own backoff alone.
            (500, Duration::from_secs(1)),
            // Then one retry per 20 ms: the 900th after the burst waits 18 s.
            (900, Duration::from_secs(18)),
            // No one waits longer than the poll interval.
            (3000, Duration::from_secs(60)),
        ];
        let mut key = 0;
        for (objects, want) in cases {
            let longest = (0..objects)
                .map(|_| {
                    key += 1;
                    backoff.failed_at(&key, start)
                })
                .max()
                .unwrap_or_default();
            assert_eq!(longest, want, "{objects} more failing");
        }
        // Once the failing stops, the budget fills again at its rate.
        let later = start + Duration::from_secs(120);
        assert_eq!(backoff.failed_at(&0, later), Duration::from_secs(1));
    }

    #[test]
    fn the_retry_budget_spreads_what_exceeds_its_burst_at_its_rate() {
        let start = Instant::now();
        let cap = Duration::from_secs(60);
        let mut budget = RetryBudget::new(10.0, 100.0, start);
        let waits_ms = |budget: &mut RetryBudget, at: Duration, n: usize| -> Vec<u128> {
            (0..n)
                .map(|_| budget.reserve(start + at, cap).as_millis())
                .collect()
        };
        assert_eq!(waits_ms(&mut budget, Duration::ZERO, 100), [0; 100]);
        assert_eq!(waits_ms(&mut budget, Duration::ZERO, 3), [100, 200, 300]);
        // A second later ten more tokens have come: three pay for the
        // retries reserved, and the next ones wait for nothing.
        assert_eq!(waits_ms(&mut budget, Duration::from_secs(1), 7), [0; 7]);
        assert_eq!(waits_ms(&mut budget, Duration::from_secs(1), 1), [100]);
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
