//! Upstream's unit-test cases (function-status-transformer v0.5.1
//! `fn_test.go`), each one row: the hooks, the observed resources, XR and
//! context, and the conditions and events upstream answers with.

use super::*;
use plait_sdk::{Resource, State};
use serde_json::json;

/// An object with these `(type, status, reason, message)` conditions.
fn object(conditions: &[(&str, &str, &str, &str)]) -> Value {
    let conditions: Vec<Value> = conditions
        .iter()
        .map(|(t, s, r, m)| json!({"type": t, "status": s, "reason": r, "message": m}))
        .collect();
    json!({"apiVersion": "some.example.com/v1alpha1", "kind": "Object", "metadata": {"name": "example-name"},
           "status": {"conditions": conditions}})
}

fn synced_error() -> Value {
    object(&[(
        "Synced",
        "False",
        "ReconcileError",
        "Something went wrong: some lower level error",
    )])
}

fn condition(
    t: &str,
    status: ConditionStatus,
    reason: &str,
    message: Option<&str>,
    target: Target,
) -> Condition {
    Condition {
        type_: t.into(),
        status,
        reason: reason.into(),
        message: message.map(str::to_string),
        target: Some(target),
    }
}

fn available() -> Condition {
    condition(
        SUCCESS_CONDITION,
        ConditionStatus::True,
        "Available",
        None,
        Target::Composite,
    )
}

fn failed(reason: &str, message: &str) -> Condition {
    condition(
        SUCCESS_CONDITION,
        ConditionStatus::False,
        reason,
        Some(message),
        Target::Composite,
    )
}

fn set(t: &str, status: &str, reason: &str, message: Option<&str>) -> Value {
    let mut condition = json!({"type": t, "status": status, "reason": reason});
    if let Some(message) = message {
        condition["message"] = message.into();
    }
    json!({"target": "Composite", "condition": condition})
}

fn hook(resources: &[&str], conditions: Value, set_conditions: Value) -> Value {
    let resources: Vec<Value> = resources.iter().map(|n| json!({"name": n})).collect();
    json!({"matchers": [{"resources": resources, "conditions": conditions}], "setConditions": set_conditions})
}

fn synced_error_matcher(message: &str) -> Value {
    json!([{"type": "Synced", "status": "False", "reason": "ReconcileError", "message": message}])
}

struct Case {
    name: &'static str,
    hooks: Value,
    observed: Vec<(&'static str, Value)>,
    composite: Value,
    context: Value,
    want_conditions: Vec<Condition>,
    want_events: Vec<FunctionResult>,
}

fn case(
    name: &'static str,
    hooks: Value,
    observed: Vec<(&'static str, Value)>,
    want_conditions: Vec<Condition>,
) -> Case {
    Case {
        name,
        hooks,
        observed,
        composite: json!({"apiVersion": "example.org/v1", "kind": "XR", "metadata": {"name": "xr"}}),
        context: json!({}),
        want_conditions,
        want_events: vec![],
    }
}

fn event(severity: Severity, message: &str, reason: Option<&str>) -> FunctionResult {
    FunctionResult {
        severity,
        message: message.into(),
        reason: reason.map(str::to_string),
        target: Some(Target::Composite),
    }
}

fn deployment(namespace: Option<&str>, conditions: Value) -> Value {
    let mut object =
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "example"}});
    if let Some(namespace) = namespace {
        object["metadata"]["namespace"] = namespace.into();
    }
    if !conditions.is_null() {
        object["status"] = json!({"conditions": conditions});
    }
    object
}

fn cases() -> Vec<Case> {
    use ConditionStatus::{False, True};
    let custom_ready = |message: Option<&str>| {
        condition(
            "CustomReady",
            False,
            "InternalError",
            message,
            Target::Composite,
        )
    };
    let available_deployment = json!([{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."}]);
    let extra_hook = |name: &str, include: bool| {
        json!([{
            "matchers": [{"includeExtraResources": include, "resources": [{"name": name}], "conditions": [{"type": "Available", "status": "True"}]}],
            "setConditions": [set("CustomReady", "False", "MatchedFirst", None)],
        }])
    };
    let matched_first = condition(
        "CustomReady",
        False,
        "MatchedFirst",
        None,
        Target::Composite,
    );
    let two = vec![
        (
            "resource-a",
            object(&[
                ("Ready", "True", "Available", ""),
                ("Synced", "True", "ReconcileSuccess", ""),
            ]),
        ),
        (
            "resource-b",
            object(&[
                ("Ready", "False", "Creating", ""),
                ("Synced", "True", "ReconcileSuccess", ""),
            ]),
        ),
    ];
    let typed = |match_type: &str, conditions: Value| {
        json!([{
            "matchers": [{"type": match_type, "resources": [{"name": "resource-a"}, {"name": "resource-b"}], "conditions": conditions}],
            "setConditions": [set("Matched", "True", "Testing", None)],
        }])
    };
    let matched = vec![
        condition("Matched", True, "Testing", None, Target::Composite),
        available(),
    ];
    vec![
        Case {
            want_events: vec![event(
                Severity::Normal,
                "some lower level error",
                Some("InternalError"),
            )],
            ..case(
                "CapturesRegexGroups",
                json!([{
                    "matchers": [{"resources": [{"name": "example-mr"}], "conditions": synced_error_matcher("Something went wrong: (?P<Error>.+)")}],
                    "setConditions": [set("CustomReady", "False", "InternalError", Some("{{ .Error }}"))],
                    "createEvents": [{"target": "Composite", "event": {"type": "Normal", "reason": "InternalError", "message": "{{ .Error }}"}}],
                }]),
                vec![("example-mr", synced_error())],
                vec![custom_ready(Some("some lower level error")), available()],
            )
        },
        case(
            "WildcardMatching",
            json!([hook(
                &["example-mr"],
                json!([{"type": "Synced", "status": "False"}]),
                json!([set("CustomReady", "False", "InternalError", None)])
            )]),
            vec![("example-mr", synced_error())],
            vec![custom_ready(None), available()],
        ),
        case(
            "MatchesUnknownStatusOfAMissingCondition",
            json!([{
                "matchers": [{"resources": [{"name": "example-mr"}], "conditions": [{"type": "Synced", "status": "Unknown", "reason": "", "message": ""}]}],
                "setConditions": [{"target": "CompositeAndClaim", "condition": {"type": "CustomReady", "status": "False", "reason": "DoesNotExist"}}],
            }]),
            vec![("example-mr", json!({"status": {"conditions": []}}))],
            vec![
                condition(
                    "CustomReady",
                    False,
                    "DoesNotExist",
                    None,
                    Target::CompositeAndClaim,
                ),
                available(),
            ],
        ),
        case(
            "MatchersAreANDed",
            json!([{
                "matchers": [
                    {"resources": [{"name": "example-mr"}], "conditions": synced_error_matcher("Something went wrong: (?P<Error>.+)")},
                    {"resources": [{"name": "example-mr"}], "conditions": [{"type": "Ready", "status": "True"}]},
                ],
                "setConditions": [set("CustomReady", "False", "InternalError", Some("{{ .Error }}"))],
            }]),
            vec![("example-mr", synced_error())],
            vec![available()],
        ),
        case(
            "OverrideOnlyWithForce",
            json!([
                hook(
                    &["example-mr"],
                    json!([{"type": "Synced"}]),
                    json!([set("CustomReady", "True", "First", None)])
                ),
                hook(
                    &["example-mr"],
                    json!([{"type": "Synced"}]),
                    json!([set("CustomReady", "False", "NotForced", None)])
                ),
                hook(
                    &["example-mr"],
                    json!([{"type": "Synced"}]),
                    json!([{"force": true, "condition": {"type": "CustomReady", "status": "False", "reason": "Forced"}}])
                ),
            ]),
            vec![("example-mr", synced_error())],
            vec![
                condition("CustomReady", True, "First", None, Target::Composite),
                condition("CustomReady", False, "Forced", None, Target::Composite),
                available(),
            ],
        ),
        case(
            "NoMatchConditions",
            json!([hook(
                &["example-mr"],
                json!([]),
                json!([set("CustomReady", "False", "InternalError", None)])
            )]),
            vec![("example-mr", synced_error())],
            vec![available()],
        ),
        case(
            "NoResourceToMatch",
            json!([hook(
                &["does-not-exist"],
                json!([{"type": "Synced"}]),
                json!([set("CustomReady", "False", "InternalError", None)])
            )]),
            vec![("example-mr", synced_error())],
            vec![available()],
        ),
        case(
            "HookWithoutMatchersSetsNothing",
            json!([{"setConditions": [set("CustomReady", "False", "InternalError", None)]}]),
            vec![("example-mr", synced_error())],
            vec![available()],
        ),
        case(
            "DefaultConditionOfACustomType",
            json!([
                hook(
                    &["resource-key-a"],
                    json!([{"message": "", "reason": "", "status": "Unknown", "type": "ThisTypeDoesNotExist"}]),
                    json!([set("CustomReady", "False", "DefaultCondition", None)])
                ),
                hook(
                    &["resource-key-does-not-match"],
                    json!([{"message": "", "reason": "", "status": "Unknown", "type": "ThisTypeDoesNotExist"}]),
                    json!([set(
                        "CustomReadyShouldNotMatch",
                        "False",
                        "DefaultCondition",
                        None
                    )])
                ),
            ]),
            vec![("resource-key-a", synced_error())],
            vec![
                condition(
                    "CustomReady",
                    False,
                    "DefaultCondition",
                    None,
                    Target::Composite,
                ),
                available(),
            ],
        ),
        case(
            "MessageRegexFailure",
            json!([hook(
                &["example-mr"],
                synced_error_matcher("a bad regex (?!)"),
                json!([set(
                    "CustomReady",
                    "False",
                    "InternalError",
                    Some("{{ .Error }}")
                )])
            )]),
            vec![("example-mr", synced_error())],
            vec![failed(
                "MatchFailure",
                "cannot match resources, statusConditionHookIndex: 0, matchConditionIndex: 0: cannot compile message regex: error parsing regexp: invalid or unsupported Perl syntax: `(?!`",
            )],
        ),
        case(
            "ResourceNameRegexFailure",
            json!([hook(
                &["example-(?!)"],
                synced_error_matcher("Something went wrong: (?P<Error>.+)"),
                json!([set("CustomReady", "False", "InternalError", None)])
            )]),
            vec![("example-mr", synced_error())],
            vec![failed(
                "MatchFailure",
                "cannot match resources, statusConditionHookIndex: 0, matchConditionIndex: 0: cannot compile resource key regex, resourcesIndex: 0: error parsing regexp: invalid or unsupported Perl syntax: `(?!`",
            )],
        ),
        case(
            "TemplateParseFailure",
            json!([hook(
                &["example-mr"],
                synced_error_matcher("Something went wrong: (?P<Error>.+)"),
                json!([set(
                    "CustomReady",
                    "False",
                    "InternalError",
                    Some("{{ .Error }")
                )])
            )]),
            vec![("example-mr", synced_error())],
            vec![failed(
                "SetConditionFailure",
                "cannot set condition, statusConditionHookIndex: 0, setConditionIndex: 0: cannot parse template: template: :1: unexpected \"}\" in operand",
            )],
        ),
        case(
            "ErrorsSkipOnlyWhatFailed",
            json!([
                hook(
                    &["example-mr"],
                    synced_error_matcher("a bad regex (?!)"),
                    json!([set(
                        "CustomReady",
                        "False",
                        "InternalError",
                        Some("a matchcondition failed, this should not be set")
                    )])
                ),
                hook(
                    &["example-mr"],
                    synced_error_matcher("Something went wrong: (?P<Error>.+)"),
                    json!([
                        set(
                            "CustomReady",
                            "False",
                            "InternalError",
                            Some("this condition will fail {{ .Error }")
                        ),
                        set(
                            "CustomReady",
                            "False",
                            "InternalError",
                            Some("this condition should be set, error: {{ .Error }}")
                        ),
                    ])
                ),
            ]),
            vec![("example-mr", synced_error())],
            vec![
                failed(
                    "MatchFailure",
                    "cannot match resources, statusConditionHookIndex: 0, matchConditionIndex: 0: cannot compile message regex: error parsing regexp: invalid or unsupported Perl syntax: `(?!`",
                ),
                failed(
                    "SetConditionFailure",
                    "cannot set condition, statusConditionHookIndex: 1, setConditionIndex: 0: cannot parse template: template: :1: unexpected \"}\" in operand",
                ),
                custom_ready(Some(
                    "this condition should be set, error: some lower level error",
                )),
            ],
        ),
        case(
            "InvalidInput",
            json!({"object": true}),
            vec![],
            vec![failed(
                "InputFailure",
                "cannot get Function input from *v1.RunFunctionRequest: cannot get function input *v1beta1.StatusTransformation from *v1.RunFunctionRequest: cannot unmarshal JSON from *structpb.Struct into *v1beta1.StatusTransformation: json: cannot unmarshal Go value of type v1beta1.StatusTransformation: unknown name \"object\"",
            )],
        ),
        case(
            "InvalidEventType",
            json!([{
                "matchers": [{"resources": [{"name": "example-mr"}], "conditions": synced_error_matcher("Something went wrong: (?P<Error>.+)")}],
                "createEvents": [{"event": {"type": "ThisIsAnInvalidType", "message": "{{ .Error }}"}}],
            }]),
            vec![("example-mr", synced_error())],
            vec![failed(
                "SetConditionFailure",
                "cannot create event, statusConditionHookIndex: 0, createEventIndex: 0: invalid type ThisIsAnInvalidType, must be one of [Normal, Warning]",
            )],
        ),
        Case {
            want_events: vec![event(
                Severity::Normal,
                "Some message.",
                Some("InternalError"),
            )],
            ..case(
                "EventTypeDefaultsToNormal",
                json!([{
                    "matchers": [{"resources": [{"name": "example-mr"}], "conditions": synced_error_matcher("Something went wrong: (?P<Error>.+)")}],
                    "createEvents": [{"event": {"reason": "InternalError", "message": "Some message."}}],
                }]),
                vec![("example-mr", synced_error())],
                vec![available()],
            )
        },
        case(
            "AnyResourceMatchesAnyCondition",
            typed(
                "AnyResourceMatchesAnyCondition",
                json!([{"type": "Ready", "status": "Unknown"}, {"type": "Ready", "reason": "Creating"}]),
            ),
            two.clone(),
            matched.clone(),
        ),
        case(
            "AnyResourceMatchesAllConditions",
            typed(
                "AnyResourceMatchesAllConditions",
                json!([{"type": "Ready", "status": "True"}, {"type": "Synced", "status": "True"}]),
            ),
            two.clone(),
            matched.clone(),
        ),
        case(
            "AnyResourceMatchesAllConditionsNot",
            typed(
                "AnyResourceMatchesAllConditions",
                json!([{"type": "Ready", "status": "True"}, {"type": "Synced", "status": "False"}]),
            ),
            two.clone(),
            vec![available()],
        ),
        case(
            "AllResourcesMatchAnyCondition",
            typed(
                "AllResourcesMatchAnyCondition",
                json!([{"type": "Ready", "status": "Unknown"}, {"type": "Synced", "status": "True"}]),
            ),
            two.clone(),
            matched.clone(),
        ),
        case(
            "AllResourcesMatchAllConditionsNot",
            typed(
                "AllResourcesMatchAllConditions",
                json!([{"type": "Ready", "status": "True"}, {"type": "Synced", "status": "True"}]),
            ),
            two.clone(),
            vec![available()],
        ),
        case(
            "AllResourcesMatchAllConditions",
            typed(
                "AllResourcesMatchAllConditions",
                json!([{"type": "Synced", "status": "True"}]),
            ),
            two,
            matched,
        ),
        Case {
            composite: object(&[("Synced", "False", "SomeError", "")]),
            ..case(
                "MatchesTheCompositeWhenAsked",
                json!([{"matchers": [{"includeCompositeAsResource": true, "conditions": [{"type": "Synced", "status": "False", "reason": "SomeError"}]}],
                        "setConditions": [set("CustomReady", "False", "InternalError", None)]}]),
                vec![],
                vec![custom_ready(None), available()],
            )
        },
        Case {
            composite: object(&[("Synced", "False", "SomeError", "")]),
            ..case(
                "DoesNotMatchTheCompositeByDefault",
                json!([{"matchers": [{"conditions": [{"type": "Synced", "status": "False", "reason": "SomeError"}]}],
                        "setConditions": [set("CustomReady", "False", "InternalError", None)]}]),
                vec![],
                vec![available()],
            )
        },
        Case {
            context: json!({CONTEXT_KEY_EXTRA_RESOURCES: {"IntoKey": [deployment(Some("default"), available_deployment.clone())]}}),
            ..case(
                "MatchesExtraResourcesWhenAsked",
                extra_hook(
                    "extra-resource.IntoKey.apps.Deployment.default.example",
                    true,
                ),
                vec![],
                vec![matched_first.clone(), available()],
            )
        },
        Case {
            context: json!({CONTEXT_KEY_EXTRA_RESOURCES: {"IntoKey": [deployment(Some("default"), available_deployment.clone())]}}),
            ..case(
                "DoesNotMatchExtraResourcesByDefault",
                extra_hook(
                    "extra-resource.IntoKey.apps.Deployment.default.example",
                    false,
                ),
                vec![],
                vec![available()],
            )
        },
        Case {
            context: json!({CONTEXT_KEY_EXTRA_RESOURCES: {"IntoKey": [deployment(None, available_deployment)]}}),
            ..case(
                "ClusterScopedExtraResourceHasAnEmptyNamespace",
                extra_hook("extra-resource.IntoKey.apps.Deployment..example", true),
                vec![],
                vec![matched_first, available()],
            )
        },
        Case {
            context: json!({CONTEXT_KEY_EXTRA_RESOURCES: {"IntoKey": [deployment(None, Value::Null)]}}),
            ..case(
                "ExtraResourceWithoutStatus",
                extra_hook("extra-resource.IntoKey.apps.Deployment..example", true),
                vec![],
                vec![available()],
            )
        },
        Case {
            context: json!({CONTEXT_KEY_EXTRA_RESOURCES: 1}),
            ..case(
                "ExtraResourcesOfAnUnexpectedType",
                extra_hook("extra-resource.*", true),
                vec![],
                vec![failed(
                    "InputFailure",
                    "cannot load extra-resources: unexpected extra-resources type: float64",
                )],
            )
        },
        Case {
            context: json!({CONTEXT_KEY_EXTRA_RESOURCES: {"IntoKey": 1}}),
            ..case(
                "ExtraResourcesListOfAnUnexpectedType",
                extra_hook("extra-resource.*", true),
                vec![],
                vec![failed(
                    "InputFailure",
                    "cannot load extra-resources: unexpected extra-resources value type for IntoKey: float64",
                )],
            )
        },
        Case {
            context: json!({CONTEXT_KEY_EXTRA_RESOURCES: {"IntoKey": [1]}}),
            ..case(
                "ExtraResourceOfAnUnexpectedType",
                extra_hook("extra-resource.*", true),
                vec![],
                vec![failed(
                    "InputFailure",
                    "cannot load extra-resources: unexpected extra-resources value type for IntoKey [0]: float64",
                )],
            )
        },
    ]
}

#[test]
fn transforms_as_upstream_does() {
    for case in cases() {
        let input = match case.hooks {
            hooks @ Value::Array(_) => {
                json!({"apiVersion": "function-status-transformer.fn.crossplane.io/v1beta1", "kind": "StatusTransformation", "statusConditionHooks": hooks})
            }
            Value::Object(mut other) => {
                other.insert(
                    "apiVersion".into(),
                    "function-status-transformer.fn.crossplane.io/v1beta1".into(),
                );
                other.insert("kind".into(), "StatusTransformation".into());
                Value::Object(other)
            }
            other => other,
        };
        let request = Request {
            input: Some(input),
            observed: State {
                composite: Some(Resource::new(case.composite)),
                resources: case
                    .observed
                    .into_iter()
                    .map(|(name, object)| (name.to_string(), Resource::new(object)))
                    .collect(),
            },
            context: case.context,
            ..Request::default()
        };
        let response = StatusTransformer::run(request).unwrap();
        assert_eq!(response.conditions, case.want_conditions, "{}", case.name);
        assert_eq!(response.results, case.want_events, "{}", case.name);
        assert_eq!(response.ttl, Some(DEFAULT_TTL), "{}", case.name);
    }
}
