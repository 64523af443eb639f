//! What XR reconciles compose from, read from watch-fed stores and
//! compiled once per CompositionRevision.
//!
//! The [`Catalog`] keeps Compositions, CompositionRevisions and Functions in
//! kube-runtime reflector stores (the Function controller's own store is
//! shared, not duplicated), so selecting a revision and resolving its
//! functions asks nothing of the API server. A revision becomes, once, a
//! [`CompiledPipeline`]: its spec validated and converted to steps, and
//! each function it names resolved to a loaded module with its Function's
//! policy. Every XR of the revision shares it through an `Arc` until the
//! revision changes, or until a Function it uses changes what it resolves
//! to; a Function change rebuilds only the pipelines that name it. A step
//! whose function the revision records (`functions.plait.dev/digests`)
//! runs the recorded digest, not the one its Function resolves to now.
//! Directories a revision's steps read of their own (the KCL modules its
//! function-kcl steps name) are fetched by a [`StepDirectories`] once per
//! revision, resolving tags to digests then, and reused by every later
//! compile of it.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use futures::channel::mpsc::UnboundedReceiver;
use futures::future::{BoxFuture, Shared};
use kube::Client;
use kube::api::DynamicObject;
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::{ObjectRef as StoreRef, Store};
use plait_functions::{FunctionObjects, Pins, ResolveError, ResolvedFunctions, Resolver};
use plait_model::{Composition, Manifest};
use plait_pipeline::Step;
use plait_reconcile::{ObjectRef, PrepareError};
use plait_runtime::ReadOnlyDir;
use serde_json::{Value, json};

use crate::stores::reflect::{listed, listed_once, reflect};
use crate::vocabulary::api::{
    COMPOSITION_API_VERSION, COMPOSITION_KIND, composition_resource, function_resource,
    revision_resource,
};
use crate::vocabulary::broadcast::Broadcast;
use crate::vocabulary::object::condition;

/// How many compiled pipelines are kept when no more specific bound is given.
pub const DEFAULT_CAPACITY: usize = 256;

#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    #[error("CompositionRevision {revision:?} is invalid: {source}")]
    Invalid {
        revision: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("CompositionRevision {revision:?}: {source}")]
    Prepare {
        revision: String,
        #[source]
        source: PrepareError,
    },
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error("CompositionRevision {revision:?}: {source}")]
    StepDirectories {
        revision: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("CompositionRevision {revision:?}: compiling its pipeline did not finish: {source}")]
    Join {
        revision: String,
        #[source]
        source: tokio::task::JoinError,
    },
}

/// The directories steps read of their own, by step name.
pub type StepDirs = BTreeMap<String, Vec<ReadOnlyDir>>;

/// Fetches what a revision's steps read of their own; called on a
/// blocking thread, once per revision.
pub trait StepDirectories: Send + Sync {
    /// The directories of `steps` (revision `revision`'s); an error names
    /// the step and what could not be fetched.
    fn fetch(
        &self,
        revision: &str,
        steps: &[Step],
    ) -> Result<StepDirs, Box<dyn std::error::Error + Send + Sync>>;
}

/// A revision's pipeline, ready to run for any XR of its kind.
pub struct CompiledPipeline {
    /// The revision's Composition (what `connection` publishing reads).
    pub composition: Composition,
    pub steps: Vec<Step>,
    pub functions: Arc<ResolvedFunctions>,
}

/// Function objects as the Function store holds them.
pub struct StoredFunctions<'a>(pub &'a Store<DynamicObject>);

impl StoredFunctions<'_> {
    fn object(&self, function: &str) -> Option<Value> {
        let found = self
            .0
            .get(&StoreRef::new_with(function, function_resource()))?;
        let mut value = serde_json::to_value(found.as_ref()).ok()?;
        let resource = function_resource();
        value["apiVersion"] = json!(resource.api_version);
        value["kind"] = json!(resource.kind);
        Some(value)
    }

    /// What, of a Function, decides what its name resolves to: its
    /// generation (the package), its annotations (its policy), and the
    /// digest and health its controller reported. `None` for no Function.
    fn fingerprint(&self, function: &str) -> Option<String> {
        let object = self
            .0
            .get(&StoreRef::new_with(function, function_resource()))?;
        let status = object.data.get("status").cloned().unwrap_or(Value::Null);
        let healthy = condition(&json!({"status": status}), "Healthy")
            .map(|c| json!([c["status"], c["reason"], c["message"]]))
            .unwrap_or(Value::Null);
        Some(
            json!([
                object.metadata.generation,
                object.metadata.annotations,
                status.get("resolvedDigest"),
                healthy,
            ])
            .to_string(),
        )
    }
}

impl FunctionObjects for StoredFunctions<'_> {
    fn function(&self, function: &str) -> Result<Option<Value>, ResolveError> {
        Ok(self.object(function))
    }

    fn looked_in(&self) -> String {
        "a Function in the cluster".into()
    }
}

/// Which pipeline: the revision, compiled for an XR kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PipelineKey {
    revision: String,
    api_version: String,
    kind: String,
}

struct Compiled {
    /// The revision's uid and resourceVersion when it was compiled.
    version: String,
    /// Each function's fingerprint when it was resolved.
    functions: BTreeMap<String, Option<String>>,
    pipeline: Arc<CompiledPipeline>,
    used: u64,
}

#[derive(Default)]
struct Pipelines {
    by_key: HashMap<PipelineKey, Compiled>,
    uses: u64,
}

/// The stores XR reconciles read from, and the pipelines compiled from them.
pub struct Catalog {
    compositions: Store<DynamicObject>,
    revisions: Store<DynamicObject>,
    functions: Store<DynamicObject>,
    /// XR controllers told of every revision the store takes in.
    revisions_seen: Broadcast<Arc<DynamicObject>>,
    pipelines: Mutex<Pipelines>,
    /// Each revision's step directories, by name, with the uid they were
    /// fetched for.
    step_dirs: Mutex<HashMap<String, (String, Arc<StepDirs>)>>,
    capacity: usize,
    /// Whether every store has listed its kind once (false: the
    /// controller stopped first), for every reconcile that waits for it.
    listed: Shared<BoxFuture<'static, bool>>,
}

impl Catalog {
    /// A catalog over stores that nothing fills yet; `functions` is the
    /// Function store (filled by whoever runs its writer).
    fn new(
        compositions: Store<DynamicObject>,
        revisions: Store<DynamicObject>,
        functions: Store<DynamicObject>,
        capacity: usize,
    ) -> Catalog {
        let listed = listed_once(vec![
            compositions.clone(),
            revisions.clone(),
            functions.clone(),
        ]);
        Catalog {
            compositions,
            revisions,
            functions,
            revisions_seen: Broadcast::default(),
            pipelines: Mutex::new(Pipelines::default()),
            step_dirs: Mutex::new(HashMap::new()),
            capacity,
            listed,
        }
    }

    /// Watches Compositions and CompositionRevisions (and, given its writer,
    /// Functions) until `shutdown`, keeping at most `capacity` compiled
    /// pipelines; `functions` is the Function store.
    pub fn start(
        client: &Client,
        functions: Store<DynamicObject>,
        function_writer: Option<Writer<DynamicObject>>,
        capacity: usize,
        shutdown: impl Future<Output = ()> + Clone + Send + 'static,
    ) -> Arc<Catalog> {
        let compositions = Writer::new(composition_resource());
        let revisions = Writer::new(revision_resource());
        let catalog = Arc::new(Catalog::new(
            compositions.as_reader(),
            revisions.as_reader(),
            functions,
            capacity,
        ));
        tokio::spawn(
            reflect(client, composition_resource(), compositions)
                .take_until(shutdown.clone())
                .for_each(|_| futures::future::ready(())),
        );
        let told = catalog.clone();
        tokio::spawn(
            reflect(client, revision_resource(), revisions)
                .take_until(shutdown.clone())
                .for_each(move |revision| {
                    told.revisions_seen.send(&revision);
                    futures::future::ready(())
                }),
        );
        if let Some(writer) = function_writer {
            tokio::spawn(
                reflect(client, function_resource(), writer)
                    .take_until(shutdown)
                    .for_each(|_| futures::future::ready(())),
            );
        }
        catalog
    }

    /// Waits until every store has listed its kind once.
    pub async fn ready(&self) -> Result<(), plait_reconcile::ClusterError> {
        if self.listed.clone().await {
            Ok(())
        } else {
            Err(plait_reconcile::ClusterError::Other(
                "the controller is stopping".into(),
            ))
        }
    }

    /// Every revision the store takes in, after the store has it.
    pub fn subscribe_revisions(&self) -> UnboundedReceiver<Arc<DynamicObject>> {
        self.revisions_seen.subscribe()
    }

    /// Compositions whose labels include `labels`, as JSON.
    pub fn compositions(&self, labels: &BTreeMap<String, String>) -> Vec<Value> {
        listed(&self.compositions, &composition_resource(), labels)
    }

    /// The Composition named `name`, as JSON.
    pub fn composition(&self, name: &str) -> Option<Value> {
        let resource = composition_resource();
        let found = self
            .compositions
            .get(&StoreRef::new_with(name, resource.clone()))?;
        crate::vocabulary::object::to_value(&found, &resource).ok()
    }

    /// CompositionRevisions whose labels include `labels`, as JSON.
    pub fn revisions(&self, labels: &BTreeMap<String, String>) -> Vec<Value> {
        listed(&self.revisions, &revision_resource(), labels)
    }

    /// The CompositionRevision named `name`, as JSON.
    pub fn revision(&self, name: &str) -> Option<Value> {
        let resource = revision_resource();
        let found = self
            .revisions
            .get(&StoreRef::new_with(name, resource.clone()))?;
        crate::vocabulary::object::to_value(&found, &resource).ok()
    }

    /// The pipeline of `revision` for XRs like `xr`: the one compiled
    /// earlier while neither the revision nor any Function it uses changed,
    /// else compiled now (on a blocking thread: resolving may compile a
    /// module, and `directories` may fetch the steps' own directories) and
    /// kept in place of the one it replaces.
    pub async fn pipeline(
        self: &Arc<Self>,
        revision: &Value,
        xr: &ObjectRef,
        resolver: &Arc<Resolver>,
        directories: Option<Arc<dyn StepDirectories>>,
    ) -> Result<Arc<CompiledPipeline>, CompileError> {
        let key = PipelineKey {
            revision: text(revision, "/metadata/name").to_string(),
            api_version: xr.api_version.clone(),
            kind: xr.kind.clone(),
        };
        let version = version_of(revision);
        if let Some(found) = self.compiled(&key, &version) {
            return Ok(found);
        }
        let catalog = self.clone();
        let resolver = resolver.clone();
        let revision = revision.clone();
        let xr = xr.clone();
        let name = key.revision.clone();
        let compiled = tokio::task::spawn_blocking(move || {
            let stored = StoredFunctions(&catalog.functions);
            let step_dirs = |steps: &[Step]| match &directories {
                Some(directories) => catalog.step_dirs(&revision, steps, directories.as_ref()),
                None => Ok(Arc::default()),
            };
            let (pipeline, functions) = compile(&revision, &xr, &resolver, &stored, step_dirs)?;
            Ok::<_, CompileError>(catalog.keep(key, version, functions, pipeline))
        })
        .await
        .map_err(|source| CompileError::Join {
            revision: name,
            source,
        })??;
        Ok(compiled)
    }

    /// The directories `revision`'s `steps` read of their own: fetched
    /// once per revision (its uid), then the same for every compile.
    fn step_dirs(
        &self,
        revision: &Value,
        steps: &[Step],
        directories: &dyn StepDirectories,
    ) -> Result<Arc<StepDirs>, CompileError> {
        let name = text(revision, "/metadata/name");
        let uid = text(revision, "/metadata/uid");
        let fetched = self
            .step_dirs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .filter(|(seen, _)| seen == uid)
            .map(|(_, dirs)| dirs.clone());
        if let Some(dirs) = fetched {
            return Ok(dirs);
        }
        let dirs =
            directories
                .fetch(name, steps)
                .map_err(|source| CompileError::StepDirectories {
                    revision: name.to_string(),
                    source,
                })?;
        let dirs = Arc::new(dirs);
        self.step_dirs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_string(), (uid.to_string(), dirs.clone()));
        Ok(dirs)
    }

    /// The pipeline compiled for `key` at `version`, if every Function it
    /// resolved is still as it was.
    fn compiled(&self, key: &PipelineKey, version: &str) -> Option<Arc<CompiledPipeline>> {
        let stored = StoredFunctions(&self.functions);
        let mut pipelines = self.lock();
        let current = pipelines.by_key.get(key)?;
        let fresh = current.version == version
            && current
                .functions
                .iter()
                .all(|(function, seen)| stored.fingerprint(function) == *seen);
        if !fresh {
            return None;
        }
        pipelines.uses += 1;
        let used = pipelines.uses;
        let current = pipelines.by_key.get_mut(key)?;
        current.used = used;
        Some(current.pipeline.clone())
    }

    fn keep(
        &self,
        key: PipelineKey,
        version: String,
        functions: BTreeMap<String, Option<String>>,
        pipeline: CompiledPipeline,
    ) -> Arc<CompiledPipeline> {
        let pipeline = Arc::new(pipeline);
        let mut pipelines = self.lock();
        // Revisions that are gone are never asked for again.
        let revisions = &self.revisions;
        let exists = |name: &str| {
            revisions
                .get(&StoreRef::new_with(name, revision_resource()))
                .is_some()
        };
        pipelines.by_key.retain(|k, _| exists(&k.revision));
        self.step_dirs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|name, _| exists(name));
        while pipelines.by_key.len() >= self.capacity.max(1) && !pipelines.by_key.contains_key(&key)
        {
            let Some(oldest) = pipelines
                .by_key
                .iter()
                .min_by_key(|(_, c)| c.used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            pipelines.by_key.remove(&oldest);
        }
        pipelines.uses += 1;
        let used = pipelines.uses;
        pipelines.by_key.insert(
            key,
            Compiled {
                version,
                functions,
                pipeline: pipeline.clone(),
                used,
            },
        );
        pipeline
    }

    /// How many compiled pipelines are kept.
    #[cfg(test)]
    fn compiled_count(&self) -> usize {
        self.lock().by_key.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pipelines> {
        self.pipelines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// What identifies one state of a revision.
fn version_of(revision: &Value) -> String {
    format!(
        "{}/{}",
        text(revision, "/metadata/uid"),
        text(revision, "/metadata/resourceVersion")
    )
}

/// Compiles `revision`'s pipeline for XRs like `xr`, its steps reading
/// the directories `step_dirs` gives them, returning it with the
/// fingerprint of every Function it resolved.
#[allow(clippy::type_complexity)]
fn compile(
    revision: &Value,
    xr: &ObjectRef,
    resolver: &Resolver,
    functions: &StoredFunctions<'_>,
    step_dirs: impl FnOnce(&[Step]) -> Result<Arc<StepDirs>, CompileError>,
) -> Result<(CompiledPipeline, BTreeMap<String, Option<String>>), CompileError> {
    let name = text(revision, "/metadata/name").to_string();
    let composition = Composition::from_value(composition_of(revision)).map_err(|source| {
        CompileError::Invalid {
            revision: name.clone(),
            source: Box::new(source),
        }
    })?;
    let steps =
        plait_reconcile::prepare(&composition, xr).map_err(|source| CompileError::Prepare {
            revision: name.clone(),
            source,
        })?;
    // Fingerprints first: a Function that changes while it is resolved
    // leaves a stale fingerprint, so the next reconcile compiles again.
    let fingerprints = steps
        .iter()
        .map(|s| (s.function.clone(), functions.fingerprint(&s.function)))
        .collect();
    let pins = Pins::of_revision(revision).map_err(|source| CompileError::Invalid {
        revision: name.clone(),
        source: Box::new(source),
    })?;
    let step_dirs = step_dirs(&steps)?;
    let granted;
    let resolver = if step_dirs.is_empty() {
        resolver
    } else {
        granted = step_dirs
            .iter()
            .fold(resolver.clone(), |resolver, (step, dirs)| {
                resolver.with_step_read_only_dirs(step.clone(), dirs.clone())
            });
        &granted
    };
    let resolved = ResolvedFunctions::resolve_pinned(resolver, functions, &steps, &pins)?;
    tracing::debug!(revision = name, kind = xr.kind, "compiled pipeline");
    Ok((
        CompiledPipeline {
            composition,
            steps,
            functions: Arc::new(resolved),
        },
        fingerprints,
    ))
}

/// The Composition a revision was made from, as the pipeline reads it.
pub fn composition_of(revision: &Value) -> Value {
    let mut spec = revision
        .get("spec")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    spec.remove("revision");
    let name = revision
        .pointer("/metadata/labels/crossplane.io~1composition-name")
        .or_else(|| revision.pointer("/metadata/name"))
        .cloned()
        .unwrap_or(Value::Null);
    json!({
        "apiVersion": COMPOSITION_API_VERSION,
        "kind": COMPOSITION_KIND,
        "metadata": {"name": name},
        "spec": spec,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use kube::runtime::watcher::Event;
    use plait_functions::{FUNCTION_API_VERSION, FUNCTION_KIND};
    use plait_runtime::{Runtime, RuntimeConfig};

    use super::*;
    use crate::vocabulary::api::COMPOSITION_API_VERSION;

    struct Stores {
        compositions: Writer<DynamicObject>,
        revisions: Writer<DynamicObject>,
        functions: Writer<DynamicObject>,
        catalog: Arc<Catalog>,
    }

    fn stores(capacity: usize) -> Stores {
        let compositions = Writer::new(composition_resource());
        let revisions = Writer::new(revision_resource());
        let functions = Writer::new(function_resource());
        let catalog = Arc::new(Catalog::new(
            compositions.as_reader(),
            revisions.as_reader(),
            functions.as_reader(),
            capacity,
        ));
        Stores {
            compositions,
            revisions,
            functions,
            catalog,
        }
    }

    #[tokio::test]
    async fn every_reconcile_waiting_for_the_stores_goes_on_once_they_have_listed() {
        let mut s = stores(8);
        let waiting: Vec<_> = (0..20)
            .map(|_| {
                let catalog = s.catalog.clone();
                tokio::spawn(async move { catalog.ready().await.is_ok() })
            })
            .collect();
        // Every waiter has polled before the stores are ready.
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert!(
            waiting.iter().all(|w| !w.is_finished()),
            "none before the lists"
        );
        for writer in [&mut s.compositions, &mut s.revisions, &mut s.functions] {
            writer.apply_watcher_event(&Event::Init);
            writer.apply_watcher_event(&Event::InitDone);
        }
        for waiter in waiting {
            let went_on = tokio::time::timeout(std::time::Duration::from_secs(5), waiter).await;
            assert!(matches!(went_on, Ok(Ok(true))), "a waiter was left waiting");
        }
    }

    fn dynamic(value: Value) -> DynamicObject {
        serde_json::from_value(value).unwrap()
    }

    fn revision(name: &str, resource_version: &str, function: &str) -> Value {
        json!({
            "apiVersion": COMPOSITION_API_VERSION, "kind": "CompositionRevision",
            "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": resource_version,
                         "labels": {"crossplane.io/composition-name": "c"}},
            "spec": {
                "compositeTypeRef": {"apiVersion": "example.org/v1", "kind": "App"},
                "mode": "Pipeline",
                "pipeline": [{"step": "ready", "functionRef": {"name": function}}],
                "revision": 1,
            },
        })
    }

    fn function(name: &str, annotations: Value) -> Value {
        json!({
            "apiVersion": FUNCTION_API_VERSION, "kind": FUNCTION_KIND,
            "metadata": {"name": name, "generation": 1, "annotations": annotations},
            "spec": {"package": "xpkg.crossplane.io/crossplane-contrib/function-auto-ready:v0.5.0"},
        })
    }

    fn xr() -> ObjectRef {
        ObjectRef {
            api_version: "example.org/v1".into(),
            kind: "App".into(),
            namespace: Some("team-a".into()),
            name: "app".into(),
        }
    }

    fn apply(writer: &mut Writer<DynamicObject>, object: &Value) {
        writer.apply_watcher_event(&Event::Apply(dynamic(object.clone())));
    }

    fn resolver() -> Arc<Resolver> {
        Arc::new(Resolver::builtins(
            Runtime::new(RuntimeConfig::default()).unwrap(),
        ))
    }

    /// Fails its first fetch, then grants each step one directory; counts
    /// its fetches.
    #[derive(Default)]
    struct FailingOnce {
        fetches: std::sync::atomic::AtomicUsize,
    }

    impl StepDirectories for FailingOnce {
        fn fetch(
            &self,
            _: &str,
            steps: &[Step],
        ) -> Result<StepDirs, Box<dyn std::error::Error + Send + Sync>> {
            let before = self
                .fetches
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if before == 0 {
                return Err(
                    "step \"ready\": spec.source: cannot fetch r.io/m:v9: not found".into(),
                );
            }
            Ok(steps
                .iter()
                .map(|step| {
                    let dir = ReadOnlyDir {
                        host: "/cache/kcl-modules/m".into(),
                        guest: "/kcl/source".into(),
                    };
                    (step.name.clone(), vec![dir])
                })
                .collect())
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_revisions_step_directories_are_fetched_once_per_revision_and_a_failure_keeps_nothing()
     {
        let mut s = stores(DEFAULT_CAPACITY);
        let resolver = resolver();
        let fetcher = Arc::new(FailingOnce::default());
        let directories = || Some(fetcher.clone() as Arc<dyn StepDirectories>);
        let fetches = || fetcher.fetches.load(std::sync::atomic::Ordering::SeqCst);
        let first = revision("c-1", "10", "ready-fn");
        apply(&mut s.revisions, &first);
        apply(&mut s.functions, &function("ready-fn", json!({})));

        let failed = s
            .catalog
            .pipeline(&first, &xr(), &resolver, directories())
            .await
            .err()
            .unwrap();
        assert_eq!(
            failed.to_string(),
            "CompositionRevision \"c-1\": step \"ready\": spec.source: cannot fetch r.io/m:v9: not found"
        );
        let a = s
            .catalog
            .pipeline(&first, &xr(), &resolver, directories())
            .await
            .unwrap();
        assert_eq!(fetches(), 2, "a failed fetch is not kept");

        // Compiled again (its Function changed, the revision has a new
        // state), the revision keeps the directories fetched for it.
        apply(
            &mut s.functions,
            &function("ready-fn", json!({"limits.plait.dev/deadline": "2s"})),
        );
        let b = s
            .catalog
            .pipeline(&first, &xr(), &resolver, directories())
            .await
            .unwrap();
        assert!(!Arc::ptr_eq(&a, &b), "rebuilt after its Function changed");
        let renumbered = revision("c-1", "12", "ready-fn");
        apply(&mut s.revisions, &renumbered);
        s.catalog
            .pipeline(&renumbered, &xr(), &resolver, directories())
            .await
            .unwrap();
        assert_eq!(fetches(), 2, "fetched once for the revision");

        // A revision of the same name made anew is fetched for again.
        let mut remade = revision("c-1", "13", "ready-fn");
        remade["metadata"]["uid"] = json!("uid-c-1-remade");
        apply(&mut s.revisions, &remade);
        s.catalog
            .pipeline(&remade, &xr(), &resolver, directories())
            .await
            .unwrap();
        assert_eq!(fetches(), 3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_pipeline_is_compiled_once_and_again_only_when_its_revision_or_function_changes() {
        let mut s = stores(DEFAULT_CAPACITY);
        let resolver = resolver();
        let first = revision("c-1", "10", "ready-fn");
        let other = revision("d-1", "11", "other-fn");
        apply(&mut s.revisions, &first);
        apply(&mut s.revisions, &other);
        apply(&mut s.functions, &function("ready-fn", json!({})));
        apply(&mut s.functions, &function("other-fn", json!({})));

        let a = s
            .catalog
            .pipeline(&first, &xr(), &resolver, None)
            .await
            .unwrap();
        let again = s
            .catalog
            .pipeline(&first, &xr(), &resolver, None)
            .await
            .unwrap();
        assert!(Arc::ptr_eq(&a, &again), "reused while nothing changed");
        assert_eq!(a.steps.len(), 1);
        let d = s
            .catalog
            .pipeline(&other, &xr(), &resolver, None)
            .await
            .unwrap();

        // A change of what a Function sets rebuilds only pipelines using it.
        apply(
            &mut s.functions,
            &function("ready-fn", json!({"limits.plait.dev/deadline": "2s"})),
        );
        let b = s
            .catalog
            .pipeline(&first, &xr(), &resolver, None)
            .await
            .unwrap();
        assert!(!Arc::ptr_eq(&a, &b), "rebuilt after its Function changed");
        let d_again = s
            .catalog
            .pipeline(&other, &xr(), &resolver, None)
            .await
            .unwrap();
        assert!(
            Arc::ptr_eq(&d, &d_again),
            "another Function's change leaves it be"
        );

        // So does a new digest its controller resolved it to.
        let mut moved = function("ready-fn", json!({"limits.plait.dev/deadline": "2s"}));
        moved["status"] = json!({"resolvedDigest": "sha256:b", "conditions": [
            {"type": "Healthy", "status": "True", "reason": "HealthyPackageRevision"}]});
        apply(&mut s.functions, &moved);
        let b_moved = s
            .catalog
            .pipeline(&first, &xr(), &resolver, None)
            .await
            .unwrap();
        assert!(
            !Arc::ptr_eq(&b, &b_moved),
            "rebuilt after its digest changed"
        );
        let b = b_moved;
        let again = s
            .catalog
            .pipeline(&first, &xr(), &resolver, None)
            .await
            .unwrap();
        assert!(Arc::ptr_eq(&b, &again), "reused again once compiled");

        // A new state of the revision (here, renumbered) rebuilds it.
        let renumbered = revision("c-1", "12", "ready-fn");
        apply(&mut s.revisions, &renumbered);
        let c = s
            .catalog
            .pipeline(&renumbered, &xr(), &resolver, None)
            .await
            .unwrap();
        assert!(!Arc::ptr_eq(&b, &c), "rebuilt for the revision's new state");
        assert_eq!(
            s.catalog.compiled_count(),
            2,
            "the old state's pipeline is gone"
        );

        // A Function deleted (its name then runs no built-in) is an error
        // that names it, and nothing stale is served.
        s.functions
            .apply_watcher_event(&Event::Delete(dynamic(function("ready-fn", json!({})))));
        let error = s
            .catalog
            .pipeline(&renumbered, &xr(), &resolver, None)
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("\"ready-fn\""), "{error}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_revision_runs_the_functions_it_records_not_what_they_resolve_to_now() {
        let mut s = stores(DEFAULT_CAPACITY);
        let resolver = resolver();
        // The Function has since moved to a package this controller cannot
        // run; the revision recorded the built-in it ran before.
        let mut moved = function("ready-fn", json!({}));
        moved["spec"]["package"] = json!("registry.example.com/fns/ready:v2");
        apply(&mut s.functions, &moved);
        let unpinned = revision("c-1", "1", "ready-fn");
        let mut pinned = revision("c-2", "1", "ready-fn");
        let pin = plait_functions::current_pin("function-auto-ready", None).unwrap();
        let pin = plait_functions::Pin {
            function: "ready-fn".into(),
            ..pin
        };
        pinned["metadata"]["annotations"] = json!({
            plait_functions::DIGESTS_ANNOTATION: Pins(BTreeMap::from([("ready".to_string(), pin)])).annotation(),
        });
        for r in [&unpinned, &pinned] {
            apply(&mut s.revisions, r);
        }
        let error = s
            .catalog
            .pipeline(&unpinned, &xr(), &resolver, None)
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("is not built in"), "{error}");
        let compiled = s
            .catalog
            .pipeline(&pinned, &xr(), &resolver, None)
            .await
            .unwrap();
        assert_eq!(
            compiled.functions.digests().get("ready-fn").copied(),
            Some(plait_runtime::Builtin::AutoReady.digest())
        );

        let mut malformed = revision("c-3", "1", "ready-fn");
        malformed["metadata"]["annotations"] =
            json!({plait_functions::DIGESTS_ANNOTATION: "not json"});
        apply(&mut s.revisions, &malformed);
        let error = s
            .catalog
            .pipeline(&malformed, &xr(), &resolver, None)
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            error.starts_with("CompositionRevision \"c-3\" is invalid")
                && error.contains(plait_functions::DIGESTS_ANNOTATION),
            "{error}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pipelines_beyond_the_capacity_or_of_deleted_revisions_are_dropped() {
        let mut s = stores(2);
        let resolver = resolver();
        let revisions: Vec<Value> = (1..=3)
            .map(|i| revision(&format!("c-{i}"), "1", "function-auto-ready"))
            .collect();
        for r in &revisions {
            apply(&mut s.revisions, r);
        }
        let first = s
            .catalog
            .pipeline(&revisions[0], &xr(), &resolver, None)
            .await
            .unwrap();
        s.catalog
            .pipeline(&revisions[1], &xr(), &resolver, None)
            .await
            .unwrap();
        // Using the first makes the second the least recently used.
        s.catalog
            .pipeline(&revisions[0], &xr(), &resolver, None)
            .await
            .unwrap();
        s.catalog
            .pipeline(&revisions[2], &xr(), &resolver, None)
            .await
            .unwrap();
        assert_eq!(s.catalog.compiled_count(), 2);
        let kept = s
            .catalog
            .pipeline(&revisions[0], &xr(), &resolver, None)
            .await
            .unwrap();
        assert!(Arc::ptr_eq(&first, &kept), "the most recently used stays");

        s.revisions
            .apply_watcher_event(&Event::Delete(dynamic(revisions[0].clone())));
        s.catalog
            .pipeline(&revisions[1], &xr(), &resolver, None)
            .await
            .unwrap();
        assert_eq!(
            s.catalog.compiled_count(),
            2,
            "the deleted revision's pipeline made room"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_invalid_or_incompatible_revision_is_an_error_naming_it() {
        let mut s = stores(DEFAULT_CAPACITY);
        let resolver = resolver();
        let mut invalid = revision("bad-1", "1", "function-auto-ready");
        invalid["spec"]["pipeline"] = json!([]);
        let mut other_kind = revision("other-1", "1", "function-auto-ready");
        other_kind["spec"]["compositeTypeRef"]["kind"] = json!("Database");
        for (revision, want) in [
            (&invalid, "CompositionRevision \"bad-1\""),
            (&other_kind, "CompositionRevision \"other-1\""),
        ] {
            apply(&mut s.revisions, revision);
            let error = s
                .catalog
                .pipeline(revision, &xr(), &resolver, None)
                .await
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(error.starts_with(want), "{error}");
        }
        assert_eq!(s.catalog.compiled_count(), 0);
    }

    #[test]
    fn stores_list_by_label() {
        let mut s = stores(DEFAULT_CAPACITY);
        apply(&mut s.revisions, &revision("c-1", "1", "f"));
        let mut unlabelled = revision("d-1", "1", "f");
        unlabelled["metadata"]["labels"] = json!({});
        apply(&mut s.revisions, &unlabelled);
        let labels = BTreeMap::from([(
            "crossplane.io/composition-name".to_string(),
            "c".to_string(),
        )]);
        let names: Vec<String> = s
            .catalog
            .revisions(&labels)
            .iter()
            .map(|r| text(r, "/metadata/name").to_string())
            .collect();
        assert_eq!(names, ["c-1"]);
        assert_eq!(s.catalog.revisions(&BTreeMap::new()).len(), 2);
        assert!(s.catalog.revision("d-1").is_some());
        apply(
            &mut s.compositions,
            &json!({"apiVersion": COMPOSITION_API_VERSION, "kind": "Composition",
                    "metadata": {"name": "c", "labels": {"team": "a"}}, "spec": {}}),
        );
        let team = BTreeMap::from([("team".to_string(), "a".to_string())]);
        assert_eq!(s.catalog.compositions(&team).len(), 1);
        assert_eq!(s.catalog.compositions(&labels).len(), 0);
        assert!(s.catalog.composition("c").is_some());
        assert!(s.catalog.composition("d").is_none());
        assert_eq!(
            text(&s.catalog.revision("d-1").unwrap(), "/kind"),
            "CompositionRevision"
        );
    }
}
