//! `plait render`: the controller's reconcile, run offline against an
//! in-memory cluster seeded from files.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use plait_functions::{GivenFunctions, PipelineFunctions, ResolvedFunctions, Resolver};
use plait_kcl::r#import::{Document, ImportOptions, Layout};
use plait_model::{CompositeResourceDefinition, Composition, Manifest};
use plait_pipeline::{ReadGrants, Step};
use plait_reconcile::{
    ANNOTATION_RESOURCE_NAME, Cluster, CompositeScope, Event, EventType, MemoryCluster, ObjectRef,
    PrepareError, Reconcile, stable_uid,
};
use plait_runtime::{Builtin, Runtime, RuntimeConfig};
use serde_json::{Map, Value, json};

use crate::RenderArgs;
use crate::files;
use crate::functions;
use crate::kcl;
use crate::project::{self, Models, Project};

/// Every condition's `lastTransitionTime` in render output, as `crossplane render` prints it.
const RENDER_TIME: &str = "2024-01-01T00:00:00Z";
const RENDER_API_VERSION: &str = "render.crossplane.io/v1beta1";

pub fn run(args: &RenderArgs) -> Result<String> {
    let rendered = render(args, None, None)?;
    // Which component each step ran, on stderr so stdout stays what
    // `crossplane render` prints.
    eprint!("{}", rendered.ran);
    files::to_yaml_stream(&rendered.documents)
}

/// A render's output documents, and how it ran.
pub struct Rendered {
    /// The XR, the composed resources, then (as asked) the results and the context.
    pub documents: Vec<Value>,
    /// One line per step naming the component it ran.
    pub ran: String,
}

/// Renders as `plait render` does; `project` (already opened) wins over
/// `args.project` and over the project found above the Composition, and
/// `models` (already generated) over the project's models generated anew.
pub fn render(
    args: &RenderArgs,
    project: Option<Project>,
    models: Option<&Models>,
) -> Result<Rendered> {
    let mut xr = files::read_one(&args.composite_resource, "composite resource")?;
    let xr_ref = ObjectRef::of(&xr).with_context(|| {
        format!(
            "{}: the composite resource needs apiVersion, kind and metadata.name",
            args.composite_resource.display()
        )
    })?;
    let composition_value = files::read_one(&args.composition, "Composition")?;
    let composition = Composition::from_value(composition_value)
        .with_context(|| format!("{}: not a valid Composition", args.composition.display()))?;

    let project = match (project, &args.project) {
        (Some(project), _) => Some(project),
        (None, Some(dir)) => Some(Project::open(dir)?),
        (None, None) => Project::find_above(&args.composition)?,
    };
    // The XRD given, else the project's XRD of the XR's kind.
    let xrd = match (&args.xrd, &project) {
        (Some(path), _) => Some((path.display().to_string(), files::read_one(path, "XRD")?)),
        (None, Some(project)) => project
            .definition_of(&xr)?
            .map(|xrd| (format!("the XRD in {}", project.apis_dir.display()), xrd)),
        (None, None) => None,
    };
    let scope = match xrd {
        Some((place, xrd)) => {
            let xrd = CompositeResourceDefinition::from_value(xrd)
                .with_context(|| format!("{place}: not a valid XRD"))?;
            plait_model::apply_schema_defaults(&mut xr, &xrd)?;
            CompositeScope::of(&xrd)
        }
        None => CompositeScope::infer(&xr),
    };
    // An XR file written for render often leaves out the namespace of a
    // namespaced XR. `crossplane render` then takes the XR as it is given,
    // in no namespace: its resource references name their namespace, and
    // observed resources in `default` (where its composed resources land)
    // are seen. So does plait.
    let scope = if scope == CompositeScope::Namespaced && CompositeScope::infer(&xr) != scope {
        CompositeScope::Cluster
    } else {
        scope
    };
    let steps = match plait_reconcile::prepare(&composition, &xr_ref) {
        Ok(steps) => steps,
        Err(e @ PrepareError::Invalid(_)) => bail!(
            "{}: invalid Composition {:?}: {e}",
            args.composition.display(),
            composition.name(),
        ),
        Err(e) => return Err(e.into()),
    };
    check_composition_selector(&xr, &composition)?;
    // What -x prints the render's results onto: the XR as given, defaulted.
    let given_xr = xr.clone();

    if xr
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .is_none()
    {
        // The controller names composed resources from the XR's UID; a
        // stable stand-in keeps render output repeatable.
        xr["metadata"]["uid"] = json!(stable_uid(&xr_ref));
    }
    let xr_uid = xr["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if xr
        .pointer("/metadata/labels/crossplane.io~1composite")
        .is_none()
    {
        xr["metadata"]["labels"]["crossplane.io/composite"] = json!(xr_ref.name);
    }
    // The controller selects the Composition before the pipeline runs, so
    // functions observe the XR's compositionRef; render has one Composition.
    let composition_ref = format!("{}/compositionRef", scope.machinery_pointer());
    let select_composition = xr.pointer(&composition_ref).is_none();
    if select_composition {
        let machinery =
            scope.wrap_machinery(json!({"compositionRef": {"name": composition.name()}}));
        merge_objects(&mut xr, &machinery);
    }
    if let Some(reference) = plait_reconcile::default_connection_secret_ref(
        &xr,
        scope,
        composition
            .spec
            .write_connection_secrets_to_namespace
            .as_deref(),
    ) {
        xr["spec"]["writeConnectionSecretToRef"] = reference;
    }

    let cluster = MemoryCluster::new();
    let observed = read_all(&args.observed_resources)?;
    let mut refs = Vec::new();
    let mut observed_objects = Vec::new();
    for (file, mut object) in observed {
        let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
        if text("/apiVersion").is_none() || text("/kind").is_none() {
            bail!(
                "{}: an observed resource needs apiVersion and kind",
                file.display()
            );
        }
        // Like `crossplane render`: a resource without a name gets a
        // reference the reconciler skips, so nothing observes it.
        let Some(reference) = ObjectRef::of(&object).filter(|r| !r.name.is_empty()) else {
            continue;
        };
        if object
            .pointer(&plait_reconcile::pointer::annotation(
                ANNOTATION_RESOURCE_NAME,
            ))
            .is_none()
        {
            bail!(
                "{}: observed resource {reference} has no {ANNOTATION_RESOURCE_NAME} annotation",
                file.display()
            );
        }
        if object.pointer("/metadata/ownerReferences").is_none() {
            object["metadata"]["ownerReferences"] = json!([{
                "apiVersion": xr_ref.api_version, "kind": xr_ref.kind, "name": xr_ref.name,
                "uid": xr_uid, "controller": true, "blockOwnerDeletion": true,
            }]);
        }
        let mut r = json!({"apiVersion": reference.api_version, "kind": reference.kind, "name": reference.name});
        // A namespaced XR's references have no namespace field (its
        // schema has none): what it composes is in its own namespace.
        if let Some(ns) = reference
            .namespace
            .as_ref()
            .filter(|_| scope != CompositeScope::Namespaced)
        {
            r["namespace"] = json!(ns);
        }
        refs.push(r);
        observed_objects.push(object);
    }
    if !refs.is_empty() {
        let pointer = scope.machinery_pointer();
        if xr.pointer(pointer).is_none() {
            xr["spec"]["crossplane"] = json!({});
        }
        if let Some(machinery) = xr.pointer_mut(pointer) {
            machinery["resourceRefs"] = Value::Array(refs);
        }
    }
    cluster.seed(observed_objects)?;
    cluster.seed(
        read_all(&args.required_resources)?
            .into_iter()
            .map(|(_, v)| served_version(v)),
    )?;
    let credentials: Vec<Value> = read_all(&args.function_credentials)?
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    cluster.seed(credentials.clone())?;
    cluster.seed([xr.clone()])?;
    if select_composition {
        cluster.record_event(Event {
            regarding: xr_ref.clone(),
            event_type: EventType::Normal,
            reason: "SelectComposition".into(),
            message: format!("Successfully selected composition: {}", composition.name()),
        });
    }
    cluster.seed_schemas(
        read_all(&args.required_schemas)?
            .into_iter()
            .map(|(_, v)| v),
    )?;

    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: plait_oci::compile_cache_dir(),
        ..RuntimeConfig::default()
    })?;
    let (resolver, mut given, pulled) =
        functions::load(runtime, args.functions.as_deref(), &args.registry)?;
    // `_staged` (the project functions' staged directories) lives until the render ends.
    let (resolver, _staged) = match &project {
        Some(project) => {
            project_functions(project, &args.crds, models, &steps, resolver, &mut given)?
        }
        None => (resolver, None),
    };
    let (resolver, fetched) = kcl_step_modules(&steps, resolver, &pulled, &credentials)?;
    // The controller runs its pipelines with the same resolver and runner.
    let resolved = Arc::new(ResolvedFunctions::resolve(&resolver, &given, &steps)?);
    let runner = PipelineFunctions::new(resolved.clone(), args.timeout);
    let grants = runner.read_grants(ReadGrants::tenant_defaults());

    let outcome = Reconcile {
        cluster: &cluster,
        runner: &runner,
        xr: xr.clone(),
        scope,
        steps: &steps,
        context: context(args)?,
        clock: &|| RENDER_TIME.into(),
        grants: &grants,
        as_tenant: None,
        circuit_open: false,
        observe_created: false,
        unwritten: None,
    }
    .run()?;
    if let Some(error) = &outcome.error {
        bail!("cannot render composite resource: {error}");
    }
    let ran = ran_lines(&steps, &resolved.digests(), &pulled.pulled()) + &fetched;

    let mut documents = Vec::new();
    // Like `crossplane render`: the XR's identity, the references the
    // reconcile wrote and its status; with -x, those merged onto the XR as given.
    let mut metadata = json!({"name": xr_ref.name});
    if let Some(ns) = &xr_ref.namespace {
        metadata["namespace"] = json!(ns);
    }
    let mut rendered_xr =
        json!({"apiVersion": xr_ref.api_version, "kind": xr_ref.kind, "metadata": metadata});
    if let Some(refs) = outcome
        .xr
        .pointer(&format!("{}/resourceRefs", scope.machinery_pointer()))
    {
        let machinery = scope.wrap_machinery(json!({ "resourceRefs": refs }));
        merge_objects(&mut rendered_xr, &machinery);
    }
    rendered_xr["status"] = outcome.xr.get("status").cloned().unwrap_or(json!({}));
    if args.include_full_xr {
        let mut full = given_xr;
        merge_objects(&mut full, &rendered_xr);
        rendered_xr = full;
    }
    documents.push(rendered_xr);
    documents.extend(outcome.composed.values().cloned());
    if args.include_function_results {
        // Today's `crossplane render -r` prints the events the reconcile
        // recorded on the XR: function results (with their step) and the
        // reconciler's own.
        documents.extend(
            cluster
                .events()
                .into_iter()
                .filter(|e| e.regarding == xr_ref)
                .map(|e| {
                    json!({
                        "apiVersion": RENDER_API_VERSION,
                        "kind": "Result",
                        "severity": match e.event_type {
                            EventType::Normal => "Normal",
                            EventType::Warning => "Warning",
                        },
                        "reason": e.reason,
                        "message": e.message,
                    })
                }),
        );
    }
    if args.include_context {
        documents.push(json!({
            "apiVersion": RENDER_API_VERSION,
            "kind": "Context",
            "fields": outcome.context,
        }));
    }
    Ok(Rendered { documents, ran })
}

/// One line per step naming the component it ran: its digest, and for a
/// package pulled from a registry the reference pulled, pinned to the
/// manifest digest (what a Function's `status.resolvedPackage` says).
fn ran_lines(
    steps: &[Step],
    digests: &BTreeMap<&str, &str>,
    pulled: &BTreeMap<String, String>,
) -> String {
    let mut lines = String::new();
    for step in steps {
        // Every step's function was resolved before the pipeline ran.
        let Some(digest) = digests.get(step.function.as_str()) else {
            continue;
        };
        let from = match (pulled.get(&step.function), Builtin::from_digest(digest)) {
            (Some(pinned), _) => format!(", pulled as {pinned}"),
            (None, Some(builtin)) => format!(
                ", built-in {} (matches upstream {})",
                builtin.name(),
                builtin.upstream_version()
            ),
            (None, None) => String::new(),
        };
        lines.push_str(&format!(
            "step {:?} ran function {:?}: component {digest}{from}\n",
            step.name, step.function
        ));
    }
    lines
}

/// Fetches the KCL modules each function-kcl step (input
/// `krm.kcl.dev/v1alpha1`) names, its `oci://` source and its
/// `spec.dependencies` with theirs, pinned to their digests and under the
/// ImageConfigs given, with the step's `kcl-registry` credential; each
/// step's calls read them where the built-in looks. Returns the resolver
/// and one line per module fetched, for stderr.
fn kcl_step_modules(
    steps: &[Step],
    mut resolver: Resolver,
    pulled: &functions::PulledPackages,
    credentials: &[Value],
) -> Result<(Resolver, String)> {
    let kcl_inputs = steps.iter().filter_map(|step| {
        let input = step.input.as_ref()?;
        plait_oci::kcl::is_kcl_input(input).then_some((step, input))
    });
    // `--insecure` reaches the registries the steps name (a bad reference
    // is reported below, naming its step).
    pulled.reach(
        kcl_inputs
            .clone()
            .filter_map(|(_, input)| plait_oci::kcl::step_modules(input).ok())
            .flatten()
            .map(|wanted| wanted.reference),
    );
    let mut lines = String::new();
    for (step, input) in kcl_inputs {
        let keychain = kcl_registry_keychain(step, credentials)?;
        let dirs = plait_oci::kcl::fetch_step_modules(input, |wanted| {
            let module = pulled.kcl_module(wanted, &keychain)?;
            lines.push_str(&format!(
                "step {:?} fetched KCL module {} for {}\n",
                step.name, module.pinned, wanted.field
            ));
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(module.dir)
        })
        .with_context(|| format!("step {:?}", step.name))?;
        if !dirs.is_empty() {
            resolver = resolver.with_step_read_only_dirs(step.name.clone(), dirs);
        }
    }
    Ok((resolver, lines))
}

/// The credentials of `step`'s `kcl-registry` credential, from the
/// Secrets given with `--function-credentials`.
fn kcl_registry_keychain(step: &Step, credentials: &[Value]) -> Result<plait_oci::Keychain> {
    let Some(reference) = step
        .credentials
        .iter()
        .find(|c| c.name == plait_oci::kcl::KCL_REGISTRY_CREDENTIAL)
        .and_then(|c| c.secret.as_ref())
    else {
        return Ok(plait_oci::Keychain::anonymous());
    };
    let secret = credentials.iter().find(|object| {
        object["kind"] == "Secret"
            && object.pointer("/metadata/name").and_then(Value::as_str)
                == Some(reference.name.as_str())
            && object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("default")
                == reference.namespace
    });
    let Some(secret) = secret else {
        bail!(
            "step {:?}: credential {:?}: Secret {}/{} is not among the credentials given (--function-credentials)",
            step.name,
            plait_oci::kcl::KCL_REGISTRY_CREDENTIAL,
            reference.namespace,
            reference.name
        );
    };
    let (_, data) = functions::secret_data(secret).with_context(|| {
        format!(
            "step {:?}: credential {:?}",
            step.name,
            plait_oci::kcl::KCL_REGISTRY_CREDENTIAL
        )
    })?;
    Ok(plait_oci::kcl::registry_credential(&data).unwrap_or_else(plait_oci::Keychain::anonymous))
}

/// Sets `patch`'s fields into `target`, objects merged key by key.
fn merge_objects(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                merge_objects(target.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
        (target, patch) => *target = patch.clone(),
    }
}

/// A cluster serves EnvironmentConfigs at v1beta1 whichever version they were
/// written in (the versions share one schema), so requirements find them there.
fn served_version(mut object: Value) -> Value {
    if object["kind"] == "EnvironmentConfig"
        && object["apiVersion"] == "apiextensions.crossplane.io/v1alpha1"
    {
        object["apiVersion"] = json!("apiextensions.crossplane.io/v1beta1");
    }
    object
}

fn read_all(paths: &[std::path::PathBuf]) -> Result<Vec<(std::path::PathBuf, Value)>> {
    let mut all = Vec::new();
    for path in paths {
        all.extend(files::read_documents(path)?);
    }
    Ok(all)
}

/// `crossplane render` refuses a Composition the XR's selector would not pick.
fn check_composition_selector(xr: &Value, composition: &Composition) -> Result<()> {
    for pointer in [
        "/spec/crossplane/compositionSelector/matchLabels",
        "/spec/compositionSelector/matchLabels",
    ] {
        let Some(labels) = xr.pointer(pointer).and_then(Value::as_object) else {
            continue;
        };
        for (key, value) in labels {
            if composition.metadata.labels.get(key).map(String::as_str) != value.as_str() {
                bail!(
                    "composition {:?} does not match the composite resource's compositionSelector: label {key}={} is missing",
                    composition.name(),
                    value
                );
            }
        }
    }
    Ok(())
}

/// The starting pipeline context from --context-files and --context-values.
fn context(args: &RenderArgs) -> Result<Value> {
    let mut context = Map::new();
    for (key, file) in &args.context_files {
        let text = files::read_text(Path::new(file))?;
        let docs = plait_model::parse_documents(&text, file)?;
        let [value] = <[Value; 1]>::try_from(docs).map_err(|d| {
            anyhow::anyhow!(
                "--context-files {key}={file}: expected one document, found {}",
                d.len()
            )
        })?;
        context.insert(key.clone(), value);
    }
    let values: BTreeMap<&String, &String> =
        args.context_values.iter().map(|(k, v)| (k, v)).collect();
    for (key, json_text) in values {
        let value: Value = serde_json::from_str(json_text)
            .with_context(|| format!("--context-values {key}: not valid JSON"))?;
        context.insert(key.clone(), value);
    }
    Ok(Value::Object(context))
}

/// Points the steps that call one of `project`'s functions at the built-in
/// function-kcl, each reading its staged directory at `/src`, and adds the
/// Functions the project depends on. A Function given by the same name wins
/// over both.
fn project_functions(
    project: &Project,
    crds: &[std::path::PathBuf],
    models: Option<&Models>,
    steps: &[Step],
    mut resolver: Resolver,
    given: &mut GivenFunctions,
) -> Result<(Resolver, Option<project::StagedFunctions>)> {
    for (name, object) in project.function_objects() {
        given.0.entry(name).or_insert(object);
    }
    let functions = project.functions()?;
    let mut called = BTreeMap::new();
    for step in steps {
        let Some(function) = functions.get(&step.function) else {
            continue;
        };
        if given.0.contains_key(&step.function) {
            continue;
        }
        if !function.is_kcl {
            bail!(
                "step {:?}: function {:?} is the project's {} ({}), which has no kcl.mod; plait runs a project's KCL functions only",
                step.name,
                step.function,
                function.name,
                function.dir.display()
            );
        }
        called.insert(step.function.clone(), function.clone());
    }
    if called.is_empty() {
        return Ok((resolver, None));
    }
    tracing::info!(
        project = %project.root.display(),
        functions = ?called.keys().collect::<Vec<_>>(),
        "running the project's KCL functions with the built-in function-kcl"
    );
    let models = match models {
        Some(models) => models.clone(),
        None => project_models(project, crds)?,
    };
    let staged = project::stage(project, &called, &models)?;
    let kcl = resolver.runtime().builtin(Builtin::Kcl)?;
    for (name, grants) in &staged.grants {
        resolver = resolver
            .with_local(name.clone(), kcl.clone())
            .with_read_only_dirs(name.clone(), grants.clone());
    }
    Ok((resolver, Some(staged)))
}

/// The KCL models the project's functions import: generated from the
/// project's XRDs and the CRDs given (as `up` and the Crossplane CLI
/// generate them from the XRDs and the dependencies' packages), or, with no
/// CRDs given, the models directory the project's tool already generated.
pub fn project_models(project: &Project, crds: &[std::path::PathBuf]) -> Result<Models> {
    if crds.is_empty() && project.models_dir.is_dir() {
        return Ok(Models::Existing(project.models_dir.clone()));
    }
    if crds.is_empty() {
        tracing::warn!(
            project = %project.root.display(),
            "the project's KCL models come from its XRDs only: give its dependencies' CRDs with --crds for the models its functions import from them"
        );
    }
    let mut documents: Vec<Document> = project
        .definitions()?
        .into_iter()
        .map(|xrd| Document {
            name: format!(
                "the project's XRD {}",
                xrd["metadata"]["name"].as_str().unwrap_or_default()
            ),
            value: xrd,
        })
        .collect();
    for path in crds {
        for (file, value) in files::read_documents_recursive(path)? {
            // XRDs too: a dependency Configuration's APIs are its XRDs.
            if value["kind"] != "CustomResourceDefinition"
                && value["kind"] != "CompositeResourceDefinition"
            {
                bail!(
                    "{}: --crds takes CustomResourceDefinitions and CompositeResourceDefinitions, found kind {}",
                    file.display(),
                    value["kind"]
                );
            }
            documents.push(Document {
                name: file.display().to_string(),
                value,
            });
        }
    }
    let options = ImportOptions {
        layout: Layout::Upbound,
        ..ImportOptions::default()
    };
    let files = kcl::models(documents, &options)
        .context("cannot generate the project's KCL models")?
        .into_iter()
        .map(|(path, text)| (std::path::PathBuf::from(path), text))
        .collect();
    Ok(Models::Generated(files))
}
