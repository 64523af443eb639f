//! Required resources are watched: a change to an object an XR's functions
//! read (an EnvironmentConfig by name or by labels, a ConfigMap by labels)
//! queues exactly the XRs whose last reconcile read it, well before their
//! next poll (a minute here), and no other. On the shared cluster and
//! controller; the XR kinds are this test's own, so their trigger counts
//! in the process-wide metrics are its alone.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};

use crate::support::{
    COPY_REQUIRED, api, cluster, create, environment_config, eventually, metric_sum, resource, yaml,
};

const GROUP: &str = "required.example.org";
/// A label only this test's ConfigMaps carry.
const PEER_LABEL: &str = "required-test-peer";

fn xrd(kind: &str, plural: &str) -> Value {
    let mut xrd = yaml("examples/getting-started/xrd.yaml");
    xrd["metadata"]["name"] = json!(format!("{plural}.{GROUP}"));
    xrd["spec"]["group"] = json!(GROUP);
    xrd["spec"]["names"] = json!({"kind": kind, "plural": plural});
    xrd
}

/// function-environment-configs with `selectors`, patch-and-transform
/// copying `fields` of the environment into a ConfigMap, then
/// `extra` steps.
fn composition(kind: &str, selectors: Value, fields: &[&str], extra: Vec<Value>) -> Value {
    let patches: Vec<Value> = fields
        .iter()
        .map(|field| json!({"type": "FromEnvironmentFieldPath", "fromFieldPath": field, "toFieldPath": format!("data.{field}")}))
        .collect();
    let mut pipeline = vec![
        json!({
            "step": "environment",
            "functionRef": {"name": "function-environment-configs"},
            "input": {
                "apiVersion": "environmentconfigs.fn.crossplane.io/v1beta1", "kind": "Input",
                "spec": {"environmentConfigs": selectors},
            },
        }),
        json!({
            "step": "compose",
            "functionRef": {"name": "function-patch-and-transform"},
            "input": {
                "apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources",
                "resources": [{
                    "name": "settings",
                    "base": {"apiVersion": "v1", "kind": "ConfigMap", "data": {}},
                    "patches": patches,
                    "readinessChecks": [{"type": "None"}],
                }],
            },
        }),
    ];
    pipeline.extend(extra);
    json!({
        "apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
        "metadata": {"name": format!("required-{}", kind.to_lowercase())},
        "spec": {
            "compositeTypeRef": {"apiVersion": format!("{GROUP}/v1alpha1"), "kind": kind},
            "mode": "Pipeline",
            "pipeline": pipeline,
        },
    })
}

fn peer(name: &str, namespace: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {PEER_LABEL: "yes"}},
    })
}

/// How many XRs of `kind` a changed required resource has queued so far.
fn woken(kind: &str) -> f64 {
    metric_sum(
        &plait_kube::encoded_metrics(),
        "plait_reconcile_triggers_total{",
        |line| line.contains(&format!("kind=\"{kind}\"")) && line.contains("trigger=\"required\""),
    )
}

/// Each composed ConfigMap's composition resource name and data, for the
/// XRs of `kind` in `namespace`, sorted; `None` until there are `count`
/// of each.
async fn composed(
    client: &kube::Client,
    namespace: &str,
    kind: &str,
    count: usize,
) -> Option<Vec<(String, Value)>> {
    let config_maps = api(
        client,
        &resource("v1", "ConfigMap", "configmaps"),
        Some(namespace),
    );
    let mut found: Vec<(String, Value)> = config_maps
        .list(&Default::default())
        .await
        .ok()?
        .items
        .into_iter()
        .filter(|c| {
            c.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|owner| owner.kind == kind)
        })
        .map(|c| {
            let role = c
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("crossplane.io/composition-resource-name"))
                .cloned()
                .unwrap_or_default();
            (role, c.data["data"].clone())
        })
        .collect();
    found.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| a.1.to_string().cmp(&b.1.to_string()))
    });
    let per_role = |role: &str| found.iter().filter(|(r, _)| r == role).count();
    (per_role("settings") == count).then_some(found)
}

/// Waits until every composed ConfigMap of `kind` named `role` holds `data`.
async fn until_composed(
    client: &kube::Client,
    namespace: &str,
    kind: &str,
    count: usize,
    role: &str,
    data: Value,
) {
    eventually(&format!("every {kind}'s {role} to be {data}"), || async {
        let found = composed(client, namespace, kind, count).await?;
        let of_role: Vec<&Value> = found
            .iter()
            .filter(|(r, _)| r == role)
            .map(|(_, d)| d)
            .collect();
        (of_role.len() == count && of_role.iter().all(|d| **d == data)).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_changed_required_resource_reconciles_exactly_the_xrs_that_read_it() {
    let cluster = cluster();
    let client = cluster.client().await;
    let namespace = cluster.namespace("required").await;
    let elsewhere = cluster.namespace("required-elsewhere").await;
    for config in [
        environment_config("required-region", json!({}), json!({"region": "eu"})),
        environment_config(
            "required-prod",
            json!({"required-test": "prod"}),
            json!({"tier": "gold"}),
        ),
        environment_config(
            "required-dev",
            json!({"required-test": "dev"}),
            json!({"tier": "bronze"}),
        ),
        environment_config("required-bystander", json!({}), json!({"region": "far"})),
        environment_config("required-unread", json!({}), json!({"region": "none"})),
    ] {
        create(&client, &config).await;
    }
    create(&client, &peer("peer-a", &namespace)).await;
    // Readers read one config by name, every `required-test: prod` one by
    // labels, and (copy-required, as a tenant: in their own namespace)
    // every ConfigMap labelled as a peer. Bystanders read one other config.
    let readers = composition(
        "Reader",
        json!([
            {"type": "Reference", "ref": {"name": "required-region"}},
            {"type": "Selector", "selector": {
                "mode": "Multiple",
                "matchLabels": [{"type": "Value", "key": "required-test", "value": "prod"}],
            }},
        ]),
        &["region", "tier"],
        vec![json!({
            "step": "copy",
            "functionRef": {"name": COPY_REQUIRED},
            "requirements": {"requiredResources": [{
                "requirementName": "peers", "apiVersion": "v1", "kind": "ConfigMap",
                "matchLabels": {PEER_LABEL: "yes"},
            }]},
        })],
    );
    let bystanders = composition(
        "Bystander",
        json!([{"type": "Reference", "ref": {"name": "required-bystander"}}]),
        &["region"],
        Vec::new(),
    );
    for (kind, plural, composition) in [
        ("Reader", "readers", readers),
        ("Bystander", "bystanders", bystanders),
    ] {
        create(&client, &xrd(kind, plural)).await;
        create(&client, &composition).await;
    }
    let kinds = [("Reader", "readers", 2), ("Bystander", "bystanders", 1)];
    for (kind, plural, count) in kinds {
        let xrs = api(
            &client,
            &resource(&format!("{GROUP}/v1alpha1"), kind, plural),
            Some(&namespace),
        );
        eventually(&format!("the {kind} kind to be served"), || async {
            xrs.list(&Default::default()).await.ok().map(|_| ())
        })
        .await;
        for i in 0..count {
            create(
                &client,
                &json!({"apiVersion": format!("{GROUP}/v1alpha1"), "kind": kind,
                        "metadata": {"name": format!("{}-{i}", kind.to_lowercase()), "namespace": namespace},
                        "spec": {"image": "one"}}),
            )
            .await;
        }
    }
    let ns = namespace.as_str();
    until_composed(
        &client,
        ns,
        "Reader",
        2,
        "settings",
        json!({"region": "eu", "tier": "gold"}),
    )
    .await;
    until_composed(
        &client,
        ns,
        "Reader",
        2,
        "copy",
        json!({"peers": format!("{ns}/peer-a")}),
    )
    .await;
    until_composed(
        &client,
        ns,
        "Bystander",
        1,
        "settings",
        json!({"region": "far"}),
    )
    .await;

    let configs = api(
        &client,
        &resource(
            "apiextensions.crossplane.io/v1beta1",
            "EnvironmentConfig",
            "environmentconfigs",
        ),
        None,
    );
    let patch = |name: &'static str, change: Value| {
        let configs = configs.clone();
        async move {
            configs
                .patch(name, &PatchParams::default(), &Patch::Merge(change))
                .await
                .unwrap();
        }
    };
    let config_maps = api(
        &client,
        &resource("v1", "ConfigMap", "configmaps"),
        Some(ns),
    );
    // Each step: changes, what they bring the XRs, and how many XRs of each
    // kind a required resource queued. The XRs poll once a minute, so what
    // arrives sooner was queued by the change; the last change of each
    // step queues someone, so once its result shows, every earlier
    // change of the step (seen before it, in order) has been told too. A
    // reader whose reconcile was under way when a change came is queued
    // twice (by the index, and again once its reads are recorded), so
    // readers are counted at least once each; those that did not read
    // the change, exactly none.

    // By name: the config both Readers read.
    let (readers_before, bystanders_before) = (woken("Reader"), woken("Bystander"));
    patch("required-region", json!({"data": {"region": "us"}})).await;
    until_composed(
        &client,
        ns,
        "Reader",
        2,
        "settings",
        json!({"region": "us", "tier": "gold"}),
    )
    .await;
    assert!(woken("Reader") - readers_before >= 2.0, "both Readers");
    assert_eq!(woken("Bystander"), bystanders_before, "no Bystander");

    // By labels: a config that stops matching and one that starts to.
    let readers_before = woken("Reader");
    patch(
        "required-prod",
        json!({"metadata": {"labels": {"required-test": "retired"}}}),
    )
    .await;
    patch(
        "required-dev",
        json!({"metadata": {"labels": {"required-test": "prod"}}}),
    )
    .await;
    until_composed(
        &client,
        ns,
        "Reader",
        2,
        "settings",
        json!({"region": "us", "tier": "bronze"}),
    )
    .await;
    assert!(
        woken("Reader") - readers_before >= 4.0,
        "both Readers, for each config"
    );
    assert_eq!(woken("Bystander"), bystanders_before, "no Bystander");

    // A config no XR read wakes none; the Bystanders' own wakes only them.
    let readers_before = woken("Reader");
    patch("required-unread", json!({"data": {"region": "nowhere"}})).await;
    patch("required-bystander", json!({"data": {"region": "near"}})).await;
    until_composed(
        &client,
        ns,
        "Bystander",
        1,
        "settings",
        json!({"region": "near"}),
    )
    .await;
    assert_eq!(woken("Reader"), readers_before, "no Reader");
    assert!(
        woken("Bystander") - bystanders_before >= 1.0,
        "the Bystander"
    );

    // Another kind, by labels, confined to the tenant's namespace: a peer in
    // another namespace wakes none, one in the Readers' own does.
    let (readers_before, bystanders_before) = (woken("Reader"), woken("Bystander"));
    create(&client, &peer("peer-a", &elsewhere)).await;
    create(&client, &peer("peer-b", ns)).await;
    until_composed(
        &client,
        ns,
        "Reader",
        2,
        "copy",
        json!({"peers": format!("{ns}/peer-a,{ns}/peer-b")}),
    )
    .await;
    config_maps
        .delete("peer-a", &DeleteParams::default())
        .await
        .unwrap();
    until_composed(
        &client,
        ns,
        "Reader",
        2,
        "copy",
        json!({"peers": format!("{ns}/peer-b")}),
    )
    .await;
    assert!(
        woken("Reader") - readers_before >= 4.0,
        "both Readers, for each peer of theirs"
    );
    assert_eq!(woken("Bystander"), bystanders_before, "no Bystander");
}
