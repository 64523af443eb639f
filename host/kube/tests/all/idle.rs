//! XRs in sync cost nothing but their polls: a poll reconciles each XR,
//! which observes its composed resources from the watch cache, has its
//! built-in functions answered from the response cache and finds nothing
//! to apply or write; its XRD's poll writes nothing either. In a process of
//! its own, so the controller's metrics are this test's alone.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::support::{self, api, condition, create, metric_sum, resource};
use kube::api::{ListParams, PostParams};
use plait_controlplane::ControlPlane;
use serde_json::{Value, json};

const XRS: usize = 5;
const POLL: Duration = Duration::from_secs(2);
/// Long enough for the first reconciles after the XRs' last own writes to
/// settle on a busy 2-core machine.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(180);

/// What the controller has done so far, from its metrics.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Done {
    /// Writes of any object: creates, updates, patches and deletes.
    writes: f64,
    /// Reads of composed resources from the API server, rather than the watch cache.
    composed_reads: f64,
    function_calls: f64,
    cache_hits: f64,
    reconciles: f64,
}

/// The request counters that grew between two scrapes, as `series: +n`.
fn grown_requests(before: &str, after: &str) -> Vec<String> {
    let counts = |metrics: &str| -> std::collections::BTreeMap<String, f64> {
        metrics
            .lines()
            .filter(|l| l.starts_with("plait_api_requests_total{"))
            .filter_map(|l| {
                let (series, value) = l.rsplit_once(' ')?;
                Some((series.to_string(), value.parse().ok()?))
            })
            .collect()
    };
    let before = counts(before);
    counts(after)
        .into_iter()
        .filter_map(|(series, n)| {
            let grown = n - before.get(&series).copied().unwrap_or(0.0);
            (grown > 0.0).then(|| format!("{series}: +{grown}"))
        })
        .collect()
}

fn done() -> Done {
    let metrics = plait_kube::encoded_metrics();
    Done {
        writes: metric_sum(&metrics, "plait_api_requests_total{", |l| {
            ["create", "update", "patch", "delete"]
                .iter()
                .any(|verb| l.contains(&format!("verb=\"{verb}\"")))
        }),
        composed_reads: metric_sum(&metrics, "plait_api_requests_total{", |l| {
            l.contains("resource=\"configmaps\"") && !l.contains("verb=\"watch\"")
        }),
        function_calls: metric_sum(&metrics, "plait_function_calls_total", |_| true),
        cache_hits: metric_sum(&metrics, "plait_function_cache_hits_total{", |_| true),
        reconciles: metric_sum(&metrics, "plait_reconciles_total{", |l| {
            l.contains("kind=\"Bench\"")
        }),
    }
}

#[tokio::test]
async fn polls_of_xrs_in_sync_write_nothing_read_no_composed_resource_and_call_no_function() {
    if !support::in_own_process(
        "idle::polls_of_xrs_in_sync_write_nothing_read_no_composed_resource_and_call_no_function",
    ) {
        return;
    }
    let cluster = ControlPlane::shared().unwrap();
    let client = cluster.client().await;
    let namespace = cluster.namespace("idle").await;
    let _controller = support::start_builtins_polling(cluster, POLL);
    create(&client, &support::yaml("tests/fixtures/scale/xrd.yaml")).await;
    create(
        &client,
        &support::yaml("tests/fixtures/scale/composition.yaml"),
    )
    .await;
    let kind = resource("scale.example.org/v1", "Bench", "benches");
    let xrs = api(&client, &kind, Some(&namespace));
    support::eventually("the XRD's kind to be served", || async {
        xrs.list(&ListParams::default()).await.ok().map(|_| ())
    })
    .await;
    for i in 0..XRS {
        let xr = json!({
            "apiVersion": "scale.example.org/v1", "kind": "Bench",
            "metadata": {"name": format!("idle-{i}"), "namespace": namespace},
            "spec": {"size": "small"}
        });
        xrs.create(&PostParams::default(), &serde_json::from_value(xr).unwrap())
            .await
            .unwrap();
    }
    support::eventually("every XR to be Ready", || async {
        let list = xrs.list(&ListParams::default()).await.ok()?;
        let ready = list
            .items
            .into_iter()
            .map(|xr| serde_json::to_value(xr).unwrap())
            .filter(|xr: &Value| condition(xr, "Ready").is_some_and(|c| c["status"] == "True"))
            .count();
        (ready == XRS).then_some(())
    })
    .await;

    // Once settled, a window of several polls shows every XR reconciled
    // again and nothing else done.
    support::quiet_window(
        POLL * 4,
        SETTLE_TIMEOUT,
        || (done(), plait_kube::encoded_metrics()),
        |(before, scraped_before), (after, scraped_after)| {
            let quiet = after.writes == before.writes
                && after.composed_reads == before.composed_reads
                && after.function_calls == before.function_calls
                && after.reconciles >= before.reconciles + XRS as f64
                && after.cache_hits > before.cache_hits;
            match quiet {
                true => Ok(()),
                false => Err(format!(
                    "{before:?} -> {after:?}, requests grown: {:?}",
                    grown_requests(scraped_before, scraped_after)
                )),
            }
        },
    )
    .await;
}
