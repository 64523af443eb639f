//! `pkg.crossplane.io` Function packages.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::meta::{Manifest, ObjectMeta, nullable};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Function {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: FunctionSpec,
}

impl Manifest for Function {
    const KIND: &'static str = "Function";
    const API_VERSIONS: &'static [&'static str] =
        &["pkg.crossplane.io/v1", "pkg.crossplane.io/v1beta1"];
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionSpec {
    /// The OCI reference of the package, e.g. `xpkg.crossplane.io/org/fn:v1.0.0`.
    #[serde(default)]
    pub package: String,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub package_pull_secrets: Vec<LocalObjectReference>,
    /// Package-manager settings the model does not interpret (runtimeConfigRef, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LocalObjectReference {
    #[serde(default)]
    pub name: String,
}

impl Function {
    pub fn name(&self) -> &str {
        self.metadata.name()
    }
}
