//! Crossplane's patch-and-transform, as a plait function.
//!
//! Behaves like `function-patch-and-transform` (same input, same results and
//! messages). Deliberate differences:
//!
//! - integral numbers stay integers, as in Crossplane's native v1 engine, so
//!   `%d` and `MatchInteger` work;
//! - native v1 spellings found in real P&T inputs are accepted: connection
//!   details without `type` (or `name`), and transforms and string
//!   transforms without `type`;
//! - a template's `dependsOn` orders composed resources (a plait extension);
//! - a `MatchCondition` check without `matchCondition` uses `Ready`/`True`
//!   where upstream would dereference nil.

pub mod bench_input;
pub mod connection;
pub mod input;
pub mod merge;
pub mod patches;
pub mod quantity;
pub mod ready;
pub mod transforms;
pub mod validate;

pub use plait_go_compat::fieldpath;

use std::collections::BTreeMap;
use std::time::Duration;

use plait_go_compat::input::get_input_error;
use plait_go_compat::strconv::quote;
use plait_sdk::{
    Function, FunctionError, FunctionResult, Ready, Request, Resource, Response, Severity, State,
};
use serde_json::{Map, Value};

use crate::connection::ConnectionDetails;
use crate::input::Resources;
use crate::patches::ComposedTargets;

/// The context key the Composition environment lives under.
pub const ENVIRONMENT_KEY: &str = "apiextensions.crossplane.io/environment";

/// function-sdk-go's `response.DefaultTTL`.
pub const DEFAULT_TTL: Duration = Duration::from_secs(60);

/// Where a resource template's `dependsOn` (a plait extension) is written:
/// the annotation plait's reconcile orders composed resources by.
pub const DEPENDS_ON_ANNOTATION: &str = "ordering.plait.dev/depends-on";

/// The `function-patch-and-transform` built-in.
pub struct PatchAndTransform;

impl Function for PatchAndTransform {
    fn run(mut request: Request) -> Result<Response, FunctionError> {
        // A step without input reads as an empty `Resources`, as in Go.
        let input = match request.input.take() {
            None | Some(Value::Null) => Ok(Resources::default()),
            Some(input) => Resources::from_value(input),
        };
        Ok(respond(&request, input))
    }

    fn run_with_input_text(
        request: Request,
        input: Option<&str>,
    ) -> Result<Response, FunctionError> {
        let input = match input {
            None => Ok(Resources::default()),
            Some(text) => Resources::from_json_text(text),
        };
        let response = respond(&request, input);
        plait_sdk::discard(request);
        Ok(response)
    }
}

/// The response to `request` given its parsed input.
fn respond(request: &Request, input: Result<Resources, serde_json::Error>) -> Response {
    let mut warnings = Vec::new();
    let mut response = match compose(request, input, &mut warnings) {
        Ok((desired, context)) => Response {
            tag: request.tag.clone(),
            desired,
            context,
            results: warning_results(warnings),
            ..Response::default()
        },
        Err(message) => {
            // A fatal result passes the request's desired state and
            // context through untouched.
            let mut response = Response::from_request(request);
            response.results = warning_results(warnings);
            response.fatal(message);
            response
        }
    };
    response.ttl = Some(DEFAULT_TTL);
    response
}

fn warning_results(messages: Vec<String>) -> Vec<FunctionResult> {
    messages
        .into_iter()
        .map(|message| FunctionResult {
            severity: Severity::Warning,
            message,
            reason: None,
            target: None,
        })
        .collect()
}

plait_sdk::export_function!(PatchAndTransform);

/// The XR a step desires, with what this function tracks about it.
struct DesiredComposite {
    resource: Value,
    connection_details: ConnectionDetails,
    ready: Ready,
}

/// Runs the input against the request. Returns the desired state and the
/// context, or the message of a fatal result; warnings go to `warnings`.
fn compose(
    request: &Request,
    input: Result<Resources, serde_json::Error>,
    warnings: &mut Vec<String>,
) -> Result<(State, Value), String> {
    let mut input = input.map_err(|e| {
        format!(
            "cannot get Function input: {}",
            get_input_error("v1beta1.Resources", e)
        )
    })?;
    validate::resources(&input).map_err(|e| format!("invalid Function input: {e}"))?;
    // Each base becomes its resource's desired object: moved, not copied.
    let bases: Vec<Option<Value>> = input
        .resources
        .iter_mut()
        .map(|template| template.base.take())
        .collect();

    let empty = Value::Object(Map::new());
    let observed_xr = request
        .observed
        .composite
        .as_ref()
        .map_or(&empty, |c| &c.resource);
    let mut xr = desired_composite(request, observed_xr);

    let mut desired: BTreeMap<String, Resource> = request
        .desired
        .resources
        .iter()
        .map(|(name, r)| {
            // Only the object and its readiness carry over, as with
            // function-sdk-go's desired composed resources.
            let mut carried = Resource::new(r.resource.clone());
            carried.ready = r.ready;
            (name.clone(), carried)
        })
        .collect();

    let templates = patches::resolve_patch_sets(&input.patch_sets, &input.resources)
        .map_err(|e| format!("cannot resolve PatchSets: {e}"))?;

    let mut env = environment(&request.context);
    if let Some(environment) = &input.environment {
        for (i, p) in environment.patches.iter().enumerate() {
            match patches::apply_environment_patch(p, &mut env, observed_xr, &mut xr.resource) {
                Err(err) if err.not_found && !p.is_required() => continue,
                Err(err) => {
                    return Err(format!(
                        "cannot apply the {} environment patch at index {i}: {err}",
                        quote(p.patch_type())
                    ));
                }
                Ok(()) => {}
            }
        }
    }

    for ((template, base), template_patches) in input.resources.iter().zip(bases).zip(&templates) {
        let name = quote(&template.name);
        let mut resource = match base {
            Some(base @ Value::Object(_)) => base,
            Some(_) => {
                return Err(format!(
                    "cannot parse base template of composed resource {name}: base is not an object"
                ));
            }
            None => match request.desired.resources.get(&template.name) {
                Some(previous) => previous.resource.clone(),
                None => {
                    return Err(format!(
                        "composed resource {name} has no base template, and was not produced by a previous Function in the pipeline"
                    ));
                }
            },
        };
        let mut ready = Ready::Unspecified;

        let observed = request.observed.resources.get(&template.name);
        if let Some(observed) = observed {
            // Keep the template associated with what exists; only the
            // identity is copied, desired state stays a partial overlay.
            for field in ["namespace", "name"] {
                set_metadata(&mut resource, field, &observed.resource["metadata"][field]);
            }
            xr.connection_details.extend(connection::extract(
                &observed.resource,
                &observed.connection_details,
                &template.connection_details,
            ));
            match ready::is_ready(&observed.resource, &template.readiness_checks) {
                Ok(true) => ready = Ready::True,
                Ok(false) => {}
                Err(err) => {
                    warnings.push(format!(
                        "cannot check readiness of composed resource {name}: {err}"
                    ));
                }
            }
        }

        let mut skip = false;
        let mut targets = ComposedTargets {
            observed: observed.map(|o| &o.resource),
            desired: &mut resource,
            observed_xr,
            desired_xr: &mut xr.resource,
            env: &mut env,
        };
        for (i, p) in template_patches.iter().enumerate() {
            let Err(err) = patches::apply_composed_patch(p, &mut targets) else {
                continue;
            };
            let patch_type = quote(p.patch_type());
            if !err.not_found {
                return Err(format!(
                    "cannot render composed resource {name} {patch_type} patch at index {i}: {err}"
                ));
            }
            if !p.is_required() {
                continue;
            }
            // Required exists to hold back a new resource until its source
            // field appears; a resource that exists is patched regardless.
            if patches::to_composed_resource(p) && observed.is_none() {
                warnings.push(format!(
                    "not adding new composed resource {name} to desired state because {patch_type} patch at index {i} has 'policy.fromFieldPath: Required': {err}"
                ));
                xr.ready = Ready::False;
                skip = true;
                break;
            }
            warnings.push(format!(
                "cannot render composed resource {name} {patch_type} patch at index {i}: ignoring 'policy.fromFieldPath: Required' because 'to' resource already exists: {err}"
            ));
        }
        if !skip {
            if !template.depends_on.is_empty() {
                set_annotation(
                    &mut resource,
                    DEPENDS_ON_ANNOTATION,
                    &template.depends_on.join(","),
                );
            }
            let mut r = Resource::new(resource);
            r.ready = ready;
            desired.insert(template.name.clone(), r);
        }
    }

    if !connection::supports_connection_details(observed_xr) {
        let secret = connection::compose_secret(
            observed_xr,
            &xr.connection_details,
            input.write_connection_secret_to_ref.as_ref(),
        )
        .map_err(|e| format!("cannot compose connection secret: {e}"))?;
        if let Some(secret) = secret {
            let xr_name = observed_xr["metadata"]["name"].as_str().unwrap_or_default();
            let mut r = Resource::new(secret);
            r.ready = Ready::True;
            desired.insert(format!("{xr_name}-connection-secret"), r);
        }
    }

    let composite = Resource {
        resource: xr.resource,
        connection_details: xr.connection_details,
        ready: xr.ready,
    };
    let mut context = match &request.context {
        Value::Object(context) => context.clone(),
        _ => Map::new(),
    };
    context.insert(ENVIRONMENT_KEY.to_owned(), env);
    Ok((
        State {
            composite: Some(composite),
            resources: desired,
        },
        Value::Object(context),
    ))
}

/// The desired XR from earlier steps (empty on the first), carrying the
/// observed apiVersion and kind.
fn desired_composite(request: &Request, observed_xr: &Value) -> DesiredComposite {
    let (mut resource, connection_details, ready) = match &request.desired.composite {
        Some(c) if c.resource.is_object() => {
            (c.resource.clone(), c.connection_details.clone(), c.ready)
        }
        Some(c) => (
            Value::Object(Map::new()),
            c.connection_details.clone(),
            c.ready,
        ),
        None => (
            Value::Object(Map::new()),
            ConnectionDetails::new(),
            Ready::Unspecified,
        ),
    };
    for field in ["apiVersion", "kind"] {
        let value = observed_xr[field].as_str().unwrap_or_default();
        resource[field] = Value::String(value.to_owned());
    }
    DesiredComposite {
        resource,
        connection_details,
        ready,
    }
}

/// The environment from the pipeline context, `{}` when absent, with the
/// internal GVK when it has none.
fn environment(context: &Value) -> Value {
    let mut env = match context.get(ENVIRONMENT_KEY) {
        Some(Value::Object(env)) => Value::Object(env.clone()),
        _ => Value::Object(Map::new()),
    };
    let unset = |v: &Value| v.as_str().is_none_or(str::is_empty);
    if unset(&env["apiVersion"]) && unset(&env["kind"]) {
        env["apiVersion"] = Value::String("internal.crossplane.io/v1alpha1".to_owned());
        env["kind"] = Value::String("Environment".to_owned());
    }
    env
}

/// Sets `metadata.<field>` to a non-empty string, or removes it, like
/// `unstructured.SetName`/`SetNamespace` (which give up quietly when
/// `metadata` is not an object).
/// Sets `metadata.annotations[key]` on a desired resource object.
fn set_annotation(resource: &mut Value, key: &str, value: &str) {
    let Some(object) = resource.as_object_mut() else {
        return;
    };
    let metadata = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !metadata.is_object() {
        *metadata = Value::Object(Map::new());
    }
    let Some(metadata) = metadata.as_object_mut() else {
        return;
    };
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if !annotations.is_object() {
        *annotations = Value::Object(Map::new());
    }
    if let Some(annotations) = annotations.as_object_mut() {
        annotations.insert(key.to_owned(), Value::String(value.to_owned()));
    }
}

fn set_metadata(resource: &mut Value, field: &str, value: &Value) {
    let Some(object) = resource.as_object_mut() else {
        return;
    };
    let value = value.as_str().filter(|s| !s.is_empty());
    if object.get("metadata").is_none_or(Value::is_null) {
        if value.is_none() {
            return;
        }
        object.insert("metadata".to_owned(), Value::Object(Map::new()));
    }
    let Some(Value::Object(metadata)) = object.get_mut("metadata") else {
        return;
    };
    match value {
        Some(value) => {
            metadata.insert(field.to_owned(), Value::String(value.to_owned()));
        }
        None => {
            metadata.remove(field);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
