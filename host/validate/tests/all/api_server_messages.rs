//! plait's messages are the API server's: each invalid object of a table is
//! server-side applied with `dryRun=All` on the test cluster's
//! kube-apiserver, as plait's controller writes, and the
//! causes it answers with are compared with what `plait-validate` finds.
//! (Unknown fields are left out: the API server prunes them unless asked
//! for strict field validation, and then refuses the whole request in one
//! message; plait reports them as `crossplane beta validate` does.)

use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::discovery::ApiResource;
use plait_controlplane::ControlPlane;
use plait_validate::{Catalog, Validator};
use serde_json::{Value, json};

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.messages.example.org"},
        "spec": {
            "group": "messages.example.org",
            "names": {"kind": "Gadget", "plural": "gadgets"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('g-')", "message": "a gadget's name starts with g-"}],
                "properties": {"spec": {
                    "type": "object",
                    "required": ["size"],
                    "x-kubernetes-validations": [
                        {"rule": "self.min <= self.max", "message": "min must not exceed max"},
                        {"rule": "!has(self.secret) || self.secret.size() > 3", "fieldPath": ".secret", "reason": "FieldValueForbidden", "message": "too short a secret"},
                        {"rule": "self.size != 'xl'"},
                    ],
                    "properties": {
                        "size": {"type": "string", "enum": ["s", "m", "l", "xl"]},
                        "min": {"type": "integer", "default": 1, "minimum": 0},
                        "max": {"type": "integer", "default": 10, "maximum": 100},
                        "owner": {"type": "string", "maxLength": 5, "minLength": 2, "pattern": "^[a-z]+$"},
                        "secret": {"type": "string"},
                        "tags": {"type": "array", "maxItems": 2, "minItems": 1, "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 2},
                        "when": {"type": "string", "format": "date-time"},
                        "ratio": {"type": "number", "multipleOf": 0.5},
                    },
                }},
            }}}],
        },
    })
}

#[tokio::test]
async fn plaits_messages_are_the_api_servers() {
    let cluster = ControlPlane::shared().unwrap_or_else(|e| panic!("test cluster: {e}"));
    let client = cluster.client().await;
    let ns = cluster.namespace("messages").await;
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource {
            group: "apiextensions.k8s.io".into(),
            version: "v1".into(),
            api_version: "apiextensions.k8s.io/v1".into(),
            kind: "CustomResourceDefinition".into(),
            plural: "customresourcedefinitions".into(),
        },
    );
    let crd = crd();
    let object: DynamicObject =
        serde_json::from_value(crd.clone()).unwrap_or_else(|e| panic!("{e}"));
    crds.patch(
        "gadgets.messages.example.org",
        &PatchParams::apply("messages-test").force(),
        &Patch::Apply(&object),
    )
    .await
    .unwrap_or_else(|e| panic!("apply CRD: {e}"));
    let gadgets: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        &ns,
        &ApiResource {
            group: "messages.example.org".into(),
            version: "v1".into(),
            api_version: "messages.example.org/v1".into(),
            kind: "Gadget".into(),
            plural: "gadgets".into(),
        },
    );
    let mut catalog = Catalog::new();
    catalog
        .add_definition(&crd)
        .unwrap_or_else(|e| panic!("{e}"));
    let validator = Validator::new(catalog);

    let specs = [
        json!({"size": "s"}),
        json!({}),
        json!({"size": "xxl"}),
        json!({"size": "s", "min": "3"}),
        json!({"size": "s", "owner": "Alice-Smith"}),
        json!({"size": "s", "owner": "a"}),
        json!({"size": "s", "tags": ["a", "b", "c"]}),
        json!({"size": "s", "tags": []}),
        json!({"size": "s", "tags": ["a", "a"]}),
        json!({"size": "s", "labels": {"a": "1", "b": "2", "c": "3"}}),
        json!({"size": "s", "labels": {"a": 1}}),
        json!({"size": "s", "when": "tomorrow"}),
        json!({"size": "s", "min": -1, "max": 101}),
        json!({"size": "s", "ratio": 0.3}),
        json!({"size": "s", "min": 20}),
        json!({"size": "s", "secret": "abc"}),
        json!({"size": "xl"}),
    ];
    let mut failures = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let name = format!("g-{i}");
        let object = json!({"apiVersion": "messages.example.org/v1", "kind": "Gadget",
            "metadata": {"name": name, "namespace": ns}, "spec": spec});
        let dynamic: DynamicObject =
            serde_json::from_value(object.clone()).unwrap_or_else(|e| panic!("{e}"));
        let params = PatchParams {
            dry_run: true,
            ..PatchParams::apply("messages-test").force()
        };
        // The CRD takes a moment to be served.
        let started = Instant::now();
        let answer = loop {
            match gadgets.patch(&name, &params, &Patch::Apply(&dynamic)).await {
                Err(kube::Error::Api(s))
                    if s.code == 404 && started.elapsed() < Duration::from_secs(30) =>
                {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                other => break other,
            }
        };
        let mut server: Vec<String> = match answer {
            Ok(_) => Vec::new(),
            Err(kube::Error::Api(status)) => match status.details {
                Some(d) => d
                    .causes
                    .into_iter()
                    .map(|c| format!("{}: {}", c.field, c.message))
                    .collect(),
                None => vec![status.message],
            },
            Err(e) => panic!("{spec}: {e}"),
        };
        let outcome = validator.validate(&object, None);
        let mut plait: Vec<String> = outcome.findings.iter().map(|f| f.message.clone()).collect();
        server.sort();
        plait.sort();
        if server != plait {
            failures.push(format!(
                "{spec}:\n  api server {server:#?}\n  plait      {plait:#?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
