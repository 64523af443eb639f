//! `plait dev up` / `plait dev down`: the controller on a control plane of
//! its own, on this machine. `up` starts etcd, kube-apiserver and
//! kube-controller-manager on free 127.0.0.1 ports (the binaries plait's
//! tests use, built from their Go modules once and cached under
//! ~/.cache/plait), writes a kubeconfig, and runs the controller against
//! them, which installs plait's CRDs; Ctrl-C or `down` stops the controller,
//! then the servers, and removes their files. No root is needed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::ControllerArgs;

/// How long `down` waits for `up` to stop the controller and the servers.
const STOP_TIMEOUT: Duration = Duration::from_secs(90);
const PID_FILE: &str = "pid";
const KUBECONFIG_FILE: &str = "kubeconfig";

#[derive(clap::Subcommand)]
pub enum DevCommand {
    /// Start a local control plane (etcd, kube-apiserver,
    /// kube-controller-manager on 127.0.0.1) and run the controller against
    /// it until Ctrl-C or `plait dev down`; prints the kubeconfig to use.
    Up(Box<UpArgs>),
    /// Stop what `plait dev up` started, and wait until it is gone.
    Down(DownArgs),
}

#[derive(clap::Args)]
pub struct UpArgs {
    /// Where the kubeconfig and the running control plane's process ID are
    /// kept [default: ~/.cache/plait/dev].
    #[arg(long = "state-dir")]
    pub state_dir: Option<PathBuf>,
    /// The controller's own flags (`plait controller --help`); its
    /// kubeconfig is the control plane's.
    #[command(flatten)]
    pub controller: ControllerArgs,
}

#[derive(clap::Args)]
pub struct DownArgs {
    /// The state directory `plait dev up` was given [default: ~/.cache/plait/dev].
    #[arg(long = "state-dir")]
    pub state_dir: Option<PathBuf>,
}

pub fn run(command: DevCommand) -> Result<String> {
    match command {
        DevCommand::Up(args) => up(*args),
        DevCommand::Down(args) => down(&args),
    }
}

fn state_dir(given: Option<PathBuf>) -> Result<PathBuf> {
    given
        .or_else(|| plait_oci::cache_root().map(|root| root.join("dev")))
        .context("no state directory: pass --state-dir, or set HOME or PLAIT_CACHE_DIR")
}

/// The process ID `up` recorded in `dir`, if that process still runs.
fn running(dir: &Path) -> Result<Option<u32>> {
    let path = dir.join(PID_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let pid: u32 = text
        .trim()
        .parse()
        .with_context(|| format!("{}: not a process ID: {text:?}", path.display()))?;
    Ok(alive(pid).then_some(pid))
}

fn alive(pid: u32) -> bool {
    // A zombie has a /proc entry but has stopped: its state is `Z`.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

fn up(mut args: UpArgs) -> Result<String> {
    if args.controller.kubeconfig.is_some() {
        bail!("--kubeconfig: plait dev up runs the controller against its own control plane");
    }
    let dir = state_dir(args.state_dir.take())?;
    if let Some(pid) = running(&dir)? {
        bail!(
            "a control plane is already up (process {pid}, state in {}); `plait dev down` stops it",
            dir.display()
        );
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    eprintln!(
        "plait dev: starting etcd, kube-apiserver and kube-controller-manager on 127.0.0.1 \
         (the first run builds them from their Go modules: 10 to 30 minutes on 2 cores)"
    );
    let cluster = plait_controlplane::ControlPlane::dedicated()
        .context("cannot start the local control plane")?;
    let kubeconfig = dir.join(KUBECONFIG_FILE);
    std::fs::copy(cluster.kubeconfig(), &kubeconfig)
        .with_context(|| format!("cannot write {}", kubeconfig.display()))?;
    let pid_file = dir.join(PID_FILE);
    std::fs::write(&pid_file, format!("{}\n", std::process::id()))
        .with_context(|| format!("cannot write {}", pid_file.display()))?;
    let mut stdout = std::io::stdout();
    // Printed at once: a caller waits for these lines while the controller runs.
    let _ = writeln!(
        stdout,
        "API server: {}\nKUBECONFIG={}\n\
         The controller runs until Ctrl-C or `plait dev down`; meanwhile:\n  \
         export KUBECONFIG={}\n  kubectl get compositeresourcedefinitions",
        cluster.server(),
        kubeconfig.display(),
        kubeconfig.display()
    );
    let _ = stdout.flush();
    args.controller.kubeconfig = Some(kubeconfig.clone());
    let served = crate::controller::run(&args.controller);
    // Whatever the controller's end, the servers stop and the files go.
    let stopped = cluster
        .stop()
        .context("cannot stop the local control plane");
    for file in [&pid_file, &kubeconfig] {
        let _ = std::fs::remove_file(file);
    }
    served?;
    stopped?;
    Ok("plait dev: the controller and the control plane stopped\n".into())
}

fn down(args: &DownArgs) -> Result<String> {
    let dir = state_dir(args.state_dir.clone())?;
    let Some(pid) = running(&dir)? else {
        return Ok(format!(
            "plait dev: nothing is up (state in {})\n",
            dir.display()
        ));
    };
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .context("cannot run kill")?;
    if !status.success() {
        bail!("kill -TERM {pid} failed: {status}");
    }
    let started = Instant::now();
    while alive(pid) {
        if started.elapsed() > STOP_TIMEOUT {
            bail!(
                "process {pid} still runs {}s after SIGTERM",
                STOP_TIMEOUT.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(format!("plait dev: stopped process {pid}\n"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// (name, the pid file's contents if any, what `running` says)
    type Case = (
        &'static str,
        Option<String>,
        Result<Option<u32>, &'static str>,
    );

    #[test]
    fn only_a_pid_file_naming_a_live_process_counts_as_up() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join(PID_FILE);
        let cases: [Case; 4] = [
            ("no file", None, Ok(None)),
            (
                "this process",
                Some(format!("{}\n", std::process::id())),
                Ok(Some(std::process::id())),
            ),
            // The largest PID Linux hands out is below 2^22.
            ("a gone process", Some("4194304\n".into()), Ok(None)),
            ("garbage", Some("up\n".into()), Err("not a process ID")),
        ];
        for (name, contents, want) in cases {
            match &contents {
                Some(text) => std::fs::write(&pid_file, text).unwrap(),
                None => {
                    let _ = std::fs::remove_file(&pid_file);
                }
            }
            match (running(dir.path()), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{name}"),
                (Err(got), Err(want)) => assert!(format!("{got:#}").contains(want), "{name}"),
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }
}
