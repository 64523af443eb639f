//! EnvironmentConfig: named, labelled bags of data a pipeline can select.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::meta::{Manifest, ObjectMeta, nullable};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentConfig {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Map::is_empty"
    )]
    pub data: Map<String, Value>,
}

impl Manifest for EnvironmentConfig {
    const KIND: &'static str = "EnvironmentConfig";
    const API_VERSIONS: &'static [&'static str] = &[
        "apiextensions.crossplane.io/v1beta1",
        "apiextensions.crossplane.io/v1alpha1",
    ];
}
