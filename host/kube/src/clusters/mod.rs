//! The reconcile adapter: [`cluster::KubeCluster`], the one implementation of
//! `plait_reconcile::Cluster` over a real API server, answering reads from
//! the stores and falling back to API access; the tenants' clusters; and
//! the shard fence that wraps a cluster so its writes stop with the shard.
//! Imports stores, API access and the vocabulary only.

pub mod cluster;
pub mod fence;
pub mod tenants;
