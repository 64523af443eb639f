//! `plait function …`: publishing functions to OCI registries and reading
//! them back.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use plait_oci::{Client, ClientConfig, Keychain, Resolved};
use serde_json::json;

use crate::{files, parse_duration};

#[derive(clap::Subcommand)]
pub enum FunctionCommand {
    /// Push a function component to an OCI registry; prints `REF@sha256:…`.
    Push(PushArgs),
    /// Pull a function from an OCI registry, verified; prints `REF@sha256:…`.
    /// A project build's KCL source is written to the directory `-o` names.
    Pull(PullArgs),
    /// Show a function's digest, size, world, imports and exports; for a
    /// project build, its KCL source's files and `kcl.mod`.
    Inspect(InspectArgs),
    /// Check a function's cosign signature against a public key; prints
    /// the verified `REF@sha256:…`.
    Verify(VerifyArgs),
    /// Create a function project that builds and renders as written.
    New(crate::scaffold::NewArgs),
    /// Make a component of a core module built for WASI preview 1 (Go's
    /// `GOOS=wasip1 -buildmode=c-shared`): embeds plait's contract and
    /// adapts WASI preview 1, both built into plait.
    Componentize(crate::componentize::ComponentizeArgs),
}

#[derive(clap::Args)]
pub struct PushArgs {
    /// The component (.wasm) to push.
    pub file: PathBuf,
    /// Where to push it: registry/repository:tag.
    pub reference: String,
    /// The author recorded in the artifact's config.
    #[arg(long)]
    pub author: Option<String>,
    /// Sign the pushed artifact with this cosign private key (as written by
    /// `cosign generate-key-pair`); its password is read from $COSIGN_PASSWORD.
    #[arg(long, value_name = "KEY")]
    pub sign: Option<PathBuf>,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(clap::Args)]
pub struct VerifyArgs {
    /// registry/repository:tag or registry/repository@sha256:…
    pub reference: String,
    /// The PEM public key (cosign.pub) the signature must verify with.
    #[arg(long, value_name = "PUB")]
    pub key: PathBuf,
    /// The hash the signature was made over: sha256, sha384 or sha512.
    #[arg(long = "hash-algorithm", default_value = "sha256")]
    pub hash_algorithm: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// Where `plait function push --sign` reads the private key's password, as cosign does.
pub const PASSWORD_VARIABLE: &str = "COSIGN_PASSWORD";

#[derive(clap::Args)]
pub struct PullArgs {
    /// registry/repository:tag or registry/repository@sha256:…
    pub reference: String,
    /// Write the component here (`-` for standard output); for a project
    /// build, the directory to write its KCL source to (new or empty).
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(clap::Args)]
pub struct InspectArgs {
    /// registry/repository:tag or registry/repository@sha256:…
    pub reference: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// How plait reaches registries; shared by `function` commands and `render`.
#[derive(clap::Args, Clone, Default)]
pub struct RegistryArgs {
    /// Reach the registries of the references given over plain HTTP (no TLS).
    #[arg(long)]
    pub insecure: bool,
    /// A registry (host[:port]) to reach over plain HTTP; repeatable.
    #[arg(long = "insecure-registry")]
    pub insecure_registries: Vec<String>,
    /// A PEM bundle of CA certificates to trust besides the system's; repeatable.
    #[arg(long = "ca-file")]
    pub ca_files: Vec<PathBuf>,
    /// The Docker config with registry credentials [default:
    /// $DOCKER_CONFIG/config.json, else ~/.docker/config.json].
    #[arg(long = "docker-config")]
    pub docker_config: Option<PathBuf>,
    /// How long a registry may take to connect or to send more bytes.
    #[arg(long = "registry-timeout", default_value = "30s", value_parser = parse_duration)]
    pub registry_timeout: Duration,
}

/// A registry client with its credentials and an executor for its requests.
pub struct Registry {
    pub client: Client,
    pub keychain: Keychain,
    pub(crate) executor: tokio::runtime::Runtime,
}

impl RegistryArgs {
    /// Opens a client; under `--insecure`, the registries of `references`
    /// are reached over plain HTTP.
    pub fn open(&self, references: &[&str]) -> Result<Registry> {
        let mut insecure_registries = self.insecure_registries.clone();
        if self.insecure {
            for reference in references {
                insecure_registries.push(plait_oci::registry_host(reference)?);
            }
        }
        let keychain = match &self.docker_config {
            Some(path) => Keychain::from_docker_config_file(path)?,
            None => Keychain::from_default_docker_config()?,
        };
        let client = Client::new(client_config(
            insecure_registries,
            &self.ca_files,
            self.registry_timeout,
        )?)?;
        let executor = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the registry client's executor")?;
        Ok(Registry {
            client,
            keychain,
            executor,
        })
    }
}

/// How plait reaches registries: plain HTTP for `insecure_registries`, the
/// CA bundles in `ca_files` trusted besides the system's, pulled blobs kept
/// in plait's cache.
pub fn client_config(
    insecure_registries: Vec<String>,
    ca_files: &[PathBuf],
    timeout: Duration,
) -> Result<ClientConfig> {
    let ca_bundles = ca_files
        .iter()
        .map(|path| {
            std::fs::read(path)
                .with_context(|| format!("cannot read the CA file {}", path.display()))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(ClientConfig {
        insecure_registries,
        ca_bundles,
        connect_timeout: timeout,
        read_timeout: timeout,
        cache_root: plait_oci::cache_root(),
        ..ClientConfig::default()
    })
}

impl Registry {
    /// The verified component `reference` names.
    pub fn resolve(&self, reference: &str) -> Result<Resolved, plait_oci::Error> {
        self.executor
            .block_on(self.client.resolve(reference, &self.keychain))
    }

    /// Runs a registry request to completion.
    pub fn block_on<T>(&self, request: impl std::future::Future<Output = T>) -> T {
        self.executor.block_on(request)
    }
}

pub fn run(command: &FunctionCommand) -> Result<String> {
    match command {
        FunctionCommand::Push(args) => push(args),
        FunctionCommand::Pull(args) => pull(args),
        FunctionCommand::Inspect(args) => inspect(args),
        FunctionCommand::Verify(args) => verify(args),
        FunctionCommand::New(args) => crate::scaffold::run(args),
        FunctionCommand::Componentize(args) => crate::componentize::run(args),
    }
}

fn push(args: &PushArgs) -> Result<String> {
    let wasm = std::fs::read(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    // The key is opened first: a wrong password must not leave an unsigned push behind.
    let signing_key = args.sign.as_deref().map(signing_key).transpose()?;
    let registry = args.registry.open(&[&args.reference])?;
    let pushed = registry
        .executor
        .block_on(registry.client.push(
            &wasm,
            &args.reference,
            args.author.as_deref(),
            &registry.keychain,
        ))
        .with_context(|| format!("cannot push {}", args.file.display()))?;
    signed(&registry, &pushed, signing_key)
}

/// What a push prints: the pinned reference, and when `key` is given the
/// signature it then pushed beside it.
pub(crate) fn signed(
    registry: &Registry,
    pushed: &plait_oci::Pushed,
    key: Option<plait_oci::SigningKey>,
) -> Result<String> {
    let Some(key) = key else {
        return Ok(format!("{}\n", pushed.pinned));
    };
    let signed = registry
        .executor
        .block_on(
            registry
                .client
                .sign(&pushed.pinned, &pushed.digest, &key, &registry.keychain),
        )
        .with_context(|| format!("cannot sign {}", pushed.pinned))?;
    Ok(format!(
        "{}\nsignature: {}\n",
        pushed.pinned, signed.signature_reference
    ))
}

/// A cosign private key file, decrypted with $COSIGN_PASSWORD (empty when unset, as cosign's
/// non-interactive default).
pub(crate) fn signing_key(path: &Path) -> Result<plait_oci::SigningKey> {
    let pem = std::fs::read(path)
        .with_context(|| format!("cannot read the signing key {}", path.display()))?;
    let password = std::env::var_os(PASSWORD_VARIABLE).unwrap_or_default();
    plait_oci::SigningKey::from_cosign_pem(
        &path.display().to_string(),
        &pem,
        password.as_encoded_bytes(),
    )
    .with_context(|| format!("the password is read from ${PASSWORD_VARIABLE}"))
}

fn verify(args: &VerifyArgs) -> Result<String> {
    let pem = std::fs::read(&args.key)
        .with_context(|| format!("cannot read the public key {}", args.key.display()))?;
    let source = args.key.display().to_string();
    let authority = plait_oci::Authority {
        name: source.clone(),
        key: plait_oci::PublicKey::from_pem(&source, &pem)?,
        hash: plait_oci::HashAlgorithm::from_name("--hash-algorithm", &args.hash_algorithm)?,
    };
    let registry = args.registry.open(&[&args.reference])?;
    let inspection = registry
        .executor
        .block_on(registry.client.inspect(&args.reference, &registry.keychain))?;
    registry
        .executor
        .block_on(registry.client.verify_signature(
            &inspection.pinned,
            &inspection.digest,
            &[authority],
            &registry.keychain,
        ))?;
    Ok(format!("{}\n", inspection.pinned))
}

fn pull(args: &PullArgs) -> Result<String> {
    let registry = args.registry.open(&[&args.reference])?;
    let resolved = match registry.resolve(&args.reference) {
        Ok(resolved) => resolved,
        Err(plait_oci::Error::UnsupportedArtifact { .. }) => {
            return pull_project_build(&registry, args);
        }
        Err(e) => return Err(e.into()),
    };
    match args.output.as_deref() {
        Some(path) if path == Path::new("-") => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(&resolved.wasm)
                .and_then(|()| stdout.flush())
                .context("cannot write the component to standard output")?;
            Ok(String::new())
        }
        Some(path) => {
            std::fs::write(path, &resolved.wasm)
                .with_context(|| format!("cannot write {}", path.display()))?;
            Ok(format!("{}\n", resolved.pinned))
        }
        None => Ok(format!("{}\n", resolved.pinned)),
    }
}

/// A package that is not a Wasm artifact: a project build's source, or
/// the reason it is none (`resolve_function` says why an image is not a
/// project build).
fn project_build(registry: &Registry, reference: &str) -> Result<plait_oci::SourcePackage> {
    match registry.block_on(
        registry
            .client
            .resolve_function(reference, &registry.keychain),
    )? {
        plait_oci::FunctionPackage::Source(source) => Ok(source),
        plait_oci::FunctionPackage::Wasm(resolved) => anyhow::bail!(
            "{}: the registry answered with a Wasm component after refusing it; try again",
            resolved.pinned
        ),
    }
}

/// Writes a project build's KCL source into the directory `-o` names.
fn pull_project_build(registry: &Registry, args: &PullArgs) -> Result<String> {
    let source = project_build(registry, &args.reference)?;
    match args.output.as_deref() {
        Some(path) if path == Path::new("-") => anyhow::bail!(
            "{} is a project build of a KCL function: its source is a directory ({}), not a \
             component; give `-o DIR` to write it there",
            source.pinned,
            source.image_dir
        ),
        Some(path) => {
            copy_source(&source.dir, path)?;
            Ok(format!("{}\n", source.pinned))
        }
        None => Ok(format!("{}\n", source.pinned)),
    }
}

/// Copies an extracted source (files and directories only: extraction
/// writes no links) into `target`, which must be new or empty so nothing
/// of the user's is overwritten.
fn copy_source(from: &Path, target: &Path) -> Result<()> {
    if target.exists() {
        let mut entries = std::fs::read_dir(target)
            .with_context(|| format!("cannot write the source into {}", target.display()))?;
        anyhow::ensure!(
            entries.next().is_none(),
            "cannot write the source into {}: the directory is not empty",
            target.display()
        );
    }
    for file in source_files(from)? {
        let to = target.join(&file);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::copy(from.join(&file), &to)
            .with_context(|| format!("cannot write {}", to.display()))?;
    }
    std::fs::create_dir_all(target).with_context(|| format!("cannot create {}", target.display()))
}

/// The files below `dir`, relative to it, in name order.
fn source_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let listing = std::fs::read_dir(dir.join(&relative))
            .with_context(|| format!("cannot read {}", dir.join(&relative).display()))?;
        for entry in listing {
            let entry = entry.with_context(|| format!("cannot read {}", dir.display()))?;
            let path = relative.join(entry.file_name());
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// What `inspect` shows of a project build: the runtime that runs it and
/// its source.
fn inspect_project_build(registry: &Registry, reference: &str) -> Result<String> {
    let source = project_build(registry, reference)?;
    let files: Vec<String> = source_files(&source.dir)?
        .iter()
        .map(|f| f.to_string_lossy().replace('\\', "/"))
        .collect();
    let kcl_mod = std::fs::read_to_string(source.dir.join("kcl.mod")).ok();
    files::to_yaml_stream(&[json!({
        "reference": source.pinned,
        "digest": source.digest,
        "layout": "project build of a KCL function (function-kcl's image with FUNCTION_KCL_DEFAULT_SOURCE set)",
        "runtime": "function-kcl, run by plait's built-in function-kcl",
        "source": {
            "directory": source.image_dir,
            "layer": source.layer_digest,
            "files": files,
            "kclMod": kcl_mod,
        },
    })])
}

fn inspect(args: &InspectArgs) -> Result<String> {
    let registry = args.registry.open(&[&args.reference])?;
    let inspection = match registry
        .executor
        .block_on(registry.client.inspect(&args.reference, &registry.keychain))
    {
        Ok(inspection) => inspection,
        Err(plait_oci::Error::UnsupportedArtifact { .. }) => {
            return inspect_project_build(&registry, &args.reference);
        }
        Err(e) => return Err(e.into()),
    };
    let config = &inspection.config;
    // wasm-to-oci configs list nothing: read the world from the component.
    let (imports, exports, world) = match &config.component {
        Some(component) => (
            component.imports.clone(),
            component.exports.clone(),
            component.target.clone(),
        ),
        None => {
            let resolved = registry.resolve(&args.reference)?;
            (resolved.world.imports, resolved.world.exports, None)
        }
    };
    let layout = match inspection.layout {
        plait_oci::Layout::Cncf => "CNCF Wasm artifact (application/vnd.wasm.config.v0+json)",
        plait_oci::Layout::WasmToOci => "wasm-to-oci (application/vnd.wasm.config.v1+json)",
    };
    files::to_yaml_stream(&[json!({
        "reference": inspection.pinned,
        "digest": inspection.digest,
        "component": {
            "digest": inspection.component_digest,
            "size": inspection.size,
        },
        "layout": layout,
        "world": world,
        "created": config.created,
        "author": config.author,
        "os": config.os,
        "imports": imports,
        "exports": exports,
    })])
}
