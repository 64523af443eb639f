//! The Helm chart `deploy/helm/plait` against real helm (built from its Go
//! module by tests/helm/build-helm.sh): it lints; with default values it
//! renders the objects of `deploy/` and `deploy/webhook` (as `plait install
//! --print` reads them), with cert-manager or without the webhook what
//! `plait install --cert-manager` or `--no-webhook` prints, with impersonation the
//! ClusterRole of `deploy/tenant-impersonation`, modulo Helm's labels; its
//! values become the controller's flags and pod settings; and it installs,
//! upgrades and uninstalls on the test API server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject};
use serde_json::{Value, json};

mod common;
use common::repo;
use plait_controlplane::{ControlPlane, resource};

const NAMESPACE: &str = "plait-system";

/// The chart's labels on every object; `deploy/` has app.kubernetes.io/name
/// on some, and it selects the controller's pods in both.
const CHART_LABELS: [&str; 5] = [
    "app.kubernetes.io/name",
    "helm.sh/chart",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/version",
];

fn chart() -> PathBuf {
    repo().join("deploy/helm/plait")
}

/// The helm binary, built once and cached under ~/.cache/plait/helm-<version>/.
fn helm_binary() -> &'static Path {
    static HELM: OnceLock<PathBuf> = OnceLock::new();
    HELM.get_or_init(|| {
        let out = Command::new("bash")
            .arg(repo().join("tests/helm/build-helm.sh"))
            .output()
            .expect("build-helm.sh runs");
        assert!(
            out.status.success(),
            "build-helm.sh failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        PathBuf::from(
            stdout
                .lines()
                .last()
                .expect("build-helm.sh prints helm's path"),
        )
    })
}

/// Helm's own directories, kept out of the home directory.
fn helm_home() -> &'static Path {
    static HOME: OnceLock<tempfile::TempDir> = OnceLock::new();
    HOME.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

fn helm(args: &[&str]) -> Output {
    let home = helm_home();
    Command::new(helm_binary())
        .args(args)
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .env_remove("KUBECONFIG")
        .output()
        .expect("helm runs")
}

fn succeeded(what: &str, out: &Output) -> String {
    assert!(
        out.status.success(),
        "{what} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn documents(yaml: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(yaml)
        .map(|d| serde::Deserialize::deserialize(d).expect("YAML"))
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// The controller image every render names: the chart requires one, and
/// `plait install` is given the same (`--image`).
const IMAGE: &str = "registry.example.com/plait:test";

/// A values file naming [`IMAGE`], given before any other so theirs win.
fn image_values() -> &'static str {
    static FILE: OnceLock<tempfile::TempDir> = OnceLock::new();
    let dir = FILE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let (repository, tag) = IMAGE.rsplit_once(':').unwrap();
        std::fs::write(
            dir.path().join("image.yaml"),
            format!("image: {{repository: {repository}, tag: {tag}}}\n"),
        )
        .unwrap();
        dir
    });
    dir.path()
        .join("image.yaml")
        .to_str()
        .unwrap()
        .to_string()
        .leak()
}

/// A values file holding `values` (YAML), for `-f`.
fn values_file(dir: &Path, name: &str, values: &str) -> PathBuf {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, values).unwrap();
    path
}

/// `helm template` of the chart into plait-system with these values files.
fn template(values: &[&Path]) -> Result<Vec<Value>, String> {
    let chart = chart();
    let mut args = vec![
        "template",
        "plait",
        chart.to_str().unwrap(),
        "-n",
        NAMESPACE,
        "-f",
        image_values(),
    ];
    for file in values {
        args.extend(["-f", file.to_str().unwrap()]);
    }
    let out = helm(&args);
    if out.status.success() {
        Ok(documents(&String::from_utf8_lossy(&out.stdout)))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn template_with(values: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let file = values_file(dir.path(), "values", values);
    template(&[&file]).unwrap_or_else(|e| panic!("helm template with {values}: {e}"))
}

/// `plait install --print` (deploy/'s objects, as the kustomization lists them).
fn deploy_objects(extra: &[&str]) -> Vec<Value> {
    let mut args = vec![
        "install",
        "--print",
        "--namespace",
        NAMESPACE,
        "--image",
        IMAGE,
    ];
    args.extend(extra);
    let out = Command::new(env!("CARGO_BIN_EXE_plait"))
        .args(&args)
        .current_dir(repo())
        .output()
        .expect("plait runs");
    documents(&succeeded("plait install --print", &out))
}

/// Each object [`common::by_identity`], without what Helm adds: the
/// chart's labels (but on the pod template, where the selector needs its name), the resource-policy annotation on CRDs, and the image pull policy
/// `IfNotPresent` the API server gives a tagged image anyway. The Namespace
/// is left out (`helm install --create-namespace` makes it).
fn comparable(objects: Vec<Value>) -> BTreeMap<String, Value> {
    let mut out = Vec::new();
    for mut object in objects {
        if object["kind"] == "Namespace" {
            continue;
        }
        for pointer in ["/metadata", "/spec/template/metadata"] {
            let Some(Value::Object(metadata)) = object.pointer_mut(pointer) else {
                continue;
            };
            if let Some(Value::Object(labels)) = metadata.get_mut("labels") {
                for label in CHART_LABELS {
                    if pointer == "/metadata" || label != "app.kubernetes.io/name" {
                        labels.remove(label);
                    }
                }
                if labels.is_empty() {
                    metadata.remove("labels");
                }
            }
            if let Some(Value::Object(annotations)) = metadata.get_mut("annotations") {
                annotations.remove("helm.sh/resource-policy");
                if annotations.is_empty() {
                    metadata.remove("annotations");
                }
            }
        }
        if let Some(Value::Array(containers)) = object.pointer_mut("/spec/template/spec/containers")
        {
            for container in containers {
                if let Value::Object(container) = container
                    && container.get("imagePullPolicy") == Some(&json!("IfNotPresent"))
                {
                    container.remove("imagePullPolicy");
                }
            }
        }
        out.push(object);
    }
    common::by_identity(out)
}

fn assert_same_objects(rendered: Vec<Value>, expected: Vec<Value>, what: &str) {
    common::assert_same_objects(&comparable(rendered), &comparable(expected), what);
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

fn controller_args(objects: &[Value]) -> Vec<String> {
    let deployment = find(objects, "Deployment", "plait");
    deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_chart_passes_helm_lint_with_default_and_other_values() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("defaults", ""),
        (
            "webhook-cert-manager",
            "webhook: {certManager: {enabled: true}}",
        ),
        ("no-webhook", "webhook: {enabled: false}"),
        (
            "webhook-certificate",
            "webhook: {enabled: true, certManager: {enabled: false}, certificate: {secretName: tls, caBundle: Zm9v}}",
        ),
        ("shards", "shards: 4\nreplicas: 3"),
        (
            "tenancy",
            "tenancy: {impersonation: {enabled: true, xrGroups: [platform.example.org]}, maxReconciles: 4, maxCalls: 2}",
        ),
        (
            "service-monitor",
            "metrics: {port: 9090, serviceMonitor: {enabled: true, interval: 30s}}",
        ),
    ];
    let chart = chart();
    for (name, values) in cases {
        let file = values_file(dir.path(), name, values);
        let out = helm(&[
            "lint",
            "--strict",
            chart.to_str().unwrap(),
            "-f",
            image_values(),
            "-f",
            file.to_str().unwrap(),
        ]);
        succeeded(&format!("helm lint with {name}"), &out);
    }
}

#[test]
fn helm_template_with_default_values_renders_the_objects_of_deploy() {
    let rendered = template(&[]).unwrap();
    assert_same_objects(rendered, deploy_objects(&[]), "default values");
}

#[test]
fn helm_template_with_cert_manager_or_without_the_webhook_renders_what_plait_install_does() {
    // (values, `plait install` flags)
    let cases = [
        ("webhook: {certManager: {enabled: true}}", "--cert-manager"),
        ("webhook: {enabled: false}", "--no-webhook"),
    ];
    for (values, flag) in cases {
        let rendered = template_with(values);
        assert_same_objects(rendered, deploy_objects(&[flag]), values);
    }
}

#[test]
fn helm_template_with_impersonation_renders_the_role_and_flag_of_deploy_tenant_impersonation() {
    let rendered = template_with("tenancy: {impersonation: {enabled: true}}");
    let text = std::fs::read_to_string(repo().join("deploy/tenant-impersonation/clusterrole.yaml"))
        .unwrap();
    let tenant = documents(&text);
    let comparable_role = |objects: Vec<Value>| {
        comparable(objects)["rbac.authorization.k8s.io/v1 ClusterRole /plait"].clone()
    };
    assert_eq!(
        comparable_role(rendered.clone()),
        comparable_role(tenant),
        "the ClusterRole"
    );
    let args = controller_args(&rendered);
    assert!(
        args.iter()
            .any(|a| a == "--tenant-service-account=plait-tenant"),
        "{args:?}"
    );
}

#[test]
fn values_become_the_controllers_flags_and_pod_settings() {
    // (values, arguments the controller gets, arguments it must not get)
    let cases: [(&str, &[&str], &[&str]); 8] = [
        ("shards: 4", &["--shards=4"], &["--leader-election"]),
        (
            "leaderElection: {enabled: false}",
            &["--probe-address=0.0.0.0:8080"],
            &["--leader-election"],
        ),
        (
            "leaderElection: {namespace: leases}\nmetrics: {port: 9090}",
            &[
                "--leader-election",
                "--leader-election-namespace=leases",
                "--probe-address=0.0.0.0:9090",
            ],
            &[],
        ),
        (
            "reconcile: {pollInterval: 5m, maxConcurrentReconciles: 16, circuitBreaker: {burst: 50, refillRate: '0.5', cooldown: 2m}}",
            &[
                "--poll-interval=5m",
                "--max-concurrent-reconciles=16",
                "--circuit-breaker-burst=50",
                "--circuit-breaker-refill-rate=0.5",
                "--circuit-breaker-cooldown=2m",
            ],
            &[],
        ),
        (
            "functions: {deadline: 5s, memory: 128Mi, concurrentCalls: 4, guestMemoryBudget: 1Gi, responseCache: {enabled: false}}",
            &[
                "--function-deadline=5s",
                "--function-memory=128Mi",
                "--concurrent-function-calls=4",
                "--guest-memory-budget=1Gi",
                "--no-function-cache",
            ],
            &["--function-cache-ttl-max=24h"],
        ),
        (
            "registry: {insecure: ['registry.local:5000'], timeout: 1m, caBundleConfigMap: ca, dockerConfigSecret: pull}",
            &[
                "--insecure-registry=registry.local:5000",
                "--registry-timeout=1m",
                "--ca-file=/registry-ca/ca.crt",
                "--docker-config=/docker/config.json",
            ],
            &[],
        ),
        (
            "tenancy: {maxReconciles: 4, maxCalls: 2}",
            &["--tenant-max-reconciles=4", "--tenant-max-calls=2"],
            &["--tenant-service-account=plait-tenant"],
        ),
        (
            "extraArgs: ['--function-cache-size=32Mi']",
            &["--function-cache-size=32Mi"],
            &[],
        ),
    ];
    for (values, want, unwanted) in cases {
        let args = controller_args(&template_with(values));
        for arg in want {
            assert!(
                args.iter().any(|a| a == arg),
                "{values}: {arg} not in {args:?}"
            );
        }
        for arg in unwanted {
            assert!(
                !args.iter().any(|a| a == arg),
                "{values}: {arg} in {args:?}"
            );
        }
    }

    let objects = template_with(
        "replicas: 3
image: {repository: registry.example.com/plait, tag: v9, pullPolicy: Always}
imagePullSecrets: [regcred]
resources: {limits: {memory: 2Gi}}
nodeSelector: {kubernetes.io/os: linux}
tolerations: [{key: dedicated, operator: Exists}]
affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: []}}
podSecurityContext: {runAsUser: 1000}
serviceAccount: {name: composer, annotations: {iam: role}}
registry: {caBundleConfigMap: ca, dockerConfigSecret: pull}
cache: {sizeLimit: 1Gi}
",
    );
    let deployment = find(&objects, "Deployment", "plait");
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    let cases = [
        (&deployment["spec"]["replicas"], json!(3)),
        (&container["image"], json!("registry.example.com/plait:v9")),
        (&container["imagePullPolicy"], json!("Always")),
        (&pod["imagePullSecrets"], json!([{"name": "regcred"}])),
        (
            &container["resources"],
            json!({"limits": {"memory": "2Gi"}, "requests": {"cpu": "100m", "memory": "256Mi"}}),
        ),
        (&pod["nodeSelector"], json!({"kubernetes.io/os": "linux"})),
        (
            &pod["tolerations"],
            json!([{"key": "dedicated", "operator": "Exists"}]),
        ),
        (&pod["securityContext"]["runAsUser"], json!(1000)),
        (&pod["serviceAccountName"], json!("composer")),
        (
            &pod["volumes"][0],
            json!({"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}}),
        ),
        (
            &pod["volumes"][1],
            json!({"name": "registry-ca", "configMap": {"name": "ca", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}),
        ),
        (
            &pod["volumes"][2],
            json!({"name": "docker-config", "secret": {"secretName": "pull", "items": [{"key": ".dockerconfigjson", "path": "config.json"}]}}),
        ),
        (
            &find(&objects, "ServiceAccount", "composer")["metadata"]["annotations"],
            json!({"iam": "role"}),
        ),
        (
            &find(&objects, "ClusterRoleBinding", "plait")["subjects"][0]["name"],
            json!("composer"),
        ),
    ];
    for (i, (got, want)) in cases.into_iter().enumerate() {
        assert_eq!(got, &want, "pod setting {i}");
    }
    assert!(pod["affinity"]["podAntiAffinity"].is_object());
}

#[test]
fn the_webhook_takes_a_provided_certificate_and_the_metrics_a_service_monitor() {
    let objects = template_with(
        "webhook: {enabled: true, certManager: {enabled: false}, certificate: {secretName: my-tls, caBundle: Q0E=}}
metrics: {port: 9090, serviceMonitor: {enabled: true, interval: 30s, labels: {release: prometheus}}}",
    );
    assert!(
        !objects.iter().any(|o| o["apiVersion"]
            .as_str()
            .unwrap_or_default()
            .starts_with("cert-manager.io")),
        "cert-manager objects without cert-manager"
    );
    let configuration = find(&objects, "ValidatingWebhookConfiguration", "plait");
    assert!(configuration["metadata"]["annotations"].is_null());
    for webhook in configuration["webhooks"].as_array().unwrap() {
        assert_eq!(webhook["clientConfig"]["caBundle"], "Q0E=");
    }
    let deployment = find(&objects, "Deployment", "plait");
    let volumes = &deployment["spec"]["template"]["spec"]["volumes"];
    assert!(
        volumes
            .as_array()
            .unwrap()
            .contains(&json!({"name": "webhook-tls", "secret": {"secretName": "my-tls"}})),
        "{volumes}"
    );
    let monitor = find(&objects, "ServiceMonitor", "plait");
    assert_eq!(monitor["metadata"]["labels"]["release"], "prometheus");
    assert_eq!(
        monitor["spec"]["endpoints"],
        json!([{"port": "http", "path": "/metrics", "interval": "30s"}])
    );
    assert_eq!(
        find(&objects, "Service", "plait-metrics")["spec"]["ports"][0]["port"],
        9090
    );
}

#[test]
fn values_the_controller_cannot_run_with_are_refused_naming_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("shards: 2000", "shards must be between 1 and 1024"),
        (
            "webhook: {enabled: true, certManager: {enabled: false}, certificate: {secretName: tls}}",
            "webhook.certificate.caBundle is required",
        ),
        ("image: {repository: ''}", "image.repository is required"),
    ];
    for (i, (values, want)) in cases.into_iter().enumerate() {
        let file = values_file(dir.path(), &format!("case-{i}"), values);
        let error = template(&[&file]).expect_err(values);
        assert!(error.contains(want), "{values}: {error}");
    }
}

async fn object(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
    plural: &str,
    namespace: Option<&str>,
    name: &str,
) -> Option<DynamicObject> {
    let resource = resource(api_version, kind, plural);
    let api: Api<DynamicObject> = match namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    api.get_opt(name)
        .await
        .unwrap_or_else(|e| panic!("get {kind} {name}: {e}"))
}

/// Waits for an object deleted in the background (a Deployment's pods and
/// replica sets first) to be gone.
async fn gone(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
    plural: &str,
    namespace: Option<&str>,
    name: &str,
) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while object(client, api_version, kind, plural, namespace, name)
        .await
        .is_some()
    {
        assert!(Instant::now() < deadline, "{kind} {name} still there");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_installs_upgrades_and_uninstalls_the_chart_on_an_api_server() {
    let cluster = ControlPlane::shared().expect("test cluster");
    let client = cluster.client().await;
    let namespace = cluster.namespace("plait-helm").await;
    let kubeconfig = cluster.kubeconfig().to_str().unwrap().to_string();
    let chart = chart();
    let chart = chart.to_str().unwrap();
    let base = ["--kubeconfig", &kubeconfig, "-n", &namespace];
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(base);
        helm(&all)
    };

    succeeded(
        "helm install",
        &run(&["install", "plait", chart, "-f", image_values()]),
    );
    let deployment = object(
        &client,
        "apps/v1",
        "Deployment",
        "deployments",
        Some(&namespace),
        "plait",
    )
    .await
    .expect("the Deployment");
    assert_eq!(deployment.data["spec"]["replicas"], 2);
    let args = &deployment.data["spec"]["template"]["spec"]["containers"][0]["args"];
    assert_eq!(
        args,
        &json!([
            "controller",
            "--leader-election",
            "--probe-address=0.0.0.0:8080",
            "--webhook-address=0.0.0.0:9443"
        ])
    );
    for (api_version, kind, plural, in_namespace, name) in [
        ("v1", "ServiceAccount", "serviceaccounts", true, "plait"),
        ("v1", "Service", "services", true, "plait-metrics"),
        // The webhook, on by default.
        ("v1", "Service", "services", true, "plait-webhook"),
        (
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            false,
            "plait",
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "clusterroles",
            false,
            "plait",
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            false,
            "plait",
        ),
        (
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            false,
            "compositions.apiextensions.crossplane.io",
        ),
    ] {
        let ns = in_namespace.then_some(namespace.as_str());
        let found = object(&client, api_version, kind, plural, ns, name).await;
        let found = found.unwrap_or_else(|| panic!("no {kind} {name} after install"));
        assert_eq!(
            found.metadata.labels.unwrap_or_default()["app.kubernetes.io/managed-by"],
            "Helm",
            "{kind} {name}"
        );
    }
    let binding = object(
        &client,
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        None,
        "plait",
    )
    .await
    .unwrap();
    assert_eq!(binding.data["subjects"][0]["namespace"], json!(namespace));

    // The webhook with a provided certificate (cert-manager is not installed),
    // shards instead of leader election, impersonation.
    let dir = tempfile::tempdir().unwrap();
    let upgraded = values_file(
        dir.path(),
        "upgrade",
        "replicas: 3
shards: 4
tenancy: {impersonation: {enabled: true, xrGroups: [platform.example.org]}}
webhook: {enabled: true, certManager: {enabled: false}, certificate: {secretName: plait-webhook-tls, caBundle: Q0E=}}
",
    );
    succeeded(
        "helm upgrade",
        &run(&[
            "upgrade",
            "plait",
            chart,
            "-f",
            image_values(),
            "-f",
            upgraded.to_str().unwrap(),
        ]),
    );
    let deployment = object(
        &client,
        "apps/v1",
        "Deployment",
        "deployments",
        Some(&namespace),
        "plait",
    )
    .await
    .unwrap();
    assert_eq!(deployment.data["spec"]["replicas"], 3);
    let args: Vec<&str> = deployment.data["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        args.contains(&"--shards=4") && !args.contains(&"--leader-election"),
        "{args:?}"
    );
    assert!(
        args.contains(&"--tenant-service-account=plait-tenant"),
        "{args:?}"
    );
    assert!(args.contains(&"--webhook-address=0.0.0.0:9443"), "{args:?}");
    let role = object(
        &client,
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "clusterroles",
        None,
        "plait",
    )
    .await
    .unwrap();
    let rules = role.data["rules"].as_array().unwrap();
    assert!(
        rules.contains(
            &json!({"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"]})
        ),
        "{rules:?}"
    );
    assert!(
        rules.contains(
            &json!({"apiGroups": ["platform.example.org"], "resources": ["*"], "verbs": ["*"]})
        ),
        "{rules:?}"
    );
    let webhook = object(
        &client,
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        None,
        "plait",
    )
    .await
    .expect("the ValidatingWebhookConfiguration");
    assert_eq!(
        webhook.data["webhooks"][0]["clientConfig"]["service"]["namespace"],
        json!(namespace)
    );
    assert!(
        object(
            &client,
            "v1",
            "Service",
            "services",
            Some(&namespace),
            "plait-webhook"
        )
        .await
        .is_some()
    );
    let history = succeeded("helm history", &run(&["history", "plait", "-o", "json"]));
    let history: Vec<Value> = serde_json::from_str(&history).unwrap();
    assert_eq!(history.len(), 2, "{history:?}");

    succeeded(
        "helm uninstall",
        &run(&["uninstall", "plait", "--wait", "--timeout", "2m"]),
    );
    gone(
        &client,
        "apps/v1",
        "Deployment",
        "deployments",
        Some(&namespace),
        "plait",
    )
    .await;
    for (api_version, kind, plural, ns, name) in [
        (
            "v1",
            "ServiceAccount",
            "serviceaccounts",
            Some(namespace.as_str()),
            "plait",
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "clusterroles",
            None,
            "plait",
        ),
        (
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            None,
            "plait",
        ),
    ] {
        gone(&client, api_version, kind, plural, ns, name).await;
    }
    // The CRDs stay, and with them every XRD, Composition and Function.
    let crd = object(
        &client,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        None,
        "compositions.apiextensions.crossplane.io",
    )
    .await;
    assert!(
        crd.is_some(),
        "the Composition CRD was deleted with the release"
    );
}

#[test]
fn the_webhooks_certificate_comes_from_the_given_issuer_instead_of_a_self_signed_one() {
    let objects = template_with(
        "webhook: {certManager: {enabled: true, issuerRef: {name: platform-ca, kind: ClusterIssuer}}}",
    );
    assert!(
        !objects.iter().any(|o| o["kind"] == "Issuer"),
        "a self-signed Issuer beside the given one"
    );
    let certificate = find(&objects, "Certificate", "plait-webhook");
    assert_eq!(
        certificate["spec"]["issuerRef"],
        json!({"name": "platform-ca", "kind": "ClusterIssuer"})
    );
    let configuration = find(&objects, "ValidatingWebhookConfiguration", "plait");
    assert_eq!(
        configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
        "plait-system/plait-webhook"
    );
}

#[test]
fn the_packaged_chart_holds_the_crds_its_link_to_deploy_base_crds_points_at() {
    let dir = tempfile::tempdir().unwrap();
    let chart = chart();
    succeeded(
        "helm package",
        &helm(&[
            "package",
            chart.to_str().unwrap(),
            "-d",
            dir.path().to_str().unwrap(),
        ]),
    );
    let package = dir.path().join("plait-0.1.0.tgz");
    let out = helm(&[
        "template",
        "plait",
        package.to_str().unwrap(),
        "-n",
        NAMESPACE,
        "-f",
        image_values(),
    ]);
    let packaged = documents(&succeeded("helm template of the package", &out));
    let crds = packaged
        .iter()
        .filter(|o| o["kind"] == "CustomResourceDefinition")
        .count();
    assert_eq!(crds, 9, "the CRDs of deploy/base/crds");
    assert_eq!(comparable(packaged), comparable(template(&[]).unwrap()));
}
