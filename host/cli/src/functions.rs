//! Which component runs each function a render names.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use plait_kube::PipelineFunctions;
use plait_model::{Function, Manifest};
use plait_runtime::{Builtin, Runtime};

use crate::files;
use crate::function::RegistryArgs;

/// The annotation that points a Function at a local component file.
pub const MODULE_ANNOTATION: &str = "render.plait.dev/module";

/// Resolves every function the steps name: from the functions file
/// (a local component, a package plait has built in, or an OCI
/// reference to pull), else a built-in of that name.
pub fn load(
    runtime: Runtime,
    functions_path: Option<&Path>,
    step_functions: &[&str],
    timeout: Duration,
    registry_args: &RegistryArgs,
) -> Result<PipelineFunctions> {
    let mut modules = BTreeMap::new();
    let mut functions = Vec::new();
    if let Some(path) = functions_path {
        for (file, value) in files::read_documents(path)? {
            let function = Function::from_value(value)
                .with_context(|| format!("{}: not a valid Function", file.display()))?;
            functions.push((file, function));
        }
    }
    let pulled: Vec<&str> = functions
        .iter()
        .filter(|(_, f)| {
            !f.metadata.annotations.contains_key(MODULE_ANNOTATION)
                && Builtin::from_package(&f.spec.package).is_none()
        })
        .map(|(_, f)| f.spec.package.as_str())
        .collect();
    // Opened on first use: renders without OCI packages never read
    // registry credentials.
    let mut registry = None;
    for (file, function) in &functions {
        let name = function.name().to_string();
        let annotation = function
            .metadata
            .annotations
            .get(MODULE_ANNOTATION)
            .cloned();
        let module = if let Some(module_path) = annotation {
            let base = file.parent().unwrap_or(Path::new("."));
            let module_path = base.join(module_path);
            let bytes = std::fs::read(&module_path).with_context(|| {
                format!(
                    "Function {name:?}: cannot read the component named by {MODULE_ANNOTATION}: {}",
                    module_path.display()
                )
            })?;
            runtime.load(&bytes).with_context(|| {
                format!("Function {name:?}: cannot load {}", module_path.display())
            })?
        } else if let Some(builtin) = Builtin::from_package(&function.spec.package) {
            runtime.builtin(builtin)?
        } else {
            let registry = match &mut registry {
                Some(registry) => registry,
                slot @ None => slot.insert(registry_args.open(&pulled)?),
            };
            let resolved = registry
                .resolve(&function.spec.package)
                .with_context(|| format!("Function {name:?}: cannot pull its package"))?;
            plait_oci::load(&runtime, &resolved)
                .with_context(|| format!("Function {name:?}: cannot load its package"))?
        };
        modules.insert(name, module);
    }
    for name in step_functions {
        if modules.contains_key(*name) {
            continue;
        }
        let Some(builtin) = Builtin::from_name(name) else {
            let known: Vec<_> = modules.keys().cloned().collect();
            bail!(
                "the pipeline uses function {name:?}, which is neither built in ({}) nor among the Functions given ({})",
                Builtin::ALL.map(Builtin::name).join(", "),
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            );
        };
        modules.insert(name.to_string(), runtime.builtin(builtin)?);
    }
    // The controller runs its pipelines with the same runner.
    Ok(PipelineFunctions::new(runtime, modules, timeout))
}
