//! With `--tenant-service-account`, what a tenant's XRs compose and read is
//! bounded by the tenant's own RBAC: one tenant whose service account may
//! manage ConfigMaps gets them composed; another, without, gets a `Synced`
//! condition naming the verb, the kind and its namespace.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use plait_kube::{Functions, Impersonation, Options};
use plait_runtime::{Runtime, RuntimeConfig};
use plait_testcluster::TestCluster;
use serde_json::{Value, json};
use support::{api, condition, create, eventually, resource, yaml};

const SERVICE_ACCOUNT: &str = "plait-tenant";

/// Runs plait's controller acting as each tenant's `SERVICE_ACCOUNT`.
fn start_impersonating_controller(cluster: &'static TestCluster) {
    let options = Options {
        impersonation: Some(Impersonation {
            config: cluster.config(),
            service_account: SERVICE_ACCOUNT.into(),
        }),
        ..Options::default()
    };
    support::start_controller_with(cluster, options, |_| async {
        let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
        (Functions::builtins(runtime), ())
    });
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

#[tokio::test]
async fn a_tenant_composes_only_what_its_own_rbac_allows() {
    let cluster = TestCluster::shared().expect("test cluster");
    start_impersonating_controller(cluster);
    let client = cluster.client().await;
    let group = "impersonation.example.org";
    let mut xrd = yaml("examples/getting-started/xrd.yaml");
    xrd["metadata"]["name"] = json!(format!("apps.{group}"));
    xrd["spec"]["group"] = json!(group);
    create(&client, &xrd).await;
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
    let xr_kind = resource(&format!("{group}/v1alpha1"), "App", "apps");
    let allowed = cluster.namespace("tenant-allowed").await;
    let denied = cluster.namespace("tenant-denied").await;
    for object in config_map_rbac(&allowed) {
        create(&client, &object).await;
    }
    // (namespace, Ok(()) when composed, or Err(what Synced=False says))
    let cases = [
        (allowed.clone(), Ok(())),
        (
            denied.clone(),
            Err(format!(
                "User \"system:serviceaccount:{denied}:{SERVICE_ACCOUNT}\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"{denied}\""
            )),
        ),
    ];
    for (namespace, want) in cases {
        let xrs = api(&client, &xr_kind, Some(&namespace));
        eventually("the XR kind to be served", || async {
            xrs.list(&Default::default()).await.ok().map(|_| ())
        })
        .await;
        create(
            &client,
            &json!({"apiVersion": xr_kind.api_version, "kind": "App",
                    "metadata": {"name": "app", "namespace": namespace},
                    "spec": {"image": "one"}}),
        )
        .await;
        let wanted = if want.is_ok() { "True" } else { "False" };
        let xr = eventually(&format!("{namespace}: Synced={wanted}"), || async {
            let xr = support::get(&xrs, "app").await?;
            (condition(&xr, "Synced")?["status"] == wanted).then_some(xr)
        })
        .await;
        let config_maps = api(
            &client,
            &resource("v1", "ConfigMap", "configmaps"),
            Some(&namespace),
        );
        let composed = config_maps
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|c| c.data["data"]["k"] == "v")
            .count();
        match want {
            Ok(()) => assert_eq!(composed, 1, "{namespace}: composed as the tenant"),
            Err(message) => {
                let said = condition(&xr, "Synced").unwrap()["message"]
                    .as_str()
                    .unwrap()
                    .to_string();
                assert!(said.contains(&message), "{namespace}: {said}");
                assert_eq!(composed, 0, "{namespace}: nothing composed");
            }
        }
    }
}
