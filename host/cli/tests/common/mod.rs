//! Paths every CLI test binary needs.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::path::{Path, PathBuf};

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
