//! A controller started over a backlog: XRs that exist before it runs, as
//! after an upgrade or a move from Crossplane, and XRs created while it
//! starts, all become Ready within a bound, each with exactly the resources
//! it composes. On a cluster of its own, so the controller here is the only
//! one and starts after the XRs exist.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use crate::support::{self, api, condition, create, resource};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use plait_controlplane::ControlPlane;
use plait_kube::Functions;
use plait_model::{CompositeResourceDefinition, Manifest};
use plait_runtime::{Runtime, RuntimeConfig};
use serde_json::{Value, json};

/// XRs created before the controller starts.
const BEFORE: usize = 200;
/// XRs created while it starts.
const DURING: usize = 50;
const XRS: usize = BEFORE + DURING;
/// Every XR is Ready within this of the controller's start. The backlog
/// drains in 25–40 s on a 2-core machine; a reconcile held up until it is
/// abandoned (150 s) fails the test.
const BACKLOG_BOUND: Duration = Duration::from_secs(120);

/// Serves the XR kind the way the controller would, before any controller
/// runs; `xrd` as stored (its UID owns the CRD).
async fn serve_xr_kind(client: &kube::Client, xrd: &Value) {
    let definition = CompositeResourceDefinition::from_value(xrd.clone()).unwrap();
    let crd = plait_model::crd::composite_crd(&definition).unwrap();
    let name = crd["metadata"]["name"].as_str().unwrap().to_string();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.patch(
        &name,
        &PatchParams::apply("backlog-test").force(),
        &Patch::Apply(&crd),
    )
    .await
    .unwrap();
    support::eventually("the XR CRD to be established", || async {
        let crd = crds.get_opt(&name).await.ok()??;
        crd.status?
            .conditions?
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_controller_started_over_existing_xrs_makes_them_all_ready() {
    let cluster = ControlPlane::dedicated().unwrap();
    let client = cluster.client().await;
    let namespace = cluster.namespace("backlog").await;
    plait_kube::install_crds(&client, support::TIMEOUT)
        .await
        .unwrap();
    let xrd = create(&client, &support::yaml("tests/fixtures/scale/xrd.yaml")).await;
    create(
        &client,
        &support::yaml("tests/fixtures/scale/composition.yaml"),
    )
    .await;
    serve_xr_kind(&client, &xrd).await;
    let kind = resource("scale.example.org/v1", "Bench", "benches");
    let xrs = api(&client, &kind, Some(&namespace));
    let xr = |i: usize| {
        json!({
            "apiVersion": "scale.example.org/v1", "kind": "Bench",
            "metadata": {"name": format!("backlog-{i:03}"), "namespace": namespace},
            "spec": {"size": "small"}
        })
    };
    for i in 0..BEFORE {
        xrs.create(
            &PostParams::default(),
            &serde_json::from_value(xr(i)).unwrap(),
        )
        .await
        .unwrap();
    }

    let (_controller, ()) = support::start_controller(&cluster, |_| async {
        (
            Functions::builtins(Runtime::new(RuntimeConfig::default()).unwrap()),
            (),
        )
    });
    let started = Instant::now();
    for i in BEFORE..XRS {
        xrs.create(
            &PostParams::default(),
            &serde_json::from_value(xr(i)).unwrap(),
        )
        .await
        .unwrap();
    }
    let ready = loop {
        let list = xrs.list(&ListParams::default()).await.unwrap();
        let (ready, waiting): (Vec<Value>, Vec<Value>) = list
            .items
            .into_iter()
            .map(|xr| serde_json::to_value(xr).unwrap())
            .partition(|xr| condition(xr, "Ready").is_some_and(|c| c["status"] == "True"));
        if ready.len() == XRS {
            break ready;
        }
        assert!(
            started.elapsed() < BACKLOG_BOUND,
            "{} of {XRS} XRs Ready {BACKLOG_BOUND:?} after the controller started; the others: {:#}",
            ready.len(),
            Value::Array(
                waiting
                    .iter()
                    .map(|xr| json!({"name": xr["metadata"]["name"], "spec": xr["spec"], "status": xr["status"]}))
                    .collect()
            )
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };

    for xr in &ready {
        let refs = xr["spec"]["crossplane"]["resourceRefs"].as_array();
        assert_eq!(refs.map(Vec::len), Some(3), "{}", xr["metadata"]["name"]);
    }
    let config_maps = api(
        &client,
        &resource("v1", "ConfigMap", "configmaps"),
        Some(&namespace),
    );
    let composed = config_maps
        .list(&ListParams::default().labels("crossplane.io/composite"))
        .await
        .unwrap();
    assert_eq!(composed.items.len(), 3 * XRS, "no duplicate, none missing");
}
