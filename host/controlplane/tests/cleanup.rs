//! When the process holding a test cluster ends — normally, by panic, or by SIGKILL — its
//! servers stop and its directory is removed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Bounds the wait for cleanup; a hang, not a timing assertion.
const PATIENCE: Duration = Duration::from_secs(60);

/// Starts the cluster in a child process and returns it with the cluster directory.
fn start_holder() -> (Child, PathBuf) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_plait-controlplane"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let kubeconfig = loop {
        let line = lines
            .next()
            .expect("the holder exited before printing KUBECONFIG")
            .unwrap();
        if let Some(path) = line.strip_prefix("KUBECONFIG=") {
            break PathBuf::from(path);
        }
    };
    (child, kubeconfig.parent().unwrap().to_path_buf())
}

/// Pids of processes whose command line mentions `dir` (the servers' flags all do).
fn servers_of(dir: &Path) -> Vec<u32> {
    let needle = dir.display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).contains(&needle)
        })
        .collect()
}

#[test]
fn servers_stop_and_directory_is_removed_when_the_holder_ends() {
    type End = fn(&mut Child);
    // How the holder is ended, and the exit code it then reports (none when killed).
    let cases: [(&str, End, Option<i32>); 3] = [
        ("exits normally", |child| drop(child.stdin.take()), Some(0)),
        (
            "panics",
            |child| {
                writeln!(child.stdin.as_mut().unwrap(), "panic").unwrap();
            },
            Some(101),
        ),
        ("is killed", |child| child.kill().unwrap(), None),
    ];
    for (how, end, code) in cases {
        let (mut child, dir) = start_holder();
        let servers = servers_of(&dir);
        assert_eq!(
            servers.len(),
            4,
            "holder that {how}: expected the supervisor, etcd, kube-apiserver and \
             kube-controller-manager to run, found pids {servers:?}"
        );

        end(&mut child);
        let status = child.wait().unwrap();
        assert_eq!(status.code(), code, "holder that {how}: {status}");

        let deadline = Instant::now() + PATIENCE;
        while dir.exists() || !servers_of(&dir).is_empty() {
            assert!(
                Instant::now() < deadline,
                "holder that {how}: {} or servers {:?} still there",
                dir.display(),
                servers_of(&dir)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

#[test]
fn a_dedicated_cluster_stops_its_servers_when_stopped_and_names_its_api_server() {
    let cluster = plait_controlplane::ControlPlane::dedicated().unwrap();
    let dir = cluster.kubeconfig().parent().unwrap().to_path_buf();
    let servers = servers_of(&dir);
    assert_eq!(
        servers.len(),
        4,
        "expected the supervisor, etcd, kube-apiserver and kube-controller-manager, found pids {servers:?}"
    );
    let apiserver = cluster.apiserver_pid();
    let command = std::fs::read(format!("/proc/{apiserver}/cmdline")).unwrap();
    assert!(
        String::from_utf8_lossy(&command).contains("kube-apiserver"),
        "pid {apiserver} is not kube-apiserver"
    );

    cluster.stop().unwrap();
    assert!(
        !Path::new(&format!("/proc/{apiserver}")).exists()
            || std::fs::read_to_string(format!("/proc/{apiserver}/stat"))
                .is_ok_and(|stat| stat.contains(") Z")),
        "kube-apiserver still runs after stop"
    );
    let deadline = Instant::now() + PATIENCE;
    while dir.exists() || !servers_of(&dir).is_empty() {
        assert!(
            Instant::now() < deadline,
            "{} or servers {:?} still there",
            dir.display(),
            servers_of(&dir)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
