use std::cell::Cell;

use plait_pipeline::{FunctionRunner, RunnerError, Step};
use plait_sdk::{Ready, Request, Resource, Response};
use serde_json::{Value, json};

use super::*;

/// A function that composes the resources named in the XR's `spec.want`,
/// ready when the XR's `spec.ready` lists them, and fails when `spec.fatal` is set.
struct Want(Cell<usize>);

impl FunctionRunner for Want {
    fn run(&self, _: &str, _: &str, request: &Request) -> Result<Response, RunnerError> {
        self.0.set(self.0.get() + 1);
        let mut response = Response::from_request(request);
        let xr = &request
            .observed
            .composite
            .as_ref()
            .expect("observed XR")
            .resource;
        if let Some(message) = xr["spec"]["fatal"].as_str() {
            response.fatal(message);
            return Ok(response);
        }
        for name in xr["spec"]["want"].as_array().into_iter().flatten() {
            let name = name.as_str().expect("string");
            let mut resource = Resource::new(json!({
                "apiVersion": "v1", "kind": "ConfigMap", "data": {"owner": xr["metadata"]["name"]}
            }));
            if let Some(list) = xr["spec"]["dependsOn"][name].as_str() {
                resource.resource["metadata"]["annotations"] =
                    json!({ordering::DEPENDS_ON_ANNOTATION: list});
            }
            if xr["spec"]["ready"]
                .as_array()
                .is_some_and(|r| r.contains(&json!(name)))
            {
                resource.ready = Ready::True;
            }
            response.desired.resources.insert(name.into(), resource);
        }
        Ok(response)
    }
}

fn xr(namespace: Option<&str>, want: &[&str]) -> Value {
    let mut xr = json!({
        "apiVersion": "example.org/v1", "kind": "XApp",
        "metadata": {"name": "my-app", "uid": "1234-5678"},
        "spec": {"want": want, "ready": []}
    });
    if let Some(ns) = namespace {
        xr["metadata"]["namespace"] = json!(ns);
        xr["spec"]["crossplane"] = json!({});
    }
    xr
}

fn reconcile(cluster: &MemoryCluster, xr: Value) -> Outcome {
    reconcile_with(cluster, None, xr, false)
}

/// A reconcile whose composed resources go through `as_tenant`, with the
/// XR's watch circuit open or not.
fn reconcile_with(
    cluster: &MemoryCluster,
    as_tenant: Option<&dyn Cluster>,
    xr: Value,
    circuit_open: bool,
) -> Outcome {
    try_reconcile_with(cluster, as_tenant, xr, circuit_open).expect("reconcile runs")
}

fn try_reconcile_with(
    cluster: &MemoryCluster,
    as_tenant: Option<&dyn Cluster>,
    xr: Value,
    circuit_open: bool,
) -> Result<Outcome, ReconcileError> {
    cluster.seed([xr.clone()]).expect("seed XR");
    let runner = Want(Cell::new(0));
    let steps = [Step {
        name: "compose".into(),
        function: "want".into(),
        ..Step::default()
    }];
    Reconcile {
        cluster,
        runner: &runner,
        // These XRs are v1 ones unless they carry a namespace.
        scope: match CompositeScope::infer(&xr) {
            CompositeScope::Cluster => CompositeScope::LegacyCluster,
            namespaced => namespaced,
        },
        xr,
        steps: &steps,
        context: json!({}),
        clock: &|| "2024-01-01T00:00:00Z".into(),
        grants: &ReadGrants::tenant_defaults(),
        as_tenant,
        circuit_open,
        observe_created: false,
        unwritten: None,
    }
    .run()
}

/// A memory cluster that knows every composed apply would change nothing, or none.
struct KnownApplied<'a> {
    memory: &'a MemoryCluster,
    unchanged: bool,
}

impl Forwarding for KnownApplied<'_> {
    fn inner(&self) -> &dyn Cluster {
        self.memory
    }
    fn applied_unchanged(&self, _: &Value, _: &Value, _: &str) -> bool {
        self.unchanged
    }
}

#[test]
fn a_composed_resource_is_applied_again_unless_the_cluster_knows_nothing_would_change() {
    // (the cluster knows the applies unchanged, composed applies made)
    let cases = [(false, 2), (true, 0)];
    for (unchanged, want) in cases {
        let memory = MemoryCluster::new();
        let first = reconcile(&memory, xr(None, &["a", "b"]));
        let known = KnownApplied {
            memory: &memory,
            unchanged,
        };
        let before = memory.writes().len();
        let second = reconcile_with(&memory, Some(&known), first.xr.clone(), false);
        let applies = memory.writes()[before..]
            .iter()
            .filter(|(r, what)| r.kind == "ConfigMap" && *what == "apply")
            .count();
        assert_eq!(applies, want, "unchanged: {unchanged}");
        assert_eq!(
            second.composed.keys().collect::<Vec<_>>(),
            ["a", "b"],
            "unchanged: {unchanged}"
        );
        assert!(second.created.is_empty(), "unchanged: {unchanged}");
        assert_eq!(second.error, None, "unchanged: {unchanged}");
    }
}

#[test]
fn responsive_reports_whether_the_watch_circuit_is_open() {
    // (circuit open, Responsive status, reason)
    let cases = [
        (false, "True", "WatchCircuitClosed"),
        (true, "False", "WatchCircuitOpen"),
    ];
    for (open, status, reason) in cases {
        let memory = MemoryCluster::new();
        let outcome = reconcile_with(&memory, None, xr(None, &["a"]), open);
        let responsive = condition(&outcome.xr, "Responsive");
        assert_eq!(responsive["status"], status, "open: {open}");
        assert_eq!(responsive["reason"], reason, "open: {open}");
    }
}

fn condition<'a>(xr: &'a Value, type_: &str) -> &'a Value {
    xr["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .unwrap_or(&Value::Null)
}

#[test]
fn new_composed_resources_get_deterministic_names_labels_and_owner() {
    let cluster = MemoryCluster::new();
    let outcome = reconcile(&cluster, xr(None, &["a", "b"]));
    let a = &outcome.composed["a"];
    let name = a["metadata"]["name"].as_str().expect("named");
    assert_eq!(
        name,
        compose::deterministic_name("my-app-", "1234-5678", "a")
    );
    assert!(name.starts_with("my-app-") && name.len() == "my-app-".len() + 12);
    assert_eq!(a["metadata"]["annotations"][ANNOTATION_RESOURCE_NAME], "a");
    assert_eq!(a["metadata"]["labels"][LABEL_COMPOSITE], "my-app");
    assert_eq!(
        a["metadata"]["ownerReferences"],
        json!([{"apiVersion": "example.org/v1", "kind": "XApp", "name": "my-app",
                "uid": "1234-5678", "controller": true, "blockOwnerDeletion": true}])
    );
    assert_eq!(
        outcome.xr["spec"]["resourceRefs"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(condition(&outcome.xr, "Synced")["status"], "True");
    assert_eq!(
        condition(&outcome.xr, "Ready")["message"],
        "Unready resources: a, b"
    );
    assert_eq!(cluster.objects().len(), 3, "XR + two composed");
}

#[test]
fn reconcile_is_idempotent_and_names_are_stable() {
    let cluster = MemoryCluster::new();
    let first = reconcile(&cluster, xr(None, &["a"]));
    let second = reconcile(&cluster, first.xr.clone());
    assert_eq!(first.composed, second.composed);
    assert!(second.deleted.is_empty());
}

#[test]
fn a_reconcile_writes_the_xr_only_when_what_it_owns_changed() {
    let cluster = MemoryCluster::new();
    let xr_writes = |cluster: &MemoryCluster| -> Vec<&'static str> {
        cluster
            .writes()
            .into_iter()
            .filter(|(r, _)| r.kind == "XApp")
            .map(|(_, what)| what)
            .collect()
    };
    let first = reconcile(&cluster, xr(None, &["a"]));
    assert_eq!(first.created, ["a"]);
    assert_eq!(xr_writes(&cluster), ["apply", "status"], "first reconcile");
    // (what changes on the XR before the next reconcile, XR writes it makes)
    type Change = fn(&mut Value);
    let cases: [(&str, Change, &[&str]); 4] = [
        ("nothing", |_| {}, &[]),
        (
            "a resource becomes ready",
            |xr| xr["spec"]["ready"] = json!(["a"]),
            &["status"],
        ),
        ("nothing again", |_| {}, &[]),
        (
            "a resource is added",
            |xr| xr["spec"]["want"] = json!(["a", "b"]),
            &["apply", "status"],
        ),
    ];
    let mut current = first.xr;
    for (change, apply, want) in cases {
        apply(&mut current);
        let before = cluster.writes().len();
        let outcome = reconcile(&cluster, current.clone());
        let made: Vec<&str> = cluster.writes()[before..]
            .iter()
            .filter(|(r, _)| r.kind == "XApp")
            .map(|(_, what)| *what)
            .collect();
        assert_eq!(made, want, "{change}");
        assert!(outcome.created.iter().all(|c| c == "b"), "{change}");
        current = outcome.xr;
    }
}

#[test]
fn resources_that_leave_desired_state_are_deleted() {
    let cluster = MemoryCluster::new();
    let first = reconcile(&cluster, xr(None, &["a", "b"]));
    let mut next = first.xr.clone();
    next["spec"]["want"] = json!(["a"]);
    let second = reconcile(&cluster, next);
    assert_eq!(second.deleted.len(), 1);
    assert_eq!(
        second.deleted[0].name,
        first.composed["b"]["metadata"]["name"]
    );
    assert_eq!(cluster.objects().len(), 2);
}

/// A memory cluster whose API server refuses to delete one object, as the
/// admission webhook refuses a resource a Usage protects.
struct RefusesToDelete<'a> {
    memory: &'a MemoryCluster,
    protected: String,
}

impl Forwarding for RefusesToDelete<'_> {
    fn inner(&self) -> &dyn Cluster {
        self.memory
    }

    fn before_delete(&self, object: &ObjectRef) -> Result<(), ClusterError> {
        if object.name == self.protected {
            return Err(ClusterError::Object {
                object: object.to_string(),
                message: "This resource is in-use by 1 usage(s)".into(),
            });
        }
        Ok(())
    }
}

#[test]
fn a_refused_deletion_does_not_keep_the_other_garbage_from_going() {
    // Whichever garbage resource is refused, the other goes, and the
    // reconcile reports the refusal.
    for (protected, goes) in [("b", "c"), ("c", "b")] {
        let cluster = MemoryCluster::new();
        let first = reconcile(&cluster, xr(None, &["a", "b", "c"]));
        let name = |resource: &str| {
            first.composed[resource]["metadata"]["name"]
                .as_str()
                .expect("composed name")
                .to_string()
        };
        let refusing = RefusesToDelete {
            memory: &cluster,
            protected: name(protected),
        };
        let mut next = first.xr.clone();
        next["spec"]["want"] = json!(["a"]);
        let error = try_reconcile_with(&cluster, Some(&refusing), next, false)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("in-use"), "{protected}: {error}");
        let names: Vec<String> = cluster
            .objects()
            .iter()
            .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
            .collect();
        assert!(names.contains(&name(protected)), "{protected}: {names:?}");
        assert!(!names.contains(&name(goes)), "{protected}: {names:?}");
    }
}

/// How an API server refuses the apply of the object it is given the name of.
type Refusal = fn(String) -> ClusterError;

/// A memory cluster whose API server refuses every apply of one composed
/// resource with `refusal`.
struct RefusesToApply<'a> {
    memory: &'a MemoryCluster,
    resource: &'static str,
    refusal: Refusal,
}

impl Forwarding for RefusesToApply<'_> {
    fn inner(&self) -> &dyn Cluster {
        self.memory
    }

    fn before_apply(&self, object: &Value) -> Result<(), ClusterError> {
        let annotations = &object["metadata"]["annotations"];
        if annotations["crossplane.io/composition-resource-name"] == self.resource {
            return Err((self.refusal)(object["metadata"]["name"].to_string()));
        }
        Ok(())
    }
}

#[test]
fn an_invalid_composed_resource_is_reported_while_any_other_refused_apply_fails_the_reconcile() {
    let invalid: Refusal = |object| ClusterError::Invalid {
        object,
        message: "spec.replicas: Invalid value: -1".into(),
    };
    let forbidden: Refusal = |object| ClusterError::Object {
        object,
        message: "configmaps is forbidden: User \"tenant\" cannot patch resource".into(),
    };
    let unavailable: Refusal = |object| ClusterError::Unavailable {
        object,
        message: "connection refused".into(),
    };
    // (refusal, Ok(the Synced message) or Err((what the reconcile's error
    // says, whether it is the API server being unavailable)))
    type Expected = Result<&'static str, (&'static str, bool)>;
    let cases: [(Refusal, Expected); 3] = [
        (
            invalid,
            Ok("cannot sync composed resources: Unsynced resources: b"),
        ),
        (forbidden, Err(("forbidden", false))),
        (unavailable, Err(("connection refused", true))),
    ];
    for (refusal, want) in cases {
        let cluster = MemoryCluster::new();
        let refusing = RefusesToApply {
            memory: &cluster,
            resource: "b",
            refusal,
        };
        let ran = try_reconcile_with(&cluster, Some(&refusing), xr(None, &["a", "b", "c"]), false);
        match (ran, want) {
            (Ok(outcome), Ok(message)) => {
                assert_eq!(condition(&outcome.xr, "Synced")["message"], message);
                let composed: BTreeSet<&String> = outcome.composed.keys().collect();
                assert_eq!(
                    composed,
                    BTreeSet::from([&"a".to_string(), &"c".to_string()])
                );
                assert!(cluster.events().iter().any(|e| {
                    e.event_type == EventType::Warning
                        && e.message
                            .starts_with("cannot apply composed resource \"b\"")
                }));
            }
            (Err(error), Err((says, unavailable))) => {
                assert_eq!(error.is_unavailable(), unavailable, "{error}");
                let error = error.to_string();
                assert!(
                    error.starts_with("cannot apply composed resource \"b\""),
                    "{error}"
                );
                assert!(error.contains(says), "{error}");
            }
            (ran, want) => panic!("want {want:?}, got {:?}", ran.map(|o| o.xr)),
        }
    }
}

#[test]
fn fatal_pipeline_applies_and_deletes_nothing() {
    let cluster = MemoryCluster::new();
    let first = reconcile(&cluster, xr(None, &["a", "b"]));
    let before = cluster.objects().len();
    let mut next = first.xr.clone();
    next["spec"]["want"] = json!([]);
    next["spec"]["fatal"] = json!("database is on fire");
    let second = reconcile(&cluster, next);
    assert!(second.deleted.is_empty() && second.composed.is_empty());
    assert_eq!(cluster.objects().len(), before);
    let synced = condition(&second.xr, "Synced");
    assert_eq!(synced["status"], "False");
    assert_eq!(
        synced["message"],
        "pipeline step \"compose\" returned a fatal result: database is on fire"
    );
    assert!(
        cluster
            .events()
            .iter()
            .any(|e| e.event_type == EventType::Warning
                && e.message == "Pipeline step \"compose\": database is on fire")
    );
}

#[test]
fn ready_when_every_composed_resource_is_ready() {
    let cluster = MemoryCluster::new();
    let mut x = xr(None, &["a", "b"]);
    x["spec"]["ready"] = json!(["a", "b"]);
    let outcome = reconcile(&cluster, x);
    let ready = condition(&outcome.xr, "Ready");
    assert_eq!(
        (&ready["status"], &ready["reason"]),
        (&json!("True"), &json!("Available"))
    );
}

#[test]
fn namespaced_composite_composes_in_its_namespace_with_refs_without_namespace() {
    let cluster = MemoryCluster::new();
    let outcome = reconcile(&cluster, xr(Some("team-a"), &["a"]));
    assert_eq!(outcome.composed["a"]["metadata"]["namespace"], "team-a");
    let refs = &outcome.xr["spec"]["crossplane"]["resourceRefs"];
    assert_eq!(refs.as_array().map(Vec::len), Some(1));
    assert!(refs[0].get("namespace").is_none());
}

#[test]
fn observed_resource_without_resource_name_annotation_is_an_error() {
    let cluster = MemoryCluster::new();
    cluster
        .seed([json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "stray"}})])
        .expect("seed");
    let mut x = xr(None, &[]);
    x["spec"]["resourceRefs"] = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "stray"}]);
    let runner = Want(Cell::new(0));
    let err = Reconcile {
        cluster: &cluster,
        runner: &runner,
        scope: CompositeScope::LegacyCluster,
        xr: x,
        steps: &[],
        context: json!({}),
        clock: &|| "t".into(),
        grants: &ReadGrants::tenant_defaults(),
        as_tenant: None,
        circuit_open: false,
        observe_created: false,
        unwritten: None,
    }
    .run()
    .expect_err("must fail");
    assert!(
        err.to_string()
            .contains("without required \"crossplane.io/composition-resource-name\" annotation")
    );
}

#[test]
fn deterministic_names_stay_within_63_characters() {
    let cases = [
        ("short-", "short-"),
        ("no-dash", "no-dash-"),
        (&"x".repeat(80), &format!("{}-", "x".repeat(50))),
    ];
    for (prefix, want_prefix) in cases {
        let name = compose::deterministic_name(prefix, "uid", "res");
        assert!(name.len() <= 63, "{name}");
        assert!(name.starts_with(want_prefix), "{name}");
        assert_eq!(name.len(), want_prefix.len() + 12);
    }
}

#[test]
fn the_reconciler_applies_only_the_xr_fields_it_owns() {
    let refs = [json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "c"})];
    let read = json!({
        "apiVersion": "example.org/v1", "kind": "XApp",
        "metadata": {"name": "a", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                     "labels": {"team": "t"}, "finalizers": ["f"]},
        "spec": {"image": "i", "crossplane": {"compositionRef": {"name": "c"}}},
        "status": {"s": 1},
    });
    let mut labelled = read.clone();
    labelled["metadata"]["labels"][LABEL_COMPOSITE] = json!("parent");
    let cases = [
        (
            CompositeScope::Namespaced,
            read.clone(),
            json!({"spec": {"crossplane": {"resourceRefs": refs}}}),
            "a",
        ),
        (
            CompositeScope::LegacyCluster,
            labelled,
            json!({"spec": {"resourceRefs": refs}}),
            "parent",
        ),
    ];
    for (scope, xr, spec, label) in cases {
        let mut want = json!({
            "apiVersion": "example.org/v1", "kind": "XApp",
            "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7",
                         "labels": {LABEL_COMPOSITE: label}},
        });
        want["spec"] = spec["spec"].clone();
        assert_eq!(owned_fields(&xr, scope, &refs), want, "{scope:?}");
    }
}

#[test]
fn an_xr_without_its_xrd_is_taken_for_a_modern_one_like_upstream_render() {
    let cases = [
        (
            json!({"metadata": {"name": "a", "namespace": "ns"}}),
            CompositeScope::Namespaced,
        ),
        (json!({"metadata": {"name": "a"}}), CompositeScope::Cluster),
        (
            json!({"metadata": {"name": "a"}, "spec": {"resourceRefs": []}}),
            CompositeScope::Cluster,
        ),
    ];
    for (xr, want) in cases {
        assert_eq!(CompositeScope::infer(&xr), want, "{xr}");
    }
}

#[test]
fn a_legacy_xr_gets_its_connection_secret_reference_before_the_pipeline() {
    let uid = json!({"metadata": {"name": "a", "uid": "u-1"}});
    let with_ref = json!({"metadata": {"name": "a", "uid": "u-1"},
        "spec": {"writeConnectionSecretToRef": {"name": "mine", "namespace": "ns"}}});
    let cases = [
        (
            &uid,
            CompositeScope::LegacyCluster,
            Some("crossplane-system"),
            Some(json!({"name": "u-1", "namespace": "crossplane-system"})),
        ),
        (&uid, CompositeScope::LegacyCluster, None, None),
        (
            &with_ref,
            CompositeScope::LegacyCluster,
            Some("crossplane-system"),
            None,
        ),
        (
            &uid,
            CompositeScope::Cluster,
            Some("crossplane-system"),
            None,
        ),
        (
            &uid,
            CompositeScope::Namespaced,
            Some("crossplane-system"),
            None,
        ),
    ];
    for (xr, scope, namespace, want) in cases {
        assert_eq!(
            default_connection_secret_ref(xr, scope, namespace),
            want,
            "{scope:?} {namespace:?} {xr}"
        );
    }
}

/// Records the conditions of the XR each call observed.
struct ObservedConditions(std::cell::RefCell<Vec<Value>>);

impl FunctionRunner for ObservedConditions {
    fn run(&self, _: &str, _: &str, request: &Request) -> Result<Response, RunnerError> {
        let xr = &request
            .observed
            .composite
            .as_ref()
            .expect("observed XR")
            .resource;
        self.0.borrow_mut().push(xr["status"]["conditions"].clone());
        Ok(Response::from_request(request))
    }
}

#[test]
fn xrs_are_responsive_and_functions_observe_it_as_upstream_sets_it_first() {
    let cluster = MemoryCluster::new();
    let xr = xr(None, &[]);
    cluster.seed([xr.clone()]).expect("seed XR");
    let runner = ObservedConditions(Default::default());
    let steps = [Step {
        name: "compose".into(),
        function: "observe".into(),
        ..Step::default()
    }];
    let outcome = Reconcile {
        cluster: &cluster,
        runner: &runner,
        scope: CompositeScope::LegacyCluster,
        xr,
        steps: &steps,
        context: json!({}),
        clock: &|| "2024-01-01T00:00:00Z".into(),
        grants: &ReadGrants::tenant_defaults(),
        as_tenant: None,
        circuit_open: false,
        observe_created: false,
        unwritten: None,
    }
    .run()
    .expect("reconcile runs");
    let responsive = json!({"type": "Responsive", "status": "True",
        "reason": "WatchCircuitClosed", "lastTransitionTime": "2024-01-01T00:00:00Z"});
    assert_eq!(runner.0.borrow().as_slice(), [json!([responsive])]);
    let types: Vec<&str> = outcome.xr["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .filter_map(|c| c["type"].as_str())
        .collect();
    assert_eq!(types, ["Responsive", "Synced", "Ready"]);
}

#[test]
fn conditions_set_after_the_pipeline_carry_the_time_it_ended() {
    // The clock reads "before" until the function runs, "after" from then on.
    struct Ticking<'a>(&'a Cell<bool>, Want);
    impl FunctionRunner for Ticking<'_> {
        fn run(
            &self,
            step: &str,
            function: &str,
            request: &Request,
        ) -> Result<Response, RunnerError> {
            self.0.set(true);
            self.1.run(step, function, request)
        }
    }
    // (the XR's spec, the conditions stamped "after")
    let cases = [
        (
            json!({"want": ["a"], "ready": ["a"]}),
            vec!["Synced", "Ready"],
        ),
        (json!({"fatal": "broken"}), vec!["Synced"]),
    ];
    for (spec, stamped_after) in cases {
        let cluster = MemoryCluster::default();
        let mut xr = xr(Some("team-a"), &[]);
        for (k, v) in spec.as_object().into_iter().flatten() {
            xr["spec"][k] = v.clone();
        }
        cluster.seed([xr.clone()]).expect("seed XR");
        let ran = Cell::new(false);
        let runner = Ticking(&ran, Want(Cell::new(0)));
        let clock = || if ran.get() { "after" } else { "before" }.to_string();
        let steps = [Step {
            name: "compose".into(),
            function: "want".into(),
            ..Step::default()
        }];
        let outcome = Reconcile {
            cluster: &cluster,
            runner: &runner,
            scope: CompositeScope::Namespaced,
            xr,
            steps: &steps,
            context: json!({}),
            clock: &clock,
            grants: &ReadGrants::tenant_defaults(),
            as_tenant: None,
            circuit_open: false,
            observe_created: false,
            unwritten: None,
        }
        .run()
        .expect("reconcile runs");
        let conditions = outcome.xr["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for wanted in &stamped_after {
            let condition = conditions
                .iter()
                .find(|c| c["type"] == *wanted)
                .unwrap_or_else(|| panic!("no {wanted} in {conditions:?}"));
            assert_eq!(
                condition["lastTransitionTime"], "after",
                "{wanted}: {condition}"
            );
        }
        let responsive = conditions.iter().find(|c| c["type"] == "Responsive");
        assert_eq!(
            responsive.map(|c| c["lastTransitionTime"].clone()),
            Some(json!("before")),
            "Responsive is set before functions observe the XR"
        );
    }
}

/// The names of the composed resources `memory` holds.
fn composed_names(memory: &MemoryCluster) -> Vec<String> {
    let mut names: Vec<String> = memory
        .objects()
        .into_iter()
        .filter(|o| o["kind"] == "ConfigMap")
        .filter_map(|o| {
            o.pointer("/metadata/annotations/crossplane.io~1composition-resource-name")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect();
    names.sort();
    names
}

fn ordered_condition(xr: &Value) -> (String, String, String) {
    let c = xr["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == ordering::ORDERED_CONDITION)
        .cloned()
        .unwrap_or_default();
    let text = |f: &str| c[f].as_str().unwrap_or_default().to_string();
    (text("status"), text("reason"), text("message"))
}

#[test]
fn a_composed_resource_is_created_only_once_what_it_depends_on_is_ready() {
    let memory = MemoryCluster::new();
    let mut want = xr(None, &["a", "b", "c"]);
    want["spec"]["dependsOn"] = json!({"b": "a", "c": "b"});
    let first = reconcile(&memory, want);
    assert_eq!(composed_names(&memory), ["a"]);
    assert_eq!(
        ordered_condition(&first.xr),
        (
            "False".into(),
            "WaitingForDependencies".into(),
            "b waits for a; c waits for b; order: b after a; c after b".into()
        )
    );
    let ready = first.xr["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap()
        .clone();
    assert_eq!(
        ready["status"], "False",
        "withheld resources are not ready: {ready}"
    );

    // a exists but is not ready yet: b still waits.
    let again = reconcile(&memory, first.xr.clone());
    assert_eq!(composed_names(&memory), ["a"]);

    let mut a_ready = again.xr.clone();
    a_ready["spec"]["ready"] = json!(["a"]);
    let second = reconcile(&memory, a_ready);
    assert_eq!(composed_names(&memory), ["a", "b"]);
    assert_eq!(
        ordered_condition(&second.xr).2,
        "c waits for b; order: b after a; c after b"
    );

    let mut b_ready = second.xr.clone();
    b_ready["spec"]["ready"] = json!(["a", "b"]);
    let third = reconcile(&memory, b_ready);
    assert_eq!(composed_names(&memory), ["a", "b", "c"]);
    assert_eq!(
        ordered_condition(&third.xr),
        (
            "True".into(),
            "DependenciesReady".into(),
            "every composed resource is created; order: b after a; c after b".into()
        )
    );
}

#[test]
fn a_dependency_cycle_applies_nothing_and_names_the_cycle() {
    let memory = MemoryCluster::new();
    let mut want = xr(None, &["a", "b", "c"]);
    want["spec"]["dependsOn"] = json!({"a": "c", "b": "a", "c": "b"});
    let outcome = reconcile(&memory, want);
    let message = "composed resources depend on each other in a cycle: a → c → b → a";
    assert_eq!(outcome.error.as_deref(), Some(message));
    assert!(composed_names(&memory).is_empty());
    let (status, reason, text) = ordered_condition(&outcome.xr);
    assert_eq!(
        (status.as_str(), reason.as_str(), text.as_str()),
        ("False", "DependencyCycle", message)
    );
    let synced = outcome.xr["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Synced")
        .unwrap();
    assert_eq!(synced["status"], "False");
    assert_eq!(synced["message"], message);
}

#[test]
fn composed_resources_are_applied_by_a_field_manager_per_xr_as_upstream_names_it() {
    // (XR, upstream's name: sha256 of the XR's name and group-kind)
    let cases = [
        (
            json!({"apiVersion": "example.org/v1", "kind": "XNet", "metadata": {"name": "office"}}),
            "apiextensions.crossplane.io/composed/06b9febfabc8141c208ad2b335fc7b33e0ea6fbeb651d52f1c96c84b44004d4e",
        ),
        (
            json!({"apiVersion": "v1", "kind": "XBucket", "metadata": {"name": "bucket"}}),
            "apiextensions.crossplane.io/composed/5efb6d7c7154b024b02e28dd3ec853c1180c3f6de7c86114510be26472c4d6c4",
        ),
    ];
    for (xr, expected) in cases {
        assert_eq!(composed_field_manager(&xr), expected, "{xr}");
        assert_ne!(composed_field_manager(&xr), COMPOSITE_FIELD_MANAGER);
    }
}

/// Records the connection details each call observed, by resource name
/// (the XR's under ""), and composes the resources in the XR's `spec.want`
/// with the Secret reference in its `spec.secretRef`.
/// Connection details by resource name.
type Connections = BTreeMap<String, BTreeMap<String, Vec<u8>>>;

struct ObservedConnections(std::cell::RefCell<Vec<Connections>>);

impl FunctionRunner for ObservedConnections {
    fn run(&self, _: &str, _: &str, request: &Request) -> Result<Response, RunnerError> {
        let mut seen = BTreeMap::new();
        let xr = request.observed.composite.as_ref().expect("observed XR");
        seen.insert(String::new(), xr.connection_details.clone());
        for (name, resource) in &request.observed.resources {
            seen.insert(name.clone(), resource.connection_details.clone());
        }
        self.0.borrow_mut().push(seen);
        let mut response = Response::from_request(request);
        for name in xr.resource["spec"]["want"].as_array().into_iter().flatten() {
            let name = name.as_str().expect("string");
            response.desired.resources.insert(
                name.into(),
                Resource::new(json!({
                    "apiVersion": "example.org/v1", "kind": "Database",
                    "spec": {"writeConnectionSecretToRef": xr.resource["spec"]["secretRef"]}
                })),
            );
        }
        Ok(response)
    }
}

#[test]
fn functions_observe_connection_details_from_the_secret_each_resource_writes() {
    let secret = |namespace: &str, name: &str| {
        json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace},
            "data": {"password": "c2VjcmV0"}})
    };
    let details = |pairs: &[(&str, &[u8])]| -> BTreeMap<String, Vec<u8>> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_vec()))
            .collect()
    };
    let password: &[(&str, &[u8])] = &[("password", b"secret")];
    // Who controls the Secret in crossplane-system.
    #[derive(Debug, Clone, Copy)]
    enum SecretController {
        Nobody,
        TheComposedResource,
        AnotherObject,
    }
    use SecretController::{AnotherObject, Nobody, TheComposedResource};
    // (XR namespace or claim namespace, the composed resource's Secret
    // reference, who controls that Secret, what the second call observes of it)
    type Case<'a> = (
        Option<&'a str>,
        Option<&'a str>,
        Value,
        SecretController,
        &'a [(&'a str, &'a [u8])],
    );
    let cases: [Case; 10] = [
        // A cluster-scoped resource's Secret is in the reference's namespace.
        (
            None,
            None,
            json!({"name": "db", "namespace": "crossplane-system"}),
            Nobody,
            password,
        ),
        // No Secret yet, or none named: no details.
        (
            None,
            None,
            json!({"name": "missing", "namespace": "crossplane-system"}),
            Nobody,
            &[],
        ),
        (
            None,
            None,
            json!({"namespace": "crossplane-system"}),
            Nobody,
            &[],
        ),
        (None, None, json!({"name": "db"}), Nobody, &[]),
        // A namespaced resource's Secret is in its own namespace.
        (
            Some("team-a"),
            None,
            json!({"name": "db"}),
            Nobody,
            password,
        ),
        // A tenant's functions read no Secret outside its namespace...
        (
            None,
            Some("team-a"),
            json!({"name": "db", "namespace": "crossplane-system"}),
            Nobody,
            &[],
        ),
        (
            None,
            Some("team-a"),
            json!({"name": "db", "namespace": "crossplane-system"}),
            AnotherObject,
            &[],
        ),
        // ...but for the composed resource's own Secret, which it controls,
        // as a provider writes it.
        (
            None,
            Some("team-a"),
            json!({"name": "db", "namespace": "crossplane-system"}),
            TheComposedResource,
            password,
        ),
        (
            None,
            Some("crossplane-system"),
            json!({"name": "db", "namespace": "crossplane-system"}),
            Nobody,
            password,
        ),
        (
            None,
            Some("crossplane-system"),
            json!({"name": "db", "namespace": "crossplane-system"}),
            AnotherObject,
            password,
        ),
    ];
    for (namespace, claim, secret_ref, controller, want) in cases {
        let cluster = MemoryCluster::new();
        cluster
            .seed([secret("crossplane-system", "db"), secret("team-a", "db")])
            .expect("seed");
        let mut x = xr(namespace, &["db"]);
        x["spec"]["secretRef"] = secret_ref.clone();
        if let Some(claim) = claim {
            x["spec"]["claimRef"] = json!({"namespace": claim, "name": "c"});
        }
        let scope = match namespace {
            Some(_) => CompositeScope::Namespaced,
            None => CompositeScope::LegacyCluster,
        };
        let runner = ObservedConnections(Default::default());
        let steps = [Step {
            name: "compose".into(),
            function: "observe".into(),
            ..Step::default()
        }];
        cluster.seed([x.clone()]).expect("seed XR");
        let first = run_one_step(&cluster, &runner, scope, x, &steps);
        let composed = ObjectRef::of(&first.composed["db"]).expect("a composed reference");
        let composed_uid = cluster
            .get(&composed)
            .expect("get the composed resource")
            .and_then(|stored| stored.pointer("/metadata/uid").cloned())
            .expect("the composed resource has a UID");
        let owner_uid = match controller {
            Nobody => None,
            TheComposedResource => Some(composed_uid),
            AnotherObject => Some(json!("another-object")),
        };
        if let Some(uid) = owner_uid {
            let mut owned = secret("crossplane-system", "db");
            owned["metadata"]["ownerReferences"] = json!([{
                "apiVersion": "example.org/v1", "kind": "Database", "name": "db",
                "uid": uid, "controller": true,
            }]);
            cluster.seed([owned]).expect("seed the owned Secret");
        }
        cluster.seed([first.xr.clone()]).expect("seed XR");
        run_one_step(&cluster, &runner, scope, first.xr, &steps);
        let calls = runner.0.borrow();
        assert_eq!(calls[0].get("db"), None, "nothing observed at first");
        assert_eq!(
            calls[1].get("db"),
            Some(&details(want)),
            "{namespace:?} {claim:?} {secret_ref} {controller:?}"
        );
    }
}

#[test]
fn a_legacy_xr_observes_the_connection_details_of_its_own_secret() {
    let cluster = MemoryCluster::new();
    cluster
        .seed([json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "1234-5678", "namespace": "crossplane-system"},
            "data": {"url": "aHR0cDovL2V4YW1wbGU="}})])
        .expect("seed");
    let mut x = xr(None, &[]);
    x["spec"]["writeConnectionSecretToRef"] =
        json!({"name": "1234-5678", "namespace": "crossplane-system"});
    // (scope, what the XR's functions observe)
    let cases = [
        (
            CompositeScope::LegacyCluster,
            BTreeMap::from([("url".to_string(), b"http://example".to_vec())]),
        ),
        // A modern XR has no connection Secret upstream.
        (CompositeScope::Cluster, BTreeMap::new()),
    ];
    for (scope, want) in cases {
        cluster.seed([x.clone()]).expect("seed XR");
        let runner = ObservedConnections(Default::default());
        let steps = [Step {
            name: "compose".into(),
            function: "observe".into(),
            ..Step::default()
        }];
        run_one_step(&cluster, &runner, scope, x.clone(), &steps);
        assert_eq!(runner.0.borrow()[0].get(""), Some(&want), "{scope:?}");
    }
}

/// Returns the conditions in the XR's `spec.conditions`, and a fatal
/// result when `spec.fatal` is set.
struct Conditions;

impl FunctionRunner for Conditions {
    fn run(&self, _: &str, _: &str, request: &Request) -> Result<Response, RunnerError> {
        let mut response = Response::from_request(request);
        let xr = &request.observed.composite.as_ref().expect("XR").resource;
        response.conditions =
            serde_json::from_value(xr["spec"]["conditions"].clone()).expect("conditions");
        if xr["spec"]["fatal"] == true {
            response.fatal("broken");
        }
        Ok(response)
    }
}

#[test]
fn function_conditions_come_before_synced_and_ready_and_claim_ones_are_listed_for_the_claim() {
    let condition = |type_: &str, target: &str| json!({"type": type_, "status": "True", "reason": "Fine", "target": target});
    // (scope, pipeline fails, condition types in order, claimConditionTypes)
    let cases = [
        (
            CompositeScope::LegacyCluster,
            false,
            vec!["Responsive", "A", "B", "C", "Synced", "Ready"],
            Some(json!(["A", "C"])),
        ),
        (
            CompositeScope::LegacyCluster,
            true,
            vec!["Responsive", "Synced", "A", "B", "C"],
            Some(json!(["A", "C"])),
        ),
        // Only a legacy XR has a claim.
        (
            CompositeScope::Cluster,
            false,
            vec!["Responsive", "A", "B", "C", "Synced", "Ready"],
            None,
        ),
    ];
    for (scope, fatal, want_types, want_claim) in cases {
        let cluster = MemoryCluster::new();
        let mut x = xr(None, &[]);
        x["spec"]["fatal"] = json!(fatal);
        x["spec"]["conditions"] = json!([
            condition("A", "CompositeAndClaim"),
            condition("B", "Composite"),
            condition("C", "CompositeAndClaim"),
            // A system condition is neither set nor listed.
            condition("Ready", "CompositeAndClaim"),
            condition("A", "CompositeAndClaim"),
        ]);
        cluster.seed([x.clone()]).expect("seed XR");
        let steps = [Step {
            name: "conditions".into(),
            function: "conditions".into(),
            ..Step::default()
        }];
        let outcome = run_one_step(&cluster, &Conditions, scope, x, &steps);
        let types: Vec<&str> = outcome.xr["status"]["conditions"]
            .as_array()
            .expect("conditions")
            .iter()
            .filter_map(|c| c["type"].as_str())
            .collect();
        assert_eq!(types, want_types, "{scope:?} fatal: {fatal}");
        assert_eq!(
            outcome.xr.pointer("/status/claimConditionTypes").cloned(),
            want_claim,
            "{scope:?} fatal: {fatal}"
        );
    }
}

/// One reconcile of `steps` by `runner`, with a tenant's default grants,
/// the clock at `t`.
fn run_one_step(
    cluster: &MemoryCluster,
    runner: &dyn FunctionRunner,
    scope: CompositeScope,
    xr: Value,
    steps: &[Step],
) -> Outcome {
    Reconcile {
        cluster,
        runner,
        scope,
        xr,
        steps,
        context: json!({}),
        clock: &|| "t".into(),
        grants: &ReadGrants::tenant_defaults(),
        as_tenant: None,
        circuit_open: false,
        observe_created: false,
        unwritten: None,
    }
    .run()
    .expect("reconcile runs")
}

/// A function that composes the resources named in the XR's `spec.want`,
/// each ready once it is observed, as function-auto-ready finds a
/// ConfigMap; counts its runs.
struct ReadyWhenObserved(Cell<usize>);

impl FunctionRunner for ReadyWhenObserved {
    fn run(&self, _: &str, _: &str, request: &Request) -> Result<Response, RunnerError> {
        self.0.set(self.0.get() + 1);
        let mut response = Response::from_request(request);
        let xr = &request
            .observed
            .composite
            .as_ref()
            .expect("observed XR")
            .resource;
        for name in xr["spec"]["want"].as_array().into_iter().flatten() {
            let name = name.as_str().expect("string");
            let mut resource = Resource::new(json!({
                "apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}
            }));
            if request.observed.resources.contains_key(name) {
                resource.ready = Ready::True;
            }
            response.desired.resources.insert(name.into(), resource);
        }
        Ok(response)
    }
}

#[test]
fn a_reconcile_that_creates_resources_observes_them_at_once_when_asked_and_writes_the_xr_once() {
    // (observe created, pipeline runs, composed applies, status writes,
    // Ready, "not yet ready" events)
    let cases = [(false, 1, 2, 1, "False", 2), (true, 2, 2, 1, "True", 0)];
    for (observe_created, runs, applies, statuses, ready, unready_events) in cases {
        let memory = MemoryCluster::new();
        let xr = xr(Some("ns"), &["a", "b"]);
        memory.seed([xr.clone()]).expect("seed XR");
        // The cluster knows a second apply of what the first pass created
        // would change nothing, as the controller's does.
        let known = KnownApplied {
            memory: &memory,
            unchanged: true,
        };
        let runner = ReadyWhenObserved(Cell::new(0));
        let steps = [Step {
            name: "compose".into(),
            function: "ready-when-observed".into(),
            ..Step::default()
        }];
        let outcome = Reconcile {
            cluster: &memory,
            runner: &runner,
            scope: CompositeScope::Namespaced,
            xr,
            steps: &steps,
            context: json!({}),
            clock: &|| "2024-01-01T00:00:00Z".into(),
            grants: &ReadGrants::tenant_defaults(),
            as_tenant: Some(&known),
            circuit_open: false,
            observe_created,
            unwritten: None,
        }
        .run()
        .expect("reconcile runs");
        let writes = memory.writes();
        let count = |kind: &str, what: &str| {
            writes
                .iter()
                .filter(|(r, w)| r.kind == kind && *w == what)
                .count()
        };
        let not_ready = memory
            .events()
            .iter()
            .filter(|e| e.message.contains("is not yet ready"))
            .count();
        assert_eq!(
            (
                runner.0.get(),
                count("ConfigMap", "apply"),
                count("XApp", "status"),
                condition(&outcome.xr, "Ready")["status"].as_str(),
                not_ready,
            ),
            (runs, applies, statuses, Some(ready), unready_events),
            "observe created: {observe_created}"
        );
        assert_eq!(
            outcome.composed.keys().collect::<Vec<_>>(),
            ["a", "b"],
            "observe created: {observe_created}"
        );
        let refs = outcome.xr["spec"]["crossplane"]["resourceRefs"]
            .as_array()
            .map_or(0, Vec::len);
        assert_eq!(refs, 2, "observe created: {observe_created}");
    }
}

#[test]
fn a_live_object_holds_a_body_when_every_field_the_body_sets_has_its_value() {
    let live = json!({
        "metadata": {"name": "a", "resourceVersion": "7", "labels": {"x": "1", "y": "2"}},
        "spec": {"list": [1, 2], "n": 1},
    });
    // (body, held)
    let cases = [
        (json!({"metadata": {"name": "a"}}), true),
        (
            json!({"metadata": {"labels": {"x": "1"}}, "spec": {"n": 1}}),
            true,
        ),
        (json!({"spec": {"list": [1, 2]}}), true),
        (json!({"spec": {"list": [1]}}), false),
        (json!({"spec": {"n": 2}}), false),
        (json!({"spec": {"missing": "v"}}), false),
        (json!({"spec": {"missing": null}}), true),
        (json!({"spec": {"n": {"nested": 1}}}), false),
    ];
    for (body, held) in cases {
        assert_eq!(holds(&live, &body), held, "{body}");
    }
}

#[test]
fn what_the_xr_does_not_record_yet_is_written_with_its_references_before_any_apply_or_alone_when_the_pipeline_fails()
 {
    let unwritten = json!({
        "metadata": {"finalizers": ["example.org/finalizer"]},
        "spec": {"compositionRef": {"name": "app"}},
    });
    // (what, what the XR holds before, writes in order, references after)
    type Prepare = fn(&mut Value);
    let cases: [(&str, Prepare, &[&str], Option<usize>); 3] = [
        (
            "a new XR",
            |_| {},
            &["XApp patch", "ConfigMap apply", "XApp status"],
            Some(1),
        ),
        (
            "a new XR whose pipeline fails",
            |xr| xr["spec"]["fatal"] = json!("not yet"),
            &["XApp patch", "XApp status"],
            None,
        ),
        (
            "an XR that records it already",
            |xr| {
                xr["metadata"]["finalizers"] = json!(["example.org/finalizer"]);
                xr["spec"]["compositionRef"] = json!({"name": "app"});
            },
            &["XApp apply", "ConfigMap apply", "XApp status"],
            Some(1),
        ),
    ];
    for (what, prepare, want, refs) in cases {
        let memory = MemoryCluster::new();
        let mut seeded = xr(None, &["a"]);
        prepare(&mut seeded);
        memory.seed([seeded.clone()]).expect("seed XR");
        let runner = Want(Cell::new(0));
        let steps = [Step {
            name: "compose".into(),
            function: "want".into(),
            ..Step::default()
        }];
        let outcome = Reconcile {
            cluster: &memory,
            runner: &runner,
            scope: CompositeScope::LegacyCluster,
            xr: seeded,
            steps: &steps,
            context: json!({}),
            clock: &|| "2024-01-01T00:00:00Z".into(),
            grants: &ReadGrants::tenant_defaults(),
            as_tenant: None,
            circuit_open: false,
            observe_created: false,
            unwritten: Some(unwritten.clone()),
        }
        .run()
        .expect("reconcile runs");
        let writes: Vec<String> = memory
            .writes()
            .iter()
            .map(|(r, w)| format!("{} {w}", r.kind))
            .collect();
        assert_eq!(writes, want, "{what}");
        assert!(holds(&outcome.xr, &unwritten), "{what}");
        let stored = memory
            .get(&ObjectRef::of(&outcome.xr).expect("reference"))
            .expect("read")
            .expect("stored");
        assert!(holds(&stored, &unwritten), "{what}");
        let recorded = stored["spec"]["resourceRefs"].as_array().map(Vec::len);
        assert_eq!(recorded, refs, "{what}");
    }
}
