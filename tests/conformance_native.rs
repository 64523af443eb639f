//! Runs the patch-and-transform conformance corpus natively, calling
//! `PatchAndTransform` as a plain Rust function.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "conformance/harness.rs"]
mod harness;

use std::path::Path;

use plait_patch_and_transform::PatchAndTransform;
use plait_sdk::Function;

/// The corpus must not silently shrink: the coverage it claims depends on it.
const MIN_CASES: usize = 250;

#[test]
fn every_conformance_case_passes_natively() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/cases");
    let cases = harness::load_cases(&dir);
    assert!(
        cases.len() >= MIN_CASES,
        "only {} conformance cases found in {}, expected at least {MIN_CASES}",
        cases.len(),
        dir.display()
    );

    let mut failures = Vec::new();
    for case in &cases {
        let outcome = PatchAndTransform::run(harness::request_for(case)).map_err(|e| e.to_string());
        if let Err(why) = harness::check(case, outcome) {
            failures.push(format!(
                "--- {} ({})\n    rule: {}\n    {}",
                case.name,
                case.file,
                case.rule,
                why.replace('\n', "\n    ")
            ));
        }
    }

    assert!(
        failures.is_empty(),
        "{} of {} conformance cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
