//! Calling one pipeline's resolved functions.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use plait_pipeline::{FunctionRunner, ReadGrants, RunnerError, Step, Tenant};
use plait_runtime::{Builtin, CallLimits, Checkpoint, Module, ReadOnlyDir, Runtime, Stopped};
use plait_sdk::{LogLevel, Request, Response};

use crate::cache::{CacheScope, Call, ResponseCache};
use crate::fair::{FairShare, Parked, Rank, Turn, WaitNotice};
use crate::pins::Pins;
use crate::policy::FunctionPolicy;
use crate::resolve::{FunctionObjects, ResolveError, Resolver};

/// Told about every function call, for metrics.
pub trait CallObserver: Send + Sync {
    /// A call returned a response after `took` in the sandbox.
    fn called(&self, function: &str, took: Duration);
    /// A call failed; `kind` is [`plait_runtime::CallError::kind`].
    fn failed(&self, function: &str, kind: &str);
    /// A call was answered from the response cache.
    fn cache_hit(&self, _function: &str) {}
    /// A call the response cache could not answer.
    fn cache_missed(&self, _function: &str) {}
    /// A cached response of `tenant`'s `function` made room for another.
    fn cache_evicted(&self, _tenant: &Tenant, _function: &str) {}
    /// A call of `function` changed how much the tenant's time counts in
    /// the share of call slots (1: as anyone's; more after calls that
    /// reached their deadline).
    fn throttled(&self, _function: &str, _throttle: u32) {}
}

/// How long the slot a pipeline's call leaves stays its own for its next
/// step: longer than the host's work between two steps, short enough
/// that a slot a pipeline does not come back for is soon free.
pub const STEP_GRACE: Duration = Duration::from_millis(25);

/// The shared call slots these calls take, and whose they are.
struct Sharing {
    share: Arc<FairShare>,
    tenant: Tenant,
    /// Told while a call waits for a slot.
    notice: Option<Arc<dyn WaitNotice>>,
}

/// The turn a running call holds, passed to the runtime so the call can
/// give way to a lighter tenant's call at an epoch tick.
struct RunningTurn {
    turn: Mutex<Option<Turn>>,
    /// Until when the call may run or wait for a slot again: the
    /// pipeline's time is wall time, paused or not.
    deadline: Instant,
    notice: Option<Arc<dyn WaitNotice>>,
}

impl RunningTurn {
    fn take(&self) -> Option<Turn> {
        self.turn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

impl Checkpoint for RunningTurn {
    fn should_pause(&self) -> Result<bool, Stopped> {
        if Instant::now() >= self.deadline {
            return Err(Stopped);
        }
        let held = self.turn.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(held.as_ref().is_some_and(Turn::should_give_way))
    }

    fn pause(&self) -> Result<(), Stopped> {
        let mut held = self.turn.lock().unwrap_or_else(PoisonError::into_inner);
        let turn = held.take().ok_or(Stopped)?;
        match turn.give_way(self.deadline, self.notice.as_deref()) {
            Ok(turn) => {
                *held = Some(turn);
                Ok(())
            }
            Err(no_turn) => {
                tracing::debug!(%no_turn, "a paused call did not get a slot again");
                Err(Stopped)
            }
        }
    }
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
    /// What the response cache keys this function's calls by: the module's
    /// digest, with the directories its calls read (one built-in runs many
    /// project builds, each with its own source).
    identity: String,
}

/// What one step's calls read besides their function's directories.
struct StepGrant {
    read_only_dirs: Vec<ReadOnlyDir>,
    /// The function's identity with these directories: responses of one
    /// function to steps that read other modules are never shared.
    identity: String,
}

/// The functions one pipeline names, each resolved once to its loaded
/// module (an `InstancePre`) and the policy its Function sets: immutable,
/// so every reconcile of the pipeline shares it.
pub struct ResolvedFunctions {
    runtime: Runtime,
    functions: BTreeMap<String, Resolved>,
    /// The steps granted directories of their own, by step name.
    steps: BTreeMap<String, StepGrant>,
}

/// `identity` followed by each directory as `host=guest`.
fn identity_with(identity: &str, dirs: &[ReadOnlyDir]) -> String {
    let mut identity = identity.to_string();
    for dir in dirs {
        identity.push_str(&format!(" {}={}", dir.host.display(), dir.guest));
    }
    identity
}

impl ResolvedFunctions {
    /// Resolves every function `steps` name, reading each Function object once.
    pub fn resolve(
        resolver: &Resolver,
        objects: &dyn FunctionObjects,
        steps: &[Step],
    ) -> Result<ResolvedFunctions, ResolveError> {
        ResolvedFunctions::resolve_pinned(resolver, objects, steps, &Pins::default())
    }

    /// [`ResolvedFunctions::resolve`], each function whose steps `pins`
    /// records running the recorded component while its Function exists.
    pub fn resolve_pinned(
        resolver: &Resolver,
        objects: &dyn FunctionObjects,
        steps: &[Step],
        pins: &Pins,
    ) -> Result<ResolvedFunctions, ResolveError> {
        let mut functions = BTreeMap::new();
        for step in steps {
            if functions.contains_key(&step.function) {
                continue;
            }
            let pin =
                pins.for_function(&step.function, steps)
                    .map_err(|source| ResolveError::Pin {
                        function: step.function.clone(),
                        source,
                    })?;
            let object = objects.function(&step.function)?;
            let served = resolver.module(&step.function, object.as_ref(), objects, pin)?;
            let mut policy =
                FunctionPolicy::of(object.as_ref(), resolver.maximum()).map_err(|source| {
                    ResolveError::Policy {
                        function: step.function.clone(),
                        source,
                    }
                })?;
            let granted = resolver.read_only_dirs(&step.function);
            policy.limits.read_only_dirs = if granted.is_empty() {
                served.read_only_dirs
            } else {
                granted.to_vec()
            };
            let identity = identity_with(&served.module.digest, &policy.limits.read_only_dirs);
            functions.insert(
                step.function.clone(),
                Resolved {
                    module: served.module,
                    policy,
                    identity,
                },
            );
        }
        let mut granted_steps = BTreeMap::new();
        for step in steps {
            let dirs = resolver.step_read_only_dirs(&step.name);
            let Some(resolved) = functions.get(&step.function).filter(|_| !dirs.is_empty()) else {
                continue;
            };
            granted_steps.insert(
                step.name.clone(),
                StepGrant {
                    read_only_dirs: dirs.to_vec(),
                    identity: identity_with(&resolved.identity, dirs),
                },
            );
        }
        Ok(ResolvedFunctions {
            runtime: resolver.runtime().clone(),
            functions,
            steps: granted_steps,
        })
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

    /// The digest of the module each function runs, by function.
    pub fn digests(&self) -> BTreeMap<&str, &str> {
        self.functions
            .iter()
            .map(|(name, r)| (name.as_str(), r.module.digest.as_str()))
            .collect()
    }
}

/// One reconcile's calls of a pipeline's resolved functions, with one
/// deadline for them all.
pub struct PipelineFunctions {
    functions: Arc<ResolvedFunctions>,
    deadline: Instant,
    observer: Arc<dyn CallObserver>,
    /// The shared call slots, and the tenant these calls are counted against.
    share: Option<Sharing>,
    /// Earlier responses, and the XR these calls are made for.
    cache: Option<(Arc<ResponseCache>, CacheScope)>,
    /// The pipeline's last step: after it no call follows, so its slot is not kept.
    last_step: Option<String>,
    /// The slot the previous call left, kept for the next step.
    parked: Mutex<Option<Parked>>,
    /// Whether a call has been made: later calls continue the pipeline.
    called: AtomicBool,
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
        let functions = ResolvedFunctions::resolve(resolver, objects, steps)?;
        Ok(PipelineFunctions::new(Arc::new(functions), timeout))
    }

    /// Calls `functions`; every call must end within `timeout` from now.
    pub fn new(functions: Arc<ResolvedFunctions>, timeout: Duration) -> PipelineFunctions {
        PipelineFunctions {
            functions,
            deadline: Instant::now() + timeout,
            observer: Arc::new(Unobserved),
            share: None,
            cache: None,
            last_step: None,
            parked: Mutex::new(None),
            called: AtomicBool::new(false),
        }
    }

    /// Reports every call to `observer`.
    pub fn observed_by(mut self, observer: Arc<dyn CallObserver>) -> PipelineFunctions {
        self.observer = observer;
        self
    }

    /// Runs every call in a slot of `share`, counted against `tenant`.
    pub fn sharing(mut self, share: Arc<FairShare>, tenant: Tenant) -> PipelineFunctions {
        self.share = Some(Sharing {
            share,
            tenant,
            notice: None,
        });
        self
    }

    /// Tells `notice` whenever a call waits for a slot of the share, and when it stops.
    pub fn noticing(mut self, notice: Arc<dyn WaitNotice>) -> PipelineFunctions {
        if let Some(sharing) = &mut self.share {
            sharing.notice = Some(notice);
        }
        self
    }

    /// The pipeline's steps end with `step`: the slot of every other
    /// step's call is kept for the next step for [`STEP_GRACE`].
    pub fn ending_with(mut self, step: impl Into<String>) -> PipelineFunctions {
        self.last_step = Some(step.into());
        self
    }

    fn is_last(&self, step: &str) -> bool {
        self.last_step.as_deref() == Some(step)
    }

    /// The slot the previous step left, if it is still kept.
    fn take_parked(&self) -> Option<Parked> {
        self.parked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Answers a call from `cache` when an earlier call for the same XR
    /// (`scope`) and step had the same request tag and its TTL lasts, and
    /// keeps the responses of calls made.
    pub fn cached(mut self, cache: Arc<ResponseCache>, scope: CacheScope) -> PipelineFunctions {
        self.cache = Some((cache, scope));
        self
    }

    /// What these functions may read beyond a tenant's namespace: `defaults`
    /// for all, and what each Function grants itself.
    pub fn read_grants(&self, defaults: ReadGrants) -> ReadGrants {
        self.functions.read_grants(defaults)
    }

    fn call(&self, step: &str, function: &str, request: &Request) -> Result<Response, RunnerError> {
        let resolved = self
            .functions
            .functions
            .get(function)
            .ok_or_else(|| format!("function {function:?} is not resolved"))?;
        let turn = match &self.share {
            Some(sharing) => match self.take_parked().and_then(Parked::resume) {
                Some(turn) => Some(turn),
                None => {
                    let rank = if self.called.load(Ordering::Relaxed) {
                        Rank::Continuing
                    } else {
                        Rank::First
                    };
                    Some(sharing.share.turn_ranked(
                        &sharing.tenant,
                        self.deadline,
                        rank,
                        sharing.notice.as_deref(),
                    )?)
                }
            },
            None => None,
        };
        self.called.store(true, Ordering::Relaxed);
        let remaining = self.deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(
                "the time allowed for the whole pipeline ran out before this step could run".into(),
            );
        }
        let mut limits = CallLimits {
            deadline: resolved.policy.limits.deadline.min(remaining),
            ..resolved.policy.limits.clone()
        };
        if let Some(grant) = self.functions.steps.get(step) {
            limits
                .read_only_dirs
                .extend(grant.read_only_dirs.iter().cloned());
        }
        let running = match (turn, &self.share) {
            (Some(turn), Some(sharing)) => Some(Arc::new(RunningTurn {
                turn: Mutex::new(Some(turn)),
                deadline: self.deadline,
                notice: sharing.notice.clone(),
            })),
            _ => None,
        };
        let called = self.functions.runtime.call_pausable(
            &resolved.module,
            request,
            &limits,
            running.clone().map(|r| r as Arc<dyn Checkpoint>),
        );
        let turn = running.and_then(|running| running.take());
        if let Some(sharing) = &self.share {
            let reached_deadline = matches!(&called, Err(e) if e.kind() == "deadline");
            if let Some(throttle) = sharing.share.record(&sharing.tenant, reached_deadline) {
                self.observer.throttled(function, throttle);
            }
        }
        if let Some(turn) = turn
            && !self.is_last(step)
        {
            *self.parked.lock().unwrap_or_else(PoisonError::into_inner) =
                Some(turn.park(STEP_GRACE));
        }
        let output = called.inspect_err(|e| self.observer.failed(function, e.kind()))?;
        self.observer.called(function, output.duration);
        // A function's lines at their own level: what a render or the
        // controller shows by default is what the function logs at info and
        // above, its debug lines when asked for (PLAIT_LOG=debug).
        for line in &output.logs {
            let message = &line.message;
            match line.level {
                LogLevel::Trace => tracing::trace!(function, "{message}"),
                LogLevel::Debug => tracing::debug!(function, "{message}"),
                LogLevel::Info => tracing::info!(function, "{message}"),
                LogLevel::Warn => tracing::warn!(function, "{message}"),
                LogLevel::Error => tracing::error!(function, "{message}"),
            }
        }
        Ok(output.response)
    }
}

impl FunctionRunner for PipelineFunctions {
    fn run(&self, step: &str, function: &str, request: &Request) -> Result<Response, RunnerError> {
        let (Some((cache, scope)), Some(resolved)) =
            (&self.cache, self.functions.functions.get(function))
        else {
            return self.call(step, function, request);
        };
        let identity = match self.functions.steps.get(step) {
            Some(grant) => &grant.identity,
            None => &resolved.identity,
        };
        let call = Call {
            step,
            function,
            module: identity,
            tag: &request.tag,
            deterministic: Builtin::from_digest(&resolved.module.digest)
                .is_some_and(Builtin::reads_only_its_request),
        };
        if let Some(response) = cache.lookup(scope, &call) {
            self.observer.cache_hit(function);
            if self.is_last(step) {
                drop(self.take_parked());
            }
            return Ok(response);
        }
        self.observer.cache_missed(function);
        let response = self.call(step, function, request)?;
        for evicted in cache.store(scope, &call, &response) {
            self.observer
                .cache_evicted(&evicted.tenant, &evicted.function);
        }
        Ok(response)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use plait_runtime::{ReadOnlyDir, RuntimeConfig};
    use serde_json::json;

    use super::*;
    use crate::{FUNCTION_API_VERSION, FUNCTION_KIND, GivenFunctions};

    /// Serves the built-in auto-ready with the directories it is given,
    /// as a project build is served with its source.
    struct WithDirs {
        runtime: Runtime,
        dirs: Vec<ReadOnlyDir>,
    }

    impl crate::PackageSource for WithDirs {
        fn module(&self, _: &str, _: &serde_json::Value) -> Result<crate::Served, ResolveError> {
            Ok(crate::Served {
                module: self.runtime.builtin(Builtin::AutoReady).unwrap(),
                read_only_dirs: self.dirs.clone(),
            })
        }

        fn pinned(&self, function: &str, _: &crate::Pin) -> Result<crate::Served, ResolveError> {
            self.module(function, &json!({}))
        }
    }

    #[test]
    fn a_packages_directories_are_granted_unless_the_host_grants_the_function_its_own() {
        let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
        let dir = |host: &str| ReadOnlyDir {
            host: host.into(),
            guest: "/src".into(),
        };
        let objects = GivenFunctions(BTreeMap::from([(
            "built".to_string(),
            json!({"apiVersion": FUNCTION_API_VERSION, "kind": FUNCTION_KIND,
                   "metadata": {"name": "built"}, "spec": {"package": "r.io/acme/built:v1"}}),
        )]));
        let steps = [Step {
            name: "compose".into(),
            function: "built".into(),
            ..Step::default()
        }];
        let served = |host: &str| {
            Resolver::builtins(runtime.clone()).with_packages(Arc::new(WithDirs {
                runtime: runtime.clone(),
                dirs: vec![dir(host)],
            }))
        };
        // (resolver, the directories the calls get)
        let cases = [
            (
                served("/cache/sources/a/src"),
                vec![dir("/cache/sources/a/src")],
            ),
            (
                served("/cache/sources/b/src"),
                vec![dir("/cache/sources/b/src")],
            ),
            (
                served("/cache/sources/a/src").with_read_only_dirs("built", vec![dir("/staged")]),
                vec![dir("/staged")],
            ),
        ];
        let mut identities = Vec::new();
        for (i, (resolver, dirs)) in cases.into_iter().enumerate() {
            let resolved = ResolvedFunctions::resolve(&resolver, &objects, &steps).unwrap();
            let built = &resolved.functions["built"];
            assert_eq!(built.policy.limits.read_only_dirs, dirs, "case {i}");
            identities.push(built.identity.clone());
        }
        // One module, three sources: no response is shared between them.
        identities.sort();
        identities.dedup();
        assert_eq!(identities.len(), 3, "{identities:?}");
    }

    #[test]
    fn a_steps_own_directories_are_added_to_its_functions_and_keep_its_responses_apart() {
        let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
        let dir = |host: &str, guest: &str| ReadOnlyDir {
            host: host.into(),
            guest: guest.into(),
        };
        let step = |name: &str| Step {
            name: name.into(),
            function: "function-kcl".into(),
            ..Step::default()
        };
        let steps = [step("network"), step("database"), step("inline")];
        let resolver = Resolver::builtins(runtime)
            .with_read_only_dirs("function-kcl", vec![dir("/shared", "/shared")])
            .with_step_read_only_dirs("network", vec![dir("/cache/kcl-modules/a", "/kcl/source")])
            .with_step_read_only_dirs("database", vec![dir("/cache/kcl-modules/b", "/kcl/source")])
            .with_step_read_only_dirs(
                "elsewhere",
                vec![dir("/cache/kcl-modules/c", "/kcl/source")],
            );
        let resolved =
            ResolvedFunctions::resolve(&resolver, &GivenFunctions::default(), &steps).unwrap();
        let function = &resolved.functions["function-kcl"];
        assert_eq!(
            function.policy.limits.read_only_dirs,
            [dir("/shared", "/shared")]
        );
        assert_eq!(
            resolved.steps.keys().collect::<Vec<_>>(),
            ["database", "network"],
            "only the pipeline's steps with directories of their own"
        );
        let network = &resolved.steps["network"];
        assert_eq!(
            network.read_only_dirs,
            [dir("/cache/kcl-modules/a", "/kcl/source")]
        );
        let identities = [
            function.identity.as_str(),
            network.identity.as_str(),
            resolved.steps["database"].identity.as_str(),
        ];
        assert!(
            identities[1].starts_with(identities[0]) && identities[1] != identities[2],
            "{identities:?}"
        );
    }

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
            functions.functions.functions["ready-a"]
                .policy
                .limits
                .deadline,
            Duration::from_secs(2)
        );
        assert_eq!(
            functions.functions.functions["ready-b"].policy.limits,
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

    /// A go-templating step reading its templates from `/templates`, whose
    /// Function carries render's filesystem annotation: only a grant on the
    /// resolver lets it read them (the controller's resolver has none), and
    /// not a directory in the maximum either.
    #[test]
    fn a_function_reads_only_the_directories_the_host_grants_it_by_name() {
        let scratch = tempfile::tempdir().unwrap();
        let templates = scratch.path().join("templates");
        std::fs::create_dir_all(&templates).unwrap();
        std::fs::write(
            templates.join("one.tmpl"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations:\n    gotemplating.fn.crossplane.io/composition-resource-name: read\n",
        )
        .unwrap();
        let grant = vec![ReadOnlyDir {
            host: templates.clone(),
            guest: "/templates".into(),
        }];
        let objects = GivenFunctions(BTreeMap::from([(
            "templating".to_string(),
            json!({"apiVersion": FUNCTION_API_VERSION, "kind": FUNCTION_KIND,
                   "metadata": {"name": "templating", "annotations": {
                       "render.plait.dev/filesystem": format!("{}=/templates", templates.display())}},
                   "spec": {"package": "xpkg.crossplane.io/crossplane-contrib/function-go-templating:v0.12.2"}}),
        )]));
        let steps = [Step {
            name: "render".into(),
            function: "templating".into(),
            ..Step::default()
        }];
        let request = Request {
            input: Some(json!({
                "apiVersion": "gotemplating.fn.crossplane.io/v1beta1",
                "kind": "GoTemplate",
                "source": "FileSystem",
                "fileSystem": {"dirPath": "/templates"},
            })),
            ..Request::default()
        };
        let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
        let granting_maximum = CallLimits {
            read_only_dirs: grant.clone(),
            ..CallLimits::default()
        };
        // (resolver, the directories its calls get, what the step makes or says)
        let cases = [
            (
                Resolver::builtins(runtime.clone()),
                Vec::new(),
                Err("cannot read tmpl from the folder {/templates}: open /templates"),
            ),
            (
                Resolver::builtins(runtime.clone()).with_maximum(granting_maximum),
                Vec::new(),
                Err("cannot read tmpl from the folder {/templates}: open /templates"),
            ),
            (
                Resolver::builtins(runtime.clone())
                    .with_read_only_dirs("templating", grant.clone()),
                grant.clone(),
                Ok("read"),
            ),
            (
                Resolver::builtins(runtime.clone()).with_read_only_dirs("other", grant.clone()),
                Vec::new(),
                Err("cannot read tmpl from the folder {/templates}: open /templates"),
            ),
        ];
        for (i, (resolver, dirs, want)) in cases.into_iter().enumerate() {
            let functions =
                PipelineFunctions::resolve(&resolver, &objects, &steps, Duration::from_secs(60))
                    .unwrap();
            assert_eq!(
                functions.functions.functions["templating"]
                    .policy
                    .limits
                    .read_only_dirs,
                dirs,
                "case {i}"
            );
            let response = functions.run("render", "templating", &request).unwrap();
            let fatal = response
                .results
                .iter()
                .find(|r| r.severity == plait_sdk::Severity::Fatal)
                .map(|r| r.message.as_str());
            match want {
                Ok(resource) => {
                    assert_eq!(fatal, None, "case {i}");
                    assert!(
                        response.desired.resources.contains_key(resource),
                        "case {i}"
                    );
                }
                Err(message) => {
                    let fatal = fatal.unwrap_or_default();
                    assert!(fatal.contains(message), "case {i}: {fatal}");
                }
            }
        }
    }

    /// Counts what the cache reports.
    #[derive(Default)]
    struct Counted(std::sync::Mutex<Vec<String>>);

    impl CallObserver for Counted {
        fn called(&self, function: &str, _: Duration) {
            self.0.lock().unwrap().push(format!("called {function}"));
        }
        fn failed(&self, function: &str, kind: &str) {
            self.0
                .lock()
                .unwrap()
                .push(format!("failed {function} {kind}"));
        }
        fn cache_hit(&self, function: &str) {
            self.0.lock().unwrap().push(format!("hit {function}"));
        }
        fn cache_missed(&self, function: &str) {
            self.0.lock().unwrap().push(format!("miss {function}"));
        }
    }

    #[test]
    fn a_repeated_request_is_answered_from_the_cache_only_when_it_is_on() {
        let resolver = Resolver::builtins(Runtime::new(RuntimeConfig::default()).unwrap());
        let steps = [Step {
            name: "ready".into(),
            function: "function-auto-ready".into(),
            ..Step::default()
        }];
        let resolved = Arc::new(
            ResolvedFunctions::resolve(&resolver, &GivenFunctions::default(), &steps).unwrap(),
        );
        let request = |tag: &str| Request {
            tag: tag.into(),
            ..Request::default()
        };
        let cache = Arc::new(ResponseCache::new(crate::CacheLimits::default()));
        let scope = CacheScope {
            xr: "example.org/v1/App team-a/app uid-1".into(),
            tenant: Tenant::Namespace("team-a".into()),
        };
        // (cache on, tags of the calls, what the observer hears)
        let cases: [(bool, &[&str], &[&str]); 3] = [
            (
                true,
                &["t1", "t1"],
                &[
                    "miss function-auto-ready",
                    "called function-auto-ready",
                    "hit function-auto-ready",
                ],
            ),
            (
                true,
                &["t2", "t3"],
                &[
                    "miss function-auto-ready",
                    "called function-auto-ready",
                    "miss function-auto-ready",
                    "called function-auto-ready",
                ],
            ),
            (
                false,
                &["t4", "t4"],
                &["called function-auto-ready", "called function-auto-ready"],
            ),
        ];
        for (on, tags, want) in cases {
            let observer = Arc::new(Counted::default());
            let mut functions = PipelineFunctions::new(resolved.clone(), Duration::from_secs(60))
                .observed_by(observer.clone());
            if on {
                functions = functions.cached(cache.clone(), scope.clone());
            }
            let calls_before = resolver.runtime().stats().calls;
            let mut responses = Vec::new();
            for tag in tags {
                responses.push(
                    functions
                        .run("ready", "function-auto-ready", &request(tag))
                        .unwrap(),
                );
            }
            assert_eq!(*observer.0.lock().unwrap(), want, "{tags:?} cache on: {on}");
            let called = want.iter().filter(|w| w.starts_with("called")).count() as u64;
            assert_eq!(resolver.runtime().stats().calls - calls_before, called);
            if tags[0] == tags[1] {
                assert_eq!(
                    responses[0], responses[1],
                    "a cached response is the response the call made"
                );
            }
        }
    }
}
