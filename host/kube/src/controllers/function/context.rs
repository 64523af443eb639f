//! What the Function controller works with: the package store it fills,
//! the cluster, the XR routes it requeues through, and how one Function's
//! package is installed (resolved, verified and compiled, or a built-in
//! compiled) into [`Outcome`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, ListParams};
use kube::runtime::reflector::Store;
use plait_functions::{FUNCTION_API_VERSION, FUNCTION_KIND, package_of};
use plait_model::ImagePolicy;
use plait_oci::Keychain;
use plait_reconcile::ObjectRef;
use plait_runtime::Builtin;
use serde_json::Value;

use super::FunctionError;
use super::packages::{Installed, InstalledPackages};
use crate::clusters::cluster::KubeCluster;
use crate::controllers::function::image_config::{
    self, Applied, DOCKER_CONFIG_KEY, SecretData, Verification, image_config_of,
    image_config_resource, secrets_needed,
};
use crate::controllers::kit::{Controlled, ObjectError, Policy};
use crate::controllers::timing::Timing;
use crate::controllers::watches::ComposedWatches;
use crate::vocabulary::api::{
    COMPOSITION_API_VERSION, COMPOSITION_KIND, REVISION_KIND, function_resource, group_of,
};
use crate::vocabulary::object::text;

/// How long a changed Function's XRs wait for the Function store to catch
/// up with the status just written (a watch event, usually milliseconds).
const STORE_WAIT: Duration = Duration::from_secs(5);

/// How one attempt to install a Function's package ended.
#[derive(Debug)]
pub(super) enum Outcome {
    /// Built in, its component compiled (or found compiled) in `took`.
    Builtin {
        builtin: Builtin,
        took: Duration,
    },
    Healthy {
        pinned: String,
        digest: String,
    },
    /// Not resolved or not verified: nothing is installed.
    NotInstalled(plait_oci::Error),
    /// Resolved, but its signature does not satisfy the ImageConfig that
    /// asks for one: nothing is installed.
    Unverified {
        config: String,
        error: plait_oci::Error,
        /// The digest installed before, when the package now resolves to
        /// another (a moved tag).
        previous: Option<String>,
    },
    /// Pulled and verified, but it does not compile or link.
    Unhealthy {
        pinned: String,
        digest: String,
        error: plait_oci::Error,
    },
}

impl Outcome {
    pub(super) fn installed(&self, package: &str, policy: &str) -> Installed {
        match self {
            Outcome::Builtin { builtin, .. } => Installed::Builtin(*builtin),
            Outcome::Healthy { pinned, digest } => Installed::Package {
                package: package.into(),
                pinned: pinned.clone(),
                digest: digest.clone(),
                policy: policy.into(),
            },
            Outcome::NotInstalled(error)
            | Outcome::Unhealthy { error, .. }
            | Outcome::Unverified { error, .. } => Installed::Failed {
                package: package.into(),
                reason: error.reason().as_str(),
            },
        }
    }

    pub(super) fn healthy(&self) -> bool {
        matches!(self, Outcome::Builtin { .. } | Outcome::Healthy { .. })
    }
}

/// `bytes` in megabytes to one decimal, for people.
pub(super) fn megabytes(bytes: usize) -> String {
    format!("{}.{} MB", bytes / 1_000_000, bytes % 1_000_000 / 100_000)
}

/// Whether a Composition's (or CompositionRevision's) pipeline runs `function`.
fn uses(composition: &Value, function: &str) -> bool {
    composition
        .pointer("/spec/pipeline")
        .and_then(Value::as_array)
        .is_some_and(|steps| steps.iter().any(|s| s["functionRef"]["name"] == function))
}

/// What the ImageConfigs make of `package` (pulled for `subject`, which
/// errors name), with the Secrets they name read from `namespace`. A
/// config plait cannot apply, or a Secret it lacks, is the inner error;
/// an API failure the outer.
pub(super) async fn image_policy(
    client: &kube::Client,
    namespace: &str,
    subject: &str,
    package: &str,
) -> Result<Result<Applied, plait_oci::Error>, FunctionError> {
    let kube_error = |what: String| {
        move |source| -> FunctionError {
            ObjectError::kube(subject.to_string(), what)(source).into()
        }
    };
    let configs: Api<DynamicObject> = Api::all_with(client.clone(), &image_config_resource());
    let list = configs
        .list(&ListParams::default())
        .await
        .map_err(kube_error("cannot list ImageConfigs".into()))?;
    let mut parsed = Vec::new();
    for object in &list.items {
        match image_config_of(object) {
            Ok(config) => parsed.push(config),
            Err(e) => {
                return Ok(Err(plait_oci::Error::Configuration {
                    source_name: format!(
                        "ImageConfig {:?}",
                        object.metadata.name.as_deref().unwrap_or_default()
                    ),
                    message: e.to_string(),
                }));
            }
        }
    }
    let policy = match ImagePolicy::for_package(&parsed, package) {
        Ok(policy) => policy,
        Err(e) => {
            return Ok(Err(plait_oci::Error::Configuration {
                source_name: format!("ImageConfig {:?}", e.config),
                message: format!("{}: {}", e.field, e.message),
            }));
        }
    };
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let mut data = SecretData::new();
    for secret_name in secrets_needed(&policy) {
        let secret = secrets
            .get_opt(&secret_name)
            .await
            .map_err(kube_error(format!(
                "cannot read Secret {namespace}/{secret_name}"
            )))?;
        if let Some(secret) = secret {
            let values = secret.data.unwrap_or_default();
            data.insert(
                secret_name,
                values.into_iter().map(|(k, v)| (k, v.0)).collect(),
            );
        }
    }
    Ok(image_config::apply(&policy, package, &data, namespace))
}

/// What the Function controller shares across reconciles.
pub struct FunctionContext {
    pub(super) packages: Arc<InstalledPackages>,
    pub(super) cluster: KubeCluster,
    watches: Arc<ComposedWatches>,
    pub(super) timing: Timing,
    pub(super) policy: Policy,
    /// The Function store this controller fills, which XR reconciles read.
    store: Store<DynamicObject>,
}

impl Controlled for FunctionContext {
    fn policy(&self) -> &Policy {
        &self.policy
    }
}

impl FunctionContext {
    pub fn new(
        packages: Arc<InstalledPackages>,
        cluster: KubeCluster,
        watches: Arc<ComposedWatches>,
        timing: Timing,
        store: Store<DynamicObject>,
    ) -> FunctionContext {
        FunctionContext {
            store,
            packages,
            cluster,
            watches,
            policy: Policy::new(function_resource(), &timing),
            timing,
        }
    }

    pub(super) fn reference(&self, function: &str) -> ObjectRef {
        ObjectRef {
            api_version: FUNCTION_API_VERSION.into(),
            kind: FUNCTION_KIND.into(),
            namespace: None,
            name: function.into(),
        }
    }

    /// The credentials in the Function's `packagePullSecrets`, read from
    /// plait's namespace. A missing or malformed Secret is the Function's
    /// problem (reported on its conditions); an API failure is retried.
    async fn keychain(
        &self,
        name: &str,
        function: &Value,
        mut keychain: Keychain,
    ) -> Result<Result<Keychain, plait_oci::Error>, FunctionError> {
        let namespace = self.packages.namespace();
        let secrets: Api<Secret> = Api::namespaced(self.cluster.client().clone(), namespace);
        let references = function
            .pointer("/spec/packagePullSecrets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for reference in references {
            let secret_name = text(reference, "/name").unwrap_or_default();
            let source = format!("pull secret {namespace}/{secret_name}");
            let configuration = |message: String| plait_oci::Error::Configuration {
                source_name: source.clone(),
                message,
            };
            let secret = secrets
                .get_opt(secret_name)
                .await
                .map_err(ObjectError::kube(
                    format!("Function {name:?}"),
                    format!("cannot read {source}"),
                ))?;
            let Some(secret) = secret else {
                return Ok(Err(configuration("not found".into())));
            };
            let Some(config) = secret.data.as_ref().and_then(|d| d.get(DOCKER_CONFIG_KEY)) else {
                return Ok(Err(configuration(format!(
                    "has no {DOCKER_CONFIG_KEY} key (a kubernetes.io/dockerconfigjson Secret has one)"
                ))));
            };
            match Keychain::from_docker_config(&source, &config.0) {
                Ok(found) => keychain = keychain.merge(found),
                Err(e) => return Ok(Err(e)),
            }
        }
        Ok(Ok(keychain))
    }

    /// What the ImageConfigs make of `package`, with the Secrets they name
    /// read from plait's namespace. A config plait cannot apply, or a
    /// Secret it lacks, is the Function's problem (reported on its
    /// conditions); an API failure is retried.
    async fn image_policy(
        &self,
        name: &str,
        package: &str,
    ) -> Result<Result<Applied, plait_oci::Error>, FunctionError> {
        image_policy(
            self.cluster.client(),
            self.packages.namespace(),
            &format!("Function {name:?}"),
            package,
        )
        .await
    }

    /// The outcome of `previous`, the Function's installed package, when it
    /// is `package` under the same ImageConfigs and its module is loaded.
    fn still_installed(
        &self,
        previous: Option<&Installed>,
        package: &str,
        policy: &str,
    ) -> Option<Outcome> {
        let Some(Installed::Package {
            package: installed,
            pinned,
            digest,
            policy: installed_policy,
        }) = previous
        else {
            return None;
        };
        (installed == package
            && installed_policy == policy
            && self.packages.module(digest).is_some())
        .then(|| Outcome::Healthy {
            pinned: pinned.clone(),
            digest: digest.clone(),
        })
    }

    /// Checks the signature of the package `pinned` at `digest` against the
    /// authorities an ImageConfig's `verification` names.
    async fn verify(
        &self,
        name: &str,
        pinned: &str,
        digest: &str,
        verification: &Verification,
        keychain: &Keychain,
    ) -> Result<(), plait_oci::Error> {
        let started = Instant::now();
        let verified = self
            .packages
            .client
            .verify_signature(pinned, digest, &verification.authorities, keychain)
            .await?;
        tracing::info!(
            function = name,
            package = pinned,
            image_config = verification.config,
            authority = verified.authority,
            remembered = verified.remembered,
            elapsed = ?started.elapsed(),
            "verified function package signature"
        );
        Ok(())
    }

    /// Resolves, verifies and compiles the Function's package, unless it is
    /// built in or already installed from the same package under the same
    /// ImageConfigs (a tag is resolved again only under
    /// `packagePullPolicy: Always`). Also returns what the ImageConfigs
    /// made of the package.
    pub(super) async fn install(
        &self,
        name: &str,
        function: &Value,
    ) -> Result<(Outcome, Option<Applied>), FunctionError> {
        let package = package_of(function);
        if let Some(builtin) = Builtin::from_package(package) {
            return Ok((self.install_builtin(name, builtin).await?, None));
        }
        let applied = match self.image_policy(name, package).await? {
            Ok(applied) => applied,
            Err(error) => return Ok((Outcome::NotInstalled(error), None)),
        };
        let policy = applied.fingerprint();
        let previous = self.packages.installed(name);
        let always = text(function, "/spec/packagePullPolicy") == Some("Always");
        if !always && let Some(outcome) = self.still_installed(previous.as_ref(), package, &policy)
        {
            return Ok((outcome, Some(applied)));
        }
        let base = self
            .packages
            .keychain
            .clone()
            .merge(applied.keychain.clone());
        let keychain = match self.keychain(name, function, base).await? {
            Ok(keychain) => keychain,
            Err(error) => return Ok((Outcome::NotInstalled(error), Some(applied))),
        };
        let started = Instant::now();
        let client = &self.packages.client;
        let reference = applied.reference.as_str();
        let resolved = if always {
            client.resolve_function_latest(reference, &keychain).await
        } else {
            client.resolve_function(reference, &keychain).await
        };
        let resolved = match resolved {
            Ok(resolved) => resolved,
            Err(error) => return Ok((Outcome::NotInstalled(error), Some(applied))),
        };
        let pulled = started.elapsed();
        let started = Instant::now();
        if let Some(verification) = &applied.verification {
            let (pinned, digest) = (resolved.pinned(), resolved.digest());
            let checked = self.verify(name, pinned, digest, verification, &keychain);
            if let Err(error) = checked.await {
                let previous = match previous {
                    Some(Installed::Package { digest, .. }) if digest != resolved.digest() => {
                        Some(digest)
                    }
                    _ => None,
                };
                let outcome = Outcome::Unverified {
                    config: verification.config.clone(),
                    error,
                    previous,
                };
                return Ok((outcome, Some(applied)));
            }
        }
        let verified = started.elapsed();
        let started = Instant::now();
        let (resolved, loaded) = self.load(name, resolved).await?;
        let compiled = started.elapsed();
        let module = match loaded {
            Ok(module) => module,
            Err(error) => {
                let outcome = Outcome::Unhealthy {
                    pinned: resolved.pinned().to_string(),
                    digest: resolved.digest().to_string(),
                    error,
                };
                return Ok((outcome, Some(applied)));
            }
        };
        self.packages.keep(resolved.digest(), module);
        let what = match &resolved {
            plait_oci::FunctionPackage::Wasm(wasm) => megabytes(wasm.wasm.len()),
            plait_oci::FunctionPackage::Source(source) => format!(
                "a project build run by the built-in function-kcl with {} at {}",
                source.dir.display(),
                plait_oci::SOURCE_GUEST_PATH
            ),
        };
        tracing::info!(
            function = name,
            package = resolved.pinned(),
            what,
            ?pulled,
            ?verified,
            ?compiled,
            "installed function package"
        );
        let outcome = Outcome::Healthy {
            pinned: resolved.pinned().to_string(),
            digest: resolved.digest().to_string(),
        };
        Ok((outcome, Some(applied)))
    }

    /// Compiles `builtin`'s component into the runtime's module cache, where
    /// the pipelines that run it find it, unless a Function installed it
    /// already (modules are never dropped).
    async fn install_builtin(
        &self,
        name: &str,
        builtin: Builtin,
    ) -> Result<Outcome, FunctionError> {
        if let Some(took) = self.packages.builtin_took(builtin) {
            return Ok(Outcome::Builtin { builtin, took });
        }
        let runtime = self.packages.runtime().clone();
        let started = Instant::now();
        let loaded = tokio::task::spawn_blocking(move || runtime.builtin(builtin))
            .await
            .map_err(|source| FunctionError::Join {
                function: name.into(),
                source,
            })?;
        if let Err(error) = loaded {
            return Ok(Outcome::NotInstalled(plait_oci::Error::Compile {
                reference: builtin.name().into(),
                message: error.to_string(),
            }));
        }
        let took = self.packages.builtin_loaded(builtin, started.elapsed());
        tracing::info!(
            function = name,
            builtin = builtin.name(),
            upstream = builtin.upstream_version(),
            size = %megabytes(builtin.wasm().len()),
            ?took,
            "compiled the built-in function"
        );
        Ok(Outcome::Builtin { builtin, took })
    }

    /// Loads the packages CompositionRevisions record for `function` that
    /// are not loaded (after a restart, the digests the Function no longer
    /// resolves to), so XRs on those revisions compose with them again;
    /// requeues the Function's XRs when it loaded any. A package that
    /// cannot be loaded is logged and tried again at the next reconcile;
    /// the XRs that need it say it is not loaded.
    pub(super) async fn load_recorded(
        &self,
        name: &str,
        function: &Value,
    ) -> Result<(), FunctionError> {
        if self.packages.recorded_loaded(name) {
            return Ok(());
        }
        let revisions = self
            .cluster
            .list_async(
                COMPOSITION_API_VERSION,
                REVISION_KIND,
                None,
                &BTreeMap::new(),
            )
            .await
            .map_err(ObjectError::cluster(
                format!("Function {name:?}"),
                "cannot list CompositionRevisions",
            ))?;
        let missing = self.packages.recorded_missing(name, &revisions);
        let mut loaded = 0;
        let mut failed = 0;
        for (digest, pinned) in &missing {
            match self.load_package(name, function, pinned, digest).await? {
                Ok(()) => loaded += 1,
                Err(error) => {
                    failed += 1;
                    tracing::warn!(function = name, package = pinned, %error, "cannot load a package a CompositionRevision records");
                }
            }
        }
        if failed == 0 {
            self.packages.loaded_recorded(name);
        }
        if loaded > 0 {
            let requeued = self.roll(name).await?;
            tracing::info!(
                function = name,
                loaded,
                requeued,
                "loaded the packages revisions record; reconciling its XRs"
            );
        }
        Ok(())
    }

    /// Pulls `pinned` (a reference pinned to `digest`; from the blob cache
    /// when it is there) under the ImageConfigs and pull secrets that apply
    /// to it, checks its signature where an ImageConfig asks for one, and
    /// keeps its compiled module.
    async fn load_package(
        &self,
        name: &str,
        function: &Value,
        pinned: &str,
        digest: &str,
    ) -> Result<Result<(), plait_oci::Error>, FunctionError> {
        let applied = match self.image_policy(name, pinned).await? {
            Ok(applied) => applied,
            Err(error) => return Ok(Err(error)),
        };
        let base = self
            .packages
            .keychain
            .clone()
            .merge(applied.keychain.clone());
        let keychain = match self.keychain(name, function, base).await? {
            Ok(keychain) => keychain,
            Err(error) => return Ok(Err(error)),
        };
        let client = &self.packages.client;
        let resolved = match client.resolve_function(&applied.reference, &keychain).await {
            Ok(resolved) if resolved.digest() == digest => resolved,
            Ok(resolved) => {
                return Ok(Err(plait_oci::Error::DigestMismatch {
                    reference: pinned.to_string(),
                    expected: digest.to_string(),
                    actual: resolved.digest().to_string(),
                }));
            }
            Err(error) => return Ok(Err(error)),
        };
        if let Some(verification) = &applied.verification
            && let Err(error) = client
                .verify_signature(
                    resolved.pinned(),
                    resolved.digest(),
                    &verification.authorities,
                    &keychain,
                )
                .await
        {
            return Ok(Err(error));
        }
        let (resolved, loaded) = self.load(name, resolved).await?;
        let module = match loaded {
            Ok(module) => module,
            Err(error) => return Ok(Err(error)),
        };
        self.packages.keep(resolved.digest(), module);
        tracing::info!(
            function = name,
            package = resolved.pinned(),
            "loaded a package a CompositionRevision records"
        );
        Ok(Ok(()))
    }

    /// Compiles (or finds compiled) the component `resolved` names, or the
    /// built-in function-kcl for a project build, on a blocking thread;
    /// `function` names the Function for a join error.
    async fn load(
        &self,
        function: &str,
        resolved: plait_oci::FunctionPackage,
    ) -> Result<
        (
            plait_oci::FunctionPackage,
            Result<plait_functions::Served, plait_oci::Error>,
        ),
        FunctionError,
    > {
        let runtime = self.packages.runtime().clone();
        tokio::task::spawn_blocking(move || {
            let loaded = plait_oci::load_function(&runtime, &resolved).map(|loaded| {
                plait_functions::Served {
                    module: loaded.module,
                    read_only_dirs: loaded.read_only_dirs,
                }
            });
            (resolved, loaded)
        })
        .await
        .map_err(|source| FunctionError::Join {
            function: function.into(),
            source,
        })
    }

    /// Waits (briefly) until the Function store holds `function` as written
    /// at `resource_version`, so the XRs requeued next resolve it as it is now.
    pub(super) async fn stored(&self, function: &str, resource_version: Option<&str>) {
        let reference =
            kube::runtime::reflector::ObjectRef::new_with(function, function_resource());
        let deadline = Instant::now() + STORE_WAIT;
        while Instant::now() < deadline {
            let seen = self.store.get(&reference);
            if seen
                .as_ref()
                .and_then(|f| f.metadata.resource_version.as_deref())
                == resource_version
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tracing::debug!(
            function,
            "the Function store has not caught up; requeuing anyway"
        );
    }

    /// Requeues every XR of a kind some Composition or CompositionRevision
    /// runs `function` for; each XR's reconcile resolves it afresh.
    pub(super) async fn roll(&self, function: &str) -> Result<usize, FunctionError> {
        let mut kinds = BTreeSet::new();
        for kind in [COMPOSITION_KIND, REVISION_KIND] {
            let compositions = self
                .cluster
                .list_async(COMPOSITION_API_VERSION, kind, None, &BTreeMap::new())
                .await
                .map_err(ObjectError::cluster(
                    format!("Function {function:?}"),
                    "cannot list what runs it",
                ))?;
            for composition in compositions.iter().filter(|c| uses(c, function)) {
                let api_version = text(composition, "/spec/compositeTypeRef/apiVersion");
                kinds.insert((
                    group_of(api_version.unwrap_or_default()).to_string(),
                    text(composition, "/spec/compositeTypeRef/kind")
                        .unwrap_or_default()
                        .to_string(),
                ));
            }
        }
        let mut requeued = 0;
        for (group, kind) in kinds {
            let Some(route) = self.watches.route_of(&group, &kind) else {
                continue;
            };
            let xrs: Api<DynamicObject> =
                Api::all_with(self.cluster.client().clone(), &route.resource);
            let list =
                xrs.list_metadata(&ListParams::default())
                    .await
                    .map_err(ObjectError::kube(
                        format!("Function {function:?}"),
                        format!("cannot list {kind}.{group} to roll"),
                    ))?;
            for xr in list.items {
                let Some(xr_name) = xr.metadata.name.as_deref() else {
                    continue;
                };
                let mut reference =
                    kube::runtime::reflector::ObjectRef::new_with(xr_name, route.resource.clone());
                if route.namespaced
                    && let Some(namespace) = &xr.metadata.namespace
                {
                    reference = reference.within(namespace);
                }
                // A closed channel means that kind's controller stopped.
                if route.sender.unbounded_send(reference).is_ok() {
                    requeued += 1;
                }
            }
        }
        Ok(requeued)
    }
}

impl FunctionContext {
    /// A Function was deleted: the XRs that ran it fail at once, naming it,
    /// instead of at their next poll.
    pub(super) async fn forget(&self, function: &str) {
        if !self.packages.forget(function) {
            return;
        }
        match self.roll(function).await {
            Ok(requeued) => {
                tracing::info!(function, requeued, "function deleted; reconciling its XRs")
            }
            Err(error) => {
                tracing::warn!(function, %error, "function deleted; cannot requeue its XRs")
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn sizes_read_in_megabytes_to_one_decimal() {
        let cases = [(0, "0.0 MB"), (14_650_000, "14.6 MB"), (999_999, "0.9 MB")];
        for (bytes, want) in cases {
            assert_eq!(megabytes(bytes), want);
        }
    }

    #[test]
    fn compositions_use_the_functions_their_pipelines_name() {
        let composition = json!({"spec": {"pipeline": [
            {"step": "a", "functionRef": {"name": "function-patch-and-transform"}},
            {"step": "b", "functionRef": {"name": "fn-x"}},
        ]}});
        let cases = [
            (&composition, "fn-x", true),
            (&composition, "function-patch-and-transform", true),
            (&composition, "fn-y", false),
            (&json!({"spec": {"resources": []}}), "fn-x", false),
        ];
        for (composition, function, want) in cases {
            assert_eq!(uses(composition, function), want, "{function}");
        }
    }
}
