//! The admission webhook's answers: whether a deletion is refused because
//! a Usage protects the resource, and whether a Usage itself is refused.

use kube::api::{ApiResource, ListParams, Patch, PatchParams};
use plait_reconcile::{ObjectRef, pointer};
use serde_json::{Value, json};

use super::spec;
use crate::vocabulary::api::{
    ANNOTATION_DELETION_ATTEMPT, PROTECTION_GROUP, cluster_usage_resource, legacy_usage_resource,
    usage_resource,
};
use crate::vocabulary::object::{api_for, text, to_value};

/// The Usages that protect `object`: the Usages of its namespace, or for a
/// cluster-scoped object the ClusterUsages and Crossplane v1's (legacy)
/// Usages. Those being deleted count until their finalizer goes, as
/// upstream.
pub async fn usages_of(client: &kube::Client, object: &Value) -> Result<Vec<Value>, kube::Error> {
    let namespace = text(object, "/metadata/namespace");
    let kinds = match namespace {
        Some(_) => vec![usage_resource()],
        None => vec![cluster_usage_resource(), legacy_usage_resource()],
    };
    let mut found = Vec::new();
    for resource in kinds {
        let list = match api_for(client, &resource, namespace)
            .list(&ListParams::default())
            .await
        {
            Ok(list) => list,
            // A cluster whose CRDs predate the legacy Usage's has none.
            Err(kube::Error::Api(status))
                if status.code == 404 && resource.group != PROTECTION_GROUP =>
            {
                continue;
            }
            Err(error) => return Err(error),
        };
        for item in &list.items {
            let usage = to_value(item, &resource).map_err(kube::Error::SerdeError)?;
            if spec::refers_to(&usage, object) {
                found.push(usage);
            }
        }
    }
    Ok(found)
}

/// The admission webhook's answer to a deletion of `object` with the
/// propagation `policy`: the refusal's message when a Usage protects it.
/// Unless `dry_run`, a refusal stamps the deletion attempt on the object
/// (`usage.crossplane.io/deletion-attempt-with-policy`), which a Usage with
/// `replayDeletion` acts on when it goes; a stamp that fails is logged and
/// the deletion refused all the same. An error means the Usages could not
/// be listed.
pub async fn refuse_deletion(
    client: &kube::Client,
    object: &Value,
    policy: &str,
    dry_run: bool,
) -> Result<Option<String>, kube::Error> {
    let usages = usages_of(client, object).await?;
    if usages.is_empty() {
        return Ok(None);
    }
    let message = spec::in_use_message(&usages);
    let attempt = pointer::annotation(ANNOTATION_DELETION_ATTEMPT);
    if !dry_run
        && object.pointer(&attempt).and_then(Value::as_str) != Some(policy)
        && let Some(target) = ObjectRef::of(object)
    {
        let patch = json!({"metadata": {"annotations": {ANNOTATION_DELETION_ATTEMPT: policy}}});
        let stamped = match discovered(client, &target).await {
            Ok(resource) => api_for(client, &resource, target.namespace.as_deref())
                .patch(&target.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map(drop),
            Err(e) => Err(e),
        };
        // The refusal stands either way: what protects the resource matters
        // more than remembering the attempt (upstream answers 500 instead).
        if let Err(error) = stamped {
            tracing::warn!(object = %target, %error, "cannot record the refused deletion; replayDeletion will not replay it");
        }
    }
    Ok(Some(message))
}

/// The admission webhook's answer to a Usage created or updated: why it is
/// refused, if it is. A namespaced Usage may protect only a resource of its
/// own namespace, so neither one in another namespace nor one of a
/// cluster-scoped kind (upstream refuses the latter too). A kind the API
/// server does not serve (yet) is admitted; the controller judges it later.
pub async fn refuse_usage(
    client: &kube::Client,
    usage: &Value,
) -> Result<Option<String>, kube::Error> {
    if let Some(foreign) = spec::foreign_namespace(usage) {
        return Ok(Some(spec::foreign_namespace_message(usage, &foreign)));
    }
    let (Some(_), Some(of)) = (spec::namespace(usage), spec::of(usage)) else {
        return Ok(None);
    };
    match kube::discovery::pinned_kind(client, &gvk_of(&of.api_version, &of.kind)).await {
        Ok((_, capabilities)) if capabilities.scope == kube::discovery::Scope::Cluster => Ok(Some(
            spec::cluster_scoped_message(&of.api_version, &of.kind),
        )),
        Ok(_) => Ok(None),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
        Err(kube::Error::Discovery(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

fn gvk_of(api_version: &str, kind: &str) -> kube::api::GroupVersionKind {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    kube::api::GroupVersionKind::gvk(group, version, kind)
}

/// The resource serving `object`'s kind, by discovery.
async fn discovered(client: &kube::Client, object: &ObjectRef) -> Result<ApiResource, kube::Error> {
    kube::discovery::pinned_kind(client, &gvk_of(&object.api_version, &object.kind))
        .await
        .map(|(resource, _)| resource)
}
