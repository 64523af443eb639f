//! Reading and writing the objects controllers reconcile: fields by JSON
//! pointer, conditions, finalizers, and the `DynamicObject` ↔ JSON bridge.

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

/// A non-empty string at `pointer`.
pub fn text<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// An object as JSON, with the apiVersion and kind of `resource` (list and
/// watch items come without them).
pub fn to_value(
    object: &DynamicObject,
    resource: &ApiResource,
) -> Result<Value, serde_json::Error> {
    let mut value = serde_json::to_value(object)?;
    value["apiVersion"] = json!(resource.api_version);
    value["kind"] = json!(resource.kind);
    Ok(value)
}

/// The condition of type `type_`, if the object has one.
pub fn condition<'a>(object: &'a Value, type_: &str) -> Option<&'a Value> {
    object
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// Sets a condition object copied from elsewhere, replacing one of its type.
pub fn put_condition(object: &mut Value, copied: &Value) {
    if !object.get("status").is_some_and(Value::is_object) {
        object["status"] = json!({});
    }
    if !object["status"]["conditions"].is_array() {
        object["status"]["conditions"] = json!([]);
    }
    if let Some(list) = object["status"]["conditions"].as_array_mut() {
        list.retain(|c| c["type"] != copied["type"]);
        list.push(copied.clone());
    }
}

/// The object's namespace-aware API for `resource`.
pub fn api_for(
    client: &kube::Client,
    resource: &ApiResource,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    }
}

fn finalizers(object: &Value) -> Vec<Value> {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

pub fn has_finalizer(object: &Value, finalizer: &str) -> bool {
    finalizers(object).iter().any(|f| f == finalizer)
}

/// Adds `finalizer` to the object's, by a merge patch guarded by the
/// resourceVersion read, so a concurrent change makes it fail (409) rather
/// than drop someone else's finalizer. Returns the object as stored.
pub async fn add_finalizer(
    api: &Api<DynamicObject>,
    object: &Value,
    finalizer: &str,
) -> Result<DynamicObject, kube::Error> {
    let mut list = finalizers(object);
    list.push(json!(finalizer));
    patch_finalizers(api, object, list).await
}

/// Removes `finalizer` from the object's, guarded as [`add_finalizer`] is.
pub async fn remove_finalizer(
    api: &Api<DynamicObject>,
    object: &Value,
    finalizer: &str,
) -> Result<DynamicObject, kube::Error> {
    let list = finalizers(object)
        .into_iter()
        .filter(|f| f != finalizer)
        .collect();
    patch_finalizers(api, object, list).await
}

async fn patch_finalizers(
    api: &Api<DynamicObject>,
    object: &Value,
    finalizers: Vec<Value>,
) -> Result<DynamicObject, kube::Error> {
    let name = text(object, "/metadata/name").unwrap_or_default();
    let patch = json!({"metadata": {
        "finalizers": finalizers,
        "resourceVersion": object.pointer("/metadata/resourceVersion"),
    }});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
}

/// Whether the API server answered `code` (404, 409, …).
pub fn is_status(error: &kube::Error, code: u16) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copied_condition_replaces_the_one_of_its_type() {
        // (conditions before, copied, types after in order)
        let cases = [
            (
                json!({}),
                json!({"type": "Ready", "status": "True"}),
                vec!["Ready"],
            ),
            (
                json!({"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "Synced"}]}}),
                json!({"type": "Ready", "status": "True"}),
                vec!["Synced", "Ready"],
            ),
        ];
        for (mut object, copied, want) in cases {
            put_condition(&mut object, &copied);
            let types: Vec<&str> = object["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["type"].as_str())
                .collect();
            assert_eq!(types, want);
            assert_eq!(condition(&object, "Ready"), Some(&copied));
        }
    }
}
