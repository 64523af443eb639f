//! The XRD controller: turns each XRD into a CRD and runs a controller for
//! the XR kind it defines, for as long as the XRD exists.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::{Controller, watcher};
use plait_model::{CompositeResourceDefinition, Manifest};
use plait_reconcile::{ObjectRef, set_condition};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::claim::{self, ClaimControllers, OfferError, Offered};
use crate::cluster::KubeCluster;
use crate::crd::{composite_crd, validate_claim_names};
use crate::functions::FunctionResolver;
use crate::revisions::revision_resource;
use crate::watches::{ComposedWatches, Route};
use crate::xr::{self, Timing, XrContext, now};

pub const FIELD_MANAGER: &str = "plait";
pub const FINALIZER: &str = "defined.apiextensions.crossplane.io";
pub const XRD_GROUP: &str = "apiextensions.crossplane.io";
/// The version the controller reads XRDs at. Both versions share storage;
/// the scope each was written with is defaulted into the stored object.
pub const XRD_VERSION: &str = "v1";
const CRD_ESTABLISH_TIMEOUT: Duration = Duration::from_secs(60);

pub fn xrd_resource() -> ApiResource {
    ApiResource {
        group: XRD_GROUP.into(),
        version: XRD_VERSION.into(),
        api_version: format!("{XRD_GROUP}/{XRD_VERSION}"),
        kind: "CompositeResourceDefinition".into(),
        plural: "compositeresourcedefinitions".into(),
    }
}

pub fn composition_resource() -> ApiResource {
    ApiResource {
        group: XRD_GROUP.into(),
        version: "v1".into(),
        api_version: xr::COMPOSITION_API_VERSION.into(),
        kind: xr::COMPOSITION_KIND.into(),
        plural: "compositions".into(),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum XrdError {
    #[error("XRD {xrd:?}: {message}")]
    Kube { xrd: String, message: String },
    #[error("XRD {0:?}: cannot be encoded")]
    Encode(String),
}

/// A running XR controller.
struct Running {
    resource: ApiResource,
    context: Arc<XrContext>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

/// What the XRD controller shares with the XR controllers it starts.
pub struct Manager {
    pub cluster: KubeCluster,
    pub resolver: Arc<dyn FunctionResolver>,
    pub watches: Arc<ComposedWatches>,
    pub timing: Timing,
    /// The claim controllers of XRDs that offer claims.
    pub claims: ClaimControllers,
    running: Mutex<HashMap<String, Running>>,
}

impl Manager {
    pub fn new(
        cluster: KubeCluster,
        resolver: Arc<dyn FunctionResolver>,
        timing: Timing,
    ) -> Manager {
        Manager {
            cluster,
            resolver,
            watches: Arc::new(ComposedWatches::default()),
            timing,
            claims: ClaimControllers::default(),
            running: Mutex::new(HashMap::new()),
        }
    }

    /// Names of the XRDs whose XR controllers run.
    pub fn running(&self) -> Vec<String> {
        self.running
            .lock()
            .map(|r| r.keys().cloned().collect())
            .unwrap_or_default()
    }

    fn start(&self, xrd: &CompositeResourceDefinition, resource: ApiResource, namespaced: bool) {
        let name = xrd.metadata.name().to_string();
        let Ok(mut running) = self.running.lock() else {
            return;
        };
        if let Some(current) = running.get(&name)
            && current.resource == resource
        {
            if let Ok(mut x) = current.context.xrd.write() {
                *x = xrd.clone();
            }
            return;
        }
        if let Some(previous) = running.remove(&name) {
            stop(previous, &self.watches);
        }
        let context = Arc::new(XrContext::new(
            self.cluster.clone(),
            self.resolver.clone(),
            self.watches.clone(),
            self.timing.clone(),
            xrd.clone(),
            resource.clone(),
        ));
        let (sender, triggers) = futures::channel::mpsc::unbounded();
        self.watches.route(
            &resource.group,
            &resource.kind,
            Route {
                sender,
                resource: resource.clone(),
                namespaced,
            },
        );
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let api: Api<DynamicObject> = Api::all_with(self.cluster.client().clone(), &resource);
        let controller = Controller::new_with(api, watcher::Config::default(), resource.clone());
        let revisions: Api<DynamicObject> =
            Api::all_with(self.cluster.client().clone(), &revision_resource());
        let store = controller.store();
        let (api_version, kind) = (resource.api_version.clone(), resource.kind.clone());
        let xr_resource = resource.clone();
        // A new or renumbered CompositionRevision re-runs every XR of the
        // kind it composes; each XR's reconcile decides whether the change
        // concerns it.
        let controller = controller
            .watches_with(
                revisions,
                revision_resource(),
                watcher::Config::default(),
                move |revision: DynamicObject| {
                    let type_ref = &revision.data["spec"]["compositeTypeRef"];
                    let ours = type_ref["apiVersion"] == api_version.as_str()
                        && type_ref["kind"] == kind.as_str();
                    let xrs = if ours { store.state() } else { Vec::new() };
                    xrs.into_iter()
                        .map(|xr| {
                            kube::runtime::reflector::ObjectRef::from_obj_with(
                                xr.as_ref(),
                                xr_resource.clone(),
                            )
                        })
                        .collect::<Vec<_>>()
                },
            )
            .reconcile_on(triggers)
            .graceful_shutdown_on(stop_rx.map(|_| ()));
        let run_context = context.clone();
        let kind = resource.kind.clone();
        let task = tokio::spawn(async move {
            controller
                .run(xr::reconcile, xr::error_policy, run_context)
                .for_each(|_| futures::future::ready(()))
                .await;
            tracing::info!(kind, "XR controller stopped");
        });
        tracing::info!(
            xrd = name,
            kind = resource.kind,
            version = resource.version,
            "XR controller started"
        );
        running.insert(
            name,
            Running {
                resource,
                context,
                stop: Some(stop_tx),
                task,
            },
        );
    }

    fn stop_controller(&self, xrd: &str) {
        let previous = self.running.lock().ok().and_then(|mut r| r.remove(xrd));
        if let Some(previous) = previous {
            stop(previous, &self.watches);
        }
    }

    /// Stops every XR controller and watch, letting running reconciles finish.
    pub async fn shutdown(&self) {
        self.claims.shutdown().await;
        let all: Vec<Running> = self
            .running
            .lock()
            .map(|mut r| r.drain().map(|(_, v)| v).collect())
            .unwrap_or_default();
        let mut tasks = Vec::new();
        for mut running in all {
            self.watches
                .unroute(&running.resource.group, &running.resource.kind);
            if let Some(stop) = running.stop.take() {
                let _ = stop.send(());
            }
            tasks.push(running.task);
        }
        for task in tasks {
            let _ = task.await;
        }
        self.watches.stop();
    }
}

fn stop(mut running: Running, watches: &ComposedWatches) {
    watches.unroute(&running.resource.group, &running.resource.kind);
    if let Some(stop) = running.stop.take() {
        let _ = stop.send(());
    }
    tracing::info!(kind = running.resource.kind, "stopping XR controller");
}

fn kube_error(xrd: &str, e: impl std::fmt::Display) -> XrdError {
    XrdError::Kube {
        xrd: xrd.into(),
        message: e.to_string(),
    }
}

/// Reconciles one XRD.
pub async fn reconcile(
    object: Arc<DynamicObject>,
    manager: Arc<Manager>,
) -> Result<Action, XrdError> {
    let name = object.metadata.name.clone().unwrap_or_default();
    let mut value =
        serde_json::to_value(object.as_ref()).map_err(|_| XrdError::Encode(name.clone()))?;
    value["apiVersion"] = json!(xrd_resource().api_version);
    value["kind"] = json!("CompositeResourceDefinition");
    let client = manager.cluster.client().clone();
    let xrds: Api<DynamicObject> = Api::all_with(client.clone(), &xrd_resource());
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());

    if value.pointer("/metadata/deletionTimestamp").is_some() {
        return delete(&manager, &name, value, &xrds, &crds).await;
    }

    let xrd = match CompositeResourceDefinition::from_value(value.clone()) {
        Ok(xrd) => xrd,
        Err(e) => return invalid(&manager, &name, value, &e.to_string()).await,
    };
    // Checked ahead of validation to report it as upstream does.
    if xrd.spec.claim_names.is_some()
        && let Err(e) = validate_claim_names(&xrd)
    {
        let message =
            format!("cannot render composite resource claim CustomResourceDefinition: {e}");
        return invalid(&manager, &name, value, &message).await;
    }
    if let Err(errors) = xrd.validate() {
        let message = format!("invalid XRD: {}", plait_model::render_errors(&errors));
        return invalid(&manager, &name, value, &message).await;
    }
    let gvk = xrd.composite_gvk();

    let finalizers: Vec<Value> = value
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !finalizers.iter().any(|f| f == FINALIZER) {
        let mut with = finalizers.clone();
        with.push(json!(FINALIZER));
        let patch = json!({"metadata": {"finalizers": with, "resourceVersion": value.pointer("/metadata/resourceVersion")}});
        xrds.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| kube_error(&name, e))?;
    }

    let crd = match composite_crd(&xrd) {
        Ok(crd) => crd,
        Err(e) => return invalid(&manager, &name, value, &e.to_string()).await,
    };
    let applied = crds
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&crd),
        )
        .await;
    if let Err(e) = applied {
        let message = format!("cannot apply CustomResourceDefinition: {e}");
        return invalid(&manager, &name, value, &message).await;
    }
    let established = tokio::time::timeout(
        CRD_ESTABLISH_TIMEOUT,
        await_condition(crds.clone(), &name, conditions::is_crd_established()),
    )
    .await;
    if !matches!(established, Ok(Ok(Some(_)))) {
        let message = "waiting for the CustomResourceDefinition to be established";
        return invalid(&manager, &name, value, message).await;
    }
    manager.cluster.forget_kind(&gvk.api_version(), &gvk.kind);
    let resource = ApiResource {
        group: gvk.group.clone(),
        version: gvk.version.clone(),
        api_version: gvk.api_version(),
        kind: gvk.kind.clone(),
        plural: xrd.spec.names.plural.clone(),
    };
    manager.start(&xrd, resource.clone(), xrd.is_namespaced());
    let offered = match claim::offer(&manager, &xrd, &value, resource).await {
        Ok(offered) => offered,
        Err(OfferError::Invalid(message)) => {
            return invalid(&manager, &name, value, &message).await;
        }
        Err(e @ OfferError::Kube(_)) => return Err(kube_error(&name, e)),
    };

    let now = now();
    set_condition(&mut value, "Synced", "True", "ReconcileSuccess", None, &now);
    set_condition(
        &mut value,
        "Established",
        "True",
        "WatchingCompositeResource",
        None,
        &now,
    );
    if !value["status"]["controllers"].is_object() {
        value["status"]["controllers"] = json!({});
    }
    value["status"]["controllers"]["compositeResourceType"] =
        json!({"apiVersion": gvk.api_version(), "kind": gvk.kind});
    claim::offered_status(&mut value, &offered, &now);
    write_status(&manager, &value).await?;
    if offered == Offered::Withdrawing {
        return Ok(Action::requeue(Duration::from_secs(2)));
    }
    Ok(Action::requeue(manager.timing.poll_interval))
}

async fn write_status(manager: &Manager, xrd: &Value) -> Result<(), XrdError> {
    let name = xrd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    manager
        .cluster
        .apply_async(xrd, FIELD_MANAGER, true)
        .await
        .map_err(|e| kube_error(name, e))?;
    Ok(())
}

/// Reports an XRD that cannot be served as it stands, naming what is wrong.
async fn invalid(
    manager: &Manager,
    name: &str,
    mut value: Value,
    message: &str,
) -> Result<Action, XrdError> {
    tracing::warn!(xrd = name, message, "XRD not established");
    manager.cluster.publish(plait_reconcile::Event {
        regarding: ObjectRef {
            api_version: xrd_resource().api_version,
            kind: "CompositeResourceDefinition".into(),
            namespace: None,
            name: name.into(),
        },
        event_type: plait_reconcile::EventType::Warning,
        reason: "ReconcileError".into(),
        message: message.into(),
    });
    set_condition(
        &mut value,
        "Synced",
        "False",
        "ReconcileError",
        Some(message),
        &now(),
    );
    write_status(manager, &value).await?;
    Ok(Action::requeue(
        manager.timing.poll_interval.min(Duration::from_secs(30)),
    ))
}

/// Deletes every XR of the kind, then stops its controller, removes the CRD
/// and releases the XRD.
async fn delete(
    manager: &Manager,
    name: &str,
    mut value: Value,
    xrds: &Api<DynamicObject>,
    crds: &Api<CustomResourceDefinition>,
) -> Result<Action, XrdError> {
    let has_finalizer = value
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|v| v == FINALIZER));
    if !has_finalizer {
        return Ok(Action::await_change());
    }
    set_condition(
        &mut value,
        "Established",
        "False",
        "TerminatingCompositeResource",
        None,
        &now(),
    );
    claim::terminating(&mut value, &now());
    write_status(manager, &value).await?;

    // Claims go first: deleting them deletes their XRs.
    let claims_gone = match CompositeResourceDefinition::from_value(value.clone()) {
        Ok(xrd) => claim::withdraw(manager, &xrd, &value)
            .await
            .map_err(|e| kube_error(name, e))?,
        Err(_) => {
            manager.claims.stop(name);
            true
        }
    };
    if !claims_gone {
        return Ok(Action::requeue(Duration::from_secs(2)));
    }

    if let Some(crd) = crds.get_opt(name).await.map_err(|e| kube_error(name, e))? {
        let served = crd.spec.versions.iter().find(|v| v.storage);
        if let Some(version) = served {
            let resource = ApiResource {
                group: crd.spec.group.clone(),
                version: version.name.clone(),
                api_version: format!("{}/{}", crd.spec.group, version.name),
                kind: crd.spec.names.kind.clone(),
                plural: crd.spec.names.plural.clone(),
            };
            let xrs: Api<DynamicObject> =
                Api::all_with(manager.cluster.client().clone(), &resource);
            let list = xrs
                .list_metadata(&ListParams::default())
                .await
                .map_err(|e| kube_error(name, e))?;
            if !list.items.is_empty() {
                for item in &list.items {
                    let (Some(xr_name), ns) = (
                        item.metadata.name.as_deref(),
                        item.metadata.namespace.as_deref(),
                    ) else {
                        continue;
                    };
                    if item.metadata.deletion_timestamp.is_some() {
                        continue;
                    }
                    let api: Api<DynamicObject> = match ns {
                        Some(ns) => {
                            Api::namespaced_with(manager.cluster.client().clone(), ns, &resource)
                        }
                        None => Api::all_with(manager.cluster.client().clone(), &resource),
                    };
                    api.delete(xr_name, &DeleteParams::background())
                        .await
                        .map_err(|e| kube_error(name, e))?;
                }
                // The XR controller keeps running to release them.
                return Ok(Action::requeue(Duration::from_secs(2)));
            }
        }
        manager.stop_controller(name);
        crds.delete(name, &DeleteParams::background())
            .await
            .map_err(|e| kube_error(name, e))?;
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    manager.stop_controller(name);
    let finalizers: Vec<Value> = value
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|f| f.iter().filter(|v| *v != FINALIZER).cloned().collect())
        .unwrap_or_default();
    let patch = json!({"metadata": {"finalizers": finalizers}});
    xrds.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| kube_error(name, e))?;
    Ok(Action::await_change())
}

pub fn error_policy(object: Arc<DynamicObject>, error: &XrdError, _: Arc<Manager>) -> Action {
    tracing::warn!(xrd = object.metadata.name.as_deref().unwrap_or_default(), %error, "XRD reconcile failed");
    Action::requeue(Duration::from_secs(5))
}
