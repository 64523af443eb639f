//! KCL's builtin functions, as KCL 0.12.3's runtime implements them.
//!
//! KCL's checker refuses most wrong argument counts and types before the
//! program runs; what reaches these functions anyway gets the runtime's
//! own answer, which is often `Undefined` rather than an error (`hex(1.5)`,
//! `abs("a")`), and its messages. Quirks programs can observe are kept and
//! named where they happen.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::rc::Rc;

use crate::ast::{self, ConfigEntryOperation};
use crate::error::{ErrorKind, KclError, Result};
use crate::value::{Dict, FunctionKind, SchemaValue, Value, unify};

use super::convert::{to_float, to_int};
use super::{BuiltinFn, Interp, UNWRAP_NONE, arg, fail};

type Kwargs = [(String, Value)];

/// The builtin function of that name, from KCL's builtin table.
pub(super) fn lookup(name: &str) -> Option<BuiltinFn> {
    Some(match name {
        "option" => super::option::option,
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
        "sorted" => super::order::sorted,
        "range" => range,
        "max" => super::order::max,
        "min" => super::order::min,
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
pub(super) fn one_argument(name: &str) -> KclError {
    fail(format!("{name}() takes exactly one argument (0 given)"))
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
    let mut seen: BTreeMap<u64, Vec<&Value>> = BTreeMap::new();
    for item in items.iter() {
        let mut hasher = DefaultHasher::new();
        hash_for_unique(item, &mut hasher);
        let bucket = seen.entry(hasher.finish()).or_default();
        if bucket.iter().any(|earlier| same_for_unique(earlier, item)) {
            return Ok(Value::Bool(false));
        }
        bucket.push(item);
    }
    Ok(Value::Bool(true))
}

/// KCL's hash of a value: ints hash as floats (so `1` and `1.0` meet),
/// dicts by their entries in order.
fn hash_for_unique(value: &Value, state: &mut impl Hasher) {
    match value {
        Value::Undefined | Value::None => 0u8.hash(state),
        Value::Bool(b) => b.hash(state),
        Value::Int(i) => (*i as f64).to_bits().hash(state),
        Value::Float(f) => f.to_bits().hash(state),
        Value::Unit(u) => {
            u.raw.hash(state);
            u.suffix.as_str().hash(state);
        }
        Value::Str(s) => s.hash(state),
        Value::List(items) => items.iter().for_each(|v| hash_for_unique(v, state)),
        Value::Dict(_) | Value::Schema(_) => {
            for (k, v) in value.as_dict().into_iter().flat_map(|d| d.iter()) {
                k.hash(state);
                hash_for_unique(v, state);
            }
        }
        Value::Function(f) => std::ptr::hash(Rc::as_ptr(f), state),
    }
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
            result = merge_entry(result, key, value)?;
        }
    }
    for (key, value) in kwargs {
        result = merge_entry(result, key.clone(), value.clone())?;
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

/// Adds `key: value` to a dict built by `dict()` as a config entry `key:
/// value` would be: unified with a value already there, with KCL's conflict
/// message when two scalars differ.
fn merge_entry(dict: Dict, key: String, value: Value) -> Result<Dict> {
    let merged = unify::merge_entry(
        &mut AttrsOnly,
        Value::dict(dict),
        key,
        value,
        ConfigEntryOperation::Union,
        None,
        true,
    )?;
    Ok(merged.as_dict().cloned().unwrap_or_default())
}

/// Unifying a schema instance in `dict()`'s entries takes the merged
/// attributes as they are: builtins do not run schema bodies.
struct AttrsOnly;

impl unify::SchemaResolver for AttrsOnly {
    fn resolve_schema(
        &mut self,
        schema: &SchemaValue,
        attrs: Dict,
        keys: Vec<String>,
    ) -> Result<Value> {
        Ok(Value::Schema(Rc::new(SchemaValue {
            attrs,
            config_keys: keys,
            ..schema.clone()
        })))
    }
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
