//! The rule that maps a function name to a compiled module.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::pins::{Pin, PinError, PinnedSource, package_of};
use crate::policy::PolicyError;
use plait_reconcile::{Cluster, ObjectRef};
use plait_runtime::{Builtin, CallLimits, Module, ReadOnlyDir, Runtime, RuntimeError};
use serde_json::Value;

pub const FUNCTION_API_VERSION: &str = "pkg.crossplane.io/v1";
pub const FUNCTION_KIND: &str = "Function";

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error(
        "function {function:?}: package {package:?} is not built in, and this controller cannot fetch packages"
    )]
    NotBuiltIn { function: String, package: String },
    #[error(
        "function {function:?} is neither {looked_in} nor built in ({})",
        Builtin::ALL.map(Builtin::name).join(", ")
    )]
    Unknown { function: String, looked_in: String },
    #[error("Function {function:?} is not healthy ({reason}): {message}")]
    Unhealthy {
        function: String,
        reason: String,
        message: String,
    },
    #[error("Function {function:?}: package {package:?} is not installed yet")]
    NotInstalled { function: String, package: String },
    #[error("function {function:?}: cannot read its Function: {message}")]
    Lookup { function: String, message: String },
    #[error("Function {function:?}: {message}")]
    Package {
        function: String,
        message: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("Function {function:?}: {source}")]
    Policy {
        function: String,
        #[source]
        source: PolicyError,
    },
    #[error(
        "Function {function:?}: {pinned}, which the CompositionRevision records, is not loaded yet (the Function controller loads the digests revisions record)"
    )]
    PinNotLoaded { function: String, pinned: String },
    #[error("function {function:?}: {source}")]
    Pin {
        function: String,
        #[source]
        source: PinError,
    },
    #[error("function {function:?}: {source}")]
    Runtime {
        function: String,
        #[source]
        source: RuntimeError,
    },
}

/// Where Function objects are looked up by name.
pub trait FunctionObjects {
    /// The Function named `function`, if there is one.
    fn function(&self, function: &str) -> Result<Option<Value>, ResolveError>;

    /// Where the lookup looked, for the error that names an unknown function.
    fn looked_in(&self) -> String;
}

/// The Function objects of a cluster.
pub struct ClusterFunctions<'a>(pub &'a dyn Cluster);

impl FunctionObjects for ClusterFunctions<'_> {
    fn function(&self, function: &str) -> Result<Option<Value>, ResolveError> {
        self.0
            .get(&ObjectRef {
                api_version: FUNCTION_API_VERSION.into(),
                kind: FUNCTION_KIND.into(),
                namespace: None,
                name: function.into(),
            })
            .map_err(|e| ResolveError::Lookup {
                function: function.into(),
                message: e.to_string(),
            })
    }

    fn looked_in(&self) -> String {
        "a Function in the cluster".into()
    }
}

/// Function objects given by name, as `plait render` reads them from files.
#[derive(Debug, Default, Clone)]
pub struct GivenFunctions(pub BTreeMap<String, Value>);

impl FunctionObjects for GivenFunctions {
    fn function(&self, function: &str) -> Result<Option<Value>, ResolveError> {
        Ok(self.0.get(function).cloned())
    }

    fn looked_in(&self) -> String {
        let names: Vec<&str> = self.0.keys().map(String::as_str).collect();
        format!(
            "among the Functions given ({})",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )
    }
}

/// The module a function runs, and the directories its calls may read: a
/// project build runs the built-in function-kcl with its KCL source
/// granted at `/src`; every other module reads none.
#[derive(Clone)]
pub struct Served {
    pub module: Arc<Module>,
    pub read_only_dirs: Vec<ReadOnlyDir>,
}

impl From<Arc<Module>> for Served {
    fn from(module: Arc<Module>) -> Served {
        Served {
            module,
            read_only_dirs: Vec::new(),
        }
    }
}

/// Serves the Functions whose packages are not built into plait.
pub trait PackageSource: Send + Sync {
    /// The module for `object`, the Function named `function`.
    fn module(&self, function: &str, object: &Value) -> Result<Served, ResolveError>;

    /// The module of the package `pin` records for `function`, whatever
    /// its Function resolves to now.
    fn pinned(&self, function: &str, pin: &Pin) -> Result<Served, ResolveError>;
}

/// Maps function names to compiled modules, by one rule for render and the
/// controller: a local component the host was given for the name (render's
/// `render.plait.dev/module`), else the Function object's package (a
/// built-in when it is upstream's package of one, else from the
/// [`PackageSource`]), else, with no Function object, the built-in of that name.
/// Its calls read the directories the host granted a function by name
/// (render's `render.plait.dev/filesystem` and project functions), else
/// those its package comes with (a project build's source), else none.
#[derive(Clone)]
pub struct Resolver {
    runtime: Runtime,
    local: BTreeMap<String, Arc<Module>>,
    read_only_dirs: BTreeMap<String, Vec<ReadOnlyDir>>,
    /// Directories granted to one step's calls besides its function's:
    /// the KCL modules the host fetched for a function-kcl step.
    step_read_only_dirs: BTreeMap<String, Vec<ReadOnlyDir>>,
    packages: Option<Arc<dyn PackageSource>>,
    /// The most any call may have; a Function's annotations only tighten it.
    maximum: CallLimits,
}

impl Resolver {
    /// Resolves to plait's built-ins only.
    pub fn builtins(runtime: Runtime) -> Resolver {
        Resolver {
            runtime,
            local: BTreeMap::new(),
            read_only_dirs: BTreeMap::new(),
            step_read_only_dirs: BTreeMap::new(),
            packages: None,
            maximum: CallLimits::default(),
        }
    }

    /// Every call gets at most `maximum`, and that where its Function sets no limit.
    pub fn with_maximum(mut self, maximum: CallLimits) -> Resolver {
        self.maximum = maximum;
        self
    }

    /// The most any call may have.
    pub fn maximum(&self) -> &CallLimits {
        &self.maximum
    }

    /// Serves Functions with other packages from `packages`.
    pub fn with_packages(mut self, packages: Arc<dyn PackageSource>) -> Resolver {
        self.packages = Some(packages);
        self
    }

    /// Runs `module` for `function`, whatever its Function object says.
    pub fn with_local(mut self, function: impl Into<String>, module: Arc<Module>) -> Resolver {
        self.local.insert(function.into(), module);
        self
    }

    /// Lets every call of `function` read `dirs`, whatever its Function
    /// object says.
    pub fn with_read_only_dirs(
        mut self,
        function: impl Into<String>,
        dirs: Vec<ReadOnlyDir>,
    ) -> Resolver {
        self.read_only_dirs.insert(function.into(), dirs);
        self
    }

    /// The directories the host granted the calls of `function` by name.
    pub fn read_only_dirs(&self, function: &str) -> &[ReadOnlyDir] {
        self.read_only_dirs
            .get(function)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// Lets the calls of the pipeline step `step` read `dirs` besides what
    /// its function reads (a resolver serves one pipeline's steps).
    pub fn with_step_read_only_dirs(
        mut self,
        step: impl Into<String>,
        dirs: Vec<ReadOnlyDir>,
    ) -> Resolver {
        self.step_read_only_dirs.insert(step.into(), dirs);
        self
    }

    /// The directories the host granted the calls of the step `step`.
    pub fn step_read_only_dirs(&self, step: &str) -> &[ReadOnlyDir] {
        self.step_read_only_dirs
            .get(step)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The runtime modules are loaded into and called on.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// The module that runs `function` (a step's `functionRef.name`).
    pub fn resolve(
        &self,
        function: &str,
        objects: &dyn FunctionObjects,
    ) -> Result<Served, ResolveError> {
        let object = objects.function(function)?;
        self.module(function, object.as_ref(), objects, None)
    }

    /// The module for `function`, whose Function object (if any) is
    /// `object`: the one `pin` records while the Function exists, else the
    /// one the Function resolves to now. A deleted Function runs nothing,
    /// pinned or not (unless its name is a built-in's).
    pub(crate) fn module(
        &self,
        function: &str,
        object: Option<&Value>,
        objects: &dyn FunctionObjects,
        pin: Option<&Pin>,
    ) -> Result<Served, ResolveError> {
        if let Some(module) = self.local.get(function) {
            return Ok(module.clone().into());
        }
        if let (Some(pin), Some(object)) = (pin, object) {
            return match &pin.source {
                PinnedSource::Builtin(builtin) => self.builtin(function, *builtin),
                PinnedSource::Package { .. } => match &self.packages {
                    Some(packages) => packages.pinned(function, pin),
                    None => Err(ResolveError::NotBuiltIn {
                        function: function.into(),
                        package: package_of(object).into(),
                    }),
                },
            };
        }
        let Some(object) = object else {
            let builtin = Builtin::from_name(function).ok_or_else(|| ResolveError::Unknown {
                function: function.into(),
                looked_in: objects.looked_in(),
            })?;
            return self.builtin(function, builtin);
        };
        let package = package_of(object);
        if let Some(builtin) = Builtin::from_package(package) {
            return self.builtin(function, builtin);
        }
        match &self.packages {
            Some(packages) => packages.module(function, object),
            None => Err(ResolveError::NotBuiltIn {
                function: function.into(),
                package: package.into(),
            }),
        }
    }

    fn builtin(&self, function: &str, builtin: Builtin) -> Result<Served, ResolveError> {
        self.runtime
            .builtin(builtin)
            .map(Served::from)
            .map_err(|source| ResolveError::Runtime {
                function: function.into(),
                source,
            })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Mutex;

    use plait_runtime::RuntimeConfig;
    use serde_json::json;

    use super::*;

    /// Records which Functions it was asked for and serves the built-in
    /// auto-ready module for each, so a test can tell it was consulted.
    struct Recording {
        runtime: Runtime,
        asked: Mutex<Vec<String>>,
    }

    impl PackageSource for Recording {
        fn module(&self, function: &str, _: &Value) -> Result<Served, ResolveError> {
            self.asked.lock().unwrap().push(function.into());
            Ok(self.runtime.builtin(Builtin::AutoReady).unwrap().into())
        }

        fn pinned(&self, function: &str, pin: &Pin) -> Result<Served, ResolveError> {
            self.asked
                .lock()
                .unwrap()
                .push(format!("{function}@{}", pin.digest));
            Ok(self
                .runtime
                .builtin(Builtin::PatchAndTransform)
                .unwrap()
                .into())
        }
    }

    fn function(name: &str, package: &str) -> (String, Value) {
        (
            name.to_string(),
            json!({"apiVersion": FUNCTION_API_VERSION, "kind": FUNCTION_KIND,
                   "metadata": {"name": name}, "spec": {"package": package}}),
        )
    }

    #[test]
    fn each_function_resolves_by_the_shared_rule() {
        let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
        let pt = runtime.builtin(Builtin::PatchAndTransform).unwrap();
        let ready = runtime.builtin(Builtin::AutoReady).unwrap();
        let objects = GivenFunctions(BTreeMap::from([
            function(
                "renamed-pt",
                "xpkg.crossplane.io/crossplane-contrib/function-patch-and-transform:v0.8.2",
            ),
            function("custom", "registry.example.com/fns/custom:v1"),
        ]));
        // (function, with a package source, Ok(module) or the error's start)
        type Want<'a> = Result<&'a Arc<Module>, &'a str>;
        let cases: [(&str, bool, Want); 6] = [
            ("renamed-pt", false, Ok(&pt)),
            ("function-auto-ready", false, Ok(&ready)),
            ("custom", true, Ok(&ready)),
            (
                "custom",
                false,
                Err(
                    "function \"custom\": package \"registry.example.com/fns/custom:v1\" is not built in",
                ),
            ),
            (
                "missing",
                false,
                Err(
                    "function \"missing\" is neither among the Functions given (custom, renamed-pt) nor built in",
                ),
            ),
            ("function-patch-and-transform", true, Ok(&pt)),
        ];
        for (name, with_packages, want) in cases {
            let source = Arc::new(Recording {
                runtime: runtime.clone(),
                asked: Mutex::new(Vec::new()),
            });
            let mut resolver = Resolver::builtins(runtime.clone());
            if with_packages {
                resolver = resolver.with_packages(source.clone());
            }
            let got = resolver.resolve(name, &objects);
            match want {
                Ok(module) => assert!(Arc::ptr_eq(&got.unwrap().module, module), "{name}"),
                Err(start) => {
                    let message = got.err().map(|e| e.to_string()).unwrap_or_default();
                    assert!(message.starts_with(start), "{name}: {message}");
                }
            }
            let asked = source.asked.lock().unwrap().clone();
            let want_asked = if name == "custom" && with_packages {
                vec!["custom".to_string()]
            } else {
                Vec::new()
            };
            assert_eq!(asked, want_asked, "{name}: package source consulted");
        }
    }

    #[test]
    fn a_pin_wins_over_what_the_function_resolves_to_while_the_function_exists() {
        let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
        let pt = runtime.builtin(Builtin::PatchAndTransform).unwrap();
        let ready = runtime.builtin(Builtin::AutoReady).unwrap();
        let source = Arc::new(Recording {
            runtime: runtime.clone(),
            asked: Mutex::new(Vec::new()),
        });
        let resolver = Resolver::builtins(runtime).with_packages(source.clone());
        let objects = GivenFunctions(BTreeMap::from([function(
            "custom",
            "registry.example.com/fns/custom:v2",
        )]));
        let package_pin = Pin {
            function: "custom".into(),
            digest: "sha256:old".into(),
            source: PinnedSource::Package {
                pinned: "registry.example.com/fns/custom@sha256:old".into(),
            },
        };
        let builtin_pin = crate::pins::current_pin("function-auto-ready", None).unwrap();
        let object = objects.function("custom").unwrap();
        let got = resolver
            .module("custom", object.as_ref(), &objects, Some(&package_pin))
            .unwrap()
            .module;
        assert!(Arc::ptr_eq(&got, &pt), "the pinned package, not today's");
        let got = resolver
            .module("custom", object.as_ref(), &objects, Some(&builtin_pin))
            .unwrap()
            .module;
        assert!(Arc::ptr_eq(&got, &ready), "a pinned built-in");
        assert_eq!(
            source.asked.lock().unwrap().clone(),
            ["custom@sha256:old"],
            "a built-in pin asks no package source"
        );
        let gone = resolver
            .module("custom", None, &objects, Some(&package_pin))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            gone.starts_with("function \"custom\" is neither"),
            "a deleted Function runs nothing: {gone}"
        );
    }

    #[test]
    fn a_local_component_wins_over_the_function_object() {
        let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
        let ready = runtime.builtin(Builtin::AutoReady).unwrap();
        let objects = GivenFunctions(BTreeMap::from([function(
            "function-patch-and-transform",
            "xpkg.crossplane.io/crossplane-contrib/function-patch-and-transform:v0.8.2",
        )]));
        let resolver =
            Resolver::builtins(runtime).with_local("function-patch-and-transform", ready.clone());
        let got = resolver
            .resolve("function-patch-and-transform", &objects)
            .unwrap()
            .module;
        assert!(Arc::ptr_eq(&got, &ready));
    }
}
