//! Upstream's unit-test cases (function-extra-resources v0.3.0
//! `fn_test.go`) and its example (`example/composition.yaml` over
//! `example/extraResources.yaml`), each one row: the input, the XR, the
//! objects the host supplies, and the requirements and context or fatal
//! message upstream answers with.

use super::*;
use plait_sdk::{Resource, Severity, State};
use serde_json::json;

fn xr(spec: Value) -> Value {
    json!({"apiVersion": "test.crossplane.io/v1alpha1", "kind": "XR", "metadata": {"name": "my-xr"}, "spec": spec})
}

fn env(name: &str, data: Value) -> Value {
    json!({"apiVersion": "apiextensions.crossplane.io/v1beta1", "kind": "EnvironmentConfig", "metadata": {"name": name}, "data": data})
}

fn by_name(api_version: &str, kind: &str, name: &str, namespace: Option<&str>) -> ResourceSelector {
    ResourceSelector {
        api_version: api_version.into(),
        kind: kind.into(),
        matching: ResourceMatch::Name(name.into()),
        namespace: namespace.map(str::to_string),
    }
}

fn by_labels(
    api_version: &str,
    kind: &str,
    labels: &[(&str, &str)],
    namespace: Option<&str>,
) -> ResourceSelector {
    ResourceSelector {
        matching: ResourceMatch::Labels(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        ..by_name(api_version, kind, "", namespace)
    }
}

const ENV_API: &str = "apiextensions.crossplane.io/v1beta1";
const ENV_KIND: &str = "EnvironmentConfig";

struct Case {
    name: &'static str,
    spec: Value,
    composite: Value,
    /// What the host supplies, by requirement name; `None` on the first call.
    required: Option<Vec<(&'static str, Vec<Value>)>>,
    want_requirements: Vec<(&'static str, ResourceSelector)>,
    /// The context value, or the fatal message.
    want: Result<Option<Value>, &'static str>,
}

fn five_env_sources() -> Value {
    json!({"extraResources": [
        {"kind": ENV_KIND, "apiVersion": ENV_API, "type": "Reference", "into": "obj-0", "ref": {"name": "my-env-config"}},
        {"type": "Reference", "kind": ENV_KIND, "apiVersion": ENV_API, "into": "obj-1", "ref": {"name": "my-second-env-config"}},
        {"type": "Selector", "kind": ENV_KIND, "apiVersion": ENV_API, "into": "obj-2", "selector": {"matchLabels": [{"type": "Value", "key": "foo", "value": "bar"}]}},
        {"type": "Selector", "kind": ENV_KIND, "apiVersion": ENV_API, "into": "obj-3", "selector": {"matchLabels": [
            {"key": "someMoreFoo", "valueFromFieldPath": "spec.missingEnvSelectorLabel", "fromFieldPathPolicy": "Optional"}]}},
        {"type": "Selector", "kind": ENV_KIND, "apiVersion": ENV_API, "into": "obj-4", "selector": {"matchLabels": [
            {"key": "someMoreFoo", "valueFromFieldPath": "spec.existingEnvSelectorLabel", "fromFieldPathPolicy": "Required"}]}},
    ]})
}

fn five_env_requirements() -> Vec<(&'static str, ResourceSelector)> {
    vec![
        ("obj-0", by_name(ENV_API, ENV_KIND, "my-env-config", None)),
        (
            "obj-1",
            by_name(ENV_API, ENV_KIND, "my-second-env-config", None),
        ),
        (
            "obj-2",
            by_labels(ENV_API, ENV_KIND, &[("foo", "bar")], None),
        ),
        // obj-3 is not asked for: its only label was optional and absent.
        (
            "obj-4",
            by_labels(ENV_API, ENV_KIND, &[("someMoreFoo", "someMoreBar")], None),
        ),
    ]
}

fn cases() -> Vec<Case> {
    let mut request_all = five_env_sources();
    if let Some(list) = request_all["extraResources"].as_array_mut() {
        list.push(json!({"type": "Reference", "kind": "Foo", "apiVersion": "test.crossplane.io/v1alpha1", "namespace": "my-namespace", "into": "obj-5", "ref": {"name": "my-foo"}}));
        list.push(json!({"type": "Selector", "kind": "Bar", "apiVersion": "test.crossplane.io/v1alpha1", "namespace": "my-namespace", "into": "obj-6", "selector": {"matchLabels": [
            {"key": "someMoreBar", "valueFromFieldPath": "spec.existingBazLabel", "fromFieldPathPolicy": "Required"}]}}));
    }
    let mut all_requirements = five_env_requirements();
    all_requirements.push((
        "obj-5",
        by_name(
            "test.crossplane.io/v1alpha1",
            "Foo",
            "my-foo",
            Some("my-namespace"),
        ),
    ));
    all_requirements.push((
        "obj-6",
        by_labels(
            "test.crossplane.io/v1alpha1",
            "Bar",
            &[("someMoreBar", "someMoreBar")],
            Some("my-namespace"),
        ),
    ));
    let one_reference = json!({"extraResources": [{"type": "Reference", "into": "obj-0", "ref": {"name": "my-env-config"}}]});
    let one_reference_requirement = vec![("obj-0", by_name("", "", "my-env-config", None))];
    let cluster = |name: &str| json!({"apiVersion": "example.crossplane.io/v1", "kind": "XCluster", "metadata": {"name": name, "labels": {"type": "cluster"}}});
    let selector = |selector: Value| json!({"extraResources": [{"type": "Selector", "kind": "XCluster", "apiVersion": "example.crossplane.io/v1", "into": "XCluster", "selector": selector}]});
    let clusters_requirement = vec![(
        "XCluster",
        by_labels(
            "example.crossplane.io/v1",
            "XCluster",
            &[("type", "cluster")],
            None,
        ),
    )];
    let type_cluster = json!([{"key": "type", "type": "Value", "value": "cluster"}]);
    vec![
        Case {
            name: "RequestExtraResources",
            spec: request_all,
            composite: xr(
                json!({"existingEnvSelectorLabel": "someMoreBar", "existingBazLabel": "someMoreBar"}),
            ),
            required: None,
            want_requirements: all_requirements,
            want: Ok(None),
        },
        Case {
            // The host also supplies obj-3, as upstream's test does.
            name: "RequestEnvironmentConfigsFound",
            spec: five_env_sources(),
            composite: xr(json!({"existingEnvSelectorLabel": "someMoreBar"})),
            required: Some(vec![
                (
                    "obj-0",
                    vec![env(
                        "my-env-config",
                        json!({"firstKey": "firstVal", "secondKey": "secondVal"}),
                    )],
                ),
                (
                    "obj-1",
                    vec![env(
                        "my-second-env-config",
                        json!({"secondKey": "secondVal-ok", "thirdKey": "thirdVal"}),
                    )],
                ),
                (
                    "obj-2",
                    vec![
                        env("my-third-env-config-b", json!({"fourthKey": "fourthVal-b"})),
                        env("my-third-env-config-a", json!({"fourthKey": "fourthVal-a"})),
                    ],
                ),
                (
                    "obj-3",
                    vec![env("my-third-env-config", json!({"fifthKey": "fifthVal"}))],
                ),
                (
                    "obj-4",
                    vec![env("my-fourth-env-config", json!({"sixthKey": "sixthVal"}))],
                ),
            ]),
            want_requirements: five_env_requirements(),
            want: Ok(Some(json!({
                "obj-0": [env("my-env-config", json!({"firstKey": "firstVal", "secondKey": "secondVal"}))],
                "obj-1": [env("my-second-env-config", json!({"secondKey": "secondVal-ok", "thirdKey": "thirdVal"}))],
                "obj-2": [env("my-third-env-config-a", json!({"fourthKey": "fourthVal-a"})), env("my-third-env-config-b", json!({"fourthKey": "fourthVal-b"}))],
                "obj-3": [env("my-third-env-config", json!({"fifthKey": "fifthVal"}))],
                "obj-4": [env("my-fourth-env-config", json!({"sixthKey": "sixthVal"}))],
            }))),
        },
        Case {
            name: "RequestEnvironmentConfigsNotFoundRequired",
            spec: one_reference.clone(),
            composite: xr(json!({})),
            required: Some(vec![("environment-config-0", vec![])]),
            want_requirements: one_reference_requirement.clone(),
            want: Err(
                "verifying and sorting extra resources: cannot find expected extra resource \"obj-0\"",
            ),
        },
        Case {
            name: "reference not found",
            spec: one_reference.clone(),
            composite: xr(json!({})),
            required: Some(vec![("obj-0", vec![])]),
            want_requirements: one_reference_requirement.clone(),
            want: Err(
                "verifying and sorting extra resources: Required extra resource \"obj-0\" not found",
            ),
        },
        Case {
            name: "reference not found with an optional resolution",
            spec: json!({"extraResources": one_reference["extraResources"], "policy": {"resolution": "Optional"}}),
            composite: xr(json!({})),
            required: Some(vec![("obj-0", vec![])]),
            want_requirements: one_reference_requirement.clone(),
            want: Ok(Some(json!({}))),
        },
        Case {
            name: "reference found twice",
            spec: one_reference,
            composite: xr(json!({})),
            required: Some(vec![(
                "obj-0",
                vec![env("a", json!({})), env("b", json!({}))],
            )]),
            want_requirements: one_reference_requirement,
            want: Err(
                "verifying and sorting extra resources: expected exactly one extra resource \"obj-0\", got 2",
            ),
        },
        Case {
            // example/composition.yaml's step over example/extraResources.yaml's XClusters.
            name: "example: maxMatch keeps the first after sorting by name",
            spec: selector(
                json!({"maxMatch": 2, "minMatch": 1, "matchLabels": type_cluster.clone()}),
            ),
            composite: json!({"apiVersion": "example.crossplane.io/v1", "kind": "XR", "metadata": {"name": "example-xr"}, "spec": {}}),
            required: Some(vec![(
                "XCluster",
                vec![
                    cluster("net-staging-green"),
                    cluster("net-staging-blue"),
                    cluster("net-staging-amber"),
                ],
            )]),
            want_requirements: clusters_requirement.clone(),
            want: Ok(Some(
                json!({"XCluster": [cluster("net-staging-amber"), cluster("net-staging-blue")]}),
            )),
        },
        Case {
            name: "minMatch not met",
            spec: selector(json!({"minMatch": 2, "matchLabels": type_cluster.clone()})),
            composite: xr(json!({})),
            required: Some(vec![("XCluster", vec![cluster("net-staging-blue")])]),
            want_requirements: clusters_requirement.clone(),
            want: Err(
                "verifying and sorting extra resources: expected at least 2 extra resources \"XCluster\", got 1",
            ),
        },
        Case {
            name: "a selector that finds nothing leaves no key",
            spec: selector(json!({"matchLabels": type_cluster.clone()})),
            composite: xr(json!({})),
            required: Some(vec![("XCluster", vec![])]),
            want_requirements: clusters_requirement.clone(),
            want: Ok(Some(json!({}))),
        },
        Case {
            name: "sorting by values of different types",
            spec: selector(
                json!({"sortByFieldPath": "spec.rank", "matchLabels": type_cluster.clone()}),
            ),
            composite: xr(json!({})),
            required: Some(vec![(
                "XCluster",
                vec![json!({"spec": {"rank": 1}}), json!({"spec": {"rank": 1.5}})],
            )]),
            want_requirements: clusters_requirement.clone(),
            want: Err(
                "verifying and sorting extra resources: cannot sort values of different types \"int64\" and \"float64\"",
            ),
        },
        Case {
            name: "sorting by an integer field",
            spec: selector(
                json!({"sortByFieldPath": "spec.rank", "matchLabels": type_cluster.clone()}),
            ),
            composite: xr(json!({})),
            required: Some(vec![(
                "XCluster",
                vec![
                    json!({"spec": {"rank": 3}}),
                    json!({"spec": {"rank": 1}}),
                    json!({"spec": {}}),
                ],
            )]),
            want_requirements: clusters_requirement,
            want: Ok(Some(
                json!({"XCluster": [json!({"spec": {}}), json!({"spec": {"rank": 1}}), json!({"spec": {"rank": 3}})]}),
            )),
        },
        Case {
            name: "a Value label without a value",
            spec: selector(json!({"matchLabels": [{"key": "type", "type": "Value"}]})),
            composite: xr(json!({})),
            required: None,
            want_requirements: vec![],
            want: Err(
                "could not build extra resource requirements: Value cannot be nil for type 'Value'",
            ),
        },
        Case {
            name: "a required label from a missing XR field",
            spec: selector(
                json!({"matchLabels": [{"key": "type", "valueFromFieldPath": "spec.clusterType"}]}),
            ),
            composite: xr(json!({})),
            required: None,
            want_requirements: vec![],
            want: Err(
                "could not build extra resource requirements: cannot get value from field path \"spec.clusterType\": spec.clusterType: no such field",
            ),
        },
        Case {
            name: "an unknown input field",
            spec: json!({"extraResources": [{"type": "Reference", "into": "obj-0", "ref": {"name": "a"}, "mode": "Single"}]}),
            composite: xr(json!({})),
            required: None,
            want_requirements: vec![],
            want: Err(
                "cannot get Function input from *v1.RunFunctionRequest: cannot get function input *v1beta1.Input from *v1.RunFunctionRequest: cannot unmarshal JSON from *structpb.Struct into *v1beta1.Input: json: cannot unmarshal Go value of type v1beta1.ResourceSource: unknown name \"mode\"",
            ),
        },
    ]
}

#[test]
fn selects_as_upstream_does() {
    for case in cases() {
        let request = Request {
            input: Some(
                json!({"apiVersion": "extra-resources.fn.crossplane.io/v1beta1", "kind": "Input", "spec": case.spec}),
            ),
            observed: State {
                composite: Some(Resource::new(case.composite)),
                ..State::default()
            },
            required_resources: case
                .required
                .unwrap_or_default()
                .into_iter()
                .map(|(name, objects)| (name.to_string(), objects))
                .collect(),
            ..Request::default()
        };
        let response = ExtraResources::run(request).unwrap();
        assert_eq!(response.ttl, Some(DEFAULT_TTL), "{}", case.name);
        let want_requirements: BTreeMap<String, ResourceSelector> = case
            .want_requirements
            .into_iter()
            .map(|(name, selector)| (name.to_string(), selector))
            .collect();
        let results: Vec<(Severity, &str)> = response
            .results
            .iter()
            .map(|r| (r.severity, r.message.as_str()))
            .collect();
        match case.want {
            Ok(context) => {
                assert!(results.is_empty(), "{}: {results:?}", case.name);
                assert_eq!(
                    response.requirements.resources, want_requirements,
                    "{}",
                    case.name
                );
                assert_eq!(
                    response.context.get(CONTEXT_KEY_EXTRA_RESOURCES),
                    context.as_ref(),
                    "{}",
                    case.name
                );
            }
            Err(message) => {
                assert_eq!(results, [(Severity::Fatal, message)], "{}", case.name);
                if !want_requirements.is_empty() {
                    assert_eq!(
                        response.requirements.resources, want_requirements,
                        "{}",
                        case.name
                    );
                }
                assert_eq!(
                    response.context.get(CONTEXT_KEY_EXTRA_RESOURCES),
                    None,
                    "{}",
                    case.name
                );
            }
        }
    }
}
