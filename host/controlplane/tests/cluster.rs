//! The shared test cluster serves the Kubernetes API, and its controllers really run:
//! CRDs become Established, ownerReferences are garbage collected, namespaces are emptied.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams, PropagationPolicy};
use plait_controlplane::ControlPlane;

/// Bounds a wait on a controller; a hang, not a timing assertion.
const PATIENCE: Duration = Duration::from_secs(180);

async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} did not happen within {PATIENCE:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn config_map(name: &str, owner: Option<&ConfigMap>) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            owner_references: owner.map(|o| {
                vec![OwnerReference {
                    api_version: "v1".to_string(),
                    kind: "ConfigMap".to_string(),
                    name: o.metadata.name.clone().unwrap(),
                    uid: o.metadata.uid.clone().unwrap(),
                    ..OwnerReference::default()
                }]
            }),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

#[tokio::test]
async fn cluster_serves_the_api_through_config_and_kubeconfig() {
    let cluster = ControlPlane::shared().unwrap();
    assert!(
        cluster.server().starts_with("https://127.0.0.1:"),
        "{}",
        cluster.server()
    );

    let version = cluster.client().await.apiserver_version().await.unwrap();
    assert_eq!(
        (version.major.as_str(), version.minor.as_str()),
        ("1", "34")
    );

    // The kubeconfig file on its own is enough for another client (kubectl, a controller).
    let from_file = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(cluster.kubeconfig()).unwrap(),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    let client = kube::Client::try_from(from_file).unwrap();
    let ns = Api::<Namespace>::all(client).get("default").await.unwrap();
    assert_eq!(ns.metadata.name.as_deref(), Some("default"));
}

#[tokio::test]
async fn namespace_helper_creates_distinct_namespaces() {
    let cluster = ControlPlane::shared().unwrap();
    let a = cluster.namespace("helper").await;
    let b = cluster.namespace("helper").await;
    assert_ne!(a, b);
    let namespaces = Api::<Namespace>::all(cluster.client().await);
    for name in [&a, &b] {
        assert!(name.starts_with("helper-"), "{name}");
        namespaces.get(name).await.unwrap();
    }
}

#[tokio::test]
async fn custom_resource_definition_becomes_established() {
    let cluster = ControlPlane::shared().unwrap();
    let crds = Api::<CustomResourceDefinition>::all(cluster.client().await);
    let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.cluster.test.plait.dev"},
        "spec": {
            "group": "cluster.test.plait.dev",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    }))
    .unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();

    eventually("the Widget CRD becoming Established", || async {
        let crd = crds.get("widgets.cluster.test.plait.dev").await.unwrap();
        crd.status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
    })
    .await;
}

#[tokio::test]
async fn garbage_collector_deletes_dependents_of_a_deleted_owner() {
    let cluster = ControlPlane::shared().unwrap();
    let ns = cluster.namespace("gc").await;
    let config_maps = Api::<ConfigMap>::namespaced(cluster.client().await, &ns);

    let owner = config_maps
        .create(&PostParams::default(), &config_map("owner", None))
        .await
        .unwrap();
    config_maps
        .create(
            &PostParams::default(),
            &config_map("dependent", Some(&owner)),
        )
        .await
        .unwrap();
    config_maps
        .delete(
            "owner",
            &DeleteParams {
                propagation_policy: Some(PropagationPolicy::Background),
                ..DeleteParams::default()
            },
        )
        .await
        .unwrap();

    eventually("garbage collection of the dependent ConfigMap", || async {
        config_maps.get_opt("dependent").await.unwrap().is_none()
    })
    .await;
}

#[tokio::test]
async fn deleting_a_namespace_removes_its_objects() {
    let cluster = ControlPlane::shared().unwrap();
    let client = cluster.client().await;
    let ns = cluster.namespace("nsdel").await;
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    config_maps
        .create(&PostParams::default(), &config_map("content", None))
        .await
        .unwrap();

    let namespaces = Api::<Namespace>::all(client);
    namespaces
        .delete(&ns, &DeleteParams::default())
        .await
        .unwrap();

    // The namespace controller removes the namespace only after it has deleted its content.
    eventually(
        "the namespace controller finishing the namespace",
        || async { namespaces.get_opt(&ns).await.unwrap().is_none() },
    )
    .await;
    assert!(config_maps.get_opt("content").await.unwrap().is_none());
}
