//! Which component runs each function a pipeline step names.
//!
//! [`FunctionResolver`] is the seam: the controller asks it for a compiled
//! module per function name. [`BuiltinResolver`] answers from the functions
//! built into plait, as `plait render` does; [`crate::function::PackageResolver`]
//! wraps it and answers the rest from the packages the Function controller
//! installed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use plait_pipeline::{FunctionRunner, RunnerError, Step};
use plait_reconcile::{Cluster, ObjectRef};
use plait_runtime::{Builtin, CallLimits, Module, Runtime, RuntimeError};
use plait_sdk::{Request, Response};
use serde_json::Value;

use crate::metrics::metrics;

pub const FUNCTION_API_VERSION: &str = "pkg.crossplane.io/v1";
pub const FUNCTION_KIND: &str = "Function";

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error(
        "function {function:?}: package {package:?} is not built in, and this controller cannot fetch packages"
    )]
    NotBuiltIn { function: String, package: String },
    #[error(
        "function {function:?} is neither a Function in the cluster nor built in ({})",
        Builtin::ALL.map(Builtin::name).join(", ")
    )]
    Unknown { function: String },
    #[error("Function {function:?} is not healthy ({reason}): {message}")]
    Unhealthy {
        function: String,
        reason: String,
        message: String,
    },
    #[error("Function {function:?}: package {package:?} is not installed yet")]
    NotInstalled { function: String, package: String },
    #[error("function {function:?}: cannot read its Function: {message}")]
    Cluster { function: String, message: String },
    #[error("function {function:?}: {source}")]
    Runtime {
        function: String,
        #[source]
        source: RuntimeError,
    },
}

/// Finds the compiled component for a function name.
pub trait FunctionResolver: Send + Sync {
    /// The module that runs `function` (a step's `functionRef.name`).
    /// `cluster` is where Function objects are read from.
    fn resolve(&self, function: &str, cluster: &dyn Cluster) -> Result<Arc<Module>, ResolveError>;

    /// The runtime modules are called on.
    fn runtime(&self) -> &Runtime;

    /// The Function packages this resolver serves, which [`crate::run`]
    /// installs with the Function controller; `None` for a resolver that
    /// serves built-in functions only.
    fn packages(&self) -> Option<Arc<crate::function::Packages>> {
        None
    }
}

/// The Function object named `function`, if there is one.
pub fn function_object(
    function: &str,
    cluster: &dyn Cluster,
) -> Result<Option<Value>, ResolveError> {
    cluster
        .get(&ObjectRef {
            api_version: FUNCTION_API_VERSION.into(),
            kind: FUNCTION_KIND.into(),
            namespace: None,
            name: function.into(),
        })
        .map_err(|e| ResolveError::Cluster {
            function: function.into(),
            message: e.to_string(),
        })
}

/// The package a Function object names.
pub fn package_of(function: &Value) -> &str {
    function
        .pointer("/spec/package")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Resolves functions to plait's built-ins: a Function object whose package is
/// upstream's package of a built-in, or, with no Function object, a built-in
/// of that name.
pub struct BuiltinResolver {
    runtime: Runtime,
}

impl BuiltinResolver {
    pub fn new(runtime: Runtime) -> BuiltinResolver {
        BuiltinResolver { runtime }
    }
}

impl BuiltinResolver {
    /// The built-in module for a function with no Function object: a
    /// built-in of that name.
    pub fn by_name(&self, function: &str) -> Result<Arc<Module>, ResolveError> {
        let builtin = Builtin::from_name(function).ok_or_else(|| ResolveError::Unknown {
            function: function.into(),
        })?;
        self.load(function, builtin)
    }

    pub fn load(&self, function: &str, builtin: Builtin) -> Result<Arc<Module>, ResolveError> {
        self.runtime
            .builtin(builtin)
            .map_err(|source| ResolveError::Runtime {
                function: function.into(),
                source,
            })
    }
}

impl FunctionResolver for BuiltinResolver {
    fn resolve(&self, function: &str, cluster: &dyn Cluster) -> Result<Arc<Module>, ResolveError> {
        let Some(object) = function_object(function, cluster)? else {
            return self.by_name(function);
        };
        let package = package_of(&object);
        let builtin = Builtin::from_package(package).ok_or_else(|| ResolveError::NotBuiltIn {
            function: function.into(),
            package: package.into(),
        })?;
        self.load(function, builtin)
    }

    fn runtime(&self) -> &Runtime {
        &self.runtime
    }
}

/// The functions of one pipeline, resolved, with one deadline for the reconcile.
pub struct PipelineFunctions {
    runtime: Runtime,
    modules: BTreeMap<String, Arc<Module>>,
    deadline: Instant,
}

impl PipelineFunctions {
    /// Runs `modules` by function name; every call must end within `timeout`
    /// from now.
    pub fn new(
        runtime: Runtime,
        modules: BTreeMap<String, Arc<Module>>,
        timeout: Duration,
    ) -> PipelineFunctions {
        PipelineFunctions {
            runtime,
            modules,
            deadline: Instant::now() + timeout,
        }
    }

    /// Resolves every function `steps` name.
    pub fn resolve(
        resolver: &dyn FunctionResolver,
        cluster: &dyn Cluster,
        steps: &[Step],
        timeout: Duration,
    ) -> Result<PipelineFunctions, ResolveError> {
        let mut modules = BTreeMap::new();
        for step in steps {
            if !modules.contains_key(&step.function) {
                let module = resolver.resolve(&step.function, cluster)?;
                modules.insert(step.function.clone(), module);
            }
        }
        Ok(PipelineFunctions::new(
            resolver.runtime().clone(),
            modules,
            timeout,
        ))
    }
}

impl FunctionRunner for PipelineFunctions {
    fn run(&self, function: &str, request: &Request) -> Result<Response, RunnerError> {
        let module = self
            .modules
            .get(function)
            .ok_or_else(|| format!("function {function:?} is not resolved"))?;
        let remaining = self.deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(
                "the time allowed for the whole pipeline ran out before this step could run".into(),
            );
        }
        let defaults = CallLimits::default();
        let limits = CallLimits {
            deadline: defaults.deadline.min(remaining),
            ..defaults
        };
        let output = self
            .runtime
            .call(module, request, &limits)
            .inspect_err(|e| metrics().guest_failed(function, e.kind()))?;
        metrics().function_called(function, output.duration);
        for line in &output.logs {
            tracing::info!(function, level = ?line.level, "{}", line.message);
        }
        Ok(output.response)
    }
}
