//! A Composition's pipeline as the steps the reconciler runs.

use plait_model::{Composition, ConvertError, CredentialsSource, FieldError, XrdScope};
use plait_pipeline::{SecretRef, Step, StepCredential};
use plait_sdk::{Requirements, ResourceMatch, ResourceSelector};

use crate::{CompositeScope, ObjectRef};

/// Why a Composition cannot compose an XR.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error("{}", plait_model::render_errors(.0))]
    Invalid(Vec<FieldError>),
    #[error(
        "composition's compositeTypeRef.apiVersion {composition_api_version:?} and compositeTypeRef.kind {composition_kind:?} do not match the composite resource's apiVersion {xr_api_version:?} and kind {xr_kind:?}"
    )]
    Incompatible {
        composition_api_version: String,
        composition_kind: String,
        xr_api_version: String,
        xr_kind: String,
    },
    #[error(transparent)]
    Convert(#[from] ConvertError),
}

/// The steps `composition` runs for the XR `xr`, once the Composition is
/// valid and composes XRs of its kind: the checks render and the
/// controller both make before running anything.
pub fn prepare(composition: &Composition, xr: &ObjectRef) -> Result<Vec<Step>, PrepareError> {
    composition.validate().map_err(PrepareError::Invalid)?;
    let type_ref = &composition.spec.composite_type_ref;
    if type_ref.api_version != xr.api_version || type_ref.kind != xr.kind {
        return Err(PrepareError::Incompatible {
            composition_api_version: type_ref.api_version.clone(),
            composition_kind: type_ref.kind.clone(),
            xr_api_version: xr.api_version.clone(),
            xr_kind: xr.kind.clone(),
        });
    }
    Ok(pipeline_steps(composition)?)
}

impl CompositeScope {
    /// The scope of XRs an XRD defines.
    pub fn of(xrd: &plait_model::CompositeResourceDefinition) -> CompositeScope {
        match xrd.scope() {
            XrdScope::Namespaced => CompositeScope::Namespaced,
            XrdScope::Cluster => CompositeScope::Cluster,
            XrdScope::LegacyCluster => CompositeScope::LegacyCluster,
        }
    }
}

/// The steps of a Composition, converting `mode: Resources` to a pipeline first.
pub fn pipeline_steps(composition: &Composition) -> Result<Vec<Step>, ConvertError> {
    Ok(steps_of(&composition.to_pipeline()?))
}

/// The pipeline steps of a Composition already in Pipeline mode.
fn steps_of(composition: &Composition) -> Vec<Step> {
    composition
        .spec
        .pipeline
        .iter()
        .map(|step| {
            let mut requirements = Requirements::default();
            if let Some(required) = &step.requirements {
                for selector in &required.required_resources {
                    let matching = match (&selector.name, &selector.match_labels) {
                        (Some(name), _) => ResourceMatch::Name(name.clone()),
                        (None, labels) => ResourceMatch::Labels(labels.clone().unwrap_or_default()),
                    };
                    requirements.resources.insert(
                        selector.requirement_name.clone(),
                        ResourceSelector {
                            api_version: selector.api_version.clone(),
                            kind: selector.kind.clone(),
                            matching,
                            namespace: selector.namespace.clone(),
                        },
                    );
                }
            }
            Step {
                name: step.step.clone(),
                function: step.function_ref.name.clone(),
                input: step.input.clone(),
                credentials: step
                    .credentials
                    .iter()
                    .map(|c| StepCredential {
                        name: c.name.clone(),
                        secret: match (c.source, &c.secret_ref) {
                            (Some(CredentialsSource::Secret), Some(r)) => Some(SecretRef {
                                namespace: r.namespace.clone(),
                                name: r.name.clone(),
                            }),
                            _ => None,
                        },
                    })
                    .collect(),
                requirements,
            }
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use plait_model::Manifest;
    use serde_json::{Value, json};

    use super::*;

    fn composition(spec: Value) -> Composition {
        Composition::from_value(json!({
            "apiVersion": "apiextensions.crossplane.io/v1",
            "kind": "Composition",
            "metadata": {"name": "c"},
            "spec": spec,
        }))
        .unwrap()
    }

    fn xr(api_version: &str, kind: &str) -> ObjectRef {
        ObjectRef {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: None,
            name: "x".into(),
        }
    }

    #[test]
    fn prepare_checks_validity_then_kind_before_converting() {
        let type_ref = json!({"apiVersion": "example.org/v1", "kind": "XApp"});
        let pipeline = json!([{"step": "a", "functionRef": {"name": "function-auto-ready"}}]);
        // (spec, XR apiVersion and kind, Ok(step functions) or the error's start)
        type Want<'a> = Result<Vec<&'a str>, &'a str>;
        let cases: [(Value, (&str, &str), Want); 4] = [
            (
                json!({"compositeTypeRef": type_ref, "mode": "Pipeline", "pipeline": pipeline}),
                ("example.org/v1", "XApp"),
                Ok(vec!["function-auto-ready"]),
            ),
            (
                json!({"compositeTypeRef": type_ref, "mode": "Pipeline", "pipeline": pipeline}),
                ("example.org/v1", "XOther"),
                Err(
                    "composition's compositeTypeRef.apiVersion \"example.org/v1\" and compositeTypeRef.kind \"XApp\" do not match",
                ),
            ),
            (
                json!({"compositeTypeRef": {"apiVersion": "example.org/v1"}, "mode": "Pipeline", "pipeline": pipeline}),
                ("example.org/v1", "XApp"),
                Err("spec.compositeTypeRef.kind: Required value"),
            ),
            (
                json!({"compositeTypeRef": type_ref, "resources": [{"name": "r", "base": {"apiVersion": "v1", "kind": "ConfigMap"}}]}),
                ("example.org/v1", "XApp"),
                Ok(vec!["function-patch-and-transform"]),
            ),
        ];
        for (spec, (api_version, kind), want) in cases {
            let got = prepare(&composition(spec.clone()), &xr(api_version, kind));
            match want {
                Ok(functions) => {
                    let steps = got.unwrap();
                    let got: Vec<&str> = steps.iter().map(|s| s.function.as_str()).collect();
                    assert_eq!(got, functions, "{spec}");
                }
                Err(start) => {
                    let message = got.err().map(|e| e.to_string()).unwrap_or_default();
                    assert!(message.starts_with(start), "{spec}: {message}");
                }
            }
        }
    }
}
