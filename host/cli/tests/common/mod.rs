//! Paths every CLI test binary needs.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub mod kube_support;

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Where `make toolchains` puts the guest toolchains' commands.
pub fn tools_bin() -> PathBuf {
    PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/plait/bin")
}

/// Corpus cases whose function input upstream's function refuses, with the
/// fatal result it gives (and plait must give): `plait render` fails them.
pub const CORPUS_REFUSED: &[(&str, &str)] = &[(
    // `type: Format` inside a Combine's `string` block, which upstream's
    // `StringCombine` does not declare (nor `policy.mergeOptions`, which
    // comes later in the order upstream reads the input).
    "crossplane-on-eks__microservice-pipeline",
    "cannot get Function input: cannot get function input *v1beta1.Resources from \
     *v1.RunFunctionRequest: cannot unmarshal JSON from *structpb.Struct into *v1beta1.Resources: \
     json: cannot unmarshal Go value of type v1beta1.StringCombine: unknown name \"type\"",
)];

/// The fatal result upstream gives the corpus case `name`, if it refuses it.
pub fn corpus_refused(name: &str) -> Option<&'static str> {
    CORPUS_REFUSED
        .iter()
        .find(|(case, _)| *case == name)
        .map(|(_, message)| *message)
}

/// Each object by apiVersion, kind, namespace and name; no two may share one.
pub fn by_identity(objects: impl IntoIterator<Item = Value>) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for object in objects {
        let key = format!(
            "{} {} {}/{}",
            object["apiVersion"].as_str().unwrap_or_default(),
            object["kind"].as_str().unwrap_or_default(),
            object["metadata"]["namespace"].as_str().unwrap_or_default(),
            object["metadata"]["name"].as_str().unwrap_or_default()
        );
        assert!(out.insert(key.clone(), object).is_none(), "{key} twice");
    }
    out
}

/// Asserts that two sets of objects, each [`by_identity`], hold the same
/// objects, naming the first that differs.
pub fn assert_same_objects(
    got: &BTreeMap<String, Value>,
    want: &BTreeMap<String, Value>,
    what: &str,
) {
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{what}: the objects"
    );
    for (key, wanted) in want {
        assert_eq!(&got[key], wanted, "{what}: {key}");
    }
}
