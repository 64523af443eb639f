//! Functions in the cluster: the Function controller installs packages
//! pushed to a real registry (Debian's docker-registry) and XRs run them,
//! on a real API server.
//!
//! One controller runs for this module's tests on its own thread and a
//! cluster of its own (the shared cluster's controller serves built-in
//! functions, this one Functions from registries), with a registry client
//! that reaches the binary's two registries (one open, one behind htpasswd);
//! each test makes its own XRDs, Compositions and Functions.
//! The timings printed (run with `--nocapture`) are observations, not
//! assertions.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use plait_controlplane::ControlPlane;
use plait_kube::{Functions, InstalledPackages};
use plait_oci::{ClientConfig, Keychain};
use plait_reconcile::compose::deterministic_name;
use plait_runtime::{Builtin, Runtime, RuntimeConfig};
use plait_testregistry::Registry;
use serde_json::{Value, json};

use crate::support::{self, condition, create, eventually, resource};

/// How long an XR's follow-up reconciles take to run out after it composed.
const SETTLE: Duration = Duration::from_secs(5);
const USER: &str = "plait";
const PASSWORD: &str = "s3cret";

/// What every test shares: the cluster with the controller running, the
/// registries, and the namespace pull secrets are read from.
struct Env {
    cluster: &'static ControlPlane,
    open: &'static Registry,
    private: &'static Registry,
    secrets: String,
    /// The runtime the controller compiles Functions with and XRs run them on.
    runtime: Runtime,
    _controller: support::Controller,
}

fn env() -> &'static Env {
    static CLUSTER: OnceLock<ControlPlane> = OnceLock::new();
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let cluster = CLUSTER.get_or_init(|| ControlPlane::dedicated().expect("test cluster"));
        let open = Registry::shared();
        let private = Registry::shared_with_auth(USER, PASSWORD);
        let insecure = vec![open.addr.clone(), private.addr.clone()];
        let (controller, (secrets, runtime)) =
            support::start_controller(cluster, move |_| async move {
                let secrets = cluster.namespace("plait-system").await;
                let registry = plait_oci::Client::new(ClientConfig {
                    insecure_registries: insecure,
                    attempts: 1,
                    ..ClientConfig::default()
                })
                .unwrap();
                let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
                let packages = InstalledPackages::new(registry, runtime.clone(), secrets.clone());
                (Functions::packages(Arc::new(packages)), (secrets, runtime))
            });
        Env {
            cluster,
            open,
            private,
            secrets,
            runtime,
            _controller: controller,
        }
    })
}

/// Two functions built from this repository, pushed once per test process.
struct Artifacts {
    /// Patch-and-transform, as built into plait.
    patch_and_transform: Pushed,
    /// `tests/guests/stamp`: composes the same bases, stamped.
    stamp: Pushed,
    /// Patch-and-transform in the registry behind htpasswd.
    private: Pushed,
}

struct Pushed {
    reference: String,
    digest: String,
}

fn stamp_guest() -> Vec<u8> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("function-guests");
    let started = Instant::now();
    let path = plait_guest_build::build_guest("plait-test-guest-stamp", &root, &out)
        .unwrap_or_else(|e| panic!("{e}"));
    println!(
        "timing: building the stamp guest took {:?}",
        started.elapsed()
    );
    std::fs::read(path).unwrap()
}

async fn artifacts() -> &'static Artifacts {
    static ARTIFACTS: tokio::sync::OnceCell<Artifacts> = tokio::sync::OnceCell::const_new();
    ARTIFACTS
        .get_or_init(|| async {
            let env = env();
            let client = plait_oci::Client::new(ClientConfig {
                insecure_registries: vec![env.open.addr.clone(), env.private.addr.clone()],
                ..ClientConfig::default()
            })
            .unwrap();
            let stamp = stamp_guest();
            let private_keychain = Keychain::anonymous().with(
                &env.private.addr,
                plait_oci::BasicAuth {
                    username: USER.into(),
                    password: PASSWORD.into(),
                },
            );
            let mut pushed = Vec::new();
            for (wasm, reference, keychain) in [
                (
                    Builtin::PatchAndTransform.wasm(),
                    env.open.reference("fn/compose", "pt"),
                    Keychain::anonymous(),
                ),
                (
                    &stamp[..],
                    env.open.reference("fn/compose", "stamp"),
                    Keychain::anonymous(),
                ),
                (
                    Builtin::PatchAndTransform.wasm(),
                    env.private.reference("fn/private", "v1"),
                    private_keychain,
                ),
            ] {
                let started = Instant::now();
                let result = client
                    .push(wasm, &reference, None, &keychain)
                    .await
                    .unwrap();
                println!(
                    "timing: pushing {} bytes to {reference} took {:?}",
                    wasm.len(),
                    started.elapsed()
                );
                pushed.push(Pushed {
                    reference,
                    digest: result.digest,
                });
            }
            let mut pushed = pushed.into_iter();
            Artifacts {
                patch_and_transform: pushed.next().unwrap(),
                stamp: pushed.next().unwrap(),
                private: pushed.next().unwrap(),
            }
        })
        .await
}

fn functions(client: &Client) -> Api<DynamicObject> {
    Api::all_with(
        client.clone(),
        &resource("pkg.crossplane.io/v1", "Function", "functions"),
    )
}

async fn create_function(client: &Client, name: &str, package: &str, pull_secret: Option<&str>) {
    let mut spec = json!({"package": package});
    if let Some(secret) = pull_secret {
        spec["packagePullSecrets"] = json!([{"name": secret}]);
    }
    create(
        client,
        &json!({
            "apiVersion": "pkg.crossplane.io/v1", "kind": "Function",
            "metadata": {"name": name}, "spec": spec,
        }),
    )
    .await;
}

/// Waits until the Function's `Healthy` condition has `status`.
async fn function_health(client: &Client, name: &str, status: &str) -> Value {
    let api = functions(client);
    eventually(&format!("Function {name}: Healthy={status}"), || async {
        let function = serde_json::to_value(api.get_opt(name).await.ok()??).ok()?;
        (condition(&function, "Healthy")?["status"] == status).then_some(function)
    })
    .await
}

/// A Composition for `App`s of `group` whose one step runs `function` on a
/// patch-and-transform input composing one ConfigMap.
fn composition(id: &str, group: &str, function: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
        "metadata": {"name": format!("app-{id}")},
        "spec": {
            "compositeTypeRef": {"apiVersion": format!("{group}/v1alpha1"), "kind": "App"},
            "mode": "Pipeline",
            "pipeline": [{
                "step": "compose",
                "functionRef": {"name": function},
                "input": {"apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources", "resources": [{
                    "name": "config",
                    "base": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"resource": "config"}},
                    "readinessChecks": [{"type": "None"}],
                    "patches": [{"type": "FromCompositeFieldPath", "fromFieldPath": "spec.image", "toFieldPath": "data.image"}],
                }]},
            }],
        },
    })
}

/// A test's own XRD (group `<id>.example.org`) and Composition running `function`.
struct App {
    client: Client,
    namespace: String,
    xr: ApiResource,
}

impl App {
    async fn new(id: &str, function: &str) -> App {
        App::composed_by(id, |group| composition(id, group, function)).await
    }

    /// A test's own XRD and the Composition `composition` makes for its group.
    async fn composed_by(id: &str, composition: impl FnOnce(&str) -> Value) -> App {
        let env = env();
        let client = env.cluster.client().await;
        let namespace = env.cluster.namespace(id).await;
        let group = format!("{id}.example.org");
        let path = format!(
            "{}/../../examples/getting-started/xrd.yaml",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut xrd: Value =
            serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        xrd["metadata"]["name"] = json!(format!("apps.{group}"));
        xrd["spec"]["group"] = json!(group);
        create(&client, &xrd).await;
        create(&client, &composition(&group)).await;
        let xr = resource(&format!("{group}/v1alpha1"), "App", "apps");
        App {
            client,
            namespace,
            xr,
        }
    }

    fn xrs(&self) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), &self.namespace, &self.xr)
    }

    /// Creates an XR, retrying while its CRD is not yet served.
    async fn create_xr(&self, name: &str) {
        self.create_xr_with(name, json!({"image": "nginx"})).await;
    }

    /// Creates an XR with `spec`, retrying while its CRD is not yet served.
    async fn create_xr_with(&self, name: &str, spec: Value) {
        let xr: DynamicObject = serde_json::from_value(json!({
            "apiVersion": self.xr.api_version, "kind": "App",
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": spec,
        }))
        .unwrap();
        eventually(&format!("XR {name} to be created"), || async {
            self.xrs().create(&PostParams::default(), &xr).await.ok()
        })
        .await;
    }

    async fn xr(&self, name: &str) -> Option<Value> {
        serde_json::to_value(self.xrs().get_opt(name).await.ok()??).ok()
    }

    /// Waits until the XR's `Synced` condition has `status`, returning the XR.
    async fn synced(&self, name: &str, status: &str) -> Value {
        eventually(&format!("{name}: Synced={status}"), || async {
            let xr = self.xr(name).await?;
            (condition(&xr, "Synced")?["status"] == status).then_some(xr)
        })
        .await
    }

    /// The ConfigMap the XR composed, once it exists.
    async fn config_map(&self, xr: &Value) -> Option<Value> {
        let name = deterministic_name(
            &format!("{}-", xr["metadata"]["name"].as_str()?),
            xr["metadata"]["uid"].as_str()?,
            "config",
        );
        let config_maps: Api<DynamicObject> = Api::namespaced_with(
            self.client.clone(),
            &self.namespace,
            &resource("v1", "ConfigMap", "configmaps"),
        );
        serde_json::to_value(config_maps.get_opt(&name).await.ok()??).ok()
    }
}

#[tokio::test]
async fn a_function_from_a_registry_runs_its_xrs_and_repointing_it_rolls_them() {
    let artifacts = artifacts().await;
    let app = App::new("fnroll", "fn-roll").await;
    let client = &app.client;

    let started = Instant::now();
    create_function(
        client,
        "fn-roll",
        &artifacts.patch_and_transform.reference,
        None,
    )
    .await;
    let function = function_health(client, "fn-roll", "True").await;
    println!(
        "timing: Function created to Healthy (resolve, pull, verify, compile): {:?}",
        started.elapsed()
    );
    assert_eq!(
        function["status"]["resolvedDigest"],
        artifacts.patch_and_transform.digest
    );
    assert_eq!(condition(&function, "Installed").unwrap()["status"], "True");

    let started = Instant::now();
    app.create_xr("roll").await;
    let xr = app.synced("roll", "True").await;
    let config_map = eventually("the composed ConfigMap", || app.config_map(&xr)).await;
    println!(
        "timing: XR created to composed (first call in the controller): {:?}",
        started.elapsed()
    );
    assert_eq!(config_map["data"]["image"], "nginx", "{config_map}");
    assert!(
        config_map["data"].get("composedBy").is_none(),
        "{config_map}"
    );

    let started = Instant::now();
    functions(client)
        .patch(
            "fn-roll",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"package": artifacts.stamp.reference}})),
        )
        .await
        .unwrap();
    let stamped = eventually("the ConfigMap composed by the new package", || async {
        let config_map = app.config_map(&xr).await?;
        (config_map["data"]["composedBy"] == "stamp").then_some(config_map)
    })
    .await;
    println!(
        "timing: Function repointed to the XR's output changed: {:?}",
        started.elapsed()
    );
    assert!(
        stamped["data"].get("image").is_none(),
        "the stamp function runs no patches: {stamped}"
    );
    let function = function_health(client, "fn-roll", "True").await;
    assert_eq!(function["status"]["resolvedDigest"], artifacts.stamp.digest);
}

#[tokio::test]
async fn an_unhealthy_function_fails_the_xrs_that_use_it_by_name_and_no_others() {
    let env = env();
    let missing = env.open.reference("fn/absent", "v1");
    let broken = App::new("fnbroken", "fn-absent").await;
    let healthy = App::new("fnhealthy", "function-patch-and-transform").await;
    create_function(&broken.client, "fn-absent", &missing, None).await;
    let function = function_health(&broken.client, "fn-absent", "False").await;
    assert_eq!(
        condition(&function, "Healthy").unwrap()["reason"],
        "NotFound"
    );

    broken.create_xr("broken").await;
    healthy.create_xr("healthy").await;
    let xr = broken.synced("broken", "False").await;
    let message = condition(&xr, "Synced").unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    for want in ["Function \"fn-absent\"", "NotFound", missing.as_str()] {
        assert!(message.contains(want), "{want:?} not in {message:?}");
    }
    let xr = healthy.synced("healthy", "True").await;
    eventually("the healthy XR's ConfigMap", || healthy.config_map(&xr)).await;
}

#[tokio::test]
async fn deleting_a_function_fails_its_xrs_by_name_before_their_next_poll() {
    let artifacts = artifacts().await;
    let app = App::new("fngone", "fn-gone").await;
    let client = &app.client;
    create_function(
        client,
        "fn-gone",
        &artifacts.patch_and_transform.reference,
        None,
    )
    .await;
    function_health(client, "fn-gone", "True").await;
    app.create_xr("gone").await;
    let xr = app.synced("gone", "True").await;
    eventually("the composed ConfigMap", || app.config_map(&xr)).await;
    // The XR's own writes and the ConfigMap's creation each trigger one more
    // reconcile; once those have run, only a poll (a minute away) or the
    // requeue on deletion reconciles it again.
    tokio::time::sleep(SETTLE).await;

    let deleted = Instant::now();
    functions(client)
        .delete("fn-gone", &DeleteParams::default())
        .await
        .unwrap();
    let xr = app.synced("gone", "False").await;
    // Only the requeue on deletion can reconcile the XR this soon: nothing
    // else about it changed, and its poll interval is a minute.
    assert!(
        deleted.elapsed() < support::POLL_INTERVAL / 2,
        "the XR noticed only after {:?}",
        deleted.elapsed()
    );
    let message = condition(&xr, "Synced").unwrap()["message"]
        .as_str()
        .unwrap();
    assert!(message.contains("fn-gone"), "{message}");
    assert!(
        app.config_map(&xr).await.is_some(),
        "a failed pipeline deletes nothing"
    );
}

#[tokio::test]
async fn functions_report_why_their_packages_install_or_not() {
    let env = env();
    let artifacts = artifacts().await;
    let client = env.cluster.client().await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &env.secrets);
    for (name, password) in [("right", PASSWORD), ("wrong", "not-the-password")] {
        let config =
            json!({"auths": {env.private.addr.as_str(): {"username": USER, "password": password}}});
        let secret: Secret = serde_json::from_value(json!({
            "metadata": {"name": name},
            "type": "kubernetes.io/dockerconfigjson",
            "stringData": {".dockerconfigjson": config.to_string()},
        }))
        .unwrap();
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .unwrap();
    }
    let builtin = "xpkg.crossplane.io/crossplane-contrib/function-patch-and-transform:v0.8.2";
    let private = artifacts.private.reference.as_str();
    let missing_tag = env.open.reference("fn/compose", "missing");
    let cases = [
        (
            "fn-status-builtin",
            builtin,
            None,
            "True",
            "HealthyPackageRevision",
        ),
        (
            "fn-status-missing-tag",
            missing_tag.as_str(),
            None,
            "False",
            "NotFound",
        ),
        (
            "fn-status-no-secret",
            private,
            None,
            "False",
            "Unauthorized",
        ),
        (
            "fn-status-wrong-secret",
            private,
            Some("wrong"),
            "False",
            "Unauthorized",
        ),
        (
            "fn-status-absent-secret",
            private,
            Some("absent"),
            "False",
            "InvalidConfiguration",
        ),
        (
            "fn-status-right-secret",
            private,
            Some("right"),
            "True",
            "HealthyPackageRevision",
        ),
    ];
    for (name, package, secret, _, _) in &cases {
        create_function(&client, name, package, *secret).await;
    }
    for (name, package, _, status, reason) in cases {
        let function = function_health(&client, name, status).await;
        let healthy = condition(&function, "Healthy").unwrap();
        assert_eq!(healthy["reason"], reason, "{name}: {healthy}");
        let installed = condition(&function, "Installed").unwrap();
        assert_eq!(installed["status"], status, "{name}: {installed}");
        if status == "False" {
            let message = healthy["message"].as_str().unwrap();
            assert!(message.contains(package), "{name}: {message}");
        }
        let digest = function.pointer("/status/resolvedDigest");
        match name {
            "fn-status-right-secret" => {
                assert_eq!(digest.unwrap(), artifacts.private.digest.as_str())
            }
            _ => assert_eq!(digest, None, "{name}"),
        }
    }
}

#[tokio::test]
async fn a_built_in_function_is_compiled_when_installed_not_when_an_xr_first_runs_it() {
    let env = env();
    let client = env.cluster.client().await;
    let builtin = Builtin::GoTemplating;
    assert!(
        env.runtime.loaded(builtin.digest()).is_none(),
        "no other test of this module loads {}",
        builtin.name()
    );
    let started = Instant::now();
    create_function(
        &client,
        "fn-go-templating",
        "xpkg.crossplane.io/crossplane-contrib/function-go-templating:v0.12.2",
        None,
    )
    .await;
    let function = function_health(&client, "fn-go-templating", "True").await;
    println!(
        "timing: function-go-templating was Healthy {:?} after it was created",
        started.elapsed()
    );
    assert!(
        env.runtime.loaded(builtin.digest()).is_some(),
        "the runtime XRs run pipelines on holds {} compiled",
        builtin.name()
    );
    let healthy = condition(&function, "Healthy").unwrap();
    assert_eq!(healthy["reason"], "HealthyPackageRevision", "{healthy}");
    let message = healthy["message"].as_str().unwrap();
    for want in [
        "function-go-templating v0.12.2",
        " MB",
        "compiled and ready",
        "took",
    ] {
        assert!(message.contains(want), "{want:?} in {message}");
    }
}

/// Creates a Secret in plait's namespace.
async fn create_secret(client: &Client, namespace: &str, secret: Value) {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret: Secret = serde_json::from_value(secret).unwrap();
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
}

/// `(name, reason)` of each entry of `status.appliedImageConfigRefs`.
fn applied_image_configs(function: &Value) -> Vec<(String, String)> {
    function
        .pointer("/status/appliedImageConfigRefs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["name"].as_str().unwrap_or_default().to_string(),
                r["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn an_image_config_with_verification_holds_back_unsigned_functions_until_signed() {
    let env = env();
    let app = App::new("fnsigned", "fn-signed").await;
    let client = &app.client;
    let registry = plait_oci::Client::new(ClientConfig {
        insecure_registries: vec![env.open.addr.clone()],
        ..ClientConfig::default()
    })
    .unwrap();
    let reference = env.open.reference("signed/fn", "v1");
    let pushed = registry
        .push(
            Builtin::PatchAndTransform.wasm(),
            &reference,
            None,
            &Keychain::anonymous(),
        )
        .await
        .unwrap();
    let key = plait_testcosign::KeyPair::generate();
    create_secret(
        client,
        &env.secrets,
        json!({"metadata": {"name": "team-keys"}, "stringData": {"cosign.pub": key.public_pem()}}),
    )
    .await;
    create(
        client,
        &json!({
            "apiVersion": "pkg.crossplane.io/v1beta1", "kind": "ImageConfig",
            "metadata": {"name": "signed-functions"},
            "spec": {
                "matchImages": [{"prefix": format!("{}/signed/", env.open.addr)}],
                "verification": {"provider": "Cosign", "cosign": {"authorities": [
                    {"name": "team", "key": {"secretRef": {"name": "team-keys", "key": "cosign.pub"}, "hashAlgorithm": "sha256"}},
                ]}},
            },
        }),
    )
    .await;
    create_function(client, "fn-signed", &reference, None).await;

    let function = function_health(client, "fn-signed", "False").await;
    let healthy = condition(&function, "Healthy").unwrap();
    assert_eq!(
        healthy["reason"], "SignatureVerificationFailed",
        "{healthy}"
    );
    let message = healthy["message"].as_str().unwrap();
    for part in [
        reference.as_str(),
        "ImageConfig \"signed-functions\"",
        "it has no signature",
    ] {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    assert_eq!(function.pointer("/status/resolvedDigest"), None);
    app.create_xr("signed").await;
    let xr = app.synced("signed", "False").await;
    let synced = condition(&xr, "Synced").unwrap();
    let message = synced["message"].as_str().unwrap();
    assert!(
        message.contains("\"fn-signed\"") && message.contains("SignatureVerificationFailed"),
        "{message}"
    );

    // Signing the package heals the Function and its XR, without a restart.
    let signing = format!("{reference}@{}", pushed.digest);
    let signed = tokio::task::spawn_blocking(move || plait_testcosign::sign(&key, &signing))
        .await
        .unwrap();
    assert!(
        signed.status.success(),
        "cosign sign: {}",
        String::from_utf8_lossy(&signed.stderr)
    );
    let function = function_health(client, "fn-signed", "True").await;
    assert_eq!(
        function.pointer("/status/resolvedDigest").unwrap(),
        pushed.digest.as_str()
    );
    assert_eq!(
        applied_image_configs(&function),
        [("signed-functions".to_string(), "VerifyImage".to_string())]
    );
    let xr = app.synced("signed", "True").await;
    eventually("the signed function's ConfigMap", || app.config_map(&xr)).await;
}

#[tokio::test]
async fn an_image_config_rewrites_a_package_and_lends_it_a_pull_secret() {
    let env = env();
    let client = env.cluster.client().await;
    // A repository of its own: other tests expect the private registry's
    // other packages to need a Function's own pull secret.
    let registry = plait_oci::Client::new(ClientConfig {
        insecure_registries: vec![env.private.addr.clone()],
        ..ClientConfig::default()
    })
    .unwrap();
    let credentials = plait_oci::BasicAuth {
        username: USER.into(),
        password: PASSWORD.into(),
    };
    let pushed = registry
        .push(
            Builtin::PatchAndTransform.wasm(),
            &env.private.reference("mirrored/fn", "v1"),
            None,
            &Keychain::anonymous().with(&env.private.addr, credentials),
        )
        .await
        .unwrap();
    let config =
        json!({"auths": {env.private.addr.as_str(): {"username": USER, "password": PASSWORD}}});
    create_secret(
        &client,
        &env.secrets,
        json!({
            "metadata": {"name": "mirror-pull"},
            "type": "kubernetes.io/dockerconfigjson",
            "stringData": {".dockerconfigjson": config.to_string()},
        }),
    )
    .await;
    // The Function names a registry that does not exist; only the rewrite
    // to the private registry, with the config's pull secret, reaches it.
    create(
        &client,
        &json!({
            "apiVersion": "pkg.crossplane.io/v1beta1", "kind": "ImageConfig",
            "metadata": {"name": "private-mirror"},
            "spec": {
                "matchImages": [{"type": "Prefix", "prefix": "mirror.invalid/"}],
                "rewriteImage": {"prefix": format!("{}/mirrored/", env.private.addr)},
            },
        }),
    )
    .await;
    create(
        &client,
        &json!({
            "apiVersion": "pkg.crossplane.io/v1beta1", "kind": "ImageConfig",
            "metadata": {"name": "private-credentials"},
            "spec": {
                "matchImages": [{"prefix": format!("{}/mirrored/", env.private.addr)}],
                "registry": {"authentication": {"pullSecretRef": {"name": "mirror-pull"}}},
            },
        }),
    )
    .await;
    create_function(&client, "fn-mirrored", "mirror.invalid/fn:v1", None).await;
    let function = function_health(&client, "fn-mirrored", "True").await;
    assert_eq!(
        function.pointer("/status/resolvedDigest").unwrap(),
        pushed.digest.as_str()
    );
    assert_eq!(
        function.pointer("/status/resolvedPackage").unwrap(),
        format!("{}/mirrored/fn:v1@{}", env.private.addr, pushed.digest).as_str()
    );
    assert_eq!(
        applied_image_configs(&function),
        [
            ("private-mirror".to_string(), "RewriteImage".to_string()),
            (
                "private-credentials".to_string(),
                "SetImagePullSecret".to_string()
            ),
        ]
    );
}

fn revisions(client: &Client) -> Api<DynamicObject> {
    Api::all_with(
        client.clone(),
        &resource(
            "apiextensions.crossplane.io/v1",
            "CompositionRevision",
            "compositionrevisions",
        ),
    )
}

/// The digest a revision records for its `compose` step, if any.
fn recorded_digest(revision: &Value) -> Option<String> {
    let recorded = revision
        .pointer("/metadata/annotations/functions.plait.dev~1digests")?
        .as_str()?;
    let pins: Value = serde_json::from_str(recorded).ok()?;
    Some(pins.pointer("/compose/digest")?.as_str()?.to_string())
}

/// Waits for the revision of `composition` that records `digest` for its
/// step, returning its name and number.
async fn revision_recording(client: &Client, composition: &str, digest: &str) -> (String, i64) {
    let api = revisions(client);
    eventually(
        &format!("a revision of {composition} recording {digest}"),
        || async {
            let labelled = kube::api::ListParams::default()
                .labels(&format!("crossplane.io/composition-name={composition}"));
            let list = api.list(&labelled).await.ok()?;
            list.items.into_iter().find_map(|r| {
                let r = serde_json::to_value(r).ok()?;
                (recorded_digest(&r)? == digest).then(|| {
                    (
                        r["metadata"]["name"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                        r["spec"]["revision"].as_i64().unwrap_or_default(),
                    )
                })
            })
        },
    )
    .await
}

impl App {
    /// Waits until the XR names `revision` in `compositionRevisionRef`.
    async fn on_revision(&self, name: &str, revision: &str) -> Value {
        eventually(&format!("{name} on revision {revision}"), || async {
            let xr = self.xr(name).await?;
            (xr.pointer("/spec/crossplane/compositionRevisionRef/name")? == revision).then_some(xr)
        })
        .await
    }

    /// Waits until the XR's ConfigMap passes `check`, returning it.
    async fn composed(&self, name: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        eventually(&format!("{name}'s ConfigMap {what}"), || async {
            let xr = self.xr(name).await?;
            let config_map = self.config_map(&xr).await?;
            check(&config_map).then_some(config_map)
        })
        .await
    }
}

/// What patch-and-transform composes: the XR's image patched in, no stamp.
fn patched(image: &str) -> impl Fn(&Value) -> bool {
    move |config_map| {
        config_map["data"]["image"] == image && config_map["data"].get("composedBy").is_none()
    }
}

/// What the stamp function composes: the base stamped, no patches run.
fn stamped(config_map: &Value) -> bool {
    config_map["data"]["composedBy"] == "stamp" && config_map["data"].get("image").is_none()
}

#[tokio::test]
async fn a_function_moved_to_a_new_digest_rolls_automatic_xrs_while_manual_ones_keep_the_old_digest_until_moved()
 {
    let artifacts = artifacts().await;
    let app = App::new("fnpin", "fn-pin").await;
    let client = &app.client;
    create_function(
        client,
        "fn-pin",
        &artifacts.patch_and_transform.reference,
        None,
    )
    .await;
    function_health(client, "fn-pin", "True").await;
    let (first, first_number) =
        revision_recording(client, "app-fnpin", &artifacts.patch_and_transform.digest).await;
    app.create_xr("automatic").await;
    app.create_xr_with(
        "manual",
        json!({"image": "nginx", "crossplane": {"compositionUpdatePolicy": "Manual"}}),
    )
    .await;
    for xr in ["automatic", "manual"] {
        app.on_revision(xr, &first).await;
        app.composed(xr, "patched by the first digest", patched("nginx"))
            .await;
    }

    let moved = Instant::now();
    functions(client)
        .patch(
            "fn-pin",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"package": artifacts.stamp.reference}})),
        )
        .await
        .unwrap();
    let (second, second_number) =
        revision_recording(client, "app-fnpin", &artifacts.stamp.digest).await;
    assert!(
        second_number > first_number,
        "{second_number} after {first_number}"
    );
    app.on_revision("automatic", &second).await;
    app.composed("automatic", "stamped by the new digest", stamped)
        .await;
    println!(
        "timing: Function moved to the Automatic XR composing with the new digest: {:?}",
        moved.elapsed()
    );

    // The Manual XR keeps composing, with the old digest: a change of its
    // spec is patched in by patch-and-transform, not stamped.
    let image = json!({"spec": {"image": "httpd"}});
    app.xrs()
        .patch("manual", &PatchParams::default(), &Patch::Merge(&image))
        .await
        .unwrap();
    app.composed("manual", "patched by the old digest", patched("httpd"))
        .await;
    let manual = app.xr("manual").await.unwrap();
    assert_eq!(
        manual["spec"]["crossplane"]["compositionRevisionRef"]["name"],
        first.as_str()
    );
    assert_eq!(condition(&manual, "Synced").unwrap()["status"], "True");

    let move_on = json!({"spec": {"crossplane": {"compositionRevisionRef": {"name": second}}}});
    app.xrs()
        .patch("manual", &PatchParams::default(), &Patch::Merge(&move_on))
        .await
        .unwrap();
    app.composed("manual", "stamped once moved to the new revision", stamped)
        .await;
}

#[tokio::test]
async fn a_digest_a_revision_records_is_loaded_again_though_its_function_resolves_elsewhere() {
    let env = env();
    let app = App::new("fnrecorded", "fn-recorded").await;
    let client = &app.client;
    // Its own artifact (another author, so another manifest digest): no
    // other test has this controller load it.
    let registry = plait_oci::Client::new(ClientConfig {
        insecure_registries: vec![env.open.addr.clone()],
        ..ClientConfig::default()
    })
    .unwrap();
    let reference = env.open.reference("fn/recorded", "v1");
    let pushed = registry
        .push(
            &stamp_guest(),
            &reference,
            Some("recorded"),
            &Keychain::anonymous(),
        )
        .await
        .unwrap();
    // A revision recorded while the Function ran that artifact, as one
    // made before the controller restarted: the Function resolves
    // elsewhere now, so nothing but the record names the digest.
    let group = "fnrecorded.example.org";
    let mut spec = composition("fnrecorded", group, "fn-recorded")["spec"].clone();
    spec["revision"] = json!(1);
    let recorded = json!({"compose": {
        "function": "fn-recorded", "digest": pushed.digest,
        "package": format!("{}/fn/recorded@{}", env.open.addr, pushed.digest),
    }});
    create(
        client,
        &json!({
            "apiVersion": "apiextensions.crossplane.io/v1", "kind": "CompositionRevision",
            "metadata": {"name": "app-fnrecorded-recorded",
                         "annotations": {"functions.plait.dev/digests": recorded.to_string()}},
            "spec": spec,
        }),
    )
    .await;
    create_function(
        client,
        "fn-recorded",
        &artifacts().await.patch_and_transform.reference,
        None,
    )
    .await;
    app.create_xr_with(
        "recorded",
        json!({"image": "nginx", "crossplane": {
            "compositionRef": {"name": "app-fnrecorded"},
            "compositionUpdatePolicy": "Manual",
            "compositionRevisionRef": {"name": "app-fnrecorded-recorded"},
        }}),
    )
    .await;
    app.create_xr("current").await;
    app.composed("recorded", "stamped by the recorded digest", stamped)
        .await;
    app.composed(
        "current",
        "patched by the Function's digest",
        patched("nginx"),
    )
    .await;
    let function = function_health(client, "fn-recorded", "True").await;
    assert_eq!(
        function["status"]["resolvedDigest"],
        artifacts().await.patch_and_transform.digest
    );
}

/// A project's KCL function: a ConfigMap named as the P&T step names its
/// own, with the XR's image.
const PROJECT_MAIN: &str = r#"oxr = option("params").oxr
items = [{
    apiVersion = "v1"
    kind = "ConfigMap"
    metadata.annotations = {"krm.kcl.dev/composition-resource-name" = "config"}
    data = {image = oxr.spec.image, source = "project build"}
}]
"#;

/// A Function whose package is a project build (function-kcl's runtime
/// with the function at `/src`, `FUNCTION_KCL_DEFAULT_SOURCE=/src`) is
/// installed as the built-in function-kcl pinned by the image's digest, and
/// its XRs run the KCL source.
#[tokio::test]
async fn a_project_build_from_a_registry_runs_its_kcl_source_with_the_built_in() {
    let env = env();
    let reference = env.open.reference("acme/p_compose", "v1");
    let client = plait_oci::Client::new(ClientConfig {
        insecure_registries: vec![env.open.addr.clone()],
        ..ClientConfig::default()
    })
    .unwrap();
    let image = plait_testregistry::project_build(
        &["FUNCTION_KCL_DEFAULT_SOURCE=/src", "KCL_PKG_PATH=/src"],
        &[
            ("kcl.mod", "[package]\nname = \"compose\"\n"),
            ("main.k", PROJECT_MAIN),
        ],
    );
    let pushed = client
        .push_image(
            &reference,
            (plait_testregistry::IMAGE_CONFIG, &image.config),
            &image.layers,
            &Keychain::anonymous(),
        )
        .await
        .unwrap();
    let started = Instant::now();
    let app = App::composed_by("project-build", |group| {
        json!({
            "apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
            "metadata": {"name": "app-project-build"},
            "spec": {
                "compositeTypeRef": {"apiVersion": format!("{group}/v1alpha1"), "kind": "App"},
                "mode": "Pipeline",
                "pipeline": [{"step": "compose", "functionRef": {"name": "acme-pcompose"}}],
            },
        })
    })
    .await;
    create_function(&app.client, "acme-pcompose", &reference, None).await;
    let function = function_health(&app.client, "acme-pcompose", "True").await;
    assert_eq!(function["status"]["resolvedDigest"], pushed.digest);
    app.create_xr("a").await;
    let xr = app.synced("a", "True").await;
    let config_map = eventually("the project build's ConfigMap", || app.config_map(&xr)).await;
    assert_eq!(config_map["data"]["image"], "nginx", "{config_map}");
    assert_eq!(
        config_map["data"]["source"], "project build",
        "{config_map}"
    );
    println!(
        "timing: a project build installed and its XR composed in {:?}",
        started.elapsed()
    );
}

/// The KCL module a function-kcl step names as its source: a ConfigMap
/// from the XR and from its dependency `labels`.
const KCL_APP_MAIN: &str = r#"import labels

oxr = option("params").oxr
items = [{
    apiVersion = "v1"
    kind = "ConfigMap"
    metadata.annotations = {
        "krm.kcl.dev/composition-resource-name" = "config"
        "krm.kcl.dev/ready" = "True"
    }
    data = {image = oxr.spec.image, source = labels.source}
}]
"#;

/// A function-kcl step whose source is an `oci://` module runs it with the
/// modules the controller pulled for the revision: the source from the
/// open registry, and its `kcl.mod`'s dependency from the registry behind
/// htpasswd, logged in to with the step's `kcl-registry` credential.
#[tokio::test]
async fn a_kcl_step_runs_the_oci_modules_the_controller_pulls_for_its_revision() {
    let env = env();
    let app_mod = format!(
        "[package]\nname = \"app\"\nversion = \"1.0.0\"\n\n[dependencies]\nlabels = {{ oci = \"oci://{}/kcl/labels\", tag = \"0.1.0\" }}\n",
        env.private.addr
    );
    // (registry, name, version, files)
    type Module<'a> = (&'a Registry, &'a str, &'a str, &'a [(&'a str, &'a str)]);
    let modules: [Module; 2] = [
        (
            env.private,
            "labels",
            "0.1.0",
            &[
                (
                    "kcl.mod",
                    "[package]\nname = \"labels\"\nversion = \"0.1.0\"\n",
                ),
                ("labels.k", "source = \"kcl module\"\n"),
            ],
        ),
        (
            env.open,
            "app",
            "v1",
            &[("kcl.mod", &app_mod), ("main.k", KCL_APP_MAIN)],
        ),
    ];
    for (registry, name, version, files) in modules {
        registry.push_kcl_module(
            &format!("kcl/{name}"),
            version,
            &plait_testregistry::KclModule {
                name,
                version,
                files,
                gzip: true,
            },
        );
    }
    let started = Instant::now();
    let source = format!("oci://{}/kcl/app:v1", env.open.addr);
    let app = App::composed_by("kcl-module", |group| {
        json!({
            "apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
            "metadata": {"name": "app-kcl-module"},
            "spec": {
                "compositeTypeRef": {"apiVersion": format!("{group}/v1alpha1"), "kind": "App"},
                "mode": "Pipeline",
                "pipeline": [{
                    "step": "compose",
                    "functionRef": {"name": "function-kcl"},
                    "input": {"apiVersion": "krm.kcl.dev/v1alpha1", "kind": "KCLInput", "spec": {"source": source}},
                    "credentials": [{"name": "kcl-registry", "source": "Secret",
                        "secretRef": {"namespace": env.secrets, "name": "kcl-module-registry"}}],
                }],
            },
        })
    })
    .await;
    create_secret(
        &app.client,
        &env.secrets,
        json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "kcl-module-registry"},
            "stringData": {"url": format!("https://{}", env.private.addr), "username": USER, "password": PASSWORD},
        }),
    )
    .await;
    app.create_xr("a").await;
    let xr = eventually(
        "the XR composed from the KCL module: Ready=True",
        || async {
            let xr = app.xr("a").await?;
            (condition(&xr, "Ready")?["status"] == "True").then_some(xr)
        },
    )
    .await;
    let config_map = eventually("the KCL module's ConfigMap", || app.config_map(&xr)).await;
    assert_eq!(config_map["data"]["image"], "nginx", "{config_map}");
    assert_eq!(config_map["data"]["source"], "kcl module", "{config_map}");
    println!(
        "timing: KCL modules pulled and an XR composed from them in {:?}",
        started.elapsed()
    );
}
