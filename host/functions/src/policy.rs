//! What the platform sets on a Function for the calls of it: limits
//! tighter than the controller's, and reads beyond a tenant's namespace.

use std::time::Duration;

use plait_pipeline::{GrantError, READS_ANNOTATION, ReadGrant};
use plait_runtime::CallLimits;
use serde_json::Value;

/// The annotation that sets a Function's deadline per call (`500ms`, `2s`, `1m`).
pub const DEADLINE_ANNOTATION: &str = "limits.plait.dev/deadline";
/// The annotation that sets a Function's memory cap (`64Mi`, `1Gi`, bytes).
pub const MEMORY_ANNOTATION: &str = "limits.plait.dev/memory";
/// The annotation that caps each of a Function's stdout, stderr and log (`16Ki`).
pub const OUTPUT_ANNOTATION: &str = "limits.plait.dev/output";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("{annotation}: {value:?} is not a {what}")]
    Malformed {
        annotation: &'static str,
        value: String,
        what: &'static str,
    },
    #[error("{annotation}: {value:?} is more than this controller allows ({maximum})")]
    AboveMaximum {
        annotation: &'static str,
        value: String,
        maximum: String,
    },
    #[error(transparent)]
    Grants(#[from] GrantError),
}

/// A Function's limits and grants, read from its annotations.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionPolicy {
    pub limits: CallLimits,
    pub reads: Vec<ReadGrant>,
}

impl FunctionPolicy {
    /// The policy of a Function object (or of a function with none), each
    /// limit at most `maximum`, which also applies where none is set. It
    /// grants no directory: no annotation the controller reads does, and
    /// `maximum`'s are ignored; render grants them by name on the
    /// [`crate::Resolver`].
    pub fn of(object: Option<&Value>, maximum: &CallLimits) -> Result<FunctionPolicy, PolicyError> {
        let annotation = |name: &str| {
            object.and_then(|o| {
                o.pointer(&plait_reconcile::pointer::annotation(name))
                    .and_then(Value::as_str)
            })
        };
        let mut limits = CallLimits {
            read_only_dirs: Vec::new(),
            ..maximum.clone()
        };
        if let Some(value) = annotation(DEADLINE_ANNOTATION) {
            limits.deadline = bounded(
                DEADLINE_ANNOTATION,
                value,
                parse_duration(value),
                maximum.deadline,
                "duration such as 500ms, 2s or 1m",
            )?;
        }
        if let Some(value) = annotation(MEMORY_ANNOTATION) {
            limits.memory_bytes = bounded(
                MEMORY_ANNOTATION,
                value,
                parse_bytes(value),
                maximum.memory_bytes,
                "size such as 64Mi or 1Gi",
            )?;
        }
        if let Some(value) = annotation(OUTPUT_ANNOTATION) {
            limits.output_bytes = bounded(
                OUTPUT_ANNOTATION,
                value,
                parse_bytes(value),
                maximum.output_bytes,
                "size such as 16Ki or 1Mi",
            )?;
        }
        let reads = ReadGrant::parse_list(annotation(READS_ANNOTATION).unwrap_or_default())?;
        Ok(FunctionPolicy { limits, reads })
    }
}

fn bounded<T: PartialOrd + std::fmt::Debug>(
    annotation: &'static str,
    value: &str,
    parsed: Option<T>,
    maximum: T,
    what: &'static str,
) -> Result<T, PolicyError> {
    let parsed = parsed.ok_or_else(|| PolicyError::Malformed {
        annotation,
        value: value.into(),
        what,
    })?;
    if parsed > maximum {
        return Err(PolicyError::AboveMaximum {
            annotation,
            value: value.into(),
            maximum: format!("{maximum:?}"),
        });
    }
    Ok(parsed)
}

/// `500ms`, `2s`, `1m`: a whole number and a unit.
fn parse_duration(text: &str) -> Option<Duration> {
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().ok()?;
    match unit {
        "ms" => Some(Duration::from_millis(number)),
        "s" => Some(Duration::from_secs(number)),
        "m" => number.checked_mul(60).map(Duration::from_secs),
        _ => None,
    }
    .filter(|d| !d.is_zero())
}

/// `1048576`, `512Ki`, `64Mi`, `1Gi`: a whole number and a binary suffix.
fn parse_bytes(text: &str) -> Option<usize> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: usize = number.parse().ok()?;
    let shift = match unit {
        "" => 0,
        "Ki" => 10,
        "Mi" => 20,
        "Gi" => 30,
        _ => return None,
    };
    number.checked_mul(1 << shift).filter(|n| *n > 0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn annotations_tighten_limits_within_the_maximum() {
        let maximum = CallLimits::default();
        let with = |annotations: Value| json!({"metadata": {"annotations": annotations}});
        // (annotations, Ok((deadline, memory, output)) or the error)
        type Want = Result<(Duration, usize, usize), &'static str>;
        let cases: [(Value, Want); 7] = [
            (
                json!({}),
                Ok((maximum.deadline, maximum.memory_bytes, maximum.output_bytes)),
            ),
            (
                json!({DEADLINE_ANNOTATION: "500ms", MEMORY_ANNOTATION: "64Mi", OUTPUT_ANNOTATION: "16Ki"}),
                Ok((Duration::from_millis(500), 64 << 20, 16 << 10)),
            ),
            (
                json!({DEADLINE_ANNOTATION: "2s"}),
                Ok((
                    Duration::from_secs(2),
                    maximum.memory_bytes,
                    maximum.output_bytes,
                )),
            ),
            (
                json!({DEADLINE_ANNOTATION: "1m"}),
                Err("limits.plait.dev/deadline: \"1m\" is more than this controller allows (10s)"),
            ),
            (
                json!({MEMORY_ANNOTATION: "1Gi"}),
                Err(
                    "limits.plait.dev/memory: \"1Gi\" is more than this controller allows (268435456)",
                ),
            ),
            (
                json!({MEMORY_ANNOTATION: "lots"}),
                Err("limits.plait.dev/memory: \"lots\" is not a size such as 64Mi or 1Gi"),
            ),
            (
                json!({DEADLINE_ANNOTATION: "0s"}),
                Err("limits.plait.dev/deadline: \"0s\" is not a duration such as 500ms, 2s or 1m"),
            ),
        ];
        for (annotations, want) in cases {
            let got = FunctionPolicy::of(Some(&with(annotations.clone())), &maximum);
            match want {
                Ok((deadline, memory, output)) => {
                    let limits = got.unwrap().limits;
                    assert_eq!(
                        (limits.deadline, limits.memory_bytes, limits.output_bytes),
                        (deadline, memory, output),
                        "{annotations}"
                    );
                }
                Err(message) => assert_eq!(got.unwrap_err().to_string(), message, "{annotations}"),
            }
        }
    }
}
