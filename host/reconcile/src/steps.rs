//! A Composition's pipeline as the steps the reconciler runs.

use plait_model::{Composition, ConvertError, CredentialsSource, XrdScope};
use plait_pipeline::{SecretRef, Step, StepCredential};
use plait_sdk::{Requirements, ResourceMatch, ResourceSelector};

use crate::CompositeScope;

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
