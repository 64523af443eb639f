//! How values read as text where the evaluator needs it: interpolation,
//! assertion and check messages, and config keys. The text itself is the
//! builtins' (`Value::to_kcl_string`, `builtins::format_with_spec`).

use crate::error::Result;
use crate::value::Value;

use super::Evaluator;

impl Evaluator {
    /// `str(value)`.
    pub(crate) fn display(&self, v: &Value) -> String {
        v.to_kcl_string()
    }

    /// `${value: spec}`: `#json` or `#yaml`.
    pub(crate) fn format_with_spec(&self, v: &Value, spec: &str) -> Result<String> {
        crate::builtins::format_with_spec(v, spec)
    }
}
