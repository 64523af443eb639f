//! plait on a Kubernetes API server.
//!
//! [`KubeCluster`] is the reconcile core's [`plait_reconcile::Cluster`] over
//! kube-rs. [`run`] installs plait's CRDs, then runs the Composition
//! controller, which keeps a CompositionRevision per state of each
//! Composition, and the XRD controller, which generates a CRD per XRD and
//! starts a controller for each XR kind (and, for XRDs that offer claims, a
//! claim CRD and claim controller); the XR controllers compose from
//! revisions with the same [`plait_reconcile::Reconcile`] as `plait render`.
//! When [`Functions`] serves packages, the Function controller installs
//! Functions' OCI packages alongside.
//!
//! The crate is in layers, each a module tree that imports only the layers
//! below it (`tests/all/layers.rs` checks): `vocabulary` (names, JSON helpers,
//! metrics) → `access` (API access) → `stores` (watch-fed caches) →
//! `clusters` (`KubeCluster`, tenants' clusters, the shard fence) →
//! `controllers` → `process` (the process's entry, Leases, probes).

mod access;
mod clusters;
mod controllers;
mod process;
mod stores;
mod vocabulary;

pub use access::client::{KubeApi, LIST_PAGE, ServedKind};
pub use access::impersonation::Impersonation;
pub use access::install::{CRDS, CrdError};
pub use clusters::cluster::{KubeCluster, Shared};
pub use controllers::breaker::BreakerLimits;
pub use controllers::fair_queue::{FairQueue, FairQueueCounts, FairQueueLimits, MAX_DEBT};
pub use controllers::function::image_config;
pub use controllers::function::{DEFAULT_NAMESPACE, Functions, InstalledPackages};
pub use controllers::required::{GroupKind, Matching, Required, RequiredIndex};
pub use controllers::timing::{DEFAULT_MAX_CONCURRENT_RECONCILES, Timing};
pub use controllers::usage::{refuse_deletion, refuse_usage, usages_of};
pub use process::leader::{LeaderElection, LeaderError};
pub use process::probes::{self, Health};
pub use process::shards::Sharding;
pub use process::{ControllerError, Options, crds, encoded_metrics, install_crds, run};
pub use stores::changes::Change;
