//! The write path plait models: server-side apply, as plait's controller
//! writes composed resources. Apply first makes the object a typed patch
//! of its schema (structured-merge-diff), and refuses with one message for
//! the whole request what does not fit: a value of the wrong type, a list
//! whose items share a key of an `x-kubernetes-list-type: map` or `set`
//! (where a create answers `Duplicate value` per item), a list-map item
//! without any of its keys.

use serde_json::{Value, json};

use crate::catalog::KindSchema;
use crate::gvk_string;
use crate::problem::{Problem, ProblemKind};

/// How deep `$ref`s may chain before the schema is taken as cyclic.
const MAX_REF_DEPTH: usize = 32;
/// How deep a value may nest before the search stops descending.
const MAX_DEPTH: usize = 128;

/// The problem server-side apply refuses `object` with before validating
/// it.
pub(crate) fn refusal(object: &Value, kind: &KindSchema) -> Option<Problem> {
    let (field, why) = if kind.origin.is_custom() {
        typed_patch_errors(object, kind)?
    } else {
        let (field, path, key) = duplicate(object, &kind.root, kind, "", "", 0)?;
        (field, format!("{path}: duplicate entries for key [{key}]"))
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

/// Every error structured-merge-diff finds making a custom resource a
/// typed patch, as its `ValidationErrors` prints them (one alone, or
/// `errors:` and one per line), with plait's path of the first.
fn typed_patch_errors(object: &Value, kind: &KindSchema) -> Option<(String, String)> {
    let mut typing = Typing::default();
    let properties = kind.root.get("properties").and_then(Value::as_object);
    for (name, value) in object.as_object()? {
        if matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        if let Some(schema) = properties.and_then(|p| p.get(name)) {
            typing.walk(value, schema, name, &format!(".{name}"), 0);
        }
    }
    let (field, _) = typing.errors.first()?.clone();
    let why = match typing.errors.as_slice() {
        [(_, only)] => only.clone(),
        all => std::iter::once("errors:".to_string())
            .chain(all.iter().map(|(_, e)| format!("  {e}")))
            .collect::<Vec<_>>()
            .join("\n"),
    };
    Some((field, why))
}

/// structured-merge-diff's validating walk of a custom resource's value:
/// errors as (plait's field, `<apply path>: <message>`).
#[derive(Default)]
struct Typing {
    errors: Vec<(String, String)>,
}

/// Go's `%v` of structured-merge-diff's value wrapper: `&{x}`.
fn go_wrapped(value: &Value) -> String {
    format!("&{{{}}}", plait_go_compat::printf::format_v(value))
}

impl Typing {
    fn error(&mut self, field: &str, path: &str, message: String) {
        self.errors
            .push((field.to_string(), format!("{path}: {message}")));
    }

    fn walk(&mut self, value: &Value, schema: &Value, field: &str, path: &str, depth: usize) {
        if depth > MAX_DEPTH || value.is_null() {
            return;
        }
        if schema
            .get("x-kubernetes-int-or-string")
            .and_then(Value::as_bool)
            == Some(true)
        {
            return;
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("integer" | "number") if !value.is_number() => {
                let go_type = plait_go_compat::printf::sprintf("%T", std::slice::from_ref(value));
                self.error(
                    field,
                    path,
                    format!("expected numeric (int or float), got {go_type}"),
                );
            }
            Some("string") if !value.is_string() => {
                let shown = plait_go_compat::printf::sprintf("%#v", std::slice::from_ref(value));
                self.error(
                    field,
                    path,
                    format!("expected string, got &value.valueUnstructured{{Value:{shown}}}"),
                );
            }
            Some("boolean") if !value.is_boolean() => {
                self.error(
                    field,
                    path,
                    format!("expected boolean, got {}", go_wrapped(value)),
                );
            }
            Some("object") => match value.as_object() {
                None => self.error(
                    field,
                    path,
                    format!("expected map, got {}", go_wrapped(value)),
                ),
                Some(map) => self.walk_map(map, schema, field, path, depth),
            },
            Some("array") => match value.as_array() {
                None => self.error(
                    field,
                    path,
                    format!("expected list, got {}", go_wrapped(value)),
                ),
                Some(items) => self.walk_list(items, schema, field, path, depth),
            },
            _ => {}
        }
    }

    fn walk_map(
        &mut self,
        map: &serde_json::Map<String, Value>,
        schema: &Value,
        field: &str,
        path: &str,
        depth: usize,
    ) {
        let properties = schema.get("properties").and_then(Value::as_object);
        let additional = schema.get("additionalProperties").filter(|a| a.is_object());
        // The API server declares an embedded resource's kind fields.
        let embedded = schema
            .get("x-kubernetes-embedded-resource")
            .and_then(Value::as_bool)
            == Some(true);
        let string = json!({"type": "string"});
        for (name, child) in map {
            let declared = properties.and_then(|p| p.get(name)).or(additional);
            let child_schema = match declared {
                Some(s) => s,
                None if embedded && matches!(name.as_str(), "apiVersion" | "kind") => &string,
                None => continue,
            };
            self.walk(
                child,
                child_schema,
                &format!("{field}.{name}"),
                &format!("{path}.{name}"),
                depth + 1,
            );
        }
    }

    fn walk_list(
        &mut self,
        items: &[Value],
        schema: &Value,
        field: &str,
        path: &str,
        depth: usize,
    ) {
        let Some(item_schema) = schema.get("items") else {
            return;
        };
        let list_type = schema.get("x-kubernetes-list-type").and_then(Value::as_str);
        let keys: Vec<&str> = schema
            .get("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut seen = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let element = match list_type {
                Some("map") => {
                    if !item.is_object() {
                        self.error(
                            field,
                            path,
                            format!("element {i}: associative list with keys may not have non-map elements"),
                        );
                        return;
                    }
                    let key = map_key(item, &keys, item_schema);
                    if key.is_empty() {
                        let quoted: Vec<String> = keys
                            .iter()
                            .map(|k| plait_go_compat::strconv::quote(k))
                            .collect();
                        self.error(
                            field,
                            path,
                            format!(
                                "element {i}: associative list with keys has an element that omits all key fields [{}] (and doesn't have default values for any key fields)",
                                quoted.join(" ")
                            ),
                        );
                        return;
                    }
                    key
                }
                Some("set") => {
                    let refused = match item {
                        Value::Object(_) => {
                            "associative list without keys has an element that's a map type"
                        }
                        Value::Array(_) => "not supported: associative list with lists as elements",
                        Value::Null => {
                            "associative list without keys has an element that's an explicit null"
                        }
                        _ => "",
                    };
                    if !refused.is_empty() {
                        self.error(field, path, format!("element {i}: {refused}"));
                        return;
                    }
                    format!("={item}")
                }
                _ => i.to_string(),
            };
            if list_type == Some("map") || list_type == Some("set") {
                if seen.contains(&element) {
                    self.error(
                        field,
                        path,
                        format!("duplicate entries for key [{element}]"),
                    );
                }
                seen.push(element.clone());
            }
            self.walk(
                item,
                item_schema,
                &format!("{field}[{i}]"),
                &format!("{path}[{element}]"),
                depth + 1,
            );
        }
    }
}

/// A list-map item's key as structured-merge-diff prints it (`name="a"`,
/// keys sorted by name), defaults filled in; empty when the item has none
/// of its keys.
fn map_key(item: &Value, keys: &[&str], item_schema: &Value) -> String {
    let mut sorted = keys.to_vec();
    sorted.sort_unstable();
    sorted
        .iter()
        .filter_map(|k| {
            let value = item.get(*k).filter(|v| !v.is_null()).cloned().or_else(|| {
                item_schema
                    .get("properties")?
                    .get(*k)?
                    .get("default")
                    .cloned()
            })?;
            Some(format!("{k}={value}"))
        })
        .collect::<Vec<_>>()
        .join(",")
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
    fn apply_refuses_a_custom_resource_that_does_not_fit_its_schema_with_one_message() {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "things.example.org"},
            "spec": {"group": "example.org", "names": {"kind": "Thing", "plural": "things"}, "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "properties": {
                        "count": {"type": "integer"},
                        "name": {"type": "string"},
                        "on": {"type": "boolean"},
                        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name", "port"],
                            "items": {"type": "object", "properties": {
                                "name": {"type": "string"}, "port": {"type": "integer"}}}},
                        "either": {"x-kubernetes-int-or-string": true},
                    }}},
                }}}]},
        });
        let mut catalog = Catalog::new();
        catalog.add_definition(&crd).unwrap();
        let thing = catalog.get("example.org/v1", "Thing").unwrap();
        let prefix =
            "failed to create typed patch object (default/t; example.org/v1, Kind=Thing): ";
        let cases = [
            (json!({"count": 1, "either": "x", "tags": ["a", "b"]}), None),
            (json!({"count": null, "either": 2}), None),
            (
                json!({"count": "1"}),
                Some(".spec.count: expected numeric (int or float), got string"),
            ),
            (
                json!({"count": true}),
                Some(".spec.count: expected numeric (int or float), got bool"),
            ),
            (
                json!({"name": 1}),
                Some(".spec.name: expected string, got &value.valueUnstructured{Value:1}"),
            ),
            (
                json!({"on": "true"}),
                Some(".spec.on: expected boolean, got &{true}"),
            ),
            (
                json!({"tags": "a"}),
                Some(".spec.tags: expected list, got &{a}"),
            ),
            (
                json!({"tags": ["a", "a"]}),
                Some(".spec.tags: duplicate entries for key [=\"a\"]"),
            ),
            (
                json!({"tags": [{}]}),
                Some(
                    ".spec.tags: element 0: associative list without keys has an element that's a map type",
                ),
            ),
            (
                json!({"ports": [{"port": 80, "name": 1}]}),
                Some(
                    ".spec.ports[name=1,port=80].name: expected string, got &value.valueUnstructured{Value:1}",
                ),
            ),
            (
                json!({"ports": [{}]}),
                Some(
                    ".spec.ports: element 0: associative list with keys has an element that omits all key fields [\"name\" \"port\"] (and doesn't have default values for any key fields)",
                ),
            ),
            (
                json!({"count": "1", "on": 0}),
                Some(
                    "errors:\n  .spec.count: expected numeric (int or float), got string\n  .spec.on: expected boolean, got &{0}",
                ),
            ),
        ];
        for (spec, want) in cases {
            let object = json!({"apiVersion": "example.org/v1", "kind": "Thing",
                "metadata": {"name": "t", "namespace": "default"}, "spec": spec});
            let found = super::refusal(&object, thing).map(|p| p.to_string());
            assert_eq!(found, want.map(|w| format!("{prefix}{w}")), "{spec}");
        }
    }

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
