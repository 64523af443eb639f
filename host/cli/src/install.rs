//! `plait install`: the objects that run plait in a cluster (the files of
//! `deploy/`), printed or server-side applied.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::InstallArgs;
use crate::files;

const NAMESPACE_YAML: &str = include_str!("../../../deploy/base/namespace.yaml");
const RBAC_YAML: &str = include_str!("../../../deploy/base/rbac.yaml");
const DEPLOYMENT_YAML: &str = include_str!("../../../deploy/base/deployment.yaml");
/// `deploy/components/webhook` (what `deploy/webhook` adds to the base):
/// its objects, and the component whose patch makes the Deployment serve
/// the webhook.
const WEBHOOK_COMPONENT_YAML: &str =
    include_str!("../../../deploy/components/webhook/kustomization.yaml");
const WEBHOOK_FILES: [(&str, &str); 2] = [
    (
        "components/webhook/service.yaml",
        include_str!("../../../deploy/components/webhook/service.yaml"),
    ),
    (
        "components/webhook/validatingwebhookconfiguration.yaml",
        include_str!("../../../deploy/components/webhook/validatingwebhookconfiguration.yaml"),
    ),
];
/// `deploy/components/cert-manager` (what `deploy/webhook/cert-manager`
/// adds to the webhook): the Certificate, and the component whose patch
/// makes the Deployment serve cert-manager's certificate.
const CERT_MANAGER_COMPONENT_YAML: &str =
    include_str!("../../../deploy/components/cert-manager/kustomization.yaml");
const CERT_MANAGER_FILES: [(&str, &str); 1] = [(
    "components/cert-manager/certificate.yaml",
    include_str!("../../../deploy/components/cert-manager/certificate.yaml"),
)];
/// The name of the webhook's Service and Certificate in `deploy/components`.
const WEBHOOK_NAME: &str = "plait-webhook";

/// The namespace, image and replicas the `deploy/` files are written with.
pub const DEFAULT_NAMESPACE: &str = "plait-system";
const FIELD_MANAGER: &str = "plait-install";

pub fn run(args: &InstallArgs) -> Result<String> {
    let objects = bundle(args)?;
    if args.print {
        return files::to_yaml_stream(&objects);
    }
    if args.image.is_none() {
        bail!(
            "--image is required: the controller image to run, as `make image REGISTRY=… TAG=…` \
             pushed it (REGISTRY/plait:TAG)"
        );
    }
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    tokio.block_on(apply(args, &objects))
}

/// Every object, in the order `deploy/base/kustomization.yaml` lists their
/// files, then the webhook's and cert-manager's components'.
pub fn bundle(args: &InstallArgs) -> Result<Vec<Value>> {
    if args.replicas == 0 {
        bail!("--replicas must be at least 1");
    }
    let mut objects = parse(NAMESPACE_YAML, "namespace.yaml")?;
    objects.extend(plait_kube::crds()?);
    objects.extend(parse(RBAC_YAML, "rbac.yaml")?);
    objects.extend(parse(DEPLOYMENT_YAML, "deployment.yaml")?);
    if !args.no_webhook {
        let mut components = vec![(
            WEBHOOK_COMPONENT_YAML,
            "components/webhook/kustomization.yaml",
        )];
        if args.cert_manager {
            components.push((
                CERT_MANAGER_COMPONENT_YAML,
                "components/cert-manager/kustomization.yaml",
            ));
        }
        for (kustomization, name) in components {
            let serving = deployment_patch(kustomization, name)?;
            for deployment in objects.iter_mut().filter(|o| o["kind"] == "Deployment") {
                for (path, value) in &serving {
                    append_at(deployment, path, value.clone())
                        .with_context(|| format!("deploy/{name}: patch {path}"))?;
                }
            }
        }
        for (name, text) in WEBHOOK_FILES {
            objects.extend(parse(text, name)?);
        }
        if args.cert_manager {
            for (name, text) in CERT_MANAGER_FILES {
                objects.extend(parse(text, name)?);
            }
        }
    }
    for object in &mut objects {
        customise(object, args);
    }
    Ok(objects)
}

/// The `add` operations of a component's Deployment patch, each a
/// path ending in `/-` (append to a list) and its value.
fn deployment_patch(kustomization: &str, name: &str) -> Result<Vec<(String, Value)>> {
    let kustomization = parse(kustomization, name)?;
    let patch = kustomization
        .first()
        .and_then(|k| k["patches"].as_array())
        .into_iter()
        .flatten()
        .find(|p| p.pointer("/target/kind") == Some(&json!("Deployment")))
        .and_then(|p| p["patch"].as_str())
        .with_context(|| format!("deploy/{name}: no Deployment patch"))?;
    let operations = parse(patch, name)?
        .into_iter()
        .next()
        .and_then(|ops| ops.as_array().cloned())
        .with_context(|| format!("deploy/{name}: the patch is not a list of operations"))?;
    operations
        .into_iter()
        .map(|op| match (op["op"].as_str(), op["path"].as_str()) {
            (Some("add"), Some(path)) => Ok((path.to_string(), op["value"].clone())),
            _ => bail!("deploy/{name}: only `add` operations are supported, not {op}"),
        })
        .collect()
}

/// Appends `value` to the list `path` (a JSON pointer ending in `/-`) names.
fn append_at(object: &mut Value, path: &str, value: Value) -> Result<()> {
    let list = path
        .strip_suffix("/-")
        .with_context(|| format!("{path} does not append to a list"))?;
    object
        .pointer_mut(list)
        .and_then(Value::as_array_mut)
        .with_context(|| format!("the Deployment has no list at {list}"))?
        .push(value);
    Ok(())
}

fn parse(text: &str, name: &str) -> Result<Vec<Value>> {
    plait_model::parse_documents(text, name).with_context(|| format!("deploy/{name}"))
}

fn customise(object: &mut Value, args: &InstallArgs) {
    let namespace = json!(args.namespace);
    if object.pointer("/metadata/namespace").is_some() {
        object["metadata"]["namespace"] = namespace.clone();
    }
    match object["kind"].as_str() {
        Some("Namespace") => object["metadata"]["name"] = namespace,
        Some("ClusterRoleBinding") => {
            if let Some(subjects) = object["subjects"].as_array_mut() {
                for subject in subjects {
                    subject["namespace"] = namespace.clone();
                }
            }
        }
        Some("Deployment") => {
            object["spec"]["replicas"] = json!(args.replicas);
            if let Some(image) = &args.image
                && let Some(containers) = object
                    .pointer_mut("/spec/template/spec/containers")
                    .and_then(Value::as_array_mut)
            {
                for container in containers {
                    container["image"] = json!(image);
                }
            }
        }
        Some("Certificate") => {
            object["spec"]["dnsNames"] = json!([format!("{WEBHOOK_NAME}.{}.svc", args.namespace)]);
        }
        Some("ValidatingWebhookConfiguration") => {
            // Otherwise plait writes its own CA into each webhook's caBundle.
            if args.cert_manager {
                object["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] =
                    json!(format!("{}/{WEBHOOK_NAME}", args.namespace));
            }
            if let Some(webhooks) = object["webhooks"].as_array_mut() {
                for webhook in webhooks {
                    webhook["clientConfig"]["service"]["namespace"] = namespace.clone();
                }
            }
        }
        _ => {}
    }
}

async fn apply(args: &InstallArgs, objects: &[Value]) -> Result<String> {
    let client = crate::controller::client(args.kubeconfig.as_deref()).await?;
    // CRDs first, and established, so that a rerun after an upgrade never
    // leaves the controller running against an API it does not know.
    plait_kube::install_crds(&client, Duration::from_secs(60)).await?;
    let cluster = plait_kube::KubeCluster::new(client, tokio::runtime::Handle::current());
    let mut applied = Vec::new();
    for object in objects {
        if object["kind"] == "CustomResourceDefinition" {
            continue;
        }
        let described = format!(
            "{} {}",
            object["kind"].as_str().unwrap_or("object"),
            object["metadata"]["name"].as_str().unwrap_or("")
        );
        cluster
            .apply_async(object, FIELD_MANAGER, false)
            .await
            .with_context(|| format!("cannot apply {described}"))?;
        applied.push(described);
    }
    Ok(format!(
        "installed plait's CRDs and {} in namespace {}\n",
        applied.join(", "),
        args.namespace
    ))
}
