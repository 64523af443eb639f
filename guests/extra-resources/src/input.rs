//! The step input: `extra-resources.fn.crossplane.io/v1beta1` `Input`, read
//! as upstream reads it (see [`plait_go_compat::input`]). Upstream's
//! enumerations are Go strings, so any text is read; what is not one of
//! their values matches nothing, as upstream.

use plait_go_compat::input::{ObjectMeta, go_string, null_as_default};
use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct Input {
    #[serde(default)]
    pub api_version: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub metadata: Option<ObjectMeta>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub spec: InputSpec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct InputSpec {
    #[serde(default, deserialize_with = "null_as_default")]
    pub extra_resources: Vec<ResourceSource>,
    #[serde(default)]
    pub policy: Option<Policy>,
}

impl InputSpec {
    pub fn resolution_is_optional(&self) -> bool {
        self.policy.as_ref().and_then(|p| p.resolution.as_deref()) == Some("Optional")
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct Policy {
    #[serde(default, deserialize_with = "go_string")]
    pub resolution: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct ResourceSource {
    #[serde(rename = "type", default, deserialize_with = "go_string")]
    pub source_type: Option<String>,
    #[serde(rename = "ref", default)]
    pub reference: Option<Reference>,
    #[serde(default)]
    pub selector: Option<Selector>,
    #[serde(default, deserialize_with = "go_string")]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "go_string")]
    pub api_version: Option<String>,
    #[serde(default, deserialize_with = "go_string")]
    pub namespace: Option<String>,
    #[serde(default, deserialize_with = "go_string")]
    pub into: Option<String>,
}

/// How an entry finds its objects: `type` empty or `Reference` asks by
/// name, `Selector` by labels; any other type asks for nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceType {
    Reference,
    Selector,
    Other,
}

impl ResourceSource {
    pub fn source_type(&self) -> SourceType {
        match self.source_type.as_deref() {
            None | Some("" | "Reference") => SourceType::Reference,
            Some("Selector") => SourceType::Selector,
            Some(_) => SourceType::Other,
        }
    }

    pub fn into(&self) -> &str {
        self.into.as_deref().unwrap_or_default()
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct Reference {
    #[serde(default, deserialize_with = "go_string")]
    pub name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct Selector {
    #[serde(default)]
    pub max_match: Option<u64>,
    #[serde(default)]
    pub min_match: Option<u64>,
    #[serde(default, deserialize_with = "go_string")]
    pub sort_by_field_path: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub match_labels: Vec<LabelMatcher>,
}

impl Selector {
    pub fn sort_by_field_path(&self) -> &str {
        match self.sort_by_field_path.as_deref() {
            None | Some("") => "metadata.name",
            Some(path) => path,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct LabelMatcher {
    #[serde(rename = "type", default, deserialize_with = "go_string")]
    pub matcher_type: Option<String>,
    #[serde(default, deserialize_with = "go_string")]
    pub key: Option<String>,
    #[serde(default, deserialize_with = "go_string")]
    pub value_from_field_path: Option<String>,
    #[serde(default, deserialize_with = "go_string")]
    pub from_field_path_policy: Option<String>,
    #[serde(default, deserialize_with = "go_string")]
    pub value: Option<String>,
}

plait_go_compat::go_structs!(
    Input => "v1beta1.Input",
    InputSpec => "v1beta1.InputSpec",
    Policy => "v1beta1.Policy",
    ResourceSource => "v1beta1.ResourceSource",
    Reference => "v1beta1.ResourceSourceReference",
    Selector => "v1beta1.ResourceSourceSelector",
    LabelMatcher => "v1beta1.ResourceSourceSelectorLabelMatcher",
);
