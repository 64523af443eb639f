//! The step input:
//! `function-status-transformer.fn.crossplane.io/v1beta1`
//! `StatusTransformation`, read as upstream reads it (see
//! [`plait_go_compat::input`]). Its enumerations are Go strings: any text
//! is read, and what is not one of their values takes the default, as
//! upstream.

use plait_go_compat::input::{ObjectMeta, go_string, null_as_default};
use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct StatusTransformation {
    #[serde(default)]
    pub api_version: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub metadata: Option<ObjectMeta>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub status_condition_hooks: Vec<StatusConditionHook>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct StatusConditionHook {
    #[serde(default, deserialize_with = "null_as_default")]
    pub matchers: Vec<Matcher>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub set_conditions: Vec<SetCondition>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub create_events: Vec<CreateEvent>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct Matcher {
    #[serde(default, deserialize_with = "go_string")]
    pub name: Option<String>,
    #[serde(rename = "type", default, deserialize_with = "go_string")]
    pub match_type: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub resources: Vec<ResourceMatcher>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub conditions: Vec<ConditionMatcher>,
    #[serde(default)]
    pub include_composite_as_resource: Option<bool>,
    #[serde(default)]
    pub include_extra_resources: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct ResourceMatcher {
    #[serde(default, deserialize_with = "go_string")]
    pub name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct ConditionMatcher {
    #[serde(rename = "type", default, deserialize_with = "go_string")]
    pub condition_type: Option<String>,
    #[serde(default, deserialize_with = "go_string")]
    pub status: Option<String>,
    #[serde(default, deserialize_with = "go_string")]
    pub reason: Option<String>,
    #[serde(default, deserialize_with = "go_string")]
    pub message: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct SetCondition {
    #[serde(default, deserialize_with = "go_string")]
    pub target: Option<String>,
    #[serde(default)]
    pub force: Option<bool>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub condition: Condition,
}

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct Condition {
    #[serde(rename = "type", default, deserialize_with = "go_string")]
    pub condition_type: Option<String>,
    #[serde(default, deserialize_with = "go_string")]
    pub status: Option<String>,
    #[serde(default, deserialize_with = "go_string")]
    pub reason: Option<String>,
    #[serde(default, deserialize_with = "go_string")]
    pub message: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct CreateEvent {
    #[serde(default, deserialize_with = "go_string")]
    pub target: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub event: Event,
}

#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct Event {
    #[serde(rename = "type", default, deserialize_with = "go_string")]
    pub event_type: Option<String>,
    #[serde(default, deserialize_with = "go_string")]
    pub reason: Option<String>,
    #[serde(default, deserialize_with = "go_string")]
    pub message: Option<String>,
}

plait_go_compat::go_structs!(
    StatusTransformation => "v1beta1.StatusTransformation",
    StatusConditionHook => "v1beta1.StatusConditionHook",
    Matcher => "v1beta1.Matcher",
    ResourceMatcher => "v1beta1.ResourceMatcher",
    ConditionMatcher => "v1beta1.ConditionMatcher",
    SetCondition => "v1beta1.SetCondition",
    Condition => "v1beta1.Condition",
    CreateEvent => "v1beta1.CreateEvent",
    Event => "v1beta1.Event",
);
