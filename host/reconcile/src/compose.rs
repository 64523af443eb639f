//! Turns a desired state into the objects to apply and the objects to delete.

use std::collections::BTreeMap;

use plait_model::{FieldError, FieldPath};
use plait_sdk::State;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::{
    ANNOTATION_RESOURCE_NAME, CompositeScope, LABEL_CLAIM_NAME, LABEL_CLAIM_NAMESPACE,
    LABEL_COMPOSITE, ObjectRef,
};

/// Kubernetes' limit on generated names that must also be valid labels.
const MAX_NAME_LENGTH: usize = 63;
const HASH_LENGTH: usize = 12;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ComposeError {
    #[error(
        "encountered composed resource without required \"crossplane.io/composition-resource-name\" annotation: {0}"
    )]
    MissingAnnotation(String),
    #[error("composed resource {name:?}: {detail}")]
    Invalid { name: String, detail: String },
    #[error("refusing to delete composed resource {name:?} that is controlled by {controller}")]
    ControlledByOther { name: String, controller: String },
}

/// An observed resource to delete, with the UID it must still have.
#[derive(Debug, Clone, PartialEq)]
pub struct Garbage {
    pub reference: ObjectRef,
    pub uid: Option<String>,
}

/// What to apply and delete.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Objects to apply, by their name in the Composition.
    pub objects: BTreeMap<String, Value>,
    pub garbage: Vec<Garbage>,
    /// The XR's new `resourceRefs`, sorted.
    pub refs: Vec<Value>,
}

/// The UID of an object's controller, if it has one.
pub fn controller_uid(object: &Value) -> Option<&str> {
    controller_ref(object)
        .and_then(|r| r.get("uid"))
        .and_then(Value::as_str)
}

fn controller_ref(object: &Value) -> Option<&Value> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
}

/// The name the controller gives a new composed resource: the generateName
/// prefix followed by a hash of the owner's UID and the resource's name in
/// the Composition, so it is the same on every reconcile and every replica.
pub fn deterministic_name(prefix: &str, owner_uid: &str, resource_name: &str) -> String {
    let hash = hex::encode(Sha256::digest(format!("{owner_uid}{resource_name}")));
    let hash = &hash[..HASH_LENGTH];
    let mut prefix = prefix.to_string();
    if !prefix.ends_with('-') {
        prefix.push('-');
    }
    let room = MAX_NAME_LENGTH - HASH_LENGTH;
    if prefix.len() > room {
        let mut cut = room - 1;
        while !prefix.is_char_boundary(cut) {
            cut -= 1;
        }
        prefix.truncate(cut);
        prefix = prefix.trim_end_matches(['-', '.']).to_string();
        prefix.push('-');
    }
    format!("{prefix}{hash}")
}

pub fn plan(
    xr: &Value,
    xr_uid: &str,
    scope: CompositeScope,
    observed: &State,
    desired: &State,
) -> Result<Plan, ComposeError> {
    let xr_name = xr
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let labels = xr.pointer("/metadata/labels");
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let composite_label = label(LABEL_COMPOSITE).unwrap_or(xr_name).to_string();
    let claim = label(LABEL_CLAIM_NAME).zip(label(LABEL_CLAIM_NAMESPACE));
    let xr_namespace = match scope {
        CompositeScope::Namespaced => xr.pointer("/metadata/namespace").and_then(Value::as_str),
        _ => None,
    };
    let owner = json!({
        "apiVersion": xr["apiVersion"],
        "kind": xr["kind"],
        "name": xr_name,
        "uid": xr_uid,
        "controller": true,
        "blockOwnerDeletion": true,
    });

    let mut objects = BTreeMap::new();
    for (name, resource) in &desired.resources {
        let invalid = |detail: String| ComposeError::Invalid {
            name: name.clone(),
            detail,
        };
        let mut object = resource.resource.clone();
        if !object.get("metadata").is_some_and(Value::is_object) {
            object["metadata"] = json!({});
        }
        let observed_object = observed.resources.get(name).map(|r| &r.resource);
        if let Some(observed_object) = observed_object {
            for field in ["name", "namespace", "generateName"] {
                if let Some(v) = observed_object.pointer(&format!("/metadata/{field}")) {
                    object["metadata"][field] = v.clone();
                }
            }
        }
        if let Some(controller) = controller_ref(&object)
            && controller.get("uid").and_then(Value::as_str) != Some(xr_uid)
        {
            return Err(invalid(format!(
                "is already controlled by {} {:?}",
                controller["kind"].as_str().unwrap_or("object"),
                controller["name"].as_str().unwrap_or_default()
            )));
        }
        let metadata = object["metadata"]
            .as_object_mut()
            .ok_or_else(|| invalid("metadata must be an object".into()))?;
        let has = |m: &Map<String, Value>, k: &str| {
            m.get(k)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
        };
        if !has(metadata, "name") && !has(metadata, "generateName") {
            metadata.insert("generateName".into(), json!(format!("{composite_label}-")));
        }
        if let Some(ns) = xr_namespace {
            metadata.insert("namespace".into(), json!(ns));
        }
        let annotations = ensure_object(metadata, "annotations");
        annotations.insert(ANNOTATION_RESOURCE_NAME.into(), json!(name));
        let labels = ensure_object(metadata, "labels");
        labels.insert(LABEL_COMPOSITE.into(), json!(composite_label));
        if let Some((claim_name, claim_namespace)) = claim {
            labels.insert(LABEL_CLAIM_NAME.into(), json!(claim_name));
            labels.insert(LABEL_CLAIM_NAMESPACE.into(), json!(claim_namespace));
        }
        let owners = metadata
            .entry("ownerReferences")
            .or_insert_with(|| json!([]));
        if !owners.is_array() {
            *owners = json!([]);
        }
        if let Some(list) = owners.as_array_mut()
            && !list
                .iter()
                .any(|o| o.get("uid").and_then(Value::as_str) == Some(xr_uid))
        {
            list.push(owner.clone());
        }
        if !has(metadata, "name") {
            let prefix = metadata
                .get("generateName")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            metadata.insert(
                "name".into(),
                json!(deterministic_name(&prefix, xr_uid, name)),
            );
        }
        if let Some(n) = metadata.get("name").and_then(Value::as_str)
            && let Err(why) = plait_pipeline::check::rfc1123_subdomain(n)
        {
            return Err(invalid(
                FieldError::invalid(FieldPath::new("metadata").child("name"), n, why).to_string(),
            ));
        }
        objects.insert(name.clone(), object);
    }

    let mut garbage = Vec::new();
    for (name, resource) in &observed.resources {
        if desired.resources.contains_key(name) {
            continue;
        }
        let object = &resource.resource;
        let Some(reference) = ObjectRef::of(object) else {
            continue;
        };
        match controller_ref(object) {
            None => continue,
            Some(c) if c.get("uid").and_then(Value::as_str) != Some(xr_uid) => {
                return Err(ComposeError::ControlledByOther {
                    name: reference.name.clone(),
                    controller: format!(
                        "{} {:?}",
                        c["kind"].as_str().unwrap_or("object"),
                        c["name"].as_str().unwrap_or_default()
                    ),
                });
            }
            Some(_) => {}
        }
        garbage.push(Garbage {
            uid: object
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .map(str::to_string),
            reference,
        });
    }

    let mut refs: Vec<ObjectRef> = objects.values().filter_map(ObjectRef::of).collect();
    if scope == CompositeScope::Namespaced {
        // A namespaced XR's refs leave out the namespace: it is the XR's own.
        refs.iter_mut().for_each(|r| r.namespace = None);
    }
    sort_refs_like_upstream(&mut refs);
    let refs = refs
        .into_iter()
        .map(|r| {
            let mut v = json!({"apiVersion": r.api_version, "kind": r.kind, "name": r.name});
            if let Some(ns) = r.namespace {
                v["namespace"] = json!(ns);
            }
            v
        })
        .collect();
    Ok(Plan {
        objects,
        garbage,
        refs,
    })
}

/// Upstream orders resource references by the concatenation of apiVersion,
/// kind, name and namespace, not field by field (`Cluster` and
/// `ClusterAuth` named alike sort apart differently); an XR moved between
/// the two engines then keeps its references as they are.
fn sort_refs_like_upstream(refs: &mut [ObjectRef]) {
    refs.sort_by_cached_key(|r| {
        format!(
            "{}{}{}{}",
            r.api_version,
            r.kind,
            r.name,
            r.namespace.as_deref().unwrap_or_default()
        )
    });
}

fn ensure_object<'m>(map: &'m mut Map<String, Value>, key: &str) -> &'m mut Map<String, Value> {
    let entry = map.entry(key).or_insert_with(|| json!({}));
    if !entry.is_object() {
        *entry = json!({});
    }
    match entry {
        Value::Object(m) => m,
        _ => unreachable!("just made an object"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_refs_sort_by_their_concatenated_identity_like_upstream() {
        let r = |api_version: &str, kind: &str, name: &str| ObjectRef {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: None,
            name: name.into(),
        };
        let cases = [
            (
                vec![
                    r("eks.aws.upbound.io/v1beta1", "Cluster", "x-1"),
                    r("eks.aws.upbound.io/v1beta1", "ClusterAuth", "x-1"),
                ],
                vec!["ClusterAuth", "Cluster"],
            ),
            (
                vec![
                    r("iam.aws.upbound.io/v1beta1", "Role", "app"),
                    r("iam.aws.upbound.io/v1beta1", "RolePolicyAttachment", "app"),
                ],
                vec!["RolePolicyAttachment", "Role"],
            ),
            (
                vec![
                    r("ec2.aws.upbound.io/v1beta1", "Route", "x"),
                    r("ec2.aws.upbound.io/v1beta1", "RouteTable", "x"),
                ],
                vec!["RouteTable", "Route"],
            ),
        ];
        for (mut refs, want) in cases {
            sort_refs_like_upstream(&mut refs);
            let kinds: Vec<&str> = refs.iter().map(|r| r.kind.as_str()).collect();
            assert_eq!(kinds, want);
        }
    }
}
