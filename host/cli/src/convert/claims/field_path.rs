//! The design's field paths (`.spec.engineVersion`): read from a class,
//! written into a base, or mapped to the composite's field a patch reads.

use anyhow::{Result, bail};
use serde_json::{Value, json};

/// Crossplane's labels on the composite resource of a claim, naming the claim.
const LABEL_CLAIM_NAME: &str = "crossplane.io/claim-name";
const LABEL_CLAIM_NAMESPACE: &str = "crossplane.io/claim-namespace";

/// A field path of the design (`.spec.engineVersion`): dotted names.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct FieldPath {
    /// The definition's field the path was given in, for errors.
    pub(super) field: String,
    pub(super) segments: Vec<String>,
}

impl FieldPath {
    pub(super) fn parse(text: &str, field: &str) -> Result<Self> {
        let trimmed = text.strip_prefix('.').unwrap_or(text);
        let segments: Vec<String> = trimmed.split('.').map(str::to_string).collect();
        let plain = |s: &String| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        };
        if !segments.iter().all(plain) {
            bail!(
                "{field}: {text:?} is not a field path plait convert can map: dotted field names \
                 (letters, digits, '_' and '-'), e.g. .spec.engineVersion"
            );
        }
        Ok(FieldPath {
            field: field.to_string(),
            segments,
        })
    }

    /// The path as a Crossplane field path (`spec.engineVersion`).
    pub(super) fn crossplane(&self) -> String {
        self.segments.join(".")
    }

    pub(super) fn starts_with(&self, other: &FieldPath) -> bool {
        self.segments.starts_with(&other.segments)
    }

    pub(super) fn get<'a>(&self, value: &'a Value) -> Option<&'a Value> {
        self.segments
            .iter()
            .try_fold(value, |node, segment| node.get(segment))
    }

    /// Merges `value` into `target` at this path, objects key by key.
    pub(super) fn overlay(&self, target: &mut Value, value: &Value) -> Result<()> {
        let mut node = target;
        for segment in &self.segments {
            let Value::Object(map) = node else {
                bail!("{}: {} is not an object", self.field, self.crossplane());
            };
            node = map.entry(segment.clone()).or_insert_with(|| json!({}));
        }
        merge(node, value);
        Ok(())
    }

    /// The claim's field as its composite resource has it: the claim's spec
    /// is the composite's, and its name and namespace are labels on it.
    pub(super) fn on_composite(&self) -> Result<String> {
        match self.segments.as_slice() {
            [first, ..] if first == "spec" && self.segments.len() > 1 => Ok(self.crossplane()),
            [metadata, name] if metadata == "metadata" && name == "name" => {
                Ok(format!("metadata.labels[{LABEL_CLAIM_NAME}]"))
            }
            [metadata, namespace] if metadata == "metadata" && namespace == "namespace" => {
                Ok(format!("metadata.labels[{LABEL_CLAIM_NAMESPACE}]"))
            }
            _ => bail!(
                "{}: .{} does not reach the composite resource: only a claim's .spec fields, \
                 .metadata.name and .metadata.namespace do",
                self.field,
                self.crossplane()
            ),
        }
    }
}

pub(super) fn merge(target: &mut Value, value: &Value) {
    match (target, value) {
        (Value::Object(target), Value::Object(value)) => {
            for (key, child) in value {
                match target.get_mut(key) {
                    Some(existing) => merge(existing, child),
                    None => {
                        target.insert(key.clone(), child.clone());
                    }
                }
            }
        }
        (target, value) => *target = value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_paths_map_to_crossplane_field_paths_or_are_refused_by_field() {
        let cases = [
            (".spec.engineVersion", Ok("spec.engineVersion")),
            (
                "spec.forProvider.databaseVersion",
                Ok("spec.forProvider.databaseVersion"),
            ),
            (
                ".spec.items[0]",
                Err("f: \".spec.items[0]\" is not a field path"),
            ),
            (".spec..x", Err("f: \".spec..x\" is not a field path")),
        ];
        for (text, want) in cases {
            let got = FieldPath::parse(text, "f").map(|p| p.crossplane());
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{text}"),
                (Err(got), Err(want)) => {
                    assert!(got.to_string().starts_with(want), "{text}: {got}")
                }
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn claim_fields_reach_the_composite_through_its_spec_and_claim_labels() {
        let cases = [
            (".spec.engineVersion", Some("spec.engineVersion")),
            (
                ".metadata.name",
                Some("metadata.labels[crossplane.io/claim-name]"),
            ),
            (
                ".metadata.namespace",
                Some("metadata.labels[crossplane.io/claim-namespace]"),
            ),
            (".metadata.uid", None),
            (".spec", None),
            (".status.phase", None),
        ];
        for (text, want) in cases {
            let got = FieldPath::parse(text, "f")
                .and_then(|p| p.on_composite())
                .ok();
            assert_eq!(got.as_deref(), want, "{text}");
        }
    }
}
