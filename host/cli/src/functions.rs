//! Which component runs each function a render names: the controller's rule
//! ([`plait_functions::Resolver`]) over the Functions given on the command
//! line, with render's local components and packages pulled on demand.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context, Result};
use plait_functions::{GivenFunctions, PackageSource, ResolveError, Resolver, package_of};
use plait_model::{Function, Manifest};
use plait_runtime::{Module, Runtime};
use serde_json::Value;

use crate::files;
use crate::function::{Registry, RegistryArgs};

/// The annotation that points a Function at a local component file.
pub const MODULE_ANNOTATION: &str = "render.plait.dev/module";

/// The Functions a render was given, and how to resolve the functions its
/// steps name: a Function annotated with [`MODULE_ANNOTATION`] runs that
/// local component; the rest follow the controller's rule, with OCI packages
/// pulled from their registries.
pub fn load(
    runtime: Runtime,
    functions_path: Option<&Path>,
    registry_args: &RegistryArgs,
) -> Result<(Resolver, GivenFunctions)> {
    let mut given = BTreeMap::new();
    let mut local = Vec::new();
    if let Some(path) = functions_path {
        for (file, value) in files::read_documents(path)? {
            let function = Function::from_value(value.clone())
                .with_context(|| format!("{}: not a valid Function", file.display()))?;
            let name = function.name().to_string();
            if let Some(module_path) = function.metadata.annotations.get(MODULE_ANNOTATION) {
                let base = file.parent().unwrap_or(Path::new("."));
                local.push((name.clone(), base.join(module_path)));
            }
            given.insert(name, value);
        }
    }
    let references: Vec<String> = given.values().map(|f| package_of(f).to_string()).collect();
    let pulled = Arc::new(PulledPackages {
        runtime: runtime.clone(),
        args: registry_args.clone(),
        references,
        registry: Mutex::new(None),
    });
    let mut resolver = Resolver::builtins(runtime.clone()).with_packages(pulled);
    for (name, module_path) in local {
        let bytes = std::fs::read(&module_path).with_context(|| {
            format!(
                "Function {name:?}: cannot read the component named by {MODULE_ANNOTATION}: {}",
                module_path.display()
            )
        })?;
        let module = runtime
            .load(&bytes)
            .with_context(|| format!("Function {name:?}: cannot load {}", module_path.display()))?;
        resolver = resolver.with_local(name, module);
    }
    Ok((resolver, GivenFunctions(given)))
}

/// Pulls Functions' packages from their registries as the pipeline needs them.
struct PulledPackages {
    runtime: Runtime,
    args: RegistryArgs,
    /// Every package given, so `--insecure` reaches all their registries.
    references: Vec<String>,
    /// Opened on first use: renders without OCI packages never read
    /// registry credentials.
    registry: Mutex<Option<Registry>>,
}

impl PackageSource for PulledPackages {
    fn module(&self, function: &str, object: &Value) -> Result<Arc<Module>, ResolveError> {
        let failed = |message: &str| {
            let function = function.to_string();
            let message = message.to_string();
            move |source: Box<dyn std::error::Error + Send + Sync>| ResolveError::Package {
                function,
                message,
                source,
            }
        };
        let mut registry = self.registry.lock().unwrap_or_else(PoisonError::into_inner);
        let registry = match &mut *registry {
            Some(registry) => registry,
            slot @ None => {
                let references: Vec<&str> = self.references.iter().map(String::as_str).collect();
                let opened = self
                    .args
                    .open(&references)
                    .map_err(|e| failed("cannot reach its registry")(e.into()))?;
                slot.insert(opened)
            }
        };
        let resolved = registry
            .resolve(package_of(object))
            .map_err(|e| failed("cannot pull its package")(Box::new(e)))?;
        plait_oci::load(&self.runtime, &resolved)
            .map_err(|e| failed("cannot load its package")(Box::new(e)))
    }
}
