//! KCL's builtin functions, as KCL 0.12.3's runtime implements them.
//!
//! KCL's checker refuses most wrong argument counts and types before the
//! program runs; what reaches these functions anyway gets the runtime's
//! own answer, which is often `Undefined` rather than an error (`hex(1.5)`,
//! `abs("a")`), and its messages. Quirks programs can observe are kept and
//! named where they happen.

use std::cmp::Ordering;
use std::rc::Rc;

use crate::ast;
use crate::error::{ErrorKind, KclError, Result};
use crate::value::{Dict, FunctionKind, Value};

use super::convert::{to_float, to_int};
use super::{BuiltinFn, Interp, UNWRAP_NONE, arg, fail};

type Kwargs = [(String, Value)];

/// Every builtin function, in the order of KCL's builtin table.
pub(super) const NAMES: &[&str] = &[
    "option",
    "print",
    "multiplyof",
    "isunique",
    "isnullish",
    "len",
    "abs",
    "all_true",
    "any_true",
    "hex",
    "bin",
    "oct",
    "ord",
    "sorted",
    "range",
    "max",
    "min",
    "sum",
    "pow",
    "round",
    "zip",
    "int",
    "float",
    "bool",
    "str",
    "list",
    "dict",
    "typeof",
    "reduce",
];

pub(super) fn lookup(name: &str) -> Option<BuiltinFn> {
    Some(match name {
        "option" => option,
        "print" => print,
        "multiplyof" => multiplyof,
        "isunique" => isunique,
        "isnullish" => isnullish,
        "len" => len,
        "abs" => abs,
        "all_true" => all_true,
        "any_true" => any_true,
        "hex" => hex,
        "bin" => bin,
        "oct" => oct,
        "ord" => ord,
        "sorted" => sorted,
        "range" => range,
        "max" => max,
        "min" => min,
        "sum" => sum,
        "pow" => pow,
        "round" => round,
        "zip" => zip,
        "int" => int,
        "float" => float,
        "bool" => bool,
        "str" => str,
        "list" => list,
        "dict" => dict,
        "typeof" => type_of,
        "reduce" => reduce,
        _ => return None,
    })
}

/// The message KCL gives when a one-argument builtin gets none.
fn one_argument(name: &str) -> KclError {
    fail(format!("{name}() takes exactly one argument (0 given)"))
}

/// `option(key, type="", required=False, default=None, help="")`: the
/// value of `-D key=…`, else the default, converted to `type` when given.
fn option(interp: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
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

/// `print(*args, end="\n")`: the arguments as `str()` prints them, joined
/// by spaces. KCL 0.12.3 ignores `sep`.
fn print(interp: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let mut text = args
        .iter()
        .map(Value::to_kcl_string)
        .collect::<Vec<_>>()
        .join(" ");
    match super::kwarg(kwargs, "end") {
        Some(end) => text.push_str(&end.to_kcl_string()),
        None => text.push('\n'),
    }
    interp.print(&text);
    Ok(Value::None)
}

fn len(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let value = arg(args, kwargs, 0, "inval").ok_or_else(|| one_argument("len"))?;
    let n = match value {
        // KCL counts a string's bytes.
        Value::Str(s) => s.len(),
        Value::List(items) => items.len(),
        Value::Dict(d) => d.len(),
        Value::Schema(s) => s.attrs.len(),
        other => {
            return Err(fail(format!(
                "object of type '{}' has no len()",
                other.runtime_type_str()
            )));
        }
    };
    Ok(Value::Int(n as i64))
}

fn multiplyof(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let (Some(a), Some(b)) = (arg(args, kwargs, 0, "a"), arg(args, kwargs, 1, "b")) else {
        return Err(fail(format!(
            "multiplyof() takes exactly two argument ({} given)",
            args.len()
        )));
    };
    match (a, b) {
        (Value::Int(_), Value::Int(0)) => Err(fail(
            "attempt to calculate the remainder with a divisor of zero",
        )),
        (Value::Int(a), Value::Int(b)) => a
            .checked_rem(*b)
            .map(|r| Value::Bool(r == 0))
            .ok_or_else(|| fail("attempt to calculate the remainder with overflow")),
        _ => Ok(Value::Undefined),
    }
}

/// `isunique(list)`: no two items equal (`1` and `1.0` are equal). A dict's
/// key order counts here, as it does in KCL's hash of a dict.
fn isunique(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let Some(Value::List(items)) = arg(args, kwargs, 0, "inval") else {
        return Ok(Value::Bool(false));
    };
    for (i, item) in items.iter().enumerate() {
        if items[..i]
            .iter()
            .any(|earlier| same_for_unique(earlier, item))
        {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}

/// Equal as KCL's hash set sees it: equal values whose hashes also agree.
fn same_for_unique(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| same_for_unique(p, q))
        }
        (Value::Dict(_) | Value::Schema(_), Value::Dict(_) | Value::Schema(_)) => {
            // KCL's equality never holds between a dict and a schema.
            if matches!(a, Value::Dict(_)) != matches!(b, Value::Dict(_)) {
                return false;
            }
            match (a.as_dict(), b.as_dict()) {
                (Some(x), Some(y)) => {
                    x.len() == y.len()
                        && x.iter()
                            .zip(y.iter())
                            .all(|((k1, v1), (k2, v2))| k1 == k2 && same_for_unique(v1, v2))
                }
                _ => false,
            }
        }
        // Unit numbers never compare equal in KCL's runtime.
        (Value::Unit(_), _) | (_, Value::Unit(_)) => false,
        _ => a.kcl_eq(b),
    }
}

fn isnullish(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let value = arg(args, kwargs, 0, "inval").ok_or_else(|| one_argument("is_nullable"))?;
    Ok(Value::Bool(value.is_none_or_undefined()))
}

fn abs(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    Ok(
        match arg(args, kwargs, 0, "inval").ok_or_else(|| one_argument("abs"))? {
            // KCL's runtime is built without overflow checks.
            Value::Int(i) => Value::Int(i.wrapping_abs()),
            Value::Float(f) => Value::Float(f.abs()),
            _ => Value::Undefined,
        },
    )
}

/// The values of a list, dict or schema instance, which `all_true` and
/// `any_true` look at.
fn container_values(value: &Value) -> Option<Vec<&Value>> {
    match value {
        Value::List(items) => Some(items.iter().collect()),
        Value::Dict(_) | Value::Schema(_) => {
            value.as_dict().map(|d| d.iter().map(|(_, v)| v).collect())
        }
        _ => None,
    }
}

fn all_true(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let Some(value) = arg(args, kwargs, 0, "inval") else {
        return Ok(Value::Bool(false));
    };
    let Some(values) = container_values(value) else {
        return Ok(Value::Bool(false));
    };
    // KCL 0.12.3 inverts the test for schema instances: true when no
    // attribute is truthy.
    let result = if matches!(value, Value::Schema(_)) {
        !values.iter().any(|v| v.is_truthy())
    } else {
        values.iter().all(|v| v.is_truthy())
    };
    Ok(Value::Bool(result))
}

fn any_true(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let values = arg(args, kwargs, 0, "inval").and_then(container_values);
    Ok(Value::Bool(
        values.is_some_and(|vs| vs.iter().any(|v| v.is_truthy())),
    ))
}

/// `hex`, `oct`, `bin`: Python's spelling (`-0x1f`); `Undefined` for
/// anything but an int.
fn radix_string(
    args: &[Value],
    kwargs: &Kwargs,
    name: &str,
    render: fn(u64) -> String,
) -> Result<Value> {
    let value = arg(args, kwargs, 0, "number").ok_or_else(|| one_argument(name))?;
    let Value::Int(i) = value else {
        return Ok(Value::Undefined);
    };
    let digits = render(i.unsigned_abs());
    Ok(Value::str(if *i < 0 {
        format!("-{digits}")
    } else {
        digits
    }))
}

fn hex(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    radix_string(args, kwargs, "hex", |n| format!("0x{n:x}"))
}

fn oct(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let value = arg(args, kwargs, 0, "number").ok_or_else(|| one_argument("oct"))?;
    // KCL spells the smallest int without the `o` of every other result.
    if let Value::Int(i64::MIN) = value {
        return Ok(Value::str("-01000000000000000000000"));
    }
    radix_string(args, kwargs, "oct", |n| format!("0o{n:o}"))
}

fn bin(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    radix_string(args, kwargs, "bin", |n| format!("0b{n:b}"))
}

fn ord(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let value = arg(args, kwargs, 0, "c").ok_or_else(|| one_argument("ord"))?;
    let Value::Str(s) = value else {
        return Ok(Value::Undefined);
    };
    let mut chars = s.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => Ok(Value::Int(i64::from(u32::from(c)))),
        // KCL's message starts with a space and counts bytes.
        _ => Err(fail(format!(
            " ord() expected string of length 1, but string of length {} found",
            s.len()
        ))),
    }
}

/// `sorted(x, reverse=False)`: a list's items, a string's characters or a
/// dict's keys, in order. Only numbers with numbers and strings with
/// strings compare; anything else fails as soon as KCL's sort would compare
/// it.
fn sorted(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let value = arg(args, kwargs, 0, "inval").ok_or_else(|| one_argument("sorted"))?;
    let reverse = arg(args, kwargs, 1, "reverse").is_some_and(Value::is_truthy);
    let mut items: Vec<Value> = match value {
        Value::Str(s) => s.chars().map(|c| Value::str(c.to_string())).collect(),
        Value::List(items) => items.to_vec(),
        Value::Dict(d) => d.iter().map(|(k, _)| Value::str(k)).collect(),
        _ => return Err(fail("sorted only for str|list|dict type")),
    };
    sort_values(&mut items, reverse)?;
    Ok(Value::list(items))
}

/// How KCL's sort orders two values: numbers by value, strings by bytes,
/// nothing else (a NaN compares with nothing either).
fn sort_cmp(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
            a.as_f64()?.partial_cmp(&b.as_f64()?)
        }
        (Value::Str(x), Value::Str(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

/// Sorts stably (descending when `reverse`, equal items keeping their
/// order). KCL's sort fails at the first comparison it cannot make; its
/// insertion sort compares each item with the greatest (for `reverse`, the
/// least) of the items before it, so that is the pair the message names.
fn sort_values(items: &mut [Value], reverse: bool) -> Result<()> {
    let cannot_compare = |a: &Value, b: &Value| {
        fail(format!(
            "cannot compare {} and {}",
            a.runtime_type_str(),
            b.runtime_type_str()
        ))
    };
    for i in 1..items.len() {
        let item = &items[i];
        let mut last = &items[0];
        for earlier in &items[1..i] {
            // The prefix is known to be comparable: keep the item a stable
            // sort would put last.
            let later_wins = match sort_cmp(earlier, last) {
                Some(Ordering::Greater) => !reverse,
                Some(Ordering::Less) => reverse,
                _ => true,
            };
            if later_wins {
                last = earlier;
            }
        }
        let (a, b) = if reverse { (last, item) } else { (item, last) };
        // Comparable with that item means comparable with the whole prefix:
        // only numbers with numbers and strings with strings get this far.
        if sort_cmp(a, b).is_none() {
            return Err(cannot_compare(a, b));
        }
    }
    items.sort_by(|a, b| {
        let order = sort_cmp(a, b).unwrap_or(Ordering::Equal);
        if reverse { order.reverse() } else { order }
    });
    Ok(())
}

/// `range(stop)` or `range(start, stop, step=1)`; `Undefined` unless all
/// are ints.
fn range(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let Some(first) = arg(args, kwargs, 0, "start") else {
        return Ok(Value::Undefined);
    };
    let (start, stop, step) = match arg(args, kwargs, 1, "stop") {
        Some(stop) => (
            first,
            stop,
            arg(args, kwargs, 2, "step").unwrap_or(&Value::Int(1)),
        ),
        None => (&Value::Int(0), first, &Value::Int(1)),
    };
    let (Value::Int(start), Value::Int(stop), Value::Int(step)) = (start, stop, step) else {
        return Ok(Value::Undefined);
    };
    if *step == 0 {
        return Err(fail("range() step argument must not be zero"));
    }
    let span = if *step > 0 {
        i128::from(*stop) - i128::from(*start)
    } else {
        i128::from(*start) - i128::from(*stop)
    };
    let count = if span <= 0 {
        0
    } else {
        (span + i128::from(step.unsigned_abs()) - 1) / i128::from(step.unsigned_abs())
    };
    let mut items = Vec::new();
    usize::try_from(count)
        .ok()
        .and_then(|n| items.try_reserve_exact(n).ok())
        .ok_or_else(|| fail("range() result is too large"))?;
    let mut current = i128::from(*start);
    for _ in 0..count {
        // `current` stays between start and stop, so it fits an i64.
        items.push(Value::Int(current as i64));
        current += i128::from(*step);
    }
    Ok(Value::list(items))
}

/// KCL's `>` and `<` for `max` and `min`, with their messages: numbers
/// and bools compare as numbers, strings with strings, lists item by item.
fn greater(a: &Value, b: &Value, op: &str) -> Result<bool> {
    let flip = op == "<";
    let unsupported = || {
        fail(format!(
            "'{op}' not supported between instances of '{}' and '{}'",
            a.runtime_type_str(),
            b.runtime_type_str()
        ))
    };
    let numeric = |v: &Value| match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    };
    let ordering = match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Int(_) | Value::Float(_) | Value::Bool(_), _) => match (numeric(a), numeric(b)) {
            (Some(x), Some(y)) => match x.partial_cmp(&y) {
                Some(o) => o,
                None => return Ok(false),
            },
            _ => return Err(unsupported()),
        },
        (Value::Str(x), Value::Str(y)) => x.cmp(y),
        (Value::List(x), Value::List(y)) => {
            for (p, q) in x.iter().zip(y.iter()) {
                if !p.kcl_eq(q) {
                    return greater(p, q, op);
                }
            }
            x.len().cmp(&y.len())
        }
        _ => return Err(unsupported()),
    };
    Ok(if flip {
        ordering == Ordering::Less
    } else {
        ordering == Ordering::Greater
    })
}

/// `max`/`min` over one iterable or over several arguments; the first
/// extreme item wins.
fn extreme(args: &[Value], name: &str, op: &str) -> Result<Value> {
    let candidates: Vec<Value> = match args {
        [] => return Err(one_argument(name)),
        [single] => match single {
            Value::Str(s) => {
                if s.is_empty() {
                    return Err(fail("arg is an empty str"));
                }
                s.chars().map(|c| Value::str(c.to_string())).collect()
            }
            Value::List(items) => {
                if items.is_empty() {
                    return Err(fail("arg is an empty list"));
                }
                items.to_vec()
            }
            Value::Dict(_) | Value::Schema(_) => {
                let keys: Vec<Value> = single
                    .as_dict()
                    .map(|d| d.iter().map(|(k, _)| Value::str(k)).collect())
                    .unwrap_or_default();
                if keys.is_empty() {
                    return Err(fail("arg is an empty dict"));
                }
                keys
            }
            other => {
                return Err(fail(format!(
                    "{} object is not iterable",
                    other.runtime_type_str()
                )));
            }
        },
        many => many.to_vec(),
    };
    let mut best = &candidates[0];
    for candidate in &candidates {
        if greater(candidate, best, op)? {
            best = candidate;
        }
    }
    Ok(best.clone())
}

fn max(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    extreme(args, "max", ">")
}

fn min(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    extreme(args, "min", "<")
}

/// `sum(iterable, start=0)`: `start + item + item…`; `Undefined` unless the
/// iterable is a list.
fn sum(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let Some(iterable) = arg(args, kwargs, 0, "iterable") else {
        return Ok(Value::Undefined);
    };
    let start = arg(args, kwargs, 1, "start")
        .cloned()
        .unwrap_or(Value::Int(0));
    let Value::List(items) = iterable else {
        return Ok(Value::Undefined);
    };
    if matches!(start, Value::Str(_)) {
        return Err(fail("sum() can't sum strings"));
    }
    items
        .iter()
        .try_fold(start, |total, item| add(&total, item))
}

/// KCL's `+` for `sum`: numbers (an int overflow is an error; mixing int
/// and float refuses results beyond a 32-bit float, as KCL does), strings,
/// lists.
fn add(a: &Value, b: &Value) -> Result<Value> {
    let f32_overflow = |v: f64| v > f64::from(f32::MAX) || v < f64::from(f32::MIN);
    let float_overflow = |v: f64| {
        let mut text = format!("{v:e}");
        if !text.contains("e-") {
            text = text.replacen('e', "e+", 1);
        }
        KclError::new(
            ErrorKind::FloatOverflow,
            format!("{text}: A 32-bit floating point number overflow"),
        )
    };
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.checked_add(*y).map(Value::Int).ok_or_else(|| {
            KclError::new(
                ErrorKind::IntOverflow,
                format!(
                    "{}: A 64 bit integer overflow",
                    i128::from(*x) + i128::from(*y)
                ),
            )
        }),
        (Value::Float(x), Value::Float(y)) => Ok(Value::Float(x + y)),
        (Value::Int(x), Value::Float(y)) | (Value::Float(y), Value::Int(x)) => {
            let (x, y) = (*x as f64, *y);
            if f32_overflow(x) || f32_overflow(y) || f32_overflow(x + y) {
                return Err(float_overflow(x + y));
            }
            Ok(Value::Float(x + y))
        }
        (Value::Str(x), Value::Str(y)) => Ok(Value::str(format!("{x}{y}"))),
        (Value::List(x), Value::List(y)) => {
            let mut items = x.to_vec();
            items.extend(y.iter().cloned());
            Ok(Value::list(items))
        }
        (Value::List(_), other) => Err(fail(format!(
            "can only concatenate list (not \"{}\") to list",
            other.runtime_type_str()
        ))),
        _ => Err(fail(format!(
            "unsupported operand type(s) for +: '{}' and '{}'",
            a.runtime_type_str(),
            b.runtime_type_str()
        ))),
    }
}

/// `pow(x, y, z=None)`. Ints to a non-negative int power go through
/// floats, as in KCL (so `pow(2, 63)` saturates at the largest int); with
/// `z`, modular exponentiation with Rust's remainder sign.
fn pow(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let (Some(x), Some(y)) = (arg(args, kwargs, 0, "x"), arg(args, kwargs, 1, "y")) else {
        return Ok(Value::Undefined);
    };
    if let Some(Value::Int(z)) = arg(args, kwargs, 2, "z") {
        if *z == 0 {
            return Err(fail("pow() 3rd argument cannot be 0"));
        }
        let (Value::Int(x), Value::Int(y)) = (x, y) else {
            return Err(fail(
                "pow() 3rd argument not allowed unless all arguments are integers",
            ));
        };
        return match y.cmp(&0) {
            Ordering::Equal => Ok(Value::Int(1)),
            Ordering::Less => Err(fail(
                "pow() 2nd argument cannot be negative when 3rd argument specified",
            )),
            Ordering::Greater => Ok(Value::Int(mod_pow(*x, *y, *z))),
        };
    }
    Ok(match (x, y) {
        (Value::Int(x), Value::Int(y)) if *y >= 0 => Value::Int((*x as f64).powf(*y as f64) as i64),
        (Value::Int(x), Value::Int(y)) => Value::Float((*x as f64).powf(*y as f64)),
        (Value::Int(x), Value::Float(y)) => Value::Float((*x as f64).powf(*y)),
        (Value::Float(x), Value::Int(y)) => Value::Float(x.powf(*y as f64)),
        (Value::Float(x), Value::Float(y)) => Value::Float(x.powf(*y)),
        _ => Value::Undefined,
    })
}

/// `x ** y % m` by squaring, in 128 bits so no step overflows.
fn mod_pow(x: i64, y: i64, m: i64) -> i64 {
    let m = i128::from(m);
    let mut result = 1i128;
    let mut base = i128::from(x);
    let mut exp = y;
    while exp > 0 {
        if exp % 2 == 1 {
            result = (result * base) % m;
        }
        base = (base * base) % m;
        exp /= 2;
    }
    // |result| < |m|, which is an i64.
    result as i64
}

/// `round(number, ndigits=None)`: without `ndigits` an int, rounding
/// halves away from zero (`round(2.5)` is 3); with `ndigits` a float,
/// rounding halves to even as Python does.
fn round(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let Some(number) = arg(args, kwargs, 0, "number") else {
        return Ok(Value::Undefined);
    };
    let ndigits = arg(args, kwargs, 1, "ndigits");
    Ok(match (number, ndigits) {
        (Value::Int(n), Some(Value::Int(_))) => Value::Float(*n as f64),
        (Value::Float(n), Some(Value::Int(d))) => round_digits(*n, *d),
        (_, Some(Value::Int(_))) => Value::Undefined,
        (Value::Int(n), _) => Value::Int(*n),
        (Value::Float(n), _) => Value::Int(n.round() as i64),
        _ => Value::Undefined,
    })
}

/// CPython's `round(x, n)` for floats, as KCL ports it.
fn round_digits(number: f64, ndigits: i64) -> Value {
    if ndigits == 0 {
        return Value::Float(number.round());
    }
    let (y, pow1, pow2) = if ndigits >= 0 {
        // pow1 and pow2 are each safe from overflow; their product is not.
        let (pow1, pow2) = if ndigits > 22 {
            (10f64.powf((ndigits - 22) as f64), 1e22)
        } else {
            (10f64.powf(ndigits as f64), 1.0)
        };
        let y = (number * pow1) * pow2;
        if !y.is_finite() {
            return Value::Float(number);
        }
        (y, pow1, Some(pow2))
    } else {
        let pow1 = 10f64.powf(-(ndigits as f64));
        (number / pow1, pow1, None)
    };
    let mut z = y.round();
    if (y - z).abs() == 0.5 {
        z = 2.0 * (y / 2.0).round();
    }
    let z = match pow2 {
        Some(pow2) => (z / pow2) / pow1,
        None => z * pow1,
    };
    if z.is_finite() {
        Value::Float(z)
    } else {
        Value::Undefined
    }
}

/// The items KCL iterates in a value: a list's items, a string's
/// characters, a dict's or schema's keys.
pub(crate) fn iterate(value: &Value) -> Result<Vec<Value>> {
    match value {
        Value::List(items) => Ok(items.to_vec()),
        Value::Str(s) => Ok(s.chars().map(|c| Value::str(c.to_string())).collect()),
        Value::Dict(_) | Value::Schema(_) => Ok(value
            .as_dict()
            .map(|d| d.iter().map(|(k, _)| Value::str(k)).collect())
            .unwrap_or_default()),
        other => Err(fail(format!(
            "'{}' object is not iterable",
            other.runtime_type_str()
        ))),
    }
}

fn zip(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    let columns = args.iter().map(iterate).collect::<Result<Vec<_>>>()?;
    let rows = columns.iter().map(Vec::len).min().unwrap_or(0);
    Ok(Value::list(
        (0..rows)
            .map(|row| Value::list(columns.iter().map(|c| c[row].clone()).collect()))
            .collect(),
    ))
}

fn int(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let value = arg(args, kwargs, 0, "number").ok_or_else(|| one_argument("int"))?;
    to_int(value, arg(args, kwargs, 1, "base"))
}

fn float(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let value = arg(args, kwargs, 0, "number").ok_or_else(|| one_argument("float"))?;
    to_float(value)
}

fn bool(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let value = arg(args, kwargs, 0, "x").ok_or_else(|| one_argument("bool"))?;
    Ok(Value::Bool(value.is_truthy()))
}

fn str(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    Ok(Value::str(
        arg(args, kwargs, 0, "x").map_or_else(String::new, Value::to_kcl_string),
    ))
}

/// `list(x)`. KCL looks at `x` only when there are positional arguments:
/// `list(x=[1])` is `[]`.
fn list(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    if args.is_empty() {
        return Ok(Value::list(Vec::new()));
    }
    let value =
        arg(args, kwargs, 0, "x").ok_or_else(|| fail("invalid arguments in list() function"))?;
    Ok(Value::list(iterate(value)?))
}

/// `dict(x, **kwargs)`: `x`'s entries, then every keyword argument (`x`
/// included when given by keyword), each merged in as `|` would.
fn dict(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let mut result = Dict::new();
    if let Some(x) = arg(args, kwargs, 0, "x") {
        for (key, value) in dict_entries(x)? {
            merge_entry(&mut result, key, value)?;
        }
    }
    for (key, value) in kwargs {
        merge_entry(&mut result, key.clone(), value.clone())?;
    }
    Ok(Value::dict(result))
}

/// The entries `dict(x)` takes from `x`. For a list of pairs KCL 0.12.3
/// reads each pair's key and value from the outer list instead of the pair
/// (its first two items), after checking the pair has two items; so two
/// pairs or more give one entry, `str(x[0]): x[1]`, and one pair fails.
fn dict_entries(x: &Value) -> Result<Vec<(String, Value)>> {
    match x {
        Value::Dict(_) | Value::Schema(_) => Ok(x
            .as_dict()
            .map(|d| d.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()),
        _ => {
            let items = iterate(x)?;
            let mut entries = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let length = iterate(item)?.len();
                if length != 2 {
                    return Err(fail(format!(
                        "dictionary update sequence element #{i} has length {length}; 2 is required"
                    )));
                }
                let (Some(key), Some(value)) = (items.first(), items.get(1)) else {
                    return Err(fail(UNWRAP_NONE));
                };
                entries.push((key.to_kcl_string(), value.clone()));
            }
            Ok(entries)
        }
    }
}

/// Adds `key: value` to a dict built by `dict()` as KCL's union `|` does:
/// a new key is added; for a key already there the values must agree
/// (equal scalars, lists of the same length whose items agree; dicts always
/// agree), and then dicts merge key by key and lists item by item, the new
/// value winning elsewhere.
fn merge_entry(dict: &mut Dict, key: String, value: Value) -> Result<()> {
    let merged = match dict.get(&key) {
        None => value,
        Some(existing) => {
            let mut conflict = None;
            let merged = union(existing.clone(), &value, &key, &mut conflict);
            if let Some(conflict) = conflict {
                return Err(conflict.into_error());
            }
            merged
        }
    };
    dict.insert(key, merged);
    Ok(())
}

/// Where a union found two values that disagree.
struct Conflict {
    /// Innermost key first.
    path: Vec<String>,
    existing: String,
    new: String,
}

impl Conflict {
    fn into_error(mut self) -> KclError {
        let attr = self.path.first().cloned().unwrap_or_default();
        self.path.reverse();
        fail(format!(
            "conflicting values on the attribute '{attr}' between :\n    {}\nand\n    {}\nwith union path :\n    {}\ntry operator '=' to override the attribute, like:\n    {{...}} | {{\n            ...\n            {attr} = {}\n            ...\n    }}",
            self.existing,
            self.new,
            self.path.join("."),
            self.new
        ))
    }
}

/// `existing | new` for values under the dict key `key`.
fn union(existing: Value, new: &Value, key: &str, conflict: &mut Option<Conflict>) -> Value {
    if !agrees(new, &existing) {
        *conflict = Some(Conflict {
            path: vec![key.to_string()],
            existing: conflict_repr(&existing),
            new: conflict_repr(new),
        });
        return existing;
    }
    let merged = merge(existing, new, conflict);
    if let Some(c) = conflict {
        c.path.push(key.to_string());
    }
    merged
}

fn merge(existing: Value, new: &Value, conflict: &mut Option<Conflict>) -> Value {
    match (existing, new) {
        (existing, new) if existing.is_none_or_undefined() => new.clone(),
        (existing, new) if new.is_none_or_undefined() => existing,
        (Value::List(mut items), Value::List(delta)) => {
            let list = Rc::make_mut(&mut items);
            for (i, item) in delta.iter().enumerate() {
                match list.get_mut(i) {
                    Some(slot) => {
                        *slot = merge(std::mem::replace(slot, Value::Undefined), item, conflict);
                        if let Some(c) = conflict {
                            c.path.push(format!("list[{i}]"));
                            break;
                        }
                    }
                    None => list.push(item.clone()),
                }
            }
            Value::List(items)
        }
        (mut existing @ (Value::Dict(_) | Value::Schema(_)), Value::Dict(_) | Value::Schema(_)) => {
            let Some(delta) = new.as_dict() else {
                return existing;
            };
            let target = match &mut existing {
                Value::Dict(d) => Rc::make_mut(d),
                Value::Schema(s) => &mut Rc::make_mut(s).attrs,
                _ => return existing,
            };
            for (k, v) in delta.iter() {
                let value = match target.get(k) {
                    None => v.clone(),
                    Some(old) => union(old.clone(), v, k, conflict),
                };
                if conflict.is_some() {
                    break;
                }
                target.insert(k.clone(), value);
            }
            existing
        }
        (_, new) => new.clone(),
    }
}

/// KCL's `value_subsume(new, existing)` without recursion into dicts.
fn agrees(new: &Value, existing: &Value) -> bool {
    match (new, existing) {
        (a, b) if a.is_none_or_undefined() || b.is_none_or_undefined() => true,
        (Value::List(a), Value::List(b)) => {
            a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| agrees(x, y))
        }
        (Value::Dict(_) | Value::Schema(_), Value::Dict(_) | Value::Schema(_)) => true,
        (Value::Int(a), Value::Int(b)) => a == b,
        (Value::Float(a), Value::Float(b)) => a == b,
        (Value::Int(_), Value::Float(_)) | (Value::Float(_), Value::Int(_)) => new.kcl_eq(existing),
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::Str(a), Value::Str(b)) => a == b,
        _ => false,
    }
}

/// How a conflict message shows a value: `{...}` and `[...]` for
/// containers, JSON for the rest.
fn conflict_repr(value: &Value) -> String {
    match value {
        Value::Dict(_) | Value::Schema(_) => "{...}".into(),
        Value::List(_) => "[...]".into(),
        Value::Str(s) => json_string(s),
        Value::None | Value::Undefined => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Float(f) => super::display::float_to_kcl_string(*f),
        other => other.to_kcl_string(),
    }
}

/// A JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `typeof(x, full_name=False)`: the type's name; `None` for None; a
/// schema instance's `pkg.Name` with `full_name`.
fn type_of(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let value = arg(args, kwargs, 0, "x")
        .ok_or_else(|| fail("typeof() missing 1 required positional argument: 'x'"))?;
    let full_name = arg(args, kwargs, 1, "full_name").is_some_and(Value::is_truthy);
    Ok(Value::str(match value {
        Value::Schema(s) if full_name => {
            let pkg = s.pkgpath.strip_prefix('@').unwrap_or(&s.pkgpath);
            if pkg.is_empty() || pkg == "__main__" {
                s.name.clone()
            } else {
                format!("{pkg}.{}", s.name)
            }
        }
        Value::None => "None".into(),
        other => other.runtime_type_str(),
    }))
}

/// `reduce(reducer, list, initial)`: `reducer(reducer(initial, x0), x1)…`,
/// starting from the first item when there is no `initial`. An empty list
/// without `initial` gives `None` when the reducer's accumulator may be
/// `None` (or has no type), and is an error otherwise. KCL added `reduce`
/// after 0.12.3; its grammar suite has it, so plait follows KCL's newer
/// runtime here.
fn reduce(interp: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let reducer = arg(args, kwargs, 0, "reducer")
        .ok_or_else(|| fail("reduce() missing required argument: 'reducer'"))?;
    let list = arg(args, kwargs, 1, "list")
        .ok_or_else(|| fail("reduce() missing required argument: 'list'"))?;
    let initial = arg(args, kwargs, 2, "initial");
    let Value::Function(function) = reducer else {
        return Err(fail("reduce() argument 'reducer' must be a function"));
    };
    if !matches!(
        function.kind,
        FunctionKind::Lambda(_) | FunctionKind::Schema(_)
    ) {
        return Err(fail("reduce() argument 'reducer' must be a function"));
    }
    let Value::List(items) = list else {
        return Err(fail("invalid list value"));
    };
    let mut items = items.iter();
    let mut acc = match initial.or_else(|| items.next()) {
        Some(value) => value.clone(),
        None => {
            if let Some(ty) = accumulator_type(&function.kind)
                && !matches!(ty, ast::Type::Any)
            {
                let text = crate::eval::types::type_to_string(ty);
                if !text.contains("None") {
                    return Err(fail(format!(
                        "reduce() empty list with no initial value and non-nullable accumulator type '{text}'"
                    )));
                }
            }
            return Ok(Value::None);
        }
    };
    for item in items {
        acc = interp.call(reducer, vec![acc, item.clone()], Vec::new())?;
    }
    Ok(acc)
}

/// The annotated type of a lambda's first parameter.
fn accumulator_type(kind: &FunctionKind) -> Option<&ast::Type> {
    let FunctionKind::Lambda(closure) = kind else {
        return None;
    };
    let args = closure.lambda.args.as_ref()?;
    args.node.ty_list.first()?.as_ref().map(|t| &t.node)
}
