//! The deliberate differences from upstream, as `docs/patch-and-transform.md`
//! lists them, each with the rule that recognises it in a comparison. A test
//! holds the documented list and this one equal, so neither can drift.

use serde_json::Value;

use crate::Difference;

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

/// Upstream formats a JSON number as Go's float64, which `%d` prints as
/// `%!d(float64=…)`; plait keeps integral numbers integers.
fn integers_stay_integers(_: &CaseInputs, d: &Difference) -> bool {
    text(&d.upstream).contains("(float64=")
}
