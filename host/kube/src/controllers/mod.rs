//! Controllers: the XRD, composite (XR), claim, Composition, Usage and
//! Function controllers, each a folder, and what they share: the
//! controller kit (policy, start, shared errors, lifecycle), timing and
//! backoff, the fair queue of XR and claim reconciles, the
//! watch circuit breaker, the registry of child controllers per XRD, and
//! the composed-resource watches that route events to XR controllers and
//! fill the composed store, and the required-resource watches and index
//! that queue the XRs whose functions read what changed. Imports the adapter, stores, API access and
//! the vocabulary only.

pub mod breaker;
pub mod children;
pub mod claim;
pub mod composite;
pub mod composition;
pub mod fair_queue;
pub mod function;
pub mod kit;
pub mod required;
pub mod runs;
pub mod timing;
pub mod usage;
pub mod watches;
pub mod xrd;
