//! Checks of a Composition against the schemas of the kinds it composes:
//! the Composition's own field validation (what the controller refuses),
//! each patch-and-transform input as the function validates it (a math
//! transform without `type` refused, as upstream), each composed resource's
//! base against its kind's schema, every patch's `fromFieldPath` and
//! `toFieldPath` against the XR's and the composed kind's schemas, and the
//! types flowing through each patch's transforms.

use plait_go_compat::fieldpath::{FieldPath, Segment};
use plait_model::{Composition, CompositionMode, Manifest};
use plait_patch_and_transform::input::{
    COMBINE_FROM_COMPOSITE, COMBINE_FROM_ENVIRONMENT, COMBINE_TO_COMPOSITE, COMBINE_TO_ENVIRONMENT,
    FROM_COMPOSITE_FIELD_PATH, FROM_ENVIRONMENT_FIELD_PATH, PATCH_SET, Patch, Resources,
    TO_COMPOSITE_FIELD_PATH, TO_ENVIRONMENT_FIELD_PATH,
};
use plait_patch_and_transform::transforms::Transform;
use serde_json::{Value, json};

use crate::catalog::KindSchema;
use crate::problem::Problem;
use crate::structural::Walker;
use crate::{Validator, gvk_string};

/// The patch-and-transform input's group: a pipeline step with an input of
/// this group and kind `Resources` is checked like `mode: Resources`.
const PT_GROUP: &str = "pt.fn.crossplane.io";

/// What `metadata` holds in every kind, for paths into it.
fn object_meta_schema() -> Value {
    let strings = json!({"type": "object", "additionalProperties": {"type": "string"}});
    json!({"type": "object", "properties": {
        "name": {"type": "string"},
        "generateName": {"type": "string"},
        "namespace": {"type": "string"},
        "uid": {"type": "string"},
        "resourceVersion": {"type": "string"},
        "generation": {"type": "integer"},
        "creationTimestamp": {"type": "string"},
        "deletionTimestamp": {"type": "string"},
        "labels": strings,
        "annotations": strings,
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "ownerReferences": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
        "managedFields": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
    }})
}

/// A value's type as far as the schema or a transform tells; `None` when
/// it can be anything.
type Ty = Option<&'static str>;

/// The schema a field path reaches, or why none does.
enum Reached {
    /// The field's schema type (`None`: unspecified, any value).
    Field(Ty, bool),
    /// Below a free-form object: any field, any value.
    FreeForm,
}

/// Checks one Composition; the problems' fields are the Composition's.
pub(crate) fn check(value: &Value, validator: &Validator) -> Vec<Problem> {
    let composition = match Composition::from_value(value.clone()) {
        Ok(c) => c,
        Err(e) => return vec![Problem::invalid("spec", json!("object"), e.to_string())],
    };
    let mut problems: Vec<Problem> = match composition.validate() {
        Ok(()) => Vec::new(),
        Err(errors) => errors.into_iter().map(Problem::from).collect(),
    };
    let xr_ref = &composition.spec.composite_type_ref;
    let xr = validator
        .catalog()
        .get(&xr_ref.api_version, &xr_ref.kind)
        .map(|s| (s, gvk_string(&xr_ref.api_version, &xr_ref.kind)));

    // A `mode: Resources` Composition is checked as the pipeline it
    // converts to, its fields reported where they are written (`spec`).
    let native = composition.mode() == CompositionMode::Resources;
    let pipeline = match composition.to_pipeline() {
        Ok(converted) => converted.spec.pipeline,
        Err(e) => {
            problems.push(Problem::invalid("spec", json!("object"), e.to_string()));
            Vec::new()
        }
    };
    let inputs: Vec<(String, Value)> = pipeline
        .iter()
        .enumerate()
        .filter_map(|(i, step)| {
            let input = step.input.as_ref()?;
            let group = input
                .get("apiVersion")
                .and_then(Value::as_str)?
                .split('/')
                .next()?;
            let kind = input.get("kind").and_then(Value::as_str)?;
            let prefix = if native {
                "spec".to_string()
            } else {
                format!("spec.pipeline[{i}].input")
            };
            (group == PT_GROUP && kind == "Resources").then(|| (prefix, input.clone()))
        })
        .collect();
    for (prefix, input) in inputs {
        let resources = match Resources::from_value(input) {
            Ok(r) => r,
            Err(e) => {
                problems.push(Problem::invalid(
                    prefix.clone(),
                    json!("object"),
                    e.to_string(),
                ));
                continue;
            }
        };
        if let Err(e) = plait_patch_and_transform::validate::resources(&resources) {
            let mut p = Problem::from(e);
            p.field = join(&prefix, &p.field);
            problems.push(p);
            continue;
        }
        let checker = Checker {
            validator,
            xr: xr.as_ref().map(|(s, g)| (*s, g.as_str())),
            problems: &mut problems,
        };
        checker.input(&prefix, &resources);
    }
    problems
}

fn join(prefix: &str, field: &str) -> String {
    if field.is_empty() {
        prefix.to_string()
    } else if field.starts_with('[') {
        format!("{prefix}{field}")
    } else {
        format!("{prefix}.{field}")
    }
}

struct Checker<'a> {
    validator: &'a Validator,
    xr: Option<(&'a KindSchema, &'a str)>,
    problems: &'a mut Vec<Problem>,
}

impl Checker<'_> {
    fn input(mut self, prefix: &str, resources: &Resources) {
        for (i, template) in resources.resources.iter().enumerate() {
            let at = format!("{prefix}.resources[{i}]");
            let composed = template.base.as_ref().and_then(|base| {
                let api_version = base.get("apiVersion")?.as_str()?;
                let kind = base.get("kind")?.as_str()?;
                let schema = self.validator.catalog().get(api_version, kind)?;
                Some((schema, gvk_string(api_version, kind)))
            });
            if let (Some(base), Some((schema, _))) = (&template.base, &composed) {
                let findings = Walker::new(schema, self.validator.rules())
                    .partial()
                    .run(base, None);
                for mut p in findings.schema {
                    p.field = join(&format!("{at}.base"), &p.field);
                    p.detail = format!("resource {:?}: {}", template.name, p.detail);
                    self.problems.push(p);
                }
            }
            let composed_ref = composed.as_ref().map(|(s, g)| (*s, g.as_str()));
            for (j, patch) in template.patches.iter().enumerate() {
                let patch_at = format!("{at}.patches[{j}]");
                if patch.patch_type() == PATCH_SET {
                    let name = patch.patch_set_name.as_deref().unwrap_or_default();
                    let Some((k, set)) = resources
                        .patch_sets
                        .iter()
                        .enumerate()
                        .find(|(_, s)| s.name == name)
                    else {
                        continue;
                    };
                    for (l, p) in set.patches.iter().enumerate() {
                        let context = format!(
                            "resource {:?}, patch set {name:?} (spec.patchSets[{k}].patches[{l}])",
                            template.name
                        );
                        self.patch(&patch_at, &context, p, composed_ref);
                    }
                    continue;
                }
                let context = format!("resource {:?}", template.name);
                self.patch(&patch_at, &context, patch, composed_ref);
            }
        }
    }

    /// Checks one patch of a composed resource: its paths, then the types
    /// through its transforms.
    fn patch(
        &mut self,
        at: &str,
        context: &str,
        patch: &Patch,
        composed: Option<(&KindSchema, &str)>,
    ) {
        let xr = self.xr;
        let (from_side, to_side) = match patch.patch_type() {
            FROM_COMPOSITE_FIELD_PATH | COMBINE_FROM_COMPOSITE => (Some(xr), Some(composed)),
            TO_COMPOSITE_FIELD_PATH | COMBINE_TO_COMPOSITE => (Some(composed), Some(xr)),
            FROM_ENVIRONMENT_FIELD_PATH | COMBINE_FROM_ENVIRONMENT => (None, Some(composed)),
            TO_ENVIRONMENT_FIELD_PATH | COMBINE_TO_ENVIRONMENT => (Some(composed), None),
            _ => (None, None),
        };
        let mut from_type: Ty = None;
        if let Some(combine) = &patch.combine {
            for (v, variable) in combine.variables.iter().enumerate() {
                if let Some(Some(side)) = from_side {
                    self.path(
                        &format!("{at}.combine.variables[{v}].fromFieldPath"),
                        context,
                        &variable.from_field_path,
                        side,
                    );
                }
            }
            // A string combine always yields a string.
            from_type = Some("string");
        } else if let Some(Some(side)) = from_side
            && let Some(path) = patch.from_field_path.as_deref()
        {
            from_type = match self.path(&format!("{at}.fromFieldPath"), context, path, side) {
                Some(Reached::Field(ty, _)) => ty,
                _ => None,
            };
        }
        let mut ty = from_type;
        for (t, transform) in patch.transforms.iter().enumerate() {
            ty = match transform_type(transform, ty) {
                Ok(out) => out,
                Err(message) => {
                    self.problems.push(Problem::invalid(
                        format!("{at}.transforms[{t}]"),
                        json!(transform.kind()),
                        format!("{context}: {message}"),
                    ));
                    return;
                }
            };
        }
        let to_path = patch.to_field_path();
        if let Some(Some(side)) = to_side
            && !to_path.is_empty()
        {
            let field = if patch.to_field_path.is_some() {
                format!("{at}.toFieldPath")
            } else {
                format!("{at}.fromFieldPath")
            };
            if let Some(Reached::Field(Some(want), int_or_string)) =
                self.path(&field, context, to_path, side)
                && let Some(have) = ty
                && !assignable(have, want, int_or_string)
            {
                self.problems.push(Problem::invalid(
                    field,
                    json!(to_path),
                    format!(
                        "{context}: the patch writes a value of type {have} to a field of type {want}{}",
                        if patch.transforms.is_empty() {
                            String::new()
                        } else {
                            " after its transforms".to_string()
                        }
                    ),
                ));
            }
        }
    }

    /// Checks that `path` is a field of the side's kind; the problem, if
    /// any, is reported at `field`.
    fn path(
        &mut self,
        field: &str,
        context: &str,
        path: &str,
        (schema, gvk): (&KindSchema, &str),
    ) -> Option<Reached> {
        let parsed = match FieldPath::parse(path) {
            Ok(p) => p,
            Err(e) => {
                self.problems.push(Problem::invalid(
                    field,
                    json!(path),
                    format!("{context}: {e}"),
                ));
                return None;
            }
        };
        match reach(schema, &parsed.segments) {
            Ok(reached) => Some(reached),
            Err(message) => {
                self.problems.push(Problem::invalid(
                    field,
                    json!(path),
                    format!("{context}: {message} in the schema of {gvk}"),
                ));
                None
            }
        }
    }
}

/// Walks a kind's schema along a field path.
fn reach(kind: &KindSchema, segments: &[Segment]) -> Result<Reached, String> {
    let meta = object_meta_schema();
    let mut schema: &Value = &kind.root;
    let mut at_root = true;
    let mut walked = String::new();
    for segment in segments {
        schema = resolve(kind, schema);
        let preserve = schema
            .get("x-kubernetes-preserve-unknown-fields")
            .and_then(Value::as_bool)
            == Some(true);
        match segment {
            Segment::Field(name) => {
                let properties = schema.get("properties").and_then(Value::as_object);
                let embedded = schema
                    .get("x-kubernetes-embedded-resource")
                    .and_then(Value::as_bool)
                    == Some(true);
                if (at_root || embedded) && *name == "metadata" && kind.origin.is_custom() {
                    schema = &meta;
                } else if let Some(child) = properties.and_then(|p| p.get(*name)) {
                    schema = child;
                } else if let Some(additional) =
                    schema.get("additionalProperties").filter(|a| a.is_object())
                {
                    schema = additional;
                } else if (at_root || embedded) && matches!(*name, "apiVersion" | "kind") {
                    return Ok(Reached::Field(Some("string"), false));
                } else if preserve
                    || schema.get("additionalProperties") == Some(&Value::Bool(true))
                    || (!kind.origin.is_custom() && properties.is_none())
                {
                    return Ok(Reached::FreeForm);
                } else if schema.get("type").and_then(Value::as_str) == Some("array") {
                    return Err(format!("{} is an array, not an object", shown(&walked)));
                } else {
                    return Err(format!(
                        "no field {} under {}",
                        plait_go_compat::strconv::quote(name),
                        shown(&walked)
                    ));
                }
                if walked.is_empty() {
                    walked.push_str(name);
                } else {
                    walked = format!("{walked}.{name}");
                }
            }
            Segment::Index(i) => {
                if let Some(items) = schema.get("items") {
                    schema = items;
                } else if preserve {
                    return Ok(Reached::FreeForm);
                } else {
                    return Err(format!("{} is not an array", shown(&walked)));
                }
                walked = format!("{walked}[{i}]");
            }
        }
        at_root = false;
    }
    let schema = resolve(kind, schema);
    let int_or_string = schema
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true);
    let ty = match schema.get("type").and_then(Value::as_str) {
        Some("string") => Some("string"),
        Some("integer") => Some("integer"),
        Some("number") => Some("number"),
        Some("boolean") => Some("boolean"),
        Some("object") => Some("object"),
        Some("array") => Some("array"),
        _ => None,
    };
    Ok(Reached::Field(ty, int_or_string))
}

fn shown(walked: &str) -> String {
    if walked.is_empty() {
        "the object".to_string()
    } else {
        walked.to_string()
    }
}

fn resolve<'s>(kind: &'s KindSchema, mut schema: &'s Value) -> &'s Value {
    for _ in 0..32 {
        let reference = schema.get("$ref").and_then(Value::as_str).or_else(|| {
            match schema.get("allOf")?.as_array()?.as_slice() {
                [only] => only.get("$ref")?.as_str(),
                _ => None,
            }
        });
        let Some(name) = reference.and_then(|r| r.rsplit('/').next()) else {
            break;
        };
        match kind.components.get(name) {
            Some(target) => schema = target,
            None => break,
        }
    }
    schema
}

/// Whether a value of type `have` may be written to a field of type `want`.
fn assignable(have: &str, want: &str, int_or_string: bool) -> bool {
    have == want
        || (have == "integer" && want == "number")
        || (int_or_string && matches!(have, "integer" | "string"))
}

/// The type a transform yields from an input of type `input`, or why the
/// input does not suit it.
fn transform_type(t: &Transform, input: Ty) -> Result<Ty, String> {
    let needs = |want: &[&str], what: &str| -> Result<(), String> {
        match input {
            Some(have) if !want.contains(&have) => Err(format!(
                "a {what} transform needs {} input, but gets {have}",
                want.join(" or ")
            )),
            _ => Ok(()),
        }
    };
    match t.kind() {
        "math" => {
            needs(&["integer", "number"], "math")?;
            Ok(input.or(Some("number")))
        }
        "map" => {
            needs(&["string"], "map")?;
            let values = t.map.as_ref().map(|m| m.pairs.values().collect::<Vec<_>>());
            Ok(common_type(values.into_iter().flatten()))
        }
        "match" => {
            let m = t.match_transform.as_ref();
            let results = m.into_iter().flat_map(|m| {
                m.patterns
                    .iter()
                    .map(|p| &p.result)
                    .chain((!m.fallback_value.is_null()).then_some(&m.fallback_value))
            });
            Ok(common_type(results))
        }
        "string" => {
            let kind = t.string.as_ref().map(|s| s.kind()).unwrap_or_default();
            match kind {
                "Format" => {}
                "Join" => needs(&["array"], "string Join")?,
                _ => needs(&["string"], &format!("string {kind}"))?,
            }
            Ok(Some("string"))
        }
        "convert" => {
            let to = t
                .convert
                .as_ref()
                .map(|c| c.to_type.as_str())
                .unwrap_or_default();
            let out = match to {
                "string" => Some("string"),
                "int" | "int64" => Some("integer"),
                "bool" => Some("boolean"),
                "float64" => Some("number"),
                "object" => Some("object"),
                "array" => Some("array"),
                _ => None,
            };
            if let Some(have) = input {
                let from_ok = match to {
                    "object" | "array" => have == "string",
                    _ => matches!(have, "string" | "integer" | "number" | "boolean"),
                };
                if !from_ok {
                    return Err(format!("cannot convert {have} to {to}"));
                }
            }
            Ok(out)
        }
        _ => Ok(None),
    }
}

/// The one JSON type every value has, if they share one.
fn common_type<'v>(values: impl Iterator<Item = &'v Value>) -> Ty {
    let mut ty: Option<&'static str> = None;
    for v in values {
        let t = crate::openapi::type_name(v);
        let t = match t {
            "null" => continue,
            other => other,
        };
        match ty {
            None => ty = Some(t),
            Some(existing) if existing == t => {}
            Some(_) => return None,
        }
    }
    ty
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transform_types_follow_upstream_semantics() {
        let t = |v: Value| -> Transform {
            serde_json::from_value(v).unwrap_or_else(|e| panic!("test transform: {e}"))
        };
        let cases: Vec<(Value, Ty, Result<Ty, &str>)> = vec![
            (
                json!({"type": "math", "math": {"type": "Multiply", "multiply": 2}}),
                Some("integer"),
                Ok(Some("integer")),
            ),
            (
                json!({"type": "math", "math": {"type": "Multiply", "multiply": 2}}),
                Some("string"),
                Err("a math transform needs integer or number input, but gets string"),
            ),
            (
                json!({"type": "string", "string": {"type": "Format", "fmt": "%d"}}),
                Some("integer"),
                Ok(Some("string")),
            ),
            (
                json!({"type": "string", "string": {"type": "TrimPrefix", "trim": "a"}}),
                Some("integer"),
                Err("a string TrimPrefix transform needs string input, but gets integer"),
            ),
            (
                json!({"type": "convert", "convert": {"toType": "int64"}}),
                Some("string"),
                Ok(Some("integer")),
            ),
            (
                json!({"type": "convert", "convert": {"toType": "object", "format": "json"}}),
                Some("integer"),
                Err("cannot convert integer to object"),
            ),
            (
                json!({"type": "map", "map": {"a": "x", "b": "y"}}),
                Some("string"),
                Ok(Some("string")),
            ),
            (
                json!({"type": "map", "map": {"a": 1, "b": "y"}}),
                Some("string"),
                Ok(None),
            ),
            (
                json!({"type": "match", "match": {"patterns": [{"type": "literal", "literal": "a", "result": 3}], "fallbackValue": 4}}),
                None,
                Ok(Some("integer")),
            ),
        ];
        for (transform, input, want) in cases {
            let got = transform_type(&t(transform.clone()), input);
            match (got, want) {
                (Ok(g), Ok(w)) => assert_eq!(g, w, "{transform}"),
                (Err(g), Err(w)) => assert_eq!(g, w, "{transform}"),
                (g, w) => panic!("{transform}: got {g:?}, want {w:?}"),
            }
        }
    }

    #[test]
    fn a_string_or_integer_may_go_to_an_int_or_string_field() {
        assert!(assignable("integer", "number", false));
        assert!(!assignable("number", "integer", false));
        assert!(assignable("string", "integer", true));
        assert!(!assignable("boolean", "string", false));
    }
}
