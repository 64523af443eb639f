//! Upstream Crossplane core v2.3.4 and plait on the same objects, one after
//! the other on one machine, each on a fresh test cluster (the same
//! kube-apiserver and etcd build): the scale fixture's XRD and Composition
//! (three ConfigMaps per XR, patch-and-transform then auto-ready; upstream
//! calls its gRPC function servers, plait its built-ins) and N XRs created
//! while the controller runs. Prints one table with a column each: time
//! until all N are Ready, peak memory and CPU time of the controller (and of
//! upstream's function servers), the API server's CPU time, reconciles per
//! XR, the API requests the API server served from every client, Events
//! written, and what each does once everything is Ready.
//!
//! `cargo bench -p plait --bench side_by_side` (starts its own test
//! clusters and upstream's binaries from `make upstream-crossplane`).
//! `PLAIT_BENCH_XRS=100` sets N (default 1000); `PLAIT_BENCH_IDLE=skip`
//! stops once every XR is Ready, without measuring idle.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/kube_support.rs"]
mod kube_support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams};
use kube_support::{
    Controller, LogsOnFailure, ScaleApis, apiserver_metrics, apply, apply_scale_fixture, by_labels,
    cpu_seconds, largest_first, peak_rss_mib, run_bench, scrape, spawn_all_ready, total,
};
use plait_controlplane::{ControlPlane, UpstreamCrossplane};
use serde_json::json;

const DEFAULT_XRS: usize = 1000;
/// Both controllers' default poll interval (`--poll-interval`).
const POLL_INTERVAL: Duration = Duration::from_secs(60);
/// A whole poll interval: XRs made Ready together are polled together, so
/// a shorter window can fall between their polls and see none.
const IDLE_WINDOW: Duration = POLL_INTERVAL;
/// After the fixture's kind is served, so that the XRD's and Composition's
/// own reconciles are not in the counts.
const SETTLE: Duration = Duration::from_secs(5);
const TIMEOUT: Duration = Duration::from_secs(1800);
const FIELD_MANAGER: &str = "bench";
/// The XR kind's name, as upstream names its composite controller (`composite/<XRD name>`).
const XRD_NAME: &str = "benches.scale.example.org";
/// The API server's verbs that write; `APPLY` is a server-side apply patch.
const WRITE_VERBS: [&str; 5] = ["APPLY", "POST", "PUT", "PATCH", "DELETE"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Contender {
    Upstream,
    Plait,
}

impl Contender {
    fn reconcile_metric(self) -> &'static str {
        match self {
            Contender::Upstream => "controller_runtime_reconcile_total",
            Contender::Plait => "plait_reconciles_total",
        }
    }

    /// What the XR kind's reconcile series carry among their labels.
    fn xr_series(self) -> String {
        match self {
            Contender::Upstream => format!("controller=\"composite/{XRD_NAME}\""),
            Contender::Plait => "kind=\"Bench\"".to_string(),
        }
    }
}

/// The controller under test, stopped when dropped.
enum Running {
    Upstream(UpstreamCrossplane),
    Plait(Controller),
}

impl Running {
    async fn start(
        contender: Contender,
        cluster: &ControlPlane,
        scratch: &std::path::Path,
    ) -> Self {
        match contender {
            Contender::Upstream => {
                let mut upstream = UpstreamCrossplane::install(cluster).await.unwrap();
                upstream.start_core(&[]).await.unwrap();
                Running::Upstream(upstream)
            }
            Contender::Plait => {
                let mut controller = Controller::start(
                    cluster.kubeconfig(),
                    &scratch.join("cache"),
                    &scratch.join("plait.log"),
                    &[],
                );
                controller.wait_ready().await;
                Running::Plait(controller)
            }
        }
    }

    /// The controller's processes as (name, pid): upstream's core first,
    /// then its function servers.
    fn processes(&self) -> Vec<(String, u32)> {
        match self {
            Running::Upstream(upstream) => {
                std::iter::once(("core".to_string(), upstream.core_pid().unwrap()))
                    .chain(
                        upstream
                            .function_pids()
                            .into_iter()
                            .map(|(name, pid)| (name.to_string(), pid)),
                    )
                    .collect()
            }
            Running::Plait(controller) => vec![("controller".to_string(), controller.pid())],
        }
    }

    fn metrics(&self) -> String {
        match self {
            Running::Upstream(upstream) => scrape(&upstream.metrics_address(), "/metrics"),
            Running::Plait(controller) => scrape(controller.probes(), "/metrics"),
        }
    }

    fn logs(&self, scratch: &std::path::Path) -> Vec<PathBuf> {
        match self {
            Running::Upstream(upstream) => upstream.logs(),
            Running::Plait(_) => vec![scratch.join("plait.log")],
        }
    }
}

/// Counters read at one moment.
struct Snapshot {
    at: Instant,
    controller_metrics: String,
    apiserver_metrics: String,
    /// Each process's CPU seconds, in [`Running::processes`] order.
    cpu: Vec<f64>,
    apiserver_cpu: f64,
    events: usize,
}

impl Snapshot {
    async fn take(client: &kube::Client, cluster: &ControlPlane, running: &Running) -> Self {
        Snapshot {
            at: Instant::now(),
            controller_metrics: running.metrics(),
            apiserver_metrics: apiserver_metrics(client).await,
            cpu: running
                .processes()
                .iter()
                .map(|(_, pid)| cpu_seconds(*pid).unwrap())
                .collect(),
            apiserver_cpu: cpu_seconds(cluster.apiserver_pid()).unwrap(),
            events: Api::<Event>::all(client.clone())
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .len(),
        }
    }
}

/// What changed between two snapshots.
struct Delta {
    seconds: f64,
    xr_reconciles: BTreeMap<String, f64>,
    all_reconciles: f64,
    /// The API server's `apiserver_request_total` by verb and resource.
    requests: BTreeMap<String, f64>,
    cpu: Vec<f64>,
    apiserver_cpu: f64,
    events: isize,
}

impl Delta {
    fn between(contender: Contender, before: &Snapshot, after: &Snapshot) -> Self {
        let metric = contender.reconcile_metric();
        let xr_lines = |metrics: &str| -> String {
            metrics
                .lines()
                .filter(|l| l.contains(&contender.xr_series()))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let requests = |metrics: &str| {
            by_labels(
                metrics,
                "apiserver_request_total",
                &["verb", "resource", "subresource"],
            )
        };
        Delta {
            seconds: (after.at - before.at).as_secs_f64(),
            xr_reconciles: subtract(
                by_labels(&xr_lines(&after.controller_metrics), metric, &["result"]),
                by_labels(&xr_lines(&before.controller_metrics), metric, &["result"]),
            ),
            all_reconciles: total(&after.controller_metrics, metric, "")
                - total(&before.controller_metrics, metric, ""),
            requests: subtract(
                requests(&after.apiserver_metrics),
                requests(&before.apiserver_metrics),
            ),
            cpu: after
                .cpu
                .iter()
                .zip(&before.cpu)
                .map(|(a, b)| a - b)
                .collect(),
            apiserver_cpu: after.apiserver_cpu - before.apiserver_cpu,
            events: after.events as isize - before.events as isize,
        }
    }

    fn xr_reconciles(&self) -> f64 {
        sum(self.xr_reconciles.values())
    }

    fn requests(&self) -> f64 {
        sum(self.requests.values())
    }

    fn writes(&self) -> f64 {
        self.requests
            .iter()
            .filter(|(key, _)| WRITE_VERBS.iter().any(|verb| key.starts_with(verb)))
            .map(|(_, count)| count)
            .fold(0.0, |total, count| total + count)
    }

    fn event_writes(&self) -> f64 {
        self.requests
            .iter()
            .filter(|(key, _)| {
                key.ends_with(" events") && WRITE_VERBS.iter().any(|verb| key.starts_with(verb))
            })
            .map(|(_, count)| count)
            .fold(0.0, |total, count| total + count)
    }
}

/// The sum of `counts`, 0 (not -0, as `Iterator::sum` gives) when there are none.
fn sum<'a>(counts: impl IntoIterator<Item = &'a f64>) -> f64 {
    counts.into_iter().fold(0.0, |total, count| total + count)
}

fn subtract(after: BTreeMap<String, f64>, before: BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    after
        .into_iter()
        .map(|(key, count)| {
            let was = before.get(&key).copied().unwrap_or(0.0);
            (key, count - was)
        })
        .filter(|(_, count)| *count != 0.0)
        .collect()
}

/// One contender's figures.
struct Measured {
    processes: Vec<String>,
    submitted: Duration,
    ready_after: Duration,
    longest_stall: Duration,
    peak_rss: Vec<f64>,
    rollout: Delta,
    idle: Option<Delta>,
}

async fn measure(contender: Contender, xr_count: usize, measure_idle: bool) -> Measured {
    let cluster = ControlPlane::dedicated().unwrap();
    let client = cluster.client().await;
    let scratch = tempfile::tempdir().unwrap();
    let running = Running::start(contender, &cluster, scratch.path()).await;
    let logs = LogsOnFailure(running.logs(scratch.path()));
    apply_scale_fixture(&client, FIELD_MANAGER).await;
    let namespace = cluster.namespace("bench").await;
    let ScaleApis { kind, xrs, .. } = ScaleApis::served(&client, &namespace, TIMEOUT).await;
    tokio::time::sleep(SETTLE).await;

    let before = Snapshot::take(&client, &cluster, &running).await;
    let created = Instant::now();
    let ready = spawn_all_ready(&xrs, xr_count, created, TIMEOUT);
    for i in 0..xr_count {
        let xr = json!({
            "apiVersion": "scale.example.org/v1", "kind": "Bench",
            "metadata": {"name": format!("bench-{i:04}"), "namespace": namespace},
            "spec": {"size": "small"}
        });
        apply(&client, &kind, &xr, FIELD_MANAGER).await;
    }
    let submitted = created.elapsed();
    let (ready_after, longest_stall) = ready.await.unwrap();
    let all_ready_at = Snapshot::take(&client, &cluster, &running).await;
    let rollout = Delta::between(contender, &before, &all_ready_at);

    // Idle means every XR has had its first poll since its last write.
    let idle = if measure_idle {
        tokio::time::sleep(POLL_INTERVAL + Duration::from_secs(5)).await;
        let start = Snapshot::take(&client, &cluster, &running).await;
        tokio::time::sleep(IDLE_WINDOW).await;
        let end = Snapshot::take(&client, &cluster, &running).await;
        Some(Delta::between(contender, &start, &end))
    } else {
        None
    };
    let processes = running.processes();
    let peak_rss = processes
        .iter()
        .map(|(_, pid)| peak_rss_mib(*pid).unwrap())
        .collect();
    drop(logs);
    drop(running);
    cluster.stop().unwrap();
    Measured {
        processes: processes.into_iter().map(|(name, _)| name).collect(),
        submitted,
        ready_after,
        longest_stall,
        peak_rss,
        rollout,
        idle,
    }
}

fn main() {
    run_bench(bench());
}

async fn bench() {
    let xr_count: usize = std::env::var("PLAIT_BENCH_XRS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_XRS);
    let measure_idle = std::env::var("PLAIT_BENCH_IDLE").as_deref() != Ok("skip");
    let upstream = measure(Contender::Upstream, xr_count, measure_idle).await;
    let plait = measure(Contender::Plait, xr_count, measure_idle).await;
    print_table(xr_count, &upstream, &plait);
}

fn row(label: &str, upstream: impl std::fmt::Display, plait: impl std::fmt::Display) {
    println!("  {label:<44} {upstream:>24} {plait:>24}");
}

fn print_table(xr_count: usize, upstream: &Measured, plait: &Measured) {
    let per_xr = |count: f64| count / xr_count as f64;
    let both = |f: &dyn Fn(&Measured) -> String| (f(upstream), f(plait));
    println!(
        "side_by_side/{xr_count} XRs x 3 ConfigMaps (patch-and-transform, auto-ready), created while the controller runs, a fresh API server each:"
    );
    row("", "upstream Crossplane 2.3.4", "plait");
    let (u, p) = both(&|m| format!("{:.2}", m.submitted.as_secs_f64()));
    row("XRs created (API calls), s", u, p);
    let (u, p) = both(&|m| format!("{:.2}", m.ready_after.as_secs_f64()));
    row("all Ready after (from first creation), s", u, p);
    let (u, p) = both(&|m| format!("{:.2}", m.longest_stall.as_secs_f64()));
    row("longest Ready stall, s", u, p);

    println!("  peak RSS, MiB");
    process_rows(upstream, plait, |m| &m.peak_rss, 1);
    println!("  CPU from first creation to all Ready, s");
    process_rows(upstream, plait, |m| &m.rollout.cpu, 2);
    let (u, p) = both(&|m| format!("{:.2}", m.rollout.apiserver_cpu));
    row("  kube-apiserver", u, p);

    let (u, p) = both(&|m| {
        format!(
            "{:.2} ({})",
            per_xr(m.rollout.xr_reconciles()),
            results(&m.rollout.xr_reconciles)
        )
    });
    row("XR reconciles per XR", u, p);
    let (u, p) = both(&|m| format!("{:.2}", per_xr(m.rollout.all_reconciles)));
    row("reconciles per XR, every controller", u, p);

    let (u, p) = both(&|m| {
        format!(
            "{:.0} ({:.2}/XR)",
            m.rollout.requests(),
            per_xr(m.rollout.requests())
        )
    });
    row("API requests served (kube-apiserver), all", u, p);
    let (u, p) = both(&|m| {
        format!(
            "{:.0} ({:.2}/XR)",
            m.rollout.writes(),
            per_xr(m.rollout.writes())
        )
    });
    row("  of which writes", u, p);
    println!(
        "  API requests per XR by verb and resource (from every client; WATCH counted as it ends):"
    );
    request_rows(&upstream.rollout, &plait.rollout, xr_count as f64);
    println!(
        "    (the bench's own among them: one APPLY of each XR, one LIST and WATCH of the XRs, a LIST of Events)"
    );
    let (u, p) = both(&|m| {
        format!(
            "{} objects, {:.0} writes",
            m.rollout.events,
            m.rollout.event_writes()
        )
    });
    row("Events", u, p);

    let (Some(upstream_idle), Some(plait_idle)) = (&upstream.idle, &plait.idle) else {
        return;
    };
    println!(
        "  idle, per second over {} s starting a poll interval ({} s) after all Ready",
        IDLE_WINDOW.as_secs(),
        POLL_INTERVAL.as_secs()
    );
    let rate = |idle: &Delta, count: f64| format!("{:.3}", count / idle.seconds);
    row(
        "  XR reconciles",
        rate(upstream_idle, upstream_idle.xr_reconciles()),
        rate(plait_idle, plait_idle.xr_reconciles()),
    );
    row(
        "  reconciles, every controller",
        rate(upstream_idle, upstream_idle.all_reconciles),
        rate(plait_idle, plait_idle.all_reconciles),
    );
    row(
        "  API requests served",
        rate(upstream_idle, upstream_idle.requests()),
        rate(plait_idle, plait_idle.requests()),
    );
    row(
        "  API writes served",
        rate(upstream_idle, upstream_idle.writes()),
        rate(plait_idle, plait_idle.writes()),
    );
    row(
        "  controller CPU, s (core + functions)",
        rate(upstream_idle, sum(&upstream_idle.cpu)),
        rate(plait_idle, sum(&plait_idle.cpu)),
    );
    row(
        "  kube-apiserver CPU, s",
        rate(upstream_idle, upstream_idle.apiserver_cpu),
        rate(plait_idle, plait_idle.apiserver_cpu),
    );
    println!("    API requests per second by verb and resource:");
    request_rows(upstream_idle, plait_idle, upstream_idle.seconds);
}

/// The API server's requests by verb and resource, each divided by `per`
/// (XRs, or seconds), largest first; those under 0.01 in both columns summed
/// in one row.
fn request_rows(upstream: &Delta, plait: &Delta, per: f64) {
    let mut keys: BTreeMap<String, f64> = BTreeMap::new();
    for delta in [upstream, plait] {
        for (key, count) in &delta.requests {
            *keys.entry(key.clone()).or_default() += count;
        }
    }
    let mut rest = (0.0, 0.0);
    for (key, _) in largest_first(keys) {
        let (u, p) = (
            upstream.requests.get(&key).copied().unwrap_or(0.0) / per,
            plait.requests.get(&key).copied().unwrap_or(0.0) / per,
        );
        if u.max(p) >= 0.01 {
            row(&format!("    {key}"), format!("{u:.3}"), format!("{p:.3}"));
        } else {
            rest = (rest.0 + u, rest.1 + p);
        }
    }
    row(
        "    everything else",
        format!("{:.3}", rest.0),
        format!("{:.3}", rest.1),
    );
}

/// One row per process (upstream's core beside plait's controller, then
/// upstream's function servers, built into plait), and their sum.
fn process_rows(
    upstream: &Measured,
    plait: &Measured,
    values: impl Fn(&Measured) -> &Vec<f64>,
    decimals: usize,
) {
    let show = |v: f64| format!("{v:.decimals$}");
    let (upstream_values, plait_values) = (values(upstream), values(plait));
    row(
        "  controller (upstream: core)",
        show(upstream_values[0]),
        show(plait_values[0]),
    );
    for (name, value) in upstream.processes.iter().zip(upstream_values).skip(1) {
        row(&format!("  {name}"), show(*value), "(built in)");
    }
    row(
        "  controller and functions",
        show(sum(upstream_values)),
        show(sum(plait_values)),
    );
}

/// `result=count` for each result.
fn results(counts: &BTreeMap<String, f64>) -> String {
    counts
        .iter()
        .map(|(result, count)| format!("{result}={count}"))
        .collect::<Vec<_>>()
        .join(" ")
}
