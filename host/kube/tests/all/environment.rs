//! EnvironmentConfigs reach pipelines from the controller's watch-fed
//! store: an XR composes from the configs function-environment-configs
//! selects (by name and by label), a change to one reaches the composed
//! resource at the next poll, and polls in between read no EnvironmentConfig
//! from the API server. In a process of its own, so the controller's metrics
//! are this test's alone.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::support::{
    self, api, create, environment_config, eventually, metric_sum, resource, yaml,
};
use kube::api::{Patch, PatchParams};
use plait_testcluster::TestCluster;
use serde_json::{Value, json};

const XRS: usize = 3;
const POLL: Duration = Duration::from_secs(2);
/// Long enough for the first reconciles after the XRs' last own writes to
/// settle on a busy 2-core machine.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(180);
const GROUP: &str = "environment.example.org";

/// The Composition: function-environment-configs selects one config by name
/// and every `stage: prod` one by label, then patch-and-transform copies
/// what they hold into a ConfigMap.
fn composition() -> Value {
    json!({
        "apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
        "metadata": {"name": "environment"},
        "spec": {
            "compositeTypeRef": {"apiVersion": format!("{GROUP}/v1alpha1"), "kind": "App"},
            "mode": "Pipeline",
            "pipeline": [
                {
                    "step": "environment",
                    "functionRef": {"name": "function-environment-configs"},
                    "input": {
                        "apiVersion": "environmentconfigs.fn.crossplane.io/v1beta1", "kind": "Input",
                        "spec": {"environmentConfigs": [
                            {"type": "Reference", "ref": {"name": "environment-region"}},
                            {"type": "Selector", "selector": {
                                "mode": "Multiple",
                                "matchLabels": [{"type": "Value", "key": "stage", "value": "prod"}],
                            }},
                        ]},
                    },
                },
                {
                    "step": "compose",
                    "functionRef": {"name": "function-patch-and-transform"},
                    "input": {
                        "apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources",
                        "resources": [{
                            "name": "settings",
                            "base": {"apiVersion": "v1", "kind": "ConfigMap", "data": {}},
                            "patches": [
                                {"type": "FromEnvironmentFieldPath", "fromFieldPath": "region", "toFieldPath": "data.region"},
                                {"type": "FromEnvironmentFieldPath", "fromFieldPath": "tier", "toFieldPath": "data.tier"},
                            ],
                            "readinessChecks": [{"type": "None"}],
                        }],
                    },
                },
            ],
        },
    })
}

/// EnvironmentConfig reads (gets and lists) sent to the API server, and
/// reconciles of the test's XRs, so far.
fn reads_and_reconciles() -> (f64, f64) {
    let metrics = plait_kube::encoded_metrics();
    let reads = metric_sum(&metrics, "plait_api_requests_total{", |l| {
        l.contains("resource=\"environmentconfigs\"")
            && (l.contains("verb=\"get\"") || l.contains("verb=\"list\""))
    });
    let reconciles = metric_sum(&metrics, "plait_reconciles_total{", |l| {
        l.contains("kind=\"App\"")
    });
    (reads, reconciles)
}

/// The `data` of every composed ConfigMap in `namespace`, once there are [`XRS`].
async fn composed_data(client: &kube::Client, namespace: &str) -> Option<Vec<Value>> {
    let config_maps = api(
        client,
        &resource("v1", "ConfigMap", "configmaps"),
        Some(namespace),
    );
    let data: Vec<Value> = config_maps
        .list(&Default::default())
        .await
        .ok()?
        .items
        .into_iter()
        .filter(|c| c.metadata.owner_references.is_some())
        .map(|c| c.data["data"].clone())
        .collect();
    (data.len() == XRS).then_some(data)
}

#[tokio::test]
async fn environment_configs_are_read_from_the_watch_store_and_their_changes_reach_the_next_poll() {
    if !support::in_own_process(
        "environment::environment_configs_are_read_from_the_watch_store_and_their_changes_reach_the_next_poll",
    ) {
        return;
    }
    let cluster = TestCluster::shared().unwrap();
    let client = cluster.client().await;
    let namespace = cluster.namespace("environment").await;
    let _controller = support::start_builtins_polling(cluster, POLL);
    let mut xrd = yaml("examples/getting-started/xrd.yaml");
    xrd["metadata"]["name"] = json!(format!("apps.{GROUP}"));
    xrd["spec"]["group"] = json!(GROUP);
    create(&client, &xrd).await;
    create(&client, &composition()).await;
    for config in [
        environment_config("environment-region", json!({}), json!({"region": "eu"})),
        environment_config(
            "environment-prod",
            json!({"stage": "prod"}),
            json!({"tier": "gold"}),
        ),
        environment_config(
            "environment-dev",
            json!({"stage": "dev"}),
            json!({"tier": "bronze"}),
        ),
    ] {
        create(&client, &config).await;
    }
    let xr_kind = resource(&format!("{GROUP}/v1alpha1"), "App", "apps");
    let xrs = api(&client, &xr_kind, Some(&namespace));
    eventually("the XR kind to be served", || async {
        xrs.list(&Default::default()).await.ok().map(|_| ())
    })
    .await;
    for i in 0..XRS {
        create(
            &client,
            &json!({"apiVersion": xr_kind.api_version, "kind": "App",
                    "metadata": {"name": format!("app-{i}"), "namespace": namespace},
                    "spec": {"image": "one"}}),
        )
        .await;
    }
    let composed = json!({"region": "eu", "tier": "gold"});
    eventually("every XR to compose from the selected configs", || async {
        let data = composed_data(&client, &namespace).await?;
        data.iter().all(|d| *d == composed).then_some(())
    })
    .await;

    // Once settled, a window of several polls reconciles every XR, each
    // resolving its EnvironmentConfigs, without reading one from the API server.
    support::quiet_window(
        POLL * 4,
        SETTLE_TIMEOUT,
        reads_and_reconciles,
        |(reads_before, reconciles_before), (reads_after, reconciles_after)| {
            match reads_after == reads_before
                && *reconciles_after >= reconciles_before + XRS as f64
            {
                true => Ok(()),
                false => Err(format!(
                    "EnvironmentConfig reads {reads_before} -> {reads_after}, reconciles {reconciles_before} -> {reconciles_after}"
                )),
            }
        },
    )
    .await;

    // What the store holds is current: a changed config reaches every XR's
    // ConfigMap at a poll, and so does a config that stops matching.
    let configs = api(
        &client,
        &resource(
            "apiextensions.crossplane.io/v1beta1",
            "EnvironmentConfig",
            "environmentconfigs",
        ),
        None,
    );
    let changes = [
        ("environment-region", json!({"data": {"region": "us"}})),
        (
            "environment-prod",
            json!({"metadata": {"labels": {"stage": "retired"}}}),
        ),
        (
            "environment-dev",
            json!({"metadata": {"labels": {"stage": "prod"}}}),
        ),
    ];
    for (name, change) in changes {
        configs
            .patch(name, &PatchParams::default(), &Patch::Merge(change))
            .await
            .unwrap();
    }
    let changed = json!({"region": "us", "tier": "bronze"});
    eventually("every XR to compose from the changed configs", || async {
        let data = composed_data(&client, &namespace).await?;
        data.iter().all(|d| *d == changed).then_some(())
    })
    .await;
}
