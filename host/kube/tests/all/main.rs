//! plait-kube's integration tests, one module per subject, in one test
//! binary: each binary links wasmtime and kube-rs again, so one costs a link
//! where a file each cost twelve.
//!
//! The cluster tests share one control plane (`TestCluster::shared`) and
//! the controller [`support::cluster`] runs on it; each makes its own XRDs
//! (groups of its own), Compositions and namespaces. A test that needs a
//! controller of its own (other options, other functions, or the only one
//! over XRs made before it starts) or installs CRDs its own way starts a
//! cluster of its own (`TestCluster::dedicated`), as two controllers on one API
//! server would both reconcile every XR. The tests that read the
//! controller's metrics, which count what every controller of the process
//! did, run in a process of their own ([`support::in_own_process`]).
//!
//! Run one module with `cargo test -p plait-kube --test all <module>::`.

mod support;

mod backlog;
mod claims;
mod controller;
mod environment;
mod functions;
mod idle;
mod impersonation;
mod install;
mod layers;
mod leader;
mod required;
mod takeover;
mod tenants;
mod usages;
