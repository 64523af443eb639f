//! How KCL prints values: `str(x)`, `print(x)` and `"${x}"` all print a
//! value the same way (`to_kcl_string`), which is Python-like but not
//! Python: strings inside lists are printed bare (`[1, a]`) while dict keys
//! and dict values are quoted (`{'a': 'b'}`), floats keep a `.0`, and unit
//! numbers print as written (`1Ki`).

use crate::value::{FunctionKind, Value};

impl Value {
    /// The text `str(x)`, `print(x)` and `"${x}"` produce.
    pub fn to_kcl_string(&self) -> String {
        let mut out = String::new();
        self.write_kcl_string(&mut out);
        out
    }

    /// A value as it appears as a dict or schema value inside
    /// `to_kcl_string`: strings quoted (`'a'`), everything else as
    /// `to_kcl_string` prints it.
    pub fn to_repr(&self) -> String {
        match self {
            Value::Str(s) => quote_str(s),
            other => other.to_kcl_string(),
        }
    }

    /// The type name KCL's runtime messages and `typeof` use:
    /// `number_multiplier(1Ki)` for a unit number, `type` for a schema used
    /// as a value, the schema's name for an instance.
    pub fn runtime_type_str(&self) -> String {
        match self {
            Value::Unit(u) => format!("number_multiplier({}{})", u.raw, u.suffix.as_str()),
            Value::Function(f) if matches!(f.kind, FunctionKind::Schema(_)) => "type".into(),
            Value::Function(_) => "function".into(),
            other => other.type_name(),
        }
    }

    fn write_kcl_string(&self, out: &mut String) {
        match self {
            Value::Undefined => out.push_str("Undefined"),
            Value::None => out.push_str("None"),
            Value::Bool(true) => out.push_str("True"),
            Value::Bool(false) => out.push_str("False"),
            Value::Int(i) => out.push_str(&i.to_string()),
            Value::Float(f) => out.push_str(&float_to_kcl_string(*f)),
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
                    item.write_kcl_string(out);
                }
                out.push(']');
            }
            Value::Dict(_) | Value::Schema(_) => {
                out.push('{');
                for (i, (key, value)) in self
                    .as_dict()
                    .into_iter()
                    .flat_map(|d| d.iter())
                    .enumerate()
                {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(&quote_str(key));
                    out.push_str(": ");
                    match value {
                        Value::Str(s) => out.push_str(&quote_str(s)),
                        other => other.write_kcl_string(out),
                    }
                }
                out.push('}');
            }
            Value::Function(_) => out.push_str("function"),
        }
    }
}

/// A float as KCL prints it: Rust's shortest round-trip digits, never an
/// exponent, with `.0` added when there is no decimal point (so infinity
/// prints `inf.0`, as KCL's does).
pub(crate) fn float_to_kcl_string(f: f64) -> String {
    let mut s = f.to_string();
    if !s.contains('.') {
        s.push_str(".0");
    }
    s
}

/// A string in quotes as KCL prints dict keys and values: single quotes
/// when the text holds no `"` (a `'` inside is left as is), else double
/// quotes, with the `"`s escaped only when the text also holds a `'`.
pub fn quote_str(s: &str) -> String {
    let has_single = s.contains('\'');
    let has_double = s.contains('"');
    if !has_double {
        format!("'{s}'")
    } else if !has_single {
        format!("\"{s}\"")
    } else {
        format!("\"{}\"", s.replace('"', "\\\""))
    }
}
