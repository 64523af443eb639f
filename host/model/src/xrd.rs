//! CompositeResourceDefinition, `apiextensions.crossplane.io/v1` and `/v2`.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::meta::{Manifest, ObjectMeta, nullable};
use crate::{FieldError, FieldPath};

pub const XRD_V1: &str = "apiextensions.crossplane.io/v1";
pub const XRD_V2: &str = "apiextensions.crossplane.io/v2";

/// One type for both API versions; `api_version` tells them apart where they differ
/// (scope default, claims, connection secrets).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompositeResourceDefinition {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: XrdSpec,
}

impl Manifest for CompositeResourceDefinition {
    const KIND: &'static str = "CompositeResourceDefinition";
    const API_VERSIONS: &'static [&'static str] = &[XRD_V1, XRD_V2];
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct XrdSpec {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub names: CrdNames,
    /// As written; see [`CompositeResourceDefinition::scope`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<XrdScope>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_names: Option<CrdNames>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub versions: Vec<XrdVersion>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_composition_ref: Option<CompositionReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enforced_composition_ref: Option<CompositionReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_composite_delete_policy: Option<CompositeDeletePolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_composition_update_policy: Option<UpdatePolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_secret_keys: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<XrdSpecMetadata>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdNames {
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub plural: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub singular: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_kind: Option<String>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub short_names: Vec<String>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub categories: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum XrdScope {
    Namespaced,
    Cluster,
    LegacyCluster,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CompositeDeletePolicy {
    Background,
    Foreground,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum UpdatePolicy {
    Automatic,
    Manual,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CompositionReference {
    #[serde(default)]
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct XrdSpecMetadata {
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub labels: BTreeMap<String, String>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub annotations: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct XrdVersion {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub served: bool,
    #[serde(default)]
    pub referenceable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation_warning: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<XrdSchema>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub additional_printer_columns: Vec<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl XrdVersion {
    /// The version's `openAPIV3Schema`, if any.
    pub fn open_api_v3_schema(&self) -> Option<&Value> {
        self.schema.as_ref()?.open_api_v3_schema.as_ref()
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct XrdSchema {
    #[serde(
        rename = "openAPIV3Schema",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub open_api_v3_schema: Option<Value>,
}

/// A group, version and kind.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Gvk {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl Gvk {
    /// `group/version`, or just `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl CompositeResourceDefinition {
    pub fn is_v2(&self) -> bool {
        self.api_version == XRD_V2
    }

    /// The effective scope: v1 XRDs default to LegacyCluster, v2 ones to Namespaced.
    pub fn scope(&self) -> XrdScope {
        self.spec.scope.unwrap_or(if self.is_v2() {
            XrdScope::Namespaced
        } else {
            XrdScope::LegacyCluster
        })
    }

    /// True when XRs of this definition live in a namespace.
    pub fn is_namespaced(&self) -> bool {
        self.scope() == XrdScope::Namespaced
    }

    /// The version Compositions reference. Like upstream, the last referenceable one wins.
    pub fn referenceable_version(&self) -> Option<&XrdVersion> {
        self.spec.versions.iter().rev().find(|v| v.referenceable)
    }

    /// The version named `name`.
    pub fn version(&self, name: &str) -> Option<&XrdVersion> {
        self.spec.versions.iter().find(|v| v.name == name)
    }

    /// The XR's group, referenceable version and kind (version empty when none is referenceable).
    pub fn composite_gvk(&self) -> Gvk {
        Gvk {
            group: self.spec.group.clone(),
            version: self
                .referenceable_version()
                .map(|v| v.name.clone())
                .unwrap_or_default(),
            kind: self.spec.names.kind.clone(),
        }
    }

    /// The claim's GVK, for v1 XRDs that offer one.
    pub fn claim_gvk(&self) -> Option<Gvk> {
        let names = self.spec.claim_names.as_ref()?;
        Some(Gvk {
            kind: names.kind.clone(),
            ..self.composite_gvk()
        })
    }

    /// `defaultCompositeDeletePolicy` with its CRD default.
    pub fn default_composite_delete_policy(&self) -> CompositeDeletePolicy {
        self.spec
            .default_composite_delete_policy
            .unwrap_or(CompositeDeletePolicy::Background)
    }

    /// `defaultCompositionUpdatePolicy` with its CRD default.
    pub fn default_composition_update_policy(&self) -> UpdatePolicy {
        self.spec
            .default_composition_update_policy
            .unwrap_or(UpdatePolicy::Automatic)
    }

    /// Checks what the XRD's CRD schema (with its CEL rules), Crossplane's webhook and the
    /// generated CRD's validation check.
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut errs = Vec::new();
        let spec = FieldPath::new("spec");
        let group = &self.spec.group;
        if group.is_empty() {
            errs.push(FieldError::required(spec.child("group"), ""));
        } else if !group.contains('.') {
            errs.push(FieldError::invalid(
                spec.child("group"),
                group.as_str(),
                "should be a domain with at least one dot",
            ));
        }
        errs.extend(validate_names(&self.spec.names, &spec.child("names")));
        let expected = format!("{}.{}", self.spec.names.plural, group);
        if self.metadata.name() != expected {
            errs.push(FieldError::invalid(
                FieldPath::new("metadata").child("name"),
                self.metadata.name(),
                "must be spec.names.plural+\".\"+spec.group",
            ));
        }

        let scope = self.scope();
        if self.is_v2() && scope == XrdScope::LegacyCluster {
            errs.push(FieldError::not_supported(
                spec.child("scope"),
                "LegacyCluster",
                &["Namespaced", "Cluster"],
            ));
        }
        if let Some(claim) = &self.spec.claim_names {
            if self.is_v2() {
                errs.push(FieldError::invalid(
                    spec.clone(),
                    "object",
                    "Claims aren't supported in apiextensions.crossplane.io/v2",
                ));
            } else if scope != XrdScope::LegacyCluster {
                errs.push(FieldError::invalid(
                    spec.clone(),
                    "object",
                    "Only LegacyCluster composite resources can offer claims",
                ));
            }
            let path = spec.child("claimNames");
            errs.extend(validate_names(claim, &path));
            let xr = &self.spec.names;
            let xr_names = [
                Some(xr.kind.as_str()),
                Some(xr.plural.as_str()),
                xr.singular.as_deref(),
                xr.list_kind.as_deref(),
            ];
            for (field, value) in [("kind", &claim.kind), ("plural", &claim.plural)] {
                if !value.is_empty() && xr_names.contains(&Some(value.as_str())) {
                    errs.push(FieldError::invalid(
                        path.child(field),
                        value.as_str(),
                        "conflicts with composite resource name",
                    ));
                }
            }
        }
        if self.spec.connection_secret_keys.is_some() {
            if self.is_v2() {
                errs.push(FieldError::invalid(
                    spec.clone(),
                    "object",
                    "XR connection secrets aren't supported in apiextensions.crossplane.io/v2",
                ));
            } else if scope != XrdScope::LegacyCluster {
                errs.push(FieldError::invalid(
                    spec.clone(),
                    "object",
                    "Only LegacyCluster composite resources support connection secrets",
                ));
            }
        }
        for (field, r) in [
            ("defaultCompositionRef", &self.spec.default_composition_ref),
            (
                "enforcedCompositionRef",
                &self.spec.enforced_composition_ref,
            ),
        ] {
            if r.as_ref().is_some_and(|r| r.name.is_empty()) {
                errs.push(FieldError::required(spec.child(field).child("name"), ""));
            }
        }
        errs.extend(self.validate_versions(&spec.child("versions")));
        if errs.is_empty() { Ok(()) } else { Err(errs) }
    }

    fn validate_versions(&self, path: &FieldPath) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let versions = &self.spec.versions;
        if versions.is_empty() {
            errs.push(FieldError::required(
                path.clone(),
                "must have exactly one version",
            ));
            return errs;
        }
        let mut seen = BTreeSet::new();
        for (i, v) in versions.iter().enumerate() {
            let vpath = path.index(i);
            if v.name.is_empty() {
                errs.push(FieldError::required(vpath.child("name"), ""));
            } else if !seen.insert(v.name.as_str()) {
                errs.push(FieldError::duplicate(vpath.child("name"), v.name.as_str()));
            }
            if v.referenceable && !v.served {
                errs.push(FieldError::invalid(
                    vpath.child("served"),
                    false,
                    "the referenceable version must be served",
                ));
            }
            if let Some(schema) = v.open_api_v3_schema()
                && !schema.is_object()
            {
                errs.push(FieldError::invalid(
                    vpath.child("schema").child("openAPIV3Schema"),
                    schema.clone(),
                    "must be an object",
                ));
            }
        }
        let referenceable: Vec<&str> = versions
            .iter()
            .filter(|v| v.referenceable)
            .map(|v| v.name.as_str())
            .collect();
        if referenceable.len() != 1 {
            errs.push(FieldError::invalid(
                path.clone(),
                referenceable.join(", "),
                format!(
                    "exactly one version must be referenceable, found {}",
                    referenceable.len()
                ),
            ));
        }
        errs
    }
}

fn validate_names(names: &CrdNames, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if names.kind.is_empty() {
        errs.push(FieldError::required(path.child("kind"), ""));
    }
    if names.plural.is_empty() {
        errs.push(FieldError::required(path.child("plural"), ""));
    } else if names.plural != names.plural.to_ascii_lowercase() {
        errs.push(FieldError::invalid(
            path.clone(),
            "object",
            "Plural name must be lowercase",
        ));
    }
    if let Some(s) = &names.singular
        && *s != s.to_ascii_lowercase()
    {
        errs.push(FieldError::invalid(
            path.clone(),
            "object",
            "Singular name must be lowercase",
        ));
    }
    errs
}
