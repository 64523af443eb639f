//! Functions in the cluster: the package store the Function controller
//! fills ([`InstalledPackages`]), the controller itself, and [`Functions`],
//! what the XR controllers run pipelines with.
//!
//! The Function controller installs each Function's package and reports
//! how it went. Each `pkg.crossplane.io/v1` Function names a package: a
//! function built into plait (nothing pulled; its embedded component is
//! compiled into the runtime's module cache on install, so no XR's
//! reconcile waits for it to compile) or an OCI reference, which the
//! controller resolves to a digest with plait-oci, verifies, compiles once
//! and records in `status.resolvedDigest`, with `Installed` and `Healthy`
//! conditions whose reasons are plait-oci's stable reasons. When what a
//! Function resolves to changes, or the Function is deleted, the XRs whose
//! Compositions use it are reconciled at once.
//!
//! - `triggers.rs`: what wakes a Function;
//! - `reconcile.rs`: one Function's reconcile;
//! - `context.rs`: [`FunctionContext`], and how a package is installed;
//! - `packages.rs`: [`InstalledPackages`], the store it fills;
//! - `image_config.rs`: what ImageConfigs make of a package;
//! - `kcl_modules.rs`: the KCL modules function-kcl steps name, fetched
//!   with the packages' client for a revision's pipeline.

mod context;
pub mod image_config;
mod kcl_modules;
mod packages;
mod reconcile;
mod triggers;

use std::future::Future;
use std::sync::Arc;

use kube::api::DynamicObject;
use kube::runtime::reflector::store::Writer;
use plait_functions::{CacheLimits, FairShare, Resolver, ResponseCache, ShareLimits};
use plait_runtime::{CallLimits, Runtime};

use crate::controllers::kit::{self, ObjectError, ReconcileFailure};
use crate::stores::catalog::StepDirectories;

pub use context::FunctionContext;
pub use packages::InstalledPackages;
pub use reconcile::reconcile;

/// Upstream's reasons for an installed, healthy package.
pub const REASON_ACTIVE: &str = "ActivePackageRevision";
pub const REASON_HEALTHY: &str = "HealthyPackageRevision";

#[derive(Debug, thiserror::Error)]
pub enum FunctionError {
    #[error(transparent)]
    Object(#[from] ObjectError),
    #[error("Function {function:?}: compiling its package did not finish: {source}")]
    Join {
        function: String,
        #[source]
        source: tokio::task::JoinError,
    },
}

impl ReconcileFailure for FunctionError {
    fn metric_label(&self) -> &'static str {
        match self {
            FunctionError::Object(error) => error.metric_label(),
            FunctionError::Join { .. } => "join",
        }
    }
}

/// Runs the Function controller until `shutdown` resolves, filling the
/// Function store `writer` writes (which XR reconciles read Functions from).
pub async fn run(
    ctx: Arc<FunctionContext>,
    writer: Writer<DynamicObject>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let controller = triggers::controller(&ctx, writer);
    tracing::info!(
        namespace = ctx.packages.namespace(),
        "Function controller started"
    );
    kit::run(controller, reconcile, ctx, shutdown).await;
}

/// Where pull secrets are read when plait is not told otherwise.
pub const DEFAULT_NAMESPACE: &str = "plait-system";

/// How the controller serves the functions pipelines name: the shared
/// [`Resolver`] and, when it serves OCI packages, the store the Function
/// controller installs them into.
#[derive(Clone)]
pub struct Functions {
    pub resolver: Arc<Resolver>,
    pub packages: Option<Arc<InstalledPackages>>,
    /// The function-call slots tenants share.
    pub share: Arc<FairShare>,
    /// Earlier calls' responses, for calls repeating a request; `None` turns
    /// the cache off.
    pub response_cache: Option<Arc<ResponseCache>>,
}

/// One call slot per core by default: calls are CPU-bound, so more slots
/// would only make every call slower.
fn default_slots() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

impl Functions {
    /// plait's built-in functions only; Functions with other packages are refused.
    pub fn builtins(runtime: Runtime) -> Functions {
        Functions {
            resolver: Arc::new(Resolver::builtins(runtime)),
            packages: None,
            share: Arc::new(FairShare::new(default_slots())),
            response_cache: Some(Arc::new(ResponseCache::new(CacheLimits::default()))),
        }
    }

    /// The built-ins, and every other Function from the packages the
    /// Function controller installs into `packages`.
    pub fn packages(packages: Arc<InstalledPackages>) -> Functions {
        Functions::packages_within(packages, CallLimits::default())
    }

    /// [`Functions::packages`], every call getting at most `maximum` (and
    /// that where its Function sets no limit of its own).
    pub fn packages_within(packages: Arc<InstalledPackages>, maximum: CallLimits) -> Functions {
        let resolver = Resolver::builtins(packages.runtime().clone())
            .with_packages(packages.clone())
            .with_maximum(maximum);
        Functions {
            resolver: Arc::new(resolver),
            packages: Some(packages),
            share: Arc::new(FairShare::new(default_slots())),
            response_cache: Some(Arc::new(ResponseCache::new(CacheLimits::default()))),
        }
    }

    /// At most `slots` function calls at once (default: one per CPU),
    /// shared fairly between tenants, and at most `per_tenant` of one tenant.
    pub fn with_call_slots(mut self, slots: Option<usize>, per_tenant: Option<usize>) -> Functions {
        self.share = Arc::new(FairShare::with_limits(ShareLimits {
            slots: slots.unwrap_or_else(default_slots),
            per_tenant,
        }));
        self
    }

    /// Answers repeated requests from a response cache within `limits`, or
    /// (`None`) calls the function every time.
    pub fn with_response_cache(mut self, limits: Option<CacheLimits>) -> Functions {
        self.response_cache = limits.map(|limits| Arc::new(ResponseCache::new(limits)));
        self
    }

    pub fn runtime(&self) -> &Runtime {
        self.resolver.runtime()
    }

    /// What fetches the KCL modules a revision's function-kcl steps name,
    /// with the packages' registry client, reading the steps'
    /// `kcl-registry` Secrets through `kube`; none when the controller
    /// pulls no packages.
    pub fn step_directories(&self, kube: &kube::Client) -> Option<Arc<dyn StepDirectories>> {
        let packages = self.packages.clone()?;
        Some(Arc::new(kcl_modules::KclStepModules {
            packages,
            kube: kube.clone(),
        }))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use plait_functions::{FUNCTION_API_VERSION, FUNCTION_KIND};
    use plait_runtime::Runtime;
    use serde_json::{Value, json};

    use super::{DEFAULT_NAMESPACE, InstalledPackages};

    /// The Function `fn` with `package` and `status`.
    pub fn function(package: &str, status: Value) -> Value {
        json!({
            "apiVersion": FUNCTION_API_VERSION, "kind": FUNCTION_KIND,
            "metadata": {"name": "fn", "generation": 2},
            "spec": {"package": package},
            "status": status,
        })
    }

    /// An empty package store with a registry client that reaches nothing.
    pub fn packages() -> Arc<InstalledPackages> {
        Arc::new(InstalledPackages::new(
            plait_oci::Client::new(plait_oci::ClientConfig::default()).unwrap(),
            Runtime::new(plait_runtime::RuntimeConfig::default()).unwrap(),
            DEFAULT_NAMESPACE,
        ))
    }
}
