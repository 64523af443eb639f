//! The built-in function-sequencer, function-cidr, function-extra-resources
//! and function-status-transformer run as components: each answers a
//! request in the sandbox as its crate's own tests expect natively (the
//! sequencer's CEL condition included).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use plait_runtime::{Builtin, CallLimits, Runtime, RuntimeConfig};
use plait_sdk::{ConditionStatus, Ready, Request, Resource, Response, Severity, State};
use serde_json::{Value, json};

fn composite() -> Option<Resource> {
    Some(Resource::new(json!({
        "apiVersion": "example.org/v1", "kind": "XNetwork", "metadata": {"name": "net"},
        "spec": {"cidrBlock": "10.0.0.0/16", "zones": 2},
    })))
}

fn request(input: Value, resources: &[(&str, Value, Ready)]) -> Request {
    let resources = resources
        .iter()
        .map(|(name, object, ready)| {
            let resource = Resource {
                resource: object.clone(),
                ready: *ready,
                ..Resource::default()
            };
            (name.to_string(), resource)
        })
        .collect();
    Request {
        input: Some(input),
        observed: State {
            composite: composite(),
            resources: Default::default(),
        },
        desired: State {
            composite: composite(),
            resources,
        },
        ..Request::default()
    }
}

fn messages(response: &Response) -> Vec<(Severity, &str)> {
    response
        .results
        .iter()
        .map(|r| (r.severity, r.message.as_str()))
        .collect()
}

#[test]
fn ecosystem_builtins_answer_in_the_sandbox() {
    let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
    let vpc = json!({"apiVersion": "ec2.aws.upbound.io/v1beta1", "kind": "VPC"});
    let sequenced = |condition: &str| {
        request(
            json!({"apiVersion": "sequencer.fn.crossplane.io/v1beta1", "kind": "Input",
                   "rules": [{"sequence": ["vpc", "subnet-.*"], "condition": condition}]}),
            &[
                ("vpc", vpc.clone(), Ready::False),
                ("subnet-a", vpc.clone(), Ready::Unspecified),
            ],
        )
    };
    let mut extra = request(
        json!({"apiVersion": "extra-resources.fn.crossplane.io/v1beta1", "kind": "Input",
               "spec": {"extraResources": [{"apiVersion": "v1", "kind": "ConfigMap", "into": "settings",
                   "ref": {"name": "network"}}]}}),
        &[],
    );
    let settings =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "network"}});
    extra.required_resources = [("settings".to_string(), vec![settings.clone()])].into();
    let mut failing = vpc.clone();
    failing["status"] = json!({"conditions": [{"type": "Synced", "status": "False", "reason": "ReconcileError",
        "message": "create failed: quota exceeded"}]});
    let mut status = request(
        json!({"apiVersion": "function-status-transformer.fn.crossplane.io/v1beta1", "kind": "StatusTransformation",
               "statusConditionHooks": [{
                   "matchers": [{"resources": [{"name": "vpc"}], "conditions": [
                       {"type": "Synced", "status": "False", "message": "create failed: (?P<Error>.+)"}]}],
                   "setConditions": [{"condition": {"type": "NetworkReady", "status": "False",
                       "reason": "FailedToCreate", "message": "{{ .Error }}"}}]}]}),
        &[],
    );
    status.observed.resources = [("vpc".to_string(), Resource::new(failing))].into();

    type Check = fn(&Response);
    let cases: [(Builtin, Request, Check); 5] = [
        (
            Builtin::Sequencer,
            sequenced("observed.composite.resource.spec.zones == 2.0"),
            |r| {
                assert_eq!(r.desired.resources.keys().collect::<Vec<_>>(), ["vpc"]);
                assert_eq!(
                    messages(r),
                    [(
                        Severity::Normal,
                        "Delaying creation of resource(s) matching \"subnet-.*\" because \"vpc\" is not fully ready (0 of 1)"
                    )]
                );
            },
        ),
        (
            Builtin::Sequencer,
            sequenced("observed.composite.resource.spec.zones == 3.0"),
            |r| {
                assert_eq!(r.desired.resources.len(), 2);
                assert_eq!(
                    messages(r),
                    [(
                        Severity::Normal,
                        "Skipping sequence [vpc subnet-.*]: condition \"observed.composite.resource.spec.zones == 3.0\" evaluated to false"
                    )]
                );
            },
        ),
        (
            Builtin::Cidr,
            request(
                json!({"apiVersion": "cidr.fn.crossplane.io/v1beta1", "kind": "Parameters",
                "cidrFunc": "cidrsubnets", "prefixField": "spec.cidrBlock", "newBits": [8, 8]}),
                &[],
            ),
            |r| {
                let composite = &r.desired.composite.as_ref().unwrap().resource;
                assert_eq!(
                    composite["status"]["atFunction"]["cidr"],
                    json!(["10.0.0.0/24", "10.0.1.0/24"]),
                    "{:?}",
                    r.results
                );
            },
        ),
        (Builtin::ExtraResources, extra, |r| {
            assert!(messages(r).is_empty(), "{:?}", r.results);
            assert_eq!(
                r.context["apiextensions.crossplane.io/extra-resources"]["settings"][0]["metadata"]
                    ["name"],
                "network"
            );
        }),
        (Builtin::StatusTransformer, status, |r| {
            let set: Vec<(&str, ConditionStatus, Option<&str>)> = r
                .conditions
                .iter()
                .map(|c| (c.type_.as_str(), c.status, c.message.as_deref()))
                .collect();
            assert_eq!(
                set,
                [
                    (
                        "NetworkReady",
                        ConditionStatus::False,
                        Some("quota exceeded")
                    ),
                    ("StatusTransformationSuccess", ConditionStatus::True, None),
                ]
            );
        }),
    ];
    for (builtin, request, check) in cases {
        let module = runtime.builtin(builtin).unwrap();
        let output = runtime
            .call(&module, &request, &CallLimits::default())
            .unwrap();
        check(&output.response);
    }
}
