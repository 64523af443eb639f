//! What the tests and benchmarks that run `plait controller` against the
//! test cluster share: objects by server-side apply, the scale fixture,
//! the controller's probe address and endpoints, a controller serving the
//! admission webhook, whether an XR is Ready, the controller's peak memory,
//! and how a benchmark binary runs.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a controller may take to install its CRDs and serve /readyz.
const READY_TIMEOUT: Duration = Duration::from_secs(300);

use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde_json::Value;

pub use plait_testcluster::{apply, resource};

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

/// The response to a GET of `path` from the controller's probe address;
/// empty while nothing answers there.
pub fn scrape(address: &str, path: &str) -> String {
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
        .env("PLAIT_LOG", "warn")
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
        let probes = free_address();
        let log = std::fs::File::create(log).unwrap();
        let child = start_controller(kubeconfig, cache, &probes, log, extra);
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
        cluster: &plait_testcluster::TestCluster,
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

/// Whether `xr` says it is Ready.
pub fn is_ready(xr: &DynamicObject) -> bool {
    xr.data["status"]["conditions"]
        .as_array()
        .and_then(|conditions| conditions.iter().find(|c| c["type"] == "Ready"))
        .is_some_and(|c| c["status"] == "True")
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
