//! Tenants sharing one XRD get their turns: tenant A's XRs run a function
//! that loops until its deadline and keep the one function-call slot busy,
//! yet every XR tenant B creates beside them is composed and Ready within a
//! bound, and A's XRs report their deadline error (they are not starved
//! either). On a cluster of its own: the controller here has one call slot.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::{self, api, condition, create, resource};
use kube::api::{ListParams, PostParams};
use plait_controlplane::ControlPlane;
use plait_functions::Resolver;
use plait_kube::{Functions, Options};
use plait_runtime::{Runtime, RuntimeConfig};
use serde_json::{Value, json};

const LOOP_FUNCTION: &str = "fn-tenant-loop";
const A_XRS: usize = 24;
const B_XRS: usize = 12;
/// Each of B's XRs is Ready within this of its creation. B alone needs a
/// few seconds; A's calls hold the one slot for a second each, and before
/// tenants were scheduled fairly most of B's XRs got no status for minutes.
const B_BOUND: Duration = Duration::from_secs(45);

fn loop_guest() -> Vec<u8> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tenant-guests");
    let path = plait_guest_build::build_guest("plait-test-guest-infinite-loop", &root, &out)
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::read(path).unwrap()
}

fn composition(name: &str, pipeline: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.crossplane.io/v1",
        "kind": "Composition",
        "metadata": {"name": name},
        "spec": {
            "compositeTypeRef": {"apiVersion": "tenants.example.org/v1", "kind": "Shared"},
            "mode": "Pipeline",
            "pipeline": pipeline,
        }
    })
}

fn xr(namespace: &str, name: &str, composition: &str) -> Value {
    json!({
        "apiVersion": "tenants.example.org/v1", "kind": "Shared",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"size": "small", "crossplane": {"compositionRef": {"name": composition}}},
    })
}

fn message(xr: &Value, type_: &str) -> String {
    condition(xr, type_)
        .map(|c| format!("{}: {}", c["status"], c["message"].as_str().unwrap_or("")))
        .unwrap_or_else(|| "no condition".into())
}

#[tokio::test]
async fn a_tenant_whose_function_loops_does_not_keep_another_tenants_xrs_of_the_same_kind_waiting()
{
    let cluster = ControlPlane::dedicated().unwrap();
    let (_controller, ()) =
        support::start_controller_with(&cluster, Options::default(), |_| async {
            let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
            let looping = runtime.load(&loop_guest()).unwrap();
            let mut functions = Functions::builtins(runtime.clone()).with_call_slots(Some(1), None);
            functions.resolver =
                Arc::new(Resolver::builtins(runtime).with_local(LOOP_FUNCTION, looping));
            (functions, ())
        });
    let client = cluster.client().await;
    // The platform gives the looping function a 1 s deadline.
    plait_controlplane::apply(
        &client,
        &resource("pkg.crossplane.io/v1", "Function", "functions"),
        &json!({
            "apiVersion": "pkg.crossplane.io/v1", "kind": "Function",
            "metadata": {"name": LOOP_FUNCTION, "annotations": {"limits.plait.dev/deadline": "1s"}},
            "spec": {"package": "registry.example.com/fns/loop:v1"},
        }),
        "tenants-test",
    )
    .await;
    create(
        &client,
        &json!({
            "apiVersion": "apiextensions.crossplane.io/v2",
            "kind": "CompositeResourceDefinition",
            "metadata": {"name": "shareds.tenants.example.org"},
            "spec": {
                "group": "tenants.example.org",
                "names": {"kind": "Shared", "plural": "shareds"},
                "scope": "Namespaced",
                "versions": [{
                    "name": "v1", "served": true, "referenceable": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {"size": {"type": "string"}}}
                    }}}
                }]
            }
        }),
    )
    .await;
    let config_map = |name: &str| {
        json!({
            "name": name,
            "base": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"role": name}},
            "patches": [{"type": "FromCompositeFieldPath", "fromFieldPath": "spec.size", "toFieldPath": "data.size"}]
        })
    };
    create(
        &client,
        &composition(
            "ordinary",
            json!([
                {"step": "compose", "functionRef": {"name": "function-patch-and-transform"},
                 "input": {"apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources",
                           "resources": [config_map("a"), config_map("b"), config_map("c")]}},
                {"step": "ready", "functionRef": {"name": "function-auto-ready"}}
            ]),
        ),
    )
    .await;
    create(
        &client,
        &composition(
            "looping",
            json!([{"step": "loop", "functionRef": {"name": LOOP_FUNCTION}}]),
        ),
    )
    .await;
    let kind = resource("tenants.example.org/v1", "Shared", "shareds");
    support::eventually("the Shared kind to be served", || async {
        api(&client, &kind, None)
            .list(&ListParams::default())
            .await
            .ok()
            .map(|_| ())
    })
    .await;

    let tenant_a = cluster.namespace("tenant-a").await;
    let a_xrs = api(&client, &kind, Some(&tenant_a));
    for i in 0..A_XRS {
        let xr: kube::api::DynamicObject =
            serde_json::from_value(xr(&tenant_a, &format!("loop-{i:02}"), "looping")).unwrap();
        a_xrs.create(&PostParams::default(), &xr).await.unwrap();
    }
    // A's loops take the slot before B arrives.
    tokio::time::sleep(Duration::from_secs(3)).await;

    let tenant_b = cluster.namespace("tenant-b").await;
    let b_xrs = api(&client, &kind, Some(&tenant_b));
    let created = Instant::now();
    for i in 0..B_XRS {
        let xr: kube::api::DynamicObject =
            serde_json::from_value(xr(&tenant_b, &format!("ordinary-{i:02}"), "ordinary")).unwrap();
        b_xrs.create(&PostParams::default(), &xr).await.unwrap();
    }
    loop {
        let listed: Vec<Value> = b_xrs
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|x| serde_json::to_value(x).unwrap())
            .collect();
        let waiting: Vec<String> = listed
            .iter()
            .filter(|x| condition(x, "Ready").is_none_or(|c| c["status"] != "True"))
            .map(|x| format!("{} ({})", x["metadata"]["name"], message(x, "Synced")))
            .collect();
        if waiting.is_empty() {
            break;
        }
        assert!(
            created.elapsed() < B_BOUND,
            "{} of tenant B's {B_XRS} XRs not Ready {B_BOUND:?} after their creation, beside tenant A's looping XRs: {}",
            waiting.len(),
            waiting.join(", ")
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // A is not starved: each of its XRs ran and says why it is not synced.
    support::eventually("every XR of tenant A to report its deadline", || async {
        let listed = a_xrs.list(&ListParams::default()).await.ok()?;
        listed
            .items
            .iter()
            .map(|x| serde_json::to_value(x).unwrap())
            .all(|x| {
                condition(&x, "Synced").is_some_and(|c| {
                    c["status"] == "False"
                        && c["message"]
                            .as_str()
                            .is_some_and(|m| m.contains("deadline"))
                })
            })
            .then_some(())
    })
    .await;
    // A's calls keep reaching their deadline: its share is throttled, in the
    // metrics and in an event on its XRs.
    let throttle = support::metric_sum(
        &plait_kube::encoded_metrics(),
        "plait_tenant_call_throttle{",
        |line| line.contains(&format!("tenant=\"{tenant_a}\"")),
    );
    assert!(throttle > 1.0, "tenant A's throttle is {throttle}");
    let events = api(&client, &resource("v1", "Event", "events"), Some(&tenant_a));
    support::eventually("a CallsThrottled event in tenant A", || async {
        let listed = events.list(&ListParams::default()).await.ok()?;
        listed
            .items
            .iter()
            .any(|e| e.data["reason"] == "CallsThrottled")
            .then_some(())
    })
    .await;
}
