//! The step input: `krm.kcl.dev/v1alpha1` `KCLInput` (any kind and
//! apiVersion are read the same way, as upstream never checks them).
//!
//! Read as upstream reads it (see [`plait_go_compat::input`]): a member
//! name upstream's Go structs do not declare is refused with upstream's
//! message, naming the Go struct.

use plait_go_compat::input::ObjectMeta;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct KclInput {
    #[serde(default)]
    pub api_version: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub metadata: Option<ObjectMeta>,
    #[serde(default, deserialize_with = "nullable")]
    pub spec: RunSpec,
}

fn nullable<'de, D: Deserializer<'de>, T: Default + Deserialize<'de>>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// `RunSpec`: what to run and where its output goes.
#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct RunSpec {
    #[serde(default, deserialize_with = "nullable")]
    pub source: String,
    #[serde(default, deserialize_with = "nullable")]
    pub config: ConfigSpec,
    #[serde(default, deserialize_with = "nullable")]
    pub credentials: CredSpec,
    #[serde(default, deserialize_with = "nullable")]
    pub dependencies: String,
    /// The user's `option("params")` entries, before the request's.
    #[serde(default, deserialize_with = "nullable")]
    pub params: Map<String, Value>,
    #[serde(default, deserialize_with = "nullable")]
    pub resources: Vec<InputResource>,
    #[serde(default, deserialize_with = "nullable")]
    pub target: String,
}

/// `ConfigSpec`: KCL's compile options.
#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct ConfigSpec {
    #[serde(default, deserialize_with = "nullable")]
    pub arguments: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub settings: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub overrides: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub path_selectors: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub vendor: bool,
    #[serde(default, deserialize_with = "nullable")]
    pub sort_keys: bool,
    #[serde(default, deserialize_with = "nullable")]
    pub show_hidden: bool,
    #[serde(default, deserialize_with = "nullable")]
    pub disable_none: bool,
    #[serde(default, deserialize_with = "nullable")]
    pub debug: bool,
    #[serde(default, deserialize_with = "nullable")]
    pub strict_range_check: bool,
}

/// `CredSpec`: credentials for remote sources, which the built-in does
/// not fetch.
#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct CredSpec {
    #[serde(default, deserialize_with = "nullable")]
    pub url: String,
    #[serde(default, deserialize_with = "nullable")]
    pub username: String,
    #[serde(default, deserialize_with = "nullable")]
    pub password: String,
}

/// An entry of `spec.resources`, the bases the `PatchResources` target
/// patches.
#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct InputResource {
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    #[serde(default)]
    pub base: Option<Value>,
}

plait_go_compat::go_structs!(
    KclInput => "v1alpha1.KCLInput",
    RunSpec => "v1alpha1.RunSpec",
    ConfigSpec => "v1alpha1.ConfigSpec",
    CredSpec => "v1alpha1.CredSpec",
    InputResource => "v1alpha1.Resource",
);
