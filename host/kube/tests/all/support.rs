//! The harness the controller tests share: the binary's shared API server
//! and garbage collector with plait's controller running against it
//! ([`cluster`]), controllers of a test's own ([`start_controller`] and its
//! variants, stopped when their [`Controller`] is dropped), and a process of
//! a test's own for the tests that read the controller's process-wide
//! metrics ([`in_own_process`]).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use plait_functions::Resolver;
use plait_kube::{Functions, Options, Timing};
use plait_runtime::{Runtime, RuntimeConfig};
use plait_testcluster::TestCluster;
use serde_json::Value;

pub const TIMEOUT: Duration = Duration::from_secs(120);
/// How often the test controller polls an XR that nothing else changed.
pub const POLL_INTERVAL: Duration = Duration::from_secs(60);

/// The function the shared controller serves from `tests/guests/copy-required`.
pub const COPY_REQUIRED: &str = "fn-copy-required";

fn copy_required_guest() -> Vec<u8> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("support-guests");
    let path = plait_guest_build::build_guest("plait-test-guest-copy-required", &root, &out)
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::read(path).unwrap()
}

/// The binary's shared cluster, with plait's controller running against it
/// and serving the built-in functions and [`COPY_REQUIRED`]. The tests on it
/// make their own XRDs (groups of their own), Compositions and namespaces; a
/// test that needs another controller runs it on a cluster of its own
/// ([`TestCluster::dedicated`]), since two controllers would both reconcile
/// every XR.
pub fn cluster() -> &'static TestCluster {
    static STARTED: OnceLock<Controller> = OnceLock::new();
    let cluster = TestCluster::shared().expect("test cluster");
    STARTED.get_or_init(|| {
        let (controller, ()) = start_controller(cluster, |_| async {
            let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
            let copy = runtime.load(&copy_required_guest()).unwrap();
            let resolver = Resolver::builtins(runtime.clone()).with_local(COPY_REQUIRED, copy);
            let mut functions = Functions::builtins(runtime);
            functions.resolver = Arc::new(resolver);
            (functions, ())
        });
        controller
    });
    cluster
}

/// plait's controller, running on a thread of its own. Dropping it stops
/// the controller and waits for it, so a test's own cluster can be stopped
/// after it without the controller retrying against a dead API server.
#[must_use = "the controller stops when this is dropped"]
pub struct Controller {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Controller {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            // A controller that panicked has said why in the test's output.
            let _ = thread.join();
        }
    }
}

/// Runs plait's controller against `cluster` on a thread of its own, with
/// the functions `setup` serves once plait's CRDs are installed; returns the
/// running controller and what `setup` returns. XRs are polled every
/// minute, so a test that sees a change sooner saw a watch or a requeue, not
/// a poll.
pub fn start_controller<T, F, Fut>(cluster: &TestCluster, setup: F) -> (Controller, T)
where
    T: Send + 'static,
    F: FnOnce(Client) -> Fut + Send + 'static,
    Fut: Future<Output = (Functions, T)> + Send,
{
    start_controller_with(cluster, Options::default(), setup)
}

/// The controller's warnings (or what `RUST_LOG` asks for) in the test's
/// output, shown when it fails.
fn show_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // Another test of the binary may have set it already.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_test_writer()
        .try_init();
}

/// [`start_controller`] with `options` (their timing replaced by the tests').
pub fn start_controller_with<T, F, Fut>(
    cluster: &TestCluster,
    options: Options,
    setup: F,
) -> (Controller, T)
where
    T: Send + 'static,
    F: FnOnce(Client) -> Fut + Send + 'static,
    Fut: Future<Output = (Functions, T)> + Send,
{
    show_logs();
    let options = Options {
        timing: Timing {
            poll_interval: POLL_INTERVAL,
            ..Timing::default()
        },
        ..options
    };
    start_controller_as_given(cluster, options, setup)
}

/// [`start_controller`] with `options` as given, timing included.
pub fn start_controller_as_given<T, F, Fut>(
    cluster: &TestCluster,
    options: Options,
    setup: F,
) -> (Controller, T)
where
    T: Send + 'static,
    F: FnOnce(Client) -> Fut + Send + 'static,
    Fut: Future<Output = (Functions, T)> + Send,
{
    let config = cluster.config();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        tokio.block_on(async move {
            let client = Client::try_from(config).unwrap();
            plait_kube::install_crds(&client, TIMEOUT).await.unwrap();
            let (functions, ready) = setup(client.clone()).await;
            ready_tx.send(ready).unwrap();
            let shutdown = async move {
                let _ = stopped.await;
            };
            plait_kube::run(client, functions, options, shutdown)
                .await
                .unwrap();
        });
    });
    let ready = ready_rx
        .recv_timeout(TIMEOUT)
        .expect("plait CRDs installed");
    let controller = Controller {
        stop: Some(stop),
        thread: Some(thread),
    };
    (controller, ready)
}

/// Runs plait's controller with the built-in functions, polling every XR
/// every `poll`.
pub fn start_builtins_polling(cluster: &TestCluster, poll: Duration) -> Controller {
    let (controller, ()) = start_controller_as_given(
        cluster,
        Options::from(Timing {
            poll_interval: poll,
            ..Timing::default()
        }),
        |_| async {
            (
                Functions::builtins(Runtime::new(RuntimeConfig::default()).unwrap()),
                (),
            )
        },
    );
    controller
}

/// The environment variable naming the test a process of its own runs.
const OWN_PROCESS: &str = "PLAIT_TEST_OWN_PROCESS";

/// For a test that reads the controller's metrics, which count what every
/// controller of the process did: in the test binary's run, runs the test
/// `name` (its path as `cargo test` lists it, such as `idle::polls`) alone in
/// a new process of this binary, with a cluster of its own, and fails unless
/// it passed there; returns `false`, as the caller's body must not run.
/// Returns `true` in that process, where the body runs.
pub fn in_own_process(name: &str) -> bool {
    if std::env::var_os(OWN_PROCESS).is_some_and(|running| running == name) {
        return true;
    }
    let binary = std::env::current_exe().unwrap();
    let output = std::process::Command::new(&binary)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(OWN_PROCESS, name)
        .output()
        .unwrap_or_else(|e| panic!("running {} {name}: {e}", binary.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{name} in a process of its own ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    false
}

/// The sum of the series of the metric `name` (a prefix such as
/// `plait_reconciles_total{`) whose lines `keep` accepts.
pub fn metric_sum(metrics: &str, name: &str, keep: impl Fn(&str) -> bool) -> f64 {
    metrics
        .lines()
        .filter(|line| line.starts_with(name) && keep(line))
        .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// Measures with `measure` at the start and end of windows of `window`
/// until `quiet(before, after)` accepts one; fails after `timeout` with
/// what `quiet` said of each window.
pub async fn quiet_window<M>(
    window: Duration,
    timeout: Duration,
    mut measure: impl FnMut() -> M,
    quiet: impl Fn(&M, &M) -> Result<(), String>,
) {
    let started = std::time::Instant::now();
    let mut said = Vec::new();
    loop {
        let before = measure();
        tokio::time::sleep(window).await;
        let after = measure();
        match quiet(&before, &after) {
            Ok(()) => return,
            Err(why) => said.push(why),
        }
        assert!(
            started.elapsed() < timeout,
            "no quiet window of {window:?} in {timeout:?}:\n{}",
            said.join("\n")
        );
    }
}

/// Polls `check` until it returns `Some`, failing with `what` after [`TIMEOUT`].
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = std::time::Instant::now();
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(start.elapsed() < TIMEOUT, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

pub use plait_testcluster::resource;

pub fn api(client: &Client, ar: &ApiResource, namespace: Option<&str>) -> Api<DynamicObject> {
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
        None => Api::all_with(client.clone(), ar),
    }
}

pub fn yaml(path: &str) -> Value {
    let text =
        std::fs::read_to_string(format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    serde_yaml_ng::from_str(&text).unwrap()
}

/// A cluster-scoped EnvironmentConfig with `labels` and `data`.
pub fn environment_config(name: &str, labels: Value, data: Value) -> Value {
    serde_json::json!({
        "apiVersion": "apiextensions.crossplane.io/v1beta1", "kind": "EnvironmentConfig",
        "metadata": {"name": name, "labels": labels},
        "data": data,
    })
}

pub async fn create(client: &Client, object: &Value) -> Value {
    let api_version = object["apiVersion"].as_str().unwrap();
    let kind = object["kind"].as_str().unwrap();
    let plural = match kind {
        "CompositeResourceDefinition" => "compositeresourcedefinitions".to_string(),
        "Composition" => "compositions".to_string(),
        other => format!("{}s", other.to_lowercase()),
    };
    let ar = resource(api_version, kind, &plural);
    let namespace = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str);
    let dynamic: DynamicObject = serde_json::from_value(object.clone()).unwrap();
    let created = api(client, &ar, namespace)
        .create(&PostParams::default(), &dynamic)
        .await
        .unwrap_or_else(|e| panic!("create {kind}: {e}"));
    serde_json::to_value(created).unwrap()
}

/// The object `name` as JSON, or `None` when it does not exist.
pub async fn get(api: &Api<DynamicObject>, name: &str) -> Option<Value> {
    api.get_opt(name)
        .await
        .unwrap()
        .map(|o| serde_json::to_value(o).unwrap())
}

pub fn condition<'a>(xr: &'a Value, type_: &str) -> Option<&'a Value> {
    xr.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// The field managers of an object's main resource (its status writers left out).
pub fn spec_managers(object: &impl kube::Resource) -> Vec<String> {
    object
        .meta()
        .managed_fields
        .iter()
        .flatten()
        .filter(|entry| entry.subresource.as_deref().unwrap_or_default().is_empty())
        .filter_map(|entry| entry.manager.clone())
        .collect()
}
