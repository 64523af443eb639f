//! plait's own CRDs (`deploy/base/crds/`) install into a real kube-apiserver, accept every
//! XRD, Composition, EnvironmentConfig and Function of the shared Crossplane corpus
//! unchanged, and reject bad objects with a message that names the field at fault.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use plait_controlplane::ControlPlane;
use serde_json::{Value, json};

/// Bounds the wait for a CRD to become Established; a hang, not a timing assertion.
const PATIENCE: Duration = Duration::from_secs(120);

fn crd_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/base/crds")
}

/// The real-world corpus, kept in the repository at `tests/corpus`.
fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus")
}

fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|doc| <Value as serde::Deserialize>::deserialize(doc).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// Installs every CRD in `deploy/base/crds/` (idempotently) and waits until all are Established.
async fn install_crds(client: &kube::Client) {
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    let mut files: Vec<PathBuf> = std::fs::read_dir(crd_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 9, "one file per CRD: {files:?}");
    let mut names = Vec::new();
    for file in &files {
        let [crd] = documents(file).try_into().unwrap();
        let name = crd["metadata"]["name"].as_str().unwrap().to_string();
        crds.patch(
            &name,
            &PatchParams::apply("plait-controlplane").force(),
            &Patch::Apply(&crd),
        )
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        names.push(name);
    }
    let deadline = tokio::time::Instant::now() + PATIENCE;
    for name in names {
        loop {
            let crd = crds.get(&name).await.unwrap();
            let established = crd
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True");
            if established {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{name} not Established"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

fn api_for(client: &kube::Client, object: &Value) -> Api<DynamicObject> {
    let api_version = object["apiVersion"].as_str().unwrap();
    let kind = object["kind"].as_str().unwrap();
    let (group, version) = api_version.split_once('/').unwrap();
    let plural = match kind {
        "CompositeResourceDefinition" => "compositeresourcedefinitions",
        "Composition" => "compositions",
        "CompositionRevision" => "compositionrevisions",
        "EnvironmentConfig" => "environmentconfigs",
        "Function" => "functions",
        other => panic!("not a plait kind: {other}"),
    };
    let gvk = GroupVersionKind::gvk(group, version, kind);
    Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    )
}

/// Validates `object` fully (schema, CEL, admission) without storing it.
async fn dry_run_create(client: &kube::Client, object: &Value) -> Result<(), String> {
    let dynamic: DynamicObject = serde_json::from_value(object.clone()).unwrap();
    api_for(client, object)
        .create(
            &PostParams {
                dry_run: true,
                ..PostParams::default()
            },
            &dynamic,
        )
        .await
        .map(drop)
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn every_corpus_manifest_is_accepted_unchanged() {
    let cluster = ControlPlane::shared().unwrap();
    let client = cluster.client().await;
    install_crds(&client).await;

    let mut cases: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert_eq!(cases.len(), 37, "the corpus has 37 cases");

    let mut accepted = std::collections::BTreeMap::<String, usize>::new();
    let mut rejected = Vec::new();
    for case in &cases {
        for file in [
            "xrd.yaml",
            "composition.yaml",
            "environmentconfigs.yaml",
            "functions.yaml",
        ] {
            let path = case.join(file);
            if !path.exists() {
                continue;
            }
            for object in documents(&path) {
                let kind = object["kind"].as_str().unwrap().to_string();
                match dry_run_create(&client, &object).await {
                    Ok(()) => *accepted.entry(kind).or_default() += 1,
                    Err(e) => rejected.push(format!("{}: {e}", path.display())),
                }
            }
        }
    }
    assert!(rejected.is_empty(), "rejected:\n{}", rejected.join("\n"));
    assert_eq!(
        accepted.get("CompositeResourceDefinition"),
        Some(&36),
        "{accepted:?}"
    );
    assert_eq!(accepted.get("Composition"), Some(&37), "{accepted:?}");
    assert!(
        accepted.get("EnvironmentConfig").is_some_and(|n| *n > 0),
        "{accepted:?}"
    );
    assert!(
        accepted.get("Function").is_some_and(|n| *n > 0),
        "{accepted:?}"
    );
}

fn xrd(api_version: &str, spec_extra: Value) -> Value {
    let mut spec = json!({
        "group": "bad.example.org",
        "names": {"kind": "XThing", "plural": "xthings"},
        "versions": [{"name": "v1", "served": true, "referenceable": true,
                      "schema": {"openAPIV3Schema": {"type": "object"}}}]
    });
    for (k, v) in spec_extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    json!({
        "apiVersion": api_version,
        "kind": "CompositeResourceDefinition",
        "metadata": {"name": "xthings.bad.example.org"},
        "spec": spec
    })
}

fn composition(spec_extra: Value) -> Value {
    let mut spec = json!({
        "compositeTypeRef": {"apiVersion": "bad.example.org/v1", "kind": "XThing"},
        "mode": "Pipeline",
        "pipeline": [{"step": "pt", "functionRef": {"name": "function-patch-and-transform"}}]
    });
    for (k, v) in spec_extra.as_object().unwrap() {
        if v.is_null() {
            spec.as_object_mut().unwrap().remove(k);
        } else {
            spec[k] = v.clone();
        }
    }
    json!({
        "apiVersion": "apiextensions.crossplane.io/v1",
        "kind": "Composition",
        "metadata": {"name": "bad"},
        "spec": spec
    })
}

#[tokio::test]
async fn bad_objects_are_rejected_naming_the_field() {
    let cluster = ControlPlane::shared().unwrap();
    let client = cluster.client().await;
    install_crds(&client).await;

    let cases: Vec<(&str, Value, &[&str])> = vec![
        (
            "Pipeline mode without steps",
            composition(json!({"pipeline": []})),
            &[
                "spec",
                "spec.pipeline must have at least one step in Pipeline mode",
            ],
        ),
        (
            "Pipeline mode without a pipeline",
            composition(json!({"pipeline": null})),
            &["spec.pipeline must have at least one step in Pipeline mode"],
        ),
        (
            "unknown mode",
            composition(json!({"mode": "Magic"})),
            &["spec.mode", "Unsupported value: \"Magic\""],
        ),
        (
            "no compositeTypeRef",
            composition(json!({"compositeTypeRef": null})),
            &["spec.compositeTypeRef", "Required value"],
        ),
        (
            "step without functionRef",
            composition(json!({"pipeline": [{"step": "pt"}]})),
            &["spec.pipeline[0].functionRef", "Required value"],
        ),
        (
            "duplicate step names",
            composition(json!({"pipeline": [
                {"step": "pt", "functionRef": {"name": "a"}},
                {"step": "pt", "functionRef": {"name": "b"}}
            ]})),
            &["spec.pipeline[1]", "Duplicate value"],
        ),
        (
            "step input that is not a Kubernetes object",
            composition(json!({"pipeline": [
                {"step": "pt", "functionRef": {"name": "a"}, "input": {"resources": []}}
            ]})),
            &["spec.pipeline[0].input.apiVersion", "Required value"],
        ),
        (
            "unknown patch type",
            composition(
                json!({"mode": "Resources", "pipeline": null, "resources": [{
                    "name": "r",
                    "base": {"apiVersion": "v1", "kind": "ConfigMap"},
                    "patches": [{"type": "FromSomewhere", "fromFieldPath": "spec.x"}]
                }]}),
            ),
            &[
                "spec.resources[0].patches[0].type",
                "Unsupported value: \"FromSomewhere\"",
            ],
        ),
        (
            "CompositionRevision without revision",
            {
                let mut c = composition(json!({}));
                c["kind"] = json!("CompositionRevision");
                c
            },
            &["spec.revision", "Required value"],
        ),
        (
            "v2 XRD offering a claim",
            xrd(
                "apiextensions.crossplane.io/v2",
                json!({"claimNames": {"kind": "Thing", "plural": "things"}}),
            ),
            &[
                "spec",
                "Claims aren't supported in apiextensions.crossplane.io/v2",
            ],
        ),
        (
            "v2 XRD with connection secret keys",
            xrd(
                "apiextensions.crossplane.io/v2",
                json!({"connectionSecretKeys": ["a"]}),
            ),
            &[
                "spec",
                "XR connection secrets aren't supported in apiextensions.crossplane.io/v2",
            ],
        ),
        (
            "v2 XRD with LegacyCluster scope",
            xrd(
                "apiextensions.crossplane.io/v2",
                json!({"scope": "LegacyCluster"}),
            ),
            &["spec.scope", "Unsupported value: \"LegacyCluster\""],
        ),
        (
            "XRD without group",
            {
                let mut x = xrd("apiextensions.crossplane.io/v1", json!({}));
                x["spec"].as_object_mut().unwrap().remove("group");
                x
            },
            &["spec.group", "Required value"],
        ),
        (
            "XRD with an upper-case plural",
            xrd(
                "apiextensions.crossplane.io/v2",
                json!({"names": {"kind": "XThing", "plural": "XThings"}}),
            ),
            &["spec.names", "Plural name must be lowercase"],
        ),
        (
            "XRD named unlike plural.group",
            {
                let mut x = xrd("apiextensions.crossplane.io/v1", json!({}));
                x["metadata"]["name"] = json!("things.bad.example.org");
                x
            },
            &["metadata.name must be spec.names.plural + '.' + spec.group"],
        ),
        (
            "XRD with two referenceable versions",
            xrd(
                "apiextensions.crossplane.io/v1",
                json!({"versions": [
                    {"name": "v1", "served": true, "referenceable": true},
                    {"name": "v2", "served": true, "referenceable": true}
                ]}),
            ),
            &["spec.versions", "exactly one version must be referenceable"],
        ),
        (
            "XRD whose referenceable version is not served",
            xrd(
                "apiextensions.crossplane.io/v1",
                json!({"versions": [{"name": "v1", "served": false, "referenceable": true}]}),
            ),
            &[
                "spec.versions[0]",
                "the referenceable version must be served",
            ],
        ),
        (
            "Function without package",
            json!({
                "apiVersion": "pkg.crossplane.io/v1",
                "kind": "Function",
                "metadata": {"name": "bad"},
                "spec": {}
            }),
            &["spec.package", "Required value"],
        ),
        (
            "EnvironmentConfig whose data is not an object",
            json!({
                "apiVersion": "apiextensions.crossplane.io/v1beta1",
                "kind": "EnvironmentConfig",
                "metadata": {"name": "bad"},
                "data": "text"
            }),
            &["data", "must be of type object"],
        ),
    ];
    let mut failures = Vec::new();
    for (what, object, expected) in cases {
        match dry_run_create(&client, &object).await {
            Ok(()) => failures.push(format!("{what}: accepted")),
            Err(message) => {
                for needle in expected {
                    if !message.contains(needle) {
                        failures.push(format!("{what}: {message:?} lacks {needle:?}"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn xrd_identity_fields_are_immutable() {
    let cluster = ControlPlane::shared().unwrap();
    let client = cluster.client().await;
    install_crds(&client).await;

    let original = json!({
        "apiVersion": "apiextensions.crossplane.io/v2",
        "kind": "CompositeResourceDefinition",
        "metadata": {"name": "xfrozens.immutable.example.org"},
        "spec": {
            "group": "immutable.example.org",
            "names": {"kind": "XFrozen", "plural": "xfrozens"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "referenceable": true}]
        }
    });
    let api = api_for(&client, &original);
    let created = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(original.clone()).unwrap(),
        )
        .await
        .unwrap();

    let cases: [(&str, &str, Value); 3] = [
        ("group", "spec.group", json!("other.example.org")),
        (
            "names",
            "spec.names",
            json!({"kind": "XFrozen", "plural": "xfrozens", "singular": "frozen"}),
        ),
        ("scope", "spec.scope", json!("Cluster")),
    ];
    for (field, path, value) in cases {
        let mut changed = serde_json::to_value(&created).unwrap();
        changed["spec"][field] = value;
        let err = api
            .replace(
                "xfrozens.immutable.example.org",
                &PostParams::default(),
                &serde_json::from_value(changed).unwrap(),
            )
            .await
            .expect_err(field)
            .to_string();
        assert!(
            err.contains(path) && err.contains("Value is immutable"),
            "{field}: {err}"
        );
    }
}
