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
