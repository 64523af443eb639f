//! API access: the counted kube client with discovery and OpenAPI lookups,
//! the record of the controller's own writes, CRD installation, and the
//! clients that impersonate tenants. Knows nothing of stores or controllers.

pub mod client;
pub mod events;
pub mod impersonation;
pub mod install;
pub mod openapi;
pub mod writes;
