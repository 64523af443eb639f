//! Controllers: the XRD, composite (XR), claim, Composition (revisions) and
//! Function controllers, each a folder, and what they share: the
//! controller kit (policy, start, shared errors, lifecycle), timing and backoff, the fair admission queue, the
//! watch circuit breaker, the registry of child controllers per XRD, and
//! the composed-resource watches that route events to XR controllers and
//! fill the composed store. Imports the adapter, stores, API access and
//! the vocabulary only.

pub mod admission;
pub mod breaker;
pub mod children;
pub mod claim;
pub mod composite;
pub mod function;
pub mod kit;
pub mod revisions;
pub mod runs;
pub mod timing;
pub mod usage;
pub mod watches;
pub mod xrd;
