//! With `--tenant-service-account`, what a tenant's XRs compose and read is
//! bounded by the tenant's own RBAC: one tenant whose service account may
//! manage ConfigMaps gets them composed; another, without, gets a `Synced`
//! condition naming the verb, the kind and its namespace. The same holds
//! for the EnvironmentConfigs the controller keeps in memory: a tenant
//! whose RBAC does not let it list them is refused, not served from the store,
//! and for Usages: a tenant's Usage labels only what the tenant may change.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{self, api, condition, create, eventually, resource, yaml};
use plait_controlplane::ControlPlane;
use plait_kube::{Functions, Impersonation, Options};
use plait_runtime::{Runtime, RuntimeConfig};
use serde_json::{Value, json};

const SERVICE_ACCOUNT: &str = "plait-tenant";

/// This module's cluster, with plait's controller acting as each tenant's
/// `SERVICE_ACCOUNT`, started once for its tests. A cluster of its own: the
/// shared cluster's controller acts as itself.
fn impersonating_cluster() -> &'static ControlPlane {
    static STARTED: std::sync::OnceLock<(ControlPlane, support::Controller)> =
        std::sync::OnceLock::new();
    &STARTED
        .get_or_init(|| {
            let cluster = ControlPlane::dedicated().expect("test cluster");
            let controller = start_controller(&cluster);
            (cluster, controller)
        })
        .0
}

fn start_controller(cluster: &ControlPlane) -> support::Controller {
    let options = Options {
        impersonation: Some(Impersonation {
            config: cluster.config(),
            service_account: SERVICE_ACCOUNT.into(),
        }),
        ..Options::default()
    };
    let (controller, ()) = support::start_controller_with(cluster, options, |_| async {
        let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
        (Functions::builtins(runtime), ())
    });
    controller
}

/// A Role letting the tenant's service account manage ConfigMaps in `namespace`.
fn config_map_rbac(namespace: &str) -> [Value; 2] {
    [
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "compose-configmaps", "namespace": namespace},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                       "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "compose-configmaps", "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "compose-configmaps"},
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": namespace}],
        }),
    ]
}

/// The XRD of getting-started, in `group`.
fn app_xrd(group: &str) -> Value {
    let mut xrd = yaml("examples/getting-started/xrd.yaml");
    xrd["metadata"]["name"] = json!(format!("apps.{group}"));
    xrd["spec"]["group"] = json!(group);
    xrd
}

/// Creates an App named `app` in `namespace` and waits for its `Synced`
/// condition to be `True` (when `synced`) or `False`; returns the XR.
async fn synced_app(client: &kube::Client, group: &str, namespace: &str, synced: bool) -> Value {
    let xr_kind = resource(&format!("{group}/v1alpha1"), "App", "apps");
    let xrs = api(client, &xr_kind, Some(namespace));
    eventually("the XR kind to be served", || async {
        xrs.list(&Default::default()).await.ok().map(|_| ())
    })
    .await;
    create(
        client,
        &json!({"apiVersion": xr_kind.api_version, "kind": "App",
                "metadata": {"name": "app", "namespace": namespace},
                "spec": {"image": "one"}}),
    )
    .await;
    let wanted = if synced { "True" } else { "False" };
    eventually(&format!("{namespace}: Synced={wanted}"), || async {
        let xr = support::get(&xrs, "app").await?;
        (condition(&xr, "Synced")?["status"] == wanted).then_some(xr)
    })
    .await
}

/// The `data` of the ConfigMaps composed in `namespace`.
async fn composed_data(client: &kube::Client, namespace: &str) -> Vec<Value> {
    let config_maps = api(
        client,
        &resource("v1", "ConfigMap", "configmaps"),
        Some(namespace),
    );
    config_maps
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|c| c.metadata.owner_references.is_some())
        .map(|c| c.data["data"].clone())
        .collect()
}

#[tokio::test]
async fn a_tenant_composes_only_what_its_own_rbac_allows() {
    let cluster = impersonating_cluster();
    let client = cluster.client().await;
    let group = "impersonation.example.org";
    create(&client, &app_xrd(group)).await;
    create(
        &client,
        &json!({
            "apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
            "metadata": {"name": "impersonation"},
            "spec": {
                "compositeTypeRef": {"apiVersion": format!("{group}/v1alpha1"), "kind": "App"},
                "mode": "Pipeline",
                "pipeline": [{
                    "step": "compose",
                    "functionRef": {"name": "function-patch-and-transform"},
                    "input": {"apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources",
                              "resources": [{"name": "settings",
                                             "base": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}},
                                             "readinessChecks": [{"type": "None"}]}]},
                }],
            },
        }),
    )
    .await;
    let allowed = cluster.namespace("tenant-allowed").await;
    let denied = cluster.namespace("tenant-denied").await;
    for object in config_map_rbac(&allowed) {
        create(&client, &object).await;
    }
    // (namespace, Ok(()) when composed, or Err(what Synced=False says)).
    // A new XR's first reconcile applies its ConfigMap (patch); once the XR
    // references it, later ones read it first (get): either is refused.
    let cases = [
        (allowed.clone(), Ok(())),
        (
            denied.clone(),
            Err([
                format!("User \"system:serviceaccount:{denied}:{SERVICE_ACCOUNT}\" cannot "),
                format!("resource \"configmaps\" in API group \"\" in the namespace \"{denied}\""),
            ]),
        ),
    ];
    for (namespace, want) in cases {
        let xr = synced_app(&client, group, &namespace, want.is_ok()).await;
        let composed = composed_data(&client, &namespace)
            .await
            .into_iter()
            .filter(|data| data["k"] == "v")
            .count();
        match want {
            Ok(()) => assert_eq!(composed, 1, "{namespace}: composed as the tenant"),
            Err(message) => {
                let said = condition(&xr, "Synced").unwrap()["message"]
                    .as_str()
                    .unwrap()
                    .to_string();
                assert!(
                    message.iter().all(|part| said.contains(part)),
                    "{namespace}: {said}"
                );
                assert_eq!(composed, 0, "{namespace}: nothing composed");
            }
        }
    }
}

#[tokio::test]
async fn a_tenant_reads_environment_configs_from_the_store_only_if_its_rbac_lets_it_list_them() {
    let cluster = impersonating_cluster();
    let client = cluster.client().await;
    let group = "impersonation-environment.example.org";
    create(&client, &app_xrd(group)).await;
    create(
        &client,
        &json!({
            "apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
            "metadata": {"name": "impersonation-environment"},
            "spec": {
                "compositeTypeRef": {"apiVersion": format!("{group}/v1alpha1"), "kind": "App"},
                "mode": "Pipeline",
                "pipeline": [
                    {
                        "step": "environment",
                        "functionRef": {"name": "function-environment-configs"},
                        "input": {"apiVersion": "environmentconfigs.fn.crossplane.io/v1beta1", "kind": "Input",
                                  "spec": {"environmentConfigs": [{"type": "Selector", "selector": {
                                      "mode": "Multiple",
                                      "matchLabels": [{"type": "Value", "key": "impersonation", "value": "shared"}],
                                  }}]}},
                    },
                    {
                        "step": "compose",
                        "functionRef": {"name": "function-patch-and-transform"},
                        "input": {"apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources",
                                  "resources": [{"name": "settings",
                                                 "base": {"apiVersion": "v1", "kind": "ConfigMap", "data": {}},
                                                 "patches": [{"type": "FromEnvironmentFieldPath",
                                                              "fromFieldPath": "region", "toFieldPath": "data.region"}],
                                                 "readinessChecks": [{"type": "None"}]}]},
                    },
                ],
            },
        }),
    )
    .await;
    create(
        &client,
        &json!({
            "apiVersion": "apiextensions.crossplane.io/v1beta1", "kind": "EnvironmentConfig",
            "metadata": {"name": "impersonation-shared", "labels": {"impersonation": "shared"}},
            "data": {"region": "eu"},
        }),
    )
    .await;
    let allowed = cluster.namespace("environment-allowed").await;
    let denied = cluster.namespace("environment-denied").await;
    for namespace in [&allowed, &denied] {
        for object in config_map_rbac(namespace) {
            create(&client, &object).await;
        }
    }
    for object in environment_config_rbac(&allowed) {
        create(&client, &object).await;
    }

    let xr = synced_app(&client, group, &allowed, true).await;
    assert_eq!(
        composed_data(&client, &allowed).await,
        vec![json!({"region": "eu"})],
        "{allowed}: composed from the EnvironmentConfig: {xr}"
    );

    let xr = synced_app(&client, group, &denied, false).await;
    let said = condition(&xr, "Synced").unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    let refused = format!(
        "User \"system:serviceaccount:{denied}:{SERVICE_ACCOUNT}\" cannot list resource \"environmentconfigs\" in API group \"apiextensions.crossplane.io\" at the cluster scope"
    );
    assert!(said.contains(&refused), "{denied}: {said}");
    assert!(
        composed_data(&client, &denied).await.is_empty(),
        "{denied}: nothing composed"
    );
}

/// A ClusterRole, bound to the tenant's service account in `namespace`,
/// letting it read EnvironmentConfigs.
fn environment_config_rbac(namespace: &str) -> [Value; 2] {
    let name = format!("read-environment-configs-{namespace}");
    [
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": [{"apiGroups": ["apiextensions.crossplane.io"], "resources": ["environmentconfigs"],
                       "verbs": ["get", "list", "watch"]}],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": namespace}],
        }),
    ]
}

#[tokio::test]
async fn a_tenant_usage_protects_only_what_its_own_rbac_lets_it_change() {
    let cluster = impersonating_cluster();
    let client = cluster.client().await;
    let allowed = cluster.namespace("usage-allowed").await;
    let denied = cluster.namespace("usage-denied").await;
    for object in config_map_rbac(&allowed) {
        create(&client, &object).await;
    }
    let config_maps = resource("v1", "ConfigMap", "configmaps");
    let usages = resource("protection.crossplane.io/v1beta1", "Usage", "usages");
    for namespace in [&allowed, &denied] {
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
    }

    // The tenant may change its ConfigMaps: the Usage labels one as the tenant.
    eventually(
        "the allowed tenant's Usage Ready and its ConfigMap labelled",
        || async {
            let usage = api(&client, &usages, Some(&allowed))
                .get("keep-database")
                .await
                .ok()?;
            let usage = serde_json::to_value(usage).ok()?;
            // No webhook refuses deletions on this cluster: configured as
            // it is, the Usage says that much instead of Ready=True.
            let ready = condition(&usage, "Ready")
                .is_some_and(|c| c["status"] == "True" || c["reason"] == "WebhookNotConfigured");
            let database = api(&client, &config_maps, Some(&allowed))
                .get("database")
                .await
                .ok()?;
            let labelled = database
                .metadata
                .labels
                .is_some_and(|l| l.get("crossplane.io/in-use").map(String::as_str) == Some("true"));
            (ready && labelled).then_some(())
        },
    )
    .await;

    // The other tenant may not even read it: the controller, which could,
    // does not act for it.
    let events = resource("events.k8s.io/v1", "Event", "events");
    let refused = format!(
        "User \"system:serviceaccount:{denied}:{SERVICE_ACCOUNT}\" cannot get resource \"configmaps\""
    );
    eventually(
        "the denied tenant's Usage warns that it cannot get the ConfigMap",
        || async {
            let listed = api(&client, &events, Some(&denied))
                .list(&Default::default())
                .await
                .ok()?;
            listed
                .items
                .iter()
                .map(|e| serde_json::to_value(e).unwrap_or_default())
                .find(|e| {
                    e["reason"] == "GetUsedResource"
                        && e["note"].as_str().is_some_and(|n| n.contains(&refused))
                })
                .map(drop)
        },
    )
    .await;
    let database = api(&client, &config_maps, Some(&denied))
        .get("database")
        .await
        .unwrap();
    assert!(
        !database
            .metadata
            .labels
            .unwrap_or_default()
            .contains_key("crossplane.io/in-use"),
        "the denied tenant's ConfigMap is not labelled"
    );
    let usage = serde_json::to_value(
        api(&client, &usages, Some(&denied))
            .get("keep-database")
            .await
            .unwrap(),
    )
    .unwrap();
    assert!(
        condition(&usage, "Ready").is_none_or(|c| c["status"] != "True"),
        "{usage}"
    );
}
