//! A real Kubernetes control plane on this machine: etcd, kube-apiserver and
//! kube-controller-manager (garbage collector, namespace and service-account controllers)
//! on free 127.0.0.1 ports, for `plait dev` and the integration tests, which start it once
//! per test binary (`ControlPlane::shared`) or for one test alone (`ControlPlane::dedicated`).
//! With the `upstream` feature, upstream Crossplane's core runs on it too, for the tests and
//! benches that compare plait with it.
//!
//! One file: the three processes share their certificates, ports and
//! lifecycle, and no test needs them apart.
//!
//! The binaries come from `build-binaries.sh` (built from Go modules and cached under
//! `~/.cache/plait/`). Every server runs under one small bash supervisor whose stdin is a
//! pipe from the test process: when the test process exits for any reason (normal exit,
//! panic, `SIGKILL`), the kernel closes that pipe, and the supervisor stops the servers
//! and removes the cluster's temporary directory. This keeps cleanup correct although the
//! shared cluster lives in a `static` that is never dropped; a test's own cluster closes
//! that pipe when it is dropped.

use std::hash::{BuildHasher, Hasher};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{Api, ApiResource, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

#[cfg(feature = "upstream")]
mod upstream;
#[cfg(feature = "upstream")]
pub use upstream::{UpstreamCrossplane, UpstreamError};

/// The script that builds (or finds) the server binaries; it prints their directory.
const BUILD_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/build-binaries.sh");
const BINARIES: [&str; 3] = ["etcd", "kube-apiserver", "kube-controller-manager"];

/// How long each server may take to become ready. Generous because several builders share
/// two cores; these bound a hang, they are not performance assertions.
const ETCD_READY: Duration = Duration::from_secs(60);
const APISERVER_READY: Duration = Duration::from_secs(180);
const CONTROLLER_MANAGER_READY: Duration = Duration::from_secs(180);
/// How long a restart lets kube-apiserver drain after SIGTERM before SIGKILL.
const APISERVER_GRACE: Duration = Duration::from_secs(10);
/// The supervisor gives each of the three servers 10 s to stop on SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(40);

/// Runs each server in the background with its output in `<dir>/<name>.log`, reports
/// `<name> <pid>` on stdout, and on end of stdin (the test process is gone) stops the
/// servers in reverse start order and removes the cluster directory. It ignores SIGINT so
/// that a Ctrl-C in the terminal still ends with the directory removed.
const SUPERVISOR: &str = r#"
set -u
dir=$1
exec 2>>"$dir/supervisor.log"
trap '' INT
pids=()
while IFS= read -r name; do
    mapfile -t argv <"$dir/$name.args"
    "${argv[@]}" </dev/null >"$dir/$name.log" 2>&1 &
    pids+=("$!")
    echo "$name $!"
done
for (( i=${#pids[@]}-1; i>=0; i-- )); do
    pid=${pids[i]}
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
done
rm -rf "$dir"
"#;

/// Why the control plane could not start.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ControlPlaneError {
    #[error("building the control plane's binaries with {script} failed: {message}")]
    Build { script: String, message: String },
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    #[error("generating the {what}: {message}")]
    Certificate { what: &'static str, message: String },
    #[error("{component} exited during startup; last lines of {log}:\n{tail}")]
    Exited {
        component: &'static str,
        log: String,
        tail: String,
    },
    #[error("{component} was not ready after {seconds}s ({last}); last lines of {log}:\n{tail}")]
    NotReady {
        component: &'static str,
        seconds: u64,
        last: String,
        log: String,
        tail: String,
    },
    #[error("kubeconfig {path}: {message}")]
    Kubeconfig { path: String, message: String },
    #[error("the cluster startup thread panicked: {0}")]
    Panicked(String),
}

impl ControlPlaneError {
    /// Whether a server exited because another process took the port it
    /// was given: a port is found free, then handed to the server, and on a
    /// busy machine something else can bind it in between.
    fn lost_its_port(&self) -> bool {
        matches!(self, ControlPlaneError::Exited { tail, .. } if tail.contains("address already in use"))
    }
}

type Result<T, E = ControlPlaneError> = std::result::Result<T, E>;

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ControlPlaneError + '_ {
    move |e| ControlPlaneError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// A running control plane: shared by every test in one test binary
/// ([`ControlPlane::shared`]), or one caller's own ([`ControlPlane::dedicated`]).
pub struct ControlPlane {
    dir: PathBuf,
    kubeconfig: PathBuf,
    server: String,
    config: kube::Config,
    /// The servers as they run now, and the supervisor that starts them.
    servers: Mutex<Servers>,
}

/// The cluster's server processes.
struct Servers {
    /// Starts a server again; its stdin, held open for the life of the cluster (of the
    /// process, for the shared one), tells it on closing to stop them all.
    supervisor: Supervisor,
    etcd: u32,
    apiserver: u32,
    /// Every process started, in start order, restarts included.
    started: Vec<u32>,
}

impl std::fmt::Debug for ControlPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlPlane")
            .field("dir", &self.dir)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

static SHARED: OnceLock<Result<ControlPlane>> = OnceLock::new();

/// Server-side applies `object`, of the kind `resource` names, as
/// `field_manager`, taking over any field another manager owns; panics,
/// naming the object, if the API server refuses it.
pub async fn apply(
    client: &kube::Client,
    resource: &ApiResource,
    object: &serde_json::Value,
    field_manager: &str,
) {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    };
    api.patch(
        name,
        &PatchParams::apply(field_manager).force(),
        &Patch::Apply(object),
    )
    .await
    .unwrap_or_else(|e| panic!("apply {} {name}: {e}", resource.kind));
}

/// How tests reach a kind the cluster serves, such as an XRD's or a composed
/// one, for `Api::*_with`: `api_version` is `group/version`, or `v1` for
/// the core group.
pub fn resource(api_version: &str, kind: &str, plural: &str) -> ApiResource {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: api_version.into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

impl ControlPlane {
    /// Starts etcd, kube-apiserver and kube-controller-manager once per test binary (first
    /// caller starts, the rest wait); they are stopped and their temp dir removed when the
    /// test process exits, also on panic.
    pub fn shared() -> Result<&'static ControlPlane, ControlPlaneError> {
        SHARED
            .get_or_init(ControlPlane::dedicated)
            .as_ref()
            .map_err(Clone::clone)
    }

    /// A control plane of the caller's own, for a test that must be alone
    /// on its API server (it installs CRDs of its own, or its controller
    /// must be the only one) or a benchmark that must not share an API
    /// server's history. [`ControlPlane::stop`] stops it and waits; dropping
    /// it stops the servers and removes its temp dir, as the end of the test
    /// process does too.
    pub fn dedicated() -> Result<ControlPlane, ControlPlaneError> {
        // Startup drives an async client; a thread of its own keeps that runtime apart
        // from whatever runtime the calling test runs on.
        std::thread::spawn(start_on_free_ports)
            .join()
            .unwrap_or_else(|panic| Err(ControlPlaneError::Panicked(panic_text(&panic))))
    }

    /// Stops the servers and waits until they are gone.
    pub fn stop(self) -> Result<(), ControlPlaneError> {
        let pids = self.servers().started.clone();
        let dir = self.dir.display().to_string();
        drop(self);
        let started = Instant::now();
        while pids.iter().any(|pid| alive(*pid)) {
            if started.elapsed() > STOP_TIMEOUT {
                return Err(ControlPlaneError::Io {
                    path: dir,
                    message: format!(
                        "the servers were still running {}s after the stop",
                        STOP_TIMEOUT.as_secs()
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }

    /// kube-apiserver's process ID, e.g. for the CPU time it used.
    pub fn apiserver_pid(&self) -> u32 {
        self.servers().apiserver
    }

    fn servers(&self) -> std::sync::MutexGuard<'_, Servers> {
        // A panic while holding the lock leaves the pids as they were.
        self.servers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Stops kube-apiserver with SIGTERM (SIGKILL after a grace period), as a rolling
    /// upgrade of a control plane does,
    /// starts it again on the same port and etcd, and returns once it is ready. Clients
    /// see refused connections meanwhile and their watches end.
    pub fn restart_apiserver(&self) -> Result<(), ControlPlaneError> {
        let mut servers = self.servers();
        let old = servers.apiserver;
        signal(old, "TERM", &self.dir)?;
        let started = Instant::now();
        while alive(old) {
            // kube-apiserver drains its watches slowly; the kubelet too
            // ends a grace period with SIGKILL.
            if started.elapsed() > APISERVER_GRACE {
                signal(old, "KILL", &self.dir)?;
            }
            if started.elapsed() > STOP_TIMEOUT {
                return Err(ControlPlaneError::Io {
                    path: self.dir.display().to_string(),
                    message: format!(
                        "kube-apiserver ({old}) was still running {}s after SIGTERM",
                        STOP_TIMEOUT.as_secs()
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let pid = servers.supervisor.start("kube-apiserver")?;
        servers.apiserver = pid;
        servers.started.push(pid);
        let config = self.config();
        let supervisor = &servers.supervisor;
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(io_err(&self.dir))?;
                    let client = runtime
                        .block_on(async { kube::Client::try_from(config) })
                        .map_err(|e| ControlPlaneError::Kubeconfig {
                            path: self.kubeconfig.display().to_string(),
                            message: e.to_string(),
                        })?;
                    supervisor.wait_ready("kube-apiserver", pid, APISERVER_READY, || {
                        runtime.block_on(apiserver_ready(&client))
                    })
                })
                .join()
                .unwrap_or_else(|panic| Err(ControlPlaneError::Panicked(panic_text(&panic))))
        })
    }

    /// Stops etcd with SIGSTOP for `pause`, then lets it go on with SIGCONT: the API
    /// server's reads and writes hang, then time out, as when etcd's disk stalls.
    pub fn pause_etcd(&self, pause: Duration) -> Result<(), ControlPlaneError> {
        let etcd = self.servers().etcd;
        signal(etcd, "STOP", &self.dir)?;
        std::thread::sleep(pause);
        signal(etcd, "CONT", &self.dir)
    }

    /// A kubeconfig file with a token user in `system:masters`.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// `https://127.0.0.1:<port>`.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The client configuration for [`kube::Client::try_from`].
    pub fn config(&self) -> kube::Config {
        self.config.clone()
    }

    /// A new client on the caller's runtime.
    pub async fn client(&self) -> kube::Client {
        kube::Client::try_from(self.config())
            .unwrap_or_else(|e| panic!("client for the test cluster at {}: {e}", self.server))
    }

    /// A fresh namespace named `<prefix>-<random>`, created and returned.
    pub async fn namespace(&self, prefix: &str) -> String {
        let name = format!("{prefix}-{}", &random_hex()[..10]);
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        Api::<Namespace>::all(self.client().await)
            .create(&PostParams::default(), &ns)
            .await
            .unwrap_or_else(|e| panic!("creating namespace {name}: {e}"));
        name
    }
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".to_string())
}

/// 16 random hex digits per call; std's `RandomState` is seeded from the OS per process.
fn random_hex() -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    format!("{:016x}", hasher.finish())
}

fn free_port() -> Result<u16> {
    let listener =
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| ControlPlaneError::Io {
            path: "127.0.0.1:0".to_string(),
            message: format!("finding a free port: {e}"),
        })?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| ControlPlaneError::Io {
            path: "127.0.0.1:0".to_string(),
            message: format!("finding a free port: {e}"),
        })
}

/// The directory holding the three binaries, building them first if needed.
fn binaries() -> Result<PathBuf> {
    built(BUILD_SCRIPT, &BINARIES, "10 to 30 minutes")
}

/// The directory `script` builds `names` into, building them first if any is
/// missing (a cold build takes `cold` on 2 cores).
fn built(script: &str, names: &[&str], cold: &str) -> Result<PathBuf> {
    let build_err = |message: String| ControlPlaneError::Build {
        script: script.to_string(),
        message,
    };
    if !Path::new(script).is_file() {
        // The script's path is fixed when plait is compiled: a binary moved
        // away from its source tree cannot build the servers.
        return Err(build_err(
            "not found: the servers are built from their Go modules by this script of the \
             source tree plait was compiled from; run a plait built from a checkout of its source"
                .to_string(),
        ));
    }
    let out = Command::new("bash")
        .args([script, "--bin-dir"])
        .output()
        .map_err(|e| build_err(e.to_string()))?;
    if !out.status.success() {
        return Err(build_err(String::from_utf8_lossy(&out.stderr).into_owned()));
    }
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if names.iter().all(|b| dir.join(b).is_file()) {
        return Ok(dir);
    }
    eprintln!(
        "plait-controlplane: {} lacks {}; building them now with {script} (a cold build takes {cold} on 2 cores)",
        dir.display(),
        names.join(", ")
    );
    let status = Command::new("bash")
        .arg(script)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| build_err(e.to_string()))?;
    if !status.success() {
        return Err(build_err(format!("exited with {status}")));
    }
    match names.iter().find(|b| !dir.join(b).is_file()) {
        Some(missing) => Err(build_err(format!(
            "{missing} is still missing in {}",
            dir.display()
        ))),
        None => Ok(dir),
    }
}

struct Pki {
    ca_pem: String,
    serving_cert_pem: String,
    serving_key_pem: String,
    service_account_key_pem: String,
    service_account_pub_pem: String,
}

/// A self-signed CA named `common_name`, for signing serving and client
/// certificates.
pub(crate) fn certificate_authority(
    common_name: &str,
) -> std::result::Result<rcgen::CertifiedIssuer<'static, rcgen::KeyPair>, rcgen::Error> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
    let mut params = CertificateParams::default();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    rcgen::CertifiedIssuer::self_signed(params, KeyPair::generate()?)
}

fn pki() -> Result<Pki> {
    use rcgen::{
        CertificateParams, DnType, ExtendedKeyUsagePurpose, KeyPair, KeyUsagePurpose, SanType,
    };
    let err = |what: &'static str| {
        move |e: rcgen::Error| ControlPlaneError::Certificate {
            what,
            message: e.to_string(),
        }
    };

    let ca = certificate_authority("plait-controlplane-ca").map_err(err("CA"))?;

    let mut serving = CertificateParams::new(vec![
        "localhost".to_string(),
        "kubernetes".to_string(),
        "kubernetes.default".to_string(),
        "kubernetes.default.svc".to_string(),
    ])
    .map_err(err("serving certificate names"))?;
    serving
        .subject_alt_names
        .push(SanType::IpAddress(Ipv4Addr::LOCALHOST.into()));
    serving
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver");
    serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    serving.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    let serving_key = KeyPair::generate().map_err(err("serving key"))?;
    let serving_cert = serving
        .signed_by(&serving_key, &ca)
        .map_err(err("serving certificate"))?;

    let service_account_key = KeyPair::generate().map_err(err("service account key"))?;

    Ok(Pki {
        ca_pem: ca.pem(),
        serving_cert_pem: serving_cert.pem(),
        serving_key_pem: serving_key.serialize_pem(),
        service_account_key_pem: service_account_key.serialize_pem(),
        service_account_pub_pem: service_account_key.public_key_pem(),
    })
}

fn write(path: &Path, contents: &str) -> Result<()> {
    std::fs::write(path, contents).map_err(io_err(path))
}

/// Writes `<dir>/<name>.args` (one argument a line) for the supervisor to run.
fn write_args(dir: &Path, name: &str, argv: &[String]) -> Result<()> {
    let mut text = argv.join("\n");
    text.push('\n');
    write(&dir.join(format!("{name}.args")), &text)
}

fn log_tail(dir: &Path, name: &str) -> (String, String) {
    let path = dir.join(format!("{name}.log"));
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(30)..].join("\n");
    (path.display().to_string(), tail)
}

/// True while the process exists and is not a zombie.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            // The state follows the parenthesised command name, which may contain spaces.
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z" && state != "X")
        })
        .unwrap_or(false)
}

struct Supervisor {
    dir: PathBuf,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Supervisor {
    fn spawn(dir: &Path) -> Result<Self> {
        let mut child = Command::new("bash")
            .args(["-c", SUPERVISOR, "plait-controlplane-supervisor"])
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| ControlPlaneError::Io {
                path: "bash".to_string(),
                message: format!("starting the cluster supervisor: {e}"),
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ControlPlaneError::Io {
                path: "bash".to_string(),
                message: "the cluster supervisor has no stdio pipes".to_string(),
            });
        };
        Ok(Self {
            dir: dir.to_path_buf(),
            stdin,
            stdout: BufReader::new(stdout),
        })
    }

    /// Starts `<dir>/<name>.args` and returns its pid.
    fn start(&mut self, name: &'static str) -> Result<u32> {
        let broken = |message: String| ControlPlaneError::Io {
            path: self.dir.join("supervisor.log").display().to_string(),
            message: format!("starting {name} through the supervisor: {message}"),
        };
        writeln!(self.stdin, "{name}")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| broken(e.to_string()))?;
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .map_err(|e| broken(e.to_string()))?;
        line.trim()
            .strip_prefix(name)
            .and_then(|pid| pid.trim().parse().ok())
            .ok_or_else(|| broken(format!("unexpected reply {line:?}")))
    }

    /// Polls `check` until it succeeds, the process dies, or `limit` passes.
    fn wait_ready(
        &self,
        name: &'static str,
        pid: u32,
        limit: Duration,
        mut check: impl FnMut() -> Result<(), String>,
    ) -> Result<()> {
        let started = Instant::now();
        loop {
            let last = match check() {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if !alive(pid) {
                let (log, tail) = log_tail(&self.dir, name);
                return Err(ControlPlaneError::Exited {
                    component: name,
                    log,
                    tail,
                });
            }
            if started.elapsed() > limit {
                let (log, tail) = log_tail(&self.dir, name);
                return Err(ControlPlaneError::NotReady {
                    component: name,
                    seconds: limit.as_secs(),
                    last,
                    log,
                    tail,
                });
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

/// etcd's `/health` over plain HTTP on loopback; a raw request avoids an HTTP client.
fn etcd_healthy(port: u16) -> Result<(), String> {
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    stream
        .write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut reply = String::new();
    stream
        .read_to_string(&mut reply)
        .map_err(|e| e.to_string())?;
    if reply.contains(r#""health":"true""#) {
        Ok(())
    } else {
        Err(reply)
    }
}

/// How often a control plane is started afresh, on new ports, when one of
/// its servers lost its port to another process.
const START_ATTEMPTS: usize = 3;

/// [`start`], again on new ports while a server lost its port; a failed
/// start's supervisor stops what it started and removes its directory.
fn start_on_free_ports() -> Result<ControlPlane> {
    let mut attempt = 1;
    loop {
        match start() {
            Err(error) if attempt < START_ATTEMPTS && error.lost_its_port() => attempt += 1,
            started => return started,
        }
    }
}

fn start() -> Result<ControlPlane> {
    let bin = binaries()?;
    let dir = tempfile::Builder::new()
        .prefix("plait-controlplane-")
        .tempdir()
        .map_err(|e| ControlPlaneError::Io {
            path: std::env::temp_dir().display().to_string(),
            message: format!("creating the cluster directory: {e}"),
        })?
        // The supervisor removes it once the servers are stopped.
        .keep();
    let mut supervisor = Supervisor::spawn(&dir)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(io_err(&dir))?;

    let pki = pki()?;
    let file = |name: &str| dir.join(name);
    let arg = |flag: &str, path: &Path| format!("--{flag}={}", path.display());
    write(&file("ca.crt"), &pki.ca_pem)?;
    write(&file("apiserver.crt"), &pki.serving_cert_pem)?;
    write(&file("apiserver.key"), &pki.serving_key_pem)?;
    write(&file("sa.key"), &pki.service_account_key_pem)?;
    write(&file("sa.pub"), &pki.service_account_pub_pem)?;
    let token = format!("{}{}", random_hex(), random_hex());
    write(
        &file("tokens.csv"),
        &format!("{token},admin,admin,\"system:masters\"\n"),
    )?;

    let etcd_port = free_port()?;
    let peer_port = free_port()?;
    let apiserver_port = free_port()?;
    let server = format!("https://127.0.0.1:{apiserver_port}");
    let kubeconfig = file("kubeconfig");
    write(
        &kubeconfig,
        &format!(
            "apiVersion: v1
kind: Config
clusters:
- name: plait-test
  cluster:
    server: {server}
    certificate-authority: {ca}
users:
- name: admin
  user:
    token: {token}
contexts:
- name: plait-test
  context:
    cluster: plait-test
    user: admin
current-context: plait-test
",
            ca = file("ca.crt").display()
        ),
    )?;

    let etcd_url = format!("http://127.0.0.1:{etcd_port}");
    let peer_url = format!("http://127.0.0.1:{peer_port}");
    write_args(
        &dir,
        "etcd",
        &[
            bin.join("etcd").display().to_string(),
            "--name=plait-test".to_string(),
            arg("data-dir", &file("etcd")),
            format!("--listen-client-urls={etcd_url}"),
            format!("--advertise-client-urls={etcd_url}"),
            format!("--listen-peer-urls={peer_url}"),
            format!("--initial-advertise-peer-urls={peer_url}"),
            format!("--initial-cluster=plait-test={peer_url}"),
            // Test data need not survive a power cut.
            "--unsafe-no-fsync=true".to_string(),
            "--log-level=warn".to_string(),
        ],
    )?;
    let etcd_pid = supervisor.start("etcd")?;
    supervisor.wait_ready("etcd", etcd_pid, ETCD_READY, || etcd_healthy(etcd_port))?;

    write_args(
        &dir,
        "kube-apiserver",
        &[
            bin.join("kube-apiserver").display().to_string(),
            format!("--etcd-servers={etcd_url}"),
            "--bind-address=127.0.0.1".to_string(),
            "--advertise-address=127.0.0.1".to_string(),
            format!("--secure-port={apiserver_port}"),
            arg("tls-cert-file", &file("apiserver.crt")),
            arg("tls-private-key-file", &file("apiserver.key")),
            arg("client-ca-file", &file("ca.crt")),
            arg("token-auth-file", &file("tokens.csv")),
            "--authorization-mode=RBAC".to_string(),
            "--service-account-issuer=https://kubernetes.default.svc".to_string(),
            arg("service-account-key-file", &file("sa.pub")),
            arg("service-account-signing-key-file", &file("sa.key")),
            "--service-cluster-ip-range=10.96.0.0/16".to_string(),
            // Nothing else runs to receive the apiserver's own endpoints.
            "--endpoint-reconciler-type=none".to_string(),
            "--profiling=false".to_string(),
        ],
    )?;
    let apiserver_pid = supervisor.start("kube-apiserver")?;
    let config = runtime.block_on(async {
        let kc = Kubeconfig::read_from(&kubeconfig).map_err(|e| ControlPlaneError::Kubeconfig {
            path: kubeconfig.display().to_string(),
            message: e.to_string(),
        })?;
        kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .map_err(|e| ControlPlaneError::Kubeconfig {
                path: kubeconfig.display().to_string(),
                message: e.to_string(),
            })
    })?;
    let client = runtime
        .block_on(async { kube::Client::try_from(config.clone()) })
        .map_err(|e| ControlPlaneError::Kubeconfig {
            path: kubeconfig.display().to_string(),
            message: e.to_string(),
        })?;
    supervisor.wait_ready("kube-apiserver", apiserver_pid, APISERVER_READY, || {
        runtime.block_on(apiserver_ready(&client))
    })?;

    write_args(
        &dir,
        "kube-controller-manager",
        &[
            bin.join("kube-controller-manager").display().to_string(),
            arg("kubeconfig", &kubeconfig),
            "--controllers=garbage-collector-controller,namespace-controller,serviceaccount-controller"
                .to_string(),
            "--leader-elect=false".to_string(),
            "--use-service-account-credentials=false".to_string(),
            "--bind-address=127.0.0.1".to_string(),
            // Tests talk to the apiserver only; the manager needs no endpoint of its own.
            "--secure-port=0".to_string(),
            "--profiling=false".to_string(),
        ],
    )?;
    let manager_pid = supervisor.start("kube-controller-manager")?;
    // The service-account controller creating `default/default` shows the manager is up
    // and its informers have synced.
    let service_accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    supervisor.wait_ready(
        "kube-controller-manager",
        manager_pid,
        CONTROLLER_MANAGER_READY,
        || {
            runtime.block_on(async {
                match service_accounts.get_opt("default").await {
                    Ok(Some(_)) => Ok(()),
                    Ok(None) => Err("no default/default ServiceAccount yet".to_string()),
                    Err(e) => Err(e.to_string()),
                }
            })
        },
    )?;
    drop(client);

    Ok(ControlPlane {
        dir,
        kubeconfig,
        server,
        config,
        servers: Mutex::new(Servers {
            supervisor,
            etcd: etcd_pid,
            apiserver: apiserver_pid,
            started: vec![etcd_pid, apiserver_pid, manager_pid],
        }),
    })
}

/// kube-apiserver's `/readyz`, through `client`.
async fn apiserver_ready(client: &kube::Client) -> Result<(), String> {
    let request = http::Request::get("/readyz")
        .body(Vec::new())
        .map_err(|e| e.to_string())?;
    match tokio::time::timeout(Duration::from_secs(10), client.request_text(request)).await {
        Ok(Ok(body)) if body.trim() == "ok" => Ok(()),
        Ok(Ok(body)) => Err(body),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("/readyz timed out".to_string()),
    }
}

/// Sends SIG`name` to `pid`.
fn signal(pid: u32, name: &str, dir: &Path) -> Result<()> {
    let status = Command::new("kill")
        .args([format!("-{name}"), pid.to_string()])
        .status()
        .map_err(io_err(dir))?;
    if status.success() {
        Ok(())
    } else {
        Err(ControlPlaneError::Io {
            path: dir.display().to_string(),
            message: format!("kill -{name} {pid} exited with {status}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_server_that_lost_its_port_is_started_again() {
        let exited = |tail: &str| ControlPlaneError::Exited {
            component: "kube-apiserver",
            log: "kube-apiserver.log".to_string(),
            tail: tail.to_string(),
        };
        let cases = [
            (
                exited(
                    "failed to create listener: failed to listen on 127.0.0.1:36563: listen tcp 127.0.0.1:36563: bind: address already in use",
                ),
                true,
            ),
            (
                exited("listen tcp 127.0.0.1:2379: bind: address already in use"),
                true,
            ),
            (
                exited("open /tmp/x/apiserver.crt: no such file or directory"),
                false,
            ),
            (
                ControlPlaneError::NotReady {
                    component: "etcd",
                    seconds: 60,
                    last: "connection refused".to_string(),
                    log: "etcd.log".to_string(),
                    tail: "address already in use".to_string(),
                },
                false,
            ),
        ];
        for (error, lost) in cases {
            assert_eq!(error.lost_its_port(), lost, "{error}");
        }
    }
}
