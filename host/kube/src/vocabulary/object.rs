//! Reading and writing the objects controllers reconcile: fields by JSON
//! pointer, conditions, finalizers, and the `DynamicObject` ↔ JSON bridge.

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use crate::vocabulary::api::FINALIZER_MANAGER;

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
    drop_managed_fields(&mut value);
    Ok(value)
}

/// Drops an object's `managedFields`, which nothing plait or a function
/// reads needs: objects are kept and handed on without them.
pub fn drop_managed_fields(object: &mut Value) {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
}

/// The same, for an object a watch delivers.
pub fn trim(object: &mut DynamicObject) {
    object.metadata.managed_fields = None;
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

pub fn finalizers(object: &Value) -> Vec<Value> {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

pub fn has_finalizer(object: &Value, finalizer: &str) -> bool {
    finalizers(object).iter().any(|f| f == finalizer)
}

/// Adds `finalizer` to the object's by a server-side apply of that one
/// entry under its own field manager: finalizers are a set, so the apply
/// neither needs the resourceVersion read nor can drop someone else's
/// finalizer, and a concurrent change to the object cannot make it conflict.
/// Returns the object as stored.
pub async fn add_finalizer(
    api: &Api<DynamicObject>,
    resource: &ApiResource,
    object: &Value,
    finalizer: &str,
) -> Result<DynamicObject, kube::Error> {
    let name = text(object, "/metadata/name").unwrap_or_default();
    let mut metadata = json!({"name": name, "finalizers": [finalizer]});
    if let Some(namespace) = text(object, "/metadata/namespace") {
        metadata["namespace"] = json!(namespace);
    }
    let body = json!({
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": metadata,
    });
    api.patch(
        name,
        &PatchParams::apply(FINALIZER_MANAGER).force(),
        &Patch::Apply(&body),
    )
    .await
}

/// Removes `finalizer` from the object's by a JSON patch that first tests
/// the entry is still where it was read, so the patch removes exactly that
/// entry whatever else changed (a moved entry fails the test: 422). Returns
/// the object as stored, or `None` when it had no such finalizer.
pub async fn remove_finalizer(
    api: &Api<DynamicObject>,
    object: &Value,
    finalizer: &str,
) -> Result<Option<DynamicObject>, kube::Error> {
    let Some(index) = finalizers(object).iter().position(|f| f == finalizer) else {
        return Ok(None);
    };
    let name = text(object, "/metadata/name").unwrap_or_default();
    let path = format!("/metadata/finalizers/{index}");
    let operations: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": path, "value": finalizer},
        {"op": "remove", "path": path},
    ]))
    .map_err(kube::Error::SerdeError)?;
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Json::<()>(operations),
    )
    .await
    .map(Some)
}

/// Merge-patches `fields` into the object, guarded by the resourceVersion
/// it was read at so a patch from a stale read conflicts.
pub async fn merge_patch(
    api: &Api<DynamicObject>,
    object: &Value,
    mut fields: Value,
) -> Result<DynamicObject, kube::Error> {
    let name = text(object, "/metadata/name").unwrap_or_default();
    fields["metadata"]["resourceVersion"] = object
        .pointer("/metadata/resourceVersion")
        .cloned()
        .unwrap_or(Value::Null);
    api.patch(name, &PatchParams::default(), &Patch::Merge(&fields))
        .await
}

/// Whether the API server answered `code` (404, 409, …).
pub fn is_status(error: &kube::Error, code: u16) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == code)
}

/// Whether a write failed only because the object changed since it was read:
/// a conflict (409), or a finalizer removal whose test no longer held (422).
pub fn is_stale_write(error: &kube::Error) -> bool {
    is_status(error, 409) || is_status(error, 422)
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
