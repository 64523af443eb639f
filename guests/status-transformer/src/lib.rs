//! function-status-transformer, as a plait function.
//!
//! Each `statusConditionHooks` entry matches composed resources (by a
//! regular expression over their names in the Composition), the XR, or
//! objects function-extra-resources put into the context, against
//! condition matchers; when every matcher of a hook matches, the hook sets
//! conditions on the XR (and its claim) and emits events, their messages
//! rendered with the groups the matchers' message expressions captured.
//! The step reports how it went in the `StatusTransformationSuccess`
//! condition rather than with fatal results, as upstream does.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod input;
mod template;

use std::collections::{BTreeMap, BTreeSet};

use plait_go_compat::input::get_input;
use plait_go_compat::regexp::compile_regexp;
use plait_sdk::{
    Condition, ConditionStatus, Function, FunctionError, FunctionResult, Request, Response,
    Severity, Target,
};
use serde_json::{Map, Value};

use input::{ConditionMatcher, CreateEvent, Matcher, SetCondition, StatusTransformation};
pub use template::TemplateError;

pub use plait_go_compat::response::DEFAULT_TTL;

/// The condition the step reports its own outcome in.
pub const SUCCESS_CONDITION: &str = "StatusTransformationSuccess";

/// The context key function-extra-resources writes.
pub const CONTEXT_KEY_EXTRA_RESOURCES: &str = "apiextensions.crossplane.io/extra-resources";

/// The name the XR is matched under with `includeCompositeAsResource`.
const COMPOSITE_RESOURCE_KEY: &str = "function-status-transformer.reserved-keys.composite-resource";

/// The `function-status-transformer` built-in.
pub struct StatusTransformer;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MatchError {
    #[error("cannot compile resource key regex, resourcesIndex: {index}: {reason}")]
    ResourceRegex { index: usize, reason: String },
    #[error("cannot compile message regex: {0}")]
    MessageRegex(String),
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TransformError {
    #[error("cannot parse template: {0}")]
    Template(TemplateError),
    #[error("invalid type {0}, must be one of [Normal, Warning]")]
    EventType(String),
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExtraResourcesError {
    #[error("unexpected extra-resources type: {0}")]
    NotAnObject(&'static str),
    #[error("unexpected extra-resources value type for {into}: {go_type}")]
    NotAList { into: String, go_type: &'static str },
    #[error("unexpected extra-resources value type for {into} [{index}]: {go_type}")]
    NotAnObjectInList {
        into: String,
        index: usize,
        go_type: &'static str,
    },
}

impl Function for StatusTransformer {
    fn run(request: Request) -> Result<Response, FunctionError> {
        let mut response = Response::from_request(&request);
        response.ttl = Some(DEFAULT_TTL);
        transform(&request, &mut response);
        Ok(response)
    }
}

fn success(
    response: &mut Response,
    status: ConditionStatus,
    reason: &str,
    message: Option<String>,
) {
    response.conditions.push(Condition {
        type_: SUCCESS_CONDITION.into(),
        status,
        reason: reason.into(),
        message,
        target: Some(Target::Composite),
    });
}

fn failure(response: &mut Response, reason: &str, message: String) {
    success(response, ConditionStatus::False, reason, Some(message));
}

fn transform(request: &Request, response: &mut Response) {
    let input: StatusTransformation =
        match get_input(request.input.as_ref(), "v1beta1.StatusTransformation") {
            Ok(input) => input,
            Err(e) => {
                failure(
                    response,
                    "InputFailure",
                    format!("cannot get Function input from *v1.RunFunctionRequest: {e}"),
                );
                return;
            }
        };
    let empty = Value::Object(Map::new());
    let composite = request
        .observed
        .composite
        .as_ref()
        .map_or(&empty, |xr| &xr.resource);

    let mut errored = false;
    let mut conditions_set = BTreeSet::new();
    let mut extra_resources: Option<Vec<(String, &Value)>> = None;
    for (hook_index, hook) in input.status_condition_hooks.iter().enumerate() {
        let mut groups = BTreeMap::new();
        // A hook without matchers never matches.
        let mut all_matched = false;
        for (matcher_index, matcher) in hook.matchers.iter().enumerate() {
            if matcher.include_extra_resources == Some(true) && extra_resources.is_none() {
                match load_extra_resources(&request.context) {
                    Ok(loaded) => extra_resources = Some(loaded),
                    Err(e) => {
                        failure(
                            response,
                            "InputFailure",
                            format!("cannot load extra-resources: {e}"),
                        );
                        return;
                    }
                }
            }
            let extra = extra_resources.as_deref().unwrap_or_default();
            let matched = match match_resources(matcher, request, composite, extra) {
                Ok(Some(captured)) => {
                    groups.extend(captured);
                    true
                }
                Ok(None) => false,
                Err(e) => {
                    failure(
                        response,
                        "MatchFailure",
                        format!(
                            "cannot match resources, statusConditionHookIndex: {hook_index}, matchConditionIndex: {matcher_index}: {e}"
                        ),
                    );
                    errored = true;
                    false
                }
            };
            all_matched = matched;
            if !matched {
                break;
            }
        }
        if !all_matched {
            continue;
        }

        for (index, set) in hook.set_conditions.iter().enumerate() {
            let condition_type = set.condition.condition_type.clone().unwrap_or_default();
            if conditions_set.contains(&condition_type) && set.force != Some(true) {
                continue;
            }
            match transform_condition(set, &groups) {
                Ok(condition) => {
                    response.conditions.push(condition);
                    conditions_set.insert(condition_type);
                }
                Err(e) => {
                    failure(
                        response,
                        "SetConditionFailure",
                        format!(
                            "cannot set condition, statusConditionHookIndex: {hook_index}, setConditionIndex: {index}: {e}"
                        ),
                    );
                    errored = true;
                }
            }
        }
        for (index, create) in hook.create_events.iter().enumerate() {
            match transform_event(create, &groups) {
                Ok(event) => response.results.push(event),
                Err(e) => {
                    failure(
                        response,
                        "SetConditionFailure",
                        format!(
                            "cannot create event, statusConditionHookIndex: {hook_index}, createEventIndex: {index}: {e}"
                        ),
                    );
                    errored = true;
                }
            }
        }
    }
    if !errored {
        success(response, ConditionStatus::True, "Available", None);
    }
}

/// Go's `%T` of a value `structpb` decoded.
fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// The objects function-extra-resources left in the context, each with the
/// `into` it is listed under.
fn load_extra_resources(context: &Value) -> Result<Vec<(String, &Value)>, ExtraResourcesError> {
    let Some(extra) = context.get(CONTEXT_KEY_EXTRA_RESOURCES) else {
        return Ok(Vec::new());
    };
    let Value::Object(by_into) = extra else {
        return Err(ExtraResourcesError::NotAnObject(go_type(extra)));
    };
    let mut objects = Vec::new();
    for (into, list) in by_into {
        let Value::Array(list) = list else {
            return Err(ExtraResourcesError::NotAList {
                into: into.clone(),
                go_type: go_type(list),
            });
        };
        for (index, object) in list.iter().enumerate() {
            if !object.is_object() {
                return Err(ExtraResourcesError::NotAnObjectInList {
                    into: into.clone(),
                    index,
                    go_type: go_type(object),
                });
            }
            objects.push((into.clone(), object));
        }
    }
    Ok(objects)
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The name an extra resource is matched under:
/// `extra-resource.<into>.<group>.<kind>.<namespace>.<name>`.
fn extra_resource_key(into: &str, object: &Value) -> String {
    let api_version = text(object, "/apiVersion");
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    [
        "extra-resource",
        into,
        group,
        text(object, "/kind"),
        text(object, "/metadata/namespace"),
        text(object, "/metadata/name"),
    ]
    .join(".")
}

/// Whether the matcher matches, with the groups its message expressions
/// captured; `None` when it does not.
fn match_resources<'a>(
    matcher: &Matcher,
    request: &'a Request,
    composite: &'a Value,
    extra: &[(String, &'a Value)],
) -> Result<Option<BTreeMap<String, String>>, MatchError> {
    let mut resources: BTreeMap<String, &Value> = BTreeMap::new();
    for (index, resource) in matcher.resources.iter().enumerate() {
        let pattern = resource.name.as_deref().unwrap_or_default();
        let name = compile_regexp(pattern)
            .map_err(|reason| MatchError::ResourceRegex { index, reason })?;
        for (key, observed) in &request.observed.resources {
            if name.is_match(key) {
                resources.insert(key.clone(), &observed.resource);
            }
        }
        if matcher.include_extra_resources != Some(true) {
            continue;
        }
        for (into, object) in extra {
            let key = extra_resource_key(into, object);
            if name.is_match(&key) {
                resources.insert(key, object);
            }
        }
    }
    if matcher.include_composite_as_resource == Some(true) {
        resources.insert(COMPOSITE_RESOURCE_KEY.into(), composite);
    }
    if resources.is_empty() || matcher.conditions.is_empty() {
        return Ok(None);
    }
    let conditions = &matcher.conditions;
    let mut captured = BTreeMap::new();
    match matcher.match_type.as_deref() {
        Some("AnyResourceMatchesAnyCondition") => {
            for object in resources.values() {
                for condition in conditions {
                    if let Some(groups) = match_condition(condition, object)? {
                        return Ok(Some(groups));
                    }
                }
            }
            Ok(None)
        }
        Some("AnyResourceMatchesAllConditions") => {
            for object in resources.values() {
                let mut matched = 0;
                for condition in conditions {
                    let Some(groups) = match_condition(condition, object)? else {
                        break;
                    };
                    matched += 1;
                    captured.extend(groups);
                }
                if matched == conditions.len() {
                    return Ok(Some(captured));
                }
            }
            Ok(None)
        }
        Some("AllResourcesMatchAnyCondition") => {
            for object in resources.values() {
                let mut matched = 0;
                for condition in conditions {
                    if let Some(groups) = match_condition(condition, object)? {
                        matched += 1;
                        captured.extend(groups);
                    }
                }
                if matched == 0 {
                    return Ok(None);
                }
            }
            Ok(Some(captured))
        }
        // AllResourcesMatchAllConditions, the default for any other type.
        _ => {
            for object in resources.values() {
                for condition in conditions {
                    let Some(groups) = match_condition(condition, object)? else {
                        return Ok(None);
                    };
                    captured.extend(groups);
                }
            }
            Ok(Some(captured))
        }
    }
}

/// A condition of an object as crossplane-runtime reads it: an object
/// without a readable `status` has an empty condition of every type, one
/// with a status but not the type has it `Unknown`.
fn get_condition<'a>(object: &'a Value, condition_type: &str) -> (&'a str, &'a str, &'a str) {
    let Some(Value::Object(status)) = object.get("status") else {
        return ("", "", "");
    };
    let conditions = match status.get("conditions") {
        None | Some(Value::Null) => return ("Unknown", "", ""),
        Some(Value::Array(conditions)) => conditions,
        Some(_) => return ("", "", ""),
    };
    conditions
        .iter()
        .find(|c| text(c, "/type") == condition_type)
        .map_or(("Unknown", "", ""), |c| {
            (text(c, "/status"), text(c, "/reason"), text(c, "/message"))
        })
}

fn match_condition(
    matcher: &ConditionMatcher,
    object: &Value,
) -> Result<Option<BTreeMap<String, String>>, MatchError> {
    let condition_type = matcher.condition_type.as_deref().unwrap_or_default();
    let (status, reason, message) = get_condition(object, condition_type);
    if matcher.reason.as_deref().is_some_and(|want| want != reason)
        || matcher.status.as_deref().is_some_and(|want| want != status)
    {
        return Ok(None);
    }
    let Some(pattern) = &matcher.message else {
        return Ok(Some(BTreeMap::new()));
    };
    let expression = compile_regexp(pattern).map_err(MatchError::MessageRegex)?;
    let Some(captures) = expression.captures(message) else {
        return Ok(None);
    };
    // Unnamed groups are captured under the empty name, as Go's SubexpNames has them.
    Ok(Some(
        expression
            .capture_names()
            .enumerate()
            .skip(1)
            .map(|(index, name)| {
                let value = captures.get(index).map_or("", |m| m.as_str());
                (name.unwrap_or_default().to_string(), value.to_string())
            })
            .collect(),
    ))
}

fn target(target: Option<&str>) -> Target {
    match target {
        Some("CompositeAndClaim") => Target::CompositeAndClaim,
        _ => Target::Composite,
    }
}

/// A message with the captured groups filled in; left as written when
/// nothing was captured.
fn message(
    text: Option<&str>,
    groups: &BTreeMap<String, String>,
) -> Result<Option<String>, TransformError> {
    match text {
        Some(text) if !groups.is_empty() => template::render(text, groups)
            .map(Some)
            .map_err(TransformError::Template),
        other => Ok(other.map(str::to_string)),
    }
}

fn transform_condition(
    set: &SetCondition,
    groups: &BTreeMap<String, String>,
) -> Result<Condition, TransformError> {
    let condition = &set.condition;
    let status = match condition.status.as_deref() {
        Some("True") => ConditionStatus::True,
        Some("False") => ConditionStatus::False,
        _ => ConditionStatus::Unknown,
    };
    Ok(Condition {
        type_: condition.condition_type.clone().unwrap_or_default(),
        status,
        reason: condition.reason.clone().unwrap_or_default(),
        message: message(condition.message.as_deref(), groups)?,
        target: Some(target(set.target.as_deref())),
    })
}

fn transform_event(
    create: &CreateEvent,
    groups: &BTreeMap<String, String>,
) -> Result<FunctionResult, TransformError> {
    let event = &create.event;
    let severity = match event.event_type.as_deref() {
        None | Some("Normal") => Severity::Normal,
        Some("Warning") => Severity::Warning,
        Some(other) => return Err(TransformError::EventType(other.to_string())),
    };
    let text = event.message.as_deref().unwrap_or_default();
    Ok(FunctionResult {
        severity,
        message: message(Some(text), groups)?.unwrap_or_default(),
        reason: event.reason.clone(),
        target: Some(target(create.target.as_deref())),
    })
}

plait_sdk::export_function!(StatusTransformer);

#[cfg(test)]
mod tests;
