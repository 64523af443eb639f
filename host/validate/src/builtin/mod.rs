//! The validation kube-apiserver v1.34 runs for its own kinds beyond their
//! OpenAPI schemas (Go code in `pkg/apis/*/validation`): names, labels,
//! annotations, selectors that match their templates, ports, quantities,
//! cron schedules, Secret and ConfigMap keys, Service types, and on update
//! the fields that cannot change. One table says which kinds are checked,
//! how each names its objects, and which functions check it; the checks
//! live in a file per API group, with kube-apiserver's fields and messages.
//!
//! Defaults the API server applies before validating are applied where
//! they change the verdict: a pod template's `restartPolicy` (`Always`),
//! a port's `protocol` (`TCP`), a Service's `type` (`ClusterIP`) and a
//! Deployment's `strategy` (`RollingUpdate`) and `progressDeadlineSeconds`.

mod apps;
mod batch;
mod core;
mod cron;
mod meta;
mod names;
mod networking;
mod quantity;
mod rbac;

use serde_json::{Map, Value, json};

use crate::ANNOTATION_RESOURCE_NAME;
use crate::problem::{Path, Problem, ProblemKind};

/// How a kind's objects are named.
#[derive(Debug, Clone, Copy)]
pub(crate) enum NameRule {
    /// A DNS-1123 subdomain: most kinds.
    Subdomain,
    /// A DNS-1123 label: Namespace.
    Label,
    /// A DNS-1035 label: Service.
    Dns1035,
    /// A subdomain of at most 52 characters, room for the Jobs' suffix: CronJob.
    CronJob,
    /// A path segment (no `/`, `%`, `.`, `..`): the RBAC kinds.
    PathSegment,
}

type Validate = fn(&mut Ctx, &Value);
type ValidateUpdate = fn(&mut Ctx, &Value, &Value);

/// One kind the API server validates in Go.
struct Kind {
    api_version: &'static str,
    kind: &'static str,
    namespaced: bool,
    name: NameRule,
    validate: Validate,
    /// The rules of an update (fields that cannot change), given the old object.
    update: Option<ValidateUpdate>,
}

const KINDS: &[Kind] = &[
    Kind {
        api_version: "v1",
        kind: "ConfigMap",
        namespaced: true,
        name: NameRule::Subdomain,
        validate: core::config_map,
        update: Some(core::config_map_update),
    },
    Kind {
        api_version: "v1",
        kind: "Secret",
        namespaced: true,
        name: NameRule::Subdomain,
        validate: core::secret,
        update: Some(core::secret_update),
    },
    Kind {
        api_version: "v1",
        kind: "ServiceAccount",
        namespaced: true,
        name: NameRule::Subdomain,
        validate: core::nothing,
        update: None,
    },
    Kind {
        api_version: "v1",
        kind: "Namespace",
        namespaced: false,
        name: NameRule::Label,
        validate: core::namespace,
        update: None,
    },
    Kind {
        api_version: "v1",
        kind: "Pod",
        namespaced: true,
        name: NameRule::Subdomain,
        validate: core::pod,
        update: None,
    },
    Kind {
        api_version: "v1",
        kind: "Service",
        namespaced: true,
        name: NameRule::Dns1035,
        validate: core::service,
        update: Some(core::service_update),
    },
    Kind {
        api_version: "v1",
        kind: "PersistentVolumeClaim",
        namespaced: true,
        name: NameRule::Subdomain,
        validate: core::persistent_volume_claim,
        update: Some(core::persistent_volume_claim_update),
    },
    Kind {
        api_version: "apps/v1",
        kind: "Deployment",
        namespaced: true,
        name: NameRule::Subdomain,
        validate: apps::deployment,
        update: Some(apps::selector_update),
    },
    Kind {
        api_version: "apps/v1",
        kind: "ReplicaSet",
        namespaced: true,
        name: NameRule::Subdomain,
        validate: apps::replica_set,
        update: Some(apps::selector_update),
    },
    Kind {
        api_version: "apps/v1",
        kind: "DaemonSet",
        namespaced: true,
        name: NameRule::Subdomain,
        validate: apps::daemon_set,
        update: Some(apps::selector_update),
    },
    Kind {
        api_version: "apps/v1",
        kind: "StatefulSet",
        namespaced: true,
        name: NameRule::Subdomain,
        validate: apps::stateful_set,
        update: Some(apps::stateful_set_update),
    },
    Kind {
        api_version: "batch/v1",
        kind: "Job",
        namespaced: true,
        name: NameRule::Subdomain,
        validate: batch::job,
        update: Some(batch::job_update),
    },
    Kind {
        api_version: "batch/v1",
        kind: "CronJob",
        namespaced: true,
        name: NameRule::CronJob,
        validate: batch::cron_job,
        update: None,
    },
    Kind {
        api_version: "networking.k8s.io/v1",
        kind: "Ingress",
        namespaced: true,
        name: NameRule::Subdomain,
        validate: networking::ingress,
        update: None,
    },
    Kind {
        api_version: "networking.k8s.io/v1",
        kind: "NetworkPolicy",
        namespaced: true,
        name: NameRule::Subdomain,
        validate: networking::network_policy,
        update: None,
    },
    Kind {
        api_version: "rbac.authorization.k8s.io/v1",
        kind: "Role",
        namespaced: true,
        name: NameRule::PathSegment,
        validate: rbac::role,
        update: None,
    },
    Kind {
        api_version: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        namespaced: false,
        name: NameRule::PathSegment,
        validate: rbac::cluster_role,
        update: None,
    },
    Kind {
        api_version: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        namespaced: true,
        name: NameRule::PathSegment,
        validate: rbac::role_binding,
        update: Some(rbac::binding_update),
    },
    Kind {
        api_version: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        namespaced: false,
        name: NameRule::PathSegment,
        validate: rbac::cluster_role_binding,
        update: Some(rbac::binding_update),
    },
];

/// The problems kube-apiserver's Go validation finds on `object` (and, with
/// `old`, on the update from it); empty for a kind it does not cover.
pub(crate) fn check(object: &Value, old: Option<&Value>) -> Vec<Problem> {
    let text = |key: &str| object.get(key).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let Some(rules) = KINDS
        .iter()
        .find(|k| k.api_version == api_version && k.kind == kind)
    else {
        return Vec::new();
    };
    let mut ctx = Ctx {
        object,
        problems: Vec::new(),
    };
    // A composed resource in render output is named by the controller.
    let named_later = object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(ANNOTATION_RESOURCE_NAME))
        .is_some();
    meta::object_meta(&mut ctx, rules.namespaced, rules.name, named_later);
    (rules.validate)(&mut ctx, object);
    if let (Some(update), Some(old)) = (rules.update, old) {
        update(&mut ctx, object, old);
    }
    ctx.problems
}

/// Whether a schema problem is one the Go validation reports itself, in
/// its own words: the same field and kind of problem, or a value outside
/// an enum at or below a field the Go validation refuses (the OpenAPI
/// documents' enums are sorted, Go lists the values in its own order).
pub(crate) fn supersedes(builtin: &[Problem], schema: &Problem) -> bool {
    builtin.iter().any(|b| {
        let same_kind = std::mem::discriminant(&b.kind) == std::mem::discriminant(&schema.kind);
        let below = schema.field == b.field
            || schema.field.starts_with(&format!("{}.", b.field))
            || schema.field.starts_with(&format!("{}[", b.field));
        (same_kind && schema.field == b.field)
            || (matches!(schema.kind, ProblemKind::NotSupported(_))
                && below
                && matches!(
                    b.kind,
                    ProblemKind::NotSupported(_)
                        | ProblemKind::NotSupportedStruct(_)
                        | ProblemKind::InvalidStruct(_)
                        | ProblemKind::Invalid(_)
                ))
    })
}

/// The problems found so far on one object.
pub(crate) struct Ctx<'a> {
    object: &'a Value,
    problems: Vec<Problem>,
}

impl Ctx<'_> {
    fn push(&mut self, at: &Path, kind: ProblemKind, detail: impl Into<String>) {
        self.problems.push(Problem {
            field: at.as_str().to_string(),
            kind,
            detail: detail.into(),
        });
    }

    pub(crate) fn invalid(
        &mut self,
        at: &Path,
        value: impl Into<Value>,
        detail: impl Into<String>,
    ) {
        self.push(at, ProblemKind::Invalid(value.into()), detail);
    }

    /// One `Invalid value` per message a format check gave.
    pub(crate) fn invalid_each(&mut self, at: &Path, value: &str, messages: Vec<String>) {
        for message in messages {
            self.invalid(at, value, message);
        }
    }

    pub(crate) fn invalid_struct(&mut self, at: &Path, shown: String, detail: impl Into<String>) {
        self.push(at, ProblemKind::InvalidStruct(shown), detail);
    }

    pub(crate) fn required(&mut self, at: &Path, detail: impl Into<String>) {
        self.push(at, ProblemKind::Required, detail);
    }

    pub(crate) fn forbidden(&mut self, at: &Path, detail: impl Into<String>) {
        self.push(at, ProblemKind::Forbidden, detail);
    }

    pub(crate) fn not_found(&mut self, at: &Path, value: impl Into<Value>) {
        self.push(at, ProblemKind::NotFound(value.into()), "");
    }

    pub(crate) fn duplicate(&mut self, at: &Path, value: impl Into<Value>) {
        self.push(at, ProblemKind::Duplicate(value.into()), "");
    }

    pub(crate) fn too_long(&mut self, at: &Path, max: u64) {
        self.problems.push(Problem::too_long(at.as_str(), max));
    }

    /// Go's `field.NotSupported`, its supported values in Go's order.
    pub(crate) fn not_supported(&mut self, at: &Path, value: impl Into<Value>, supported: &[&str]) {
        let supported: Vec<Value> = supported.iter().map(|s| json!(s)).collect();
        self.problems.push(Problem::not_supported(
            at.as_str(),
            value.into(),
            &supported,
        ));
    }

    pub(crate) fn not_supported_struct(&mut self, at: &Path, shown: String, supported: &[&str]) {
        let quoted: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
        self.push(
            at,
            ProblemKind::NotSupportedStruct(shown),
            format!("supported values: {}", quoted.join(", ")),
        );
    }

    /// The object cannot be decoded: kube-apiserver refuses the request
    /// with the decoder's message.
    pub(crate) fn undecodable(&mut self, at: &Path, why: &str) {
        let kind = self
            .object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let api_version = self
            .object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let version = api_version.rsplit('/').next().unwrap_or_default();
        self.push(
            at,
            ProblemKind::Rejected,
            format!("{kind} in version \"{version}\" cannot be handled as a {kind}: {why}"),
        );
    }

    /// An integer that must not be negative.
    pub(crate) fn non_negative(&mut self, parent: &Value, key: &str, at: &Path) {
        if let Some(n) = int(parent, key)
            && n < 0
        {
            self.invalid(&at.child(key), n, "must be greater than or equal to 0");
        }
    }
}

/// A field that is present and not null.
pub(crate) fn field<'v>(value: &'v Value, key: &str) -> Option<&'v Value> {
    value.get(key).filter(|v| !v.is_null())
}

pub(crate) fn text<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value.get(key).and_then(Value::as_str)
}

/// A string field, empty when absent (Go's zero value).
pub(crate) fn text_or_empty<'v>(value: &'v Value, key: &str) -> &'v str {
    text(value, key).unwrap_or_default()
}

/// An integer field; a whole float is one, as the API server decodes it.
pub(crate) fn int(value: &Value, key: &str) -> Option<i64> {
    let v = value.get(key)?;
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e18)
            .map(|f| f as i64)
    })
}

pub(crate) fn list<'v>(value: &'v Value, key: &str) -> &'v [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

pub(crate) fn map<'v>(value: &'v Value, key: &str) -> Option<&'v Map<String, Value>> {
    value.get(key).and_then(Value::as_object)
}

pub(crate) fn flag(value: &Value, key: &str) -> bool {
    value.get(key).and_then(Value::as_bool) == Some(true)
}

/// An empty or absent list or map, as Go's `len(x) == 0` sees it.
pub(crate) fn is_empty(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o.is_empty(),
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    }
}

#[cfg(test)]
mod tests;
