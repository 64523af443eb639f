//! The step input: `cidr.fn.crossplane.io/v1beta1` `Parameters`, read as
//! upstream reads it (see [`plait_go_compat::input`]).

use plait_go_compat::input::{ObjectMeta, go_string};
use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct Parameters {
    #[serde(default)]
    pub api_version: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub metadata: Option<ObjectMeta>,
    #[serde(default, deserialize_with = "go_string")]
    pub cidr_func: Option<String>,
    #[serde(default, deserialize_with = "go_string")]
    pub cidr_func_field: Option<String>,
    #[serde(default)]
    pub multi_prefix: Option<Vec<MultiPrefix>>,
    #[serde(default, deserialize_with = "go_string")]
    pub multi_prefix_field: Option<String>,
    #[serde(default, deserialize_with = "go_string")]
    pub prefix_field: Option<String>,
    #[serde(default, deserialize_with = "go_string")]
    pub prefix: Option<String>,
    #[serde(default, deserialize_with = "go_string")]
    pub host_num_field: Option<String>,
    #[serde(default)]
    pub host_num: Option<i64>,
    #[serde(default, deserialize_with = "go_string")]
    pub new_bits_field: Option<String>,
    #[serde(default)]
    pub new_bits: Option<Vec<i64>>,
    #[serde(default, deserialize_with = "go_string")]
    pub net_num_field: Option<String>,
    #[serde(default)]
    pub net_num: Option<i64>,
    #[serde(default, deserialize_with = "go_string")]
    pub net_num_count_field: Option<String>,
    #[serde(default)]
    pub net_num_count: Option<i64>,
    #[serde(default, deserialize_with = "go_string")]
    pub net_num_items_field: Option<String>,
    #[serde(default)]
    pub net_num_items: Option<Vec<String>>,
    #[serde(default, deserialize_with = "go_string")]
    pub offset_field: Option<String>,
    #[serde(default)]
    pub offset: Option<i64>,
    #[serde(default, deserialize_with = "go_string")]
    pub output_field: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct MultiPrefix {
    #[serde(default, deserialize_with = "go_string")]
    pub prefix: Option<String>,
    #[serde(default)]
    pub new_bits: Option<Vec<i64>>,
    #[serde(default)]
    pub offset: Option<i64>,
}

plait_go_compat::go_structs!(
    Parameters => "v1beta1.Parameters",
    MultiPrefix => "v1beta1.MultiPrefix",
);

/// A Go string field: absent and empty are the same.
pub fn text(field: &Option<String>) -> &str {
    field.as_deref().unwrap_or_default()
}
