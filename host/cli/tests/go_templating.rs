//! `plait render` on every case of `tests/corpus-go-templating`, against the
//! output upstream `crossplane render` recorded for it (function-go-templating
//! v0.12.2 and the functions beside it): documents compared as the
//! differential suite compares them (normalised, results as a set,
//! documented deliberate differences accepted), and a refused case by the
//! message its function gave.
//!
//! A case where plait deliberately does otherwise than upstream, or lacks
//! what the case needs, is listed in [`DEVIATIONS`] with why: what plait
//! does with the case as given is asserted, and where the deviation can be
//! taken out of the inputs, plait must then render what upstream recorded.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use plait_differential::{Rendered, corpus, parse_stream};
use serde_json::Value;

mod common;
use common::repo;

/// How many cases the corpus has; a case that goes missing fails the test.
const CASES: usize = 36;

/// What plait does with a case's inputs.
#[derive(Debug)]
enum Plait {
    /// Renders what upstream recorded for the named case (or refuses it
    /// with the same message, where upstream refused it).
    Matches(&'static str),
    /// Renders, but without the named composed resource.
    Omits(&'static str),
    /// Fails with this in its error.
    Fails(&'static str),
}

/// A case plait does not render as upstream did, and why.
struct Deviation {
    case: &'static str,
    why: &'static str,
    /// What plait does with the case as given.
    as_given: Plait,
    /// The case's inputs (a scratch copy) changed to take the deviation
    /// out, and what plait does with them.
    without: Option<(Change, Plait)>,
}

/// A change to a scratch copy of a case's directory.
type Change = fn(&Path);

const DEVIATIONS: &[Deviation] = &[
    Deviation {
        case: "function-go-templating__context",
        why: "deliberate: Crossplane v2 serves EnvironmentConfigs at v1beta1 only, so upstream finds \
              no v1alpha1 one; plait's EnvironmentConfig CRD serves v1alpha1 too \
              (deploy/base/crds, render's served_version), so the example renders as its v1beta1 variant",
        as_given: Plait::Matches("function-go-templating__context-v1beta1"),
        without: None,
    },
    Deviation {
        case: "function-go-templating__environment",
        why: "deliberate: as function-go-templating__context",
        as_given: Plait::Matches("function-go-templating__environment-v1beta1"),
        without: None,
    },
    Deviation {
        case: "crossplane-diff__extra-resources-cross-namespace",
        why: "deliberate (docs/tenancy.md): a namespaced XR is a tenant; a required-resources \
              selector without a namespace reads only the tenant's namespace, so the ConfigMap in \
              another namespace is not found",
        as_given: Plait::Omits("nop-resource"),
        without: Some((configmaps_in_the_xr_namespace, Plait::Matches(""))),
    },
    Deviation {
        case: "function-go-templating__filesystem",
        why: "`source: FileSystem` reads the function's own filesystem: upstream's pod mounts \
              the templates at /templates; plait render grants a directory only by the \
              Function's render.plait.dev/filesystem annotation. As given, functions.yaml also \
              holds a DeploymentRuntimeConfig, which plait refuses as upstream's CLI does \
              (\"not a function\"); the recording left it out",
        as_given: Plait::Fails("functions.yaml: not a valid Function"),
        without: Some((granted_function_documents, Plait::Matches(""))),
    },
];

fn corpus() -> PathBuf {
    repo().join("tests/corpus-go-templating")
}

fn render(dir: &Path) -> Rendered {
    let plait = Path::new(env!("CARGO_BIN_EXE_plait"));
    let cache = repo().join("target/plait-test-cache");
    corpus::render_case(plait, &cache, dir, Path::new("functions.yaml")).expect("plait runs")
}

/// Where plait's render of the case in `dir` differs from upstream's of
/// `case` and no documented deliberate difference explains it.
fn differences(dir: &Path, case: &str) -> Vec<String> {
    let composition = std::fs::read_to_string(dir.join("composition.yaml")).expect("composition");
    let upstream = corpus::recorded(&corpus().join(case)).expect("recorded render");
    corpus::unexplained_differences(&composition, &render(dir), &upstream)
}

/// Where plait's render of the case in `dir` is not `want`; `case` is the
/// case's name, which `Matches("")` stands for.
fn check(dir: &Path, case: &str, want: &Plait) -> Vec<String> {
    match want {
        Plait::Matches(other) => differences(dir, if other.is_empty() { case } else { other }),
        Plait::Omits(resource) => match render(dir) {
            Rendered::Output(documents) => documents
                .iter()
                .filter(|d| {
                    d.pointer("/metadata/annotations/crossplane.io~1composition-resource-name")
                        .and_then(Value::as_str)
                        == Some(resource)
                })
                .map(|_| format!("expected no composed resource {resource:?}"))
                .collect(),
            other => vec![format!("expected a render, got {other:?}")],
        },
        Plait::Fails(error) => match render(dir) {
            Rendered::Failed(message) if message.contains(error) => Vec::new(),
            Rendered::Failed(message) => vec![format!("expected {error:?} in: {message}")],
            _ => vec![format!(
                "expected a failure with {error:?}, but it rendered"
            )],
        },
    }
}

/// A scratch copy of the case's directory.
fn scratch_copy(dir: &Path, scratch: &Path) -> PathBuf {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let path = entry.unwrap().path();
            let target = to.join(path.file_name().unwrap());
            if path.is_dir() {
                copy(&path, &target);
            } else {
                std::fs::copy(&path, &target).unwrap();
            }
        }
    }
    let copy_dir = scratch.join(dir.file_name().unwrap());
    copy(dir, &copy_dir);
    copy_dir
}

fn read_documents(path: &Path) -> Vec<Value> {
    parse_stream(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn write_documents(path: &Path, documents: &[Value]) {
    let text: String = documents
        .iter()
        .map(|d| format!("---\n{}", serde_yaml_ng::to_string(d).unwrap()))
        .collect();
    std::fs::write(path, text).unwrap();
}

/// The extra resources' ConfigMaps moved into the XR's namespace.
fn configmaps_in_the_xr_namespace(dir: &Path) {
    let xr = read_documents(&dir.join("xr.yaml")).remove(0);
    let namespace = xr.pointer("/metadata/namespace").cloned().unwrap();
    let path = dir.join("extra-resources.yaml");
    let mut documents = read_documents(&path);
    for document in &mut documents {
        if document["kind"] == "ConfigMap" {
            document["metadata"]["namespace"] = namespace.clone();
        }
    }
    write_documents(&path, &documents);
}

/// functions.yaml with only its Functions, as the recording ran it, each
/// granted the case's `templates` directory at /templates.
fn granted_function_documents(dir: &Path) {
    let path = dir.join("functions.yaml");
    let mut documents = read_documents(&path);
    documents.retain(|d| d["kind"] == "Function");
    for document in &mut documents {
        document["metadata"]["annotations"]["render.plait.dev/filesystem"] =
            serde_json::json!("templates=/templates");
    }
    write_documents(&path, &documents);
}

#[test]
fn every_go_templating_case_renders_what_upstream_rendered() {
    let dirs = corpus::case_dirs(&corpus()).expect("the go-templating corpus");
    assert_eq!(
        dirs.len(),
        CASES,
        "the go-templating corpus has {CASES} cases"
    );
    for deviation in DEVIATIONS {
        assert!(
            dirs.iter().any(|d| d.ends_with(deviation.case)),
            "{} is not a case of the corpus",
            deviation.case
        );
    }
    let scratch = tempfile::tempdir().expect("tempdir");
    let mut failures = Vec::new();
    let mut matching = 0;
    for dir in &dirs {
        let case = corpus::case_name(dir);
        let case = case.as_str();
        let deviation = DEVIATIONS.iter().find(|d| d.case == case);
        let mut found = match deviation {
            None => differences(dir, case),
            Some(deviation) => check(dir, case, &deviation.as_given),
        };
        if let Some((change, want)) = deviation.and_then(|d| d.without.as_ref()) {
            let changed = scratch_copy(dir, scratch.path());
            change(&changed);
            found.extend(
                check(&changed, case, want)
                    .into_iter()
                    .map(|d| format!("with the deviation taken out: {d}")),
            );
        }
        match (found.is_empty(), deviation) {
            (true, None) => matching += 1,
            (true, Some(deviation)) => eprintln!("{case}: {}", deviation.why),
            (false, _) => failures.push(format!("{case}:\n    {}", found.join("\n    "))),
        }
    }
    eprintln!(
        "{matching} of {} cases render what upstream rendered; {} deviate as listed",
        dirs.len(),
        DEVIATIONS.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from upstream:\n{}",
        failures.len(),
        dirs.len(),
        failures.join("\n")
    );
}
