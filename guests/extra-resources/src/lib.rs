//! function-extra-resources, as a plait function.
//!
//! The first call asks the host for the objects each `spec.extraResources`
//! entry names (by name, or by labels taken from the input or the XR),
//! under the entry's `into`; the host calls the step again with them, and
//! this call checks how many were found, sorts and caps them, and puts
//! them into the pipeline context under [`CONTEXT_KEY_EXTRA_RESOURCES`],
//! keyed by `into`. The host reads them within plait's tenancy rules, as it
//! reads every requirement.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod input;

use std::collections::BTreeMap;

use plait_go_compat::fieldpath::{self, FieldPathError};
use plait_go_compat::input::get_input;
use plait_go_compat::sort::{Naming, Numbers, sort_by_field_path};
use plait_sdk::{Function, FunctionError, Request, ResourceMatch, ResourceSelector, Response};
use serde_json::{Map, Value};

use input::{Input, InputSpec, ResourceSource, Selector, SourceType};

/// The context key the selected objects go to.
pub const CONTEXT_KEY_EXTRA_RESOURCES: &str = "apiextensions.crossplane.io/extra-resources";

pub use plait_go_compat::response::DEFAULT_TTL;

/// The `function-extra-resources` built-in.
pub struct ExtraResources;

/// Why the step failed; the message becomes a fatal result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    #[error("cannot get Function input from *v1.RunFunctionRequest: {0}")]
    Input(String),
    #[error("could not build extra resource requirements: {0}")]
    Requirements(#[source] RequirementError),
    #[error("verifying and sorting extra resources: {0}")]
    Verify(#[source] VerifyError),
    #[error(
        "cannot set context key \"{CONTEXT_KEY_EXTRA_RESOURCES}\": the pipeline context is not an object"
    )]
    ContextNotObject,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RequirementError {
    #[error("Value cannot be nil for type 'Value'")]
    MissingValue,
    #[error("ValueFromFieldPath cannot be nil for type 'FromCompositeFieldPath'")]
    MissingValueFromFieldPath,
    #[error("cannot get value from field path {path:?}: {source}")]
    CompositeFieldPath {
        path: String,
        source: FieldPathError,
    },
    /// Upstream dereferences the missing field and crashes.
    #[error("extraResources[{index}]: type Reference needs ref")]
    MissingRef { index: usize },
    /// Upstream dereferences the missing field and crashes.
    #[error("extraResources[{index}]: type Selector needs a selector")]
    MissingSelector { index: usize },
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VerifyError {
    #[error("cannot find expected extra resource {0:?}")]
    NotRequested(String),
    #[error("Required extra resource {0:?} not found")]
    NotFound(String),
    #[error("expected exactly one extra resource {into:?}, got {found}")]
    NotExactlyOne { into: String, found: usize },
    #[error("expected at least {min} extra resources {into:?}, got {found}")]
    TooFew {
        min: u64,
        into: String,
        found: usize,
    },
    #[error("{0}")]
    Sort(String),
}

impl Function for ExtraResources {
    fn run(request: Request) -> Result<Response, FunctionError> {
        let mut response = Response::from_request(&request);
        response.ttl = Some(DEFAULT_TTL);
        if let Err(e) = compose(&request, &mut response) {
            response.fatal(e.to_string());
        }
        Ok(response)
    }
}

fn compose(request: &Request, response: &mut Response) -> Result<(), Error> {
    let input: Input = get_input(request.input.as_ref(), "v1beta1.Input").map_err(Error::Input)?;
    let empty = Value::Object(Map::new());
    let composite = request
        .observed
        .composite
        .as_ref()
        .map(|xr| &xr.resource)
        .filter(|xr| !xr.is_null())
        .unwrap_or(&empty);
    response.requirements.resources =
        build_requirements(&input.spec, composite).map_err(Error::Requirements)?;

    // Only the call the host makes with the objects has any to select.
    if request.required_resources.is_empty() {
        return Ok(());
    }
    let selected =
        verify_and_sort(&input.spec, &request.required_resources).map_err(Error::Verify)?;
    let context = response
        .context
        .as_object_mut()
        .ok_or(Error::ContextNotObject)?;
    context.insert(CONTEXT_KEY_EXTRA_RESOURCES.into(), Value::Object(selected));
    Ok(())
}

fn build_requirements(
    spec: &InputSpec,
    composite: &Value,
) -> Result<BTreeMap<String, ResourceSelector>, RequirementError> {
    let mut requirements = BTreeMap::new();
    for (index, source) in spec.extra_resources.iter().enumerate() {
        let matching = match source.source_type() {
            SourceType::Reference => {
                let reference = source
                    .reference
                    .as_ref()
                    .ok_or(RequirementError::MissingRef { index })?;
                ResourceMatch::Name(reference.name.clone().unwrap_or_default())
            }
            SourceType::Selector => {
                let selector = source
                    .selector
                    .as_ref()
                    .ok_or(RequirementError::MissingSelector { index })?;
                let labels = match_labels(selector, composite)?;
                // Every label was optional and absent: nothing to ask for.
                if labels.is_empty() {
                    continue;
                }
                ResourceMatch::Labels(labels)
            }
            SourceType::Other => continue,
        };
        requirements.insert(
            source.into().to_string(),
            ResourceSelector {
                api_version: source.api_version.clone().unwrap_or_default(),
                kind: source.kind.clone().unwrap_or_default(),
                matching,
                // An empty namespace is no namespace, as upstream's is for Crossplane.
                namespace: source.namespace.clone().filter(|ns| !ns.is_empty()),
            },
        );
    }
    Ok(requirements)
}

fn match_labels(
    selector: &Selector,
    composite: &Value,
) -> Result<BTreeMap<String, String>, RequirementError> {
    let mut labels = BTreeMap::new();
    for matcher in &selector.match_labels {
        let key = matcher.key.clone().unwrap_or_default();
        match matcher.matcher_type.as_deref() {
            Some("Value") => {
                let value = matcher
                    .value
                    .clone()
                    .ok_or(RequirementError::MissingValue)?;
                labels.insert(key, value);
            }
            None | Some("" | "FromCompositeFieldPath") => {
                let path = matcher
                    .value_from_field_path
                    .as_deref()
                    .ok_or(RequirementError::MissingValueFromFieldPath)?;
                match fieldpath::get_string(composite, path) {
                    Ok(value) => {
                        labels.insert(key, value.to_string());
                    }
                    Err(_) if matcher.from_field_path_policy.as_deref() == Some("Optional") => {}
                    Err(source) => {
                        return Err(RequirementError::CompositeFieldPath {
                            path: path.to_string(),
                            source,
                        });
                    }
                }
            }
            // Upstream ignores a matcher of any other type.
            Some(_) => {}
        }
    }
    Ok(labels)
}

/// The objects for the context: per entry, checked against its kind of
/// source, sorted and capped.
fn verify_and_sort(
    spec: &InputSpec,
    required: &BTreeMap<String, Vec<Value>>,
) -> Result<Map<String, Value>, VerifyError> {
    let mut selected = Map::new();
    for source in &spec.extra_resources {
        let into = source.into();
        let found = required
            .get(into)
            .ok_or_else(|| VerifyError::NotRequested(into.to_string()))?;
        let objects: Vec<&Value> = match source.source_type() {
            SourceType::Reference => match found.as_slice() {
                [] if spec.resolution_is_optional() => continue,
                [] => return Err(VerifyError::NotFound(into.to_string())),
                [object] => vec![object],
                many => {
                    return Err(VerifyError::NotExactlyOne {
                        into: into.to_string(),
                        found: many.len(),
                    });
                }
            },
            SourceType::Selector => select(source, into, found)?,
            SourceType::Other => continue,
        };
        // Upstream appends per object, so an entry with none leaves no key.
        if objects.is_empty() {
            continue;
        }
        let list = selected
            .entry(into.to_string())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = list {
            list.extend(objects.into_iter().cloned());
        }
    }
    Ok(selected)
}

fn select<'a>(
    source: &ResourceSource,
    into: &str,
    found: &'a [Value],
) -> Result<Vec<&'a Value>, VerifyError> {
    let Some(selector) = &source.selector else {
        return Ok(found.iter().collect());
    };
    if let Some(min) = selector.min_match
        && (found.len() as u64) < min
    {
        return Err(VerifyError::TooFew {
            min,
            into: into.to_string(),
            found: found.len(),
        });
    }
    let mut sorted = sort_by_field_path(
        found,
        selector.sort_by_field_path(),
        Numbers::Int64ApartFromFloat64,
        Naming::Type,
    )
    .map_err(VerifyError::Sort)?;
    if let Some(max) = selector.max_match {
        sorted.truncate(usize::try_from(max).unwrap_or(usize::MAX));
    }
    Ok(sorted)
}

plait_sdk::export_function!(ExtraResources);

#[cfg(test)]
mod tests;
