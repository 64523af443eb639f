//! `apiextensions.crossplane.io/v1` Composition.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::meta::{Manifest, ObjectMeta, TypeReference, nullable};

/// A Composition: how an XR of `compositeTypeRef` is made of other resources.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Composition {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: CompositionSpec,
}

impl Manifest for Composition {
    const KIND: &'static str = "Composition";
    const API_VERSIONS: &'static [&'static str] = &["apiextensions.crossplane.io/v1"];
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompositionSpec {
    #[serde(default)]
    pub composite_type_ref: TypeReference,
    /// As written; see [`Composition::mode`] for the effective mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<CompositionMode>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub pipeline: Vec<PipelineStep>,
    /// Legacy native patch-and-transform templates, kept as written.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub resources: Vec<Value>,
    /// Legacy native patch sets, kept as written.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub patch_sets: Vec<Value>,
    /// Legacy native environment (removed in Crossplane v1.18).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<EnvironmentConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_connection_secrets_to_namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publish_connection_details_with_store_config_ref: Option<StoreConfigReference>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CompositionMode {
    Resources,
    Pipeline,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StoreConfigReference {
    #[serde(default)]
    pub name: String,
}

/// One step of a `mode: Pipeline` Composition.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PipelineStep {
    #[serde(default)]
    pub step: String,
    #[serde(default)]
    pub function_ref: FunctionReference,
    /// The function's input, an arbitrary KRM-like object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub credentials: Vec<FunctionCredentials>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requirements: Option<FunctionRequirements>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FunctionReference {
    #[serde(default)]
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionCredentials {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<CredentialsSource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CredentialsSource {
    None,
    Secret,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SecretReference {
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub name: String,
}

/// Resources a step needs before it is first called.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionRequirements {
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub required_resources: Vec<RequiredResourceSelector>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequiredResourceSelector {
    #[serde(default)]
    pub requirement_name: String,
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// Legacy native `spec.environment`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentConfiguration {
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub environment_configs: Vec<EnvironmentSource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<EnvironmentPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_data: Option<Map<String, Value>>,
    /// Environment patches, kept as written.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub patches: Vec<Value>,
}

impl EnvironmentConfiguration {
    /// True when no field is set.
    pub fn is_empty(&self) -> bool {
        self.environment_configs.is_empty()
            && self.policy.is_none()
            && self.default_data.is_none()
            && self.patches.is_empty()
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentSource {
    /// Defaults to `Reference`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub source_type: Option<EnvironmentSourceType>,
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<EnvironmentSourceReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<EnvironmentSourceSelector>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EnvironmentSourceType {
    Reference,
    Selector,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct EnvironmentSourceReference {
    #[serde(default)]
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentSourceSelector {
    /// Defaults to `Single`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<SelectorMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_match: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_match: Option<u64>,
    /// Defaults to `metadata.name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_by_field_path: Option<String>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub match_labels: Vec<LabelMatcher>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SelectorMode {
    Single,
    Multiple,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelMatcher {
    /// Defaults to `FromCompositeFieldPath`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub matcher_type: Option<LabelMatcherType>,
    #[serde(default)]
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_from_field_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_field_path_policy: Option<FromFieldPathPolicy>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LabelMatcherType {
    FromCompositeFieldPath,
    Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FromFieldPathPolicy {
    Optional,
    Required,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentPolicy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<ResolutionPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolve: Option<ResolvePolicy>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResolutionPolicy {
    Required,
    Optional,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResolvePolicy {
    Always,
    IfNotPresent,
}

impl Composition {
    /// The effective mode. Upstream v1 defaulted a missing mode to `Resources`; a Composition
    /// that omits it but has only a pipeline is a v2 one, whose default is `Pipeline`.
    pub fn mode(&self) -> CompositionMode {
        match self.spec.mode {
            Some(m) => m,
            None if self.spec.resources.is_empty() && !self.spec.pipeline.is_empty() => {
                CompositionMode::Pipeline
            }
            None => CompositionMode::Resources,
        }
    }

    /// The Composition's name, or `""`.
    pub fn name(&self) -> &str {
        self.metadata.name()
    }
}
