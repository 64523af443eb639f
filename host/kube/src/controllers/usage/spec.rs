//! What a Usage or ClusterUsage says, read from its JSON as upstream
//! Crossplane reads it: the resource used (`spec.of`), the one using it
//! (`spec.by`), the reason, and the words it is shown with. Pure functions:
//! nothing here asks the API server.

use std::collections::BTreeMap;

use plait_go_compat::strconv::quote;
use serde_json::Value;

use crate::vocabulary::api::{CLUSTER_USAGE_KIND, group_of};
use crate::vocabulary::object::text;

/// `spec.of` or `spec.by`: a kind and either a name or a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub api_version: String,
    pub kind: String,
    /// `resourceRef.name`, once set or resolved.
    pub name: Option<String>,
    /// `resourceRef.namespace` (a namespaced Usage's `of` only).
    pub namespace: Option<String>,
    pub selector: Option<Selector>,
}

/// `resourceSelector`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector {
    pub match_labels: BTreeMap<String, String>,
    pub match_controller_ref: bool,
    /// `resourceSelector.namespace` (a namespaced Usage's `of` only).
    pub namespace: Option<String>,
}

impl Target {
    /// The target at `pointer` (`/spec/of` or `/spec/by`), if the Usage has one.
    pub fn at(usage: &Value, pointer: &str) -> Option<Target> {
        let target = usage.pointer(pointer)?;
        let selector = target.get("resourceSelector").map(|s| Selector {
            match_labels: s
                .get("matchLabels")
                .and_then(Value::as_object)
                .map(|labels| {
                    labels
                        .iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                        .collect()
                })
                .unwrap_or_default(),
            match_controller_ref: s.get("matchControllerRef") == Some(&Value::Bool(true)),
            namespace: text(s, "/namespace").map(str::to_string),
        });
        Some(Target {
            api_version: text(target, "/apiVersion").unwrap_or_default().to_string(),
            kind: text(target, "/kind").unwrap_or_default().to_string(),
            name: text(target, "/resourceRef/name").map(str::to_string),
            namespace: text(target, "/resourceRef/namespace").map(str::to_string),
            selector,
        })
    }
}

/// The resource a Usage protects.
pub fn of(usage: &Value) -> Option<Target> {
    Target::at(usage, "/spec/of")
}

/// The resource using it, when the Usage names one.
pub fn by(usage: &Value) -> Option<Target> {
    Target::at(usage, "/spec/by")
}

pub fn reason(usage: &Value) -> Option<&str> {
    text(usage, "/spec/reason")
}

pub fn replays_deletion(usage: &Value) -> bool {
    usage.pointer("/spec/replayDeletion") == Some(&Value::Bool(true))
}

/// The Usage's own namespace; `None` for a ClusterUsage.
pub fn namespace(usage: &Value) -> Option<&str> {
    text(usage, "/metadata/namespace")
}

/// The namespace the used resource is in: a namespaced Usage's own (what
/// `resourceRef.namespace` may say is checked by [`foreign_namespace`]);
/// none for a ClusterUsage, whose `of` is cluster-scoped.
pub fn used_namespace(usage: &Value) -> Option<&str> {
    namespace(usage)
}

/// The other namespace a namespaced Usage's `of` names (by reference or
/// selector), if it names one. Upstream lets a Usage protect a resource in
/// another namespace; plait does not, since a tenant could otherwise block
/// deletions in a namespace that is not its own.
pub fn foreign_namespace(usage: &Value) -> Option<String> {
    let own = namespace(usage)?;
    let of = of(usage)?;
    [
        of.namespace,
        of.selector.and_then(|selector| selector.namespace),
    ]
    .into_iter()
    .flatten()
    .find(|named| named != own)
}

/// Why plait refuses a Usage whose `of` is in another namespace.
pub fn foreign_namespace_message(usage: &Value, foreign: &str) -> String {
    format!(
        "namespaced Usage {} in namespace {} refers to a resource in namespace {}: a Usage may protect only resources in its own namespace",
        quote(text(usage, "/metadata/name").unwrap_or_default()),
        quote(namespace(usage).unwrap_or_default()),
        quote(foreign),
    )
}

/// Why a namespaced Usage may not protect a resource of a cluster-scoped
/// kind, as upstream's admission check says it (the kind as Go prints a
/// `GroupVersionKind`).
pub fn cluster_scoped_message(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    format!(
        "a namespaced Usage cannot protect the cluster-scoped resource kind {group}/{version}, Kind={kind} - use a ClusterUsage instead"
    )
}

/// Upstream's error for a kind the API server does not serve (the REST
/// mapper's `NoKindMatchError` for one version).
pub fn no_kind_match(api_version: &str, kind: &str) -> String {
    format!(
        "no matches for kind {} in version {}",
        quote(kind),
        quote(api_version)
    )
}

/// Whether the Usage protects `object` (by apiVersion group, kind, name and
/// namespace, as upstream indexes Usages: the version does not matter).
pub fn refers_to(usage: &Value, object: &Value) -> bool {
    let Some(of) = of(usage) else {
        return false;
    };
    if foreign_namespace(usage).is_some() {
        return false;
    }
    let Some(name) = of.name.as_deref() else {
        return false;
    };
    group_of(&of.api_version) == group_of(text(object, "/apiVersion").unwrap_or_default())
        && Some(of.kind.as_str()) == text(object, "/kind")
        && Some(name) == text(object, "/metadata/name")
        && used_namespace(usage) == text(object, "/metadata/namespace")
}

/// The `crossplane.io/usage-details` annotation: the reason when there is
/// one, else who uses what, as upstream words it.
pub fn details(usage: &Value) -> String {
    if let Some(reason) = reason(usage) {
        return reason.to_string();
    }
    match (by(usage), of(usage)) {
        (Some(by), Some(of)) => {
            let used = format!("{}/{}", of.kind, of.name.unwrap_or_default());
            let using = format!("{}/{}", by.kind, by.name.unwrap_or_default());
            match of.namespace {
                Some(namespace) => format!("{using} uses {used} in namespace {namespace}"),
                None => format!("{using} uses {used}"),
            }
        }
        _ => "undefined".to_string(),
    }
}

/// Why a deletion is refused, naming the first of `usages`, as upstream's
/// webhook says it (with the Go type upstream prints for each kind).
pub fn in_use_message(usages: &[Value]) -> String {
    let Some(first) = usages.first() else {
        return String::new();
    };
    let type_name = if text(first, "/kind") == Some(CLUSTER_USAGE_KIND) {
        "*v1beta1.ClusterUsage"
    } else {
        "*v1beta1.Usage"
    };
    let name = quote(text(first, "/metadata/name").unwrap_or_default());
    let id = match namespace(first) {
        Some(namespace) => format!("{name} (in namespace {})", quote(namespace)),
        None => name,
    };
    let count = usages.len();
    if let Some(by) = by(first) {
        return format!(
            "This resource is in-use by {count} usage(s), including the {type_name} {id} by resource {}/{}.",
            by.kind,
            by.name.unwrap_or_default()
        );
    }
    if let Some(reason) = reason(first) {
        return format!(
            "This resource is in-use by {count} usage(s), including the {type_name} {id} with reason: {}.",
            quote(reason)
        );
    }
    format!("This resource is in-use by {count} usage(s), including the {type_name} {id}.")
}

/// Go's `%q` of a `map[string]string` (each key and value quoted), as
/// upstream's selector errors print the labels: `map["k1":"v1" "k2":"v2"]`,
/// keys sorted.
pub fn go_quoted_labels(labels: &BTreeMap<String, String>) -> String {
    let pairs: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{}:{}", quote(k), quote(v)))
        .collect();
    format!("map[{}]", pairs.join(" "))
}

/// The UID of the object's controller, if it has one.
pub fn controller_uid(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller") == Some(&Value::Bool(true)))?
        .get("uid")?
        .as_str()
}

/// Upstream's `HaveSameController`: both have a controller, and it is the
/// same one. Two objects without a controller do not match.
pub fn same_controller(a: &Value, b: &Value) -> bool {
    matches!((controller_uid(a), controller_uid(b)), (Some(x), Some(y)) if x == y)
}

/// The resource a selector picks among `candidates` (already listed by its
/// labels): the first, or with `matchControllerRef` the first with the
/// Usage's controller.
pub fn pick<'a>(usage: &Value, selector: &Selector, candidates: &'a [Value]) -> Option<&'a Value> {
    candidates
        .iter()
        .find(|candidate| !selector.match_controller_ref || same_controller(candidate, usage))
}

/// Why a selector picked nothing, as upstream says it.
pub fn nothing_selected(kind: &str, selector: &Selector, listed_any: bool) -> String {
    let labels = go_quoted_labels(&selector.match_labels);
    if listed_any {
        format!(
            "no {} found matching labels: {labels} and with same controller reference",
            quote(kind),
        )
    } else {
        format!("no {} found matching labels: {labels}", quote(kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::api::USAGE_API_VERSION;
    use serde_json::json;

    fn usage(namespace: Option<&str>, spec: Value) -> Value {
        let mut metadata = json!({"name": "protect"});
        let kind = match namespace {
            Some(ns) => {
                metadata["namespace"] = json!(ns);
                "Usage"
            }
            None => "ClusterUsage",
        };
        json!({"apiVersion": USAGE_API_VERSION, "kind": kind, "metadata": metadata, "spec": spec})
    }

    fn object(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Value {
        let mut metadata = json!({"name": name});
        if let Some(ns) = namespace {
            metadata["namespace"] = json!(ns);
        }
        json!({"apiVersion": api_version, "kind": kind, "metadata": metadata})
    }

    #[test]
    fn a_usage_refers_to_its_of_by_group_kind_name_and_namespace() {
        let of = json!({"apiVersion": "example.org/v1", "kind": "Database", "resourceRef": {"name": "db"}});
        let namespaced = usage(Some("team-a"), json!({"of": of, "reason": "r"}));
        let cluster = usage(None, json!({"of": of, "reason": "r"}));
        // (usage, object, refers)
        let cases = [
            (
                &namespaced,
                object("example.org/v1", "Database", Some("team-a"), "db"),
                true,
            ),
            // Another version of the same group and kind is the same object.
            (
                &namespaced,
                object("example.org/v2", "Database", Some("team-a"), "db"),
                true,
            ),
            (
                &namespaced,
                object("example.org/v1", "Database", Some("team-b"), "db"),
                false,
            ),
            (
                &namespaced,
                object("example.org/v1", "Database", Some("team-a"), "other"),
                false,
            ),
            (
                &namespaced,
                object("other.org/v1", "Database", Some("team-a"), "db"),
                false,
            ),
            (
                &namespaced,
                object("example.org/v1", "Table", Some("team-a"), "db"),
                false,
            ),
            (
                &cluster,
                object("example.org/v1", "Database", None, "db"),
                true,
            ),
            (
                &cluster,
                object("example.org/v1", "Database", Some("team-a"), "db"),
                false,
            ),
        ];
        for (usage, object, refers) in cases {
            assert_eq!(refers_to(usage, &object), refers, "{object}");
        }
    }

    #[test]
    fn a_namespaced_usage_of_another_namespace_is_foreign_and_protects_nothing() {
        // (of, foreign namespace)
        let cases = [
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "resourceRef": {"name": "c"}}),
                None,
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "resourceRef": {"name": "c", "namespace": "team-a"}}),
                None,
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "resourceRef": {"name": "c", "namespace": "team-b"}}),
                Some("team-b"),
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "resourceSelector": {"namespace": "team-b"}}),
                Some("team-b"),
            ),
        ];
        for (of, foreign) in cases {
            let usage = usage(Some("team-a"), json!({"of": of, "reason": "r"}));
            assert_eq!(foreign_namespace(&usage).as_deref(), foreign, "{of}");
            let used = object("v1", "ConfigMap", Some("team-b"), "c");
            assert!(!refers_to(&usage, &used));
        }
        assert_eq!(
            foreign_namespace_message(&usage(Some("team-a"), json!({})), "team-b"),
            "namespaced Usage \"protect\" in namespace \"team-a\" refers to a resource in namespace \"team-b\": a Usage may protect only resources in its own namespace"
        );
    }

    #[test]
    fn the_in_use_message_names_the_first_usage_as_upstream_does() {
        let of = json!({"apiVersion": "v1", "kind": "ConfigMap", "resourceRef": {"name": "c"}});
        let by = json!({"apiVersion": "v1", "kind": "Secret", "resourceRef": {"name": "s"}});
        let cases = [
            (
                vec![usage(Some("team-a"), json!({"of": of, "by": by}))],
                "This resource is in-use by 1 usage(s), including the *v1beta1.Usage \"protect\" (in namespace \"team-a\") by resource Secret/s.",
            ),
            (
                vec![
                    usage(None, json!({"of": of, "reason": "keep \"it\""})),
                    usage(None, json!({"of": of, "by": by})),
                ],
                "This resource is in-use by 2 usage(s), including the *v1beta1.ClusterUsage \"protect\" with reason: \"keep \\\"it\\\"\".",
            ),
            (
                vec![usage(None, json!({"of": of}))],
                "This resource is in-use by 1 usage(s), including the *v1beta1.ClusterUsage \"protect\".",
            ),
        ];
        for (usages, want) in cases {
            assert_eq!(in_use_message(&usages), want);
        }
    }

    #[test]
    fn a_cluster_scoped_kind_is_named_as_go_prints_a_group_version_kind() {
        assert_eq!(
            cluster_scoped_message("v1", "Namespace"),
            "a namespaced Usage cannot protect the cluster-scoped resource kind /v1, Kind=Namespace - use a ClusterUsage instead"
        );
        assert_eq!(
            cluster_scoped_message("rbac.authorization.k8s.io/v1", "ClusterRole"),
            "a namespaced Usage cannot protect the cluster-scoped resource kind rbac.authorization.k8s.io/v1, Kind=ClusterRole - use a ClusterUsage instead"
        );
    }

    #[test]
    fn a_kind_not_served_is_named_as_the_rest_mapper_names_it() {
        // (apiVersion, kind, message)
        let cases = [
            (
                "example.org/v1",
                "Widget",
                r#"no matches for kind "Widget" in version "example.org/v1""#,
            ),
            (
                "v1",
                "Gadget",
                r#"no matches for kind "Gadget" in version "v1""#,
            ),
        ];
        for (api_version, kind, message) in cases {
            assert_eq!(no_kind_match(api_version, kind), message);
        }
    }

    #[test]
    fn details_are_the_reason_else_who_uses_what() {
        let of = json!({"apiVersion": "v1", "kind": "ConfigMap", "resourceRef": {"name": "c"}});
        let of_in = json!({"apiVersion": "v1", "kind": "ConfigMap", "resourceRef": {"name": "c", "namespace": "team-a"}});
        let by = json!({"apiVersion": "v1", "kind": "Secret", "resourceRef": {"name": "s"}});
        let cases = [
            (
                json!({"of": of, "by": by, "reason": "production"}),
                "production",
            ),
            (json!({"of": of, "by": by}), "Secret/s uses ConfigMap/c"),
            (
                json!({"of": of_in, "by": by}),
                "Secret/s uses ConfigMap/c in namespace team-a",
            ),
            (json!({"of": of}), "undefined"),
        ];
        for (spec, want) in cases {
            assert_eq!(details(&usage(Some("team-a"), spec)), want);
        }
    }

    #[test]
    fn a_selector_with_match_controller_ref_picks_only_a_resource_of_the_same_controller() {
        let owned_by = |uid: &str| {
            json!({"metadata": {"name": format!("of-{uid}"), "ownerReferences": [
                {"uid": "other", "controller": false},
                {"uid": uid, "controller": true},
            ]}})
        };
        let mut the_usage = usage(Some("team-a"), json!({}));
        the_usage["metadata"]["ownerReferences"] = json!([{"uid": "xr", "controller": true}]);
        let candidates = vec![owned_by("someone"), owned_by("xr")];
        let any = Selector::default();
        let same = Selector {
            match_controller_ref: true,
            ..Selector::default()
        };
        assert_eq!(pick(&the_usage, &any, &candidates), candidates.first());
        assert_eq!(pick(&the_usage, &same, &candidates), candidates.get(1));
        assert_eq!(pick(&the_usage, &same, &candidates[..1]), None);
        // Without a controller of its own, a Usage matches nothing.
        let orphan = usage(Some("team-a"), json!({}));
        assert_eq!(pick(&orphan, &same, &candidates), None);
    }

    #[test]
    fn nothing_selected_prints_the_labels_as_go_does() {
        let selector = Selector {
            match_labels: BTreeMap::from([
                ("b".to_string(), "2".to_string()),
                ("a".to_string(), "1".to_string()),
            ]),
            ..Selector::default()
        };
        assert_eq!(
            nothing_selected("Database", &selector, false),
            r#"no "Database" found matching labels: map["a":"1" "b":"2"]"#
        );
        assert_eq!(
            nothing_selected("Database", &selector, true),
            r#"no "Database" found matching labels: map["a":"1" "b":"2"] and with same controller reference"#
        );
    }
}
