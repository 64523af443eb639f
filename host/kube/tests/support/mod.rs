//! The harness every controller test binary shares: one API server and
//! garbage collector per binary, with plait's controller running against it.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

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

/// The shared cluster, with plait's controller running against it and
/// serving the built-in functions and [`COPY_REQUIRED`].
pub fn cluster() -> &'static TestCluster {
    static STARTED: OnceLock<()> = OnceLock::new();
    let cluster = TestCluster::shared().expect("test cluster");
    STARTED.get_or_init(|| {
        start_controller(cluster, |_| async {
            let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
            let copy = runtime.load(&copy_required_guest()).unwrap();
            let resolver = Resolver::builtins(runtime.clone()).with_local(COPY_REQUIRED, copy);
            let mut functions = Functions::builtins(runtime);
            functions.resolver = Arc::new(resolver);
            (functions, ())
        })
    });
    cluster
}

/// Runs plait's controller against `cluster` on a thread of its own, with
/// the functions `setup` serves once plait's CRDs are installed; returns what
/// `setup` returns beside it. XRs are polled every minute, so a test that
/// sees a change sooner saw a watch or a requeue, not a poll.
pub fn start_controller<T, F, Fut>(cluster: &'static TestCluster, setup: F) -> T
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
    cluster: &'static TestCluster,
    options: Options,
    setup: F,
) -> T
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
    cluster: &'static TestCluster,
    options: Options,
    setup: F,
) -> T
where
    T: Send + 'static,
    F: FnOnce(Client) -> Fut + Send + 'static,
    Fut: Future<Output = (Functions, T)> + Send,
{
    let config = cluster.config();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
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
            plait_kube::run(client, functions, options, std::future::pending())
                .await
                .unwrap();
        });
    });
    ready_rx
        .recv_timeout(TIMEOUT)
        .expect("plait CRDs installed")
}

/// Runs plait's controller with the built-in functions, polling every XR
/// every `poll`.
pub fn start_builtins_polling(cluster: &'static TestCluster, poll: Duration) {
    start_controller_as_given(
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
