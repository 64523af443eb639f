//! Fairness between tenants on a real API server: tenant B's 100 ordinary
//! XRs (three composed ConfigMaps each, patch-and-transform then
//! auto-ready), timed from creation to Ready, first alone and then beside
//! tenant A's 100 XRs whose function loops until its 1 s deadline. Prints
//! B's p50/p99 time to Ready in both runs, their ratio, and the process's
//! peak RSS.
//!
//! `cargo bench -p plait-kube --bench fairness` (starts its own test cluster
//! and runs the controller in this process).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use plait_functions::Resolver;
use plait_kube::{Functions, Timing};
use plait_runtime::{Runtime, RuntimeConfig};
use plait_testcluster::TestCluster;
use serde_json::{Value, json};

const XRS: usize = 100;
const TIMEOUT: Duration = Duration::from_secs(900);
const LOOP_FUNCTION: &str = "fn-loop";

use plait_testcluster::{apply, resource};

/// The field manager of what the bench applies.
const FIELD_MANAGER: &str = "bench";

/// A namespaced XRD `<kind>` in group `<group>` and its Composition running `pipeline`.
async fn api(client: &Client, group: &str, kind: &str, pipeline: Value) -> ApiResource {
    let plural = format!("{}s", kind.to_lowercase());
    let xrd = json!({
        "apiVersion": "apiextensions.crossplane.io/v2",
        "kind": "CompositeResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "referenceable": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "string"}}}
                }}}
            }]
        }
    });
    let composition = json!({
        "apiVersion": "apiextensions.crossplane.io/v1",
        "kind": "Composition",
        "metadata": {"name": plural},
        "spec": {
            "compositeTypeRef": {"apiVersion": format!("{group}/v1"), "kind": kind},
            "mode": "Pipeline",
            "pipeline": pipeline,
        }
    });
    apply(
        client,
        &resource(
            "apiextensions.crossplane.io/v2",
            "CompositeResourceDefinition",
            "compositeresourcedefinitions",
        ),
        &xrd,
        FIELD_MANAGER,
    )
    .await;
    apply(
        client,
        &resource(
            "apiextensions.crossplane.io/v1",
            "Composition",
            "compositions",
        ),
        &composition,
        FIELD_MANAGER,
    )
    .await;
    let xr = resource(&format!("{group}/v1"), kind, &plural);
    let all: Api<DynamicObject> = Api::all_with(client.clone(), &xr);
    let started = Instant::now();
    while all.list(&ListParams::default()).await.is_err() {
        assert!(started.elapsed() < TIMEOUT, "{kind} is never served");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    xr
}

fn is_ready(xr: &DynamicObject) -> bool {
    xr.data["status"]["conditions"].as_array().is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

/// Creates `XRS` XRs of `kind` in `namespace`; returns, per XR, the time from
/// its creation until it was first seen Ready.
async fn create_and_time(client: &Client, kind: &ApiResource, namespace: &str) -> Vec<Duration> {
    let xrs: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, kind);
    let mut created = BTreeMap::new();
    for i in 0..XRS {
        let name = format!("x{i:04}");
        let xr = json!({
            "apiVersion": kind.api_version, "kind": kind.kind,
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"size": "small"},
        });
        apply(client, kind, &xr, FIELD_MANAGER).await;
        created.insert(name, Instant::now());
    }
    let mut ready: BTreeMap<String, Duration> = BTreeMap::new();
    let started = Instant::now();
    while ready.len() < XRS {
        assert!(
            started.elapsed() < TIMEOUT,
            "only {} of {XRS} XRs in {namespace} became Ready",
            ready.len()
        );
        if let Ok(list) = xrs.list(&ListParams::default()).await {
            for xr in list.items.iter().filter(|x| is_ready(x)) {
                let name = xr.metadata.name.clone().unwrap_or_default();
                if let (false, Some(at)) = (ready.contains_key(&name), created.get(&name)) {
                    ready.insert(name, at.elapsed());
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ready.into_values().collect()
}

fn percentile(times: &[Duration], p: f64) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn loop_guest() -> Vec<u8> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fairness-guests");
    let path = plait_guest_build::build_guest("plait-test-guest-infinite-loop", &root, &out)
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::read(path).unwrap()
}

fn main() {
    // `cargo bench` passes --bench; a plain test run (`cargo test --benches`) does not.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio.block_on(bench());
}

async fn bench() {
    let cluster = TestCluster::shared().unwrap();
    let client = cluster.client().await;
    plait_kube::install_crds(&client, TIMEOUT).await.unwrap();
    let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
    let looping = runtime.load(&loop_guest()).unwrap();
    let mut functions = Functions::builtins(runtime.clone());
    functions.resolver = Arc::new(Resolver::builtins(runtime).with_local(LOOP_FUNCTION, looping));
    let slots = functions.share.slots();
    let controller_client = client.clone();
    tokio::spawn(async move {
        plait_kube::run(
            controller_client,
            functions,
            Timing::default(),
            std::future::pending(),
        )
        .await
        .unwrap();
    });
    // The looping function gets a 1 s deadline from its Function, as a
    // platform would set it.
    apply(
        &client,
        &resource("pkg.crossplane.io/v1", "Function", "functions"),
        &json!({
            "apiVersion": "pkg.crossplane.io/v1", "kind": "Function",
            "metadata": {"name": LOOP_FUNCTION, "annotations": {"limits.plait.dev/deadline": "1s"}},
            "spec": {"package": "registry.example.com/fns/loop:v1"},
        }),
        FIELD_MANAGER,
    )
    .await;
    let config_map = |name: &str| {
        json!({
            "name": name,
            "base": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"role": name}},
            "patches": [{"type": "FromCompositeFieldPath", "fromFieldPath": "spec.size", "toFieldPath": "data.size"}]
        })
    };
    let ordinary = api(
        &client,
        "ordinary.fairness.example.org",
        "Ordinary",
        json!([
            {"step": "compose", "functionRef": {"name": "function-patch-and-transform"},
             "input": {"apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources",
                       "resources": [config_map("a"), config_map("b"), config_map("c")]}},
            {"step": "ready", "functionRef": {"name": "function-auto-ready"}}
        ]),
    )
    .await;
    let looping = api(
        &client,
        "looping.fairness.example.org",
        "Looping",
        json!([{"step": "loop", "functionRef": {"name": LOOP_FUNCTION}}]),
    )
    .await;

    let alone_ns = cluster.namespace("tenant-b-alone").await;
    let alone = create_and_time(&client, &ordinary, &alone_ns).await;

    let a_ns = cluster.namespace("tenant-a").await;
    let a_xrs: Api<DynamicObject> = Api::namespaced_with(client.clone(), &a_ns, &looping);
    for i in 0..XRS {
        let xr = json!({
            "apiVersion": looping.api_version, "kind": looping.kind,
            "metadata": {"name": format!("loop{i:04}"), "namespace": a_ns},
            "spec": {"size": "small"},
        });
        apply(&client, &looping, &xr, FIELD_MANAGER).await;
    }
    // Let A's loops fill the call slots before B arrives.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let beside_ns = cluster.namespace("tenant-b-beside").await;
    let beside = create_and_time(&client, &ordinary, &beside_ns).await;
    let a_listed = a_xrs
        .list(&ListParams::default())
        .await
        .map(|l| l.items.len());

    let (p50_alone, p99_alone) = (percentile(&alone, 0.5), percentile(&alone, 0.99));
    let (p50_beside, p99_beside) = (percentile(&beside, 0.5), percentile(&beside, 0.99));
    println!("fairness: {XRS} ordinary XRs of tenant B, {slots} function-call slots");
    println!(
        "B alone:                  p50 {:>7.2} s   p99 {:>7.2} s",
        p50_alone.as_secs_f64(),
        p99_alone.as_secs_f64()
    );
    println!(
        "B beside A ({XRS} looping): p50 {:>7.2} s   p99 {:>7.2} s   (A's XRs: {:?})",
        p50_beside.as_secs_f64(),
        p99_beside.as_secs_f64(),
        a_listed.unwrap_or_default()
    );
    println!(
        "p99 beside / alone: {:.2} (goal <= 2.00)",
        p99_beside.as_secs_f64() / p99_alone.as_secs_f64()
    );
    println!(
        "peak RSS of this process (controller, its runtime and the bench's client): {:.0} MiB",
        peak_rss_mib()
    );
}
