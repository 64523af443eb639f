//! plait-runtime's integration tests, one module per subject, in one test
//! binary: each binary links wasmtime again, so one costs a link where a
//! file each cost four. Guests are built once per process into
//! `CARGO_TARGET_TMPDIR`. Run one module with
//! `cargo test -p plait-runtime --test all <module>::`.

mod ecosystem;
mod filesystem;
mod go_guest;
mod go_snapshot;
mod kcl;
mod limits;
