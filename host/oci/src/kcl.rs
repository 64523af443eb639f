//! KCL modules on OCI registries, fetched by the host for function-kcl
//! steps: a step whose `spec.source` is `oci://…` or whose
//! `spec.dependencies` name modules runs with each module pulled here,
//! pinned to its manifest digest, extracted once into the cache, and
//! granted read-only to the built-in function-kcl where it looks for it
//! ([`KCL_SOURCE_GUEST_PATH`], [`KCL_DEPENDENCIES_GUEST_PATH`]`/<name>`).
//! The guest never reaches a registry.
//!
//! A module is what `kcl mod push` (kpm) pushes: an OCI image manifest
//! with one layer, a tar (kpm before 0.13) or gzipped tar of the package
//! directory (`kcl.mod` at its root), `application/vnd.oci.image.layer.v1.tar`
//! or `…tar+gzip`, usually with that type as the manifest's
//! `artifactType`, an empty config and `org.kcllang.package.*`
//! annotations. The layer is extracted with the same bounds and refusals
//! as a project build's source.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};

use oci_client::Reference;
use plait_runtime::ReadOnlyDir;
use serde_json::Value;

use crate::layout::Manifest;
use crate::source::{MAX_SOURCE_LAYER_BYTES, extract, install_staged};
use crate::{Client, Error, Keychain, Session, parse_reference, pinned};

/// Where the built-in function-kcl finds an `oci://` source the host fetched.
pub const KCL_SOURCE_GUEST_PATH: &str = "/kcl/source";
/// Where the built-in function-kcl finds each fetched dependency, by name.
pub const KCL_DEPENDENCIES_GUEST_PATH: &str = "/kcl/deps";
/// The registry a dependency given by version alone comes from, as kpm's default.
pub const KCL_DEFAULT_REGISTRY: &str = "ghcr.io";
/// The repository namespace of such a dependency, as kpm's default.
pub const KCL_DEFAULT_NAMESPACE: &str = "kcl-lang";
/// The apiVersion of function-kcl's input.
pub const KCL_INPUT_API_VERSION: &str = "krm.kcl.dev/v1alpha1";
/// The layer media types `kcl mod push` writes.
pub const KCL_LAYER_MEDIA_TYPES: [&str; 2] = [
    "application/vnd.oci.image.layer.v1.tar",
    "application/vnd.oci.image.layer.v1.tar+gzip",
];
/// The most modules one step fetches, dependencies of dependencies included.
pub const MAX_KCL_MODULES: usize = 64;

/// The step credential whose `url`, `username` and `password` log in to
/// the registry KCL modules come from, as upstream's `kcl-registry`.
pub const KCL_REGISTRY_CREDENTIAL: &str = "kcl-registry";

/// The credentials a step's [`KCL_REGISTRY_CREDENTIAL`] data gives: the
/// user name and password for the registry of `url` (`https://host`,
/// `oci://host` or `host`). `None` without a `url` or a `password`, as
/// upstream then logs in nowhere.
pub fn registry_credential(data: &BTreeMap<String, Vec<u8>>) -> Option<Keychain> {
    let text = |key: &str| {
        data.get(key)
            .map(|v| String::from_utf8_lossy(v).into_owned())
    };
    let url = text("url").filter(|u| !u.is_empty())?;
    let password = text("password")?;
    let host = url.strip_prefix("oci://").unwrap_or(&url);
    Some(Keychain::anonymous().with(
        host,
        crate::BasicAuth {
            username: text("username").unwrap_or_default(),
            password,
        },
    ))
}

/// A KCL module resolved to its manifest digest and extracted on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KclModule {
    pub reference: String,
    /// The reference pinned to the manifest digest.
    pub pinned: String,
    pub digest: String,
    pub layer_digest: String,
    /// The package directory (its `kcl.mod` at the top).
    pub dir: PathBuf,
}

/// Which version of a module a step asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModuleVersion {
    /// A tag or a digest, written in the reference.
    Given,
    /// No tag: the highest version among the repository's tags, as kpm picks it.
    Latest,
}

/// A module a step needs: from which field, which reference, and where
/// the guest reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WantedModule {
    /// What asked for it, for messages: `spec.source`,
    /// `spec.dependencies.k8s`, or a fetched module's `kcl.mod`.
    pub field: String,
    /// `registry/repository[:tag|@digest]`, without `oci://`.
    pub reference: String,
    pub version: ModuleVersion,
    /// The directory the guest reads it at.
    pub guest: String,
}

/// Why a step's modules cannot be fetched; every variant names the field.
#[derive(Debug, thiserror::Error)]
pub enum KclStepError {
    #[error("{field}: {message}")]
    Refused { field: String, message: String },
    #[error("{field}: cannot fetch {reference}: {source}")]
    Fetch {
        field: String,
        reference: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("more than {MAX_KCL_MODULES} KCL modules with their dependencies")]
    TooMany,
}

fn refused(field: impl Into<String>, message: impl Into<String>) -> KclStepError {
    KclStepError::Refused {
        field: field.into(),
        message: message.into(),
    }
}

/// Whether `input` is function-kcl's (`krm.kcl.dev/v1alpha1`, any kind,
/// as upstream never checks the kind).
pub fn is_kcl_input(input: &Value) -> bool {
    input.get("apiVersion").and_then(Value::as_str) == Some(KCL_INPUT_API_VERSION)
}

/// The reference an `oci://` source names: `oci://registry/repo:tag`,
/// `oci://registry/repo@sha256:…`, `oci://registry/repo?tag=tag` (as
/// `kcl mod push` writes it) or `oci://registry/repo` (the latest version).
pub fn oci_source(source: &str) -> Result<(String, ModuleVersion), String> {
    let Some(rest) = source.strip_prefix("oci://") else {
        return Err(format!("{source:?} is not an oci:// reference"));
    };
    let (base, query) = match rest.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (rest, None),
    };
    let mut query_tag = None;
    for pair in query.into_iter().flat_map(|q| q.split('&')) {
        match pair.split_once('=') {
            Some(("tag", tag)) if !tag.is_empty() => query_tag = Some(tag),
            _ => {
                return Err(format!(
                    "{source:?}: {pair:?} is not understood (the query may only give ?tag=TAG)"
                ));
            }
        }
    }
    let last_segment = base.rsplit('/').next().unwrap_or_default();
    let has_version = base.contains('@') || last_segment.contains(':');
    if !base.contains('/') || base.ends_with('/') {
        return Err(format!(
            "{source:?} names no repository (oci://REGISTRY/REPOSITORY:TAG)"
        ));
    }
    let (reference, version) = match (query_tag, has_version) {
        (Some(_), true) => {
            return Err(format!(
                "{source:?} gives a version twice, in the reference and in ?tag="
            ));
        }
        (Some(tag), false) => (format!("{base}:{tag}"), ModuleVersion::Given),
        (None, true) => (base.to_string(), ModuleVersion::Given),
        (None, false) => (base.to_string(), ModuleVersion::Latest),
    };
    parse_reference(&reference).map_err(|e| e.to_string())?;
    Ok((reference, version))
}

/// The modules a function-kcl step's `input` names directly: its `oci://`
/// source and its `spec.dependencies` (the body of a `kcl.mod`'s
/// `[dependencies]`). Git sources and dependencies and URL sources are
/// refused, saying what to do instead; path dependencies are the guest's
/// to read where they are granted.
pub fn step_modules(input: &Value) -> Result<Vec<WantedModule>, KclStepError> {
    let mut wanted = Vec::new();
    let source = input
        .pointer("/spec/source")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if source.starts_with("oci://") {
        let (reference, version) =
            oci_source(source).map_err(|message| refused("spec.source", message))?;
        wanted.push(WantedModule {
            field: "spec.source".into(),
            reference,
            version,
            guest: KCL_SOURCE_GUEST_PATH.into(),
        });
    }
    let dependencies = input
        .pointer("/spec/dependencies")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !dependencies.trim().is_empty() {
        let table: toml::Table = toml::from_str(dependencies).map_err(|e| {
            refused(
                "spec.dependencies",
                format!(
                    "not the body of a kcl.mod [dependencies] table: {}",
                    e.message()
                ),
            )
        })?;
        wanted.extend(dependency_modules(&table, "spec.dependencies")?);
    }
    Ok(wanted)
}

/// The modules a `[dependencies]` table names, as kpm reads it:
/// `name = "version"` (kpm's default registry), `name = { oci =
/// "oci://registry/repo", tag = "…" }`, `name = { repo = "ns/repo", tag =
/// "…" }`, `name = { package = "other", version = "…" }`; `path` entries
/// are left to the guest and `git` entries refused.
fn dependency_modules(table: &toml::Table, place: &str) -> Result<Vec<WantedModule>, KclStepError> {
    let mut wanted = Vec::new();
    for (name, entry) in table {
        let field = format!("{place}.{name}");
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(refused(
                field,
                "a dependency's name is letters, digits, _ and -",
            ));
        }
        let default_repository =
            |package: &str| format!("{KCL_DEFAULT_REGISTRY}/{KCL_DEFAULT_NAMESPACE}/{package}");
        let (repository, tag) = match entry {
            toml::Value::String(version) => (default_repository(name), version.clone()),
            toml::Value::Table(spec) => {
                let text = |key: &str| -> Result<Option<String>, KclStepError> {
                    match spec.get(key) {
                        None => Ok(None),
                        Some(toml::Value::String(s)) => Ok(Some(s.clone())),
                        Some(_) => Err(refused(field.clone(), format!("{key} is not a string"))),
                    }
                };
                if text("path")?.is_some() {
                    continue;
                }
                if let Some(url) = text("git")? {
                    return Err(refused(
                        field,
                        format!(
                            "git dependencies ({url}) are not fetched: publish the module to an OCI \
                             registry (kcl mod push oci://REGISTRY/REPOSITORY?tag=TAG) and name it \
                             as {name} = {{ oci = \"oci://REGISTRY/REPOSITORY\", tag = \"TAG\" }}"
                        ),
                    ));
                }
                let tag = match (text("tag")?, text("version")?) {
                    (Some(tag), _) | (None, Some(tag)) => tag,
                    (None, None) => String::new(),
                };
                let repository = if let Some(url) = text("oci")? {
                    let Some(base) = url.strip_prefix("oci://") else {
                        return Err(refused(
                            field,
                            format!("oci = {url:?} is not an oci:// reference"),
                        ));
                    };
                    base.trim_end_matches('/').to_string()
                } else if let Some(repo) = text("repo")? {
                    format!("{KCL_DEFAULT_REGISTRY}/{repo}")
                } else if spec.contains_key("version") {
                    default_repository(&text("package")?.unwrap_or_else(|| name.clone()))
                } else {
                    return Err(refused(
                        field,
                        "names no oci, repo, version, path or git source",
                    ));
                };
                (repository, tag)
            }
            _ => {
                return Err(refused(field, "is neither a version string nor a table"));
            }
        };
        let (reference, version) = if tag.is_empty() {
            (repository, ModuleVersion::Latest)
        } else {
            (format!("{repository}:{tag}"), ModuleVersion::Given)
        };
        parse_reference(&reference).map_err(|e| refused(field.clone(), e.to_string()))?;
        wanted.push(WantedModule {
            field,
            reference,
            version,
            guest: format!("{KCL_DEPENDENCIES_GUEST_PATH}/{name}"),
        });
    }
    Ok(wanted)
}

/// The registry modules a fetched module's own `kcl.mod` depends on.
pub fn module_dependencies(dir: &Path, reference: &str) -> Result<Vec<WantedModule>, KclStepError> {
    let place = format!("the kcl.mod of {reference}: [dependencies]");
    let Ok(text) = std::fs::read_to_string(dir.join("kcl.mod")) else {
        return Ok(Vec::new());
    };
    let table: toml::Table = toml::from_str(&text)
        .map_err(|e| refused(place.clone(), format!("not TOML: {}", e.message())))?;
    match table.get("dependencies") {
        Some(toml::Value::Table(dependencies)) => dependency_modules(dependencies, &place),
        _ => Ok(Vec::new()),
    }
}

/// Every module a function-kcl step needs, fetched with `fetch` (which
/// returns the extracted directory): its source and dependencies, then
/// the registry dependencies of each fetched module, breadth first. KCL
/// has one namespace of external packages, so the first module of a name
/// is the one granted. The directories come back as grants at the guest
/// paths the built-in reads.
pub fn fetch_step_modules<E>(
    input: &Value,
    mut fetch: impl FnMut(&WantedModule) -> Result<PathBuf, E>,
) -> Result<Vec<ReadOnlyDir>, KclStepError>
where
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if !is_kcl_input(input) {
        return Ok(Vec::new());
    }
    let mut queue: VecDeque<WantedModule> = step_modules(input)?.into();
    let mut granted: BTreeMap<String, ReadOnlyDir> = BTreeMap::new();
    while let Some(next) = queue.pop_front() {
        if granted.contains_key(&next.guest) {
            continue;
        }
        if granted.len() >= MAX_KCL_MODULES {
            return Err(KclStepError::TooMany);
        }
        let dir = fetch(&next).map_err(|e| KclStepError::Fetch {
            field: next.field.clone(),
            reference: next.reference.clone(),
            source: e.into(),
        })?;
        queue.extend(module_dependencies(&dir, &next.reference)?);
        granted.insert(
            next.guest.clone(),
            ReadOnlyDir {
                host: dir,
                guest: next.guest,
            },
        );
    }
    Ok(granted.into_values().collect())
}

/// The highest version among `tags`, as kpm picks a module's latest:
/// tags that read as semantic versions (a leading `v` allowed), the
/// highest first; `None` when none does.
pub fn latest_version(tags: &[String]) -> Option<&str> {
    tags.iter()
        .filter_map(|tag| {
            let version = semver::Version::parse(tag.strip_prefix('v').unwrap_or(tag))
                .or_else(|_| semver::Version::parse(&format!("{}.0", tag.trim_start_matches('v'))))
                .or_else(|_| {
                    semver::Version::parse(&format!("{}.0.0", tag.trim_start_matches('v')))
                })
                .ok()?;
            Some((version, tag.as_str()))
        })
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, tag)| tag)
}

impl Client {
    /// Resolves a KCL module (`registry/repository[:tag|@digest]`, as
    /// [`step_modules`] gives it) to its manifest digest, checks it is
    /// laid out as `kcl mod push` lays modules out, and extracts its
    /// package to `<cache>/kcl-modules/<layer hex>` (once per layer).
    pub async fn resolve_kcl_module(
        &self,
        reference: &str,
        keychain: &Keychain,
    ) -> Result<KclModule, Error> {
        let session = self.session(reference, keychain)?;
        let (digest, manifest) = self.manifest(&session).await?;
        let layer = kcl_layer(&manifest).map_err(|message| Error::NotAKclModule {
            reference: session.name.clone(),
            message,
        })?;
        let Some(hex) = plait_runtime::sha256_hex(&layer.digest) else {
            return Err(Error::NotAKclModule {
                reference: session.name.clone(),
                message: format!("layer digest {:?} is not a sha256 digest", layer.digest),
            });
        };
        let root = self.extraction_root("kcl-modules")?;
        let dir = root.join(hex);
        let module = |dir: PathBuf| KclModule {
            reference: reference.to_string(),
            pinned: pinned(&session.reference, &digest),
            digest: digest.clone(),
            layer_digest: layer.digest.clone(),
            dir,
        };
        if dir.is_dir() {
            return Ok(module(dir));
        }
        if layer.size > MAX_SOURCE_LAYER_BYTES {
            return Err(Error::TooLarge {
                reference: session.name.clone(),
                what: "the KCL module's layer",
                size: layer.size,
                limit: MAX_SOURCE_LAYER_BYTES,
            });
        }
        let bytes = self.blob(&session, layer, MAX_SOURCE_LAYER_BYTES).await?;
        let not_a_module = |message: String| Error::NotAKclModule {
            reference: session.name.clone(),
            message: format!("layer {}: {message}", layer.digest),
        };
        install_staged(&root, &dir, |staged| {
            extract(&bytes, Path::new(""), staged).map_err(&not_a_module)?;
            if !staged.join("kcl.mod").is_file() {
                return Err(not_a_module(
                    "it has no kcl.mod at its top: not a KCL package as kcl mod push packs one"
                        .into(),
                ));
            }
            Ok(true)
        })?;
        tracing::info!(
            reference = session.name,
            digest,
            dir = %dir.display(),
            "extracted a KCL module"
        );
        Ok(module(dir))
    }

    /// Pulls the module `wanted` names from `reference` (what the
    /// ImageConfigs made of `wanted.reference`): pinned to the repository's
    /// highest version when `wanted` names none, resolved to its digest and
    /// extracted, then verified against `authorities` when a signature is
    /// required. Render and the controller both pull modules this way.
    pub async fn pull_kcl_module(
        &self,
        wanted: &WantedModule,
        reference: &str,
        keychain: &Keychain,
        authorities: Option<&[crate::Authority]>,
    ) -> Result<KclModule, Error> {
        let reference = match wanted.version {
            ModuleVersion::Given => reference.to_string(),
            ModuleVersion::Latest => {
                let tag = self.latest_kcl_tag(reference, keychain).await?;
                format!("{reference}:{tag}")
            }
        };
        let module = self.resolve_kcl_module(&reference, keychain).await?;
        if let Some(authorities) = authorities {
            self.verify_signature(&module.pinned, &module.digest, authorities, keychain)
                .await?;
        }
        Ok(module)
    }

    /// The highest version among the tags of `repository`
    /// (`registry/repository`), as kpm picks a module given without a tag.
    pub async fn latest_kcl_tag(
        &self,
        repository: &str,
        keychain: &Keychain,
    ) -> Result<String, Error> {
        let session = self.session(repository, keychain)?;
        let tags = self
            .retry("listing the tags", || list_tags(&session))
            .await?;
        latest_version(&tags)
            .map(str::to_string)
            .ok_or_else(|| Error::NotFound {
                reference: repository.to_string(),
                message: format!(
                    "no tag is a version ({}); give the tag (oci://{repository}:TAG)",
                    if tags.is_empty() {
                        "it has no tags".to_string()
                    } else {
                        tags.join(", ")
                    }
                ),
            })
    }
}

async fn list_tags(session: &Session) -> Result<Vec<String>, Error> {
    let image: Reference = session.reference.clone();
    session
        .client
        .list_tags(&image, &session.auth, None, None)
        .await
        .map(|response| response.tags)
        .map_err(|e| Error::from_registry(&session.name, e))
}

/// The one layer of a KCL module, or why the manifest is not one.
fn kcl_layer(manifest: &Manifest) -> Result<&crate::layout::Descriptor, String> {
    if manifest.wasm_layer().is_ok() {
        return Err(
            "it is a Wasm function artifact, not a KCL module (kcl mod push oci://…)".into(),
        );
    }
    let [layer] = manifest.layers.as_slice() else {
        return Err(format!(
            "{} layers (a KCL module, as kcl mod push pushes it, has exactly one)",
            manifest.layers.len()
        ));
    };
    if !KCL_LAYER_MEDIA_TYPES.contains(&layer.media_type.as_str()) {
        return Err(format!(
            "layer media type {:?} (expected {} or {})",
            layer.media_type, KCL_LAYER_MEDIA_TYPES[0], KCL_LAYER_MEDIA_TYPES[1]
        ));
    }
    Ok(layer)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn oci_sources_are_read_as_kcl_and_kpm_write_them() {
        let given = |r: &str| Ok((r.to_string(), ModuleVersion::Given));
        type Read = Result<(String, ModuleVersion), &'static str>;
        let cases: [(&str, Read); 9] = [
            (
                "oci://ghcr.io/kcl-lang/net:0.1.0",
                given("ghcr.io/kcl-lang/net:0.1.0"),
            ),
            (
                "oci://127.0.0.1:5000/team/net:v1",
                given("127.0.0.1:5000/team/net:v1"),
            ),
            ("oci://reg.io/net?tag=0.2.0", given("reg.io/net:0.2.0")),
            (
                "oci://reg.io/net@sha256:0000000000000000000000000000000000000000000000000000000000000000",
                given(
                    "reg.io/net@sha256:0000000000000000000000000000000000000000000000000000000000000000",
                ),
            ),
            (
                "oci://ghcr.io/kcl-lang/crossplane-xnetwork-kcl-function",
                Ok((
                    "ghcr.io/kcl-lang/crossplane-xnetwork-kcl-function".into(),
                    ModuleVersion::Latest,
                )),
            ),
            ("oci://reg.io/net:v1?tag=v2", Err("gives a version twice")),
            ("oci://reg.io/net?branch=main", Err("is not understood")),
            ("oci://reg.io", Err("names no repository")),
            ("oci://reg.io/Net:v1", Err("invalid OCI reference")),
        ];
        for (source, expected) in cases {
            let got = oci_source(source);
            match (&got, expected) {
                (Ok(got), Ok(expected)) => assert_eq!(*got, expected, "{source}"),
                (Err(message), Err(part)) => assert!(message.contains(part), "{source}: {message}"),
                _ => panic!("{source}: {got:?}"),
            }
        }
    }

    #[test]
    fn a_steps_dependencies_are_read_as_kpm_reads_kcl_mod() {
        let input = |dependencies: &str| {
            json!({"apiVersion": KCL_INPUT_API_VERSION, "kind": "KCLInput",
                   "spec": {"source": "a = 1", "dependencies": dependencies}})
        };
        let wanted =
            |field: &str, reference: &str, version: ModuleVersion, name: &str| WantedModule {
                field: field.into(),
                reference: reference.into(),
                version,
                guest: format!("{KCL_DEPENDENCIES_GUEST_PATH}/{name}"),
            };
        let cases: [(&str, Result<Vec<WantedModule>, &str>); 8] = [
            (
                "k8s = \"1.31\"\ncrossplane = \"1.16.0\"\n",
                Ok(vec![
                    wanted(
                        "spec.dependencies.crossplane",
                        "ghcr.io/kcl-lang/crossplane:1.16.0",
                        ModuleVersion::Given,
                        "crossplane",
                    ),
                    wanted(
                        "spec.dependencies.k8s",
                        "ghcr.io/kcl-lang/k8s:1.31",
                        ModuleVersion::Given,
                        "k8s",
                    ),
                ]),
            ),
            (
                "net = { oci = \"oci://127.0.0.1:5000/team/net\", tag = \"v1\" }",
                Ok(vec![wanted(
                    "spec.dependencies.net",
                    "127.0.0.1:5000/team/net:v1",
                    ModuleVersion::Given,
                    "net",
                )]),
            ),
            (
                "net = { repo = \"team/net\" }\nk = { package = \"k8s\", version = \"1.30\" }",
                Ok(vec![
                    wanted(
                        "spec.dependencies.k",
                        "ghcr.io/kcl-lang/k8s:1.30",
                        ModuleVersion::Given,
                        "k",
                    ),
                    wanted(
                        "spec.dependencies.net",
                        "ghcr.io/team/net",
                        ModuleVersion::Latest,
                        "net",
                    ),
                ]),
            ),
            ("local = { path = \"/kcl/local\" }", Ok(vec![])),
            (
                "net = { git = \"https://github.com/acme/net\", tag = \"v1\" }",
                Err(
                    "spec.dependencies.net: git dependencies (https://github.com/acme/net) are not fetched: publish the module",
                ),
            ),
            (
                "net = { oci = \"ghcr.io/acme/net\" }",
                Err("spec.dependencies.net: oci = \"ghcr.io/acme/net\" is not an oci:// reference"),
            ),
            (
                "net = 3",
                Err("spec.dependencies.net: is neither a version string nor a table"),
            ),
            (
                "k8s = ",
                Err("spec.dependencies: not the body of a kcl.mod [dependencies] table"),
            ),
        ];
        for (dependencies, expected) in cases {
            let got = step_modules(&input(dependencies));
            match (&got, expected) {
                (Ok(got), Ok(expected)) => assert_eq!(*got, expected, "{dependencies}"),
                (Err(e), Err(part)) => {
                    assert!(e.to_string().starts_with(part), "{dependencies}: {e}")
                }
                _ => panic!("{dependencies}: {got:?}"),
            }
        }
    }

    #[test]
    fn modules_of_dependencies_are_fetched_once_per_name_and_granted_where_the_guest_reads_them() {
        let cache = tempfile::tempdir().unwrap();
        let module = |name: &str, kcl_mod: &str| {
            let dir = cache.path().join(name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("kcl.mod"), kcl_mod).unwrap();
            dir
        };
        let source = module(
            "source",
            "[package]\nname = \"net\"\n[dependencies]\nk8s = \"1.31\"\nlib = { oci = \"oci://r.io/lib\", tag = \"v2\" }\n",
        );
        let lib = module(
            "lib",
            "[package]\nname = \"lib\"\n[dependencies]\nk8s = \"1.28\"\n",
        );
        let k8s = module("k8s", "[package]\nname = \"k8s\"\n");
        let input = json!({"apiVersion": KCL_INPUT_API_VERSION, "kind": "KCLInput",
            "spec": {"source": "oci://r.io/net:v1", "dependencies": "k8s = \"1.31\""}});
        let mut fetched = Vec::new();
        let grants = fetch_step_modules(&input, |wanted| {
            fetched.push(wanted.reference.clone());
            match wanted.reference.as_str() {
                "r.io/net:v1" => Ok(source.clone()),
                "r.io/lib:v2" => Ok(lib.clone()),
                "ghcr.io/kcl-lang/k8s:1.31" => Ok(k8s.clone()),
                other => Err(format!("unexpected {other}")),
            }
        })
        .unwrap();
        assert_eq!(
            fetched,
            ["r.io/net:v1", "ghcr.io/kcl-lang/k8s:1.31", "r.io/lib:v2"],
            "the first module of a name is granted; k8s 1.28 is not fetched"
        );
        let grant = |host: &PathBuf, guest: &str| ReadOnlyDir {
            host: host.clone(),
            guest: guest.into(),
        };
        assert_eq!(
            grants,
            [
                grant(&k8s, "/kcl/deps/k8s"),
                grant(&lib, "/kcl/deps/lib"),
                grant(&source, "/kcl/source"),
            ]
        );

        let failed = fetch_step_modules(&input, |_| Err("NotFound")).unwrap_err();
        assert_eq!(
            failed.to_string(),
            "spec.source: cannot fetch r.io/net:v1: NotFound"
        );
        let not_kcl = json!({"apiVersion": "other/v1", "spec": {"source": "oci://r.io/net:v1"}});
        assert!(
            fetch_step_modules(&not_kcl, |_| Err("called"))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn the_kcl_registry_credential_logs_in_to_the_registry_its_url_names() {
        let data = |entries: &[(&str, &str)]| {
            entries
                .iter()
                .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
                .collect::<BTreeMap<_, _>>()
        };
        let auth = |username: &str| crate::BasicAuth {
            username: username.into(),
            password: "pw".into(),
        };
        let cases = [
            (
                data(&[
                    ("url", "https://ghcr.io"),
                    ("username", "u"),
                    ("password", "pw"),
                ]),
                "ghcr.io",
                Some(auth("u")),
            ),
            (
                data(&[("url", "oci://127.0.0.1:5000"), ("password", "pw")]),
                "127.0.0.1:5000",
                Some(auth("")),
            ),
            (
                data(&[("url", "ghcr.io/"), ("username", "u"), ("password", "pw")]),
                "ghcr.io",
                Some(auth("u")),
            ),
        ];
        for (data, host, expected) in cases {
            let keychain = registry_credential(&data).unwrap();
            assert_eq!(keychain.get(host), expected.as_ref(), "{host}");
        }
        assert!(registry_credential(&data(&[("username", "u"), ("password", "pw")])).is_none());
        assert!(registry_credential(&data(&[("url", "ghcr.io"), ("username", "u")])).is_none());
    }

    #[test]
    fn the_latest_version_is_the_highest_semantic_version_among_the_tags() {
        let tags = |list: &[&str]| list.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        let cases: [(&[&str], Option<&str>); 4] = [
            (&["0.1.0", "0.10.0", "0.9.1"], Some("0.10.0")),
            (&["v1.2", "1.31", "latest"], Some("1.31")),
            (&["1.0.0-rc.1", "0.9.0"], Some("1.0.0-rc.1")),
            (&["latest", "main"], None),
        ];
        for (list, expected) in cases {
            assert_eq!(latest_version(&tags(list)), expected, "{list:?}");
        }
    }

    #[test]
    fn only_manifests_laid_out_as_kcl_mod_push_lays_them_out_are_modules() {
        let descriptor = |media_type: &str| crate::layout::Descriptor {
            media_type: media_type.into(),
            digest: format!("sha256:{}", "0".repeat(64)),
            size: 2,
            annotations: Default::default(),
        };
        let manifest = |config: &str, layers: &[&str]| Manifest {
            schema_version: 2,
            media_type: Some(crate::layout::MANIFEST_MEDIA_TYPE.into()),
            config: descriptor(config),
            layers: layers.iter().map(|l| descriptor(l)).collect(),
        };
        let empty = "application/vnd.oci.empty.v1+json";
        let cases: [(Manifest, Result<(), &str>); 5] = [
            (manifest(empty, &[KCL_LAYER_MEDIA_TYPES[0]]), Ok(())),
            (manifest(empty, &[KCL_LAYER_MEDIA_TYPES[1]]), Ok(())),
            (
                manifest(empty, &["application/vnd.oci.image.layer.v1.tar+zstd"]),
                Err("layer media type \"application/vnd.oci.image.layer.v1.tar+zstd\""),
            ),
            (
                manifest(empty, &[KCL_LAYER_MEDIA_TYPES[0], KCL_LAYER_MEDIA_TYPES[0]]),
                Err("2 layers"),
            ),
            (
                manifest(
                    crate::layout::CONFIG_MEDIA_TYPE,
                    &[crate::layout::LAYER_MEDIA_TYPE],
                ),
                Err("it is a Wasm function artifact"),
            ),
        ];
        for (i, (manifest, expected)) in cases.into_iter().enumerate() {
            match (kcl_layer(&manifest), expected) {
                (Ok(_), Ok(())) => {}
                (Err(message), Err(part)) => {
                    assert!(message.starts_with(part), "case {i}: {message}")
                }
                (got, _) => panic!("case {i}: {got:?}"),
            }
        }
    }
}
