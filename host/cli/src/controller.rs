//! `plait controller`: runs plait's controllers against a cluster until
//! SIGINT or SIGTERM, then lets running reconciles finish. Functions'
//! OCI packages are pulled with the registry options `plait render` has.

use std::sync::Arc;

use anyhow::{Context, Result};
use futures::FutureExt;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use plait_kube::{DEFAULT_NAMESPACE, PackageResolver, Packages, Timing};
use plait_oci::Keychain;
use plait_runtime::{Runtime, RuntimeConfig};

use crate::ControllerArgs;
use crate::function::client_config;

pub fn run(args: &ControllerArgs) -> Result<String> {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    tokio.block_on(serve(args))?;
    Ok(String::new())
}

async fn serve(args: &ControllerArgs) -> Result<()> {
    let config = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .with_context(|| format!("invalid kubeconfig {}", path.display()))?
        }
        None => Config::infer()
            .await
            .context("no kubeconfig: pass --kubeconfig, set KUBECONFIG, or run in a cluster")?,
    };
    tracing::info!(server = %config.cluster_url, "connecting");
    let client = Client::try_from(config).context("cannot create a Kubernetes client")?;
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: plait_oci::compile_cache_dir(),
        ..RuntimeConfig::default()
    })?;
    let registry = plait_oci::Client::new(client_config(
        args.insecure_registries.clone(),
        &args.ca_files,
        args.registry_timeout,
    )?)?;
    let keychain = match &args.docker_config {
        Some(path) => Keychain::from_docker_config_file(path)?,
        None => Keychain::anonymous(),
    };
    let namespace = args
        .namespace
        .clone()
        .or_else(|| {
            std::env::var("POD_NAMESPACE")
                .ok()
                .filter(|n| !n.is_empty())
        })
        .unwrap_or_else(|| DEFAULT_NAMESPACE.to_string());
    let packages = Packages::new(registry, runtime, namespace).with_keychain(keychain);
    let timing = Timing {
        poll_interval: args.poll_interval,
        ..Timing::default()
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!("shutting down: waiting for running reconciles");
        let _ = stop.send(());
    });
    plait_kube::run(
        client,
        Arc::new(PackageResolver::new(Arc::new(packages))),
        timing,
        stopped.map(|_| ()),
    )
    .await?;
    Ok(())
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut terminate) => {
            tokio::select! {
                _ = interrupt => {}
                _ = terminate.recv() => {}
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGTERM; stopping on SIGINT only");
            let _ = interrupt.await;
        }
    }
}
