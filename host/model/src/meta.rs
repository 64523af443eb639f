//! Kubernetes object metadata and the decoding plumbing shared by all manifests.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::ModelError;

/// `metadata` of a Kubernetes object. Fields the model does not name are kept in `extra`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub labels: BTreeMap<String, String>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub annotations: BTreeMap<String, String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ObjectMeta {
    /// The name, or `""` when unset.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or_default()
    }
}

/// A reference to an API type by apiVersion and kind.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypeReference {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
}

/// Decodes an absent-or-null field as its default: the API server treats `null` like absence.
pub(crate) fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Decodes a JSON value into `T`, naming the failing field path on error
/// (e.g. `spec.pipeline[0].functionRef`).
pub fn decode<T: DeserializeOwned>(value: Value, what: &'static str) -> Result<T, ModelError> {
    serde_path_to_error::deserialize(value).map_err(|e| ModelError::Decode {
        what,
        path: e.path().to_string(),
        message: e.inner().to_string(),
    })
}

/// A top-level Crossplane object with a fixed kind and a set of accepted apiVersions.
pub trait Manifest: DeserializeOwned {
    const KIND: &'static str;
    const API_VERSIONS: &'static [&'static str];

    /// Checks apiVersion and kind, then decodes.
    fn from_value(value: Value) -> Result<Self, ModelError> {
        let api_version = value
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = value
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if kind != Self::KIND || !Self::API_VERSIONS.contains(&api_version) {
            return Err(ModelError::WrongKind {
                expected: Self::KIND,
                api_versions: Self::API_VERSIONS.join(", "),
                api_version: api_version.to_string(),
                kind: kind.to_string(),
            });
        }
        decode(value, Self::KIND)
    }

    /// True when `value` has this type's kind and one of its apiVersions.
    fn matches(value: &Value) -> bool {
        value.get("kind").and_then(Value::as_str) == Some(Self::KIND)
            && value
                .get("apiVersion")
                .and_then(Value::as_str)
                .is_some_and(|v| Self::API_VERSIONS.contains(&v))
    }
}

/// Splits a multi-document YAML stream into JSON values, skipping empty documents.
/// `file` names the stream in errors; document indexes count from 0 over all documents.
pub fn parse_documents(text: &str, file: &str) -> Result<Vec<Value>, ModelError> {
    let mut out = Vec::new();
    for (index, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let value = Value::deserialize(doc).map_err(|e| ModelError::Yaml {
            file: file.to_string(),
            index,
            message: e.to_string(),
        })?;
        if !value.is_null() {
            out.push(value);
        }
    }
    Ok(out)
}
