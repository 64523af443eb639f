//! Upstream Crossplane core, run out of cluster against a [`ControlPlane`]:
//! the same cluster a test hands to `plait controller`, so a test can let
//! either of them own the XRs and switch between them.
//!
//! What runs, all on 127.0.0.1:
//! - `crossplane core init` once, which installs upstream's CRDs (from the
//!   Crossplane Go module) as upstream's installer does;
//! - the functions (`function-patch-and-transform`, `function-auto-ready`)
//!   as gRPC servers with mutual TLS (`--tls-certs-dir`), each with a
//!   Function and an active FunctionRevision whose `status.endpoint` points
//!   at it, both paused (`crossplane.io/paused`) so that core's package
//!   manager leaves them as written;
//! - `crossplane core start --package-runtime=External
//!   --enable-webhooks=false` with the client certificate core dials the
//!   functions with (`TLS_CLIENT_CERTS_DIR`), started and stopped at will.
//!
//! The binaries come from `tests/differential/build-upstream.sh` (built from
//! Go modules and cached under `~/.cache/plait/`). Each process runs under a
//! small bash watchdog whose stdin is a pipe from the test process: closing
//! it (a stop, a drop, or the test process ending in any way) stops the
//! process with SIGTERM, then SIGKILL after 15 s.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ApiResource, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::{ControlPlane, ControlPlaneError, alive, built, free_port};

/// The script that builds (or finds) upstream's binaries; it prints their directory.
const BUILD_SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/differential/build-upstream.sh"
);
/// The core the script builds, whose CRDs `crossplane core init` installs.
const CORE_MODULE: &str = "github.com/crossplane/crossplane/v2@v2.3.4";
const CORE: &str = "crossplane-core";

/// The functions served, as (Function name, binary, package).
const FUNCTIONS: [(&str, &str, &str); 2] = [
    (
        "function-patch-and-transform",
        "function-patch-and-transform",
        "xpkg.crossplane.io/crossplane-contrib/function-patch-and-transform:v0.10.7",
    ),
    (
        "function-auto-ready",
        "function-auto-ready",
        "xpkg.crossplane.io/crossplane-contrib/function-auto-ready:v0.7.0",
    ),
];

/// The namespace core runs in (its `POD_NAMESPACE`), as upstream's chart installs it.
pub const UPSTREAM_NAMESPACE: &str = "crossplane-system";
/// The field manager the harness writes Functions and FunctionRevisions with.
const FIELD_MANAGER: &str = "plait-controlplane";
const PAUSED: &str = "crossplane.io/paused";
/// The label core's function runner finds a Function's revisions by.
const PARENT_PACKAGE: &str = "pkg.crossplane.io/package";

/// Bounds on a hang, not performance assertions: several builders share two cores.
const INIT_ATTEMPTS: u32 = 10;
const FUNCTION_READY: Duration = Duration::from_secs(60);
const CORE_READY: Duration = Duration::from_secs(180);
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `$2…` with its output appended to `$1`, reports its pid on stdout,
/// and stops it when stdin reaches end of file: SIGTERM, then SIGKILL after
/// 15 s; exits with its status.
const WATCHDOG: &str = r#"
log=$1
shift
"$@" </dev/null >>"$log" 2>&1 &
pid=$!
echo "$pid"
while read -r _; do :; done
kill -TERM "$pid" 2>/dev/null
for _ in $(seq 150); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
kill -KILL "$pid" 2>/dev/null
wait "$pid"
"#;

/// Why upstream Crossplane could not be installed, started or stopped.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error(transparent)]
    Build(#[from] ControlPlaneError),
    #[error("{what}: {message}")]
    Io { what: String, message: String },
    #[error("generating the {what}: {message}")]
    Certificate { what: &'static str, message: String },
    #[error("{what}: {message}")]
    Api { what: String, message: String },
    #[error("crossplane core init failed {attempts} times; last lines of {log}:\n{tail}")]
    Init {
        attempts: u32,
        log: String,
        tail: String,
    },
    #[error("{component} was not ready after {seconds}s; last lines of {log}:\n{tail}")]
    NotReady {
        component: String,
        seconds: u64,
        log: String,
        tail: String,
    },
    #[error("{component} exited during startup; last lines of {log}:\n{tail}")]
    Exited {
        component: String,
        log: String,
        tail: String,
    },
}

type Result<T, E = UpstreamError> = std::result::Result<T, E>;

fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> UpstreamError {
    let what = what.into();
    move |e| UpstreamError::Io {
        what,
        message: e.to_string(),
    }
}

fn api_err(what: impl Into<String>) -> impl FnOnce(kube::Error) -> UpstreamError {
    let what = what.into();
    move |e| UpstreamError::Api {
        what,
        message: e.to_string(),
    }
}

/// One process under the watchdog.
struct Watched {
    name: String,
    pid: u32,
    log: PathBuf,
    watchdog: Child,
    stdin: Option<ChildStdin>,
}

impl Watched {
    fn spawn(name: &str, argv: &[String], env: &[(&str, String)], log: &Path) -> Result<Self> {
        let mut command = Command::new("bash");
        command
            .args(["-c", WATCHDOG, "plait-upstream-watchdog"])
            .arg(log)
            .args(argv)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut watchdog = command
            .spawn()
            .map_err(io_err(format!("starting {name} under its watchdog")))?;
        let stdin = watchdog.stdin.take();
        let mut line = String::new();
        if let Some(stdout) = watchdog.stdout.take() {
            BufReader::new(stdout)
                .read_line(&mut line)
                .map_err(io_err(format!("reading {name}'s pid from its watchdog")))?;
        }
        let pid = line.trim().parse().map_err(|_| UpstreamError::Io {
            what: format!("starting {name}"),
            message: format!("the watchdog replied {line:?} instead of a pid"),
        })?;
        Ok(Watched {
            name: name.to_string(),
            pid,
            log: log.to_path_buf(),
            watchdog,
            stdin,
        })
    }

    fn tail(&self) -> String {
        tail(&self.log, 30)
    }

    fn exited(&self) -> UpstreamError {
        UpstreamError::Exited {
            component: self.name.clone(),
            log: self.log.display().to_string(),
            tail: self.tail(),
        }
    }

    fn not_ready(&self, limit: Duration) -> UpstreamError {
        UpstreamError::NotReady {
            component: self.name.clone(),
            seconds: limit.as_secs(),
            log: self.log.display().to_string(),
            tail: self.tail(),
        }
    }

    /// Polls `ready` until it holds, failing when the process exits or `limit` passes.
    async fn wait_ready(&self, limit: Duration, mut ready: impl FnMut() -> bool) -> Result<()> {
        let started = Instant::now();
        while !ready() {
            if !alive(self.pid) {
                return Err(self.exited());
            }
            if started.elapsed() > limit {
                return Err(self.not_ready(limit));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Ok(())
    }

    /// Closes the watchdog's stdin and waits for it to stop the process.
    fn stop(&mut self) -> Result<ExitStatus> {
        drop(self.stdin.take());
        let started = Instant::now();
        loop {
            if let Some(status) = self
                .watchdog
                .try_wait()
                .map_err(io_err(format!("waiting for {} to stop", self.name)))?
            {
                return Ok(status);
            }
            if started.elapsed() > STOP_TIMEOUT {
                let _ = self.watchdog.kill();
                return Err(UpstreamError::Io {
                    what: format!("stopping {}", self.name),
                    message: format!("its watchdog did not exit in {}s", STOP_TIMEOUT.as_secs()),
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// Upstream Crossplane core and its functions against one [`ControlPlane`];
/// everything it started stops, and its directory (certificates, logs, the
/// package cache) is removed, when it is dropped.
pub struct UpstreamCrossplane {
    dir: tempfile::TempDir,
    bin: PathBuf,
    kubeconfig: PathBuf,
    health_port: u16,
    metrics_port: u16,
    functions: Vec<Watched>,
    core: Option<Watched>,
}

impl std::fmt::Debug for UpstreamCrossplane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamCrossplane")
            .field("dir", &self.dir.path())
            .field("core", &self.core.as_ref().map(|c| c.pid))
            .finish_non_exhaustive()
    }
}

impl UpstreamCrossplane {
    /// Builds upstream (or finds its cached build), runs `crossplane core
    /// init` against `cluster`, and serves the functions with their Function
    /// and FunctionRevision objects. Core itself starts with [`Self::start_core`].
    pub async fn install(cluster: &ControlPlane) -> Result<UpstreamCrossplane> {
        let names: Vec<&str> = std::iter::once(CORE)
            .chain(FUNCTIONS.iter().map(|(_, binary, _)| *binary))
            .collect();
        let bin = built(BUILD_SCRIPT, &names, "20 to 40 minutes")?;
        let dir = tempfile::Builder::new()
            .prefix("plait-upstream-")
            .tempdir()
            .map_err(io_err("creating the upstream Crossplane directory"))?;
        let mut upstream = UpstreamCrossplane {
            dir,
            bin,
            kubeconfig: cluster.kubeconfig().to_path_buf(),
            health_port: free_port()?,
            metrics_port: free_port()?,
            functions: Vec::new(),
            core: None,
        };
        let client = cluster.client().await;
        create_namespace(&client, UPSTREAM_NAMESPACE).await?;
        upstream.init().await?;
        upstream.write_certificates()?;
        for (name, binary, package) in FUNCTIONS {
            upstream
                .serve_function(&client, name, binary, package)
                .await?;
        }
        Ok(upstream)
    }

    /// Runs `crossplane core init` until it succeeds: it applies the CRDs and
    /// then objects of their kinds, which fails until the CRDs are established.
    async fn init(&self) -> Result<()> {
        let crds = upstream_crds()?;
        let log = self.dir.path().join("init.log");
        for _ in 0..INIT_ATTEMPTS {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)
                .map_err(io_err(log.display().to_string()))?;
            let status = Command::new(self.bin.join(CORE))
                .args(["core", "init"])
                .env("KUBECONFIG", &self.kubeconfig)
                .env("POD_NAMESPACE", UPSTREAM_NAMESPACE)
                .env("ENABLE_WEBHOOKS", "false")
                .env("CRDS_PATH", &crds)
                .env("TLS_CA_SECRET_NAME", "crossplane-root-ca")
                .env("TLS_CLIENT_SECRET_NAME", "crossplane-tls-client")
                .stdin(Stdio::null())
                .stdout(
                    file.try_clone()
                        .map_err(io_err(log.display().to_string()))?,
                )
                .stderr(file)
                .status()
                .map_err(io_err("running crossplane core init"))?;
            if status.success() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        Err(UpstreamError::Init {
            attempts: INIT_ATTEMPTS,
            log: log.display().to_string(),
            tail: tail(&log, 30),
        })
    }

    fn tls_dir(&self, side: &str) -> PathBuf {
        self.dir.path().join("tls").join(side)
    }

    /// One CA; a client certificate for core (`TLS_CLIENT_CERTS_DIR`) and a
    /// serving certificate for 127.0.0.1 for the functions (`--tls-certs-dir`),
    /// each directory with `ca.crt`, `tls.crt` and `tls.key` as both expect.
    fn write_certificates(&self) -> Result<()> {
        use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, KeyPair, SanType};
        let err = |what: &'static str| {
            move |e: rcgen::Error| UpstreamError::Certificate {
                what,
                message: e.to_string(),
            }
        };
        let ca = crate::certificate_authority("plait-upstream-ca").map_err(err("functions' CA"))?;

        let mut client = CertificateParams::new(vec!["crossplane.crossplane-system".to_string()])
            .map_err(err("core's client certificate names"))?;
        client
            .distinguished_name
            .push(DnType::CommonName, "crossplane");
        client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let client_key = KeyPair::generate().map_err(err("core's client key"))?;
        let client_cert = client
            .signed_by(&client_key, &ca)
            .map_err(err("core's client certificate"))?;

        let mut server = CertificateParams::new(vec!["localhost".to_string()])
            .map_err(err("functions' serving certificate names"))?;
        server
            .subject_alt_names
            .push(SanType::IpAddress(Ipv4Addr::LOCALHOST.into()));
        server
            .distinguished_name
            .push(DnType::CommonName, "plait-upstream-functions");
        server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server_key = KeyPair::generate().map_err(err("functions' serving key"))?;
        let server_cert = server
            .signed_by(&server_key, &ca)
            .map_err(err("functions' serving certificate"))?;

        for (side, cert, key) in [
            ("client", client_cert.pem(), client_key.serialize_pem()),
            ("server", server_cert.pem(), server_key.serialize_pem()),
        ] {
            let dir = self.tls_dir(side);
            std::fs::create_dir_all(&dir).map_err(io_err(dir.display().to_string()))?;
            for (file, contents) in [("ca.crt", ca.pem()), ("tls.crt", cert), ("tls.key", key)] {
                let path = dir.join(file);
                std::fs::write(&path, contents).map_err(io_err(path.display().to_string()))?;
            }
        }
        Ok(())
    }

    /// Serves function `name` on a free loopback port and writes its paused
    /// Function and active FunctionRevision, the revision's status pointing at it.
    async fn serve_function(
        &mut self,
        client: &kube::Client,
        name: &str,
        binary: &str,
        package: &str,
    ) -> Result<()> {
        let port = free_port()?;
        let endpoint = format!("127.0.0.1:{port}");
        let server = Watched::spawn(
            name,
            &[
                self.bin.join(binary).display().to_string(),
                format!("--tls-certs-dir={}", self.tls_dir("server").display()),
                format!("--address={endpoint}"),
            ],
            &[],
            &self.dir.path().join(format!("{name}.log")),
        )?;
        server
            .wait_ready(FUNCTION_READY, || {
                TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok()
            })
            .await?;
        self.functions.push(server);

        let functions: Api<DynamicObject> =
            Api::all_with(client.clone(), &pkg_resource("Function", "functions"));
        let function = functions
            .patch(
                name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(json!({
                    "apiVersion": "pkg.crossplane.io/v1",
                    "kind": "Function",
                    "metadata": {"name": name, "annotations": {PAUSED: "true"}},
                    "spec": {"package": package, "skipDependencyResolution": true},
                })),
            )
            .await
            .map_err(api_err(format!("applying Function {name}")))?;
        let uid = function.metadata.uid.unwrap_or_default();

        let revisions: Api<DynamicObject> = Api::all_with(
            client.clone(),
            &pkg_resource("FunctionRevision", "functionrevisions"),
        );
        let revision = format!("{name}-loopback");
        let identity = json!({
            "apiVersion": "pkg.crossplane.io/v1",
            "kind": "FunctionRevision",
            "metadata": {"name": revision},
        });
        let mut object = identity.clone();
        object["metadata"] = json!({
            "name": revision,
            "labels": {PARENT_PACKAGE: name},
            "annotations": {PAUSED: "true"},
            "ownerReferences": [{
                "apiVersion": "pkg.crossplane.io/v1",
                "kind": "Function",
                "name": name,
                "uid": uid,
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        });
        object["spec"] = json!({
            "desiredState": "Active",
            "image": package,
            "revision": 1,
            "ignoreCrossplaneConstraints": true,
            "skipDependencyResolution": true,
        });
        revisions
            .patch(
                &revision,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(object),
            )
            .await
            .map_err(api_err(format!("applying FunctionRevision {revision}")))?;
        let mut status = identity;
        status["status"] = json!({"endpoint": endpoint, "capabilities": ["composition"]});
        revisions
            .patch_status(
                &revision,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(status),
            )
            .await
            .map_err(api_err(format!(
                "writing FunctionRevision {revision}'s status"
            )))?;
        Ok(())
    }

    /// Starts `crossplane core start` with `extra` arguments and waits for
    /// its readiness probe.
    pub async fn start_core(&mut self, extra: &[&str]) -> Result<()> {
        if let Some(mut running) = self.core.take() {
            running.stop()?;
        }
        let mut argv = vec![
            self.bin.join(CORE).display().to_string(),
            "core".to_string(),
            "start".to_string(),
            "--package-runtime=External".to_string(),
            "--enable-webhooks=false".to_string(),
            // Upstream binds these on every interface (`:<port>`); free
            // ports keep replicas of the harness apart.
            format!("--metrics-port={}", self.metrics_port),
            format!("--health-probe-port={}", self.health_port),
            format!("--cache-dir={}", self.dir.path().join("xpkg").display()),
        ];
        argv.extend(extra.iter().map(|a| a.to_string()));
        let core = Watched::spawn(
            CORE,
            &argv,
            &[
                ("KUBECONFIG", self.kubeconfig.display().to_string()),
                ("POD_NAMESPACE", UPSTREAM_NAMESPACE.to_string()),
                (
                    "TLS_CLIENT_CERTS_DIR",
                    self.tls_dir("client").display().to_string(),
                ),
            ],
            &self.core_log(),
        )?;
        let port = self.health_port;
        core.wait_ready(CORE_READY, || http_ok(port, "/readyz"))
            .await?;
        self.core = Some(core);
        Ok(())
    }

    /// Stops core (SIGTERM) and returns how it exited; `None` if it was not running.
    pub fn stop_core(&mut self) -> Result<Option<ExitStatus>> {
        match self.core.take() {
            Some(mut core) => core.stop().map(Some),
            None => Ok(None),
        }
    }

    /// Core's process ID while it runs, e.g. for its peak memory.
    pub fn core_pid(&self) -> Option<u32> {
        self.core.as_ref().map(|c| c.pid)
    }

    /// Each function server's Function name and process ID.
    pub fn function_pids(&self) -> Vec<(&str, u32)> {
        self.functions
            .iter()
            .map(|f| (f.name.as_str(), f.pid))
            .collect()
    }

    /// Where core serves Prometheus metrics while it runs.
    pub fn metrics_address(&self) -> String {
        format!("127.0.0.1:{}", self.metrics_port)
    }

    /// Core's log, every start appended.
    pub fn core_log(&self) -> PathBuf {
        self.dir.path().join("crossplane-core.log")
    }

    /// The logs of core, `crossplane core init` and each function server.
    pub fn logs(&self) -> Vec<PathBuf> {
        let mut logs = vec![self.core_log(), self.dir.path().join("init.log")];
        logs.extend(self.functions.iter().map(|f| f.log.clone()));
        logs
    }

    /// The Function names whose servers run, as Compositions' `functionRef`s name them.
    pub fn function_names(&self) -> Vec<&'static str> {
        FUNCTIONS.iter().map(|(name, _, _)| *name).collect()
    }
}

impl Drop for UpstreamCrossplane {
    fn drop(&mut self) {
        // Core first, so it does not see its functions go away.
        drop(self.core.take());
        self.functions.clear();
    }
}

fn pkg_resource(kind: &str, plural: &str) -> ApiResource {
    crate::resource("pkg.crossplane.io/v1", kind, plural)
}

async fn create_namespace(client: &kube::Client, name: &str) -> Result<()> {
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    match Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(e) => Err(api_err(format!("creating namespace {name}"))(e)),
    }
}

/// The `cluster/crds` directory of the Crossplane Go module, which `go mod
/// download` fetches into the module cache when it is missing.
fn upstream_crds() -> Result<PathBuf> {
    let output = Command::new("go")
        .args(["mod", "download", "-json", CORE_MODULE])
        .current_dir(std::env::temp_dir())
        .output()
        .map_err(io_err(format!("go mod download {CORE_MODULE}")))?;
    let described: Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    match described["Dir"].as_str() {
        Some(dir) if output.status.success() => Ok(Path::new(dir).join("cluster/crds")),
        _ => Err(UpstreamError::Io {
            what: format!("go mod download {CORE_MODULE}"),
            message: String::from_utf8_lossy(&output.stderr).into_owned(),
        }),
    }
}

/// Whether `GET path` on the loopback `port` answers 200.
fn http_ok(port: u16, path: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    if write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").is_err() {
        return false;
    }
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    reply.starts_with("HTTP/1.1 200") || reply.starts_with("HTTP/1.0 200")
}

fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
