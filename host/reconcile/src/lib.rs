//! The composite reconcile algorithm, over any [`Cluster`].
//!
//! One reconcile: read the composed resources the XR references, run the
//! Composition's pipeline, then (only if the pipeline finished without a
//! fatal result) garbage-collect resources that left the desired state,
//! apply the desired ones with deterministic names, labels and a controller
//! owner reference, and report `Synced`, `Ready` and function conditions on
//! the XR. `plait render` runs exactly this against a [`MemoryCluster`].

pub mod cluster;
pub mod compose;
mod conditions;
pub mod ordering;
pub mod pointer;
mod steps;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use plait_pipeline::{
    FunctionRunner, OutputRules, Pipeline, PipelineError, ReadGrants, ReadPolicy, ReadRefused,
    ReadTarget, RequirementSource, SecretRef, Step, StepResult, Tenant,
};
use plait_sdk::{
    Condition, Ready, ResourceMatch, ResourceSelector, SchemaSelector, Severity, State,
};
use serde_json::{Value, json};

pub use cluster::{
    Cluster, ClusterError, Event, EventType, Forwarding, MemoryCluster, ObjectRef, holds,
    merge_patch, stable_uid, status_body,
};
pub use conditions::{READY, SYNCED, set_condition, unready_message};
pub use steps::{PrepareError, pipeline_steps, prepare};

/// Field manager for what the reconcile owns on the XR, as upstream names it.
pub const COMPOSITE_FIELD_MANAGER: &str = "apiextensions.crossplane.io/composite";
/// The prefix of the field manager of an XR's composed resources.
pub const COMPOSED_FIELD_MANAGER_PREFIX: &str = "apiextensions.crossplane.io/composed";

/// The field manager of `xr`'s composed resources, as upstream names it:
/// one per XR (by name and group-kind), so a composed resource that is
/// itself an XR has its own reconcile's fields under
/// [`COMPOSITE_FIELD_MANAGER`] and its parent's under this, and neither
/// apply drops what the other set.
pub fn composed_field_manager(xr: &Value) -> String {
    use sha2::{Digest, Sha256};
    let text = |pointer: &str| {
        xr.pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let kind = text("/kind");
    let group_kind = match text("/apiVersion").split_once('/') {
        Some((group, _)) => format!("{kind}.{group}"),
        None => kind.to_string(),
    };
    let digest = Sha256::digest(format!("{}{group_kind}", text("/metadata/name")));
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{COMPOSED_FIELD_MANAGER_PREFIX}/{hex}")
}

pub const ANNOTATION_RESOURCE_NAME: &str = "crossplane.io/composition-resource-name";
pub const LABEL_COMPOSITE: &str = "crossplane.io/composite";
pub const LABEL_CLAIM_NAME: &str = "crossplane.io/claim-name";
pub const LABEL_CLAIM_NAMESPACE: &str = "crossplane.io/claim-namespace";

/// How the XR's API was defined, which decides where machinery fields live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompositeScope {
    /// v2, namespaced: machinery under `spec.crossplane`, composes only in its namespace.
    Namespaced,
    /// v2, cluster-scoped: machinery under `spec.crossplane`.
    Cluster,
    /// v1: machinery at the top of `spec`.
    LegacyCluster,
}

impl CompositeScope {
    /// The scope of an XR whose XRD is not at hand. Like `crossplane
    /// render` without `--xrd`, that is a v2 (modern) XR: machinery under
    /// `spec.crossplane`, namespaced when it has a namespace.
    pub fn infer(xr: &Value) -> CompositeScope {
        if xr
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty())
        {
            CompositeScope::Namespaced
        } else {
            CompositeScope::Cluster
        }
    }

    /// Where the XR's machinery fields (`compositionRef`, `resourceRefs`, …) live.
    pub fn machinery_pointer(self) -> &'static str {
        match self {
            CompositeScope::LegacyCluster => "/spec",
            CompositeScope::Namespaced | CompositeScope::Cluster => "/spec/crossplane",
        }
    }

    /// `fields` placed where this scope keeps machinery, as a patch of the XR.
    pub fn wrap_machinery(self, fields: Value) -> Value {
        match self {
            CompositeScope::LegacyCluster => serde_json::json!({"spec": fields}),
            CompositeScope::Namespaced | CompositeScope::Cluster => {
                serde_json::json!({"spec": {"crossplane": fields}})
            }
        }
    }
}

/// A reconcile of one XR.
pub struct Reconcile<'a> {
    pub cluster: &'a dyn Cluster,
    pub runner: &'a dyn FunctionRunner,
    /// The XR as read from the cluster.
    pub xr: Value,
    pub scope: CompositeScope,
    /// The pipeline of the selected Composition.
    pub steps: &'a [Step],
    /// The pipeline context to start from.
    pub context: Value,
    /// The time, RFC 3339, stamped on conditions that change: asked when
    /// each is set, so a condition set after the pipeline carries the time
    /// the pipeline ended, not the time the reconcile began.
    pub clock: &'a dyn Fn() -> String,
    /// What the platform lets functions read for a tenant's XR.
    pub grants: &'a ReadGrants,
    /// The cluster as the XR's tenant sees it: composed and required
    /// resources are read and written through it, so the tenant's own RBAC
    /// bounds them. `None` uses `cluster` for everything.
    pub as_tenant: Option<&'a dyn Cluster>,
    /// The XR's watch circuit is open (an event storm woke it too often):
    /// reported as `Responsive=False`.
    pub circuit_open: bool,
    /// When a reconcile creates composed resources, it observes them at once
    /// as their applies returned them and runs the pipeline again before it
    /// writes the XR, so their readiness is reported without another
    /// reconcile (and another status write). `plait render` reports one
    /// pass, as `crossplane render` does.
    pub observe_created: bool,
    /// What the caller decided for the XR before its pipeline ran and has
    /// not written yet (its finalizer, its Composition and revision), as a
    /// JSON merge patch: functions observe the XR with it, and it is written
    /// in the one write that records the resource references, before any
    /// composed resource is created (alone when the pipeline applied nothing).
    pub unwritten: Option<Value>,
}

/// One run of the pipeline and what it applied, before the XR's status is
/// written: the XR as it is to be stored, the resource references it
/// recorded (none when the pipeline failed), the events it would record and
/// the composed resources as their applies returned them.
struct Pass {
    outcome: Outcome,
    refs: Option<Vec<Value>>,
    events: Vec<Event>,
    stored: BTreeMap<String, Value>,
}

/// What a reconcile did.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The XR after the reconcile, with its status.
    pub xr: Value,
    /// Composed resources as sent to the cluster, by their name in the Composition.
    pub composed: BTreeMap<String, Value>,
    /// Composed resources deleted because they left the desired state.
    pub deleted: Vec<ObjectRef>,
    /// Composed resources that did not exist before this reconcile applied
    /// them, by their name in the Composition: the next reconcile observes them.
    pub created: Vec<String>,
    pub results: Vec<StepResult>,
    /// Connection details of the XR.
    pub connection_details: BTreeMap<String, Vec<u8>>,
    pub context: Value,
    pub ttl: Option<Duration>,
    /// A read the tenancy rules refused, which stopped the pipeline.
    pub refused: Option<ReadRefused>,
    /// What the pipeline read as required resources, as confined to what
    /// the XR's tenant may read ([`plait_pipeline::PipelineOutput::required`]),
    /// also when it failed.
    pub required: Vec<ResourceSelector>,
    /// Why the reconcile did not finish, if it did not. Nothing was applied or
    /// deleted when the pipeline failed.
    pub error: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("composite resource: {0}")]
    InvalidComposite(String),
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error("cannot apply composed resource {resource:?}: {source}")]
    Apply {
        resource: String,
        source: ClusterError,
    },
    #[error(transparent)]
    Compose(#[from] compose::ComposeError),
}

impl ReconcileError {
    /// The failed read or write of the cluster behind this error, if that
    /// is what it is.
    fn cluster_error(&self) -> Option<&ClusterError> {
        match self {
            ReconcileError::Cluster(error) | ReconcileError::Apply { source: error, .. } => {
                Some(error)
            }
            _ => None,
        }
    }

    /// Whether the API server could not be reached or asked to be asked
    /// again later, so the reconcile should back off without writing
    /// anything about it.
    pub fn is_unavailable(&self) -> bool {
        matches!(self.cluster_error(), Some(ClusterError::Unavailable { .. }))
    }

    /// Whether the XR changed while it was being reconciled, so the writes
    /// were refused and the reconcile should simply run again.
    pub fn is_conflict(&self) -> bool {
        matches!(self.cluster_error(), Some(ClusterError::Conflict { .. }))
    }
}

impl<'a> Reconcile<'a> {
    /// Runs the reconcile. Failures of the pipeline or of applying are
    /// reported in the XR's `Synced` condition (and `Outcome::error`); an
    /// `Err` means the XR itself could not be handled.
    /// Where composed and required resources are read and written.
    fn tenant_cluster(&self) -> &'a dyn Cluster {
        self.as_tenant.unwrap_or(self.cluster)
    }

    pub fn run(self) -> Result<Outcome, ReconcileError> {
        // The XR as stored, after each write this reconcile makes to it.
        let mut stored = self.xr.clone();
        let first = self.pass(&BTreeMap::new(), &[], &mut stored)?;
        let again = self.observe_created
            && first.outcome.error.is_none()
            && !first.outcome.created.is_empty();
        let last = if again {
            let mut second = self.pass(&first.stored, &first.outcome.deleted, &mut stored)?;
            let mut composed = first.outcome.composed;
            composed.append(&mut second.outcome.composed);
            second.outcome.composed = composed;
            let mut deleted = first.outcome.deleted;
            deleted.append(&mut second.outcome.deleted);
            second.outcome.deleted = deleted;
            second
        } else {
            first
        };
        for event in last.events {
            self.cluster.record_event(event);
        }
        let mut outcome = last.outcome;
        if last.refs.is_none() {
            // Nothing was applied, so the refs were not written either.
            self.write_unwritten(&mut stored)?;
        }
        outcome.xr = self.write_status(&outcome.xr, &stored)?;
        Ok(outcome)
    }

    /// Runs the pipeline once and applies what it desires, writing to the
    /// XR (`stored_xr`, as stored) only its resource references and what
    /// else is [`Reconcile::unwritten`], before any apply. `created` are composed
    /// resources an earlier pass created, as their applies returned them,
    /// observed as well; `deleted` are those it deleted, observed no longer.
    fn pass(
        &self,
        created: &BTreeMap<String, Value>,
        deleted: &[ObjectRef],
        stored_xr: &mut Value,
    ) -> Result<Pass, ReconcileError> {
        let mut events = Vec::new();
        let xr_ref = ObjectRef::of(&self.xr).ok_or_else(|| {
            ReconcileError::InvalidComposite(
                "apiVersion, kind and metadata.name are required".into(),
            )
        })?;
        let xr_uid = self
            .xr
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .ok_or_else(|| ReconcileError::InvalidComposite("metadata.uid is required".into()))?
            .to_string();
        // As upstream's reconciler does first, before anything can fail;
        // functions observe the XR with it.
        let mut xr = self.xr.clone();
        if let Some(unwritten) = &self.unwritten {
            cluster::merge_patch(&mut xr, unwritten);
        }
        conditions::set_responsive(&mut xr, self.circuit_open, &(self.clock)());
        let mut observed = self.observed_state(&xr, &xr_uid, deleted)?;
        for (name, object) in created {
            let mut resource = plait_sdk::Resource::new(object.clone());
            resource.connection_details =
                self.connection_details(self.tenant_cluster(), &resource.resource)?;
            observed.resources.insert(name.clone(), resource);
        }
        let namespace = match self.scope {
            CompositeScope::Namespaced => xr_ref.namespace.clone(),
            _ => None,
        };
        let scopes = ClusterScopes(self.cluster);
        let source = ClusterSource {
            cluster: self.tenant_cluster(),
            platform: self.cluster,
        };
        let tenant = tenant_of(&self.xr, self.scope);
        let pipeline = Pipeline {
            runner: self.runner,
            source: &source,
            rules: OutputRules {
                namespace: namespace.as_deref(),
                scopes: &scopes,
                ..OutputRules::default()
            },
            reads: ReadPolicy {
                tenant: &tenant,
                grants: self.grants,
            },
        };
        let run = pipeline.run(self.steps, &observed, self.context.clone());
        let (output, failure) = match run {
            Ok(output) => (output, None),
            Err(failure) => (failure.partial, Some(failure.error)),
        };
        for result in &output.results {
            events.push(result_event(&xr_ref, result));
        }
        let mut outcome = Outcome {
            xr: Value::Null,
            composed: BTreeMap::new(),
            deleted: Vec::new(),
            created: Vec::new(),
            results: output.results.clone(),
            connection_details: BTreeMap::new(),
            context: output.context.clone(),
            ttl: output.ttl,
            refused: None,
            required: output.required.clone(),
            error: None,
        };
        if let Some(error) = failure {
            let message = error.to_string();
            tracing::warn!(composite = %xr_ref, error = %message, "pipeline failed; nothing applied");
            events.push(Event {
                regarding: xr_ref.clone(),
                event_type: EventType::Warning,
                reason: reason_for(&error).into(),
                message: message.clone(),
            });
            conditions::set_fatal(&mut xr, &output.conditions, &message, &(self.clock)());
            self.set_claim_condition_types(&mut xr, &output.conditions);
            if let PipelineError::Refused { refused, .. } = &error {
                outcome.refused = Some((**refused).clone());
            }
            outcome.error = Some(message);
            outcome.xr = xr;
            return Ok(Pass {
                outcome,
                refs: None,
                events,
                stored: BTreeMap::new(),
            });
        }

        let desired = output.desired;
        // What waits for what: a new resource whose dependencies are not
        // ready yet is not created in this reconcile, though it counts as
        // not ready; a declared cycle applies nothing.
        let graph = ordering::Graph::of(
            desired
                .resources
                .iter()
                .map(|(name, r)| (name.as_str(), &r.resource)),
        );
        let composed: BTreeSet<&str> = desired.resources.keys().map(String::as_str).collect();
        if let Err(error) = graph.check(&composed) {
            let message = error.to_string();
            tracing::warn!(composite = %xr_ref, error = %message, "composed resources cannot be ordered; nothing applied");
            events.push(Event {
                regarding: xr_ref.clone(),
                event_type: EventType::Warning,
                reason: "ComposeResources".into(),
                message: message.clone(),
            });
            conditions::set_fatal(&mut xr, &output.conditions, &message, &(self.clock)());
            conditions::set_ordered(&mut xr, &graph, Err(&message), &(self.clock)());
            outcome.error = Some(message);
            outcome.xr = xr;
            return Ok(Pass {
                outcome,
                refs: None,
                events,
                stored: BTreeMap::new(),
            });
        }
        let waiting = graph.waiting(
            desired
                .resources
                .keys()
                .map(String::as_str)
                .filter(|name| !observed.resources.contains_key(*name)),
            |dependency| {
                observed.resources.contains_key(dependency)
                    && desired
                        .resources
                        .get(dependency)
                        .is_some_and(|r| r.ready == Ready::True)
            },
        );
        let mut creatable = desired.clone();
        creatable
            .resources
            .retain(|name, _| !waiting.contains_key(name));
        let plan = compose::plan(&xr, &xr_uid, self.scope, &observed, &creatable)?;
        // Every garbage resource is asked to go before a refusal is
        // reported: one whose deletion is refused (a Usage protecting it
        // until its user, garbage too, is gone) must not keep the others.
        let mut refused = None;
        for gone in &plan.garbage {
            match self
                .tenant_cluster()
                .delete(&gone.reference, gone.uid.as_deref())
            {
                Ok(()) => outcome.deleted.push(gone.reference.clone()),
                Err(error) => {
                    refused.get_or_insert(error);
                }
            }
        }
        if let Some(error) = refused {
            return Err(error.into());
        }
        set_resource_refs(&mut xr, self.scope, &plan.refs);
        // Before anything is created: the next reconcile finds what this
        // one creates through the references, and deletes it through the finalizer.
        self.write_refs(stored_xr, &plan.refs)?;
        let field_manager = composed_field_manager(&xr);
        let mut apply_errors = Vec::new();
        let mut stored = BTreeMap::new();
        for (name, object) in &plan.objects {
            let unchanged = observed.resources.get(name).is_some_and(|o| {
                self.tenant_cluster()
                    .applied_unchanged(object, &o.resource, &field_manager)
            });
            if unchanged {
                outcome.composed.insert(name.clone(), object.clone());
                continue;
            }
            match self.tenant_cluster().apply(object, &field_manager) {
                Ok(applied) => {
                    if !observed.resources.contains_key(name) {
                        outcome.created.push(name.clone());
                        stored.insert(name.clone(), applied);
                    }
                    outcome.composed.insert(name.clone(), object.clone());
                }
                // An object the API server finds invalid stays invalid
                // however often it is sent, so it is reported and the rest
                // is still composed; any other refusal (RBAC, quota, an API
                // server away) fails the reconcile, as Crossplane's does.
                Err(e @ ClusterError::Invalid { .. }) => {
                    events.push(Event {
                        regarding: xr_ref.clone(),
                        event_type: EventType::Warning,
                        reason: "ComposeResources".into(),
                        message: format!("cannot apply composed resource {name:?}: {e}"),
                    });
                    apply_errors.push(name.clone());
                }
                Err(e) => {
                    return Err(ReconcileError::Apply {
                        resource: name.clone(),
                        source: e,
                    });
                }
            }
        }
        if let Some(composite) = &desired.composite {
            outcome.connection_details = composite.connection_details.clone();
            if let Some(status) = composite.resource.get("status").and_then(Value::as_object) {
                let current = xr["status"].as_object().cloned().unwrap_or_default();
                let mut merged = current;
                for (k, v) in status {
                    merged.insert(k.clone(), v.clone());
                }
                xr["status"] = Value::Object(merged);
            }
        }
        let synced_error = (!apply_errors.is_empty()).then(|| {
            format!(
                "cannot sync composed resources: Unsynced resources: {}",
                apply_errors.join(", ")
            )
        });
        let unready = conditions::unready(&desired);
        for name in &unready {
            events.push(Event {
                regarding: xr_ref.clone(),
                event_type: EventType::Normal,
                reason: "ComposeResources".into(),
                message: format!("Composed resource {name:?} is not yet ready"),
            });
        }
        conditions::set_success(
            &mut xr,
            &desired,
            &unready,
            &output.conditions,
            synced_error.as_deref(),
            &(self.clock)(),
        );
        self.set_claim_condition_types(&mut xr, &output.conditions);
        // An XR that never declared an order gets no condition for it.
        if !graph.is_empty() || conditions::has(&xr, ordering::ORDERED_CONDITION) {
            conditions::set_ordered(&mut xr, &graph, Ok(&waiting), &(self.clock)());
        }
        outcome.error = synced_error;
        outcome.xr = xr;
        Ok(Pass {
            outcome,
            refs: Some(plan.refs),
            events,
            stored,
        })
    }

    /// Lists the conditions meant for the claim too; only a v1 (legacy)
    /// XR has a claim.
    fn set_claim_condition_types(&self, xr: &mut Value, function_conditions: &[Condition]) {
        if self.scope == CompositeScope::LegacyCluster {
            conditions::set_claim_condition_types(xr, function_conditions);
        }
    }

    /// Reads the composed resources the XR references, keyed by their name in the Composition.
    fn observed_state(
        &self,
        xr: &Value,
        xr_uid: &str,
        deleted: &[ObjectRef],
    ) -> Result<State, ReconcileError> {
        let mut composite = plait_sdk::Resource::new(xr.clone());
        // Only a v1 (legacy) XR has a connection Secret of its own.
        if self.scope == CompositeScope::LegacyCluster {
            composite.connection_details = self.connection_details(self.cluster, xr)?;
        }
        let mut observed = State {
            composite: Some(composite),
            resources: BTreeMap::new(),
        };
        let xr_namespace = xr.pointer("/metadata/namespace").and_then(Value::as_str);
        let refs = xr
            .pointer(&format!("{}/resourceRefs", self.scope.machinery_pointer()))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for r in refs {
            let text = |k: &str| {
                r.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            if text("name").is_empty() {
                continue;
            }
            let namespace = match self.scope {
                CompositeScope::Namespaced => xr_namespace.map(str::to_string),
                _ => Some(text("namespace")).filter(|n| !n.is_empty()),
            };
            let reference = ObjectRef {
                api_version: text("apiVersion"),
                kind: text("kind"),
                namespace,
                name: text("name"),
            };
            if deleted.contains(&reference) {
                continue;
            }
            let Some(object) = self.tenant_cluster().observe(&reference)? else {
                continue;
            };
            if compose::controller_uid(&object).is_some_and(|uid| uid != xr_uid) {
                continue;
            }
            let name = object
                .pointer(&pointer::annotation(ANNOTATION_RESOURCE_NAME))
                .and_then(Value::as_str)
                .ok_or_else(|| compose::ComposeError::MissingAnnotation(reference.to_string()))?
                .to_string();
            let mut resource = plait_sdk::Resource::new(object);
            resource.connection_details =
                self.connection_details(self.tenant_cluster(), &resource.resource)?;
            observed.resources.insert(name, resource);
        }
        Ok(observed)
    }

    /// The connection details `object` wrote to the Secret its
    /// `spec.writeConnectionSecretToRef` names, as upstream's reconciler
    /// reads them for functions to observe: that Secret's `data`, in the
    /// object's own namespace (the reference's for a cluster-scoped
    /// object); none while the Secret does not exist. Every function of
    /// the pipeline observes them, so for a tenant's XR the Secret is read
    /// where the tenancy rules let every one of them read it, or, in any
    /// namespace, when the Secret is the object's own: controlled by the
    /// object, itself controlled by this XR (what a provider writes for a
    /// managed resource). A tenant cannot make a Secret it does not own
    /// controlled by its object, so no other Secret is revealed; any other
    /// Secret gives no details.
    fn connection_details(
        &self,
        cluster: &dyn Cluster,
        object: &Value,
    ) -> Result<BTreeMap<String, Vec<u8>>, ReconcileError> {
        let Some(secret) = object.pointer("/spec/writeConnectionSecretToRef") else {
            return Ok(BTreeMap::new());
        };
        let text = |value: &Value, pointer: &str| {
            value
                .pointer(pointer)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let namespace = text(object, "/metadata/namespace").or_else(|| text(secret, "/namespace"));
        let (Some(name), Some(namespace)) = (text(secret, "/name"), namespace) else {
            return Ok(BTreeMap::new());
        };
        let reference = ObjectRef {
            api_version: "v1".into(),
            kind: "Secret".into(),
            namespace: Some(namespace),
            name,
        };
        let tenant = tenant_of(&self.xr, self.scope);
        let reads = ReadPolicy {
            tenant: &tenant,
            grants: self.grants,
        };
        let target = ReadTarget {
            api_version: reference.api_version.clone(),
            kind: reference.kind.clone(),
            namespace: reference.namespace.clone(),
        };
        let refused = self
            .steps
            .iter()
            .find_map(|step| reads.check(&step.function, &target).err());
        let secret = match refused {
            None => cluster.get(&reference)?,
            Some(refused) => match self.owned_connection_secret(object, &reference)? {
                Some(secret) => Some(secret),
                None => {
                    tracing::warn!(secret = %reference, %refused, "connection details not read");
                    return Ok(BTreeMap::new());
                }
            },
        };
        let Some(secret) = secret else {
            return Ok(BTreeMap::new());
        };
        Ok(secret
            .get("data")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(key, value)| {
                let bytes = BASE64.decode(value.as_str().unwrap_or_default()).ok()?;
                Some((key.clone(), bytes))
            })
            .collect())
    }

    /// The Secret `reference` names when it is `object`'s own connection
    /// Secret: `object` controlled by this XR and the Secret controlled by
    /// `object`. Read as the controller, since a tenant's identity may not
    /// read the namespace providers write to (conventionally
    /// `crossplane-system`); `None` for any other Secret, or none.
    fn owned_connection_secret(
        &self,
        object: &Value,
        reference: &ObjectRef,
    ) -> Result<Option<Value>, ReconcileError> {
        let xr_uid = self.xr.pointer("/metadata/uid").and_then(Value::as_str);
        let object_uid = object.pointer("/metadata/uid").and_then(Value::as_str);
        let (Some(xr_uid), Some(object_uid)) = (xr_uid, object_uid) else {
            return Ok(None);
        };
        if compose::controller_uid(object) != Some(xr_uid) {
            return Ok(None);
        }
        let Some(secret) = self.cluster.get(reference)? else {
            return Ok(None);
        };
        Ok((compose::controller_uid(&secret) == Some(object_uid)).then_some(secret))
    }

    /// Records the resource references on the XR (`stored`, as stored):
    /// with what is still [`Reconcile::unwritten`] in one merge patch, guarded
    /// by the resourceVersion it was read at, or else by the apply of what
    /// the reconciler owns (its composite label and the references), as
    /// upstream applies them. Either only when it changes the XR: a write
    /// that changes nothing still makes a new resourceVersion, which wakes
    /// every watch of the XR. The XR's other fields belong to whoever wrote
    /// them: applying them too would make the reconciler co-own them, and a
    /// field its author removed would stay.
    fn write_refs(&self, stored: &mut Value, refs: &[Value]) -> Result<(), ReconcileError> {
        let owned = owned_fields(stored, self.scope, refs);
        if let Some(mut patch) = self.still_unwritten(stored) {
            cluster::merge_patch(&mut patch, &owned);
            *stored = self.write_patch(stored, patch)?;
        } else if !already_owned(stored, &owned, self.scope) {
            *stored = self.cluster.apply(&owned, COMPOSITE_FIELD_MANAGER)?;
        }
        Ok(())
    }

    /// Writes what is still [`Reconcile::unwritten`] on its own, when
    /// nothing was applied (so no references were written with it).
    fn write_unwritten(&self, stored: &mut Value) -> Result<(), ReconcileError> {
        if let Some(patch) = self.still_unwritten(stored) {
            *stored = self.write_patch(stored, patch)?;
        }
        Ok(())
    }

    /// [`Reconcile::unwritten`], unless `stored` already holds all of it.
    fn still_unwritten(&self, stored: &Value) -> Option<Value> {
        self.unwritten
            .as_ref()
            .filter(|unwritten| !holds(stored, unwritten))
            .cloned()
    }

    /// Merge-patches `patch` into the XR as the composite field manager,
    /// guarded by the resourceVersion `stored` carries.
    fn write_patch(&self, stored: &Value, mut patch: Value) -> Result<Value, ReconcileError> {
        let reference = ObjectRef::of(stored).ok_or_else(|| {
            ReconcileError::InvalidComposite(
                "apiVersion, kind and metadata.name are required".into(),
            )
        })?;
        for key in ["apiVersion", "kind"] {
            if let Some(object) = patch.as_object_mut() {
                object.remove(key);
            }
        }
        if let Some(version) = stored.pointer("/metadata/resourceVersion") {
            patch["metadata"]["resourceVersion"] = version.clone();
        }
        Ok(self
            .cluster
            .merge_patch(&reference, &patch, COMPOSITE_FIELD_MANAGER)?)
    }

    /// Applies the XR's status when it differs from the XR the reconcile
    /// started from. The references are the reconciler's own: its conditions
    /// describe the generation their write made (as upstream's, read back
    /// after its update), or the next reconcile would write the status again
    /// only to say so. Returns the XR as stored.
    fn write_status(&self, xr: &Value, stored: &Value) -> Result<Value, ReconcileError> {
        let mut xr = xr.clone();
        conditions::advance_generation(&mut xr, stored.pointer("/metadata/generation"));
        if xr.get("status") != self.xr.get("status") {
            return Ok(self.cluster.apply_status(&xr, COMPOSITE_FIELD_MANAGER)?);
        }
        Ok(stored.clone())
    }
}

/// Whether `xr` already holds what `owned` would apply.
fn already_owned(xr: &Value, owned: &Value, scope: CompositeScope) -> bool {
    let label = pointer::label(LABEL_COMPOSITE);
    let refs = format!("{}/resourceRefs", scope.machinery_pointer());
    xr.pointer(&label) == owned.pointer(&label) && xr.pointer(&refs) == owned.pointer(&refs)
}

/// The body of the reconciler's apply to the XR: identity, the resourceVersion
/// it was read at (so an apply from a stale read conflicts), the composite
/// label and the resource references.
pub fn owned_fields(xr: &Value, scope: CompositeScope, refs: &[Value]) -> Value {
    let metadata = xr.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let name = metadata.get("name").cloned().unwrap_or(Value::Null);
    let label = metadata
        .pointer(&format!("/labels/{}", pointer::escape(LABEL_COMPOSITE)))
        .cloned()
        .unwrap_or_else(|| name.clone());
    let mut owned_metadata = serde_json::Map::new();
    owned_metadata.insert("name".into(), name);
    for key in ["namespace", "resourceVersion"] {
        if let Some(v) = metadata.get(key).filter(|v| !v.is_null()) {
            owned_metadata.insert(key.into(), v.clone());
        }
    }
    owned_metadata.insert("labels".into(), json!({ LABEL_COMPOSITE: label }));
    let mut owned = json!({
        "apiVersion": xr.get("apiVersion"),
        "kind": xr.get("kind"),
        "metadata": owned_metadata,
    });
    set_resource_refs(&mut owned, scope, refs);
    owned
}

fn set_resource_refs(xr: &mut Value, scope: CompositeScope, refs: &[Value]) {
    let pointer = scope.machinery_pointer();
    let mut target = &mut *xr;
    for part in pointer.trim_start_matches('/').split('/') {
        if !target.get(part).is_some_and(Value::is_object) {
            target[part] = json!({});
        }
        target = &mut target[part];
    }
    target["resourceRefs"] = Value::Array(refs.to_vec());
}

fn reason_for(error: &PipelineError) -> &'static str {
    match error {
        PipelineError::FatalResult { .. } => "ComposeResources",
        PipelineError::Refused { .. } => "ReadRefused",
        _ => "ReconcileError",
    }
}

fn result_event(xr: &ObjectRef, result: &StepResult) -> Event {
    Event {
        regarding: xr.clone(),
        event_type: match result.result.severity {
            Severity::Normal => EventType::Normal,
            Severity::Warning | Severity::Fatal => EventType::Warning,
        },
        reason: result
            .result
            .reason
            .clone()
            .unwrap_or_else(|| "ComposeResources".into()),
        message: format!("Pipeline step {:?}: {}", result.step, result.result.message),
    }
}

/// Answers scope questions from the cluster.
struct ClusterScopes<'a>(&'a dyn Cluster);

impl plait_pipeline::ScopeLookup for ClusterScopes<'_> {
    fn is_namespaced(&self, api_version: &str, kind: &str) -> Option<bool> {
        self.0.is_namespaced(api_version, kind).ok().flatten()
    }
}

/// The connection Secret reference a v1 (legacy) XR gets before its
/// pipeline runs when it names none, as upstream's API configurator sets it:
/// the XR's UID in the Composition's `writeConnectionSecretsToNamespace`.
/// Patches that read `spec.writeConnectionSecretToRef` then see it. `None`
/// when nothing is to be defaulted (a v2 XR, a reference already set, or a
/// Composition without the namespace).
pub fn default_connection_secret_ref(
    xr: &Value,
    scope: CompositeScope,
    write_connection_secrets_to_namespace: Option<&str>,
) -> Option<Value> {
    if scope != CompositeScope::LegacyCluster
        || xr
            .pointer("/spec/writeConnectionSecretToRef")
            .is_some_and(|r| !r.is_null())
    {
        return None;
    }
    let namespace = write_connection_secrets_to_namespace?;
    let uid = xr.pointer("/metadata/uid").and_then(Value::as_str)?;
    Some(json!({"name": uid, "namespace": namespace}))
}

/// Whose XR this is: a namespaced XR's namespace, the namespace of the
/// claim an XR is bound to, or the platform for its own (cluster-scoped,
/// unclaimed) XRs.
pub fn tenant_of(xr: &Value, scope: CompositeScope) -> Tenant {
    let namespace = xr.pointer("/metadata/namespace").and_then(Value::as_str);
    tenant_in(scope, namespace, xr.get("spec"))
}

/// [`tenant_of`] an XR of `scope` in `namespace` with `spec`, for a caller
/// that holds the XR's parts rather than its JSON.
pub fn tenant_in(scope: CompositeScope, namespace: Option<&str>, spec: Option<&Value>) -> Tenant {
    let namespace = match scope {
        CompositeScope::Namespaced => namespace,
        CompositeScope::LegacyCluster => spec
            .and_then(|spec| spec.pointer("/claimRef/namespace"))
            .and_then(Value::as_str),
        CompositeScope::Cluster => None,
    };
    Tenant::of_namespace(namespace)
}

struct ClusterSource<'a> {
    /// What the XR's functions ask for is read here: as the tenant, when
    /// the controller acts as one.
    cluster: &'a dyn Cluster,
    /// Credential Secrets the Composition names are read here, as the
    /// controller: the Composition is the platform's, and so is the grant.
    platform: &'a dyn Cluster,
}

impl RequirementSource for ClusterSource<'_> {
    fn is_namespaced(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<bool>, plait_pipeline::RunnerError> {
        Ok(self.cluster.is_namespaced(api_version, kind)?)
    }

    fn resources(
        &self,
        selector: &ResourceSelector,
    ) -> Result<Vec<Value>, plait_pipeline::RunnerError> {
        let namespace = selector.namespace.clone();
        match &selector.matching {
            ResourceMatch::Name(name) => {
                let namespaced = self
                    .cluster
                    .is_namespaced(&selector.api_version, &selector.kind)?
                    .unwrap_or(namespace.is_some());
                let reference = ObjectRef {
                    api_version: selector.api_version.clone(),
                    kind: selector.kind.clone(),
                    namespace: if namespaced { namespace } else { None },
                    name: name.clone(),
                };
                Ok(self.cluster.get(&reference)?.into_iter().collect())
            }
            ResourceMatch::Labels(labels) => {
                let mut items = self.cluster.list(
                    &selector.api_version,
                    &selector.kind,
                    namespace.as_deref(),
                    labels,
                )?;
                items.sort_by_key(|o| ObjectRef::of(o).map(|r| (r.namespace, r.name)));
                Ok(items)
            }
        }
    }

    fn schema(
        &self,
        selector: &SchemaSelector,
    ) -> Result<Option<Value>, plait_pipeline::RunnerError> {
        Ok(self.cluster.schema(&selector.api_version, &selector.kind)?)
    }

    fn secret(
        &self,
        reference: &SecretRef,
    ) -> Result<Option<BTreeMap<String, Vec<u8>>>, plait_pipeline::RunnerError> {
        let secret = self.platform.get(&ObjectRef {
            api_version: "v1".into(),
            kind: "Secret".into(),
            namespace: Some(reference.namespace.clone()),
            name: reference.name.clone(),
        })?;
        let Some(secret) = secret else {
            return Ok(None);
        };
        let mut data = BTreeMap::new();
        if let Some(map) = secret.get("data").and_then(Value::as_object) {
            for (k, v) in map {
                let encoded = v.as_str().unwrap_or_default();
                let bytes = BASE64
                    .decode(encoded)
                    .map_err(|e| format!("Secret data key {k:?} is not valid base64: {e}"))?;
                data.insert(k.clone(), bytes);
            }
        }
        if let Some(map) = secret.get("stringData").and_then(Value::as_object) {
            for (k, v) in map {
                data.insert(
                    k.clone(),
                    v.as_str().unwrap_or_default().as_bytes().to_vec(),
                );
            }
        }
        Ok(Some(data))
    }
}

/// True for condition types only the reconciler may set.
pub fn is_system_condition(condition: &Condition) -> bool {
    is_system_condition_type(&condition.type_)
}

pub fn is_system_condition_type(type_: &str) -> bool {
    matches!(
        type_,
        READY | SYNCED | "Healthy" | "UpToDate" | "Responsive" | ordering::ORDERED_CONDITION
    )
}

#[cfg(test)]
mod tests;
