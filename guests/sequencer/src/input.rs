//! The step input: `sequencer.fn.crossplane.io/v1beta1` `Input`, read as
//! upstream reads it (see [`plait_go_compat::input`]).

use plait_go_compat::input::{ObjectMeta, go_string};
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
    /// A Go duration; empty keeps the default TTL.
    #[serde(default, rename = "cacheTTL", deserialize_with = "go_string")]
    pub cache_ttl: Option<String>,
    #[serde(default)]
    pub enable_deletion_sequencing: Option<bool>,
    #[serde(default)]
    pub replay_deletion: Option<bool>,
    #[serde(default, deserialize_with = "go_string")]
    pub usage_version: Option<String>,
    #[serde(default)]
    pub reset_composite_readiness: Option<bool>,
    #[serde(default)]
    pub rules: Option<Vec<SequencingRule>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct SequencingRule {
    /// A CEL expression; when it is false the rule does not hold back creation.
    #[serde(default, deserialize_with = "go_string")]
    pub condition: Option<String>,
    #[serde(default)]
    pub delete_only: Option<bool>,
    /// Composed resource names, each a regular expression.
    #[serde(default)]
    pub sequence: Option<Vec<String>>,
}

plait_go_compat::go_structs!(
    Input => "v1beta1.Input",
    SequencingRule => "v1beta1.SequencingRule",
);

/// Which Usage kinds deletion sequencing creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageVersion {
    /// `apiextensions.crossplane.io/v1beta1` `Usage`, cluster-scoped only.
    V1,
    /// `protection.crossplane.io/v1beta1` `Usage` or `ClusterUsage`.
    V2,
}

impl Input {
    /// Upstream compares with `v1` and takes anything else for v2.
    pub fn usage_version(&self) -> UsageVersion {
        if self.usage_version.as_deref() == Some("v1") {
            UsageVersion::V1
        } else {
            UsageVersion::V2
        }
    }
}
