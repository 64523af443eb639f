//! The step input: `environmentconfigs.fn.crossplane.io/v1beta1` `Input`.
//!
//! Read as upstream reads it (see [`plait_go_compat::input`]): a member
//! name upstream's Go structs do not declare is refused with upstream's
//! message, naming the Go struct.

use plait_go_compat::input::{ObjectMeta, null_as_default};
use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct Input {
    #[serde(default)]
    pub api_version: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub metadata: Option<ObjectMeta>,
    /// `null` reads as an empty spec, as Go's zero value.
    #[serde(default, deserialize_with = "null_as_default")]
    pub spec: InputSpec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct InputSpec {
    /// The environment's starting point; selected configs are merged on top.
    pub default_data: Option<Map<String, Value>>,
    /// `None` (rather than empty) means the step has nothing to do at all.
    pub environment_configs: Option<Vec<EnvironmentSource>>,
    pub policy: Option<Policy>,
}

impl InputSpec {
    pub fn resolution_is_optional(&self) -> bool {
        matches!(
            self.policy,
            Some(Policy {
                resolution: Some(Resolution::Optional)
            })
        )
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct Policy {
    pub resolution: Option<Resolution>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Resolution {
    Required,
    Optional,
}

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct EnvironmentSource {
    #[serde(rename = "type", default)]
    pub source_type: SourceType,
    #[serde(rename = "ref")]
    pub reference: Option<Reference>,
    pub selector: Option<Selector>,
    /// Upstream (v0.7) nests the config's data under this path; plait
    /// refuses an input that sets it rather than ignore it.
    pub to_field_path: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum SourceType {
    #[default]
    Reference,
    Selector,
}

#[derive(Debug, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct Reference {
    pub name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct Selector {
    #[serde(default)]
    pub mode: SelectorMode,
    pub max_match: Option<u64>,
    pub min_match: Option<u64>,
    pub sort_by_field_path: Option<String>,
    #[serde(default)]
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

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum SelectorMode {
    #[default]
    Single,
    Multiple,
}

#[derive(Debug, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct LabelMatcher {
    #[serde(rename = "type", default)]
    pub matcher_type: MatcherType,
    pub key: String,
    pub value_from_field_path: Option<String>,
    pub from_field_path_policy: Option<FromFieldPathPolicy>,
    pub value: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum MatcherType {
    #[default]
    FromCompositeFieldPath,
    /// Reads the label value from the environment already in the context.
    FromEnvironmentFieldPath,
    Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum FromFieldPathPolicy {
    Required,
    Optional,
}

plait_go_compat::go_structs!(
    Input => "v1beta1.Input",
    InputSpec => "v1beta1.InputSpec",
    Policy => "v1beta1.Policy",
    EnvironmentSource => "v1beta1.EnvironmentSource",
    Reference => "v1beta1.EnvironmentSourceReference",
    Selector => "v1beta1.EnvironmentSourceSelector",
    LabelMatcher => "v1beta1.EnvironmentSourceSelectorLabelMatcher",
);
