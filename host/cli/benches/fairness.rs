//! Fairness between tenants with the real `plait controller` on a real API
//! server: tenant B's N ordinary XRs (three ConfigMaps each,
//! patch-and-transform then auto-ready) timed from each XR's POST to the
//! first time it is seen Ready, first alone and then beside tenant A's N
//! XRs whose function loops until its deadline. A's XRs use the same XRD as
//! B's (a platform publishes one API, every team uses it), or an XRD of
//! their own. For every deadline (100 ms, 1 s, 5 s) and number of call
//! slots (1, 2, the CPU count) it prints B's p50/p99 alone and beside A,
//! their ratio (the goal: at most 2), and how many of A's XRs reported
//! their deadline error by the end (A is not starved either).
//!
//! `cargo bench -p plait --bench fairness` (starts its own test cluster and
//! registry; the looping function is pushed there and pulled by the
//! controller). `PLAIT_BENCH_XRS` sets N (default 100),
//! `PLAIT_BENCH_DEADLINES` a comma-separated subset (`100ms,1s,5s`),
//! `PLAIT_BENCH_SLOTS` of slot counts (`1,2`).

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
use plait_testcluster::TestCluster;
use plait_testregistry::Registry;
use serde_json::{Value, json};

const DEFAULT_XRS: usize = 100;
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

async fn bench() {
    let n: usize = std::env::var("PLAIT_BENCH_XRS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_XRS);
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let cpus_label = cpus.to_string();
    let mut slot_counts: Vec<usize> = list("PLAIT_BENCH_SLOTS", &["1", "2", &cpus_label])
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    slot_counts.dedup();
    let deadlines = list("PLAIT_BENCH_DEADLINES", &["100ms", "1s", "5s"]);

    let cluster = TestCluster::shared().unwrap();
    let client = cluster.client().await;
    let registry = Registry::start();
    let home = tempfile::tempdir().unwrap();
    let package = push_loop(&registry, home.path());
    let cache = tempfile::tempdir().unwrap();

    let mut rows = Vec::new();
    for slots in slot_counts {
        let log = home.path().join(format!("controller-{slots}.log"));
        let mut controller = Controller::start(
            cluster.kubeconfig(),
            cache.path(),
            &log,
            &[
                format!("--concurrent-function-calls={slots}"),
                // A call paused for a lighter tenant's keeps its memory:
                // room for one call (256 MiB) beyond the slots.
                format!("--guest-memory-budget={}Mi", (slots + 1) * 256),
                format!("--insecure-registry={}", registry.addr),
            ],
        );
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
        let alone_ns = cluster.namespace("b-alone").await;
        let posted = create(&client, &shared, &alone_ns, "b", "shared-ordinary", n).await;
        let alone = time_to_ready(&client, &shared, &alone_ns, &posted).await;
        delete_namespace(&client, &alone_ns).await;

        for deadline in &deadlines {
            set_loop_function(&client, &package, deadline).await;
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
                    slots,
                    alone_p50: percentile(&alone, 0.5),
                    alone_p99: percentile(&alone, 0.99),
                    beside_p50: percentile(&beside, 0.5),
                    beside_p99: percentile(&beside, 0.99),
                    a_reported,
                    a_after,
                });
                println!("{}", rows.last().unwrap().line(n));
                delete_namespace(&client, &a_ns).await;
                delete_namespace(&client, &b_ns).await;
            }
        }
        let rss = peak_rss_mib(controller.pid()).unwrap_or(0.0);
        println!("controller with {slots} call slots: peak RSS {rss:.0} MiB");
        drop(controller);
    }
    println!();
    println!(
        "fairness: {n} XRs of tenant B beside {n} looping XRs of tenant A, {cpus} CPUs; time from POST to Ready"
    );
    println!(
        "| layout | deadline | slots | B alone p50 / p99 | B beside A p50 / p99 | p99 ratio (goal <= 2) | A's XRs reporting their deadline when B is Ready | A's first report after B is Ready |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for row in &rows {
        println!("{}", row.line(n));
    }
}

struct Row {
    layout: Layout,
    deadline: String,
    slots: usize,
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
    fn line(&self, n: usize) -> String {
        format!(
            "| {} | {} | {} | {:.2} s / {:.2} s | {:.2} s / {:.2} s | {:.2} | {}/{n} | {} |",
            self.layout.label(),
            self.deadline,
            self.slots,
            self.alone_p50.as_secs_f64(),
            self.alone_p99.as_secs_f64(),
            self.beside_p50.as_secs_f64(),
            self.beside_p99.as_secs_f64(),
            self.beside_p99.as_secs_f64() / self.alone_p99.as_secs_f64(),
            self.a_reported,
            self.a_after
                .map_or("none".to_string(), |d| format!("{:.1} s", d.as_secs_f64())),
        )
    }
}

/// Deletes `namespace` without waiting: the controller deletes its XRs.
async fn delete_namespace(client: &Client, namespace: &str) {
    let namespaces: Api<DynamicObject> =
        Api::all_with(client.clone(), &resource("v1", "Namespace", "namespaces"));
    let _ = namespaces
        .delete(namespace, &DeleteParams::background())
        .await;
}
