//! What the program's resources do to the desired state, by target, as
//! upstream's `ProcessResources` does it.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use plait_go_compat::fieldpath;
use plait_sdk::{
    Condition, ConditionStatus, FunctionResult, Ready, Resource, ResourceMatch, ResourceSelector,
    Severity, Target as BindingTarget,
};
use serde::Deserialize;
use serde_json::{Map, Value};

/// Names a composed resource, then removed from it.
pub const ANNOTATION_RESOURCE_NAME: &str = "krm.kcl.dev/composition-resource-name";
/// A composed resource's readiness, then removed from it.
pub const ANNOTATION_READY: &str = "krm.kcl.dev/ready";
/// The apiVersion of the items that are instructions rather than resources.
pub const META_API_VERSION: &str = "meta.krm.kcl.dev/v1alpha1";

/// Where the program's output goes (`spec.target`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Default,
    Resources,
    PatchDesired,
    PatchResources,
    Xr,
}

impl Target {
    /// An empty or unknown target is `Default`, as upstream's validation
    /// makes it.
    pub fn parse(name: &str) -> Target {
        match name {
            "Resources" => Target::Resources,
            "PatchDesired" => Target::PatchDesired,
            "PatchResources" => Target::PatchResources,
            "XR" => Target::Xr,
            _ => Target::Default,
        }
    }
}

/// Why the output could not be applied; upstream's messages.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProcessError {
    #[error(
        "multiple composed resources with name \"{name}\" returned: {first} and {second}. Set different metadata.name or metadata.annotations.\"krm.kcl.dev/composition-resource-name\" to distinguish them."
    )]
    DuplicateName {
        name: String,
        first: String,
        second: String,
    },
    #[error(
        "invalid function input: invalid \"{ANNOTATION_READY}\" annotation value \"{0}\": must be True, False, or Unspecified"
    )]
    InvalidReady(String),
    #[error("failed to match all resources, found {found} / {total} patches")]
    Unmatched { found: usize, total: usize },
    #[error("cannot set data existing desired composed object: {0}")]
    SetDesired(String),
    #[error("cannot set data on xr: {0}")]
    SetXr(String),
    #[error("cannot get desired composite status: {0}")]
    CompositeStatus(String),
    #[error("cannot get templated composite status: {0}")]
    ItemStatus(String),
    #[error("cannot get extra resources requirements: {0}")]
    ExtraRequirements(String),
    #[error("duplicate extra resource key \"{0}\"")]
    DuplicateExtra(String),
    #[error("cannot get required resources requirements: {0}")]
    RequiredRequirements(String),
    #[error("duplicate required resource key \"{0}\"")]
    DuplicateRequired(String),
    #[error("cannot get condition resources: {0}")]
    Conditions(String),
    #[error("cannot get event resources: {0}")]
    Events(String),
    #[error("cannot get context resource: {0}")]
    Context(String),
    #[error(
        "invalid kind \"{0}\" for apiVersion \"{META_API_VERSION}\" - must be CompositeConnectionDetails or ExtraResources"
    )]
    MetaKind(String),
}

/// The state the output is applied to, and what its special items ask for.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The desired composite resource.
    pub composite: Value,
    pub composite_connection_details: BTreeMap<String, Vec<u8>>,
    /// The desired composed resources.
    pub desired: BTreeMap<String, Resource>,
    /// `ExtraResources` items' requirements.
    pub extra_resources: BTreeMap<String, ResourceSelector>,
    /// `RequiredResources` items' requirements.
    pub required_resources: BTreeMap<String, ResourceSelector>,
    /// The last `Conditions` item's conditions.
    pub conditions: Vec<ConditionResource>,
    /// The last `Events` item's events.
    pub events: Vec<CreateEvent>,
    /// `Context` items' data, later items' keys replacing earlier ones.
    pub context: Map<String, Value>,
}

/// An entry of a `Conditions` item.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ConditionResource {
    pub target: Option<String>,
    pub force: Option<bool>,
    pub condition: ConditionSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ConditionSpec {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: Option<String>,
}

/// An entry of an `Events` item.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CreateEvent {
    pub target: Option<String>,
    pub event: EventSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct EventSpec {
    #[serde(rename = "type")]
    pub type_: Option<String>,
    pub reason: Option<String>,
    pub message: String,
}

/// A requirement of an `ExtraResources` item.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ExtraRequirement {
    api_version: String,
    kind: String,
    match_labels: BTreeMap<String, String>,
    match_name: String,
    match_namespace: String,
}

/// A requirement of a `RequiredResources` item.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct RequiredRequirement {
    api_version: String,
    kind: String,
    match_labels: BTreeMap<String, String>,
    name: String,
    namespace: String,
}

fn selector(
    api_version: String,
    kind: String,
    name: String,
    labels: BTreeMap<String, String>,
    namespace: String,
) -> ResourceSelector {
    ResourceSelector {
        api_version,
        kind,
        matching: if name.is_empty() {
            ResourceMatch::Labels(labels)
        } else {
            ResourceMatch::Name(name)
        },
        namespace: (!namespace.is_empty()).then_some(namespace),
    }
}

/// Applies `items` to `outcome` as `target` says; `observed` is the
/// observed composite and `bases` the input's `spec.resources`.
pub fn process(
    target: Target,
    items: Vec<Map<String, Value>>,
    observed: &Value,
    bases: Vec<(String, Value)>,
    outcome: &mut Outcome,
) -> Result<(), ProcessError> {
    match target {
        Target::Xr => {
            for item in &items {
                set_data(
                    &Value::Object(item.clone()),
                    String::new(),
                    &mut outcome.composite,
                    true,
                )
                .map_err(ProcessError::SetXr)?;
            }
        }
        Target::PatchDesired => {
            patch_desired(items, &mut outcome.desired)?;
            take_ready_annotations(&mut outcome.desired)?;
        }
        Target::PatchResources => {
            for (name, base) in bases {
                outcome.desired.insert(name, Resource::new(base));
            }
            patch_desired(items, &mut outcome.desired)?;
            take_ready_annotations(&mut outcome.desired)?;
        }
        Target::Resources => {
            let mut names = NameChecker::default();
            for mut item in items {
                let name = take_resource_name(&mut item);
                names.check(&item, &name)?;
                let object = match outcome.desired.remove(&name) {
                    // A shallow merge: the item's top-level fields win.
                    Some(Resource {
                        resource: Value::Object(mut existing),
                        ..
                    }) => {
                        existing.extend(item);
                        existing
                    }
                    _ => item,
                };
                outcome
                    .desired
                    .insert(name, Resource::new(Value::Object(object)));
            }
            take_ready_annotations(&mut outcome.desired)?;
        }
        Target::Default => {
            let mut names = NameChecker::default();
            for item in items {
                default_item(item, observed, &mut names, outcome)?;
            }
        }
    }
    Ok(())
}

fn default_item(
    mut item: Map<String, Value>,
    observed: &Value,
    names: &mut NameChecker,
    outcome: &mut Outcome,
) -> Result<(), ProcessError> {
    let api_version = str_field(&item, "apiVersion").to_string();
    let kind = str_field(&item, "kind").to_string();
    if api_version
        == observed
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
        && kind == observed.get("kind").and_then(Value::as_str).unwrap_or("")
    {
        // The XR itself: only its status counts, merged into the desired one.
        let mut status =
            object_at(&outcome.composite, "status").map_err(ProcessError::CompositeStatus)?;
        let item_status =
            object_at(&Value::Object(item), "status").map_err(ProcessError::ItemStatus)?;
        deep_merge(&mut status, item_status);
        if let Value::Object(composite) = &mut outcome.composite {
            composite.insert("status".into(), Value::Object(status));
        }
        return Ok(());
    }
    if api_version == META_API_VERSION {
        return meta_item(&kind, &item, outcome);
    }
    let ready = match annotation(&item, ANNOTATION_READY) {
        Some(value) => {
            let ready = parse_ready(&value)?;
            remove_annotation(&mut item, ANNOTATION_READY);
            ready
        }
        None => Ready::Unspecified,
    };
    let name = take_resource_name(&mut item);
    names.check(&item, &name)?;
    let mut resource = Resource::new(Value::Object(item));
    resource.ready = ready;
    outcome.desired.insert(name, resource);
    Ok(())
}

fn meta_item(
    kind: &str,
    item: &Map<String, Value>,
    outcome: &mut Outcome,
) -> Result<(), ProcessError> {
    match kind {
        "CompositeConnectionDetails" => {
            // Upstream ignores data that is not a map of strings, and
            // values that are not base64.
            if let Some(Value::Object(data)) = item.get("data")
                && data.values().all(Value::is_string)
            {
                for (key, value) in data {
                    let text = value.as_str().unwrap_or_default();
                    let bytes = STANDARD.decode(text).unwrap_or_default();
                    outcome
                        .composite_connection_details
                        .insert(key.clone(), bytes);
                }
            }
        }
        "ExtraResources" => {
            let requirements: BTreeMap<String, ExtraRequirement> =
                decode_field(item, "requirements")
                    .map_err(ProcessError::ExtraRequirements)?
                    .unwrap_or_default();
            for (key, r) in requirements {
                if outcome.extra_resources.contains_key(&key) {
                    return Err(ProcessError::DuplicateExtra(key));
                }
                let selector = selector(
                    r.api_version,
                    r.kind,
                    r.match_name,
                    r.match_labels,
                    r.match_namespace,
                );
                outcome.extra_resources.insert(key, selector);
            }
        }
        "RequiredResources" => {
            let requirements: BTreeMap<String, RequiredRequirement> =
                decode_field(item, "requirements")
                    .map_err(ProcessError::RequiredRequirements)?
                    .unwrap_or_default();
            for (key, r) in requirements {
                if outcome.required_resources.contains_key(&key) {
                    return Err(ProcessError::DuplicateRequired(key));
                }
                let selector = selector(r.api_version, r.kind, r.name, r.match_labels, r.namespace);
                outcome.required_resources.insert(key, selector);
            }
        }
        "Conditions" => {
            // Go decodes each item's list over the last one's.
            outcome.conditions = decode_field(item, "conditions")
                .map_err(ProcessError::Conditions)?
                .unwrap_or_default();
        }
        "Events" => {
            outcome.events = decode_field(item, "events")
                .map_err(ProcessError::Events)?
                .unwrap_or_default();
        }
        "Context" => {
            // Go decodes each item's data into the same map: its keys
            // replace earlier ones, and `null` empties it.
            match decode_field::<Map<String, Value>>(item, "data").map_err(ProcessError::Context)? {
                Some(data) => outcome.context.extend(data),
                None => outcome.context.clear(),
            }
        }
        other => return Err(ProcessError::MetaKind(other.to_string())),
    }
    Ok(())
}

/// A field of an item decoded as Go's `GetValueInto` decodes it: `None`
/// for `null` (which Go decodes as a nil map or slice); a missing field is
/// crossplane-runtime's "no such field".
fn decode_field<T: serde::de::DeserializeOwned>(
    item: &Map<String, Value>,
    field: &str,
) -> Result<Option<T>, String> {
    match item.get(field) {
        None => Err(format!("{field}: no such field")),
        Some(Value::Null) => Ok(None),
        Some(value) => serde_json::from_value(value.clone())
            .map(Some)
            .map_err(|e| format!("json: {e}")),
    }
}

/// An object field of `value` (an empty object when it is missing or
/// null), as `GetValueInto` reads it into a map.
fn object_at(value: &Value, field: &str) -> Result<Map<String, Value>, String> {
    match value.get(field) {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map.clone()),
        Some(other) => Err(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            go_kind(other)
        )),
    }
}

fn go_kind(value: &Value) -> &'static str {
    match value {
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        _ => "object",
    }
}

/// mergo's `Merge` with `WithOverride` on maps: objects merge key by key,
/// anything else from `src` replaces what `dst` has.
pub fn deep_merge(dst: &mut Map<String, Value>, src: Map<String, Value>) {
    for (key, value) in src {
        match (dst.get_mut(&key), value) {
            (Some(Value::Object(existing)), Value::Object(incoming)) => {
                deep_merge(existing, incoming);
            }
            (_, value) => {
                dst.insert(key, value);
            }
        }
    }
}

fn patch_desired(
    items: Vec<Map<String, Value>>,
    desired: &mut BTreeMap<String, Resource>,
) -> Result<(), ProcessError> {
    let total = items.len();
    let mut matches = Vec::new();
    for mut item in items {
        let name = take_resource_name(&mut item);
        if desired.contains_key(&name) {
            matches.push((name, item));
        }
    }
    if matches.len() != total {
        return Err(ProcessError::Unmatched {
            found: matches.len(),
            total,
        });
    }
    for (name, item) in matches {
        if let Some(resource) = desired.get_mut(&name) {
            set_data(
                &Value::Object(item),
                String::new(),
                &mut resource.resource,
                false,
            )
            .map_err(ProcessError::SetDesired)?;
        }
    }
    Ok(())
}

/// Upstream's `SetData`: every leaf of `data` written at its field path,
/// annotation and label keys in brackets. A composed resource's
/// `apiVersion`, `kind` and `metadata.name` are never overwritten.
fn set_data(data: &Value, path: String, target: &mut Value, composite: bool) -> Result<(), String> {
    match data {
        Value::Object(map) => {
            let bracketed =
                path.ends_with(".metadata.annotations") || path.ends_with(".metadata.labels");
            for (key, value) in map {
                let child = if bracketed {
                    format!("{path}[{key}]")
                } else {
                    format!("{path}.{key}")
                };
                set_data(value, child, target, composite)?;
            }
            Ok(())
        }
        Value::Array(items) => {
            for (i, value) in items.iter().enumerate() {
                set_data(value, format!("{path}[{i}]"), target, composite)?;
            }
            Ok(())
        }
        leaf => {
            let path = path.strip_prefix('.').unwrap_or(&path);
            if !composite && matches!(path, "apiVersion" | "kind" | "metadata.name") {
                return Ok(());
            }
            fieldpath::set_value(target, path, leaf.clone())
                .map_err(|e| format!("setting {path}:{} in dxr failed: {e}", go_verb_s(leaf)))
        }
    }
}

/// A JSON leaf as Go's `%s` prints the value yaml.v2 decoded it to.
fn go_verb_s(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Bool(b) => format!("%!s(bool={b})"),
        Value::Number(n) if n.is_f64() => format!("%!s(float64={n})"),
        Value::Number(n) => format!("%!s(int={n})"),
        Value::Null => "%!s(<nil>)".into(),
        other => other.to_string(),
    }
}

/// Every desired resource's ready annotation becomes its readiness, and
/// is removed.
fn take_ready_annotations(desired: &mut BTreeMap<String, Resource>) -> Result<(), ProcessError> {
    for resource in desired.values_mut() {
        let Value::Object(object) = &mut resource.resource else {
            continue;
        };
        if let Some(ready) = annotation(object, ANNOTATION_READY) {
            resource.ready = parse_ready(&ready)?;
            remove_annotation(object, ANNOTATION_READY);
        }
    }
    Ok(())
}

fn parse_ready(value: &str) -> Result<Ready, ProcessError> {
    match value {
        "True" => Ok(Ready::True),
        "False" => Ok(Ready::False),
        "Unspecified" => Ok(Ready::Unspecified),
        other => Err(ProcessError::InvalidReady(other.to_string())),
    }
}

/// The resource's name: its name annotation (then removed), else its
/// `metadata.name`.
fn take_resource_name(item: &mut Map<String, Value>) -> String {
    let name = annotation(item, ANNOTATION_RESOURCE_NAME)
        .unwrap_or_else(|| metadata_name(item).to_string());
    remove_annotation(item, ANNOTATION_RESOURCE_NAME);
    name
}

/// Names already given, with the `kind/name` of the item that took each.
#[derive(Debug, Default)]
struct NameChecker(BTreeMap<String, String>);

impl NameChecker {
    fn check(&mut self, item: &Map<String, Value>, name: &str) -> Result<(), ProcessError> {
        let kind_and_name = format!("{}/{}", str_field(item, "kind"), metadata_name(item));
        if let Some(first) = self.0.get(name) {
            return Err(ProcessError::DuplicateName {
                name: name.to_string(),
                first: first.clone(),
                second: kind_and_name,
            });
        }
        self.0.insert(name.to_string(), kind_and_name);
        Ok(())
    }
}

fn str_field<'a>(item: &'a Map<String, Value>, field: &str) -> &'a str {
    item.get(field).and_then(Value::as_str).unwrap_or("")
}

fn metadata_name(item: &Map<String, Value>) -> &str {
    item.get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The item's annotations when they are a map of strings, as Kubernetes'
/// `GetAnnotations` reads them (anything else reads as none).
fn annotations(item: &Map<String, Value>) -> Option<&Map<String, Value>> {
    match item.get("metadata")?.get("annotations")? {
        Value::Object(map) if map.values().all(Value::is_string) => Some(map),
        _ => None,
    }
}

fn annotation(item: &Map<String, Value>, key: &str) -> Option<String> {
    annotations(item)?
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Removes one annotation, leaving `annotations: {}` when it was the last,
/// as upstream does.
fn remove_annotation(item: &mut Map<String, Value>, key: &str) {
    if annotations(item).is_none() {
        return;
    }
    if let Some(Value::Object(annotations)) = item
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
    {
        annotations.remove(key);
    }
}

/// The response's conditions for a `Conditions` item: a condition type
/// set earlier is skipped unless `force`d; Crossplane's own types are
/// refused.
pub fn conditions(resources: &[ConditionResource]) -> Result<Vec<Condition>, String> {
    let mut set = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for c in resources {
        let type_ = &c.condition.type_;
        if matches!(type_.as_str(), "Ready" | "Synced" | "Healthy") {
            return Err(format!(
                "cannot set ClaimCondition type: {type_} is a reserved Crossplane Condition"
            ));
        }
        if set.contains(type_) && c.force != Some(true) {
            continue;
        }
        out.push(Condition {
            type_: type_.clone(),
            status: match c.condition.status.as_str() {
                "True" => ConditionStatus::True,
                "False" => ConditionStatus::False,
                _ => ConditionStatus::Unknown,
            },
            reason: c.condition.reason.clone(),
            message: c.condition.message.clone(),
            target: Some(binding_target(c.target.as_deref())),
        });
        set.insert(type_.clone());
    }
    Ok(out)
}

/// The response's results for an `Events` item.
pub fn events(events: &[CreateEvent]) -> Result<Vec<FunctionResult>, String> {
    events
        .iter()
        .map(|e| {
            let severity = match e.event.type_.as_deref() {
                None | Some("Normal") => Severity::Normal,
                Some("Warning") => Severity::Warning,
                Some(other) => {
                    return Err(format!(
                        "invalid type {other}, must be one of [Normal, Warning]"
                    ));
                }
            };
            Ok(FunctionResult {
                severity,
                message: e.event.message.clone(),
                reason: e.event.reason.clone(),
                target: Some(binding_target(e.target.as_deref())),
            })
        })
        .collect()
}

fn binding_target(target: Option<&str>) -> BindingTarget {
    match target {
        Some("CompositeAndClaim") => BindingTarget::CompositeAndClaim,
        _ => BindingTarget::Composite,
    }
}
