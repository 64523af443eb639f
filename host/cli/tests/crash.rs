//! `plait controller` killed with SIGKILL in the middle of a rollout, then
//! started again: every XR becomes Ready with exactly the resources it
//! composes, none orphaned and none composed twice. Its own test binary, so
//! the controllers here are the only ones running against the cluster.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::kube_support::{
    Controller, LogsOnFailure, ScaleApis, apply, apply_scale_fixture, composition_problems, tail,
};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams};
use plait_controlplane::ControlPlane;
use serde_json::{Value, json};

const XRS: usize = 300;
/// The controller is killed once this many XRs are Ready.
const READY_AT_KILL: usize = XRS / 2;
/// Generous for a busy 2-core machine running a debug build.
const TIMEOUT: Duration = Duration::from_secs(300);
const FIELD_MANAGER: &str = "crash-test";
const COMPOSITE_LABEL: &str = "crossplane.io/composite";

fn is_ready(xr: &Value) -> bool {
    xr["status"]["conditions"].as_array().is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

async fn list(api: &Api<DynamicObject>, params: &ListParams) -> Option<Vec<Value>> {
    // A busy API server may time a LIST out; the caller polls again.
    let list = api.list(params).await.ok()?;
    Some(
        list.items
            .into_iter()
            .map(|o| serde_json::to_value(o).unwrap())
            .collect(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_killed_mid_rollout_leaves_no_orphan_or_duplicate_after_restart() {
    let cluster = ControlPlane::shared().unwrap();
    let client = cluster.client().await;
    let namespace = cluster.namespace("crash").await;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let logs = [dir.path().join("first.log"), dir.path().join("second.log")];
    let _logs = LogsOnFailure(logs.to_vec());

    let mut first = Controller::start(cluster.kubeconfig(), &cache, &logs[0], &[]);
    first.wait_ready().await;
    apply_scale_fixture(&client, FIELD_MANAGER).await;
    let ScaleApis {
        kind,
        xrs,
        config_maps,
    } = ScaleApis::served(&client, &namespace, TIMEOUT).await;
    let composed = ListParams::default().labels(COMPOSITE_LABEL);

    // Create the XRs while the controller runs; kill it once half are Ready,
    // whether or not every XR exists yet.
    let creating = {
        let (client, kind, namespace) = (client.clone(), kind.clone(), namespace.clone());
        tokio::spawn(async move {
            for i in 0..XRS {
                let xr = json!({
                    "apiVersion": "scale.example.org/v1", "kind": "Bench",
                    "metadata": {"name": format!("crash-{i:03}"), "namespace": namespace},
                    "spec": {"size": "small"}
                });
                apply(&client, &kind, &xr, FIELD_MANAGER).await;
            }
        })
    };
    let created = Instant::now();
    let (ready_at_kill, existing_at_kill) = loop {
        if let Some(listed) = list(&xrs, &ListParams::default()).await {
            let ready = listed.iter().filter(|xr| is_ready(xr)).count();
            if ready >= READY_AT_KILL {
                break (ready, listed.len());
            }
        }
        assert!(
            created.elapsed() < TIMEOUT,
            "fewer than {READY_AT_KILL} XRs Ready after {TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let status = first.kill();
    let killed_after = created.elapsed();
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9), "killed by SIGKILL: {status}");
    }
    // What the crash left behind, for the report.
    let composed_at_kill = list(&config_maps, &composed).await.map(|c| c.len());
    let listed = list(&xrs, &ListParams::default()).await.unwrap_or_default();
    let referencing_at_kill = listed
        .iter()
        .filter(|xr| {
            xr["spec"]["crossplane"]["resourceRefs"]
                .as_array()
                .is_some()
        })
        .count();
    println!(
        "killed after {:.1} s: {ready_at_kill} of {existing_at_kill} existing XRs Ready, \
         {referencing_at_kill} with resource references, {composed_at_kill:?} ConfigMaps composed",
        killed_after.as_secs_f64()
    );
    creating.await.unwrap();

    let restarted = Instant::now();
    let mut second = Controller::start(cluster.kubeconfig(), &cache, &logs[1], &[]);
    second.wait_ready().await;
    let mut ready = 0;
    loop {
        if let Some(listed) = list(&xrs, &ListParams::default()).await {
            ready = listed.iter().filter(|xr| is_ready(xr)).count();
            if listed.len() == XRS && ready == XRS {
                break;
            }
        }
        assert!(
            restarted.elapsed() < TIMEOUT,
            "{ready} of {XRS} XRs Ready {TIMEOUT:?} after the restart"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let converged = restarted.elapsed();
    println!(
        "after the restart all {XRS} XRs were Ready in {:.1} s",
        converged.as_secs_f64()
    );
    // A reconcile still in flight would show a late duplicate.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let xrs_now = list(&xrs, &ListParams::default()).await.unwrap();
    assert_eq!(xrs_now.len(), XRS);
    let composed = list(&config_maps, &composed).await.unwrap();

    let problems = composition_problems(&xrs_now, &composed, 3);
    assert!(
        problems.is_empty(),
        "{} problems after the restart:\n{}",
        problems.len(),
        problems.join("\n")
    );
    assert_eq!(
        composed.len(),
        3 * XRS,
        "no duplicate, none missing, none orphaned"
    );

    // PLAIT_LOG=warn: every line a controller wrote is a warning or an error.
    for (which, log) in ["before the kill", "after the restart"].iter().zip(&logs) {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        println!(
            "controller log {which}: {} lines at warn or above{}",
            text.lines().count(),
            if text.is_empty() {
                String::new()
            } else {
                format!(", ending\n{}", tail(log, 10))
            }
        );
    }
    drop(second);
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .delete(&namespace, &DeleteParams::default())
        .await
        .unwrap();
}
