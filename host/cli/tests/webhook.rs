//! The validating admission webhook on the test cluster's API server: the
//! `ValidatingWebhookConfiguration` of `deploy/webhook`, its client config a
//! URL on loopback,
//! sends Compositions to `plait controller --webhook-address`, which refuses
//! one whose patch reads a field its XR kind does not have, and admits one
//! that fits.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use base64::Engine;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use plait_testcluster::TestCluster;
use serde_json::{Value, json};

mod common;
use common::kube_support::{Controller, LogsOnFailure, apply, free_address, resource};

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
    let cluster = TestCluster::shared().unwrap();
    let client = cluster.client().await;
    let scratch = tempfile::tempdir().unwrap();

    // A serving certificate for 127.0.0.1, and the controller serving the webhook.
    let key = rcgen::KeyPair::generate().unwrap();
    let certificate = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let (cert_file, key_file) = (
        scratch.path().join("tls.crt"),
        scratch.path().join("tls.key"),
    );
    std::fs::write(&cert_file, certificate.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    let webhook_address = free_address();
    let log = scratch.path().join("controller.log");
    let _logs = LogsOnFailure(vec![log.clone()]);
    let mut controller = Controller::start(
        cluster.kubeconfig(),
        &scratch.path().join("cache"),
        &log,
        &[
            format!("--webhook-address={webhook_address}"),
            format!("--webhook-cert-file={}", cert_file.display()),
            format!("--webhook-key-file={}", key_file.display()),
        ],
    );
    controller.wait_ready().await;

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

    let configs = resource(
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
    );
    let ca = base64::engine::general_purpose::STANDARD.encode(certificate.pem());
    // The shipped configuration, its client config pointed at this
    // controller on loopback.
    let shipped = std::fs::read_to_string(
        common::repo().join("deploy/webhook/validatingwebhookconfiguration.yaml"),
    )
    .unwrap();
    let mut config: Value = serde_yaml_ng::from_str(&shipped).unwrap();
    config["metadata"] = json!({"name": "plait-webhook-test"});
    for webhook in config["webhooks"].as_array_mut().unwrap() {
        let path = webhook["clientConfig"]["service"]["path"]
            .as_str()
            .unwrap()
            .to_string();
        webhook["clientConfig"] =
            json!({"url": format!("https://{webhook_address}{path}"), "caBundle": ca});
    }
    apply(&client, &configs, &config, "webhook-test").await;

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
    let config_api: Api<DynamicObject> = Api::all_with(client.clone(), &configs);
    config_api
        .delete("plait-webhook-test", &DeleteParams::default())
        .await
        .unwrap();
}
