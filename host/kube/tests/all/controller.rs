//! The controller against a real API server, garbage collector and all.
//!
//! One controller runs on the binary's shared cluster on its own thread; each test makes
//! its own XRD (a group of its own), Composition and namespace, so tests run
//! side by side without seeing each other's objects.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use crate::support::{
    self, COPY_REQUIRED, api, cluster, condition, create, eventually, resource, yaml,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use plait_model::composition_hash::{
    LABEL_COMPOSITION_HASH, LABEL_COMPOSITION_NAME, upstream_composition_hash,
    upstream_revision_hash_label, upstream_revision_name,
};
use plait_reconcile::compose::deterministic_name;
use serde_json::{Value, json};

/// A test's own copy of the getting-started API: group `<id>.example.org`.
struct App {
    client: Client,
    group: String,
    namespace: String,
    xr: ApiResource,
}

impl App {
    async fn new(id: &str, composition: Value) -> App {
        let cluster = cluster();
        let client = cluster.client().await;
        let namespace = cluster.namespace(id).await;
        let group = format!("{id}.example.org");
        let mut xrd = yaml("examples/getting-started/xrd.yaml");
        xrd["metadata"]["name"] = json!(format!("apps.{group}"));
        xrd["spec"]["group"] = json!(group);
        create(&client, &xrd).await;
        let mut composition = composition;
        composition["metadata"]["name"] = json!(format!("app-{id}"));
        composition["spec"]["compositeTypeRef"]["apiVersion"] = json!(format!("{group}/v1alpha1"));
        create(&client, &composition).await;
        let xr = resource(&format!("{group}/v1alpha1"), "App", "apps");
        let app = App {
            client,
            group,
            namespace,
            xr,
        };
        app.established().await;
        app
    }

    async fn established(&self) -> CustomResourceDefinition {
        let crds: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        let name = format!("apps.{}", self.group);
        eventually("the XR CRD to be established", || {
            let crds = crds.clone();
            let name = name.clone();
            async move {
                let crd = crds.get_opt(&name).await.ok()??;
                let established = crd
                    .status
                    .as_ref()?
                    .conditions
                    .as_ref()?
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True");
                established.then_some(crd)
            }
        })
        .await
    }

    fn xrs(&self) -> Api<DynamicObject> {
        api(&self.client, &self.xr, Some(&self.namespace))
    }

    async fn create_xr(&self, name: &str, spec: Value) -> Value {
        let xr = json!({
            "apiVersion": self.xr.api_version, "kind": "App",
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": spec,
        });
        create(&self.client, &xr).await
    }

    async fn xr(&self, name: &str) -> Option<Value> {
        support::get(&self.xrs(), name).await
    }

    /// Waits until the XR's condition `type_` has `status`, returning the XR.
    async fn condition(&self, name: &str, type_: &str, status: &str) -> Value {
        eventually(&format!("{name}: {type_}={status}"), || async {
            let xr = self.xr(name).await?;
            let found = condition(&xr, type_)?;
            (found["status"] == status).then_some(xr)
        })
        .await
    }

    fn composed(&self, api_version: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
        api(
            &self.client,
            &resource(api_version, kind, plural),
            Some(&self.namespace),
        )
    }
}

fn config_map_composition(names: &[&str]) -> Value {
    let resources: Vec<Value> = names
        .iter()
        .map(|n| {
            json!({
                "name": n,
                "base": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"resource": n}},
                // A ConfigMap has no conditions; it is ready once it exists.
                "readinessChecks": [{"type": "None"}],
                "patches": [{"type": "FromCompositeFieldPath", "fromFieldPath": "spec.image", "toFieldPath": "data.image"}],
            })
        })
        .collect();
    json!({
        "apiVersion": "apiextensions.crossplane.io/v1",
        "kind": "Composition",
        "metadata": {"name": "placeholder"},
        "spec": {
            "compositeTypeRef": {"apiVersion": "placeholder", "kind": "App"},
            "mode": "Pipeline",
            "pipeline": [{
                "step": "compose",
                "functionRef": {"name": "function-patch-and-transform"},
                "input": {"apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources", "resources": resources},
            }],
        },
    })
}

async fn config_map(app: &App, xr: &Value, name: &str) -> Option<Value> {
    let uid = xr["metadata"]["uid"].as_str()?;
    let xr_name = xr["metadata"]["name"].as_str()?;
    let cm_name = deterministic_name(&format!("{xr_name}-"), uid, name);
    app.composed("v1", "ConfigMap", "configmaps")
        .get_opt(&cm_name)
        .await
        .ok()?
        .map(|o| serde_json::to_value(o).unwrap())
}

#[tokio::test]
async fn xrd_becomes_an_established_crd_with_printer_columns() {
    let cases = [
        (
            "xrd-ns",
            "apiextensions.crossplane.io/v2",
            Some("Namespaced"),
            "Namespaced",
            ".spec.crossplane.compositionRef.name",
        ),
        (
            "xrd-cluster",
            "apiextensions.crossplane.io/v2",
            Some("Cluster"),
            "Cluster",
            ".spec.crossplane.compositionRef.name",
        ),
        (
            "xrd-legacy",
            "apiextensions.crossplane.io/v1",
            None,
            "Cluster",
            ".spec.compositionRef.name",
        ),
    ];
    let client = cluster().client().await;
    for (id, api_version, scope, crd_scope, composition_path) in cases {
        let group = format!("{id}.example.org");
        let mut xrd = yaml("examples/getting-started/xrd.yaml");
        xrd["apiVersion"] = json!(api_version);
        xrd["metadata"]["name"] = json!(format!("apps.{group}"));
        xrd["spec"]["group"] = json!(group);
        match scope {
            Some(s) => xrd["spec"]["scope"] = json!(s),
            None => {
                xrd["spec"].as_object_mut().unwrap().remove("scope");
            }
        }
        create(&client, &xrd).await;
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        let name = format!("apps.{group}");
        let crd = eventually(&format!("{id}: CRD established"), || async {
            let crd = crds.get_opt(&name).await.ok()??;
            crd.status
                .as_ref()?
                .conditions
                .as_ref()?
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
                .then_some(crd)
        })
        .await;
        assert_eq!(crd.spec.scope, crd_scope, "{id}");
        assert!(
            crd.spec
                .names
                .categories
                .as_ref()
                .unwrap()
                .contains(&"composite".to_string()),
            "{id}"
        );
        let version = &crd.spec.versions[0];
        assert!(
            version.storage && version.subresources.as_ref().unwrap().status.is_some(),
            "{id}"
        );
        let columns: Vec<(&str, &str)> = version
            .additional_printer_columns
            .as_ref()
            .unwrap()
            .iter()
            .map(|c| (c.name.as_str(), c.json_path.as_str()))
            .collect();
        assert_eq!(
            columns,
            [
                ("SYNCED", ".status.conditions[?(@.type=='Synced')].status"),
                ("READY", ".status.conditions[?(@.type=='Ready')].status"),
                ("COMPOSITION", composition_path),
                (
                    "COMPOSITIONREVISION",
                    &composition_path.replace("compositionRef", "compositionRevisionRef")[..]
                ),
                ("AGE", ".metadata.creationTimestamp"),
            ],
            "{id}"
        );
        let xrds = api(
            &client,
            &resource(
                "apiextensions.crossplane.io/v1",
                "CompositeResourceDefinition",
                "compositeresourcedefinitions",
            ),
            None,
        );
        eventually(&format!("{id}: XRD Established"), || async {
            let xrd = serde_json::to_value(xrds.get(&name).await.ok()?).ok()?;
            (condition(&xrd, "Established")?["status"] == "True").then_some(())
        })
        .await;
    }
}

#[tokio::test]
async fn getting_started_xr_is_composed_with_names_owners_and_refs() {
    let app = App::new("started", yaml("examples/getting-started/composition.yaml")).await;
    app.create_xr(
        "hello",
        json!({"image": "ghcr.io/example/hello:1.4.2", "tier": "large"}),
    )
    .await;
    let xr = app.condition("hello", "Synced", "True").await;
    let uid = xr["metadata"]["uid"].as_str().unwrap();
    let refs = xr
        .pointer("/spec/crossplane/resourceRefs")
        .unwrap()
        .as_array()
        .unwrap();
    let want_names = [
        (
            "apps/v1",
            "Deployment",
            "deployments",
            deterministic_name("hello-", uid, "deployment"),
        ),
        (
            "v1",
            "Service",
            "services",
            deterministic_name("hello-", uid, "service"),
        ),
    ];
    assert_eq!(refs.len(), 2, "{refs:?}");
    for (api_version, kind, plural, name) in &want_names {
        assert!(
            refs.iter().any(|r| r["kind"] == *kind
                && r["name"] == name.as_str()
                && r.get("namespace").is_none()),
            "{kind} {name} in {refs:?}"
        );
        let object = app
            .composed(api_version, kind, plural)
            .get(name)
            .await
            .unwrap();
        let owner = &object.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.uid.as_str(), owner.controller),
            (uid, Some(true)),
            "{kind}"
        );
        let labels = object.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["crossplane.io/composite"], "hello");
        assert_eq!(labels["app.kubernetes.io/name"], "hello");
    }
    let deployment = app
        .composed("apps/v1", "Deployment", "deployments")
        .get(&want_names[0].3)
        .await
        .unwrap();
    let container = &deployment.data["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "ghcr.io/example/hello:1.4.2");
    assert_eq!(container["resources"]["limits"]["memory"], "2Gi");
    assert_eq!(deployment.data["spec"]["replicas"], 2, "XRD schema default");
    assert_eq!(
        xr.pointer("/spec/crossplane/compositionRef/name").unwrap(),
        "app-started"
    );
    // The address comes back from the observed Service, so a later
    // reconcile than the first one that synced writes it.
    let want = format!("hello.{}.svc.cluster.local", app.namespace);
    eventually("status.address from the observed Service", || async {
        let xr = app.xr("hello").await?;
        (xr["status"]["address"] == want.as_str()).then_some(())
    })
    .await;
}

#[tokio::test]
async fn xr_is_ready_once_composed_resources_are() {
    let app = App::new("ready", config_map_composition(&["a", "b"])).await;
    app.create_xr("r", json!({"image": "one"})).await;
    let xr = app.condition("r", "Ready", "True").await;
    assert_eq!(condition(&xr, "Synced").unwrap()["status"], "True");
    assert_eq!(
        condition(&xr, "Ready").unwrap()["observedGeneration"],
        xr["metadata"]["generation"]
    );
}

#[tokio::test]
async fn composed_resources_follow_the_xr_and_drift_is_reverted() {
    let app = App::new("drift", config_map_composition(&["a", "b"])).await;
    app.create_xr("d", json!({"image": "one"})).await;
    let xr = app.condition("d", "Synced", "True").await;
    let cms = app.composed("v1", "ConfigMap", "configmaps");
    let a = config_map(&app, &xr, "a").await.unwrap();
    let a_name = a["metadata"]["name"].as_str().unwrap().to_string();
    let b = config_map(&app, &xr, "b").await.unwrap();
    let b_name = b["metadata"]["name"].as_str().unwrap().to_string();

    // Each case changes the world, then waits for the controller to restore it.
    enum Change {
        XrSpec,
        EditComposed,
        DeleteComposed,
    }
    for change in [Change::XrSpec, Change::EditComposed, Change::DeleteComposed] {
        let (what, want_image) = match change {
            Change::XrSpec => {
                let patch = json!({"spec": {"image": "two"}});
                app.xrs()
                    .patch("d", &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .unwrap();
                ("composed resources follow the XR", "two")
            }
            Change::EditComposed => {
                let patch = json!({"data": {"image": "edited"}});
                cms.patch(&a_name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .unwrap();
                ("an edited composed resource is reverted", "two")
            }
            Change::DeleteComposed => {
                let before = b["metadata"]["uid"].clone();
                cms.delete(&b_name, &DeleteParams::default()).await.unwrap();
                eventually("the deleted composed resource to be recreated", || async {
                    let b = cms.get_opt(&b_name).await.ok()??;
                    (serde_json::to_value(&b.metadata.uid).ok()? != before).then_some(())
                })
                .await;
                ("a deleted composed resource is recreated", "two")
            }
        };
        for name in [&a_name, &b_name] {
            eventually(what, || async {
                let cm = cms.get_opt(name).await.ok()??;
                (cm.data["data"]["image"] == want_image).then_some(())
            })
            .await;
        }
    }
}

#[tokio::test]
async fn resources_removed_from_the_composition_are_deleted() {
    let app = App::new("gc", config_map_composition(&["keep", "drop"])).await;
    app.create_xr("g", json!({"image": "one"})).await;
    let xr = app.condition("g", "Synced", "True").await;
    let drop = config_map(&app, &xr, "drop").await.unwrap();
    let drop_name = drop["metadata"]["name"].as_str().unwrap().to_string();
    let mut composition = config_map_composition(&["keep"]);
    composition["spec"]["compositeTypeRef"]["apiVersion"] = json!(app.xr.api_version);
    let compositions = api(
        &app.client,
        &resource(
            "apiextensions.crossplane.io/v1",
            "Composition",
            "compositions",
        ),
        None,
    );
    let patch = json!({"spec": composition["spec"]});
    compositions
        .patch("app-gc", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let cms = app.composed("v1", "ConfigMap", "configmaps");
    eventually("the dropped resource to be deleted", || async {
        cms.get_opt(&drop_name).await.ok()?.is_none().then_some(())
    })
    .await;
    let xr = eventually("resourceRefs to list only the kept resource", || async {
        let xr = app.xr("g").await?;
        let refs = xr
            .pointer("/spec/crossplane/resourceRefs")?
            .as_array()?
            .len();
        (refs == 1).then_some(xr)
    })
    .await;
    assert!(config_map(&app, &xr, "keep").await.is_some());
}

#[tokio::test]
async fn a_failing_step_keeps_resources_and_names_the_step() {
    let app = App::new("failing", config_map_composition(&["a"])).await;
    app.create_xr("f", json!({"image": "one"})).await;
    let xr = app.condition("f", "Synced", "True").await;
    let a = config_map(&app, &xr, "a").await.unwrap();
    let mut broken = config_map_composition(&["a"]);
    broken["spec"]["pipeline"][0]["step"] = json!("broken-step");
    broken["spec"]["pipeline"][0]["input"]["resources"][0]["patches"][0]["transforms"] =
        json!([{"type": "math", "math": {"type": "Multiply", "multiply": 2}}]);
    let compositions = api(
        &app.client,
        &resource(
            "apiextensions.crossplane.io/v1",
            "Composition",
            "compositions",
        ),
        None,
    );
    let patch = json!({"spec": {"pipeline": broken["spec"]["pipeline"]}});
    compositions
        .patch(
            "app-failing",
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .unwrap();
    let xr = app.condition("f", "Synced", "False").await;
    let message = condition(&xr, "Synced").unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains("broken-step"), "{message}");
    let still = config_map(&app, &xr, "a").await.unwrap();
    assert_eq!(still["metadata"]["uid"], a["metadata"]["uid"]);
}

#[tokio::test]
async fn a_paused_xr_is_left_alone_until_unpaused() {
    let app = App::new("paused", config_map_composition(&["a"])).await;
    app.create_xr("p", json!({"image": "one"})).await;
    let xr = app.condition("p", "Synced", "True").await;
    let a = config_map(&app, &xr, "a").await.unwrap();
    let a_name = a["metadata"]["name"].as_str().unwrap().to_string();
    let pause = json!({"metadata": {"annotations": {"crossplane.io/paused": "true"}}, "spec": {"image": "two"}});
    app.xrs()
        .patch("p", &PatchParams::default(), &Patch::Merge(&pause))
        .await
        .unwrap();
    let paused = app.condition("p", "Synced", "False").await;
    assert_eq!(
        condition(&paused, "Synced").unwrap()["reason"],
        "ReconcilePaused"
    );
    let cms = app.composed("v1", "ConfigMap", "configmaps");
    assert_eq!(cms.get(&a_name).await.unwrap().data["data"]["image"], "one");
    let unpause = json!({"metadata": {"annotations": {"crossplane.io/paused": null}}});
    app.xrs()
        .patch("p", &PatchParams::default(), &Patch::Merge(&unpause))
        .await
        .unwrap();
    eventually("the unpaused XR to be composed again", || async {
        let cm = cms.get_opt(&a_name).await.ok()??;
        (cm.data["data"]["image"] == "two").then_some(())
    })
    .await;
}

#[tokio::test]
async fn deleting_the_xr_then_the_xrd_removes_everything() {
    let app = App::new("delete", config_map_composition(&["a", "b"])).await;
    app.create_xr("x", json!({"image": "one"})).await;
    let xr = app.condition("x", "Synced", "True").await;
    let names: Vec<String> = ["a", "b"]
        .iter()
        .map(|n| deterministic_name("x-", xr["metadata"]["uid"].as_str().unwrap(), n))
        .collect();
    app.xrs()
        .delete("x", &DeleteParams::default())
        .await
        .unwrap();
    let cms = app.composed("v1", "ConfigMap", "configmaps");
    eventually("the XR and its composed resources to be gone", || async {
        if app.xr("x").await.is_some() {
            return None;
        }
        for name in &names {
            if cms.get_opt(name).await.ok()?.is_some() {
                return None;
            }
        }
        Some(())
    })
    .await;

    let xrds = api(
        &app.client,
        &resource(
            "apiextensions.crossplane.io/v1",
            "CompositeResourceDefinition",
            "compositeresourcedefinitions",
        ),
        None,
    );
    let name = format!("apps.{}", app.group);
    xrds.delete(&name, &DeleteParams::default()).await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(app.client.clone());
    eventually("the XRD and its CRD to be gone", || async {
        let crd_gone = crds.get_opt(&name).await.ok()?.is_none();
        let xrd_gone = xrds.get_opt(&name).await.ok()?.is_none();
        (crd_gone && xrd_gone).then_some(())
    })
    .await;
}

fn compositions(client: &Client) -> Api<DynamicObject> {
    api(
        client,
        &resource(
            "apiextensions.crossplane.io/v1",
            "Composition",
            "compositions",
        ),
        None,
    )
}

/// Merge-patches the test's Composition `app-<id>`.
async fn edit_composition(app: &App, id: &str, patch: Value) {
    compositions(&app.client)
        .patch(
            &format!("app-{id}"),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .unwrap();
}

/// Waits until the Composition `app-<id>` has revision `number`, returning its name.
async fn revision(app: &App, id: &str, number: i64) -> String {
    let revisions = api(
        &app.client,
        &resource(
            "apiextensions.crossplane.io/v1",
            "CompositionRevision",
            "compositionrevisions",
        ),
        None,
    );
    let selector = format!("crossplane.io/composition-name=app-{id}");
    eventually(&format!("revision {number} of app-{id}"), || async {
        let list = revisions
            .list(&kube::api::ListParams::default().labels(&selector))
            .await
            .ok()?;
        list.items
            .into_iter()
            .find(|r| r.data["spec"]["revision"] == number)
            .and_then(|r| r.metadata.name)
    })
    .await
}

/// The XR's `compositionRevisionRef`, once it names `want`.
async fn uses_revision(app: &App, xr: &str, want: &str) -> Value {
    eventually(&format!("{xr} to use revision {want}"), || async {
        let found = app.xr(xr).await?;
        (found.pointer("/spec/crossplane/compositionRevisionRef/name")? == want).then_some(found)
    })
    .await
}

/// Waits until the XR's ConfigMap `name` has `data.resource == want`.
async fn composes(app: &App, xr: &str, name: &str, want: &str) {
    eventually(&format!("{xr}'s {name} to say {want}"), || async {
        let found = app.xr(xr).await?;
        let cm = config_map(app, &found, name).await?;
        (cm["data"]["resource"] == want).then_some(())
    })
    .await;
}

/// The config-map Composition with its `a` resource saying `text`.
fn saying(text: &str) -> Value {
    let mut composition = config_map_composition(&["a"]);
    composition["spec"]["pipeline"][0]["input"]["resources"][0]["base"]["data"]["resource"] =
        json!(text);
    composition
}

#[tokio::test]
async fn an_edited_composition_gets_revision_2_and_automatic_xrs_follow_it() {
    let app = App::new("rev-auto", saying("first")).await;
    app.create_xr("auto", json!({"image": "one"})).await;
    let first = revision(&app, "rev-auto", 1).await;
    uses_revision(&app, "auto", &first).await;
    composes(&app, "auto", "a", "first").await;

    let mut edited = saying("second");
    edited["spec"]["compositeTypeRef"]["apiVersion"] = json!(app.xr.api_version);
    edit_composition(&app, "rev-auto", json!({"spec": edited["spec"]})).await;
    let second = revision(&app, "rev-auto", 2).await;
    assert_ne!(first, second);
    uses_revision(&app, "auto", &second).await;
    composes(&app, "auto", "a", "second").await;
}

/// Crossplane's revision of a Composition's current state, left without an
/// owner (as after a backup and restore, or before plait saw the
/// Composition): plait takes it over as it is, recording the digests its
/// steps run, and makes no revision of its own.
#[tokio::test]
async fn a_revision_crossplane_made_is_adopted_with_its_name_and_number() {
    let client = cluster().client().await;
    let mut composition = saying("crossplane");
    composition["metadata"]["name"] = json!("app-adopted");
    composition["spec"]["compositeTypeRef"]["apiVersion"] = json!("adopted.example.org/v1alpha1");
    // The Composition as the API server will store it, defaults and all.
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let stored = compositions(&client)
        .create(
            &dry_run,
            &serde_json::from_value(composition.clone()).unwrap(),
        )
        .await
        .unwrap();
    let stored = serde_json::to_value(&stored).unwrap();
    let hash = upstream_composition_hash(&stored).unwrap();
    let name = upstream_revision_name("app-adopted", &hash);
    let mut spec = stored["spec"].clone();
    spec["revision"] = json!(5);
    let made_by_crossplane = json!({
        "apiVersion": "apiextensions.crossplane.io/v1", "kind": "CompositionRevision",
        "metadata": {"name": name, "labels": {
            LABEL_COMPOSITION_NAME: "app-adopted",
            LABEL_COMPOSITION_HASH: upstream_revision_hash_label(&hash),
        }},
        "spec": spec,
    });
    create(&client, &made_by_crossplane).await;
    create(&client, &composition).await;

    let revisions = api(
        &client,
        &resource(
            "apiextensions.crossplane.io/v1",
            "CompositionRevision",
            "compositionrevisions",
        ),
        None,
    );
    let adopted = eventually("the revision to be adopted with its digests", || async {
        let found = revisions.get(&name).await.ok()?;
        let owned = found
            .metadata
            .owner_references
            .as_ref()?
            .iter()
            .any(|o| o.controller == Some(true) && o.name == "app-adopted");
        let recorded = found
            .metadata
            .annotations
            .as_ref()?
            .contains_key("functions.plait.dev/digests");
        (owned && recorded).then_some(found)
    })
    .await;
    assert_eq!(adopted.data["spec"]["revision"], 5);
    let managers: Vec<_> = adopted
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.as_deref())
        .collect();
    assert!(managers.contains(&"plait"), "managers: {managers:?}");
    // Another reconcile would have created any revision by now.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let selector = format!("{LABEL_COMPOSITION_NAME}=app-adopted");
    let all = revisions
        .list(&kube::api::ListParams::default().labels(&selector))
        .await
        .unwrap();
    let names: Vec<_> = all
        .items
        .iter()
        .filter_map(|r| r.metadata.name.clone())
        .collect();
    assert_eq!(names, vec![name]);
}

#[tokio::test]
async fn a_manual_xr_keeps_its_revision_until_its_ref_is_edited() {
    let app = App::new("rev-manual", saying("first")).await;
    app.create_xr(
        "pinned",
        json!({"image": "one", "crossplane": {"compositionUpdatePolicy": "Manual"}}),
    )
    .await;
    let first = revision(&app, "rev-manual", 1).await;
    uses_revision(&app, "pinned", &first).await;
    composes(&app, "pinned", "a", "first").await;

    let mut edited = saying("second");
    edited["spec"]["compositeTypeRef"]["apiVersion"] = json!(app.xr.api_version);
    edit_composition(&app, "rev-manual", json!({"spec": edited["spec"]})).await;
    let second = revision(&app, "rev-manual", 2).await;
    // An Automatic XR created now composes from revision 2: by the time it
    // has, the pinned XR has seen the new revision too.
    app.create_xr("follower", json!({"image": "one"})).await;
    composes(&app, "follower", "a", "second").await;
    let pinned = app.xr("pinned").await.unwrap();
    assert_eq!(
        pinned["spec"]["crossplane"]["compositionRevisionRef"]["name"],
        first.as_str()
    );
    assert_eq!(
        config_map(&app, &pinned, "a").await.unwrap()["data"]["resource"],
        "first"
    );

    let move_on = json!({"spec": {"crossplane": {"compositionRevisionRef": {"name": second}}}});
    app.xrs()
        .patch("pinned", &PatchParams::default(), &Patch::Merge(&move_on))
        .await
        .unwrap();
    composes(&app, "pinned", "a", "second").await;
}

#[tokio::test]
async fn revision_selectors_pick_the_newest_matching_revision_or_wait_for_one() {
    let mut stable = saying("stable");
    stable["metadata"]["labels"] = json!({"channel": "stable"});
    let app = App::new("rev-select", stable).await;
    let selecting = |channel: &str| json!({"image": "one", "crossplane": {"compositionRevisionSelector": {"matchLabels": {"channel": channel}}}});
    app.create_xr("on-stable", selecting("stable")).await;
    app.create_xr("on-nothing", selecting("nightly")).await;
    let first = revision(&app, "rev-select", 1).await;
    uses_revision(&app, "on-stable", &first).await;

    let mut dev = saying("dev");
    dev["spec"]["compositeTypeRef"]["apiVersion"] = json!(app.xr.api_version);
    edit_composition(
        &app,
        "rev-select",
        json!({"metadata": {"labels": {"channel": "dev"}}, "spec": dev["spec"]}),
    )
    .await;
    revision(&app, "rev-select", 2).await;
    app.create_xr("on-dev", selecting("dev")).await;
    composes(&app, "on-dev", "a", "dev").await;
    let on_stable = app.xr("on-stable").await.unwrap();
    assert_eq!(
        on_stable["spec"]["crossplane"]["compositionRevisionRef"]["name"],
        first.as_str()
    );
    assert_eq!(
        config_map(&app, &on_stable, "a").await.unwrap()["data"]["resource"],
        "stable"
    );

    let none = app.condition("on-nothing", "Synced", "False").await;
    let message = condition(&none, "Synced").unwrap()["message"]
        .as_str()
        .unwrap();
    assert_eq!(
        message,
        "cannot fetch Composition: no compatible CompositionRevisions found"
    );

    // It waits for a revision it can use, and the first one composes it.
    let mut nightly = saying("nightly");
    nightly["spec"]["compositeTypeRef"]["apiVersion"] = json!(app.xr.api_version);
    edit_composition(
        &app,
        "rev-select",
        json!({"metadata": {"labels": {"channel": "nightly"}}, "spec": nightly["spec"]}),
    )
    .await;
    revision(&app, "rev-select", 3).await;
    composes(&app, "on-nothing", "a", "nightly").await;
    app.condition("on-nothing", "Synced", "True").await;
}

#[tokio::test]
async fn a_spec_field_its_author_removes_is_not_kept_by_the_controller() {
    let app = App::new("ownership", config_map_composition(&["a"])).await;
    let author = PatchParams::apply("author");
    let apply = |spec: Value| {
        json!({
            "apiVersion": app.xr.api_version, "kind": "App",
            "metadata": {"name": "o", "namespace": app.namespace},
            "spec": spec,
        })
    };
    app.xrs()
        .patch(
            "o",
            &author,
            &Patch::Apply(&apply(json!({"image": "one", "replicas": 5}))),
        )
        .await
        .unwrap();
    app.condition("o", "Synced", "True").await;
    let xr = app.xr("o").await.unwrap();
    assert_eq!(xr["spec"]["replicas"], 5);

    app.xrs()
        .patch("o", &author, &Patch::Apply(&apply(json!({"image": "two"}))))
        .await
        .unwrap();
    // The ConfigMap following the new image shows the controller has
    // reconciled (and applied) since.
    let xr = eventually("the XR to be composed with image two", || async {
        let xr = app.xr("o").await?;
        let cm = config_map(&app, &xr, "a").await?;
        (cm["data"]["image"] == "two").then_some(xr)
    })
    .await;
    assert_eq!(
        xr["spec"]["replicas"], 2,
        "the removed field is defaulted again"
    );
    let managers: Vec<&str> = xr["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["manager"] == "apiextensions.crossplane.io/composite")
        .filter(|m| {
            m["fieldsV1"]["f:spec"].get("f:replicas").is_some()
                || m["fieldsV1"]["f:spec"].get("f:image").is_some()
        })
        .filter_map(|m| m["operation"].as_str())
        .collect();
    assert!(
        managers.is_empty(),
        "the controller owns user spec fields: {managers:?}"
    );
}

#[tokio::test]
async fn composed_resources_have_their_xrs_own_field_manager_and_leave_the_earlier_one() {
    let app = App::new("composed-manager", config_map_composition(&["a"])).await;
    let author = PatchParams::apply("author");
    let apply = |image: &str| {
        json!({
            "apiVersion": app.xr.api_version, "kind": "App",
            "metadata": {"name": "m", "namespace": app.namespace},
            "spec": {"image": image},
        })
    };
    app.xrs()
        .patch("m", &author, &Patch::Apply(&apply("one")))
        .await
        .unwrap();
    let xr = eventually("the ConfigMap to be composed", || async {
        let xr = app.xr("m").await?;
        config_map(&app, &xr, "a").await.map(|_| xr)
    })
    .await;
    let cm = config_map(&app, &xr, "a").await.unwrap();
    let cm_name = cm["metadata"]["name"].as_str().unwrap().to_string();
    // What a controller that applied composed resources as the XR's own
    // field manager left: a field the Composition no longer sets.
    let earlier = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": cm_name, "namespace": app.namespace},
        "data": {"left-behind": "yes"},
    });
    app.composed("v1", "ConfigMap", "configmaps")
        .patch(
            &cm_name,
            &PatchParams::apply("apiextensions.crossplane.io/composite").force(),
            &Patch::Apply(&earlier),
        )
        .await
        .unwrap();
    app.xrs()
        .patch("m", &author, &Patch::Apply(&apply("two")))
        .await
        .unwrap();
    // The composed apply and the earlier manager's empty apply are two
    // requests, so a read between them sees image two beside the field
    // only the earlier manager owned: the ConfigMap is done once both land.
    let cm = eventually(
        "the ConfigMap to follow image two without what only the earlier manager owned",
        || async {
            let xr = app.xr("m").await?;
            let cm = config_map(&app, &xr, "a").await?;
            (cm["data"]["image"] == "two" && cm["data"].get("left-behind").is_none()).then_some(cm)
        },
    )
    .await;
    let managers: Vec<&str> = cm["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    let expected = plait_reconcile::composed_field_manager(&xr);
    assert!(managers.contains(&expected.as_str()), "{managers:?}");
    assert!(
        !managers.contains(&"apiextensions.crossplane.io/composite"),
        "{managers:?}"
    );
}

#[tokio::test]
async fn an_apply_computed_from_a_stale_read_is_a_conflict() {
    let client = cluster().client().await;
    let namespace = cluster().namespace("stale").await;
    let kube = plait_kube::KubeCluster::new(client.clone(), tokio::runtime::Handle::current());
    let config_map = |data: &str, resource_version: Option<&str>| {
        let mut object = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "stale", "namespace": namespace},
            "data": {"value": data},
        });
        if let Some(version) = resource_version {
            object["metadata"]["resourceVersion"] = json!(version);
        }
        object
    };
    let first = kube
        .apply_async(&config_map("one", None), "plait-test", false)
        .await
        .unwrap();
    let read_at = first["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    kube.apply_async(&config_map("two", Some(&read_at)), "plait-test", false)
        .await
        .unwrap();
    let stale = kube
        .apply_async(&config_map("three", Some(&read_at)), "plait-test", false)
        .await
        .unwrap_err();
    assert!(
        matches!(stale, plait_reconcile::ClusterError::Conflict { .. }),
        "{stale:?}"
    );
    let other = kube
        .apply_async(
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Not_A_Name", "namespace": namespace}}),
            "plait-test",
            false,
        )
        .await
        .unwrap_err();
    assert!(
        !matches!(other, plait_reconcile::ClusterError::Conflict { .. }),
        "an invalid object is no conflict: {other:?}"
    );
}

#[tokio::test]
async fn a_list_longer_than_a_page_shows_every_object_once_a_page_at_a_time() {
    let client = cluster().client().await;
    let namespace = cluster().namespace("pages").await;
    let kube = plait_kube::KubeCluster::new(client.clone(), tokio::runtime::Handle::current());
    let labels = BTreeMap::from([("listed".to_string(), "yes".to_string())]);
    let mut made = BTreeSet::new();
    for i in 0..5 {
        let name = format!("listed-{i}");
        kube.apply_async(
            &json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": namespace, "labels": {"listed": "yes"}},
            }),
            "plait-test",
            false,
        )
        .await
        .unwrap();
        made.insert(name);
    }
    kube.apply_async(
        &json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "unlabelled", "namespace": namespace},
        }),
        "plait-test",
        false,
    )
    .await
    .unwrap();
    for page in [1, 2, 5, plait_kube::LIST_PAGE] {
        let mut shown = Vec::new();
        kube.visit_live(
            "v1",
            "ConfigMap",
            Some(&namespace),
            &labels,
            page,
            |object| {
                assert_eq!(
                    object["kind"], "ConfigMap",
                    "a listed object names its kind"
                );
                shown.push(object["metadata"]["name"].as_str().unwrap().to_string());
            },
        )
        .await
        .unwrap();
        let distinct: BTreeSet<String> = shown.iter().cloned().collect();
        assert_eq!(distinct, made, "page of {page}");
        assert_eq!(shown.len(), made.len(), "page of {page}: each object once");
    }
}

/// A Composition whose one step runs [`COPY_REQUIRED`] with `required` as
/// its required resources.
fn copy_required_composition(required: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.crossplane.io/v1",
        "kind": "Composition",
        "metadata": {"name": "placeholder"},
        "spec": {
            "compositeTypeRef": {"apiVersion": "placeholder", "kind": "App"},
            "mode": "Pipeline",
            "pipeline": [{
                "step": "copy",
                "functionRef": {"name": COPY_REQUIRED},
                "requirements": {"requiredResources": [required]},
            }],
        },
    })
}

#[tokio::test]
async fn a_tenants_function_reads_only_its_namespace() {
    let cluster = cluster();
    let client = cluster.client().await;
    let other = cluster.namespace("tenancy-other").await;
    // (test id, the requirement given the namespace the XR lives in,
    //  Ok(what the function was given) or Err(what Synced=False says))
    type Requirement = fn(&str) -> Value;
    type Want = Result<fn(&str) -> String, fn(&str, &str) -> String>;
    let cases: [(&str, Requirement, Want); 4] = [
        (
            "tenancy-own",
            |_| json!({"requirementName": "wanted", "apiVersion": "v1", "kind": "Secret", "name": "db"}),
            Ok(|ns| format!("{ns}/db")),
        ),
        (
            "tenancy-labels",
            |_| json!({"requirementName": "wanted", "apiVersion": "v1", "kind": "ConfigMap", "matchLabels": {"tenancy-test": "shared"}}),
            Ok(|ns| format!("{ns}/shared")),
        ),
        (
            "tenancy-other",
            |other| json!({"requirementName": "wanted", "apiVersion": "v1", "kind": "Secret", "name": "db", "namespace": other}),
            Err(|_, other| {
                format!(
                    "pipeline step \"copy\": required resources \"wanted\" refused: function \"{COPY_REQUIRED}\" may not read v1 Secret in namespace {other}"
                )
            }),
        ),
        (
            "tenancy-cluster",
            |_| json!({"requirementName": "wanted", "apiVersion": "v1", "kind": "Namespace", "name": "default"}),
            Err(|_, _| {
                format!(
                    "pipeline step \"copy\": required resources \"wanted\" refused: function \"{COPY_REQUIRED}\" may not read v1 Namespace (cluster-scoped)"
                )
            }),
        ),
    ];
    let secret = |ns: &str| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": ns}, "stringData": {"password": ns}});
    let shared = |ns: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared", "namespace": ns, "labels": {"tenancy-test": "shared"}}, "data": {"k": ns}});
    create(&client, &secret(&other)).await;
    create(&client, &shared(&other)).await;
    for (id, requirement, want) in cases {
        let app = App::new(id, copy_required_composition(requirement(&other))).await;
        create(&client, &secret(&app.namespace)).await;
        create(&client, &shared(&app.namespace)).await;
        app.create_xr("x", json!({"image": "one"})).await;
        match want {
            Ok(given) => {
                let xr = app.condition("x", "Synced", "True").await;
                let copy = config_map(&app, &xr, "copy").await.expect("composed");
                assert_eq!(copy["data"]["wanted"], given(&app.namespace), "{id}");
            }
            Err(message) => {
                let xr = app.condition("x", "Synced", "False").await;
                let said = condition(&xr, "Synced").unwrap()["message"]
                    .as_str()
                    .unwrap()
                    .to_string();
                let want = message(&app.namespace, &other);
                assert!(said.contains(&want), "{id}: {said}");
                assert!(
                    config_map(&app, &xr, "copy").await.is_none(),
                    "{id}: nothing composed"
                );
                let events: Api<k8s_openapi::api::events::v1::Event> =
                    Api::namespaced(client.clone(), &app.namespace);
                eventually(&format!("{id}: a ReadRefused event"), || async {
                    let list = events.list(&Default::default()).await.ok()?;
                    list.items
                        .iter()
                        .any(|e| e.reason.as_deref() == Some("ReadRefused"))
                        .then_some(())
                })
                .await;
            }
        }
    }
}

#[tokio::test]
async fn a_required_schema_is_the_api_servers() {
    let mut composition = copy_required_composition(json!({
        "requirementName": "none", "apiVersion": "v1", "kind": "ConfigMap", "name": "absent-on-purpose",
    }));
    composition["spec"]["pipeline"][0]["input"] = json!({
        "apiVersion": "test.plait.dev/v1", "kind": "Schemas", "schemas": {
        "configmap": {"apiVersion": "v1", "kind": "ConfigMap"},
        "app": {"apiVersion": "schemas.example.org/v1alpha1", "kind": "App"},
        "unknown": {"apiVersion": "nothing.example.org/v1", "kind": "Nothing"},
    }});
    let app = App::new("schemas", composition).await;
    app.create_xr("x", json!({"image": "one"})).await;
    let xr = app.condition("x", "Synced", "True").await;
    // (key, the top-level properties the schema lists)
    let cases = [
        (
            "schema.configmap",
            "apiVersion,binaryData,data,immutable,kind,metadata",
        ),
        ("schema.unknown", "absent"),
    ];
    let copy = config_map(&app, &xr, "copy").await.expect("composed");
    for (key, want) in cases {
        assert_eq!(copy["data"][key], want, "{key}: {copy}");
    }
    // A CRD's schema is published a moment after it is established; the
    // XR's schema reaches the function on a later reconcile at the latest.
    let listed = eventually("the XR's own schema", || async {
        let copy = config_map(&app, &xr, "copy").await?;
        let listed = copy["data"]["schema.app"].as_str()?.to_string();
        (listed != "absent").then_some(listed)
    })
    .await;
    assert_eq!(listed, "apiVersion,kind,metadata,spec,status");
}

/// The sum of the series of metric `name` (with its `_total`/`_count`
/// suffix) whose labels are `tenant`'s.
fn tenant_metric(name: &str, tenant: &str) -> f64 {
    let label = format!("tenant=\"{tenant}\"");
    plait_kube::encoded_metrics()
        .lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains(&label))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

fn function_calls(tenant: &str) -> f64 {
    tenant_metric("plait_function_call_duration_seconds_count", tenant)
}

fn cache_hits(tenant: &str) -> f64 {
    tenant_metric("plait_function_cache_hits_total", tenant)
}

/// Waits until the tenant's function calls stop for a few seconds; returns their count.
async fn settled(tenant: &str) -> f64 {
    eventually("the XR to settle", || async {
        let before = function_calls(tenant);
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        let after = function_calls(tenant);
        (before == after && after > 0.0).then_some(after)
    })
    .await
}

/// Creates another Composition of the app's kind: its revision wakes
/// every XR of the kind without changing what they compose.
async fn wake_xrs(app: &App, name: &str) {
    let mut other = saying("other");
    other["metadata"]["name"] = json!(name);
    other["spec"]["compositeTypeRef"]["apiVersion"] = json!(app.xr.api_version);
    create(&app.client, &other).await;
}

#[tokio::test]
async fn a_steady_xr_is_answered_from_the_response_cache_until_its_composition_changes() {
    let app = App::new("cached", saying("first")).await;
    let tenant = app.namespace.clone();
    app.create_xr("steady", json!({"image": "one"})).await;
    composes(&app, "steady", "a", "first").await;
    app.condition("steady", "Ready", "True").await;
    // The first reconcile after the XR's last own write sees that write
    // for the first time, so its request is new.
    let calls = settled(&tenant).await;
    let hits = cache_hits(&tenant);
    wake_xrs(&app, "app-cached-other-1").await;
    eventually("a reconcile after the first wake-up", || async {
        (function_calls(&tenant) > calls || cache_hits(&tenant) > hits).then_some(())
    })
    .await;

    // From then on its request is unchanged: answered from the cache.
    let calls = settled(&tenant).await;
    let hits = cache_hits(&tenant);
    wake_xrs(&app, "app-cached-other-2").await;
    eventually("a reconcile answered from the cache", || async {
        (cache_hits(&tenant) > hits).then_some(())
    })
    .await;
    assert_eq!(
        function_calls(&tenant),
        calls,
        "the function ran again for an unchanged request"
    );

    // A new revision of its own Composition changes the request: it runs.
    let mut edited = saying("second");
    edited["spec"]["compositeTypeRef"]["apiVersion"] = json!(app.xr.api_version);
    edit_composition(&app, "cached", json!({"spec": edited["spec"]})).await;
    let second = revision(&app, "cached", 2).await;
    uses_revision(&app, "steady", &second).await;
    composes(&app, "steady", "a", "second").await;
    assert!(function_calls(&tenant) > calls);
}

/// A Composition of ConfigMaps `a`, then `b` after `a`, then `c` after `b`
/// (patch-and-transform's `dependsOn`), each ready once its `data.ready`
/// says `yes`, which only the test writes; or, with `cycle`, `a` after `c`
/// as well.
fn ordered_composition(cycle: bool) -> Value {
    let mut composition = config_map_composition(&["a", "b", "c"]);
    let resources = composition["spec"]["pipeline"][0]["input"]["resources"]
        .as_array_mut()
        .unwrap();
    for resource in resources.iter_mut() {
        resource["readinessChecks"] =
            json!([{"type": "MatchString", "fieldPath": "data.ready", "matchString": "yes"}]);
    }
    resources[1]["dependsOn"] = json!(["a"]);
    resources[2]["dependsOn"] = json!(["b"]);
    if cycle {
        resources[0]["dependsOn"] = json!(["c"]);
    }
    composition
}

impl App {
    /// Waits until the XR's `Ordered` condition says `want` in its message.
    async fn ordered(&self, name: &str, want: &str) -> Value {
        eventually(&format!("{name}: Ordered saying {want:?}"), || async {
            let xr = self.xr(name).await?;
            let message = condition(&xr, "Ordered")?["message"].as_str()?.to_string();
            message.contains(want).then_some(xr)
        })
        .await
    }
}

/// Merge-patches the composed ConfigMap `name` as the test, not the controller.
async fn patch_config_map(app: &App, name: &str, patch: Value) {
    app.composed("v1", "ConfigMap", "configmaps")
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

#[tokio::test]
async fn ordered_resources_are_created_after_what_they_depend_on_is_ready_and_deleted_in_reverse() {
    let app = App::new("ordered", ordered_composition(false)).await;
    let created = app.create_xr("x", json!({"image": "one"})).await;
    let uid = created["metadata"]["uid"].as_str().unwrap().to_string();
    let name = |resource: &str| deterministic_name("x-", &uid, resource);
    let cms = app.composed("v1", "ConfigMap", "configmaps");
    let exists = |resource: &'static str| {
        let cms = cms.clone();
        let name = name(resource);
        async move { support::get(&cms, &name).await }
    };
    // A finalizer of the test's own holds each ConfigMap once deleted, so
    // the order deletions start in can be seen.
    let hold = json!({"metadata": {"finalizers": ["test.plait.dev/hold"]}});
    let let_go = json!({"metadata": {"finalizers": null}});
    let ready = json!({"data": {"ready": "yes"}});

    eventually("a to be created", || exists("a")).await;
    patch_config_map(&app, &name("a"), hold.clone()).await;
    let xr = app.ordered("x", "b waits for a; c waits for b").await;
    assert_eq!(condition(&xr, "Ordered").unwrap()["status"], "False");
    assert_eq!(condition(&xr, "Ready").unwrap()["status"], "False");
    assert!(exists("b").await.is_none() && exists("c").await.is_none());

    patch_config_map(&app, &name("a"), ready.clone()).await;
    eventually("b to be created once a is ready", || exists("b")).await;
    patch_config_map(&app, &name("b"), hold.clone()).await;
    app.ordered("x", "c waits for b;").await;
    assert!(exists("c").await.is_none(), "c waits until b is ready");

    patch_config_map(&app, &name("b"), ready.clone()).await;
    eventually("c to be created once b is ready", || exists("c")).await;
    patch_config_map(&app, &name("c"), hold.clone()).await;
    patch_config_map(&app, &name("c"), ready.clone()).await;
    let xr = app
        .ordered(
            "x",
            "every composed resource is created; order: b after a; c after b",
        )
        .await;
    assert_eq!(condition(&xr, "Ordered").unwrap()["status"], "True");
    app.condition("x", "Ready", "True").await;

    app.xrs()
        .delete("x", &DeleteParams::default())
        .await
        .unwrap();
    let deleting = |resource: &'static str| {
        let exists = exists(resource);
        async move {
            let cm = exists.await?;
            cm.pointer("/metadata/deletionTimestamp").map(|_| ())
        }
    };
    for (goes, stays) in [("c", &["a", "b"][..]), ("b", &["a"][..]), ("a", &[][..])] {
        eventually(&format!("{goes} to be deleted"), || deleting(goes)).await;
        for other in stays {
            let cm = exists(other).await.unwrap();
            assert!(
                cm.pointer("/metadata/deletionTimestamp").is_none(),
                "{other} is deleted only after {goes} is gone"
            );
        }
        if goes == "c" {
            let xr = app.xr("x").await.unwrap();
            let message = condition(&xr, "Ready").unwrap()["message"]
                .as_str()
                .unwrap()
                .to_string();
            assert!(message.contains("b waits for c to go"), "{message}");
        }
        patch_config_map(&app, &name(goes), let_go.clone()).await;
        eventually(&format!("{goes} to be gone"), || async {
            exists(goes).await.is_none().then_some(())
        })
        .await;
    }
    eventually("the XR to be gone", || async {
        app.xr("x").await.is_none().then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_dependency_cycle_is_refused_naming_it_and_nothing_is_created() {
    let app = App::new("cycle", ordered_composition(true)).await;
    app.create_xr("x", json!({"image": "one"})).await;
    let xr = app.condition("x", "Synced", "False").await;
    let cycle = "composed resources depend on each other in a cycle: a → c → b → a";
    assert_eq!(condition(&xr, "Synced").unwrap()["message"], cycle);
    assert_eq!(
        condition(&xr, "Ordered").unwrap()["reason"],
        "DependencyCycle"
    );
    let cms = app.composed("v1", "ConfigMap", "configmaps");
    let uid = xr["metadata"]["uid"].as_str().unwrap();
    for resource in ["a", "b", "c"] {
        let name = deterministic_name("x-", uid, resource);
        assert!(
            support::get(&cms, &name).await.is_none(),
            "{resource} was created"
        );
    }
}

/// Every version of the XR `name` a watch from `since` sees until one is
/// Ready, then what comes within the next seconds.
async fn versions_until_ready(xrs: &Api<DynamicObject>, name: &str, since: &str) -> Vec<Value> {
    use futures::StreamExt;
    use kube::api::{WatchEvent, WatchParams};
    let params = WatchParams::default()
        .fields(&format!("metadata.name={name}"))
        .timeout(60);
    let mut events = xrs.watch(&params, since).await.unwrap().boxed();
    let mut versions = Vec::new();
    let mut settle = None;
    loop {
        let next = match settle {
            Some(until) => match tokio::time::timeout_at(until, events.next()).await {
                Ok(next) => next,
                Err(_) => return versions,
            },
            None => events.next().await,
        };
        let Some(Ok(WatchEvent::Modified(xr))) = next else {
            assert!(next.is_some(), "the watch ended before the XR was Ready");
            continue;
        };
        let xr = serde_json::to_value(&xr).unwrap();
        let ready = condition(&xr, "Ready").is_some_and(|c| c["status"] == "True");
        versions.push(xr);
        if ready && settle.is_none() {
            settle = Some(tokio::time::Instant::now() + std::time::Duration::from_secs(3));
        }
    }
}

#[tokio::test]
async fn a_new_xr_is_written_twice_until_ready_and_gets_one_event_naming_it() {
    let app = App::new("writes", config_map_composition(&["a", "b", "c"])).await;
    let created = app.create_xr("x", json!({"image": "one"})).await;
    let since = created["metadata"]["resourceVersion"].as_str().unwrap();
    let versions = versions_until_ready(&app.xrs(), "x", since).await;
    // What each write added: the finalizer, the Composition, its revision
    // and the resource references, before anything was composed; the
    // status, Ready at once.
    let machinery = |xr: &Value| {
        (
            xr["metadata"]["finalizers"].as_array().map_or(0, Vec::len),
            xr["spec"]["crossplane"]["compositionRevisionRef"].is_object(),
            xr["spec"]["crossplane"]["resourceRefs"]
                .as_array()
                .map_or(0, Vec::len),
            condition(xr, "Ready").map(|c| c["status"].clone()),
        )
    };
    let seen: Vec<_> = versions.iter().map(machinery).collect();
    assert_eq!(
        seen,
        [(1, true, 3, None), (1, true, 3, Some(json!("True")))],
        "the XR's versions after its creation"
    );

    let events: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(app.client.clone(), &app.namespace);
    let about_x = eventually("the XR's event", || async {
        let list = events
            .list(&kube::api::ListParams::default().fields("involvedObject.name=x"))
            .await
            .ok()?;
        (!list.items.is_empty()).then_some(list.items)
    })
    .await;
    let summary: Vec<_> = about_x
        .iter()
        .map(|e| {
            (
                e.reason.clone().unwrap_or_default(),
                e.count,
                e.involved_object.uid.clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [(
            "SelectComposition".to_string(),
            Some(1),
            created["metadata"]["uid"].as_str().map(str::to_string),
        )]
    );
}
