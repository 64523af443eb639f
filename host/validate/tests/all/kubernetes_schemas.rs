//! The built-in Kubernetes schemas plait ships are what a kube-apiserver of
//! that minor serves at `/openapi/v3`: this test reads them from the test
//! cluster's kube-apiserver and compares. With
//! `PLAIT_UPDATE_KUBERNETES_SCHEMAS=1` it writes them instead.

use std::collections::BTreeMap;
use std::path::PathBuf;

use plait_controlplane::ControlPlane;
use serde_json::{Map, Value, json};

const DOCUMENT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/kubernetes/v1.34/openapi-v3.json"
);

async fn get(client: &kube::Client, path: &str) -> Value {
    let request = http::Request::get(path)
        .header(http::header::ACCEPT, "application/json")
        .body(Vec::new())
        .unwrap_or_else(|e| panic!("request for {path}: {e}"));
    client
        .request::<Value>(request)
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

/// The group-versions of Kubernetes' own, generally available APIs.
fn is_builtin_stable(path: &str) -> bool {
    if path == "api/v1" {
        return true;
    }
    let Some(rest) = path.strip_prefix("apis/") else {
        return false;
    };
    let Some((group, version)) = rest.split_once('/') else {
        return false;
    };
    let kubernetes_group = !group.contains('.') || group.ends_with(".k8s.io");
    kubernetes_group && !version.contains("alpha") && !version.contains("beta")
}

/// Drops descriptions, which are most of the bytes and none of the checks.
fn strip_descriptions(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|k, v| !(k == "description" && v.is_string()));
            for v in map.values_mut() {
                strip_descriptions(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_descriptions),
        _ => {}
    }
}

#[tokio::test]
async fn the_shipped_kubernetes_schemas_are_what_the_api_server_serves() {
    let cluster = ControlPlane::shared().unwrap_or_else(|e| panic!("test cluster: {e}"));
    let client = cluster.client().await;
    let index = get(&client, "/openapi/v3").await;
    let paths: Vec<String> = index
        .get("paths")
        .and_then(Value::as_object)
        .map(|p| p.keys().filter(|k| is_builtin_stable(k)).cloned().collect())
        .unwrap_or_default();
    assert!(paths.iter().any(|p| p == "api/v1"), "{paths:?}");
    let mut schemas: BTreeMap<String, Value> = BTreeMap::new();
    for path in &paths {
        let url = index["paths"][path]["serverRelativeURL"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| format!("/openapi/v3/{path}"));
        let document = get(&client, &url).await;
        for (name, schema) in document
            .pointer("/components/schemas")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            schemas.insert(name.clone(), schema.clone());
        }
    }
    let mut document = json!({"components": {"schemas": Value::Object(Map::from_iter(schemas))}});
    strip_descriptions(&mut document);
    let text = serde_json::to_string(&document).unwrap_or_else(|e| panic!("{e}")) + "\n";
    let file = PathBuf::from(DOCUMENT);
    if std::env::var_os("PLAIT_UPDATE_KUBERNETES_SCHEMAS").is_some() {
        std::fs::write(&file, &text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        return;
    }
    let shipped =
        std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    assert!(
        shipped == text,
        "{} differs from what kube-apiserver serves; run with PLAIT_UPDATE_KUBERNETES_SCHEMAS=1 to update it",
        file.display()
    );
}
