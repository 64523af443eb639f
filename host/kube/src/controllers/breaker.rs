//! The watch circuit breaker, as Crossplane's: every watch event that would
//! wake an XR (a change to the XR by someone else, or to a resource it
//! composes) takes a token from that XR's bucket, which refills at a steady
//! rate up to a burst. An XR whose bucket runs dry has its circuit opened:
//! its events are dropped, but for one let through every half-open
//! interval, until the cooldown has passed. A hot XR (a composed resource
//! two controllers fight over, say) then costs a reconcile every half-open
//! interval instead of one per event, and cannot monopolise the workers.
//! Polls and the reconciler's own requeues are never dropped.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::vocabulary::metrics::metrics;

/// How each XR's bucket fills and how long an open circuit stays open.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerLimits {
    /// Events an XR may have in a burst.
    pub burst: f64,
    /// Tokens added per second.
    pub refill_per_second: f64,
    /// How long a circuit stays open once its bucket ran dry.
    pub cooldown: Duration,
    /// While open, one event is let through this often.
    pub half_open_interval: Duration,
}

impl Default for BreakerLimits {
    /// Crossplane's defaults.
    fn default() -> Self {
        BreakerLimits {
            burst: 100.0,
            refill_per_second: 1.0,
            cooldown: Duration::from_secs(5 * 60),
            half_open_interval: Duration::from_secs(30),
        }
    }
}

/// What became of one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The circuit is closed: the XR is reconciled.
    Allowed,
    /// The circuit is open, and this is the event let through this interval.
    HalfOpen,
    /// The circuit is open: the event is dropped.
    Dropped,
}

impl Verdict {
    pub fn is_allowed(self) -> bool {
        self != Verdict::Dropped
    }

    fn label(self) -> &'static str {
        match self {
            Verdict::Allowed => "allowed",
            Verdict::HalfOpen => "halfopen_allowed",
            Verdict::Dropped => "dropped",
        }
    }
}

/// An XR within its kind: namespace and name.
pub type XrKey = (Option<String>, String);

struct Bucket {
    tokens: f64,
    refilled: Instant,
    opened: Option<Instant>,
    let_through: Option<Instant>,
}

/// The circuits of every XR of one kind.
pub struct CircuitBreaker {
    kind: String,
    limits: BreakerLimits,
    buckets: Mutex<Buckets>,
}

#[derive(Default)]
struct Buckets {
    by_xr: HashMap<XrKey, Bucket>,
    /// Events since full, closed buckets were last dropped.
    since_pruned: usize,
}

/// How many events pass between drops of buckets that hold nothing a new
/// bucket would not: closed and full again.
const PRUNE_EVERY: usize = 1024;

impl CircuitBreaker {
    /// Circuits of the XRs of `kind` (the metrics' label).
    pub fn new(kind: &str, limits: BreakerLimits) -> CircuitBreaker {
        CircuitBreaker {
            kind: kind.to_string(),
            limits,
            buckets: Mutex::default(),
        }
    }

    /// Takes a token for an event that would wake `xr`, and says whether it does.
    pub fn event(&self, xr: &XrKey) -> Verdict {
        self.event_at(xr, Instant::now())
    }

    fn event_at(&self, xr: &XrKey, now: Instant) -> Verdict {
        let mut buckets = self.lock();
        buckets.since_pruned += 1;
        if buckets.since_pruned >= PRUNE_EVERY {
            buckets.since_pruned = 0;
            let limits = self.limits;
            buckets
                .by_xr
                .retain(|_, bucket| !is_idle(bucket, &limits, now));
        }
        let limits = self.limits;
        let bucket = buckets.by_xr.entry(xr.clone()).or_insert(Bucket {
            tokens: limits.burst,
            refilled: now,
            opened: None,
            let_through: None,
        });
        if bucket
            .opened
            .is_some_and(|opened| now.duration_since(opened) >= limits.cooldown)
        {
            bucket.opened = None;
            bucket.let_through = None;
            bucket.tokens = limits.burst;
            bucket.refilled = now;
            metrics().circuit_closed(&self.kind);
        }
        refill(bucket, &limits, now);
        let verdict = if bucket.opened.is_some() {
            let due = bucket
                .let_through
                .is_none_or(|last| now.duration_since(last) >= limits.half_open_interval);
            if due {
                bucket.let_through = Some(now);
                Verdict::HalfOpen
            } else {
                Verdict::Dropped
            }
        } else if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Verdict::Allowed
        } else {
            bucket.opened = Some(now);
            bucket.let_through = Some(now);
            metrics().circuit_opened(&self.kind);
            tracing::info!(
                kind = self.kind,
                namespace = xr.0.as_deref().unwrap_or_default(),
                name = xr.1,
                "watch circuit opened: too many events for this XR; \
                 one is let through every half-open interval until the cooldown ends"
            );
            Verdict::Dropped
        };
        metrics().circuit_event(&self.kind, verdict.label());
        verdict
    }

    /// Whether `xr`'s circuit is open now.
    pub fn is_open(&self, xr: &XrKey) -> bool {
        self.is_open_at(xr, Instant::now())
    }

    fn is_open_at(&self, xr: &XrKey, now: Instant) -> bool {
        self.lock().by_xr.get(xr).is_some_and(|bucket| {
            bucket
                .opened
                .is_some_and(|opened| now.duration_since(opened) < self.limits.cooldown)
        })
    }

    /// Forgets an XR that is gone.
    pub fn forget(&self, xr: &XrKey) {
        self.lock().by_xr.remove(xr);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Buckets> {
        self.buckets.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn refill(bucket: &mut Bucket, limits: &BreakerLimits, now: Instant) {
    let elapsed = now.duration_since(bucket.refilled).as_secs_f64();
    bucket.tokens = (bucket.tokens + elapsed * limits.refill_per_second).min(limits.burst);
    bucket.refilled = now;
}

fn is_idle(bucket: &Bucket, limits: &BreakerLimits, now: Instant) -> bool {
    let elapsed = now.duration_since(bucket.refilled).as_secs_f64();
    bucket.opened.is_none() && bucket.tokens + elapsed * limits.refill_per_second >= limits.burst
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xr(name: &str) -> XrKey {
        (Some("team-a".into()), name.into())
    }

    fn limits() -> BreakerLimits {
        BreakerLimits {
            burst: 3.0,
            refill_per_second: 1.0,
            cooldown: Duration::from_secs(60),
            half_open_interval: Duration::from_secs(10),
        }
    }

    #[test]
    fn a_storm_opens_the_circuit_which_lets_one_event_through_per_interval_until_the_cooldown() {
        use Verdict::*;
        let breaker = CircuitBreaker::new("App", limits());
        let start = Instant::now();
        // (seconds after start, the XR, verdict, open afterwards)
        let steps: &[(f64, &str, Verdict, bool)] = &[
            (0.0, "hot", Allowed, false),
            (0.0, "hot", Allowed, false),
            (0.0, "hot", Allowed, false),
            (0.1, "hot", Dropped, true),
            (0.2, "cold", Allowed, false),
            (5.0, "hot", Dropped, true),
            (10.2, "hot", HalfOpen, true),
            (12.0, "hot", Dropped, true),
            (20.3, "hot", HalfOpen, true),
            (59.0, "hot", HalfOpen, true),
            (59.5, "hot", Dropped, true),
            (60.2, "hot", Allowed, false),
            (60.3, "hot", Allowed, false),
            (60.4, "hot", Allowed, false),
            (61.5, "hot", Allowed, false),
            (61.6, "hot", Dropped, true),
        ];
        for (i, (at, name, want, open)) in steps.iter().enumerate() {
            let when = start + Duration::from_secs_f64(*at);
            assert_eq!(breaker.event_at(&xr(name), when), *want, "step {i}");
            assert_eq!(breaker.is_open_at(&xr(name), when), *open, "step {i}");
        }
    }

    #[test]
    fn a_steady_trickle_within_the_refill_rate_never_opens() {
        let breaker = CircuitBreaker::new("App", limits());
        let start = Instant::now();
        for i in 0..1000 {
            let when = start + Duration::from_millis(1100 * i);
            assert_eq!(breaker.event_at(&xr("busy"), when), Verdict::Allowed, "{i}");
        }
    }

    #[test]
    fn idle_buckets_are_dropped_and_forgotten_xrs_start_afresh() {
        let breaker = CircuitBreaker::new("App", limits());
        let start = Instant::now();
        for i in 0..PRUNE_EVERY {
            breaker.event_at(&xr(&format!("xr-{i}")), start);
        }
        assert_eq!(breaker.lock().by_xr.len(), PRUNE_EVERY);
        // Ten seconds on every bucket is full again: the next pass drops them.
        let later = start + Duration::from_secs(10);
        for _ in 0..PRUNE_EVERY {
            breaker.event_at(&xr("new"), later);
        }
        assert_eq!(breaker.lock().by_xr.len(), 1);

        for _ in 0..4 {
            breaker.event_at(&xr("gone"), later);
        }
        assert!(breaker.is_open_at(&xr("gone"), later));
        breaker.forget(&xr("gone"));
        assert!(!breaker.is_open_at(&xr("gone"), later));
        assert_eq!(breaker.event_at(&xr("gone"), later), Verdict::Allowed);
    }
}
