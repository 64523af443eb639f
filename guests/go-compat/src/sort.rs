//! Sorting objects by the value at a field path, as Crossplane's functions
//! that select several objects (function-environment-configs,
//! function-extra-resources) sort them: by the Go type of the values found,
//! a missing or null value sorting as that type's zero value.

use std::cmp::Ordering;

use serde_json::Value;

use crate::fieldpath;

/// How the numbers a function decodes are typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numbers {
    /// Integers and floats sort together (function-environment-configs);
    /// a number written without a fraction is named int64 in errors.
    Together,
    /// Whole numbers are int64 and the others float64, as Kubernetes'
    /// unstructured JSON decodes what `protojson` wrote (a whole float has
    /// no fraction there), and the two do not sort together
    /// (function-extra-resources).
    Int64ApartFromFloat64,
}

/// How the error for a type that cannot be ordered names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Naming {
    /// `reflect.Kind`: `map`, `slice`.
    Kind,
    /// `reflect.Type`: `map[string]interface {}`, `[]interface {}`.
    Type,
}

/// The kinds of value a sort key can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyType {
    String,
    Int64,
    Float64,
    Bool,
    Object,
    Array,
}

impl KeyType {
    fn of(value: &Value, numbers: Numbers) -> Option<KeyType> {
        Some(match value {
            Value::Null => return None,
            Value::String(_) => KeyType::String,
            Value::Number(n) => {
                let integral = match numbers {
                    Numbers::Together => !n.is_f64(),
                    Numbers::Int64ApartFromFloat64 => is_whole(n),
                };
                if integral {
                    KeyType::Int64
                } else {
                    KeyType::Float64
                }
            }
            Value::Bool(_) => KeyType::Bool,
            Value::Object(_) => KeyType::Object,
            Value::Array(_) => KeyType::Array,
        })
    }

    fn go_type(self) -> &'static str {
        match self {
            KeyType::String => "string",
            KeyType::Int64 => "int64",
            KeyType::Float64 => "float64",
            KeyType::Bool => "bool",
            KeyType::Object => "map[string]interface {}",
            KeyType::Array => "[]interface {}",
        }
    }

    fn go_kind(self) -> &'static str {
        match self {
            KeyType::Object => "map",
            KeyType::Array => "slice",
            other => other.go_type(),
        }
    }
}

/// A number Kubernetes' JSON decoding makes an int64: written without a
/// fraction, as `protojson` writes a whole float.
fn is_whole(n: &serde_json::Number) -> bool {
    !n.is_f64()
        || n.as_f64()
            .is_some_and(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
}

/// Go's names of two key types that cannot sort together.
fn mismatch(
    first: KeyType,
    this: KeyType,
    numbers: Numbers,
) -> Option<(&'static str, &'static str)> {
    let both_numbers = matches!(first, KeyType::Int64 | KeyType::Float64)
        && matches!(this, KeyType::Int64 | KeyType::Float64);
    let together = both_numbers && numbers == Numbers::Together;
    (first != this && !together).then(|| (first.go_type(), this.go_type()))
}

/// Sorts `objects` by the value at `path` (stable: equal keys keep their
/// order). Mixed types, a path through a scalar, and (with more than one
/// object) keys that cannot be ordered are errors with upstream's text.
pub fn sort_by_field_path<'a>(
    objects: impl IntoIterator<Item = &'a Value>,
    path: &str,
    numbers: Numbers,
    naming: Naming,
) -> Result<Vec<&'a Value>, String> {
    if path.is_empty() {
        return Err("cannot sort by empty field path".into());
    }
    let mut keyed = Vec::new();
    let mut key_type: Option<KeyType> = None;
    for object in objects {
        let key = match fieldpath::get_value(object, path) {
            Ok(value) => Some(value).filter(|v| !v.is_null()),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e.to_string()),
        };
        if let Some(this) = key.and_then(|k| KeyType::of(k, numbers)) {
            match key_type {
                None => key_type = Some(this),
                Some(first) => {
                    if let Some((a, b)) = mismatch(first, this, numbers) {
                        return Err(format!(
                            "cannot sort values of different types \"{a}\" and \"{b}\""
                        ));
                    }
                }
            }
        }
        keyed.push((key, object));
    }
    // Upstream only finds out that a type cannot be ordered once it compares two values.
    if let Some(unordered @ (KeyType::Bool | KeyType::Object | KeyType::Array)) = key_type
        && keyed.len() > 1
    {
        let name = match naming {
            Naming::Kind => unordered.go_kind(),
            Naming::Type => unordered.go_type(),
        };
        return Err(format!("unsupported type \"{name}\" for sorting"));
    }
    keyed.sort_by(|(a, _), (b, _)| compare_keys(*a, *b));
    Ok(keyed.into_iter().map(|(_, object)| object).collect())
}

fn compare_keys(a: Option<&Value>, b: Option<&Value>) -> Ordering {
    match (a, b) {
        (Some(Value::String(a)), Some(Value::String(b))) => a.cmp(b),
        (Some(Value::String(a)), None) => a.as_str().cmp(""),
        (None, Some(Value::String(b))) => "".cmp(b.as_str()),
        (a, b) => {
            let number = |v: Option<&Value>| v.and_then(Value::as_f64).unwrap_or(0.0);
            number(a).total_cmp(&number(b))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(path: &str, value: Value) -> Value {
        let mut object = json!({});
        fieldpath::set_value(&mut object, path, value).unwrap();
        object
    }

    #[test]
    fn sorts_by_the_go_type_of_the_values_found() {
        use Naming::{Kind, Type};
        use Numbers::{Int64ApartFromFloat64 as Apart, Together};
        // (objects, path, numbers, naming, sorted or error)
        type Case<'a> = (
            Vec<Value>,
            &'a str,
            Numbers,
            Naming,
            Result<Vec<Value>, &'a str>,
        );
        let cases: Vec<Case> = vec![
            (
                vec![
                    at("metadata.name", json!("c")),
                    at("metadata.name", json!("a")),
                    at("metadata.name", json!("b")),
                ],
                "metadata.name",
                Apart,
                Type,
                Ok(vec![
                    at("metadata.name", json!("a")),
                    at("metadata.name", json!("b")),
                    at("metadata.name", json!("c")),
                ]),
            ),
            (
                vec![
                    at("data.i", json!(3)),
                    at("data.i", json!(1)),
                    at("data.i", json!(2)),
                ],
                "data.i",
                Apart,
                Type,
                Ok(vec![
                    at("data.i", json!(1)),
                    at("data.i", json!(2)),
                    at("data.i", json!(3)),
                ]),
            ),
            (
                vec![
                    at("data.f", json!(1.3)),
                    at("data.f", json!(1.1)),
                    at("data.f", json!(1.2)),
                    at("data.f", json!(1.4)),
                ],
                "data.f",
                Apart,
                Type,
                Ok(vec![
                    at("data.f", json!(1.1)),
                    at("data.f", json!(1.2)),
                    at("data.f", json!(1.3)),
                    at("data.f", json!(1.4)),
                ]),
            ),
            (
                vec![
                    at("data.i", json!(3)),
                    at("data.i", json!(1)),
                    at("data.i", json!("2")),
                ],
                "data.i",
                Apart,
                Type,
                Err("cannot sort values of different types \"int64\" and \"string\""),
            ),
            (
                vec![at("data.n", json!(3)), at("data.n", json!(1.5))],
                "data.n",
                Apart,
                Type,
                Err("cannot sort values of different types \"int64\" and \"float64\""),
            ),
            (
                vec![at("data.n", json!(3)), at("data.n", json!(1.5))],
                "data.n",
                Together,
                Kind,
                Ok(vec![at("data.n", json!(1.5)), at("data.n", json!(3))]),
            ),
            (
                vec![at("metadata.name", json!("c"))],
                "",
                Apart,
                Type,
                Err("cannot sort by empty field path"),
            ),
            (
                vec![
                    at("metadata.name", json!("c")),
                    at("metadata.name", json!("a")),
                ],
                "metadata.invalid",
                Apart,
                Type,
                Ok(vec![
                    at("metadata.name", json!("c")),
                    at("metadata.name", json!("a")),
                ]),
            ),
            (
                vec![
                    at("metadata.name", json!("c")),
                    at("metadata.invalid", json!("a")),
                    at("metadata.name", json!("b")),
                ],
                "metadata.name",
                Apart,
                Type,
                Ok(vec![
                    at("metadata.invalid", json!("a")),
                    at("metadata.name", json!("b")),
                    at("metadata.name", json!("c")),
                ]),
            ),
            (
                vec![at("data.m", json!({"a": 1})), at("data.m", json!({"b": 1}))],
                "data.m",
                Apart,
                Type,
                Err("unsupported type \"map[string]interface {}\" for sorting"),
            ),
            (
                vec![at("data.m", json!({"a": 1})), at("data.m", json!({"b": 1}))],
                "data.m",
                Together,
                Kind,
                Err("unsupported type \"map\" for sorting"),
            ),
            (
                vec![at("data.m", json!(true))],
                "data.m",
                Together,
                Kind,
                Ok(vec![at("data.m", json!(true))]),
            ),
        ];
        for (objects, path, numbers, naming, want) in cases {
            let got = sort_by_field_path(&objects, path, numbers, naming)
                .map(|sorted| sorted.into_iter().cloned().collect::<Vec<_>>());
            assert_eq!(got, want.map_err(str::to_string), "{objects:?} by {path:?}");
        }
    }
}
