//! `plait`: a Kubernetes composition engine whose functions are WebAssembly components.

mod componentize;
mod compositiontest;
mod controller;
mod convert;
mod dev;
mod files;
mod function;
mod functions;
mod image;
mod install;
mod kcl;
mod packages;
mod project;
mod render;
mod scaffold;
mod trace;
mod validate;
mod webhook;
mod webhook_certificate;
mod xr;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "plait",
    version,
    about = "A Kubernetes composition engine whose functions are WebAssembly components"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Render the resources a composite resource would be composed of, offline.
    Render(Box<RenderArgs>),
    /// Run CompositionTests (meta.dev.upbound.io/v1alpha1, YAML or KCL) as
    /// `up test run` does: render each test's XR offline and assert the result.
    Test(Box<compositiontest::TestArgs>),
    /// Print a `mode: Resources` Composition converted to a function pipeline, or
    /// ResourceClaimDefinitions and ResourceBindingDefinitions (with their classes)
    /// as the XRD and Compositions they mean.
    Convert {
        /// The file or directory to convert (`-` for standard input).
        file: PathBuf,
    },
    /// Write, publish, inspect and verify functions: new, push, pull, inspect, verify.
    Function {
        #[command(subcommand)]
        command: function::FunctionCommand,
    },
    /// Run the controllers: serve every XRD's API and keep each XR composed.
    Controller(Box<ControllerArgs>),
    /// Run the controller on a local control plane of its own (etcd and
    /// kube-apiserver on 127.0.0.1): up, down.
    Dev {
        #[command(subcommand)]
        command: dev::DevCommand,
    },
    /// Install plait in a cluster (the objects in deploy/), or print them.
    Install(InstallArgs),
    /// Build plait's controller image from a static plait binary (an OCI
    /// image layout) and push it to a registry: build, push.
    Image {
        #[command(subcommand)]
        command: image::ImageCommand,
    },
    /// Validate resources offline against the schemas of CRDs, XRDs and the
    /// built-in Kubernetes kinds, and Compositions against the kinds they compose.
    Validate(Box<validate::ValidateArgs>),
    /// Show a composite resource's or claim's tree in a cluster: its XR, its
    /// composed resources and nested XRs, with their Synced and Ready conditions.
    Trace(Box<trace::TraceArgs>),
    /// Run KCL programs offline with plait's KCL, as `kcl run` does.
    Kcl {
        #[command(subcommand)]
        command: kcl::KclCommand,
    },
    /// Work with Compositions (the crossplane CLI's names): render.
    Composition {
        #[command(subcommand)]
        command: CompositionCommand,
    },
    /// Work with resources (the crossplane CLI's names): trace, validate.
    Resource {
        #[command(subcommand)]
        command: ResourceCommand,
    },
    /// Work with composite resources (XRs): generate one from a claim,
    /// patch one with its XRD's defaults.
    Xr {
        #[command(subcommand)]
        command: xr::XrCommand,
    },
}

/// `plait composition …`, as the crossplane CLI names it.
#[derive(Subcommand)]
enum CompositionCommand {
    /// `plait render`, by the crossplane CLI's name: render the resources a
    /// composite resource would be composed of, offline.
    Render(Box<RenderArgs>),
}

/// `plait resource …`, as the crossplane CLI names it.
#[derive(Subcommand)]
enum ResourceCommand {
    /// `plait trace`, by the crossplane CLI's name.
    Trace(Box<trace::TraceArgs>),
    /// `plait validate`, by the crossplane CLI's name.
    Validate(Box<validate::ValidateArgs>),
}

#[derive(clap::Args)]
pub struct InstallArgs {
    /// Print the objects as YAML instead of applying them.
    #[arg(long)]
    pub print: bool,
    /// The kubeconfig to use; otherwise $KUBECONFIG, ~/.kube/config or the in-cluster config.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The namespace plait runs in.
    #[arg(long, default_value = install::DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// The controller image, as `make image REGISTRY=… TAG=…` pushed it
    /// (REGISTRY/plait:TAG); required to apply. Without it `--print` leaves
    /// deploy/'s placeholder `plait`.
    #[arg(long)]
    pub image: Option<String>,
    /// Controller replicas; one is active at a time.
    #[arg(long, default_value_t = 2)]
    pub replicas: u32,
    /// Leave out the validating admission webhook (deploy/webhook), which
    /// enforces Usages and checks Compositions: deletions of resources in
    /// use then go through.
    #[arg(long = "no-webhook")]
    pub no_webhook: bool,
    /// The webhook's serving certificate from cert-manager, which must be
    /// installed (deploy/webhook/cert-manager), instead of the one plait
    /// makes itself.
    #[arg(long = "cert-manager", conflicts_with = "no_webhook")]
    pub cert_manager: bool,
}

#[derive(clap::Args)]
pub struct ControllerArgs {
    /// The kubeconfig to use; otherwise $KUBECONFIG, ~/.kube/config or the in-cluster config.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Reconcile every composite resource at least this often, e.g. 60s, 5m.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub poll_interval: Duration,
    /// The shortest poll interval an XR's crossplane.io/poll-interval
    /// annotation may ask for; a shorter one is raised to it.
    #[arg(long = "min-poll-interval", default_value = "1s", value_parser = parse_duration)]
    pub min_poll_interval: Duration,
    /// XR and claim reconciles working at once, over every kind; the others
    /// wait their turn in a queue fair between tenants. A reconcile waiting
    /// for a function-call slot does not count. Bounds the load a backlog
    /// (a first start over thousands of XRs) puts on the API server.
    #[arg(long = "max-concurrent-reconciles", default_value_t = plait_kube::DEFAULT_MAX_CONCURRENT_RECONCILES,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub max_concurrent_reconciles: u16,
    /// Reconciles of one tenant (a namespace; cluster-scoped XRs are the
    /// platform's) admitted at once, working or waiting for a function-call
    /// slot [default: --max-concurrent-reconciles].
    #[arg(long = "tenant-max-reconciles", value_parser = clap::value_parser!(u16).range(1..))]
    pub tenant_max_reconciles: Option<u16>,
    /// Function calls of one tenant running at once [default: every slot].
    #[arg(long = "tenant-max-calls", value_parser = clap::value_parser!(u64).range(1..))]
    pub tenant_max_calls: Option<u64>,
    /// Watch events one XR may have in a burst before its circuit opens
    /// (`Responsive=False`, `WatchCircuitOpen`) and its events are dropped
    /// but for one every 30 s, until the cooldown ends.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub circuit_breaker_burst: u32,
    /// Watch events per second each XR's circuit breaker allows in the long run.
    #[arg(long, default_value_t = 1.0, value_parser = parse_rate)]
    pub circuit_breaker_refill_rate: f64,
    /// How long an XR's circuit stays open once opened, e.g. 5m.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub circuit_breaker_cooldown: Duration,
    /// Function calls run at once, shared between tenants by the guest time
    /// each has used [default: the number of CPUs].
    #[arg(long = "concurrent-function-calls")]
    pub concurrent_function_calls: Option<usize>,
    /// The longest a function call may run; a Function's
    /// limits.plait.dev/deadline annotation may only shorten it.
    #[arg(long = "function-deadline", default_value = "10s", value_parser = parse_duration)]
    pub function_deadline: Duration,
    /// The most linear memory a function call may grow to (at most 1Gi);
    /// a Function's limits.plait.dev/memory annotation may only lower it.
    #[arg(long = "function-memory", default_value = "256Mi", value_parser = parse_size)]
    pub function_memory: usize,
    /// Act as this service account, in each tenant's namespace, for what a
    /// namespaced or claimed XR composes and reads, so the tenant's RBAC
    /// bounds it (the controller then needs `impersonate` on serviceaccounts).
    #[arg(long = "tenant-service-account")]
    pub tenant_service_account: Option<String>,
    /// The namespace plait runs in, where Functions' packagePullSecrets are
    /// read [default: $POD_NAMESPACE, else plait-system].
    #[arg(long)]
    pub namespace: Option<String>,
    /// A registry (host[:port]) to pull Function packages from over plain
    /// HTTP (no TLS); repeatable.
    #[arg(long = "insecure-registry")]
    pub insecure_registries: Vec<String>,
    /// A PEM bundle of CA certificates to trust besides the system's; repeatable.
    #[arg(long = "ca-file")]
    pub ca_files: Vec<PathBuf>,
    /// A Docker config whose credentials every Function may use; a
    /// Function's packagePullSecrets take precedence [default: none].
    #[arg(long = "docker-config")]
    pub docker_config: Option<PathBuf>,
    /// How long a registry may take to connect or to send more bytes.
    #[arg(long = "registry-timeout", default_value = "30s", value_parser = parse_duration)]
    pub registry_timeout: Duration,
    /// Serve the validating admission webhook (TLS) here, e.g.
    /// 0.0.0.0:9443: deletions of resources in use refused, Usages and
    /// Compositions checked (see deploy/webhook). Without
    /// --webhook-cert-file, plait makes its serving certificate itself: a CA
    /// and a certificate it signs, in the Secrets plait-root-ca and
    /// plait-tls-server of --namespace, the CA written into the caBundle of
    /// --webhook-configuration.
    #[arg(long = "webhook-address")]
    pub webhook_address: Option<std::net::SocketAddr>,
    /// The webhook's serving certificate chain (PEM), e.g. cert-manager's;
    /// plait then manages neither the certificate nor the caBundle.
    #[arg(long = "webhook-cert-file", requires = "webhook_key_file")]
    pub webhook_cert_file: Option<PathBuf>,
    /// The webhook's private key (PEM).
    #[arg(long = "webhook-key-file", requires = "webhook_cert_file")]
    pub webhook_key_file: Option<PathBuf>,
    /// The Service, in --namespace, the API server calls the webhook
    /// through: the certificate plait makes is for its DNS names.
    #[arg(long = "webhook-service", default_value = "plait-webhook")]
    pub webhook_service: String,
    /// More names (DNS names or IP addresses) for the certificate plait
    /// makes, e.g. when the API server calls the webhook by URL.
    #[arg(long = "webhook-host")]
    pub webhook_hosts: Vec<String>,
    /// The ValidatingWebhookConfiguration whose webhooks get the CA of the
    /// certificate plait makes as their caBundle.
    #[arg(long = "webhook-configuration", default_value = "plait")]
    pub webhook_configuration: String,
    /// Where /metrics, /healthz and /readyz are served.
    #[arg(long, default_value = "0.0.0.0:8080")]
    pub probe_address: std::net::SocketAddr,
    /// Run only while holding a Lease, so that one of several replicas is active.
    #[arg(long, conflicts_with = "shards")]
    pub leader_election: bool,
    /// Spread XRs and claims over every replica in this many shards, each a
    /// Lease in --leader-election-namespace: a replica reconciles only the
    /// objects of the shards it holds, and holds its fair share of them.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub shards: Option<u32>,
    /// The namespace of the leader Lease (and the shard Leases); defaults to --namespace.
    #[arg(long)]
    pub leader_election_namespace: Option<String>,
    /// This replica's identity in the Lease; defaults to $POD_NAME, else the host name,
    /// with a random suffix.
    #[arg(long)]
    pub identity: Option<String>,
    /// The most guest memory function calls may hold at once, e.g. 768Mi,
    /// 2Gi: each call holds its memory limit while it runs (a call paused
    /// for another tenant's only the memory its guest has), and calls
    /// beyond the budget wait. Below (slots + 1) × --function-memory, a
    /// long call cannot give its slot to a lighter tenant's call. Keep it
    /// below the container's memory limit [default: (--concurrent-function-calls
    /// + 1) × --function-memory, 768Mi with 2 CPUs].
    #[arg(long, value_parser = parse_size)]
    pub guest_memory_budget: Option<usize>,
    /// Call every function every time, never answering a call from an
    /// earlier response to the same request.
    #[arg(long = "no-function-cache")]
    pub no_function_cache: bool,
    /// The longest a function's response answers repeated requests, whatever
    /// TTL the function sets.
    #[arg(long = "function-cache-ttl-max", default_value = "24h", value_parser = parse_duration)]
    pub function_cache_ttl_max: Duration,
    /// The most the response cache holds, as JSON, e.g. 64Mi; the least
    /// recently used responses make room.
    #[arg(long = "function-cache-size", default_value = "64Mi", value_parser = parse_size)]
    pub function_cache_size: usize,
}

#[derive(clap::Args)]
pub struct RenderArgs {
    /// The composite resource (XR) to render.
    pub composite_resource: PathBuf,
    /// The Composition to render it with.
    pub composition: PathBuf,
    /// Functions: a file or directory of pkg.crossplane.io Function objects,
    /// and the ImageConfigs (pkg.crossplane.io/v1beta1) and Secrets (v1)
    /// that apply to their packages.
    pub functions: Option<PathBuf>,
    /// Observed composed resources (file or directory), each with the
    /// crossplane.io/composition-resource-name annotation.
    #[arg(short = 'o', long = "observed-resources")]
    pub observed_resources: Vec<PathBuf>,
    /// Resources that steps may require (file or directory).
    #[arg(short = 'e', long = "required-resources", alias = "extra-resources")]
    pub required_resources: Vec<PathBuf>,
    /// CRDs and XRDs whose kinds' schemas steps may require (file or directory).
    #[arg(long = "required-schemas")]
    pub required_schemas: Vec<PathBuf>,
    /// Pipeline context entries read from files, as KEY=FILE.
    #[arg(long = "context-files", value_parser = parse_key_value)]
    pub context_files: Vec<(String, String)>,
    /// Pipeline context entries as KEY=JSON; these win over --context-files.
    #[arg(long = "context-values", value_parser = parse_key_value)]
    pub context_values: Vec<(String, String)>,
    /// Print the events the reconcile recorded on the XR: function results
    /// and the reconciler's own.
    #[arg(short = 'r', long = "include-function-results")]
    pub include_function_results: bool,
    /// Print the XR as given with the render's references and status merged onto it.
    #[arg(short = 'x', long = "include-full-xr")]
    pub include_full_xr: bool,
    /// Print the pipeline context.
    #[arg(short = 'c', long = "include-context")]
    pub include_context: bool,
    /// Secrets that step credentials refer to (file or directory).
    #[arg(long = "function-credentials")]
    pub function_credentials: Vec<PathBuf>,
    /// The XRD of the XR: its schema defaults are applied to the XR first.
    #[arg(long)]
    pub xrd: Option<PathBuf>,
    /// How long the whole render may take, e.g. 30s, 2m.
    #[arg(long, default_value = "1m", value_parser = parse_duration)]
    pub timeout: Duration,
    /// The up (upbound.yaml) or Crossplane CLI (crossplane-project.yaml)
    /// project whose KCL functions the steps call; by default the project
    /// the Composition lies in, if any.
    #[arg(long)]
    pub project: Option<PathBuf>,
    /// CRDs of the project's dependencies (file or directory, repeatable):
    /// with the project's XRDs, plait generates the KCL models its
    /// functions import from them.
    #[arg(long = "crds")]
    pub crds: Vec<PathBuf>,
    /// How Functions whose package is an OCI reference are pulled.
    #[command(flatten)]
    pub registry: function::RegistryArgs,
}

fn parse_key_value(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| format!("expected KEY=VALUE, got {s:?}"))
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .ok_or_else(|| format!("duration {s:?} needs a unit: ms, s, m or h"))?;
    let (number, unit) = s.split_at(split);
    let n: f64 = number
        .parse()
        .map_err(|_| format!("invalid duration {s:?}"))?;
    let seconds = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => {
            return Err(format!(
                "duration {s:?} has unknown unit {unit:?}: use ms, s, m or h"
            ));
        }
    };
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err(format!("duration {s:?} must be positive"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// A positive, finite rate per second.
fn parse_rate(s: &str) -> Result<f64, String> {
    let rate: f64 = s.parse().map_err(|_| {
        format!("invalid rate {s:?}: use a number of events per second, e.g. 1 or 0.5")
    })?;
    if !rate.is_finite() || rate <= 0.0 {
        return Err(format!(
            "rate {s:?} must be a positive number of events per second"
        ));
    }
    Ok(rate)
}

/// A size in bytes, as Kubernetes writes memory quantities: a whole number
/// with an optional suffix, binary (Ki, Mi, Gi, Ti) or decimal (k, M, G, T).
fn parse_size(s: &str) -> Result<usize, String> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let n: usize = number
        .parse()
        .map_err(|_| format!("invalid size {s:?}: use a whole number, e.g. 512Mi or 1Gi"))?;
    let scale: usize = match unit {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        _ => {
            return Err(format!(
                "size {s:?} has unknown unit {unit:?}: use Ki, Mi, Gi, Ti, k, M, G or T"
            ));
        }
    };
    match n.checked_mul(scale) {
        Some(0) => Err(format!("size {s:?} must be positive")),
        Some(bytes) => Ok(bytes),
        None => Err(format!("size {s:?} is too large")),
    }
}

// glibc's malloc gives each thread that allocates its own arena, and the
// controller runs reconciles on many blocking threads: at 1,000 XRs its peak
// RSS was 168 MiB with glibc and 137 MiB with jemalloc (controller bench).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A controller's log is its only account of what it did. A render
    // shows what its functions logged and when it compiles a component
    // (seconds, for a large one), as crossplane render shows its
    // functions' output.
    let default_level = match cli.command {
        Command::Controller(_) | Command::Dev { .. } => "info",
        Command::Render(_)
        | Command::Composition {
            command: CompositionCommand::Render(_),
        } => "warn,plait_runtime=info,plait_functions=info",
        _ => "warn",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("PLAIT_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let result = match cli.command {
        Command::Render(args) => render::run(&args),
        Command::Convert { file } => convert::run(&file),
        Command::Function { command } => function::run(&command),
        Command::Controller(args) => controller::run(&args),
        Command::Install(args) => install::run(&args),
        Command::Dev { command } => dev::run(command),
        Command::Image { command } => image::run(&command),
        Command::Validate(args) => return validate::main(&args),
        Command::Test(args) => return compositiontest::main(&args),
        Command::Trace(args) => trace::run(&args),
        Command::Kcl { command } => return kcl::main(&command),
        Command::Composition {
            command: CompositionCommand::Render(args),
        } => render::run(&args),
        Command::Resource { command } => match command {
            ResourceCommand::Trace(args) => trace::run(&args),
            ResourceCommand::Validate(args) => return validate::main(&args),
        },
        Command::Xr { command } => xr::run(&command),
    };
    match result {
        Ok(output) => {
            print!("{output}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("plait: {error:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units_and_reject_the_rest() {
        let cases = [
            ("1m", Ok(Duration::from_secs(60))),
            ("30s", Ok(Duration::from_secs(30))),
            ("250ms", Ok(Duration::from_millis(250))),
            ("1.5h", Ok(Duration::from_secs(5400))),
            ("10", Err("needs a unit")),
            ("5d", Err("unknown unit")),
            ("0s", Err("must be positive")),
        ];
        for (input, want) in cases {
            match (parse_duration(input), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{input}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "{input}: {got}"),
                (got, want) => panic!("{input}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn sizes_parse_with_units_and_reject_the_rest() {
        let cases = [
            ("512Mi", Ok(512 << 20)),
            ("1Gi", Ok(1 << 30)),
            ("64Ki", Ok(64 << 10)),
            ("2G", Ok(2_000_000_000)),
            ("1048576", Ok(1 << 20)),
            ("1.5Gi", Err("unknown unit")),
            ("Gi", Err("whole number")),
            ("1GB", Err("unknown unit")),
            ("0Mi", Err("must be positive")),
            ("99999999999Ti", Err("too large")),
        ];
        for (input, want) in cases {
            match (parse_size(input), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{input}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "{input}: {got}"),
                (got, want) => panic!("{input}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn rates_must_be_positive_numbers() {
        let cases = [
            ("1", Ok(1.0)),
            ("0.5", Ok(0.5)),
            ("0", Err("must be a positive")),
            ("-2", Err("must be a positive")),
            ("inf", Err("must be a positive")),
            ("NaN", Err("must be a positive")),
            ("fast", Err("invalid rate")),
        ];
        for (input, want) in cases {
            match (parse_rate(input), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{input}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "{input}: {got}"),
                (got, want) => panic!("{input}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn key_values_need_a_key() {
        assert_eq!(parse_key_value("a=b=c"), Ok(("a".into(), "b=c".into())));
        assert!(parse_key_value("=x").is_err());
        assert!(parse_key_value("novalue").is_err());
    }
}
