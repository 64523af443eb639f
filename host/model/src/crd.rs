//! The CustomResourceDefinitions an XRD defines, generated as upstream's
//! `xcrd.ForCompositeResource` and `xcrd.ForCompositeResourceClaim` do.

use crate::{CompositeDeletePolicy, CompositeResourceDefinition, Manifest, UpdatePolicy, XrdScope};
use serde_json::{Map, Value, json};

/// The category every XR CRD is in, so `kubectl get composite` lists them all.
pub const CATEGORY_COMPOSITE: &str = "composite";
/// The category every claim CRD is in, so `kubectl get claim` lists them all.
pub const CATEGORY_CLAIM: &str = "claim";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CrdError {
    #[error("spec.versions[{index}].schema.openAPIV3Schema.{field}: must be an object")]
    NotAnObject { index: usize, field: &'static str },
    #[error("metadata.uid: the XRD has no UID yet")]
    MissingUid,
    #[error("spec.claimNames: missing names")]
    MissingClaimNames,
    #[error("invalid resource claim names: {0:?} conflicts with composite resource name")]
    ConflictingClaimName(String),
}

/// Generates the XR CRD for `xrd`, owned by the XRD (whose UID must be set).
pub fn composite_crd(xrd: &CompositeResourceDefinition) -> Result<Value, CrdError> {
    let uid = xrd.metadata.uid.clone().ok_or(CrdError::MissingUid)?;
    let scope = xrd.scope();
    let mut names = serde_json::to_value(&xrd.spec.names).unwrap_or_else(|_| json!({}));
    let mut categories: Vec<String> = xrd.spec.names.categories.clone();
    if !categories.iter().any(|c| c == CATEGORY_COMPOSITE) {
        categories.push(CATEGORY_COMPOSITE.into());
    }
    names["categories"] = json!(categories);

    let mut versions = Vec::new();
    for (index, version) in xrd.spec.versions.iter().enumerate() {
        let mut v = json!({
            "name": version.name,
            "served": version.served,
            "storage": version.referenceable,
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": version_schema(version.open_api_v3_schema(), scope, index, xrd.spec.default_composition_update_policy)?},
            "additionalPrinterColumns": printer_columns(&version.additional_printer_columns, scope),
        });
        if let Some(d) = version.deprecated {
            v["deprecated"] = json!(d);
        }
        if let Some(w) = &version.deprecation_warning {
            v["deprecationWarning"] = json!(w);
        }
        if let Some(scale) = version
            .extra
            .get("subresources")
            .and_then(|s| s.get("scale"))
        {
            v["subresources"]["scale"] = scale.clone();
        }
        versions.push(v);
    }

    let mut spec = json!({
        "group": xrd.spec.group,
        "names": names,
        "scope": if scope == XrdScope::Namespaced { "Namespaced" } else { "Cluster" },
        "versions": versions,
    });
    if let Some(conversion) = xrd.spec.extra.get("conversion") {
        spec["conversion"] = conversion.clone();
    }
    let metadata = owned_metadata(xrd, xrd.metadata.name(), &uid);
    Ok(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": spec,
    }))
}

/// A kind's (apiVersion, kind) and its OpenAPI v3 schema.
pub type ServedSchema = ((String, String), Value);

/// The OpenAPI v3 schema of every kind a definition file serves, by
/// (apiVersion, kind): from a CustomResourceDefinition as it is, and from an
/// XRD as the XR CRD plait generates for it (machinery and conditions
/// included), each marked with `x-kubernetes-group-version-kind` as the API
/// server's `/openapi/v3` marks them. Other objects serve no schema.
pub fn served_schemas(definition: &Value) -> Result<Vec<ServedSchema>, CrdError> {
    let text = |pointer: &str| {
        definition
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (group, kind) = (text("/spec/group"), text("/spec/names/kind"));
    let versions: Vec<(String, Value)> = match (
        text("/apiVersion").split('/').next(),
        text("/kind").as_str(),
    ) {
        (Some("apiextensions.k8s.io"), "CustomResourceDefinition") => definition
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| {
                let name = v.get("name")?.as_str()?.to_string();
                Some((name, v.pointer("/schema/openAPIV3Schema")?.clone()))
            })
            .collect(),
        (Some("apiextensions.crossplane.io"), "CompositeResourceDefinition") => {
            let Ok(xrd) = CompositeResourceDefinition::from_value(definition.clone()) else {
                return Ok(Vec::new());
            };
            let scope = xrd.scope();
            xrd.spec
                .versions
                .iter()
                .enumerate()
                .map(|(index, v)| {
                    Ok((
                        v.name.clone(),
                        version_schema(
                            v.open_api_v3_schema(),
                            scope,
                            index,
                            xrd.spec.default_composition_update_policy,
                        )?,
                    ))
                })
                .collect::<Result<_, CrdError>>()?
        }
        _ => Vec::new(),
    };
    Ok(versions
        .into_iter()
        .map(|(version, mut schema)| {
            schema["x-kubernetes-group-version-kind"] =
                json!([{"group": group, "version": version, "kind": kind}]);
            ((format!("{group}/{version}"), kind.clone()), schema)
        })
        .collect())
}

/// Metadata of a CRD generated for `xrd`: its labels and annotations, and
/// a controller reference to the XRD.
fn owned_metadata(xrd: &CompositeResourceDefinition, name: &str, uid: &str) -> Value {
    let mut labels = Map::new();
    for (k, v) in &xrd.metadata.labels {
        labels.insert(k.clone(), json!(v));
    }
    let mut annotations = Map::new();
    if let Some(meta) = &xrd.spec.metadata {
        for (k, v) in &meta.labels {
            labels.insert(k.clone(), json!(v));
        }
        for (k, v) in &meta.annotations {
            annotations.insert(k.clone(), json!(v));
        }
    }
    let mut metadata = json!({
        "name": name,
        "ownerReferences": [{
            "apiVersion": xrd.api_version,
            "kind": "CompositeResourceDefinition",
            "name": xrd.metadata.name(),
            "uid": uid,
            "controller": true,
            "blockOwnerDeletion": true,
        }],
    });
    if !labels.is_empty() {
        metadata["labels"] = Value::Object(labels);
    }
    if !annotations.is_empty() {
        metadata["annotations"] = Value::Object(annotations);
    }
    metadata
}

/// The name of the claim CRD `xrd` offers, if it offers claims.
pub fn claim_crd_name(xrd: &CompositeResourceDefinition) -> Option<String> {
    let names = xrd.spec.claim_names.as_ref()?;
    Some(format!("{}.{}", names.plural, xrd.spec.group))
}

/// Claim names may not reuse any of the XR's names: both kinds share a group.
pub fn validate_claim_names(xrd: &CompositeResourceDefinition) -> Result<(), CrdError> {
    let Some(claim) = &xrd.spec.claim_names else {
        return Err(CrdError::MissingClaimNames);
    };
    let xr = &xrd.spec.names;
    let conflicts = [
        Some((claim.kind.as_str(), xr.kind.as_str())),
        Some((claim.plural.as_str(), xr.plural.as_str())),
        claim.singular.as_deref().zip(xr.singular.as_deref()),
        claim.list_kind.as_deref().zip(xr.list_kind.as_deref()),
    ];
    for (claim_name, xr_name) in conflicts.into_iter().flatten() {
        if !claim_name.is_empty() && claim_name == xr_name {
            return Err(CrdError::ConflictingClaimName(claim_name.to_string()));
        }
    }
    Ok(())
}

/// Generates the claim CRD for an XRD that offers claims, as upstream's
/// `xcrd.ForCompositeResourceClaim` does: namespaced, in category `claim`,
/// with the claim machinery in its spec.
pub fn claim_crd(xrd: &CompositeResourceDefinition) -> Result<Value, CrdError> {
    validate_claim_names(xrd)?;
    let uid = xrd.metadata.uid.clone().ok_or(CrdError::MissingUid)?;
    let name = claim_crd_name(xrd).ok_or(CrdError::MissingClaimNames)?;
    let claim_names = xrd
        .spec
        .claim_names
        .as_ref()
        .ok_or(CrdError::MissingClaimNames)?;
    let mut names = serde_json::to_value(claim_names).unwrap_or_else(|_| json!({}));
    let mut categories = claim_names.categories.clone();
    categories.push(CATEGORY_CLAIM.into());
    names["categories"] = json!(categories);

    let delete_policy = match xrd.default_composite_delete_policy() {
        CompositeDeletePolicy::Background => "Background",
        CompositeDeletePolicy::Foreground => "Foreground",
    };
    let mut versions = Vec::new();
    for (index, version) in xrd.spec.versions.iter().enumerate() {
        let mut schema = base_schema(version.open_api_v3_schema(), index)?;
        for (k, v) in claim_machinery_properties(delete_policy) {
            schema["properties"]["spec"]["properties"][k] = v;
        }
        let status = &mut schema["properties"]["status"]["properties"];
        status["conditions"] = conditions_schema();
        legacy_status(status);
        let mut columns = version.additional_printer_columns.clone();
        columns.extend([
            json!({"name": "SYNCED", "type": "string", "jsonPath": ".status.conditions[?(@.type=='Synced')].status"}),
            json!({"name": "READY", "type": "string", "jsonPath": ".status.conditions[?(@.type=='Ready')].status"}),
            json!({"name": "CONNECTION-SECRET", "type": "string", "jsonPath": ".spec.writeConnectionSecretToRef.name"}),
            json!({"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"}),
        ]);
        let mut v = json!({
            "name": version.name,
            "served": version.served,
            "storage": version.referenceable,
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": schema},
            "additionalPrinterColumns": columns,
        });
        if let Some(d) = version.deprecated {
            v["deprecated"] = json!(d);
        }
        if let Some(w) = &version.deprecation_warning {
            v["deprecationWarning"] = json!(w);
        }
        versions.push(v);
    }
    let mut spec = json!({
        "group": xrd.spec.group,
        "names": names,
        "scope": "Namespaced",
        "versions": versions,
    });
    if let Some(conversion) = xrd.spec.extra.get("conversion") {
        spec["conversion"] = conversion.clone();
    }
    Ok(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": owned_metadata(xrd, &name, &uid),
        "spec": spec,
    }))
}

/// How an XR or claim chooses its Composition and revision; both kinds carry these.
fn composition_choice_properties() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("compositionRef".into(), reference(true));
    m.insert("compositionSelector".into(), selector());
    m.insert("compositionRevisionRef".into(), reference(true));
    m.insert("compositionRevisionSelector".into(), selector());
    m.insert(
        "compositionUpdatePolicy".into(),
        json!({"type": "string", "enum": ["Automatic", "Manual"]}),
    );
    m
}

/// The spec fields every claim has (upstream's `CompositeResourceClaimSpecProps`).
fn claim_machinery_properties(default_delete_policy: &str) -> Map<String, Value> {
    let mut m = composition_choice_properties();
    m.insert(
        "compositeDeletePolicy".into(),
        json!({"type": "string", "enum": ["Background", "Foreground"], "default": default_delete_policy}),
    );
    m.insert(
        "resourceRef".into(),
        json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "name": {"type": "string"},
            },
            "required": ["apiVersion", "kind", "name"],
        }),
    );
    m.insert("writeConnectionSecretToRef".into(), reference(true));
    m
}

/// The schema of one XR version. `update_policy` (the XRD's
/// `defaultCompositionUpdatePolicy`) is the default of the XR's
/// `compositionUpdatePolicy`, as upstream's generated CRDs have it.
fn version_schema(
    user: Option<&Value>,
    scope: XrdScope,
    index: usize,
    update_policy: Option<UpdatePolicy>,
) -> Result<Value, CrdError> {
    let mut schema = base_schema(user, index)?;
    let mut machinery = machinery_properties(scope);
    if let (Some(policy), Some(field)) =
        (update_policy, machinery.get_mut("compositionUpdatePolicy"))
    {
        field["default"] = json!(policy);
    }
    match scope {
        XrdScope::LegacyCluster => {
            for (k, v) in machinery {
                schema["properties"]["spec"]["properties"][k] = v;
            }
        }
        XrdScope::Namespaced | XrdScope::Cluster => {
            schema["properties"]["spec"]["properties"]["crossplane"] = json!({
                "type": "object",
                "description": "Configures how Crossplane will reconcile this composite resource",
                "properties": Value::Object(machinery),
            });
        }
    }

    let status = &mut schema["properties"]["status"]["properties"];
    status["conditions"] = conditions_schema();
    if scope == XrdScope::LegacyCluster {
        legacy_status(status);
    }
    Ok(schema)
}

/// The schema every generated version starts from: identity, a bounded
/// `metadata.name`, and the user's spec and status.
fn base_schema(user: Option<&Value>, index: usize) -> Result<Value, CrdError> {
    let empty = json!({});
    let user = user.unwrap_or(&empty);
    let user_props = user.get("properties");
    let mut schema = json!({
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {
                "type": "object",
                "properties": {"name": {"type": "string", "maxLength": metadata_name_max(user)}},
            },
            "spec": {"type": "object", "properties": {}},
            "status": {"type": "object", "properties": {}},
        },
    });
    for key in ["description", "x-kubernetes-validations"] {
        if let Some(v) = user.get(key) {
            schema[key] = v.clone();
        }
    }
    for (field, name) in [("spec", "properties.spec"), ("status", "properties.status")] {
        if let Some(user_field) = user_props.and_then(|p| p.get(field)) {
            let Some(fields) = user_field.as_object() else {
                return Err(CrdError::NotAnObject { index, field: name });
            };
            let target = &mut schema["properties"][field];
            for (k, v) in fields {
                if k == "type" {
                    continue;
                }
                target[k] = v.clone();
            }
            if !target["properties"].is_object() {
                target["properties"] = json!({});
            }
        }
    }
    Ok(schema)
}

/// Status fields of legacy XRs, which claims carry too.
fn legacy_status(status: &mut Value) {
    status["connectionDetails"] = json!({
        "type": "object",
        "properties": {"lastPublishedTime": {"type": "string", "format": "date-time"}},
    });
    status["claimConditionTypes"] = json!({
        "type": "array",
        "x-kubernetes-list-type": "set",
        "items": {"type": "string"},
    });
}

/// `metadata.name` may be no longer than a label value, or the user's limit if lower.
fn metadata_name_max(user: &Value) -> u64 {
    user.pointer("/properties/metadata/properties/name/maxLength")
        .and_then(Value::as_u64)
        .map_or(63, |m| m.min(63))
}

fn reference(required_name: bool) -> Value {
    let mut r = json!({"type": "object", "properties": {"name": {"type": "string"}}});
    if required_name {
        r["required"] = json!(["name"]);
    }
    r
}

fn selector() -> Value {
    json!({
        "type": "object",
        "properties": {
            "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        "required": ["matchLabels"],
    })
}

fn machinery_properties(scope: XrdScope) -> Map<String, Value> {
    let mut ref_properties = json!({
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "name": {"type": "string"},
    });
    if scope != XrdScope::Namespaced {
        ref_properties["namespace"] = json!({"type": "string"});
    }
    let mut m = composition_choice_properties();
    m.insert(
        "resourceRefs".into(),
        json!({
            "type": "array",
            "x-kubernetes-list-type": "atomic",
            "items": {
                "type": "object",
                "properties": ref_properties,
                "required": ["apiVersion", "kind"],
            },
        }),
    );
    if scope == XrdScope::LegacyCluster {
        m.insert(
            "claimRef".into(),
            json!({
                "type": "object",
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "namespace": {"type": "string"},
                    "name": {"type": "string"},
                },
                "required": ["apiVersion", "kind", "namespace", "name"],
            }),
        );
        m.insert(
            "writeConnectionSecretToRef".into(),
            json!({
                "type": "object",
                "properties": {"name": {"type": "string"}, "namespace": {"type": "string"}},
                "required": ["name", "namespace"],
            }),
        );
    }
    m
}

fn conditions_schema() -> Value {
    json!({
        "type": "array",
        "description": "Conditions of the resource.",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "type": "object",
            "required": ["lastTransitionTime", "reason", "status", "type"],
            "properties": {
                "lastTransitionTime": {"type": "string", "format": "date-time"},
                "message": {"type": "string"},
                "observedGeneration": {"type": "integer", "format": "int64"},
                "reason": {"type": "string"},
                "status": {"type": "string"},
                "type": {"type": "string"},
            },
        },
    })
}

fn printer_columns(user: &[Value], scope: XrdScope) -> Vec<Value> {
    let machinery = match scope {
        XrdScope::LegacyCluster => ".spec",
        XrdScope::Namespaced | XrdScope::Cluster => ".spec.crossplane",
    };
    let mut columns = user.to_vec();
    columns.extend([
        json!({"name": "SYNCED", "type": "string", "jsonPath": ".status.conditions[?(@.type=='Synced')].status"}),
        json!({"name": "READY", "type": "string", "jsonPath": ".status.conditions[?(@.type=='Ready')].status"}),
        json!({"name": "COMPOSITION", "type": "string", "jsonPath": format!("{machinery}.compositionRef.name")}),
        json!({"name": "COMPOSITIONREVISION", "type": "string", "jsonPath": format!("{machinery}.compositionRevisionRef.name"), "priority": 1}),
        json!({"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"}),
    ]);
    columns
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_serve_the_schema_of_each_version() {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "buckets.s3.example.org"},
            "spec": {"group": "s3.example.org", "names": {"kind": "Bucket", "plural": "buckets"},
                     "versions": [
                        {"name": "v1", "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}}},
                        {"name": "v2", "schema": {"openAPIV3Schema": {"type": "object"}}}]},
        });
        let xrd = json!({
            "apiVersion": "apiextensions.crossplane.io/v2", "kind": "CompositeResourceDefinition",
            "metadata": {"name": "apps.example.org"},
            "spec": {"group": "example.org", "names": {"kind": "App", "plural": "apps"}, "scope": "Namespaced",
                     "versions": [{"name": "v1alpha1", "served": true, "referenceable": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {"image": {"type": "string"}}}}}}}]},
        });
        let other = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
        // (definition, (apiVersion, kind) served, a pointer every schema has)
        let cases = [
            (
                &crd,
                vec![
                    ("s3.example.org/v1", "Bucket"),
                    ("s3.example.org/v2", "Bucket"),
                ],
                "/type",
            ),
            (
                &xrd,
                vec![("example.org/v1alpha1", "App")],
                "/properties/spec/properties/crossplane",
            ),
            (&other, vec![], "/type"),
        ];
        for (definition, want, pointer) in cases {
            let served = served_schemas(definition).unwrap();
            let keys: Vec<(&str, &str)> = served
                .iter()
                .map(|((a, k), _)| (a.as_str(), k.as_str()))
                .collect();
            assert_eq!(keys, want, "{definition}");
            for ((api_version, kind), schema) in &served {
                assert!(
                    schema.pointer(pointer).is_some(),
                    "{api_version} {kind}: {schema}"
                );
                let gvk = &schema["x-kubernetes-group-version-kind"][0];
                assert_eq!(
                    format!(
                        "{}/{}",
                        gvk["group"].as_str().unwrap(),
                        gvk["version"].as_str().unwrap()
                    ),
                    *api_version
                );
                assert_eq!(gvk["kind"], kind.as_str());
            }
        }
    }

    fn xrd(api_version: &str, scope: Option<&str>) -> CompositeResourceDefinition {
        let mut value = json!({
            "apiVersion": api_version,
            "kind": "CompositeResourceDefinition",
            "metadata": {"name": "apps.example.org", "uid": "xrd-uid", "labels": {"team": "a"}},
            "spec": {
                "group": "example.org",
                "names": {"kind": "App", "plural": "apps"},
                "versions": [
                    {"name": "v1alpha1", "served": true, "referenceable": false,
                     "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v1beta1", "served": true, "referenceable": true,
                     "additionalPrinterColumns": [{"name": "IMAGE", "type": "string", "jsonPath": ".spec.image"}],
                     "schema": {"openAPIV3Schema": {"type": "object", "description": "An app.",
                        "properties": {"spec": {"type": "object", "required": ["image"],
                            "properties": {"image": {"type": "string"}}}}}}},
                ],
            },
        });
        if let Some(s) = scope {
            value["spec"]["scope"] = json!(s);
        }
        CompositeResourceDefinition::from_value(value).unwrap()
    }

    #[test]
    fn scope_decides_crd_scope_and_where_machinery_lives() {
        let cases = [
            (
                xrd("apiextensions.crossplane.io/v2", None),
                "Namespaced",
                "/spec/properties/crossplane/properties",
                ".spec.crossplane.compositionRef.name",
            ),
            (
                xrd("apiextensions.crossplane.io/v2", Some("Cluster")),
                "Cluster",
                "/spec/properties/crossplane/properties",
                ".spec.crossplane.compositionRef.name",
            ),
            (
                xrd("apiextensions.crossplane.io/v1", None),
                "Cluster",
                "/spec/properties",
                ".spec.compositionRef.name",
            ),
        ];
        for (xrd, crd_scope, machinery, composition_column) in cases {
            let crd = composite_crd(&xrd).unwrap();
            assert_eq!(crd["spec"]["scope"], crd_scope);
            let schema = &crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"];
            let machinery = schema.pointer(machinery).unwrap();
            for field in [
                "compositionRef",
                "compositionSelector",
                "compositionRevisionRef",
                "compositionUpdatePolicy",
                "resourceRefs",
            ] {
                assert!(machinery.get(field).is_some(), "{crd_scope}: {field}");
            }
            assert_eq!(
                machinery["resourceRefs"]["items"]["properties"]
                    .get("namespace")
                    .is_some(),
                crd_scope == "Cluster",
                "resourceRefs carry a namespace only for cluster-scoped XRs"
            );
            assert_eq!(
                machinery.get("claimRef").is_some(),
                xrd.scope() == XrdScope::LegacyCluster
            );
            let columns = crd["spec"]["versions"][1]["additionalPrinterColumns"]
                .as_array()
                .unwrap();
            let names: Vec<&str> = columns
                .iter()
                .map(|c| c["name"].as_str().unwrap())
                .collect();
            assert_eq!(
                names,
                [
                    "IMAGE",
                    "SYNCED",
                    "READY",
                    "COMPOSITION",
                    "COMPOSITIONREVISION",
                    "AGE"
                ]
            );
            assert_eq!(columns[3]["jsonPath"], composition_column);
        }
    }

    #[test]
    fn crd_keeps_user_schema_and_adds_what_every_xr_needs() {
        let crd = composite_crd(&xrd("apiextensions.crossplane.io/v2", None)).unwrap();
        assert_eq!(crd["metadata"]["name"], "apps.example.org");
        assert_eq!(crd["metadata"]["labels"]["team"], "a");
        assert_eq!(crd["metadata"]["ownerReferences"][0]["uid"], "xrd-uid");
        assert_eq!(crd["spec"]["names"]["categories"], json!(["composite"]));
        let versions = crd["spec"]["versions"].as_array().unwrap();
        assert_eq!(
            versions
                .iter()
                .map(|v| v["storage"].as_bool().unwrap())
                .collect::<Vec<_>>(),
            [false, true],
            "the referenceable version is stored"
        );
        let schema = &versions[1]["schema"]["openAPIV3Schema"];
        assert_eq!(schema["description"], "An app.");
        assert_eq!(schema["required"], json!(["spec"]));
        assert_eq!(schema["properties"]["spec"]["required"], json!(["image"]));
        assert_eq!(
            schema["properties"]["spec"]["properties"]["image"]["type"],
            "string"
        );
        assert_eq!(
            schema["properties"]["metadata"]["properties"]["name"]["maxLength"],
            63
        );
        assert_eq!(
            schema["properties"]["status"]["properties"]["conditions"]["x-kubernetes-list-map-keys"],
            json!(["type"])
        );
        assert_eq!(versions[1]["subresources"], json!({"status": {}}));
    }

    #[test]
    fn the_xrds_default_update_policy_is_the_xr_crds_default() {
        let namespaced = "/spec/properties/crossplane/properties";
        let cases = [
            ("apiextensions.crossplane.io/v2", Some("Manual"), namespaced),
            (
                "apiextensions.crossplane.io/v1",
                Some("Automatic"),
                "/spec/properties",
            ),
            ("apiextensions.crossplane.io/v2", None, namespaced),
        ];
        for (api_version, policy, machinery) in cases {
            let mut definition = xrd(api_version, None);
            definition.spec.default_composition_update_policy =
                policy.map(|p| serde_json::from_value(json!(p)).unwrap());
            let crd = composite_crd(&definition).unwrap();
            let field = crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]
                .pointer(&format!("{machinery}/compositionUpdatePolicy"))
                .unwrap();
            let default = field.get("default").and_then(Value::as_str);
            assert_eq!(default, policy, "{api_version}");
        }
    }

    #[test]
    fn crd_needs_the_xrd_uid_for_its_owner_reference() {
        let mut x = xrd("apiextensions.crossplane.io/v2", None);
        x.metadata.uid = None;
        assert_eq!(composite_crd(&x), Err(CrdError::MissingUid));
    }

    fn claiming_xrd(
        claim_names: Value,
        delete_policy: Option<&str>,
    ) -> CompositeResourceDefinition {
        let mut value = serde_json::to_value(xrd("apiextensions.crossplane.io/v1", None)).unwrap();
        value["spec"]["names"] = json!({"kind": "XApp", "plural": "xapps", "singular": "xapp"});
        value["spec"]["claimNames"] = claim_names;
        if let Some(p) = delete_policy {
            value["spec"]["defaultCompositeDeletePolicy"] = json!(p);
        }
        CompositeResourceDefinition::from_value(value).unwrap()
    }

    #[test]
    fn claim_crd_is_namespaced_with_claim_machinery_and_columns() {
        let cases = [(None, "Background"), (Some("Foreground"), "Foreground")];
        for (policy, want_default) in cases {
            let x = claiming_xrd(json!({"kind": "App", "plural": "apps"}), policy);
            let crd = claim_crd(&x).unwrap();
            assert_eq!(crd["metadata"]["name"], "apps.example.org");
            assert_eq!(crd["metadata"]["ownerReferences"][0]["uid"], "xrd-uid");
            assert_eq!(crd["spec"]["scope"], "Namespaced");
            assert_eq!(crd["spec"]["names"]["kind"], "App");
            assert_eq!(crd["spec"]["names"]["categories"], json!([CATEGORY_CLAIM]));
            let version = &crd["spec"]["versions"][1];
            let schema = &version["schema"]["openAPIV3Schema"]["properties"];
            let spec = &schema["spec"]["properties"];
            assert_eq!(spec["compositeDeletePolicy"]["default"], want_default);
            assert_eq!(
                spec["resourceRef"]["required"],
                json!(["apiVersion", "kind", "name"])
            );
            assert_eq!(
                spec["writeConnectionSecretToRef"]["required"],
                json!(["name"])
            );
            assert_eq!(spec["image"]["type"], "string", "the user's spec is kept");
            assert!(spec.get("claimRef").is_none() && spec.get("resourceRefs").is_none());
            assert!(schema["status"]["properties"]["connectionDetails"].is_object());
            let columns: Vec<&str> = version["additionalPrinterColumns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["name"].as_str().unwrap())
                .collect();
            assert_eq!(
                columns,
                ["IMAGE", "SYNCED", "READY", "CONNECTION-SECRET", "AGE"]
            );
        }
    }

    #[test]
    fn claim_names_may_not_reuse_xr_names() {
        let cases = [
            (json!({"kind": "XApp", "plural": "apps"}), Some("XApp")),
            (json!({"kind": "App", "plural": "xapps"}), Some("xapps")),
            (
                json!({"kind": "App", "plural": "apps", "singular": "xapp"}),
                Some("xapp"),
            ),
            (
                json!({"kind": "App", "plural": "apps", "singular": "app"}),
                None,
            ),
        ];
        for (names, conflicting) in cases {
            let x = claiming_xrd(names.clone(), None);
            let want = conflicting.map(|n| {
                format!(
                    "invalid resource claim names: \"{n}\" conflicts with composite resource name"
                )
            });
            assert_eq!(claim_crd(&x).err().map(|e| e.to_string()), want, "{names}");
        }
    }
}
