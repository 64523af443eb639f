//! `plait controller` and `plait install` as processes against a real API
//! server: leader election between replicas, the probe endpoints, metrics,
//! and the install bundle.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::kube_support::apply;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use plait_controlplane::ControlPlane;
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(90);
const FIELD_MANAGER: &str = "test";

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

fn plait(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plait"))
        .args(args)
        .output()
        .unwrap()
}

fn documents(text: &str) -> Vec<Value> {
    plait_model::parse_documents(text, "output").unwrap()
}

/// Polls `check` until it returns `Some`, failing with `what` after [`TIMEOUT`].
async fn eventually<T>(what: &str, check: impl AsyncFnMut() -> Option<T>) -> T {
    within_timeout(check)
        .await
        .unwrap_or_else(|| panic!("timed out waiting for: {what}"))
}

/// Polls `check` until it returns `Some`, or `None` after [`TIMEOUT`].
async fn within_timeout<T>(mut check: impl AsyncFnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(found) = check().await {
            return Some(found);
        }
        if start.elapsed() >= TIMEOUT {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// One `plait controller` process, killed when dropped.
struct Controller {
    identity: String,
    probes: SocketAddr,
    child: Child,
    log: PathBuf,
}

impl Controller {
    fn start(cluster: &ControlPlane, lease_namespace: &str, identity: &str, logs: &Path) -> Self {
        let probes = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let log = logs.join(format!("{identity}.log"));
        let child = Command::new(env!("CARGO_BIN_EXE_plait"))
            .args(["controller", "--leader-election", "--poll-interval", "60s"])
            .arg("--kubeconfig")
            .arg(cluster.kubeconfig())
            .args(["--leader-election-namespace", lease_namespace])
            .args(["--identity", identity])
            .arg(format!("--probe-address={probes}"))
            .env("PLAIT_CACHE_DIR", logs.join("cache"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Controller {
            identity: identity.into(),
            probes,
            child,
            log,
        }
    }

    /// GET `path` from the probe endpoints: status and body, or `None` if
    /// nothing listens yet.
    fn get(&self, path: &str) -> Option<(u16, String)> {
        let mut stream = TcpStream::connect(self.probes).ok()?;
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: plait\r\nConnection: close\r\n\r\n"
        )
        .ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).ok()?;
        let status = response.split_whitespace().nth(1)?.parse().ok()?;
        let body = response.split_once("\r\n\r\n")?.1.to_string();
        Some((status, body))
    }

    fn metric(&self, series: &str) -> f64 {
        let (_, body) = self.get("/metrics").unwrap_or_default();
        body.lines()
            .filter_map(|line| line.strip_prefix(series)?.trim().parse::<f64>().ok())
            .sum()
    }

    /// Sends SIGTERM and waits for the process to exit.
    fn terminate(&mut self) -> std::process::ExitStatus {
        Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(start.elapsed() < TIMEOUT, "{} did not stop", self.identity);
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn app_resource() -> ApiResource {
    ApiResource {
        group: "example.org".into(),
        version: "v1alpha1".into(),
        api_version: "example.org/v1alpha1".into(),
        kind: "App".into(),
        plural: "apps".into(),
    }
}

fn read_yaml(path: &str) -> Value {
    documents(&std::fs::read_to_string(repo(path)).unwrap()).remove(0)
}

#[tokio::test]
async fn two_replicas_elect_one_leader_which_composes_and_hands_over_on_shutdown() {
    let cluster = ControlPlane::shared().unwrap();
    let client = cluster.client().await;
    let lease_namespace = cluster.namespace("plait-ha").await;
    let logs = tempfile::tempdir().unwrap();
    let mut replicas = [
        Controller::start(cluster, &lease_namespace, "replica-a", logs.path()),
        Controller::start(cluster, &lease_namespace, "replica-b", logs.path()),
    ];
    for replica in &replicas {
        eventually(&format!("{} ready", replica.identity), async || {
            let (status, _) = replica.get("/readyz")?;
            (status == 200).then_some(())
        })
        .await;
        assert_eq!(replica.get("/healthz").map(|r| r.0), Some(200));
    }
    let leases: Api<Lease> = Api::namespaced(client.clone(), &lease_namespace);
    let leader_identity = eventually("a leader", async || {
        leases
            .get_opt("plait-controller")
            .await
            .ok()??
            .spec?
            .holder_identity
    })
    .await;
    let leader = replicas
        .iter()
        .position(|r| r.identity == leader_identity)
        .expect("the Lease holder is one of the replicas");
    let standby = 1 - leader;

    let xrd_resource = ApiResource {
        group: "apiextensions.crossplane.io".into(),
        version: "v1".into(),
        api_version: "apiextensions.crossplane.io/v1".into(),
        kind: "CompositeResourceDefinition".into(),
        plural: "compositeresourcedefinitions".into(),
    };
    let composition_resource = ApiResource {
        kind: "Composition".into(),
        plural: "compositions".into(),
        ..xrd_resource.clone()
    };
    let mut xrd = read_yaml("examples/getting-started/xrd.yaml");
    xrd["apiVersion"] = json!("apiextensions.crossplane.io/v1");
    apply(&client, &xrd_resource, &xrd, FIELD_MANAGER).await;
    apply(
        &client,
        &composition_resource,
        &read_yaml("examples/getting-started/composition.yaml"),
        FIELD_MANAGER,
    )
    .await;
    let mut xr = read_yaml("examples/getting-started/xr.yaml");
    xr["metadata"].as_object_mut().unwrap().remove("uid");
    let xrs: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &app_resource());
    eventually("the App kind served", async || {
        xrs.list(&ListParams::default()).await.ok()
    })
    .await;
    apply(&client, &app_resource(), &xr, FIELD_MANAGER).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let image_of = async |deployments: &Api<Deployment>| -> Option<String> {
        let list = deployments
            .list(&ListParams::default().labels("crossplane.io/composite=hello"))
            .await
            .ok()?;
        list.items
            .first()?
            .spec
            .as_ref()?
            .template
            .spec
            .as_ref()?
            .containers
            .first()?
            .image
            .clone()
    };
    eventually("the leader composes the XR", async || {
        (image_of(&deployments).await?.as_str() == "ghcr.io/example/hello:1.4.2").then_some(())
    })
    .await;
    // The Deployment exists as soon as the pipeline applies it; the reconcile
    // that applied it is counted only once it has also written the XR's status.
    let success = r#"plait_reconciles_total{kind="App",result="success"}"#;
    eventually("the leader counts a successful reconcile", async || {
        (replicas[leader].metric(success) >= 1.0).then_some(())
    })
    .await;
    assert_eq!(
        replicas[standby].metric("plait_reconciles_total"),
        0.0,
        "a standby reconciles nothing"
    );
    assert!(
        replicas[leader].metric(
            r#"plait_function_call_duration_seconds_count{tenant="default",function="function-patch-and-transform"}"#
        ) >= 1.0
    );

    let status = replicas[leader].terminate();
    assert!(status.success(), "leader log:\n{}", replicas[leader].log());
    let standby_identity = replicas[standby].identity.clone();
    eventually("the standby takes the released Lease", async || {
        let holder = leases
            .get("plait-controller")
            .await
            .ok()?
            .spec?
            .holder_identity?;
        (holder == standby_identity).then_some(())
    })
    .await;
    xr["spec"]["image"] = json!("ghcr.io/example/hello:2.0.0");
    apply(&client, &app_resource(), &xr, FIELD_MANAGER).await;
    let followed = within_timeout(async || {
        (image_of(&deployments).await?.as_str() == "ghcr.io/example/hello:2.0.0").then_some(())
    })
    .await;
    assert!(
        followed.is_some(),
        "timed out waiting for the new leader to follow the XR's update\n\
         new leader's log:\n{}\nold leader's log:\n{}",
        replicas[standby].log(),
        replicas[leader].log()
    );
    assert!(
        replicas[standby].log().contains("became the leader"),
        "standby log:\n{}",
        replicas[standby].log()
    );
}

#[test]
fn install_print_without_the_webhook_is_the_deploy_base_directory_in_kustomization_order() {
    let output = plait(&["install", "--print", "--no-webhook"]);
    assert!(output.status.success(), "{output:?}");
    let printed = documents(&String::from_utf8(output.stdout).unwrap());
    let kustomization = read_yaml("deploy/base/kustomization.yaml");
    let mut expected = Vec::new();
    for file in kustomization["resources"].as_array().unwrap() {
        let text =
            std::fs::read_to_string(repo("deploy/base").join(file.as_str().unwrap())).unwrap();
        expected.extend(documents(&text));
    }
    let listed: Vec<String> = std::fs::read_dir(repo("deploy/base"))
        .unwrap()
        .chain(std::fs::read_dir(repo("deploy/base/crds")).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "yaml") && !p.ends_with("kustomization.yaml")
        })
        .map(|p| {
            p.strip_prefix(repo("deploy/base"))
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    for file in &listed {
        assert!(
            kustomization["resources"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r == file.as_str()),
            "deploy/base/{file} is not in deploy/base/kustomization.yaml"
        );
    }
    assert_eq!(printed.len(), expected.len());
    for (printed, expected) in printed.iter().zip(&expected) {
        assert_eq!(printed, expected);
    }
}

#[test]
fn install_options_rewrite_namespace_image_and_replicas() {
    let output = plait(&[
        "install",
        "--print",
        "--namespace",
        "platform",
        "--image",
        "registry.example.com/plait:dev",
        "--replicas",
        "3",
    ]);
    assert!(output.status.success(), "{output:?}");
    let printed = documents(&String::from_utf8(output.stdout).unwrap());
    let find = |kind: &str| printed.iter().find(|o| o["kind"] == kind).unwrap();
    let cases = [
        ("Namespace", "/metadata/name", json!("platform")),
        ("ServiceAccount", "/metadata/namespace", json!("platform")),
        (
            "ClusterRoleBinding",
            "/subjects/0/namespace",
            json!("platform"),
        ),
        ("Deployment", "/metadata/namespace", json!("platform")),
        ("Deployment", "/spec/replicas", json!(3)),
        (
            "Deployment",
            "/spec/template/spec/containers/0/image",
            json!("registry.example.com/plait:dev"),
        ),
        ("Service", "/metadata/namespace", json!("platform")),
    ];
    for (kind, pointer, want) in cases {
        assert_eq!(find(kind).pointer(pointer), Some(&want), "{kind} {pointer}");
    }
    let zero = plait(&["install", "--print", "--replicas", "0"]);
    assert!(!zero.status.success());
    assert!(String::from_utf8_lossy(&zero.stderr).contains("--replicas"));
    // Applying needs an image that exists: deploy/'s placeholder is none.
    let no_image = plait(&["install", "--kubeconfig", "/nonexistent"]);
    assert!(!no_image.status.success());
    assert!(
        String::from_utf8_lossy(&no_image.stderr).contains("--image is required"),
        "{no_image:?}"
    );
}

#[test]
fn install_serves_the_webhook_by_default_with_a_certificate_plait_makes_or_cert_managers() {
    let print = |extra: &[&str]| {
        let mut args = vec!["install", "--print", "--namespace", "platform"];
        args.extend_from_slice(extra);
        let output = plait(&args);
        assert!(output.status.success(), "{output:?}");
        documents(&String::from_utf8(output.stdout).unwrap())
    };
    let files = |dir: &str, names: &[&str]| {
        let mut objects = Vec::new();
        for file in names {
            let text = std::fs::read_to_string(repo(dir).join(file)).unwrap();
            objects.extend(documents(&text));
        }
        objects
    };
    let plain = print(&["--no-webhook"]);
    assert!(
        !plain
            .iter()
            .any(|o| o["kind"] == "ValidatingWebhookConfiguration"),
        "--no-webhook leaves the webhook out"
    );
    let webhook_files = files(
        "deploy/components/webhook",
        &["service.yaml", "validatingwebhookconfiguration.yaml"],
    );
    let certificate_files = files("deploy/components/cert-manager", &["certificate.yaml"]);
    // (flags, objects after the plain bundle, arguments the Deployment
    // has, arguments it must not have, cert-manager's CA injection)
    type Case<'a> = (
        &'a [&'a str],
        Vec<Value>,
        &'a [&'a str],
        &'a [&'a str],
        bool,
    );
    let cases: [Case; 2] = [
        (
            &[],
            webhook_files.clone(),
            &["--webhook-address=0.0.0.0:9443"],
            &["--webhook-cert-file=/tls/tls.crt"],
            false,
        ),
        (
            &["--cert-manager"],
            webhook_files
                .iter()
                .chain(&certificate_files)
                .cloned()
                .collect(),
            &[
                "--webhook-address=0.0.0.0:9443",
                "--webhook-cert-file=/tls/tls.crt",
                "--webhook-key-file=/tls/tls.key",
            ],
            &[],
            true,
        ),
    ];
    for (flags, added, present, absent, injected) in cases {
        let printed = print(flags);
        let find = |kind: &str| {
            printed
                .iter()
                .find(|o| o["kind"] == kind)
                .unwrap_or_else(|| panic!("{flags:?}: no {kind}"))
        };
        assert_eq!(printed.len(), plain.len() + added.len(), "{flags:?}");
        for (printed, file) in printed[plain.len()..].iter().zip(&added) {
            assert_eq!(
                (&printed["kind"], &printed["metadata"]["name"]),
                (&file["kind"], &file["metadata"]["name"]),
                "{flags:?}"
            );
        }
        let container = &find("Deployment")["spec"]["template"]["spec"]["containers"][0];
        let args: Vec<&str> = container["args"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for arg in present {
            assert!(args.contains(arg), "{flags:?}: {args:?}");
        }
        for arg in absent {
            assert!(!args.contains(arg), "{flags:?}: {args:?}");
        }
        let configuration = find("ValidatingWebhookConfiguration");
        for webhook in configuration["webhooks"].as_array().unwrap() {
            assert_eq!(
                webhook["clientConfig"]["service"]["namespace"], "platform",
                "{webhook}"
            );
        }
        assert_eq!(
            configuration
                .pointer("/metadata/annotations/cert-manager.io~1inject-ca-from")
                .is_some(),
            injected,
            "{flags:?}"
        );
        assert!(
            configuration["webhooks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w["name"] == "nousages.protection.crossplane.io"),
            "the webhook that enforces Usages"
        );
        if injected {
            assert_eq!(
                configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
                "platform/plait-webhook"
            );
            let certificate = find("Certificate");
            assert_eq!(certificate["metadata"]["namespace"], "platform");
            assert_eq!(
                certificate["spec"]["dnsNames"],
                json!(["plait-webhook.platform.svc"])
            );
        }
    }
}

#[tokio::test]
async fn install_applies_the_bundle_to_a_cluster_and_can_run_again() {
    let cluster = ControlPlane::shared().unwrap();
    let kubeconfig = cluster.kubeconfig().display().to_string();
    for _ in 0..2 {
        // No webhook: nothing would serve it, and this cluster's other
        // tests create Compositions.
        let output = plait(&[
            "install",
            "--kubeconfig",
            &kubeconfig,
            "--namespace",
            "plait-installed",
            "--no-webhook",
            "--image",
            "registry.example.com/plait:test",
        ]);
        assert!(output.status.success(), "{output:?}");
        assert!(String::from_utf8_lossy(&output.stdout).contains("plait-installed"));
    }
    let client = cluster.client().await;
    let deployment = Api::<Deployment>::namespaced(client.clone(), "plait-installed")
        .get("plait")
        .await
        .unwrap();
    assert_eq!(deployment.spec.unwrap().replicas, Some(2));
    let binding = Api::<ClusterRoleBinding>::all(client)
        .get("plait")
        .await
        .unwrap();
    assert_eq!(
        binding.subjects.unwrap()[0].namespace.as_deref(),
        Some("plait-installed")
    );
}
