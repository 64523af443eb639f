//! plait computes upstream Crossplane v2.3.4's `Composition.Hash()` exactly: the
//! expected hashes in `tests/composition-hash/expected.json` were printed by
//! upstream's own code (`tests/composition-hash/main.go`) for every Composition of
//! `tests/corpus` and the edge cases of `tests/composition-hash/edge-cases.json`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use plait_model::composition_hash::{
    upstream_composition_hash, upstream_revision_hash_label, upstream_revision_name,
};
use serde_json::{Value, json};

fn expectations() -> Vec<Value> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/composition-hash/expected.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn every_recorded_composition_hashes_as_upstream_hashed_it() {
    let expected = expectations();
    assert!(
        expected.len() > 40,
        "the corpus and the edge cases are recorded"
    );
    let mut wrong = Vec::new();
    for case in &expected {
        let hash = upstream_composition_hash(&case["object"]).unwrap();
        if hash != case["hash"].as_str().unwrap() {
            wrong.push(case["source"].as_str().unwrap().to_string());
        }
    }
    assert!(
        wrong.is_empty(),
        "hashes differ from upstream's for {wrong:?}"
    );
}

#[test]
fn a_change_to_labels_annotations_or_a_spec_field_upstream_reads_changes_the_hash() {
    let base = json!({"metadata": {"name": "c"}, "spec": {"compositeTypeRef": {"apiVersion": "v1", "kind": "K"}, "mode": "Pipeline"}});
    let hash = upstream_composition_hash(&base).unwrap();
    let changes = [
        ("a label", "/metadata/labels", json!({"a": "b"})),
        ("an annotation", "/metadata/annotations", json!({"a": "b"})),
        ("the mode", "/spec/mode", json!("Resources")),
    ];
    for (what, pointer, value) in changes {
        let mut changed = base.clone();
        let (parent, field) = pointer.rsplit_once('/').unwrap();
        changed.pointer_mut(parent).unwrap()[field] = value;
        assert_ne!(upstream_composition_hash(&changed).unwrap(), hash, "{what}");
    }
    let mut renamed = base.clone();
    renamed["metadata"]["name"] = json!("other");
    assert_eq!(
        upstream_composition_hash(&renamed).unwrap(),
        hash,
        "the name does not count"
    );
}

#[test]
fn a_composition_upstream_could_not_read_is_refused_naming_the_field() {
    let cases = [
        (
            json!({"metadata": {"labels": {"a": 1}}}),
            "Composition metadata.labels: must be a map of strings",
        ),
        (
            json!({"spec": {"pipeline": {"step": "s"}}}),
            "Composition spec.pipeline: must be a list",
        ),
        (
            json!({"spec": {"pipeline": [{"step": 1}]}}),
            "Composition spec.pipeline[0].step: must be a string",
        ),
    ];
    for (composition, message) in cases {
        assert_eq!(
            upstream_composition_hash(&composition)
                .unwrap_err()
                .to_string(),
            message
        );
    }
}

#[test]
fn revisions_are_named_and_labelled_as_upstream_names_them() {
    let hash = "0123456789abcdef".repeat(4);
    assert_eq!(
        upstream_revision_name("xapps.example.org", &hash),
        "xapps.example.org-0123456"
    );
    assert_eq!(upstream_revision_hash_label(&hash).len(), 63);
    assert!(hash.starts_with(&upstream_revision_hash_label(&hash)));
}
