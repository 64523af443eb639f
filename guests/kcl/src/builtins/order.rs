//! `sorted`, `max` and `min`: KCL's orderings and their messages.

use std::cmp::Ordering;

use crate::error::Result;
use crate::value::Value;

use super::functions::one_argument;
use super::{Interp, arg, fail};

type Kwargs = [(String, Value)];

/// `sorted(x, reverse=False)`: a list's items, a string's characters or a
/// dict's keys, in order. Only numbers with numbers and strings with
/// strings compare; anything else fails as soon as KCL's sort would compare
/// it.
pub(super) fn sorted(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
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
    // The item a stable sort puts last among those checked so far.
    let Some(mut last) = items.first() else {
        return Ok(());
    };
    for item in &items[1..] {
        let (a, b) = if reverse { (last, item) } else { (item, last) };
        // Comparable with that item means comparable with all before it:
        // only numbers with numbers and strings with strings get this far.
        let Some(order) = sort_cmp(item, last) else {
            return Err(cannot_compare(a, b));
        };
        let later_wins = match order {
            Ordering::Greater => !reverse,
            Ordering::Less => reverse,
            Ordering::Equal => true,
        };
        if later_wins {
            last = item;
        }
    }
    items.sort_by(|a, b| {
        let order = sort_cmp(a, b).unwrap_or(Ordering::Equal);
        if reverse { order.reverse() } else { order }
    });
    Ok(())
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

pub(super) fn max(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    extreme(args, "max", ">")
}

pub(super) fn min(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    extreme(args, "min", "<")
}
