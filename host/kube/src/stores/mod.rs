//! Stores: every watch-fed cache reconciles read instead of the API
//! server, filled through one reflector helper ([`reflect`]): the composed
//! resources of watched kinds, the EnvironmentConfigs with their tenants'
//! access reviews, and the catalog of Compositions, revisions and Functions
//! with the pipelines compiled from them; and what a watch's events change,
//! object by object ([`changes`]). Imports API access and the vocabulary only.

pub mod catalog;
pub mod changes;
pub mod composed;
pub mod environment;
pub mod reflect;
