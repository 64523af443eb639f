//! function-environment-configs, as a plait function.
//!
//! Builds the composition environment from `EnvironmentConfig`s. The first
//! call asks the host for the configs the input names (one requirement per
//! `spec.environmentConfigs` entry); the host calls the step again with them,
//! and this call selects, sorts and merges their `data` on top of the input's
//! `defaultData` and any environment an earlier step left, then writes the
//! result to the context key [`CONTEXT_KEY_ENVIRONMENT`], where
//! patch-and-transform's environment patches read it.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod input;

use std::collections::BTreeMap;
use std::time::Duration;

use plait_sdk::{Function, FunctionError, Request, ResourceMatch, ResourceSelector, Response};
use serde_json::{Map, Value};

use input::{
    EnvironmentSource, FromFieldPathPolicy, Input, InputSpec, MatcherType, Selector, SelectorMode,
    SourceType,
};
use plait_go_compat::fieldpath::{self, FieldPathError};
use plait_go_compat::input::{from_sorted_value, get_input_error};
use plait_go_compat::json::unmarshal_type_error;
use plait_go_compat::sort::{Naming, Numbers, sort_by_field_path};

/// The well-known context key holding the composition environment.
pub const CONTEXT_KEY_ENVIRONMENT: &str = "apiextensions.crossplane.io/environment";

pub const ENVIRONMENT_CONFIG_API_VERSION: &str = "apiextensions.crossplane.io/v1beta1";
pub const ENVIRONMENT_CONFIG_KIND: &str = "EnvironmentConfig";

/// The TTL upstream functions give their responses.
pub const DEFAULT_TTL: Duration = Duration::from_secs(60);

/// The `function-environment-configs` built-in.
pub struct EnvironmentConfigs;

/// Why the step failed; the message becomes a fatal result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    #[error("cannot get Function input from *v1.RunFunctionRequest: {0}")]
    Input(String),
    #[error("cannot build requirements: {0}")]
    Requirements(#[source] RequirementError),
    #[error(
        "cannot get Composition environment from *v1.RunFunctionRequest context key \"{CONTEXT_KEY_ENVIRONMENT}\": it is not an object"
    )]
    ContextEnvironment,
    #[error("cannot get selected environment configs: {0}")]
    Select(#[source] SelectError),
    #[error(
        "cannot merge environment data: cannot get data from environment config \"{name}\": {reason}"
    )]
    Merge { name: String, reason: String },
    #[error(
        "cannot set context key \"{CONTEXT_KEY_ENVIRONMENT}\": the pipeline context is not an object"
    )]
    ContextNotObject,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RequirementError {
    #[error("cannot get value from composite field path \"{path}\": {source}")]
    CompositeFieldPath {
        path: String,
        source: FieldPathError,
    },
    #[error("cannot get value from environment field path \"{path}\": {source}")]
    EnvironmentFieldPath {
        path: String,
        source: FieldPathError,
    },
    #[error("environmentConfigs[{index}]: type Reference needs ref.name")]
    MissingRef { index: usize },
    #[error("environmentConfigs[{index}]: type Selector needs a selector")]
    MissingSelector { index: usize },
    #[error("environmentConfigs[{index}]: label {key:?} of type Value needs a value")]
    MissingValue { index: usize, key: String },
    #[error(
        "environmentConfigs[{index}]: label {key:?} of type {matcher:?} needs valueFromFieldPath"
    )]
    MissingValueFromFieldPath {
        index: usize,
        key: String,
        matcher: MatcherType,
    },
    #[error(
        "environmentConfigs[{index}]: toFieldPath is not supported by plait's built-in function-environment-configs"
    )]
    ToFieldPathUnsupported { index: usize },
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SelectError {
    #[error(
        "cannot process environment config \"{name}\" by reference, \"{requirement}\": {reason}"
    )]
    Reference {
        name: String,
        requirement: String,
        reason: String,
    },
    #[error("cannot process environment config \"{requirement}\" by selector: {reason}")]
    Selector { requirement: String, reason: String },
}

impl Function for EnvironmentConfigs {
    fn run(request: Request) -> Result<Response, FunctionError> {
        let mut response = Response::from_request(&request);
        response.ttl = Some(DEFAULT_TTL);
        if let Err(e) = compose(&request, &mut response) {
            response.fatal(e.to_string());
        }
        Ok(response)
    }
}

/// Name of the requirement for `spec.environmentConfigs[index]`; the host
/// answers under the same name, so it must not change between calls.
pub fn requirement_name(index: usize) -> String {
    format!("environment-config-{index}")
}

fn compose(request: &Request, response: &mut Response) -> Result<(), Error> {
    let input: Input = match &request.input {
        None => Input::default(),
        Some(value) => from_sorted_value(value.clone())
            .map_err(|e| Error::Input(get_input_error("v1beta1.Input", e)))?,
    };
    let Some(sources) = &input.spec.environment_configs else {
        return Ok(());
    };

    let context_environment = request.context.get(CONTEXT_KEY_ENVIRONMENT);
    let composite = request
        .observed
        .composite
        .as_ref()
        .map_or(&Value::Null, |xr| &xr.resource);
    let sources = resolve_sources(sources).map_err(Error::Requirements)?;
    // Asked for on every call, so the host sees stable requirements and stops calling.
    response.requirements.resources = build_requirements(&sources, composite, context_environment)
        .map_err(Error::Requirements)?;

    if request.required_resources.is_empty() {
        return Ok(());
    }

    let earlier_environment = match context_environment {
        None => None,
        Some(Value::Object(env)) => Some(env),
        Some(_) => return Err(Error::ContextEnvironment),
    };

    let selected =
        select(&input.spec, &sources, &request.required_resources).map_err(Error::Select)?;

    let mut environment = Map::new();
    for config in selected {
        let data = config_data(config)?;
        environment = merge(environment, data);
    }
    // Precedence: selected configs > the environment from earlier steps > defaultData.
    if let Some(earlier) = earlier_environment {
        environment = merge(earlier.clone(), environment);
    }
    if let Some(default_data) = &input.spec.default_data {
        environment = merge(default_data.clone(), environment);
    }
    if group_version_kind_is_empty(&environment) {
        environment.insert(
            "apiVersion".into(),
            "internal.crossplane.io/v1alpha1".into(),
        );
        environment.insert("kind".into(), "Environment".into());
    }

    let context = response
        .context
        .as_object_mut()
        .ok_or(Error::ContextNotObject)?;
    context.insert(CONTEXT_KEY_ENVIRONMENT.into(), Value::Object(environment));
    Ok(())
}

/// An input entry, checked for the fields its type needs.
enum Source<'a> {
    Reference(&'a str),
    Selector(&'a Selector),
}

fn resolve_sources(sources: &[EnvironmentSource]) -> Result<Vec<Source<'_>>, RequirementError> {
    sources
        .iter()
        .enumerate()
        .map(|(index, source)| {
            if source.to_field_path.is_some() {
                return Err(RequirementError::ToFieldPathUnsupported { index });
            }
            match source.source_type {
                SourceType::Reference => source
                    .reference
                    .as_ref()
                    .map(|r| Source::Reference(&r.name))
                    .ok_or(RequirementError::MissingRef { index }),
                SourceType::Selector => source
                    .selector
                    .as_ref()
                    .map(Source::Selector)
                    .ok_or(RequirementError::MissingSelector { index }),
            }
        })
        .collect()
}

fn build_requirements(
    sources: &[Source<'_>],
    composite: &Value,
    environment: Option<&Value>,
) -> Result<BTreeMap<String, ResourceSelector>, RequirementError> {
    let mut requirements = BTreeMap::new();
    for (index, source) in sources.iter().enumerate() {
        let matching = match source {
            Source::Reference(name) => ResourceMatch::Name(name.to_string()),
            Source::Selector(selector) => {
                let labels = match_labels(index, selector, composite, environment)?;
                // Every label was optional and absent: nothing to select, so nothing to ask for.
                if labels.is_empty() {
                    continue;
                }
                ResourceMatch::Labels(labels)
            }
        };
        requirements.insert(
            requirement_name(index),
            ResourceSelector {
                api_version: ENVIRONMENT_CONFIG_API_VERSION.into(),
                kind: ENVIRONMENT_CONFIG_KIND.into(),
                matching,
                namespace: None,
            },
        );
    }
    Ok(requirements)
}

fn match_labels(
    index: usize,
    selector: &Selector,
    composite: &Value,
    environment: Option<&Value>,
) -> Result<BTreeMap<String, String>, RequirementError> {
    let mut labels = BTreeMap::new();
    for matcher in &selector.match_labels {
        let key = matcher.key.clone();
        let value = match matcher.matcher_type {
            MatcherType::Value => {
                matcher
                    .value
                    .clone()
                    .ok_or_else(|| RequirementError::MissingValue {
                        index,
                        key: key.clone(),
                    })?
            }
            from
            @ (MatcherType::FromCompositeFieldPath | MatcherType::FromEnvironmentFieldPath) => {
                let path = matcher.value_from_field_path.clone().ok_or_else(|| {
                    RequirementError::MissingValueFromFieldPath {
                        index,
                        key: key.clone(),
                        matcher: from,
                    }
                })?;
                let source = if from == MatcherType::FromCompositeFieldPath {
                    composite
                } else {
                    environment.unwrap_or(&Value::Null)
                };
                // A missing object reads like an empty one, so paths report "no such field".
                let empty = Value::Object(Map::new());
                let source = if source.is_null() { &empty } else { source };
                match fieldpath::get_string(source, &path) {
                    Ok(value) => value.to_string(),
                    Err(_)
                        if matcher.from_field_path_policy
                            == Some(FromFieldPathPolicy::Optional) =>
                    {
                        continue;
                    }
                    Err(source) if from == MatcherType::FromCompositeFieldPath => {
                        return Err(RequirementError::CompositeFieldPath { path, source });
                    }
                    Err(source) => {
                        return Err(RequirementError::EnvironmentFieldPath { path, source });
                    }
                }
            }
        };
        labels.insert(key, value);
    }
    Ok(labels)
}

/// The configs to merge, in order: entries in input order, and within a
/// `Multiple` selector, sorted by its field path.
fn select<'a>(
    spec: &InputSpec,
    sources: &[Source<'_>],
    required: &'a BTreeMap<String, Vec<Value>>,
) -> Result<Vec<&'a Value>, SelectError> {
    let mut selected = Vec::new();
    for (index, source) in sources.iter().enumerate() {
        let requirement = requirement_name(index);
        // Not asked for (an optional selector without labels): nothing to merge.
        let Some(found) = required.get(&requirement) else {
            continue;
        };
        match source {
            Source::Reference(name) => {
                let error = |reason: String| SelectError::Reference {
                    name: name.to_string(),
                    requirement: requirement.clone(),
                    reason,
                };
                match found.as_slice() {
                    [] if spec.resolution_is_optional() => {}
                    [] => {
                        return Err(error(format!(
                            "Required environment config \"{name}\" not found"
                        )));
                    }
                    [config] => selected.push(config),
                    many => {
                        return Err(error(format!(
                            "expected exactly one required resource \"{name}\", got {}",
                            many.len()
                        )));
                    }
                }
            }
            Source::Selector(selector) => {
                let configs =
                    select_by_labels(selector, found).map_err(|reason| SelectError::Selector {
                        requirement: requirement.clone(),
                        reason,
                    })?;
                selected.extend(configs);
            }
        }
    }
    Ok(selected)
}

fn select_by_labels<'a>(selector: &Selector, found: &'a [Value]) -> Result<Vec<&'a Value>, String> {
    match selector.mode {
        SelectorMode::Single => match found {
            [config] => Ok(vec![config]),
            _ => Err(format!(
                "expected exactly one required resource, got {}",
                found.len()
            )),
        },
        SelectorMode::Multiple => {
            if let Some(min) = selector.min_match
                && (found.len() as u64) < min
            {
                return Err(format!(
                    "expected at least {min} required resources, got {}",
                    found.len()
                ));
            }
            let mut sorted = sort_by_field_path(
                found,
                selector.sort_by_field_path(),
                Numbers::Together,
                Naming::Kind,
            )?;
            if let Some(max) = selector.max_match {
                sorted.truncate(usize::try_from(max).unwrap_or(usize::MAX));
            }
            Ok(sorted)
        }
    }
}

/// A config's `data`, which upstream requires to be present.
fn config_data(config: &Value) -> Result<Map<String, Value>, Error> {
    let name = config
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let error = |reason: String| Error::Merge {
        name: name.clone(),
        reason,
    };
    match fieldpath::get_value(config, "data") {
        Ok(Value::Object(data)) => Ok(data.clone()),
        Ok(Value::Null) => Ok(Map::new()),
        Ok(other) => Err(error(format!(
            "cannot unmarshal value from JSON: {}",
            unmarshal_type_error(other, "map[string]interface {}")
        ))),
        Err(e) => Err(error(e.to_string())),
    }
}

/// Deep-merges `over` onto `base`: objects merge key by key, anything else
/// (arrays included) from `over` replaces what `base` had.
fn merge(mut base: Map<String, Value>, over: Map<String, Value>) -> Map<String, Value> {
    for (key, value) in over {
        let merged = match (base.remove(&key), value) {
            (Some(Value::Object(base)), Value::Object(over)) => Value::Object(merge(base, over)),
            (_, value) => value,
        };
        base.insert(key, merged);
    }
    base
}

/// Kubernetes' `GroupVersionKind().Empty()` on the environment object. An
/// unparseable apiVersion (more than one `/`) makes the whole GVK empty.
fn group_version_kind_is_empty(object: &Map<String, Value>) -> bool {
    let text = |key: &str| object.get(key).and_then(Value::as_str).unwrap_or_default();
    let group_version_is_empty = match text("apiVersion") {
        "" | "/" => true,
        unparseable if unparseable.matches('/').count() > 1 => return true,
        _ => false,
    };
    group_version_is_empty && text("kind").is_empty()
}

plait_sdk::export_function!(EnvironmentConfigs);

#[cfg(test)]
mod tests;
