//! `plait dev up` and `down` as `make demo` runs them
//! (`examples/getting-started/demo.sh`): the control plane starts, the
//! controller composes the getting-started App until it is Ready, puts an
//! edited composed object back, and everything stops and is removed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;

#[test]
fn the_demo_composes_the_example_on_a_local_control_plane_and_stops_it() {
    let out = Command::new("bash")
        .arg(common::repo().join("examples/getting-started/demo.sh"))
        .env("PLAIT", env!("CARGO_BIN_EXE_plait"))
        .current_dir(common::repo())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "demo.sh failed:\n{stdout}\n{stderr}");
    for expected in [
        "the App hello is Ready",
        // plait trace's row of the XR.
        "App/hello",
        "edited: ghcr.io/example/edited:0.0.1",
        "s: ghcr.io/example/hello:1.4.2",
        "plait dev: stopped process",
        "plait dev: the controller and the control plane stopped",
    ] {
        assert!(
            stdout.contains(expected),
            "no {expected:?} in the demo's output:\n{stdout}\n{stderr}"
        );
    }
}
