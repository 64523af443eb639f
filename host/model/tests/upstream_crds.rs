//! plait's CRDs (`deploy/base/crds/`) are never narrower than upstream Crossplane's: for
//! every CRD both define, each version, field path, enum value and default upstream
//! serves is served by plait's. Upstream's CRDs are read from the Crossplane Go module
//! (`go mod download` fetches it into the module cache when it is missing).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use plait_model::crd_width::narrowings;
use serde_json::Value;

/// The Crossplane release whose CRDs plait's are compared against.
const UPSTREAM_MODULE: &str = "github.com/crossplane/crossplane/v2@v2.3.4";

/// Upstream CRDs plait does not serve, because plait has no controller for them.
const NOT_SERVED: &[&str] = &[
    "managedresourceactivationpolicies.apiextensions.crossplane.io",
    "managedresourcedefinitions.apiextensions.crossplane.io",
    "cronoperations.ops.crossplane.io",
    "operations.ops.crossplane.io",
    "watchoperations.ops.crossplane.io",
    "configurationrevisions.pkg.crossplane.io",
    "configurations.pkg.crossplane.io",
    "deploymentruntimeconfigs.pkg.crossplane.io",
    "functionrevisions.pkg.crossplane.io",
    "locks.pkg.crossplane.io",
    "providerrevisions.pkg.crossplane.io",
    "providers.pkg.crossplane.io",
];

/// Where plait deliberately differs: it serves Crossplane v1's `mode: Resources`, so a
/// Composition without `mode` keeps v1's meaning (Resources when it has `spec.resources`,
/// Pipeline otherwise) instead of upstream v2's default of Pipeline. Every Composition
/// upstream v2 accepts has a pipeline, so plait runs it in Pipeline mode either way.
const DELIBERATE: &[(&str, &str)] = &[
    (
        "compositions.apiextensions.crossplane.io",
        "v1: .spec.mode has no default (expected \"Pipeline\")",
    ),
    (
        "compositionrevisions.apiextensions.crossplane.io",
        "v1: .spec.mode has no default (expected \"Pipeline\")",
    ),
];

fn upstream_crd_dir() -> PathBuf {
    let output = Command::new("go")
        .args(["mod", "download", "-json", UPSTREAM_MODULE])
        .env("GOFLAGS", "-mod=mod")
        .output()
        .expect("go is installed");
    assert!(
        output.status.success(),
        "go mod download {UPSTREAM_MODULE}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let described: Value = serde_json::from_slice(&output.stdout).unwrap();
    Path::new(described["Dir"].as_str().unwrap()).join("cluster/crds")
}

fn crds_in(dir: &Path) -> BTreeMap<String, Value> {
    let mut crds = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let crd: Value =
            serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = crd["metadata"]["name"].as_str().unwrap().to_string();
        crds.insert(name, crd);
    }
    crds
}

#[test]
fn every_upstream_crd_plait_defines_is_served_at_least_as_widely_by_plait() {
    let upstream = crds_in(&upstream_crd_dir());
    let plait = crds_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/base/crds"));
    let mut compared = Vec::new();
    let mut unserved = Vec::new();
    for (name, theirs) in &upstream {
        let Some(ours) = plait.get(name) else {
            unserved.push(name.as_str());
            continue;
        };
        let missing: Vec<String> = narrowings(theirs, ours)
            .iter()
            .map(ToString::to_string)
            .filter(|found| !DELIBERATE.contains(&(name.as_str(), found.as_str())))
            .collect();
        assert!(
            missing.is_empty(),
            "{name} is narrower than {UPSTREAM_MODULE}'s:\n{}",
            missing.join("\n")
        );
        compared.push(name.as_str());
    }
    assert_eq!(
        compared.len(),
        plait.len(),
        "every CRD of plait's has an upstream counterpart: {compared:?}"
    );
    let mut expected_unserved = NOT_SERVED.to_vec();
    expected_unserved.sort_unstable();
    unserved.sort_unstable();
    assert_eq!(
        unserved, expected_unserved,
        "the upstream CRDs plait does not serve"
    );
}

#[test]
fn a_crd_missing_an_upstream_field_is_reported_as_narrower() {
    let upstream = crds_in(&upstream_crd_dir());
    let mut composition = upstream["compositions.apiextensions.crossplane.io"].clone();
    let spec = composition
        .pointer_mut("/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties")
        .and_then(Value::as_object_mut)
        .unwrap();
    spec.remove("mode");
    let missing: Vec<String> = narrowings(
        &upstream["compositions.apiextensions.crossplane.io"],
        &composition,
    )
    .iter()
    .map(ToString::to_string)
    .collect();
    assert_eq!(missing, vec!["v1: field .spec.mode is missing".to_string()]);
}
