//! Three `plait controller --shards 4` replicas share the XRs: each holds
//! some of the shard Leases, every XR becomes Ready, and when one replica is
//! killed with SIGKILL its shards are taken over and its XRs keep
//! converging, none composed twice. Its own test binary, so these
//! controllers are the only ones running against the cluster.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::kube_support::{Controller, LogsOnFailure, ScaleApis, apply, apply_scale_fixture};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use plait_controlplane::ControlPlane;
use serde_json::{Value, json};

const REPLICAS: usize = 3;
const SHARDS: u32 = 4;
const XRS: usize = 60;
/// Generous for a busy 2-core machine running three debug controllers: a
/// dead replica's shards wait out their 15 s Leases first.
const TIMEOUT: Duration = Duration::from_secs(240);
const FIELD_MANAGER: &str = "shards-test";

/// Polls `check` until it returns `Some`, failing with `what` after [`TIMEOUT`].
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let started = Instant::now();
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(started.elapsed() < TIMEOUT, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The holder of each shard Lease, by shard name.
async fn holders(leases: &Api<Lease>) -> Option<BTreeMap<String, String>> {
    let list = leases.list(&ListParams::default()).await.ok()?;
    Some(
        list.items
            .into_iter()
            .filter_map(|lease| {
                let name = lease.metadata.name?;
                let holder = lease.spec?.holder_identity.filter(|h| !h.is_empty())?;
                name.starts_with("plait-shard-").then_some((name, holder))
            })
            .collect(),
    )
}

fn values(list: kube::core::ObjectList<DynamicObject>) -> Vec<Value> {
    list.items
        .into_iter()
        .map(|o| serde_json::to_value(o).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_the_shards_and_a_killed_ones_xrs_keep_converging() {
    let cluster = ControlPlane::shared().unwrap();
    let client = cluster.client().await;
    let namespace = cluster.namespace("shards").await;
    let dir = tempfile::tempdir().unwrap();
    let logs: Vec<_> = (0..REPLICAS)
        .map(|i| dir.path().join(format!("replica-{i}.log")))
        .collect();
    let _logs = LogsOnFailure(logs.clone());
    let mut replicas = Vec::new();
    for (i, log) in logs.iter().enumerate() {
        let extra = [
            format!("--shards={SHARDS}"),
            format!("--identity=replica-{i}"),
            format!("--leader-election-namespace={namespace}"),
        ];
        let cache = dir.path().join(format!("cache-{i}"));
        replicas.push(Some(Controller::start(
            cluster.kubeconfig(),
            &cache,
            log,
            &extra,
        )));
    }
    for replica in replicas.iter_mut().flatten() {
        replica.wait_ready().await;
    }
    apply_scale_fixture(&client, FIELD_MANAGER).await;
    let ScaleApis {
        kind,
        xrs,
        config_maps,
    } = ScaleApis::served(&client, &namespace, TIMEOUT).await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), &namespace);
    for i in 0..XRS {
        let xr = json!({
            "apiVersion": "scale.example.org/v1", "kind": "Bench",
            "metadata": {"name": format!("sharded-{i:02}"), "namespace": namespace},
            "spec": {"size": "small"}
        });
        apply(&client, &kind, &xr, FIELD_MANAGER).await;
    }

    // Every replica holds a share of the shards: with three replicas and
    // four shards, none holds more than two.
    let shared = eventually("every replica to hold a shard", || async {
        let holders = holders(&leases).await?;
        let mut per_replica: BTreeMap<&str, usize> = BTreeMap::new();
        for holder in holders.values() {
            *per_replica.entry(holder.as_str()).or_default() += 1;
        }
        (holders.len() == SHARDS as usize
            && per_replica.len() == REPLICAS
            && per_replica.values().all(|n| *n <= 2))
        .then_some(holders)
    })
    .await;
    let composed_with = |size: &'static str| {
        let config_maps = config_maps.clone();
        async move {
            let list = config_maps
                .list(&ListParams::default().labels("crossplane.io/composite"))
                .await
                .ok()?;
            let items = values(list);
            (items.len() == 3 * XRS && items.iter().all(|cm| cm["data"]["size"] == size))
                .then_some(items)
        }
    };
    eventually("every XR composed", || composed_with("small")).await;

    // Kill the holder of shard 0; change every XR. Its shards are taken
    // over and every XR converges again.
    let victim = shared["plait-shard-0"].clone();
    let index: usize = victim.trim_start_matches("replica-").parse().unwrap();
    let killed = replicas[index].take().unwrap().kill();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&killed),
        Some(9)
    );
    let large = json!({"spec": {"size": "large"}});
    for i in 0..XRS {
        xrs.patch(
            &format!("sharded-{i:02}"),
            &PatchParams::default(),
            &Patch::Merge(&large),
        )
        .await
        .unwrap();
    }
    let composed = eventually("every XR composed again, the killed replica's too", || {
        composed_with("large")
    })
    .await;
    let taken_over = eventually("the killed replica's shards taken over", || async {
        let holders = holders(&leases).await?;
        (holders.len() == SHARDS as usize && holders.values().all(|h| *h != victim))
            .then_some(holders)
    })
    .await;
    assert!(
        taken_over.values().collect::<BTreeSet<_>>().len() == REPLICAS - 1,
        "both survivors hold shards: {taken_over:?}"
    );

    // Nothing composed twice: one ConfigMap per XR and resource name.
    let mut seen = BTreeSet::new();
    for config_map in &composed {
        let owner = config_map["metadata"]["ownerReferences"][0]["uid"].clone();
        let name = config_map["metadata"]["annotations"]["crossplane.io/composition-resource-name"]
            .clone();
        assert!(
            seen.insert((owner.to_string(), name.to_string())),
            "composed twice: {}",
            config_map["metadata"]["name"]
        );
    }
    for xr in values(xrs.list(&ListParams::default()).await.unwrap()) {
        let ready = xr["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
        assert!(ready, "{} is not Ready", xr["metadata"]["name"]);
    }
}
