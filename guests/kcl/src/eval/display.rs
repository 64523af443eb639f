//! How values read as text where the evaluator needs it: interpolation,
//! assertion and check messages, and config keys.

use crate::error::{ErrorKind, KclError, Result};
use crate::value::Value;

use super::Evaluator;

/// A float as KCL prints it (Python's shortest repr).
pub(crate) fn float_text(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    if f.fract() == 0.0 && f.abs() < 1e16 {
        return format!("{f:.1}");
    }
    let abs = f.abs();
    if !(1e-4..1e16).contains(&abs) {
        let s = format!("{f:e}");
        // Rust prints `1e-5`; Python `1e-05`.
        if let Some((m, e)) = s.split_once('e') {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ("-", d),
                None => ("+", e),
            };
            return format!("{m}e{sign}{digits:0>2}");
        }
        return s;
    }
    f.to_string()
}

fn repr(v: &Value, out: &mut String) {
    match v {
        Value::Str(s) => {
            out.push('\'');
            out.push_str(s);
            out.push('\'');
        }
        other => display_into(other, out),
    }
}

fn display_into(v: &Value, out: &mut String) {
    match v {
        Value::Undefined => out.push_str("Undefined"),
        Value::None => out.push_str("None"),
        Value::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Float(f) => out.push_str(&float_text(*f)),
        Value::Unit(u) => {
            out.push_str(&u.raw.to_string());
            out.push_str(u.suffix.as_str());
        }
        Value::Str(s) => out.push_str(s),
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                repr(item, out);
            }
            out.push(']');
        }
        Value::Dict(_) | Value::Schema(_) => {
            out.push('{');
            if let Some(d) = v.as_dict() {
                for (i, (k, item)) in d.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push('\'');
                    out.push_str(k);
                    out.push_str("': ");
                    repr(item, out);
                }
            }
            out.push('}');
        }
        Value::Function(f) => {
            out.push_str("<function ");
            out.push_str(&f.name);
            out.push('>');
        }
    }
}

impl Evaluator {
    /// `str(value)`.
    pub(crate) fn display(&self, v: &Value) -> String {
        let mut out = String::new();
        display_into(v, &mut out);
        out
    }

    /// `${value: spec}`: `#json`, `#yaml`, or a format spec.
    pub(crate) fn format_with_spec(&self, v: &Value, spec: &str) -> Result<String> {
        let options = crate::value::json::EncodeOptions::default();
        match spec.to_ascii_lowercase().as_str() {
            "#json" => Ok(crate::value::json::encode(v, &options, 0)),
            "#yaml" => Ok(crate::value::yaml::encode(v, &options)),
            _ => Err(KclError::new(
                ErrorKind::EvaluationError,
                format!("Invalid string interpolation format specification: {spec}"),
            )),
        }
    }
}
