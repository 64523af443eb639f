//! The schemas validation checks against, by (apiVersion, kind): from CRDs
//! as given, from XRDs as the XR and claim CRDs plait generates for them,
//! and from OpenAPI v3 documents such as the built-in Kubernetes kinds'.

use std::collections::HashMap;
use std::sync::Arc;

use plait_model::{CompositeResourceDefinition, Manifest};
use serde_json::{Map, Value};

use crate::ValidateError;

/// Where a kind's schema came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A CustomResourceDefinition, by name.
    Crd(String),
    /// A CompositeResourceDefinition, by name (its XR or claim kind).
    Xrd(String),
    /// A kind the Kubernetes API server serves itself, from the OpenAPI v3
    /// document of that Kubernetes minor.
    Builtin(String),
}

impl Origin {
    /// A custom resource: the API server validates it against its
    /// structural schema (unknown fields pruned, `metadata` checked apart).
    pub fn is_custom(&self) -> bool {
        !matches!(self, Origin::Builtin(_))
    }
}

/// One kind's schema: its root, and the named schemas `$ref`s point into.
#[derive(Debug, Clone)]
pub struct KindSchema {
    pub root: Arc<Value>,
    pub components: Arc<Map<String, Value>>,
    pub origin: Origin,
    /// Whether the schema has `x-kubernetes-validations` rules anywhere.
    pub has_rules: bool,
    /// Whether the kind serves `status` as a subresource (a custom
    /// resource's: a write of the object itself leaves its status alone).
    pub status_subresource: bool,
}

fn has_rules(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            map.contains_key("x-kubernetes-validations") || map.values().any(has_rules)
        }
        Value::Array(items) => items.iter().any(has_rules),
        _ => false,
    }
}

/// Every known kind's schema.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    kinds: HashMap<(String, String), KindSchema>,
}

/// The Kubernetes minor whose built-in kinds plait ships.
pub const KUBERNETES_VERSION: &str = "v1.34";

/// The built-in kinds' schemas: the API server's `/openapi/v3/<group-version>`
/// documents merged into one, descriptions left out
/// (`kubernetes/update.sh` writes it from a running kube-apiserver).
const KUBERNETES_DOCUMENT: &str = include_str!("../kubernetes/v1.34/openapi-v3.json");

/// The CRDs plait installs (Crossplane's XRD, Composition,
/// CompositionRevision, EnvironmentConfig, Function, ImageConfig, Usage and
/// ClusterUsage, and Crossplane v1's Usage), so those objects are validated as the API server would.
const PLAIT_CRDS: &[(&str, &str)] = &[
    (
        "apiextensions.crossplane.io_compositeresourcedefinitions.yaml",
        include_str!(
            "../../../deploy/base/crds/apiextensions.crossplane.io_compositeresourcedefinitions.yaml"
        ),
    ),
    (
        "apiextensions.crossplane.io_compositionrevisions.yaml",
        include_str!(
            "../../../deploy/base/crds/apiextensions.crossplane.io_compositionrevisions.yaml"
        ),
    ),
    (
        "apiextensions.crossplane.io_compositions.yaml",
        include_str!("../../../deploy/base/crds/apiextensions.crossplane.io_compositions.yaml"),
    ),
    (
        "apiextensions.crossplane.io_environmentconfigs.yaml",
        include_str!(
            "../../../deploy/base/crds/apiextensions.crossplane.io_environmentconfigs.yaml"
        ),
    ),
    (
        "apiextensions.crossplane.io_usages.yaml",
        include_str!("../../../deploy/base/crds/apiextensions.crossplane.io_usages.yaml"),
    ),
    (
        "pkg.crossplane.io_functions.yaml",
        include_str!("../../../deploy/base/crds/pkg.crossplane.io_functions.yaml"),
    ),
    (
        "pkg.crossplane.io_imageconfigs.yaml",
        include_str!("../../../deploy/base/crds/pkg.crossplane.io_imageconfigs.yaml"),
    ),
    (
        "protection.crossplane.io_clusterusages.yaml",
        include_str!("../../../deploy/base/crds/protection.crossplane.io_clusterusages.yaml"),
    ),
    (
        "protection.crossplane.io_usages.yaml",
        include_str!("../../../deploy/base/crds/protection.crossplane.io_usages.yaml"),
    ),
];

impl Catalog {
    /// The built-in Kubernetes kinds and the kinds plait installs: what
    /// `plait validate` knows without being told.
    pub fn builtin() -> Result<Self, ValidateError> {
        let mut catalog = Catalog::kubernetes()?;
        for (file, text) in PLAIT_CRDS {
            let documents = plait_model::parse_documents(text, file).map_err(|e| {
                ValidateError::Definition {
                    name: (*file).to_string(),
                    message: e.to_string(),
                }
            })?;
            for crd in documents {
                catalog.add_definition(&crd)?;
            }
        }
        Ok(catalog)
    }

    /// An empty catalog.
    pub fn new() -> Self {
        Catalog::default()
    }

    /// A catalog of the built-in Kubernetes kinds of [`KUBERNETES_VERSION`].
    pub fn kubernetes() -> Result<Self, ValidateError> {
        let mut catalog = Catalog::new();
        let document: Value = serde_json::from_str(KUBERNETES_DOCUMENT).map_err(|e| {
            ValidateError::BuiltinDocument {
                version: KUBERNETES_VERSION.to_string(),
                message: e.to_string(),
            }
        })?;
        catalog.add_openapi_document(&document, &format!("Kubernetes {KUBERNETES_VERSION}"));
        Ok(catalog)
    }

    pub fn len(&self) -> usize {
        self.kinds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// The schema of `kind` in `api_version`.
    pub fn get(&self, api_version: &str, kind: &str) -> Option<&KindSchema> {
        self.kinds.get(&(api_version.to_string(), kind.to_string()))
    }

    /// Every (apiVersion, kind) known, sorted.
    pub fn kinds(&self) -> Vec<(String, String)> {
        let mut kinds: Vec<_> = self.kinds.keys().cloned().collect();
        kinds.sort();
        kinds
    }

    /// Adds every kind an OpenAPI v3 document's schemas are marked as
    /// (`x-kubernetes-group-version-kind`), the others serving as `$ref`
    /// targets.
    pub fn add_openapi_document(&mut self, document: &Value, source: &str) -> usize {
        let Some(schemas) = document
            .pointer("/components/schemas")
            .and_then(Value::as_object)
        else {
            return 0;
        };
        let components = Arc::new(schemas.clone());
        let mut added = 0;
        for schema in schemas.values() {
            let gvks = schema
                .get("x-kubernetes-group-version-kind")
                .and_then(Value::as_array);
            for gvk in gvks.into_iter().flatten() {
                let text = |k: &str| gvk.get(k).and_then(Value::as_str).unwrap_or_default();
                let (group, version, kind) = (text("group"), text("version"), text("kind"));
                if kind.is_empty() || kind.ends_with("List") || kind == "WatchEvent" {
                    continue;
                }
                let api_version = if group.is_empty() {
                    version.to_string()
                } else {
                    format!("{group}/{version}")
                };
                self.kinds.insert(
                    (api_version, kind.to_string()),
                    KindSchema {
                        root: Arc::new(schema.clone()),
                        components: components.clone(),
                        origin: Origin::Builtin(source.to_string()),
                        has_rules: has_rules(schema),
                        status_subresource: false,
                    },
                );
                added += 1;
            }
        }
        added
    }

    /// Adds the kinds a definition serves: a CRD's, or an XRD's XR and
    /// claim kinds as plait generates their CRDs. Other objects add
    /// nothing; `Ok(0)` says so.
    pub fn add_definition(&mut self, definition: &Value) -> Result<usize, ValidateError> {
        let api_group = definition
            .get("apiVersion")
            .and_then(Value::as_str)
            .and_then(|v| v.split('/').next())
            .unwrap_or_default();
        let kind = definition
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = definition
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        match (api_group, kind) {
            ("apiextensions.k8s.io", "CustomResourceDefinition") => {
                Ok(self.add_crd(definition, Origin::Crd(name)))
            }
            ("apiextensions.crossplane.io", "CompositeResourceDefinition") => {
                let mut xrd =
                    CompositeResourceDefinition::from_value(definition.clone()).map_err(|e| {
                        ValidateError::Definition {
                            name: name.clone(),
                            message: e.to_string(),
                        }
                    })?;
                // The generated CRDs are owned by the XRD; offline it has no UID.
                if xrd.metadata.uid.is_none() {
                    xrd.metadata.uid = Some(String::new());
                }
                let generate = |e: plait_model::crd::CrdError| ValidateError::Definition {
                    name: name.clone(),
                    message: e.to_string(),
                };
                let xr = plait_model::crd::composite_crd(&xrd).map_err(generate)?;
                let mut added = self.add_crd(&xr, Origin::Xrd(name.clone()));
                if xrd.spec.claim_names.is_some() {
                    let claim = plait_model::crd::claim_crd(&xrd).map_err(generate)?;
                    added += self.add_crd(&claim, Origin::Xrd(name.clone()));
                }
                Ok(added)
            }
            _ => Ok(0),
        }
    }

    fn add_crd(&mut self, crd: &Value, origin: Origin) -> usize {
        let text = |pointer: &str| {
            crd.pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let (group, kind) = (text("/spec/group"), text("/spec/names/kind"));
        // apiextensions v1beta1's one schema for every version.
        let shared = crd.pointer("/spec/validation/openAPIV3Schema");
        let mut added = 0;
        for version in crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(name) = version.get("name").and_then(Value::as_str) else {
                continue;
            };
            let Some(schema) = version.pointer("/schema/openAPIV3Schema").or(shared) else {
                continue;
            };
            let api_version = if group.is_empty() {
                name.to_string()
            } else {
                format!("{group}/{name}")
            };
            let status_subresource = version
                .pointer("/subresources/status")
                .or_else(|| crd.pointer("/spec/subresources/status"))
                .is_some();
            self.kinds.insert(
                (api_version, kind.clone()),
                KindSchema {
                    root: Arc::new(schema.clone()),
                    components: Arc::new(Map::new()),
                    origin: origin.clone(),
                    has_rules: has_rules(schema),
                    status_subresource,
                },
            );
            added += 1;
        }
        added
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_xrd_serves_its_xr_and_claim_kinds_with_their_machinery() {
        let xrd = json!({
            "apiVersion": "apiextensions.crossplane.io/v1",
            "kind": "CompositeResourceDefinition",
            "metadata": {"name": "xnets.example.org"},
            "spec": {
                "group": "example.org",
                "names": {"kind": "XNet", "plural": "xnets"},
                "claimNames": {"kind": "Net", "plural": "nets"},
                "versions": [{"name": "v1", "served": true, "referenceable": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}}}],
            },
        });
        let mut catalog = Catalog::new();
        assert_eq!(catalog.add_definition(&xrd).ok(), Some(2));
        let xr = catalog.get("example.org/v1", "XNet");
        let claim = catalog.get("example.org/v1", "Net");
        assert!(xr.is_some_and(|k| {
            k.root
                .pointer("/properties/spec/properties/resourceRefs")
                .is_some()
        }));
        assert!(claim.is_some_and(|k| {
            k.root
                .pointer("/properties/spec/properties/resourceRef")
                .is_some()
        }));
        assert!(xr.is_some_and(|k| k.origin == Origin::Xrd("xnets.example.org".into())));
    }

    #[test]
    fn the_builtin_catalog_has_kubernetes_and_plaits_kinds() {
        let catalog = Catalog::builtin().unwrap_or_else(|e| panic!("{e}"));
        for (api_version, kind) in [
            ("v1", "Secret"),
            ("v1", "ConfigMap"),
            ("apps/v1", "Deployment"),
            ("batch/v1", "CronJob"),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
            ("apiextensions.crossplane.io/v1", "Composition"),
            (
                "apiextensions.crossplane.io/v2",
                "CompositeResourceDefinition",
            ),
            ("pkg.crossplane.io/v1", "Function"),
        ] {
            assert!(
                catalog.get(api_version, kind).is_some(),
                "{api_version} {kind}"
            );
        }
        assert!(
            catalog.get("v1", "SecretList").is_none(),
            "lists are not kinds to validate"
        );
        assert!(
            catalog.get("apps/v1beta1", "Deployment").is_none(),
            "only generally available versions"
        );
    }

    #[test]
    fn other_objects_define_nothing() {
        let mut catalog = Catalog::new();
        let config_map =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
        assert_eq!(catalog.add_definition(&config_map).ok(), Some(0));
        assert!(catalog.is_empty());
    }
}
