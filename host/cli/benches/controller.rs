//! The controller at scale on a real API server: how long N XRs of three
//! composed resources each take to become Ready, the controller's peak
//! memory, how many reconciles (and conflicts, and errors) and API requests
//! that took per XR, whether the Ready count ever stalled, and what the
//! controller does once everything is in sync. Prints the figures.
//!
//! `cargo bench -p plait --bench controller` (starts its own test cluster).
//! `PLAIT_BENCH_XRS=1000` sets N (default 100). `PLAIT_BENCH_MODE=existing`
//! creates the XRs while no controller runs and times a controller started
//! over them (an upgrade, or a move from Crossplane); the default, `running`,
//! creates them while the controller runs. `PLAIT_BENCH_IDLE=skip` stops
//! once every XR is Ready, without measuring idle (for repeated runs).
//! `PLAIT_BENCH_REPLICAS=2` runs that many replicas with `--shards` twice
//! as many; their counts are summed and each one's peak memory printed.
//! `PLAIT_BENCH_COMPOSITION=kcl` composes the same three ConfigMaps with a
//! KCL program run by the built-in function-kcl
//! (tests/fixtures/scale/composition-kcl.yaml) instead of the default,
//! `pt`, patch-and-transform. `PLAIT_BENCH_COMPOSITION=environment` has
//! every XR require one shared EnvironmentConfig (function-environment-configs,
//! tests/fixtures/scale/composition-environment.yaml) and, once all are
//! Ready, edits an EnvironmentConfig no XR requires (and counts the XRs it
//! woke), then the shared one, and times until every XR's ConfigMap shows
//! the edit, with the reconciles, function calls and API requests per XR
//! that took. Each replica's CPU time (user + system) from
//! its start until all are Ready is printed, and each function's calls per
//! XR with the mean time of a call.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/kube_support.rs"]
mod kube_support;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use kube::api::{ListParams, Patch, PatchParams};
use kube_support::{
    Controller, ScaleApis, apply, by_label, by_labels, cpu_seconds, largest_first, peak_rss_mib,
    resource, run_bench, scale_fixture, scrape, spawn_all_ready, total,
};
use plait_testcluster::TestCluster;
use serde_json::json;

const DEFAULT_XRS: usize = 100;
/// The controller's default `--poll-interval`.
const POLL_INTERVAL: Duration = Duration::from_secs(60);
/// A whole poll interval: XRs made Ready together are polled together, so
/// a shorter window can fall between their polls and see none.
const IDLE_WINDOW: Duration = POLL_INTERVAL;
const TIMEOUT: Duration = Duration::from_secs(600);

fn reconciles(metrics: &str) -> f64 {
    total(metrics, "plait_reconciles_total", "")
}

fn function_calls(metrics: &str) -> f64 {
    total(metrics, "plait_function_call_duration_seconds_count", "")
}

/// Each function's calls and the mean time of one, in milliseconds.
fn calls_by_function(metrics: &str) -> Vec<(String, f64, f64)> {
    let count = by_labels(
        metrics,
        "plait_function_call_duration_seconds_count",
        &["function"],
    );
    let seconds = by_labels(
        metrics,
        "plait_function_call_duration_seconds_sum",
        &["function"],
    );
    count
        .into_iter()
        .map(|(function, calls)| {
            let sum = seconds.get(&function).copied().unwrap_or(0.0);
            let mean_ms = if calls > 0.0 { sum / calls * 1e3 } else { 0.0 };
            (function.trim_end().to_string(), calls, mean_ms)
        })
        .collect()
}

fn api_requests(metrics: &str, labels: &str) -> f64 {
    total(metrics, "plait_api_requests_total", labels)
}

fn main() {
    run_bench(bench());
}

/// The controller replicas under test: one with leader election, or
/// several sharing the XRs through `--shards`. Dropping one stops it.
struct Replicas {
    running: Vec<Controller>,
}

impl Replicas {
    async fn start(cluster: &TestCluster, cache: &Path, count: usize, namespace: &str) -> Replicas {
        let mut running: Vec<Controller> = (0..count)
            .map(|i| {
                let extra = if count == 1 {
                    Vec::new()
                } else {
                    vec![
                        format!("--shards={}", 2 * count),
                        format!("--identity=replica-{i}"),
                        format!("--leader-election-namespace={namespace}"),
                    ]
                };
                Controller::start_logging_to(
                    cluster.kubeconfig(),
                    &cache.join(format!("cache-{i}")),
                    Stdio::inherit(),
                    &extra,
                )
            })
            .collect();
        for replica in &mut running {
            replica.wait_ready().await;
        }
        Replicas { running }
    }

    /// Every replica's metrics, one after the other: summed, they count
    /// what all of them did.
    fn metrics(&self) -> String {
        self.running
            .iter()
            .map(|replica| scrape(replica.probes(), "/metrics"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn cpu_seconds(&self) -> Vec<f64> {
        self.running
            .iter()
            .map(|replica| cpu_seconds(replica.pid()).unwrap())
            .collect()
    }

    fn peak_rss_mib(&self) -> Vec<f64> {
        self.running
            .iter()
            .map(|replica| peak_rss_mib(replica.pid()).unwrap())
            .collect()
    }

    fn stop(&mut self) {
        self.running.clear();
    }
}

async fn bench() {
    let xr_count: usize = std::env::var("PLAIT_BENCH_XRS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_XRS);
    let existing = match std::env::var("PLAIT_BENCH_MODE").as_deref() {
        Ok("existing") => true,
        Ok("running") | Err(_) => false,
        Ok(other) => panic!("PLAIT_BENCH_MODE is running or existing, not {other:?}"),
    };
    let cluster = TestCluster::shared().unwrap();
    let client = cluster.client().await;
    let namespace = cluster.namespace("bench").await;
    let cache = tempfile::tempdir().unwrap();
    let replica_count: usize = std::env::var("PLAIT_BENCH_REPLICAS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let mut replicas = Replicas::start(cluster, cache.path(), replica_count, &namespace).await;
    let xrd = scale_fixture("xrd.yaml");
    let composition = match std::env::var("PLAIT_BENCH_COMPOSITION").as_deref() {
        Ok("pt") | Err(_) => scale_fixture("composition.yaml"),
        Ok("kcl") => scale_fixture("composition-kcl.yaml"),
        Ok("environment") => scale_fixture("composition-environment.yaml"),
        Ok(other) => panic!("PLAIT_BENCH_COMPOSITION is pt, kcl or environment, not {other:?}"),
    };
    let steps = composition["spec"]["pipeline"].as_array().unwrap();
    let composed_by = steps
        .iter()
        .map(|step| step["functionRef"]["name"].as_str().unwrap())
        .filter(|function| *function != "function-auto-ready")
        .collect::<Vec<_>>()
        .join(" + ");
    let environment = steps
        .iter()
        .any(|step| step["functionRef"]["name"] == "function-environment-configs");
    if environment {
        for name in [SHARED_CONFIG, UNREAD_CONFIG] {
            apply(
                &client,
                &environment_configs(),
                &json!({
                    "apiVersion": "apiextensions.crossplane.io/v1beta1",
                    "kind": "EnvironmentConfig",
                    "metadata": {"name": name},
                    "data": {"revision": "1"},
                }),
                "bench",
            )
            .await;
        }
    }
    let xrds = resource(
        "apiextensions.crossplane.io/v2",
        "CompositeResourceDefinition",
        "compositeresourcedefinitions",
    );
    apply(&client, &xrds, &xrd, "bench").await;
    apply(
        &client,
        &resource(
            "apiextensions.crossplane.io/v1",
            "Composition",
            "compositions",
        ),
        &composition,
        "bench",
    )
    .await;
    let ScaleApis {
        kind: bench_kind,
        xrs,
        ..
    } = ScaleApis::served(&client, &namespace, TIMEOUT).await;

    let create = |i: usize| {
        json!({
            "apiVersion": "scale.example.org/v1", "kind": "Bench",
            "metadata": {"name": format!("bench-{i:04}"), "namespace": namespace},
            "spec": {"size": "small"}
        })
    };
    let created = Instant::now();
    let (submitted, ready) = if existing {
        replicas.stop();
        for i in 0..xr_count {
            apply(&client, &bench_kind, &create(i), "bench").await;
        }
        let submitted = created.elapsed();
        let started = Instant::now();
        replicas = Replicas::start(cluster, cache.path(), replica_count, &namespace).await;
        let ready = spawn_all_ready(&xrs, xr_count, started, TIMEOUT);
        (submitted, ready)
    } else {
        let ready = spawn_all_ready(&xrs, xr_count, created, TIMEOUT);
        for i in 0..xr_count {
            apply(&client, &bench_kind, &create(i), "bench").await;
        }
        (created.elapsed(), ready)
    };
    let (ready_after, longest_stall) = ready.await.unwrap();
    let rollout = replicas.metrics();
    let rollout_cpu = replicas.cpu_seconds();
    let edited = if environment {
        Some(edit_environment(&client, &replicas, &namespace, xr_count).await)
    } else {
        None
    };
    let measure_idle = std::env::var("PLAIT_BENCH_IDLE").as_deref() != Ok("skip");

    // Idle means every XR has had its first poll since its last write: that
    // poll is the first to see the XR's final status, so its request is new
    // and its functions run once more.
    let (before, after) = if measure_idle {
        tokio::time::sleep(POLL_INTERVAL + Duration::from_secs(5)).await;
        let before = replicas.metrics();
        tokio::time::sleep(IDLE_WINDOW).await;
        (before, replicas.metrics())
    } else {
        (String::new(), String::new())
    };
    let idle = |f: &dyn Fn(&str) -> f64| (f(&after) - f(&before)) / IDLE_WINDOW.as_secs_f64();
    let rss = replicas.peak_rss_mib();
    replicas.stop();

    let per_xr = |total: f64| total / xr_count as f64;
    let mode = if existing {
        "existing when the controller starts"
    } else {
        "created while the controller runs"
    };
    let shards = if replica_count == 1 {
        String::new()
    } else {
        format!(
            ", {replica_count} replicas sharing {} shards",
            2 * replica_count
        )
    };
    println!("controller/{xr_count} XRs x 3 composed resources by {composed_by}, {mode}{shards}:");
    println!(
        "  created (API calls)      {:>8.2} s",
        submitted.as_secs_f64()
    );
    println!(
        "  all Ready after          {:>8.2} s (from {})",
        ready_after.as_secs_f64(),
        if existing {
            "controller start"
        } else {
            "first creation"
        }
    );
    println!(
        "  longest Ready stall      {:>8.2} s",
        longest_stall.as_secs_f64()
    );
    println!(
        "  reconciles per XR        {:>8.2} ({})",
        per_xr(reconciles(&rollout)),
        by_label(&rollout, "plait_reconciles_total", "result")
    );
    println!(
        "  reconcile triggers       {}",
        by_label(&rollout, "plait_reconcile_triggers_total", "trigger")
    );
    println!(
        "  conflicts per XR         {:>8.3}",
        per_xr(total(
            &rollout,
            "plait_reconciles_total",
            "result=\"conflict\""
        ))
    );
    println!(
        "  API requests per XR      {:>8.2} (writes {:.2})",
        per_xr(api_requests(&rollout, "")),
        per_xr(
            api_requests(&rollout, "verb=\"patch\"")
                + api_requests(&rollout, "verb=\"create\"")
                + api_requests(&rollout, "verb=\"update\"")
                + api_requests(&rollout, "verb=\"delete\"")
        )
    );
    // Counted client-side, in the controller's kube client
    // (`plait_api_requests_total`): every request the controller sent, its
    // watches, discovery and Leases included, and none of this bench's own.
    println!("  API requests per XR by verb and resource (the controller's client):");
    for (verb_resource, count) in largest_first(by_labels(
        &rollout,
        "plait_api_requests_total",
        &["verb", "resource"],
    )) {
        println!("    {verb_resource:<40} {:>8.3}", per_xr(count));
    }
    println!(
        "  function calls per XR    {:>8.2}",
        per_xr(function_calls(&rollout))
    );
    for (function, calls, mean_ms) in calls_by_function(&rollout) {
        println!(
            "    {function:<40} {:>8.2} per XR, {mean_ms:.3} ms per call",
            per_xr(calls)
        );
    }
    let cpu: Vec<String> = rollout_cpu.iter().map(|s| format!("{s:.1}")).collect();
    println!(
        "  controller CPU           {:>8} s (user + system, start to all Ready)",
        cpu.join(", ")
    );
    if measure_idle {
        println!(
            "  idle per second          {:>8.3} reconciles, {:.3} function calls, {:.3} API writes (over {} s, a poll interval after all Ready)",
            idle(&reconciles),
            idle(&function_calls),
            idle(&|m: &str| api_requests(m, "verb=\"patch\"") + api_requests(m, "verb=\"create\"")),
            IDLE_WINDOW.as_secs()
        );
        println!("  idle API requests per second by verb and resource (the controller's client):");
        let during =
            |metrics: &str| by_labels(metrics, "plait_api_requests_total", &["verb", "resource"]);
        let earlier = during(&before);
        let idle_requests = during(&after)
            .into_iter()
            .map(|(key, count)| {
                let rate =
                    (count - earlier.get(&key).copied().unwrap_or(0.0)) / IDLE_WINDOW.as_secs_f64();
                (key, rate)
            })
            .filter(|(_, rate)| *rate > 0.0)
            .collect();
        for (verb_resource, rate) in largest_first(idle_requests) {
            println!("    {verb_resource:<40} {rate:>8.3}");
        }
    }
    let rss: Vec<String> = rss.iter().map(|mib| format!("{mib:.1}")).collect();
    println!("  controller peak RSS      {:>8} MiB", rss.join(", "));
    println!(
        "  response cache           {:>8.0} hits, {:.0} misses",
        total(&rollout, "plait_function_cache_hits_total", ""),
        total(&rollout, "plait_function_cache_misses_total", ""),
    );
    if let Some(edited) = edited {
        edited.print(xr_count);
    }
}

/// The EnvironmentConfig every XR requires under `PLAIT_BENCH_COMPOSITION=environment`.
const SHARED_CONFIG: &str = "bench-shared";
/// An EnvironmentConfig no XR requires.
const UNREAD_CONFIG: &str = "bench-unread";
/// How long an edit no XR requires is given to wake one.
const UNREAD_WINDOW: Duration = Duration::from_secs(5);

fn environment_configs() -> kube::api::ApiResource {
    resource(
        "apiextensions.crossplane.io/v1beta1",
        "EnvironmentConfig",
        "environmentconfigs",
    )
}

fn required_wakes(metrics: &str) -> f64 {
    total(
        metrics,
        "plait_reconcile_triggers_total",
        "trigger=\"required\"",
    )
}

/// What editing the EnvironmentConfigs did, once all XRs were Ready.
struct Edited {
    /// XRs woken by the edit of a config none requires, within [`UNREAD_WINDOW`].
    unread_woken: f64,
    /// From the edit of the shared config until every XR's ConfigMap showed it.
    rerendered_after: Duration,
    /// The controller's metrics just before and after that edit (once its
    /// reconciles were done).
    before: String,
    after: String,
}

impl Edited {
    fn print(&self, xr_count: usize) {
        let per_xr = |f: &dyn Fn(&str) -> f64| (f(&self.after) - f(&self.before)) / xr_count as f64;
        println!("  editing EnvironmentConfigs once all are Ready:");
        println!(
            "    one no XR requires       {:>8.0} XRs woken (in {} s)",
            self.unread_woken,
            UNREAD_WINDOW.as_secs()
        );
        println!(
            "    the one all XRs require  {:>8.2} s until every XR's ConfigMap shows it",
            self.rerendered_after.as_secs_f64()
        );
        println!(
            "    woken per XR             {:>8.2} (required), reconciles per XR {:.2}, function calls per XR {:.2}",
            per_xr(&required_wakes),
            per_xr(&reconciles),
            per_xr(&function_calls)
        );
        println!(
            "    API requests per XR      {:>8.2}",
            per_xr(&|m: &str| api_requests(m, ""))
        );
        let earlier = by_labels(
            &self.before,
            "plait_api_requests_total",
            &["verb", "resource"],
        );
        let since = by_labels(
            &self.after,
            "plait_api_requests_total",
            &["verb", "resource"],
        )
        .into_iter()
        .map(|(key, count)| {
            let more = count - earlier.get(&key).copied().unwrap_or(0.0);
            (key, more)
        })
        .filter(|(_, more)| *more > 0.0)
        .collect();
        for (verb_resource, count) in largest_first(since) {
            println!("      {verb_resource:<38} {:>8.3}", count / xr_count as f64);
        }
    }
}

/// Edits the config no XR requires and counts the XRs that woke, then the
/// one every XR requires, timing until every XR's ConfigMap `a` shows it.
async fn edit_environment(
    client: &kube::Client,
    replicas: &Replicas,
    namespace: &str,
    xr_count: usize,
) -> Edited {
    let configs: kube::Api<kube::api::DynamicObject> =
        kube::Api::all_with(client.clone(), &environment_configs());
    let edit = |name: &'static str| {
        let configs = configs.clone();
        async move {
            configs
                .patch(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"data": {"revision": "2"}})),
                )
                .await
                .unwrap();
        }
    };
    let before = replicas.metrics();
    edit(UNREAD_CONFIG).await;
    tokio::time::sleep(UNREAD_WINDOW).await;
    let unread_woken = required_wakes(&replicas.metrics()) - required_wakes(&before);

    let config_maps: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        client.clone(),
        namespace,
        &resource("v1", "ConfigMap", "configmaps"),
    );
    let before = replicas.metrics();
    let started = Instant::now();
    edit(SHARED_CONFIG).await;
    let role_a = ListParams::default().labels("bench-role=a");
    loop {
        let listed = config_maps.list(&role_a).await.unwrap();
        let shown = listed
            .items
            .iter()
            .filter(|c| c.data["data"]["revision"] == "2")
            .count();
        if shown == xr_count {
            break;
        }
        assert!(
            started.elapsed() < TIMEOUT,
            "only {shown} of {xr_count} XRs showed the edit"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let rerendered_after = started.elapsed();
    // The reconciles that applied the last ConfigMaps finish a moment
    // later (polls go on meanwhile, about one XR in 60 per second).
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = replicas.metrics();
    Edited {
        unread_woken,
        rerendered_after,
        before,
        after,
    }
}
