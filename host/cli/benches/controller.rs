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

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/kube_support.rs"]
mod kube_support;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, ListParams};
use kube_support::{
    ScaleApis, apply, free_address, is_ready, peak_rss_mib, resource, run_bench, scale_fixture,
    scrape,
};
use plait_testcluster::TestCluster;
use serde_json::json;

const DEFAULT_XRS: usize = 100;
const IDLE_WINDOW: Duration = Duration::from_secs(30);
/// The controller's default `--poll-interval`.
const POLL_INTERVAL: Duration = Duration::from_secs(60);
const TIMEOUT: Duration = Duration::from_secs(600);

/// The sum of every series of `metric` whose labels contain `labels`.
fn total(metrics: &str, metric: &str, labels: &str) -> f64 {
    metrics
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix(metric)?;
            if !(rest.starts_with('{') || rest.starts_with(' ')) || !rest.contains(labels) {
                return None;
            }
            rest.rsplit_once(' ')?.1.parse::<f64>().ok()
        })
        .fold(0.0, |sum, v| sum + v)
}

/// `label=count` for every series of `metric`, by the value of `label`.
fn by_label(metrics: &str, metric: &str, label: &str) -> String {
    let mut counts = std::collections::BTreeMap::<String, f64>::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix(metric) else {
            continue;
        };
        let Some(value) = rest.split(&format!("{label}=\"")).nth(1) else {
            continue;
        };
        let (Some(key), Some(count)) = (
            value.split('"').next(),
            rest.rsplit_once(' ')
                .and_then(|(_, c)| c.parse::<f64>().ok()),
        ) else {
            continue;
        };
        *counts.entry(key.to_string()).or_default() += count;
    }
    counts
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every series of `metric` with two labels, by the values of `first` and
/// `second`, largest count first.
fn by_two_labels(metrics: &str, metric: &str, first: &str, second: &str) -> Vec<(String, f64)> {
    let label = |rest: &str, name: &str| -> Option<String> {
        Some(
            rest.split(&format!("{name}=\""))
                .nth(1)?
                .split('"')
                .next()?
                .to_string(),
        )
    };
    let mut counts = std::collections::BTreeMap::<String, f64>::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix(metric) else {
            continue;
        };
        if !rest.starts_with('{') {
            continue;
        }
        let (Some(a), Some(b), Some(count)) = (
            label(rest, first),
            label(rest, second),
            rest.rsplit_once(' ')
                .and_then(|(_, c)| c.parse::<f64>().ok()),
        ) else {
            continue;
        };
        *counts.entry(format!("{a:<7} {b}")).or_default() += count;
    }
    let mut rows: Vec<_> = counts.into_iter().collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    rows
}

fn reconciles(metrics: &str) -> f64 {
    total(metrics, "plait_reconciles_total", "")
}

fn function_calls(metrics: &str) -> f64 {
    total(metrics, "plait_function_call_duration_seconds_count", "")
}

fn api_requests(metrics: &str, labels: &str) -> f64 {
    total(metrics, "plait_api_requests_total", labels)
}

fn main() {
    run_bench(bench());
}

fn start_controller(cluster: &TestCluster, cache: &Path, probes: &str) -> Child {
    kube_support::start_controller(cluster.kubeconfig(), cache, probes, Stdio::inherit(), &[])
}

async fn wait_ready(probes: &str) {
    let started = Instant::now();
    while !scrape(probes, "/readyz").starts_with("HTTP/1.1 200") {
        assert!(
            started.elapsed() < TIMEOUT,
            "the controller never became ready"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// How many of `xrs` are Ready.
async fn count_ready(xrs: &Api<DynamicObject>) -> Option<usize> {
    let list = xrs.list(&ListParams::default()).await.ok()?;
    Some(list.items.iter().filter(|xr| is_ready(xr)).count())
}

/// Waits until all `n` XRs are Ready; returns when, and the longest time the
/// Ready count did not rise before that.
async fn all_ready(xrs: &Api<DynamicObject>, n: usize, since: Instant) -> (Duration, Duration) {
    let mut last_rise = since;
    let mut longest_stall = Duration::ZERO;
    let mut ready = 0;
    loop {
        // A busy API server may time a LIST out: that is a figure too, not a failure.
        if let Some(now_ready) = count_ready(xrs).await
            && now_ready > ready
        {
            ready = now_ready;
            longest_stall = longest_stall.max(last_rise.elapsed());
            last_rise = Instant::now();
        }
        if ready == n {
            return (since.elapsed(), longest_stall);
        }
        assert!(
            since.elapsed() < TIMEOUT,
            "only {ready} of {n} XRs became Ready"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
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
    let mut probes = free_address();
    let mut controller = start_controller(cluster, cache.path(), &probes);
    wait_ready(&probes).await;
    let xrd = scale_fixture("xrd.yaml");
    let composition = scale_fixture("composition.yaml");
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
    let (submitted, since) = if existing {
        let _ = controller.kill();
        let _ = controller.wait();
        for i in 0..xr_count {
            apply(&client, &bench_kind, &create(i), "bench").await;
        }
        let submitted = created.elapsed();
        probes = free_address();
        controller = start_controller(cluster, cache.path(), &probes);
        (submitted, Instant::now())
    } else {
        for i in 0..xr_count {
            apply(&client, &bench_kind, &create(i), "bench").await;
        }
        (created.elapsed(), created)
    };
    let (ready_after, longest_stall) = all_ready(&xrs, xr_count, since).await;
    let rollout = scrape(&probes, "/metrics");
    let measure_idle = std::env::var("PLAIT_BENCH_IDLE").as_deref() != Ok("skip");

    // Idle means every XR has had its first poll since its last write: that
    // poll is the first to see the XR's final status, so its request is new
    // and its functions run once more.
    let (before, after) = if measure_idle {
        tokio::time::sleep(POLL_INTERVAL + Duration::from_secs(5)).await;
        let before = scrape(&probes, "/metrics");
        tokio::time::sleep(IDLE_WINDOW).await;
        (before, scrape(&probes, "/metrics"))
    } else {
        (String::new(), String::new())
    };
    let idle = |f: &dyn Fn(&str) -> f64| (f(&after) - f(&before)) / IDLE_WINDOW.as_secs_f64();
    let rss = peak_rss_mib(controller.id()).unwrap();
    let _ = controller.kill();
    let _ = controller.wait();

    let per_xr = |total: f64| total / xr_count as f64;
    let mode = if existing {
        "existing when the controller starts"
    } else {
        "created while the controller runs"
    };
    println!("controller/{xr_count} XRs x 3 composed resources, {mode}:");
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
    for (verb_resource, count) in
        by_two_labels(&rollout, "plait_api_requests_total", "verb", "resource")
    {
        println!("    {verb_resource:<40} {:>8.3}", per_xr(count));
    }
    println!(
        "  function calls per XR    {:>8.2}",
        per_xr(function_calls(&rollout))
    );
    if measure_idle {
        println!(
            "  idle per second          {:>8.3} reconciles, {:.3} function calls, {:.3} API writes (over {} s, a poll interval after all Ready)",
            idle(&reconciles),
            idle(&function_calls),
            idle(&|m: &str| api_requests(m, "verb=\"patch\"") + api_requests(m, "verb=\"create\"")),
            IDLE_WINDOW.as_secs()
        );
    }
    println!("  controller peak RSS      {:>8.1} MiB", rss);
    println!(
        "  response cache           {:>8.0} hits, {:.0} misses",
        total(&rollout, "plait_function_cache_hits_total", ""),
        total(&rollout, "plait_function_cache_misses_total", ""),
    );
}
