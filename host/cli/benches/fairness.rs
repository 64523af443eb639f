//! Fairness between tenants with the real `plait controller`, run with its
//! default flags, on a real API server: tenant B's N ordinary XRs (three
//! ConfigMaps each, patch-and-transform then auto-ready) timed from each
//! XR's POST to the first time it is seen Ready, first alone and then
//! beside tenant A's N XRs whose function loops until its deadline. A's XRs
//! use the same XRD as B's (a platform publishes one API, every team uses
//! it), or an XRD of their own. For every deadline (100 ms, 1 s, 5 s) it
//! runs each case several times (5 by default), measuring B alone again
//! before each run, and prints one row per run, B's p50/p99 alone and
//! beside A, their ratio (the goal: at most 2), and how many of A's XRs
//! reported their deadline (A is not starved either), then a summary of
//! the ratios per case.
//!
//! `cargo bench -p plait --bench fairness` (starts its own test cluster and
//! registry; the looping function is pushed there and pulled by the
//! controller). `PLAIT_BENCH_XRS` sets N (default 100), `PLAIT_BENCH_RUNS`
//! the runs per case (default 5), `PLAIT_BENCH_DEADLINES` a comma-separated
//! subset of the deadlines (`100ms,1s,5s`), and `PLAIT_BENCH_CONTROLLER_ARGS`
//! flags the controller gets besides its defaults (space-separated, e.g.
//! `--guest-memory-budget=512Mi`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/kube_support.rs"]
mod kube_support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, PostParams};
use kube_support::{Controller, apply, is_ready, peak_rss_mib, resource, run_bench};
use plait_controlplane::ControlPlane;
use plait_testregistry::Registry;
use serde_json::{Value, json};

const DEFAULT_XRS: usize = 100;
const DEFAULT_RUNS: usize = 5;
const TIMEOUT: Duration = Duration::from_secs(900);
const LOOP_FUNCTION: &str = "fn-loop";
const GROUP: &str = "fairness.bench.example.org";
const FIELD_MANAGER: &str = "bench";

fn main() {
    run_bench(bench());
}

/// Where tenant A's looping XRs live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// B's XRD, with a Composition of its own.
    SharedXrd,
    /// An XRD of A's own.
    TwoXrds,
}

impl Layout {
    fn label(self) -> &'static str {
        match self {
            Layout::SharedXrd => "one XRD",
            Layout::TwoXrds => "two XRDs",
        }
    }
}

fn kind(name: &str) -> ApiResource {
    resource(
        &format!("{GROUP}/v1"),
        name,
        &format!("{}s", name.to_lowercase()),
    )
}

async fn xrd(client: &Client, name: &str) {
    let plural = format!("{}s", name.to_lowercase());
    apply(
        client,
        &resource(
            "apiextensions.crossplane.io/v2",
            "CompositeResourceDefinition",
            "compositeresourcedefinitions",
        ),
        &json!({
            "apiVersion": "apiextensions.crossplane.io/v2",
            "kind": "CompositeResourceDefinition",
            "metadata": {"name": format!("{plural}.{GROUP}")},
            "spec": {
                "group": GROUP,
                "names": {"kind": name, "plural": plural},
                "scope": "Namespaced",
                "versions": [{
                    "name": "v1", "served": true, "referenceable": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {"size": {"type": "string"}}}
                    }}}
                }]
            }
        }),
        FIELD_MANAGER,
    )
    .await;
    let all: Api<DynamicObject> = Api::all_with(client.clone(), &kind(name));
    let started = Instant::now();
    while all.list(&ListParams::default()).await.is_err() {
        assert!(started.elapsed() < TIMEOUT, "{name} is never served");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn composition(client: &Client, name: &str, kind: &str, pipeline: Value) {
    apply(
        client,
        &resource(
            "apiextensions.crossplane.io/v1",
            "Composition",
            "compositions",
        ),
        &json!({
            "apiVersion": "apiextensions.crossplane.io/v1",
            "kind": "Composition",
            "metadata": {"name": name},
            "spec": {
                "compositeTypeRef": {"apiVersion": format!("{GROUP}/v1"), "kind": kind},
                "mode": "Pipeline",
                "pipeline": pipeline,
            }
        }),
        FIELD_MANAGER,
    )
    .await;
}

fn ordinary_pipeline() -> Value {
    let config_map = |name: &str| {
        json!({
            "name": name,
            "base": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"role": name}},
            "patches": [{"type": "FromCompositeFieldPath", "fromFieldPath": "spec.size", "toFieldPath": "data.size"}]
        })
    };
    json!([
        {"step": "compose", "functionRef": {"name": "function-patch-and-transform"},
         "input": {"apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources",
                   "resources": [config_map("a"), config_map("b"), config_map("c")]}},
        {"step": "ready", "functionRef": {"name": "function-auto-ready"}}
    ])
}

fn conditions(xr: &DynamicObject, type_: &str) -> Option<Value> {
    xr.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .cloned()
}

/// Creates `n` XRs of `kind` in `namespace` composed by `composition`;
/// returns when each was POSTed.
async fn create(
    client: &Client,
    kind: &ApiResource,
    namespace: &str,
    prefix: &str,
    composition: &str,
    n: usize,
) -> BTreeMap<String, Instant> {
    let xrs: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, kind);
    let mut posted = BTreeMap::new();
    for i in 0..n {
        let name = format!("{prefix}{i:04}");
        let xr: DynamicObject = serde_json::from_value(json!({
            "apiVersion": kind.api_version, "kind": kind.kind,
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"size": "small", "crossplane": {"compositionRef": {"name": composition}}},
        }))
        .unwrap();
        let at = Instant::now();
        xrs.create(&PostParams::default(), &xr).await.unwrap();
        posted.insert(name, at);
    }
    posted
}

/// Each XR's time from its POST to the first time it was seen Ready.
async fn time_to_ready(
    client: &Client,
    kind: &ApiResource,
    namespace: &str,
    posted: &BTreeMap<String, Instant>,
) -> Vec<Duration> {
    let xrs: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, kind);
    let mut ready: BTreeMap<String, Duration> = BTreeMap::new();
    let started = Instant::now();
    while ready.len() < posted.len() {
        assert!(
            started.elapsed() < TIMEOUT,
            "only {} of {} XRs in {namespace} became Ready",
            ready.len(),
            posted.len()
        );
        if let Ok(list) = xrs.list(&ListParams::default()).await {
            for xr in list.items.iter().filter(|x| is_ready(x)) {
                let name = xr.metadata.name.clone().unwrap_or_default();
                if let (false, Some(at)) = (ready.contains_key(&name), posted.get(&name)) {
                    ready.insert(name, at.elapsed());
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ready.into_values().collect()
}

/// How many of the XRs in `namespace` report their function's deadline.
async fn reporting_deadline(client: &Client, kind: &ApiResource, namespace: &str) -> usize {
    let xrs: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, kind);
    xrs.list(&ListParams::default())
        .await
        .map(|list| {
            list.items
                .iter()
                .filter(|x| {
                    conditions(x, "Synced").is_some_and(|c| {
                        c["status"] == "False"
                            && c["message"]
                                .as_str()
                                .is_some_and(|m| m.contains("deadline"))
                    })
                })
                .count()
        })
        .unwrap_or_default()
}

/// How long until one of A's XRs in `namespace` reports its deadline
/// (A makes progress once B is served), waiting at most [`A_PROGRESS_WAIT`].
async fn first_report_after(
    client: &Client,
    kind: &ApiResource,
    namespace: &str,
) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < A_PROGRESS_WAIT {
        if reporting_deadline(client, kind, namespace).await > 0 {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    None
}

/// How long A is given to report a deadline after B is served: a few of
/// the longest deadline.
const A_PROGRESS_WAIT: Duration = Duration::from_secs(60);

fn percentile(times: &[Duration], p: f64) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn loop_guest(dir: &Path) -> std::path::PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    plait_guest_build::build_guest("plait-test-guest-infinite-loop", &root, dir)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Pushes the looping function to `registry`; returns its reference by digest.
fn push_loop(registry: &Registry, home: &Path) -> String {
    let wasm = loop_guest(&home.join("guests"));
    let output = Command::new(env!("CARGO_BIN_EXE_plait"))
        .args(["function", "push"])
        .arg(&wasm)
        .arg(registry.reference("fns/loop", "v1"))
        .arg("--insecure")
        .env("HOME", home)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "push: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

async fn set_loop_function(client: &Client, package: &str, deadline: &str) {
    apply(
        client,
        &resource("pkg.crossplane.io/v1", "Function", "functions"),
        &json!({
            "apiVersion": "pkg.crossplane.io/v1", "kind": "Function",
            "metadata": {"name": LOOP_FUNCTION, "annotations": {"limits.plait.dev/deadline": deadline}},
            "spec": {"package": package},
        }),
        FIELD_MANAGER,
    )
    .await;
}

async fn wait_function_healthy(client: &Client) {
    let functions: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &resource("pkg.crossplane.io/v1", "Function", "functions"),
    );
    let started = Instant::now();
    loop {
        if let Ok(function) = functions.get(LOOP_FUNCTION).await
            && conditions(&function, "Healthy").is_some_and(|c| c["status"] == "True")
        {
            return;
        }
        assert!(
            started.elapsed() < TIMEOUT,
            "the looping function never became Healthy"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn list(variable: &str, default: &[&str]) -> Vec<String> {
    std::env::var(variable)
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_string()).collect())
        .unwrap_or_else(|| default.iter().map(|s| s.to_string()).collect())
}

fn number(variable: &str, default: usize) -> usize {
    std::env::var(variable)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// How long the deleted XRs of a run may take to go.
const CLEAN_UP_TIMEOUT: Duration = Duration::from_secs(180);

async fn bench() {
    let started = Instant::now();
    let n = number("PLAIT_BENCH_XRS", DEFAULT_XRS);
    let runs = number("PLAIT_BENCH_RUNS", DEFAULT_RUNS);
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let deadlines = list("PLAIT_BENCH_DEADLINES", &["100ms", "1s", "5s"]);
    let controller_args: Vec<String> = std::env::var("PLAIT_BENCH_CONTROLLER_ARGS")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();

    let cluster = ControlPlane::shared().unwrap();
    let client = cluster.client().await;
    let registry = Registry::start();
    let home = tempfile::tempdir().unwrap();
    let package = push_loop(&registry, home.path());
    let cache = tempfile::tempdir().unwrap();

    let log = home.path().join("controller.log");
    let mut flags = vec![format!("--insecure-registry={}", registry.addr)];
    flags.extend(controller_args.iter().cloned());
    let mut controller = Controller::start(cluster.kubeconfig(), cache.path(), &log, &flags);
    controller.wait_ready().await;
    xrd(&client, "Shared").await;
    xrd(&client, "Looping").await;
    composition(&client, "shared-ordinary", "Shared", ordinary_pipeline()).await;
    let looping = json!([{"step": "loop", "functionRef": {"name": LOOP_FUNCTION}}]);
    composition(&client, "shared-looping", "Shared", looping.clone()).await;
    composition(&client, "looping", "Looping", looping).await;
    set_loop_function(&client, &package, &deadlines[0]).await;
    wait_function_healthy(&client).await;

    let shared = kind("Shared");
    // The first XRs compile the built-ins: not part of what is measured.
    let warm_ns = cluster.namespace("warm-up").await;
    let posted = create(&client, &shared, &warm_ns, "w", "shared-ordinary", 5).await;
    time_to_ready(&client, &shared, &warm_ns, &posted).await;
    clean_up(&client, &shared, &warm_ns).await;

    let mut rows = Vec::new();
    for deadline in &deadlines {
        set_loop_function(&client, &package, deadline).await;
        for run in 1..=runs {
            let alone_ns = cluster.namespace("b-alone").await;
            let posted = create(&client, &shared, &alone_ns, "b", "shared-ordinary", n).await;
            let alone = time_to_ready(&client, &shared, &alone_ns, &posted).await;
            clean_up(&client, &shared, &alone_ns).await;
            for layout in [Layout::SharedXrd, Layout::TwoXrds] {
                let (a_kind, a_composition) = match layout {
                    Layout::SharedXrd => (shared.clone(), "shared-looping"),
                    Layout::TwoXrds => (kind("Looping"), "looping"),
                };
                let a_ns = cluster.namespace("a-looping").await;
                create(&client, &a_kind, &a_ns, "a", a_composition, n).await;
                // A's loops take the slots before B arrives.
                tokio::time::sleep(Duration::from_secs(3)).await;
                let b_ns = cluster.namespace("b-beside").await;
                let posted = create(&client, &shared, &b_ns, "b", "shared-ordinary", n).await;
                let beside = time_to_ready(&client, &shared, &b_ns, &posted).await;
                let a_reported = reporting_deadline(&client, &a_kind, &a_ns).await;
                let a_after = first_report_after(&client, &a_kind, &a_ns).await;
                rows.push(Row {
                    layout,
                    deadline: deadline.clone(),
                    run,
                    alone_p50: percentile(&alone, 0.5),
                    alone_p99: percentile(&alone, 0.99),
                    beside_p50: percentile(&beside, 0.5),
                    beside_p99: percentile(&beside, 0.99),
                    a_reported,
                    a_after,
                });
                println!("{}", rows.last().unwrap().line(n));
                clean_up(&client, &shared, &b_ns).await;
                clean_up(&client, &a_kind, &a_ns).await;
            }
        }
    }
    let rss = peak_rss_mib(controller.pid()).unwrap_or(0.0);
    drop(controller);
    let flags = if controller_args.is_empty() {
        "default flags".to_string()
    } else {
        controller_args.join(" ")
    };
    println!();
    println!(
        "fairness: {n} XRs of tenant B beside {n} looping XRs of tenant A, controller with {flags}, {cpus} CPUs; time from POST to Ready"
    );
    println!(
        "| layout | deadline | run | B alone p50 / p99 | B beside A p50 / p99 | p99 ratio (goal <= 2) | A's XRs reporting their deadline when B is Ready | A's first report after B is Ready |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for row in &rows {
        println!("{}", row.line(n));
    }
    println!();
    println!("| layout | deadline | p99 ratios | worst | runs within 2x |");
    println!("|---|---|---|---|---|");
    for deadline in &deadlines {
        for layout in [Layout::SharedXrd, Layout::TwoXrds] {
            let ratios: Vec<f64> = rows
                .iter()
                .filter(|r| r.layout == layout && r.deadline == *deadline)
                .map(Row::ratio)
                .collect();
            let worst = ratios.iter().copied().fold(0.0, f64::max);
            let within = ratios.iter().filter(|r| **r <= 2.0).count();
            let listed: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
            println!(
                "| {} | {deadline} | {} | {worst:.2} | {within}/{} |",
                layout.label(),
                listed.join(", "),
                ratios.len()
            );
        }
    }
    println!();
    println!(
        "controller peak RSS {rss:.0} MiB; the bench took {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

struct Row {
    layout: Layout,
    deadline: String,
    run: usize,
    alone_p50: Duration,
    alone_p99: Duration,
    beside_p50: Duration,
    beside_p99: Duration,
    a_reported: usize,
    /// How long after B's last XR was Ready one of A's XRs reported its
    /// deadline (zero if one already had); `None`: none within the wait.
    a_after: Option<Duration>,
}

impl Row {
    fn ratio(&self) -> f64 {
        self.beside_p99.as_secs_f64() / self.alone_p99.as_secs_f64()
    }

    fn line(&self, n: usize) -> String {
        format!(
            "| {} | {} | {} | {:.2} s / {:.2} s | {:.2} s / {:.2} s | {:.2} | {}/{n} | {} |",
            self.layout.label(),
            self.deadline,
            self.run,
            self.alone_p50.as_secs_f64(),
            self.alone_p99.as_secs_f64(),
            self.beside_p50.as_secs_f64(),
            self.beside_p99.as_secs_f64(),
            self.ratio(),
            self.a_reported,
            self.a_after
                .map_or("none".to_string(), |d| format!("{:.1} s", d.as_secs_f64())),
        )
    }
}

/// Deletes the XRs of `kind` in `namespace` and waits until the
/// controller has let them go, so that no run's XRs load the next; then
/// deletes the namespace.
async fn clean_up(client: &Client, kind: &ApiResource, namespace: &str) {
    let xrs: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, kind);
    let _ = xrs
        .delete_collection(&DeleteParams::background(), &ListParams::default())
        .await;
    let started = Instant::now();
    while xrs
        .list(&ListParams::default())
        .await
        .map_or(true, |list| !list.items.is_empty())
    {
        if started.elapsed() > CLEAN_UP_TIMEOUT {
            eprintln!("the XRs in {namespace} were not gone after {CLEAN_UP_TIMEOUT:?}");
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let namespaces: Api<DynamicObject> =
        Api::all_with(client.clone(), &resource("v1", "Namespace", "namespaces"));
    let _ = namespaces
        .delete(namespace, &DeleteParams::background())
        .await;
}
