//! Go components start from a snapshot taken after their initialisation:
//! every call starts where initialisation ended, none sees what an earlier
//! call left, and the snapshot is the same bytes every time it is taken.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use plait_runtime::{CallError, CallLimits, Runtime, RuntimeConfig};
use plait_sdk::Request;
use serde_json::json;

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| Runtime::new(RuntimeConfig::default()).unwrap())
}

fn out_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("test-guests")
}

/// The counter guest (guests/sdk-go/internal/counter) as a component, and
/// the core module it was made from.
fn counter() -> &'static (Vec<u8>, Vec<u8>) {
    static BUILT: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();
    BUILT.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let name = "plait-test-go-counter";
        let path = plait_guest_build::build_go_guest(
            "guests/sdk-go/internal/counter",
            name,
            &root,
            &out_dir(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let core = out_dir().join(format!("{name}.core.wasm"));
        (std::fs::read(path).unwrap(), std::fs::read(core).unwrap())
    })
}

/// What the counter says on a call with `input`, or the call's error.
fn call(input: &str, limits: &CallLimits) -> Result<String, CallError> {
    let module = runtime().load(&counter().0).unwrap();
    let request = Request {
        input: Some(json!(input)),
        ..Request::default()
    };
    let out = runtime().call(&module, &request, limits)?;
    assert_eq!(out.stdout, "called\n");
    Ok(out.response.results[0].message.clone())
}

/// What a call that starts from the snapshot and finds no trace of an
/// earlier call says.
const CLEAN: &str = "inits=1 calls=1 from-snapshot=true clock-forward=true";

#[test]
fn every_call_starts_where_initialisation_ended() {
    for _ in 0..5 {
        assert_eq!(call("count", &CallLimits::default()).unwrap(), CLEAN);
    }
}

#[test]
fn a_call_that_traps_or_runs_out_of_time_leaves_the_next_call_clean() {
    let short = CallLimits {
        deadline: Duration::from_millis(200),
        ..CallLimits::default()
    };
    // (input, whether the call fails and how)
    let cases: [(&str, Option<&str>); 5] = [
        ("trap", Some("trap")),
        ("count", None),
        ("spin", Some("deadline")),
        ("count", None),
        ("count", None),
    ];
    for (input, failure) in cases {
        match (call(input, &short), failure) {
            (Ok(message), None) => assert_eq!(message, CLEAN, "{input}"),
            (Err(error), Some(kind)) => assert_eq!(error.kind(), kind, "{input}: {error}"),
            (got, want) => panic!("{input}: got {got:?}, want a failure of kind {want:?}"),
        }
    }
}

#[test]
fn the_snapshot_is_the_same_bytes_every_time() {
    let (component, core) = counter();
    let again = plait_componentize::componentize(core).unwrap();
    assert!(&again == component, "two snapshots of one module differ");
}

#[test]
fn without_the_snapshot_every_call_initialises_afresh() {
    let core = &counter().1;
    let component =
        plait_componentize::componentize_with(core, plait_componentize::Initialise::EveryCall)
            .unwrap();
    let module = runtime().load(&component).unwrap();
    let request = Request {
        input: Some(json!("count")),
        ..Request::default()
    };
    for _ in 0..2 {
        let out = runtime()
            .call(&module, &request, &CallLimits::default())
            .unwrap();
        assert_eq!(
            out.response.results[0].message,
            "inits=1 calls=1 from-snapshot=false clock-forward=true"
        );
    }
}
