//! `plait render` on every case of `tests/corpus-kcl`, against the output
//! upstream `crossplane render` recorded for it (function-kcl v0.12.2's
//! mapping around the real KCL 0.12.3, and the upstream functions beside
//! it): documents compared as the differential suite compares them
//! (normalised, results as a set, documented deliberate differences
//! accepted), and a refused case by the message its function gave.
//!
//! A case on which plait still differs from upstream is listed in
//! [`KNOWN_DIFFERENCES`] with why; it must still differ, so that a fix
//! takes it off the list.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use plait_differential::{Rendered, corpus};
use serde_json::Value;

mod common;
use common::repo;

/// How many cases the corpus has; a case that goes missing fails the test.
const CASES: usize = 50;

/// A case plait renders otherwise than upstream: how (a piece of each
/// difference the comparison reports, each piece shown by one) and why.
struct KnownDifference {
    case: &'static str,
    shows: &'static [&'static str],
    why: &'static str,
}

const EMPTY_RESOURCE_NAME_REFUSED: &[&str] = &["its name in the Composition must be non-empty"];
const EMPTY_RESOURCE_NAME: &str = "plait's output checks refuse a composed resource whose name in \
     the Composition is empty (an item with neither krm.kcl.dev/composition-resource-name nor \
     metadata.name); upstream composes it under a random name";
const NO_TYPE: &str = "plait's output checks refuse a composed resource without apiVersion or \
     kind; upstream's render prints it (a cluster would refuse to apply it)";

/// Cases plait renders otherwise than upstream.
const KNOWN_DIFFERENCES: &[KnownDifference] = &[
    KnownDifference {
        case: "function-kcl__default-connection-details",
        shows: &["apiVersion: Required value: must be a non-empty string"],
        why: NO_TYPE,
    },
    KnownDifference {
        case: "function-kcl__default-function-ctx",
        shows: EMPTY_RESOURCE_NAME_REFUSED,
        why: EMPTY_RESOURCE_NAME,
    },
    KnownDifference {
        case: "function-kcl__resources-condition",
        shows: EMPTY_RESOURCE_NAME_REFUSED,
        why: EMPTY_RESOURCE_NAME,
    },
    KnownDifference {
        case: "function-kcl__resources-database",
        shows: EMPTY_RESOURCE_NAME_REFUSED,
        why: EMPTY_RESOURCE_NAME,
    },
    KnownDifference {
        case: "function-kcl__default-read-ocds-resource",
        shows: &["apiVersion: Required value: must be a non-empty string"],
        why: NO_TYPE,
    },
    KnownDifference {
        case: "function-kcl__resources-pass-data",
        shows: &["kind: Required value: must be a non-empty string"],
        why: NO_TYPE,
    },
];

impl KnownDifference {
    /// Whether `differences` are this known difference: each shows one of
    /// its pieces, and each piece is shown.
    fn explains(&self, differences: &[String]) -> bool {
        differences
            .iter()
            .all(|d| self.shows.iter().any(|piece| d.contains(piece)))
            && self
                .shows
                .iter()
                .all(|piece| differences.iter().any(|d| d.contains(piece)))
    }
}

/// How many `plait render` processes run at once.
const WORKERS: usize = 2;

fn corpus() -> PathBuf {
    repo().join("tests/corpus-kcl")
}

fn render(dir: &Path) -> Rendered {
    let cache = repo().join("target/plait-test-cache");
    corpus::render_case(plait(), &cache, dir, Path::new("functions.yaml")).expect("plait runs")
}

fn plait() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_plait"))
}

/// The render with the names of composed resources that have no name in
/// the Composition (function-kcl names an item with neither
/// `krm.kcl.dev/composition-resource-name` nor `metadata.name` `""`) made
/// `<generateName>*`, wherever they appear: upstream gives such a resource
/// `generateName` and five random characters, a new name on every render.
fn without_generated_names(rendered: Rendered) -> Rendered {
    let Rendered::Output(mut documents) = rendered else {
        return rendered;
    };
    let mut generated = BTreeMap::new();
    for document in &documents {
        let named_in_composition = document
            .pointer("/metadata/annotations/crossplane.io~1composition-resource-name")
            .is_some();
        let prefix = document
            .pointer("/metadata/generateName")
            .and_then(Value::as_str);
        let name = document.pointer("/metadata/name").and_then(Value::as_str);
        if let (false, Some(prefix), Some(name)) = (named_in_composition, prefix, name)
            && name.starts_with(prefix)
        {
            generated.insert(name.to_string(), format!("{prefix}*"));
        }
    }
    fn rename(value: &mut Value, generated: &BTreeMap<String, String>) {
        match value {
            Value::String(text) => {
                if let Some(name) = generated.get(text.as_str()) {
                    *text = name.clone();
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| rename(v, generated)),
            Value::Object(map) => map.values_mut().for_each(|v| rename(v, generated)),
            _ => {}
        }
    }
    documents.iter_mut().for_each(|d| rename(d, &generated));
    Rendered::Output(documents)
}

/// Where plait's render of the case differs from upstream's, leaving out
/// the documented deliberate differences.
fn differences(dir: &Path) -> Vec<String> {
    let composition = std::fs::read_to_string(dir.join("composition.yaml")).expect("composition");
    let plait = without_generated_names(render(dir));
    let upstream = without_generated_names(corpus::recorded(dir).expect("recorded render"));
    corpus::unexplained_differences(&composition, &plait, &upstream)
}

#[test]
fn every_kcl_case_renders_what_upstream_rendered() {
    let dirs = corpus::case_dirs(&corpus()).expect("the KCL corpus");
    assert_eq!(dirs.len(), CASES, "the KCL corpus has {CASES} cases");
    let name = |dir: &Path| corpus::case_name(dir);
    for known in KNOWN_DIFFERENCES {
        assert!(
            dirs.iter().any(|d| name(d) == known.case),
            "{} is not a case of the corpus",
            known.case
        );
    }

    let next = Mutex::new(dirs.iter());
    let found = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..WORKERS {
            scope.spawn(|| {
                loop {
                    let Some(dir) = next.lock().unwrap().next() else {
                        break;
                    };
                    let differences = differences(dir);
                    found.lock().unwrap().push((name(dir), differences));
                }
            });
        }
    });
    let mut found = found.into_inner().unwrap();
    found.sort();

    let mut failures = Vec::new();
    let mut identical = 0;
    for (case, differences) in &found {
        let known = KNOWN_DIFFERENCES.iter().find(|k| k.case == case);
        match (differences.is_empty(), known) {
            (true, None) => identical += 1,
            (true, Some(_)) => failures.push(format!(
                "{case}: renders what upstream rendered now; take it off KNOWN_DIFFERENCES"
            )),
            (false, Some(known)) if known.explains(differences) => {
                eprintln!("{case}: differs as known: {}", known.why)
            }
            (false, _) => failures.push(format!("{case}:\n    {}", differences.join("\n    "))),
        }
    }
    eprintln!(
        "{identical} of {} KCL cases render what upstream rendered; {} differ as known",
        found.len(),
        KNOWN_DIFFERENCES.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} KCL cases are not as expected:\n{}",
        failures.len(),
        found.len(),
        failures.join("\n")
    );
}
