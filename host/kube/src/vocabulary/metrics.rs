//! The controller's Prometheus metrics.
//!
//! One process-wide set: reconciles by kind and result, reconcile and
//! function call durations, guest errors by kind, and the runtime's compile
//! cache counters (read from each registered [`Runtime`] at scrape time, so
//! the runtime keeps its own atomic counters and knows nothing of Prometheus).

use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use plait_pipeline::Tenant;
use plait_runtime::Runtime;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The content type of [`Metrics::encode`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How a reconcile ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReconcileResult {
    /// The pipeline ran and everything was applied.
    Success,
    /// The reconcile ended with `Synced=False` (a fatal result, a bad
    /// Composition, a function that failed or could not be resolved).
    NotSynced,
    /// The reconcile failed talking to the API server and will back off.
    Error,
    /// The object changed while it was reconciled; it is reconciled again
    /// after a short jittered backoff.
    Conflict,
    /// The XR is paused.
    Paused,
    /// The XR is being deleted.
    Deleting,
    /// Nothing to do: the XR's kind is no longer served, or it has no name.
    Skipped,
}

impl ReconcileResult {
    fn label(self) -> &'static str {
        match self {
            ReconcileResult::Success => "success",
            ReconcileResult::NotSynced => "not_synced",
            ReconcileResult::Error => "error",
            ReconcileResult::Conflict => "conflict",
            ReconcileResult::Paused => "paused",
            ReconcileResult::Deleting => "deleting",
            ReconcileResult::Skipped => "skipped",
        }
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcileLabels {
    kind: String,
    result: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TriggerLabels {
    kind: String,
    trigger: String,
}

/// What brought an XR to reconcile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// Someone other than this controller changed the XR (or a relist showed it).
    Changed,
    /// Someone other than this controller changed or deleted a resource it composes.
    Composed,
    /// A resource its last reconcile's functions required (by name, or by
    /// labels it matched before or after the change) appeared, changed or went.
    Required,
    /// A CompositionRevision of its kind appeared or changed.
    Revision,
    /// The reconcile itself asked to run again soon: it created resources,
    /// a function's TTL ran out, or it backs off after a failure or conflict.
    Requeue,
    /// Nothing happened: the poll interval passed.
    Poll,
}

impl Trigger {
    fn label(self) -> &'static str {
        match self {
            Trigger::Changed => "changed",
            Trigger::Composed => "composed",
            Trigger::Required => "required",
            Trigger::Revision => "revision",
            Trigger::Requeue => "requeue",
            Trigger::Poll => "poll",
        }
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcileErrorLabels {
    kind: String,
    error: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReadRefusedLabels {
    tenant: String,
    function: String,
    kind: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FunctionLabels {
    tenant: String,
    function: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TenantLabels {
    tenant: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApiRequestLabels {
    verb: String,
    resource: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GuestErrorLabels {
    tenant: String,
    function: String,
    error: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// What controllers reconcile, what wakes XRs, and how long reconciles wait and take.
struct ReconcileMetrics {
    reconciles: Family<ReconcileLabels, Counter>,
    triggers: Family<TriggerLabels, Counter>,
    reconcile_errors: Family<ReconcileErrorLabels, Counter>,
    reconcile_seconds: HistogramFamily<KindLabels>,
    admission_wait_seconds: HistogramFamily<TenantLabels>,
}

impl ReconcileMetrics {
    fn register(registry: &mut Registry) -> Self {
        let reconciles = Family::<ReconcileLabels, Counter>::default();
        registry.register(
            "reconciles",
            "Reconciles by every controller, by the kind reconciled (an XR or claim kind, CompositeResourceDefinition, Composition, Function) and result",
            reconciles.clone(),
        );
        let triggers = Family::<TriggerLabels, Counter>::default();
        registry.register(
            "reconcile_triggers",
            "What queued XRs for a reconcile, by XR kind and trigger (changed, composed, required, revision, requeue, poll); the queue runs an XR once for triggers that arrive while it waits",
            triggers.clone(),
        );
        let reconcile_errors = Family::<ReconcileErrorLabels, Counter>::default();
        registry.register(
            "reconcile_errors",
            "Reconciles that failed with an error, by kind and cause",
            reconcile_errors.clone(),
        );
        let reconcile_seconds: HistogramFamily<KindLabels> =
            Family::new_with_constructor(reconcile_histogram);
        registry.register(
            "reconcile_duration_seconds",
            "Time to reconcile one object, by kind",
            reconcile_seconds.clone(),
        );
        let admission_wait_seconds: HistogramFamily<TenantLabels> =
            Family::new_with_constructor(reconcile_histogram);
        registry.register(
            "admission_wait_seconds",
            "How long XR and claim reconciles waited for their turn in the fair queue, by tenant (a namespace, or \"(platform)\" for cluster-scoped XRs)",
            admission_wait_seconds.clone(),
        );
        ReconcileMetrics {
            reconciles,
            triggers,
            reconcile_errors,
            reconcile_seconds,
            admission_wait_seconds,
        }
    }
}

/// Function calls: their time, errors, cached answers, refused reads and throttles.
struct FunctionMetrics {
    reads_refused: Family<ReadRefusedLabels, Counter>,
    function_call_seconds: HistogramFamily<FunctionLabels>,
    guest_errors: Family<GuestErrorLabels, Counter>,
    cache_hits: Family<FunctionLabels, Counter>,
    cache_misses: Family<FunctionLabels, Counter>,
    cache_evictions: Family<FunctionLabels, Counter>,
    call_throttle: Family<TenantLabels, Gauge>,
}

impl FunctionMetrics {
    fn register(registry: &mut Registry) -> Self {
        let reads_refused = Family::<ReadRefusedLabels, Counter>::default();
        registry.register(
            "tenant_reads_refused",
            "Reads a function asked for beyond its tenant's namespace and grants, refused, by tenant, function and kind",
            reads_refused.clone(),
        );
        let function_call_seconds: HistogramFamily<FunctionLabels> =
            Family::new_with_constructor(call_histogram);
        registry.register(
            "function_call_duration_seconds",
            "Time one function call took in its sandbox, by function",
            function_call_seconds.clone(),
        );
        let guest_errors = Family::<GuestErrorLabels, Counter>::default();
        registry.register(
            "guest_errors",
            "Function calls that failed in the sandbox, by function and error (deadline, memory, trap, guest, malformed, too-large, output, instantiate)",
            guest_errors.clone(),
        );
        let cache_hits = Family::<FunctionLabels, Counter>::default();
        registry.register(
            "function_cache_hits",
            "Function calls answered from the response cache, by tenant and function",
            cache_hits.clone(),
        );
        let cache_misses = Family::<FunctionLabels, Counter>::default();
        registry.register(
            "function_cache_misses",
            "Function calls the response cache could not answer, by tenant and function",
            cache_misses.clone(),
        );
        let cache_evictions = Family::<FunctionLabels, Counter>::default();
        registry.register(
            "function_cache_evictions",
            "Live responses dropped from the response cache to make room, by tenant and function",
            cache_evictions.clone(),
        );
        let call_throttle = Family::<TenantLabels, Gauge>::default();
        registry.register(
            "tenant_call_throttle",
            "How many times a tenant's time counts in the share of function-call slots: 1, doubled per call that reached its deadline (up to 16), halved per call that did not",
            call_throttle.clone(),
        );
        FunctionMetrics {
            reads_refused,
            function_call_seconds,
            guest_errors,
            cache_hits,
            cache_misses,
            cache_evictions,
            call_throttle,
        }
    }
}

/// What plait asks of the API server, and what XR circuit breakers let through.
struct TrafficMetrics {
    api_requests: Family<ApiRequestLabels, Counter>,
    circuit_events: Family<CircuitEventLabels, Counter>,
    circuit_opens: Family<KindLabels, Counter>,
    circuit_closes: Family<KindLabels, Counter>,
}

impl TrafficMetrics {
    fn register(registry: &mut Registry) -> Self {
        let api_requests = Family::<ApiRequestLabels, Counter>::default();
        registry.register(
            "api_requests",
            "Requests to the Kubernetes API server, by verb (get, list, watch, create, update, patch, delete) and resource (the plural, with a subresource after a slash)",
            api_requests.clone(),
        );
        let circuit_events = Family::<CircuitEventLabels, Counter>::default();
        registry.register(
            "circuit_breaker_events",
            "Watch events that would wake an XR, by XR kind and what the XR's circuit breaker made of them (allowed, halfopen_allowed, dropped)",
            circuit_events.clone(),
        );
        let circuit_opens = Family::<KindLabels, Counter>::default();
        registry.register(
            "circuit_breaker_opens",
            "XR circuits opened by an event storm, by XR kind",
            circuit_opens.clone(),
        );
        let circuit_closes = Family::<KindLabels, Counter>::default();
        registry.register(
            "circuit_breaker_closes",
            "XR circuits closed again after their cooldown, by XR kind",
            circuit_closes.clone(),
        );
        TrafficMetrics {
            api_requests,
            circuit_events,
            circuit_opens,
            circuit_closes,
        }
    }
}

/// The process's metrics; see [`metrics`].
pub struct Metrics {
    registry: Registry,
    reconcile: ReconcileMetrics,
    calls: FunctionMetrics,
    traffic: TrafficMetrics,
    runtimes: Arc<RuntimeCollector>,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CircuitEventLabels {
    kind: String,
    result: String,
}

/// The metrics every controller in this process reports to.
pub fn metrics() -> &'static Metrics {
    static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);
    &METRICS
}

fn reconcile_histogram() -> Histogram {
    // 1 ms to ~33 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

fn call_histogram() -> Histogram {
    // 50 µs to ~3.3 s.
    Histogram::new(exponential_buckets(0.000_05, 2.0, 17))
}

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::with_prefix("plait");
        let reconcile = ReconcileMetrics::register(&mut registry);
        let calls = FunctionMetrics::register(&mut registry);
        let traffic = TrafficMetrics::register(&mut registry);
        let runtimes = Arc::new(RuntimeCollector::default());
        registry.register_collector(Box::new(runtimes.clone()));
        Metrics {
            registry,
            reconcile,
            calls,
            traffic,
            runtimes,
        }
    }

    /// Records how long a reconcile of `tenant` waited for its turn.
    pub fn admitted(&self, tenant: &Tenant, waited: Duration) {
        self.reconcile
            .admission_wait_seconds
            .get_or_create(&TenantLabels {
                tenant: tenant.label().into(),
            })
            .observe(waited.as_secs_f64());
    }

    /// Sets how many times `tenant`'s time counts in the call slots' share.
    pub fn call_throttle(&self, tenant: &Tenant, throttle: u32) {
        self.calls
            .call_throttle
            .get_or_create(&TenantLabels {
                tenant: tenant.label().into(),
            })
            .set(i64::from(throttle));
    }

    /// Counts a watch event for an XR of `kind` by what its circuit made of it.
    pub fn circuit_event(&self, kind: &str, result: &str) {
        self.traffic
            .circuit_events
            .get_or_create(&CircuitEventLabels {
                kind: kind.into(),
                result: result.into(),
            })
            .inc();
    }

    pub fn circuit_opened(&self, kind: &str) {
        self.traffic
            .circuit_opens
            .get_or_create(&KindLabels { kind: kind.into() })
            .inc();
    }

    pub fn circuit_closed(&self, kind: &str) {
        self.traffic
            .circuit_closes
            .get_or_create(&KindLabels { kind: kind.into() })
            .inc();
    }

    /// Reports `runtime`'s compile cache and call counters from now on.
    pub fn watch_runtime(&self, runtime: Runtime) {
        if let Ok(mut runtimes) = self.runtimes.runtimes.lock() {
            runtimes.push(runtime);
        }
    }

    /// Counts `n` XRs of `kind` queued by `trigger`.
    pub fn triggered(&self, kind: &str, trigger: Trigger, n: usize) {
        self.reconcile
            .triggers
            .get_or_create(&TriggerLabels {
                kind: kind.into(),
                trigger: trigger.label().into(),
            })
            .inc_by(n as u64);
    }

    pub fn reconciled(&self, kind: &str, result: ReconcileResult, took: Duration) {
        self.reconcile
            .reconciles
            .get_or_create(&ReconcileLabels {
                kind: kind.into(),
                result: result.label().into(),
            })
            .inc();
        self.reconcile
            .reconcile_seconds
            .get_or_create(&KindLabels { kind: kind.into() })
            .observe(took.as_secs_f64());
    }

    /// Counts a reconcile that failed; `error` is the error's metric label.
    pub fn reconcile_failed(&self, kind: &str, error: &str) {
        self.reconcile
            .reconcile_errors
            .get_or_create(&ReconcileErrorLabels {
                kind: kind.into(),
                error: error.into(),
            })
            .inc();
    }

    /// Counts a read the tenancy rules refused.
    pub fn read_refused(&self, tenant: &Tenant, function: &str, kind: &str) {
        self.calls
            .reads_refused
            .get_or_create(&ReadRefusedLabels {
                tenant: tenant.label().into(),
                function: function.into(),
                kind: kind.into(),
            })
            .inc();
    }

    pub fn function_called(&self, tenant: &Tenant, function: &str, took: Duration) {
        self.calls
            .function_call_seconds
            .get_or_create(&FunctionLabels {
                tenant: tenant.label().into(),
                function: function.into(),
            })
            .observe(took.as_secs_f64());
    }

    /// Counts a failed call; `error` is [`plait_runtime::CallError::kind`].
    pub fn guest_failed(&self, tenant: &Tenant, function: &str, error: &str) {
        self.calls
            .guest_errors
            .get_or_create(&GuestErrorLabels {
                tenant: tenant.label().into(),
                function: function.into(),
                error: error.into(),
            })
            .inc();
    }

    /// Counts a response cache hit, miss or eviction.
    pub fn function_cache(&self, tenant: &Tenant, function: &str, event: CacheEvent) {
        let family = match event {
            CacheEvent::Hit => &self.calls.cache_hits,
            CacheEvent::Miss => &self.calls.cache_misses,
            CacheEvent::Eviction => &self.calls.cache_evictions,
        };
        family
            .get_or_create(&FunctionLabels {
                tenant: tenant.label().into(),
                function: function.into(),
            })
            .inc();
    }

    /// Counts a request to the API server.
    pub fn api_request(&self, verb: &str, resource: &str) {
        self.traffic
            .api_requests
            .get_or_create(&ApiRequestLabels {
                verb: verb.into(),
                resource: resource.into(),
            })
            .inc();
    }

    /// Every metric in the OpenMetrics text format ([`CONTENT_TYPE`]).
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// What happened to a call at the response cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheEvent {
    Hit,
    Miss,
    Eviction,
}

/// Reports the function calls of one tenant's XR pipelines to [`metrics`].
pub struct CallMetrics {
    pub tenant: Tenant,
    /// Told when a call changed the tenant's throttle.
    pub on_throttle: Option<ThrottleListener>,
}

/// Told the function whose call changed its tenant's throttle, and the throttle.
pub type ThrottleListener = Box<dyn Fn(&str, u32) + Send + Sync>;

impl plait_functions::CallObserver for CallMetrics {
    fn called(&self, function: &str, took: Duration) {
        metrics().function_called(&self.tenant, function, took);
    }

    fn failed(&self, function: &str, kind: &str) {
        metrics().guest_failed(&self.tenant, function, kind);
    }

    fn cache_hit(&self, function: &str) {
        metrics().function_cache(&self.tenant, function, CacheEvent::Hit);
    }

    fn cache_missed(&self, function: &str) {
        metrics().function_cache(&self.tenant, function, CacheEvent::Miss);
    }

    fn cache_evicted(&self, tenant: &Tenant, function: &str) {
        metrics().function_cache(tenant, function, CacheEvent::Eviction);
    }

    fn throttled(&self, function: &str, throttle: u32) {
        metrics().call_throttle(&self.tenant, throttle);
        if let Some(tell) = &self.on_throttle {
            tell(function, throttle);
        }
    }
}

/// Sums the counters of every watched runtime at scrape time.
#[derive(Default)]
struct RuntimeCollector {
    runtimes: Mutex<Vec<Runtime>>,
}

impl std::fmt::Debug for RuntimeCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RuntimeCollector")
    }
}

impl Collector for RuntimeCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut totals = plait_runtime::RuntimeStats::default();
        if let Ok(runtimes) = self.runtimes.lock() {
            for stats in runtimes.iter().map(Runtime::stats) {
                totals.memory_hits += stats.memory_hits;
                totals.disk_hits += stats.disk_hits;
                totals.cache_misses += stats.cache_misses;
                totals.compiles += stats.compiles;
                totals.calls += stats.calls;
                totals.call_failures += stats.call_failures;
                totals.memory_budget_bytes += stats.memory_budget_bytes;
                totals.memory_reserved_bytes += stats.memory_reserved_bytes;
            }
        }
        let counters = [
            (
                "compile_cache_memory_hits",
                "Component loads answered by a module already in memory",
                totals.memory_hits,
            ),
            (
                "compile_cache_disk_hits",
                "Component loads answered by a verified compiled artifact on disk",
                totals.disk_hits,
            ),
            (
                "compile_cache_misses",
                "Component loads that had to compile",
                totals.cache_misses,
            ),
            (
                "function_calls",
                "Function calls made, successful or not",
                totals.calls,
            ),
        ];
        for (name, help, value) in counters {
            let counter = ConstCounter::new(value);
            let metric = encoder.encode_descriptor(name, help, None, counter.metric_type())?;
            counter.encode(metric)?;
        }
        let gauges = [
            (
                "guest_memory_budget_bytes",
                "The most guest memory running function calls may hold at once",
                totals.memory_budget_bytes,
            ),
            (
                "guest_memory_reserved_bytes",
                "Guest memory held by running function calls (the sum of their memory limits)",
                totals.memory_reserved_bytes,
            ),
        ];
        for (name, help, value) in gauges {
            let gauge = ConstGauge::new(value);
            let metric = encoder.encode_descriptor(name, help, None, gauge.metric_type())?;
            gauge.encode(metric)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn value_of(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
    }

    #[test]
    fn recorded_events_appear_in_the_exposition() {
        let metrics = Metrics::new();
        metrics.reconciled("App", ReconcileResult::Success, Duration::from_millis(3));
        metrics.reconciled("App", ReconcileResult::Success, Duration::from_millis(5));
        metrics.reconciled("App", ReconcileResult::NotSynced, Duration::from_millis(1));
        metrics.function_called(
            &Tenant::Namespace("team-a".into()),
            "function-patch-and-transform",
            Duration::from_micros(300),
        );
        metrics.guest_failed(&Tenant::Namespace("team-a".into()), "bad-fn", "trap");
        metrics.reconcile_failed("Composition", "kube");
        metrics.read_refused(&Tenant::Namespace("team-a".into()), "fn-a", "Secret");
        metrics.function_cache(&Tenant::Namespace("team-a".into()), "fn-a", CacheEvent::Hit);
        metrics.function_cache(&Tenant::Namespace("team-a".into()), "fn-a", CacheEvent::Hit);
        metrics.function_cache(
            &Tenant::Namespace("team-a".into()),
            "fn-a",
            CacheEvent::Miss,
        );
        metrics.function_cache(
            &Tenant::Namespace("team-b".into()),
            "fn-a",
            CacheEvent::Eviction,
        );
        metrics.api_request("get", "configmaps");
        let text = metrics.encode();
        let cases = [
            (
                r#"plait_reconciles_total{kind="App",result="success"}"#,
                2.0,
            ),
            (
                r#"plait_reconciles_total{kind="App",result="not_synced"}"#,
                1.0,
            ),
            (r#"plait_reconcile_duration_seconds_count{kind="App"}"#, 3.0),
            (
                r#"plait_function_call_duration_seconds_count{tenant="team-a",function="function-patch-and-transform"}"#,
                1.0,
            ),
            (
                r#"plait_guest_errors_total{tenant="team-a",function="bad-fn",error="trap"}"#,
                1.0,
            ),
            (
                r#"plait_reconcile_errors_total{kind="Composition",error="kube"}"#,
                1.0,
            ),
            (
                r#"plait_tenant_reads_refused_total{tenant="team-a",function="fn-a",kind="Secret"}"#,
                1.0,
            ),
            ("plait_compile_cache_misses_total", 0.0),
            (
                r#"plait_function_cache_hits_total{tenant="team-a",function="fn-a"}"#,
                2.0,
            ),
            (
                r#"plait_function_cache_misses_total{tenant="team-a",function="fn-a"}"#,
                1.0,
            ),
            (
                r#"plait_function_cache_evictions_total{tenant="team-b",function="fn-a"}"#,
                1.0,
            ),
            (
                r#"plait_api_requests_total{verb="get",resource="configmaps"}"#,
                1.0,
            ),
        ];
        for (series, expected) in cases {
            assert_eq!(
                value_of(&text, series),
                Some(expected),
                "{series} in\n{text}"
            );
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn runtime_counters_are_read_at_scrape_time() {
        let metrics = Metrics::new();
        let runtime = Runtime::new(plait_runtime::RuntimeConfig::default()).unwrap();
        metrics.watch_runtime(runtime.clone());
        let before = value_of(&metrics.encode(), "plait_compile_cache_misses_total");
        runtime.builtin(plait_runtime::Builtin::AutoReady).unwrap();
        runtime.builtin(plait_runtime::Builtin::AutoReady).unwrap();
        let text = metrics.encode();
        assert_eq!(before, Some(0.0));
        assert_eq!(
            value_of(&text, "plait_compile_cache_misses_total"),
            Some(1.0)
        );
        assert_eq!(
            value_of(&text, "plait_compile_cache_memory_hits_total"),
            Some(1.0)
        );
        let budget = plait_runtime::RuntimeConfig::default().memory_budget as f64;
        assert_eq!(
            value_of(&text, "plait_guest_memory_budget_bytes"),
            Some(budget)
        );
        assert_eq!(
            value_of(&text, "plait_guest_memory_reserved_bytes"),
            Some(0.0)
        );
    }
}
