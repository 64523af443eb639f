//! Runs the control plane by hand: prints `KUBECONFIG=<path>` and keeps the cluster up until
//! stdin reaches end of file (Ctrl-D) or the process is interrupted. A line `panic` on stdin
//! panics instead, which the cleanup tests use.

use std::io::BufRead;
use std::process::ExitCode;

use plait_controlplane::ControlPlane;

fn main() -> ExitCode {
    let cluster = match ControlPlane::shared() {
        Ok(cluster) => cluster,
        Err(e) => {
            eprintln!("plait-controlplane: {e}");
            return ExitCode::FAILURE;
        }
    };
    // KUBECONFIG comes last: the cleanup tests stop reading once they have it.
    println!("SERVER={}", cluster.server());
    println!("KUBECONFIG={}", cluster.kubeconfig().display());
    for line in std::io::stdin().lock().lines() {
        match line {
            Ok(line) if line.trim() == "panic" => panic!("asked to panic on stdin"),
            Ok(_) => {}
            Err(_) => break,
        }
    }
    ExitCode::SUCCESS
}
