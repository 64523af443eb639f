//! The deliberate differences from upstream, as `docs/patch-and-transform.md`
//! lists them, each with the rule that recognises it in a comparison. A test
//! holds the documented list and this one equal, so neither can drift.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::Value;

use crate::{Difference, failure_cause};

/// What a rule may look at besides the difference: the case's own inputs.
pub struct CaseInputs<'a> {
    /// The Composition as written (before any conversion for upstream).
    pub composition: &'a str,
}

/// A documented deliberate difference and how to recognise it.
pub struct Deliberate {
    /// The id in the documentation's table.
    pub id: &'static str,
    pub explains: fn(&CaseInputs, &Difference) -> bool,
}

/// Every deliberate difference the suite accepts.
pub const DELIBERATE: &[Deliberate] = &[
    Deliberate {
        id: "integers-stay-integers",
        explains: integers_stay_integers,
    },
    Deliberate {
        id: "untyped-connection-details",
        explains: |_, d| {
            upstream_rejected(d, "connectionDetails[")
                && upstream_rejected(d, "type: Required value")
        },
    },
    Deliberate {
        id: "untyped-transforms",
        explains: |_, d| {
            upstream_rejected(d, "transforms[") && upstream_rejected(d, "type: Required value")
        },
    },
    Deliberate {
        id: "match-condition-default",
        explains: |inputs, d| {
            inputs.composition.contains("MatchCondition")
                && upstream_rejected(d, "nil pointer dereference")
        },
    },
    Deliberate {
        id: "regexp-negative-group",
        explains: |inputs, d| {
            inputs.composition.contains("group: -") && upstream_rejected(d, "index out of range")
        },
    },
    Deliberate {
        id: "labels-must-be-strings",
        explains: |_, d| {
            d.document == "render"
                && text(&d.upstream) == "rendered"
                && text(&d.plait).contains("Invalid value: must be a string")
        },
    },
];

/// The ids of the table under "Deliberate differences from upstream": the
/// first column of each row, in backquotes.
pub fn documented_ids(markdown: &str) -> Vec<String> {
    let mut in_section = false;
    let mut ids = Vec::new();
    for line in markdown.lines() {
        if line.starts_with("## ") {
            in_section = line.trim() == "## Deliberate differences from upstream";
            continue;
        }
        if !in_section || !line.starts_with("| `") {
            continue;
        }
        if let Some(id) = line
            .trim_start_matches("| `")
            .split_once('`')
            .map(|(id, _)| id.to_string())
        {
            ids.push(id);
        }
    }
    ids
}

/// The id of the first deliberate difference that explains `difference`.
pub fn explain(inputs: &CaseInputs, difference: &Difference) -> Option<&'static str> {
    DELIBERATE
        .iter()
        .find(|d| (d.explains)(inputs, difference))
        .map(|d| d.id)
}

fn text(value: &Option<Value>) -> &str {
    value.as_ref().and_then(Value::as_str).unwrap_or_default()
}

/// The whole run failed upstream, with `needle` in its message, where plait
/// rendered.
fn upstream_rejected(d: &Difference, needle: &str) -> bool {
    d.document == "render"
        && text(&d.plait) == "rendered"
        && text(&d.upstream).starts_with("failed: ")
        && text(&d.upstream).contains(needle)
}

/// Upstream reads JSON numbers as Go's float64, plait keeps integral ones
/// int64: a value formatted with a verb for the other type prints
/// `%!d(float64=…)` upstream or `%!f(int64=…)` in plait, possibly inside an
/// encoded string.
fn integers_stay_integers(_: &CaseInputs, d: &Difference) -> bool {
    let shows_number_type = |text: &str| {
        let decoded = BASE64
            .decode(text)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .unwrap_or_default();
        [text, &decoded]
            .iter()
            .any(|t| t.contains("float64=") || t.contains("int64="))
    };
    if shows_number_type(text(&d.upstream)) || shows_number_type(text(&d.plait)) {
        return true;
    }
    // Both failed, for the same reason but for the number's Go type.
    match (
        text(&d.plait).strip_prefix("failed: "),
        text(&d.upstream).strip_prefix("failed: "),
    ) {
        (Some(plait), Some(upstream)) => {
            failure_cause(plait).replace("int64", "float64") == failure_cause(upstream)
        }
        _ => false,
    }
}
