//! RunFunction as a whole: the order of steps, what reaches the response,
//! and the results upstream reports.

use plait_sdk::{FunctionResult, Severity, State};
use serde_json::json;

use super::*;

fn xr() -> Value {
    json!({
        "apiVersion": "example.org/v1",
        "kind": "XDatabase",
        "metadata": {"name": "my-db"},
        "spec": {"size": "small", "region": "eu"},
    })
}

fn request(input: Value) -> Request {
    Request {
        observed: State {
            composite: Some(Resource::new(xr())),
            resources: BTreeMap::new(),
        },
        input: Some(input),
        ..Request::default()
    }
}

fn run(request: Request) -> Response {
    PatchAndTransform::run(request).unwrap()
}

fn messages(response: &Response) -> Vec<(Severity, String)> {
    response
        .results
        .iter()
        .map(
            |FunctionResult {
                 severity, message, ..
             }| (*severity, message.clone()),
        )
        .collect()
}

fn observed(resource: Value) -> Resource {
    Resource::new(resource)
}

#[test]
fn first_step_composes_from_base_and_patches() {
    let response = run(request(json!({
        "apiVersion": "pt.fn.crossplane.io/v1beta1",
        "kind": "Resources",
        "resources": [{
            "name": "instance",
            "base": {"apiVersion": "db.example.org/v1", "kind": "Instance", "spec": {"size": "large"}},
            "patches": [{"fromFieldPath": "spec.size"}, {"fromFieldPath": "spec.region", "toFieldPath": "spec.location"}],
        }],
    })));
    assert_eq!(messages(&response), vec![]);
    assert_eq!(response.ttl, Some(DEFAULT_TTL));
    let composite = response.desired.composite.as_ref().unwrap();
    assert_eq!(
        composite.resource,
        json!({"apiVersion": "example.org/v1", "kind": "XDatabase"})
    );
    let instance = &response.desired.resources["instance"];
    assert_eq!(
        instance.resource,
        json!({"apiVersion": "db.example.org/v1", "kind": "Instance", "spec": {"size": "small", "location": "eu"}})
    );
    assert_eq!(instance.ready, Ready::Unspecified);
    assert_eq!(
        response.context[ENVIRONMENT_KEY],
        json!({"apiVersion": "internal.crossplane.io/v1alpha1", "kind": "Environment"})
    );
}

#[test]
fn observed_resources_keep_their_identity_and_report_readiness() {
    let mut req = request(json!({
        "resources": [{
            "name": "instance",
            "base": {"apiVersion": "db.example.org/v1", "kind": "Instance", "metadata": {"namespace": "base-ns"}},
            "patches": [{"type": "ToCompositeFieldPath", "fromFieldPath": "status.endpoint", "toFieldPath": "status.endpoint"}],
            "connectionDetails": [
                {"name": "password", "type": "FromConnectionSecretKey", "fromConnectionSecretKey": "pw"},
                {"name": "endpoint", "type": "FromFieldPath", "fromFieldPath": "status.endpoint"},
            ],
        }],
    }));
    let mut instance = observed(json!({
        "apiVersion": "db.example.org/v1", "kind": "Instance",
        "metadata": {"name": "my-db-abc12"},
        "status": {"endpoint": "db.local", "conditions": [{"type": "Ready", "status": "True"}]},
    }));
    instance
        .connection_details
        .insert("pw".to_owned(), b"secret".to_vec());
    req.observed
        .resources
        .insert("instance".to_owned(), instance);
    let response = run(req);
    assert_eq!(messages(&response), vec![]);
    let desired = &response.desired.resources["instance"];
    assert_eq!(desired.resource["metadata"], json!({"name": "my-db-abc12"}));
    assert_eq!(desired.ready, Ready::True);
    let composite = response.desired.composite.as_ref().unwrap();
    assert_eq!(
        composite.resource["status"],
        json!({"endpoint": "db.local"})
    );
    assert_eq!(
        composite.connection_details,
        [
            ("endpoint".to_owned(), b"db.local".to_vec()),
            ("password".to_owned(), b"secret".to_vec())
        ]
        .into_iter()
        .collect()
    );
}

#[test]
fn required_patches_hold_back_new_resources() {
    let mut req = request(json!({
        "resources": [
            {"name": "new", "base": {"kind": "A"}, "patches": [
                {"fromFieldPath": "spec.missing", "toFieldPath": "spec.x", "policy": {"fromFieldPath": "Required"}},
                {"fromFieldPath": "spec.size", "toFieldPath": "spec.size"},
            ]},
            {"name": "existing", "base": {"kind": "B"}, "patches": [
                {"fromFieldPath": "spec.missing", "toFieldPath": "spec.x", "policy": {"fromFieldPath": "Required"}},
                {"fromFieldPath": "spec.size", "toFieldPath": "spec.size"},
            ]},
            {"name": "optional", "base": {"kind": "C"}, "patches": [
                {"fromFieldPath": "spec.missing", "toFieldPath": "spec.x"},
            ]},
        ],
    }));
    req.desired.resources.insert(
        "new".to_owned(),
        Resource::new(json!({"kind": "A", "from": "earlier step"})),
    );
    req.observed.resources.insert(
        "existing".to_owned(),
        observed(json!({"kind": "B", "metadata": {"name": "e"}})),
    );
    let response = run(req);
    assert_eq!(
        messages(&response),
        vec![
            (Severity::Warning, "not adding new composed resource \"new\" to desired state because \"FromCompositeFieldPath\" patch at index 0 has 'policy.fromFieldPath: Required': spec.missing: no such field".to_owned()),
            (Severity::Warning, "cannot render composed resource \"existing\" \"FromCompositeFieldPath\" patch at index 0: ignoring 'policy.fromFieldPath: Required' because 'to' resource already exists: spec.missing: no such field".to_owned()),
        ]
    );
    assert_eq!(
        response.desired.resources["new"].resource,
        json!({"kind": "A", "from": "earlier step"})
    );
    assert_eq!(
        response.desired.resources["existing"].resource["spec"],
        json!({"size": "small"})
    );
    assert_eq!(
        response.desired.resources["optional"].resource,
        json!({"kind": "C"})
    );
    assert_eq!(
        response.desired.composite.as_ref().unwrap().ready,
        Ready::False
    );
}

#[test]
fn fatal_results_keep_the_requests_desired_state() {
    let cases = [
        (
            json!({"resources": [{"name": "a", "bogus": true}]}),
            "cannot get Function input: ",
        ),
        (
            json!({"resources": [{"name": "a", "patches": [{"type": "CombineFromComposite", "toFieldPath": "x"}]}]}),
            "invalid Function input: resources[0].patches[0].combine: Required value: combine must be set for patch type CombineFromComposite",
        ),
        (
            json!({"resources": [{"name": "a", "patches": [{"type": "PatchSet", "patchSetName": "nope"}]}]}),
            "cannot resolve PatchSets: cannot find PatchSet by name nope",
        ),
        (
            json!({"resources": [{"name": "ghost"}]}),
            "composed resource \"ghost\" has no base template, and was not produced by a previous Function in the pipeline",
        ),
        (
            json!({"resources": [{"name": "a", "base": {}, "patches": [{"fromFieldPath": "spec.size.x", "toFieldPath": "x"}]}]}),
            "cannot render composed resource \"a\" \"FromCompositeFieldPath\" patch at index 0: spec.size: not an object",
        ),
        (
            json!({"environment": {"patches": [{"type": "FromCompositeFieldPath", "fromFieldPath": "spec.missing", "toFieldPath": "x",
                                             "policy": {"fromFieldPath": "Required"}}]}}),
            "cannot apply the \"FromCompositeFieldPath\" environment patch at index 0: spec.missing: no such field",
        ),
    ];
    for (input, expected) in cases {
        let mut req = request(input.clone());
        req.desired
            .resources
            .insert("kept".to_owned(), Resource::new(json!({"kind": "Kept"})));
        req.context = json!({"other": 1});
        let response = run(req.clone());
        assert_eq!(response.desired, req.desired, "{input}");
        assert_eq!(response.context, req.context, "{input}");
        let fatal = response.results.last().unwrap();
        assert_eq!(fatal.severity, Severity::Fatal, "{input}");
        assert!(
            fatal.message.starts_with(expected),
            "{input}: {}",
            fatal.message
        );
    }
}

#[test]
fn templates_without_base_patch_the_previous_steps_resource() {
    let mut req = request(json!({
        "resources": [{"name": "a", "patches": [{"fromFieldPath": "spec.size", "toFieldPath": "spec.size"}]}],
    }));
    let mut previous = Resource::new(json!({"kind": "A", "spec": {"keep": true}}));
    previous.ready = Ready::True;
    req.desired.resources.insert("a".to_owned(), previous);
    let response = run(req);
    let a = &response.desired.resources["a"];
    assert_eq!(
        a.resource,
        json!({"kind": "A", "spec": {"keep": true, "size": "small"}})
    );
    assert_eq!(a.ready, Ready::Unspecified);
}

#[test]
fn environment_patches_run_first_and_the_environment_is_returned() {
    let mut req = request(json!({
        "environment": {"patches": [
            {"type": "ToEnvironmentFieldPath", "fromFieldPath": "spec.region", "toFieldPath": "region"},
            {"type": "FromEnvironmentFieldPath", "fromFieldPath": "zone", "toFieldPath": "status.zone"},
            {"type": "FromCompositeFieldPath", "fromFieldPath": "spec.missing", "toFieldPath": "x"},
        ]},
        "resources": [{"name": "a", "base": {}, "patches": [
            {"type": "FromEnvironmentFieldPath", "fromFieldPath": "region", "toFieldPath": "spec.region"},
            {"type": "ToEnvironmentFieldPath", "fromFieldPath": "status.id", "toFieldPath": "id"},
        ]}],
    }));
    req.context = json!({ENVIRONMENT_KEY: {"apiVersion": "v1", "kind": "Env", "zone": "a"}});
    req.observed
        .resources
        .insert("a".to_owned(), observed(json!({"status": {"id": "x1"}})));
    let response = run(req);
    assert_eq!(messages(&response), vec![]);
    assert_eq!(
        response.desired.resources["a"].resource["spec"],
        json!({"region": "eu"})
    );
    assert_eq!(
        response.desired.composite.as_ref().unwrap().resource["status"],
        json!({"zone": "a"})
    );
    assert_eq!(
        response.context[ENVIRONMENT_KEY],
        json!({"apiVersion": "v1", "kind": "Env", "zone": "a", "region": "eu", "id": "x1"})
    );
}

#[test]
fn readiness_errors_are_warnings() {
    let mut req = request(json!({
        "resources": [{"name": "a", "base": {},
            "readinessChecks": [{"type": "MatchString", "fieldPath": "status.count", "matchString": "1"}]}],
    }));
    req.observed
        .resources
        .insert("a".to_owned(), observed(json!({"status": {"count": 1}})));
    let response = run(req);
    assert_eq!(
        messages(&response),
        vec![(Severity::Warning, "cannot check readiness of composed resource \"a\": cannot run readiness check at index 0: status.count: not a string".to_owned())]
    );
    assert_eq!(response.desired.resources["a"].ready, Ready::Unspecified);
}

#[test]
fn v2_xrs_get_a_connection_secret() {
    let mut req = request(json!({
        "writeConnectionSecretToRef": {"patches": [
            {"type": "FromCompositeFieldPath", "fromFieldPath": "spec.secretName", "toFieldPath": "name"}
        ]},
        "resources": [{"name": "key", "base": {},
            "connectionDetails": [{"name": "user", "type": "FromConnectionSecretKey", "fromConnectionSecretKey": "username"}]}],
    }));
    req.observed.composite = Some(Resource::new(json!({
        "apiVersion": "example.org/v1", "kind": "Keys",
        "metadata": {"name": "my-keys", "namespace": "team"},
        "spec": {"crossplane": {}, "secretName": "keys-secret"},
    })));
    let mut key = observed(json!({"metadata": {"name": "k"}}));
    key.connection_details
        .insert("username".to_owned(), b"admin".to_vec());
    req.observed.resources.insert("key".to_owned(), key);
    let response = run(req);
    assert_eq!(messages(&response), vec![]);
    let secret = &response.desired.resources["my-keys-connection-secret"];
    assert_eq!(secret.ready, Ready::True);
    assert_eq!(
        secret.resource,
        json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "keys-secret", "namespace": "team"},
            "data": {"user": "YWRtaW4="},
            "type": "connection.crossplane.io/v1alpha1",
        })
    );
}

#[test]
fn legacy_xrs_get_no_connection_secret() {
    let mut req = request(json!({
        "resources": [{"name": "key", "base": {},
            "connectionDetails": [{"name": "port", "type": "FromValue", "value": "5432"}]}],
    }));
    req.observed
        .resources
        .insert("key".to_owned(), observed(json!({})));
    let response = run(req);
    assert_eq!(response.desired.resources.len(), 1);
    assert_eq!(
        response
            .desired
            .composite
            .as_ref()
            .unwrap()
            .connection_details
            .get("port"),
        Some(&b"5432".to_vec())
    );
}

#[test]
fn bench_request_composes_cleanly() {
    for n in [1, 10] {
        let response = run(bench_input::request(n));
        assert_eq!(messages(&response), vec![], "{n}");
        assert_eq!(response.desired.resources.len(), n);
        let bucket = &response.desired.resources["bucket-0"];
        assert_eq!(bucket.ready, Ready::True);
        assert_eq!(
            bucket.resource["spec"]["forProvider"]["region"],
            json!("eu-west-1")
        );
        assert_eq!(
            bucket.resource["spec"]["forProvider"]["tags"]["name"],
            json!("acme-gold")
        );
        assert_eq!(
            bucket.resource["metadata"]["annotations"]["crossplane.io/external-name"],
            json!("acme-bucket-0")
        );
        assert_eq!(
            response.desired.composite.as_ref().unwrap().resource["status"]["buckets"]["bucket0"],
            json!("arn:aws:s3:::acme-0")
        );
    }
}

#[test]
fn depends_on_is_written_onto_the_resource_for_plaits_ordering() {
    let response = run(request(json!({
        "apiVersion": "pt.fn.crossplane.io/v1beta1",
        "kind": "Resources",
        "resources": [
            {"name": "a", "base": {"apiVersion": "v1", "kind": "ConfigMap"}},
            {"name": "b", "base": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"annotations": {"kept": "yes"}}},
             "dependsOn": ["a"]},
            {"name": "c", "base": {"apiVersion": "v1", "kind": "ConfigMap"}, "dependsOn": ["a", "b"]},
        ],
    })));
    assert_eq!(messages(&response), vec![]);
    let annotations =
        |name: &str| response.desired.resources[name].resource["metadata"]["annotations"].clone();
    assert_eq!(annotations("a"), Value::Null);
    assert_eq!(
        annotations("b"),
        json!({"kept": "yes", DEPENDS_ON_ANNOTATION: "a"})
    );
    assert_eq!(annotations("c"), json!({DEPENDS_ON_ANNOTATION: "a,b"}));

    let refused = run(request(json!({
        "apiVersion": "pt.fn.crossplane.io/v1beta1",
        "kind": "Resources",
        "resources": [{"name": "b", "base": {"apiVersion": "v1", "kind": "ConfigMap"}, "dependsOn": ["a,c"]}],
    })));
    let (severity, message) = messages(&refused).remove(0);
    assert_eq!(severity, Severity::Fatal);
    assert!(
        message.contains("resources[0].dependsOn[0]") && message.contains("comma"),
        "{message}"
    );
}

/// The fatal result of an input upstream refuses, whole: the text path
/// (WebAssembly guests) and the tree path (native hosts) say the same.
fn fatal_message_both_ways(input: &Value) -> [String; 2] {
    let from_tree = run(request(input.clone()));
    let from_text = PatchAndTransform::run_with_input_text(
        Request {
            input: None,
            ..request(json!(null))
        },
        Some(&input.to_string()),
    )
    .unwrap();
    [from_tree, from_text].map(|response| {
        let fatal: Vec<_> = messages(&response)
            .into_iter()
            .filter(|(severity, _)| *severity == Severity::Fatal)
            .map(|(_, message)| message)
            .collect();
        assert_eq!(fatal.len(), 1, "{input}: {fatal:?}");
        fatal[0].clone()
    })
}

#[test]
fn unknown_input_fields_are_refused_with_upstreams_whole_message() {
    let prefix = "cannot get Function input: cannot get function input *v1beta1.Resources from \
        *v1.RunFunctionRequest: cannot unmarshal JSON from *structpb.Struct into *v1beta1.Resources: ";
    let cases = [
        (
            json!({"resources": [{"name": "a", "base": {"kind": "A"}, "patches": [
                {"type": "CombineFromComposite", "toFieldPath": "a",
                 "combine": {"strategy": "string", "variables": [{"fromFieldPath": "b"}],
                             "string": {"type": "Format", "fmt": "%s"}}}]}]}),
            "json: cannot unmarshal Go value of type v1beta1.StringCombine: unknown name \"type\"",
        ),
        (
            // Written first, but upstream reads `apiVersion`, `kind`,
            // `resources` in sorted order and meets the template's fault first.
            json!({"zzz": true, "resources": [{"name": "a", "bogus": 1}]}),
            "json: cannot unmarshal Go value of type v1beta1.ComposedTemplate: unknown name \"bogus\"",
        ),
    ];
    for (input, cause) in cases {
        for message in fatal_message_both_ways(&input) {
            assert_eq!(message, format!("{prefix}{cause}"), "{input}");
        }
    }
}

#[test]
fn math_without_type_is_refused_as_upstream() {
    let cases = [
        (
            json!({"type": "math", "math": {"multiply": 2}}),
            "resources[0].patches[0].transforms[0].math.type: Required value: math transform type is required",
        ),
        (
            json!({"type": "math", "math": {"type": "", "clampMin": 1}}),
            "resources[0].patches[0].transforms[0].math.type: Required value: math transform type is required",
        ),
        (
            json!({"type": "math", "math": {}}),
            "resources[0].patches[0].transforms[0].math.type: Required value: math transform type is required",
        ),
    ];
    for (transform, cause) in cases {
        let input = json!({"resources": [{"name": "a", "base": {"kind": "A"}, "patches": [
            {"fromFieldPath": "spec.size", "transforms": [transform]}]}]});
        for message in fatal_message_both_ways(&input) {
            assert_eq!(
                message,
                format!("invalid Function input: {cause}"),
                "{input}"
            );
        }
    }
    // Typed, it multiplies.
    let input = json!({"resources": [{"name": "a", "base": {"kind": "A"}, "patches": [
        {"fromFieldPath": "spec.count", "toFieldPath": "spec.n",
         "transforms": [{"type": "math", "math": {"type": "Multiply", "multiply": 2}}]}]}]});
    let mut request = request(input);
    if let Some(xr) = &mut request.observed.composite {
        xr.resource["spec"]["count"] = json!(3);
    }
    let response = run(request);
    assert_eq!(messages(&response), vec![]);
    assert_eq!(response.desired.resources["a"].resource["spec"]["n"], 6);
}
