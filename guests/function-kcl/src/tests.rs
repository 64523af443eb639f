//! The function's contract, table by table. Expectations are upstream's
//! (function-kcl v0.12.2's `fn_test.go` and its documented behaviour),
//! checked on a summary of the response.

use std::collections::BTreeMap;

use plait_kcl::loader::MemoryFs;
use plait_sdk::{Ready, Request, Resource, ResourceMatch, Severity, State, Target};
use serde_json::{Map, Value, json};

use super::*;

const XR: &str = r#"{"apiVersion":"example.org/v1","kind":"XR","metadata":{"name":"cool-xr"},"spec":{"count":2}}"#;
const CD: &str = r#"{"apiVersion":"example.org/v1","kind":"CD","metadata":{"annotations":{"krm.kcl.dev/composition-resource-name":"cool-cd"},"name":"cool-cd"}}"#;

fn xr() -> Value {
    serde_json::from_str(XR).unwrap()
}

fn cd() -> Value {
    serde_json::from_str(CD).unwrap()
}

fn bare_xr() -> Value {
    json!({"apiVersion": "example.org/v1", "kind": "XR"})
}

fn input(target: &str, source: &str) -> Value {
    json!({
        "apiVersion": "krm.kcl.dev/v1alpha1",
        "kind": "KCLInput",
        "metadata": {"name": "basic"},
        "spec": {"target": target, "source": source},
    })
}

/// A request: input, observed XR, desired XR and composed resources.
#[derive(Default)]
struct Given {
    input: Option<Value>,
    observed: Option<Value>,
    observed_resources: Vec<(&'static str, Value)>,
    desired: Option<Value>,
    desired_resources: Vec<(&'static str, Value)>,
    context: Option<Value>,
    required: Vec<(&'static str, Vec<Value>)>,
    /// Files of the package granted at `/src`.
    src: Vec<(&'static str, &'static str)>,
}

impl Given {
    fn request(&self) -> Request {
        let state = |xr: &Option<Value>, resources: &[(&str, Value)]| State {
            composite: xr.clone().map(Resource::new),
            resources: resources
                .iter()
                .map(|(n, r)| (n.to_string(), Resource::new(r.clone())))
                .collect(),
        };
        Request {
            input: self.input.clone(),
            observed: state(&self.observed, &self.observed_resources),
            desired: state(&self.desired, &self.desired_resources),
            context: self.context.clone().unwrap_or_else(|| json!({})),
            required_resources: self
                .required
                .iter()
                .map(|(n, items)| (n.to_string(), items.clone()))
                .collect(),
            ..Request::default()
        }
    }

    fn fs(&self) -> MemoryFs {
        let mut fs = MemoryFs::new();
        for (path, text) in &self.src {
            fs.insert(format!("{DEFAULT_SOURCE_DIR}/{path}"), *text);
        }
        fs
    }

    fn respond(&self) -> Response {
        respond(&self.request(), &self.fs())
    }
}

/// What a response holds, as JSON the tables compare with.
fn summary(response: &Response) -> Value {
    let fatal = response
        .results
        .iter()
        .find(|r| r.severity == Severity::Fatal)
        .map(|r| json!(r.message));
    let results: Vec<Value> = response
        .results
        .iter()
        .filter(|r| r.severity != Severity::Fatal)
        .map(|r| {
            json!({"severity": format!("{:?}", r.severity), "message": r.message,
                   "reason": r.reason, "target": r.target.map(|t| format!("{t:?}"))})
        })
        .collect();
    let resources: Map<String, Value> = response
        .desired
        .resources
        .iter()
        .map(|(n, r)| (n.clone(), r.resource.clone()))
        .collect();
    let ready: Map<String, Value> = response
        .desired
        .resources
        .iter()
        .filter(|(_, r)| r.ready != Ready::Unspecified)
        .map(|(n, r)| (n.clone(), json!(format!("{:?}", r.ready))))
        .collect();
    let requirements: Map<String, Value> = response
        .requirements
        .resources
        .iter()
        .map(|(n, s)| {
            let matching = match &s.matching {
                ResourceMatch::Name(name) => json!({"name": name}),
                ResourceMatch::Labels(labels) => json!({"labels": labels}),
            };
            (
                n.clone(),
                json!({"apiVersion": s.api_version, "kind": s.kind, "match": matching, "namespace": s.namespace}),
            )
        })
        .collect();
    let conditions: Vec<Value> = response
        .conditions
        .iter()
        .map(|c| {
            json!({"type": c.type_, "status": c.status.as_str(), "reason": c.reason,
                   "message": c.message, "target": c.target.map(|t| format!("{t:?}"))})
        })
        .collect();
    let connection: Map<String, Value> = response
        .desired
        .composite
        .iter()
        .flat_map(|c| &c.connection_details)
        .map(|(k, v)| (k.clone(), json!(String::from_utf8_lossy(v))))
        .collect();
    json!({
        "fatal": fatal,
        "results": results,
        "composite": response.desired.composite.as_ref().map(|c| c.resource.clone()),
        "connection": connection,
        "resources": resources,
        "ready": ready,
        "requirements": requirements,
        "conditions": conditions,
        "context": response.context,
        "ttl": response.ttl.map(|t| t.as_secs()),
    })
}

/// Checks the keys `want` names, and that nothing failed unless `want`
/// says what.
fn check(name: &str, given: &Given, want: &Value) {
    let got = summary(&given.respond());
    let mut want = want.clone();
    let want = want.as_object_mut().unwrap();
    want.entry("fatal").or_insert(Value::Null);
    for (key, expected) in want.iter() {
        assert_eq!(&got[key], expected, "{name}: {key}\n{got:#}");
    }
}

#[test]
fn upstream_cases_render_as_upstream_renders_them() {
    let cases: Vec<(&str, Given, Value)> = vec![
        (
            "a bare dict with the Resources target is one resource named by its empty name",
            Given {
                input: Some(input(
                    "Resources",
                    "{\n    apiVersion: \"example.org/v1\"\n    kind: \"Generated\"\n}",
                )),
                observed: Some(bare_xr()),
                ..Given::default()
            },
            json!({
                "composite": bare_xr(),
                "resources": {"": {"apiVersion": "example.org/v1", "kind": "Generated"}},
                "ttl": 60,
            }),
        ),
        (
            "items of the default target keep their values, \"on\" a string",
            Given {
                input: Some(
                    json!({"apiVersion": "krm.kcl.dev/v1alpha1", "kind": "KCLInput", "spec": {
                    "source": "items = [{ \n    apiVersion: \"sql.gcp.upbound.io/v1beta1\"\n    kind: \"DatabaseInstance\"\n    spec: {\n        forProvider: {\n            project: \"test-project\"\n            settings: [{databaseFlags: [{\n                name: \"log_checkpoints\"\n                value: \"on\"\n            }]}]\n        }\n    }\n}]\n"}}),
                ),
                observed: Some(bare_xr()),
                ..Given::default()
            },
            json!({"resources": {"": {"apiVersion": "sql.gcp.upbound.io/v1beta1", "kind": "DatabaseInstance",
                "spec": {"forProvider": {"project": "test-project", "settings": [{"databaseFlags": [{"name": "log_checkpoints", "value": "on"}]}]}}}}}),
        ),
        (
            "the name annotation names the resource and is removed, leaving annotations {}",
            Given {
                input: Some(input(
                    "Default",
                    "{\n    apiVersion: \"example.org/v1\"\n    kind: \"Generated\"\n metadata.annotations = {\"krm.kcl.dev/composition-resource-name\": \"custom-composition-resource-name\"}\n}",
                )),
                observed: Some(bare_xr()),
                ..Given::default()
            },
            json!({"resources": {"custom-composition-resource-name": {"apiVersion": "example.org/v1", "kind": "Generated", "metadata": {"annotations": {}}}}}),
        ),
        (
            "several items are several resources",
            Given {
                input: Some(input(
                    "",
                    "items = [\n{\n    apiVersion: \"example.org/v1\"\n    kind: \"Generated\"\n metadata.annotations = {\"krm.kcl.dev/composition-resource-name\": \"custom-composition-resource-name-0\"}\n}\n{\n    apiVersion: \"example.org/v1\"\n    kind: \"Generated\"\n metadata.annotations = {\"krm.kcl.dev/composition-resource-name\": \"custom-composition-resource-name-1\"}\n}\n]\n",
                )),
                observed: Some(bare_xr()),
                ..Given::default()
            },
            json!({"resources": {
                "custom-composition-resource-name-0": {"apiVersion": "example.org/v1", "kind": "Generated", "metadata": {"annotations": {}}},
                "custom-composition-resource-name-1": {"apiVersion": "example.org/v1", "kind": "Generated", "metadata": {"annotations": {}}},
            }}),
        ),
        (
            "ExtraResources items become requirements, by name or by labels",
            Given {
                input: Some(input(
                    "Default",
                    "items = [\n{\n  apiVersion: \"meta.krm.kcl.dev/v1alpha1\"\n  kind: \"ExtraResources\"\n  requirements = {\n    \"cool-extra-resource\" = {\n      apiVersion: \"example.org/v1\"\n      kind: \"CoolExtraResource\"\n      matchName: \"cool-extra-resource\"\n    }\n  }\n},\n{\n  apiVersion: \"meta.krm.kcl.dev/v1alpha1\"\n  kind: \"ExtraResources\"\n  requirements = {\n    \"another-cool-extra-resource\" = {\n      apiVersion: \"example.org/v1\"\n      kind: \"CoolExtraResource\"\n      matchLabels = {\n        key: \"value\"\n      }\n    }\n    \"yet-another-cool-extra-resource\" = {\n      apiVersion: \"example.org/v1\"\n      kind: \"CoolExtraResource\"\n      matchName: \"foo\"\n    }\n  }\n},\n{\n  apiVersion: \"meta.krm.kcl.dev/v1alpha1\"\n  kind: \"ExtraResources\"\n  requirements = {\n    \"all-cool-resources\" = {\n      apiVersion: \"example.org/v1\"\n      kind: \"CoolExtraResource\"\n      matchLabels = {}\n    }\n  }\n}\n]\n",
                )),
                observed: Some(xr()),
                desired: Some(xr()),
                desired_resources: vec![("cool-cd", cd())],
                ..Given::default()
            },
            json!({
                "requirements": {
                    "cool-extra-resource": {"apiVersion": "example.org/v1", "kind": "CoolExtraResource", "match": {"name": "cool-extra-resource"}, "namespace": null},
                    "another-cool-extra-resource": {"apiVersion": "example.org/v1", "kind": "CoolExtraResource", "match": {"labels": {"key": "value"}}, "namespace": null},
                    "yet-another-cool-extra-resource": {"apiVersion": "example.org/v1", "kind": "CoolExtraResource", "match": {"name": "foo"}, "namespace": null},
                    "all-cool-resources": {"apiVersion": "example.org/v1", "kind": "CoolExtraResource", "match": {"labels": {}}, "namespace": null},
                },
                "composite": xr(),
                "resources": {"cool-cd": cd()},
            }),
        ),
        (
            "an ExtraResources requirement may name a namespace",
            Given {
                input: Some(input(
                    "Default",
                    "items = [{ apiVersion: \"meta.krm.kcl.dev/v1alpha1\", kind: \"ExtraResources\", requirements = { \"cool-ns-resource-matchname\" = { apiVersion: \"example.m.org/v1\", kind: \"CoolExtraResource\", matchNamespace: \"cool-ns-scoped-ns\", matchName: \"cool-ns-scoped-resource\" } } }]",
                )),
                observed: Some(xr()),
                desired: Some(xr()),
                ..Given::default()
            },
            json!({"requirements": {"cool-ns-resource-matchname": {"apiVersion": "example.m.org/v1", "kind": "CoolExtraResource", "match": {"name": "cool-ns-scoped-resource"}, "namespace": "cool-ns-scoped-ns"}}}),
        ),
        (
            "extra resources reach the program as {Resource}; no observed XR leaves an empty apiVersion and kind",
            Given {
                input: Some(input(
                    "Default",
                    "items = [v.Resource for v in option(\"params\").extraResources[\"cool1\"]]\n",
                )),
                required: vec![("cool1", vec![xr(), cd()])],
                ..Given::default()
            },
            json!({
                "composite": {"apiVersion": "", "kind": ""},
                "resources": {
                    "cool-xr": xr(),
                    "cool-cd": {"apiVersion": "example.org/v1", "kind": "CD", "metadata": {"annotations": {}, "name": "cool-cd"}},
                },
            }),
        ),
        (
            "an extra resource key asked for twice is fatal",
            Given {
                input: Some(input(
                    "Default",
                    "items = [\n{\n  apiVersion: \"meta.krm.kcl.dev/v1alpha1\"\n  kind: \"ExtraResources\"\n  requirements = {\n    \"cool-extra-resource\" = {\n      apiVersion: \"example.org/v1\"\n      kind: \"CoolExtraResource\"\n      matchName: \"cool-extra-resource\"\n    }\n  }\n}\n{\n  apiVersion: \"meta.krm.kcl.dev/v1alpha1\"\n  kind: \"ExtraResources\"\n  requirements = {\n    \"cool-extra-resource\" = {\n      apiVersion: \"example.org/v1\"\n      kind: \"CoolExtraResource\"\n      matchName: \"another-cool-extra-resource\"\n    }\n  }\n}\n]\n",
                )),
                observed: Some(xr()),
                desired: Some(xr()),
                desired_resources: vec![("cool-cd", cd())],
                ..Given::default()
            },
            json!({
                "fatal": "cannot process xr and state with the pipeline output in *v1.RunFunctionResponse: duplicate extra resource key \"cool-extra-resource\"",
                "composite": xr(),
                "resources": {"cool-cd": cd()},
            }),
        ),
        (
            "RequiredResources items become requirements, by name or by labels, in a namespace",
            Given {
                input: Some(input(
                    "Default",
                    "items = [\n{\n  apiVersion: \"meta.krm.kcl.dev/v1alpha1\"\n  kind: \"RequiredResources\"\n  requirements = {\n    \"cool-required-resource\" = {\n      apiVersion: \"example.org/v1\"\n      kind: \"CoolRequiredResource\"\n      name: \"cool-required-resource\"\n    }\n  }\n},\n{\n  apiVersion: \"meta.krm.kcl.dev/v1alpha1\"\n  kind: \"RequiredResources\"\n  requirements = {\n    \"another-cool-required-resource\" = {\n      apiVersion: \"example.org/v1\"\n      kind: \"CoolRequiredResource\"\n      matchLabels = {\n        key: \"value\"\n      }\n    }\n    \"ns\" = {\n      apiVersion: \"example.m.org/v1\"\n      kind: \"CoolRequiredResource\"\n      namespace: \"cool-ns\"\n      name: \"foo\"\n    }\n  }\n}\n]\n",
                )),
                observed: Some(xr()),
                desired: Some(xr()),
                ..Given::default()
            },
            json!({"requirements": {
                "cool-required-resource": {"apiVersion": "example.org/v1", "kind": "CoolRequiredResource", "match": {"name": "cool-required-resource"}, "namespace": null},
                "another-cool-required-resource": {"apiVersion": "example.org/v1", "kind": "CoolRequiredResource", "match": {"labels": {"key": "value"}}, "namespace": null},
                "ns": {"apiVersion": "example.m.org/v1", "kind": "CoolRequiredResource", "match": {"name": "foo"}, "namespace": "cool-ns"},
            }}),
        ),
        (
            "required resources reach the program as {Resource}",
            Given {
                input: Some(input(
                    "Default",
                    "items = [v.Resource for v in option(\"params\").requiredResources[\"cool1\"]]\n",
                )),
                required: vec![("cool1", vec![xr()])],
                ..Given::default()
            },
            json!({"resources": {"cool-xr": xr()}}),
        ),
        (
            "a required resource key asked for twice is fatal",
            Given {
                input: Some(input(
                    "Default",
                    "items = [\n{\n  apiVersion: \"meta.krm.kcl.dev/v1alpha1\"\n  kind: \"RequiredResources\"\n  requirements = {\n    \"cool-required-resource\" = {\n      apiVersion: \"example.org/v1\"\n      kind: \"CoolRequiredResource\"\n      name: \"cool-required-resource\"\n    }\n  }\n}\n{\n  apiVersion: \"meta.krm.kcl.dev/v1alpha1\"\n  kind: \"RequiredResources\"\n  requirements = {\n    \"cool-required-resource\" = {\n      apiVersion: \"example.org/v1\"\n      kind: \"CoolRequiredResource\"\n      name: \"another-cool-required-resource\"\n    }\n  }\n}\n]\n",
                )),
                observed: Some(xr()),
                ..Given::default()
            },
            json!({"fatal": "cannot process xr and state with the pipeline output in *v1.RunFunctionResponse: duplicate required resource key \"cool-required-resource\""}),
        ),
        (
            "no input runs the package granted at /src",
            Given {
                observed: Some(bare_xr()),
                src: vec![(
                    "main.k",
                    "{\n    apiVersion: \"example.org/v1\"\n    kind: \"Generated\"\n}\n",
                )],
                ..Given::default()
            },
            json!({"composite": bare_xr(), "resources": {"": {"apiVersion": "example.org/v1", "kind": "Generated"}}}),
        ),
        (
            "no input and no package at /src is refused",
            Given {
                observed: Some(bare_xr()),
                ..Given::default()
            },
            json!({"fatal": "invalid function input: spec.source: Required value: kcl source cannot be empty", "resources": {}, "composite": null}),
        ),
        (
            "conditions: a type set earlier is skipped unless forced",
            Given {
                input: Some(input(
                    "Default",
                    "items = [{\n    apiVersion: \"meta.krm.kcl.dev/v1alpha1\"\n    kind: \"Conditions\"\n    conditions = [{\n        target: \"CompositeAndClaim\"\n        force: False\n        condition = {\n            type: \"DatabaseReady\"\n            status: \"False\"\n            reason: \"FailedToCreate\"\n            message: \"Encountered an error creating the database\"\n        }\n    },{\n        target: \"Composite\"\n        force: False\n        condition = {\n            type: \"DatabaseReady\"\n            status: \"False\"\n            reason: \"FailedToValidate\"\n            message: \"Encountered an error during validation\"\n        }\n    },{\n        force: True\n        condition = {\n            type: \"DatabaseReady\"\n            status: \"True\"\n            reason: \"DatabaseValidation\"\n        }\n    }]\n}]",
                )),
                ..Given::default()
            },
            json!({
                "conditions": [
                    {"type": "DatabaseReady", "status": "False", "reason": "FailedToCreate", "message": "Encountered an error creating the database", "target": "CompositeAndClaim"},
                    {"type": "DatabaseReady", "status": "True", "reason": "DatabaseValidation", "message": null, "target": "Composite"},
                ],
                "composite": {"apiVersion": "", "kind": ""},
                "resources": {},
            }),
        ),
        (
            "a reserved condition type is fatal",
            Given {
                input: Some(input(
                    "Default",
                    "items = [{apiVersion: \"meta.krm.kcl.dev/v1alpha1\", kind: \"Conditions\", conditions = [{condition = {type: \"Ready\", status: \"True\", reason: \"R\"}}]}]",
                )),
                ..Given::default()
            },
            json!({"fatal": "cannot set ClaimCondition type: Ready is a reserved Crossplane Condition", "conditions": []}),
        ),
        (
            "events become results",
            Given {
                input: Some(input(
                    "Default",
                    "items = [{\n    apiVersion: \"meta.krm.kcl.dev/v1alpha1\"\n    kind: \"Events\"\n    events = [{\n        target: \"CompositeAndClaim\"\n        event = {\n            type: \"Warning\"\n            reason: \"ResourceLimitExceeded\"\n            message: \"The resource limit has been exceeded\"\n        }\n    },{\n        target: \"Composite\"\n        event = {\n            message: \"Normal by default\"\n        }\n    }]\n}]",
                )),
                ..Given::default()
            },
            json!({"results": [
                {"severity": "Warning", "message": "The resource limit has been exceeded", "reason": "ResourceLimitExceeded", "target": "CompositeAndClaim"},
                {"severity": "Normal", "message": "Normal by default", "reason": null, "target": "Composite"},
            ]}),
        ),
        (
            "an event of another type is fatal",
            Given {
                input: Some(input(
                    "Default",
                    "items = [{apiVersion: \"meta.krm.kcl.dev/v1alpha1\", kind: \"Events\", events = [{event = {type: \"Loud\", message: \"m\"}}]}]",
                )),
                ..Given::default()
            },
            json!({"fatal": "invalid type Loud, must be one of [Normal, Warning]"}),
        ),
        (
            "a Context item merges into the pipeline context",
            Given {
                input: Some(input(
                    "Default",
                    "items = [{\n    apiVersion: \"meta.krm.kcl.dev/v1alpha1\"\n    kind: \"Context\"\n    data = {contextField: \"contextValue\", nested.b = 2}\n}]",
                )),
                context: Some(
                    json!({"inputContext": "valueFromPreviousContext", "nested": {"a": 1}}),
                ),
                ..Given::default()
            },
            json!({"context": {"contextField": "contextValue", "inputContext": "valueFromPreviousContext", "nested": {"a": 1, "b": 2}}}),
        ),
        (
            "CompositeConnectionDetails data is decoded from base64 onto the composite",
            Given {
                input: Some(input(
                    "Default",
                    "items = [{apiVersion: \"meta.krm.kcl.dev/v1alpha1\", kind: \"CompositeConnectionDetails\", data = {user: \"YWRtaW4=\"}}]",
                )),
                observed: Some(xr()),
                ..Given::default()
            },
            json!({"connection": {"user": "admin"}}),
        ),
        (
            "another meta kind is fatal",
            Given {
                input: Some(input(
                    "Default",
                    "items = [{apiVersion: \"meta.krm.kcl.dev/v1alpha1\", kind: \"Nope\"}]",
                )),
                ..Given::default()
            },
            json!({"fatal": "cannot process xr and state with the pipeline output in *v1.RunFunctionResponse: invalid kind \"Nope\" for apiVersion \"meta.krm.kcl.dev/v1alpha1\" - must be CompositeConnectionDetails or ExtraResources"}),
        ),
        (
            "two resources of one name are fatal in the default target",
            Given {
                input: Some(input(
                    "",
                    "items = [\n{\n    apiVersion: \"example.org/v1\"\n    kind: \"Generated\"\n metadata = {\n  name = \"metadata-name\"\n  annotations = {\"krm.kcl.dev/composition-resource-name\": \"duplicate-resource-name\"}}\n}\n{\n    apiVersion: \"example.org/v1\"\n    kind: \"Generated\"\n metadata.name = \"duplicate-resource-name\"\n}\n]\n",
                )),
                observed: Some(bare_xr()),
                ..Given::default()
            },
            json!({"fatal": "cannot process xr and state with the pipeline output in *v1.RunFunctionResponse: multiple composed resources with name \"duplicate-resource-name\" returned: Generated/metadata-name and Generated/duplicate-resource-name. Set different metadata.name or metadata.annotations.\"krm.kcl.dev/composition-resource-name\" to distinguish them."}),
        ),
        (
            "two resources of one name are fatal in the Resources target",
            Given {
                input: Some(input(
                    "Resources",
                    "items = [\n{\n    apiVersion: \"example.org/v1\"\n    kind: \"Generated\"\n metadata = {\n  name = \"metadata-name\"\n  annotations = {\"krm.kcl.dev/composition-resource-name\": \"duplicate-resource-name\"}}\n}\n{\n    apiVersion: \"example.org/v1\"\n    kind: \"Generated\"\n metadata.name = \"duplicate-resource-name\"\n}\n]\n",
                )),
                observed: Some(bare_xr()),
                ..Given::default()
            },
            json!({"fatal": "cannot process xr and state with the pipeline output in *v1.RunFunctionResponse: multiple composed resources with name \"duplicate-resource-name\" returned: Generated/metadata-name and Generated/duplicate-resource-name. Set different metadata.name or metadata.annotations.\"krm.kcl.dev/composition-resource-name\" to distinguish them."}),
        ),
        (
            "an item of the XR's kind only gives its status, even beside a resource of the XR's name",
            Given {
                input: Some(input(
                    "Default",
                    "[{\n    apiVersion: \"example.org/v1\"\n    kind: \"XR\"\n metadata.name = \"cool-xr\"\n},{\n    apiVersion: \"example.org/v1\"\n    kind: \"Generated\"\n metadata.name = \"cool-xr\"\n}]",
                )),
                observed: Some(bare_xr()),
                ..Given::default()
            },
            json!({
                "composite": {"apiVersion": "example.org/v1", "kind": "XR", "status": {}},
                "resources": {"cool-xr": {"apiVersion": "example.org/v1", "kind": "Generated", "metadata": {"name": "cool-xr"}}},
            }),
        ),
    ];
    for (name, given, want) in &cases {
        check(name, given, want);
    }
}

#[test]
fn targets_apply_the_output_as_upstream_does() {
    let bucket = json!({"apiVersion": "s3.aws/v1", "kind": "Bucket", "metadata": {"name": "b", "labels": {"a": "1"}}, "spec": {"region": "eu", "tags": ["x"]}});
    let cases: Vec<(&str, Given, Value)> = vec![
        (
            "Resources merges an existing resource shallowly: the item's top-level fields win",
            Given {
                input: Some(input(
                    "Resources",
                    "items = [{apiVersion: \"s3.aws/v1\", kind: \"Bucket\", metadata.name = \"b\", spec.acl = \"private\"}]",
                )),
                observed: Some(bare_xr()),
                desired_resources: vec![("b", bucket.clone())],
                ..Given::default()
            },
            json!({"resources": {"b": {"apiVersion": "s3.aws/v1", "kind": "Bucket", "metadata": {"name": "b"}, "spec": {"acl": "private"}}}}),
        ),
        (
            "Resources reads the ready annotation of every desired resource",
            Given {
                input: Some(input(
                    "Resources",
                    "items = [{apiVersion: \"v1\", kind: \"A\", metadata = {name = \"a\", annotations = {\"krm.kcl.dev/ready\": \"True\"}}}]",
                )),
                observed: Some(bare_xr()),
                ..Given::default()
            },
            json!({"resources": {"a": {"apiVersion": "v1", "kind": "A", "metadata": {"name": "a", "annotations": {}}}}, "ready": {"a": "True"}}),
        ),
        (
            "PatchDesired writes each leaf into the matching resource, never its apiVersion, kind or name",
            Given {
                input: Some(input(
                    "PatchDesired",
                    "items = [{apiVersion: \"other/v9\", kind: \"Other\", metadata = {name = \"b\", labels = {\"b.io/x\": \"2\"}}, spec.tags = [\"y\", \"z\"], spec.empty = {}}]",
                )),
                observed: Some(bare_xr()),
                desired_resources: vec![("b", bucket.clone())],
                ..Given::default()
            },
            json!({"resources": {"b": {"apiVersion": "s3.aws/v1", "kind": "Bucket", "metadata": {"name": "b", "labels": {"a": "1", "b.io/x": "2"}}, "spec": {"region": "eu", "tags": ["y", "z"]}}}}),
        ),
        (
            "PatchDesired refuses a patch that matches no desired resource",
            Given {
                input: Some(input(
                    "PatchDesired",
                    "items = [{metadata.name = \"b\"}, {metadata.name = \"missing\"}]",
                )),
                observed: Some(bare_xr()),
                desired_resources: vec![("b", bucket.clone())],
                ..Given::default()
            },
            json!({"fatal": "cannot process xr and state with the pipeline output in *v1.RunFunctionResponse: failed to match all resources, found 1 / 2 patches"}),
        ),
        (
            "PatchDesired grows an array to the index it writes",
            Given {
                input: Some(input(
                    "PatchDesired",
                    "items = [{metadata.name = \"b\", spec.tags = [\"x\", \"y\", \"c\"]}]",
                )),
                observed: Some(bare_xr()),
                desired_resources: vec![(
                    "b",
                    json!({"metadata": {"name": "b"}, "spec": {"tags": ["a", "b"]}}),
                )],
                ..Given::default()
            },
            json!({"resources": {"b": {"metadata": {"name": "b"}, "spec": {"tags": ["x", "y", "c"]}}}}),
        ),
        (
            "PatchResources patches the input's bases, named by the name annotation",
            Given {
                input: Some(json!({"spec": {"target": "PatchResources",
                    "resources": [{"name": "bucket", "base": {"apiVersion": "s3.aws/v1", "kind": "Bucket", "spec": {"region": "eu"}}}],
                    "source": "items = [{metadata.annotations = {\"krm.kcl.dev/composition-resource-name\": \"bucket\", \"krm.kcl.dev/ready\": \"False\"}, spec.region = option(\"params\").oxr.spec.region}]"}})),
                observed: Some(
                    json!({"apiVersion": "example.org/v1", "kind": "XR", "spec": {"region": "us"}}),
                ),
                ..Given::default()
            },
            // The ready annotation is patched onto the base, then taken off it.
            json!({"resources": {"bucket": {"apiVersion": "s3.aws/v1", "kind": "Bucket", "metadata": {"annotations": {}}, "spec": {"region": "us"}}}, "ready": {"bucket": "False"}}),
        ),
        (
            "PatchResources needs resources",
            Given {
                input: Some(json!({"spec": {"target": "PatchResources", "source": "a = 1"}})),
                ..Given::default()
            },
            json!({"fatal": "invalid function input: spec.Resources: Required value: PatchResources target requires at least one resource"}),
        ),
        (
            "PatchResources needs each resource's name",
            Given {
                input: Some(
                    json!({"spec": {"target": "PatchResources", "source": "a = 1", "resources": [{"base": {}}]}}),
                ),
                ..Given::default()
            },
            json!({"fatal": "invalid function input: spec.Resources[0].name: Required value: name cannot be empty"}),
        ),
        (
            "PatchResources needs each resource's base",
            Given {
                input: Some(
                    json!({"spec": {"target": "PatchResources", "source": "a = 1", "resources": [{"name": "x"}]}}),
                ),
                ..Given::default()
            },
            json!({"fatal": "invalid function input: spec.Resources[0].base: Required value: base cannot be empty"}),
        ),
        (
            "XR writes every leaf onto the desired composite, its apiVersion and kind included",
            Given {
                input: Some(input(
                    "XR",
                    "items = [{status.ready = True, metadata.annotations = {\"a.io/b\": \"c\"}}]",
                )),
                observed: Some(bare_xr()),
                desired: Some(json!({"status": {"old": 1}})),
                ..Given::default()
            },
            json!({"composite": {"apiVersion": "example.org/v1", "kind": "XR", "status": {"old": 1, "ready": true}, "metadata": {"annotations": {"a.io/b": "c"}}}}),
        ),
        (
            "an unknown target is the default one",
            Given {
                input: Some(input(
                    "Elsewhere",
                    "items = [{apiVersion: \"v1\", kind: \"A\", metadata.name = \"a\"}]",
                )),
                observed: Some(bare_xr()),
                ..Given::default()
            },
            json!({"resources": {"a": {"apiVersion": "v1", "kind": "A", "metadata": {"name": "a"}}}}),
        ),
        (
            "the default target merges an XR item's status into the desired one",
            Given {
                input: Some(input(
                    "Default",
                    "items = [{apiVersion: \"example.org/v1\", kind: \"XR\", status.a.c = 3, spec.ignored = 1}]",
                )),
                observed: Some(bare_xr()),
                desired: Some(json!({"status": {"a": {"b": 1}}})),
                ..Given::default()
            },
            json!({"composite": {"apiVersion": "example.org/v1", "kind": "XR", "status": {"a": {"b": 1, "c": 3}}}}),
        ),
        (
            "a ready annotation other than True, False or Unspecified is fatal",
            Given {
                input: Some(input(
                    "Default",
                    "items = [{apiVersion: \"v1\", kind: \"A\", metadata = {name = \"a\", annotations = {\"krm.kcl.dev/ready\": \"yes\"}}}]",
                )),
                observed: Some(bare_xr()),
                ..Given::default()
            },
            json!({"fatal": "cannot process xr and state with the pipeline output in *v1.RunFunctionResponse: invalid function input: invalid \"krm.kcl.dev/ready\" annotation value \"yes\": must be True, False, or Unspecified"}),
        ),
    ];
    for (name, given, want) in &cases {
        check(name, given, want);
    }
}

#[test]
fn the_output_is_read_as_upstream_reads_its_yaml_stream() {
    let cases: Vec<(&str, &str, Value)> = vec![
        (
            "null items are skipped",
            "items = [None, {apiVersion: \"v1\", kind: \"A\", metadata.name = \"a\"}]",
            json!({"a": {"apiVersion": "v1", "kind": "A", "metadata": {"name": "a"}}}),
        ),
        (
            "every document of a stream is an item",
            "[{apiVersion: \"v1\", kind: \"A\", metadata.name = \"a\"}, {apiVersion: \"v1\", kind: \"B\", metadata.name = \"b\"}]",
            json!({"a": {"apiVersion": "v1", "kind": "A", "metadata": {"name": "a"}}, "b": {"apiVersion": "v1", "kind": "B", "metadata": {"name": "b"}}}),
        ),
        (
            "a literal block ending an item other than the last loses its final newline",
            "items = [{metadata.name = \"a\", data = \"x\\ny\\n\"}, {metadata.name = \"b\", data = \"x\\ny\\n\"}]",
            json!({"a": {"metadata": {"name": "a"}, "data": "x\ny"}, "b": {"metadata": {"name": "b"}, "data": "x\ny\n"}}),
        ),
        (
            "a block string that is not an item's last value keeps its newline",
            "items = [{data = \"x\\ny\\n\", metadata.name = \"a\"}, {metadata.name = \"b\"}]",
            json!({"a": {"data": "x\ny\n", "metadata": {"name": "a"}}, "b": {"metadata": {"name": "b"}}}),
        ),
        (
            "empty annotations and metadata are dropped, as kyaml's writer drops them",
            "items = [{apiVersion: \"v1\", kind: \"A\", metadata.annotations = {}}]",
            json!({"": {"apiVersion": "v1", "kind": "A"}}),
        ),
        (
            "a KCLRun document of a stream is not an item",
            "[{apiVersion: \"krm.kcl.dev/v1alpha1\", kind: \"KCLRun\"}, {kind: \"A\", metadata.name = \"a\"}]",
            json!({"a": {"kind": "A", "metadata": {"name": "a"}}}),
        ),
        (
            "a List's items are the items",
            "kind = \"List\"\nitems = [{kind: \"A\", metadata.name = \"a\"}]",
            json!({"a": {"kind": "A", "metadata": {"name": "a"}}}),
        ),
    ];
    for (name, source, want) in &cases {
        let given = Given {
            input: Some(input("Resources", source)),
            observed: Some(bare_xr()),
            ..Given::default()
        };
        check(name, &given, &json!({"resources": want}));
    }
}

#[test]
fn params_and_options_hold_what_upstream_gives_a_program() {
    let mut request_context = Map::new();
    request_context.insert("z".into(), json!(1.0));
    request_context.insert("a".into(), json!({"y": 2, "b": 1.5}));
    let given = Given {
        input: Some(
            json!({"spec": {"source": "p = option(\"params\")\nitems = [{metadata.name = \"out\", keys = [k for k in p], ctx = p.ctx, ctxKeys = [k for k in p.ctx], dxr = p.dxr, user = p.user, dcds = p.dcds, ocds = p.ocds, fc = option(\"resource_list\").functionConfig.spec.target, items = option(\"items\"), path = option(\"PATH\"), env = option(\"env\")}]",
            "params": {"user": {"b": 2.0, "a": "x"}, "oxr": "replaced"}}}),
        ),
        observed: Some(json!({"kind": "XR", "apiVersion": "example.org/v1", "spec": {"n": 3.0}})),
        observed_resources: vec![("o", json!({"kind": "O"}))],
        desired: Some(json!({"apiVersion": "wrong/v0", "kind": "Wrong", "spec": {}})),
        desired_resources: vec![("d", json!({"kind": "D"}))],
        context: Some(Value::Object(request_context)),
        ..Given::default()
    };
    let mut request = given.request();
    request
        .observed
        .resources
        .get_mut("o")
        .unwrap()
        .connection_details = BTreeMap::from([("pw".to_string(), b"secret".to_vec())]);
    request.desired.resources.get_mut("d").unwrap().ready = Ready::True;
    let response = respond(&request, &given.fs());
    let out = &response.desired.resources["out"].resource;
    let expected = json!({
        "metadata": {"name": "out"},
        "keys": ["ctx", "dcds", "dxr", "extraResources", "ocds", "oxr", "requiredResources", "user"],
        "ctx": {"a": {"b": 1.5, "y": 2}, "z": 1},
        "ctxKeys": ["a", "z"],
        "dxr": {"apiVersion": "example.org/v1", "kind": "XR", "spec": {}},
        "user": {"a": "x", "b": 2},
        "dcds": {"d": {"Ready": "True", "Resource": {"kind": "D"}}},
        "ocds": {"o": {"ConnectionDetails": {"pw": "c2VjcmV0"}, "Resource": {"kind": "O"}}},
        "fc": "",
        "items": [],
        "path": "",
        "env": {},
    });
    assert_eq!(out, &expected);
    // Integral numbers reach KCL as ints: `2` prints as an int, not `2.0`.
    assert!(out["user"]["b"].is_i64(), "{out}");
}

#[test]
fn errors_and_unsupported_inputs_are_fatal_with_what_to_do() {
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "an unknown input field is refused as function-sdk-go refuses it",
            json!({"spec": {"source": "a = 1", "sourc": "x"}}),
            "cannot get Function input from *v1.RunFunctionRequest: cannot get function input *v1alpha1.KCLInput from *v1.RunFunctionRequest: cannot unmarshal JSON from *structpb.Struct into *v1alpha1.KCLInput: json: cannot unmarshal Go value of type v1alpha1.RunSpec: unknown name \"sourc\"",
        ),
        (
            "an empty source is refused",
            json!({"apiVersion": "krm.kcl.dev/v1alpha1", "kind": "KCLRun", "spec": {"source": ""}}),
            "invalid function input: spec.source: Required value: kcl source cannot be empty",
        ),
        (
            "a KCL error is wrapped as upstream wraps pipeline errors",
            json!({"spec": {"source": "assert False, \"stop here\""}}),
            "failed to run kcl function pipelines: ",
        ),
        (
            "an OCI source is not fetched",
            json!({"spec": {"source": "oci://ghcr.io/kcl-lang/crossplane-xnetwork"}}),
            "spec.source: \"oci://ghcr.io/kcl-lang/crossplane-xnetwork\" names an OCI KCL module, which the host did not fetch for this step",
        ),
        (
            "a git source is not fetched",
            json!({"spec": {"source": "github.com/kcl-lang/modules/x"}}),
            "spec.source: \"github.com/kcl-lang/modules/x\" names a git repository or URL, which plait does not fetch; publish the module to an OCI registry",
        ),
        (
            "a dependency the host did not fetch is named",
            json!({"spec": {"source": "a = 1", "dependencies": "k8s = \"1.28\""}}),
            "spec.dependencies.k8s: the host did not fetch this dependency for the step",
        ),
        (
            "a local path other than a granted directory is refused",
            json!({"spec": {"source": "./elsewhere"}}),
            "spec.source: the local path \"./elsewhere\" is not a directory granted to the function",
        ),
        (
            "an unsupported compile option is refused",
            json!({"spec": {"source": "a = 1", "config": {"overrides": ["a=2"]}}}),
            "spec.config.overrides: plait's built-in function-kcl does not support this option yet",
        ),
        (
            "a settings file that is not there fails as kcl-go's WithSettings fails",
            json!({"spec": {"source": "a = 1", "config": {"settings": ["kcl.yaml"]}}}),
            "failed to run kcl function pipelines: kcl.WithSettings(\"kcl.yaml\"): open /kcl.yaml: no such file or directory",
        ),
        (
            "with vendor a settings file that is not there fails as KCL's command line fails",
            json!({"spec": {"source": "a = 1", "config": {"vendor": true, "settings": ["kcl.yaml"]}}}),
            "failed to run kcl function pipelines: failed to load 'kcl.yaml', no such file or directory",
        ),
        (
            "items that are not a list are refused as kyaml refuses them",
            json!({"spec": {"source": "items = {a = 1}"}}),
            "failed to run kcl function pipelines: wrong node kind: expected SequenceNode but got MappingNode",
        ),
        (
            "an item that is not an object is refused",
            json!({"spec": {"source": "items = [1]"}}),
            "cannot parse data resources from the pipeline output in *v1.RunFunctionResponse: the KCL output's item 0 is not an object but a number",
        ),
    ];
    for (name, input, want) in cases {
        let given = Given {
            input: Some(input),
            observed: Some(bare_xr()),
            ..Given::default()
        };
        let response = given.respond();
        let fatal = response
            .results
            .iter()
            .find(|r| r.severity == Severity::Fatal)
            .unwrap_or_else(|| panic!("{name}: no fatal result: {:?}", response.results));
        assert!(
            fatal.message.starts_with(want),
            "{name}:\n got {}\nwant {want}",
            fatal.message
        );
        // The desired state is the request's when the step fails.
        assert_eq!(response.desired, given.request().desired, "{name}");
    }
}

#[test]
fn a_kcl_error_reads_as_kcls_api_reports_it_to_upstream() {
    // (program, the whole fatal message), as KCL 0.12.3's API words them.
    let cases = [
        (
            "a = 1\na = 2\n",
            "failed to run kcl function pipelines: error[E1001]: ImmutableError\n---> File prog.k:2:1: Can not change the value of 'a', because it was declared immutable\n\n---> File prog.k:1:1: The variable 'a' is declared here\nnote: change the variable name to '_a' to make it mutable\n\n",
        ),
        (
            "a = b\n",
            "failed to run kcl function pipelines: error[E2L23]: CompileError\n---> File prog.k:1:5: name 'b' is not defined\n\n",
        ),
        (
            "assert False, \"stop here\"\n",
            "failed to run kcl function pipelines: EvaluationError\n---> File prog.k:1: stop here\n\n",
        ),
    ];
    for (source, want) in cases {
        let given = Given {
            input: Some(input("", source)),
            ..Given::default()
        };
        let response = given.respond();
        assert_eq!(response.results[0].message, want, "{source}");
        assert_eq!(response.results[0].target, None::<Target>);
    }
}

/// Modules the host fetched (an `oci://` source at `/kcl/source`,
/// dependencies at `/kcl/deps/<name>`) run and are imported as kpm
/// resolves them: by the names `spec.dependencies` and the modules'
/// `kcl.mod` files give, in one namespace.
#[test]
fn modules_the_host_fetched_run_and_are_imported_where_it_grants_them() {
    let mut fs = MemoryFs::new();
    let files = [
        (
            "/kcl/source/kcl.mod",
            "[package]\nname = \"network\"\n\n[dependencies]\ncidrs = \"0.1.0\"\n",
        ),
        (
            "/kcl/source/main.k",
            "import cidrs\n\nitems = [{apiVersion = \"v1\", kind = \"ConfigMap\", metadata.name = \"cidrs\", data = {cidr = cidrs.cidr, base = cidrs.base_name}}]\n",
        ),
        (
            "/kcl/deps/cidrs/kcl.mod",
            "[package]\nname = \"cidrs\"\n[dependencies]\nbase = { oci = \"oci://r.io/base\", tag = \"1\" }\n",
        ),
        (
            "/kcl/deps/cidrs/cidrs.k",
            "import base\n\ncidr = \"10.0.0.0/16\"\nbase_name = base.name\n",
        ),
        ("/kcl/deps/base/kcl.mod", "[package]\nname = \"base\"\n"),
        ("/kcl/deps/base/base.k", "name = \"base-1\"\n"),
    ];
    for (path, text) in files {
        fs.insert(path, text);
    }
    let config_map = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cidrs"}, "data": data});
    let cases = [
        (
            "an oci:// source runs the module the host fetched, its kcl.mod's dependencies and theirs imported",
            json!({"spec": {"source": "oci://r.io/network:v1"}}),
            Ok(config_map(json!({"cidr": "10.0.0.0/16", "base": "base-1"}))),
        ),
        (
            "an inline source imports spec.dependencies",
            json!({"spec": {
                "dependencies": "cidrs = { oci = \"oci://r.io/cidrs\", tag = \"0.1.0\" }",
                "source": "import cidrs\nitems = [{apiVersion = \"v1\", kind = \"ConfigMap\", metadata.name = \"cidrs\", data.cidr = cidrs.cidr}]\n",
            }}),
            Ok(config_map(json!({"cidr": "10.0.0.0/16"}))),
        ),
        (
            "a path dependency names a granted directory",
            json!({"spec": {
                "dependencies": "b = { path = \"/kcl/deps/base\" }",
                "source": "import b\nitems = [{apiVersion = \"v1\", kind = \"ConfigMap\", metadata.name = \"cidrs\", data.base = b.name}]\n",
            }}),
            Ok(config_map(json!({"base": "base-1"}))),
        ),
        (
            "a path dependency outside the granted directories is named",
            json!({"spec": {"dependencies": "b = { path = \"/opt/base\" }", "source": "a = 1"}}),
            Err(
                "spec.dependencies.b: the path \"/opt/base\" is not a directory granted to the function; name the module in an OCI registry instead (b = { oci = \"oci://REGISTRY/REPOSITORY\", tag = \"TAG\" })",
            ),
        ),
        (
            "a dependency of the input the host did not fetch is named",
            json!({"spec": {"dependencies": "k8s = \"1.31\"", "source": "a = 1"}}),
            Err(
                "spec.dependencies.k8s: the host did not fetch this dependency for the step (plait fetches the OCI dependencies of a step whose input is krm.kcl.dev/v1alpha1 before the step runs, and grants them at /kcl/deps/k8s)",
            ),
        ),
    ];
    for (name, input, want) in cases {
        let given = Given {
            input: Some(input),
            observed: Some(bare_xr()),
            ..Given::default()
        };
        let response = respond(&given.request(), &fs);
        match want {
            Ok(resource) => {
                assert!(
                    response.results.is_empty(),
                    "{name}: {:?}",
                    response.results
                );
                assert_eq!(
                    response.desired.resources["cidrs"].resource, resource,
                    "{name}"
                );
            }
            Err(message) => assert_eq!(response.results[0].message, message, "{name}"),
        }
    }
}

/// Numbers as floats: the recording passes through protobuf's `Struct`,
/// which holds every number as a double.
fn numbers_as_floats(value: &Value) -> Value {
    match value {
        Value::Number(n) => n.as_f64().map_or(Value::Null, |f| json!(f)),
        Value::Array(items) => Value::Array(items.iter().map(numbers_as_floats).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), numbers_as_floats(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The cases of `testdata/config-cases.json`, each with what function-kcl
/// v0.12.2 gave on the real KCL (recorded by
/// `tests/corpus-kcl/record/record_config.py`).
#[test]
fn config_options_change_the_output_as_upstream_on_kcl_lib() {
    let doc: Value = serde_json::from_str(include_str!("../testdata/config-cases.json")).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert!(!cases.is_empty());
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let src: Vec<(&'static str, &'static str)> = case["src"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(path, text)| -> (&'static str, &'static str) {
                (
                    path.clone().leak(),
                    text.as_str().unwrap().to_string().leak(),
                )
            })
            .collect();
        let given = Given {
            input: Some(json!({
                "apiVersion": "krm.kcl.dev/v1alpha1",
                "kind": "KCLInput",
                "spec": case["spec"],
            })),
            observed: Some(doc["xr"].clone()),
            src,
            ..Given::default()
        };
        let got = summary(&given.respond());
        let want = &case["want"];
        assert!(want.is_object(), "{name}: not recorded");
        assert_eq!(got["fatal"], want["fatal"], "{name}: fatal\n{got:#}");
        assert_eq!(
            numbers_as_floats(&got["resources"]),
            numbers_as_floats(&want["resources"]),
            "{name}: resources"
        );
    }
}

#[test]
fn settings_files_asking_for_what_the_builtin_does_not_do_are_refused() {
    let cases = [
        (
            "kcl_cli_configs:\n  files: [main.k]\n",
            "kcl_cli_configs.files",
        ),
        (
            "kcl_cli_configs:\n  overrides: [a=1]\n",
            "kcl_cli_configs.overrides",
        ),
        (
            "kcl_cli_configs:\n  package_maps: {k8s: /vendor/k8s}\n",
            "kcl_cli_configs.package_maps",
        ),
    ];
    for (settings, what) in cases {
        let given = Given {
            input: Some(
                json!({"spec": {"source": "a = 1", "config": {"settings": ["src/kcl.yaml"]}}}),
            ),
            observed: Some(bare_xr()),
            src: vec![("kcl.yaml", settings)],
            ..Given::default()
        };
        let want = format!(
            "spec.config.settings: src/kcl.yaml sets {what}, which plait's built-in function-kcl does not support"
        );
        let fatal = summary(&given.respond())["fatal"].clone();
        assert!(
            fatal.as_str().is_some_and(|m| m.starts_with(&want)),
            "{what}: {fatal}"
        );
    }
}
