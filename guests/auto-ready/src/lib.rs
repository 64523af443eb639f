//! function-auto-ready, as a plait function.
//!
//! Marks a desired composed resource ready when it already exists (it is in
//! the observed state), no earlier step gave an opinion on its readiness, and
//! either its kind's built-in health check passes or it reports a `Ready`
//! condition with status `True`. It only ever sets `Ready::True`.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod health;

use std::time::Duration;

use plait_go_compat::input::{ObjectMeta, from_sorted_value, get_input_error, go_string};
use plait_sdk::{Function, FunctionError, Ready, Request, Response};
use serde::Deserialize;
use serde_json::Value;

use plait_go_compat::duration::parse_go_duration;

/// The TTL upstream functions give their responses unless told otherwise.
pub const DEFAULT_TTL: Duration = Duration::from_secs(60);

/// The `function-auto-ready` built-in.
pub struct AutoReady;

/// The step's optional input (`auto-ready.fn.crossplane.io/v1beta1` `Input`),
/// read as upstream reads it: a member name its Go struct does not declare
/// is refused (see [`plait_go_compat::input`]).
#[derive(Debug, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
struct Input {
    #[serde(default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: Option<ObjectMeta>,
    /// How long the response may be cached, as a Go duration (`1m0s`);
    /// empty means the default.
    #[serde(default, deserialize_with = "go_string")]
    ttl: Option<String>,
    #[serde(default)]
    cel_health_check_customization: Option<Value>,
    #[serde(default, deserialize_with = "go_string")]
    cel_health_check_customization_from: Option<String>,
}

plait_go_compat::go_structs!(Input => "v1beta1.Input");

impl Function for AutoReady {
    fn run(request: Request) -> Result<Response, FunctionError> {
        let mut response = Response::from_request(&request);
        response.ttl = Some(DEFAULT_TTL);

        let input = match request.input.clone().map(from_sorted_value::<Input>) {
            None => Input::default(),
            Some(Ok(input)) => input,
            Some(Err(e)) => {
                response.fatal(format!(
                    "cannot get Function input from *v1.RunFunctionRequest: {}",
                    get_input_error("v1beta1.Input", e)
                ));
                return Ok(response);
            }
        };
        if let Some(ttl) = input.ttl.as_deref().filter(|ttl| !ttl.is_empty()) {
            match parse_go_duration(ttl) {
                Ok(ttl) => response.ttl = Some(ttl),
                Err(e) => {
                    response.fatal(format!("cannot set ttl: {e}"));
                    return Ok(response);
                }
            }
        }
        if input.cel_health_check_customization.is_some()
            || input.cel_health_check_customization_from.is_some()
        {
            response.warning(
                "CEL health checks (celHealthCheckCustomization, celHealthCheckCustomizationFrom) \
                 are not supported by plait's built-in function-auto-ready; \
                 only the built-in per-kind checks and the Ready condition were used",
            );
        }

        for (name, desired) in &mut response.desired.resources {
            // Another step already decided; auto-ready only fills in the blanks.
            if desired.ready != Ready::Unspecified {
                continue;
            }
            // A resource that does not exist yet cannot be ready.
            let Some(observed) = request.observed.resources.get(name) else {
                continue;
            };
            if is_ready(&observed.resource) {
                desired.ready = Ready::True;
            }
        }
        Ok(response)
    }
}

/// Whether an observed composed resource is ready: its kind's health check
/// passes, or (for any kind) its `Ready` condition is `True`.
pub fn is_ready(observed: &Value) -> bool {
    let passes_health_check = group_version_kind(observed)
        .and_then(|(group, version, kind)| health::health_check(group, version, kind))
        .is_some_and(|check| check(observed));
    passes_health_check || ready_condition_is_true(observed)
}

/// The object's group, version and kind, parsed like Kubernetes'
/// `ParseGroupVersion` (`v1` is the core group; more than one `/` is invalid).
fn group_version_kind(obj: &Value) -> Option<(&str, &str, &str)> {
    let api_version = obj.get("apiVersion")?.as_str()?;
    let kind = obj.get("kind")?.as_str()?;
    let (group, version) = match api_version.split_once('/') {
        None => ("", api_version),
        Some((_, version)) if version.contains('/') => return None,
        Some(gv) => gv,
    };
    Some((group, version, kind))
}

/// The first `Ready` condition under `status.conditions` has status `True`.
/// A malformed status reads as `Unknown`, as Crossplane's `GetCondition` does.
fn ready_condition_is_true(obj: &Value) -> bool {
    let conditions = match obj.get("status").and_then(|s| s.get("conditions")) {
        Some(Value::Array(conditions)) => conditions,
        _ => return false,
    };
    conditions
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        == Some("True")
}

plait_sdk::export_function!(AutoReady);

#[cfg(test)]
mod tests {
    use super::*;
    use plait_sdk::{Resource, Severity, State};
    use serde_json::json;

    fn state(resources: Vec<(&str, Value, Ready)>) -> State {
        State {
            composite: None,
            resources: resources
                .into_iter()
                .map(|(name, resource, ready)| {
                    (
                        name.to_string(),
                        Resource {
                            ready,
                            ..Resource::new(resource)
                        },
                    )
                })
                .collect(),
        }
    }

    fn ready_condition(status: &str) -> Value {
        json!({"conditions": [{"type": "Ready", "status": status}]})
    }

    fn readiness(response: &Response) -> Vec<(String, Ready)> {
        response
            .desired
            .resources
            .iter()
            .map(|(name, r)| (name.clone(), r.ready))
            .collect()
    }

    #[test]
    fn marks_only_observed_unspecified_resources_that_are_ready() {
        let bucket = |status| json!({"apiVersion": "s3.aws.upbound.io/v1beta1", "kind": "Bucket", "status": ready_condition(status)});
        let cases = vec![
            (
                "ready condition True",
                vec![("a", bucket("True"))],
                vec![("a", json!({}), Ready::Unspecified)],
                Ready::True,
            ),
            (
                "ready condition False",
                vec![("a", bucket("False"))],
                vec![("a", json!({}), Ready::Unspecified)],
                Ready::Unspecified,
            ),
            (
                "not observed yet",
                vec![],
                vec![("a", json!({}), Ready::Unspecified)],
                Ready::Unspecified,
            ),
            (
                "an earlier step said not ready",
                vec![("a", bucket("True"))],
                vec![("a", json!({}), Ready::False)],
                Ready::False,
            ),
            (
                "health check passes without a Ready condition",
                vec![("a", json!({"apiVersion": "v1", "kind": "ConfigMap"}))],
                vec![("a", json!({}), Ready::Unspecified)],
                Ready::True,
            ),
            (
                "failed health check falls back to the Ready condition",
                vec![(
                    "a",
                    json!({"apiVersion": "apps/v1", "kind": "Deployment", "status": ready_condition("True")}),
                )],
                vec![("a", json!({}), Ready::Unspecified)],
                Ready::True,
            ),
            (
                "failed health check and no Ready condition",
                vec![(
                    "a",
                    json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 2}, "status": {"availableReplicas": 1}}),
                )],
                vec![("a", json!({}), Ready::Unspecified)],
                Ready::Unspecified,
            ),
            (
                "the kind comes from the observed object",
                vec![("a", json!({"apiVersion": "v1", "kind": "Secret"}))],
                vec![(
                    "a",
                    json!({"apiVersion": "v1", "kind": "Bucket"}),
                    Ready::Unspecified,
                )],
                Ready::True,
            ),
            (
                "an apiVersion with two slashes has no health check",
                vec![("a", json!({"apiVersion": "x/y/v1", "kind": "ConfigMap"}))],
                vec![("a", json!({}), Ready::Unspecified)],
                Ready::Unspecified,
            ),
        ];
        for (name, observed, desired, want) in cases {
            let request = Request {
                observed: state(
                    observed
                        .into_iter()
                        .map(|(n, r)| (n, r, Ready::Unspecified))
                        .collect(),
                ),
                desired: state(desired),
                ..Request::default()
            };
            let response = AutoReady::run(request).unwrap();
            assert_eq!(
                readiness(&response),
                vec![("a".to_string(), want)],
                "{name}"
            );
            assert!(
                response.results.is_empty(),
                "{name}: {:?}",
                response.results
            );
        }
    }

    #[test]
    fn passes_everything_else_through() {
        let xr = Resource::new(json!({"apiVersion": "example.org/v1", "kind": "XR"}));
        let request = Request {
            tag: "t".into(),
            observed: state(vec![(
                "a",
                json!({"apiVersion": "v1", "kind": "Secret"}),
                Ready::Unspecified,
            )]),
            desired: State {
                composite: Some(xr.clone()),
                ..state(vec![
                    (
                        "a",
                        json!({"apiVersion": "v1", "kind": "Secret", "data": {"k": "dg=="}}),
                        Ready::Unspecified,
                    ),
                    (
                        "b",
                        json!({"apiVersion": "v1", "kind": "Secret"}),
                        Ready::Unspecified,
                    ),
                ])
            },
            context: json!({"k": "v"}),
            ..Request::default()
        };
        let response = AutoReady::run(request.clone()).unwrap();
        assert_eq!(response.tag, "t");
        assert_eq!(response.context, json!({"k": "v"}));
        assert_eq!(response.desired.composite, Some(xr));
        assert_eq!(
            response.desired.resources["a"].resource,
            request.desired.resources["a"].resource
        );
        assert_eq!(
            readiness(&response),
            vec![("a".into(), Ready::True), ("b".into(), Ready::Unspecified)]
        );
    }

    #[test]
    fn input_sets_the_ttl_and_rejects_what_it_cannot_honour() {
        type Case = (
            &'static str,
            Option<Value>,
            Option<Duration>,
            Vec<(Severity, &'static str)>,
        );
        let cases: Vec<Case> = vec![
            ("no input", None, Some(DEFAULT_TTL), vec![]),
            (
                "ttl",
                Some(
                    json!({"apiVersion": "auto-ready.fn.crossplane.io/v1beta1", "kind": "Input", "ttl": "2m30s"}),
                ),
                Some(Duration::from_secs(150)),
                vec![],
            ),
            (
                "empty ttl is the default",
                Some(json!({"ttl": ""})),
                Some(DEFAULT_TTL),
                vec![],
            ),
            (
                "every field of upstream's input",
                Some(
                    json!({"apiVersion": "auto-ready.fn.crossplane.io/v1beta1", "kind": "Input",
                    "metadata": {"name": "x"}, "ttl": "1m",
                    "celHealthCheckCustomization": {}, "celHealthCheckCustomizationFrom": null}),
                ),
                Some(Duration::from_secs(60)),
                vec![(
                    Severity::Warning,
                    "CEL health checks (celHealthCheckCustomization, celHealthCheckCustomizationFrom) \
                     are not supported by plait's built-in function-auto-ready; only the built-in \
                     per-kind checks and the Ready condition were used",
                )],
            ),
            (
                "bad ttl",
                Some(json!({"ttl": "soon"})),
                Some(DEFAULT_TTL),
                vec![(
                    Severity::Fatal,
                    "cannot set ttl: time: invalid duration \"soon\"",
                )],
            ),
            (
                "ttl of the wrong type",
                Some(json!({"ttl": 5})),
                Some(DEFAULT_TTL),
                vec![(
                    Severity::Fatal,
                    "cannot get Function input from *v1.RunFunctionRequest: cannot get function input \
                     *v1beta1.Input from *v1.RunFunctionRequest: cannot unmarshal JSON from \
                     *structpb.Struct into *v1beta1.Input: json: cannot unmarshal JSON number into Go value of type string",
                )],
            ),
            (
                "unknown field",
                Some(json!({"ttl": "1m", "tll": "2m"})),
                Some(DEFAULT_TTL),
                vec![(
                    Severity::Fatal,
                    "cannot get Function input from *v1.RunFunctionRequest: cannot get function input \
                     *v1beta1.Input from *v1.RunFunctionRequest: cannot unmarshal JSON from \
                     *structpb.Struct into *v1beta1.Input: json: cannot unmarshal Go value of type \
                     v1beta1.Input: unknown name \"tll\"",
                )],
            ),
            (
                "unknown field in metadata",
                Some(json!({"metadata": {"nmae": "x"}})),
                Some(DEFAULT_TTL),
                vec![(
                    Severity::Fatal,
                    "cannot get Function input from *v1.RunFunctionRequest: cannot get function input \
                     *v1beta1.Input from *v1.RunFunctionRequest: cannot unmarshal JSON from \
                     *structpb.Struct into *v1beta1.Input: json: cannot unmarshal Go value of type \
                     v1.ObjectMeta: unknown name \"nmae\"",
                )],
            ),
        ];
        for (name, input, ttl, results) in cases {
            let response = AutoReady::run(Request {
                input,
                ..Request::default()
            })
            .unwrap();
            assert_eq!(response.ttl, ttl, "{name}");
            let got: Vec<_> = response
                .results
                .iter()
                .map(|r| (r.severity, r.message.as_str()))
                .collect();
            assert_eq!(got, results, "{name}");
        }
    }

    #[test]
    fn cel_health_checks_warn_instead_of_being_ignored() {
        for input in [
            json!({"celHealthCheckCustomization": {"example.org/v1, Kind=Widget": "object.status.ok"}}),
            json!({"celHealthCheckCustomizationFrom": "healthchecks"}),
        ] {
            let request = Request {
                input: Some(input.clone()),
                observed: state(vec![(
                    "a",
                    json!({"apiVersion": "v1", "kind": "Secret"}),
                    Ready::Unspecified,
                )]),
                desired: state(vec![("a", json!({}), Ready::Unspecified)]),
                ..Request::default()
            };
            let response = AutoReady::run(request).unwrap();
            assert_eq!(response.results.len(), 1, "{input}");
            assert_eq!(response.results[0].severity, Severity::Warning, "{input}");
            assert!(
                response.results[0].message.contains("not supported"),
                "{input}"
            );
            assert_eq!(
                readiness(&response),
                vec![("a".into(), Ready::True)],
                "{input}"
            );
        }
    }
}
