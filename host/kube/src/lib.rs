//! plait on a Kubernetes API server.
//!
//! [`KubeCluster`] is the reconcile core's [`plait_reconcile::Cluster`] over
//! kube-rs. [`run`] installs plait's CRDs, then runs the Composition
//! controller, which keeps a CompositionRevision per state of each
//! Composition, and the XRD controller, which generates a CRD per XRD and
//! starts a controller for each XR kind (and, for XRDs that offer claims, a
//! claim CRD and claim controller); the XR controllers compose from
//! revisions with the same [`plait_reconcile::Reconcile`] as `plait render`.
//! With a [`PackageResolver`], the Function controller installs Functions'
//! OCI packages alongside.

pub mod claim;
pub mod cluster;
pub mod connection;
pub mod crd;
pub mod function;
pub mod functions;
pub mod leader;
pub mod metrics;
pub mod probes;
pub mod revisions;
pub mod watches;
pub mod xr;
pub mod xrd;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::{Controller, watcher};
use serde_json::Value;

pub use cluster::{KubeCluster, ServedKind};
pub use function::{DEFAULT_NAMESPACE, PackageResolver, Packages};
pub use functions::{BuiltinResolver, FunctionResolver, PipelineFunctions, ResolveError};
pub use leader::{LeaderElection, LeaderError};
pub use probes::Health;
pub use xr::Timing;
pub use xrd::Manager;

/// plait's own CRDs (XRD, Composition, CompositionRevision, EnvironmentConfig, Function).
pub const CRDS: &str = include_str!(concat!(env!("OUT_DIR"), "/crds.yaml"));

#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    #[error("plait CRDs: {0}")]
    Parse(String),
    #[error("CustomResourceDefinition {name}: {message}")]
    Install { name: String, message: String },
    #[error(transparent)]
    Leader(#[from] LeaderError),
    #[error("lost the leader Lease; stopped so a replica that holds it can take over")]
    LeadershipLost,
}

/// How the controllers run.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub timing: Timing,
    /// Run only while holding this Lease; `None` runs unconditionally.
    pub leader_election: Option<LeaderElection>,
    /// Marked ready once plait's CRDs are installed.
    pub health: Arc<Health>,
}

impl From<Timing> for Options {
    fn from(timing: Timing) -> Options {
        Options {
            timing,
            ..Options::default()
        }
    }
}

/// The CRDs in [`CRDS`], as objects.
pub fn crds() -> Result<Vec<Value>, ControllerError> {
    plait_model::parse_documents(CRDS, "crds").map_err(|e| ControllerError::Parse(e.to_string()))
}

/// Server-side applies plait's CRDs and waits until each is established.
pub async fn install_crds(client: &Client, timeout: Duration) -> Result<(), ControllerError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut names = Vec::new();
    for crd in crds()? {
        let name = crd
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        api.patch(
            &name,
            &PatchParams::apply(xrd::FIELD_MANAGER).force(),
            &Patch::Apply(&crd),
        )
        .await
        .map_err(|e| ControllerError::Install {
            name: name.clone(),
            message: e.to_string(),
        })?;
        names.push(name);
    }
    for name in names {
        let established = tokio::time::timeout(
            timeout,
            await_condition(api.clone(), &name, conditions::is_crd_established()),
        )
        .await;
        match established {
            Ok(Ok(Some(_))) => {}
            Ok(Err(e)) => {
                return Err(ControllerError::Install {
                    name,
                    message: e.to_string(),
                });
            }
            _ => {
                return Err(ControllerError::Install {
                    name,
                    message: format!("not established within {timeout:?}"),
                });
            }
        }
    }
    Ok(())
}

/// Installs the CRDs and runs the controllers until `shutdown` resolves;
/// then lets running reconciles finish and stops. With leader election the
/// controllers start only once this replica holds the Lease, and stop with
/// [`ControllerError::LeadershipLost`] if it is lost. The Function controller
/// runs when `resolver` serves packages ([`FunctionResolver::packages`]).
pub async fn run(
    client: Client,
    resolver: Arc<dyn FunctionResolver>,
    options: impl Into<Options>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) -> Result<(), ControllerError> {
    let options = options.into();
    let shutdown = shutdown.shared();
    install_crds(&client, Duration::from_secs(60)).await?;
    options.health.set_ready(true);
    metrics::metrics().watch_runtime(resolver.runtime().clone());
    let leadership = match &options.leader_election {
        Some(election) => match election.acquire(client.clone(), shutdown.clone()).await? {
            Some(leadership) => Some(leadership),
            None => return Ok(()),
        },
        None => None,
    };
    let lost = leadership.as_ref().map(leader::Leadership::lost);
    let stop = async move {
        match lost {
            Some(lost) => {
                futures::future::select(shutdown, Box::pin(lost)).await;
            }
            None => shutdown.await,
        }
    }
    .boxed()
    // The controller wants a Sync trigger; a shared future is one.
    .shared();
    let cluster = KubeCluster::new(client.clone(), tokio::runtime::Handle::current());
    let revisions = revisions::run(
        Arc::new(revisions::RevisionContext {
            cluster: cluster.clone(),
            poll_interval: options.timing.poll_interval,
        }),
        stop.clone(),
    );
    let packages = resolver.packages();
    let timing = options.timing;
    let manager = Arc::new(Manager::new(cluster.clone(), resolver, timing.clone()));
    let api: Api<DynamicObject> = Api::all_with(client, &xrd::xrd_resource());
    tracing::info!("controller started");
    let xrds = Controller::new_with(api, watcher::Config::default(), xrd::xrd_resource())
        .graceful_shutdown_on(stop.clone())
        .run(xrd::reconcile, xrd::error_policy, manager.clone())
        .for_each(|_| futures::future::ready(()));
    match packages {
        Some(packages) => {
            let context =
                function::FunctionContext::new(packages, cluster, manager.watches.clone(), timing);
            futures::join!(revisions, xrds, function::run(Arc::new(context), stop));
        }
        None => {
            futures::join!(revisions, xrds);
        }
    }
    manager.shutdown().await;
    tracing::info!("controller stopped");
    match leadership {
        Some(leadership) if leadership.is_lost() => Err(ControllerError::LeadershipLost),
        Some(leadership) => {
            leadership.release().await;
            Ok(())
        }
        None => Ok(()),
    }
}
