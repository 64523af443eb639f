//! Functions in the cluster: the package store the Function controller
//! fills ([`InstalledPackages`]), the controller itself, and [`Functions`],
//! what the XR controllers run pipelines with.

pub mod controller;
mod packages;

use std::sync::Arc;

use plait_functions::Resolver;
use plait_runtime::Runtime;

pub use packages::InstalledPackages;

/// Where pull secrets are read when plait is not told otherwise.
pub const DEFAULT_NAMESPACE: &str = "plait-system";

/// How the controller serves the functions pipelines name: the shared
/// [`Resolver`] and, when it serves OCI packages, the store the Function
/// controller installs them into.
#[derive(Clone)]
pub struct Functions {
    pub resolver: Arc<Resolver>,
    pub packages: Option<Arc<InstalledPackages>>,
}

impl Functions {
    /// plait's built-in functions only; Functions with other packages are refused.
    pub fn builtins(runtime: Runtime) -> Functions {
        Functions {
            resolver: Arc::new(Resolver::builtins(runtime)),
            packages: None,
        }
    }

    /// The built-ins, and every other Function from the packages the
    /// Function controller installs into `packages`.
    pub fn packages(packages: Arc<InstalledPackages>) -> Functions {
        let resolver =
            Resolver::builtins(packages.runtime().clone()).with_packages(packages.clone());
        Functions {
            resolver: Arc::new(resolver),
            packages: Some(packages),
        }
    }

    pub fn runtime(&self) -> &Runtime {
        self.resolver.runtime()
    }
}
