//! One Function's reconcile: install its package, write its `Installed`
//! and `Healthy` conditions, and when what it is installed as changed,
//! requeue the XRs that run it; then load the packages its revisions
//! record.

use std::sync::Arc;

use kube::api::DynamicObject;
use kube::runtime::controller::Action;
use plait_functions::{FUNCTION_API_VERSION, FUNCTION_KIND, package_of};
use plait_reconcile::set_condition;
use serde_json::{Value, json};

use super::context::{FunctionContext, Outcome, megabytes};
use super::{FunctionError, REASON_ACTIVE, REASON_HEALTHY};
use crate::controllers::kit::{self, ObjectError};
use crate::controllers::timing::now;
use crate::vocabulary::api::FIELD_MANAGER;
use crate::vocabulary::metrics::ReconcileResult;
use crate::vocabulary::object::text;

/// A condition's status, reason and message.
type Reported = (&'static str, &'static str, String);

/// What `outcome` reports on `Installed` and on `Healthy`, and the package
/// and digest it resolved, if any.
fn reported<'a>(
    package: &str,
    outcome: &'a Outcome,
) -> (Reported, Reported, Option<(&'a String, &'a String)>) {
    match outcome {
        Outcome::Builtin { builtin, took } => (
            (
                "True",
                REASON_ACTIVE,
                format!(
                    "package {package} is built into plait as {}",
                    builtin.name()
                ),
            ),
            (
                "True",
                REASON_HEALTHY,
                format!(
                    "package {package} is built into plait as {} {} ({}), compiled and ready; compiling it took {took:.2?}",
                    builtin.name(),
                    builtin.upstream_version(),
                    megabytes(builtin.wasm().len()),
                ),
            ),
            None,
        ),
        Outcome::Healthy { pinned, digest } => (
            (
                "True",
                REASON_ACTIVE,
                format!("package {package} resolved to {pinned}"),
            ),
            (
                "True",
                REASON_HEALTHY,
                format!("{pinned} is compiled and ready"),
            ),
            Some((pinned, digest)),
        ),
        Outcome::NotInstalled(error) => {
            let message = format!("cannot install package {package}: {error}");
            let reason = error.reason().as_str();
            (
                ("False", reason, message.clone()),
                ("False", reason, message),
                None,
            )
        }
        Outcome::Unverified {
            config,
            error,
            previous,
        } => {
            let moved = previous
                .as_ref()
                .map(|p| format!(" (the package was at {p} when last installed)"))
                .unwrap_or_default();
            let message = format!(
                "package {package} is not verified by ImageConfig {config:?}: {error}{moved}"
            );
            let reason = error.reason().as_str();
            (
                ("False", reason, message.clone()),
                ("False", reason, message),
                None,
            )
        }
        Outcome::Unhealthy {
            pinned,
            digest,
            error,
        } => (
            (
                "True",
                REASON_ACTIVE,
                format!("package {package} resolved to {pinned}"),
            ),
            ("False", error.reason().as_str(), error.to_string()),
            Some((pinned, digest)),
        ),
    }
}

/// The status apply for `function` after `outcome`: the conditions, the
/// resolved digest and the ImageConfigs applied (`(name, reason)`), and
/// nothing this controller does not own.
fn status(function: &Value, outcome: &Outcome, applied: &[(String, &str)], now: &str) -> Value {
    let package = package_of(function);
    let mut updated = function.clone();
    let (installed, healthy, resolved) = reported(package, outcome);
    for (type_, (status, reason, message)) in [("Installed", installed), ("Healthy", healthy)] {
        set_condition(&mut updated, type_, status, reason, Some(&message), now);
    }
    let conditions: Vec<Value> = updated["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["type"] == "Installed" || c["type"] == "Healthy")
        .cloned()
        .collect();
    let applied: Vec<Value> = applied
        .iter()
        .map(|(name, reason)| json!({"name": name, "reason": reason}))
        .collect();
    let mut status = json!({"conditions": conditions, "appliedImageConfigRefs": applied});
    if let Some((pinned, digest)) = resolved {
        status["resolvedDigest"] = json!(digest);
        status["resolvedPackage"] = json!(pinned);
    }
    json!({
        "apiVersion": FUNCTION_API_VERSION,
        "kind": FUNCTION_KIND,
        "metadata": {"name": function.pointer("/metadata/name")},
        "status": status,
    })
}

/// Installs one Function's package and reports how it went.
pub async fn reconcile(
    object: Arc<DynamicObject>,
    ctx: Arc<FunctionContext>,
) -> Result<Action, FunctionError> {
    let target = Arc::clone(&object);
    kit::counted(ctx.as_ref(), &target, install(object, &ctx)).await
}

async fn install(
    object: Arc<DynamicObject>,
    ctx: &FunctionContext,
) -> Result<(Action, ReconcileResult), FunctionError> {
    let name = object.metadata.name.clone().unwrap_or_default();
    let mut function = serde_json::to_value(object.as_ref())
        .map_err(ObjectError::encode(format!("Function {name:?}")))?;
    function["apiVersion"] = json!(FUNCTION_API_VERSION);
    function["kind"] = json!(FUNCTION_KIND);
    let (outcome, applied) = ctx.install(&name, &function).await?;
    if let Outcome::NotInstalled(error)
    | Outcome::Unhealthy { error, .. }
    | Outcome::Unverified { error, .. } = &outcome
    {
        tracing::warn!(function = name, %error, "cannot install function package");
    }
    let refs = applied
        .as_ref()
        .map(|a| a.refs.as_slice())
        .unwrap_or_default();
    let written = ctx
        .cluster
        .apply_async(
            &status(&function, &outcome, refs, &now()),
            FIELD_MANAGER,
            true,
        )
        .await
        .map_err(ObjectError::cluster(
            format!("Function {name:?}"),
            "cannot write its status",
        ))?;
    let policy = applied.map(|a| a.fingerprint()).unwrap_or_default();
    if ctx
        .packages
        .record(&name, outcome.installed(package_of(&function), &policy))
    {
        ctx.stored(&name, text(&written, "/metadata/resourceVersion"))
            .await;
        let requeued = ctx.roll(&name).await?;
        tracing::info!(
            function = name,
            requeued,
            "function changed; reconciling its XRs"
        );
    }
    ctx.load_recorded(&name, &function).await?;
    let reference = ctx.reference(&name);
    if outcome.healthy() {
        ctx.policy.backoff.succeeded(&reference);
        Ok((
            Action::requeue(ctx.timing.poll_interval),
            ReconcileResult::Success,
        ))
    } else {
        Ok((
            Action::requeue(ctx.policy.backoff.failed(&reference)),
            ReconcileResult::NotSynced,
        ))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use plait_runtime::Builtin;

    use super::super::tests::function;
    use super::*;
    use crate::vocabulary::object::condition;

    #[test]
    fn status_reports_both_conditions_and_the_digest_it_resolved() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let pinned = format!("r.io/fn:v1@{digest}");
        let not_found = || plait_oci::Error::NotFound {
            reference: "r.io/fn:v1".into(),
            message: "manifest unknown".into(),
        };
        let cases = [
            (
                Outcome::Builtin {
                    builtin: Builtin::PatchAndTransform,
                    took: Duration::from_millis(1250),
                },
                ("True", REASON_ACTIVE),
                ("True", REASON_HEALTHY),
                None,
            ),
            (
                Outcome::Healthy {
                    pinned: pinned.clone(),
                    digest: digest.clone(),
                },
                ("True", REASON_ACTIVE),
                ("True", REASON_HEALTHY),
                Some(&digest),
            ),
            (
                Outcome::NotInstalled(not_found()),
                ("False", "NotFound"),
                ("False", "NotFound"),
                None,
            ),
            (
                Outcome::Unhealthy {
                    pinned: pinned.clone(),
                    digest: digest.clone(),
                    error: plait_oci::Error::Compile {
                        reference: pinned.clone(),
                        message: "bad".into(),
                    },
                },
                ("True", REASON_ACTIVE),
                ("False", "CompileError"),
                Some(&digest),
            ),
            (
                Outcome::Unverified {
                    config: "signed".into(),
                    error: plait_oci::Error::Signature {
                        reference: pinned.clone(),
                        refusal: plait_oci::Refusal::NoSignature {
                            tag: "r.io/fn:sha256-a.sig".into(),
                        },
                    },
                    previous: None,
                },
                ("False", "SignatureVerificationFailed"),
                ("False", "SignatureVerificationFailed"),
                None,
            ),
        ];
        let object = function(
            "r.io/fn:v1",
            json!({"conditions": [{"type": "Other", "status": "True", "reason": "X"}]}),
        );
        for (outcome, installed, healthy, want_digest) in cases {
            let applied = status(&object, &outcome, &[], "2025-01-01T00:00:00Z");
            for (type_, (want_status, want_reason)) in
                [("Installed", installed), ("Healthy", healthy)]
            {
                let c = condition(&applied, type_).unwrap();
                assert_eq!(
                    (c["status"].as_str(), c["reason"].as_str()),
                    (Some(want_status), Some(want_reason)),
                    "{outcome:?} {type_}"
                );
                assert_eq!(c["observedGeneration"], 2);
                assert!(
                    text(c, "/message").is_some_and(|m| m.contains("r.io/fn")),
                    "{outcome:?}: {c}"
                );
            }
            assert!(
                condition(&applied, "Other").is_none(),
                "only owned conditions are applied"
            );
            assert_eq!(
                applied
                    .pointer("/status/resolvedDigest")
                    .and_then(Value::as_str),
                want_digest.map(String::as_str),
                "{outcome:?}"
            );
        }
    }

    #[test]
    fn a_builtin_is_healthy_naming_what_was_compiled_and_how_long_it_took() {
        let object = function(
            "xpkg.crossplane.io/crossplane-contrib/function-go-templating:v0.12.2",
            json!({}),
        );
        let outcome = Outcome::Builtin {
            builtin: Builtin::GoTemplating,
            took: Duration::from_millis(9_812),
        };
        let applied = status(&object, &outcome, &[], "2025-01-01T00:00:00Z");
        let message = text(condition(&applied, "Healthy").unwrap(), "/message").unwrap();
        let size = megabytes(Builtin::GoTemplating.wasm().len());
        for want in ["function-go-templating v0.12.2", &size, "compiled", "9.81s"] {
            assert!(message.contains(want), "{want:?} in {message}");
        }
    }
}
