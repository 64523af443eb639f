//! Running the controllers: `run` installs plait's CRDs, takes the leader
//! Lease or the shard Leases, starts the stores and the controllers, and
//! stops them; the probes and `/metrics` are served from here. The top
//! layer: it may import every layer below.

pub mod leader;
pub mod probes;
pub mod shards;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use kube::Client;
use kube::api::DynamicObject;
use kube::runtime::reflector::Store;
use kube::runtime::reflector::store::Writer;
use serde_json::Value;

use crate::access;
use crate::access::impersonation::Impersonation;
use crate::access::install::{self, CRDS, CrdError};
use crate::clusters::cluster::KubeCluster;
use crate::clusters::fence::Shards;
use crate::clusters::tenants::TenantClusters;
use crate::controllers::function::{self, Functions};
use crate::controllers::timing::Timing;
use crate::controllers::{composition, usage, xrd};
use crate::stores;
use crate::vocabulary::{api, metrics};
use leader::{LeaderElection, LeaderError};
use probes::Health;
use shards::Sharding;

#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    #[error("plait CRDs: {0}")]
    Parse(#[source] plait_model::ModelError),
    #[error(transparent)]
    Install(#[from] CrdError),
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
    /// Act as each tenant's service account for what its XRs compose and read.
    pub impersonation: Option<Impersonation>,
    /// Reconcile only the XRs and claims of the shards this replica holds.
    pub sharding: Option<Sharding>,
}

impl From<Timing> for Options {
    fn from(timing: Timing) -> Options {
        Options {
            timing,
            ..Options::default()
        }
    }
}

/// The controller's metrics, as `/metrics` serves them.
pub fn encoded_metrics() -> String {
    metrics::metrics().encode()
}

/// The CRDs in [`CRDS`], as objects.
pub fn crds() -> Result<Vec<Value>, ControllerError> {
    plait_model::parse_documents(CRDS, "crds").map_err(ControllerError::Parse)
}

/// Server-side applies plait's CRDs and waits until each is established.
pub async fn install_crds(client: &Client, timeout: Duration) -> Result<(), ControllerError> {
    let mut names = Vec::new();
    for crd in crds()? {
        names.push(install::apply(client, &crd).await?);
    }
    for name in names {
        install::established(client, &name, timeout).await?;
    }
    Ok(())
}

/// Installs the CRDs and runs the controllers until `shutdown` resolves;
/// then lets running reconciles finish and stops. With leader election the
/// controllers start only once this replica holds the Lease, and stop with
/// [`ControllerError::LeadershipLost`] if it is lost. The Function controller
/// runs when `functions` serves packages ([`Functions::packages`]).
pub async fn run(
    client: Client,
    functions: Functions,
    options: impl Into<Options>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) -> Result<(), ControllerError> {
    let options = options.into();
    if let Some(sharding) = &options.sharding {
        sharding.check()?;
    }
    let shutdown = shutdown.shared();
    let client = access::client::counted(client);
    install_crds(&client, Duration::from_secs(60)).await?;
    options.health.set_ready(true);
    metrics::metrics().watch_runtime(functions.runtime().clone());
    let leadership = match &options.leader_election {
        Some(election) => match election.acquire(client.clone(), shutdown.clone()).await? {
            Some(leadership) => Some(leadership),
            None => return Ok(()),
        },
        None => None,
    };
    let stop = until_stopped(shutdown, leadership.as_ref().map(leader::Leadership::lost));
    let cluster = KubeCluster::new(client.clone(), tokio::runtime::Handle::current());
    cluster.shared().environment.start(&client, stop.clone());
    let revisions = composition::run(
        Arc::new(composition::CompositionContext::new(
            cluster.clone(),
            &options.timing,
        )),
        stop.clone(),
    );
    let packages = functions.packages.clone();
    let (catalog, function_store, controller_writer) =
        catalog(&client, packages.is_some(), stop.clone());
    let timing = options.timing;
    let tenants = options.impersonation.map(|impersonation| {
        let handle = tokio::runtime::Handle::current();
        Arc::new(TenantClusters::new(
            impersonation,
            handle,
            cluster.shared().clone(),
        ))
    });
    let usages = usage::run(
        cluster.clone(),
        tenants.clone(),
        timing.clone(),
        stop.clone(),
    );
    let (shards, sharded) = sharding(&client, options.sharding, stop.clone());
    let manager = Arc::new(xrd::XrdContext::new(
        cluster.clone(),
        functions,
        catalog,
        timing.clone(),
        tenants,
        shards,
    ));
    tracing::info!("controller started");
    let xrds = xrd::run(client, manager.clone(), stop.clone());
    match packages.zip(controller_writer) {
        Some((packages, writer)) => {
            let context = function::FunctionContext::new(
                packages,
                cluster,
                manager.shared.watches.clone(),
                timing,
                function_store,
            );
            let (.., sharded) = futures::join!(
                revisions,
                usages,
                xrds,
                function::run(Arc::new(context), writer, stop),
                sharded
            );
            sharded?;
        }
        None => {
            let (.., sharded) = futures::join!(revisions, usages, xrds, sharded);
            sharded?;
        }
    }
    manager.shutdown().await;
    tracing::info!("controller stopped");
    step_down(leadership).await
}

/// The shards this replica holds under `--shards`, and the task that keeps
/// their Leases.
fn sharding(
    client: &Client,
    sharding: Option<Sharding>,
    stop: impl Future<Output = ()> + Send + Sync + 'static,
) -> (
    Option<Arc<Shards>>,
    BoxFuture<'static, Result<(), LeaderError>>,
) {
    match sharding {
        Some(sharding) => {
            let shards = Arc::new(Shards::new(sharding.count));
            let kept = shards::run(client.clone(), sharding, shards.clone(), stop);
            (Some(shards), kept.boxed())
        }
        None => (None, futures::future::ready(Ok(())).boxed()),
    }
}

/// Resolves on `shutdown`, or once the leadership is `lost`.
fn until_stopped(
    shutdown: impl Future<Output = ()> + Unpin + Send + 'static,
    lost: Option<impl Future + Send + 'static>,
) -> Shared<BoxFuture<'static, ()>> {
    async move {
        match lost {
            Some(lost) => {
                futures::future::select(shutdown, Box::pin(lost)).await;
            }
            None => shutdown.await,
        }
    }
    .boxed()
    // The controller wants a Sync trigger; a shared future is one.
    .shared()
}

/// The catalog, and the one Function store: the Function controller fills
/// it when it runs (and gets its writer), else the catalog watches
/// Functions itself.
fn catalog(
    client: &Client,
    controller_fills_functions: bool,
    stop: impl Future<Output = ()> + Clone + Send + 'static,
) -> (
    Arc<stores::catalog::Catalog>,
    Store<DynamicObject>,
    Option<Writer<DynamicObject>>,
) {
    let function_writer = Writer::new(api::function_resource());
    let function_store = function_writer.as_reader();
    let (catalog_writer, controller_writer) = if controller_fills_functions {
        (None, Some(function_writer))
    } else {
        (Some(function_writer), None)
    };
    let catalog = stores::catalog::Catalog::start(
        client,
        function_store.clone(),
        catalog_writer,
        stores::catalog::DEFAULT_CAPACITY,
        stop,
    );
    (catalog, function_store, controller_writer)
}

/// Lets the leadership go once the controllers stopped; one that was lost
/// is an error.
async fn step_down(leadership: Option<leader::Leadership>) -> Result<(), ControllerError> {
    match leadership {
        Some(leadership) if leadership.is_lost() => Err(ControllerError::LeadershipLost),
        Some(leadership) => {
            leadership.release().await;
            Ok(())
        }
        None => Ok(()),
    }
}
