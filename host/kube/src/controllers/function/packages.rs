//! The Function packages the Function controller installed, and how XR
//! pipelines are served from them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use plait_functions::{PackageSource, Pin, PinnedSource, Pins, ResolveError, Served, package_of};
use plait_oci::Keychain;
use plait_oci::kcl::{KclModule, WantedModule};
use plait_runtime::{Builtin, Runtime};
use serde_json::Value;

use super::image_config::Applied;
use crate::vocabulary::object::{condition, text};

/// What a Function was last installed as, by this controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Installed {
    Builtin(Builtin),
    Package {
        package: String,
        pinned: String,
        digest: String,
        /// What the ImageConfigs made of the package when it was installed
        /// ([`crate::controllers::function::image_config::Applied::fingerprint`]).
        policy: String,
    },
    Failed {
        package: String,
        reason: &'static str,
    },
}

/// The Function packages installed so far: a registry client, the runtime
/// that compiles them, and the modules by manifest digest (each with the
/// directories its calls read: a project build's source). The Function
/// controller fills it; as a [`PackageSource`] it serves XR pipelines.
pub struct InstalledPackages {
    pub(super) client: plait_oci::Client,
    pub(super) runtime: Runtime,
    namespace: String,
    /// Credentials for every Function, under those of its pull secrets.
    pub(super) keychain: Keychain,
    modules: Mutex<HashMap<String, Served>>,
    installed: Mutex<HashMap<String, Installed>>,
    /// Functions every digest of which the revisions record is loaded.
    recorded_loaded: Mutex<HashSet<String>>,
    /// The built-ins compiled on install, with how long their first load
    /// took.
    builtins: Mutex<HashMap<Builtin, Duration>>,
}

impl InstalledPackages {
    /// Packages pulled with `client`, compiled by `runtime`, with pull
    /// secrets read from `namespace`.
    pub fn new(client: plait_oci::Client, runtime: Runtime, namespace: impl Into<String>) -> Self {
        InstalledPackages {
            client,
            runtime,
            namespace: namespace.into(),
            keychain: Keychain::anonymous(),
            modules: Mutex::new(HashMap::new()),
            installed: Mutex::new(HashMap::new()),
            recorded_loaded: Mutex::new(HashSet::new()),
            builtins: Mutex::new(HashMap::new()),
        }
    }

    /// Credentials used for every Function; a Function's pull secrets
    /// take precedence for the registries they name.
    pub fn with_keychain(mut self, keychain: Keychain) -> InstalledPackages {
        self.keychain = keychain;
        self
    }

    /// The namespace pull secrets are read from.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The runtime packages are compiled by.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Keeps `served`, loaded from the package with manifest digest `digest`.
    pub(super) fn keep(&self, digest: &str, served: Served) {
        self.modules
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(digest.to_string(), served);
    }

    /// The loaded module (and the directories its calls read) of the
    /// package with manifest digest `digest`.
    pub fn module(&self, digest: &str) -> Option<Served> {
        self.modules
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(digest)
            .cloned()
    }

    /// How long loading `builtin` took, once a Function installed it.
    pub(super) fn builtin_took(&self, builtin: Builtin) -> Option<Duration> {
        self.builtins
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&builtin)
            .copied()
    }

    /// Notes that `builtin` is loaded, its first load having taken `took`;
    /// returns the time of the first load noted.
    pub(super) fn builtin_loaded(&self, builtin: Builtin, took: Duration) -> Duration {
        *self
            .builtins
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(builtin)
            .or_insert(took)
    }

    pub(super) fn installed(&self, function: &str) -> Option<Installed> {
        self.installed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(function)
            .cloned()
    }

    /// Forgets a deleted `function`; true when it had been installed.
    pub(super) fn forget(&self, function: &str) -> bool {
        self.installed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(function)
            .is_some()
    }

    /// Whether every digest the revisions record for `function` was
    /// loaded already: modules are never dropped, so once is enough.
    pub(super) fn recorded_loaded(&self, function: &str) -> bool {
        self.recorded_loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(function)
    }

    /// Notes that every digest the revisions record for `function` is loaded.
    pub(super) fn loaded_recorded(&self, function: &str) {
        self.recorded_loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(function.to_string());
    }

    /// The packages `revisions` record for `function` whose digests are
    /// not loaded, as `digest → pinned reference`: what a controller that
    /// restarted (or took over) must load again so every XR can still
    /// compose with its revision's digests. Revisions whose record cannot
    /// be read are left to their XRs, which report it.
    pub(super) fn recorded_missing(
        &self,
        function: &str,
        revisions: &[Value],
    ) -> BTreeMap<String, String> {
        let mut missing = BTreeMap::new();
        for revision in revisions {
            let Ok(pins) = Pins::of_revision(revision) else {
                continue;
            };
            for pin in pins.0.into_values().filter(|p| p.function == function) {
                if let PinnedSource::Package { pinned } = pin.source
                    && self.module(&pin.digest).is_none()
                {
                    missing.insert(pin.digest, pinned);
                }
            }
        }
        missing
    }

    /// Records what `function` is installed as; true when that changed.
    pub(super) fn record(&self, function: &str, installed: Installed) -> bool {
        let previous = self
            .installed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(function.to_string(), installed.clone());
        previous != Some(installed)
    }
}

/// Why a KCL module a step names could not be pulled.
#[derive(Debug, thiserror::Error)]
pub enum KclModuleError {
    #[error(transparent)]
    Pull(plait_oci::Error),
    #[error("it is not verified by ImageConfig {config:?}: {source}")]
    NotVerified {
        config: String,
        source: plait_oci::Error,
    },
}

impl InstalledPackages {
    /// Pulls the KCL module `wanted` names (a function-kcl step's source or
    /// dependency) as `applied` (what the ImageConfigs made of it) says,
    /// with the controller's credentials, the config's pull secret, and
    /// `step_keychain` (the step's `kcl-registry` credential) winning for
    /// its registry; a module named without a tag is pinned to its
    /// repository's highest version, and one an ImageConfig wants signed
    /// is verified.
    pub(super) async fn kcl_module(
        &self,
        wanted: &WantedModule,
        applied: &Applied,
        step_keychain: &Keychain,
    ) -> Result<KclModule, KclModuleError> {
        let keychain = self
            .keychain
            .clone()
            .merge(applied.keychain.clone())
            .merge(step_keychain.clone());
        let verification = applied.verification.as_ref();
        self.client
            .pull_kcl_module(
                wanted,
                &applied.reference,
                &keychain,
                verification.map(|v| v.authorities.as_slice()),
            )
            .await
            .map_err(|e| match (e, verification) {
                (e @ plait_oci::Error::Signature { .. }, Some(verification)) => {
                    KclModuleError::NotVerified {
                        config: verification.config.clone(),
                        source: e,
                    }
                }
                (e, _) => KclModuleError::Pull(e),
            })
    }
}

impl PackageSource for InstalledPackages {
    /// The module at a Healthy Function's resolved digest; a Function that
    /// is not Healthy is refused by name with its reason.
    fn module(&self, function: &str, object: &Value) -> Result<Served, ResolveError> {
        let package = package_of(object);
        let not_installed = || ResolveError::NotInstalled {
            function: function.into(),
            package: package.into(),
        };
        let healthy = condition(object, "Healthy").ok_or_else(not_installed)?;
        if healthy["status"] != "True" {
            return Err(ResolveError::Unhealthy {
                function: function.into(),
                reason: text(healthy, "/reason").unwrap_or_default().into(),
                message: text(healthy, "/message").unwrap_or_default().into(),
            });
        }
        // The digest, not the tag: the module is the one the status names,
        // compiled when the controller installed it.
        let digest = text(object, "/status/resolvedDigest").unwrap_or_default();
        self.module(digest).ok_or_else(not_installed)
    }

    /// The module at the digest a revision recorded: kept since the
    /// Function was installed at it, or loaded again by the Function
    /// controller after a restart.
    fn pinned(&self, function: &str, pin: &Pin) -> Result<Served, ResolveError> {
        self.module(&pin.digest)
            .ok_or_else(|| ResolveError::PinNotLoaded {
                function: function.into(),
                pinned: match &pin.source {
                    PinnedSource::Package { pinned } => pinned.clone(),
                    PinnedSource::Builtin(builtin) => builtin.name().into(),
                },
            })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use plait_functions::{ClusterFunctions, Resolver};
    use plait_reconcile::MemoryCluster;
    use serde_json::json;

    use super::super::REASON_HEALTHY;
    use super::super::tests::{function, packages};
    use super::*;

    #[test]
    fn digests_revisions_record_for_a_function_are_missing_until_loaded() {
        let packages = packages();
        let digest = |c: char| format!("sha256:{}", c.to_string().repeat(64));
        let pin = |function: &str, d: &str| json!({"function": function, "digest": d, "package": format!("r.io/{function}@{d}")});
        let revision = |steps: Value| json!({"metadata": {"annotations": {plait_functions::DIGESTS_ANNOTATION: steps.to_string()}}});
        let revisions = [
            revision(json!({"a": pin("fn", &digest('a')), "b": pin("other", &digest('b'))})),
            revision(json!({"a": pin("fn", &digest('c'))})),
            revision(
                json!({"a": {"function": "fn", "digest": digest('d'), "builtin": "function-auto-ready"}}),
            ),
            json!({"metadata": {"annotations": {plait_functions::DIGESTS_ANNOTATION: "not json"}}}),
            json!({"metadata": {}}),
        ];
        let want = |ds: &[char]| -> BTreeMap<String, String> {
            ds.iter()
                .map(|c| (digest(*c), format!("r.io/fn@{}", digest(*c))))
                .collect()
        };
        assert_eq!(
            packages.recorded_missing("fn", &revisions),
            want(&['a', 'c'])
        );
        packages.keep(
            &digest('a'),
            packages
                .runtime()
                .builtin(Builtin::AutoReady)
                .unwrap()
                .into(),
        );
        assert_eq!(packages.recorded_missing("fn", &revisions), want(&['c']));
        assert!(!packages.recorded_loaded("fn"));
        packages.loaded_recorded("fn");
        assert!(packages.recorded_loaded("fn") && !packages.recorded_loaded("other"));
    }

    #[test]
    fn functions_not_healthy_are_refused_by_name_with_the_reason() {
        let packages = packages();
        let resolver = Resolver::builtins(packages.runtime().clone()).with_packages(packages);
        let digest = format!("sha256:{}", "0".repeat(64));
        let cases = [
            (
                function("r.io/fn:v1", json!({})),
                "Function \"fn\": package \"r.io/fn:v1\" is not installed yet",
            ),
            (
                function(
                    "r.io/fn:v1",
                    json!({"conditions": [{"type": "Healthy", "status": "False", "reason": "NotFound", "message": "cannot install package r.io/fn:v1: gone"}]}),
                ),
                "Function \"fn\" is not healthy (NotFound): cannot install package r.io/fn:v1: gone",
            ),
            (
                function(
                    "r.io/fn:v1",
                    json!({"resolvedDigest": digest, "conditions": [{"type": "Healthy", "status": "True", "reason": REASON_HEALTHY}]}),
                ),
                "Function \"fn\": package \"r.io/fn:v1\" is not installed yet",
            ),
        ];
        for (object, want) in cases {
            let cluster = MemoryCluster::new();
            cluster.seed([object]).unwrap();
            let error = resolver
                .resolve("fn", &ClusterFunctions(&cluster))
                .err()
                .unwrap();
            assert_eq!(error.to_string(), want);
        }
        let error = resolver
            .resolve("missing", &ClusterFunctions(&MemoryCluster::new()))
            .err()
            .unwrap();
        assert!(matches!(error, ResolveError::Unknown { .. }), "{error}");
    }

    #[test]
    fn a_function_changes_only_when_what_it_is_installed_as_does() {
        let packages = packages();
        let healthy = Installed::Package {
            package: "r.io/fn:v1".into(),
            pinned: "r.io/fn:v1@sha256:a".into(),
            digest: "sha256:a".into(),
            policy: String::new(),
        };
        let moved = Installed::Package {
            package: "r.io/fn:v1".into(),
            pinned: "r.io/fn:v1@sha256:b".into(),
            digest: "sha256:b".into(),
            policy: String::new(),
        };
        let steps = [
            (healthy.clone(), true),
            (healthy, false),
            (moved, true),
            (
                Installed::Failed {
                    package: "r.io/fn:v1".into(),
                    reason: "NotFound",
                },
                true,
            ),
        ];
        for (installed, want) in steps {
            assert_eq!(
                packages.record("fn", installed.clone()),
                want,
                "{installed:?}"
            );
        }
    }
}
