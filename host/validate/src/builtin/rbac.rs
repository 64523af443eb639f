//! `rbac.authorization.k8s.io/v1`: Roles, ClusterRoles and their bindings.

use serde_json::{Value, json};

use super::names::{dns1123_subdomain, path_segment_name};
use super::{Ctx, field, is_empty, list, meta, text, text_or_empty};
use crate::problem::Path;

const GROUP: &str = "rbac.authorization.k8s.io";

fn rules(ctx: &mut Ctx, object: &Value, namespaced: bool) {
    for (i, rule) in list(object, "rules").iter().enumerate() {
        let at = Path::root().child("rules").index(i);
        if is_empty(rule.get("verbs")) {
            ctx.required(&at.child("verbs"), "verbs must contain at least one value");
        }
        let urls = rule.get("nonResourceURLs").filter(|u| !is_empty(Some(u)));
        if let Some(urls) = urls {
            if namespaced {
                ctx.invalid(
                    &at.child("nonResourceURLs"),
                    urls.clone(),
                    "namespaced rules cannot apply to non-resource URLs",
                );
            }
            if !is_empty(rule.get("apiGroups"))
                || !is_empty(rule.get("resources"))
                || !is_empty(rule.get("resourceNames"))
            {
                ctx.invalid(
                    &at.child("nonResourceURLs"),
                    urls.clone(),
                    "rules cannot apply to both regular resources and non-resource URLs",
                );
            }
            continue;
        }
        if is_empty(rule.get("apiGroups")) {
            ctx.required(
                &at.child("apiGroups"),
                "resource rules must supply at least one api group",
            );
        }
        if is_empty(rule.get("resources")) {
            ctx.required(
                &at.child("resources"),
                "resource rules must supply at least one resource",
            );
        }
    }
}

pub(crate) fn role(ctx: &mut Ctx, object: &Value) {
    rules(ctx, object, true);
}

pub(crate) fn cluster_role(ctx: &mut Ctx, object: &Value) {
    rules(ctx, object, false);
    if let Some(aggregation) = field(object, "aggregationRule") {
        let at = Path::root()
            .child("aggregationRule")
            .child("clusterRoleSelectors");
        for (i, selector) in list(aggregation, "clusterRoleSelectors").iter().enumerate() {
            if !meta::label_selector(ctx, selector, &at.index(i)) {
                ctx.invalid(&at.index(i), Value::Null, "invalid label selector.");
            }
        }
    }
}

fn binding(ctx: &mut Ctx, object: &Value, namespaced: bool) {
    let role_ref = object.get("roleRef").cloned().unwrap_or(Value::Null);
    let at = Path::root().child("roleRef");
    let group = text_or_empty(&role_ref, "apiGroup");
    if group != GROUP {
        ctx.not_supported(&at.child("apiGroup"), group, &[GROUP]);
    }
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    let kind = text_or_empty(&role_ref, "kind");
    if !kinds.contains(&kind) {
        ctx.not_supported(&at.child("kind"), kind, kinds);
    }
    let name = text_or_empty(&role_ref, "name");
    if name.is_empty() {
        ctx.required(&at.child("name"), "");
    } else {
        let messages = path_segment_name(name);
        ctx.invalid_each(&at.child("name"), name, messages);
    }
    for (i, subject) in list(object, "subjects").iter().enumerate() {
        let at = Path::root().child("subjects").index(i);
        let name = text_or_empty(subject, "name");
        if name.is_empty() {
            ctx.required(&at.child("name"), "");
        }
        let kind = text_or_empty(subject, "kind");
        match kind {
            "ServiceAccount" => {
                if !name.is_empty() {
                    let messages = dns1123_subdomain(name);
                    ctx.invalid_each(&at.child("name"), name, messages);
                }
                let group = text_or_empty(subject, "apiGroup");
                if !group.is_empty() {
                    ctx.not_supported(&at.child("apiGroup"), group, &[""]);
                }
                if !namespaced && text_or_empty(subject, "namespace").is_empty() {
                    ctx.required(&at.child("namespace"), "");
                }
            }
            "User" | "Group" => {
                // Defaulted to the RBAC group when absent.
                let group = text(subject, "apiGroup")
                    .filter(|g| !g.is_empty())
                    .unwrap_or(GROUP);
                if group != GROUP {
                    ctx.not_supported(&at.child("apiGroup"), group, &[GROUP]);
                }
            }
            other => ctx.not_supported(
                &at.child("kind"),
                other,
                &["ServiceAccount", "User", "Group"],
            ),
        }
    }
}

pub(crate) fn role_binding(ctx: &mut Ctx, object: &Value) {
    binding(ctx, object, true);
}

pub(crate) fn cluster_role_binding(ctx: &mut Ctx, object: &Value) {
    binding(ctx, object, false);
}

/// A binding's role cannot change.
pub(crate) fn binding_update(ctx: &mut Ctx, object: &Value, old: &Value) {
    let role_ref = |o: &Value| o.get("roleRef").cloned().unwrap_or(Value::Null);
    let new = role_ref(object);
    if new != role_ref(old) {
        let shown = json!({
            "APIGroup": text_or_empty(&new, "apiGroup"),
            "Kind": text_or_empty(&new, "kind"),
            "Name": text_or_empty(&new, "name"),
        });
        ctx.invalid_struct(
            &Path::root().child("roleRef"),
            shown.to_string(),
            "cannot change roleRef",
        );
    }
}
