//! Runs the patch-and-transform conformance corpus through the host: the
//! built-in component, in the sandbox, with a fresh instance per case.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "conformance/harness.rs"]
mod harness;

use std::path::Path;

use plait_runtime::{Builtin, CallLimits, Runtime, RuntimeConfig};

#[test]
fn every_conformance_case_passes_through_the_wasm_component() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/cases");
    let cases = harness::load_cases(&dir);
    assert!(cases.len() >= 250, "only {} conformance cases", cases.len());

    let runtime = Runtime::new(RuntimeConfig::default()).expect("runtime");
    let module = runtime
        .builtin(Builtin::PatchAndTransform)
        .expect("built-in patch-and-transform loads");
    let limits = CallLimits::default();
    let mut failures = Vec::new();
    for case in &cases {
        let outcome = runtime
            .call(&module, &harness::request_for(case), &limits)
            .map(|output| output.response)
            .map_err(|e| e.to_string());
        if let Err(why) = harness::check(case, outcome) {
            failures.push(format!("--- {} ({}): {}", case.name, case.file, why));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} conformance cases failed through the component:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
