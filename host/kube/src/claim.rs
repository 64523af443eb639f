//! Composite resource claims: the claim CRD an XRD offers, and the
//! controller that binds each claim to an XR, keeps the two in sync and
//! copies the XR's connection Secret into the claim's namespace.
//!
//! Matches upstream's `claim` reconciler with the server-side syncer.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::{Controller, watcher};
use plait_model::CompositeResourceDefinition;
use plait_reconcile::compose::deterministic_name;
use plait_reconcile::{
    Event, EventType, LABEL_CLAIM_NAME, LABEL_CLAIM_NAMESPACE, ObjectRef, set_condition,
};
use serde_json::{Map, Value, json};
use tokio::task::JoinHandle;

use crate::cluster::{KubeCluster, applied};
use crate::crd::{claim_crd, claim_crd_name};
use crate::xr::{ANNOTATION_PAUSED, Timing, now};
use crate::xrd::{FIELD_MANAGER, Manager};

pub const FINALIZER: &str = "finalizer.apiextensions.crossplane.io";
/// The field manager of what the claim controller writes, as upstream.
pub const CLAIM_FIELD_MANAGER: &str = "apiextensions.crossplane.io/claim";
pub const ANNOTATION_EXTERNAL_NAME: &str = "crossplane.io/external-name";
pub const CONNECTION_SECRET_TYPE: &str = "connection.crossplane.io/v1alpha1";

/// Claim spec fields that stay on the claim; the rest of its spec is the XR's.
const CLAIM_ONLY_FIELDS: &[&str] = &[
    "compositeDeletePolicy",
    "resourceRef",
    "writeConnectionSecretToRef",
    "compositionRevisionRef",
    // XR machinery a claim must not set on its XR.
    "resourceRefs",
    "claimRef",
];
/// XR status fields that are not the claim's to mirror.
const XR_ONLY_STATUS: &[&str] = &["conditions", "connectionDetails", "claimConditionTypes"];
const RECONCILE_PAUSED: &str =
    "Reconciliation (including deletion) is paused via the pause annotation";
const CRD_ESTABLISH_TIMEOUT: Duration = Duration::from_secs(60);
/// How often a claim waiting on its XR's deletion looks again.
const DELETE_POLL: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error("claim {claim}: {message}")]
    Kube { claim: String, message: String },
    #[error("claim {0}: cannot be encoded")]
    Encode(String),
}

/// What the XRD's `Offered` condition says.
#[derive(Debug, Clone, PartialEq)]
pub enum Offered {
    /// The XRD offers no claim and no claim CRD is left.
    No,
    /// The claim CRD is established and its controller runs.
    Yes(ApiResource),
    /// The XRD stopped offering claims; existing claims are being deleted.
    Withdrawing,
}

/// Why claims cannot be offered.
#[derive(Debug, thiserror::Error)]
pub enum OfferError {
    /// Reported on the XRD's `Synced` condition.
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Kube(String),
}

/// Applies the claim CRD `xrd` defines and runs its claim controller, or,
/// when the XRD no longer offers claims, withdraws them.
pub async fn offer(
    manager: &Manager,
    xrd: &CompositeResourceDefinition,
    xrd_value: &Value,
    xr: ApiResource,
) -> Result<Offered, OfferError> {
    let (Some(gvk), Some(crd_name), Some(names)) = (
        xrd.claim_gvk(),
        claim_crd_name(xrd),
        xrd.spec.claim_names.as_ref(),
    ) else {
        return Ok(match withdraw(manager, xrd, xrd_value).await? {
            true => Offered::No,
            false => Offered::Withdrawing,
        });
    };
    let crd = claim_crd(xrd).map_err(|e| {
        OfferError::Invalid(format!(
            "cannot render composite resource claim CustomResourceDefinition: {e}"
        ))
    })?;
    let crds: Api<CustomResourceDefinition> = Api::all(manager.cluster.client().clone());
    crds.patch(
        &crd_name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&crd),
    )
    .await
    .map_err(|e| {
        OfferError::Invalid(format!(
            "cannot apply rendered composite resource claim CustomResourceDefinition: {e}"
        ))
    })?;
    let established = tokio::time::timeout(
        CRD_ESTABLISH_TIMEOUT,
        await_condition(crds, &crd_name, conditions::is_crd_established()),
    )
    .await;
    if !matches!(established, Ok(Ok(Some(_)))) {
        return Err(OfferError::Invalid(
            "waiting for composite resource claim CustomResourceDefinition to be established"
                .into(),
        ));
    }
    manager.cluster.forget_kind(&gvk.api_version(), &gvk.kind);
    let claim = ApiResource {
        group: gvk.group.clone(),
        version: gvk.version.clone(),
        api_version: gvk.api_version(),
        kind: gvk.kind.clone(),
        plural: names.plural.clone(),
    };
    manager
        .claims
        .start(&manager.cluster, &manager.timing, xrd, claim.clone(), xr);
    Ok(Offered::Yes(claim))
}

/// The claim kind the XRD's status says it offered.
fn offered_type(xrd_value: &Value) -> Option<(String, String)> {
    let t = xrd_value.pointer("/status/controllers/compositeResourceClaimType")?;
    Some((
        text(t, "/apiVersion")?.to_string(),
        text(t, "/kind")?.to_string(),
    ))
}

/// Deletes every claim of the kind the XRD offered, then stops the claim
/// controller and deletes the claim CRD. True once nothing is left; the
/// controller keeps running until then so it can release the claims.
pub async fn withdraw(
    manager: &Manager,
    xrd: &CompositeResourceDefinition,
    xrd_value: &Value,
) -> Result<bool, OfferError> {
    let name = xrd.metadata.name();
    let kube = |e: kube::Error| OfferError::Kube(e.to_string());
    let Some((api_version, kind)) = offered_type(xrd_value) else {
        manager.claims.stop(name);
        return Ok(true);
    };
    let served = manager
        .cluster
        .served_kind(&api_version, &kind)
        .await
        .map_err(|e| OfferError::Kube(e.to_string()))?;
    let Some(served) = served else {
        manager.claims.stop(name);
        return Ok(true);
    };
    let client = manager.cluster.client().clone();
    let claims: Api<DynamicObject> = Api::all_with(client.clone(), &served.resource);
    let items = match claims.list_metadata(&ListParams::default()).await {
        Ok(list) => list.items,
        // The claim CRD went away since discovery last looked; a kind that
        // is no longer served answers with a bare 404.
        Err(kube::Error::Api(s)) if s.code == 404 => {
            manager.cluster.forget_kind(&api_version, &kind);
            Vec::new()
        }
        Err(e) => {
            return Err(OfferError::Kube(format!(
                "cannot list defined composite resource claims: {e}"
            )));
        }
    };
    if !items.is_empty() {
        // A controller must run to release the claims' finalizers, also
        // after a restart that found the XRD no longer offering them.
        if let Some(xr) = manager.claims.xr_of(name).or_else(|| xr_resource(xrd)) {
            manager.claims.start(
                &manager.cluster,
                &manager.timing,
                xrd,
                served.resource.clone(),
                xr,
            );
        }
        for item in &items {
            let (Some(claim), Some(ns)) = (&item.metadata.name, &item.metadata.namespace) else {
                continue;
            };
            if item.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let api: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), ns, &served.resource);
            match api.delete(claim, &DeleteParams::background()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => {
                    return Err(OfferError::Kube(format!(
                        "cannot delete defined composite resource claim {ns}/{claim}: {e}"
                    )));
                }
            }
        }
        return Ok(false);
    }
    manager.claims.stop(name);
    let crd_name = format!("{}.{}", served.resource.plural, served.resource.group);
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    let uid = xrd.metadata.uid.as_deref();
    if let Some(crd) = crds.get_opt(&crd_name).await.map_err(kube)? {
        let ours = crd
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.controller == Some(true) && Some(o.uid.as_str()) == uid);
        if ours && crd.metadata.deletion_timestamp.is_some() {
            return Ok(false);
        }
        if ours {
            crds.delete(&crd_name, &DeleteParams::background())
                .await
                .map_err(kube)?;
            manager.cluster.forget_kind(&api_version, &kind);
            return Ok(false);
        }
    }
    Ok(true)
}

fn xr_resource(xrd: &CompositeResourceDefinition) -> Option<ApiResource> {
    let gvk = xrd.composite_gvk();
    (!gvk.version.is_empty()).then(|| ApiResource {
        group: gvk.group.clone(),
        version: gvk.version.clone(),
        api_version: gvk.api_version(),
        kind: gvk.kind.clone(),
        plural: xrd.spec.names.plural.clone(),
    })
}

/// Records on the XRD what [`offer`] or [`withdraw`] found: the `Offered`
/// condition and `status.controllers.compositeResourceClaimType`.
pub fn offered_status(xrd_value: &mut Value, offered: &Offered, now: &str) {
    match offered {
        Offered::Yes(claim) => {
            set_condition(
                xrd_value,
                "Offered",
                "True",
                "WatchingCompositeResourceClaim",
                None,
                now,
            );
            if !xrd_value["status"]["controllers"].is_object() {
                xrd_value["status"]["controllers"] = json!({});
            }
            xrd_value["status"]["controllers"]["compositeResourceClaimType"] =
                json!({"apiVersion": claim.api_version, "kind": claim.kind});
        }
        // The claim type stays recorded until the claims are gone: it is
        // how the next reconcile finds them.
        Offered::Withdrawing => terminating(xrd_value, now),
        Offered::No => {
            if let Some(controllers) = xrd_value
                .pointer_mut("/status/controllers")
                .and_then(Value::as_object_mut)
            {
                controllers.remove("compositeResourceClaimType");
            }
            if let Some(list) = xrd_value
                .pointer_mut("/status/conditions")
                .and_then(Value::as_array_mut)
            {
                list.retain(|c| c["type"] != "Offered");
            }
        }
    }
}

/// Marks the XRD's claims as going away, if it offered any.
pub fn terminating(xrd_value: &mut Value, now: &str) {
    if offered_type(xrd_value).is_some() {
        set_condition(
            xrd_value,
            "Offered",
            "False",
            "TerminatingCompositeResourceClaim",
            None,
            now,
        );
    }
}

/// What every claim of one kind shares.
pub struct ClaimContext {
    pub cluster: KubeCluster,
    pub timing: Timing,
    pub xrd: RwLock<CompositeResourceDefinition>,
    pub claim: ApiResource,
    pub xr: ApiResource,
}

struct Running {
    claim: ApiResource,
    xr: ApiResource,
    context: Arc<ClaimContext>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

/// The running claim controllers, by XRD name.
#[derive(Default)]
pub struct ClaimControllers {
    running: Mutex<HashMap<String, Running>>,
}

impl ClaimControllers {
    /// Names of the XRDs whose claim controllers run.
    pub fn running(&self) -> Vec<String> {
        self.running
            .lock()
            .map(|r| r.keys().cloned().collect())
            .unwrap_or_default()
    }

    fn xr_of(&self, xrd: &str) -> Option<ApiResource> {
        self.running
            .lock()
            .ok()
            .and_then(|r| r.get(xrd).map(|c| c.xr.clone()))
    }

    /// Starts the claim controller for `xrd`, or refreshes the XRD it sees
    /// when one already runs for the same kinds.
    pub fn start(
        &self,
        cluster: &KubeCluster,
        timing: &Timing,
        xrd: &CompositeResourceDefinition,
        claim: ApiResource,
        xr: ApiResource,
    ) {
        let name = xrd.metadata.name().to_string();
        let Ok(mut running) = self.running.lock() else {
            return;
        };
        if let Some(current) = running.get(&name)
            && current.claim == claim
            && current.xr == xr
        {
            if let Ok(mut x) = current.context.xrd.write() {
                *x = xrd.clone();
            }
            return;
        }
        if let Some(previous) = running.remove(&name) {
            halt(previous);
        }
        let context = Arc::new(ClaimContext {
            cluster: cluster.clone(),
            timing: timing.clone(),
            xrd: RwLock::new(xrd.clone()),
            claim: claim.clone(),
            xr: xr.clone(),
        });
        let client = cluster.client().clone();
        let claims: Api<DynamicObject> = Api::all_with(client.clone(), &claim);
        let xrs: Api<DynamicObject> = Api::all_with(client, &xr);
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let claim_for_map = claim.clone();
        // An XR change (readiness, status, deletion) brings its claim back.
        let controller = Controller::new_with(claims, watcher::Config::default(), claim.clone())
            .watches_with(
                xrs,
                xr.clone(),
                watcher::Config::default(),
                move |xr: DynamicObject| {
                    let claim_ref = &xr.data["spec"]["claimRef"];
                    let ours = claim_ref["kind"] == claim_for_map.kind.as_str()
                        && claim_ref["apiVersion"] == claim_for_map.api_version.as_str();
                    let target = match (
                        ours,
                        text(claim_ref, "/name"),
                        text(claim_ref, "/namespace"),
                    ) {
                        (true, Some(name), Some(ns)) => Some(
                            kube::runtime::reflector::ObjectRef::new_with(
                                name,
                                claim_for_map.clone(),
                            )
                            .within(ns),
                        ),
                        _ => None,
                    };
                    target.into_iter()
                },
            )
            .graceful_shutdown_on(stop_rx.map(|_| ()));
        let run_context = context.clone();
        let kind = claim.kind.clone();
        let task = tokio::spawn(async move {
            controller
                .run(reconcile, error_policy, run_context)
                .for_each(|_| futures::future::ready(()))
                .await;
            tracing::info!(kind, "claim controller stopped");
        });
        tracing::info!(xrd = name, kind = claim.kind, "claim controller started");
        running.insert(
            name,
            Running {
                claim,
                xr,
                context,
                stop: Some(stop_tx),
                task,
            },
        );
    }

    /// Stops the claim controller for `xrd`, if one runs.
    pub fn stop(&self, xrd: &str) {
        let previous = self.running.lock().ok().and_then(|mut r| r.remove(xrd));
        if let Some(previous) = previous {
            halt(previous);
        }
    }

    /// Stops every claim controller, letting running reconciles finish.
    pub async fn shutdown(&self) {
        let all: Vec<Running> = self
            .running
            .lock()
            .map(|mut r| r.drain().map(|(_, v)| v).collect())
            .unwrap_or_default();
        let mut tasks = Vec::new();
        for mut running in all {
            if let Some(stop) = running.stop.take() {
                let _ = stop.send(());
            }
            tasks.push(running.task);
        }
        for task in tasks {
            let _ = task.await;
        }
    }
}

fn halt(mut running: Running) {
    if let Some(stop) = running.stop.take() {
        let _ = stop.send(());
    }
    tracing::info!(kind = running.claim.kind, "stopping claim controller");
}

fn text<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn to_value(object: &DynamicObject, resource: &ApiResource) -> Result<Value, ClaimError> {
    let mut value = serde_json::to_value(object)
        .map_err(|_| ClaimError::Encode(object.metadata.name.clone().unwrap_or_default()))?;
    value["apiVersion"] = json!(resource.api_version);
    value["kind"] = json!(resource.kind);
    Ok(value)
}

/// Labels and annotations whose domain is Kubernetes' own stay on the claim.
fn without_reserved(map: Option<&Value>) -> Map<String, Value> {
    map.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter(|(k, _)| {
                    !k.split_once('/').is_some_and(|(domain, _)| {
                        domain.ends_with("kubernetes.io") || domain.ends_with("k8s.io")
                    })
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// How a claim refers to itself in its XR's `spec.claimRef`.
fn claim_ref(claim: &Value, ctx: &ClaimContext) -> Value {
    json!({
        "apiVersion": ctx.claim.api_version,
        "kind": ctx.claim.kind,
        "name": claim["metadata"]["name"],
        "namespace": claim["metadata"]["namespace"],
    })
}

/// The XR `claim` wants: its spec minus claim-only fields, its labels and
/// annotations, the claim labels and `spec.claimRef`.
pub fn desired_xr(
    claim: &Value,
    xr: Option<&Value>,
    name: &str,
    xrd: &CompositeResourceDefinition,
    claim_resource: &ApiResource,
    xr_resource: &ApiResource,
) -> Value {
    let mut spec = claim
        .get("spec")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let manual = xr.and_then(|x| text(x, "/spec/compositionUpdatePolicy")) == Some("Manual");
    for field in CLAIM_ONLY_FIELDS {
        if *field == "compositionRevisionRef" && manual {
            continue;
        }
        spec.remove(*field);
    }
    if xrd.spec.enforced_composition_ref.is_some() {
        spec.remove("compositionRef");
    }
    spec.insert(
        "claimRef".into(),
        json!({
            "apiVersion": claim_resource.api_version,
            "kind": claim_resource.kind,
            "name": claim["metadata"]["name"],
            "namespace": claim["metadata"]["namespace"],
        }),
    );
    let mut labels = without_reserved(claim.pointer("/metadata/labels"));
    labels.insert(LABEL_CLAIM_NAME.into(), claim["metadata"]["name"].clone());
    labels.insert(
        LABEL_CLAIM_NAMESPACE.into(),
        claim["metadata"]["namespace"].clone(),
    );
    let mut annotations = without_reserved(claim.pointer("/metadata/annotations"));
    // A statically provisioned XR keeps the external name it has.
    if let Some(external) =
        xr.and_then(|x| x.pointer("/metadata/annotations/crossplane.io~1external-name"))
    {
        annotations.insert(ANNOTATION_EXTERNAL_NAME.into(), external.clone());
    }
    let mut metadata = json!({"name": name, "labels": labels});
    if !annotations.is_empty() {
        metadata["annotations"] = Value::Object(annotations);
    }
    json!({
        "apiVersion": xr_resource.api_version,
        "kind": xr_resource.kind,
        "metadata": metadata,
        "spec": spec,
    })
}

/// What the claim takes from its XR: the reference binding them, the XR's
/// external name and the composition choices the XR controller made.
pub fn claim_from_xr(
    claim: &Value,
    xr: &Value,
    xrd: &CompositeResourceDefinition,
    xr_resource: &ApiResource,
) -> Value {
    let mut spec = Map::new();
    spec.insert(
        "resourceRef".into(),
        json!({"apiVersion": xr_resource.api_version, "kind": xr_resource.kind, "name": xr["metadata"]["name"]}),
    );
    let claim_spec = &claim["spec"];
    let xr_spec = &xr["spec"];
    let composition_ref = if xrd.spec.enforced_composition_ref.is_some() {
        xr_spec
            .get("compositionRef")
            .or(claim_spec.get("compositionRef"))
    } else {
        claim_spec
            .get("compositionRef")
            .or(xr_spec.get("compositionRef"))
    };
    let revision_selector = claim_spec
        .get("compositionRevisionSelector")
        .or(xr_spec.get("compositionRevisionSelector"));
    let automatic = text(xr, "/spec/compositionUpdatePolicy") == Some("Automatic");
    let revision_ref = if automatic {
        xr_spec.get("compositionRevisionRef")
    } else {
        None
    };
    for (field, value) in [
        ("compositionRef", composition_ref),
        ("compositionRevisionSelector", revision_selector),
        ("compositionRevisionRef", revision_ref),
    ] {
        if let Some(v) = value.filter(|v| !v.is_null()) {
            spec.insert(field.into(), v.clone());
        }
    }
    let mut metadata = json!({
        "name": claim["metadata"]["name"],
        "namespace": claim["metadata"]["namespace"],
        "resourceVersion": claim["metadata"]["resourceVersion"],
    });
    if let Some(external) = xr.pointer("/metadata/annotations/crossplane.io~1external-name") {
        metadata["annotations"] = json!({ANNOTATION_EXTERNAL_NAME: external});
    }
    json!({
        "apiVersion": claim["apiVersion"],
        "kind": claim["kind"],
        "metadata": metadata,
        "spec": spec,
    })
}

/// The claim's status: the XR's, minus what only the XR has, with the
/// claim's own conditions and publish time.
pub fn status_from_xr(claim: &Value, xr: &Value) -> Value {
    let mut status = xr
        .get("status")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for field in XR_ONLY_STATUS {
        status.remove(*field);
    }
    for field in ["conditions", "connectionDetails"] {
        if let Some(v) = claim.pointer(&format!("/status/{field}")) {
            status.insert(field.into(), v.clone());
        }
    }
    Value::Object(status)
}

fn condition<'a>(object: &'a Value, type_: &str) -> Option<&'a Value> {
    object
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// Sets a condition object copied from elsewhere, replacing one of its type.
fn put_condition(object: &mut Value, copied: &Value) {
    if !object.get("status").is_some_and(Value::is_object) {
        object["status"] = json!({});
    }
    if !object["status"]["conditions"].is_array() {
        object["status"]["conditions"] = json!([]);
    }
    if let Some(list) = object["status"]["conditions"].as_array_mut() {
        list.retain(|c| c["type"] != copied["type"]);
        list.push(copied.clone());
    }
}

/// Deterministic per claim, so a reconcile that stopped between naming
/// and recording the XR names the same XR the next time.
fn xr_name(claim_name: &str, claim_uid: &str, attempt: u32) -> String {
    deterministic_name(&format!("{claim_name}-"), claim_uid, &attempt.to_string())
}

/// Reconciles one claim.
pub async fn reconcile(
    object: Arc<DynamicObject>,
    ctx: Arc<ClaimContext>,
) -> Result<Action, ClaimError> {
    let mut claim = to_value(&object, &ctx.claim)?;
    let Some(reference) = ObjectRef::of(&claim) else {
        return Ok(Action::await_change());
    };
    let Some(xrd) = ctx.xrd.read().ok().map(|x| x.clone()) else {
        return Ok(Action::await_change());
    };
    let claims = Api::<DynamicObject>::namespaced_with(
        ctx.cluster.client().clone(),
        reference.namespace.as_deref().unwrap_or_default(),
        &ctx.claim,
    );
    let xrs = Api::<DynamicObject>::all_with(ctx.cluster.client().clone(), &ctx.xr);
    let kube_error = |e: kube::Error| ClaimError::Kube {
        claim: reference.to_string(),
        message: e.to_string(),
    };
    let (ctx_ref, claims_ref, reference_ref) = (&*ctx, &claims, &reference);
    let bind_failed = move |claim: Value, message: String| {
        failed(
            ctx_ref,
            claims_ref,
            claim,
            reference_ref,
            "BindCompositeResource",
            message,
        )
    };

    if text(
        &claim,
        &format!(
            "/metadata/annotations/{}",
            ANNOTATION_PAUSED.replace('/', "~1")
        ),
    ) == Some("true")
    {
        event(
            &ctx,
            &reference,
            EventType::Normal,
            "ReconciliationPaused",
            RECONCILE_PAUSED,
        );
        set_condition(
            &mut claim,
            "Synced",
            "False",
            "ReconcilePaused",
            Some(RECONCILE_PAUSED),
            &now(),
        );
        write_status(&claims, &claim).await.map_err(kube_error)?;
        return Ok(Action::await_change());
    }

    let mut xr = None;
    if let Some(name) = text(&claim, "/spec/resourceRef/name") {
        match xrs.get_opt(name).await {
            Ok(found) => xr = found.map(|x| to_value(&x, &ctx.xr)).transpose()?,
            Err(e) => {
                let message = format!("cannot get bound composite resource: {e}");
                return bind_failed(claim, message).await;
            }
        }
    }
    let own_ref = claim_ref(&claim, &ctx);
    if let Some(x) = &xr
        && let Some(bound) = x.pointer("/spec/claimRef").filter(|r| !r.is_null())
        && *bound != own_ref
    {
        let message = format!(
            "refusing to operate on composite resource {:?} that is not bound to this claim: bound to claim {:?}",
            text(x, "/metadata/name").unwrap_or_default(),
            text(bound, "/name").unwrap_or_default(),
        );
        bind_failed(claim, message).await?;
        // A human has to fix the reference; the claim's next edit brings it back.
        return Ok(Action::await_change());
    }

    if claim.pointer("/metadata/deletionTimestamp").is_some() {
        return delete(&ctx, &claims, &xrs, claim, xr, &reference).await;
    }

    if !has_finalizer(&claim) {
        let mut finalizers = claim["metadata"]["finalizers"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        finalizers.push(json!(FINALIZER));
        match patch_finalizers(&claims, &claim, &reference, finalizers).await {
            Ok(patched) => claim = to_value(&patched, &ctx.claim)?,
            Err(kube::Error::Api(s)) if s.code == 409 => {
                return Ok(Action::requeue(Duration::from_millis(200)));
            }
            Err(e) => {
                let message = format!("cannot add finalizer to claim: {e}");
                return bind_failed(claim, message).await;
            }
        }
    }

    let before = xr
        .as_ref()
        .and_then(|x| x.pointer("/spec/claimRef"))
        .cloned();
    let name = match text(&claim, "/spec/resourceRef/name") {
        Some(n) => n.to_string(),
        None => match free_xr_name(&xrs, &claim, &own_ref).await {
            Ok(n) => n,
            Err(e) => {
                let message = format!(
                    "cannot bind and sync claim with composite resource: cannot generate a name for composite resource: {e}"
                );
                return bind_failed(claim, message).await;
            }
        },
    };
    let desired = desired_xr(&claim, xr.as_ref(), &name, &xrd, &ctx.claim, &ctx.xr);
    let bound_view = xr.clone().unwrap_or_else(|| desired.clone());
    // The claim records its XR before the XR exists, so a crash in between
    // cannot leak an XR the claim does not know about.
    let claim_patch = claim_from_xr(&claim, &bound_view, &xrd, &ctx.xr);
    let params = PatchParams::apply(CLAIM_FIELD_MANAGER).force();
    let claim_name = reference.name.clone();
    match claims
        .patch(
            &claim_name,
            &params,
            &Patch::Apply(&applied(&claim_patch, false)),
        )
        .await
    {
        Ok(updated) => claim = to_value(&updated, &ctx.claim)?,
        Err(kube::Error::Api(s)) if s.code == 409 => {
            return Ok(Action::requeue(Duration::from_millis(200)));
        }
        Err(e) => {
            let message = format!(
                "cannot bind and sync claim with composite resource: cannot update composite resource claim: {e}"
            );
            return bind_failed(claim, message).await;
        }
    }
    let xr = match xrs
        .patch(&name, &params, &Patch::Apply(&applied(&desired, false)))
        .await
    {
        Ok(x) => to_value(&x, &ctx.xr)?,
        Err(e) => {
            let message = format!(
                "cannot bind and sync claim with composite resource: cannot apply composite resource {name:?}: {e}"
            );
            return bind_failed(claim, message).await;
        }
    };
    if before.as_ref() != Some(&own_ref) && xr.pointer("/spec/claimRef") == Some(&own_ref) {
        event(
            &ctx,
            &reference,
            EventType::Normal,
            "BindCompositeResource",
            "Successfully bound composite resource",
        );
    }

    claim["status"] = status_from_xr(&claim, &xr);
    let now = now();
    set_condition(&mut claim, "Synced", "True", "ReconcileSuccess", None, &now);
    let copied: Vec<Value> = xr
        .pointer("/status/claimConditionTypes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(|t| condition(&xr, t).cloned())
        .collect();
    for c in &copied {
        put_condition(&mut claim, c);
    }

    if condition(&xr, "Ready").is_none_or(|c| c["status"] != "True") {
        event(
            &ctx,
            &reference,
            EventType::Normal,
            "BindCompositeResource",
            "Composite resource is not yet ready",
        );
        set_condition(
            &mut claim,
            "Ready",
            "False",
            "Waiting",
            Some("Claim is waiting for composite resource to become Ready"),
            &now,
        );
        write_status(&claims, &claim).await.map_err(kube_error)?;
        return Ok(Action::requeue(ctx.timing.poll_interval));
    }

    match propagate_connection(&ctx, &claim, &xr).await {
        Ok(true) => {
            claim["status"]["connectionDetails"] = json!({"lastPublishedTime": now});
            event(
                &ctx,
                &reference,
                EventType::Normal,
                "PropagateConnectionSecret",
                "Successfully propagated connection details from composite resource",
            );
        }
        Ok(false) => {}
        Err(e) => {
            let message =
                format!("cannot propagate connection details from composite resource: {e}");
            return failed(
                &ctx,
                &claims,
                claim,
                &reference,
                "PropagateConnectionSecret",
                message,
            )
            .await;
        }
    }
    set_condition(&mut claim, "Ready", "True", "Available", None, &now);
    write_status(&claims, &claim).await.map_err(kube_error)?;
    Ok(Action::requeue(ctx.timing.poll_interval))
}

/// A name for a new XR that no XR bound to another claim has.
async fn free_xr_name(
    xrs: &Api<DynamicObject>,
    claim: &Value,
    own_ref: &Value,
) -> Result<String, kube::Error> {
    let claim_name = text(claim, "/metadata/name").unwrap_or_default();
    let uid = text(claim, "/metadata/uid").unwrap_or_default();
    let mut attempt = 0;
    loop {
        let candidate = xr_name(claim_name, uid, attempt);
        let taken = xrs
            .get_opt(&candidate)
            .await?
            .is_some_and(|x| x.data["spec"]["claimRef"] != *own_ref);
        if !taken || attempt >= 8 {
            return Ok(candidate);
        }
        attempt += 1;
    }
}

/// Deletes the XR with the claim's `compositeDeletePolicy`, then lets the
/// claim go. With `Foreground` the claim stays until the XR is gone.
async fn delete(
    ctx: &ClaimContext,
    claims: &Api<DynamicObject>,
    xrs: &Api<DynamicObject>,
    mut claim: Value,
    xr: Option<Value>,
    reference: &ObjectRef,
) -> Result<Action, ClaimError> {
    if !has_finalizer(&claim) {
        return Ok(Action::await_change());
    }
    let kube_error = |e: kube::Error| ClaimError::Kube {
        claim: reference.to_string(),
        message: e.to_string(),
    };
    set_condition(&mut claim, "Ready", "False", "Deleting", None, &now());
    let foreground = match text(&claim, "/spec/compositeDeletePolicy") {
        Some(p) => p == "Foreground",
        None => ctx
            .xrd
            .read()
            .map(|x| {
                x.default_composite_delete_policy()
                    == plait_model::CompositeDeletePolicy::Foreground
            })
            .unwrap_or(false),
    };
    if let Some(xr) = &xr {
        let name = text(xr, "/metadata/name").unwrap_or_default();
        if foreground && xr.pointer("/metadata/deletionTimestamp").is_some() {
            write_status(claims, &claim).await.map_err(kube_error)?;
            return Ok(Action::requeue(DELETE_POLL));
        }
        let params = if foreground {
            DeleteParams::foreground()
        } else {
            DeleteParams::background()
        };
        match xrs.delete(name, &params).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => {
                let message = format!("cannot delete bound composite resource: {e}");
                return failed(
                    ctx,
                    claims,
                    claim,
                    reference,
                    "DeleteCompositeResource",
                    message,
                )
                .await;
            }
        }
        if foreground {
            write_status(claims, &claim).await.map_err(kube_error)?;
            return Ok(Action::requeue(DELETE_POLL));
        }
    }
    event(
        ctx,
        reference,
        EventType::Normal,
        "DeleteCompositeResource",
        "Successfully deleted composite resource",
    );
    let finalizers = claim["metadata"]["finalizers"]
        .as_array()
        .map(|f| f.iter().filter(|v| *v != FINALIZER).cloned().collect())
        .unwrap_or_default();
    match patch_finalizers(claims, &claim, reference, finalizers).await {
        Ok(_) => Ok(Action::await_change()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(Action::await_change()),
        Err(kube::Error::Api(s)) if s.code == 409 => {
            Ok(Action::requeue(Duration::from_millis(200)))
        }
        Err(e) => {
            let message = format!("cannot remove finalizer from claim: {e}");
            failed(
                ctx,
                claims,
                claim,
                reference,
                "DeleteCompositeResource",
                message,
            )
            .await
        }
    }
}

/// Copies the XR's connection Secret into the claim's, in the claim's
/// namespace. True when the claim's Secret changed.
async fn propagate_connection(
    ctx: &ClaimContext,
    claim: &Value,
    xr: &Value,
) -> Result<bool, String> {
    let (Some(from_name), Some(from_ns), Some(to_name), Some(claim_uid)) = (
        text(xr, "/spec/writeConnectionSecretToRef/name"),
        text(xr, "/spec/writeConnectionSecretToRef/namespace"),
        text(claim, "/spec/writeConnectionSecretToRef/name"),
        text(claim, "/metadata/uid"),
    ) else {
        return Ok(false);
    };
    let client = ctx.cluster.client().clone();
    let from = Api::<Secret>::namespaced(client.clone(), from_ns)
        .get(from_name)
        .await
        .map_err(|e| {
            format!("cannot get composite resource's connection secret {from_ns}/{from_name}: {e}")
        })?;
    // Only a Secret the XR controls is copied, so a claim cannot use its
    // XR's reference to read a Secret it has no access to.
    let controlled =
        from.metadata.owner_references.iter().flatten().any(|o| {
            o.controller == Some(true) && Some(o.uid.as_str()) == text(xr, "/metadata/uid")
        });
    if !controlled {
        return Err(format!(
            "cannot establish control of existing connection secret {from_ns}/{from_name}"
        ));
    }
    let namespace = text(claim, "/metadata/namespace").unwrap_or_default();
    let secrets = Api::<Secret>::namespaced(client, namespace);
    let data = from.data.unwrap_or_default();
    if let Some(existing) = secrets
        .get_opt(to_name)
        .await
        .map_err(|e| format!("cannot get connection secret {namespace}/{to_name}: {e}"))?
    {
        let owner = existing
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true))
            .map(|o| o.uid.clone());
        if owner.as_deref().is_some_and(|u| u != claim_uid) {
            return Err(format!(
                "cannot create or update connection secret {namespace}/{to_name}: existing secret is not controlled by UID {claim_uid:?}"
            ));
        }
        if existing.data.unwrap_or_default() == data && owner.is_some() {
            return Ok(false);
        }
    }
    let encoded: BTreeMap<String, Value> = data
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or(Value::Null)))
        .collect();
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": to_name,
            "namespace": namespace,
            "ownerReferences": [{
                "apiVersion": claim["apiVersion"],
                "kind": claim["kind"],
                "name": claim["metadata"]["name"],
                "uid": claim_uid,
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "type": CONNECTION_SECRET_TYPE,
        "data": encoded,
    });
    secrets
        .patch(
            to_name,
            &PatchParams::apply(CLAIM_FIELD_MANAGER).force(),
            &Patch::Apply(&secret),
        )
        .await
        .map_err(|e| {
            format!("cannot create or update connection secret {namespace}/{to_name}: {e}")
        })?;
    Ok(true)
}

fn has_finalizer(claim: &Value) -> bool {
    claim["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| f.iter().any(|v| v == FINALIZER))
}

/// Merge-patches the finalizers, guarded by the resourceVersion read.
async fn patch_finalizers(
    claims: &Api<DynamicObject>,
    claim: &Value,
    reference: &ObjectRef,
    finalizers: Vec<Value>,
) -> Result<DynamicObject, kube::Error> {
    let patch = json!({"metadata": {
        "finalizers": finalizers,
        "resourceVersion": claim["metadata"]["resourceVersion"],
    }});
    claims
        .patch(
            &reference.name,
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
}

async fn write_status(claims: &Api<DynamicObject>, claim: &Value) -> Result<(), kube::Error> {
    let name = text(claim, "/metadata/name").unwrap_or_default();
    claims
        .patch_status(
            name,
            &PatchParams::apply(CLAIM_FIELD_MANAGER).force(),
            &Patch::Apply(&applied(claim, true)),
        )
        .await
        .map(|_| ())
}

fn event(
    ctx: &ClaimContext,
    claim: &ObjectRef,
    event_type: EventType,
    reason: &str,
    message: &str,
) {
    ctx.cluster.publish(Event {
        regarding: claim.clone(),
        event_type,
        reason: reason.into(),
        message: message.into(),
    });
}

/// Reports a failed reconcile on the claim's `Synced` condition and in an event.
async fn failed(
    ctx: &ClaimContext,
    claims: &Api<DynamicObject>,
    mut claim: Value,
    reference: &ObjectRef,
    reason: &str,
    message: String,
) -> Result<Action, ClaimError> {
    tracing::info!(claim = %reference, error = %message, "claim not synced");
    event(ctx, reference, EventType::Warning, reason, &message);
    set_condition(
        &mut claim,
        "Synced",
        "False",
        "ReconcileError",
        Some(&message),
        &now(),
    );
    write_status(claims, &claim)
        .await
        .map_err(|e| ClaimError::Kube {
            claim: reference.to_string(),
            message: e.to_string(),
        })?;
    Ok(Action::requeue(
        ctx.timing.backoff_base.max(Duration::from_secs(2)),
    ))
}

pub fn error_policy(
    object: Arc<DynamicObject>,
    error: &ClaimError,
    ctx: Arc<ClaimContext>,
) -> Action {
    tracing::warn!(
        kind = ctx.claim.kind,
        claim = object.metadata.name.as_deref().unwrap_or_default(),
        %error,
        "claim reconcile failed"
    );
    Action::requeue(Duration::from_secs(5))
}

#[cfg(test)]
mod tests {
    use super::*;
    use plait_model::Manifest;

    fn xrd(enforced: bool) -> CompositeResourceDefinition {
        let mut value = json!({
            "apiVersion": "apiextensions.crossplane.io/v1",
            "kind": "CompositeResourceDefinition",
            "metadata": {"name": "xapps.example.org"},
            "spec": {"group": "example.org", "names": {"kind": "XApp", "plural": "xapps"},
                     "claimNames": {"kind": "App", "plural": "apps"}},
        });
        if enforced {
            value["spec"]["enforcedCompositionRef"] = json!({"name": "enforced"});
        }
        CompositeResourceDefinition::from_value(value).unwrap()
    }

    fn resources() -> (ApiResource, ApiResource) {
        let make = |kind: &str, plural: &str| ApiResource {
            group: "example.org".into(),
            version: "v1".into(),
            api_version: "example.org/v1".into(),
            kind: kind.into(),
            plural: plural.into(),
        };
        (make("App", "apps"), make("XApp", "xapps"))
    }

    fn claim(spec: Value) -> Value {
        json!({
            "apiVersion": "example.org/v1", "kind": "App",
            "metadata": {"name": "c", "namespace": "ns", "uid": "u", "resourceVersion": "3",
                "labels": {"team": "a", "app.kubernetes.io/name": "x"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "note": "n"}},
            "spec": spec,
        })
    }

    #[test]
    fn the_xr_gets_the_claim_spec_minus_claim_only_fields() {
        let (claim_r, xr_r) = resources();
        let spec = json!({
            "image": "one",
            "compositionRef": {"name": "mine"},
            "compositionRevisionRef": {"name": "rev"},
            "compositeDeletePolicy": "Foreground",
            "resourceRef": {"apiVersion": "example.org/v1", "kind": "XApp", "name": "x"},
            "writeConnectionSecretToRef": {"name": "s"},
        });
        let manual = json!({"spec": {"compositionUpdatePolicy": "Manual"}});
        let cases = [
            // (enforced, existing XR, wanted spec keys)
            (false, None, vec!["claimRef", "compositionRef", "image"]),
            (true, None, vec!["claimRef", "image"]),
            (
                false,
                Some(&manual),
                vec![
                    "claimRef",
                    "compositionRef",
                    "compositionRevisionRef",
                    "image",
                ],
            ),
        ];
        for (enforced, existing, want) in cases {
            let xr = desired_xr(
                &claim(spec.clone()),
                existing,
                "c-1",
                &xrd(enforced),
                &claim_r,
                &xr_r,
            );
            let keys: Vec<&str> = xr["spec"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(keys, want, "enforced={enforced} existing={existing:?}");
            assert_eq!(
                xr["spec"]["claimRef"],
                json!({"apiVersion": "example.org/v1", "kind": "App", "name": "c", "namespace": "ns"})
            );
            assert_eq!(
                xr["metadata"],
                json!({
                    "name": "c-1",
                    "labels": {"team": "a", LABEL_CLAIM_NAME: "c", LABEL_CLAIM_NAMESPACE: "ns"},
                    "annotations": {"note": "n"},
                }),
                "labels and annotations in Kubernetes' own domains stay on the claim"
            );
        }
    }

    #[test]
    fn the_claim_takes_its_binding_and_composition_choices_from_the_xr() {
        let (_, xr_r) = resources();
        let xr = json!({
            "metadata": {"name": "c-1", "annotations": {ANNOTATION_EXTERNAL_NAME: "ext"}},
            "spec": {"compositionRef": {"name": "picked"}, "compositionUpdatePolicy": "Automatic",
                     "compositionRevisionRef": {"name": "picked-rev"}},
        });
        let cases = [
            (false, json!({}), "picked"),
            (false, json!({"compositionRef": {"name": "mine"}}), "mine"),
            (true, json!({"compositionRef": {"name": "mine"}}), "picked"),
        ];
        for (enforced, spec, want) in cases {
            let patch = claim_from_xr(&claim(spec), &xr, &xrd(enforced), &xr_r);
            assert_eq!(
                patch["spec"]["compositionRef"]["name"], want,
                "enforced={enforced}"
            );
            assert_eq!(
                patch["spec"]["resourceRef"],
                json!({"apiVersion": "example.org/v1", "kind": "XApp", "name": "c-1"})
            );
            assert_eq!(
                patch["spec"]["compositionRevisionRef"]["name"],
                "picked-rev"
            );
            assert_eq!(
                patch["metadata"]["annotations"][ANNOTATION_EXTERNAL_NAME],
                "ext"
            );
            assert_eq!(
                patch["metadata"]["resourceVersion"], "3",
                "a stale claim conflicts"
            );
        }
    }

    #[test]
    fn the_claim_status_mirrors_the_xr_but_keeps_its_own_conditions() {
        let mut c = claim(json!({}));
        c["status"] = json!({
            "conditions": [{"type": "Synced", "status": "True"}],
            "connectionDetails": {"lastPublishedTime": "t"},
            "stale": 1,
        });
        let xr = json!({"status": {
            "address": "a",
            "conditions": [{"type": "Ready", "status": "False"}],
            "connectionDetails": {"lastPublishedTime": "x"},
            "claimConditionTypes": ["Custom"],
        }});
        assert_eq!(
            status_from_xr(&c, &xr),
            json!({
                "address": "a",
                "conditions": [{"type": "Synced", "status": "True"}],
                "connectionDetails": {"lastPublishedTime": "t"},
            })
        );
    }

    #[test]
    fn offered_status_follows_what_offer_found() {
        let (claim_r, _) = resources();
        let offered = json!({"status": {
            "controllers": {
                "compositeResourceType": {"apiVersion": "example.org/v1", "kind": "XApp"},
                "compositeResourceClaimType": {"apiVersion": "example.org/v1", "kind": "App"},
            },
            "conditions": [{"type": "Offered", "status": "True", "reason": "WatchingCompositeResourceClaim"}],
        }});
        let cases = [
            (
                Offered::Yes(claim_r),
                Some(("True", "WatchingCompositeResourceClaim")),
                true,
            ),
            (
                Offered::Withdrawing,
                Some(("False", "TerminatingCompositeResourceClaim")),
                true,
            ),
            (Offered::No, None, false),
        ];
        for (state, want_condition, want_type) in cases {
            let mut xrd = offered.clone();
            offered_status(&mut xrd, &state, "now");
            let got = condition(&xrd, "Offered")
                .map(|c| (c["status"].as_str().unwrap(), c["reason"].as_str().unwrap()));
            assert_eq!(got, want_condition, "{state:?}");
            assert_eq!(
                xrd.pointer("/status/controllers/compositeResourceClaimType")
                    .is_some(),
                want_type,
                "{state:?}"
            );
            assert!(
                xrd.pointer("/status/controllers/compositeResourceType")
                    .is_some()
            );
        }
    }

    #[test]
    fn generated_xr_names_are_stable_per_claim_and_attempt() {
        assert_eq!(xr_name("c", "u", 0), xr_name("c", "u", 0));
        assert_ne!(xr_name("c", "u", 0), xr_name("c", "u", 1));
        assert_ne!(xr_name("c", "u", 0), xr_name("c", "v", 0));
        assert!(xr_name("c", "u", 0).starts_with("c-"));
        assert!(xr_name(&"c".repeat(80), "u", 0).len() <= 63);
    }
}
