//! Deleting an XR: what it composed goes first, in reverse of the order
//! its resources declare, then its finalizer.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kube::runtime::controller::Action;
use plait_reconcile::ordering::Graph;
use plait_reconcile::{
    ANNOTATION_RESOURCE_NAME, COMPOSITE_FIELD_MANAGER, CompositeScope, ObjectRef, compose,
    set_condition,
};
use serde_json::Value;

use super::{FINALIZER, XrContext, XrError};
use crate::controllers::kit::ObjectError;
use crate::controllers::timing::now;
use crate::vocabulary::object::{self, is_status, text};

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
    let uid = text(&xr, "/metadata/uid").unwrap_or_default().to_string();
    let refs = xr
        .pointer(&format!("{}/resourceRefs", scope.machinery_pointer()))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let composing = ctx
        .composing_cluster(&plait_reconcile::tenant_of(&xr, scope))
        .map_err(ObjectError::cluster(&reference, "cannot act as its tenant"))?;
    // What the XR still controls, by name in the Composition.
    let mut controlled: BTreeMap<String, (ObjectRef, Value)> = BTreeMap::new();
    let mut kinds = BTreeSet::new();
    // A deletion the API server refuses (a Usage protecting the resource
    // until its user, composed beside it, is gone) must not keep the others
    // from being deleted: the first refusal is reported once every
    // composed resource has been asked to go.
    let mut refused = None;
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
                &reference,
                "cannot read a composed resource",
            ))?
        else {
            continue;
        };
        if compose::controller_uid(&object) != Some(uid.as_str()) {
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
    // In reverse of the order they were created in: a resource goes once
    // nothing left depends on it (the graph read back from the resources'
    // own annotations, so no pipeline has to run).
    let graph = Graph::of(controlled.iter().map(|(name, (_, o))| (name.as_str(), o)));
    let left: BTreeSet<&str> = controlled.keys().map(String::as_str).collect();
    let mut deletable = graph.deletable(&left);
    if deletable.is_empty() {
        // Only a cycle written onto the resources by hand gets here (the
        // reconcile refuses to create one): nothing would ever go first.
        tracing::warn!(composite = %reference, order = graph.describe(), "composed resources depend on each other in a cycle; deleting them all");
        deletable = left.clone();
    }
    let mut held = Vec::new();
    for (name, (composed, object)) in &controlled {
        if !deletable.contains(name.as_str()) {
            let dependents: Vec<&str> = graph
                .depends_on
                .iter()
                .filter(|(d, deps)| left.contains(d.as_str()) && deps.contains(name))
                .map(|(d, _)| d.as_str())
                .collect();
            held.push(format!("{name} waits for {} to go", dependents.join(", ")));
            continue;
        }
        if object.pointer("/metadata/deletionTimestamp").is_none()
            && let Err(error) = composing
                .delete_async(composed, text(object, "/metadata/uid"))
                .await
        {
            refused.get_or_insert(error);
        }
    }
    let remaining: Vec<String> = controlled.values().map(|(c, _)| c.to_string()).collect();
    ctx.shared
        .watches
        .track(&ctx.shared.cluster, &reference, kinds)
        .await;
    if let Some(error) = refused {
        return Err(
            ObjectError::cluster(&reference, "cannot delete a composed resource")(error).into(),
        );
    }
    if !remaining.is_empty() {
        let mut message = format!(
            "Waiting for composed resources to be deleted: {}",
            remaining.join(", ")
        );
        if !held.is_empty() {
            message.push_str(&format!(
                "; deleting in reverse dependency order: {}",
                held.join("; ")
            ));
        }
        set_condition(
            &mut xr,
            plait_reconcile::READY,
            "False",
            "Deleting",
            Some(&message),
            &now(),
        );
        ctx.shared
            .cluster
            .apply_async(&xr, COMPOSITE_FIELD_MANAGER, true)
            .await
            .map_err(ObjectError::cluster(&reference, "cannot write its status"))?;
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
