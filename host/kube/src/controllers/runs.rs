//! The last pipeline run of each XR this replica reconciled: per step, the
//! function, the digest of its module, its calls and how long the last took,
//! whether the response cache answered, and the step's results. Kept in
//! memory, bounded ([`CAPACITY`] XRs, the least recently run dropped first),
//! and served as JSON on the probe address at
//! `/pipeline-runs/<apiVersion>/<kind>/<namespace or _>/<name>`, for
//! `plait trace --steps`. Events carry results too, but expire after an hour.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use plait_functions::CallObserver;
use plait_pipeline::StepResult;
use serde::Serialize;

/// The most XRs whose last run is kept.
pub const CAPACITY: usize = 4096;
/// The most results kept per step.
const MAX_RESULTS: usize = 32;

/// One step of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepRun {
    pub step: String,
    pub function: String,
    /// The digest of the module the function ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Calls of the function in the run (the requirements loop may call again).
    pub calls: u32,
    /// Of those, the ones the response cache answered.
    pub cached: u32,
    /// How long the last call ran in the sandbox, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// Why a call failed, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    pub results: Vec<serde_json::Value>,
}

/// An XR's last run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    /// When it ended, in seconds since the Unix epoch.
    pub finished: f64,
    pub steps: Vec<StepRun>,
    /// Why the reconcile did not finish, if it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Where the probe address serves runs, followed by an XR's [`key`].
pub const PATH: &str = "/pipeline-runs/";

/// The JSON of the run at `path` (under [`PATH`]), if one is recorded.
pub(crate) fn answer(path: &str) -> Option<String> {
    let run = runs().get(path.strip_prefix(PATH)?)?;
    serde_json::to_string(&run).ok()
}

/// The key of an XR: `<apiVersion>/<kind>/<namespace or _>/<name>`.
pub fn key(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> String {
    format!(
        "{api_version}/{kind}/{}/{name}",
        namespace.filter(|n| !n.is_empty()).unwrap_or("_")
    )
}

/// The last runs, by XR.
#[derive(Default)]
pub struct Runs {
    inner: Mutex<(HashMap<String, Run>, VecDeque<String>)>,
}

/// This replica's runs.
pub fn runs() -> &'static Runs {
    static RUNS: LazyLock<Runs> = LazyLock::new(Runs::default);
    &RUNS
}

impl Runs {
    pub fn record(&self, key: String, run: Run) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let (by_key, order) = &mut *inner;
        if by_key.insert(key.clone(), run).is_some() {
            order.retain(|k| k != &key);
        }
        order.push_back(key);
        while order.len() > CAPACITY {
            if let Some(oldest) = order.pop_front() {
                by_key.remove(&oldest);
            }
        }
    }

    pub fn get(&self, key: &str) -> Option<Run> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.0.get(key).cloned()
    }
}

/// Records the run an XR's reconcile just made.
pub(crate) fn record(
    reference: &plait_reconcile::ObjectRef,
    pipeline: &crate::stores::catalog::CompiledPipeline,
    recorder: &Recorder,
    outcome: &plait_reconcile::Outcome,
) {
    let steps: Vec<(String, String)> = pipeline
        .steps
        .iter()
        .map(|s| (s.name.clone(), s.function.clone()))
        .collect();
    let run = recorder.run(
        &steps,
        &pipeline.functions.digests(),
        &outcome.results,
        outcome.error.clone(),
    );
    let key = key(
        &reference.api_version,
        &reference.kind,
        reference.namespace.as_deref(),
        &reference.name,
    );
    runs().record(key, run);
}

/// What one function's calls did in a run.
#[derive(Debug, Default, Clone)]
struct Calls {
    calls: u32,
    cached: u32,
    last: Option<Duration>,
    failure: Option<String>,
}

/// Observes one reconcile's calls for its run record, passing each on to
/// `inner` (the metrics).
pub struct Recorder {
    inner: Arc<dyn CallObserver>,
    calls: Mutex<BTreeMap<String, Calls>>,
}

impl Recorder {
    pub fn new(inner: Arc<dyn CallObserver>) -> Arc<Recorder> {
        Arc::new(Recorder {
            inner,
            calls: Mutex::default(),
        })
    }

    fn with(&self, function: &str, f: impl FnOnce(&mut Calls)) {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        f(calls.entry(function.to_string()).or_default());
    }

    /// The run: each step with its function's calls and its results.
    pub fn run(
        &self,
        steps: &[(String, String)],
        digests: &BTreeMap<&str, &str>,
        results: &[StepResult],
        error: Option<String>,
    ) -> Run {
        let calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        let steps = steps
            .iter()
            .map(|(step, function)| {
                let made = calls.get(function).cloned().unwrap_or_default();
                StepRun {
                    step: step.clone(),
                    function: function.clone(),
                    digest: digests.get(function.as_str()).map(|d| (*d).to_string()),
                    calls: made.calls,
                    cached: made.cached,
                    duration_ms: made.last.map(|d| d.as_secs_f64() * 1000.0),
                    failure: made.failure,
                    results: results
                        .iter()
                        .filter(|r| &r.step == step)
                        .take(MAX_RESULTS)
                        .filter_map(|r| serde_json::to_value(&r.result).ok())
                        .collect(),
                }
            })
            .collect();
        let finished = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        Run {
            finished,
            steps,
            error,
        }
    }
}

impl CallObserver for Recorder {
    fn called(&self, function: &str, took: Duration) {
        self.inner.called(function, took);
        self.with(function, |c| {
            c.calls += 1;
            c.last = Some(took);
        });
    }

    fn failed(&self, function: &str, kind: &str) {
        self.inner.failed(function, kind);
        self.with(function, |c| {
            c.calls += 1;
            c.failure = Some(kind.to_string());
        });
    }

    fn cache_hit(&self, function: &str) {
        self.inner.cache_hit(function);
        self.with(function, |c| {
            c.calls += 1;
            c.cached += 1;
        });
    }

    fn cache_missed(&self, function: &str) {
        self.inner.cache_missed(function);
    }

    fn cache_evicted(&self, tenant: &plait_pipeline::Tenant, function: &str) {
        self.inner.cache_evicted(tenant, function);
    }

    fn throttled(&self, function: &str, throttle: u32) {
        self.inner.throttled(function, throttle);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_keeps_the_latest_runs_up_to_its_capacity() {
        let runs = Runs::default();
        let run = |finished: f64| Run {
            finished,
            steps: Vec::new(),
            error: None,
        };
        for i in 0..CAPACITY + 10 {
            runs.record(format!("x/{i}"), run(i as f64));
        }
        assert!(runs.get("x/0").is_none(), "the oldest made room");
        assert!(runs.get(&format!("x/{}", CAPACITY + 9)).is_some());
        runs.record("x/10".into(), run(1.0));
        runs.record("x/new".into(), run(2.0));
        assert_eq!(
            runs.get("x/10").map(|r| r.finished),
            Some(1.0),
            "a rerun is recent again"
        );
        assert!(runs.get("x/11").is_none());
    }

    #[test]
    fn a_recorder_counts_calls_per_function_and_keeps_each_steps_results() {
        struct Nothing;
        impl CallObserver for Nothing {
            fn called(&self, _: &str, _: Duration) {}
            fn failed(&self, _: &str, _: &str) {}
        }
        let recorder = Recorder::new(Arc::new(Nothing));
        recorder.called("fn-a", Duration::from_millis(3));
        recorder.cache_hit("fn-b");
        let digests = BTreeMap::from([("fn-a", "sha256:aa")]);
        let run = recorder.run(
            &[("one".into(), "fn-a".into()), ("two".into(), "fn-b".into())],
            &digests,
            &[],
            None,
        );
        assert_eq!(run.steps[0].calls, 1);
        assert_eq!(run.steps[0].digest.as_deref(), Some("sha256:aa"));
        assert_eq!(run.steps[0].duration_ms, Some(3.0));
        assert_eq!((run.steps[1].calls, run.steps[1].cached), (1, 1));
    }
}
