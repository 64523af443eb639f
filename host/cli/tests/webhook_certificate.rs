//! Without `--webhook-cert-file`, `plait controller --webhook-address` makes
//! its serving certificate itself, as Crossplane's core does: a CA and a
//! certificate it signs in Secrets of its namespace, the CA written into
//! the caBundle of each webhook of its ValidatingWebhookConfiguration. The
//! API server then trusts the webhook and refuses the deletion of a
//! resource a Usage protects; a restarted controller serves the same
//! certificate.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use base64::Engine;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use plait_controlplane::ControlPlane;
use serde_json::{Value, json};

mod common;
use common::kube_support::{Controller, LogsOnFailure, apply, free_address, resource};

const TIMEOUT: Duration = Duration::from_secs(120);

async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let started = Instant::now();
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(started.elapsed() < TIMEOUT, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn value(object: DynamicObject) -> Value {
    serde_json::to_value(object).unwrap()
}

/// Secret `name`'s `key`, decoded.
async fn secret_data(secrets: &Api<DynamicObject>, name: &str, key: &str) -> Option<String> {
    let secret = value(secrets.get_opt(name).await.ok()??);
    let encoded = secret["data"][key].as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    String::from_utf8(bytes).ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_serves_the_webhook_with_a_certificate_it_makes_and_the_api_server_trusts() {
    let cluster = ControlPlane::shared().unwrap();
    let client = cluster.client().await;
    let namespace = cluster.namespace("plait-certificates").await;
    let configuration_name = format!("{namespace}-webhook");
    let address = free_address();

    // The shipped configuration, each webhook called by URL on loopback and
    // without a caBundle: the controller writes its CA there.
    let shipped = std::fs::read_to_string(format!(
        "{}/../../deploy/components/webhook/validatingwebhookconfiguration.yaml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let mut configuration: Value = serde_yaml_ng::from_str(&shipped).unwrap();
    configuration["metadata"] = json!({"name": configuration_name});
    for webhook in configuration["webhooks"].as_array_mut().unwrap() {
        let path = webhook["clientConfig"]["service"]["path"]
            .as_str()
            .unwrap()
            .to_string();
        webhook["clientConfig"] = json!({"url": format!("https://{address}{path}")});
        // Only this test's namespace is sent to this controller.
        webhook["namespaceSelector"] =
            json!({"matchLabels": {"kubernetes.io/metadata.name": namespace}});
    }
    let configurations_resource = resource(
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
    );
    apply(
        &client,
        &configurations_resource,
        &configuration,
        "webhook-certificate-test",
    )
    .await;

    let scratch = tempfile::tempdir().unwrap();
    let log = scratch.path().join("controller.log");
    let _logs = LogsOnFailure(vec![log.clone()]);
    let args = vec![
        format!("--webhook-address={address}"),
        "--webhook-host=127.0.0.1".to_string(),
        format!("--namespace={namespace}"),
        format!("--webhook-configuration={configuration_name}"),
        "--poll-interval=3s".to_string(),
    ];
    let start = || {
        Controller::start(
            cluster.kubeconfig(),
            &scratch.path().join("cache"),
            &log,
            &args,
        )
    };
    let mut controller = start();
    controller.wait_ready().await;

    // The CA and the serving certificate, in Secrets of its namespace.
    let secrets: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &namespace,
        &resource("v1", "Secret", "secrets"),
    );
    let ca = secret_data(&secrets, "plait-root-ca", "tls.crt")
        .await
        .expect("the CA's Secret");
    assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "{ca}");
    let serving = secret_data(&secrets, "plait-tls-server", "tls.crt")
        .await
        .expect("the serving certificate's Secret");
    assert_eq!(
        secret_data(&secrets, "plait-tls-server", "ca.crt").await,
        Some(ca.clone())
    );
    // The CA, as every webhook's caBundle.
    let configurations: Api<DynamicObject> =
        Api::all_with(client.clone(), &configurations_resource);
    let bundle = base64::engine::general_purpose::STANDARD.encode(&ca);
    eventually("the CA in every webhook's caBundle", || async {
        let configuration = value(configurations.get(&configuration_name).await.ok()?);
        configuration["webhooks"]
            .as_array()?
            .iter()
            .all(|w| w["clientConfig"]["caBundle"] == bundle.as_str())
            .then_some(())
    })
    .await;

    // The API server calls it: the deletion of a protected resource is
    // refused with upstream's message.
    let config_maps: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &namespace,
        &resource("v1", "ConfigMap", "configmaps"),
    );
    let usages: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &namespace,
        &resource("protection.crossplane.io/v1beta1", "Usage", "usages"),
    );
    let create = |api: Api<DynamicObject>, object: Value| async move {
        api.create(
            &PostParams::default(),
            &serde_json::from_value(object).unwrap(),
        )
        .await
        .unwrap();
    };
    create(
        config_maps.clone(),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "database", "namespace": namespace}}),
    )
    .await;
    create(
        usages.clone(),
        json!({"apiVersion": "protection.crossplane.io/v1beta1", "kind": "Usage",
               "metadata": {"name": "keep-database", "namespace": namespace},
               "spec": {"of": {"apiVersion": "v1", "kind": "ConfigMap",
                               "resourceRef": {"name": "database"}},
                        "reason": "production data"}}),
    )
    .await;
    eventually("the Usage Ready: the webhook is configured", || async {
        let usage = value(usages.get("keep-database").await.ok()?);
        usage["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
            .then_some(())
    })
    .await;
    let refused = |config_maps: Api<DynamicObject>| async move {
        let dry_run = DeleteParams {
            dry_run: true,
            ..DeleteParams::default()
        };
        match config_maps.delete("database", &dry_run).await {
            Err(kube::Error::Api(status)) => Some(status),
            Ok(_) | Err(_) => None,
        }
    };
    let status = refused(config_maps.clone())
        .await
        .expect("the deletion refused");
    assert_eq!(status.code, 409, "{status:?}");
    assert!(
        status.message.contains(
            r#"This resource is in-use by 1 usage(s), including the *v1beta1.Usage "keep-database""#
        ),
        "{status:?}"
    );

    // Restarted, it serves the certificate it made before.
    drop(controller);
    let mut controller = start();
    controller.wait_ready().await;
    assert_eq!(
        secret_data(&secrets, "plait-tls-server", "tls.crt").await,
        Some(serving)
    );
    assert_eq!(
        secret_data(&secrets, "plait-root-ca", "tls.crt").await,
        Some(ca)
    );
    let status = eventually("the deletion refused again", || {
        refused(config_maps.clone())
    })
    .await;
    assert_eq!(status.code, 409, "{status:?}");

    usages
        .delete("keep-database", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Usage gone", || async {
        usages
            .get_opt("keep-database")
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
    configurations
        .delete(&configuration_name, &DeleteParams::default())
        .await
        .unwrap();
    drop(controller);
}
