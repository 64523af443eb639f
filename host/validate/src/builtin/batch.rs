//! `batch/v1`: Jobs and CronJobs.

use serde_json::Value;

use super::core::{PodOwner, pod_template};
use super::{Ctx, cron, field, flag, meta, text};
use crate::problem::Path;

/// A Job's spec, as its own or as a CronJob's template; `generated` when
/// the API server generates its selector (a Job not asking for its own).
fn job_spec(ctx: &mut Ctx, spec: &Value, at: &Path, generated: bool) {
    for key in [
        "parallelism",
        "completions",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        ctx.non_negative(spec, key, at);
    }
    if let Some(mode) = text(spec, "completionMode").filter(|m| !m.is_empty())
        && !matches!(mode, "NonIndexed" | "Indexed")
    {
        ctx.not_supported(
            &at.child("completionMode"),
            mode,
            &["NonIndexed", "Indexed"],
        );
    }
    let template = spec.get("template").cloned().unwrap_or(Value::Null);
    if let Some(selector) = field(spec, "selector") {
        if generated {
            ctx.invalid_struct(
                &at.child("selector"),
                meta::selector_shown(selector),
                "`selector` not auto-generated",
            );
        } else if meta::label_selector(ctx, selector, &at.child("selector")) {
            let labels = template
                .pointer("/metadata/labels")
                .and_then(Value::as_object);
            if !meta::selector_is_empty(selector) && !meta::selects(selector, labels) {
                let shown = labels.map_or(Value::Null, |l| Value::Object(l.clone()));
                ctx.invalid(
                    &at.child("template").child("metadata").child("labels"),
                    shown,
                    "`selector` does not match template `labels`",
                );
            }
        }
    }
    pod_template(ctx, &template, &at.child("template"), PodOwner::Job);
}

pub(crate) fn job(ctx: &mut Ctx, object: &Value) {
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    // A selector the API server generated (read back from the cluster)
    // carries the Job's UID.
    let generated_before = spec
        .pointer("/selector/matchLabels/batch.kubernetes.io~1controller-uid")
        .is_some();
    let generated = !flag(&spec, "manualSelector") && !generated_before;
    job_spec(ctx, &spec, &Path::root().child("spec"), generated);
}

/// A Job's template, completions and selector cannot change.
pub(crate) fn job_update(ctx: &mut Ctx, object: &Value, old: &Value) {
    let at = Path::root().child("spec");
    for key in ["completions", "selector", "template", "completionMode"] {
        let value = |o: &Value| {
            o.pointer(&format!("/spec/{key}"))
                .cloned()
                .unwrap_or(Value::Null)
        };
        let new = value(object);
        if new != value(old) {
            match key {
                "template" => {
                    ctx.invalid_struct(&at.child(key), new.to_string(), "field is immutable")
                }
                "selector" => ctx.invalid_struct(
                    &at.child(key),
                    meta::selector_shown(&new),
                    "field is immutable",
                ),
                _ => ctx.invalid(&at.child(key), new, "field is immutable"),
            }
        }
    }
}

pub(crate) fn cron_job(ctx: &mut Ctx, object: &Value) {
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    let at = Path::root().child("spec");
    let schedule = text(&spec, "schedule").unwrap_or_default();
    if schedule.is_empty() {
        ctx.required(&at.child("schedule"), "");
    } else if schedule.contains("TZ") {
        ctx.invalid(
            &at.child("schedule"),
            schedule,
            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        );
    } else if let Err(why) = cron::parse_standard(schedule) {
        ctx.invalid(&at.child("schedule"), schedule, why);
    }
    if let Some(zone) = text(&spec, "timeZone")
        && let Err(why) = cron::time_zone(zone)
    {
        ctx.invalid(&at.child("timeZone"), zone, why);
    }
    for key in [
        "startingDeadlineSeconds",
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
    ] {
        ctx.non_negative(&spec, key, &at);
    }
    let template = spec
        .pointer("/jobTemplate/spec")
        .cloned()
        .unwrap_or(Value::Null);
    job_spec(
        ctx,
        &template,
        &at.child("jobTemplate").child("spec"),
        false,
    );
}
