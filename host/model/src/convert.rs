//! `mode: Resources` → `mode: Pipeline`, as `crossplane beta convert pipeline-composition`
//! followed by `crossplane beta convert composition-environment` (Crossplane v1.20).

use serde_json::{Map, Value, json};
use thiserror::Error;

use crate::composition::{
    Composition, CompositionMode, EnvironmentConfiguration, FunctionReference, PipelineStep,
};
use crate::composition_validation::transform_type;

pub const PATCH_AND_TRANSFORM_STEP: &str = "patch-and-transform";
pub const PATCH_AND_TRANSFORM_FUNCTION: &str = "function-patch-and-transform";
pub const ENVIRONMENT_CONFIGS_STEP: &str = "environment-configs";
pub const ENVIRONMENT_CONFIGS_FUNCTION: &str = "function-environment-configs";

#[derive(Debug, Error, Clone, PartialEq)]
pub enum ConvertError {
    /// A template, patch set, patch or connection detail that must be an object is not one.
    #[error("cannot convert Composition {composition:?} to a pipeline: {path}: must be an object")]
    NotAnObject { composition: String, path: String },
    #[error("cannot convert Composition {composition:?} to a pipeline: {message}")]
    Encode {
        composition: String,
        message: String,
    },
}

impl Composition {
    /// The Pipeline-mode equivalent of this Composition; a clone when it is already one.
    pub fn to_pipeline(&self) -> Result<Composition, ConvertError> {
        if self.mode() == CompositionMode::Pipeline {
            return Ok(self.clone());
        }
        let fail = |path: String| ConvertError::NotAnObject {
            composition: self.name().to_string(),
            path,
        };
        let mut out = self.clone();
        let mut input = Map::new();
        input.insert("apiVersion".into(), json!("pt.fn.crossplane.io/v1beta1"));
        input.insert("kind".into(), json!("Resources"));

        let mut environment = out.spec.environment.take().unwrap_or_default();
        if !environment.patches.is_empty() {
            let patches =
                migrate_patches(&environment.patches, "spec.environment.patches").map_err(fail)?;
            input.insert("environment".into(), json!({ "patches": patches }));
            environment.patches.clear();
        }
        if !out.spec.patch_sets.is_empty() {
            let mut sets = Vec::with_capacity(out.spec.patch_sets.len());
            for (i, set) in out.spec.patch_sets.iter().enumerate() {
                let path = format!("spec.patchSets[{i}]");
                let Value::Object(set) = set else {
                    return Err(fail(path));
                };
                let mut set = set.clone();
                if let Some(Value::Array(patches)) = set.get("patches") {
                    let migrated =
                        migrate_patches(patches, &format!("{path}.patches")).map_err(fail)?;
                    set.insert("patches".into(), Value::Array(migrated));
                }
                sets.push(Value::Object(set));
            }
            input.insert("patchSets".into(), Value::Array(sets));
        }
        if !out.spec.resources.is_empty() {
            let resources = out
                .spec
                .resources
                .iter()
                .enumerate()
                .map(|(i, r)| migrate_resource(r, i))
                .collect::<Result<Vec<_>, _>>()
                .map_err(fail)?;
            input.insert("resources".into(), Value::Array(resources));
        }
        out.spec.resources.clear();
        out.spec.patch_sets.clear();
        out.spec.mode = Some(CompositionMode::Pipeline);
        out.spec.pipeline = vec![PipelineStep {
            step: PATCH_AND_TRANSFORM_STEP.into(),
            function_ref: FunctionReference {
                name: PATCH_AND_TRANSFORM_FUNCTION.into(),
            },
            input: Some(Value::Object(input)),
            ..PipelineStep::default()
        }];

        match environment_configs_input(&environment).map_err(|message| ConvertError::Encode {
            composition: self.name().to_string(),
            message,
        })? {
            Some(env_input) => {
                out.spec.pipeline.insert(
                    0,
                    PipelineStep {
                        step: ENVIRONMENT_CONFIGS_STEP.into(),
                        function_ref: FunctionReference {
                            name: ENVIRONMENT_CONFIGS_FUNCTION.into(),
                        },
                        input: Some(env_input),
                        ..PipelineStep::default()
                    },
                );
            }
            None if !environment.is_empty() => out.spec.environment = Some(environment),
            None => {}
        }
        Ok(out)
    }
}

/// The function-environment-configs input for what is left of a native environment, or None
/// when there is nothing to select (the converter then leaves the environment alone).
fn environment_configs_input(env: &EnvironmentConfiguration) -> Result<Option<Value>, String> {
    let mut spec = Map::new();
    if let Some(data) = &env.default_data {
        spec.insert("defaultData".into(), Value::Object(data.clone()));
    }
    if !env.environment_configs.is_empty() {
        let configs = serde_json::to_value(&env.environment_configs).map_err(|e| e.to_string())?;
        spec.insert("environmentConfigs".into(), configs);
    }
    // Only the resolution policy carries over; `resolve` has no counterpart in the function.
    if let Some(resolution) = env.policy.as_ref().and_then(|p| p.resolution) {
        let resolution = serde_json::to_value(resolution).map_err(|e| e.to_string())?;
        spec.insert("policy".into(), json!({ "resolution": resolution }));
    }
    if spec.is_empty() {
        return Ok(None);
    }
    Ok(Some(json!({
        "apiVersion": "environmentconfigs.fn.crossplane.io/v1beta1",
        "kind": "Input",
        "spec": spec,
    })))
}

fn migrate_patches(patches: &[Value], path: &str) -> Result<Vec<Value>, String> {
    patches
        .iter()
        .enumerate()
        .map(|(i, p)| migrate_patch(p).ok_or_else(|| format!("{path}[{i}]")))
        .collect()
}

/// Defaults the type, turns `policy.mergeOptions` into `policy.toFieldPath` and fills in
/// transform types. None when the patch is not an object.
fn migrate_patch(patch: &Value) -> Option<Value> {
    let mut p = patch.as_object()?.clone();
    if !p.contains_key("type") {
        p.insert("type".into(), json!("FromCompositeFieldPath"));
    }
    if let Some(Value::Object(policy)) = p.get_mut("policy")
        && let Some(mo) = policy.remove("mergeOptions")
        && let Some(to) = merge_options_policy(&mo)
    {
        policy.insert("toFieldPath".into(), json!(to));
    }
    if let Some(Value::Array(transforms)) = p.get_mut("transforms") {
        for t in transforms.iter_mut() {
            infer_transform_types(t);
        }
    }
    Some(Value::Object(p))
}

/// The `toFieldPath` policy equivalent to legacy `mergeOptions`; None for a null `mergeOptions`
/// (which meant Replace).
fn merge_options_policy(mo: &Value) -> Option<&'static str> {
    let mo = mo.as_object()?;
    let flag = |k: &str| mo.get(k).and_then(Value::as_bool).unwrap_or(false);
    Some(match (flag("keepMapValues"), flag("appendSlice")) {
        (true, false) => "MergeObjects",
        (true, true) => "MergeObjectsAppendArrays",
        (false, true) => "ForceMergeObjectsAppendArrays",
        (false, false) => "ForceMergeObjects",
    })
}

fn is_set(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k).is_some_and(|v| !v.is_null())
}

fn infer_transform_types(t: &mut Value) {
    let Some(tt) = transform_type(t).map(str::to_string) else {
        return;
    };
    let Value::Object(obj) = t else { return };
    obj.insert("type".into(), json!(tt));
    let Some(Value::Object(block)) = obj.get_mut(&tt) else {
        return;
    };
    if block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        let inferred = match tt.as_str() {
            "math" => [
                ("clampMin", "ClampMin"),
                ("clampMax", "ClampMax"),
                ("multiply", "Multiply"),
            ]
            .into_iter()
            .find(|(k, _)| is_set(block, k)),
            "string" => [
                ("fmt", "Format"),
                ("convert", "Convert"),
                ("regexp", "Regexp"),
                ("join", "Join"),
                ("replace", "Replace"),
            ]
            .into_iter()
            .find(|(k, _)| is_set(block, k)),
            _ => None,
        };
        if let Some((_, ty)) = inferred {
            block.insert("type".into(), json!(ty));
        }
    }
}

/// Names anonymous templates `resource-<i>`, completes connection details and migrates patches.
/// The error is the path of the offending non-object.
fn migrate_resource(resource: &Value, idx: usize) -> Result<Value, String> {
    let path = format!("spec.resources[{idx}]");
    let mut r = resource.as_object().ok_or_else(|| path.clone())?.clone();
    if r.get("name").is_none_or(Value::is_null) {
        r.insert("name".into(), json!(format!("resource-{idx}")));
    }
    if let Some(Value::Array(details)) = r.get("connectionDetails") {
        let details = details
            .iter()
            .enumerate()
            .map(|(i, d)| {
                migrate_connection_detail(d).ok_or_else(|| format!("{path}.connectionDetails[{i}]"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        r.insert("connectionDetails".into(), Value::Array(details));
    }
    if let Some(Value::Array(patches)) = r.get("patches") {
        let patches = migrate_patches(patches, &format!("{path}.patches"))?;
        r.insert("patches".into(), Value::Array(patches));
    }
    Ok(Value::Object(r))
}

/// Rebuilds a connection detail from its value fields: the type is inferred from whichever is
/// set (value, then fromFieldPath, then fromConnectionSecretKey), and a FromConnectionSecretKey
/// detail is named after its key when unnamed.
fn migrate_connection_detail(detail: &Value) -> Option<Value> {
    let d = detail.as_object()?;
    let mut out = Map::new();
    for k in ["name", "value", "fromConnectionSecretKey", "fromFieldPath"] {
        if let Some(v) = d.get(k).filter(|v| !v.is_null()) {
            out.insert(k.into(), v.clone());
        }
    }
    let inferred = [
        ("value", "FromValue"),
        ("fromFieldPath", "FromFieldPath"),
        ("fromConnectionSecretKey", "FromConnectionSecretKey"),
    ]
    .into_iter()
    .find(|(k, _)| out.contains_key(*k))
    .map(|(_, t)| t);
    if let Some(t) = inferred {
        out.insert("type".into(), json!(t));
    }
    if !out.contains_key("name")
        && inferred == Some("FromConnectionSecretKey")
        && let Some(key) = out.get("fromConnectionSecretKey").cloned()
    {
        out.insert("name".into(), key);
    }
    Some(Value::Object(out))
}
