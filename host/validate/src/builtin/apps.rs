//! `apps/v1`: Deployments, ReplicaSets, DaemonSets, StatefulSets.

use serde_json::{Value, json};

use super::core::{PodOwner, claim_spec, pod_template};
use super::names::percent;
use super::{Ctx, field, int, list, meta, text};
use crate::problem::Path;

/// The selector (required, valid, not empty) and the pod template it must
/// select, as every controller of `apps/v1` has them.
fn selector_and_template(ctx: &mut Ctx, spec: &Value, at: &Path, kind: &str) {
    let selector = field(spec, "selector");
    let mut selects_nothing = false;
    let mut convertible = true;
    match selector {
        None => {
            ctx.required(&at.child("selector"), "");
            selects_nothing = true;
        }
        Some(selector) => {
            convertible = meta::label_selector(ctx, selector, &at.child("selector"));
            if meta::selector_is_empty(selector) {
                ctx.invalid_struct(
                    &at.child("selector"),
                    meta::selector_shown(selector),
                    format!("empty selector is invalid for {kind}"),
                );
            }
        }
    }
    let template = spec.get("template").cloned().unwrap_or(Value::Null);
    if !convertible {
        if let Some(selector) = selector {
            ctx.invalid_struct(
                &at.child("selector"),
                meta::selector_shown(selector),
                "invalid label selector",
            );
        }
        return;
    }
    let labels = template
        .pointer("/metadata/labels")
        .and_then(Value::as_object);
    let matches = match selector {
        Some(s) => meta::selector_is_empty(s) || meta::selects(s, labels),
        None => !selects_nothing,
    };
    if !matches {
        let shown = labels.map_or(Value::Null, |l| Value::Object(l.clone()));
        ctx.invalid(
            &at.child("template").child("metadata").child("labels"),
            shown,
            "`selector` does not match template `labels`",
        );
    }
    pod_template(ctx, &template, &at.child("template"), PodOwner::ReplicaSet);
}

/// A max-surge or max-unavailable value: a count or a percentage, and
/// whether it comes to zero.
fn int_or_percent(ctx: &mut Ctx, value: Option<&Value>, at: &Path, at_most_100: bool) -> bool {
    match value {
        Some(Value::String(s)) => {
            let messages = percent(s);
            let valid = messages.is_empty();
            ctx.invalid_each(at, s, messages);
            if !valid {
                return false;
            }
            let n: i64 = s.trim_end_matches('%').parse().unwrap_or(0);
            if at_most_100 && n > 100 {
                ctx.invalid(at, s.as_str(), "must not be greater than 100%");
            }
            n == 0
        }
        Some(v @ Value::Number(_)) => {
            let n = v.as_i64().unwrap_or(0);
            if n < 0 {
                ctx.invalid(at, n, "must be greater than or equal to 0");
            }
            n == 0
        }
        _ => false,
    }
}

pub(crate) fn deployment(ctx: &mut Ctx, object: &Value) {
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    let at = Path::root().child("spec");
    ctx.non_negative(&spec, "replicas", &at);
    selector_and_template(ctx, &spec, &at, "deployment");
    let strategy = spec.get("strategy").cloned().unwrap_or(Value::Null);
    let strategy_at = at.child("strategy");
    let rolling = field(&strategy, "rollingUpdate");
    match text(&strategy, "type")
        .filter(|t| !t.is_empty())
        .unwrap_or("RollingUpdate")
    {
        "Recreate" => {
            if rolling.is_some() {
                ctx.forbidden(
                    &strategy_at.child("rollingUpdate"),
                    "may not be specified when strategy `type` is 'Recreate'",
                );
            }
        }
        "RollingUpdate" => {
            // Both default to 25%.
            let default = Value::String("25%".into());
            let surge = rolling
                .and_then(|r| field(r, "maxSurge"))
                .unwrap_or(&default)
                .clone();
            let unavailable = rolling
                .and_then(|r| field(r, "maxUnavailable"))
                .unwrap_or(&default)
                .clone();
            let rolling_at = strategy_at.child("rollingUpdate");
            let surge_zero =
                int_or_percent(ctx, Some(&surge), &rolling_at.child("maxSurge"), false);
            let unavailable_zero = int_or_percent(
                ctx,
                Some(&unavailable),
                &rolling_at.child("maxUnavailable"),
                true,
            );
            if surge_zero && unavailable_zero {
                ctx.invalid(
                    &rolling_at.child("maxUnavailable"),
                    unavailable,
                    "may not be 0 when `maxSurge` is 0",
                );
            }
        }
        other => {
            let shown = format!("{{\"Type\":{},\"RollingUpdate\":null}}", Value::from(other));
            ctx.not_supported_struct(&strategy_at, shown, &["Recreate", "RollingUpdate"]);
        }
    }
    ctx.non_negative(&spec, "revisionHistoryLimit", &at);
    ctx.non_negative(&spec, "minReadySeconds", &at);
    if let Some(deadline) = int(&spec, "progressDeadlineSeconds") {
        if deadline < 0 {
            ctx.invalid(
                &at.child("progressDeadlineSeconds"),
                deadline,
                "must be greater than or equal to 0",
            );
        } else if deadline <= int(&spec, "minReadySeconds").unwrap_or(0) {
            ctx.invalid(
                &at.child("progressDeadlineSeconds"),
                deadline,
                "must be greater than minReadySeconds",
            );
        }
    }
}

pub(crate) fn replica_set(ctx: &mut Ctx, object: &Value) {
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    let at = Path::root().child("spec");
    ctx.non_negative(&spec, "replicas", &at);
    ctx.non_negative(&spec, "minReadySeconds", &at);
    selector_and_template(ctx, &spec, &at, "replicaset");
}

pub(crate) fn daemon_set(ctx: &mut Ctx, object: &Value) {
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    let at = Path::root().child("spec");
    selector_and_template(ctx, &spec, &at, "daemonset");
    ctx.non_negative(&spec, "minReadySeconds", &at);
    ctx.non_negative(&spec, "revisionHistoryLimit", &at);
    let strategy = spec.get("updateStrategy").cloned().unwrap_or(Value::Null);
    if text(&strategy, "type").unwrap_or("RollingUpdate") == "RollingUpdate" {
        let rolling_at = at.child("updateStrategy").child("rollingUpdate");
        let rolling = strategy
            .get("rollingUpdate")
            .cloned()
            .unwrap_or(Value::Null);
        // maxUnavailable defaults to 1, maxSurge to 0.
        let unavailable = field(&rolling, "maxUnavailable")
            .cloned()
            .unwrap_or(Value::from(1));
        let surge = field(&rolling, "maxSurge")
            .cloned()
            .unwrap_or(Value::from(0));
        let unavailable_zero = int_or_percent(
            ctx,
            Some(&unavailable),
            &rolling_at.child("maxUnavailable"),
            true,
        );
        let surge_zero = int_or_percent(ctx, Some(&surge), &rolling_at.child("maxSurge"), false);
        if unavailable_zero && surge_zero {
            ctx.required(
                &rolling_at.child("maxUnavailable"),
                "cannot be 0 when maxSurge is 0",
            );
        }
    }
}

pub(crate) fn stateful_set(ctx: &mut Ctx, object: &Value) {
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    let at = Path::root().child("spec");
    if let Some(policy) = text(&spec, "podManagementPolicy").filter(|p| !p.is_empty())
        && !matches!(policy, "OrderedReady" | "Parallel")
    {
        ctx.invalid(
            &at.child("podManagementPolicy"),
            policy,
            "must be 'OrderedReady' or 'Parallel'",
        );
    }
    if let Some(strategy) = field(&spec, "updateStrategy") {
        let kind = text(strategy, "type").unwrap_or("RollingUpdate");
        if !matches!(kind, "RollingUpdate" | "OnDelete") {
            let shown = format!("{{\"Type\":{},\"RollingUpdate\":null}}", Value::from(kind));
            ctx.invalid_struct(
                &at.child("updateStrategy"),
                shown,
                "must be 'RollingUpdate' or 'OnDelete'",
            );
        }
    }
    ctx.non_negative(&spec, "replicas", &at);
    ctx.non_negative(&spec, "minReadySeconds", &at);
    ctx.non_negative(&spec, "revisionHistoryLimit", &at);
    // Each claim template is a volume of the pods, which containers mount.
    let mut with_claims = spec.clone();
    let claims: Vec<Value> = list(&spec, "volumeClaimTemplates")
        .iter()
        .filter_map(|c| c.pointer("/metadata/name"))
        .map(|name| json!({"name": name, "persistentVolumeClaim": {"claimName": name}}))
        .collect();
    if !claims.is_empty()
        && let Some(volumes) = with_claims
            .pointer_mut("/template/spec")
            .and_then(Value::as_object_mut)
            .map(|spec| spec.entry("volumes").or_insert_with(|| json!([])))
            .and_then(Value::as_array_mut)
    {
        volumes.extend(claims);
    }
    selector_and_template(ctx, &with_claims, &at, "statefulset");
    for (i, claim) in list(&spec, "volumeClaimTemplates").iter().enumerate() {
        let at = at.child("volumeClaimTemplates").index(i);
        if let Some(labels) = claim.pointer("/metadata/labels").and_then(Value::as_object) {
            meta::validate_labels(ctx, labels, &at.child("metadata").child("labels"));
        }
        let claim_spec_value = claim.get("spec").cloned().unwrap_or(Value::Null);
        claim_spec(ctx, &claim_spec_value, &at.child("spec"));
    }
}

/// apps/v1's selectors cannot change.
pub(crate) fn selector_update(ctx: &mut Ctx, object: &Value, old: &Value) {
    let selector = |o: &Value| o.pointer("/spec/selector").cloned().unwrap_or(Value::Null);
    let new = selector(object);
    if new != selector(old) {
        ctx.invalid_struct(
            &Path::root().child("spec").child("selector"),
            meta::selector_shown(&new),
            "field is immutable",
        );
    }
}

/// What a StatefulSet's update may change.
pub(crate) fn stateful_set_update(ctx: &mut Ctx, object: &Value, old: &Value) {
    const MUTABLE: &[&str] = &[
        "replicas",
        "ordinals",
        "template",
        "updateStrategy",
        "revisionHistoryLimit",
        "persistentVolumeClaimRetentionPolicy",
        "minReadySeconds",
    ];
    let rest = |o: &Value| {
        let mut spec = o.get("spec").cloned().unwrap_or(Value::Null);
        if let Some(spec) = spec.as_object_mut() {
            spec.retain(|k, v| !MUTABLE.contains(&k.as_str()) && !v.is_null());
        }
        spec
    };
    if rest(object) != rest(old) {
        ctx.forbidden(
            &Path::root().child("spec"),
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        );
    }
}
