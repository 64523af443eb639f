//! Composite resource claims against a real API server and garbage collector.
//!
//! Each test makes its own v1 XRD offering claims (a group of its own),
//! Composition and namespace, so tests run side by side.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{self, api, cluster, condition, create, eventually, resource};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

fn xrd_resource() -> ApiResource {
    resource(
        "apiextensions.crossplane.io/v1",
        "CompositeResourceDefinition",
        "compositeresourcedefinitions",
    )
}

/// A v1 XRD: XR kind `XApp`, claim kind `App`, in group `<id>.example.org`.
fn xrd(group: &str, claim_names: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.crossplane.io/v1",
        "kind": "CompositeResourceDefinition",
        "metadata": {"name": format!("xapps.{group}")},
        "spec": {
            "group": group,
            "names": {"kind": "XApp", "plural": "xapps"},
            "claimNames": claim_names,
            "connectionSecretKeys": ["password", "image"],
            "versions": [{
                "name": "v1alpha1", "served": true, "referenceable": true,
                "additionalPrinterColumns": [{"name": "IMAGE", "type": "string", "jsonPath": ".spec.image"}],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "required": ["image"], "properties": {
                            "image": {"type": "string"},
                        }},
                        "status": {"type": "object", "properties": {"address": {"type": "string"}}},
                    },
                }},
            }],
        },
    })
}

/// Composes ConfigMaps in `namespace` from `spec.image` and the XR's
/// connection Secret namespace, reports `status.address`, and publishes a
/// password and the image as connection details.
fn composition(group: &str, name: &str, namespace: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.crossplane.io/v1",
        "kind": "Composition",
        "metadata": {"name": name},
        "spec": {
            "compositeTypeRef": {"apiVersion": format!("{group}/v1alpha1"), "kind": "XApp"},
            "writeConnectionSecretsToNamespace": namespace,
            "mode": "Pipeline",
            "pipeline": [{
                "step": "compose",
                "functionRef": {"name": "function-patch-and-transform"},
                "input": {
                    "apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources",
                    "resources": [{
                        "name": "config",
                        "base": {"apiVersion": "v1", "kind": "ConfigMap",
                                 "metadata": {"namespace": namespace}, "data": {}},
                        "readinessChecks": [{"type": "None"}],
                        "patches": [
                            {"type": "FromCompositeFieldPath", "fromFieldPath": "spec.image", "toFieldPath": "data.image"},
                            {"type": "ToCompositeFieldPath", "fromFieldPath": "data.image", "toFieldPath": "status.address"},
                            {"type": "FromCompositeFieldPath", "fromFieldPath": "spec.writeConnectionSecretToRef.namespace", "toFieldPath": "data.secretNamespace"},
                        ],
                        "connectionDetails": [
                            {"name": "password", "type": "FromValue", "value": "s3cret"},
                            {"name": "image", "type": "FromFieldPath", "fromFieldPath": "data.image"},
                        ],
                    }],
                },
            }],
        },
    })
}

/// A test's own claim API.
struct Claims {
    client: Client,
    group: String,
    namespace: String,
    claim: ApiResource,
    xr: ApiResource,
}

impl Claims {
    async fn new(id: &str) -> Claims {
        let cluster = cluster();
        let client = cluster.client().await;
        let namespace = cluster.namespace(id).await;
        let group = format!("{id}.example.org");
        create(
            &client,
            &xrd(&group, json!({"kind": "App", "plural": "apps"})),
        )
        .await;
        create(
            &client,
            &composition(&group, &format!("xapp-{id}"), &namespace),
        )
        .await;
        let claims = Claims {
            client,
            claim: resource(&format!("{group}/v1alpha1"), "App", "apps"),
            xr: resource(&format!("{group}/v1alpha1"), "XApp", "xapps"),
            group,
            namespace,
        };
        claims.xrd_condition("Offered", "True").await;
        claims
    }

    async fn xrd_condition(&self, type_: &str, status: &str) -> Value {
        let xrds = api(&self.client, &xrd_resource(), None);
        let name = format!("xapps.{}", self.group);
        eventually(&format!("XRD {type_}={status}"), || async {
            let xrd = serde_json::to_value(xrds.get_opt(&name).await.ok()??).unwrap();
            (condition(&xrd, type_)?["status"] == status).then_some(xrd)
        })
        .await
    }

    fn claims(&self) -> Api<DynamicObject> {
        api(&self.client, &self.claim, Some(&self.namespace))
    }

    fn xrs(&self) -> Api<DynamicObject> {
        api(&self.client, &self.xr, None)
    }

    fn config_maps(&self) -> Api<DynamicObject> {
        api(
            &self.client,
            &resource("v1", "ConfigMap", "configmaps"),
            Some(&self.namespace),
        )
    }

    async fn create_claim(&self, name: &str, spec: Value) -> Value {
        let claim = json!({
            "apiVersion": self.claim.api_version, "kind": "App",
            "metadata": {"name": name, "namespace": self.namespace, "labels": {"team": "a"}},
            "spec": spec,
        });
        create(&self.client, &claim).await
    }

    async fn claim(&self, name: &str) -> Option<Value> {
        support::get(&self.claims(), name).await
    }

    async fn xr(&self, name: &str) -> Option<Value> {
        support::get(&self.xrs(), name).await
    }

    /// Waits until the claim's condition `type_` has `status`, returning the claim.
    async fn condition(&self, name: &str, type_: &str, status: &str) -> Value {
        eventually(&format!("claim {name}: {type_}={status}"), || async {
            let claim = self.claim(name).await?;
            (condition(&claim, type_)?["status"] == status).then_some(claim)
        })
        .await
    }

    /// Waits until the claim is bound, returning its XR.
    async fn bound_xr(&self, claim: &str) -> Value {
        eventually(&format!("claim {claim} to be bound"), || async {
            let claim = self.claim(claim).await?;
            let name = claim
                .pointer("/spec/resourceRef/name")?
                .as_str()?
                .to_string();
            self.xr(&name).await
        })
        .await
    }

    /// The ConfigMaps composed for the XR.
    async fn composed(&self, xr: &str) -> Vec<Value> {
        let params = ListParams::default().labels(&format!("crossplane.io/composite={xr}"));
        self.config_maps()
            .list(&params)
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|o| serde_json::to_value(o).unwrap())
            .collect()
    }
}

#[tokio::test]
async fn claim_crd_is_namespaced_with_printer_columns_and_the_xrd_is_offered() {
    let claims = Claims::new("claimcrd").await;
    let crds: Api<CustomResourceDefinition> = Api::all(claims.client.clone());
    let crd = crds.get(&format!("apps.{}", claims.group)).await.unwrap();
    let crd = serde_json::to_value(crd).unwrap();
    assert_eq!(crd["spec"]["scope"], "Namespaced");
    assert_eq!(crd["spec"]["names"]["categories"], json!(["claim"]));
    let version = &crd["spec"]["versions"][0];
    let columns: Vec<&str> = version["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        columns,
        ["IMAGE", "SYNCED", "READY", "CONNECTION-SECRET", "AGE"]
    );
    let spec = &version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
    assert_eq!(
        spec["compositeDeletePolicy"],
        json!({"type": "string", "enum": ["Background", "Foreground"], "default": "Background"})
    );
    for field in [
        "compositionRef",
        "compositionSelector",
        "compositionRevisionRef",
        "compositionRevisionSelector",
        "compositionUpdatePolicy",
        "resourceRef",
        "writeConnectionSecretToRef",
        "image",
    ] {
        assert!(spec.get(field).is_some(), "claim spec has {field}");
    }

    let xrd = claims.xrd_condition("Offered", "True").await;
    assert_eq!(
        condition(&xrd, "Offered").unwrap()["reason"],
        "WatchingCompositeResourceClaim"
    );
    assert_eq!(
        xrd["status"]["controllers"]["compositeResourceClaimType"],
        json!({"apiVersion": format!("{}/v1alpha1", claims.group), "kind": "App"})
    );
}

#[tokio::test]
async fn claim_names_that_reuse_xr_names_are_rejected() {
    let cluster = cluster();
    let client = cluster.client().await;
    let cases = [
        (
            "conflictkind",
            json!({"kind": "XApp", "plural": "apps"}),
            "XApp",
        ),
        (
            "conflictplural",
            json!({"kind": "App", "plural": "xapps"}),
            "xapps",
        ),
    ];
    let xrds = api(&client, &xrd_resource(), None);
    for (id, names, conflicting) in cases {
        let group = format!("{id}.example.org");
        create(&client, &xrd(&group, names)).await;
        let want = format!(
            "cannot render composite resource claim CustomResourceDefinition: invalid resource claim names: \"{conflicting}\" conflicts with composite resource name"
        );
        let name = format!("xapps.{group}");
        eventually(
            &format!("{id}: Synced=False naming the conflict"),
            || async {
                let xrd = serde_json::to_value(xrds.get_opt(&name).await.ok()??).unwrap();
                (condition(&xrd, "Synced")?["message"] == want.as_str()).then_some(())
            },
        )
        .await;
    }
}

#[tokio::test]
async fn a_claim_binds_a_new_xr_that_follows_its_spec_and_is_ready_with_connection_details() {
    let claims = Claims::new("claimbind").await;
    claims
        .create_claim(
            "app",
            json!({"image": "one", "writeConnectionSecretToRef": {"name": "app-conn"}}),
        )
        .await;
    let xr = claims.bound_xr("app").await;
    let xr_name = xr["metadata"]["name"].as_str().unwrap().to_string();
    assert!(xr_name.starts_with("app-"), "{xr_name}");
    assert_eq!(
        xr["spec"]["claimRef"],
        json!({"apiVersion": claims.claim.api_version, "kind": "App", "name": "app", "namespace": claims.namespace})
    );
    assert_eq!(xr["metadata"]["labels"]["crossplane.io/claim-name"], "app");
    assert_eq!(
        xr["metadata"]["labels"]["crossplane.io/claim-namespace"],
        claims.namespace.as_str()
    );
    assert_eq!(xr["metadata"]["labels"]["team"], "a");
    assert_eq!(xr["spec"]["image"], "one");
    for claim_only in ["compositeDeletePolicy", "resourceRef"] {
        assert!(
            xr["spec"].get(claim_only).is_none(),
            "{claim_only} stays on the claim"
        );
    }
    assert_ne!(
        xr["spec"]["writeConnectionSecretToRef"]["name"], "app-conn",
        "the claim's Secret reference stays on the claim"
    );

    let claim = claims.condition("app", "Ready", "True").await;
    assert_eq!(condition(&claim, "Ready").unwrap()["reason"], "Available");
    assert_eq!(condition(&claim, "Synced").unwrap()["status"], "True");
    assert_eq!(
        claim["spec"]["resourceRef"],
        json!({"apiVersion": claims.xr.api_version, "kind": "XApp", "name": xr_name})
    );
    assert_eq!(
        claim["spec"]["compositionRef"]["name"], "xapp-claimbind",
        "the XR's Composition is recorded on the claim"
    );
    assert_eq!(
        claim["status"]["address"], "one",
        "the XR's status is mirrored"
    );
    let composed = claims.composed(&xr_name).await;
    assert_eq!(composed.len(), 1);
    assert_eq!(composed[0]["data"]["image"], "one");
    assert_eq!(
        composed[0]["data"]["secretNamespace"],
        claims.namespace.as_str(),
        "the XR's connection Secret reference is defaulted before its pipeline runs"
    );

    let secrets: Api<Secret> = Api::namespaced(claims.client.clone(), &claims.namespace);
    let secret = eventually("the claim's connection secret", || async {
        let secret = secrets.get_opt("app-conn").await.ok()??;
        let data = secret.data.clone()?;
        (data.get("password")?.0 == b"s3cret" && data.get("image")?.0 == b"one").then_some(secret)
    })
    .await;
    assert_eq!(
        secret.type_.as_deref(),
        Some("connection.crossplane.io/v1alpha1")
    );
    let owner = &secret.metadata.owner_references.unwrap()[0];
    assert_eq!(owner.kind, "App");
    assert_eq!(owner.controller, Some(true));

    claims
        .claims()
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"image": "two"}})),
        )
        .await
        .unwrap();
    eventually(
        "the claim's edit to reach the composed resource",
        || async {
            let composed = claims.composed(&xr_name).await;
            (composed.first()?["data"]["image"] == "two").then_some(())
        },
    )
    .await;
    eventually(
        "the XR's new status and details to reach the claim",
        || async {
            let claim = claims.claim("app").await?;
            let secret = secrets.get_opt("app-conn").await.ok()??;
            let image = secret.data?.get("image")?.0.clone();
            (claim["status"]["address"] == "two" && image == b"two").then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn binding_an_xr_bound_to_another_claim_is_refused() {
    let claims = Claims::new("claimsteal").await;
    claims.create_claim("owner", json!({"image": "one"})).await;
    let xr = claims.bound_xr("owner").await;
    let xr_name = xr["metadata"]["name"].as_str().unwrap();
    claims
        .create_claim(
            "thief",
            json!({"image": "two", "resourceRef": {"apiVersion": claims.xr.api_version, "kind": "XApp", "name": xr_name}}),
        )
        .await;
    let thief = claims.condition("thief", "Synced", "False").await;
    assert_eq!(
        condition(&thief, "Synced").unwrap()["message"],
        format!(
            "refusing to operate on composite resource \"{xr_name}\" that is not bound to this claim: bound to claim \"owner\""
        )
    );
    let xr = claims.xr(xr_name).await.unwrap();
    assert_eq!(xr["spec"]["image"], "one", "the XR is left alone");
    assert_eq!(xr["spec"]["claimRef"]["name"], "owner");
}

#[tokio::test]
async fn deleting_a_claim_deletes_its_xr_and_composed_resources() {
    let claims = Claims::new("claimdelete").await;
    for policy in ["Background", "Foreground"] {
        let name = format!("app-{}", policy.to_lowercase());
        claims
            .create_claim(
                &name,
                json!({"image": "one", "compositeDeletePolicy": policy}),
            )
            .await;
        claims.condition(&name, "Ready", "True").await;
        let xr = claims.bound_xr(&name).await;
        let xr_name = xr["metadata"]["name"].as_str().unwrap().to_string();
        assert_eq!(claims.composed(&xr_name).await.len(), 1, "{policy}");
        claims
            .claims()
            .delete(&name, &DeleteParams::default())
            .await
            .unwrap();
        eventually(
            &format!("{policy}: the claim, its XR and composed resources to be gone"),
            || async {
                let gone = claims.claim(&name).await.is_none()
                    && claims.xr(&xr_name).await.is_none()
                    && claims.composed(&xr_name).await.is_empty();
                gone.then_some(())
            },
        )
        .await;
    }
}

#[tokio::test]
async fn deleting_the_xrd_deletes_claims_and_the_claim_crd() {
    let claims = Claims::new("claimxrd").await;
    claims.create_claim("app", json!({"image": "one"})).await;
    claims.condition("app", "Ready", "True").await;
    let xr = claims.bound_xr("app").await;
    let xr_name = xr["metadata"]["name"].as_str().unwrap().to_string();
    let xrds = api(&claims.client, &xrd_resource(), None);
    let xrd_name = format!("xapps.{}", claims.group);
    xrds.delete(&xrd_name, &DeleteParams::default())
        .await
        .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(claims.client.clone());
    let claim_crd = format!("apps.{}", claims.group);
    eventually("the claim, XR, CRDs and XRD to be gone", || async {
        let composed_gone = claims
            .config_maps()
            .list(&ListParams::default().labels(&format!("crossplane.io/composite={xr_name}")))
            .await
            .ok()?
            .items
            .is_empty();
        let gone = composed_gone
            && crds.get_opt(&claim_crd).await.ok()?.is_none()
            && crds.get_opt(&xrd_name).await.ok()?.is_none()
            && xrds.get_opt(&xrd_name).await.ok()?.is_none();
        gone.then_some(())
    })
    .await;
}

#[tokio::test]
async fn removing_claim_names_withdraws_the_claim_crd_and_its_claims() {
    let claims = Claims::new("claimwithdraw").await;
    claims.create_claim("app", json!({"image": "one"})).await;
    let xr = claims.bound_xr("app").await;
    let xr_name = xr["metadata"]["name"].as_str().unwrap().to_string();
    let xrds = api(&claims.client, &xrd_resource(), None);
    let xrd_name = format!("xapps.{}", claims.group);
    xrds.patch(
        &xrd_name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"claimNames": null}})),
    )
    .await
    .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(claims.client.clone());
    let claim_crd = format!("apps.{}", claims.group);
    let xrd = eventually("the claim CRD to be withdrawn", || async {
        let xrd = serde_json::to_value(xrds.get_opt(&xrd_name).await.ok()??).unwrap();
        let withdrawn = crds.get_opt(&claim_crd).await.ok()?.is_none()
            && condition(&xrd, "Offered").is_none()
            && claims.xr(&xr_name).await.is_none();
        withdrawn.then_some(xrd)
    })
    .await;
    assert!(
        xrd.pointer("/status/controllers/compositeResourceClaimType")
            .is_none(),
        "{xrd}"
    );
    assert_eq!(condition(&xrd, "Established").unwrap()["status"], "True");
}

/// A claim whose XR composes a managed resource that publishes its
/// connection details into the providers' namespace (the v1 pattern,
/// `writeConnectionSecretsToNamespace: crossplane-system`): the Secret the
/// "provider" (this test) writes there, controlled by the managed resource,
/// is read although the claim's tenant may not read that namespace, and its
/// details reach the claim's Secret, at the XR's next poll, which its
/// `crossplane.io/poll-interval` annotation makes a second.
#[tokio::test]
async fn a_composed_resources_own_connection_secret_reaches_the_claim_from_any_namespace() {
    let cluster = cluster();
    let client = cluster.client().await;
    let id = "claimconn";
    let group = format!("{id}.example.org");
    let tenant = cluster.namespace(id).await;
    let providers = cluster.namespace(&format!("{id}-system")).await;
    let database = resource(&format!("{group}/v1"), "Database", "databases");
    create(
        &client,
        &json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("databases.{group}")},
            "spec": {
                "group": group, "scope": "Cluster",
                "names": {"kind": "Database", "plural": "databases", "singular": "database", "listKind": "DatabaseList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}],
            },
        }),
    )
    .await;
    let databases = api(&client, &database, None);
    eventually("the Database kind is served", || async {
        databases.list(&ListParams::default()).await.ok()
    })
    .await;
    create(
        &client,
        &xrd(&group, json!({"kind": "App", "plural": "apps"})),
    )
    .await;
    create(
        &client,
        &json!({
            "apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
            "metadata": {"name": format!("xapp-{id}")},
            "spec": {
                "compositeTypeRef": {"apiVersion": format!("{group}/v1alpha1"), "kind": "XApp"},
                "writeConnectionSecretsToNamespace": providers,
                "mode": "Pipeline",
                "pipeline": [{
                    "step": "compose",
                    "functionRef": {"name": "function-patch-and-transform"},
                    "input": {
                        "apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources",
                        "resources": [{
                            "name": "database",
                            "base": {"apiVersion": format!("{group}/v1"), "kind": "Database",
                                     "spec": {"writeConnectionSecretToRef": {"namespace": providers}}},
                            "readinessChecks": [{"type": "None"}],
                            "patches": [{"type": "FromCompositeFieldPath", "fromFieldPath": "metadata.uid",
                                         "toFieldPath": "spec.writeConnectionSecretToRef.name",
                                         "transforms": [{"type": "string", "string": {"type": "Format", "fmt": "%s-database"}}]}],
                            "connectionDetails": [
                                {"name": "password", "type": "FromConnectionSecretKey", "fromConnectionSecretKey": "password"},
                            ],
                        }],
                    },
                }],
            },
        }),
    )
    .await;
    let xrds = api(&client, &xrd_resource(), None);
    eventually("the XRD offered", || async {
        let xrd =
            serde_json::to_value(xrds.get_opt(&format!("xapps.{group}")).await.ok()??).unwrap();
        (condition(&xrd, "Offered")?["status"] == "True").then_some(())
    })
    .await;
    create(
        &client,
        &json!({
            "apiVersion": format!("{group}/v1alpha1"), "kind": "App",
            // The XR polls every second (the annotation reaches it from
            // the claim): a composed resource's Secret is not watched.
            "metadata": {"name": "app", "namespace": tenant,
                "annotations": {"crossplane.io/poll-interval": "1s"}},
            "spec": {"image": "one", "writeConnectionSecretToRef": {"name": "app-conn"}},
        }),
    )
    .await;

    let composed = eventually("the composed Database", || async {
        let params = ListParams::default().labels("crossplane.io/claim-name=app");
        let listed = databases.list(&params).await.ok()?;
        let found = listed.items.into_iter().find(|d| {
            d.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("crossplane.io/claim-namespace"))
                == Some(&tenant)
        })?;
        Some(serde_json::to_value(found).unwrap())
    })
    .await;
    let secret_name = composed["spec"]["writeConnectionSecretToRef"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let provider_secrets: Api<Secret> = Api::namespaced(client.clone(), &providers);
    // As a provider writes it: controlled by the managed resource.
    let provider_secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": secret_name, "namespace": providers, "ownerReferences": [{
            "apiVersion": database.api_version, "kind": "Database",
            "name": composed["metadata"]["name"], "uid": composed["metadata"]["uid"],
            "controller": true,
        }]},
        "stringData": {"password": "s3cret"},
    });
    let claim_secrets: Api<Secret> = Api::namespaced(client.clone(), &tenant);
    let claim_password = || async {
        let secret = claim_secrets.get_opt("app-conn").await.ok()??;
        Some(secret.data?.get("password")?.0.clone())
    };

    let claims = api(
        &client,
        &resource(&format!("{group}/v1alpha1"), "App", "apps"),
        Some(&tenant),
    );
    eventually("the claim Ready", || async {
        let claim = support::get(&claims, "app").await?;
        (condition(&claim, "Ready")?["status"] == "True").then_some(())
    })
    .await;

    provider_secrets
        .patch(
            &secret_name,
            &PatchParams::apply("provider-test").force(),
            &Patch::Apply(provider_secret),
        )
        .await
        .unwrap();
    let written = std::time::Instant::now();
    let password = eventually("the provider's connection details at the claim", || async {
        claim_password().await.filter(|p| p == b"s3cret")
    })
    .await;
    assert_eq!(password, b"s3cret");
    // Well before the controller's own poll (60 s).
    assert!(
        written.elapsed() < std::time::Duration::from_secs(30),
        "the XR's 1s poll brought the details: {:?}",
        written.elapsed()
    );
}
