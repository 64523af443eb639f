//! A `ResourceBindingDefinition` as Compositions: its provisioning
//! strategies as bases and patches, its selection strategies as labels.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::{Value, json};

use super::claim::ClaimDefinition;
use super::field_path::FieldPath;
use super::{Class, envelope, parse};

/// The most Compositions one binding may expand to (one per combination of
/// the classes it can pick); beyond it the input is more likely a mistake.
const MAX_COMPOSITIONS_PER_BINDING: usize = 256;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BindingSpec {
    claim: TypeRef,
    resources: Vec<Value>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct TypeRef {
    pub(super) api_version: String,
    pub(super) kind: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BoundResourceSpec {
    resource: TypeRef,
    class: ClassSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct ClassSpec {
    api_version: String,
    kind: String,
    strategies: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StrategiesSpec {
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
pub(super) struct OverlaySpec {
    from_class_field: String,
    to_resource_field: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct TranslateSpec {
    from_claim_field: String,
    to_resource_field: String,
    transforms: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct MatchSpec {
    from_claim_field: String,
    to_class_field: String,
    transforms: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TransformsSpec {
    #[serde(default)]
    toupper: bool,
    #[serde(default)]
    tolower: bool,
    replace: Option<ReplaceSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReplaceSpec {
    string: String,
    with: String,
}

/// The design's transforms as patch-and-transform's: case first, then the
/// replacement, whatever order the keys were written in (a YAML map has none).
pub(super) fn transforms(spec: Option<&Value>, field: &str) -> Result<Vec<Value>> {
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
pub(super) fn is_label_name(text: &str) -> bool {
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

pub(super) struct Overlay {
    from: FieldPath,
    to: FieldPath,
}

pub(super) struct Translate {
    from: FieldPath,
    patch: Value,
    to: FieldPath,
}

pub(super) struct Match {
    from: FieldPath,
    to_class: FieldPath,
    label: String,
}

/// How one resource of a binding is provisioned and its class selected.
pub(super) struct BoundResource {
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

pub(super) struct BindingDefinition {
    pub(super) name: String,
    pub(super) claim: TypeRef,
    resources: Vec<BoundResource>,
}

impl BindingDefinition {
    /// Whether one of the binding's resources is provisioned from classes of this kind.
    pub(super) fn names_class(&self, api_version: &str, kind: &str) -> bool {
        self.resources
            .iter()
            .any(|r| r.class.api_version == api_version && r.class.kind == kind)
    }

    pub(super) fn parse(document: &Value) -> Result<Self> {
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
    pub(super) fn compositions(
        &self,
        claim: &ClaimDefinition,
        classes: &[Class],
    ) -> Result<Vec<Value>> {
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
    pub(super) fn parse(value: &Value, field: &str) -> Result<Self> {
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
pub(super) fn connection_secret_namespace(
    base: &mut Value,
    resource: &str,
    patches: &mut Vec<Value>,
) {
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
pub(super) fn listed(
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
}
