//! The controller at scale on a real API server: how long 100 XRs of three
//! composed resources each take to become Ready from creation, the
//! controller's peak memory, and how many reconciles it runs per second once
//! everything is in sync. Prints the figures.
//!
//! `cargo bench -p plait --bench controller` (starts its own test cluster).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use plait_testcluster::TestCluster;
use serde_json::{Value, json};

const XRS: usize = 100;
const IDLE_WINDOW: Duration = Duration::from_secs(30);
const TIMEOUT: Duration = Duration::from_secs(600);

fn resource(api_version: &str, kind: &str, plural: &str) -> ApiResource {
    let (group, version) = api_version.split_once('/').unwrap();
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: api_version.into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

async fn apply(client: &kube::Client, ar: &ApiResource, object: &Value) {
    let name = object["metadata"]["name"].as_str().unwrap();
    let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
        None => Api::all_with(client.clone(), ar),
    };
    api.patch(
        name,
        &PatchParams::apply("bench").force(),
        &Patch::Apply(object),
    )
    .await
    .unwrap();
}

fn scrape(address: &str, path: &str) -> String {
    let Ok(mut stream) = TcpStream::connect(address) else {
        return String::new();
    };
    let _ = write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: plait\r\nConnection: close\r\n\r\n"
    );
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

fn reconciles(metrics: &str) -> f64 {
    metrics
        .lines()
        .filter_map(|l| {
            l.strip_prefix("plait_reconciles_total")?
                .rsplit_once(' ')?
                .1
                .parse::<f64>()
                .ok()
        })
        .sum()
}

/// `result=count` for every result label of `plait_reconciles_total`.
fn reconciles_by_result(metrics: &str) -> String {
    metrics
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("plait_reconciles_total")?;
            let result = rest.split("result=\"").nth(1)?.split('"').next()?;
            let count = rest.rsplit_once(' ')?.1;
            Some(format!("{result}={count}"))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn peak_rss_mib(child: &Child) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib / 1024.0
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
    let namespace = cluster.namespace("bench").await;
    let cache = tempfile::tempdir().unwrap();
    let probes = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let mut controller = Command::new(env!("CARGO_BIN_EXE_plait"))
        .arg("controller")
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig())
        .arg(format!("--probe-address={probes}"))
        .env("PLAIT_CACHE_DIR", cache.path())
        .env("PLAIT_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();

    let started = Instant::now();
    while !scrape(&probes, "/readyz").starts_with("HTTP/1.1 200") {
        assert!(
            started.elapsed() < TIMEOUT,
            "the controller never became ready"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let xrd = json!({
        "apiVersion": "apiextensions.crossplane.io/v2",
        "kind": "CompositeResourceDefinition",
        "metadata": {"name": "benches.scale.example.org"},
        "spec": {
            "group": "scale.example.org",
            "names": {"kind": "Bench", "plural": "benches"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "referenceable": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "string"}}}
                }}}
            }]
        }
    });
    let config_map = |name: &str| {
        json!({
            "name": name,
            "base": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"role": name}},
            "patches": [{"type": "FromCompositeFieldPath", "fromFieldPath": "spec.size", "toFieldPath": "data.size"}]
        })
    };
    let composition = json!({
        "apiVersion": "apiextensions.crossplane.io/v1",
        "kind": "Composition",
        "metadata": {"name": "bench"},
        "spec": {
            "compositeTypeRef": {"apiVersion": "scale.example.org/v1", "kind": "Bench"},
            "mode": "Pipeline",
            "pipeline": [
                {"step": "compose", "functionRef": {"name": "function-patch-and-transform"},
                 "input": {"apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources",
                           "resources": [config_map("a"), config_map("b"), config_map("c")]}},
                {"step": "ready", "functionRef": {"name": "function-auto-ready"}}
            ]
        }
    });
    let xrds = resource(
        "apiextensions.crossplane.io/v2",
        "CompositeResourceDefinition",
        "compositeresourcedefinitions",
    );
    apply(&client, &xrds, &xrd).await;
    apply(
        &client,
        &resource(
            "apiextensions.crossplane.io/v1",
            "Composition",
            "compositions",
        ),
        &composition,
    )
    .await;
    let bench_kind = resource("scale.example.org/v1", "Bench", "benches");
    let xrs: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &bench_kind);
    let started = Instant::now();
    while xrs.list(&ListParams::default()).await.is_err() {
        assert!(
            started.elapsed() < TIMEOUT,
            "the Bench kind is never served"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let created = Instant::now();
    for i in 0..XRS {
        let xr = json!({
            "apiVersion": "scale.example.org/v1", "kind": "Bench",
            "metadata": {"name": format!("bench-{i:03}"), "namespace": namespace},
            "spec": {"size": "small"}
        });
        apply(&client, &bench_kind, &xr).await;
    }
    let submitted = created.elapsed();
    loop {
        let list = xrs.list(&ListParams::default()).await.unwrap();
        let ready = list
            .items
            .iter()
            .filter(|xr| {
                xr.data["status"]["conditions"].as_array().is_some_and(|c| {
                    c.iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                })
            })
            .count();
        if ready == XRS {
            break;
        }
        assert!(
            created.elapsed() < TIMEOUT,
            "only {ready} of {XRS} XRs became Ready"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let all_ready = created.elapsed();

    // Let the last status writes settle before measuring the idle rate.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = reconciles(&scrape(&probes, "/metrics"));
    tokio::time::sleep(IDLE_WINDOW).await;
    let metrics = scrape(&probes, "/metrics");
    let after = reconciles(&metrics);
    let idle_rate = (after - before) / IDLE_WINDOW.as_secs_f64();
    let rss = peak_rss_mib(&controller);
    let _ = controller.kill();
    let _ = controller.wait();

    println!("controller/{XRS} XRs x 3 composed resources:");
    println!(
        "  created (API calls)      {:>8.2} s",
        submitted.as_secs_f64()
    );
    println!(
        "  all Ready from creation  {:>8.2} s",
        all_ready.as_secs_f64()
    );
    println!(
        "  per XR                   {:>8.1} ms",
        all_ready.as_secs_f64() * 1000.0 / XRS as f64
    );
    println!(
        "  reconciles in total      {:>8.0} ({})",
        after,
        reconciles_by_result(&metrics)
    );
    println!(
        "  idle reconciles/s        {:>8.3} (over {} s)",
        idle_rate,
        IDLE_WINDOW.as_secs()
    );
    println!("  controller peak RSS      {:>8.1} MiB", rss);
}
