//! Faults at scale: N XRs of the scale fixture (three ConfigMaps each) on a
//! control plane of their own, and one fault in the middle of each of three
//! rollouts:
//! 1. the XRs are created while plait runs; kube-apiserver is restarted
//!    once a third of them are Ready;
//! 2. the Composition is edited, so every XR moves to a new revision and
//!    rewrites its ConfigMaps; etcd is paused for 30 s once a third of the
//!    ConfigMaps are rewritten;
//! 3. it is edited again; plait is killed with SIGKILL once a third are
//!    rewritten, and started again.
//!
//! After each rollout every XR must be Ready on the newest revision and
//! reference exactly the three ConfigMaps it controls, none orphaned or
//! composed twice, and after the first no ConfigMap may have been deleted
//! or created again. Prints, per rollout, the time to converge, plait's API
//! requests per XR and in its busiest second, what kube-apiserver refused
//! with 429, and plait's peak memory.
//!
//! `cargo bench -p plait --bench faults` (starts its own test cluster).
//! `PLAIT_BENCH_XRS` sets N (default 10,000).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/kube_support.rs"]
mod kube_support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DynamicObject, ListParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube_support::{
    Controller, ScaleApis, apiserver_metrics, apply, apply_scale_fixture, by_labels,
    composition_problems, is_ready, largest_first, peak_rss_mib, resource, run_bench,
    scale_fixture, scrape, total,
};
use plait_controlplane::ControlPlane;
use serde_json::{Value, json};

const DEFAULT_XRS: usize = 10_000;
const PER_XR: usize = 3;
const FIELD_MANAGER: &str = "faults-bench";
const ETCD_PAUSE: Duration = Duration::from_secs(30);
/// How long one rollout may take, its fault included.
const TIMEOUT: Duration = Duration::from_secs(1800);
/// Parallel creators of XRs, as several clients of a platform would be.
const CREATORS: usize = 8;

fn main() {
    run_bench(bench());
}

/// What a watch of one kind holds, and how many deletions it saw.
struct Mirror {
    store: Store<DynamicObject>,
    deleted: Arc<Mutex<usize>>,
}

impl Mirror {
    fn start(api: &Api<DynamicObject>, kind: &kube::api::ApiResource, labels: &str) -> Mirror {
        let writer = reflector::store::Writer::new(kind.clone());
        let store = writer.as_reader();
        let deleted = Arc::new(Mutex::new(0));
        let counted = deleted.clone();
        let config = if labels.is_empty() {
            watcher::Config::default()
        } else {
            watcher::Config::default().labels(labels)
        };
        let events = watcher(api.clone(), config)
            .default_backoff()
            .map_ok(move |event| {
                if let watcher::Event::Delete(_) = &event {
                    *counted.lock().unwrap() += 1;
                }
                event
            })
            .reflect(writer);
        tokio::spawn(async move {
            // Errors are retried with backoff; the stream ends only with the process.
            events.for_each(|_| async {}).await;
        });
        Mirror { store, deleted }
    }

    /// What the watch holds now.
    fn state(&self) -> Vec<Arc<DynamicObject>> {
        self.store.state()
    }

    /// What the watch holds now, as JSON.
    fn objects(&self) -> Vec<Value> {
        self.store
            .state()
            .iter()
            .map(|o| serde_json::to_value(o.as_ref()).unwrap())
            .collect()
    }

    fn deleted(&self) -> usize {
        *self.deleted.lock().unwrap()
    }
}

/// The API requests plait's controllers made so far, across restarts (a
/// counter that went down belongs to a new process), and those of the
/// busiest second by verb and resource (per second of a longer gap between
/// samples).
#[derive(Default)]
struct Requests {
    total: f64,
    last: BTreeMap<String, f64>,
    busiest_second: BTreeMap<String, f64>,
}

impl Requests {
    /// Takes the counters `now`, `seconds` after the last sample.
    fn sample(&mut self, now: BTreeMap<String, f64>, seconds: f64) {
        let mut second = BTreeMap::new();
        for (key, count) in &now {
            let before = self.last.get(key).copied().unwrap_or_default();
            let delta = if *count >= before {
                count - before
            } else {
                *count
            };
            if delta > 0.0 {
                self.total += delta;
                second.insert(key.clone(), delta / seconds.max(1.0));
            }
        }
        let sum = |counts: &BTreeMap<String, f64>| counts.values().sum::<f64>();
        if sum(&second) > sum(&self.busiest_second) {
            self.busiest_second = second;
        }
        self.last = now;
    }

    /// The busiest second's total, and its largest parts.
    fn busiest(&self) -> (f64, String) {
        let parts = largest_first(self.busiest_second.clone())
            .into_iter()
            .take(4)
            .map(|(key, count)| {
                format!(
                    "{count:.0} {}",
                    key.split_whitespace().collect::<Vec<_>>().join(" ")
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        (self.busiest_second.values().sum(), parts)
    }
}

/// Samples plait's request counters at `probes` every second.
fn sample_requests(probes: Arc<Mutex<String>>, requests: Arc<Mutex<Requests>>) {
    tokio::spawn(async move {
        let mut last = Instant::now();
        loop {
            let address = probes.lock().unwrap().clone();
            let metrics = tokio::task::spawn_blocking(move || scrape(&address, "/metrics"))
                .await
                .unwrap();
            if metrics.starts_with("HTTP/1.1 200") {
                let now = by_labels(&metrics, "plait_api_requests_total", &["verb", "resource"]);
                let seconds = last.elapsed().as_secs_f64();
                last = Instant::now();
                requests.lock().unwrap().sample(now, seconds);
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
}

/// The Composition with every ConfigMap's base carrying `rollout`.
fn composition(rollout: Option<usize>) -> Value {
    let mut composition = scale_fixture("composition.yaml");
    if let Some(rollout) = rollout {
        for resource in composition["spec"]["pipeline"][0]["input"]["resources"]
            .as_array_mut()
            .unwrap()
        {
            resource["base"]["data"]["rollout"] = json!(rollout.to_string());
        }
    }
    composition
}

/// Where one rollout stands.
struct Progress {
    xrs: usize,
    converged_xrs: usize,
    composed: usize,
    rewritten: usize,
}

impl Progress {
    fn done(&self, n: usize) -> bool {
        self.xrs == n
            && self.converged_xrs == n
            && self.composed == PER_XR * n
            && self.rewritten == PER_XR * n
    }
}

struct Bench {
    n: usize,
    client: kube::Client,
    xrs: Mirror,
    composed: Mirror,
    revisions: Api<DynamicObject>,
    requests: Arc<Mutex<Requests>>,
    /// The ConfigMaps' UIDs after the first rollout, by name.
    first_uids: BTreeMap<String, String>,
}

impl Bench {
    async fn newest_revision(&self) -> Option<String> {
        let listed = self
            .revisions
            .list(&ListParams::default().labels("crossplane.io/composition-name=bench"))
            .await
            .ok()?;
        listed
            .items
            .iter()
            .max_by_key(|r| r.data["spec"]["revision"].as_i64().unwrap_or_default())
            .and_then(|r| r.metadata.name.clone())
    }

    /// Read from the watches' stores as they are, without copying them.
    async fn progress(&self, rollout: Option<usize>) -> Progress {
        let newest = self.newest_revision().await;
        let xrs = self.xrs.state();
        let converged_xrs = xrs
            .iter()
            .filter(|xr| {
                is_ready(xr)
                    && (rollout.is_none()
                        || xr.data["spec"]["crossplane"]["compositionRevisionRef"]["name"].as_str()
                            == newest.as_deref())
            })
            .count();
        let composed = self.composed.state();
        let want = rollout.map(|r| r.to_string());
        let rewritten = composed
            .iter()
            .filter(|c| c.data["data"]["rollout"].as_str() == want.as_deref())
            .count();
        Progress {
            xrs: xrs.len(),
            converged_xrs,
            composed: composed.len(),
            rewritten,
        }
    }

    /// Applies the Composition of `rollout` and waits until a third of the
    /// ConfigMaps have been rewritten by it: the middle of its rollout.
    async fn edit_composition(&self, rollout: usize) {
        let compositions = resource(
            "apiextensions.crossplane.io/v1",
            "Composition",
            "compositions",
        );
        let composition = composition(Some(rollout));
        apply(&self.client, &compositions, &composition, FIELD_MANAGER).await;
        self.wait(Some(rollout), "a third rewritten", |p| {
            p.rewritten >= PER_XR * self.n / 3
        })
        .await;
    }

    /// Waits until `done` holds for the rollout, checking every second.
    async fn wait(&self, rollout: Option<usize>, what: &str, done: impl Fn(&Progress) -> bool) {
        let started = Instant::now();
        loop {
            let progress = self.progress(rollout).await;
            if done(&progress) {
                return;
            }
            assert!(
                started.elapsed() < TIMEOUT,
                "{what}: after {TIMEOUT:?}, {} XRs, {} Ready on the newest revision, {} composed, {} rewritten",
                progress.xrs,
                progress.converged_xrs,
                progress.composed,
                progress.rewritten
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// Checks the state a finished rollout left and prints its figures;
    /// `peak_rss` says the controllers' peak memory.
    async fn report(&mut self, rollout: &str, started: Instant, fault: &str, peak_rss: &str) {
        let took = started.elapsed();
        let xrs = self.xrs.objects();
        let composed = self.composed.objects();
        let problems = composition_problems(&xrs, &composed, PER_XR);
        assert!(
            problems.is_empty(),
            "{rollout}: {} problems, the first:\n{}",
            problems.len(),
            problems[..problems.len().min(20)].join("\n")
        );
        let uids: BTreeMap<String, String> = composed
            .iter()
            .map(|c| {
                (
                    c["metadata"]["name"].as_str().unwrap().to_string(),
                    c["metadata"]["uid"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        if self.first_uids.is_empty() {
            self.first_uids = uids;
        } else {
            let replaced = self
                .first_uids
                .iter()
                .filter(|(name, uid)| uids.get(*name) != Some(*uid))
                .count();
            assert_eq!(
                replaced, 0,
                "{rollout}: ConfigMaps deleted or created again"
            );
            assert_eq!(self.composed.deleted(), 0, "{rollout}: ConfigMaps deleted");
            assert_eq!(
                uids.len(),
                self.first_uids.len(),
                "{rollout}: new ConfigMaps"
            );
        }
        let (requests, (busiest, busiest_parts)) = {
            let mut requests = self.requests.lock().unwrap();
            let figures = (requests.total, requests.busiest());
            *requests = Requests {
                last: std::mem::take(&mut requests.last),
                ..Requests::default()
            };
            figures
        };
        let rejected = total(
            &apiserver_metrics(&self.client).await,
            "apiserver_flowcontrol_rejected_requests_total",
            "",
        );
        println!("  {rollout} ({fault}):");
        println!("    converged after          {:>8.1} s", took.as_secs_f64());
        println!(
            "    XRs Ready, composed      {} of {}, {} ConfigMaps",
            self.xrs.state().iter().filter(|xr| is_ready(xr)).count(),
            self.n,
            composed.len()
        );
        println!(
            "    ConfigMaps deleted       {} (watched since the start)",
            self.composed.deleted()
        );
        println!(
            "    plait API requests       {:>8.2} per XR, {busiest:.0} in its busiest second ({busiest_parts})",
            requests / self.n as f64,
        );
        println!("    refused with 429 (total) {rejected:>8.0}");
        println!("    plait peak RSS           {peak_rss:>12}");
    }
}

/// The controller's peak RSS so far, as the bench prints it.
fn peak(controller: &Controller) -> String {
    format!(
        "{:.1} MiB",
        peak_rss_mib(controller.pid()).unwrap_or_default()
    )
}

async fn bench() {
    let n: usize = std::env::var("PLAIT_BENCH_XRS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_XRS);
    let cluster = ControlPlane::dedicated().unwrap();
    let client = cluster.client().await;
    let namespace = cluster.namespace("faults").await;
    let scratch = tempfile::tempdir().unwrap();
    let cache = scratch.path().join("cache");
    // PLAIT_BENCH_LOGS keeps the controllers' logs in a directory of its own.
    let logs = std::env::var("PLAIT_BENCH_LOGS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| scratch.path().to_path_buf());
    let log = |name: &str| logs.join(format!("{name}.log"));

    let mut controller = Controller::start(cluster.kubeconfig(), &cache, &log("first"), &[]);
    controller.wait_ready().await;
    let probes = Arc::new(Mutex::new(controller.probes().to_string()));
    let requests = Arc::new(Mutex::new(Requests::default()));
    sample_requests(probes.clone(), requests.clone());
    apply_scale_fixture(&client, FIELD_MANAGER).await;
    let ScaleApis {
        kind,
        xrs,
        config_maps,
    } = ScaleApis::served(&client, &namespace, TIMEOUT).await;
    let config_map_kind = resource("v1", "ConfigMap", "configmaps");
    let mut bench = Bench {
        n,
        client: client.clone(),
        xrs: Mirror::start(&xrs, &kind, ""),
        composed: Mirror::start(&config_maps, &config_map_kind, "crossplane.io/composite"),
        revisions: Api::all_with(
            client.clone(),
            &resource(
                "apiextensions.crossplane.io/v1",
                "CompositionRevision",
                "compositionrevisions",
            ),
        ),
        requests,
        first_uids: BTreeMap::new(),
    };
    println!("faults/{n} XRs x {PER_XR} composed resources:");

    // 1. Created while plait runs; kube-apiserver restarted mid-rollout.
    let started = Instant::now();
    let creators: Vec<_> = (0..CREATORS)
        .map(|creator| {
            let (client, kind, namespace) = (client.clone(), kind.clone(), namespace.clone());
            tokio::spawn(async move {
                for i in (creator..n).step_by(CREATORS) {
                    let xr = json!({
                        "apiVersion": "scale.example.org/v1", "kind": "Bench",
                        "metadata": {"name": format!("faults-{i:05}"), "namespace": namespace},
                        "spec": {"size": "small"}
                    });
                    apply_retrying(&client, &kind, &xr).await;
                }
            })
        })
        .collect();
    bench
        .wait(None, "a third Ready", |p| p.converged_xrs >= n / 3)
        .await;
    let restart = Instant::now();
    tokio::task::block_in_place(|| cluster.restart_apiserver()).unwrap();
    let restarted_in = restart.elapsed();
    for creator in creators {
        creator.await.unwrap();
    }
    bench.wait(None, "all Ready", |p| p.done(n)).await;
    let fault = format!(
        "kube-apiserver restarted at {:.0} s, serving again {:.1} s later",
        (restart - started).as_secs_f64(),
        restarted_in.as_secs_f64()
    );
    bench
        .report("created", started, &fault, &peak(&controller))
        .await;

    // 2. The Composition edited; etcd paused mid-rollout.
    let started = Instant::now();
    bench.edit_composition(1).await;
    let pause = Instant::now();
    tokio::task::block_in_place(|| cluster.pause_etcd(ETCD_PAUSE)).unwrap();
    bench.wait(Some(1), "rollout 1", |p| p.done(n)).await;
    let fault = format!(
        "etcd paused {} s at {:.0} s",
        ETCD_PAUSE.as_secs(),
        (pause - started).as_secs_f64()
    );
    bench
        .report("new revision", started, &fault, &peak(&controller))
        .await;

    // 3. Edited again; plait killed with SIGKILL mid-rollout and started again.
    let started = Instant::now();
    bench.edit_composition(2).await;
    let killed = Instant::now();
    let killed_peak = peak(&controller);
    controller.kill();
    let mut controller = Controller::start(cluster.kubeconfig(), &cache, &log("second"), &[]);
    *probes.lock().unwrap() = controller.probes().to_string();
    controller.wait_ready().await;
    bench.wait(Some(2), "rollout 2", |p| p.done(n)).await;
    let fault = format!(
        "plait killed (SIGKILL) at {:.0} s and started again",
        (killed - started).as_secs_f64()
    );
    let peaks = format!(
        "{killed_peak} (the process killed), {} (the new process)",
        peak(&controller)
    );
    bench
        .report("another revision", started, &fault, &peaks)
        .await;
    drop(controller);
    cluster.stop().unwrap();
}

/// Server-side applies `object` as the bench, trying again while the API
/// server is away (restarting) or refuses for now.
async fn apply_retrying(client: &kube::Client, kind: &kube::api::ApiResource, object: &Value) {
    use kube::api::{Patch, PatchParams};
    let api: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        object["metadata"]["namespace"].as_str().unwrap(),
        kind,
    );
    let name = object["metadata"]["name"].as_str().unwrap();
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let started = Instant::now();
    while let Err(e) = api.patch(name, &params, &Patch::Apply(object)).await {
        assert!(started.elapsed() < TIMEOUT, "creating {name}: {e}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
