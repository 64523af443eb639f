//! `ResourceClaimDefinition` and `ResourceBindingDefinition`
//! (`core.crossplane.io/v1alpha1`, the design Crossplane replaced with
//! XRDs and Compositions) as a CompositeResourceDefinition with claim names
//! and the Compositions its bindings mean. The mapping is documented in
//! docs/convert.md.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

pub const API_VERSION: &str = "core.crossplane.io/v1alpha1";
pub const CLAIM_DEFINITION: &str = "ResourceClaimDefinition";
pub const BINDING_DEFINITION: &str = "ResourceBindingDefinition";

/// The most Compositions one binding may expand to (one per combination of
/// the classes it can pick); beyond it the input is more likely a mistake.
const MAX_COMPOSITIONS_PER_BINDING: usize = 256;

/// Crossplane's labels on the composite resource of a claim, naming the claim.
const LABEL_CLAIM_NAME: &str = "crossplane.io/claim-name";
const LABEL_CLAIM_NAMESPACE: &str = "crossplane.io/claim-namespace";

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

// ---------------------------------------------------------------------------
// ResourceClaimDefinition → CompositeResourceDefinition

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ClaimSpec {
    group: String,
    names: ClaimNames,
    version: String,
    validation: Option<Validation>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ClaimNames {
    kind: String,
    plural: String,
    list_kind: Option<String>,
    singular: Option<String>,
    #[serde(default)]
    short_names: Vec<String>,
    #[serde(default)]
    categories: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Validation {
    #[serde(rename = "openAPIV3Schema")]
    schema: Value,
}

struct ClaimDefinition {
    labels: BTreeMap<String, String>,
    group: String,
    names: ClaimNames,
    version: String,
    schema: Value,
}

impl ClaimDefinition {
    fn parse(document: &Value) -> Result<Self> {
        let envelope = envelope(document)?;
        let spec: ClaimSpec = parse(&envelope.spec, "spec")?;
        for (field, value) in [
            ("spec.group", &spec.group),
            ("spec.names.kind", &spec.names.kind),
            ("spec.names.plural", &spec.names.plural),
            ("spec.version", &spec.version),
        ] {
            if value.is_empty() {
                bail!("{field}: required");
            }
        }
        let schema = match spec.validation {
            Some(validation) => structural(validation.schema, "spec.validation.openAPIV3Schema")?,
            None => json!({"type": "object", "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}),
        };
        Ok(ClaimDefinition {
            labels: envelope.metadata.labels,
            group: spec.group,
            names: spec.names,
            version: spec.version,
            schema,
        })
    }

    fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }

    /// The composite resource's kind: the claim's with an `X` before it.
    fn composite_kind(&self) -> String {
        format!("X{}", self.names.kind)
    }

    fn to_xrd(&self) -> Value {
        let names = &self.names;
        let mut composite_names = Map::new();
        composite_names.insert("kind".into(), json!(self.composite_kind()));
        composite_names.insert("plural".into(), json!(format!("x{}", names.plural)));
        if let Some(list_kind) = &names.list_kind {
            composite_names.insert("listKind".into(), json!(format!("X{list_kind}")));
        }
        if let Some(singular) = &names.singular {
            composite_names.insert("singular".into(), json!(format!("x{singular}")));
        }
        let mut claim_names = Map::new();
        claim_names.insert("kind".into(), json!(names.kind));
        claim_names.insert("plural".into(), json!(names.plural));
        if let Some(list_kind) = &names.list_kind {
            claim_names.insert("listKind".into(), json!(list_kind));
        }
        if let Some(singular) = &names.singular {
            claim_names.insert("singular".into(), json!(singular));
        }
        if !names.short_names.is_empty() {
            claim_names.insert("shortNames".into(), json!(names.short_names));
        }
        if !names.categories.is_empty() {
            claim_names.insert("categories".into(), json!(names.categories));
        }
        let mut metadata = Map::new();
        metadata.insert(
            "name".into(),
            json!(format!("x{}.{}", names.plural, self.group)),
        );
        if !self.labels.is_empty() {
            metadata.insert("labels".into(), json!(self.labels));
        }
        json!({
            "apiVersion": "apiextensions.crossplane.io/v1",
            "kind": "CompositeResourceDefinition",
            "metadata": metadata,
            "spec": {
                "group": self.group,
                "names": composite_names,
                "claimNames": claim_names,
                "versions": [{
                    "name": self.version,
                    "served": true,
                    "referenceable": true,
                    "schema": {"openAPIV3Schema": self.schema},
                }],
            },
        })
    }

    /// Whether the claim's schema has the field at `path` (below the root),
    /// or leaves it open (`x-kubernetes-preserve-unknown-fields`).
    fn has_field(&self, path: &[String]) -> bool {
        let mut schema = &self.schema;
        for segment in path {
            if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
                return true;
            }
            match schema.pointer(&format!("/properties/{}", segment.replace('~', "~0"))) {
                Some(next) => schema = next,
                None => return false,
            }
        }
        true
    }
}

/// The design's schemas leave `type: object` implicit where `properties`
/// are given; an XRD's schema must be structural, so it is filled in.
/// A root with fields besides spec and status is refused: an XRD defines
/// only those.
fn structural(mut schema: Value, field: &str) -> Result<Value> {
    fn fill(schema: &mut Value) {
        let Value::Object(node) = schema else { return };
        if (node.contains_key("properties") || node.contains_key("additionalProperties"))
            && !node.contains_key("type")
        {
            node.insert("type".into(), json!("object"));
        } else if node.contains_key("items") && !node.contains_key("type") {
            node.insert("type".into(), json!("array"));
        }
        for key in ["properties", "patternProperties"] {
            if let Some(Value::Object(children)) = node.get_mut(key) {
                children.values_mut().for_each(fill);
            }
        }
        for key in ["items", "additionalProperties", "not"] {
            if let Some(child) = node.get_mut(key) {
                fill(child);
            }
        }
        for key in ["allOf", "anyOf", "oneOf"] {
            if let Some(Value::Array(children)) = node.get_mut(key) {
                children.iter_mut().for_each(fill);
            }
        }
    }
    if !schema.is_object() {
        bail!("{field}: must be an object");
    }
    fill(&mut schema);
    if schema.get("type").is_none() {
        schema["type"] = json!("object");
    }
    if let Some(Value::Object(properties)) = schema.get("properties") {
        for name in properties.keys() {
            if !matches!(name.as_str(), "spec" | "status") {
                bail!(
                    "{field}.properties.{name}: an XRD's schema defines only spec and status \
                     (Crossplane adds apiVersion, kind and metadata)"
                );
            }
        }
    }
    Ok(schema)
}

// ---------------------------------------------------------------------------
// Classes

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
        let named = bindings.iter().any(|b| {
            b.resources
                .iter()
                .any(|r| r.class.api_version == class.api_version && r.class.kind == class.kind)
        });
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

// ---------------------------------------------------------------------------
// ResourceBindingDefinition → Compositions

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BindingSpec {
    claim: TypeRef,
    resources: Vec<Value>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct TypeRef {
    api_version: String,
    kind: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BoundResourceSpec {
    resource: TypeRef,
    class: ClassSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ClassSpec {
    api_version: String,
    kind: String,
    strategies: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StrategiesSpec {
    provisioning: Option<Vec<String>>,
    selection: Option<Vec<String>>,
    #[serde(default)]
    overlay: Vec<Value>,
    #[serde(default)]
    translate: Vec<Value>,
    #[serde(rename = "match", default)]
    match_: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct OverlaySpec {
    from_class_field: String,
    to_resource_field: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct TranslateSpec {
    from_claim_field: String,
    to_resource_field: String,
    transforms: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct MatchSpec {
    from_claim_field: String,
    to_class_field: String,
    transforms: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TransformsSpec {
    #[serde(default)]
    toupper: bool,
    #[serde(default)]
    tolower: bool,
    replace: Option<ReplaceSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplaceSpec {
    string: String,
    with: String,
}

/// A field path of the design (`.spec.engineVersion`): dotted names.
#[derive(Clone, Debug, PartialEq)]
struct FieldPath {
    field: String,
    segments: Vec<String>,
}

impl FieldPath {
    fn parse(text: &str, field: &str) -> Result<Self> {
        let trimmed = text.strip_prefix('.').unwrap_or(text);
        let segments: Vec<String> = trimmed.split('.').map(str::to_string).collect();
        let plain = |s: &String| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        };
        if !segments.iter().all(plain) {
            bail!(
                "{field}: {text:?} is not a field path plait convert can map: dotted field names \
                 (letters, digits, '_' and '-'), e.g. .spec.engineVersion"
            );
        }
        Ok(FieldPath {
            field: field.to_string(),
            segments,
        })
    }

    /// The path as a Crossplane field path (`spec.engineVersion`).
    fn crossplane(&self) -> String {
        self.segments.join(".")
    }

    fn starts_with(&self, other: &FieldPath) -> bool {
        self.segments.starts_with(&other.segments)
    }

    fn get<'a>(&self, value: &'a Value) -> Option<&'a Value> {
        self.segments
            .iter()
            .try_fold(value, |node, segment| node.get(segment))
    }

    /// Merges `value` into `target` at this path, objects key by key.
    fn overlay(&self, target: &mut Value, value: &Value) -> Result<()> {
        let mut node = target;
        for segment in &self.segments {
            let Value::Object(map) = node else {
                bail!("{}: {} is not an object", self.field, self.crossplane());
            };
            node = map.entry(segment.clone()).or_insert_with(|| json!({}));
        }
        merge(node, value);
        Ok(())
    }

    /// The claim's field as its composite resource has it: the claim's spec
    /// is the composite's, and its name and namespace are labels on it.
    fn on_composite(&self) -> Result<String> {
        match self.segments.as_slice() {
            [first, ..] if first == "spec" && self.segments.len() > 1 => Ok(self.crossplane()),
            [metadata, name] if metadata == "metadata" && name == "name" => {
                Ok(format!("metadata.labels[{LABEL_CLAIM_NAME}]"))
            }
            [metadata, namespace] if metadata == "metadata" && namespace == "namespace" => {
                Ok(format!("metadata.labels[{LABEL_CLAIM_NAMESPACE}]"))
            }
            _ => bail!(
                "{}: .{} does not reach the composite resource: only a claim's .spec fields, \
                 .metadata.name and .metadata.namespace do",
                self.field,
                self.crossplane()
            ),
        }
    }
}

fn merge(target: &mut Value, value: &Value) {
    match (target, value) {
        (Value::Object(target), Value::Object(value)) => {
            for (key, child) in value {
                match target.get_mut(key) {
                    Some(existing) => merge(existing, child),
                    None => {
                        target.insert(key.clone(), child.clone());
                    }
                }
            }
        }
        (target, value) => *target = value.clone(),
    }
}

/// The design's transforms as patch-and-transform's: case first, then the
/// replacement, whatever order the keys were written in (a YAML map has none).
fn transforms(spec: Option<&Value>, field: &str) -> Result<Vec<Value>> {
    let Some(spec) = spec else {
        return Ok(Vec::new());
    };
    let spec: TransformsSpec = parse(spec, field)?;
    if spec.toupper && spec.tolower {
        bail!("{field}: toupper and tolower cannot both be set");
    }
    let mut out = Vec::new();
    for (set, convert) in [(spec.toupper, "ToUpper"), (spec.tolower, "ToLower")] {
        if set {
            out.push(json!({"type": "string", "string": {"type": "Convert", "convert": convert}}));
        }
    }
    if let Some(replace) = spec.replace {
        if replace.string.is_empty() {
            bail!("{field}.replace.string: must not be empty");
        }
        out.push(json!({"type": "string", "string": {"type": "Replace",
            "replace": {"search": replace.string, "replace": replace.with}}}));
    }
    Ok(out)
}

/// The name part of a label key and a label value: at most 63 characters,
/// alphanumerics with `-`, `_` and `.` inside.
fn is_label_name(text: &str) -> bool {
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

struct Overlay {
    from: FieldPath,
    to: FieldPath,
}

struct Translate {
    from: FieldPath,
    patch: Value,
    to: FieldPath,
}

struct Match {
    from: FieldPath,
    to_class: FieldPath,
    label: String,
}

/// How one resource of a binding is provisioned and its class selected.
struct BoundResource {
    field: String,
    resource: TypeRef,
    class: TypeRef,
    overlays: Vec<Overlay>,
    translates: Vec<Translate>,
    matches: Vec<Match>,
    /// No provisioning strategy: a class in the input overlays its
    /// `.specTemplate` on the resource's `.spec`, as claims were provisioned
    /// by default.
    default_overlay: bool,
}

struct BindingDefinition {
    name: String,
    claim: TypeRef,
    resources: Vec<BoundResource>,
}

impl BindingDefinition {
    fn parse(document: &Value) -> Result<Self> {
        let envelope = envelope(document)?;
        let spec: BindingSpec = parse(&envelope.spec, "spec")?;
        if spec.resources.is_empty() {
            bail!("spec.resources: at least one resource is required");
        }
        let resources = spec
            .resources
            .iter()
            .enumerate()
            .map(|(i, r)| BoundResource::parse(r, &format!("spec.resources[{i}]")))
            .collect::<Result<_>>()?;
        Ok(BindingDefinition {
            name: envelope.metadata.name,
            claim: spec.claim,
            resources,
        })
    }

    /// One Composition per combination of the classes the binding can pick
    /// (one of each resource's class kind, among the input's classes).
    fn compositions(&self, claim: &ClaimDefinition, classes: &[Class]) -> Result<Vec<Value>> {
        for resource in &self.resources {
            resource.check_claim_fields(claim)?;
        }
        let mut choices: Vec<Vec<Option<&Class>>> = Vec::new();
        for resource in &self.resources {
            let of_kind: Vec<&Class> = classes
                .iter()
                .filter(|c| {
                    c.api_version == resource.class.api_version && c.kind == resource.class.kind
                })
                .collect();
            choices.push(if of_kind.is_empty() {
                resource.without_class()?;
                vec![None]
            } else {
                of_kind.into_iter().map(Some).collect()
            });
        }
        let count = choices.iter().map(Vec::len).product::<usize>();
        if count > MAX_COMPOSITIONS_PER_BINDING {
            bail!(
                "its classes combine into {count} Compositions, more than \
                 {MAX_COMPOSITIONS_PER_BINDING}; convert it with fewer classes at a time"
            );
        }
        let mut combinations: Vec<Vec<Option<&Class>>> = vec![Vec::new()];
        for options in &choices {
            combinations = combinations
                .into_iter()
                .flat_map(|prefix| {
                    options.iter().map(move |option| {
                        let mut next = prefix.clone();
                        next.push(*option);
                        next
                    })
                })
                .collect();
        }
        combinations
            .into_iter()
            .map(|picked| self.composition(claim, &picked))
            .collect()
    }

    fn composition(&self, claim: &ClaimDefinition, picked: &[Option<&Class>]) -> Result<Value> {
        let mut name = self.name.clone();
        for class in picked.iter().flatten() {
            name.push('-');
            name.push_str(&class.name);
        }
        if name.len() > 253 {
            bail!(
                "the Composition's name {name:?} (the binding's and its classes' names) is longer than 253 characters"
            );
        }
        let mut labels: BTreeMap<String, (String, String)> = BTreeMap::new();
        let mut add_label = |key: &str, value: String, from: String| -> Result<()> {
            match labels.get(key) {
                Some((existing, earlier)) if *existing != value => bail!(
                    "{from} sets label {key}={value:?} where {earlier} sets {existing:?}; \
                     one Composition cannot carry both"
                ),
                _ => {
                    labels.insert(key.to_string(), (value, from));
                    Ok(())
                }
            }
        };
        let mut resources = Vec::new();
        let mut resource_names: BTreeMap<String, usize> = BTreeMap::new();
        for (resource, class) in self.resources.iter().zip(picked) {
            if let Some(class) = class {
                for (key, value) in &class.labels {
                    add_label(key, value.clone(), class.describe())?;
                }
                for matched in &resource.matches {
                    let value = matched.class_value(class)?;
                    add_label(
                        &format!("{}/{}", claim.group, matched.label),
                        value,
                        format!("{} (its {})", class.describe(), matched.to_class.field),
                    )?;
                }
            }
            let base_name = resource.resource.kind.to_ascii_lowercase();
            let seen = resource_names.entry(base_name.clone()).or_insert(0);
            *seen += 1;
            let resource_name = if *seen == 1 {
                base_name
            } else {
                format!("{base_name}-{seen}")
            };
            resources.push(resource.composed(resource_name, *class)?);
        }
        let mut metadata = json!({"name": name});
        if !labels.is_empty() {
            let labels: BTreeMap<&String, &String> =
                labels.iter().map(|(k, (v, _))| (k, v)).collect();
            metadata["labels"] = json!(labels);
        }
        let classic = json!({
            "apiVersion": "apiextensions.crossplane.io/v1",
            "kind": "Composition",
            "metadata": metadata,
            "spec": {
                "compositeTypeRef": {
                    "apiVersion": claim.api_version(),
                    "kind": claim.composite_kind(),
                },
                "resources": resources,
            },
        });
        let composition = <plait_model::Composition as plait_model::Manifest>::from_value(classic)
            .with_context(|| format!("the Composition {name:?} it makes is not valid"))?;
        let pipeline = composition
            .to_pipeline()
            .with_context(|| format!("cannot convert Composition {name:?} to a pipeline"))?;
        serde_json::to_value(&pipeline).context("cannot encode the Composition")
    }
}

impl Match {
    /// The class's value at the matched field, as the label value a claim's
    /// `compositionSelector` asks for.
    fn class_value(&self, class: &Class) -> Result<String> {
        let value = self.to_class.get(&class.object).with_context(|| {
            format!(
                "{}: {} has no .{}",
                self.to_class.field,
                class.describe(),
                self.to_class.crossplane()
            )
        })?;
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => bail!(
                "{}: {}'s .{} is not a string, number or boolean, so no label can select it",
                self.to_class.field,
                class.describe(),
                self.to_class.crossplane()
            ),
        };
        if !is_label_name(&text) {
            bail!(
                "{}: {}'s .{} is {text:?}, which is not a label value (at most 63 letters, \
                 digits, '-', '_' and '.', starting and ending with a letter or digit), so no \
                 compositionSelector can select it",
                self.to_class.field,
                class.describe(),
                self.to_class.crossplane()
            );
        }
        Ok(text)
    }
}

impl BoundResource {
    fn parse(value: &Value, field: &str) -> Result<Self> {
        let spec: BoundResourceSpec = parse(value, field)?;
        let strategies_field = format!("{field}.class.strategies");
        let mut bound = BoundResource {
            field: field.to_string(),
            resource: spec.resource,
            class: TypeRef {
                api_version: spec.class.api_version,
                kind: spec.class.kind,
            },
            overlays: Vec::new(),
            translates: Vec::new(),
            matches: Vec::new(),
            default_overlay: true,
        };
        let Some(strategies) = spec.class.strategies else {
            return Ok(bound);
        };
        let strategies: StrategiesSpec = parse(&strategies, &strategies_field)?;
        let provisioning = listed(
            strategies.provisioning.as_deref(),
            &["overlay", "translate"],
            &[
                ("overlay", !strategies.overlay.is_empty()),
                ("translate", !strategies.translate.is_empty()),
            ],
            &format!("{strategies_field}.provisioning"),
        )?;
        listed(
            strategies.selection.as_deref(),
            &["match"],
            &[("match", !strategies.match_.is_empty())],
            &format!("{strategies_field}.selection"),
        )?;
        bound.default_overlay = provisioning.is_empty();
        for (i, overlay) in strategies.overlay.iter().enumerate() {
            let field = format!("{strategies_field}.overlay[{i}]");
            let spec: OverlaySpec = parse(overlay, &field)?;
            bound.overlays.push(Overlay {
                from: FieldPath::parse(&spec.from_class_field, &format!("{field}.fromClassField"))?,
                to: FieldPath::parse(&spec.to_resource_field, &format!("{field}.toResourceField"))?,
            });
        }
        for (i, translate) in strategies.translate.iter().enumerate() {
            let field = format!("{strategies_field}.translate[{i}]");
            let spec: TranslateSpec = parse(translate, &field)?;
            let from =
                FieldPath::parse(&spec.from_claim_field, &format!("{field}.fromClaimField"))?;
            let to =
                FieldPath::parse(&spec.to_resource_field, &format!("{field}.toResourceField"))?;
            let mut patch = json!({
                "type": "FromCompositeFieldPath",
                "fromFieldPath": from.on_composite()?,
                "toFieldPath": to.crossplane(),
            });
            let transforms = transforms(spec.transforms.as_ref(), &format!("{field}.transforms"))?;
            if !transforms.is_empty() {
                patch["transforms"] = json!(transforms);
            }
            bound.translates.push(Translate { from, patch, to });
        }
        // A translate is a patch, applied after the base the overlays make:
        // an overlay listed after it must not write where it writes.
        if provisioning.first().map(String::as_str) == Some("translate") {
            for overlay in &bound.overlays {
                if let Some(translate) = bound
                    .translates
                    .iter()
                    .find(|t| t.to.starts_with(&overlay.to) || overlay.to.starts_with(&t.to))
                {
                    bail!(
                        "{}: overlays .{} after a translate to .{}, which a Composition cannot \
                         express (its base comes before its patches); list overlay first",
                        overlay.to.field,
                        overlay.to.crossplane(),
                        translate.to.crossplane()
                    );
                }
            }
        }
        for (i, matched) in strategies.match_.iter().enumerate() {
            let field = format!("{strategies_field}.match[{i}]");
            let spec: MatchSpec = parse(matched, &field)?;
            let from =
                FieldPath::parse(&spec.from_claim_field, &format!("{field}.fromClaimField"))?;
            from.on_composite()?;
            // The claim's transforms are implied by the label's value: a
            // claim selects with its field's value after them.
            transforms(spec.transforms.as_ref(), &format!("{field}.transforms"))?;
            let label = match from.segments.as_slice() {
                [spec, rest @ ..] if spec == "spec" => rest.join("."),
                all => all.join("."),
            };
            if !is_label_name(&label) {
                bail!(
                    "{field}.fromClaimField: {:?} is too long for a label name (63 characters)",
                    spec.from_claim_field
                );
            }
            bound.matches.push(Match {
                from,
                to_class: FieldPath::parse(&spec.to_class_field, &format!("{field}.toClassField"))?,
                label,
            });
        }
        Ok(bound)
    }

    /// The claim fields the strategies read are in the claim's schema.
    fn check_claim_fields(&self, claim: &ClaimDefinition) -> Result<()> {
        let read = self.translates.iter().map(|t| &t.from);
        for from in read.chain(self.matches.iter().map(|m| &m.from)) {
            if from.segments.first().map(String::as_str) == Some("spec")
                && !claim.has_field(&from.segments)
            {
                bail!(
                    "{}: .{} is not in {}'s schema (spec.validation.openAPIV3Schema)",
                    from.field,
                    from.crossplane(),
                    claim.names.kind
                );
            }
        }
        Ok(())
    }

    /// Refuses strategies that need a class when the input has none of its kind.
    fn without_class(&self) -> Result<()> {
        let need = if !self.overlays.is_empty() {
            Some("overlay")
        } else if !self.matches.is_empty() {
            Some("match")
        } else {
            None
        };
        if let Some(strategy) = need {
            bail!(
                "{}.class.strategies.{strategy}: reads a {} {}, and the input has none; add the
                 classes to the input",
                self.field,
                self.class.api_version,
                self.class.kind
            );
        }
        Ok(())
    }

    /// The Composition's resource: a base of the resource kind with the
    /// class's overlays, and a patch per translate.
    fn composed(&self, name: String, class: Option<&Class>) -> Result<Value> {
        let mut base = json!({
            "apiVersion": self.resource.api_version,
            "kind": self.resource.kind,
        });
        let mut patches: Vec<Value> = Vec::new();
        if let Some(class) = class {
            let default = [Overlay {
                from: FieldPath::parse(".specTemplate", "specTemplate")?,
                to: FieldPath::parse(".spec", "spec")?,
            }];
            let overlays: &[Overlay] = if self.default_overlay {
                &default
            } else {
                &self.overlays
            };
            for overlay in overlays {
                let value = match overlay.from.get(&class.object) {
                    Some(value) => value,
                    // The default overlay applies only where the class has a template.
                    None if self.default_overlay => continue,
                    None => bail!(
                        "{}: {} has no .{}",
                        overlay.from.field,
                        class.describe(),
                        overlay.from.crossplane()
                    ),
                };
                overlay.to.overlay(&mut base, value)?;
            }
            connection_secret_namespace(&mut base, &name, &mut patches);
        }
        patches.extend(self.translates.iter().map(|t| t.patch.clone()));
        let mut resource = json!({"name": name, "base": base});
        if !patches.is_empty() {
            resource["patches"] = json!(patches);
        }
        Ok(resource)
    }
}

/// A class's `writeConnectionSecretsToNamespace` named the namespace of the
/// resource's connection secret, which took the claim's UID as its name;
/// on a managed resource it is `writeConnectionSecretToRef`, the name
/// patched from the composite's UID (with the resource's name, as one
/// composite may have several).
fn connection_secret_namespace(base: &mut Value, resource: &str, patches: &mut Vec<Value>) {
    let Some(Value::Object(spec)) = base.get_mut("spec") else {
        return;
    };
    let Some(namespace) = spec.remove("writeConnectionSecretsToNamespace") else {
        return;
    };
    spec.insert(
        "writeConnectionSecretToRef".into(),
        json!({"namespace": namespace}),
    );
    patches.push(json!({
        "type": "FromCompositeFieldPath",
        "fromFieldPath": "metadata.uid",
        "toFieldPath": "spec.writeConnectionSecretToRef.name",
        "transforms": [{"type": "string", "string": {"type": "Format", "fmt": format!("%s-{resource}")}}],
    }));
}

/// The strategies a `provisioning` or `selection` list names, in order:
/// each known and configured, none configured but left out. Without the
/// list, the configured ones in their documented order.
fn listed(
    list: Option<&[String]>,
    known: &[&str],
    configured: &[(&str, bool)],
    field: &str,
) -> Result<Vec<String>> {
    let Some(list) = list else {
        return Ok(configured
            .iter()
            .filter(|(_, set)| *set)
            .map(|(name, _)| name.to_string())
            .collect());
    };
    let parent = field.rsplit_once('.').map_or(field, |(parent, _)| parent);
    for (i, name) in list.iter().enumerate() {
        if !known.contains(&name.as_str()) {
            bail!(
                "{field}[{i}]: {name:?} is not a strategy plait convert knows ({})",
                known.join(", ")
            );
        }
        if !configured.iter().any(|(n, set)| n == name && *set) {
            bail!("{field}[{i}]: lists {name:?} but {parent}.{name} is not set");
        }
        if list[..i].contains(name) {
            bail!("{field}[{i}]: lists {name:?} twice");
        }
    }
    for (name, set) in configured {
        if *set && !list.iter().any(|n| n == name) {
            bail!("{parent}.{name}: is set but {field} does not list it");
        }
    }
    Ok(list.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_paths_map_to_crossplane_field_paths_or_are_refused_by_field() {
        let cases = [
            (".spec.engineVersion", Ok("spec.engineVersion")),
            (
                "spec.forProvider.databaseVersion",
                Ok("spec.forProvider.databaseVersion"),
            ),
            (
                ".spec.items[0]",
                Err("f: \".spec.items[0]\" is not a field path"),
            ),
            (".spec..x", Err("f: \".spec..x\" is not a field path")),
        ];
        for (text, want) in cases {
            let got = FieldPath::parse(text, "f").map(|p| p.crossplane());
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{text}"),
                (Err(got), Err(want)) => {
                    assert!(got.to_string().starts_with(want), "{text}: {got}")
                }
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn claim_fields_reach_the_composite_through_its_spec_and_claim_labels() {
        let cases = [
            (".spec.engineVersion", Some("spec.engineVersion")),
            (
                ".metadata.name",
                Some("metadata.labels[crossplane.io/claim-name]"),
            ),
            (
                ".metadata.namespace",
                Some("metadata.labels[crossplane.io/claim-namespace]"),
            ),
            (".metadata.uid", None),
            (".spec", None),
            (".status.phase", None),
        ];
        for (text, want) in cases {
            let got = FieldPath::parse(text, "f")
                .and_then(|p| p.on_composite())
                .ok();
            assert_eq!(got.as_deref(), want, "{text}");
        }
    }

    #[test]
    fn transforms_become_string_transforms_case_first() {
        let cases = [
            (
                json!({"toupper": true}),
                vec![
                    json!({"type": "string", "string": {"type": "Convert", "convert": "ToUpper"}}),
                ],
            ),
            (json!({"toupper": false}), vec![]),
            (
                json!({"replace": {"string": ".", "with": "_"}, "tolower": true}),
                vec![
                    json!({"type": "string", "string": {"type": "Convert", "convert": "ToLower"}}),
                    json!({"type": "string", "string": {"type": "Replace", "replace": {"search": ".", "replace": "_"}}}),
                ],
            ),
        ];
        for (spec, want) in cases {
            assert_eq!(transforms(Some(&spec), "t").unwrap(), want, "{spec}");
        }
    }

    #[test]
    fn transforms_the_design_does_not_have_are_refused_by_field() {
        let cases = [
            (json!({"trim": true}), "t: invalid"),
            (json!({"replace": {"regexp": "a"}}), "t: invalid"),
            (
                json!({"toupper": true, "tolower": true}),
                "t: toupper and tolower",
            ),
            (
                json!({"replace": {"string": "", "with": "x"}}),
                "t.replace.string: must not be empty",
            ),
        ];
        for (spec, want) in cases {
            let error = format!("{:#}", transforms(Some(&spec), "t").unwrap_err());
            assert!(error.starts_with(want), "{spec}: {error}");
        }
    }

    #[test]
    fn label_names_follow_kubernetes_syntax() {
        let cases = [
            ("5.7", true),
            ("engineVersion", true),
            ("", false),
            ("-a", false),
            ("a b", false),
            (&*"a".repeat(64), false),
        ];
        for (text, want) in cases {
            assert_eq!(is_label_name(text), want, "{text:?}");
        }
    }

    #[test]
    fn implicit_object_types_are_filled_in_and_other_root_fields_refused() {
        let schema = json!({"properties": {"spec": {"properties": {"tags": {"items": {"type": "string"}}}}}});
        let got = structural(schema, "s").unwrap();
        assert_eq!(got["type"], "object");
        assert_eq!(got["properties"]["spec"]["type"], "object");
        assert_eq!(
            got["properties"]["spec"]["properties"]["tags"]["type"],
            "array"
        );
        let error = structural(json!({"properties": {"metadata": {}}}), "s").unwrap_err();
        assert!(
            error.to_string().starts_with("s.properties.metadata:"),
            "{error}"
        );
    }
}
