//! `plait controller`: runs plait's controllers against a cluster until
//! SIGINT or SIGTERM, then lets running reconciles finish. Functions'
//! OCI packages are pulled with the registry options `plait render` has.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use futures::FutureExt;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use plait_functions::CacheLimits;
use plait_kube::{
    BreakerLimits, DEFAULT_NAMESPACE, Functions, Health, Impersonation, InstalledPackages,
    LeaderElection, Options, Sharding, Timing,
};
use plait_oci::Keychain;
use plait_runtime::{CallLimits, PoolConfig, Runtime, RuntimeConfig, memory_budget_for};

use crate::ControllerArgs;
use crate::function::client_config;
use crate::webhook::Identity;
use crate::webhook_certificate;

/// The Lease replicas of `plait controller` elect their leader with.
pub const LEASE_NAME: &str = "plait-controller";

pub fn run(args: &ControllerArgs) -> Result<String> {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    tokio.block_on(serve(args))?;
    Ok(String::new())
}

/// A client from `kubeconfig`, else `$KUBECONFIG`, `~/.kube/config` or the
/// in-cluster config.
pub(crate) async fn client(kubeconfig: Option<&Path>) -> Result<Client> {
    let config = config(kubeconfig).await?;
    Client::try_from(config).context("cannot create a Kubernetes client")
}

/// The connection `client` makes.
async fn config(kubeconfig: Option<&Path>) -> Result<Config> {
    let config = match kubeconfig {
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
    Ok(config)
}

async fn serve(args: &ControllerArgs) -> Result<()> {
    let config = config(args.kubeconfig.as_deref()).await?;
    let client = Client::try_from(config.clone()).context("cannot create a Kubernetes client")?;
    let call_slots = args
        .concurrent_function_calls
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    let memory_budget = guest_memory_budget(args, call_slots);
    // The controller compiles each digest once, in the background of its
    // reconciles; its peak memory is what a container limit must allow.
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: plait_oci::compile_cache_dir(),
        memory_budget,
        parallel_compilation: false,
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
    let packages =
        InstalledPackages::new(registry, runtime, namespace.clone()).with_keychain(keychain);
    let timing = Timing {
        poll_interval: args.poll_interval,
        min_poll_interval: args.min_poll_interval,
        max_concurrent_reconciles: args.max_concurrent_reconciles,
        tenant_max_reconciles: args
            .tenant_max_reconciles
            .unwrap_or(args.max_concurrent_reconciles),
        circuit_breaker: BreakerLimits {
            burst: f64::from(args.circuit_breaker_burst),
            refill_per_second: args.circuit_breaker_refill_rate,
            cooldown: args.circuit_breaker_cooldown,
            ..BreakerLimits::default()
        },
        ..Timing::default()
    };
    let health = Arc::new(Health::default());
    let listener = tokio::net::TcpListener::bind(args.probe_address)
        .await
        .with_context(|| format!("cannot listen on --probe-address {}", args.probe_address))?;
    tracing::info!(
        address = %listener.local_addr().unwrap_or(args.probe_address),
        "serving /metrics, /healthz and /readyz"
    );
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let stopped = async move {
        let mut stopped = stopped;
        let _ = stopped.wait_for(|stop| *stop).await;
    }
    .shared();
    tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!("shutting down: waiting for running reconciles");
        let _ = stop.send(true);
    });
    let probes = tokio::spawn(plait_kube::probes::serve(
        listener,
        health.clone(),
        stopped.clone(),
    ));
    let webhook = match args.webhook_address {
        Some(address) => {
            let identity = webhook_identity(args, &client, &namespace, stopped.clone()).await?;
            let (client, stopped) = (client.clone(), stopped.clone());
            Some(tokio::spawn(async move {
                if let Err(error) = crate::webhook::serve(address, &identity, client, stopped).await
                {
                    tracing::error!("the validating webhook stopped: {error:#}");
                }
            }))
        }
        None => None,
    };
    let options = Options {
        timing,
        leader_election: args
            .leader_election
            .then(|| leader_election(args, &namespace)),
        sharding: args.shards.map(|count| {
            let election = leader_election(args, &namespace);
            Sharding::new(count, &election.namespace, &election.identity)
        }),
        health,
        impersonation: args
            .tenant_service_account
            .clone()
            .map(|service_account| Impersonation {
                config,
                service_account,
            }),
    };
    let maximum = CallLimits {
        deadline: args.function_deadline,
        memory_bytes: args.function_memory,
        ..CallLimits::default()
    };
    let mut functions = Functions::packages_within(Arc::new(packages), maximum);
    let per_tenant = args
        .tenant_max_calls
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    functions = functions.with_call_slots(Some(call_slots), per_tenant);
    let cache = (!args.no_function_cache).then(|| CacheLimits {
        max_ttl: args.function_cache_ttl_max,
        max_bytes: args.function_cache_size,
        ..CacheLimits::default()
    });
    functions = functions.with_response_cache(cache);
    let result = plait_kube::run(client, functions, options, stopped).await;
    probes.abort();
    if let Some(webhook) = webhook {
        webhook.abort();
    }
    Ok(result?)
}

/// The webhook's certificate: the files given, or the one plait manages in
/// `namespace`, whose CA is then kept in the webhook configuration's
/// caBundle until `stopped` resolves.
async fn webhook_identity(
    args: &ControllerArgs,
    client: &Client,
    namespace: &str,
    stopped: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<Identity> {
    if let (Some(cert), Some(key)) = (&args.webhook_cert_file, &args.webhook_key_file) {
        return Ok(Identity::Files {
            cert: cert.clone(),
            key: key.clone(),
        });
    }
    let mut names = webhook_certificate::service_names(&args.webhook_service, namespace);
    names.extend(args.webhook_hosts.iter().cloned());
    let identity = webhook_certificate::ensure(client, namespace, &names)
        .await
        .context("cannot make the webhook's serving certificate")?;
    let (client, configuration, ca) = (
        client.clone(),
        args.webhook_configuration.clone(),
        identity.ca_pem.clone(),
    );
    tokio::spawn(async move {
        let keep_injecting = async {
            let mut missing_logged = false;
            loop {
                match webhook_certificate::inject_ca(&client, &configuration, &ca).await {
                    Ok(true) => missing_logged = false,
                    Ok(false) if !missing_logged => {
                        tracing::warn!(
                            configuration = %configuration,
                            "no ValidatingWebhookConfiguration of this name: the API server does not call the webhook"
                        );
                        missing_logged = true;
                    }
                    Ok(false) => {}
                    Err(error) => tracing::warn!("{error:#}"),
                }
                tokio::time::sleep(webhook_certificate::INJECT_INTERVAL).await;
            }
        };
        tokio::select! {
            () = keep_injecting => {}
            () = stopped => {}
        }
    });
    Ok(Identity::Managed(identity.server))
}

/// The guest memory budget: `--guest-memory-budget`, else room for every
/// call slot's call at `--function-memory` and for what paused calls keep.
/// A budget too small for calls to give way is used as given, with a warning.
fn guest_memory_budget(args: &ControllerArgs, call_slots: usize) -> usize {
    // A call holds at most what the instance pool lets one memory grow to.
    let call_memory = args
        .function_memory
        .min(PoolConfig::default().max_memory_bytes);
    let fair = memory_budget_for(call_slots, call_memory);
    let budget = args.guest_memory_budget.unwrap_or(fair);
    if budget < fair {
        tracing::warn!(
            budget,
            call_slots,
            call_memory,
            "--guest-memory-budget has no room beside {call_slots} calls at their memory limit for \
             the calls they pause: a long call will keep its slot while other tenants' calls \
             wait; {fair} bytes or more lets it give way"
        );
    }
    tracing::info!(budget, call_slots, "guest memory budget");
    budget
}

fn leader_election(args: &ControllerArgs, namespace: &str) -> LeaderElection {
    let namespace = args
        .leader_election_namespace
        .clone()
        .unwrap_or_else(|| namespace.to_string());
    let identity = args.identity.clone().unwrap_or_else(|| {
        let host = std::env::var("POD_NAME")
            .ok()
            .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "plait".into());
        // RandomState is seeded from the OS, so two replicas on one host differ.
        let suffix = std::hash::BuildHasher::hash_one(
            &std::collections::hash_map::RandomState::new(),
            std::process::id(),
        );
        format!("{host}_{:08x}", suffix as u32)
    });
    LeaderElection::new(&namespace, LEASE_NAME, &identity)
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
