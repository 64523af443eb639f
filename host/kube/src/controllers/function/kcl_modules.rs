//! The KCL modules a CompositionRevision's function-kcl steps name (an
//! `oci://` source, `spec.dependencies`, and the registry dependencies of
//! each module fetched), pulled by the controller as `plait render` pulls
//! them: under the cluster's ImageConfigs (rewrite, pull secret,
//! signature), each tag resolved to its manifest digest, the module extracted
//! once into the blob cache's `kcl-modules/`, and the directories granted
//! to the step where the built-in function-kcl reads them. The catalog asks
//! once per revision, so a tag that moves later does not change what the
//! revision's XRs run.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use plait_oci::Keychain;
use plait_oci::kcl::{KCL_REGISTRY_CREDENTIAL, fetch_step_modules, registry_credential};
use plait_pipeline::Step;

use super::InstalledPackages;
use super::context::image_policy;
use crate::stores::catalog::{StepDirectories, StepDirs};

/// Why a step's modules cannot be fetched; every variant names the step.
#[derive(Debug, thiserror::Error)]
pub enum KclModulesError {
    #[error("step {step:?}: {source}")]
    Fetch {
        step: String,
        #[source]
        source: plait_oci::kcl::KclStepError,
    },
    #[error("step {step:?}: credential {KCL_REGISTRY_CREDENTIAL:?}: {message}")]
    Credential { step: String, message: String },
}

/// Fetches function-kcl steps' modules from registries with the Function
/// packages' client and credentials, reading each step's `kcl-registry`
/// Secret through `kube`.
pub struct KclStepModules {
    pub(super) packages: Arc<InstalledPackages>,
    pub(super) kube: kube::Client,
}

impl KclStepModules {
    /// The credentials of `step`'s `kcl-registry` credential: anonymous
    /// when it names none, as upstream then logs in nowhere.
    fn step_keychain(
        &self,
        handle: &tokio::runtime::Handle,
        step: &Step,
    ) -> Result<Keychain, KclModulesError> {
        let Some(reference) = step
            .credentials
            .iter()
            .find(|c| c.name == KCL_REGISTRY_CREDENTIAL)
            .and_then(|c| c.secret.as_ref())
        else {
            return Ok(Keychain::anonymous());
        };
        let failed = |message: String| KclModulesError::Credential {
            step: step.name.clone(),
            message,
        };
        let secrets: Api<Secret> = Api::namespaced(self.kube.clone(), &reference.namespace);
        let secret = handle
            .block_on(secrets.get_opt(&reference.name))
            .map_err(|e| {
                failed(format!(
                    "cannot read Secret {}/{}: {e}",
                    reference.namespace, reference.name
                ))
            })?
            .ok_or_else(|| {
                failed(format!(
                    "Secret {}/{} not found",
                    reference.namespace, reference.name
                ))
            })?;
        let data = secret
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(key, value)| (key, value.0))
            .collect();
        Ok(registry_credential(&data).unwrap_or_else(Keychain::anonymous))
    }
}

impl StepDirectories for KclStepModules {
    fn fetch(
        &self,
        revision: &str,
        steps: &[Step],
    ) -> Result<StepDirs, Box<dyn std::error::Error + Send + Sync>> {
        let handle = tokio::runtime::Handle::current();
        let mut dirs = StepDirs::new();
        for step in steps {
            let Some(input) = &step.input else {
                continue;
            };
            // Only a function-kcl step that names modules reads its
            // credential; one that names them wrongly fails below.
            if !plait_oci::kcl::is_kcl_input(input)
                || plait_oci::kcl::step_modules(input).is_ok_and(|wanted| wanted.is_empty())
            {
                continue;
            }
            let keychain = self.step_keychain(&handle, step)?;
            let granted = fetch_step_modules(input, |wanted| {
                let module = handle.block_on(async {
                    let subject = format!("step {:?}", step.name);
                    let namespace = self.packages.namespace();
                    let applied =
                        image_policy(&self.kube, namespace, &subject, &wanted.reference).await??;
                    let module = self.packages.kcl_module(wanted, &applied, &keychain);
                    Ok::<_, Box<dyn std::error::Error + Send + Sync>>(module.await?)
                })?;
                tracing::info!(
                    revision,
                    step = step.name,
                    module = module.pinned,
                    field = wanted.field,
                    "fetched a KCL module"
                );
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(module.dir)
            })
            .map_err(|source| KclModulesError::Fetch {
                step: step.name.clone(),
                source,
            })?;
            if !granted.is_empty() {
                dirs.insert(step.name.clone(), granted);
            }
        }
        Ok(dirs)
    }
}
