//! Whether one CustomResourceDefinition serves at least what another does: every
//! version (served), every field path, every enum value and every default. plait
//! uses it to leave a CRD another field manager installed (Crossplane's) when that
//! CRD already serves everything plait's does, and its tests use it to prove plait's
//! CRDs are never narrower than upstream Crossplane's.

use std::fmt;

use serde_json::Value;

/// Something `reference` serves that the candidate CRD does not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Narrowing {
    /// The version is missing or not served.
    Version { version: String },
    /// The field path (`.spec.pipeline[].step`, `{}` for map values) is missing.
    Field { version: String, path: String },
    /// The enum at `path` lacks `value` (the candidate restricts values the reference accepts).
    EnumValue {
        version: String,
        path: String,
        value: Value,
    },
    /// The default at `path` is missing or differs.
    Default {
        version: String,
        path: String,
        expected: Value,
        found: Option<Value>,
    },
}

impl fmt::Display for Narrowing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Narrowing::Version { version } => write!(f, "version {version} is not served"),
            Narrowing::Field { version, path } => write!(f, "{version}: field {path} is missing"),
            Narrowing::EnumValue {
                version,
                path,
                value,
            } => write!(f, "{version}: {path} does not accept {value}"),
            Narrowing::Default {
                version,
                path,
                expected,
                found: Some(found),
            } => write!(f, "{version}: {path} defaults to {found}, not {expected}"),
            Narrowing::Default {
                version,
                path,
                expected,
                found: None,
            } => write!(f, "{version}: {path} has no default (expected {expected})"),
        }
    }
}

/// What `reference` serves that `candidate` does not, in `reference`'s order; empty
/// when `candidate` is at least as wide. A node of `candidate` that preserves unknown
/// fields serves every field below it.
pub fn narrowings(reference: &Value, candidate: &Value) -> Vec<Narrowing> {
    let mut found = Vec::new();
    for version in versions(reference) {
        let Some(name) = version.get("name").and_then(Value::as_str) else {
            continue;
        };
        if version.get("served").and_then(Value::as_bool) == Some(false) {
            continue;
        }
        let theirs = versions(candidate)
            .find(|v| v.get("name").and_then(Value::as_str) == Some(name))
            .filter(|v| v.get("served").and_then(Value::as_bool) != Some(false));
        let Some(theirs) = theirs else {
            found.push(Narrowing::Version {
                version: name.to_string(),
            });
            continue;
        };
        compare(
            name,
            String::new(),
            schema(version),
            schema(theirs),
            &mut found,
        );
    }
    found
}

fn versions(crd: &Value) -> impl Iterator<Item = &Value> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn schema(version: &Value) -> Option<&Value> {
    version.pointer("/schema/openAPIV3Schema")
}

fn preserves_unknown(node: &Value) -> bool {
    node.get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true)
}

fn compare(
    version: &str,
    path: String,
    reference: Option<&Value>,
    candidate: Option<&Value>,
    found: &mut Vec<Narrowing>,
) {
    let Some(reference) = reference else { return };
    let Some(candidate) = candidate else {
        found.push(Narrowing::Field {
            version: version.to_string(),
            path: if path.is_empty() { ".".into() } else { path },
        });
        return;
    };
    if let Some(values) = reference.get("enum").and_then(Value::as_array)
        && let Some(accepted) = candidate.get("enum").and_then(Value::as_array)
    {
        for value in values.iter().filter(|v| !accepted.contains(v)) {
            found.push(Narrowing::EnumValue {
                version: version.to_string(),
                path: path.clone(),
                value: value.clone(),
            });
        }
    }
    if let Some(expected) = reference.get("default")
        && candidate.get("default") != Some(expected)
    {
        found.push(Narrowing::Default {
            version: version.to_string(),
            path: path.clone(),
            expected: expected.clone(),
            found: candidate.get("default").cloned(),
        });
    }
    let open = preserves_unknown(candidate);
    if let Some(properties) = reference.get("properties").and_then(Value::as_object) {
        for (name, child) in properties {
            let theirs = candidate.pointer(&format!("/properties/{}", escape(name)));
            if theirs.is_none() && open {
                continue;
            }
            compare(
                version,
                format!("{path}.{name}"),
                Some(child),
                theirs,
                found,
            );
        }
    }
    for (key, suffix) in [("items", "[]"), ("additionalProperties", "{}")] {
        let Some(child) = reference.get(key).filter(|c| c.is_object()) else {
            continue;
        };
        let theirs = candidate.get(key).filter(|c| c.is_object());
        if theirs.is_none() && (open || candidate.get(key) == Some(&Value::Bool(true))) {
            continue;
        }
        compare(
            version,
            format!("{path}{suffix}"),
            Some(child),
            theirs,
            found,
        );
    }
}

/// Escapes a property name for a JSON pointer.
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(versions: Value) -> Value {
        json!({"spec": {"versions": versions}})
    }

    fn version(name: &str, schema: Value) -> Value {
        json!({"name": name, "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}})
    }

    #[test]
    fn each_way_a_crd_can_be_narrower_is_named() {
        let reference = crd(json!([
            version(
                "v1",
                json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                    "mode": {"type": "string", "enum": ["Pipeline", "Resources"], "default": "Pipeline"},
                    "steps": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}}
                }}}})
            ),
            version("v1beta1", json!({"type": "object"}))
        ]));
        let cases: Vec<(&str, Value, Vec<String>)> = vec![
            ("the same CRD", reference.clone(), vec![]),
            (
                "a CRD without the version",
                crd(json!([reference["spec"]["versions"][0].clone()])),
                vec!["version v1beta1 is not served".into()],
            ),
            (
                "a CRD whose node preserves unknown fields",
                crd(json!([
                    version(
                        "v1",
                        json!({"type": "object", "properties": {"spec": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true,
                        "properties": {"mode": {"type": "string", "enum": ["Pipeline", "Resources"], "default": "Pipeline"}}}}})
                    ),
                    version("v1beta1", json!({"type": "object"}))
                ])),
                vec![],
            ),
            (
                "a CRD missing a field, an enum value, a default and an item field",
                crd(json!([
                    version(
                        "v1",
                        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                            "mode": {"type": "string", "enum": ["Pipeline"]},
                            "steps": {"type": "array", "items": {"type": "object"}}
                        }}}})
                    ),
                    version("v1beta1", json!({"type": "object"}))
                ])),
                vec![
                    "v1: field .spec.labels is missing".into(),
                    "v1: .spec.mode does not accept \"Resources\"".into(),
                    "v1: .spec.mode has no default (expected \"Pipeline\")".into(),
                    "v1: field .spec.steps[].name is missing".into(),
                ],
            ),
        ];
        for (case, candidate, expected) in cases {
            let found: Vec<String> = narrowings(&reference, &candidate)
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(found, expected, "{case}");
        }
    }
}
