//! `ResourceClaimDefinition` and `ResourceBindingDefinition`
//! (`core.crossplane.io/v1alpha1`, the design Crossplane replaced with
//! XRDs and Compositions) as a CompositeResourceDefinition with claim names
//! and the Compositions its bindings mean. The mapping is documented in
//! docs/convert.md.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub const API_VERSION: &str = "core.crossplane.io/v1alpha1";
pub const CLAIM_DEFINITION: &str = "ResourceClaimDefinition";
pub const BINDING_DEFINITION: &str = "ResourceBindingDefinition";

mod binding;
mod claim;
mod field_path;

use binding::BindingDefinition;
use claim::ClaimDefinition;

/// Whether a document is one of the two definitions.
pub fn is_definition(document: &Value) -> bool {
    document.get("apiVersion").and_then(Value::as_str) == Some(API_VERSION)
        && matches!(
            document.get("kind").and_then(Value::as_str),
            Some(CLAIM_DEFINITION | BINDING_DEFINITION)
        )
}

/// The XRDs and Compositions that the definitions among `documents` mean;
/// the other documents are the classes the bindings pick from. `origin`
/// names each document in errors.
pub fn convert(documents: &[(String, Value)]) -> Result<Vec<Value>> {
    let mut claims = Vec::new();
    let mut bindings = Vec::new();
    let mut classes = Vec::new();
    for (origin, document) in documents {
        let kind = document.get("kind").and_then(Value::as_str);
        match kind {
            Some(CLAIM_DEFINITION) if is_definition(document) => {
                claims.push(ClaimDefinition::parse(document).with_context(|| {
                    format!("{origin}: {CLAIM_DEFINITION} {:?}", name_of(document))
                })?);
            }
            Some(BINDING_DEFINITION) if is_definition(document) => {
                bindings.push(BindingDefinition::parse(document).with_context(|| {
                    format!("{origin}: {BINDING_DEFINITION} {:?}", name_of(document))
                })?);
            }
            _ => classes.push(Class::parse(origin, document)?),
        }
    }
    check_classes(&classes, &bindings)?;

    let mut out = Vec::new();
    let mut composition_names: BTreeMap<String, String> = BTreeMap::new();
    for claim in &claims {
        out.push(claim.to_xrd());
    }
    for binding in &bindings {
        let context = format!("{BINDING_DEFINITION} {:?}", binding.name);
        let claim = claims
            .iter()
            .find(|c| {
                c.api_version() == binding.claim.api_version && c.names.kind == binding.claim.kind
            })
            .with_context(|| {
                format!(
                    "{context}: spec.claim: no {CLAIM_DEFINITION} of {} {} in the input; the XRD \
                     its Compositions compose is made from one",
                    binding.claim.api_version, binding.claim.kind
                )
            })?;
        for composition in binding
            .compositions(claim, &classes)
            .with_context(|| context.clone())?
        {
            let name = name_of(&composition).to_string();
            if let Some(earlier) = composition_names.insert(name.clone(), context.clone()) {
                bail!(
                    "{context}: its Composition {name:?} has the name of one {earlier} makes; \
                     rename one of the bindings"
                );
            }
            out.push(composition);
        }
    }
    Ok(out)
}

fn name_of(document: &Value) -> &str {
    document
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `value` as a `T`, an error naming `field` when it is not one.
fn parse<T: DeserializeOwned>(value: &Value, field: &str) -> Result<T> {
    serde_json::from_value(value.clone()).with_context(|| format!("{field}: invalid"))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope {
    metadata: Metadata,
    spec: Value,
}

#[derive(Deserialize, Default)]
struct Metadata {
    #[serde(default)]
    name: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

fn envelope(document: &Value) -> Result<Envelope> {
    let envelope: Envelope = parse(document, "the document")?;
    if envelope.metadata.name.is_empty() {
        bail!("metadata.name: required");
    }
    Ok(envelope)
}

/// A resource class: a document of a kind some binding names as its class.
struct Class {
    origin: String,
    api_version: String,
    kind: String,
    name: String,
    labels: BTreeMap<String, String>,
    object: Value,
}

impl Class {
    fn parse(origin: &str, document: &Value) -> Result<Self> {
        let text = |field: &str| {
            document
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let (api_version, kind) = (text("apiVersion"), text("kind"));
        let metadata: Metadata = match document.get("metadata") {
            Some(metadata) => parse(metadata, "metadata")
                .with_context(|| format!("{origin}: {kind} {:?}", name_of(document)))?,
            None => Metadata::default(),
        };
        if api_version.is_empty() || kind.is_empty() || metadata.name.is_empty() {
            bail!(
                "{origin}: a document without apiVersion, kind or metadata.name; plait convert \
                 reads {CLAIM_DEFINITION}s, {BINDING_DEFINITION}s and the classes they name"
            );
        }
        Ok(Class {
            origin: origin.to_string(),
            api_version,
            kind,
            name: metadata.name,
            labels: metadata.labels,
            object: document.clone(),
        })
    }

    fn describe(&self) -> String {
        format!("{} {:?}", self.kind, self.name)
    }
}

/// Every class must be of a kind some binding names, and named once per kind.
fn check_classes(classes: &[Class], bindings: &[BindingDefinition]) -> Result<()> {
    let mut seen = BTreeSet::new();
    for class in classes {
        let named = bindings
            .iter()
            .any(|b| b.names_class(&class.api_version, &class.kind));
        if !named {
            bail!(
                "{}: {} {} {:?} is neither a {CLAIM_DEFINITION}, a {BINDING_DEFINITION} nor a \
                 class one of the bindings names",
                class.origin,
                class.api_version,
                class.kind,
                class.name
            );
        }
        if !seen.insert((&class.api_version, &class.kind, &class.name)) {
            bail!("{}: {} appears twice", class.origin, class.describe());
        }
    }
    Ok(())
}
