//! Calling one pipeline's resolved functions.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use plait_pipeline::{FunctionRunner, RunnerError, Step};
use plait_runtime::{CallLimits, Module, Runtime};
use plait_sdk::{Request, Response};

use crate::resolve::{FunctionObjects, ResolveError, Resolver};

/// Told about every function call, for metrics.
pub trait CallObserver: Send + Sync {
    /// A call returned a response after `took` in the sandbox.
    fn called(&self, function: &str, took: Duration);
    /// A call failed; `kind` is [`plait_runtime::CallError::kind`].
    fn failed(&self, function: &str, kind: &str);
}

/// Observes nothing.
struct Unobserved;

impl CallObserver for Unobserved {
    fn called(&self, _: &str, _: Duration) {}
    fn failed(&self, _: &str, _: &str) {}
}

/// The functions of one pipeline, resolved, with one deadline for the reconcile.
pub struct PipelineFunctions {
    runtime: Runtime,
    modules: BTreeMap<String, Arc<Module>>,
    deadline: Instant,
    observer: Arc<dyn CallObserver>,
}

impl PipelineFunctions {
    /// Resolves every function `steps` name; every call must end within
    /// `timeout` from now.
    pub fn resolve(
        resolver: &Resolver,
        objects: &dyn FunctionObjects,
        steps: &[Step],
        timeout: Duration,
    ) -> Result<PipelineFunctions, ResolveError> {
        let mut modules = BTreeMap::new();
        for step in steps {
            if !modules.contains_key(&step.function) {
                let module = resolver.resolve(&step.function, objects)?;
                modules.insert(step.function.clone(), module);
            }
        }
        Ok(PipelineFunctions {
            runtime: resolver.runtime().clone(),
            modules,
            deadline: Instant::now() + timeout,
            observer: Arc::new(Unobserved),
        })
    }

    /// Reports every call to `observer`.
    pub fn observed_by(mut self, observer: Arc<dyn CallObserver>) -> PipelineFunctions {
        self.observer = observer;
        self
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
            .inspect_err(|e| self.observer.failed(function, e.kind()))?;
        self.observer.called(function, output.duration);
        for line in &output.logs {
            tracing::info!(function, level = ?line.level, "{}", line.message);
        }
        Ok(output.response)
    }
}
