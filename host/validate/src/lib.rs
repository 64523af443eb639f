//! Offline validation of manifests, as `plait validate` and the admission
//! webhook run it: each object against its kind's schema (a CRD's, the XR or
//! claim CRD plait generates for an XRD, or a built-in Kubernetes kind's),
//! with defaults applied first as the API server applies them, unknown
//! fields reported, and `x-kubernetes-validations` rules evaluated; and each
//! Composition against the schemas of the kinds it composes.

mod apply;
mod builtin;
mod catalog;
pub mod cel;
mod composition;
mod formats;
mod openapi;
mod problem;
mod structural;

use serde::Serialize;
use serde_json::Value;

pub use catalog::{Catalog, KUBERNETES_VERSION, KindSchema, Origin};
pub use cel::Rules;
pub use problem::{Problem, ProblemKind};

/// The annotation naming a composed resource within its Composition; a
/// resource without a name (render output) is reported by it.
pub const ANNOTATION_RESOURCE_NAME: &str = "crossplane.io/composition-resource-name";

#[derive(Debug, thiserror::Error)]
pub enum ValidateError {
    #[error("the built-in Kubernetes {version} schemas cannot be read: {message}")]
    BuiltinDocument { version: String, message: String },
    #[error("definition {name:?}: {message}")]
    Definition { name: String, message: String },
}

/// Which check found a problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Check {
    /// The kind's structural schema, unknown fields included.
    Schema,
    /// An `x-kubernetes-validations` rule.
    Cel,
    /// A Composition's patches, transforms and bases.
    Composition,
    /// The validation kube-apiserver runs in Go for its own kinds (names,
    /// selectors, ports, quantities, immutable fields, …).
    Builtin,
}

impl Check {
    /// How Crossplane's output names the check: `[x] <this> error …`.
    pub fn label(self) -> &'static str {
        match self {
            Check::Schema => "schema validation",
            Check::Cel => "CEL validation",
            Check::Composition => "composition validation",
            Check::Builtin => "validation",
        }
    }
}

/// A problem and the check that found it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub check: Check,
    #[serde(flatten)]
    pub problem: Problem,
    /// The problem as one line, `spec.x: Required value`.
    pub message: String,
}

/// The verdict on one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Status {
    Valid,
    Invalid,
    /// No schema is known for its kind.
    MissingSchema,
}

/// What validation found on one object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub api_version: String,
    pub kind: String,
    /// Its name, else its composition resource name (render output).
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub status: Status,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
}

impl Outcome {
    /// The kind as Go prints a `GroupVersionKind`: `apps/v1, Kind=Deployment`,
    /// `/v1, Kind=Secret`.
    pub fn gvk(&self) -> String {
        gvk_string(&self.api_version, &self.kind)
    }
}

pub(crate) fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

/// Validates objects against a catalog of schemas.
#[derive(Debug)]
pub struct Validator {
    catalog: Catalog,
    rules: Rules,
}

impl Validator {
    pub fn new(catalog: Catalog) -> Self {
        Validator {
            catalog,
            rules: Rules::new(),
        }
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    pub(crate) fn rules(&self) -> &Rules {
        &self.rules
    }

    /// Validates one object; `old` is its previous state, for transition
    /// rules (`oldSelf`).
    pub fn validate(&self, object: &Value, old: Option<&Value>) -> Outcome {
        let text = |pointer: &str| {
            object
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let (api_version, kind) = (text("/apiVersion"), text("/kind"));
        let name = match text("/metadata/name") {
            n if !n.is_empty() => n,
            _ => text(&format!(
                "/metadata/annotations/{}",
                ANNOTATION_RESOURCE_NAME.replace('/', "~1")
            )),
        };
        let namespace = Some(text("/metadata/namespace")).filter(|n| !n.is_empty());
        let mut outcome = Outcome {
            api_version,
            kind,
            name,
            namespace,
            status: Status::Valid,
            findings: Vec::new(),
        };
        let Some(schema) = self.catalog.get(&outcome.api_version, &outcome.kind) else {
            outcome.status = Status::MissingSchema;
            return outcome;
        };

        // Server-side apply refuses what it cannot make a typed patch of
        // before anything else is checked.
        if let Some(problem) = apply::refusal(object, schema) {
            outcome.status = Status::Invalid;
            outcome.findings.push(Finding {
                check: Check::Schema,
                message: problem.to_string(),
                problem,
            });
            return outcome;
        }
        let prepare = |value: &Value| {
            let mut value = value.clone();
            if schema.origin.is_custom() {
                // Server-side apply keeps a null the schema does not allow
                // (a create would drop it), so it is reported.
                plait_model::default_value(&mut value, &schema.root);
                // The status subresource's: a write of the object drops it.
                if schema.status_subresource
                    && let Some(map) = value.as_object_mut()
                {
                    map.remove("status");
                }
            }
            value
        };
        let object = prepare(object);
        let old = old.map(prepare);
        let findings = structural::Walker::new(schema, &self.rules).run(&object, old.as_ref());
        let mut push = |check: Check, problems: Vec<Problem>| {
            outcome
                .findings
                .extend(problems.into_iter().map(|problem| Finding {
                    check,
                    message: problem.to_string(),
                    problem,
                }));
        };
        let builtin = if schema.origin.is_custom() {
            Vec::new()
        } else {
            builtin::check(&object, old.as_ref())
        };
        if builtin
            .iter()
            .any(|p| matches!(p.kind, ProblemKind::Rejected))
        {
            // The API server cannot decode the object: that is all it says.
            let rejected = builtin
                .into_iter()
                .filter(|p| matches!(p.kind, ProblemKind::Rejected))
                .take(1)
                .collect();
            push(Check::Builtin, rejected);
            outcome.status = Status::Invalid;
            return outcome;
        }
        let schema_problems = findings
            .schema
            .into_iter()
            .filter(|p| !builtin::supersedes(&builtin, p))
            .collect();
        push(Check::Schema, schema_problems);
        push(Check::Builtin, builtin);
        if findings.blocking && schema.has_rules {
            push(
                Check::Cel,
                vec![Problem::invalid(
                    "",
                    Value::Null,
                    "some validation rules were not checked because the object was invalid; \
                     correct the existing errors to complete validation",
                )],
            );
        } else {
            push(Check::Cel, findings.cel);
        }
        if outcome.api_version == "apiextensions.k8s.io/v1"
            && outcome.kind == "CustomResourceDefinition"
        {
            push(Check::Cel, self.rules.crd_cost_problems(&object));
        }
        if outcome
            .api_version
            .starts_with("apiextensions.crossplane.io/")
            && outcome.kind == "CompositeResourceDefinition"
        {
            push(Check::Cel, self.rules.xrd_cost_problems(&object));
        }
        if outcome
            .api_version
            .starts_with("apiextensions.crossplane.io/")
            && outcome.kind == "Composition"
        {
            push(Check::Composition, composition::check(&object, self));
        }
        if !outcome.findings.is_empty() {
            outcome.status = Status::Invalid;
        }
        outcome
    }
}

/// The identity an old object is matched to its new state by.
pub fn identity(object: &Value) -> (String, String, String, String) {
    let text = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    (
        text("/apiVersion"),
        text("/kind"),
        text("/metadata/namespace"),
        text("/metadata/name"),
    )
}

#[cfg(test)]
mod root_tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    /// The object itself is the field `""` in JSON whichever check found the
    /// problem, and `<nil>` in the message, as kube-apiserver prints it.
    #[test]
    fn the_object_root_is_spelled_one_way() {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "roots.example.org"},
            "spec": {"group": "example.org", "names": {"kind": "Root", "plural": "roots"}, "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('r-')", "message": "starts with r-"}],
                    "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer", "enum": [1, 2]}}}},
                }}}]},
        });
        let mut catalog = Catalog::new();
        catalog.add_definition(&crd).unwrap();
        let validator = Validator::new(catalog);
        let root = |name: &str, spec: serde_json::Value| {
            let object = json!({"apiVersion": "example.org/v1", "kind": "Root",
                "metadata": {"name": name, "namespace": "default"}, "spec": spec});
            let outcome = validator.validate(&object, None);
            let json = serde_json::to_value(&outcome).unwrap();
            let finding = json["findings"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["check"] == "cel")
                .cloned()
                .unwrap();
            (finding["field"].clone(), finding["message"].clone())
        };
        let (field, message) = root("x", json!({"size": 1}));
        assert_eq!(field, json!(""));
        assert_eq!(
            message,
            json!("<nil>: Invalid value: \"object\": starts with r-")
        );
        // A value outside the enum blocks the rules (a wrong type would not get
        // that far: server-side apply refuses it first).
        let (field, message) = root("r-1", json!({"size": 3}));
        assert_eq!(field, json!(""));
        assert!(
            message
                .as_str()
                .unwrap()
                .starts_with("<nil>: Invalid value: null: some validation rules were not checked")
        );
    }
}

#[cfg(test)]
mod combinator_tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    /// A CRD whose `spec` is `oneOf` two branches of only `required`, whose
    /// `count` is an integer, whose `size` is an int-or-string with a rule
    /// on either, and whose `template` an embedded resource, as
    /// kube-apiserver v1.34 answers them.
    #[test]
    fn objects_the_api_server_accepts_are_accepted() {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "targets.example.org"},
            "spec": {
                "group": "example.org",
                "names": {"kind": "Target", "plural": "targets"},
                "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {
                        "type": "object",
                        "oneOf": [{"required": ["host"]}, {"required": ["ip"]}],
                        "properties": {
                            "host": {"type": "string"},
                            "ip": {"type": "string"},
                            "count": {"type": "integer"},
                            "size": {
                                "x-kubernetes-int-or-string": true,
                                "x-kubernetes-validations": [
                                    {"rule": "type(self) == int ? self >= 1 : self.endsWith('Gi')"},
                                ],
                            },
                            "template": {
                                "type": "object",
                                "x-kubernetes-embedded-resource": true,
                                "x-kubernetes-preserve-unknown-fields": true,
                            },
                        },
                    }},
                }}}],
            },
        });
        let mut catalog = Catalog::new();
        catalog.add_definition(&crd).unwrap();
        let validator = Validator::new(catalog);
        // (spec, valid)
        let cases = [
            (json!({"host": "a"}), true),
            (json!({"ip": "10.0.0.1"}), true),
            (json!({"host": "a", "ip": "10.0.0.1"}), false),
            (json!({}), false),
            (json!({"host": "a", "count": 14.0}), true),
            (json!({"host": "a", "count": 14.5}), false),
            (
                json!({"host": "a", "template": {"apiVersion": "v1", "kind": "ConfigMap"}}),
                true,
            ),
            (
                json!({"host": "a", "template": {"apiVersion": "v1"}}),
                false,
            ),
            (
                json!({"host": "a", "template": {"apiVersion": "v1", "kind": ""}}),
                false,
            ),
        ];
        for (spec, valid) in cases {
            let object = json!({
                "apiVersion": "example.org/v1", "kind": "Target",
                "metadata": {"name": "t", "namespace": "default"},
                "spec": spec,
            });
            let outcome = validator.validate(&object, None);
            assert_eq!(
                outcome.status == Status::Valid,
                valid,
                "{spec}: {:?}",
                outcome.findings
            );
        }
    }
}
