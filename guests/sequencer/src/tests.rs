//! Upstream's unit-test cases (function-sequencer v0.6.0 `fn_test.go`),
//! each as one row: the input, the observed and desired composed
//! resources, and the desired resources, results and XR readiness upstream
//! answers with.

use super::*;
use plait_sdk::{Severity, State};
use serde_json::{Value, json};
use std::time::Duration;

fn xr() -> Value {
    json!({"apiVersion": "example.org/v1", "kind": "XR", "metadata": {"name": "cool-xr"}, "spec": {"count": 2, "parameters": {"multiAZ": true}}})
}
fn mr() -> Value {
    json!({"apiVersion": "example.org/v1", "kind": "MR", "metadata": {"name": "cool-mr"}})
}
fn namespaced(mut object: Value) -> Value {
    object["metadata"]["namespace"] = "cool-namespace".into();
    object
}
fn usage(
    api_version: &str,
    kind: &str,
    name: &str,
    of_kind: &str,
    namespace: Option<&str>,
) -> Value {
    let mut metadata = json!({"name": name});
    if let Some(namespace) = namespace {
        metadata["namespace"] = namespace.into();
    }
    json!({
        "apiVersion": api_version, "kind": kind, "metadata": metadata,
        "spec": {
            "by": {"apiVersion": "example.org/v1", "kind": "MR", "resourceRef": {"name": "cool-mr"}},
            "of": {"apiVersion": "example.org/v1", "kind": of_kind, "resourceRef": {"name": if of_kind == "XR" {"cool-xr"} else {"cool-mr"}}},
            "reason": "dependency", "replayDeletion": true,
        },
    })
}
const MR_OF_XR: &str = "mr-cool-mr-xr-cool-xr-d9f469-dependency";
const MR_OF_MR: &str = "mr-cool-mr-mr-cool-mr-91201d-dependency";
fn uv1() -> Value {
    usage(APIEXTENSIONS, "Usage", MR_OF_XR, "XR", None)
}
fn u2v1() -> Value {
    usage(APIEXTENSIONS, "Usage", MR_OF_MR, "MR", None)
}
fn uv2() -> Value {
    usage(PROTECTION, "ClusterUsage", MR_OF_XR, "XR", None)
}
fn u2v2() -> Value {
    usage(PROTECTION, "ClusterUsage", MR_OF_MR, "MR", None)
}
fn nuv2() -> Value {
    usage(PROTECTION, "Usage", MR_OF_XR, "XR", Some("cool-namespace"))
}
const APIEXTENSIONS: &str = "apiextensions.crossplane.io/v1beta1";
const PROTECTION: &str = "protection.crossplane.io/v1beta1";

/// `(name, object, ready)`; `Value::Null` stands for a resource without an object.
type Row = (&'static str, Value, Ready);

fn resources(rows: &[Row]) -> BTreeMap<String, Resource> {
    rows.iter()
        .map(|(name, object, ready)| {
            (
                name.to_string(),
                Resource {
                    resource: object.clone(),
                    ready: *ready,
                    ..Resource::default()
                },
            )
        })
        .collect()
}

struct Case {
    name: &'static str,
    input: Value,
    observed: Vec<Row>,
    desired: Vec<Row>,
    want_desired: Vec<Row>,
    want_results: Vec<(Severity, &'static str)>,
    want_composite_ready: Ready,
}

fn rule(sequence: &[&str]) -> Value {
    json!({"rules": [{"sequence": sequence}]})
}
fn with(mut input: Value, fields: Value) -> Value {
    if let (Some(input), Value::Object(fields)) = (input.as_object_mut(), fields) {
        input.extend(fields);
    }
    input
}
fn rule_with(sequence: &[&str], fields: Value) -> Value {
    json!({"rules": [with(json!({"sequence": sequence}), fields)]})
}

use Ready::{False as NotReady, True as IsReady, Unspecified as Unset};
const NORMAL: Severity = Severity::Normal;
const FATAL: Severity = Severity::Fatal;

fn cases() -> Vec<Case> {
    let deletion = |sequence: &[&str], version: &str| {
        with(
            rule(sequence),
            json!({"enableDeletionSequencing": true, "replayDeletion": true, "usageVersion": version}),
        )
    };
    vec![
        Case {
            name: "ObservedAreSkipped",
            input: rule(&["first", "second", "third"]),
            observed: vec![("first", mr(), Unset), ("second", mr(), Unset)],
            desired: vec![
                ("first", mr(), Unset),
                ("second", mr(), Unset),
                ("third", mr(), Unset),
            ],
            want_desired: vec![("first", mr(), Unset), ("second", mr(), Unset)],
            want_results: vec![(
                NORMAL,
                "Delaying creation of resource(s) matching \"third\" because \"first\" is not fully ready (0 of 1)",
            )],
            want_composite_ready: Unset,
        },
        Case {
            name: "FirstNotCreated",
            input: rule(&["first", "second"]),
            observed: vec![],
            desired: vec![("second", mr(), Unset)],
            want_desired: vec![],
            want_results: vec![(
                NORMAL,
                "Delaying creation of resource(s) matching \"second\" because \"first\" does not exist yet",
            )],
            want_composite_ready: Unset,
        },
        Case {
            name: "FirstNotReady",
            input: rule(&["first", "second"]),
            observed: vec![],
            desired: vec![("first", mr(), NotReady), ("second", mr(), Unset)],
            want_desired: vec![("first", mr(), NotReady)],
            want_results: vec![(
                NORMAL,
                "Delaying creation of resource(s) matching \"second\" because \"first\" is not fully ready (0 of 1)",
            )],
            want_composite_ready: Unset,
        },
        Case {
            name: "FirstReady",
            input: rule(&["first", "second"]),
            observed: vec![],
            desired: vec![("first", mr(), IsReady), ("second", mr(), Unset)],
            want_desired: vec![("first", mr(), IsReady), ("second", mr(), Unset)],
            want_results: vec![],
            want_composite_ready: Unset,
        },
        Case {
            name: "SequencesFirstNotReadyInBoth",
            input: json!({"rules": [{"sequence": ["first", "second"]}, {"sequence": ["third", "fourth"]}]}),
            observed: vec![],
            desired: vec![
                ("first", mr(), Unset),
                ("second", mr(), Unset),
                ("third", mr(), Unset),
                ("fourth", mr(), Unset),
            ],
            want_desired: vec![("first", mr(), Unset), ("third", mr(), Unset)],
            want_results: vec![
                (
                    NORMAL,
                    "Delaying creation of resource(s) matching \"second\" because \"first\" is not fully ready (0 of 1)",
                ),
                (
                    NORMAL,
                    "Delaying creation of resource(s) matching \"fourth\" because \"third\" is not fully ready (0 of 1)",
                ),
            ],
            want_composite_ready: Unset,
        },
        Case {
            name: "OutOfSequence",
            input: rule(&["first", "second"]),
            observed: vec![],
            desired: vec![
                ("first", mr(), NotReady),
                ("second", mr(), Unset),
                ("outofsequence", mr(), Unset),
            ],
            want_desired: vec![("first", mr(), NotReady), ("outofsequence", mr(), Unset)],
            want_results: vec![(
                NORMAL,
                "Delaying creation of resource(s) matching \"second\" because \"first\" is not fully ready (0 of 1)",
            )],
            want_composite_ready: Unset,
        },
        Case {
            name: "SequenceRegexNotAllReady",
            input: rule(&["first-.*", "second"]),
            observed: vec![],
            desired: vec![
                ("first-0", mr(), IsReady),
                ("first-1", mr(), IsReady),
                ("first-2", mr(), Unset),
                ("second", mr(), Unset),
            ],
            want_desired: vec![
                ("first-0", mr(), IsReady),
                ("first-1", mr(), IsReady),
                ("first-2", mr(), Unset),
            ],
            want_results: vec![(
                NORMAL,
                "Delaying creation of resource(s) matching \"second\" because \"first-.*\" is not fully ready (2 of 3)",
            )],
            want_composite_ready: Unset,
        },
        Case {
            name: "SequenceRegexObservedAreSkipped",
            input: rule(&["first-.*", "second-.*"]),
            observed: vec![("first-1", mr(), IsReady), ("second-1", mr(), Unset)],
            desired: vec![
                ("first-1", mr(), IsReady),
                ("first-2", mr(), Unset),
                ("second-1", mr(), Unset),
                ("second-2", mr(), Unset),
            ],
            want_desired: vec![
                ("first-1", mr(), IsReady),
                ("first-2", mr(), Unset),
                ("second-1", mr(), Unset),
            ],
            want_results: vec![(
                NORMAL,
                "Delaying creation of resource(s) matching \"second-.*\" because \"first-.*\" is not fully ready (1 of 2)",
            )],
            want_composite_ready: Unset,
        },
        Case {
            name: "SequenceRegexWaitComplex",
            input: rule(&["first-.*", "second$", "third-resource"]),
            observed: vec![],
            desired: vec![
                ("first-0", mr(), IsReady),
                ("first-1", mr(), NotReady),
                ("0-second", mr(), Unset),
                ("1-second", mr(), Unset),
                ("third-resource", mr(), Unset),
            ],
            want_desired: vec![("first-0", mr(), IsReady), ("first-1", mr(), NotReady)],
            want_results: vec![
                (
                    NORMAL,
                    "Delaying creation of resource(s) matching \"second$\" because \"first-.*\" is not fully ready (1 of 2)",
                ),
                (
                    NORMAL,
                    "Delaying creation of resource(s) matching \"third-resource\" because \"first-.*\" is not fully ready (1 of 2)",
                ),
            ],
            want_composite_ready: Unset,
        },
        Case {
            name: "SequenceRegexAlreadyPrefixed",
            input: rule(&["^first-.*$", "^second-.*", "third-.*$", "fourth"]),
            observed: vec![],
            desired: vec![
                ("first-0", mr(), IsReady),
                ("first-1", mr(), IsReady),
                ("second-0", mr(), IsReady),
                ("third-0", mr(), Unset),
            ],
            want_desired: vec![
                ("first-0", mr(), IsReady),
                ("first-1", mr(), IsReady),
                ("second-0", mr(), IsReady),
                ("third-0", mr(), Unset),
            ],
            want_results: vec![(
                NORMAL,
                "Delaying creation of resource(s) matching \"fourth\" because \"third-.*$\" is not fully ready (0 of 1)",
            )],
            want_composite_ready: Unset,
        },
        Case {
            name: "SequenceRegexInvalidRegex",
            input: rule(&["^(", "second"]),
            observed: vec![],
            desired: vec![("first-0", mr(), IsReady), ("second", mr(), IsReady)],
            want_desired: vec![("first-0", mr(), IsReady), ("second", mr(), IsReady)],
            want_results: vec![(
                FATAL,
                "cannot compile regex ^(: error parsing regexp: missing closing ): `^(`",
            )],
            want_composite_ready: Unset,
        },
        Case {
            name: "FirstReadyUsageV1",
            input: deletion(&["first", "second"], "v1"),
            observed: vec![("first", xr(), IsReady), ("second", mr(), IsReady)],
            desired: vec![("first", xr(), IsReady), ("second", mr(), IsReady)],
            want_desired: vec![
                ("first", xr(), IsReady),
                ("second", mr(), IsReady),
                ("second-first-usage", uv1(), IsReady),
            ],
            want_results: vec![],
            want_composite_ready: Unset,
        },
        Case {
            name: "FirstReadyUsageV2Cluster",
            input: deletion(&["first", "second"], "v2"),
            observed: vec![("first", xr(), IsReady), ("second", mr(), IsReady)],
            desired: vec![("first", xr(), IsReady), ("second", mr(), IsReady)],
            want_desired: vec![
                ("first", xr(), IsReady),
                ("second", mr(), IsReady),
                ("second-first-usage", uv2(), IsReady),
            ],
            want_results: vec![],
            want_composite_ready: Unset,
        },
        Case {
            name: "FirstReadyUsageV2Namespaced",
            input: deletion(&["first", "second"], "v2"),
            observed: vec![
                ("first", namespaced(xr()), IsReady),
                ("second", namespaced(mr()), IsReady),
            ],
            desired: vec![
                ("first", namespaced(xr()), IsReady),
                ("second", namespaced(mr()), IsReady),
            ],
            want_desired: vec![
                ("first", namespaced(xr()), IsReady),
                ("second", namespaced(mr()), IsReady),
                ("second-first-usage", nuv2(), IsReady),
            ],
            want_results: vec![],
            want_composite_ready: Unset,
        },
        Case {
            name: "MixedRegexUsageV1",
            input: deletion(&["first", "second", "third-.*"], "v1"),
            observed: vec![
                ("first", xr(), IsReady),
                ("second", mr(), IsReady),
                ("third-0", mr(), IsReady),
                ("third-1", mr(), IsReady),
            ],
            desired: vec![
                ("first", xr(), IsReady),
                ("second", mr(), IsReady),
                ("third-0", mr(), IsReady),
                ("third-1", mr(), IsReady),
            ],
            want_desired: vec![
                ("first", xr(), IsReady),
                ("second", mr(), IsReady),
                ("third-0", mr(), IsReady),
                ("third-1", mr(), IsReady),
                ("second-first-usage", uv1(), IsReady),
                ("third-0-second-usage", u2v1(), IsReady),
                ("third-1-second-usage", u2v1(), IsReady),
            ],
            want_results: vec![],
            want_composite_ready: Unset,
        },
        Case {
            name: "BeforeDesiredButNotObservedWithDeletionSequencing",
            input: with(
                rule(&["first-.*", "second-.*"]),
                json!({"enableDeletionSequencing": true, "usageVersion": "v2"}),
            ),
            observed: vec![("second-foo", mr(), IsReady)],
            desired: vec![
                ("first-foo", Value::Null, IsReady),
                ("second-foo", mr(), IsReady),
            ],
            want_desired: vec![
                ("first-foo", Value::Null, IsReady),
                ("second-foo", mr(), IsReady),
            ],
            want_results: vec![],
            want_composite_ready: Unset,
        },
        Case {
            name: "MarkCompositeNotReady",
            input: with(
                rule(&["first", "second", "third"]),
                json!({"resetCompositeReadiness": true}),
            ),
            observed: vec![("first", mr(), Unset), ("second", mr(), Unset)],
            desired: vec![
                ("first", mr(), Unset),
                ("second", mr(), Unset),
                ("third", mr(), Unset),
            ],
            want_desired: vec![("first", mr(), Unset), ("second", mr(), Unset)],
            want_results: vec![(
                NORMAL,
                "Delaying creation of resource(s) matching \"third\" because \"first\" is not fully ready (0 of 1)",
            )],
            want_composite_ready: NotReady,
        },
        Case {
            name: "ConditionTrueRunsNormally",
            input: rule_with(
                &["first", "second"],
                json!({"condition": "observed.composite.resource.spec.count == 2.0"}),
            ),
            observed: vec![],
            desired: vec![("first", mr(), Unset), ("second", mr(), Unset)],
            want_desired: vec![("first", mr(), Unset)],
            want_results: vec![(
                NORMAL,
                "Delaying creation of resource(s) matching \"second\" because \"first\" is not fully ready (0 of 1)",
            )],
            want_composite_ready: Unset,
        },
        Case {
            name: "ConditionDynBoolTrueRunsNormally",
            input: rule_with(
                &["first", "second"],
                json!({"condition": "observed.composite.resource.spec.parameters.multiAZ == true"}),
            ),
            observed: vec![],
            desired: vec![("first", mr(), Unset), ("second", mr(), Unset)],
            want_desired: vec![("first", mr(), Unset)],
            want_results: vec![(
                NORMAL,
                "Delaying creation of resource(s) matching \"second\" because \"first\" is not fully ready (0 of 1)",
            )],
            want_composite_ready: Unset,
        },
        Case {
            name: "ConditionFalseSkipsSequenceAndKeepsReadiness",
            input: with(
                rule_with(
                    &["first", "second"],
                    json!({"condition": "observed.composite.resource.spec.count == 999.0"}),
                ),
                json!({"resetCompositeReadiness": true}),
            ),
            observed: vec![],
            desired: vec![("first", mr(), Unset), ("second", mr(), Unset)],
            want_desired: vec![("first", mr(), Unset), ("second", mr(), Unset)],
            want_results: vec![(
                NORMAL,
                "Skipping sequence [first second]: condition \"observed.composite.resource.spec.count == 999.0\" evaluated to false",
            )],
            want_composite_ready: Unset,
        },
        Case {
            name: "ConditionReadsDesiredReadinessAndContext",
            input: rule_with(
                &["first", "second"],
                json!({"condition": "desired.resources['first'].ready == 2 && context['apiextensions.crossplane.io/environment'].zone == 'a'"}),
            ),
            observed: vec![],
            desired: vec![("first", mr(), NotReady), ("second", mr(), Unset)],
            want_desired: vec![("first", mr(), NotReady)],
            want_results: vec![(
                NORMAL,
                "Delaying creation of resource(s) matching \"second\" because \"first\" is not fully ready (0 of 1)",
            )],
            want_composite_ready: Unset,
        },
        Case {
            name: "EmptyConditionRunsNormally",
            input: rule_with(&["first", "second"], json!({"condition": ""})),
            observed: vec![],
            desired: vec![("first", mr(), Unset), ("second", mr(), Unset)],
            want_desired: vec![("first", mr(), Unset)],
            want_results: vec![(
                NORMAL,
                "Delaying creation of resource(s) matching \"second\" because \"first\" is not fully ready (0 of 1)",
            )],
            want_composite_ready: Unset,
        },
        Case {
            name: "ConditionFalseStillGeneratesUsages",
            input: with(
                rule_with(
                    &["first", "second"],
                    json!({"condition": "observed.composite.resource.spec.count == 999.0"}),
                ),
                json!({"enableDeletionSequencing": true, "replayDeletion": true}),
            ),
            observed: vec![("first", xr(), Unset), ("second", mr(), Unset)],
            desired: vec![("first", xr(), IsReady), ("second", mr(), IsReady)],
            want_desired: vec![
                ("first", xr(), IsReady),
                ("second", mr(), IsReady),
                ("second-first-usage", uv2(), IsReady),
            ],
            want_results: vec![(
                NORMAL,
                "Skipping sequence [first second]: condition \"observed.composite.resource.spec.count == 999.0\" evaluated to false",
            )],
            want_composite_ready: Unset,
        },
        Case {
            name: "ConditionFalseWithoutDeletionSequencingNoUsages",
            input: rule_with(
                &["first", "second"],
                json!({"condition": "observed.composite.resource.spec.count == 999.0"}),
            ),
            observed: vec![("first", xr(), Unset), ("second", mr(), Unset)],
            desired: vec![("first", xr(), IsReady), ("second", mr(), IsReady)],
            want_desired: vec![("first", xr(), IsReady), ("second", mr(), IsReady)],
            want_results: vec![(
                NORMAL,
                "Skipping sequence [first second]: condition \"observed.composite.resource.spec.count == 999.0\" evaluated to false",
            )],
            want_composite_ready: Unset,
        },
        Case {
            name: "DeleteOnlyDoesNotBlockCreation",
            input: with(
                rule_with(&["first", "second"], json!({"deleteOnly": true})),
                json!({"resetCompositeReadiness": true}),
            ),
            observed: vec![],
            desired: vec![("first", mr(), NotReady), ("second", mr(), Unset)],
            want_desired: vec![("first", mr(), NotReady), ("second", mr(), Unset)],
            want_results: vec![],
            want_composite_ready: Unset,
        },
        Case {
            name: "DeleteOnlyWithDeletionSequencingCreatesUsages",
            input: with(
                rule_with(&["first", "second", "third"], json!({"deleteOnly": true})),
                json!({"enableDeletionSequencing": true, "replayDeletion": true}),
            ),
            observed: vec![("first", mr(), IsReady), ("second", mr(), IsReady)],
            desired: vec![
                ("first", mr(), IsReady),
                ("second", mr(), IsReady),
                ("third", mr(), Unset),
            ],
            want_desired: vec![
                ("first", mr(), IsReady),
                ("second", mr(), IsReady),
                ("third", mr(), Unset),
                ("second-first-usage", u2v2(), IsReady),
            ],
            want_results: vec![],
            want_composite_ready: Unset,
        },
        Case {
            name: "InvalidCacheTTL",
            input: with(rule(&["first", "second"]), json!({"cacheTTL": "5x"})),
            observed: vec![],
            desired: vec![("second", xr(), Unset)],
            want_desired: vec![("second", xr(), Unset)],
            want_results: vec![(
                FATAL,
                "cannot set cacheTTL: time: unknown unit \"x\" in duration \"5x\"",
            )],
            want_composite_ready: Unset,
        },
        Case {
            name: "UnknownInputFieldIsRefused",
            input: json!({"rules": [{"sequence": ["first"], "resources": ["second"]}]}),
            observed: vec![],
            desired: vec![("second", mr(), Unset)],
            want_desired: vec![("second", mr(), Unset)],
            want_results: vec![(
                FATAL,
                "cannot get Function input from *v1.RunFunctionRequest: cannot get function input *v1beta1.Input from *v1.RunFunctionRequest: cannot unmarshal JSON from *structpb.Struct into *v1beta1.Input: json: cannot unmarshal Go value of type v1beta1.SequencingRule: unknown name \"resources\"",
            )],
            want_composite_ready: Unset,
        },
    ]
}

fn request(case: &Case) -> Request {
    let mut input = case.input.clone();
    if let Some(object) = input.as_object_mut() {
        object.insert(
            "apiVersion".into(),
            "sequencer.fn.crossplane.io/v1beta1".into(),
        );
        object.insert("kind".into(), "Input".into());
    }
    Request {
        input: Some(input),
        observed: State {
            composite: Some(Resource::new(xr())),
            resources: resources(&case.observed),
        },
        desired: State {
            composite: Some(Resource::new(xr())),
            resources: resources(&case.desired),
        },
        context: json!({"apiextensions.crossplane.io/environment": {"zone": "a"}}),
        ..Request::default()
    }
}

#[test]
fn sequences_as_upstream_does() {
    for case in cases() {
        let response = Sequencer::run(request(&case)).unwrap();
        assert_eq!(
            response.desired.resources,
            resources(&case.want_desired),
            "{}: desired resources",
            case.name
        );
        let results: Vec<(Severity, &str)> = response
            .results
            .iter()
            .map(|r| (r.severity, r.message.as_str()))
            .collect();
        assert_eq!(results, case.want_results, "{}: results", case.name);
        let composite_ready = response.desired.composite.map(|c| c.ready);
        assert_eq!(
            composite_ready,
            Some(case.want_composite_ready),
            "{}: composite readiness",
            case.name
        );
        assert_eq!(response.ttl, Some(DEFAULT_TTL), "{}: ttl", case.name);
    }
}

#[test]
fn cache_ttl_sets_the_response_ttl() {
    let cases = [
        ("5m", Duration::from_secs(300)),
        ("", DEFAULT_TTL),
        ("1h30m", Duration::from_secs(5400)),
    ];
    for (ttl, want) in cases {
        let case = Case {
            name: "ttl",
            input: with(rule(&["first", "second"]), json!({"cacheTTL": ttl})),
            observed: vec![],
            desired: vec![],
            want_desired: vec![],
            want_results: vec![],
            want_composite_ready: Unset,
        };
        let response = Sequencer::run(request(&case)).unwrap();
        assert_eq!(response.ttl, Some(want), "{ttl}");
    }
}

#[test]
fn conditions_that_cannot_be_evaluated_are_fatal() {
    // (condition, how the fatal message starts)
    let cases = [
        (
            "invalid $$$ expression",
            "cannot evaluate condition \"invalid $$$ expression\" for sequence [first second]: cannot parse CEL condition: ",
        ),
        (
            "observed.composite.resource.spec.count",
            "cannot evaluate condition \"observed.composite.resource.spec.count\" for sequence [first second]: CEL condition result is not bool",
        ),
        (
            "observed.composite.resource.spec.missing == 1.0",
            "cannot evaluate condition \"observed.composite.resource.spec.missing == 1.0\" for sequence [first second]: cannot evaluate CEL condition: ",
        ),
    ];
    for (condition, want) in cases {
        let case = Case {
            name: "condition",
            input: rule_with(&["first", "second"], json!({"condition": condition})),
            observed: vec![],
            desired: vec![("first", mr(), Unset), ("second", mr(), Unset)],
            want_desired: vec![],
            want_results: vec![],
            want_composite_ready: Unset,
        };
        let response = Sequencer::run(request(&case)).unwrap();
        let [result] = response.results.as_slice() else {
            panic!("{condition}: {:?}", response.results)
        };
        assert_eq!(result.severity, FATAL, "{condition}");
        assert!(
            result.message.starts_with(want),
            "{condition}: {}",
            result.message
        );
        assert_eq!(
            response.desired.resources.len(),
            2,
            "{condition}: desired untouched"
        );
    }
}

#[test]
fn usage_names_fit_in_63_characters() {
    let cases = [
        ("short", "short-"),
        (
            "a-very-long-name-that-goes-on-and-on-well-past-what-kubernetes-allows",
            "a-very-long-name-that-goes-on-and-on-well-pas-",
        ),
    ];
    for (name, prefix) in cases {
        let got = usage::kubernetes_name(name, "dependency");
        assert!(got.len() <= 63, "{got}");
        assert!(got.starts_with(prefix), "{got}");
        assert!(got.ends_with("-dependency"), "{got}");
    }
    assert_eq!(
        usage::kubernetes_name("mr-cool-mr-xr-cool-xr", "dependency"),
        MR_OF_XR
    );
}
