//! plait-validate's integration tests, one module per subject, in one test
//! binary: each binary links the crate and its dependencies again, so one
//! costs a link where a file each cost six. The API server tests share one
//! test cluster (`ControlPlane::shared`); each makes its own CRD, of a group
//! of its own, and its own namespace. Run one module with
//! `cargo test -p plait-validate --test all <module>::`.

mod api_server_messages;
mod cel_libraries_against_api_server;
mod core_kinds_against_api_server;
mod kubernetes_schemas;
mod module_circles;
mod schema_keywords_against_api_server;
