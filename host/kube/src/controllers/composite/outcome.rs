//! What the XR controller's pipeline phase writes for a pipeline's
//! outcome, run as the phase runs it (the reconcile core behind the
//! controller's shard fence) over the in-memory cluster: which composed
//! resources are applied, which deleted, and in which order.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use plait_pipeline::{FunctionRunner, ReadGrants, RunnerError, Step};
use plait_reconcile::ordering::DEPENDS_ON_ANNOTATION;
use plait_reconcile::{
    ANNOTATION_RESOURCE_NAME, Cluster, ClusterError, CompositeScope, Event, MemoryCluster,
    ObjectRef, Outcome, Reconcile, ReconcileError,
};
use plait_sdk::{Ready, Request, Resource, Response};
use serde_json::{Value, json};

use crate::clusters::fence::{Fenced, ShardFence, Shards};

/// One composed resource a pipeline desires: its name in the Composition,
/// the names it depends on, and whether the function calls it ready.
type Desired = (&'static str, &'static str, bool);

/// One reconcile of the XR: what it checks, what the pipeline desires,
/// its fatal result if any, and the writes it makes in order.
type Turn = (
    &'static str,
    Vec<Desired>,
    Option<&'static str>,
    Vec<&'static str>,
);

/// A function that composes what the test sets, or fails with a fatal result.
#[derive(Default)]
struct Composes {
    desired: Mutex<Vec<Desired>>,
    fatal: Mutex<Option<&'static str>>,
}

impl FunctionRunner for Composes {
    fn run(&self, _: &str, _: &str, request: &Request) -> Result<Response, RunnerError> {
        let mut response = Response::from_request(request);
        if let Some(message) = *self.fatal.lock().map_err(|_| "poisoned")? {
            response.fatal(message);
            return Ok(response);
        }
        for (name, depends_on, ready) in self.desired.lock().map_err(|_| "poisoned")?.iter() {
            let mut resource = Resource::new(json!({
                "apiVersion": "v1", "kind": "ConfigMap", "data": {"name": name},
            }));
            if !depends_on.is_empty() {
                resource.resource["metadata"]["annotations"] =
                    json!({DEPENDS_ON_ANNOTATION: depends_on});
            }
            if *ready {
                resource.ready = Ready::True;
            }
            response.desired.resources.insert((*name).into(), resource);
        }
        Ok(response)
    }
}

/// The in-memory cluster, noting each write to a composed resource as
/// `apply <name>` or `delete <name>`, by its name in the Composition.
struct Noted<'a> {
    memory: &'a MemoryCluster,
    writes: Mutex<Vec<String>>,
}

impl Noted<'_> {
    fn note(&self, verb: &str, object: &Value) {
        if object["kind"] != "ConfigMap" {
            return;
        }
        let name = object
            .pointer(&plait_reconcile::pointer::annotation(
                ANNOTATION_RESOURCE_NAME,
            ))
            .and_then(Value::as_str)
            .unwrap_or("?");
        if let Ok(mut writes) = self.writes.lock() {
            writes.push(format!("{verb} {name}"));
        }
    }

    fn taken(&self) -> Vec<String> {
        self.writes
            .lock()
            .map(|mut w| std::mem::take(&mut *w))
            .unwrap_or_default()
    }
}

impl Cluster for Noted<'_> {
    fn get(&self, object: &ObjectRef) -> Result<Option<Value>, ClusterError> {
        self.memory.get(object)
    }

    fn list(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        labels: &BTreeMap<String, String>,
    ) -> Result<Vec<Value>, ClusterError> {
        self.memory.list(api_version, kind, namespace, labels)
    }

    fn apply(&self, object: &Value, field_manager: &str) -> Result<Value, ClusterError> {
        self.note("apply", object);
        self.memory.apply(object, field_manager)
    }

    fn applied_unchanged(&self, object: &Value, observed: &Value, field_manager: &str) -> bool {
        self.memory
            .applied_unchanged(object, observed, field_manager)
    }

    fn apply_status(&self, object: &Value, field_manager: &str) -> Result<Value, ClusterError> {
        self.memory.apply_status(object, field_manager)
    }

    fn merge_patch(
        &self,
        object: &ObjectRef,
        patch: &Value,
        field_manager: &str,
    ) -> Result<Value, ClusterError> {
        self.memory.merge_patch(object, patch, field_manager)
    }

    fn delete(&self, object: &ObjectRef, uid: Option<&str>) -> Result<(), ClusterError> {
        if let Some(stored) = self.memory.get(object)? {
            self.note("delete", &stored);
        }
        self.memory.delete(object, uid)
    }

    fn is_namespaced(&self, api_version: &str, kind: &str) -> Result<Option<bool>, ClusterError> {
        self.memory.is_namespaced(api_version, kind)
    }

    fn schema(&self, api_version: &str, kind: &str) -> Result<Option<Value>, ClusterError> {
        self.memory.schema(api_version, kind)
    }

    fn record_event(&self, event: Event) {
        self.memory.record_event(event);
    }
}

/// Runs the pipeline for the XR as stored, as the XR controller's
/// pipeline phase does: through the shard fence, composing as the tenant.
fn run(
    cluster: &Noted,
    runner: &Composes,
    fence: Option<&ShardFence>,
) -> Result<Outcome, ReconcileError> {
    run_recording(cluster, runner, fence, None)
}

/// As [`run`], the XR to record `unwritten` too.
fn run_recording(
    cluster: &Noted,
    runner: &Composes,
    fence: Option<&ShardFence>,
    unwritten: Option<Value>,
) -> Result<Outcome, ReconcileError> {
    let reference = ObjectRef {
        api_version: "example.org/v1".into(),
        kind: "XApp".into(),
        namespace: Some("team-a".into()),
        name: "app".into(),
    };
    let xr = cluster
        .get(&reference)?
        .ok_or_else(|| ClusterError::Other("the XR is not seeded".into()))?;
    let fenced = Fenced { cluster, fence };
    let steps = [Step {
        name: "compose".into(),
        function: "composes".into(),
        ..Step::default()
    }];
    Reconcile {
        cluster: &fenced,
        runner,
        xr,
        scope: CompositeScope::Namespaced,
        steps: &steps,
        context: json!({}),
        clock: &|| "2026-01-01T00:00:00Z".into(),
        grants: &ReadGrants::tenant_defaults(),
        as_tenant: Some(&fenced),
        circuit_open: false,
        observe_created: true,
        unwritten,
    }
    .run()
}

/// The XR in a fresh in-memory cluster.
fn seeded() -> MemoryCluster {
    let memory = MemoryCluster::new();
    memory
        .seed([json!({
            "apiVersion": "example.org/v1", "kind": "XApp",
            "metadata": {"name": "app", "namespace": "team-a", "uid": "xr-uid"},
            "spec": {"crossplane": {}},
        })])
        .unwrap();
    memory
}

#[test]
fn each_outcome_deletes_what_left_the_desired_state_then_applies_what_may_be_created() {
    // One XR's reconciles in turn: (what, desired, fatal, want writes).
    let steps: [Turn; 6] = [
        (
            "a new XR creates what depends on nothing; what depends on a resource not ready waits",
            vec![
                ("db", "", false),
                ("app", "db", false),
                ("cache", "", false),
            ],
            None,
            vec!["apply cache", "apply db"],
        ),
        (
            "while its dependency is not ready, the dependent still waits; nothing unchanged is applied again",
            vec![
                ("db", "", false),
                ("app", "db", false),
                ("cache", "", false),
            ],
            None,
            vec![],
        ),
        (
            "once its dependency is ready, the dependent is created",
            vec![("db", "", true), ("app", "db", false), ("cache", "", false)],
            None,
            vec!["apply app"],
        ),
        (
            "a fatal result applies and deletes nothing",
            vec![],
            Some("cannot render"),
            vec![],
        ),
        (
            "what left the desired state is deleted; what stays unchanged is not applied again",
            vec![("db", "", true), ("app", "db", false)],
            None,
            vec!["delete cache"],
        ),
        (
            "a live XR deletes whatever left by name; dependencies order deletions only once the XR is deleted",
            vec![],
            None,
            vec!["delete app", "delete db"],
        ),
    ];
    let memory = seeded();
    let cluster = Noted {
        memory: &memory,
        writes: Mutex::default(),
    };
    let runner = Composes::default();
    for (what, desired, fatal, want) in steps {
        *runner.desired.lock().unwrap() = desired;
        *runner.fatal.lock().unwrap() = fatal;
        let outcome = run(&cluster, &runner, None).unwrap();
        assert_eq!(cluster.taken(), want, "{what}");
        assert_eq!(outcome.error.is_some(), fatal.is_some(), "{what}");
    }
}

#[test]
fn an_xr_whose_shard_is_lost_applies_and_deletes_nothing() {
    let shards = Arc::new(Shards::new(4));
    let fence = ShardFence::of(Some(&shards), "xr-uid");
    let memory = seeded();
    let cluster = Noted {
        memory: &memory,
        writes: Mutex::default(),
    };
    let runner = Composes::default();
    *runner.desired.lock().unwrap() = vec![("db", "", true)];
    let ran = run(&cluster, &runner, fence.as_ref());
    assert!(
        ran.is_err() || ran.as_ref().is_ok_and(|o| o.error.is_some()),
        "a fenced run does not succeed"
    );
    assert_eq!(cluster.taken(), Vec::<String>::new());
    let unfenced = run(&cluster, &runner, None).unwrap();
    assert!(unfenced.error.is_none());
    assert_eq!(
        cluster.taken(),
        ["apply db"],
        "without the fence it applies"
    );
}

#[test]
fn a_new_xr_is_written_once_before_anything_is_composed_and_once_for_its_status() {
    let memory = seeded();
    let cluster = Noted {
        memory: &memory,
        writes: Mutex::default(),
    };
    let runner = Composes::default();
    *runner.desired.lock().unwrap() = vec![("a", "", true), ("b", "", true), ("c", "", true)];
    let reference = ObjectRef {
        api_version: "example.org/v1".into(),
        kind: "XApp".into(),
        namespace: Some("team-a".into()),
        name: "app".into(),
    };
    let selection =
        json!({"compositionRef": {"name": "app"}, "compositionRevisionRef": {"name": "app-1"}});
    // (what, writes in order)
    let turns = [
        (
            "a new XR: its finalizer, selection and references, then its composed resources, then its status",
            vec![
                "XApp patch",
                "ConfigMap apply",
                "ConfigMap apply",
                "ConfigMap apply",
                "XApp status",
            ],
        ),
        ("once it records them all, nothing", vec![]),
    ];
    for (what, want) in turns {
        let xr = memory.get(&reference).unwrap().unwrap();
        let recorded = xr["spec"]["crossplane"]["compositionRef"].is_object();
        let machinery = if recorded {
            serde_json::Map::new()
        } else {
            selection.as_object().cloned().unwrap_or_default()
        };
        let unwritten =
            super::reconcile::unwritten(&xr, CompositeScope::Namespaced, machinery, None);
        assert_eq!(unwritten.is_none(), recorded, "{what}");
        let before = memory.writes().len();
        let outcome = run_recording(&cluster, &runner, None, unwritten).unwrap();
        let writes: Vec<String> = memory.writes()[before..]
            .iter()
            .map(|(r, w)| format!("{} {w}", r.kind))
            .collect();
        assert_eq!(writes, want, "{what}");
        let stored = &outcome.xr;
        assert_eq!(
            stored["metadata"]["finalizers"],
            json!([super::FINALIZER]),
            "{what}"
        );
        let machinery = &stored["spec"]["crossplane"];
        assert_eq!(
            machinery["compositionRevisionRef"]["name"], "app-1",
            "{what}"
        );
        assert_eq!(
            machinery["resourceRefs"].as_array().map(Vec::len),
            Some(3),
            "{what}"
        );
        let ready = crate::vocabulary::object::condition(stored, plait_reconcile::READY);
        assert_eq!(
            ready.map(|c| c["status"].clone()),
            Some(json!("True")),
            "{what}"
        );
        cluster.taken();
    }
}
