//! The validating admission webhook on the test cluster's API server: the
//! `ValidatingWebhookConfiguration` of `deploy/webhook`, its client config a
//! URL on loopback,
//! sends Compositions to `plait controller --webhook-address`, which refuses
//! one whose patch reads a field its XR kind does not have, and admits one
//! that fits.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use plait_controlplane::ControlPlane;
use serde_json::{Value, json};

mod common;
use common::kube_support::{WebhookController, apply, resource};

fn composition(name: &str, from: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.crossplane.io/v1",
        "kind": "Composition",
        "metadata": {"name": name},
        "spec": {
            "compositeTypeRef": {"apiVersion": "webhook.example.org/v1", "kind": "XGadget"},
            "mode": "Pipeline",
            "pipeline": [{"step": "compose", "functionRef": {"name": "function-patch-and-transform"},
                "input": {"apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources", "resources": [{
                    "name": "config",
                    "base": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "default"}},
                    "patches": [{"fromFieldPath": from, "toFieldPath": "data.size",
                        "transforms": [{"type": "string", "string": {"type": "Format", "fmt": "%d"}}]}],
                }]}}],
        },
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhook_refuses_a_composition_whose_patch_its_xr_kind_does_not_allow() {
    let cluster = ControlPlane::shared().unwrap();
    let client = cluster.client().await;
    // The controller serving the webhook, and the shipped configuration,
    // its client config pointed at this controller on loopback.
    let _controller = WebhookController::start(cluster, &client, "plait-webhook-test", &[]).await;

    let xrds = resource(
        "apiextensions.crossplane.io/v1",
        "CompositeResourceDefinition",
        "compositeresourcedefinitions",
    );
    let xrd = json!({
        "apiVersion": "apiextensions.crossplane.io/v1",
        "kind": "CompositeResourceDefinition",
        "metadata": {"name": "xgadgets.webhook.example.org"},
        "spec": {"group": "webhook.example.org", "names": {"kind": "XGadget", "plural": "xgadgets"},
            "versions": [{"name": "v1", "served": true, "referenceable": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}},
            }}}]},
    });
    apply(&client, &xrds, &xrd, "webhook-test").await;

    let compositions: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &resource(
            "apiextensions.crossplane.io/v1",
            "Composition",
            "compositions",
        ),
    );
    let create = |value: Value| {
        let compositions = compositions.clone();
        async move {
            let object: DynamicObject = serde_json::from_value(value).unwrap();
            compositions.create(&PostParams::default(), &object).await
        }
    };
    // The API server picks the configuration up within moments.
    let started = Instant::now();
    let refusal = loop {
        match create(composition("bad-gadgets", "spec.sise")).await {
            Err(kube::Error::Api(status)) if status.message.contains("plait") => break status,
            Ok(_) => {
                let _ = compositions
                    .delete("bad-gadgets", &DeleteParams::default())
                    .await;
            }
            Err(other) => {
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "never refused: {other}"
                );
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the webhook never refused"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(
        refusal.message.contains(
            "spec.pipeline[0].input.resources[0].patches[0].fromFieldPath: Invalid value: \"spec.sise\": \
             resource \"config\": no field \"sise\" under spec in the schema of webhook.example.org/v1, Kind=XGadget"
        ),
        "{}",
        refusal.message
    );
    create(composition("good-gadgets", "spec.size"))
        .await
        .unwrap();

    let _ = compositions
        .delete("good-gadgets", &DeleteParams::default())
        .await;
    let configs = resource(
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
    );
    let config_api: Api<DynamicObject> = Api::all_with(client.clone(), &configs);
    config_api
        .delete("plait-webhook-test", &DeleteParams::default())
        .await
        .unwrap();
}
