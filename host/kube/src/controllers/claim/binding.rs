//! How a claim and its XR map onto each other: the XR a claim wants, what
//! the claim takes back from its XR, and the XR's name.

use kube::api::ApiResource;
use plait_model::CompositeResourceDefinition;
use plait_reconcile::compose::deterministic_name;
use plait_reconcile::{LABEL_CLAIM_NAME, LABEL_CLAIM_NAMESPACE};
use serde_json::{Map, Value, json};

use crate::vocabulary::api::ANNOTATION_EXTERNAL_NAME;
use crate::vocabulary::object::text;

/// Claim spec fields that stay on the claim; the rest of its spec is the XR's.
const CLAIM_ONLY_FIELDS: &[&str] = &[
    "compositeDeletePolicy",
    "resourceRef",
    "writeConnectionSecretToRef",
    "compositionRevisionRef",
    // XR machinery a claim must not set on its XR.
    "resourceRefs",
    "claimRef",
];
/// XR status fields that are not the claim's to mirror.
const XR_ONLY_STATUS: &[&str] = &["conditions", "connectionDetails", "claimConditionTypes"];

/// Labels and annotations whose domain is Kubernetes' own stay on the claim.
fn without_reserved(map: Option<&Value>) -> Map<String, Value> {
    map.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter(|(k, _)| {
                    !k.split_once('/').is_some_and(|(domain, _)| {
                        domain.ends_with("kubernetes.io") || domain.ends_with("k8s.io")
                    })
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// How a claim refers to itself in its XR's `spec.claimRef`.
pub fn claim_ref(claim: &Value, claim_resource: &ApiResource) -> Value {
    json!({
        "apiVersion": claim_resource.api_version,
        "kind": claim_resource.kind,
        "name": claim["metadata"]["name"],
        "namespace": claim["metadata"]["namespace"],
    })
}

/// The XR `claim` wants: its spec minus claim-only fields, its labels and
/// annotations, the claim labels and `spec.claimRef`.
pub fn desired_xr(
    claim: &Value,
    xr: Option<&Value>,
    name: &str,
    xrd: &CompositeResourceDefinition,
    claim_resource: &ApiResource,
    xr_resource: &ApiResource,
) -> Value {
    let mut spec = claim
        .get("spec")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let manual = xr.and_then(|x| text(x, "/spec/compositionUpdatePolicy")) == Some("Manual");
    for field in CLAIM_ONLY_FIELDS {
        if *field == "compositionRevisionRef" && manual {
            continue;
        }
        spec.remove(*field);
    }
    if xrd.spec.enforced_composition_ref.is_some() {
        spec.remove("compositionRef");
    }
    spec.insert("claimRef".into(), claim_ref(claim, claim_resource));
    let mut labels = without_reserved(claim.pointer("/metadata/labels"));
    labels.insert(LABEL_CLAIM_NAME.into(), claim["metadata"]["name"].clone());
    labels.insert(
        LABEL_CLAIM_NAMESPACE.into(),
        claim["metadata"]["namespace"].clone(),
    );
    let mut annotations = without_reserved(claim.pointer("/metadata/annotations"));
    // A statically provisioned XR keeps the external name it has.
    if let Some(external) =
        xr.and_then(|x| x.pointer("/metadata/annotations/crossplane.io~1external-name"))
    {
        annotations.insert(ANNOTATION_EXTERNAL_NAME.into(), external.clone());
    }
    let mut metadata = json!({"name": name, "labels": labels});
    if !annotations.is_empty() {
        metadata["annotations"] = Value::Object(annotations);
    }
    json!({
        "apiVersion": xr_resource.api_version,
        "kind": xr_resource.kind,
        "metadata": metadata,
        "spec": spec,
    })
}

/// What the claim takes from its XR: the reference binding them, the XR's
/// external name and the composition choices the XR controller made.
pub fn claim_from_xr(
    claim: &Value,
    xr: &Value,
    xrd: &CompositeResourceDefinition,
    xr_resource: &ApiResource,
) -> Value {
    let mut spec = Map::new();
    spec.insert(
        "resourceRef".into(),
        json!({"apiVersion": xr_resource.api_version, "kind": xr_resource.kind, "name": xr["metadata"]["name"]}),
    );
    let claim_spec = &claim["spec"];
    let xr_spec = &xr["spec"];
    let composition_ref = if xrd.spec.enforced_composition_ref.is_some() {
        xr_spec
            .get("compositionRef")
            .or(claim_spec.get("compositionRef"))
    } else {
        claim_spec
            .get("compositionRef")
            .or(xr_spec.get("compositionRef"))
    };
    let revision_selector = claim_spec
        .get("compositionRevisionSelector")
        .or(xr_spec.get("compositionRevisionSelector"));
    let automatic = text(xr, "/spec/compositionUpdatePolicy") == Some("Automatic");
    let revision_ref = if automatic {
        xr_spec.get("compositionRevisionRef")
    } else {
        None
    };
    for (field, value) in [
        ("compositionRef", composition_ref),
        ("compositionRevisionSelector", revision_selector),
        ("compositionRevisionRef", revision_ref),
    ] {
        if let Some(v) = value.filter(|v| !v.is_null()) {
            spec.insert(field.into(), v.clone());
        }
    }
    let mut metadata = json!({
        "name": claim["metadata"]["name"],
        "namespace": claim["metadata"]["namespace"],
        "resourceVersion": claim["metadata"]["resourceVersion"],
    });
    if let Some(external) = xr.pointer("/metadata/annotations/crossplane.io~1external-name") {
        metadata["annotations"] = json!({ANNOTATION_EXTERNAL_NAME: external});
    }
    json!({
        "apiVersion": claim["apiVersion"],
        "kind": claim["kind"],
        "metadata": metadata,
        "spec": spec,
    })
}

/// The claim's status: the XR's, minus what only the XR has, with the
/// claim's own conditions and publish time.
pub fn status_from_xr(claim: &Value, xr: &Value) -> Value {
    let mut status = xr
        .get("status")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for field in XR_ONLY_STATUS {
        status.remove(*field);
    }
    for field in ["conditions", "connectionDetails"] {
        if let Some(v) = claim.pointer(&format!("/status/{field}")) {
            status.insert(field.into(), v.clone());
        }
    }
    Value::Object(status)
}

/// Deterministic per claim, so a reconcile that stopped between naming
/// and recording the XR names the same XR the next time.
pub fn xr_name(claim_name: &str, claim_uid: &str, attempt: u32) -> String {
    deterministic_name(&format!("{claim_name}-"), claim_uid, &attempt.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::tests::resources;
    use super::*;
    use plait_model::Manifest;

    fn xrd(enforced: bool) -> CompositeResourceDefinition {
        let mut value = json!({
            "apiVersion": "apiextensions.crossplane.io/v1",
            "kind": "CompositeResourceDefinition",
            "metadata": {"name": "xapps.example.org"},
            "spec": {"group": "example.org", "names": {"kind": "XApp", "plural": "xapps"},
                     "claimNames": {"kind": "App", "plural": "apps"}},
        });
        if enforced {
            value["spec"]["enforcedCompositionRef"] = json!({"name": "enforced"});
        }
        CompositeResourceDefinition::from_value(value).unwrap()
    }

    fn claim(spec: Value) -> Value {
        json!({
            "apiVersion": "example.org/v1", "kind": "App",
            "metadata": {"name": "c", "namespace": "ns", "uid": "u", "resourceVersion": "3",
                "labels": {"team": "a", "app.kubernetes.io/name": "x"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "note": "n"}},
            "spec": spec,
        })
    }

    #[test]
    fn the_xr_gets_the_claim_spec_minus_claim_only_fields_and_xr_machinery() {
        let (claim_r, xr_r) = resources();
        let spec = json!({
            "image": "one",
            "compositionRef": {"name": "mine"},
            "compositionRevisionRef": {"name": "rev"},
            "compositeDeletePolicy": "Foreground",
            "resourceRef": {"apiVersion": "example.org/v1", "kind": "XApp", "name": "x"},
            "writeConnectionSecretToRef": {"name": "s"},
            // XR machinery a claim whose schema preserves unknown fields
            // could carry: not copied to the XR (Crossplane v2.4).
            "resourceRefs": [{"apiVersion": "v1", "kind": "Secret", "name": "theirs"}],
            "claimRef": {"apiVersion": "example.org/v1", "kind": "App", "name": "other", "namespace": "elsewhere"},
        });
        let manual = json!({"spec": {"compositionUpdatePolicy": "Manual"}});
        let cases = [
            // (enforced, existing XR, wanted spec keys)
            (false, None, vec!["claimRef", "compositionRef", "image"]),
            (true, None, vec!["claimRef", "image"]),
            (
                false,
                Some(&manual),
                vec![
                    "claimRef",
                    "compositionRef",
                    "compositionRevisionRef",
                    "image",
                ],
            ),
        ];
        for (enforced, existing, want) in cases {
            let xr = desired_xr(
                &claim(spec.clone()),
                existing,
                "c-1",
                &xrd(enforced),
                &claim_r,
                &xr_r,
            );
            let keys: Vec<&str> = xr["spec"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(keys, want, "enforced={enforced} existing={existing:?}");
            assert_eq!(
                xr["spec"]["claimRef"],
                json!({"apiVersion": "example.org/v1", "kind": "App", "name": "c", "namespace": "ns"})
            );
            assert_eq!(
                xr["metadata"],
                json!({
                    "name": "c-1",
                    "labels": {"team": "a", LABEL_CLAIM_NAME: "c", LABEL_CLAIM_NAMESPACE: "ns"},
                    "annotations": {"note": "n"},
                }),
                "labels and annotations in Kubernetes' own domains stay on the claim"
            );
        }
    }

    #[test]
    fn the_claim_takes_its_binding_and_composition_choices_from_the_xr() {
        let (_, xr_r) = resources();
        let xr = json!({
            "metadata": {"name": "c-1", "annotations": {ANNOTATION_EXTERNAL_NAME: "ext"}},
            "spec": {"compositionRef": {"name": "picked"}, "compositionUpdatePolicy": "Automatic",
                     "compositionRevisionRef": {"name": "picked-rev"}},
        });
        let cases = [
            (false, json!({}), "picked"),
            (false, json!({"compositionRef": {"name": "mine"}}), "mine"),
            (true, json!({"compositionRef": {"name": "mine"}}), "picked"),
        ];
        for (enforced, spec, want) in cases {
            let patch = claim_from_xr(&claim(spec), &xr, &xrd(enforced), &xr_r);
            assert_eq!(
                patch["spec"]["compositionRef"]["name"], want,
                "enforced={enforced}"
            );
            assert_eq!(
                patch["spec"]["resourceRef"],
                json!({"apiVersion": "example.org/v1", "kind": "XApp", "name": "c-1"})
            );
            assert_eq!(
                patch["spec"]["compositionRevisionRef"]["name"],
                "picked-rev"
            );
            assert_eq!(
                patch["metadata"]["annotations"][ANNOTATION_EXTERNAL_NAME],
                "ext"
            );
            assert_eq!(
                patch["metadata"]["resourceVersion"], "3",
                "a stale claim conflicts"
            );
        }
    }

    #[test]
    fn the_claim_status_mirrors_the_xr_but_keeps_its_own_conditions() {
        let mut c = claim(json!({}));
        c["status"] = json!({
            "conditions": [{"type": "Synced", "status": "True"}],
            "connectionDetails": {"lastPublishedTime": "t"},
            "stale": 1,
        });
        let xr = json!({"status": {
            "address": "a",
            "conditions": [{"type": "Ready", "status": "False"}],
            "connectionDetails": {"lastPublishedTime": "x"},
            "claimConditionTypes": ["Custom"],
        }});
        assert_eq!(
            status_from_xr(&c, &xr),
            json!({
                "address": "a",
                "conditions": [{"type": "Synced", "status": "True"}],
                "connectionDetails": {"lastPublishedTime": "t"},
            })
        );
    }

    #[test]
    fn generated_xr_names_are_stable_per_claim_and_attempt() {
        assert_eq!(xr_name("c", "u", 0), xr_name("c", "u", 0));
        assert_ne!(xr_name("c", "u", 0), xr_name("c", "u", 1));
        assert_ne!(xr_name("c", "u", 0), xr_name("c", "v", 0));
        assert!(xr_name("c", "u", 0).starts_with("c-"));
        assert!(xr_name(&"c".repeat(80), "u", 0).len() <= 63);
    }
}
