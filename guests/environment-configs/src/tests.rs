use super::*;
use plait_sdk::{Resource, Severity, State};
use serde_json::json;

fn xr(spec: Value) -> State {
    State {
        composite: Some(Resource::new(json!({
            "apiVersion": "example.org/v1", "kind": "XR", "metadata": {"name": "my-xr"}, "spec": spec,
        }))),
        ..State::default()
    }
}

fn config(name: &str, labels: Value, data: Value) -> Value {
    json!({
        "apiVersion": ENVIRONMENT_CONFIG_API_VERSION,
        "kind": ENVIRONMENT_CONFIG_KIND,
        "metadata": {"name": name, "labels": labels},
        "data": data,
    })
}

fn input(spec: Value) -> Option<Value> {
    Some(json!({
        "apiVersion": "environmentconfigs.fn.crossplane.io/v1beta1",
        "kind": "Input",
        "spec": spec,
    }))
}

fn by_name(name: &str) -> ResourceSelector {
    ResourceSelector {
        api_version: ENVIRONMENT_CONFIG_API_VERSION.into(),
        kind: ENVIRONMENT_CONFIG_KIND.into(),
        matching: ResourceMatch::Name(name.into()),
        namespace: None,
    }
}

fn by_labels(labels: &[(&str, &str)]) -> ResourceSelector {
    ResourceSelector {
        matching: ResourceMatch::Labels(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        ..by_name("")
    }
}

/// What the host's requirements loop does: Get by name, List by labels sorted by name.
fn resolve(
    requirements: &BTreeMap<String, ResourceSelector>,
    cluster: &[Value],
) -> BTreeMap<String, Vec<Value>> {
    requirements
        .iter()
        .map(|(name, selector)| {
            let mut found: Vec<Value> = cluster
                .iter()
                .filter(|obj| match &selector.matching {
                    ResourceMatch::Name(n) => obj["metadata"]["name"] == n.as_str(),
                    ResourceMatch::Labels(labels) => labels
                        .iter()
                        .all(|(k, v)| obj["metadata"]["labels"][k] == v.as_str()),
                })
                .cloned()
                .collect();
            found.sort_by_key(|obj| obj["metadata"]["name"].as_str().unwrap_or("").to_string());
            (name.clone(), found)
        })
        .collect()
}

fn environment(response: &Response) -> Option<&Value> {
    response.context.get(CONTEXT_KEY_ENVIRONMENT)
}

fn fatal_messages(response: &Response) -> Vec<&str> {
    response
        .results
        .iter()
        .filter(|r| r.severity == Severity::Fatal)
        .map(|r| r.message.as_str())
        .collect()
}

#[test]
fn first_call_asks_for_one_config_per_entry() {
    let request = Request {
        observed: xr(json!({"existingEnvSelectorLabel": "someMoreBar"})),
        input: input(json!({"environmentConfigs": [
            {"type": "Reference", "ref": {"name": "my-env-config"}},
            {"ref": {"name": "my-second-env-config"}},
            {"type": "Selector", "selector": {"mode": "Multiple", "matchLabels": [
                {"type": "Value", "key": "foo", "value": "bar"}]}},
            {"type": "Selector", "selector": {"mode": "Single", "matchLabels": [
                {"key": "someMoreFoo", "valueFromFieldPath": "spec.missingEnvSelectorLabel", "fromFieldPathPolicy": "Optional"}]}},
            {"type": "Selector", "selector": {"mode": "Single", "matchLabels": [
                {"key": "someMoreFoo", "valueFromFieldPath": "spec.existingEnvSelectorLabel", "fromFieldPathPolicy": "Required"}]}},
        ]})),
        ..Request::default()
    };
    let response = EnvironmentConfigs::run(request).unwrap();
    let want: BTreeMap<String, ResourceSelector> = [
        ("environment-config-0", by_name("my-env-config")),
        ("environment-config-1", by_name("my-second-env-config")),
        ("environment-config-2", by_labels(&[("foo", "bar")])),
        // environment-config-3: its only label was optional and absent.
        (
            "environment-config-4",
            by_labels(&[("someMoreFoo", "someMoreBar")]),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(response.requirements.resources, want);
    assert!(response.results.is_empty(), "{:?}", response.results);
    assert_eq!(environment(&response), None);
    assert_eq!(response.ttl, Some(DEFAULT_TTL));
}

#[test]
fn two_call_requirements_flow_builds_the_environment() {
    let cluster = vec![
        config(
            "base",
            json!({}),
            json!({"region": "eu-west-1", "network": {"cidr": "10.0.0.0/16", "zones": ["a"]}}),
        ),
        config(
            "team-b",
            json!({"team": "payments"}),
            json!({"owner": "b", "network": {"zones": ["b", "c"]}}),
        ),
        config(
            "team-a",
            json!({"team": "payments"}),
            json!({"owner": "a", "tier": 1}),
        ),
        config(
            "unrelated",
            json!({"team": "search"}),
            json!({"owner": "x"}),
        ),
    ];
    let desired = State {
        resources: [(
            "bucket".to_string(),
            Resource::new(json!({"kind": "Bucket"})),
        )]
        .into(),
        ..State::default()
    };
    let first = Request {
        tag: "t".into(),
        observed: xr(json!({"team": "payments"})),
        desired: desired.clone(),
        context: json!({"other": "kept"}),
        input: input(json!({
            "defaultData": {"region": "us-east-1", "debug": false},
            "environmentConfigs": [
                {"type": "Reference", "ref": {"name": "base"}},
                {"type": "Selector", "selector": {"mode": "Multiple", "matchLabels": [
                    {"key": "team", "valueFromFieldPath": "spec.team"}]}},
            ],
        })),
        ..Request::default()
    };
    let first_response = EnvironmentConfigs::run(first.clone()).unwrap();
    assert!(
        first_response.results.is_empty(),
        "{:?}",
        first_response.results
    );
    assert_eq!(environment(&first_response), None);
    assert_eq!(first_response.desired, desired);

    // The host calls again with what was asked for, and the context the step returned.
    let second = Request {
        required_resources: resolve(&first_response.requirements.resources, &cluster),
        context: first_response.context.clone(),
        ..first
    };
    let second_response = EnvironmentConfigs::run(second).unwrap();
    assert!(
        second_response.results.is_empty(),
        "{:?}",
        second_response.results
    );
    assert_eq!(
        second_response.requirements, first_response.requirements,
        "requirements must be stable so the loop ends"
    );
    assert_eq!(second_response.desired, desired);
    assert_eq!(second_response.context["other"], "kept");
    assert_eq!(
        environment(&second_response),
        Some(&json!({
            "apiVersion": "internal.crossplane.io/v1alpha1",
            "kind": "Environment",
            "region": "eu-west-1",
            "debug": false,
            // team-a then team-b (sorted by metadata.name): team-b wins.
            "owner": "b",
            "tier": 1,
            // Objects merge; arrays are replaced.
            "network": {"cidr": "10.0.0.0/16", "zones": ["b", "c"]},
        }))
    );
}

#[test]
fn configs_override_the_earlier_environment_which_overrides_default_data() {
    let request = Request {
        context: json!({CONTEXT_KEY_ENVIRONMENT: {
            "apiVersion": "internal.crossplane.io/v1alpha1",
            "kind": "Environment",
            "a": "only-from-input",
            "e": "overridden-from-input-ok",
            "f": "overridden-from-env-config-1",
            "g": "overridden-from-env-config-2",
        }}),
        input: input(json!({
            "defaultData": {"b": "only-from-default", "e": "overridden-from-input", "f": "overridden-from-env-config-2"},
            "environmentConfigs": [
                {"type": "Reference", "ref": {"name": "my-env-config"}},
                {"type": "Reference", "ref": {"name": "my-second-env-config"}},
            ],
        })),
        required_resources: [
            ("environment-config-0".to_string(), vec![config("my-env-config", json!({}), json!({
                "c": "only-from-env-config-1", "f": "overridden-from-env-config-1-ok", "h": "override-from-env-config-1"}))]),
            ("environment-config-1".to_string(), vec![config("my-second-env-config", json!({}), json!({
                "d": "only-from-env-config-1", "g": "overridden-from-env-config-2-ok", "h": "override-from-env-config-1-ok"}))]),
        ]
        .into(),
        ..Request::default()
    };
    let response = EnvironmentConfigs::run(request).unwrap();
    assert!(response.results.is_empty(), "{:?}", response.results);
    assert_eq!(
        environment(&response),
        Some(&json!({
            "apiVersion": "internal.crossplane.io/v1alpha1",
            "kind": "Environment",
            "a": "only-from-input",
            "b": "only-from-default",
            "c": "only-from-env-config-1",
            "d": "only-from-env-config-1",
            "e": "overridden-from-input-ok",
            "f": "overridden-from-env-config-1-ok",
            "g": "overridden-from-env-config-2-ok",
            "h": "override-from-env-config-1-ok",
        }))
    );
}

/// (case, input spec, XR spec, required resources) → environment data (without apiVersion/kind).
type SelectionCase = (&'static str, Value, Value, Vec<(usize, Vec<Value>)>, Value);

#[test]
fn selects_configs_as_upstream_does() {
    let cases: Vec<SelectionCase> = vec![
        (
            "optional resolution skips a missing reference",
            json!({"policy": {"resolution": "Optional"}, "environmentConfigs": [
                {"ref": {"name": "missing"}}, {"ref": {"name": "present"}}]}),
            json!({}),
            vec![
                (0, vec![]),
                (1, vec![config("present", json!({}), json!({"k": "v"}))]),
            ],
            json!({"k": "v"}),
        ),
        (
            "multiple mode sorts by a numeric field path",
            json!({"environmentConfigs": [{"type": "Selector", "selector": {
                "mode": "Multiple", "sortByFieldPath": "data.priority",
                "matchLabels": [{"type": "Value", "key": "k", "value": "v"}]}}]}),
            json!({}),
            vec![(
                0,
                vec![
                    config("a", json!({}), json!({"priority": 10, "winner": "a"})),
                    config("b", json!({}), json!({"priority": 2.5, "winner": "b"})),
                    config("c", json!({}), json!({"winner": "c"})),
                ],
            )],
            // c (missing: sorts as 0), then b (2.5), then a (10).
            json!({"priority": 10, "winner": "a"}),
        ),
        (
            "maxMatch keeps the first configs after sorting",
            json!({"environmentConfigs": [{"type": "Selector", "selector": {
                "mode": "Multiple", "maxMatch": 2,
                "matchLabels": [{"type": "Value", "key": "k", "value": "v"}]}}]}),
            json!({}),
            vec![(
                0,
                vec![
                    config("c", json!({}), json!({"c": 1, "last": "c"})),
                    config("a", json!({}), json!({"a": 1, "last": "a"})),
                    config("b", json!({}), json!({"b": 1, "last": "b"})),
                ],
            )],
            json!({"a": 1, "b": 1, "last": "b"}),
        ),
        (
            "minMatch met",
            json!({"environmentConfigs": [{"type": "Selector", "selector": {
                "mode": "Multiple", "minMatch": 1,
                "matchLabels": [{"type": "Value", "key": "k", "value": "v"}]}}]}),
            json!({}),
            vec![(0, vec![config("a", json!({}), json!({"a": 1}))])],
            json!({"a": 1}),
        ),
        (
            "single mode takes its one match",
            json!({"environmentConfigs": [{"type": "Selector", "selector": {
                "matchLabels": [{"key": "env", "valueFromFieldPath": "spec.env"}]}}]}),
            json!({"env": "prod"}),
            vec![(
                0,
                vec![config(
                    "prod",
                    json!({"env": "prod"}),
                    json!({"size": "large"}),
                )],
            )],
            json!({"size": "large"}),
        ),
        (
            "a config without data adds nothing when data is null",
            json!({"environmentConfigs": [{"ref": {"name": "empty"}}]}),
            json!({}),
            vec![(0, vec![config("empty", json!({}), Value::Null)])],
            json!({}),
        ),
        (
            "an entry the host was not asked for is skipped",
            json!({"environmentConfigs": [
                {"type": "Selector", "selector": {"matchLabels": [
                    {"key": "x", "valueFromFieldPath": "spec.absent", "fromFieldPathPolicy": "Optional"}]}},
                {"ref": {"name": "present"}}]}),
            json!({}),
            vec![(1, vec![config("present", json!({}), json!({"k": "v"}))])],
            json!({"k": "v"}),
        ),
    ];
    for (name, spec, xr_spec, required, want) in cases {
        let request = Request {
            observed: xr(xr_spec),
            input: input(spec),
            required_resources: required
                .into_iter()
                .map(|(i, items)| (requirement_name(i), items))
                .collect(),
            ..Request::default()
        };
        let response = EnvironmentConfigs::run(request).unwrap();
        assert!(
            response.results.is_empty(),
            "{name}: {:?}",
            response.results
        );
        let mut env = environment(&response).cloned().unwrap_or_default();
        let env_object = env.as_object_mut().unwrap();
        assert_eq!(
            env_object.remove("apiVersion"),
            Some(json!("internal.crossplane.io/v1alpha1")),
            "{name}"
        );
        assert_eq!(
            env_object.remove("kind"),
            Some(json!("Environment")),
            "{name}"
        );
        assert_eq!(env, want, "{name}");
    }
}

/// (case, input spec, XR spec, required resources, fatal message)
type FatalCase = (
    &'static str,
    Value,
    Value,
    Vec<(usize, Vec<Value>)>,
    &'static str,
);

#[test]
fn reports_what_it_cannot_select_as_a_fatal_result() {
    let one = || config("one", json!({}), json!({}));
    let labelled = json!({"type": "Value", "key": "k", "value": "v"});
    let cases: Vec<FatalCase> = vec![
        (
            "required reference not found",
            json!({"environmentConfigs": [{"type": "Reference", "ref": {"name": "my-env-config"}}]}),
            json!({}),
            vec![(0, vec![])],
            "cannot get selected environment configs: cannot process environment config \"my-env-config\" by reference, \"environment-config-0\": Required environment config \"my-env-config\" not found",
        ),
        (
            "explicitly required reference not found",
            json!({"policy": {"resolution": "Required"}, "environmentConfigs": [{"ref": {"name": "x"}}]}),
            json!({}),
            vec![(0, vec![])],
            "cannot get selected environment configs: cannot process environment config \"x\" by reference, \"environment-config-0\": Required environment config \"x\" not found",
        ),
        (
            "reference matching two objects",
            json!({"environmentConfigs": [{"ref": {"name": "one"}}]}),
            json!({}),
            vec![(0, vec![one(), one()])],
            "cannot get selected environment configs: cannot process environment config \"one\" by reference, \"environment-config-0\": expected exactly one required resource \"one\", got 2",
        ),
        (
            "single mode without a match",
            json!({"environmentConfigs": [{"type": "Selector", "selector": {"mode": "Single", "matchLabels": [labelled]}}]}),
            json!({}),
            vec![(0, vec![])],
            "cannot get selected environment configs: cannot process environment config \"environment-config-0\" by selector: expected exactly one required resource, got 0",
        ),
        (
            "single mode with two matches, even when resolution is optional",
            json!({"policy": {"resolution": "Optional"}, "environmentConfigs": [{"type": "Selector", "selector": {"matchLabels": [labelled]}}]}),
            json!({}),
            vec![(0, vec![one(), one()])],
            "cannot get selected environment configs: cannot process environment config \"environment-config-0\" by selector: expected exactly one required resource, got 2",
        ),
        (
            "minMatch not met",
            json!({"environmentConfigs": [{"type": "Selector", "selector": {"mode": "Multiple", "minMatch": 2, "matchLabels": [labelled]}}]}),
            json!({}),
            vec![(0, vec![one()])],
            "cannot get selected environment configs: cannot process environment config \"environment-config-0\" by selector: expected at least 2 required resources, got 1",
        ),
        (
            "sort keys of different types",
            json!({"environmentConfigs": [{"type": "Selector", "selector": {"mode": "Multiple", "sortByFieldPath": "data.p", "matchLabels": [labelled]}}]}),
            json!({}),
            vec![(
                0,
                vec![
                    config("a", json!({}), json!({"p": "x"})),
                    config("b", json!({}), json!({"p": 1})),
                ],
            )],
            "cannot get selected environment configs: cannot process environment config \"environment-config-0\" by selector: cannot sort values of different types \"string\" and \"int64\"",
        ),
        (
            "sort keys that cannot be ordered",
            json!({"environmentConfigs": [{"type": "Selector", "selector": {"mode": "Multiple", "sortByFieldPath": "data.p", "matchLabels": [labelled]}}]}),
            json!({}),
            vec![(
                0,
                vec![
                    config("a", json!({}), json!({"p": true})),
                    config("b", json!({}), json!({"p": false})),
                ],
            )],
            "cannot get selected environment configs: cannot process environment config \"environment-config-0\" by selector: unsupported type \"bool\" for sorting",
        ),
        (
            "sort path through a scalar",
            json!({"environmentConfigs": [{"type": "Selector", "selector": {"mode": "Multiple", "sortByFieldPath": "data.p.q", "matchLabels": [labelled]}}]}),
            json!({}),
            vec![(0, vec![config("a", json!({}), json!({"p": "x"}))])],
            "cannot get selected environment configs: cannot process environment config \"environment-config-0\" by selector: data.p: not an object",
        ),
        (
            "required label field path missing",
            json!({"environmentConfigs": [{"type": "Selector", "selector": {"matchLabels": [
                {"key": "env", "valueFromFieldPath": "spec.env"}]}}]}),
            json!({}),
            vec![],
            "cannot build requirements: cannot get value from composite field path \"spec.env\": spec.env: no such field",
        ),
        (
            "label field path that is not a string",
            json!({"environmentConfigs": [{"type": "Selector", "selector": {"matchLabels": [
                {"key": "env", "valueFromFieldPath": "spec.env", "fromFieldPathPolicy": "Required"}]}}]}),
            json!({"env": 3}),
            vec![],
            "cannot build requirements: cannot get value from composite field path \"spec.env\": spec.env: not a string",
        ),
        (
            "reference without ref",
            json!({"environmentConfigs": [{"type": "Reference"}]}),
            json!({}),
            vec![],
            "cannot build requirements: environmentConfigs[0]: type Reference needs ref.name",
        ),
        (
            "toFieldPath",
            json!({"environmentConfigs": [{"ref": {"name": "a"}, "toFieldPath": "nested"}]}),
            json!({}),
            vec![],
            "cannot build requirements: environmentConfigs[0]: toFieldPath is not supported by plait's built-in function-environment-configs",
        ),
        (
            "config without data",
            json!({"environmentConfigs": [{"ref": {"name": "bare"}}]}),
            json!({}),
            vec![(
                0,
                vec![
                    json!({"apiVersion": ENVIRONMENT_CONFIG_API_VERSION, "kind": ENVIRONMENT_CONFIG_KIND, "metadata": {"name": "bare"}}),
                ],
            )],
            "cannot merge environment data: cannot get data from environment config \"bare\": data: no such field",
        ),
        (
            "config whose data is not an object",
            json!({"environmentConfigs": [{"ref": {"name": "odd"}}]}),
            json!({}),
            vec![(0, vec![config("odd", json!({}), json!("text"))])],
            "cannot merge environment data: cannot get data from environment config \"odd\": cannot unmarshal value from JSON: json: cannot unmarshal string into Go value of type map[string]interface {}",
        ),
        (
            "unknown selector mode",
            json!({"environmentConfigs": [{"type": "Selector", "selector": {"mode": "Some", "matchLabels": [labelled]}}]}),
            json!({}),
            vec![],
            "cannot get Function input from *v1.RunFunctionRequest: cannot get function input *v1beta1.Input from *v1.RunFunctionRequest: cannot unmarshal JSON from *structpb.Struct into *v1beta1.Input: unknown variant `Some`, expected `Single` or `Multiple`",
        ),
    ];
    for (name, spec, xr_spec, required, want) in cases {
        let request = Request {
            observed: xr(xr_spec),
            input: input(spec),
            required_resources: required
                .into_iter()
                .map(|(i, items)| (requirement_name(i), items))
                .collect(),
            ..Request::default()
        };
        let response = EnvironmentConfigs::run(request).unwrap();
        assert_eq!(fatal_messages(&response), vec![want], "{name}");
        assert_eq!(environment(&response), None, "{name}");
    }
}

#[test]
fn without_environment_configs_it_passes_through() {
    for spec in [json!({}), json!({"defaultData": {"a": 1}})] {
        let request = Request {
            context: json!({"k": "v"}),
            input: input(spec.clone()),
            required_resources: [("bootstrap".to_string(), vec![json!({})])].into(),
            ..Request::default()
        };
        let response = EnvironmentConfigs::run(request).unwrap();
        assert!(response.results.is_empty(), "{spec}");
        assert!(response.requirements.is_empty(), "{spec}");
        assert_eq!(response.context, json!({"k": "v"}), "{spec}");
    }
}

#[test]
fn keeps_the_group_version_kind_an_earlier_environment_set() {
    let cases = [
        (
            json!({"apiVersion": "example.org/v1", "kind": "Env"}),
            json!("example.org/v1"),
            json!("Env"),
        ),
        (json!({"kind": "Env"}), Value::Null, json!("Env")),
        (
            json!({"apiVersion": "a/b/c", "kind": "Env"}),
            json!("internal.crossplane.io/v1alpha1"),
            json!("Environment"),
        ),
        (
            json!({"other": 1}),
            json!("internal.crossplane.io/v1alpha1"),
            json!("Environment"),
        ),
    ];
    for (earlier, api_version, kind) in cases {
        let request = Request {
            context: json!({CONTEXT_KEY_ENVIRONMENT: earlier.clone()}),
            input: input(json!({"environmentConfigs": [{"ref": {"name": "a"}}]})),
            required_resources: [(
                requirement_name(0),
                vec![config("a", json!({}), json!({"x": 1}))],
            )]
            .into(),
            ..Request::default()
        };
        let response = EnvironmentConfigs::run(request).unwrap();
        let env = environment(&response).unwrap();
        assert_eq!(
            env.get("apiVersion").cloned().unwrap_or(Value::Null),
            api_version,
            "{earlier}"
        );
        assert_eq!(env["kind"], kind, "{earlier}");
        assert_eq!(env["x"], 1, "{earlier}");
    }
}

#[test]
fn labels_can_come_from_the_earlier_environment() {
    let request = Request {
        context: json!({CONTEXT_KEY_ENVIRONMENT: {"cluster": {"name": "east"}}}),
        input: input(
            json!({"environmentConfigs": [{"type": "Selector", "selector": {"matchLabels": [
            {"type": "FromEnvironmentFieldPath", "key": "cluster", "valueFromFieldPath": "cluster.name"}]}}]}),
        ),
        ..Request::default()
    };
    let response = EnvironmentConfigs::run(request).unwrap();
    assert_eq!(
        response.requirements.resources.get("environment-config-0"),
        Some(&by_labels(&[("cluster", "east")]))
    );
}

/// The fatal result upstream gives an input it cannot read for `cause`.
fn refused_input(cause: &str) -> String {
    format!(
        "cannot get Function input from *v1.RunFunctionRequest: cannot get function input \
         *v1beta1.Input from *v1.RunFunctionRequest: cannot unmarshal JSON from *structpb.Struct \
         into *v1beta1.Input: {cause}"
    )
}

fn fatal_for(input: Option<Value>) -> Vec<String> {
    let request = Request {
        observed: xr(json!({})),
        input,
        ..Request::default()
    };
    let response = EnvironmentConfigs::run(request).unwrap();
    fatal_messages(&response)
        .into_iter()
        .map(str::to_owned)
        .collect()
}

#[test]
fn arrays_where_objects_belong_are_rejected() {
    let cases = [
        (Some(json!([])), "Input"),
        (input(json!(["Resolve"])), "InputSpec"),
        (
            input(json!({"environmentConfigs": [["Reference", {"name": "a"}]]})),
            "EnvironmentSource",
        ),
        (
            input(json!({"environmentConfigs": [{"type": "Reference", "ref": ["a"]}]})),
            "EnvironmentSourceReference",
        ),
        (
            input(json!({"environmentConfigs": [{"type": "Selector", "selector": [[]]}]})),
            "EnvironmentSourceSelector",
        ),
        (input(json!({"policy": ["Required"]})), "Policy"),
    ];
    for (input, go) in cases {
        assert_eq!(
            fatal_for(input.clone()),
            [refused_input(&format!(
                "json: cannot unmarshal JSON array into Go value of type v1beta1.{go}"
            ))],
            "{input:?}"
        );
    }
}

#[test]
fn unknown_input_fields_are_refused_as_upstream() {
    let cases = [
        (
            Some(
                json!({"apiVersion": "environmentconfigs.fn.crossplane.io/v1beta1",
                "kind": "Input", "spec": {}, "status": {}}),
            ),
            "Input",
            "status",
        ),
        (
            input(json!({"environmentConfig": []})),
            "InputSpec",
            "environmentConfig",
        ),
        (
            input(json!({"policy": {"resolve": "Always"}})),
            "Policy",
            "resolve",
        ),
        (
            input(
                json!({"environmentConfigs": [{"type": "Reference", "ref": {"name": "a"}, "optional": true}]}),
            ),
            "EnvironmentSource",
            "optional",
        ),
        (
            input(
                json!({"environmentConfigs": [{"type": "Reference", "ref": {"name": "a", "namespace": "b"}}]}),
            ),
            "EnvironmentSourceReference",
            "namespace",
        ),
        (
            input(
                json!({"environmentConfigs": [{"type": "Selector", "selector": {"matchLabel": []}}]}),
            ),
            "EnvironmentSourceSelector",
            "matchLabel",
        ),
        (
            input(
                json!({"environmentConfigs": [{"type": "Selector", "selector": {"matchLabels": [
                {"key": "a", "valueFromFieldPath": "spec.a", "policy": "Optional"}]}}]}),
            ),
            "EnvironmentSourceSelectorLabelMatcher",
            "policy",
        ),
        (
            // Upstream reads members sorted: `environmentConfigs` before `policy`.
            input(json!({"policy": {"resolve": "Always"},
                "environmentConfigs": [{"type": "Reference", "ref": {"name": "a"}, "x": 1}]})),
            "EnvironmentSource",
            "x",
        ),
    ];
    for (input, go, name) in cases {
        assert_eq!(
            fatal_for(input.clone()),
            [refused_input(&format!(
                "json: cannot unmarshal Go value of type v1beta1.{go}: unknown name \"{name}\""
            ))],
            "{input:?}"
        );
    }
    assert_eq!(
        fatal_for(Some(json!({"metadata": {"name": "x", "label": "y"}}))),
        [refused_input(
            "json: cannot unmarshal Go value of type v1.ObjectMeta: unknown name \"label\""
        )]
    );
}

#[test]
fn every_field_of_upstreams_input_type_is_accepted() {
    let full = Some(json!({
        "apiVersion": "environmentconfigs.fn.crossplane.io/v1beta1", "kind": "Input",
        "metadata": {"name": "x"},
        "spec": {
            "defaultData": {"any": {"thing": 1}},
            "policy": {"resolution": "Optional"},
            "environmentConfigs": [
                {"type": "Reference", "ref": {"name": "a"}},
                {"type": "Selector", "selector": {"mode": "Multiple", "maxMatch": 2, "minMatch": 0,
                    "sortByFieldPath": "metadata.name", "matchLabels": [
                        {"type": "Value", "key": "k", "value": "v"},
                        {"type": "FromCompositeFieldPath", "key": "k2", "valueFromFieldPath": "spec.a",
                         "fromFieldPathPolicy": "Optional"}]}},
            ],
        },
    }));
    assert_eq!(fatal_for(full), Vec::<String>::new());
    // toFieldPath is upstream's too: read, then refused as unsupported.
    let to_field_path = input(
        json!({"environmentConfigs": [{"type": "Reference", "ref": {"name": "a"}, "toFieldPath": "x"}]}),
    );
    assert_eq!(
        fatal_for(to_field_path),
        [
            "cannot build requirements: environmentConfigs[0]: toFieldPath is not supported by plait's built-in function-environment-configs"
        ]
    );
    // A null spec is an empty one, as Go's zero value.
    assert_eq!(fatal_for(Some(json!({"spec": null}))), Vec::<String>::new());
}
