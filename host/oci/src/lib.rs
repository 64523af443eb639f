//! Distributes plait functions through OCI registries.
//!
//! A function is pushed as a CNCF TAG-Runtime Wasm artifact (config
//! `application/vnd.wasm.config.v0+json` listing the component's imports and
//! exports, one `application/wasm` layer) whose bytes depend only on the
//! component, so the same file always gets the same digest. A [`Client`]
//! resolves a reference to a manifest digest once (tags are hints, digests
//! identity), verifies every blob against its digest and a size cap, checks
//! the component fits plait's world before anything compiles it, and keeps
//! verified blobs on disk by digest. Credentials are data ([`Keychain`]):
//! this crate knows nothing of where they are stored. Signatures follow
//! cosign's key-based layout ([`signature`]): [`Client::sign`] writes one,
//! [`Client::verify_signature`] checks a digest against trusted keys.
//!
//! Over 600 lines because [`Client`]'s pushes (a component, an image), inspect and pull share one
//! private session, retry and verification path that reads best in one place.

mod cache;
pub mod component;
mod credentials;
mod error;
mod image;
pub mod kcl;
pub mod layout;
mod package;
pub mod signature;
mod signed;
mod source;

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use oci_client::client::{Certificate, CertificateEncoding, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Reference, RegistryOperation};
use plait_runtime::{Builtin, Module, ReadOnlyDir, Runtime, RuntimeError};

pub use cache::{BlobCache, cache_root, compile_cache_dir};
pub use component::{ComponentError, ComponentWorld};
pub use credentials::{BasicAuth, Keychain};
pub use error::{Error, Reason};
pub use layout::{Layout, WasmConfig};
pub use package::{MAX_PACKAGE_LAYER_BYTES, PackageImage};
pub use plait_runtime::digest;
pub use signature::{Authority, HashAlgorithm, KeyError, PublicKey, Refusal, SigningKey};
pub use signed::{Signed, Verified, signature_reference};
pub use source::{
    DEFAULT_SOURCE_ENV, FunctionPackage, MAX_SOURCE_BYTES, MAX_SOURCE_ENTRIES,
    MAX_SOURCE_LAYER_BYTES, PACKAGE_LAYER_ANNOTATION, SOURCE_GUEST_PATH, SourcePackage,
};

/// How a [`Client`] reaches registries and what it accepts from them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfig {
    /// Registries (`host[:port]`) reached over plain HTTP instead of HTTPS.
    pub insecure_registries: Vec<String>,
    /// PEM bundles of CA certificates trusted in addition to the system's.
    pub ca_bundles: Vec<Vec<u8>>,
    pub connect_timeout: Duration,
    /// How long a request may wait for the next bytes.
    pub read_timeout: Duration,
    /// Tries per registry request; only transient failures (network,
    /// timeouts, rate limits, server errors) are tried again.
    pub attempts: u32,
    /// The wait before the second try; it doubles for each further try.
    pub initial_backoff: Duration,
    /// The largest component accepted.
    pub max_component_bytes: u64,
    /// Where verified blobs are kept, and project builds' KCL sources
    /// extracted (`sources/`); `None` keeps no blob on disk and extracts
    /// sources to a temporary directory the client removes when dropped.
    pub cache_root: Option<PathBuf>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            insecure_registries: Vec::new(),
            ca_bundles: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(30),
            attempts: 4,
            initial_backoff: Duration::from_millis(250),
            // Interpreted guests (Python, JavaScript) bundle their runtime: ~20 MB.
            max_component_bytes: 128 << 20,
            cache_root: None,
        }
    }
}

/// The largest manifest or config accepted: they are small JSON documents.
const MAX_METADATA_BYTES: u64 = 4 << 20;

/// A function resolved to a digest, with its verified component.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The reference as given.
    pub reference: String,
    /// The reference pinned to its manifest digest: `repo[:tag]@sha256:…`.
    pub pinned: String,
    /// The manifest digest: the artifact's identity.
    pub digest: String,
    /// The digest of the component bytes (the layer); the runtime's module digest.
    pub component_digest: String,
    pub layout: Layout,
    pub config: WasmConfig,
    pub world: ComponentWorld,
    pub wasm: Arc<[u8]>,
}

/// What a registry says about an artifact, without downloading the component.
#[derive(Debug, Clone)]
pub struct Inspection {
    pub reference: String,
    pub pinned: String,
    pub digest: String,
    pub component_digest: String,
    /// The component's size in bytes, from the manifest.
    pub size: u64,
    pub layout: Layout,
    pub config: WasmConfig,
}

/// The result of a push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// `REF@sha256:…`: the reference pushed, pinned to the manifest digest.
    pub pinned: String,
    pub digest: String,
    pub component_digest: String,
}

/// Pushes and resolves functions. One client resolves each tag once and
/// then serves that digest; share it (it is `Send + Sync`) to share that.
pub struct Client {
    config: ClientConfig,
    blobs: Option<BlobCache>,
    certificates: Vec<Certificate>,
    /// Tag references resolved so far, by their full name.
    tags: Mutex<HashMap<String, String>>,
    /// Signature verdicts: the authority that verified each digest, by
    /// digest and the keys it was checked against.
    verdicts: Mutex<HashMap<String, String>>,
    /// Where sources are extracted without a cache root; made on first use.
    scratch: Mutex<Option<tempfile::TempDir>>,
}

/// A registry connection with one set of credentials. The registry client
/// remembers the first credentials it sees per registry, so each
/// operation gets its own.
struct Session {
    client: oci_client::Client,
    auth: RegistryAuth,
    reference: Reference,
    name: String,
}

impl Client {
    pub fn new(config: ClientConfig) -> Result<Client, Error> {
        let mut certificates = Vec::new();
        for (index, bundle) in config.ca_bundles.iter().enumerate() {
            let found = split_pem_bundle(bundle);
            if found.is_empty() {
                return Err(Error::Configuration {
                    source_name: format!("CA bundle {}", index + 1),
                    message: "no PEM certificate (-----BEGIN CERTIFICATE-----) found".into(),
                });
            }
            certificates.extend(found);
        }
        let client = Client {
            blobs: config.cache_root.as_deref().and_then(open_blob_cache),
            config,
            certificates,
            tags: Mutex::new(HashMap::new()),
            verdicts: Mutex::new(HashMap::new()),
            scratch: Mutex::new(None),
        };
        // Builds a registry client once so bad certificates fail here.
        client.registry_client()?;
        Ok(client)
    }

    fn registry_client(&self) -> Result<oci_client::Client, Error> {
        let config = oci_client::client::ClientConfig {
            protocol: ClientProtocol::HttpsExcept(self.config.insecure_registries.clone()),
            extra_root_certificates: self.certificates.clone(),
            connect_timeout: Some(self.config.connect_timeout),
            read_timeout: Some(self.config.read_timeout),
            ..Default::default()
        };
        oci_client::Client::try_from(config).map_err(|e| Error::Configuration {
            source_name: "registry client".into(),
            message: e.to_string(),
        })
    }

    fn session(&self, reference: &str, keychain: &Keychain) -> Result<Session, Error> {
        let parsed = parse_reference(reference)?;
        let auth = match keychain.get(parsed.resolve_registry()) {
            Some(basic) => RegistryAuth::Basic(basic.username.clone(), basic.password.clone()),
            None => RegistryAuth::Anonymous,
        };
        Ok(Session {
            client: self.registry_client()?,
            auth,
            name: reference.to_string(),
            reference: parsed,
        })
    }

    /// Runs a registry operation, trying transient failures again with
    /// exponential backoff.
    async fn retry<T, F, Fut>(&self, what: &str, mut operation: F) -> Result<T, Error>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let mut delay = self.config.initial_backoff;
        let mut attempt = 1;
        loop {
            match operation().await {
                Err(error) if error.is_transient() && attempt < self.config.attempts => {
                    tracing::warn!(%error, attempt, "{what} failed; trying again in {delay:?}");
                    tokio::time::sleep(delay).await;
                    delay = delay.saturating_mul(2);
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    /// Validates `wasm` as a plait function and pushes it to `reference`
    /// (which names a tag, not a digest). The same bytes always give the
    /// same digest.
    pub async fn push(
        &self,
        wasm: &[u8],
        reference: &str,
        author: Option<&str>,
        keychain: &Keychain,
    ) -> Result<Pushed, Error> {
        let session = self.session(reference, keychain)?;
        if session.reference.digest().is_some() {
            return Err(Error::InvalidReference {
                reference: reference.to_string(),
                message: "push to a tag (repo:tag); the digest is computed from the component"
                    .into(),
            });
        }
        let world = component::check(wasm).map_err(|source| Error::Component {
            reference: reference.to_string(),
            source,
        })?;
        let artifact = layout::build(wasm, &world, author);
        self.upload(
            &session,
            &[
                (wasm, &artifact.layer_digest),
                (&artifact.config[..], &artifact.config_digest),
            ],
            artifact.manifest.clone(),
        )
        .await?;
        Ok(Pushed {
            pinned: format!("{reference}@{}", artifact.manifest_digest),
            digest: artifact.manifest_digest,
            component_digest: artifact.layer_digest,
        })
    }

    /// Pushes an image of `layers` (media type, bytes, annotations) with
    /// `config` (media type, bytes) to `reference` (a tag): how a project
    /// build, function-kcl's runtime with a KCL source, is published. The
    /// result's `component_digest` is the last layer's digest.
    pub async fn push_image(
        &self,
        reference: &str,
        config: (&str, &[u8]),
        layers: &[(&str, Vec<u8>, std::collections::BTreeMap<String, String>)],
        keychain: &Keychain,
    ) -> Result<Pushed, Error> {
        let session = self.session(reference, keychain)?;
        if session.reference.digest().is_some() {
            return Err(Error::InvalidReference {
                reference: reference.to_string(),
                message: "push to a tag (repo:tag); the digest is computed from the image".into(),
            });
        }
        let config_descriptor = layout::Descriptor::of(config.0, config.1);
        let mut blobs = vec![(config.1.to_vec(), config_descriptor.digest.clone())];
        let mut descriptors = Vec::new();
        for (media_type, bytes, annotations) in layers {
            let mut descriptor = layout::Descriptor::of(media_type, bytes);
            descriptor.annotations = annotations.clone();
            blobs.push((bytes.clone(), descriptor.digest.clone()));
            descriptors.push(descriptor);
        }
        let manifest = layout::Manifest {
            schema_version: 2,
            media_type: Some(layout::MANIFEST_MEDIA_TYPE.to_string()),
            config: config_descriptor,
            layers: descriptors,
        };
        let manifest = serde_json::to_vec(&manifest).map_err(|e| Error::UnsupportedArtifact {
            reference: reference.to_string(),
            message: format!("cannot write the manifest: {e}"),
        })?;
        let manifest_digest = digest(&manifest);
        let blob_refs: Vec<(&[u8], &String)> =
            blobs.iter().map(|(bytes, d)| (&bytes[..], d)).collect();
        self.upload(&session, &blob_refs, manifest).await?;
        Ok(Pushed {
            pinned: format!("{reference}@{manifest_digest}"),
            digest: manifest_digest,
            component_digest: blobs.last().map(|(_, d)| d.clone()).unwrap_or_default(),
        })
    }

    /// Uploads an artifact's blobs (bytes, digest), then its manifest, to
    /// the session's reference, each step retried as `retry` does.
    async fn upload(
        &self,
        session: &Session,
        blobs: &[(&[u8], &String)],
        manifest: Vec<u8>,
    ) -> Result<(), Error> {
        let Session {
            client,
            auth,
            reference: image,
            name,
        } = session;
        let registry_error = |e| Error::from_registry(name, e);
        self.retry("authenticating", || async {
            client
                .auth(image, auth, RegistryOperation::Push)
                .await
                .map(drop)
                .map_err(registry_error)
        })
        .await?;
        for (bytes, blob_digest) in blobs {
            let data = bytes::Bytes::copy_from_slice(bytes);
            self.retry("pushing a blob", || async {
                client
                    .push_blob(image, data.clone(), blob_digest)
                    .await
                    .map_err(registry_error)
            })
            .await?;
        }
        let manifest = bytes::Bytes::from(manifest);
        self.retry("pushing the manifest", || async {
            client
                .push_manifest_raw(
                    image,
                    manifest.clone(),
                    http::HeaderValue::from_static(layout::MANIFEST_MEDIA_TYPE),
                )
                .await
                .map_err(registry_error)
        })
        .await
        .map(drop)
    }

    /// Reads an artifact's manifest and config (not the component).
    pub async fn inspect(&self, reference: &str, keychain: &Keychain) -> Result<Inspection, Error> {
        let session = self.session(reference, keychain)?;
        let (digest, manifest) = self.manifest(&session).await?;
        let (layout, layer) = wasm_layer(&session.name, &manifest)?;
        let config = self.config(&session, layout, &manifest.config).await?;
        Ok(Inspection {
            reference: reference.to_string(),
            pinned: pinned(&session.reference, &digest),
            component_digest: layer.digest.clone(),
            size: layer.size,
            layout,
            config,
            digest,
        })
    }

    /// Resolves `reference` to a digest and returns the verified component:
    /// its bytes match the manifest's digest, fit the size cap, and form a
    /// component that fits plait's world.
    pub async fn resolve(&self, reference: &str, keychain: &Keychain) -> Result<Resolved, Error> {
        let session = self.session(reference, keychain)?;
        let (digest, manifest) = self.manifest(&session).await?;
        self.resolved_wasm(&session, reference, digest, &manifest)
            .await
    }

    /// The verified component of the Wasm artifact `manifest` describes.
    async fn resolved_wasm(
        &self,
        session: &Session,
        reference: &str,
        digest: String,
        manifest: &layout::Manifest,
    ) -> Result<Resolved, Error> {
        let (layout, layer) = wasm_layer(&session.name, manifest)?;
        let layer = layer.clone();
        if layer.size > self.config.max_component_bytes {
            return Err(Error::TooLarge {
                reference: session.name.clone(),
                what: "the component",
                size: layer.size,
                limit: self.config.max_component_bytes,
            });
        }
        let config = self.config(session, layout, &manifest.config).await?;
        // The config lists the imports: refuse before downloading the component.
        if let Some(section) = &config.component {
            let unsupported: Vec<String> = section
                .imports
                .iter()
                .filter(|i| !component::is_supported_import(i))
                .cloned()
                .collect();
            if !unsupported.is_empty() {
                return Err(Error::Component {
                    reference: session.name.clone(),
                    source: ComponentError::IncompatibleWorld {
                        missing_exports: Vec::new(),
                        unsupported_imports: unsupported,
                    },
                });
            }
        }
        let wasm = self
            .blob(session, &layer, self.config.max_component_bytes)
            .await?;
        let world = component::check(&wasm).map_err(|source| Error::Component {
            reference: session.name.clone(),
            source,
        })?;
        Ok(Resolved {
            reference: reference.to_string(),
            pinned: pinned(&session.reference, &digest),
            digest,
            component_digest: layer.digest,
            layout,
            config,
            world,
            wasm: wasm.into(),
        })
    }

    /// Resolves `reference` as [`Client::resolve`] does, but asks the
    /// registry for a tag's digest again instead of keeping the one this
    /// client resolved before: for tags that are expected to move.
    pub async fn resolve_latest(
        &self,
        reference: &str,
        keychain: &Keychain,
    ) -> Result<Resolved, Error> {
        self.forget_tag(reference)?;
        self.resolve(reference, keychain).await
    }

    /// Forgets the digest this client resolved `reference`'s tag to.
    fn forget_tag(&self, reference: &str) -> Result<(), Error> {
        let parsed = parse_reference(reference)?;
        self.tags
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&parsed.whole());
        Ok(())
    }

    /// Where layers of one kind are extracted (project builds' sources in
    /// `sources`, KCL modules in `kcl-modules`): `<cache>/<kind>`, or
    /// below a temporary directory of this client's.
    fn extraction_root(&self, kind: &str) -> Result<PathBuf, Error> {
        if let Some(root) = &self.config.cache_root {
            return Ok(root.join(kind));
        }
        let mut scratch = self.scratch.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(dir) = &*scratch {
            return Ok(dir.path().join(kind));
        }
        let dir = tempfile::Builder::new()
            .prefix("plait-sources-")
            .tempdir()
            .map_err(|e| Error::Cache {
                path: std::env::temp_dir(),
                message: format!("cannot make a directory for extracted layers: {e}"),
            })?;
        let path = dir.path().join(kind);
        *scratch = Some(dir);
        Ok(path)
    }

    /// The manifest digest and manifest: from the reference's digest or
    /// the tags resolved before, served from the cache when there; else
    /// from the registry, hashed here (the registry's digest header is
    /// not trusted).
    async fn manifest(&self, session: &Session) -> Result<(String, layout::Manifest), Error> {
        let whole = session.reference.whole();
        let known = session.reference.digest().map(str::to_string).or_else(|| {
            self.tags
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&whole)
                .cloned()
        });
        let cached = known.as_deref().and_then(|d| self.cached(d));
        let (digest, bytes) = match (known, cached) {
            (Some(digest), Some(bytes)) => (digest, bytes),
            (known, _) => {
                let image = match &known {
                    Some(digest) => session.reference.clone_with_digest(digest.clone()),
                    None => session.reference.clone(),
                };
                let accepted = [
                    layout::MANIFEST_MEDIA_TYPE,
                    layout::DOCKER_MANIFEST_MEDIA_TYPE,
                ];
                let (bytes, _) = self
                    .retry("pulling the manifest", || async {
                        session
                            .client
                            .pull_manifest_raw(&image, &session.auth, &accepted)
                            .await
                            .map_err(|e| Error::from_registry(&session.name, e))
                    })
                    .await?;
                let actual = digest(&bytes);
                if let Some(expected) = known
                    && expected != actual
                {
                    return Err(Error::DigestMismatch {
                        reference: session.name.clone(),
                        expected,
                        actual,
                    });
                }
                if bytes.len() as u64 > MAX_METADATA_BYTES {
                    return Err(Error::TooLarge {
                        reference: session.name.clone(),
                        what: "the manifest",
                        size: bytes.len() as u64,
                        limit: MAX_METADATA_BYTES,
                    });
                }
                self.store(&bytes);
                (actual, bytes.to_vec())
            }
        };
        if session.reference.digest().is_none() {
            self.tags
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(whole, digest.clone());
        }
        let manifest = serde_json::from_slice(&bytes).map_err(|e| Error::UnsupportedArtifact {
            reference: session.name.clone(),
            message: format!("the manifest is not an OCI image manifest: {e}"),
        })?;
        Ok((digest, manifest))
    }

    async fn config(
        &self,
        session: &Session,
        layout: Layout,
        descriptor: &layout::Descriptor,
    ) -> Result<WasmConfig, Error> {
        let bytes = self.blob(session, descriptor, MAX_METADATA_BYTES).await?;
        match serde_json::from_slice(&bytes) {
            Ok(config) => Ok(config),
            // wasm-to-oci configs carry nothing plait reads.
            Err(_) if layout == Layout::WasmToOci => Ok(WasmConfig::default()),
            Err(e) => Err(Error::UnsupportedArtifact {
                reference: session.name.clone(),
                message: format!("the config is not a Wasm config: {e}"),
            }),
        }
    }

    /// A blob, from the cache or the registry, verified against its digest
    /// and `limit`.
    async fn blob(
        &self,
        session: &Session,
        descriptor: &layout::Descriptor,
        limit: u64,
    ) -> Result<Vec<u8>, Error> {
        if let Some(bytes) = self.cached(&descriptor.digest) {
            return Ok(bytes);
        }
        let bytes = self
            .retry("pulling a blob", || {
                self.download(session, descriptor, limit)
            })
            .await?;
        let actual = digest(&bytes);
        if actual != descriptor.digest {
            return Err(Error::DigestMismatch {
                reference: session.name.clone(),
                expected: descriptor.digest.clone(),
                actual,
            });
        }
        self.store(&bytes);
        Ok(bytes)
    }

    async fn download(
        &self,
        session: &Session,
        descriptor: &layout::Descriptor,
        limit: u64,
    ) -> Result<Vec<u8>, Error> {
        let too_large = |size: u64| Error::TooLarge {
            reference: session.name.clone(),
            what: "a blob",
            size,
            limit,
        };
        let layer = oci_client::manifest::OciDescriptor {
            media_type: descriptor.media_type.clone(),
            digest: descriptor.digest.clone(),
            size: i64::try_from(descriptor.size).unwrap_or(i64::MAX),
            ..Default::default()
        };
        // The manifest may have come from the cache: hand the credentials
        // to the registry client here too.
        session
            .client
            .store_auth_if_needed(session.reference.resolve_registry(), &session.auth)
            .await;
        let mut stream = session
            .client
            .pull_blob_stream(&session.reference, &layer)
            .await
            .map_err(|e| Error::from_registry(&session.name, e))?;
        if let Some(length) = stream.content_length
            && length > limit
        {
            return Err(too_large(length));
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| Error::from_stream(&session.name, e))?;
            bytes.extend_from_slice(&chunk);
            if bytes.len() as u64 > limit {
                return Err(too_large(bytes.len() as u64));
            }
        }
        Ok(bytes)
    }

    /// A blob from the cache; the cache only saves downloads, so a refused
    /// name is logged and the blob pulled.
    fn cached(&self, digest: &str) -> Option<Vec<u8>> {
        match self.blobs.as_ref()?.get(digest) {
            Ok(bytes) => bytes,
            Err(error) => {
                tracing::warn!(%error, "cannot read a blob from the cache");
                None
            }
        }
    }

    fn store(&self, bytes: &[u8]) {
        if let Some(blobs) = &self.blobs
            && let Err(error) = blobs.put(bytes)
        {
            // The cache only saves downloads: a write failure is not a pull failure.
            tracing::warn!(%error, "cannot cache a pulled blob");
        }
    }
}

/// The blob cache under `root`; without one, pulls still work, only uncached.
fn open_blob_cache(root: &std::path::Path) -> Option<BlobCache> {
    BlobCache::open(root)
        .inspect_err(
            |error| tracing::warn!(%error, "cannot use the blob cache; pulling without it"),
        )
        .ok()
}

/// The registry host a reference points at (`host[:port]`), as
/// [`ClientConfig::insecure_registries`] and [`Keychain`] name it.
pub fn registry_host(reference: &str) -> Result<String, Error> {
    parse_reference(reference).map(|r| r.resolve_registry().to_string())
}

fn parse_reference(reference: &str) -> Result<Reference, Error> {
    reference
        .parse()
        .map_err(|e: oci_client::ParseError| Error::InvalidReference {
            reference: reference.to_string(),
            message: e.to_string(),
        })
}

/// Compiles (or fetches from the runtime's caches) a resolved function.
/// A component that does not compile, or whose types do not match plait's
/// world, fails with [`Reason::CompileError`] or [`Reason::IncompatibleWorld`].
pub fn load(runtime: &Runtime, resolved: &Resolved) -> Result<Arc<Module>, Error> {
    // The layer was checked against `component_digest` when it was pulled
    // or read from the blob cache.
    runtime
        .load_verified(&resolved.component_digest, &resolved.wasm)
        .map_err(|e| match e {
            RuntimeError::Link { message, .. } => Error::Component {
                reference: resolved.pinned.clone(),
                source: ComponentError::IncompatibleWorld {
                    missing_exports: Vec::new(),
                    unsupported_imports: vec![message],
                },
            },
            other => Error::Compile {
                reference: resolved.pinned.clone(),
                message: other.to_string(),
            },
        })
}

/// A function package loaded: its module, and the directories its calls
/// read (a project build's source at `/src`).
#[derive(Clone)]
pub struct LoadedFunction {
    pub module: Arc<Module>,
    pub read_only_dirs: Vec<ReadOnlyDir>,
}

/// Loads a resolved function package: a Wasm component as [`load`] does;
/// a project build as the built-in function-kcl with its extracted source
/// granted read-only at [`SOURCE_GUEST_PATH`], where the built-in runs the
/// package a step without source names.
pub fn load_function(
    runtime: &Runtime,
    package: &FunctionPackage,
) -> Result<LoadedFunction, Error> {
    match package {
        FunctionPackage::Wasm(resolved) => Ok(LoadedFunction {
            module: load(runtime, resolved)?,
            read_only_dirs: Vec::new(),
        }),
        FunctionPackage::Source(source) => {
            let module = runtime.builtin(Builtin::Kcl).map_err(|e| Error::Compile {
                reference: source.pinned.clone(),
                message: e.to_string(),
            })?;
            Ok(LoadedFunction {
                module,
                read_only_dirs: vec![ReadOnlyDir {
                    host: source.dir.clone(),
                    guest: SOURCE_GUEST_PATH.to_string(),
                }],
            })
        }
    }
}

fn wasm_layer<'m>(
    reference: &str,
    manifest: &'m layout::Manifest,
) -> Result<(Layout, &'m layout::Descriptor), Error> {
    manifest
        .wasm_layer()
        .map_err(|message| Error::UnsupportedArtifact {
            reference: reference.to_string(),
            message,
        })
}

fn pinned(reference: &Reference, digest: &str) -> String {
    let base = format!("{}/{}", reference.registry(), reference.repository());
    match reference.tag() {
        Some(tag) => format!("{base}:{tag}@{digest}"),
        None => format!("{base}@{digest}"),
    }
}

/// The certificates of a PEM bundle, one per `BEGIN CERTIFICATE` block.
fn split_pem_bundle(bundle: &[u8]) -> Vec<Certificate> {
    const END: &str = "-----END CERTIFICATE-----";
    let text = String::from_utf8_lossy(bundle);
    let mut certificates = Vec::new();
    let mut rest = text.as_ref();
    while let Some(start) = rest.find("-----BEGIN CERTIFICATE-----") {
        let Some(end) = rest[start..].find(END) else {
            break;
        };
        let end = start + end + END.len();
        certificates.push(Certificate {
            encoding: CertificateEncoding::Pem,
            data: format!("{}\n", &rest[start..end]).into_bytes(),
        });
        rest = &rest[end..];
    }
    certificates
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn pem_bundles_split_into_certificates() {
        let bundle = b"# comment\n-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n\
            -----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\ntrailing";
        let certificates = split_pem_bundle(bundle);
        assert_eq!(certificates.len(), 2);
        assert!(String::from_utf8_lossy(&certificates[1].data).contains("BBBB"));
        assert!(split_pem_bundle(b"no certificates").is_empty());
    }

    #[test]
    fn bad_ca_bundles_are_refused_when_the_client_is_made() {
        let cases: [&[u8]; 2] = [
            b"not pem",
            b"-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n",
        ];
        for bundle in cases {
            let error = Client::new(ClientConfig {
                ca_bundles: vec![bundle.to_vec()],
                ..ClientConfig::default()
            })
            .err()
            .unwrap();
            assert_eq!(error.reason(), Reason::InvalidConfiguration, "{error}");
        }
    }

    #[test]
    fn pinned_references_keep_the_tag_as_a_hint() {
        let cases = [
            ("r.io:5000/fn/p:v1", "r.io:5000/fn/p:v1@sha256:ab"),
            (
                "r.io/fn/p@sha256:0000000000000000000000000000000000000000000000000000000000000000",
                "r.io/fn/p@sha256:ab",
            ),
        ];
        for (reference, want) in cases {
            assert_eq!(pinned(&reference.parse().unwrap(), "sha256:ab"), want);
        }
    }

    #[test]
    fn registry_hosts_are_read_from_references() {
        let cases = [
            ("127.0.0.1:5000/fn/p:v1", "127.0.0.1:5000"),
            ("localhost:5000/fn/p", "localhost:5000"),
            (
                "ghcr.io/org/fn@sha256:0000000000000000000000000000000000000000000000000000000000000000",
                "ghcr.io",
            ),
            ("org/fn:v1", "index.docker.io"),
        ];
        for (reference, want) in cases {
            assert_eq!(registry_host(reference).unwrap(), want, "{reference}");
        }
    }

    #[test]
    fn invalid_references_are_named() {
        let client = Client::new(ClientConfig::default()).unwrap();
        let error = client
            .session("Not A Ref", &Keychain::anonymous())
            .err()
            .unwrap();
        assert_eq!(error.reason(), Reason::InvalidReference);
        assert!(error.to_string().contains("\"Not A Ref\""), "{error}");
    }
}
