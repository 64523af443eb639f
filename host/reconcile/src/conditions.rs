//! The XR's `Synced`, `Ready` and function-provided conditions, as upstream sets them.

use std::collections::BTreeMap;

use plait_sdk::{Condition, Ready, State, Target};
use serde_json::{Value, json};

use crate::ordering::{Graph, ORDERED_CONDITION, describe_waiting};

/// The condition type that says whether the last reconcile of an object
/// went through (`True`) or why it did not (`False`).
pub const SYNCED: &str = "Synced";
/// The condition type that says whether an object is ready for use.
pub const READY: &str = "Ready";
use crate::{is_system_condition, is_system_condition_type};

/// Names of desired composed resources that are not ready, sorted.
pub fn unready(desired: &State) -> Vec<String> {
    desired
        .resources
        .iter()
        .filter(|(_, r)| r.ready != Ready::True)
        .map(|(name, _)| name.clone())
        .collect()
}

/// `Unready resources: a, b, c, and 2 more` as upstream words it
/// (crossplane-runtime's `FirstNAndSomeMore` with n = 3): only a list of
/// exactly three gets an "and", so two names read "a, b".
pub fn unready_message(names: &[String]) -> String {
    const FIRST_N: usize = 3;
    let list = match names.len() {
        n if n > FIRST_N => format!("{}, and {} more", names[..FIRST_N].join(", "), n - FIRST_N),
        FIRST_N => format!(
            "{}, and {}",
            names[..FIRST_N - 1].join(", "),
            names[FIRST_N - 1]
        ),
        _ => names.join(", "),
    };
    format!("Unready resources: {list}")
}

fn condition(type_: &str, status: &str, reason: &str, message: Option<&str>) -> Value {
    let mut c = json!({"type": type_, "status": status, "reason": reason});
    if let Some(m) = message.filter(|m| !m.is_empty()) {
        c["message"] = json!(m);
    }
    c
}

/// `Responsive`, as upstream v2's watch circuit breaker reports it: `True`
/// (`WatchCircuitClosed`) on every XR it has not throttled, `False`
/// (`WatchCircuitOpen`) on one whose watch events it drops.
pub fn set_responsive(xr: &mut Value, circuit_open: bool, now: &str) {
    let responsive = if circuit_open {
        condition(
            "Responsive",
            "False",
            "WatchCircuitOpen",
            Some(
                "Too many watch events for this composite resource; \
                 some are dropped until the circuit breaker closes",
            ),
        )
    } else {
        condition("Responsive", "True", "WatchCircuitClosed", None)
    };
    set_conditions(xr, vec![responsive], now);
}

/// Sets conditions after a pipeline that finished.
pub fn set_success(
    xr: &mut Value,
    desired: &State,
    unready: &[String],
    function_conditions: &[Condition],
    synced_error: Option<&str>,
    now: &str,
) {
    let synced = match synced_error {
        None => condition(SYNCED, "True", "ReconcileSuccess", None),
        Some(e) => condition(SYNCED, "False", "ReconcileError", Some(e)),
    };
    let composite_ready = desired.composite.as_ref().map(|c| c.ready);
    let ready = match composite_ready {
        Some(Ready::True) => condition(READY, "True", "Available", None),
        Some(Ready::False) => condition(READY, "False", "Creating", None),
        _ if unready.is_empty() => condition(READY, "True", "Available", None),
        _ => condition(READY, "False", "Creating", Some(&unready_message(unready))),
    };
    // Upstream's reconciler sets the functions' conditions before
    // `Synced` and `Ready`, so a new XR lists them first.
    let mut updates: Vec<Value> = function_conditions
        .iter()
        .filter(|c| !is_system_condition(c))
        .map(to_value)
        .collect();
    updates.extend([synced, ready]);
    set_conditions(xr, updates, now);
}

/// Adds to `status.claimConditionTypes` the type of every function
/// condition meant for the claim too (`target: CompositeAndClaim`), as
/// upstream's reconciler does for a v1 (legacy) XR: each type once, in the
/// order first seen, after those already listed. The claim copies these
/// conditions from the XR.
pub fn set_claim_condition_types(xr: &mut Value, function_conditions: &[Condition]) {
    let mut types: Vec<Value> = xr
        .pointer("/status/claimConditionTypes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let before = types.len();
    for c in function_conditions {
        if is_system_condition(c) || c.target != Some(Target::CompositeAndClaim) {
            continue;
        }
        if !types.iter().any(|t| t == c.type_.as_str()) {
            types.push(json!(c.type_));
        }
    }
    if types.len() == before {
        return;
    }
    if !xr.get("status").is_some_and(Value::is_object) {
        xr["status"] = json!({});
    }
    xr["status"]["claimConditionTypes"] = Value::Array(types);
}

/// Sets conditions after a pipeline that failed: `Synced=False` with the
/// error, and custom conditions the pipeline did not re-send become Unknown.
pub fn set_fatal(xr: &mut Value, function_conditions: &[Condition], error: &str, now: &str) {
    let mut updates = vec![condition(SYNCED, "False", "ReconcileError", Some(error))];
    let sent: Vec<&str> = function_conditions
        .iter()
        .map(|c| c.type_.as_str())
        .collect();
    let existing: Vec<String> = xr
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c.get("type").and_then(Value::as_str))
                .filter(|t| !is_system_condition_type(t))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    for type_ in existing.iter().filter(|t| !sent.contains(&t.as_str())) {
        updates.push(condition(
            type_,
            "Unknown",
            "FatalError",
            Some("A fatal error occurred before the status of this condition could be determined."),
        ));
    }
    updates.extend(
        function_conditions
            .iter()
            .filter(|c| !is_system_condition(c))
            .map(to_value),
    );
    set_conditions(xr, updates, now);
}

fn to_value(c: &Condition) -> Value {
    condition(&c.type_, c.status.as_str(), &c.reason, c.message.as_deref())
}

/// Whether `xr` has a condition of `type_`.
pub fn has(xr: &Value, type_: &str) -> bool {
    xr.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == type_))
}

/// `Ordered`: what the XR's composed resources wait for, with the graph
/// they declare (`waiting`), or why they cannot be ordered (an error).
pub fn set_ordered(
    xr: &mut Value,
    graph: &Graph,
    waiting: Result<&BTreeMap<String, Vec<String>>, &str>,
    now: &str,
) {
    let described = graph.describe();
    let with_graph = |text: String| match described.as_str() {
        "" => text,
        order => format!("{text}; order: {order}"),
    };
    let ordered = match waiting {
        Err(error) => condition(ORDERED_CONDITION, "False", "DependencyCycle", Some(error)),
        Ok(waiting) if waiting.is_empty() && graph.is_empty() => condition(
            ORDERED_CONDITION,
            "True",
            "NoDependencies",
            Some("no composed resource depends on another"),
        ),
        Ok(waiting) if waiting.is_empty() => condition(
            ORDERED_CONDITION,
            "True",
            "DependenciesReady",
            Some(&with_graph("every composed resource is created".into())),
        ),
        Ok(waiting) => condition(
            ORDERED_CONDITION,
            "False",
            "WaitingForDependencies",
            Some(&with_graph(describe_waiting(waiting))),
        ),
    };
    set_conditions(xr, vec![ordered], now);
}

/// Sets one condition the reconciler owns, e.g. `Synced=False` for an XR
/// whose Composition cannot be found.
pub fn set_condition(
    xr: &mut Value,
    type_: &str,
    status: &str,
    reason: &str,
    message: Option<&str>,
    now: &str,
) {
    set_conditions(xr, vec![condition(type_, status, reason, message)], now);
}

/// Moves the XR to `generation` (when there is one), and with it the
/// conditions stamped with the generation it had: they were computed for
/// it, and nothing but the reconciler's own fields has changed since.
pub fn advance_generation(xr: &mut Value, generation: Option<&Value>) {
    let Some(generation) = generation.filter(|g| !g.is_null()) else {
        return;
    };
    let Some(previous) = xr.pointer("/metadata/generation").cloned() else {
        return;
    };
    if &previous == generation {
        return;
    }
    xr["metadata"]["generation"] = generation.clone();
    if let Some(conditions) = xr
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    {
        for condition in conditions {
            if condition.get("observedGeneration") == Some(&previous) {
                condition["observedGeneration"] = generation.clone();
            }
        }
    }
}

/// Merges conditions by type, keeping `lastTransitionTime` when the status
/// did not change, and stamps each with the generation it was computed for.
fn set_conditions(xr: &mut Value, updates: Vec<Value>, now: &str) {
    if !xr.get("status").is_some_and(Value::is_object) {
        xr["status"] = json!({});
    }
    let generation = xr.pointer("/metadata/generation").cloned();
    let updates = updates.into_iter().map(|mut u| {
        if let Some(g) = &generation {
            u["observedGeneration"] = g.clone();
        }
        u
    });
    let mut conditions: Vec<Value> = xr["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for mut update in updates {
        let existing = conditions.iter_mut().find(|c| c["type"] == update["type"]);
        match existing {
            Some(current) => {
                let time = if current["status"] == update["status"] {
                    current
                        .get("lastTransitionTime")
                        .cloned()
                        .unwrap_or_else(|| json!(now))
                } else {
                    json!(now)
                };
                update["lastTransitionTime"] = time;
                *current = update;
            }
            None => {
                update["lastTransitionTime"] = json!(now);
                conditions.push(update);
            }
        }
    }
    xr["status"]["conditions"] = Value::Array(conditions);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unready_message_lists_up_to_three_names_like_upstream() {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let cases: [(&[&str], &str); 5] = [
            (&["a"], "Unready resources: a"),
            (&["a", "b"], "Unready resources: a, b"),
            (&["a", "b", "c"], "Unready resources: a, b, and c"),
            (
                &["a", "b", "c", "d"],
                "Unready resources: a, b, c, and 1 more",
            ),
            (
                &["a", "b", "c", "d", "e"],
                "Unready resources: a, b, c, and 2 more",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(unready_message(&names(input)), want);
        }
    }

    #[test]
    fn transition_time_changes_only_with_status() {
        let mut xr = json!({"status": {"conditions": [
            {"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": "t0"},
            {"type": "Ready", "status": "False", "reason": "Creating", "lastTransitionTime": "t0"}
        ]}});
        set_success(&mut xr, &State::default(), &[], &[], None, "t1");
        let conditions = xr["status"]["conditions"].as_array().unwrap();
        assert_eq!(conditions[0]["lastTransitionTime"], "t0");
        assert_eq!(conditions[1]["status"], "True");
        assert_eq!(conditions[1]["lastTransitionTime"], "t1");
    }

    #[test]
    fn conditions_follow_the_generation_the_reconcilers_own_write_made() {
        let xr = json!({
            "metadata": {"generation": 2},
            "status": {"conditions": [
                {"type": "Ready", "observedGeneration": 2},
                {"type": "Custom", "observedGeneration": 1},
                {"type": "Unstamped"},
            ]},
        });
        // (generation the write made, generations then: the XR's, each condition's)
        let cases = [
            (Some(json!(3)), json!([3, 3, 1, null])),
            (Some(json!(2)), json!([2, 2, 1, null])),
            (None, json!([2, 2, 1, null])),
            (Some(Value::Null), json!([2, 2, 1, null])),
        ];
        for (made, want) in cases {
            let mut advanced = xr.clone();
            advance_generation(&mut advanced, made.as_ref());
            let mut seen = vec![advanced["metadata"]["generation"].clone()];
            seen.extend(
                advanced["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| c.get("observedGeneration").cloned().unwrap_or(Value::Null)),
            );
            assert_eq!(Value::Array(seen), want, "made {made:?}");
        }
    }

    #[test]
    fn conditions_carry_the_generation_they_were_computed_for() {
        let cases = [
            (json!({"metadata": {"generation": 3}}), Some(json!(3))),
            (json!({"metadata": {}}), None),
        ];
        for (mut xr, want) in cases {
            set_condition(&mut xr, "Synced", "True", "ReconcileSuccess", None, "t0");
            assert_eq!(
                xr["status"]["conditions"][0]
                    .get("observedGeneration")
                    .cloned(),
                want
            );
        }
    }

    #[test]
    fn fatal_error_marks_unsent_custom_conditions_unknown() {
        let mut xr = json!({"status": {"conditions": [
            {"type": "DatabaseReady", "status": "True", "reason": "Up", "lastTransitionTime": "t0"},
            {"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": "t0"}
        ]}});
        set_fatal(
            &mut xr,
            &[],
            "pipeline step \"a\" returned a fatal result: x",
            "t1",
        );
        let conditions = xr["status"]["conditions"].as_array().unwrap();
        let custom = conditions
            .iter()
            .find(|c| c["type"] == "DatabaseReady")
            .unwrap();
        assert_eq!(custom["status"], "Unknown");
        assert_eq!(custom["reason"], "FatalError");
        let ready = conditions.iter().find(|c| c["type"] == "Ready").unwrap();
        assert_eq!(ready["status"], "True", "Ready is left as it was");
        let synced = conditions.iter().find(|c| c["type"] == "Synced").unwrap();
        assert_eq!(synced["status"], "False");
    }
}
