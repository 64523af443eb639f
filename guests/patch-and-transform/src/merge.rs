//! Writing a patch's value under a `toFieldPath` policy: crossplane-runtime's
//! `Paved.MergeValue`, which hands everything but `Replace` to mergo v1.0.2.
//!
//! mergo walks Go values by reflection; on JSON-shaped data (maps of
//! `interface{}`) its rules reduce to the per-key algorithm in [`merge_key`].
//! The quirks are reproduced on purpose, because Compositions depend on them:
//! without override, existing non-empty values win at every level (even
//! scalars and whole arrays), "empty" values (`""`, `0`, `false`, `[]`, `{}`,
//! `null`) are filled, and a `null` source is ignored.

use serde_json::{Map, Value};

use crate::fieldpath::{self, FieldPathError};

/// How a value is merged into an existing one (crossplane-runtime's
/// `MergeOptions`). `keep_map_values: false` is mergo's `WithOverride`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergeOptions {
    pub keep_map_values: bool,
    pub append_slice: bool,
}

/// A toFieldPath policy, with its upstream spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToFieldPathPolicy {
    Replace,
    MergeObjects,
    MergeObjectsAppendArrays,
    ForceMergeObjects,
    ForceMergeObjectsAppendArrays,
}

impl ToFieldPathPolicy {
    /// Parses a policy name, including the deprecated `MergeObject` and
    /// `AppendArray` spellings that upstream still accepts.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "Replace" => ToFieldPathPolicy::Replace,
            "MergeObjects" | "MergeObject" => ToFieldPathPolicy::MergeObjects,
            "MergeObjectsAppendArrays" => ToFieldPathPolicy::MergeObjectsAppendArrays,
            "ForceMergeObjects" => ToFieldPathPolicy::ForceMergeObjects,
            "ForceMergeObjectsAppendArrays" | "AppendArray" => {
                ToFieldPathPolicy::ForceMergeObjectsAppendArrays
            }
            _ => return None,
        })
    }

    /// The merge options upstream's `toMergeOption` maps the policy to;
    /// `None` means replace.
    pub fn merge_options(self) -> Option<MergeOptions> {
        let (keep_map_values, append_slice) = match self {
            ToFieldPathPolicy::Replace => return None,
            ToFieldPathPolicy::MergeObjects => (true, false),
            ToFieldPathPolicy::MergeObjectsAppendArrays => (true, true),
            ToFieldPathPolicy::ForceMergeObjects => (false, false),
            ToFieldPathPolicy::ForceMergeObjectsAppendArrays => (false, true),
        };
        Some(MergeOptions {
            keep_map_values,
            append_slice,
        })
    }
}

/// Merges `value` into `object` at `path` (`Paved.MergeValue`). A missing
/// destination, or no options, means the value is simply set.
pub fn merge_value(
    object: &mut Value,
    path: &str,
    value: Value,
    options: Option<MergeOptions>,
) -> Result<(), FieldPathError> {
    let merged = match options {
        None => value,
        Some(options) => match fieldpath::get_value(object, path) {
            Ok(dst) => merge(dst.clone(), value, options).map_err(|message| FieldPathError {
                message: format!("failed to merge values: {message}"),
                not_found: false,
            })?,
            Err(err) if err.is_not_found() => value,
            Err(err) => return Err(err),
        },
    };
    fieldpath::set_value(object, path, merged)
}

/// crossplane-runtime's `merge`: mergo on `{"arg": dst}` and `{"arg": src}`,
/// de-duplicating the source first when both sides are arrays and arrays are
/// appended.
fn merge(dst: Value, src: Value, options: MergeOptions) -> Result<Value, String> {
    if dst.is_null() || src.is_null() {
        return Ok(src);
    }
    let src = match (&dst, src) {
        (Value::Array(dst_items), Value::Array(src_items)) if options.append_slice => {
            let new: Vec<Value> = src_items
                .into_iter()
                .filter(|item| !dst_items.contains(item))
                .collect();
            if new.is_empty() {
                // Go's de-duplicated source is then a nil slice: mergo
                // appends nothing to a non-empty destination, and sets the
                // nil slice (null) over an empty one.
                return Ok(if dst_items.is_empty() {
                    Value::Null
                } else {
                    dst
                });
            }
            Value::Array(new)
        }
        (_, src) => src,
    };
    const KEY: &str = "arg";
    let mut wrapped_dst = Map::new();
    wrapped_dst.insert(KEY.to_owned(), dst);
    let mut wrapped_src = Map::new();
    wrapped_src.insert(KEY.to_owned(), src);
    merge_maps(&mut wrapped_dst, &wrapped_src, options)?;
    Ok(wrapped_dst.remove(KEY).unwrap_or(Value::Null))
}

fn merge_maps(
    dst: &mut Map<String, Value>,
    src: &Map<String, Value>,
    options: MergeOptions,
) -> Result<(), String> {
    for (key, src_element) in src {
        merge_key(dst, key, src_element, options)?;
    }
    Ok(())
}

/// One iteration of mergo's map loop (`deepMerge`, `reflect.Map` case).
fn merge_key(
    dst: &mut Map<String, Value>,
    key: &str,
    src_element: &Value,
    options: MergeOptions,
) -> Result<(), String> {
    let overwrite = !options.keep_map_values;
    if src_element.is_null() {
        if overwrite {
            dst.insert(key.to_owned(), Value::Null);
        }
        return Ok(());
    }
    // mergo keeps the destination element it looked up before recursing. For
    // maps that is a reference, so its emptiness is judged after the
    // recursion; for arrays it is the old slice header.
    let dst_was_empty_array = matches!(dst.get(key), Some(Value::Array(items)) if items.is_empty());
    match src_element {
        Value::Object(src_map) => {
            if let Some(Value::Object(dst_map)) = dst.get_mut(key) {
                merge_maps(dst_map, src_map, options)?;
            }
        }
        Value::Array(src_items) => {
            let merged = match dst.get(key) {
                None | Some(Value::Null) if options.append_slice => Some(src_items.clone()),
                Some(Value::Array(dst_items)) if options.append_slice => {
                    let mut items = dst_items.clone();
                    items.extend(src_items.iter().cloned());
                    Some(items)
                }
                Some(other) if options.append_slice => {
                    return Err(format!(
                        "cannot append two slices with different type ([]interface {{}}, {})",
                        go_type_name(other)
                    ));
                }
                _ if overwrite => Some(src_items.clone()),
                _ => None,
            };
            if let Some(items) = merged {
                dst.insert(key.to_owned(), Value::Array(items));
            }
        }
        _ => {}
    }
    let dst_element = dst.get(key);
    let dst_empty = match (dst_element, src_element) {
        (Some(_), Value::Array(_)) => dst_was_empty_array || dst_element.is_some_and(is_empty),
        (Some(element), _) => is_empty(element),
        (None, _) => true,
    };
    if !dst_empty {
        match (src_element, dst_element) {
            (Value::Array(_), _) => return Ok(()),
            (Value::Object(_), Some(Value::Object(_))) => return Ok(()),
            _ => {}
        }
    }
    if overwrite || dst_empty {
        dst.insert(key.to_owned(), src_element.clone());
    }
    Ok(())
}

/// mergo's `isEmptyValue`, dereferencing interfaces.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
    }
}

/// The Go type a JSON value decodes to with Kubernetes' int-preserving decoder.
fn go_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn policy_merge(policy: ToFieldPathPolicy, dst: Value, src: Value) -> Result<Value, String> {
        let mut object = json!({ "spec": { "to": dst } });
        merge_value(&mut object, "spec.to", src, policy.merge_options()).map_err(|e| e.message)?;
        Ok(object["spec"]["to"].clone())
    }

    #[test]
    fn policies_merge_like_mergo() {
        use ToFieldPathPolicy::*;
        let cases = [
            // (policy, dst, src, expected)
            (MergeObjectsAppendArrays, json!([]), json!([]), Value::Null),
            (
                ForceMergeObjectsAppendArrays,
                json!([]),
                json!([]),
                Value::Null,
            ),
            (
                MergeObjectsAppendArrays,
                json!(["a"]),
                json!(["a"]),
                json!(["a"]),
            ),
            (
                MergeObjectsAppendArrays,
                json!([]),
                json!(["a"]),
                json!(["a"]),
            ),
            (
                Replace,
                json!({"a": 1, "b": 2}),
                json!({"a": 3}),
                json!({"a": 3}),
            ),
            (
                MergeObjects,
                json!({"a": 1, "b": 2}),
                json!({"a": 3, "c": 4}),
                json!({"a": 1, "b": 2, "c": 4}),
            ),
            (
                MergeObjects,
                json!({"a": {"x": 1}}),
                json!({"a": {"x": 2, "y": 3}}),
                json!({"a": {"x": 1, "y": 3}}),
            ),
            (
                MergeObjects,
                json!({"a": "", "b": 0, "c": false, "d": [], "e": {}}),
                json!({"a": "x", "b": 1, "c": true, "d": [1], "e": {"k": 1}}),
                json!({"a": "x", "b": 1, "c": true, "d": [1], "e": {"k": 1}}),
            ),
            (
                MergeObjects,
                json!({"a": 1}),
                json!({"a": null}),
                json!({"a": 1}),
            ),
            (MergeObjects, json!("old"), json!("new"), json!("old")),
            (MergeObjects, json!([1, 2]), json!([3]), json!([1, 2])),
            (
                MergeObjects,
                json!({"a": [1]}),
                json!({"a": [2]}),
                json!({"a": [1]}),
            ),
            (
                MergeObjectsAppendArrays,
                json!({"a": [1]}),
                json!({"a": [1, 2]}),
                json!({"a": [1, 1, 2]}),
            ),
            (
                MergeObjectsAppendArrays,
                json!([1, 5]),
                json!([1, 2, 3, 3]),
                json!([1, 5, 2, 3, 3]),
            ),
            (
                MergeObjectsAppendArrays,
                json!({"a": 1}),
                json!({"a": 2, "b": [1]}),
                json!({"a": 1, "b": [1]}),
            ),
            (
                ForceMergeObjects,
                json!({"a": 1, "b": 2}),
                json!({"a": 3}),
                json!({"a": 3, "b": 2}),
            ),
            (
                ForceMergeObjects,
                json!({"a": 1}),
                json!({"a": null}),
                json!({"a": null}),
            ),
            (
                ForceMergeObjects,
                json!({"a": "x"}),
                json!({"a": ""}),
                json!({"a": ""}),
            ),
            (
                ForceMergeObjects,
                json!({"a": [1, 2]}),
                json!({"a": []}),
                json!({"a": []}),
            ),
            (
                ForceMergeObjects,
                json!({"a": {"x": 1}}),
                json!({"a": {}}),
                json!({"a": {"x": 1}}),
            ),
            (
                ForceMergeObjects,
                json!({"a": "scalar"}),
                json!({"a": {"x": 1}}),
                json!({"a": {"x": 1}}),
            ),
            (
                ForceMergeObjects,
                json!({"a": {"x": 1}}),
                json!({"a": "scalar"}),
                json!({"a": "scalar"}),
            ),
            (ForceMergeObjects, json!([1, 2]), json!([3]), json!([3])),
            (
                ForceMergeObjectsAppendArrays,
                json!({"a": [1], "b": 1}),
                json!({"a": [2], "b": 2}),
                json!({"a": [1, 2], "b": 2}),
            ),
            (
                ForceMergeObjectsAppendArrays,
                json!({"a": null}),
                json!({"a": [2]}),
                json!({"a": [2]}),
            ),
            (MergeObjects, json!(null), json!({"a": 1}), json!({"a": 1})),
            (MergeObjects, json!({"a": 1}), json!(null), json!(null)),
        ];
        for (policy, dst, src, expected) in cases {
            assert_eq!(
                policy_merge(policy, dst.clone(), src.clone()),
                Ok(expected),
                "{policy:?} {dst} <- {src}"
            );
        }
    }

    #[test]
    fn appending_to_a_non_array_fails_with_the_go_type() {
        let cases = [
            (json!({"a": "x"}), "string"),
            (json!({"a": ""}), "string"),
            (json!({"a": 3}), "int64"),
            (json!({"a": 1.5}), "float64"),
            (json!({"a": true}), "bool"),
            (json!({"a": {"b": 1}}), "map[string]interface {}"),
        ];
        for (dst, go_type) in cases {
            assert_eq!(
                policy_merge(
                    ToFieldPathPolicy::MergeObjectsAppendArrays,
                    dst,
                    json!({"a": [1]})
                ),
                Err(format!(
                    "failed to merge values: cannot append two slices with different type ([]interface {{}}, {go_type})"
                ))
            );
        }
    }

    #[test]
    fn missing_destination_is_set() {
        let mut object = json!({});
        let options = ToFieldPathPolicy::MergeObjects.merge_options();
        merge_value(&mut object, "spec.a.b", json!({"x": 1}), options).unwrap();
        assert_eq!(object, json!({"spec": {"a": {"b": {"x": 1}}}}));
    }

    #[test]
    fn unreadable_destination_fails_only_when_merging() {
        let mut object = json!({"spec": "scalar"});
        let err = merge_value(
            &mut object,
            "spec.a",
            json!(1),
            ToFieldPathPolicy::MergeObjects.merge_options(),
        )
        .unwrap_err();
        assert_eq!(err.message, "spec: not an object");
    }

    #[test]
    fn policy_names_parse_including_deprecated_spellings() {
        use ToFieldPathPolicy::*;
        let cases = [
            ("Replace", Some(Replace)),
            ("MergeObject", Some(MergeObjects)),
            ("MergeObjects", Some(MergeObjects)),
            ("MergeObjectsAppendArrays", Some(MergeObjectsAppendArrays)),
            ("ForceMergeObjects", Some(ForceMergeObjects)),
            ("AppendArray", Some(ForceMergeObjectsAppendArrays)),
            (
                "ForceMergeObjectsAppendArrays",
                Some(ForceMergeObjectsAppendArrays),
            ),
            ("replace", None),
        ];
        for (name, expected) in cases {
            assert_eq!(ToFieldPathPolicy::parse(name), expected, "{name}");
        }
    }
}
