//! Deleting an XR: what it composed goes first, in reverse of the order
//! its resources declare, then its finalizer.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kube::runtime::controller::Action;
use plait_reconcile::ordering::Graph;
use plait_reconcile::{
    ANNOTATION_RESOURCE_NAME, CompositeScope, ObjectRef, compose, set_condition,
};
use serde_json::Value;

use super::writes::XrWrites;
use super::{FINALIZER, XrContext, XrError};
use crate::clusters::cluster::KubeCluster;
use crate::controllers::kit::ObjectError;
use crate::controllers::timing::now;
use crate::stores::composed::Kind;
use crate::vocabulary::object::{self, is_status, text};

/// What the XR still controls, by name in the Composition.
type Controlled = BTreeMap<String, (ObjectRef, Value)>;

/// Deletes what the XR composed and lets it go once all of it is gone.
/// Composed resources carry a controller reference to the XR, so Kubernetes'
/// garbage collector would remove them too; deleting them here means the XR
/// outlives them whatever propagation policy it was deleted with.
pub async fn delete(
    mut xr: Value,
    reference: ObjectRef,
    scope: CompositeScope,
    ctx: &XrContext,
) -> Result<Action, XrError> {
    // A deleted XR composes nothing more: what its functions read no
    // longer concerns it.
    ctx.shared.required.forget(&reference);
    let composing = ctx
        .composing_cluster(&plait_reconcile::tenant_of(&xr, scope))
        .map_err(ObjectError::cluster(&reference, "cannot act as its tenant"))?;
    let (controlled, kinds) = still_controlled(&xr, &reference, scope, &composing).await?;
    let order = DeletionOrder::of(&controlled);
    if let Some(cycle) = &order.cycle {
        tracing::warn!(composite = %reference, order = %cycle, "composed resources depend on each other in a cycle; deleting them all");
    }
    // A deletion the API server refuses (a Usage protecting the resource
    // until its user, composed beside it, is gone) must not keep the others
    // from being deleted: the first refusal is reported once every
    // composed resource has been asked to go.
    let mut refused = None;
    for (name, (composed, object)) in &controlled {
        if order.deletable.contains(name)
            && object.pointer("/metadata/deletionTimestamp").is_none()
            && let Err(error) = composing
                .delete_async(composed, text(object, "/metadata/uid"))
                .await
        {
            refused.get_or_insert(error);
        }
    }
    ctx.shared
        .watches
        .track(&ctx.shared.cluster, &reference, kinds)
        .await;
    if let Some(error) = refused {
        return Err(
            ObjectError::cluster(&reference, "cannot delete a composed resource")(error).into(),
        );
    }
    if !controlled.is_empty() {
        let remaining: Vec<String> = controlled.values().map(|(c, _)| c.to_string()).collect();
        let message = order.waiting_message(&remaining);
        set_condition(
            &mut xr,
            plait_reconcile::READY,
            "False",
            "Deleting",
            Some(&message),
            &now(),
        );
        ctx.write_status(&xr).await?;
        // The composed watches bring the XR back as each one goes; the
        // requeue covers a watch that is still starting.
        return Ok(Action::requeue(
            ctx.shared.timing.poll_interval.min(Duration::from_secs(10)),
        ));
    }
    match object::remove_finalizer(&ctx.api(&reference), &xr, FINALIZER).await {
        Ok(_) => {}
        Err(e) if is_status(&e, 404) => {}
        Err(e) => {
            return Err(ObjectError::kube(&reference, "cannot remove its finalizer")(e).into());
        }
    }
    ctx.forget(&reference);
    Ok(Action::await_change())
}

/// The composed resources the XR's references name that still exist and
/// that it still controls, and their kinds.
async fn still_controlled(
    xr: &Value,
    reference: &ObjectRef,
    scope: CompositeScope,
    composing: &KubeCluster,
) -> Result<(Controlled, BTreeSet<Kind>), XrError> {
    let uid = text(xr, "/metadata/uid").unwrap_or_default();
    let refs = xr
        .pointer(&format!("{}/resourceRefs", scope.machinery_pointer()))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut controlled = Controlled::new();
    let mut kinds = BTreeSet::new();
    for r in refs {
        let (Some(api_version), Some(kind), Some(name)) = (
            text(&r, "/apiVersion"),
            text(&r, "/kind"),
            text(&r, "/name"),
        ) else {
            continue;
        };
        let namespace = match scope {
            CompositeScope::Namespaced => reference.namespace.clone(),
            _ => text(&r, "/namespace").map(str::to_string),
        };
        let composed = ObjectRef {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace,
            name: name.into(),
        };
        let Some(object) = composing
            .get_async(&composed)
            .await
            .map_err(ObjectError::cluster(
                reference,
                "cannot read a composed resource",
            ))?
        else {
            continue;
        };
        if compose::controller_uid(&object) != Some(uid) {
            continue;
        }
        kinds.insert((api_version.to_string(), kind.to_string()));
        let name = object
            .pointer(&plait_reconcile::pointer::annotation(
                ANNOTATION_RESOURCE_NAME,
            ))
            .and_then(Value::as_str)
            .map_or_else(|| composed.to_string(), str::to_string);
        controlled.insert(name, (composed, object));
    }
    Ok((controlled, kinds))
}

/// Which composed resources go now: in reverse of the order they were
/// created in, a resource goes once nothing left depends on it (the graph
/// read back from the resources' own annotations, so no pipeline has to
/// run).
#[derive(Debug, PartialEq, Eq)]
struct DeletionOrder {
    /// The resources that may go now, by name in the Composition.
    deletable: BTreeSet<String>,
    /// Why each of the others waits.
    held: Vec<String>,
    /// The order the resources declare, when it is a cycle (nothing would
    /// ever go first, so all go).
    cycle: Option<String>,
}

impl DeletionOrder {
    fn of(controlled: &Controlled) -> DeletionOrder {
        let graph = Graph::of(controlled.iter().map(|(name, (_, o))| (name.as_str(), o)));
        let left: BTreeSet<&str> = controlled.keys().map(String::as_str).collect();
        let mut deletable = graph.deletable(&left);
        let mut cycle = None;
        // With nothing left, nothing goes first and there is no cycle.
        if deletable.is_empty() && !left.is_empty() {
            // Only a cycle written onto the resources by hand gets here (the
            // reconcile refuses to create one): nothing would ever go first.
            cycle = Some(graph.describe());
            deletable = left.clone();
        }
        let held = left
            .iter()
            .filter(|name| !deletable.contains(*name))
            .map(|name| {
                let dependents: Vec<&str> = graph
                    .depends_on
                    .iter()
                    .filter(|(d, deps)| left.contains(d.as_str()) && deps.contains(*name))
                    .map(|(d, _)| d.as_str())
                    .collect();
                format!("{name} waits for {} to go", dependents.join(", "))
            })
            .collect();
        DeletionOrder {
            deletable: deletable.into_iter().map(str::to_string).collect(),
            held,
            cycle,
        }
    }

    /// The `Ready=False` message while `remaining` are still there.
    fn waiting_message(&self, remaining: &[String]) -> String {
        let mut message = format!(
            "Waiting for composed resources to be deleted: {}",
            remaining.join(", ")
        );
        if !self.held.is_empty() {
            message.push_str(&format!(
                "; deleting in reverse dependency order: {}",
                self.held.join("; ")
            ));
        }
        message
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn controlled(resources: &[(&str, &str)]) -> Controlled {
        resources
            .iter()
            .map(|(name, depends_on)| {
                let object = json!({"metadata": {"annotations": {
                    "ordering.plait.dev/depends-on": depends_on,
                }}});
                let reference = ObjectRef {
                    api_version: "v1".into(),
                    kind: "ConfigMap".into(),
                    namespace: Some("team-a".into()),
                    name: (*name).into(),
                };
                ((*name).to_string(), (reference, object))
            })
            .collect()
    }

    #[test]
    fn composed_resources_go_in_reverse_of_the_order_they_declare() {
        // (resources and what each depends on, deletable now, why the others
        // wait, whether the order is a cycle)
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str], &'a [&'a str], bool);
        let cases: [Case; 6] = [
            (
                &[("db", ""), ("app", "db")],
                &["app"],
                &["db waits for app to go"],
                false,
            ),
            (
                &[("net", ""), ("db", "net"), ("app", "db, net")],
                &["app"],
                &["db waits for app to go", "net waits for app, db to go"],
                false,
            ),
            (&[("a", ""), ("b", "")], &["a", "b"], &[], false),
            (&[("a", "b"), ("b", "a")], &["a", "b"], &[], true),
            // The last pass of an XR's deletion: everything is gone.
            (&[], &[], &[], false),
            (&[("app", "")], &["app"], &[], false),
        ];
        for (resources, deletable, held, cycle) in cases {
            let order = DeletionOrder::of(&controlled(resources));
            let want: BTreeSet<String> = deletable.iter().map(|s| s.to_string()).collect();
            assert_eq!(order.deletable, want, "{resources:?}");
            assert_eq!(order.held, held, "{resources:?}");
            assert_eq!(order.cycle.is_some(), cycle, "{resources:?}");
        }
    }

    #[test]
    fn the_waiting_message_names_what_remains_and_what_waits() {
        let order = DeletionOrder {
            deletable: BTreeSet::from(["app".to_string()]),
            held: vec!["db waits for app to go".into()],
            cycle: None,
        };
        assert_eq!(
            order.waiting_message(&["v1/ConfigMap team-a/app".into()]),
            "Waiting for composed resources to be deleted: v1/ConfigMap team-a/app; deleting in reverse dependency order: db waits for app to go"
        );
    }
}
