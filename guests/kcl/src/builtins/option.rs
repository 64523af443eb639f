//! `option()`: the value of `-D name=value` or its default, converted to
//! the type asked for.

use crate::error::Result;
use crate::value::Value;

use super::{Interp, arg, fail};

type Kwargs = [(String, Value)];

/// `option(key, type="", required=False, default=None, help="")`: the
/// value of `-D key=…`, else the default, converted to `type` when given.
pub(super) fn option(interp: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let key = arg(args, kwargs, 0, "key").map(as_str_or_empty);
    let ty = arg(args, kwargs, 1, "type").map(as_str_or_empty);
    if let Some(key) = &key {
        if let Some(value) = interp.option(key) {
            return option_to_type(value, ty.as_deref());
        }
        if let Some(default) = arg(args, kwargs, 3, "default") {
            return option_to_type(default.clone(), ty.as_deref());
        }
    }
    if arg(args, kwargs, 2, "required").is_some_and(Value::is_truthy) {
        let name = key.unwrap_or_else(|| "?".into());
        return Err(fail(format!(
            "option('{name}') must be initialized, try '-D {name}=?' argument"
        )));
    }
    Ok(Value::None)
}

/// KCL reads string arguments with `as_str`, which makes any other value
/// the empty string.
fn as_str_or_empty(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
}

/// `option(..., type=…)`'s conversion, which is looser than `int()` and
/// friends: `"true"` is a bool, a float string that does not parse is 0.0.
fn option_to_type(value: Value, ty: Option<&str>) -> Result<Value> {
    let cannot_use = |value: &Value, ty: &str| {
        fail(format!(
            "cannot use '{}' as type '{ty}'",
            value.to_kcl_string()
        ))
    };
    let Some(ty) = ty.filter(|t| !t.is_empty()) else {
        return Ok(value);
    };
    match ty {
        "bool" => Ok(match &value {
            Value::Bool(b) => Value::Bool(*b),
            Value::Int(i) => Value::Bool(*i != 0),
            Value::Float(f) => Value::Bool(*f != 0.0),
            Value::Str(s) => Value::Bool(&**s == "True" || &**s == "true"),
            _ => Value::Undefined,
        }),
        "int" => match &value {
            Value::Bool(b) => Ok(Value::Int(i64::from(*b))),
            Value::Int(i) => Ok(Value::Int(*i)),
            Value::Float(f) => Ok(Value::Int(*f as i64)),
            Value::Str(s) => s
                .parse::<i64>()
                .map(Value::Int)
                .map_err(|_| cannot_use(&value, ty)),
            _ => Err(cannot_use(&value, ty)),
        },
        "float" => match &value {
            Value::Bool(b) => Ok(Value::Float(if *b { 1.0 } else { 0.0 })),
            Value::Int(i) => Ok(Value::Float(*i as f64)),
            Value::Float(f) => Ok(Value::Float(*f)),
            Value::Str(s) => Ok(Value::Float(s.parse::<f64>().unwrap_or(0.0))),
            _ => Err(cannot_use(&value, ty)),
        },
        "str" => match &value {
            // Rust's own formatting: `true`, `1.0` prints `1`.
            Value::Bool(b) => Ok(Value::str(b.to_string())),
            Value::Int(i) => Ok(Value::str(i.to_string())),
            Value::Float(f) => Ok(Value::str(f.to_string())),
            Value::Str(_) => Ok(value),
            _ => Err(cannot_use(&value, ty)),
        },
        "list" => match &value {
            Value::List(_) => Ok(value),
            _ => Err(cannot_use(&value, ty)),
        },
        "dict" => match &value {
            Value::Dict(_) => Ok(value),
            _ => Err(cannot_use(&value, ty)),
        },
        _ => Err(fail(format!("unknown type '{ty}'"))),
    }
}
