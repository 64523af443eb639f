//! The write path plait models: server-side apply, as plait's controller
//! writes composed resources. Apply first makes the object a typed patch
//! of its schema, and refuses a list whose items share a key of an
//! `x-kubernetes-list-type: map` (where a create answers `Duplicate
//! value` per item) with one message for the whole request.

use serde_json::Value;

use crate::catalog::KindSchema;
use crate::gvk_string;
use crate::problem::{Problem, ProblemKind};

/// How deep `$ref`s may chain before the schema is taken as cyclic.
const MAX_REF_DEPTH: usize = 32;
/// How deep a value may nest before the search stops descending.
const MAX_DEPTH: usize = 128;

/// The problem server-side apply refuses `object` with before validating
/// it: the first list-map whose items share a key.
pub(crate) fn refusal(object: &Value, kind: &KindSchema) -> Option<Problem> {
    let (field, why) = match duplicate(object, &kind.root, kind, "", "", 0) {
        Some((field, path, key)) => (field, format!("{path}: duplicate entries for key [{key}]")),
        None => mistyped_status(object, kind)?,
    };
    let text = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let detail = format!(
        "failed to create typed patch object ({}/{}; {}): {why}",
        text("/metadata/namespace"),
        text("/metadata/name"),
        gvk_string(text("/apiVersion"), text("/kind")),
    );
    Some(Problem {
        field,
        kind: ProblemKind::Rejected,
        detail,
    })
}

/// A number of a custom resource's status subresource given as something
/// else: a write of the object drops its status, but apply types it first.
fn mistyped_status(object: &Value, kind: &KindSchema) -> Option<(String, String)> {
    if !kind.status_subresource {
        return None;
    }
    let status = object.get("status")?;
    let schema = kind.root.get("properties")?.get("status")?;
    mistyped_number(status, schema, "status", 0)
}

fn mistyped_number(
    value: &Value,
    schema: &Value,
    field: &str,
    depth: usize,
) -> Option<(String, String)> {
    if depth > MAX_DEPTH {
        return None;
    }
    let numeric = matches!(
        schema.get("type").and_then(Value::as_str),
        Some("integer" | "number")
    );
    if numeric && !(value.is_number() || value.is_null()) {
        let got = match crate::openapi::type_name(value) {
            "object" => "map",
            "array" => "list",
            other => other,
        };
        return Some((
            field.to_string(),
            format!(".{field}: expected numeric (int or float), got {got}"),
        ));
    }
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            map.iter().find_map(|(name, child)| {
                let child_schema = properties.and_then(|p| p.get(name)).or(additional)?;
                mistyped_number(child, child_schema, &format!("{field}.{name}"), depth + 1)
            })
        }
        Value::Array(items) => {
            let item_schema = schema.get("items")?;
            items.iter().enumerate().find_map(|(i, item)| {
                mistyped_number(item, item_schema, &format!("{field}[{i}]"), depth + 1)
            })
        }
        _ => None,
    }
}

fn resolve<'s>(kind: &'s KindSchema, mut schema: &'s Value) -> &'s Value {
    for _ in 0..MAX_REF_DEPTH {
        let reference = schema.get("$ref").and_then(Value::as_str).or_else(|| {
            match schema.get("allOf")?.as_array()?.as_slice() {
                [only] => only.get("$ref")?.as_str(),
                _ => None,
            }
        });
        let Some(name) = reference.and_then(|r| r.rsplit('/').next()) else {
            break;
        };
        match kind.components.get(name) {
            Some(target) => schema = target,
            None => break,
        }
    }
    schema
}

/// A list item's key as structured-merge-diff prints it:
/// `name="app"`, `containerPort=80,protocol="TCP"`, defaults filled in.
fn key_of(item: &Value, keys: &[&str], item_schema: &Value, kind: &KindSchema) -> String {
    keys.iter()
        .filter_map(|k| {
            let value = item.get(*k).filter(|v| !v.is_null()).cloned().or_else(|| {
                resolve(kind, item_schema)
                    .get("properties")?
                    .get(*k)
                    .and_then(|s| resolve(kind, s).get("default").or_else(|| s.get("default")))
                    .cloned()
            })?;
            Some(format!("{k}={value}"))
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The first duplicate below `value`: plait's field path, apply's path and
/// the key.
fn duplicate(
    value: &Value,
    schema: &Value,
    kind: &KindSchema,
    field: &str,
    path: &str,
    depth: usize,
) -> Option<(String, String, String)> {
    if depth > MAX_DEPTH {
        return None;
    }
    let schema = resolve(kind, schema);
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            for (name, child) in map {
                let Some(child_schema) = properties.and_then(|p| p.get(name)).or(additional) else {
                    continue;
                };
                let child_field = if field.is_empty() {
                    name.clone()
                } else {
                    format!("{field}.{name}")
                };
                let found = duplicate(
                    child,
                    child_schema,
                    kind,
                    &child_field,
                    &format!("{path}.{name}"),
                    depth + 1,
                );
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        Value::Array(items) => {
            let item_schema = schema.get("items")?;
            let keys: Vec<&str> =
                if schema.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map") {
                    schema
                        .get("x-kubernetes-list-map-keys")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect()
                } else {
                    Vec::new()
                };
            let mut seen = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let item_path = if keys.is_empty() {
                    format!("{path}[{i}]")
                } else {
                    let key = key_of(item, &keys, item_schema, kind);
                    if seen.contains(&key) {
                        return Some((format!("{field}[{i}]"), path.to_string(), key));
                    }
                    let shown = format!("{path}[{key}]");
                    seen.push(key);
                    shown
                };
                let found = duplicate(
                    item,
                    item_schema,
                    kind,
                    &format!("{field}[{i}]"),
                    &item_path,
                    depth + 1,
                );
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use crate::Catalog;

    #[test]
    fn apply_refuses_duplicate_list_keys_with_their_defaults_filled_in() {
        let catalog = Catalog::kubernetes().unwrap();
        let deployment = catalog.get("apps/v1", "Deployment").unwrap();
        let with_ports = |ports: serde_json::Value| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"},
                "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx", "ports": ports}]}}}})
        };
        let cases = [
            (json!([{"containerPort": 80}, {"containerPort": 443}]), None),
            (
                json!([{"containerPort": 53, "protocol": "UDP"}, {"containerPort": 53}]),
                None,
            ),
            (
                json!([{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}]),
                Some(
                    "failed to create typed patch object (shop/web; apps/v1, Kind=Deployment): \
                     .spec.template.spec.containers[name=\"app\"].ports: duplicate entries for key [containerPort=80,protocol=\"TCP\"]",
                ),
            ),
        ];
        for (ports, want) in cases {
            let found = super::refusal(&with_ports(ports.clone()), deployment);
            assert_eq!(found.map(|p| p.to_string()).as_deref(), want, "{ports}");
        }
    }
}
