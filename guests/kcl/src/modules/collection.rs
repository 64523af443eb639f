//! `collection.union_all(configs)`: the union of a list of configs.

use super::error;
use crate::builtins::{BuiltinFn, Interp};
use crate::error::Result;
use crate::value::{Dict, Value};

pub(super) const MEMBERS: &[(&str, BuiltinFn)] = &[("union_all", union_all)];

/// `union_all(num: [any]) -> any`: `{}` for an empty or non-list
/// argument, else the items unified in order as `|` unifies them.
fn union_all(interp: &mut dyn Interp, args: &[Value], _: &[(String, Value)]) -> Result<Value> {
    let Some(arg) = args.first() else {
        return Err(error("union_all() takes at least 1 argument (0 given)"));
    };
    let items = match arg {
        Value::List(items) if !items.is_empty() => items,
        _ => return Ok(Value::dict(Dict::new())),
    };
    let mut iter = items.iter();
    let mut result = iter.next().cloned().unwrap_or(Value::None);
    for item in iter {
        result = interp.union(result, item)?;
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{call, json};
    use crate::value::Value;

    #[test]
    fn empty_or_non_lists_are_an_empty_dict() {
        for arg in [Value::list(vec![]), Value::Int(1), Value::None] {
            assert_eq!(
                json(&call("collection", "union_all", &[arg], &[]).unwrap()),
                "{}"
            );
        }
        let one = Value::list(vec![Value::Int(3)]);
        assert_eq!(
            json(&call("collection", "union_all", &[one], &[]).unwrap()),
            "3"
        );
    }
}
