//! Runs a Composition's function pipeline with Crossplane's semantics.
//!
//! Steps run in order. Each step sees the observed state, the desired state
//! and context left by the previous step, and its own input. Results and
//! conditions accumulate; the first fatal result stops the pipeline. A step
//! that returns requirements is called again with the resources it asked for
//! until its requirements stop changing. Every step's output is checked
//! (see [`check`]) before the next step or the caller sees it: guest output is
//! untrusted input.

pub mod check;
pub mod tenancy;

use std::collections::BTreeMap;
use std::time::Duration;

use plait_sdk::{
    Condition, FunctionResult, Request, Requirements, ResourceSelector, Response, SchemaSelector,
    Severity, State,
};
use serde_json::Value;
use sha2::{Digest, Sha256};

pub use check::{OutputRules, ScopeLookup};
pub use tenancy::{
    GrantError, READS_ANNOTATION, ReadGrant, ReadGrants, ReadPolicy, ReadRefused, ReadTarget,
    Tenant,
};

/// Crossplane's MaxRequirementsIterations: a step is called at most this many
/// extra times while its requirements keep changing.
pub const MAX_REQUIREMENTS_ITERATIONS: usize = 5;

/// One step of a pipeline, as written in a Composition.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Step {
    pub name: String,
    /// The `functionRef.name` of the step.
    pub function: String,
    pub input: Option<Value>,
    pub credentials: Vec<StepCredential>,
    /// Resources and schemas supplied on the first call, before the step asks.
    pub requirements: Requirements,
}

/// A credential declared on a step. Only `source: Secret` carries data.
#[derive(Debug, Clone, PartialEq)]
pub struct StepCredential {
    pub name: String,
    pub secret: Option<SecretRef>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SecretRef {
    pub namespace: String,
    pub name: String,
}

/// Calls a function by name for a step. Implemented over the Wasm runtime
/// by the host, and by closures in tests.
pub trait FunctionRunner {
    fn run(&self, step: &str, function: &str, request: &Request) -> Result<Response, RunnerError>;
}

/// Why a function could not produce a response.
pub type RunnerError = Box<dyn std::error::Error + Send + Sync>;

/// Where requirements are satisfied from: a cluster, or files given to `plait render`.
pub trait RequirementSource {
    /// Whether `apiVersion`/`kind` is namespaced; `None` when it is not known.
    fn is_namespaced(&self, api_version: &str, kind: &str) -> Result<Option<bool>, RunnerError>;
    /// The objects `selector` matches; a selector without a namespace
    /// matches in every namespace.
    fn resources(&self, selector: &ResourceSelector) -> Result<Vec<Value>, RunnerError>;
    fn schema(&self, selector: &SchemaSelector) -> Result<Option<Value>, RunnerError>;
    fn secret(
        &self,
        reference: &SecretRef,
    ) -> Result<Option<BTreeMap<String, Vec<u8>>>, RunnerError>;
}

/// A result, with the step that produced it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepResult {
    pub step: String,
    pub result: FunctionResult,
}

/// What a pipeline run produced, whether or not it finished.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PipelineOutput {
    pub desired: State,
    pub context: Value,
    pub results: Vec<StepResult>,
    pub conditions: Vec<Condition>,
    /// The smallest non-zero TTL any step returned.
    pub ttl: Option<Duration>,
    /// Every call made, in order, with the step it belongs to.
    pub calls: Vec<String>,
    /// What the steps read as required resources: each step's selectors of
    /// its last call (the Composition's requirements and those its last
    /// response asked for), as confined to what the XR's tenant may read.
    /// A change to an object one of them selects makes the output stale.
    pub required: Vec<ResourceSelector>,
}

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("pipeline step {step:?} returned a fatal result: {message}")]
    FatalResult { step: String, message: String },
    #[error("pipeline step {step:?} (function {function:?}) failed: {source}")]
    Function {
        step: String,
        function: String,
        source: RunnerError,
    },
    #[error(
        "pipeline step {step:?} (function {function:?}) returned invalid desired state: {source}"
    )]
    InvalidOutput {
        step: String,
        function: String,
        source: Box<check::CheckError>,
    },
    #[error(
        "pipeline step {step:?}: requirements didn't stabilize after the maximum number of iterations ({MAX_REQUIREMENTS_ITERATIONS})"
    )]
    RequirementsDidNotStabilize { step: String },
    #[error("pipeline step {step:?}: cannot resolve required {what} {name:?}: {source}")]
    Requirement {
        step: String,
        what: &'static str,
        name: String,
        source: RunnerError,
    },
    #[error("pipeline step {step:?}: required {what} {name:?} refused: {refused}")]
    Refused {
        step: String,
        what: &'static str,
        name: String,
        refused: Box<ReadRefused>,
    },
    #[error("pipeline step {step:?}: cannot get credentials {name:?}: {detail}")]
    Credentials {
        step: String,
        name: String,
        detail: String,
    },
}

impl PipelineError {
    /// The step at fault.
    pub fn step(&self) -> &str {
        match self {
            PipelineError::FatalResult { step, .. }
            | PipelineError::Function { step, .. }
            | PipelineError::InvalidOutput { step, .. }
            | PipelineError::RequirementsDidNotStabilize { step }
            | PipelineError::Requirement { step, .. }
            | PipelineError::Refused { step, .. }
            | PipelineError::Credentials { step, .. } => step,
        }
    }
}

/// A pipeline that stopped early: the error, and what was gathered before it
/// (results and conditions are still reported, as upstream does).
#[derive(Debug)]
pub struct PipelineFailure {
    pub error: PipelineError,
    pub partial: PipelineOutput,
}

impl std::fmt::Display for PipelineFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for PipelineFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// Everything a pipeline run needs besides its steps.
pub struct Pipeline<'a> {
    pub runner: &'a dyn FunctionRunner,
    pub source: &'a dyn RequirementSource,
    pub rules: OutputRules<'a>,
    /// What the steps may read.
    pub reads: ReadPolicy<'a>,
}

impl Pipeline<'_> {
    /// Runs `steps` against the observed state, starting from `context`.
    pub fn run(
        &self,
        steps: &[Step],
        observed: &State,
        context: Value,
    ) -> Result<PipelineOutput, Box<PipelineFailure>> {
        let mut out = PipelineOutput {
            context,
            ..PipelineOutput::default()
        };
        for step in steps {
            if let Err(error) = self.run_step(step, observed, &mut out) {
                return Err(Box::new(PipelineFailure {
                    error,
                    partial: out,
                }));
            }
        }
        Ok(out)
    }

    fn run_step(
        &self,
        step: &Step,
        observed: &State,
        out: &mut PipelineOutput,
    ) -> Result<(), PipelineError> {
        let credentials = self.credentials(step)?;
        let mut satisfied = step.requirements.clone();
        let (mut required_resources, mut required_schemas, mut read) =
            self.resolve(step, &satisfied)?;
        // Whatever ends the step, what its last call was given was read.
        let recorded = out.required.len();
        let mut context = out.context.clone();
        let mut iteration = 0;
        let response = loop {
            let mut request = Request {
                observed: observed.clone(),
                desired: out.desired.clone(),
                input: step.input.clone(),
                context: context.clone(),
                required_resources: required_resources.clone(),
                required_schemas: required_schemas.clone(),
                credentials: credentials.clone(),
                ..Request::default()
            };
            request.tag = request_tag(&request);
            out.calls.push(step.name.clone());
            out.required.truncate(recorded);
            out.required.extend(read.iter().cloned());
            let response = self
                .runner
                .run(&step.name, &step.function, &request)
                .map_err(|source| PipelineError::Function {
                    step: step.name.clone(),
                    function: step.function.clone(),
                    source,
                })?;
            if response.is_fatal() || response.requirements == satisfied {
                break response;
            }
            if iteration == MAX_REQUIREMENTS_ITERATIONS {
                return Err(PipelineError::RequirementsDidNotStabilize {
                    step: step.name.clone(),
                });
            }
            iteration += 1;
            let mut wanted = step.requirements.clone();
            wanted
                .resources
                .extend(response.requirements.resources.clone());
            wanted.schemas.extend(response.requirements.schemas.clone());
            (required_resources, required_schemas, read) = self.resolve(step, &wanted)?;
            satisfied = response.requirements.clone();
            context = response.context;
        };

        check::check_state(&response.desired, &self.rules)
            .and_then(|()| check::check_context(&response.context))
            .map_err(|source| PipelineError::InvalidOutput {
                step: step.name.clone(),
                function: step.function.clone(),
                source: Box::new(source),
            })?;

        out.results
            .extend(response.results.iter().cloned().map(|result| StepResult {
                step: step.name.clone(),
                result,
            }));
        out.conditions.extend(response.conditions.iter().cloned());
        if let Some(ttl) = response.ttl.filter(|t| !t.is_zero()) {
            out.ttl = Some(out.ttl.map_or(ttl, |current| current.min(ttl)));
        }
        if let Some(fatal) = response
            .results
            .iter()
            .find(|r| r.severity == Severity::Fatal)
        {
            return Err(PipelineError::FatalResult {
                step: step.name.clone(),
                message: fatal.message.clone(),
            });
        }
        out.desired = response.desired;
        out.context = response.context;
        Ok(())
    }

    /// The resources and schemas `wanted` names, and the selectors the
    /// resources were read with.
    #[allow(clippy::type_complexity)]
    fn resolve(
        &self,
        step: &Step,
        wanted: &Requirements,
    ) -> Result<
        (
            BTreeMap<String, Vec<Value>>,
            BTreeMap<String, Option<Value>>,
            Vec<ResourceSelector>,
        ),
        PipelineError,
    > {
        let mut resources = BTreeMap::new();
        let mut read = Vec::with_capacity(wanted.resources.len());
        for (name, selector) in &wanted.resources {
            let failed = |source| PipelineError::Requirement {
                step: step.name.clone(),
                what: "resources",
                name: name.clone(),
                source,
            };
            let selector = self.confine(step, name, selector).map_err(|e| match e {
                Confinement::Refused(error) => *error,
                Confinement::Source(source) => failed(source),
            })?;
            let items = self.source.resources(&selector).map_err(failed)?;
            resources.insert(name.clone(), items);
            read.push(selector);
        }
        let mut schemas = BTreeMap::new();
        for (name, selector) in &wanted.schemas {
            let schema =
                self.source
                    .schema(selector)
                    .map_err(|source| PipelineError::Requirement {
                        step: step.name.clone(),
                        what: "schema",
                        name: name.clone(),
                        source,
                    })?;
            schemas.insert(name.clone(), schema);
        }
        Ok((resources, schemas, read))
    }

    /// The selector as the tenancy rules let `step` use it: in the
    /// tenant's namespace when it names none, refused when it reaches
    /// beyond what the tenant was granted.
    fn confine(
        &self,
        step: &Step,
        name: &str,
        selector: &ResourceSelector,
    ) -> Result<ResourceSelector, Confinement> {
        let namespaced = self
            .source
            .is_namespaced(&selector.api_version, &selector.kind)
            .map_err(Confinement::Source)?
            // An unknown kind is read as namespaced, so a tenant's read of it
            // stays in the tenant's namespace.
            .unwrap_or(true);
        let namespace = match namespaced {
            true => selector
                .namespace
                .clone()
                .or_else(|| self.reads.default_namespace().map(str::to_string)),
            false => None,
        };
        let target = ReadTarget {
            api_version: selector.api_version.clone(),
            kind: selector.kind.clone(),
            namespace: namespace.clone(),
        };
        self.reads
            .check(&step.function, &target)
            .map_err(|refused| {
                Confinement::Refused(Box::new(PipelineError::Refused {
                    step: step.name.clone(),
                    what: "resources",
                    name: name.into(),
                    refused,
                }))
            })?;
        Ok(ResourceSelector {
            namespace,
            ..selector.clone()
        })
    }

    fn credentials(
        &self,
        step: &Step,
    ) -> Result<BTreeMap<String, BTreeMap<String, Vec<u8>>>, PipelineError> {
        let mut credentials = BTreeMap::new();
        // The Composition names these Secrets, and only the platform writes
        // Compositions: naming one for a step is the platform's grant, for
        // every tenant's XR (unlike reads a function asks for, which stay
        // confined).
        for credential in &step.credentials {
            let Some(reference) = &credential.secret else {
                continue;
            };
            let error = |detail: String| PipelineError::Credentials {
                step: step.name.clone(),
                name: credential.name.clone(),
                detail,
            };
            let data = self
                .source
                .secret(reference)
                .map_err(|e| error(e.to_string()))?
                .ok_or_else(|| {
                    error(format!(
                        "Secret {}/{} not found",
                        reference.namespace, reference.name
                    ))
                })?;
            credentials.insert(credential.name.clone(), data);
        }
        Ok(credentials)
    }
}

/// Why a requirement could not be confined.
enum Confinement {
    Refused(Box<PipelineError>),
    Source(RunnerError),
}

/// A tag that is equal for equal requests, so functions can cache on it.
fn request_tag(request: &Request) -> String {
    match serde_json::to_vec(request) {
        Ok(bytes) => hex::encode(Sha256::digest(bytes)),
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests;
