//! Usages on a real API server, as a Crossplane user knows them: a Usage
//! says `Ready=False` while no `nousages` webhook refuses deletions, and
//! `Ready=True` once one does; a Usage of a kind the API server does not
//! serve reports upstream's `no matches for kind` and keeps its finalizer;
//! Crossplane v1's `apiextensions.crossplane.io` Usage is served at both
//! its versions and protects a cluster-scoped resource as a ClusterUsage
//! does. No webhook is served here: what it would answer is asked of
//! `plait_kube::refuse_deletion` directly.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::support::{api, cluster, condition, create, eventually, get, resource};
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};

fn usages() -> kube::api::ApiResource {
    resource("protection.crossplane.io/v1beta1", "Usage", "usages")
}

fn labelled_in_use(object: &Value) -> bool {
    object.pointer("/metadata/labels/crossplane.io~1in-use") == Some(&json!("true"))
}

fn finalizers(object: &Value) -> Vec<&str> {
    object["metadata"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// Wakes the Usage (a watch event), so it is reconciled before its poll.
async fn poke(client: &kube::Client, namespace: &str, name: &str, n: usize) {
    api(client, &usages(), Some(namespace))
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {"test.plait.dev/poke": n.to_string()}}}),
            ),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_usage_says_deletions_go_through_until_a_nousages_webhook_refuses_them() {
    let cluster = cluster();
    let client = cluster.client().await;
    let namespace = cluster.namespace("usage-unprotected").await;
    create(
        &client,
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "database", "namespace": namespace}}),
    )
    .await;
    create(
        &client,
        &json!({"apiVersion": "protection.crossplane.io/v1beta1", "kind": "Usage",
                "metadata": {"name": "keep-database", "namespace": namespace},
                "spec": {"of": {"apiVersion": "v1", "kind": "ConfigMap",
                                "resourceRef": {"name": "database"}},
                         "reason": "production data"}}),
    )
    .await;
    let usages = api(&client, &usages(), Some(&namespace));
    let config_maps = api(
        &client,
        &resource("v1", "ConfigMap", "configmaps"),
        Some(&namespace),
    );

    // Labelled, but nothing asks before a deletion: the Usage says so.
    let not_ready = eventually("the Usage not Ready for want of the webhook", || async {
        let usage = get(&usages, "keep-database").await?;
        let ready = condition(&usage, "Ready")?.clone();
        (ready["status"] == "False" && ready["reason"] == "WebhookNotConfigured").then_some(ready)
    })
    .await;
    assert!(
        not_ready["message"]
            .as_str()
            .unwrap()
            .contains("nousages.protection.crossplane.io"),
        "{not_ready}"
    );
    assert!(labelled_in_use(
        &get(&config_maps, "database").await.unwrap()
    ));

    // A configuration with the webhook (one the API server may call, by
    // URL; nothing answers there, and failing open it refuses nothing).
    let configurations = resource(
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
    );
    let configuration = format!("{namespace}-nousages");
    create(
        &client,
        &json!({"apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": configuration},
                "webhooks": [{"name": "nousages.protection.crossplane.io",
                    "clientConfig": {"url": "https://127.0.0.1:9/validate-no-usages"},
                    "objectSelector": {"matchLabels": {"crossplane.io/in-use": "true"}},
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                    "rules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["DELETE"],
                               "resources": ["*"], "scope": "*"}],
                    "sideEffects": "NoneOnDryRun", "admissionReviewVersions": ["v1"],
                    "failurePolicy": "Ignore", "timeoutSeconds": 1}]}),
    )
    .await;
    // The controller's answer is taken as read for 10 s.
    let mut pokes = 0;
    eventually("the Usage Ready once the webhook is configured", || {
        pokes += 1;
        let (client, usages, namespace) = (client.clone(), usages.clone(), namespace.clone());
        async move {
            if pokes % 8 == 0 {
                poke(&client, &namespace, "keep-database", pokes).await;
            }
            let usage = get(&usages, "keep-database").await?;
            let ready = condition(&usage, "Ready")?;
            (ready["status"] == "True" && ready["reason"] == "Available").then_some(())
        }
    })
    .await;

    api(&client, &configurations, None)
        .delete(&configuration, &DeleteParams::default())
        .await
        .unwrap();
    usages
        .delete("keep-database", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Usage gone and the label off", || async {
        let gone = get(&usages, "keep-database").await.is_none();
        let database = get(&config_maps, "database").await?;
        (gone && !labelled_in_use(&database)).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_usage_of_a_kind_the_api_server_does_not_serve_says_so_as_upstream_and_keeps_its_finalizer()
 {
    let cluster = cluster();
    let client = cluster.client().await;
    let namespace = cluster.namespace("usage-no-kind").await;
    create(
        &client,
        &json!({"apiVersion": "protection.crossplane.io/v1beta1", "kind": "Usage",
                "metadata": {"name": "keep-widget", "namespace": namespace},
                "spec": {"of": {"apiVersion": "example.org/v1", "kind": "Widget",
                                "resourceRef": {"name": "w"}},
                         "reason": "production data"}}),
    )
    .await;
    let usages = api(&client, &usages(), Some(&namespace));
    let events = api(
        &client,
        &resource("events.k8s.io/v1", "Event", "events"),
        Some(&namespace),
    );
    let upstream = r#"cannot get used: no matches for kind "Widget" in version "example.org/v1""#;
    let warned = || async {
        let listed = events.list(&Default::default()).await.ok()?;
        listed
            .items
            .iter()
            .map(|e| serde_json::to_value(e).unwrap())
            .filter(|e| e["reason"] == "GetUsedResource" && e["regarding"]["name"] == "keep-widget")
            .any(|e| e["note"].as_str().is_some_and(|n| n.contains(upstream)))
            .then_some(())
    };
    eventually("the missing kind named as upstream names it", warned).await;
    let usage = get(&usages, "keep-widget").await.unwrap();
    assert_eq!(
        finalizers(&usage),
        ["usage.apiextensions.crossplane.io"],
        "{usage}"
    );

    // Deleted, it keeps its finalizer as upstream's does: what it names
    // cannot be read.
    usages
        .delete("keep-widget", &DeleteParams::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let usage = get(&usages, "keep-widget").await.unwrap();
    assert!(usage["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(
        finalizers(&usage),
        ["usage.apiextensions.crossplane.io"],
        "{usage}"
    );
    usages
        .patch(
            "keep-widget",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_usage_protects_a_cluster_scoped_resource_as_a_cluster_usage_does() {
    let cluster = cluster();
    let client = cluster.client().await;
    let roles = api(
        &client,
        &resource(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "clusterroles",
        ),
        None,
    );
    create(
        &client,
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "legacy-protected"}, "rules": []}),
    )
    .await;
    create(
        &client,
        &json!({"apiVersion": "apiextensions.crossplane.io/v1beta1", "kind": "Usage",
                "metadata": {"name": "keep-role"},
                "spec": {"of": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                "resourceRef": {"name": "legacy-protected"}},
                         "reason": "platform access"}}),
    )
    .await;
    let legacy = |version: &str| {
        api(
            &client,
            &resource(
                &format!("apiextensions.crossplane.io/{version}"),
                "Usage",
                "usages",
            ),
            None,
        )
    };
    let usage = eventually("the legacy Usage Ready and the role labelled", || async {
        let usage = get(&legacy("v1beta1"), "keep-role").await?;
        let role = get(&roles, "legacy-protected").await?;
        let described = usage.pointer("/metadata/annotations/crossplane.io~1usage-details")
            == Some(&json!("platform access"));
        (labelled_in_use(&role) && described && condition(&usage, "Ready").is_some())
            .then_some(usage)
    })
    .await;
    assert_eq!(
        finalizers(&usage),
        ["usage.apiextensions.crossplane.io"],
        "{usage}"
    );
    // Stored as v1alpha1, served at both versions.
    assert!(get(&legacy("v1alpha1"), "keep-role").await.is_some());

    // The webhook's answer to the role's deletion names it as upstream's.
    let role = get(&roles, "legacy-protected").await.unwrap();
    let refusal = plait_kube::refuse_deletion(&client, &role, "Background", true)
        .await
        .unwrap();
    assert_eq!(
        refusal.as_deref(),
        Some(
            r#"This resource is in-use by 1 usage(s), including the *v1beta1.Usage "keep-role" with reason: "platform access"."#
        )
    );

    legacy("v1beta1")
        .delete("keep-role", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the legacy Usage gone and the label off", || async {
        let gone = get(&legacy("v1beta1"), "keep-role").await.is_none();
        let role = get(&roles, "legacy-protected").await?;
        (gone && !labelled_in_use(&role)).then_some(())
    })
    .await;
    let role = get(&roles, "legacy-protected").await.unwrap();
    assert_eq!(
        plait_kube::refuse_deletion(&client, &role, "Background", true)
            .await
            .unwrap(),
        None
    );
}
