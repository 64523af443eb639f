//! Which component runs each function a render names: the controller's rule
//! ([`plait_functions::Resolver`]) over the Functions given on the command
//! line, with render's local components and packages pulled on demand under
//! the ImageConfigs given beside them.

use std::collections::BTreeMap;
use std::path::{Component, Path};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context, Result, bail};
use base64::Engine;
use plait_functions::{
    GivenFunctions, PackageSource, Pin, PinnedSource, ResolveError, Resolver, Served, package_of,
};
use plait_kube::image_config::{self, SecretData};
use plait_model::{Function, ImageConfig, ImagePolicy, Manifest};
use plait_oci::Keychain;
use plait_oci::kcl::{KclModule, WantedModule};
use plait_runtime::{ReadOnlyDir, Runtime};
use serde_json::Value;

use crate::files;
use crate::function::{Registry, RegistryArgs};

/// The annotation that points a Function at a local component file.
pub const MODULE_ANNOTATION: &str = "render.plait.dev/module";

/// The annotation that lets a Function's calls read local directories:
/// `<host dir>=<guest path>[,<host dir>=<guest path>…]`, each host directory
/// relative to the file the Function is in, each guest path absolute.
/// Only render reads it; the controller grants no directory.
pub const FILESYSTEM_ANNOTATION: &str = "render.plait.dev/filesystem";

/// Where render says the Secrets it was given live, in messages.
const SECRETS_PLACE: &str = "(render input)";

/// The Functions a render was given, and how to resolve the functions its
/// steps name: a Function annotated with [`MODULE_ANNOTATION`] runs that
/// local component, and one annotated with [`FILESYSTEM_ANNOTATION`] may
/// read those directories; the rest follow the controller's rule, with OCI packages
/// pulled from their registries as the ImageConfigs given say (pull secrets
/// and keys from the Secrets given, by name).
pub fn load(
    runtime: Runtime,
    functions_path: Option<&Path>,
    registry_args: &RegistryArgs,
) -> Result<(Resolver, GivenFunctions, Arc<PulledPackages>)> {
    let mut given = BTreeMap::new();
    let mut local = Vec::new();
    let mut granted = Vec::new();
    let mut image_configs = Vec::new();
    let mut secrets = SecretData::new();
    if let Some(path) = functions_path {
        for (file, value) in files::read_documents(path)? {
            if ImageConfig::matches(&value) {
                let config = ImageConfig::from_value(value)
                    .with_context(|| format!("{}: not a valid ImageConfig", file.display()))?;
                image_configs.push(config);
                continue;
            }
            if value["apiVersion"] == "v1" && value["kind"] == "Secret" {
                let (name, data) = secret_data(&value)
                    .with_context(|| format!("{}: not a valid Secret", file.display()))?;
                secrets.insert(name, data);
                continue;
            }
            let function = Function::from_value(value.clone())
                .with_context(|| format!("{}: not a valid Function", file.display()))?;
            let name = function.name().to_string();
            let base = file.parent().unwrap_or(Path::new("."));
            if let Some(module_path) = function.metadata.annotations.get(MODULE_ANNOTATION) {
                local.push((name.clone(), base.join(module_path)));
            }
            if let Some(grants) = function.metadata.annotations.get(FILESYSTEM_ANNOTATION) {
                let dirs = read_only_dirs(grants, base)
                    .with_context(|| format!("Function {name:?}: {FILESYSTEM_ANNOTATION}"))?;
                granted.push((name.clone(), dirs));
            }
            given.insert(name, value);
        }
    }
    // Rewritten references too, so `--insecure` reaches the registries pulled from.
    let mut references = Vec::new();
    for function in given.values() {
        let package = package_of(function);
        if let Ok(ImagePolicy {
            rewrite: Some((_, rewritten)),
            ..
        }) = ImagePolicy::for_package(&image_configs, package)
        {
            references.push(rewritten);
        }
        references.push(package.to_string());
    }
    let pulled = Arc::new(PulledPackages {
        runtime: runtime.clone(),
        args: registry_args.clone(),
        references: Mutex::new(references),
        image_configs,
        secrets,
        registry: Mutex::new(None),
        pulled: Mutex::new(BTreeMap::new()),
    });
    let mut resolver = Resolver::builtins(runtime.clone()).with_packages(pulled.clone());
    for (name, module_path) in local {
        let bytes = std::fs::read(&module_path).with_context(|| {
            format!(
                "Function {name:?}: cannot read the component named by {MODULE_ANNOTATION}: {}",
                module_path.display()
            )
        })?;
        let module = runtime
            .load(&bytes)
            .with_context(|| format!("Function {name:?}: cannot load {}", module_path.display()))?;
        resolver = resolver.with_local(name, module);
    }
    for (name, dirs) in granted {
        resolver = resolver.with_read_only_dirs(name, dirs);
    }
    Ok((resolver, GivenFunctions(given), pulled))
}

/// The directories [`FILESYSTEM_ANNOTATION`]'s `value` grants, host
/// directories relative to `base`: each must exist, and each guest path be
/// absolute, without `.` or `..`, and given once.
fn read_only_dirs(value: &str, base: &Path) -> Result<Vec<ReadOnlyDir>> {
    let mut dirs: Vec<ReadOnlyDir> = Vec::new();
    for entry in value.split(',').map(str::trim) {
        let Some((host, guest)) = entry
            .split_once('=')
            .map(|(host, guest)| (host.trim(), guest.trim()))
            .filter(|(host, guest)| !host.is_empty() && !guest.is_empty())
        else {
            bail!("{entry:?} is not <host dir>=<guest path> (entries are separated by commas)");
        };
        let guest_path = Path::new(guest);
        if !guest_path.is_absolute() {
            bail!("{entry:?}: the guest path {guest:?} is not absolute");
        }
        if guest_path
            .components()
            .any(|c| !matches!(c, Component::RootDir | Component::Normal(_)))
        {
            bail!("{entry:?}: the guest path {guest:?} has . or .. in it");
        }
        // `/templates/` is where the guest finds `/templates`.
        let guest = match guest.trim_end_matches('/') {
            "" => "/",
            trimmed => trimmed,
        };
        if dirs.iter().any(|d| d.guest == guest) {
            bail!("{entry:?}: the guest path {guest:?} is granted twice");
        }
        let host = base.join(host);
        if !host.is_dir() {
            bail!(
                "{entry:?}: {} is not a directory{}",
                host.display(),
                if host.exists() {
                    ""
                } else {
                    " (it does not exist)"
                }
            );
        }
        dirs.push(ReadOnlyDir {
            host,
            guest: guest.to_string(),
        });
    }
    Ok(dirs)
}

/// Pulls Functions' packages from their registries as the pipeline needs them.
pub struct PulledPackages {
    runtime: Runtime,
    args: RegistryArgs,
    /// Every package given, and every KCL module steps name, so
    /// `--insecure` reaches all their registries.
    references: Mutex<Vec<String>>,
    image_configs: Vec<ImageConfig>,
    /// The Secrets given, by name: pull secrets and keys ImageConfigs name.
    secrets: SecretData,
    /// Opened on first use: renders without OCI packages never read
    /// registry credentials.
    registry: Mutex<Option<Registry>>,
    /// What each Function's package was pulled as, for the account render
    /// gives of the digests it ran.
    pulled: Mutex<BTreeMap<String, String>>,
}

impl PulledPackages {
    /// The reference each Function's package was pulled from, pinned to
    /// the digest pulled, by Function name.
    pub fn pulled(&self) -> BTreeMap<String, String> {
        self.pulled
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Pulls `package` for `function` under the ImageConfigs given, checks
    /// its signature where one asks for it, and loads it: a Wasm component,
    /// or a project build run by the built-in function-kcl with its source.
    fn pull(&self, function: &str, package: &str) -> Result<Served, ResolveError> {
        let failed = |message: &str| {
            let function = function.to_string();
            let message = message.to_string();
            move |source: Box<dyn std::error::Error + Send + Sync>| ResolveError::Package {
                function,
                message,
                source,
            }
        };
        let mut registry = self.registry.lock().unwrap_or_else(PoisonError::into_inner);
        let registry = match &mut *registry {
            Some(registry) => registry,
            slot @ None => {
                let references = self
                    .references
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                let references: Vec<&str> = references.iter().map(String::as_str).collect();
                let opened = self
                    .args
                    .open(&references)
                    .map_err(|e| failed("cannot reach its registry")(e.into()))?;
                slot.insert(opened)
            }
        };
        let applied = ImagePolicy::for_package(&self.image_configs, package)
            .map_err(|e| failed("cannot apply the ImageConfigs")(Box::new(e)))
            .and_then(|policy| {
                image_config::apply(&policy, package, &self.secrets, SECRETS_PLACE)
                    .map_err(|e| failed("cannot apply the ImageConfigs")(Box::new(e)))
            })?;
        // An ImageConfig's pull secret wins over the Docker config for its registry.
        let keychain = registry.keychain.clone().merge(applied.keychain.clone());
        let resolved = registry
            .block_on(
                registry
                    .client
                    .resolve_function(&applied.reference, &keychain),
            )
            .map_err(|e| failed("cannot pull its package")(Box::new(e)))?;
        if let Some(verification) = &applied.verification {
            registry
                .block_on(registry.client.verify_signature(
                    resolved.pinned(),
                    resolved.digest(),
                    &verification.authorities,
                    &keychain,
                ))
                .map_err(|e| {
                    let message = format!(
                        "its package is not verified by ImageConfig {:?}",
                        verification.config
                    );
                    failed(&message)(Box::new(e))
                })?;
        }
        let loaded = plait_oci::load_function(&self.runtime, &resolved)
            .map_err(|e| failed("cannot load its package")(Box::new(e)))?;
        self.pulled
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(function.to_string(), resolved.pinned().to_string());
        Ok(Served {
            module: loaded.module,
            read_only_dirs: loaded.read_only_dirs,
        })
    }
}

impl PulledPackages {
    /// Counts `references` among those `--insecure` reaches over plain
    /// HTTP; only before the first pull opens the registry client.
    pub fn reach(&self, references: impl IntoIterator<Item = String>) {
        self.references
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(references);
    }

    /// Pulls the KCL module `wanted` names for a function-kcl step, under
    /// the ImageConfigs given as a Function's package is (rewrite, pull
    /// secret, signature), with `step_keychain` (the step's `kcl-registry`
    /// credential) winning for its registry; a module named without a tag
    /// is pinned to its repository's highest version. Returns the
    /// extracted module.
    pub fn kcl_module(
        &self,
        wanted: &WantedModule,
        step_keychain: &Keychain,
    ) -> Result<KclModule, Box<dyn std::error::Error + Send + Sync>> {
        let mut registry = self.registry.lock().unwrap_or_else(PoisonError::into_inner);
        let registry = match &mut *registry {
            Some(registry) => registry,
            slot @ None => {
                let mut references = self
                    .references
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                references.push(wanted.reference.clone());
                let references: Vec<&str> = references.iter().map(String::as_str).collect();
                slot.insert(self.args.open(&references)?)
            }
        };
        let applied = image_config::apply(
            &ImagePolicy::for_package(&self.image_configs, &wanted.reference)?,
            &wanted.reference,
            &self.secrets,
            SECRETS_PLACE,
        )?;
        let keychain = registry
            .keychain
            .clone()
            .merge(applied.keychain.clone())
            .merge(step_keychain.clone());
        let verification = applied.verification.as_ref();
        registry
            .block_on(registry.client.pull_kcl_module(
                wanted,
                &applied.reference,
                &keychain,
                verification.map(|v| v.authorities.as_slice()),
            ))
            .map_err(|e| match (e, verification) {
                (e @ plait_oci::Error::Signature { .. }, Some(verification)) => format!(
                    "it is not verified by ImageConfig {:?}: {e}",
                    verification.config
                )
                .into(),
                (e, _) => e.into(),
            })
    }
}

impl PackageSource for PulledPackages {
    fn module(&self, function: &str, object: &Value) -> Result<Served, ResolveError> {
        self.pull(function, package_of(object))
    }

    fn pinned(&self, function: &str, pin: &Pin) -> Result<Served, ResolveError> {
        match &pin.source {
            PinnedSource::Package { pinned } => self.pull(function, pinned),
            PinnedSource::Builtin(builtin) => self
                .runtime
                .builtin(*builtin)
                .map(Served::from)
                .map_err(|source| ResolveError::Runtime {
                    function: function.into(),
                    source,
                }),
        }
    }
}

/// A Secret's name and data (`data` base64, `stringData` as is, which wins).
pub(crate) fn secret_data(secret: &Value) -> Result<(String, BTreeMap<String, Vec<u8>>)> {
    let name = secret
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .context("a Secret needs metadata.name")?
        .to_string();
    let mut data = BTreeMap::new();
    let entries = |field: &str| {
        secret
            .get(field)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect::<Vec<_>>()
    };
    for (key, encoded) in entries("data") {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .with_context(|| format!("Secret {name:?}: data.{key} is not base64"))?;
        data.insert(key, bytes);
    }
    for (key, text) in entries("stringData") {
        data.insert(key, text.into_bytes());
    }
    Ok((name, data))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_filesystem_annotation_grants_existing_directories_at_absolute_guest_paths() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path();
        std::fs::create_dir_all(base.join("templates")).unwrap();
        std::fs::create_dir_all(base.join("more/partials")).unwrap();
        std::fs::write(base.join("file.txt"), "").unwrap();
        let dir = |host: &str, guest: &str| ReadOnlyDir {
            host: base.join(host),
            guest: guest.into(),
        };
        // (annotation, Ok(the directories granted) or the error)
        let cases: [(&str, Result<Vec<ReadOnlyDir>, String>); 13] = [
            (
                "templates=/templates",
                Ok(vec![dir("templates", "/templates")]),
            ),
            (
                " templates = /templates/ , more/partials=/etc/partials",
                Ok(vec![
                    dir("templates", "/templates"),
                    dir("more/partials", "/etc/partials"),
                ]),
            ),
            ("./templates=/", Ok(vec![dir("./templates", "/")])),
            (
                "templates",
                Err("\"templates\" is not <host dir>=<guest path> (entries are separated by commas)".into()),
            ),
            (
                "",
                Err("\"\" is not <host dir>=<guest path> (entries are separated by commas)".into()),
            ),
            (
                "templates=/templates,",
                Err("\"\" is not <host dir>=<guest path> (entries are separated by commas)".into()),
            ),
            (
                "=/templates",
                Err("\"=/templates\" is not <host dir>=<guest path> (entries are separated by commas)".into()),
            ),
            (
                "templates=",
                Err("\"templates=\" is not <host dir>=<guest path> (entries are separated by commas)".into()),
            ),
            (
                "templates=templates",
                Err("\"templates=templates\": the guest path \"templates\" is not absolute".into()),
            ),
            (
                "templates=/a/../templates",
                Err("\"templates=/a/../templates\": the guest path \"/a/../templates\" has . or .. in it".into()),
            ),
            (
                "templates=/t,more/partials=/t/",
                Err("\"more/partials=/t/\": the guest path \"/t\" is granted twice".into()),
            ),
            (
                "missing=/templates",
                Err(format!(
                    "\"missing=/templates\": {} is not a directory (it does not exist)",
                    base.join("missing").display()
                )),
            ),
            (
                "file.txt=/templates",
                Err(format!(
                    "\"file.txt=/templates\": {} is not a directory",
                    base.join("file.txt").display()
                )),
            ),
        ];
        for (annotation, want) in cases {
            let got = read_only_dirs(annotation, base).map_err(|e| e.to_string());
            assert_eq!(got, want, "{annotation:?}");
        }
    }
}
