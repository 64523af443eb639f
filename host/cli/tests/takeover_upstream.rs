//! plait replacing a running upstream Crossplane core v2.3.4, and upstream
//! replacing plait, on one real API server: upstream composes legacy
//! cluster-scoped XRs through their claims (an apiextensions v1 XRD with
//! `claimNames`), each with a connection Secret its claim's Secret copies,
//! and v2 namespaced XRs; then each controller is stopped in turn and the
//! other started. Watches started before each switch count what the
//! incoming controller writes: composed resources and connection Secrets
//! created, deleted and updated (by field), XRs' and claims' Ready flips,
//! and CompositionRevisions created.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::kube_support::{Controller, LogsOnFailure, apply, is_ready, resource};
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, WatchEvent, WatchParams};
use plait_controlplane::{ControlPlane, UpstreamCrossplane};
use serde_json::{Value, json};

/// XRs of each kind: claimed legacy XRs, and namespaced XRs.
const XRS_PER_KIND: usize = 50;
/// The type of the Secrets XRs and claims write their connection details to.
const CONNECTION_SECRET_TYPE: &str = "connection.crossplane.io/v1alpha1";
const COMPOSED_PER_XR: usize = 2;
const FIELD_MANAGER: &str = "platform";
const READY_TIMEOUT: Duration = Duration::from_secs(300);
/// Both controllers' poll interval: shorter than their default (60 s), so
/// the test sees a poll of every XR sooner; what a poll would churn it
/// churns at any interval.
const POLL_INTERVAL: &str = "20s";
/// How long the incoming controller is watched: past its first reconcile of
/// every XR and one poll interval, until nothing changed for [`QUIET`].
const OBSERVE_AT_LEAST: Duration = Duration::from_secs(35);
const QUIET: Duration = Duration::from_secs(10);
const OBSERVE_AT_MOST: Duration = Duration::from_secs(240);

/// What the incoming controller may write to an object that exists, as
/// (kind, changed path prefix, why). Anything else it writes fails the test.
const EXPECTED_UPDATES: &[(&str, &str, &str)] = &[
    (
        "CompositionRevisions",
        "metadata.annotations.functions.plait.dev/digests",
        "plait adopts upstream's revision of each Composition by recording the \
         digests its steps' Functions resolve to, instead of making a revision",
    ),
    (
        "CompositionRevisions",
        "metadata.managedFields[plait Update]",
        "the field manager of that annotation",
    ),
    (
        "Legacy claims",
        "metadata.managedFields[apiextensions.crossplane.io/claim Apply",
        "plait's claim syncer server-side applies the references the claim \
         records (spec.compositionRef, spec.compositionRevisionRef, \
         spec.resourceRef) and its status as upstream's claim field manager; \
         upstream wrote them by update as crossplane-core, so the values are \
         unchanged and only the managed-fields entries are new",
    ),
];

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/../../tests/fixtures/takeover/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// What one kind is to the count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Composed resources and connection Secrets: none may be created or deleted.
    Composed,
    /// An XR or a claim: its Ready flips are counted.
    Composite,
    Revision,
}

#[derive(Debug, Default, Clone)]
struct Tally {
    created: usize,
    deleted: usize,
    updated: usize,
    /// Field paths each update changed, with how many updates changed each.
    fields: BTreeMap<String, usize>,
    ready_flips: usize,
}

/// Watches of every counted kind, each from a list taken when it starts.
struct Observer {
    tallies: Arc<Mutex<BTreeMap<&'static str, (Role, Tally)>>>,
    last_event: Arc<Mutex<Instant>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Observer {
    async fn start(
        client: &kube::Client,
        kinds: &[(&'static str, Role, ApiResource, ListParams)],
    ) -> Self {
        let mut observer = Observer {
            tallies: Arc::default(),
            last_event: Arc::new(Mutex::new(Instant::now())),
            tasks: Vec::new(),
        };
        for (label, role, kind, params) in kinds {
            observer
                .tallies
                .lock()
                .unwrap()
                .insert(label, (*role, Tally::default()));
            let api: Api<DynamicObject> = Api::all_with(client.clone(), kind);
            let list = api.list(params).await.unwrap();
            let mut seen: BTreeMap<String, Value> = list
                .items
                .iter()
                .map(|o| {
                    (
                        o.metadata.uid.clone().unwrap(),
                        serde_json::to_value(o).unwrap(),
                    )
                })
                .collect();
            let mut version = list.metadata.resource_version.unwrap();
            let tallies = observer.tallies.clone();
            let last_event = observer.last_event.clone();
            let label = *label;
            let role = *role;
            let params = params.clone();
            observer.tasks.push(tokio::spawn(async move {
                let mut watch = WatchParams::default().timeout(290);
                if let Some(selector) = params.label_selector.as_deref() {
                    watch = watch.labels(selector);
                }
                if let Some(selector) = params.field_selector.as_deref() {
                    watch = watch.fields(selector);
                }
                loop {
                    let mut stream = api.watch(&watch, &version).await.unwrap().boxed();
                    while let Some(event) = stream.next().await {
                        let event = event.unwrap();
                        let mut tallies = tallies.lock().unwrap();
                        let tally = &mut tallies.get_mut(label).unwrap().1;
                        let (object, previous) = match &event {
                            WatchEvent::Added(o) => {
                                tally.created += 1;
                                (o, None)
                            }
                            WatchEvent::Modified(o) => {
                                let uid = o.metadata.uid.clone().unwrap();
                                (o, seen.get(&uid).cloned())
                            }
                            WatchEvent::Deleted(o) => {
                                tally.deleted += 1;
                                (o, None)
                            }
                            WatchEvent::Bookmark(b) => {
                                version = b.metadata.resource_version.clone();
                                continue;
                            }
                            WatchEvent::Error(e) => panic!("watching {label}: {e}"),
                        };
                        *last_event.lock().unwrap() = Instant::now();
                        version = object.metadata.resource_version.clone().unwrap();
                        let uid = object.metadata.uid.clone().unwrap();
                        let now = serde_json::to_value(object).unwrap();
                        if let Some(before) = previous {
                            tally.updated += 1;
                            let mut paths = BTreeSet::new();
                            changed_paths(&before, &now, "", &mut paths);
                            for path in paths {
                                *tally.fields.entry(path).or_default() += 1;
                            }
                            if role == Role::Composite && ready(&before) != ready(&now) {
                                tally.ready_flips += 1;
                            }
                        }
                        if matches!(event, WatchEvent::Deleted(_)) {
                            seen.remove(&uid);
                        } else {
                            seen.insert(uid, now);
                        }
                    }
                }
            }));
        }
        observer
    }

    /// The counts since the last call, and a fresh start.
    fn take(&self) -> BTreeMap<&'static str, (Role, Tally)> {
        let mut tallies = self.tallies.lock().unwrap();
        let taken = tallies.clone();
        for (_, tally) in tallies.values_mut() {
            *tally = Tally::default();
        }
        taken
    }

    fn quiet_for(&self) -> Duration {
        self.last_event.lock().unwrap().elapsed()
    }

    /// Waits at least `OBSERVE_AT_LEAST`, then until nothing changed for `QUIET`.
    async fn settle(&self) {
        let started = Instant::now();
        while started.elapsed() < OBSERVE_AT_LEAST
            || (self.quiet_for() < QUIET && started.elapsed() < OBSERVE_AT_MOST)
        {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

fn ready(object: &Value) -> Option<String> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")
        .and_then(|c| c["status"].as_str())
        .map(str::to_string)
}

/// The paths at which `before` and `after` differ, `metadata.resourceVersion`
/// aside; conditions by type and managed fields by manager, operation and
/// subresource.
fn changed_paths(before: &Value, after: &Value, path: &str, out: &mut BTreeSet<String>) {
    if before == after {
        return;
    }
    let join = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    let empty = Value::Object(serde_json::Map::new());
    let (before, after) = match (before, after) {
        (Value::Null, Value::Object(_)) => (&empty, after),
        (Value::Object(_), Value::Null) => (before, &empty),
        _ => (before, after),
    };
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            let keys: BTreeSet<&String> = b.keys().chain(a.keys()).collect();
            for key in keys {
                let here = join(key);
                let (old, new) = (
                    b.get(key).unwrap_or(&Value::Null),
                    a.get(key).unwrap_or(&Value::Null),
                );
                match here.as_str() {
                    "metadata.resourceVersion" => {}
                    "metadata.managedFields" => keyed(old, new, &here, managed_field_key, out),
                    "status.conditions" => keyed(old, new, &here, condition_key, out),
                    _ => changed_paths(old, new, &here, out),
                }
            }
        }
        _ => {
            out.insert(path.to_string());
        }
    }
}

fn managed_field_key(entry: &Value) -> String {
    let text = |k: &str| entry[k].as_str().unwrap_or("").to_string();
    let subresource = text("subresource");
    if subresource.is_empty() {
        format!("{} {}", text("manager"), text("operation"))
    } else {
        format!("{} {} {subresource}", text("manager"), text("operation"))
    }
}

fn condition_key(condition: &Value) -> String {
    condition["type"].as_str().unwrap_or("").to_string()
}

/// Differences between two lists whose entries `key` identifies.
fn keyed(
    before: &Value,
    after: &Value,
    path: &str,
    key: fn(&Value) -> String,
    out: &mut BTreeSet<String>,
) {
    let index = |list: &Value| -> BTreeMap<String, Value> {
        list.as_array()
            .into_iter()
            .flatten()
            .map(|entry| (key(entry), entry.clone()))
            .collect()
    };
    let (b, a) = (index(before), index(after));
    let keys: BTreeSet<&String> = b.keys().chain(a.keys()).collect();
    for k in keys {
        let here = format!("{path}[{k}]");
        match (b.get(k), a.get(k)) {
            (Some(old), Some(new)) => changed_paths(old, new, &here, out),
            (None, Some(_)) => {
                out.insert(format!("{here} added"));
            }
            (Some(_), None) => {
                out.insert(format!("{here} removed"));
            }
            (None, None) => {}
        }
    }
}

fn report(switch: &str, tallies: &BTreeMap<&'static str, (Role, Tally)>) -> String {
    let mut text = format!("{switch}:\n");
    for (label, (_, tally)) in tallies {
        text.push_str(&format!(
            "  {label}: {} created, {} deleted, {} updated, {} Ready flips\n",
            tally.created, tally.deleted, tally.updated, tally.ready_flips
        ));
        for (field, count) in &tally.fields {
            text.push_str(&format!("    {field}: {count}\n"));
        }
    }
    text
}

/// Everything the incoming controller wrote that the takeover must not write.
fn churn(tallies: &BTreeMap<&'static str, (Role, Tally)>) -> Vec<String> {
    let mut churn = Vec::new();
    for (label, (role, tally)) in tallies {
        if *role == Role::Composed && (tally.created, tally.deleted) != (0, 0) {
            churn.push(format!(
                "{label}: {} created, {} deleted",
                tally.created, tally.deleted
            ));
        }
        if *role == Role::Revision && tally.created != 0 {
            churn.push(format!("{label}: {} created", tally.created));
        }
        if tally.ready_flips != 0 {
            churn.push(format!("{label}: {} Ready flips", tally.ready_flips));
        }
        for field in tally.fields.keys() {
            let expected = EXPECTED_UPDATES
                .iter()
                .any(|(kind, prefix, _)| kind == label && field.starts_with(prefix));
            if !expected {
                churn.push(format!("{label}: {field} changed"));
            }
        }
    }
    churn
}

async fn wait_all_ready(apis: &[(&str, Api<DynamicObject>)]) {
    let started = Instant::now();
    loop {
        let mut pending = Vec::new();
        for (label, api) in apis {
            let items = api.list(&ListParams::default()).await.unwrap().items;
            let ready = items.iter().filter(|o| is_ready(o)).count();
            if items.len() < XRS_PER_KIND || ready < items.len() {
                pending.push(format!("{label}: {ready}/{} Ready", items.len()));
            }
        }
        if pending.is_empty() {
            return;
        }
        assert!(
            started.elapsed() < READY_TIMEOUT,
            "upstream never made every XR and claim Ready: {pending:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Waits until every legacy XR and every claim has its connection Secret,
/// holding both keys.
async fn wait_for_connection_secrets(secrets: &Api<DynamicObject>, params: &ListParams) {
    let started = Instant::now();
    loop {
        let items = secrets.list(params).await.unwrap().items;
        let complete = items
            .iter()
            .filter(|s| {
                s.data["data"].get("size").is_some() && s.data["data"].get("role").is_some()
            })
            .count();
        if complete >= 2 * XRS_PER_KIND {
            assert_eq!(
                items.len(),
                2 * XRS_PER_KIND,
                "one Secret per legacy XR and per claim"
            );
            return;
        }
        assert!(
            started.elapsed() < READY_TIMEOUT,
            "upstream never wrote every connection Secret: {complete} of {}",
            2 * XRS_PER_KIND
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn served(api: &Api<DynamicObject>, what: &str) {
    let started = Instant::now();
    while api.list(&ListParams::default()).await.is_err() {
        assert!(started.elapsed() < READY_TIMEOUT, "{what} is never served");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn start_plait(cluster: &ControlPlane, scratch: &Path) -> Controller {
    Controller::start(
        cluster.kubeconfig(),
        &scratch.join("cache"),
        &scratch.join("plait.log"),
        &["--poll-interval".to_string(), POLL_INTERVAL.to_string()],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plait_takes_over_from_upstream_crossplane_and_hands_back_without_churn() {
    let cluster = ControlPlane::shared().unwrap();
    let client = cluster.client().await;
    let scratch = tempfile::tempdir().unwrap();
    let mut upstream = UpstreamCrossplane::install(cluster).await.unwrap();
    let mut logs = upstream.logs();
    logs.push(scratch.path().join("plait.log"));
    let _logs = LogsOnFailure(logs);
    upstream
        .start_core(&[&format!("--poll-interval={POLL_INTERVAL}")])
        .await
        .unwrap();

    let compositions = resource(
        "apiextensions.crossplane.io/v1",
        "Composition",
        "compositions",
    );
    let revisions = resource(
        "apiextensions.crossplane.io/v1",
        "CompositionRevision",
        "compositionrevisions",
    );
    let legacy_xr = resource("takeover.example.org/v1alpha1", "XLegacy", "xlegacies");
    let claim = resource("takeover.example.org/v1alpha1", "Legacy", "legacies");
    let namespaced_xr = resource("takeover.example.org/v1alpha1", "XApp", "xapps");
    let config_maps = resource("v1", "ConfigMap", "configmaps");
    for name in ["legacy-xrd.yaml", "namespaced-xrd.yaml"] {
        let xrd = fixture(name);
        let xrds = resource(
            xrd["apiVersion"].as_str().unwrap(),
            "CompositeResourceDefinition",
            "compositeresourcedefinitions",
        );
        apply(&client, &xrds, &xrd, FIELD_MANAGER).await;
    }
    for name in ["legacy-composition.yaml", "namespaced-composition.yaml"] {
        apply(&client, &compositions, &fixture(name), FIELD_MANAGER).await;
    }

    let namespace = cluster.namespace("takeover").await;
    let claims: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &claim);
    let apps: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &namespaced_xr);
    served(&claims, "the Legacy claim kind").await;
    served(&apps, "the XApp kind").await;
    for i in 0..XRS_PER_KIND {
        for (kind, api_kind) in [(&claim, "Legacy"), (&namespaced_xr, "XApp")] {
            let mut spec = json!({"size": format!("{i}")});
            if api_kind == "Legacy" {
                spec["writeConnectionSecretToRef"] =
                    json!({"name": format!("legacy-{i}-connection")});
            }
            let object = json!({
                "apiVersion": "takeover.example.org/v1alpha1",
                "kind": api_kind,
                "metadata": {"name": format!("{}-{i}", api_kind.to_lowercase()), "namespace": namespace},
                "spec": spec,
            });
            apply(&client, kind, &object, FIELD_MANAGER).await;
        }
    }
    let legacy_xrs: Api<DynamicObject> = Api::all_with(client.clone(), &legacy_xr);
    wait_all_ready(&[
        ("Legacy claims", claims.clone()),
        ("XLegacy XRs", legacy_xrs.clone()),
        ("XApp XRs", apps.clone()),
    ])
    .await;
    let secrets = resource("v1", "Secret", "secrets");
    let connection_secrets =
        ListParams::default().fields(&format!("type={CONNECTION_SECRET_TYPE}"));
    let connection: Api<DynamicObject> = Api::all_with(client.clone(), &secrets);
    wait_for_connection_secrets(&connection, &connection_secrets).await;
    let composed: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &namespace, &config_maps);
    let composed_count = composed
        .list(&ListParams::default().labels("crossplane.io/composite"))
        .await
        .unwrap()
        .items
        .len();
    assert_eq!(composed_count, 2 * XRS_PER_KIND * COMPOSED_PER_XR);

    let everything = ListParams::default();
    let observer = Observer::start(
        &client,
        &[
            (
                "composed ConfigMaps",
                Role::Composed,
                config_maps,
                ListParams::default().labels("crossplane.io/composite"),
            ),
            (
                "connection Secrets",
                Role::Composed,
                secrets,
                connection_secrets,
            ),
            (
                "XLegacy XRs",
                Role::Composite,
                legacy_xr,
                everything.clone(),
            ),
            ("Legacy claims", Role::Composite, claim, everything.clone()),
            (
                "XApp XRs",
                Role::Composite,
                namespaced_xr,
                everything.clone(),
            ),
            (
                "CompositionRevisions",
                Role::Revision,
                revisions,
                everything,
            ),
        ],
    )
    .await;
    // Upstream idle: whatever it still writes is not the takeover's.
    while observer.quiet_for() < QUIET {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    upstream.stop_core().unwrap();
    observer.take();

    let mut plait = start_plait(cluster, scratch.path());
    plait.wait_ready().await;
    observer.settle().await;
    let to_plait = observer.take();
    let to_plait_report = report("upstream Crossplane -> plait", &to_plait);
    eprintln!("{to_plait_report}");

    plait.kill();
    observer.take();
    upstream
        .start_core(&[&format!("--poll-interval={POLL_INTERVAL}")])
        .await
        .unwrap();
    observer.settle().await;
    let to_upstream = observer.take();
    let to_upstream_report = report("plait -> upstream Crossplane", &to_upstream);
    eprintln!("{to_upstream_report}");

    let mut churned = churn(&to_plait);
    churned.extend(
        churn(&to_upstream)
            .into_iter()
            .map(|c| format!("back: {c}")),
    );
    assert!(
        churned.is_empty(),
        "the switches churned:\n{}\n{to_plait_report}\n{to_upstream_report}",
        churned.join("\n")
    );
}
