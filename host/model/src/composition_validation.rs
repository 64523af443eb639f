//! Field validation of Compositions, following Crossplane's Composition webhook and CRD schema.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::composition::{
    Composition, CompositionMode, CredentialsSource, EnvironmentConfiguration, EnvironmentSource,
    EnvironmentSourceType, LabelMatcherType, PipelineStep,
};
use crate::{FieldError, FieldPath};

const PATCH_TYPES: &[&str] = &[
    "FromCompositeFieldPath",
    "FromEnvironmentFieldPath",
    "PatchSet",
    "ToCompositeFieldPath",
    "ToEnvironmentFieldPath",
    "CombineFromEnvironment",
    "CombineFromComposite",
    "CombineToComposite",
    "CombineToEnvironment",
];
const ENVIRONMENT_PATCH_TYPES: &[&str] = &[
    "FromCompositeFieldPath",
    "ToCompositeFieldPath",
    "CombineFromComposite",
    "CombineToComposite",
];
const TRANSFORM_TYPES: &[&str] = &["map", "match", "math", "string", "convert"];
const READINESS_CHECK_TYPES: &[&str] = &[
    "MatchString",
    "MatchInteger",
    "NonEmpty",
    "MatchCondition",
    "MatchTrue",
    "MatchFalse",
    "None",
];

impl Composition {
    /// Checks what Crossplane's API server (CRD schema and validating webhook) checks.
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut errs = Vec::new();
        let spec = FieldPath::new("spec");
        let type_ref = spec.child("compositeTypeRef");
        if self.spec.composite_type_ref.api_version.is_empty() {
            errs.push(FieldError::required(type_ref.child("apiVersion"), ""));
        }
        if self.spec.composite_type_ref.kind.is_empty() {
            errs.push(FieldError::required(type_ref.child("kind"), ""));
        }
        match self.mode() {
            CompositionMode::Resources if self.spec.resources.is_empty() => {
                errs.push(FieldError::required(
                    spec.child("resources"),
                    "an array of resources is required in Resources mode (the default if no mode is specified)",
                ));
            }
            CompositionMode::Pipeline if self.spec.pipeline.is_empty() => {
                errs.push(FieldError::required(
                    spec.child("pipeline"),
                    "an array of pipeline steps is required in Pipeline mode",
                ));
            }
            _ => {}
        }
        errs.extend(self.validate_patch_sets());
        errs.extend(self.validate_resources());
        errs.extend(validate_pipeline(&self.spec.pipeline));
        if let Some(env) = &self.spec.environment {
            errs.extend(
                validate_environment(env)
                    .into_iter()
                    .map(|e| e.under(&spec.child("environment"))),
            );
        }
        if errs.is_empty() { Ok(()) } else { Err(errs) }
    }

    fn patch_set_names(&self) -> BTreeSet<&str> {
        self.spec
            .patch_sets
            .iter()
            .filter_map(|s| s.get("name").and_then(Value::as_str))
            .collect()
    }

    fn validate_patch_sets(&self) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let sets = FieldPath::new("spec").child("patchSets");
        for (i, set) in self.spec.patch_sets.iter().enumerate() {
            let path = sets.index(i);
            if str_field(set, "name").is_none_or(str::is_empty) {
                errs.push(FieldError::required(path.child("name"), ""));
            }
            for (j, patch) in array_field(set, "patches").iter().enumerate() {
                let ppath = path.child("patches").index(j);
                if patch_type(patch) == "PatchSet" {
                    errs.push(FieldError::invalid(
                        ppath.child("type"),
                        "PatchSet",
                        "cannot use patches within patches",
                    ));
                    continue;
                }
                errs.extend(validate_patch(patch, PATCH_TYPES).map(|e| e.under(&ppath)));
            }
        }
        errs
    }

    fn validate_resources(&self) -> Vec<FieldError> {
        let mut errs = self.validate_resource_names();
        let resources = FieldPath::new("spec").child("resources");
        let sets = self.patch_set_names();
        for (i, res) in self.spec.resources.iter().enumerate() {
            let path = resources.index(i);
            if !res.is_object() {
                errs.push(FieldError::invalid(path, "", "must be an object"));
                continue;
            }
            for (j, patch) in array_field(res, "patches").iter().enumerate() {
                let ppath = path.child("patches").index(j);
                if patch_type(patch) == "PatchSet"
                    && let Some(name) = str_field(patch, "patchSetName")
                    && !sets.contains(name)
                {
                    errs.push(FieldError::invalid(
                        ppath.child("patchSetName"),
                        name,
                        "patchSetName must be the name of a declared patchSet",
                    ));
                }
                errs.extend(validate_patch(patch, PATCH_TYPES).map(|e| e.under(&ppath)));
            }
            for (j, check) in array_field(res, "readinessChecks").iter().enumerate() {
                let cpath = path.child("readinessChecks").index(j);
                errs.extend(validate_readiness_check(check).map(|e| e.under(&cpath)));
            }
        }
        errs
    }

    /// All templates named (uniquely) or all anonymous; named only when there are steps.
    fn validate_resource_names(&self) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let mut seen = BTreeSet::new();
        let resources = FieldPath::new("spec").child("resources");
        for (i, res) in self.spec.resources.iter().enumerate() {
            let path = resources.index(i).child("name");
            let name = str_field(res, "name").unwrap_or_default();
            if name.is_empty() {
                if !self.spec.pipeline.is_empty() {
                    errs.push(FieldError::required(
                        path,
                        "cannot have anonymous resources when composition has functions",
                    ));
                } else if i != 0 && !seen.is_empty() {
                    errs.push(FieldError::required(
                        path,
                        "cannot mix named and anonymous resources, all resources must have a name or none must have a name",
                    ));
                }
                continue;
            }
            if seen.contains(name) {
                errs.push(FieldError::duplicate(path, name));
                continue;
            }
            if i != 0 && seen.is_empty() {
                errs.push(FieldError::invalid(
                    path,
                    name,
                    "cannot mix named and anonymous resources, all resources must have a name or none must have a name",
                ));
                continue;
            }
            seen.insert(name);
        }
        errs
    }
}

fn validate_pipeline(pipeline: &[PipelineStep]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut steps = BTreeSet::new();
    let base = FieldPath::new("spec").child("pipeline");
    for (i, step) in pipeline.iter().enumerate() {
        let path = base.index(i);
        if step.step.is_empty() {
            errs.push(FieldError::required(
                path.child("step"),
                "every pipeline step needs a name",
            ));
        } else if !steps.insert(step.step.as_str()) {
            errs.push(FieldError::duplicate(
                path.child("step"),
                step.step.as_str(),
            ));
        }
        if step.function_ref.name.is_empty() {
            errs.push(FieldError::required(
                path.child("functionRef").child("name"),
                "every pipeline step must name the Function it runs",
            ));
        }
        let mut creds = BTreeSet::new();
        for (j, cred) in step.credentials.iter().enumerate() {
            let cpath = path.child("credentials").index(j);
            if cred.name.is_empty() {
                errs.push(FieldError::required(cpath.child("name"), ""));
            } else if !creds.insert(cred.name.as_str()) {
                errs.push(FieldError::duplicate(
                    cpath.child("name"),
                    cred.name.as_str(),
                ));
            }
            match (cred.source, &cred.secret_ref) {
                (None, _) => errs.push(FieldError::required(cpath.child("source"), "")),
                (Some(CredentialsSource::Secret), None) => errs.push(FieldError::required(
                    cpath.child("secretRef"),
                    "must be specified when source is Secret",
                )),
                (Some(CredentialsSource::Secret), Some(r)) => {
                    let rpath = cpath.child("secretRef");
                    if r.namespace.is_empty() {
                        errs.push(FieldError::required(rpath.child("namespace"), ""));
                    }
                    if r.name.is_empty() {
                        errs.push(FieldError::required(rpath.child("name"), ""));
                    }
                }
                (Some(CredentialsSource::None), _) => {}
            }
        }
        if let Some(req) = &step.requirements {
            let mut names = BTreeSet::new();
            for (j, sel) in req.required_resources.iter().enumerate() {
                let spath = path
                    .child("requirements")
                    .child("requiredResources")
                    .index(j);
                if sel.requirement_name.is_empty() {
                    errs.push(FieldError::required(spath.child("requirementName"), ""));
                } else if !names.insert(sel.requirement_name.as_str()) {
                    errs.push(FieldError::duplicate(
                        spath.child("requirementName"),
                        sel.requirement_name.as_str(),
                    ));
                }
                if sel.api_version.is_empty() {
                    errs.push(FieldError::required(spath.child("apiVersion"), ""));
                }
                if sel.kind.is_empty() {
                    errs.push(FieldError::required(spath.child("kind"), ""));
                }
                if sel.name.is_some() == sel.match_labels.is_some() {
                    errs.push(FieldError::invalid(
                        spath,
                        "object",
                        "either name or matchLabels must be specified, but not both",
                    ));
                }
            }
        }
    }
    errs
}

fn validate_environment(env: &EnvironmentConfiguration) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, patch) in env.patches.iter().enumerate() {
        let path = FieldPath::new("patches").index(i);
        errs.extend(validate_patch(patch, ENVIRONMENT_PATCH_TYPES).map(|e| e.under(&path)));
    }
    for (i, source) in env.environment_configs.iter().enumerate() {
        let path = FieldPath::new("environmentConfigs").index(i);
        errs.extend(validate_environment_source(source).map(|e| e.under(&path)));
    }
    errs
}

fn validate_environment_source(source: &EnvironmentSource) -> Option<FieldError> {
    match source
        .source_type
        .unwrap_or(EnvironmentSourceType::Reference)
    {
        EnvironmentSourceType::Reference => match &source.reference {
            None => Some(FieldError::required(
                FieldPath::new("ref"),
                "ref is required",
            )),
            Some(r) if r.name.is_empty() => Some(FieldError::required(
                FieldPath::new("ref").child("name"),
                "name is required",
            )),
            Some(_) => None,
        },
        EnvironmentSourceType::Selector => {
            let Some(selector) = &source.selector else {
                return Some(FieldError::required(
                    FieldPath::new("selector"),
                    "selector is required",
                ));
            };
            let labels = FieldPath::new("selector").child("matchLabels");
            if selector.match_labels.is_empty() {
                return Some(FieldError::required(
                    labels,
                    "selector must have at least one match label",
                ));
            }
            selector.match_labels.iter().enumerate().find_map(|(i, m)| {
                let path = labels.index(i);
                if m.key.is_empty() {
                    return Some(FieldError::required(path.child("key"), "key is required"));
                }
                let (field, value) = match m
                    .matcher_type
                    .unwrap_or(LabelMatcherType::FromCompositeFieldPath)
                {
                    LabelMatcherType::FromCompositeFieldPath => {
                        ("valueFromFieldPath", &m.value_from_field_path)
                    }
                    LabelMatcherType::Value => ("value", &m.value),
                };
                match value.as_deref() {
                    None => Some(FieldError::required(
                        path.child(field),
                        format!("{field} is required"),
                    )),
                    Some("") => Some(FieldError::required(
                        path.child(field),
                        format!("{field} must not be empty"),
                    )),
                    Some(_) => None,
                }
            })
        }
    }
}

fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn array_field<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn has(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|x| !x.is_null())
}

/// A patch's type, defaulted to `FromCompositeFieldPath` as the CRD does.
fn patch_type(patch: &Value) -> &str {
    str_field(patch, "type").unwrap_or("FromCompositeFieldPath")
}

/// Validates one native patch; paths are relative to the patch. Returns the first error.
fn validate_patch(patch: &Value, allowed: &[&str]) -> Option<FieldError> {
    if !patch.is_object() {
        return Some(FieldError::invalid(
            FieldPath::default(),
            "",
            "must be an object",
        ));
    }
    let t = patch_type(patch);
    if !allowed.contains(&t) {
        return Some(FieldError::not_supported(
            FieldPath::new("type"),
            t,
            allowed,
        ));
    }
    let required = |field: &str| {
        (!has(patch, field)).then(|| {
            FieldError::required(
                FieldPath::new(field),
                format!("{field} must be set for patch type {t}"),
            )
        })
    };
    let err = match t {
        "PatchSet" => required("patchSetName"),
        t if t.starts_with("Combine") => required("combine")
            .or_else(|| required("toFieldPath"))
            .or_else(|| patch.get("combine").and_then(validate_combine)),
        _ => required("fromFieldPath"),
    };
    if err.is_some() {
        return err;
    }
    array_field(patch, "transforms")
        .iter()
        .enumerate()
        .find_map(|(i, t)| {
            validate_transform(t).map(|e| e.under(&FieldPath::new("transforms").index(i)))
        })
}

fn validate_combine(combine: &Value) -> Option<FieldError> {
    let base = FieldPath::new("combine");
    let vars = array_field(combine, "variables");
    if vars.is_empty() {
        return Some(FieldError::required(
            base.child("variables"),
            "at least one variable must be provided",
        ));
    }
    if let Some(i) = vars.iter().position(|v| !has(v, "fromFieldPath")) {
        return Some(FieldError::required(
            base.child("variables").index(i).child("fromFieldPath"),
            "fromFieldPath is required",
        ));
    }
    match str_field(combine, "strategy") {
        None => Some(FieldError::required(
            base.child("strategy"),
            "a combine strategy must be provided",
        )),
        Some("string") if !combine.get("string").is_some_and(|s| has(s, "fmt")) => Some(
            FieldError::required(base.child("string").child("fmt"), "fmt is required"),
        ),
        Some("string") => None,
        Some(other) => Some(FieldError::not_supported(
            base.child("strategy"),
            other,
            &["string"],
        )),
    }
}

/// The transform's type, or the one its configuration block implies (as `beta convert` infers).
pub(crate) fn transform_type(t: &Value) -> Option<&str> {
    match str_field(t, "type") {
        Some(s) if !s.is_empty() => Some(s),
        _ => {
            // `string` before `math`: upstream's converter lets a string block win.
            ["string", "math", "map", "match", "convert"]
                .into_iter()
                .find(|k| has(t, k))
        }
    }
}

fn validate_transform(t: &Value) -> Option<FieldError> {
    let Some(tt) = transform_type(t) else {
        return Some(FieldError::required(FieldPath::new("type"), ""));
    };
    if !TRANSFORM_TYPES.contains(&tt) {
        return Some(FieldError::not_supported(
            FieldPath::new("type"),
            tt,
            TRANSFORM_TYPES,
        ));
    }
    (!has(t, tt)).then(|| {
        FieldError::required(
            FieldPath::new(tt),
            format!("given transform type {tt} requires configuration"),
        )
    })
}

fn validate_readiness_check(check: &Value) -> Option<FieldError> {
    let Some(t) = str_field(check, "type") else {
        return Some(FieldError::required(FieldPath::new("type"), ""));
    };
    if !READINESS_CHECK_TYPES.contains(&t) {
        return Some(FieldError::not_supported(
            FieldPath::new("type"),
            t,
            READINESS_CHECK_TYPES,
        ));
    }
    let needs = |field: &str| {
        (!has(check, field)).then(|| {
            FieldError::required(
                FieldPath::new(field),
                format!("{field} is required for readiness check type {t}"),
            )
        })
    };
    match t {
        "None" => None,
        "MatchCondition" => needs("matchCondition"),
        "MatchString" => needs("fieldPath").or_else(|| needs("matchString")),
        "MatchInteger" => needs("fieldPath").or_else(|| needs("matchInteger")),
        _ => needs("fieldPath"),
    }
}
