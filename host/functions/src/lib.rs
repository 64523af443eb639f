//! Which component runs each function a Composition's pipeline names, and
//! the runner that calls them.
//!
//! `plait render` and the controller resolve functions with the same
//! [`Resolver`], so the rule cannot drift between them: a Function object
//! whose package is upstream's package of a built-in runs the built-in; any
//! other package is served by the host's [`PackageSource`] (the controller:
//! what its Function controller installed; render: a pull from the
//! registry); a name with no Function object runs the built-in of that name.
//! [`PipelineFunctions`] then calls the resolved modules under one deadline
//! for the whole pipeline, reporting each call to a [`CallObserver`], and
//! answers calls whose request it has seen from a [`ResponseCache`].

mod cache;
mod fair;
mod pins;
mod policy;
mod resolve;
mod runner;

pub use cache::{CacheLimits, CacheScope, Call, Evicted, ResponseCache};
pub use fair::{FairShare, MAX_THROTTLE, NoTurn, Rank, ShareLimits, WaitNotice};
pub use pins::{DIGESTS_ANNOTATION, Pin, PinError, PinnedSource, Pins, current_pin, package_of};
pub use policy::{
    DEADLINE_ANNOTATION, FunctionPolicy, MEMORY_ANNOTATION, OUTPUT_ANNOTATION, PolicyError,
};
pub use resolve::{
    ClusterFunctions, FUNCTION_API_VERSION, FUNCTION_KIND, FunctionObjects, GivenFunctions,
    PackageSource, ResolveError, Resolver, Served,
};
pub use runner::{CallObserver, PipelineFunctions, ResolvedFunctions};
