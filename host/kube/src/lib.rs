//! plait on a Kubernetes API server.
//!
//! [`KubeCluster`] is the reconcile core's [`plait_reconcile::Cluster`] over
//! kube-rs. [`run`] installs plait's CRDs, then runs the XRD controller,
//! which generates a CRD per XRD and starts a controller for each XR kind;
//! the XR controllers run the same [`plait_reconcile::Reconcile`] as
//! `plait render`. With a [`PackageResolver`], the Function controller
//! installs Functions' OCI packages alongside.

pub mod cluster;
pub mod crd;
pub mod function;
pub mod functions;
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
/// then lets running reconciles finish and stops. The Function controller
/// runs when `resolver` serves packages ([`FunctionResolver::packages`]).
pub async fn run(
    client: Client,
    resolver: Arc<dyn FunctionResolver>,
    timing: Timing,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) -> Result<(), ControllerError> {
    install_crds(&client, Duration::from_secs(60)).await?;
    let cluster = KubeCluster::new(client.clone(), tokio::runtime::Handle::current());
    let packages = resolver.packages();
    let manager = Arc::new(Manager::new(cluster.clone(), resolver, timing.clone()));
    let shutdown = shutdown.shared();
    let api: Api<DynamicObject> = Api::all_with(client, &xrd::xrd_resource());
    tracing::info!("controller started");
    let xrds = Controller::new_with(api, watcher::Config::default(), xrd::xrd_resource())
        .graceful_shutdown_on(shutdown.clone())
        .run(xrd::reconcile, xrd::error_policy, manager.clone())
        .for_each(|_| futures::future::ready(()));
    match packages {
        Some(packages) => {
            let context =
                function::FunctionContext::new(packages, cluster, manager.watches.clone(), timing);
            futures::join!(xrds, function::run(Arc::new(context), shutdown));
        }
        None => xrds.await,
    }
    manager.shutdown().await;
    tracing::info!("controller stopped");
    Ok(())
}
