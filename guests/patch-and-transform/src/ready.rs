//! Readiness of an observed composed resource (P&T `ready.go`).

use serde_json::Value;

use crate::fieldpath;
use crate::input::{MatchConditionCheck, ReadinessCheck};

/// Whether `observed` passes every check. With no checks the resource is
/// ready when its `Ready` condition is `True`. A missing field means "not
/// ready yet"; any other failure is an error (reported as a warning).
pub fn is_ready(observed: &Value, checks: &[ReadinessCheck]) -> Result<bool, String> {
    if checks.is_empty() {
        return Ok(condition_status(observed, "Ready") == "True");
    }
    for (i, check) in checks.iter().enumerate() {
        let ready = run_check(observed, check)
            .map_err(|e| format!("cannot run readiness check at index {i}: {e}"))?;
        if !ready {
            return Ok(false);
        }
    }
    Ok(true)
}

fn run_check(observed: &Value, check: &ReadinessCheck) -> Result<bool, String> {
    let path = check.field_path.as_deref().unwrap_or_default();
    match check.type_.as_str() {
        "None" => Ok(true),
        "NonEmpty" => read(observed, path, "", |_| Some(true)),
        "MatchString" => read(observed, path, "not a string", |v| {
            v.as_str().map(|s| Some(s) == check.match_string.as_deref())
        }),
        "MatchInteger" => read(observed, path, "not a (int64) number", |v| {
            v.as_i64().map(|i| Some(i) == check.match_integer)
        }),
        "MatchTrue" => read(observed, path, "not a bool", Value::as_bool),
        "MatchFalse" => read(observed, path, "not a bool", |v| v.as_bool().map(|b| !b)),
        "MatchCondition" => {
            let wanted = check.match_condition.clone().unwrap_or_default();
            Ok(condition_status(observed, &wanted.type_) == wanted.status)
        }
        // Validation rejected every other type before anything ran.
        other => Err(format!("unknown readiness check type {other:?}")),
    }
}

/// Reads `path` and applies `check`; `None` from `check` means the value is
/// not of the expected type (`<path>: <wrong_type>`). A NotFound path is "not
/// ready", not an error.
fn read(
    observed: &Value,
    path: &str,
    wrong_type: &str,
    check: impl Fn(&Value) -> Option<bool>,
) -> Result<bool, String> {
    match fieldpath::get_value(observed, path) {
        Ok(value) => check(value).ok_or_else(|| format!("{path}: {wrong_type}")),
        Err(err) if err.is_not_found() => Ok(false),
        Err(err) => Err(err.message),
    }
}

/// The status of the named condition, `Unknown` when it is absent.
fn condition_status<'a>(object: &'a Value, condition_type: &str) -> &'a str {
    object["status"]["conditions"]
        .as_array()
        .and_then(|conditions| {
            conditions
                .iter()
                .find(|c| c["type"].as_str() == Some(condition_type))
        })
        .map_or("Unknown", |c| c["status"].as_str().unwrap_or_default())
}

impl Default for MatchConditionCheck {
    /// The CRD default `{type: Ready, status: "True"}`.
    fn default() -> Self {
        MatchConditionCheck {
            type_: "Ready".to_owned(),
            status: "True".to_owned(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(spec: Value) -> ReadinessCheck {
        serde_json::from_value(spec).unwrap()
    }

    #[test]
    fn checks_decide_readiness() {
        let observed = json!({
            "status": {
                "phase": "ACTIVE",
                "replicas": 3,
                "ratio": 1.5,
                "enabled": true,
                "paused": false,
                "empty": "",
                "nothing": null,
                "conditions": [
                    {"type": "Ready", "status": "True"},
                    {"type": "Synced", "status": "False"}
                ]
            }
        });
        let cases: Vec<(&str, Vec<Value>, Result<bool, String>)> = vec![
            ("no checks: Ready=True", vec![], Ok(true)),
            ("None", vec![json!({"type": "None"})], Ok(true)),
            (
                "NonEmpty present",
                vec![json!({"type": "NonEmpty", "fieldPath": "status.phase"})],
                Ok(true),
            ),
            (
                "NonEmpty empty string",
                vec![json!({"type": "NonEmpty", "fieldPath": "status.empty"})],
                Ok(true),
            ),
            (
                "NonEmpty null",
                vec![json!({"type": "NonEmpty", "fieldPath": "status.nothing"})],
                Ok(true),
            ),
            (
                "NonEmpty missing",
                vec![json!({"type": "NonEmpty", "fieldPath": "status.missing"})],
                Ok(false),
            ),
            (
                "MatchString equal",
                vec![
                    json!({"type": "MatchString", "fieldPath": "status.phase", "matchString": "ACTIVE"}),
                ],
                Ok(true),
            ),
            (
                "MatchString different",
                vec![
                    json!({"type": "MatchString", "fieldPath": "status.phase", "matchString": "active"}),
                ],
                Ok(false),
            ),
            (
                "MatchString missing",
                vec![
                    json!({"type": "MatchString", "fieldPath": "status.nope", "matchString": "x"}),
                ],
                Ok(false),
            ),
            (
                "MatchString on number",
                vec![
                    json!({"type": "MatchString", "fieldPath": "status.replicas", "matchString": "3"}),
                ],
                Err("cannot run readiness check at index 0: status.replicas: not a string".into()),
            ),
            (
                "MatchInteger equal",
                vec![
                    json!({"type": "MatchInteger", "fieldPath": "status.replicas", "matchInteger": 3}),
                ],
                Ok(true),
            ),
            (
                "MatchInteger different",
                vec![
                    json!({"type": "MatchInteger", "fieldPath": "status.replicas", "matchInteger": 4}),
                ],
                Ok(false),
            ),
            (
                "MatchInteger on float",
                vec![
                    json!({"type": "MatchInteger", "fieldPath": "status.ratio", "matchInteger": 1}),
                ],
                Err(
                    "cannot run readiness check at index 0: status.ratio: not a (int64) number"
                        .into(),
                ),
            ),
            (
                "MatchTrue",
                vec![json!({"type": "MatchTrue", "fieldPath": "status.enabled"})],
                Ok(true),
            ),
            (
                "MatchTrue on false",
                vec![json!({"type": "MatchTrue", "fieldPath": "status.paused"})],
                Ok(false),
            ),
            (
                "MatchFalse",
                vec![json!({"type": "MatchFalse", "fieldPath": "status.paused"})],
                Ok(true),
            ),
            (
                "MatchFalse on string",
                vec![json!({"type": "MatchFalse", "fieldPath": "status.phase"})],
                Err("cannot run readiness check at index 0: status.phase: not a bool".into()),
            ),
            (
                "MatchCondition",
                vec![
                    json!({"type": "MatchCondition", "matchCondition": {"type": "Synced", "status": "False"}}),
                ],
                Ok(true),
            ),
            (
                "MatchCondition absent reads Unknown",
                vec![
                    json!({"type": "MatchCondition", "matchCondition": {"type": "Healthy", "status": "Unknown"}}),
                ],
                Ok(true),
            ),
            (
                "MatchCondition without config uses Ready=True",
                vec![json!({"type": "MatchCondition"})],
                Ok(true),
            ),
            (
                "path through a scalar",
                vec![json!({"type": "NonEmpty", "fieldPath": "status.phase.x"})],
                Err("cannot run readiness check at index 0: status.phase: not an object".into()),
            ),
            (
                "all must pass",
                vec![
                    json!({"type": "None"}),
                    json!({"type": "MatchTrue", "fieldPath": "status.paused"}),
                ],
                Ok(false),
            ),
            (
                "second check errors",
                vec![
                    json!({"type": "None"}),
                    json!({"type": "MatchTrue", "fieldPath": "status.phase"}),
                ],
                Err("cannot run readiness check at index 1: status.phase: not a bool".into()),
            ),
        ];
        for (name, checks, expected) in cases {
            let checks: Vec<ReadinessCheck> = checks.into_iter().map(check).collect();
            assert_eq!(is_ready(&observed, &checks), expected, "{name}");
        }
    }

    #[test]
    fn default_check_needs_ready_true() {
        let cases = [
            (json!({}), false),
            (
                json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
                false,
            ),
            (
                json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
                true,
            ),
        ];
        for (observed, expected) in cases {
            assert_eq!(is_ready(&observed, &[]), Ok(expected), "{observed}");
        }
    }
}
