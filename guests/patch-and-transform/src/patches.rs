//! Applying patches (P&T `patches.go`). Patches always read observed state
//! and write desired state.

use std::collections::HashMap;

use serde_json::Value;

use crate::fieldpath::{self, FieldPathError};
use crate::input::{
    COMBINE_FROM_COMPOSITE, COMBINE_FROM_ENVIRONMENT, COMBINE_TO_COMPOSITE, COMBINE_TO_ENVIRONMENT,
    ComposedTemplate, FROM_COMPOSITE_FIELD_PATH, FROM_ENVIRONMENT_FIELD_PATH, PATCH_SET, Patch,
    PatchSet, TO_COMPOSITE_FIELD_PATH, TO_ENVIRONMENT_FIELD_PATH,
};
use crate::merge::{self, MergeOptions};
use crate::transforms;
use plait_go_compat::printf;

/// Why a patch failed. `not_found` marks a missing `from` field, which the
/// `fromFieldPath` policy may turn into "skip this patch".
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct PatchError {
    pub message: String,
    pub not_found: bool,
}

impl PatchError {
    fn new(message: String) -> Self {
        PatchError {
            message,
            not_found: false,
        }
    }

    /// Prefixes the message; like Go's `errors.Wrap`, the NotFound cause
    /// stays visible.
    pub fn wrap(self, context: &str) -> Self {
        PatchError {
            message: format!("{context}: {}", self.message),
            not_found: self.not_found,
        }
    }
}

impl From<FieldPathError> for PatchError {
    fn from(err: FieldPathError) -> Self {
        PatchError {
            message: err.message,
            not_found: err.not_found,
        }
    }
}

impl From<transforms::TransformError> for PatchError {
    fn from(err: transforms::TransformError) -> Self {
        PatchError::new(err.to_string())
    }
}

/// The merge options of a patch's toFieldPath policy (`toMergeOption`).
fn merge_options(p: &Patch) -> Result<Option<MergeOptions>, PatchError> {
    p.to_field_path_policy()
        .map(merge::ToFieldPathPolicy::merge_options)
        .ok_or_else(|| {
            PatchError::new(format!(
                "invalid patch policy {}",
                p.to_field_path_policy_name()
            ))
        })
}

/// Copies `fromFieldPath` of `from`, transformed, to `toFieldPath` of `to`.
/// A `toFieldPath` with `[*]` writes every existing match.
pub fn apply_from_field_path(p: &Patch, from: &Value, to: &mut Value) -> Result<(), PatchError> {
    let input = fieldpath::get_value(from, p.from_field_path())?.clone();
    let output = transforms::resolve_all(&p.transforms, input)?;
    let value = fieldpath::to_valid_json(output);
    let options = merge_options(p)?;
    let to_path = p.to_field_path();
    if to_path.contains("[*]") {
        let paths = fieldpath::expand_wildcards(to, to_path)?;
        if paths.is_empty() {
            return Err(PatchError::new(format!(
                "cannot expand ToFieldPath {to_path}"
            )));
        }
        for path in paths {
            merge::merge_value(to, &path, value.clone(), options)?;
        }
        return Ok(());
    }
    merge::merge_value(to, to_path, value, options)
        .map_err(|e| PatchError::from(e).wrap("cannot patch to object"))
}

/// Formats the `combine` variables read from `from` into one string,
/// transforms it and writes it to `toFieldPath` of `to`. Any missing
/// variable aborts the patch.
pub fn apply_combine(p: &Patch, from: &Value, to: &mut Value) -> Result<(), PatchError> {
    let Some(combine) = &p.combine else {
        return Err(PatchError::new(format!(
            "combine must be set for patch type {}",
            p.patch_type()
        )));
    };
    let variables = combine
        .variables
        .iter()
        .map(|v| fieldpath::get_value(from, &v.from_field_path).cloned())
        .collect::<Result<Vec<_>, _>>()?;
    let combined = match (combine.strategy.as_str(), &combine.string) {
        ("string", Some(string)) => Value::String(printf::sprintf(&string.fmt, &variables)),
        ("string", None) => {
            return Err(PatchError::new(
                "given combine strategy string requires configuration".to_owned(),
            ));
        }
        (other, _) => {
            return Err(PatchError::new(format!(
                "combine strategy {other} is not supported"
            )));
        }
    };
    let output = transforms::resolve_all(&p.transforms, combined)?;
    let options = merge_options(p)?;
    merge::merge_value(to, p.to_field_path(), output, options)
        .map_err(|e| PatchError::from(e).wrap("cannot patch to object"))
}

/// An environment patch: from the observed XR to the environment, or from
/// the environment to the desired XR.
pub fn apply_environment_patch(
    p: &Patch,
    env: &mut Value,
    observed_xr: &Value,
    desired_xr: &mut Value,
) -> Result<(), PatchError> {
    match p.patch_type() {
        FROM_COMPOSITE_FIELD_PATH | TO_ENVIRONMENT_FIELD_PATH => {
            apply_from_field_path(p, observed_xr, env)
        }
        COMBINE_FROM_COMPOSITE => apply_combine(p, observed_xr, env),
        TO_COMPOSITE_FIELD_PATH | FROM_ENVIRONMENT_FIELD_PATH => {
            apply_from_field_path(p, env, desired_xr)
        }
        COMBINE_TO_COMPOSITE => apply_combine(p, env, desired_xr),
        // Validation only lets the types above through.
        _ => Ok(()),
    }
}

/// The state a composed-resource patch works on.
pub struct ComposedTargets<'a> {
    /// The observed composed resource, if it exists yet.
    pub observed: Option<&'a Value>,
    pub desired: &'a mut Value,
    pub observed_xr: &'a Value,
    pub desired_xr: &'a mut Value,
    pub env: &'a mut Value,
}

/// A patch of a resource template. Patches from a composed resource that is
/// not observed yet do nothing; they apply once it exists.
pub fn apply_composed_patch(p: &Patch, t: &mut ComposedTargets<'_>) -> Result<(), PatchError> {
    let observed = match t.observed {
        Some(observed) => observed,
        None if !to_composed_resource(p) => return Ok(()),
        None => &Value::Null,
    };
    match p.patch_type() {
        TO_COMPOSITE_FIELD_PATH => apply_from_field_path(p, observed, t.desired_xr),
        COMBINE_TO_COMPOSITE => apply_combine(p, observed, t.desired_xr),
        TO_ENVIRONMENT_FIELD_PATH => apply_from_field_path(p, observed, t.env),
        COMBINE_TO_ENVIRONMENT => apply_combine(p, observed, t.env),
        FROM_COMPOSITE_FIELD_PATH => apply_from_field_path(p, t.observed_xr, t.desired),
        COMBINE_FROM_COMPOSITE => apply_combine(p, t.observed_xr, t.desired),
        FROM_ENVIRONMENT_FIELD_PATH => apply_from_field_path(p, t.env, t.desired),
        COMBINE_FROM_ENVIRONMENT => apply_combine(p, t.env, t.desired),
        // PatchSets are inlined before patching.
        _ => Ok(()),
    }
}

/// Whether the patch writes the desired composed resource (rather than
/// reading the observed one).
pub fn to_composed_resource(p: &Patch) -> bool {
    matches!(
        p.patch_type(),
        FROM_COMPOSITE_FIELD_PATH
            | COMBINE_FROM_COMPOSITE
            | FROM_ENVIRONMENT_FIELD_PATH
            | COMBINE_FROM_ENVIRONMENT
    )
}

/// Patches of the v2 connection Secret reference, from the observed XR. An
/// Optional FromCompositeFieldPath patch that fails is skipped.
pub fn apply_connection_secret_patches(
    patches: &[Patch],
    xr: &Value,
    reference: &mut Value,
) -> Result<(), PatchError> {
    for (i, p) in patches.iter().enumerate() {
        let result = match p.patch_type() {
            FROM_COMPOSITE_FIELD_PATH => match apply_from_field_path(p, xr, reference) {
                Err(_) if !p.is_required() => continue,
                result => result,
            },
            COMBINE_FROM_COMPOSITE => apply_combine(p, xr, reference),
            other => {
                return Err(PatchError::new(format!(
                    "unsupported patch type {other} at index {i}"
                )));
            }
        };
        result.map_err(|e| {
            e.wrap(&format!(
                "cannot apply patch type {} at index {i}",
                p.patch_type()
            ))
        })?;
    }
    Ok(())
}

/// Each template's patches with `PatchSet` entries replaced, in place, by
/// the set's patches.
pub fn resolve_patch_sets<'a>(
    patch_sets: &'a [PatchSet],
    templates: &'a [ComposedTemplate],
) -> Result<Vec<Vec<&'a Patch>>, String> {
    let mut sets: HashMap<&str, &'a [Patch]> = HashMap::new();
    for set in patch_sets {
        if set.patches.iter().any(|p| p.patch_type() == PATCH_SET) {
            return Err("a patch in a PatchSet cannot be of type PatchSet".to_owned());
        }
        sets.insert(set.name.as_str(), &set.patches);
    }
    templates
        .iter()
        .map(|template| {
            let mut resolved = Vec::with_capacity(template.patches.len());
            for p in &template.patches {
                if p.patch_type() != PATCH_SET {
                    resolved.push(p);
                    continue;
                }
                let Some(name) = p.patch_set_name.as_deref() else {
                    return Err(format!("PatchSetName is required by type {PATCH_SET}"));
                };
                let Some(set) = sets.get(name) else {
                    return Err(format!("cannot find PatchSet by name {name}"));
                };
                resolved.extend(set.iter());
            }
            Ok(resolved)
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

    /// What a patch should do: the patched object, or the error and
    /// whether it is NotFound.
    type Outcome = Result<Value, (&'static str, bool)>;

    fn patch(spec: Value) -> Patch {
        serde_json::from_value(spec).unwrap()
    }

    #[test]
    fn from_field_path_patches() {
        let from = json!({
            "spec": {"name": "db", "size": 3, "labels": {"a": "1"}, "none": null, "items": [1, 2]},
        });
        let cases: Vec<(&str, Value, Value, Outcome)> = vec![
            (
                "copies a value",
                json!({"fromFieldPath": "spec.name", "toFieldPath": "spec.forProvider.name"}),
                json!({}),
                Ok(json!({"spec": {"forProvider": {"name": "db"}}})),
            ),
            (
                "toFieldPath defaults to fromFieldPath",
                json!({"fromFieldPath": "spec.size"}),
                json!({"spec": {"size": 1}}),
                Ok(json!({"spec": {"size": 3}})),
            ),
            (
                "null is written",
                json!({"fromFieldPath": "spec.none", "toFieldPath": "spec.x"}),
                json!({"spec": {"x": 1}}),
                Ok(json!({"spec": {"x": null}})),
            ),
            (
                "missing source is NotFound",
                json!({"fromFieldPath": "spec.missing", "toFieldPath": "spec.x"}),
                json!({}),
                Err(("spec.missing: no such field", true)),
            ),
            (
                "source through a scalar fails",
                json!({"fromFieldPath": "spec.name.x", "toFieldPath": "spec.x"}),
                json!({}),
                Err(("spec.name: not an object", false)),
            ),
            (
                "write through a scalar fails",
                json!({"fromFieldPath": "spec.name", "toFieldPath": "spec.x.y"}),
                json!({"spec": {"x": "scalar"}}),
                Err(("cannot patch to object: spec.x is not an object", false)),
            ),
            (
                "MergeObjects keeps existing keys",
                json!({"fromFieldPath": "spec.labels", "toFieldPath": "metadata.labels",
                "policy": {"toFieldPath": "MergeObjects"}}),
                json!({"metadata": {"labels": {"a": "0", "b": "2"}}}),
                Ok(json!({"metadata": {"labels": {"a": "0", "b": "2"}}})),
            ),
            (
                "append arrays",
                json!({"fromFieldPath": "spec.items", "toFieldPath": "spec.items",
                "policy": {"toFieldPath": "ForceMergeObjectsAppendArrays"}}),
                json!({"spec": {"items": [0, 1]}}),
                Ok(json!({"spec": {"items": [0, 1, 2]}})),
            ),
            (
                "wildcard writes existing leaves",
                json!({"fromFieldPath": "spec.name", "toFieldPath": "spec.rules[*].name"}),
                json!({"spec": {"rules": [{"name": "a"}, {"other": 1}, {"name": "c"}]}}),
                Ok(json!({"spec": {"rules": [{"name": "db"}, {"other": 1}, {"name": "db"}]}})),
            ),
            (
                "wildcard with nothing to expand fails",
                json!({"fromFieldPath": "spec.name", "toFieldPath": "spec.rules[*].name"}),
                json!({"spec": {"rules": []}}),
                Err(("cannot expand ToFieldPath spec.rules[*].name", false)),
            ),
        ];
        for (name, p, mut to, expected) in cases {
            let got = apply_from_field_path(&patch(p), &from, &mut to)
                .map(|()| to)
                .map_err(|e| (e.message, e.not_found));
            let expected = expected.map_err(|(m, nf)| (m.to_owned(), nf));
            assert_eq!(got, expected, "{name}");
        }
    }

    #[test]
    fn combine_patches() {
        let from = json!({"metadata": {"name": "xr"}, "spec": {"region": "eu", "count": 3}});
        let cases: Vec<(&str, Value, Outcome)> = vec![
            (
                "formats the variables",
                json!({"type": "CombineFromComposite", "toFieldPath": "spec.name",
                "combine": {"strategy": "string", "variables": [{"fromFieldPath": "metadata.name"}, {"fromFieldPath": "spec.region"}],
                            "string": {"fmt": "%s-%s"}}}),
                Ok(json!({"spec": {"name": "xr-eu"}})),
            ),
            (
                "integers format with %d",
                json!({"type": "CombineFromComposite", "toFieldPath": "spec.name",
                "combine": {"strategy": "string", "variables": [{"fromFieldPath": "spec.count"}], "string": {"fmt": "n%d"}}}),
                Ok(json!({"spec": {"name": "n3"}})),
            ),
            (
                "a missing variable is NotFound",
                json!({"type": "CombineFromComposite", "toFieldPath": "spec.name",
                "combine": {"strategy": "string", "variables": [{"fromFieldPath": "metadata.name"}, {"fromFieldPath": "spec.zone"}],
                            "string": {"fmt": "%s-%s"}}}),
                Err(("spec.zone: no such field", true)),
            ),
            (
                "unknown strategy",
                json!({"type": "CombineFromComposite", "toFieldPath": "spec.name",
                "combine": {"strategy": "join", "variables": [{"fromFieldPath": "metadata.name"}]}}),
                Err(("combine strategy join is not supported", false)),
            ),
        ];
        for (name, p, expected) in cases {
            let mut to = json!({});
            let got = apply_combine(&patch(p), &from, &mut to)
                .map(|()| to)
                .map_err(|e| (e.message, e.not_found));
            assert_eq!(
                got,
                expected.map_err(|(m, nf)| (m.to_owned(), nf)),
                "{name}"
            );
        }
    }

    #[test]
    fn composed_patches_read_observed_and_write_desired() {
        let observed_xr = json!({"spec": {"a": "from-xr"}});
        let observed = json!({"status": {"id": "from-composed"}});
        let cases = [
            (
                json!({"type": "FromCompositeFieldPath", "fromFieldPath": "spec.a", "toFieldPath": "spec.x"}),
                json!({"spec": {"x": "from-xr"}}),
                json!({}),
                json!({"env": 1}),
            ),
            (
                json!({"type": "ToCompositeFieldPath", "fromFieldPath": "status.id", "toFieldPath": "status.id"}),
                json!({}),
                json!({"status": {"id": "from-composed"}}),
                json!({"env": 1}),
            ),
            (
                json!({"type": "FromEnvironmentFieldPath", "fromFieldPath": "env", "toFieldPath": "spec.env"}),
                json!({"spec": {"env": 1}}),
                json!({}),
                json!({"env": 1}),
            ),
            (
                json!({"type": "ToEnvironmentFieldPath", "fromFieldPath": "status.id", "toFieldPath": "id"}),
                json!({}),
                json!({}),
                json!({"env": 1, "id": "from-composed"}),
            ),
            (
                json!({"type": "CombineToEnvironment", "toFieldPath": "id",
                "combine": {"strategy": "string", "variables": [{"fromFieldPath": "status.id"}], "string": {"fmt": "<%s>"}}}),
                json!({}),
                json!({}),
                json!({"env": 1, "id": "<from-composed>"}),
            ),
            (
                json!({"type": "CombineFromEnvironment", "toFieldPath": "spec.env",
                "combine": {"strategy": "string", "variables": [{"fromFieldPath": "env"}], "string": {"fmt": "%v"}}}),
                json!({"spec": {"env": "1"}}),
                json!({}),
                json!({"env": 1}),
            ),
        ];
        for (p, want_desired, want_desired_xr, want_env) in cases {
            let (mut desired, mut desired_xr, mut env) = (json!({}), json!({}), json!({"env": 1}));
            let mut targets = ComposedTargets {
                observed: Some(&observed),
                desired: &mut desired,
                observed_xr: &observed_xr,
                desired_xr: &mut desired_xr,
                env: &mut env,
            };
            apply_composed_patch(&patch(p.clone()), &mut targets).unwrap();
            assert_eq!(
                (desired, desired_xr, env),
                (want_desired, want_desired_xr, want_env),
                "{p}"
            );
        }
    }

    #[test]
    fn patches_from_an_unobserved_resource_do_nothing() {
        let p = patch(
            json!({"type": "ToCompositeFieldPath", "fromFieldPath": "status.id", "toFieldPath": "status.id"}),
        );
        let (mut desired, mut desired_xr, mut env) = (json!({}), json!({}), json!({}));
        let mut targets = ComposedTargets {
            observed: None,
            desired: &mut desired,
            observed_xr: &json!({}),
            desired_xr: &mut desired_xr,
            env: &mut env,
        };
        assert_eq!(apply_composed_patch(&p, &mut targets), Ok(()));
        assert_eq!(desired_xr, json!({}));
    }

    #[test]
    fn environment_patches() {
        let observed_xr = json!({"spec": {"region": "eu"}});
        let cases = [
            (
                json!({"type": "FromCompositeFieldPath", "fromFieldPath": "spec.region", "toFieldPath": "region"}),
                json!({"zone": "a", "region": "eu"}),
                json!({}),
            ),
            (
                json!({"type": "ToEnvironmentFieldPath", "fromFieldPath": "spec.region", "toFieldPath": "region"}),
                json!({"zone": "a", "region": "eu"}),
                json!({}),
            ),
            (
                json!({"type": "ToCompositeFieldPath", "fromFieldPath": "zone", "toFieldPath": "status.zone"}),
                json!({"zone": "a"}),
                json!({"status": {"zone": "a"}}),
            ),
            (
                json!({"type": "FromEnvironmentFieldPath", "fromFieldPath": "zone", "toFieldPath": "status.zone"}),
                json!({"zone": "a"}),
                json!({"status": {"zone": "a"}}),
            ),
            (
                json!({"type": "CombineToComposite", "toFieldPath": "status.zone",
                "combine": {"strategy": "string", "variables": [{"fromFieldPath": "zone"}], "string": {"fmt": "z-%s"}}}),
                json!({"zone": "a"}),
                json!({"status": {"zone": "z-a"}}),
            ),
        ];
        for (p, want_env, want_desired_xr) in cases {
            let (mut env, mut desired_xr) = (json!({"zone": "a"}), json!({}));
            apply_environment_patch(&patch(p.clone()), &mut env, &observed_xr, &mut desired_xr)
                .unwrap();
            assert_eq!((env, desired_xr), (want_env, want_desired_xr), "{p}");
        }
    }

    #[test]
    fn patch_sets_are_inlined_in_place() {
        let sets: Vec<PatchSet> = serde_json::from_value(json!([
            {"name": "common", "patches": [{"fromFieldPath": "a"}, {"fromFieldPath": "b"}]}
        ]))
        .unwrap();
        let templates: Vec<ComposedTemplate> = serde_json::from_value(json!([
            {"name": "r", "patches": [{"fromFieldPath": "x"}, {"type": "PatchSet", "patchSetName": "common"}, {"fromFieldPath": "y"}]}
        ]))
        .unwrap();
        let resolved = resolve_patch_sets(&sets, &templates).unwrap();
        let paths: Vec<&str> = resolved[0].iter().map(|p| p.from_field_path()).collect();
        assert_eq!(paths, ["x", "a", "b", "y"]);

        let unknown: Vec<ComposedTemplate> = serde_json::from_value(json!([
            {"name": "r", "patches": [{"type": "PatchSet", "patchSetName": "nope"}]}
        ]))
        .unwrap();
        assert_eq!(
            resolve_patch_sets(&sets, &unknown).unwrap_err(),
            "cannot find PatchSet by name nope"
        );
    }
}
