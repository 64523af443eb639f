//! A `ResourceClaimDefinition` as the CompositeResourceDefinition of its
//! claim kind.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{envelope, parse};

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct ClaimSpec {
    group: String,
    names: ClaimNames,
    version: String,
    validation: Option<Validation>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct ClaimNames {
    pub(super) kind: String,
    plural: String,
    list_kind: Option<String>,
    singular: Option<String>,
    #[serde(default)]
    short_names: Vec<String>,
    #[serde(default)]
    categories: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Validation {
    #[serde(rename = "openAPIV3Schema")]
    schema: Value,
}

pub(super) struct ClaimDefinition {
    labels: BTreeMap<String, String>,
    pub(super) group: String,
    pub(super) names: ClaimNames,
    version: String,
    schema: Value,
}

impl ClaimDefinition {
    pub(super) fn parse(document: &Value) -> Result<Self> {
        let envelope = envelope(document)?;
        let spec: ClaimSpec = parse(&envelope.spec, "spec")?;
        for (field, value) in [
            ("spec.group", &spec.group),
            ("spec.names.kind", &spec.names.kind),
            ("spec.names.plural", &spec.names.plural),
            ("spec.version", &spec.version),
        ] {
            if value.is_empty() {
                bail!("{field}: required");
            }
        }
        let schema = match spec.validation {
            Some(validation) => structural(validation.schema, "spec.validation.openAPIV3Schema")?,
            None => json!({"type": "object", "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}),
        };
        Ok(ClaimDefinition {
            labels: envelope.metadata.labels,
            group: spec.group,
            names: spec.names,
            version: spec.version,
            schema,
        })
    }

    pub(super) fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }

    /// The composite resource's kind: the claim's with an `X` before it.
    pub(super) fn composite_kind(&self) -> String {
        format!("X{}", self.names.kind)
    }

    pub(super) fn to_xrd(&self) -> Value {
        let names = &self.names;
        let mut composite_names = Map::new();
        composite_names.insert("kind".into(), json!(self.composite_kind()));
        composite_names.insert("plural".into(), json!(format!("x{}", names.plural)));
        if let Some(list_kind) = &names.list_kind {
            composite_names.insert("listKind".into(), json!(format!("X{list_kind}")));
        }
        if let Some(singular) = &names.singular {
            composite_names.insert("singular".into(), json!(format!("x{singular}")));
        }
        let mut claim_names = Map::new();
        claim_names.insert("kind".into(), json!(names.kind));
        claim_names.insert("plural".into(), json!(names.plural));
        if let Some(list_kind) = &names.list_kind {
            claim_names.insert("listKind".into(), json!(list_kind));
        }
        if let Some(singular) = &names.singular {
            claim_names.insert("singular".into(), json!(singular));
        }
        if !names.short_names.is_empty() {
            claim_names.insert("shortNames".into(), json!(names.short_names));
        }
        if !names.categories.is_empty() {
            claim_names.insert("categories".into(), json!(names.categories));
        }
        let mut metadata = Map::new();
        metadata.insert(
            "name".into(),
            json!(format!("x{}.{}", names.plural, self.group)),
        );
        if !self.labels.is_empty() {
            metadata.insert("labels".into(), json!(self.labels));
        }
        json!({
            "apiVersion": "apiextensions.crossplane.io/v1",
            "kind": "CompositeResourceDefinition",
            "metadata": metadata,
            "spec": {
                "group": self.group,
                "names": composite_names,
                "claimNames": claim_names,
                "versions": [{
                    "name": self.version,
                    "served": true,
                    "referenceable": true,
                    "schema": {"openAPIV3Schema": self.schema},
                }],
            },
        })
    }

    /// Whether the claim's schema has the field at `path` (below the root),
    /// or leaves it open (`x-kubernetes-preserve-unknown-fields`).
    pub(super) fn has_field(&self, path: &[String]) -> bool {
        let mut schema = &self.schema;
        for segment in path {
            if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
                return true;
            }
            match schema.pointer(&format!("/properties/{}", segment.replace('~', "~0"))) {
                Some(next) => schema = next,
                None => return false,
            }
        }
        true
    }
}

/// The design's schemas leave `type: object` implicit where `properties`
/// are given; an XRD's schema must be structural, so it is filled in.
/// A root with fields besides spec and status is refused: an XRD defines
/// only those.
pub(super) fn structural(mut schema: Value, field: &str) -> Result<Value> {
    fn fill(schema: &mut Value) {
        let Value::Object(node) = schema else { return };
        if (node.contains_key("properties") || node.contains_key("additionalProperties"))
            && !node.contains_key("type")
        {
            node.insert("type".into(), json!("object"));
        } else if node.contains_key("items") && !node.contains_key("type") {
            node.insert("type".into(), json!("array"));
        }
        for key in ["properties", "patternProperties"] {
            if let Some(Value::Object(children)) = node.get_mut(key) {
                children.values_mut().for_each(fill);
            }
        }
        for key in ["items", "additionalProperties", "not"] {
            if let Some(child) = node.get_mut(key) {
                fill(child);
            }
        }
        for key in ["allOf", "anyOf", "oneOf"] {
            if let Some(Value::Array(children)) = node.get_mut(key) {
                children.iter_mut().for_each(fill);
            }
        }
    }
    if !schema.is_object() {
        bail!("{field}: must be an object");
    }
    fill(&mut schema);
    if schema.get("type").is_none() {
        schema["type"] = json!("object");
    }
    if let Some(Value::Object(properties)) = schema.get("properties") {
        for name in properties.keys() {
            if !matches!(name.as_str(), "spec" | "status") {
                bail!(
                    "{field}.properties.{name}: an XRD's schema defines only spec and status \
                     (Crossplane adds apiVersion, kind and metadata)"
                );
            }
        }
    }
    Ok(schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn implicit_object_types_are_filled_in_and_other_root_fields_refused() {
        let schema = json!({"properties": {"spec": {"properties": {"tags": {"items": {"type": "string"}}}}}});
        let got = structural(schema, "s").unwrap();
        assert_eq!(got["type"], "object");
        assert_eq!(got["properties"]["spec"]["type"], "object");
        assert_eq!(
            got["properties"]["spec"]["properties"]["tags"]["type"],
            "array"
        );
        let error = structural(json!({"properties": {"metadata": {}}}), "s").unwrap_err();
        assert!(
            error.to_string().starts_with("s.properties.metadata:"),
            "{error}"
        );
    }
}
