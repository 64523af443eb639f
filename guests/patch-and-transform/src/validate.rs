//! Validation of the whole input before anything runs (P&T `validate.go`).
//!
//! Errors render like Kubernetes field errors, relative to the input root:
//! `resources[2].patches[0].combine: Required value: …` or
//! `…type: Invalid value: "Foo": …`. The first error wins.

use crate::input::{
    COMBINE_FROM_COMPOSITE, COMBINE_FROM_ENVIRONMENT, COMBINE_TO_COMPOSITE, COMBINE_TO_ENVIRONMENT,
    Combine, ComposedTemplate, ConnectionDetail, Environment, FROM_COMPOSITE_FIELD_PATH,
    FROM_CONNECTION_SECRET_KEY, FROM_ENVIRONMENT_FIELD_PATH, FROM_FIELD_PATH, FROM_VALUE,
    PATCH_SET, Patch, PatchSet, ReadinessCheck, Resources, TO_COMPOSITE_FIELD_PATH,
    TO_ENVIRONMENT_FIELD_PATH,
};
use crate::merge::ToFieldPathPolicy;
use crate::transforms;
use plait_go_compat::field::{Error as FieldError, Path};

type Result = std::result::Result<(), FieldError>;

/// Where a patch appears; each place has its own Go type upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PatchPlace {
    Composed,
    PatchSet,
    Environment,
}

/// Validates the whole input.
pub fn resources(r: &Resources) -> Result {
    for set in &r.patch_sets {
        patch_set(set)?;
    }
    let env_patches = r.environment.as_ref().map_or(0, |e| e.patches.len());
    if r.resources.is_empty() && env_patches == 0 {
        return Err(FieldError::required(
            Path::new("resources"),
            "resources or environment patches are required",
        ));
    }
    for (i, t) in r.resources.iter().enumerate() {
        composed_template(t).map_err(|e| e.under(&Path::new("resources").index(i)))?;
    }
    if let Some(env) = &r.environment {
        environment(env).map_err(|e| e.under(&Path::new("environment")))?;
    }
    Ok(())
}

fn composed_template(t: &ComposedTemplate) -> Result {
    if t.name.is_empty() {
        return Err(FieldError::required(Path::new("name"), "name is required"));
    }
    for (i, p) in t.patches.iter().enumerate() {
        patch(p, PatchPlace::Composed).map_err(|e| e.under(&Path::new("patches").index(i)))?;
    }
    for (i, cd) in t.connection_details.iter().enumerate() {
        connection_detail(cd).map_err(|e| e.under(&Path::new("connectionDetails").index(i)))?;
    }
    for (i, rc) in t.readiness_checks.iter().enumerate() {
        readiness_check(rc).map_err(|e| e.under(&Path::new("readinessChecks").index(i)))?;
    }
    for (i, dependency) in t.depends_on.iter().enumerate() {
        let path = Path::new("dependsOn").index(i);
        if dependency.trim().is_empty() {
            return Err(FieldError::required(path, "a resource name is required"));
        }
        if dependency.contains(',') {
            return Err(FieldError::invalid(
                path,
                dependency.as_str(),
                "a resource name cannot contain a comma",
            ));
        }
    }
    Ok(())
}

fn patch_set(ps: &PatchSet) -> Result {
    if ps.name.is_empty() {
        return Err(FieldError::required(Path::new("name"), "name is required"));
    }
    for (i, p) in ps.patches.iter().enumerate() {
        patch(p, PatchPlace::PatchSet).map_err(|e| e.under(&Path::new("patches").index(i)))?;
    }
    Ok(())
}

fn environment(e: &Environment) -> Result {
    for (i, p) in e.patches.iter().enumerate() {
        match p.patch_type() {
            FROM_COMPOSITE_FIELD_PATH
            | TO_COMPOSITE_FIELD_PATH
            | COMBINE_FROM_COMPOSITE
            | COMBINE_TO_COMPOSITE
            | FROM_ENVIRONMENT_FIELD_PATH
            | TO_ENVIRONMENT_FIELD_PATH => {}
            other => {
                return Err(FieldError::invalid(
                    Path::new("patches").index(i).key("type"),
                    other,
                    "invalid environment patch type",
                ));
            }
        }
        patch(p, PatchPlace::Environment).map_err(|e| e.under(&Path::new("patches").index(i)))?;
    }
    Ok(())
}

fn readiness_check(r: &ReadinessCheck) -> Result {
    match r.type_.as_str() {
        "None" => return Ok(()),
        "MatchString" if r.match_string.is_none() => {
            return Err(FieldError::required(
                Path::new("matchString"),
                "cannot be nil for type MatchString",
            ));
        }
        "MatchInteger" if r.match_integer.is_none() => {
            return Err(FieldError::required(
                Path::new("matchInteger"),
                "cannot be nil for type MatchInteger",
            ));
        }
        "MatchCondition" => {
            let Some(m) = &r.match_condition else {
                return Ok(());
            };
            if m.type_.is_empty() {
                return Err(FieldError::required(
                    Path::new("type"),
                    "cannot be empty for type MatchCondition",
                )
                .under(&Path::new("matchCondition")));
            }
            if m.status.is_empty() {
                return Err(FieldError::required(
                    Path::new("status"),
                    "cannot be empty for type MatchCondition",
                )
                .under(&Path::new("matchCondition")));
            }
            return Ok(());
        }
        "MatchString" | "MatchInteger" | "NonEmpty" | "MatchTrue" | "MatchFalse" => {}
        other => {
            return Err(FieldError::invalid(
                Path::new("type"),
                other,
                "unknown readiness check type",
            ));
        }
    }
    if r.field_path.is_none() {
        return Err(FieldError::required(
            Path::new("fieldPath"),
            "cannot be empty",
        ));
    }
    Ok(())
}

fn patch(p: &Patch, place: PatchPlace) -> Result {
    let t = p.patch_type();
    match t {
        FROM_COMPOSITE_FIELD_PATH
        | TO_COMPOSITE_FIELD_PATH
        | FROM_ENVIRONMENT_FIELD_PATH
        | TO_ENVIRONMENT_FIELD_PATH => {
            if p.from_field_path().is_empty() {
                return Err(FieldError::required(
                    Path::new("fromFieldPath"),
                    format!("fromFieldPath must be set for patch type {t}"),
                ));
            }
        }
        PATCH_SET => {
            let go_type = match place {
                PatchPlace::Composed => None,
                PatchPlace::PatchSet => Some("*v1beta1.PatchSetPatch"),
                PatchPlace::Environment => Some("*v1beta1.EnvironmentPatch"),
            };
            if let Some(go_type) = go_type {
                return Err(FieldError::invalid(
                    Path::new("type"),
                    t,
                    format!("patch type {go_type} does not support patch of type {t}"),
                ));
            }
            if p.patch_set_name.as_deref().unwrap_or_default().is_empty() {
                return Err(FieldError::required(
                    Path::new("patchSetName"),
                    format!("patchSetName must be set for patch type {t}"),
                ));
            }
        }
        COMBINE_FROM_COMPOSITE
        | COMBINE_TO_COMPOSITE
        | COMBINE_FROM_ENVIRONMENT
        | COMBINE_TO_ENVIRONMENT => {
            let Some(c) = &p.combine else {
                return Err(FieldError::required(
                    Path::new("combine"),
                    format!("combine must be set for patch type {t}"),
                ));
            };
            if p.to_field_path().is_empty() {
                return Err(FieldError::required(
                    Path::new("toFieldPath"),
                    format!("toFieldPath must be set for patch type {t}"),
                ));
            }
            // Upstream returns here: transforms and policies of combine
            // patches are not validated up front.
            return combine(c).map_err(|e| e.under(&Path::new("combine")));
        }
        other => {
            return Err(FieldError::invalid(
                Path::new("type"),
                other,
                "unknown patch type",
            ));
        }
    }
    for (i, t) in p.transforms.iter().enumerate() {
        transforms::validate(t).map_err(|e| e.under(&Path::new("transforms").index(i)))?;
    }
    if p.policy.is_some() {
        let to = p.to_field_path_policy_name();
        if ToFieldPathPolicy::parse(to).is_none() {
            return Err(FieldError::invalid(
                Path::new("policy").child("toFieldPathPolicy"),
                to,
                "unknown toFieldPathPolicy",
            ));
        }
        let from = p.from_field_path_policy();
        if from != "Optional" && from != "Required" {
            return Err(FieldError::invalid(
                Path::new("policy").child("fromFieldPathPolicy"),
                from,
                "unknown fromFieldPathPolicy",
            ));
        }
    }
    Ok(())
}

fn combine(c: &Combine) -> Result {
    match c.strategy.as_str() {
        "string" if c.string.is_none() => {
            return Err(FieldError::required(
                Path::new("string"),
                "string must be set for combine strategy string",
            ));
        }
        "string" => {}
        "" => {
            return Err(FieldError::required(
                Path::new("strategy"),
                "a combine strategy must be provided",
            ));
        }
        other => {
            return Err(FieldError::invalid(
                Path::new("strategy"),
                other,
                "unknown strategy type",
            ));
        }
    }
    if c.variables.is_empty() {
        return Err(FieldError::required(
            Path::new("variables"),
            "at least one variable must be provided",
        ));
    }
    for (i, v) in c.variables.iter().enumerate() {
        if v.from_field_path.is_empty() {
            return Err(FieldError::required(
                Path::new("variables").index(i).child("fromFieldPath"),
                "fromFieldPath must be set for each combine variable",
            ));
        }
    }
    Ok(())
}

fn connection_detail(cd: &ConnectionDetail) -> Result {
    if cd.type_.is_empty() {
        return Err(FieldError::required(
            Path::new("type"),
            "connection detail type is required",
        ));
    }
    let missing = match cd.type_.as_str() {
        FROM_VALUE => cd
            .value
            .is_none()
            .then_some(("value", "value connection detail requires a value")),
        FROM_CONNECTION_SECRET_KEY => cd.from_connection_secret_key.is_none().then_some((
            "fromConnectionSecretKey",
            "from connection secret key connection detail requires a key",
        )),
        FROM_FIELD_PATH => cd.from_field_path.is_none().then_some((
            "fromFieldPath",
            "from field path connection detail requires a field path",
        )),
        other => {
            return Err(FieldError::invalid(
                Path::new("type"),
                other,
                "unknown connection detail type",
            ));
        }
    };
    if cd.name.is_empty() {
        return Err(FieldError::required(Path::new("name"), "name is required"));
    }
    match missing {
        Some((path, detail)) => Err(FieldError::required(Path::new(path), detail)),
        None => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn validate(input: Value) -> std::result::Result<(), String> {
        let r = Resources::from_value(input).unwrap();
        resources(&r).map_err(|e| e.to_string())
    }

    fn with_patch(p: Value) -> Value {
        json!({"resources": [{"name": "a", "base": {}, "patches": [p]}]})
    }

    #[test]
    fn invalid_inputs_name_the_field() {
        let cases: Vec<(Value, &str)> = vec![
            (
                json!({}),
                "resources: Required value: resources or environment patches are required",
            ),
            (
                json!({"resources": [{"base": {}}]}),
                "resources[0].name: Required value: name is required",
            ),
            (
                json!({"patchSets": [{"patches": []}], "resources": [{"name": "a"}]}),
                "name: Required value: name is required",
            ),
            (
                with_patch(json!({"type": "FromCompositeFieldPath"})),
                "resources[0].patches[0].fromFieldPath: Required value: fromFieldPath must be set for patch type FromCompositeFieldPath",
            ),
            (
                with_patch(json!({"toFieldPath": "x"})),
                "resources[0].patches[0].fromFieldPath: Required value: fromFieldPath must be set for patch type FromCompositeFieldPath",
            ),
            (
                with_patch(json!({"type": "Bogus"})),
                "resources[0].patches[0].type: Invalid value: \"Bogus\": unknown patch type",
            ),
            (
                with_patch(json!({"type": "PatchSet"})),
                "resources[0].patches[0].patchSetName: Required value: patchSetName must be set for patch type PatchSet",
            ),
            (
                with_patch(json!({"type": "CombineFromComposite", "toFieldPath": "x"})),
                "resources[0].patches[0].combine: Required value: combine must be set for patch type CombineFromComposite",
            ),
            (
                with_patch(json!({"type": "CombineFromComposite", "combine": {}})),
                "resources[0].patches[0].toFieldPath: Required value: toFieldPath must be set for patch type CombineFromComposite",
            ),
            (
                with_patch(
                    json!({"type": "CombineFromComposite", "toFieldPath": "x", "combine": {"variables": [{"fromFieldPath": "a"}]}}),
                ),
                "resources[0].patches[0].combine.strategy: Required value: a combine strategy must be provided",
            ),
            (
                with_patch(
                    json!({"type": "CombineFromComposite", "toFieldPath": "x", "combine": {"strategy": "join"}}),
                ),
                "resources[0].patches[0].combine.strategy: Invalid value: \"join\": unknown strategy type",
            ),
            (
                with_patch(
                    json!({"type": "CombineFromComposite", "toFieldPath": "x", "combine": {"strategy": "string"}}),
                ),
                "resources[0].patches[0].combine.string: Required value: string must be set for combine strategy string",
            ),
            (
                with_patch(
                    json!({"type": "CombineFromComposite", "toFieldPath": "x", "combine": {"strategy": "string", "string": {"fmt": "%s"}}}),
                ),
                "resources[0].patches[0].combine.variables: Required value: at least one variable must be provided",
            ),
            (
                with_patch(json!({"type": "CombineFromComposite", "toFieldPath": "x",
                "combine": {"strategy": "string", "string": {"fmt": "%s"}, "variables": [{"fromFieldPath": "a"}, {}]}})),
                "resources[0].patches[0].combine.variables[1].fromFieldPath: Required value: fromFieldPath must be set for each combine variable",
            ),
            (
                with_patch(json!({"fromFieldPath": "a", "policy": {"toFieldPath": "Merge"}})),
                "resources[0].patches[0].policy.toFieldPathPolicy: Invalid value: \"Merge\": unknown toFieldPathPolicy",
            ),
            (
                with_patch(json!({"fromFieldPath": "a", "policy": {"fromFieldPath": "Maybe"}})),
                "resources[0].patches[0].policy.fromFieldPathPolicy: Invalid value: \"Maybe\": unknown fromFieldPathPolicy",
            ),
            (
                json!({"patchSets": [{"name": "s", "patches": [{"type": "PatchSet"}]}], "resources": [{"name": "a"}]}),
                "patches[0].type: Invalid value: \"PatchSet\": patch type *v1beta1.PatchSetPatch does not support patch of type PatchSet",
            ),
            (
                json!({"environment": {"patches": [{"type": "CombineFromEnvironment"}]}}),
                "environment.patches[0][type]: Invalid value: \"CombineFromEnvironment\": invalid environment patch type",
            ),
            (
                json!({"environment": {"patches": [{"type": "ToEnvironmentFieldPath"}]}}),
                "environment.patches[0].fromFieldPath: Required value: fromFieldPath must be set for patch type ToEnvironmentFieldPath",
            ),
            (
                json!({"resources": [{"name": "a", "connectionDetails": [{"name": "x"}]}]}),
                "resources[0].connectionDetails[0].type: Required value: connection detail type is required",
            ),
            (
                json!({"resources": [{"name": "a", "connectionDetails": [{"name": "x", "type": "FromSecret"}]}]}),
                "resources[0].connectionDetails[0].type: Invalid value: \"FromSecret\": unknown connection detail type",
            ),
            (
                json!({"resources": [{"name": "a", "connectionDetails": [{"type": "FromValue", "value": "v"}]}]}),
                "resources[0].connectionDetails[0].name: Required value: name is required",
            ),
            (
                json!({"resources": [{"name": "a", "connectionDetails": [{"name": "x", "type": "FromFieldPath"}]}]}),
                "resources[0].connectionDetails[0].fromFieldPath: Required value: from field path connection detail requires a field path",
            ),
            (
                json!({"resources": [{"name": "a", "readinessChecks": [{"type": "MatchString", "fieldPath": "a"}]}]}),
                "resources[0].readinessChecks[0].matchString: Required value: cannot be nil for type MatchString",
            ),
            (
                json!({"resources": [{"name": "a", "readinessChecks": [{"type": "MatchInteger", "fieldPath": "a"}]}]}),
                "resources[0].readinessChecks[0].matchInteger: Required value: cannot be nil for type MatchInteger",
            ),
            (
                json!({"resources": [{"name": "a", "readinessChecks": [{"type": "NonEmpty"}]}]}),
                "resources[0].readinessChecks[0].fieldPath: Required value: cannot be empty",
            ),
            (
                json!({"resources": [{"name": "a", "readinessChecks": [{"type": "Healthy"}]}]}),
                "resources[0].readinessChecks[0].type: Invalid value: \"Healthy\": unknown readiness check type",
            ),
            (
                json!({"resources": [{"name": "a", "readinessChecks": [{"type": "MatchCondition", "matchCondition": {"status": "True"}}]}]}),
                "resources[0].readinessChecks[0].matchCondition.type: Required value: cannot be empty for type MatchCondition",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(validate(input.clone()), Err(expected.to_owned()), "{input}");
        }
    }

    #[test]
    fn valid_inputs_pass() {
        let cases = [
            json!({"environment": {"patches": [{"type": "FromCompositeFieldPath", "fromFieldPath": "a"}]}}),
            json!({"resources": [{"name": "a", "patches": [
                {"fromFieldPath": "a", "policy": {"toFieldPath": "MergeObjects"}},
                {"type": "PatchSet", "patchSetName": "s"},
                {"type": "CombineToComposite", "toFieldPath": "x",
                 "combine": {"strategy": "string", "string": {"fmt": "%s"}, "variables": [{"fromFieldPath": "a"}]}}
            ], "connectionDetails": [{"fromConnectionSecretKey": "password"}],
               "readinessChecks": [{"type": "None"}, {"type": "MatchCondition"}]}]}),
        ];
        for input in cases {
            assert_eq!(validate(input.clone()), Ok(()), "{input}");
        }
    }
}
