//! `plait trace` against the test cluster, with `plait controller`
//! composing: a claim → its XR → a nested XR and a ConfigMap → the nested
//! XR's ConfigMap; a v2 namespaced XR → its ConfigMaps; every output
//! format; and `--watch` printing the tree again when it changes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use plait_controlplane::ControlPlane;
use serde_json::{Value, json};

mod common;
use common::kube_support::{Controller, LogsOnFailure, apply, apply_scale_fixture, resource};

/// How long composing the trees may take, compiling the built-in functions first.
const COMPOSED_TIMEOUT: Duration = Duration::from_secs(240);

fn xrd(kind: &str, plural: &str, claim: Option<(&str, &str)>) -> Value {
    let mut xrd = json!({
        "apiVersion": "apiextensions.crossplane.io/v1",
        "kind": "CompositeResourceDefinition",
        "metadata": {"name": format!("{plural}.trace.example.org")},
        "spec": {
            "group": "trace.example.org",
            "names": {"kind": kind, "plural": plural},
            "versions": [{"name": "v1", "served": true, "referenceable": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "properties": {"cidr": {"type": "string"}}}},
            }}}],
        },
    });
    if let Some((kind, plural)) = claim {
        xrd["spec"]["claimNames"] = json!({"kind": kind, "plural": plural});
    }
    xrd
}

/// A Composition of `resources` (patch-and-transform), then auto-ready.
fn composition(name: &str, kind: &str, resources: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.crossplane.io/v1",
        "kind": "Composition",
        "metadata": {"name": name},
        "spec": {
            "compositeTypeRef": {"apiVersion": "trace.example.org/v1", "kind": kind},
            "mode": "Pipeline",
            "pipeline": [
                {"step": "compose", "functionRef": {"name": "function-patch-and-transform"},
                 "input": {"apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources", "resources": resources}},
                {"step": "ready", "functionRef": {"name": "function-auto-ready"}},
            ],
        },
    })
}

fn config_map(name: &str, namespace: &str) -> Value {
    json!({
        "name": name,
        "base": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": namespace}, "data": {"role": name}},
        "patches": [{"type": "FromCompositeFieldPath", "fromFieldPath": "spec.cidr", "toFieldPath": "data.cidr"}],
    })
}

fn trace(kubeconfig: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plait"))
        .arg("trace")
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "plait trace failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// Traces until the tree has `rows` rows, none an error, and `done` holds
/// for it, or panics after the timeout.
async fn until_composed(
    kubeconfig: &std::path::Path,
    args: &[&str],
    rows: usize,
    done: impl Fn(&[&str]) -> bool,
) -> String {
    let started = Instant::now();
    loop {
        let out = trace(kubeconfig, args);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let lines: Vec<&str> = text.lines().collect();
        if out.status.success()
            && lines.len() == rows + 1
            && !text.contains("   Error: ")
            && done(&lines)
        {
            return text;
        }
        assert!(
            started.elapsed() < COMPOSED_TIMEOUT,
            "never composed:\n{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Whether a row's object is Synced and Ready.
fn ready(row: &str) -> bool {
    row.contains("   True     True    ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trace_shows_claims_nested_xrs_and_v2_xrs_in_every_format_and_watches() {
    let cluster = ControlPlane::shared().unwrap();
    let client = cluster.client().await;
    let ns = cluster.namespace("trace").await;
    // The controller installs the XRD and Composition kinds.
    let scratch = tempfile::tempdir().unwrap();
    let log = scratch.path().join("controller.log");
    let _logs = LogsOnFailure(vec![log.clone()]);
    let mut controller = Controller::start(
        cluster.kubeconfig(),
        &scratch.path().join("cache"),
        &log,
        &[],
    );
    controller.wait_ready().await;

    let xrds = resource(
        "apiextensions.crossplane.io/v1",
        "CompositeResourceDefinition",
        "compositeresourcedefinitions",
    );
    let compositions = resource(
        "apiextensions.crossplane.io/v1",
        "Composition",
        "compositions",
    );
    apply(
        &client,
        &xrds,
        &xrd("XSubnet", "xsubnets", None),
        "trace-test",
    )
    .await;
    apply(
        &client,
        &xrds,
        &xrd("XNet", "xnets", Some(("Net", "nets"))),
        "trace-test",
    )
    .await;
    let subnet = composition(
        "xsubnet",
        "XSubnet",
        json!([config_map("subnet-config", &ns)]),
    );
    let net = composition(
        "xnet",
        "XNet",
        json!([
            config_map("net-config", &ns),
            {"name": "subnet", "base": {"apiVersion": "trace.example.org/v1", "kind": "XSubnet", "spec": {}},
             "patches": [{"type": "FromCompositeFieldPath", "fromFieldPath": "spec.cidr", "toFieldPath": "spec.cidr"}]},
        ]),
    );
    apply(&client, &compositions, &subnet, "trace-test").await;
    apply(&client, &compositions, &net, "trace-test").await;
    apply_scale_fixture(&client, "trace-test").await;

    // The claim and the v2 XR, once their kinds are served.
    let claims = resource("trace.example.org/v1", "Net", "nets");
    let benches = resource("scale.example.org/v1", "Bench", "benches");
    let claim = json!({"apiVersion": "trace.example.org/v1", "kind": "Net",
        "metadata": {"name": "office", "namespace": ns}, "spec": {"cidr": "10.0.0.0/16"}});
    let bench = json!({"apiVersion": "scale.example.org/v1", "kind": "Bench",
        "metadata": {"name": "one", "namespace": ns}, "spec": {"size": "s"}});
    let started = Instant::now();
    loop {
        let claims_api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &claims);
        let benches_api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &benches);
        let params = PatchParams::apply("trace-test").force();
        let a = claims_api
            .patch("office", &params, &Patch::Apply(&claim))
            .await;
        let b = benches_api
            .patch("one", &params, &Patch::Apply(&bench))
            .await;
        if a.is_ok() && b.is_ok() {
            break;
        }
        assert!(
            started.elapsed() < COMPOSED_TIMEOUT,
            "the kinds are never served: {a:?} {b:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    let kubeconfig = cluster.kubeconfig();
    // Claim → XR → (XSubnet → ConfigMap, ConfigMap): five rows, traced
    // once the claim, the XR and the nested XR are all Synced and Ready, so
    // the tree no longer changes between the traces compared below.
    let table = until_composed(kubeconfig, &["net/office", "-n", &ns], 5, |rows| {
        rows[1..=3].iter().all(|row| ready(row))
    })
    .await;
    let name_width = table.lines().next().and_then(|h| h.find("SYNCED")).unwrap();
    let names: Vec<String> = table
        .lines()
        .skip(1)
        .map(|l| {
            l.chars()
                .take(name_width)
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect();
    assert_eq!(names[0], format!("Net/office ({ns})"), "{table}");
    assert!(names[1].starts_with("└─ XNet/office-"), "{table}");
    assert!(names[2].starts_with("   ├─ XSubnet/office-"), "{table}");
    assert!(
        names[3].starts_with("   │  └─ ConfigMap/") && names[3].ends_with(&format!("({ns})")),
        "{table}"
    );
    assert!(names[4].starts_with("   └─ ConfigMap/"), "{table}");
    let subnet_row = table.lines().nth(3).unwrap();
    assert!(
        subnet_row.contains("   True     True    Available"),
        "{table}"
    );
    let config_row = table.lines().nth(4).unwrap();
    assert!(
        config_row.trim_end().ends_with("-        -"),
        "no conditions: {table}"
    );
    assert!(table.starts_with("NAME "), "{table}");
    assert!(
        table
            .lines()
            .next()
            .unwrap()
            .ends_with("SYNCED   READY   STATUS"),
        "{table}"
    );

    // The kind as its plural with the group, and the name as a second argument.
    let same = stdout(&trace(
        kubeconfig,
        &["nets.trace.example.org", "office", "-n", &ns],
    ));
    assert_eq!(same, table);

    let wide = stdout(&trace(kubeconfig, &["net/office", "-n", &ns, "-o", "wide"]));
    let header = wide.lines().next().unwrap();
    assert!(
        header.contains("RESOURCE") && header.ends_with("SYNCED   READY   STATUS"),
        "{wide}"
    );
    // (The nested XR's own resource name is missing while the controller's
    // apply of it drops its parent's annotation; see the claim tree above.)
    for resource_name in ["net-config", "subnet-config"] {
        assert!(
            wide.contains(&format!("   {resource_name}   ")),
            "{resource_name}: {wide}"
        );
    }

    let json_tree: Value = serde_json::from_str(&stdout(&trace(
        kubeconfig,
        &["net/office", "-n", &ns, "-o", "json"],
    )))
    .unwrap();
    assert_eq!(json_tree["object"]["kind"], "Net");
    assert_eq!(json_tree["children"][0]["object"]["kind"], "XNet");
    assert_eq!(
        json_tree["children"][0]["children"][0]["object"]["kind"],
        "XSubnet"
    );
    assert_eq!(
        json_tree["children"][0]["children"][0]["children"][0]["object"]["kind"],
        "ConfigMap"
    );
    assert_eq!(
        json_tree["children"][0]["children"][1]["object"]["kind"],
        "ConfigMap"
    );
    let yaml_tree: Value = serde_yaml_ng::from_str(&stdout(&trace(
        kubeconfig,
        &["net/office", "-n", &ns, "-o", "yaml"],
    )))
    .unwrap();
    assert_eq!(yaml_tree, json_tree);
    let dot = stdout(&trace(kubeconfig, &["net/office", "-n", &ns, "-o", "dot"]));
    assert!(
        dot.starts_with("graph {\n") && dot.ends_with("}\n"),
        "{dot}"
    );
    assert_eq!(
        dot.matches("--").count(),
        4,
        "four edges in a five-node tree: {dot}"
    );
    assert!(
        dot.contains("Name: Net/office\\nApiVersion: trace.example.org/v1\\n"),
        "{dot}"
    );

    // The v2 XR: its three ConfigMaps in its namespace.
    let v2 = until_composed(kubeconfig, &["bench/one", "-n", &ns], 4, |rows| {
        ready(rows[1])
    })
    .await;
    assert!(
        v2.lines()
            .nth(1)
            .unwrap()
            .starts_with(&format!("Bench/one ({ns})")),
        "{v2}"
    );
    assert_eq!(v2.matches("ConfigMap/").count(), 3, "{v2}");

    // --steps: the controller's record of the XR's last pipeline run.
    let with_steps = stdout(&trace(
        kubeconfig,
        &[
            "bench/one",
            "-n",
            &ns,
            "--steps",
            "--controller-address",
            controller.probes(),
        ],
    ));
    assert!(with_steps.starts_with(&v2), "the tree first: {with_steps}");
    assert!(
        with_steps.contains("\nLast pipeline run of Bench/one:\n"),
        "{with_steps}"
    );
    let step_rows: Vec<&str> = with_steps
        .lines()
        .skip_while(|l| !l.starts_with("STEP "))
        .collect();
    assert!(step_rows.len() == 3, "{with_steps}");
    assert!(
        step_rows[0].contains("DIGEST") && step_rows[0].ends_with("RESULTS"),
        "{with_steps}"
    );
    let cells = |row: &str| {
        row.split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let (compose, ready) = (cells(step_rows[1]), cells(step_rows[2]));
    assert_eq!(
        compose[..2],
        ["compose", "function-patch-and-transform"],
        "{with_steps}"
    );
    assert_eq!(ready[..2], ["ready", "function-auto-ready"], "{with_steps}");
    assert!(
        compose[2].starts_with("sha256:") && ready[2].starts_with("sha256:"),
        "{with_steps}"
    );
    // The step was called, or (when a later reconcile sent the same
    // request) answered from the response cache, and had no results.
    let called = compose[3] == "1" && compose[5].ends_with("ms");
    let cached = compose[4] == "1" && compose[5] == "-";
    assert!((called || cached) && compose[6] == "-", "{with_steps}");
    let json_steps: Value = serde_json::from_str(&stdout(&trace(
        kubeconfig,
        &[
            "bench/one",
            "-n",
            &ns,
            "-o",
            "json",
            "--steps",
            "--controller-address",
            controller.probes(),
        ],
    )))
    .unwrap();
    let steps = &json_steps["run"]["steps"];
    assert_eq!(steps[0]["step"], "compose", "{json_steps}");
    assert_eq!(steps[1]["function"], "function-auto-ready");
    let answered =
        steps[0]["calls"].as_u64().unwrap_or(0) + steps[0]["cached"].as_u64().unwrap_or(0);
    assert!(answered >= 1, "{steps}");
    assert!(
        json_steps["children"][0].get("run").is_none(),
        "a ConfigMap has no run"
    );
    let without = trace(kubeconfig, &["bench/one", "-n", &ns, "--steps"]);
    assert!(
        !without.status.success(),
        "--steps needs --controller-address"
    );

    // A missing object is an error naming it.
    let missing = trace(kubeconfig, &["net/nowhere", "-n", &ns]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot get Net/nowhere"));
    let unknown = trace(kubeconfig, &["nosuchkind/x"]);
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("the server has no kind \"nosuchkind\"")
    );

    // --watch prints the tree, then again when the XR is paused.
    let mut watcher = Command::new(env!("CARGO_BIN_EXE_plait"))
        .args([
            "trace",
            "net/office",
            "-n",
            &ns,
            "--watch",
            "--watch-interval",
            "200ms",
            "--kubeconfig",
        ])
        .arg(kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (lines, received) = mpsc::channel();
    let output = watcher.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let wait_for = |want: &dyn Fn(&str) -> bool, what: &str| {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match received.recv_timeout(left) {
                Ok(line) if want(&line) => return,
                Ok(line) => seen.push(line),
                Err(_) => panic!(
                    "--watch never printed {what}; printed:\n{}",
                    seen.join("\n")
                ),
            }
        }
    };
    wait_for(&|l: &str| l.starts_with("└─ XNet/office-"), "the tree");
    let xr_name = json_tree["children"][0]["object"]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let xnets: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &resource("trace.example.org/v1", "XNet", "xnets"),
    );
    xnets
        .patch(
            &xr_name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"crossplane.io/paused": "true"}}})),
        )
        .await
        .unwrap();
    wait_for(
        &|l: &str| l.starts_with("└─ XNet/office-") && l.contains("ReconcilePaused"),
        "the paused XR",
    );
    let _ = watcher.kill();
    let _ = watcher.wait();
}
