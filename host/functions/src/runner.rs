//! Calling one pipeline's resolved functions.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use plait_pipeline::{FunctionRunner, ReadGrants, RunnerError, Step};
use plait_runtime::{CallLimits, Module, Runtime};
use plait_sdk::{Request, Response};

use crate::fair::FairShare;
use crate::policy::FunctionPolicy;
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

/// One function of a pipeline: its module and what its Function sets.
struct Resolved {
    module: Arc<Module>,
    policy: FunctionPolicy,
}

/// The functions of one pipeline, resolved, with one deadline for the reconcile.
pub struct PipelineFunctions {
    runtime: Runtime,
    functions: BTreeMap<String, Resolved>,
    deadline: Instant,
    observer: Arc<dyn CallObserver>,
    /// The shared call slots, and the tenant these calls are counted against.
    share: Option<(Arc<FairShare>, String)>,
}

impl PipelineFunctions {
    /// Resolves every function `steps` name, reading each Function object
    /// once; every call must end within `timeout` from now.
    pub fn resolve(
        resolver: &Resolver,
        objects: &dyn FunctionObjects,
        steps: &[Step],
        timeout: Duration,
    ) -> Result<PipelineFunctions, ResolveError> {
        let mut functions = BTreeMap::new();
        for step in steps {
            if functions.contains_key(&step.function) {
                continue;
            }
            let object = objects.function(&step.function)?;
            let module = resolver.module(&step.function, object.as_ref(), objects)?;
            let policy =
                FunctionPolicy::of(object.as_ref(), resolver.maximum()).map_err(|source| {
                    ResolveError::Policy {
                        function: step.function.clone(),
                        source,
                    }
                })?;
            functions.insert(step.function.clone(), Resolved { module, policy });
        }
        Ok(PipelineFunctions {
            runtime: resolver.runtime().clone(),
            functions,
            deadline: Instant::now() + timeout,
            observer: Arc::new(Unobserved),
            share: None,
        })
    }

    /// Reports every call to `observer`.
    pub fn observed_by(mut self, observer: Arc<dyn CallObserver>) -> PipelineFunctions {
        self.observer = observer;
        self
    }

    /// Runs every call in a slot of `share`, counted against `tenant`.
    pub fn sharing(
        mut self,
        share: Arc<FairShare>,
        tenant: impl Into<String>,
    ) -> PipelineFunctions {
        self.share = Some((share, tenant.into()));
        self
    }

    /// What these functions may read beyond a tenant's namespace: `defaults`
    /// for all, and what each Function grants itself.
    pub fn read_grants(&self, defaults: ReadGrants) -> ReadGrants {
        let mut grants = defaults;
        for (function, resolved) in &self.functions {
            grants
                .by_function
                .insert(function.clone(), resolved.policy.reads.clone());
        }
        grants
    }
}

impl FunctionRunner for PipelineFunctions {
    fn run(&self, function: &str, request: &Request) -> Result<Response, RunnerError> {
        let resolved = self
            .functions
            .get(function)
            .ok_or_else(|| format!("function {function:?} is not resolved"))?;
        let _turn = match &self.share {
            Some((share, tenant)) => Some(share.turn(tenant, self.deadline)?),
            None => None,
        };
        let remaining = self.deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(
                "the time allowed for the whole pipeline ran out before this step could run".into(),
            );
        }
        let limits = CallLimits {
            deadline: resolved.policy.limits.deadline.min(remaining),
            ..resolved.policy.limits.clone()
        };
        let output = self
            .runtime
            .call(&resolved.module, request, &limits)
            .inspect_err(|e| self.observer.failed(function, e.kind()))?;
        self.observer.called(function, output.duration);
        for line in &output.logs {
            tracing::info!(function, level = ?line.level, "{}", line.message);
        }
        Ok(output.response)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use plait_runtime::RuntimeConfig;
    use serde_json::json;

    use super::*;
    use crate::{FUNCTION_API_VERSION, FUNCTION_KIND, GivenFunctions};

    #[test]
    fn each_function_is_read_once_for_its_module_limits_and_grants() {
        let function = |name: &str, annotations: serde_json::Value| {
            (
                name.to_string(),
                json!({"apiVersion": FUNCTION_API_VERSION, "kind": FUNCTION_KIND,
                       "metadata": {"name": name, "annotations": annotations},
                       "spec": {"package": "xpkg.crossplane.io/crossplane-contrib/function-auto-ready:v0.5.0"}}),
            )
        };
        let objects = GivenFunctions(BTreeMap::from([
            function(
                "ready-a",
                json!({"tenancy.plait.dev/reads": "ConfigMap/shared, Node", "limits.plait.dev/deadline": "2s"}),
            ),
            function("ready-b", json!({})),
            function(
                "ready-bad",
                json!({"tenancy.plait.dev/reads": "Config Map"}),
            ),
        ]));
        let step = |function: &str| Step {
            name: function.into(),
            function: function.into(),
            ..Step::default()
        };
        let resolver = Resolver::builtins(Runtime::new(RuntimeConfig::default()).unwrap());
        let functions = PipelineFunctions::resolve(
            &resolver,
            &objects,
            &[step("ready-a"), step("ready-b"), step("ready-a")],
            Duration::from_secs(60),
        )
        .unwrap();
        let grants = functions.read_grants(ReadGrants::tenant_defaults());
        assert_eq!(grants.defaults, ReadGrants::tenant_defaults().defaults);
        let listed: Vec<String> = grants.by_function["ready-a"]
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(listed, ["ConfigMap/shared", "Node"]);
        assert_eq!(grants.by_function["ready-b"], Vec::new());
        assert_eq!(
            functions.functions["ready-a"].policy.limits.deadline,
            Duration::from_secs(2)
        );
        assert_eq!(
            functions.functions["ready-b"].policy.limits,
            CallLimits::default()
        );
        let error = PipelineFunctions::resolve(
            &resolver,
            &objects,
            &[step("ready-bad")],
            Duration::from_secs(60),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(
            error.starts_with(
                "Function \"ready-bad\": tenancy.plait.dev/reads: entry \"Config Map\""
            ),
            "{error}"
        );
    }
}
