//! What the tests and benchmarks that run `plait controller` against the
//! test cluster share: objects by server-side apply, the scale fixture,
//! the controller's probe address and endpoints, a controller serving the
//! admission webhook, whether an XR is Ready and when all are, a process's
//! peak memory and CPU time, Prometheus series summed by label, the API
//! server's own metrics, and how a benchmark binary runs.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a controller may take to install its CRDs and serve /readyz.
const READY_TIMEOUT: Duration = Duration::from_secs(300);

use futures::StreamExt;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::Value;

pub use plait_controlplane::{apply, resource};

/// The scale fixture's `name` (`tests/fixtures/scale/`): an XRD and a
/// Composition of three ConfigMaps, patch-and-transform then auto-ready.
pub fn scale_fixture(name: &str) -> Value {
    let path = format!(
        "{}/../../tests/fixtures/scale/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// Applies the scale fixture's XRD and Composition as `field_manager`.
pub async fn apply_scale_fixture(client: &kube::Client, field_manager: &str) {
    let xrds = resource(
        "apiextensions.crossplane.io/v2",
        "CompositeResourceDefinition",
        "compositeresourcedefinitions",
    );
    apply(client, &xrds, &scale_fixture("xrd.yaml"), field_manager).await;
    let compositions = resource(
        "apiextensions.crossplane.io/v1",
        "Composition",
        "compositions",
    );
    let composition = scale_fixture("composition.yaml");
    apply(client, &compositions, &composition, field_manager).await;
}

/// The scale fixture's XR kind, its XRs and the ConfigMaps they compose, in one namespace.
pub struct ScaleApis {
    pub kind: ApiResource,
    pub xrs: Api<DynamicObject>,
    pub config_maps: Api<DynamicObject>,
}

impl ScaleApis {
    /// The APIs in `namespace`, once the XR kind is served (its XRD is
    /// applied first); panics after `timeout`.
    pub async fn served(client: &kube::Client, namespace: &str, timeout: Duration) -> ScaleApis {
        let kind = resource("scale.example.org/v1", "Bench", "benches");
        let apis = ScaleApis {
            xrs: Api::namespaced_with(client.clone(), namespace, &kind),
            config_maps: Api::namespaced_with(
                client.clone(),
                namespace,
                &resource("v1", "ConfigMap", "configmaps"),
            ),
            kind,
        };
        let started = Instant::now();
        while apis.xrs.list(&ListParams::default()).await.is_err() {
            assert!(
                started.elapsed() < timeout,
                "the Bench kind is never served"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        apis
    }
}

/// A loopback address nothing listens on.
pub fn free_address() -> String {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string()
}

/// The response to a GET of `path` from the controller's probe address
/// (or another HTTP server on loopback, such as upstream Crossplane's
/// metrics), a chunked body decoded; empty while nothing answers there.
pub fn scrape(address: &str, path: &str) -> String {
    let Ok(mut stream) = TcpStream::connect(address) else {
        return String::new();
    };
    let _ = write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: plait\r\nConnection: close\r\n\r\n"
    );
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let Some(head_end) = response.windows(4).position(|w| w == b"\r\n\r\n") else {
        return String::from_utf8_lossy(&response).into_owned();
    };
    let head = String::from_utf8_lossy(&response[..head_end]).into_owned();
    let body = &response[head_end + 4..];
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_vec()
    };
    format!("{head}\r\n\r\n{}", String::from_utf8_lossy(&body))
}

/// An HTTP/1.1 chunked body's content: each chunk is its size in hex, CRLF,
/// the bytes, CRLF; a chunk of size 0 ends it.
fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut content = Vec::new();
    while let Some(line_end) = body.windows(2).position(|w| w == b"\r\n") {
        let size_field = String::from_utf8_lossy(&body[..line_end]);
        let size_hex = size_field.split(';').next().unwrap_or_default().trim();
        let Ok(size) = usize::from_str_radix(size_hex, 16) else {
            break;
        };
        let start = line_end + 2;
        if size == 0 || start + size > body.len() {
            break;
        }
        content.extend_from_slice(&body[start..start + size]);
        body = &body[(start + size + 2).min(body.len())..];
    }
    content
}

/// Starts `plait controller` against the cluster of `kubeconfig`, compiling
/// into `cache`, serving probes on `probes`, logging warnings to `stderr`,
/// with `extra` arguments.
pub fn start_controller(
    kubeconfig: &Path,
    cache: &Path,
    probes: &str,
    stderr: impl Into<Stdio>,
    extra: &[String],
) -> Child {
    Command::new(env!("CARGO_BIN_EXE_plait"))
        .arg("controller")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg(format!("--probe-address={probes}"))
        .args(extra)
        .env("PLAIT_CACHE_DIR", cache)
        // PLAIT_BENCH_LOG lets a bench's controllers log more (debug, info).
        .env(
            "PLAIT_LOG",
            std::env::var("PLAIT_BENCH_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// The last `n` lines of `path`.
pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// One `plait controller` process, killed when dropped.
pub struct Controller {
    child: Child,
    probes: String,
}

impl Controller {
    /// Starts `plait controller` as the controller bench does, its stderr
    /// in `log`, with `extra` arguments.
    pub fn start(kubeconfig: &Path, cache: &Path, log: &Path, extra: &[String]) -> Self {
        let log = std::fs::File::create(log).unwrap();
        Controller::start_logging_to(kubeconfig, cache, log, extra)
    }

    /// Starts `plait controller` as [`Self::start`] does, its stderr to `stderr`.
    pub fn start_logging_to(
        kubeconfig: &Path,
        cache: &Path,
        stderr: impl Into<Stdio>,
        extra: &[String],
    ) -> Self {
        let probes = free_address();
        let child = start_controller(kubeconfig, cache, &probes, stderr, extra);
        Controller { child, probes }
    }

    /// Its process ID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Where it serves its probes and metrics.
    pub fn probes(&self) -> &str {
        &self.probes
    }

    pub async fn wait_ready(&mut self) {
        let started = Instant::now();
        while !scrape(&self.probes, "/readyz").starts_with("HTTP/1.1 200") {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("the controller exited before it was ready: {status}");
            }
            assert!(
                started.elapsed() < READY_TIMEOUT,
                "the controller never became ready"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// SIGKILL, as the kernel's OOM killer or a node failure would end it.
    pub fn kill(mut self) -> std::process::ExitStatus {
        self.child.kill().unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `plait controller` serving the admission webhook on loopback with a
/// fresh self-signed certificate, and `deploy/webhook`'s configuration
/// registered as `name`, each webhook's client config pointed at it.
pub struct WebhookController {
    pub controller: Controller,
    _logs: LogsOnFailure,
    _scratch: tempfile::TempDir,
}

impl WebhookController {
    /// Starts it against `cluster` with `extra` arguments; `client` applies
    /// the configuration (by field manager `name`).
    pub async fn start(
        cluster: &plait_controlplane::ControlPlane,
        client: &kube::Client,
        name: &str,
        extra: &[String],
    ) -> WebhookController {
        use base64::Engine;
        let scratch = tempfile::tempdir().unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let certificate = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let (cert_file, key_file) = (
            scratch.path().join("tls.crt"),
            scratch.path().join("tls.key"),
        );
        std::fs::write(&cert_file, certificate.pem()).unwrap();
        std::fs::write(&key_file, key.serialize_pem()).unwrap();
        let webhook_address = free_address();
        let log = scratch.path().join("controller.log");
        let logs = LogsOnFailure(vec![log.clone()]);
        let mut args = vec![
            format!("--webhook-address={webhook_address}"),
            format!("--webhook-cert-file={}", cert_file.display()),
            format!("--webhook-key-file={}", key_file.display()),
        ];
        args.extend_from_slice(extra);
        let mut controller = Controller::start(
            cluster.kubeconfig(),
            &scratch.path().join("cache"),
            &log,
            &args,
        );
        controller.wait_ready().await;

        let shipped = std::fs::read_to_string(format!(
            "{}/../../deploy/components/webhook/validatingwebhookconfiguration.yaml",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let mut config: Value = serde_yaml_ng::from_str(&shipped).unwrap();
        config["metadata"] = serde_json::json!({"name": name});
        let ca = base64::engine::general_purpose::STANDARD.encode(certificate.pem());
        for webhook in config["webhooks"].as_array_mut().unwrap() {
            let path = webhook["clientConfig"]["service"]["path"]
                .as_str()
                .unwrap()
                .to_string();
            webhook["clientConfig"] = serde_json::json!(
                {"url": format!("https://{webhook_address}{path}"), "caBundle": ca}
            );
        }
        let configs = resource(
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
        );
        apply(client, &configs, &config, name).await;
        WebhookController {
            controller,
            _logs: logs,
            _scratch: scratch,
        }
    }
}

/// Prints the end of each controller's log if the test fails.
pub struct LogsOnFailure(pub Vec<PathBuf>);

impl Drop for LogsOnFailure {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for log in &self.0 {
                eprintln!("--- last lines of {} ---\n{}", log.display(), tail(log, 40));
            }
        }
    }
}

/// What is wrong with how the XRs `xrs` compose the objects `composed`
/// (everything that carries the `crossplane.io/composite` label), each XR
/// composing `per_xr`: an object with no single controller, or one whose
/// controller is no XR (orphaned); a composition resource name an XR
/// composes more than once (created twice); an XR whose references are not
/// `per_xr` objects it controls. Empty when all is well.
pub fn composition_problems(xrs: &[Value], composed: &[Value], per_xr: usize) -> Vec<String> {
    let name = |object: &Value| {
        object["metadata"]["name"]
            .as_str()
            .unwrap_or("<unnamed>")
            .to_string()
    };
    let uids: BTreeMap<&str, &Value> = xrs
        .iter()
        .map(|xr| (xr["metadata"]["uid"].as_str().unwrap_or_default(), xr))
        .collect();
    let mut problems = Vec::new();
    // (owner uid, composition resource name) → the objects composing it.
    let mut by_owner: BTreeMap<(&str, &str), Vec<String>> = BTreeMap::new();
    let mut owner_of: BTreeMap<String, &str> = BTreeMap::new();
    for object in composed {
        let controllers: Vec<&Value> = object["metadata"]["ownerReferences"]
            .as_array()
            .map(|refs| refs.iter().filter(|r| r["controller"] == true).collect())
            .unwrap_or_default();
        let [owner] = controllers.as_slice() else {
            problems.push(format!(
                "{} has {} controller references",
                name(object),
                controllers.len()
            ));
            continue;
        };
        let uid = owner["uid"].as_str().unwrap_or_default();
        match uids.get(uid) {
            Some(xr) if owner["name"] == xr["metadata"]["name"] && owner["kind"] == xr["kind"] => {}
            _ => problems.push(format!(
                "{} is orphaned: its controller {}/{} (uid {uid}) is no XR",
                name(object),
                owner["kind"],
                owner["name"],
            )),
        }
        let resource_name =
            object["metadata"]["annotations"]["crossplane.io/composition-resource-name"]
                .as_str()
                .unwrap_or("<none>");
        owner_of.insert(name(object), uid);
        by_owner
            .entry((uid, resource_name))
            .or_default()
            .push(name(object));
    }
    for ((uid, resource_name), names) in &by_owner {
        if names.len() > 1 {
            let owner = uids.get(uid).map_or("<gone>".to_string(), |xr| name(xr));
            problems.push(format!(
                "XR {owner} (uid {uid}) composes {resource_name:?} {} times: {names:?}",
                names.len()
            ));
        }
    }
    for xr in xrs {
        let uid = xr["metadata"]["uid"].as_str().unwrap_or_default();
        let refs = xr["spec"]["crossplane"]["resourceRefs"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if refs.len() != per_xr {
            problems.push(format!(
                "XR {} has {} resource references: {refs:?}",
                name(xr),
                refs.len()
            ));
        }
        for r in &refs {
            let target = r["name"].as_str().unwrap_or_default();
            if owner_of.get(target) != Some(&uid) {
                problems.push(format!(
                    "XR {} references {}/{target}, which it does not control (owner {:?})",
                    name(xr),
                    r["kind"],
                    owner_of.get(target)
                ));
            }
        }
    }
    problems
}

/// Whether `xr` says it is Ready.
pub fn is_ready(xr: &DynamicObject) -> bool {
    xr.data["status"]["conditions"]
        .as_array()
        .and_then(|conditions| conditions.iter().find(|c| c["type"] == "Ready"))
        .is_some_and(|c| c["status"] == "True")
}

/// Waits until all `n` XRs of `xrs` are Ready, watching them (so the wait
/// adds one LIST and one WATCH to the API server's load, not a LIST per
/// poll); returns when, measured from `since`, and the longest time the
/// Ready count did not rise before that. Panics after `timeout`.
pub async fn all_ready(
    xrs: &Api<DynamicObject>,
    n: usize,
    since: Instant,
    timeout: Duration,
) -> (Duration, Duration) {
    let mut ready = BTreeSet::new();
    let mut last_rise = since;
    let mut longest_stall = Duration::ZERO;
    let deadline = tokio::time::Instant::from_std(since + timeout);
    let mut events = watcher(xrs.clone(), watcher::Config::default())
        .default_backoff()
        .boxed();
    while ready.len() < n {
        let event = match tokio::time::timeout_at(deadline, events.next()).await {
            Ok(Some(Ok(event))) => event,
            // The watcher relists and resumes by itself after an error.
            Ok(Some(Err(_))) => continue,
            Ok(None) => panic!("the watch of the XRs ended"),
            Err(_) => panic!("only {} of {n} XRs became Ready", ready.len()),
        };
        let before = ready.len();
        match event {
            watcher::Event::Apply(xr) | watcher::Event::InitApply(xr) => {
                if is_ready(&xr) {
                    ready.insert(xr.name_any());
                } else {
                    ready.remove(&xr.name_any());
                }
            }
            watcher::Event::Delete(xr) => {
                ready.remove(&xr.name_any());
            }
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
        if ready.len() > before {
            longest_stall = longest_stall.max(last_rise.elapsed());
            last_rise = Instant::now();
        }
    }
    (since.elapsed(), longest_stall)
}

/// [`all_ready`] as a task started now, so that it sees the XRs become
/// Ready while they are still being created.
pub fn spawn_all_ready(
    xrs: &Api<DynamicObject>,
    n: usize,
    since: Instant,
    timeout: Duration,
) -> tokio::task::JoinHandle<(Duration, Duration)> {
    let xrs = xrs.clone();
    tokio::spawn(async move { all_ready(&xrs, n, since, timeout).await })
}

/// The CPU time process `pid` has used, user and system (`utime` +
/// `stime` in `/proc/<pid>/stat`), in seconds; `None` when it is gone.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which may hold spaces, start at `state` (field 3).
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |field: usize| fields.get(field - 3)?.parse::<f64>().ok();
    Some((ticks(14)? + ticks(15)?) / clock_ticks_per_second())
}

/// The kernel's clock ticks per second (`getconf CLK_TCK`), 100 when that fails.
fn clock_ticks_per_second() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|ticks| ticks.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// kube-apiserver's own Prometheus metrics (`GET /metrics`).
pub async fn apiserver_metrics(client: &kube::Client) -> String {
    let request = http::Request::get("/metrics").body(Vec::new()).unwrap();
    client.request_text(request).await.unwrap()
}

/// The sum of every series of `metric` whose labels contain `labels`.
pub fn total(metrics: &str, metric: &str, labels: &str) -> f64 {
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
pub fn by_label(metrics: &str, metric: &str, label: &str) -> String {
    by_labels(metrics, metric, &[label])
        .iter()
        .map(|(k, v)| format!("{}={v}", k.trim_end()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every series of `metric` summed by the values of `labels`, keyed by the
/// first value (padded to 7 characters, a verb's width) and the others'
/// non-empty values joined by `/`, e.g. `PATCH   benches/status`.
pub fn by_labels(metrics: &str, metric: &str, labels: &[&str]) -> BTreeMap<String, f64> {
    let label = |rest: &str, name: &str| -> Option<String> {
        Some(
            rest.split(&format!("{name}=\""))
                .nth(1)?
                .split('"')
                .next()?
                .to_string(),
        )
    };
    let mut counts = BTreeMap::<String, f64>::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix(metric) else {
            continue;
        };
        if !rest.starts_with('{') {
            continue;
        }
        let (Some(values), Some(count)) = (
            labels
                .iter()
                .map(|name| label(rest, name))
                .collect::<Option<Vec<_>>>(),
            rest.rsplit_once(' ')
                .and_then(|(_, c)| c.parse::<f64>().ok()),
        ) else {
            continue;
        };
        let key = match values.split_first() {
            Some((first, others)) if !others.is_empty() => {
                let others: Vec<&str> = others
                    .iter()
                    .map(String::as_str)
                    .filter(|v| !v.is_empty())
                    .collect();
                format!("{first:<7} {}", others.join("/"))
            }
            _ => values.concat(),
        };
        *counts.entry(key).or_default() += count;
    }
    counts
}

/// `counts` largest first, ties by key.
pub fn largest_first(counts: BTreeMap<String, f64>) -> Vec<(String, f64)> {
    let mut rows: Vec<_> = counts.into_iter().collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    rows
}

/// The peak resident memory of process `pid` in MiB (`VmHWM`); `None` when
/// the process is gone.
pub fn peak_rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kib| kib / 1024.0)
}

/// Runs `bench` on a multi-threaded runtime when `cargo bench` runs the
/// binary: it passes --bench, a plain test run (`cargo test --benches`)
/// does not, and then nothing runs.
pub fn run_bench(bench: impl std::future::Future<Output = ()>) {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio.block_on(bench);
}
