//! Unification of configs: `:` merges dicts deeply and refuses two
//! different scalars at the same key inside one config literal, `=`
//! overrides, `+=` inserts into lists (at an index with `key[i] += …`).
//! The same merge is `|` on dicts, schemas and lists, without the conflict
//! check (a later scalar wins).

use std::rc::Rc;

use crate::ast::ConfigEntryOperation;
use crate::error::{ErrorKind, KclError, Result};
use crate::value::{Dict, SchemaValue, Value};

/// How a union treats scalars at the same key.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnionOptions {
    /// Refuse two different scalars at the same key (inside a config
    /// literal) instead of letting the later one win (`|`, schema
    /// defaults).
    pub idempotent_check: bool,
}

/// Re-evaluates a schema instance whose config grew (a schema unified with
/// more config is evaluated again with the merged config).
pub trait SchemaResolver {
    /// `attrs` is the instance's attributes with more config merged in;
    /// `keys` the attributes its configs set, which keep their values.
    fn resolve_schema(
        &mut self,
        schema: &SchemaValue,
        attrs: Dict,
        keys: Vec<String>,
    ) -> Result<Value>;
}

#[derive(Default)]
struct Conflict {
    path: Vec<String>,
    existing: String,
    incoming: String,
}

/// The short JSON KCL prints for a conflicting value.
fn conflict_json(v: &Value) -> String {
    match v {
        Value::Dict(_) | Value::Schema(_) => "{...}".into(),
        Value::List(_) => "[...]".into(),
        Value::Str(s) => format!("{:?}", &**s),
        Value::Bool(b) => if *b { "true" } else { "false" }.into(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => {
            if f.fract() == 0.0 && f.is_finite() {
                format!("{f:.1}")
            } else {
                f.to_string()
            }
        }
        Value::Unit(u) => format!("{}{}", u.raw, u.suffix.as_str()),
        Value::None | Value::Undefined => "null".into(),
        Value::Function(_) => "\"<function>\"".into(),
    }
}

/// Whether `incoming` may be unified into `existing` without a conflict
/// (KCL's non-recursive subsumption: configs always may, their keys are
/// checked one by one as they merge).
fn subsumes(incoming: &Value, existing: &Value) -> bool {
    match (incoming, existing) {
        (Value::None | Value::Undefined, _) | (_, Value::None | Value::Undefined) => true,
        (Value::Int(a), Value::Int(b)) => a == b,
        (Value::Float(a), Value::Float(b)) => a == b,
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::Str(a), Value::Str(b)) => a == b,
        (Value::List(a), Value::List(b)) => {
            a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| subsumes(x, y))
        }
        (Value::Dict(_) | Value::Schema(_), Value::Dict(_) | Value::Schema(_)) => true,
        _ => incoming.kcl_eq(existing),
    }
}

fn normalize_index(index: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let i = if index < 0 { index + len } else { index };
    if (0..=len).contains(&i) {
        usize::try_from(i).ok()
    } else {
        None
    }
}

fn union_error(message: String) -> KclError {
    KclError::new(ErrorKind::EvaluationError, message)
}

struct Unifier<'r> {
    resolver: &'r mut dyn SchemaResolver,
    opts: UnionOptions,
    conflict: Option<Conflict>,
}

impl Unifier<'_> {
    fn union(&mut self, existing: Value, incoming: &Value, or_mode: bool) -> Result<Value> {
        if existing.is_none_or_undefined() {
            return Ok(incoming.clone());
        }
        if incoming.is_none_or_undefined() {
            return Ok(existing);
        }
        let container = |v: &Value| matches!(v, Value::List(_) | Value::Dict(_) | Value::Schema(_));
        if container(&existing) && container(incoming) {
            return self.union_containers(existing, incoming);
        }
        if or_mode {
            return match (&existing, incoming) {
                (Value::Int(a), Value::Int(b)) => Ok(Value::Int(a | b)),
                _ => Err(union_error(format!(
                    "unsupported operand type(s) for |: '{}' and '{}'",
                    existing.type_name(),
                    incoming.type_name()
                ))),
            };
        }
        Ok(incoming.clone())
    }

    fn union_containers(&mut self, existing: Value, incoming: &Value) -> Result<Value> {
        match (existing, incoming) {
            (Value::List(mut a), Value::List(b)) => {
                let items = Rc::make_mut(&mut a);
                for (i, item) in b.iter().enumerate() {
                    match items.get_mut(i) {
                        Some(slot) => {
                            let merged =
                                self.union(std::mem::replace(slot, Value::None), item, false)?;
                            *slot = merged;
                            if let Some(c) = &mut self.conflict {
                                c.path.push(format!("list[{i}]"));
                                return Ok(Value::List(a));
                            }
                        }
                        None => items.push(item.clone()),
                    }
                }
                Ok(Value::List(a))
            }
            (Value::Dict(mut a), Value::Dict(b)) => {
                self.union_dicts(Rc::make_mut(&mut a), b)?;
                Ok(Value::Dict(a))
            }
            (Value::Schema(s), Value::Dict(delta)) => {
                let mut attrs = s.attrs.clone();
                self.union_dicts(&mut attrs, delta)?;
                if self.conflict.is_some() {
                    return Ok(Value::Schema(s));
                }
                let keys = joined_keys(&s.config_keys, delta.entries.keys());
                self.resolver.resolve_schema(&s, attrs, keys)
            }
            (Value::Schema(s), Value::Schema(delta)) => {
                let mut attrs = s.attrs.clone();
                self.union_dicts(&mut attrs, &delta.attrs)?;
                if self.conflict.is_some() {
                    return Ok(Value::Schema(s));
                }
                let keys = joined_keys(&s.config_keys, delta.config_keys.iter());
                let mut target = s.as_ref().clone();
                target.args.clone_from(&delta.args);
                target.kwargs.clone_from(&delta.kwargs);
                self.resolver.resolve_schema(&target, attrs, keys)
            }
            (Value::Dict(a), Value::Schema(delta)) => {
                let mut attrs = a.as_ref().clone();
                self.union_dicts(&mut attrs, &delta.attrs)?;
                if self.conflict.is_some() {
                    return Ok(Value::Dict(a));
                }
                let keys = joined_keys(&delta.config_keys, a.entries.keys());
                self.resolver.resolve_schema(delta, attrs, keys)
            }
            (existing, incoming) => Err(union_error(format!(
                "union failure, expect {}, got {}",
                existing.type_name(),
                incoming.type_name()
            ))),
        }
    }

    fn union_dicts(&mut self, obj: &mut Dict, delta: &Dict) -> Result<()> {
        for (k, i) in &delta.insert_indexes {
            obj.insert_indexes.insert(k.clone(), *i);
        }
        for (position, (key, v)) in delta.iter().enumerate() {
            let op = delta.op_at(position);
            let index = delta.insert_indexes.get(key).copied();
            if !obj.entries.contains_key(key) && index.is_none() {
                obj.insert_with_op(key.clone(), v.clone(), op);
                continue;
            }
            self.union_entry(obj, key, v, op, index)?;
            // Each of delta's keys takes delta's operator, `:` included
            // (a merge that failed or conflicted leaves `obj` unused).
            obj.set_op(key, op);
            if self.conflict.is_some() {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Merges delta's `key <op>[index] v` into `obj`, which holds `key` or
    /// is given an index.
    fn union_entry(
        &mut self,
        obj: &mut Dict,
        key: &str,
        v: &Value,
        op: ConfigEntryOperation,
        index: Option<i64>,
    ) -> Result<()> {
        match op {
            ConfigEntryOperation::Union => self.union_key(obj, key, v, index)?,
            ConfigEntryOperation::Override => match index {
                Some(index) => {
                    let list = list_at(obj, key, "override", index)?;
                    let len = list.len();
                    let i = normalize_index(index, len)
                        .filter(|i| *i < len)
                        .ok_or_else(|| index_error(index, len))?;
                    if v.is_undefined() {
                        list.remove(i);
                    } else if let Some(slot) = list.get_mut(i) {
                        *slot = v.clone();
                    }
                }
                None => {
                    obj.entries.insert(key.to_string(), v.clone());
                }
            },
            ConfigEntryOperation::Insert => {
                let slot = obj.entries.entry(key.to_string()).or_insert(Value::None);
                if slot.is_none_or_undefined() {
                    *slot = Value::list(Vec::new());
                }
                match (slot, v) {
                    (Value::List(origin), Value::List(items)) => {
                        let origin = Rc::make_mut(origin);
                        match index {
                            Some(index) => {
                                let at = insert_position(index, origin.len())?;
                                for (n, item) in items.iter().enumerate() {
                                    origin.insert(at + n, item.clone());
                                }
                            }
                            None => origin.extend(items.iter().cloned()),
                        }
                    }
                    (origin, v) => {
                        return Err(union_error(format!(
                            "only list attribute can be inserted value, the origin value type is {} and got value type is {}",
                            origin.type_name(),
                            v.type_name()
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    fn union_key(
        &mut self,
        obj: &mut Dict,
        key: &str,
        v: &Value,
        index: Option<i64>,
    ) -> Result<()> {
        match index {
            Some(index) => {
                let list = list_at(obj, key, "union", index)?;
                let i = normalize_index(index, list.len())
                    .filter(|i| *i < list.len())
                    .ok_or_else(|| {
                        union_error(format!(
                            "only non-empty list attribute can be union value with the index {index}"
                        ))
                    })?;
                let Some(slot) = list.get_mut(i) else {
                    return Ok(());
                };
                if self.opts.idempotent_check && !subsumes(v, slot) {
                    self.conflict = Some(Conflict {
                        path: vec![format!("{key}[{index}]")],
                        existing: conflict_json(slot),
                        incoming: conflict_json(v),
                    });
                    return Ok(());
                }
                let merged = self.union(std::mem::replace(slot, Value::None), v, false)?;
                *slot = merged;
            }
            None => {
                let Some(slot) = obj.entries.get_mut(key) else {
                    obj.entries.insert(key.to_string(), v.clone());
                    return Ok(());
                };
                if self.opts.idempotent_check && !subsumes(v, slot) {
                    self.conflict = Some(Conflict {
                        path: vec![key.to_string()],
                        existing: conflict_json(slot),
                        incoming: conflict_json(v),
                    });
                    return Ok(());
                }
                let merged = self.union(std::mem::replace(slot, Value::None), v, false)?;
                *slot = merged;
            }
        }
        if let Some(c) = &mut self.conflict {
            c.path.push(key.to_string());
        }
        Ok(())
    }
}

fn joined_keys<'k>(first: &[String], more: impl Iterator<Item = &'k String>) -> Vec<String> {
    let mut keys = first.to_vec();
    for k in more {
        if !keys.contains(k) {
            keys.push(k.clone());
        }
    }
    keys
}

/// KCL's message for an index past a list's end (Rust's, as KCL's
/// runtime panics with it).
fn index_error(index: i64, len: usize) -> KclError {
    if index < 0 {
        union_error("index out of bounds".to_string())
    } else {
        union_error(format!(
            "index out of bounds: the len is {len} but the index is {index}"
        ))
    }
}

/// Where `key[index] += items` inserts.
fn insert_position(index: i64, len: usize) -> Result<usize> {
    match normalize_index(index, len) {
        Some(at) => Ok(at),
        None if index < 0 => Err(union_error("index out of bounds".to_string())),
        None => Err(union_error(format!(
            "insertion index (is {index}) should be <= len (is {len})"
        ))),
    }
}

fn list_at<'d>(obj: &'d mut Dict, key: &str, what: &str, index: i64) -> Result<&'d mut Vec<Value>> {
    match obj.entries.get_mut(key) {
        Some(Value::List(list)) => Ok(Rc::make_mut(list)),
        _ => Err(union_error(format!(
            "only list attribute can be {what} value with the index {index}"
        ))),
    }
}

/// Unifies `incoming` into `existing` as a config entry or `|` does, with
/// KCL's conflict message.
pub fn union(
    resolver: &mut dyn SchemaResolver,
    existing: Value,
    incoming: &Value,
    or_mode: bool,
    opts: UnionOptions,
) -> Result<Value> {
    let mut unifier = Unifier {
        resolver,
        opts,
        conflict: None,
    };
    let result = unifier.union(existing, incoming, or_mode)?;
    match unifier.conflict {
        None => Ok(result),
        Some(mut c) => {
            c.path.reverse();
            let key = c.path.last().cloned().unwrap_or_default();
            let path = c.path.join(".");
            let note = format!(
                "    {{...}} | {{\n            ...\n            {key} = {}\n            ...\n    }}",
                c.incoming
            );
            Err(union_error(if key.is_empty() {
                format!(
                    "conflicting values between {} and {}",
                    c.incoming, c.existing
                )
            } else {
                format!(
                    "conflicting values on the attribute '{key}' between :\n    {}\nand\n    {}\nwith union path :\n    {path}\ntry operator '=' to override the attribute, like:\n{note}",
                    c.existing, c.incoming
                )
            }))
        }
    }
}

/// Merges one `key <op> value` entry into a dict (a config literal's
/// entry, with the conflict check).
pub fn merge_entry(
    resolver: &mut dyn SchemaResolver,
    target: Value,
    key: impl Into<String>,
    value: Value,
    op: ConfigEntryOperation,
    insert_index: Option<i64>,
    idempotent_check: bool,
) -> Result<Value> {
    // Taken as owned: a config entry's key moves into the dict, not copied.
    let key: String = key.into();
    let mut target = target;
    // The common case, a key the dict does not hold yet, is what
    // `union_dicts` would do, without building a one-key delta to merge.
    if let Value::Dict(dict) = &mut target
        && insert_index.is_none()
        && !dict.entries.contains_key(&key)
    {
        Rc::make_mut(dict).insert_with_op(key, value, op);
        return Ok(target);
    }
    let mut delta = Dict::new();
    if let Some(i) = insert_index {
        delta.insert_indexes.insert(key.clone(), i);
    }
    delta.insert_with_op(key, value, op);
    union(
        resolver,
        target,
        &Value::dict(delta),
        true,
        UnionOptions { idempotent_check },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoSchemas;
    impl SchemaResolver for NoSchemas {
        fn resolve_schema(
            &mut self,
            schema: &SchemaValue,
            _attrs: Dict,
            _keys: Vec<String>,
        ) -> Result<Value> {
            Ok(Value::Schema(Rc::new(schema.clone())))
        }
    }

    fn dict(entries: &[(&str, Value)]) -> Value {
        Value::plain_dict(entries.iter().map(|(k, v)| (k.to_string(), v.clone())))
    }

    #[test]
    fn union_merges_nested_dicts_keeping_first_positions() {
        let a = dict(&[("x", dict(&[("a", Value::Int(1))])), ("y", Value::Int(2))]);
        let b = dict(&[("z", Value::Int(3)), ("x", dict(&[("b", Value::Int(4))]))]);
        let merged = union(&mut NoSchemas, a, &b, true, UnionOptions::default()).unwrap();
        let d = merged.as_dict().unwrap();
        let keys: Vec<_> = d.entries.keys().cloned().collect();
        assert_eq!(keys, ["x", "y", "z"]);
        assert_eq!(d.get("x").and_then(Value::as_dict).map(Dict::len), Some(2));
    }

    #[test]
    fn conflicting_scalars_in_one_config_are_refused() {
        let a = dict(&[("k", Value::Int(1))]);
        let err = merge_entry(
            &mut NoSchemas,
            a,
            "k",
            Value::Int(2),
            ConfigEntryOperation::Union,
            None,
            true,
        )
        .unwrap_err();
        assert!(
            err.message.starts_with(
                "conflicting values on the attribute 'k' between :\n    1\nand\n    2"
            )
        );
    }

    #[test]
    fn insert_appends_and_inserts_at_an_index() {
        let a = dict(&[("l", Value::list(vec![Value::Int(1), Value::Int(2)]))]);
        let add = Value::list(vec![Value::Int(9)]);
        let appended = merge_entry(
            &mut NoSchemas,
            a.clone(),
            "l",
            add.clone(),
            ConfigEntryOperation::Insert,
            None,
            true,
        )
        .unwrap();
        let at0 = merge_entry(
            &mut NoSchemas,
            a,
            "l",
            add,
            ConfigEntryOperation::Insert,
            Some(0),
            true,
        )
        .unwrap();
        let list = |v: &Value| {
            format!(
                "{:?}",
                v.as_dict()
                    .and_then(|d| d.get("l"))
                    .and_then(Value::as_list)
            )
        };
        assert_eq!(list(&appended), "Some([Int(1), Int(2), Int(9)])");
        assert_eq!(list(&at0), "Some([Int(9), Int(1), Int(2)])");
    }

    #[test]
    fn override_replaces_and_bitor_of_ints_is_bitwise() {
        let a = dict(&[("k", dict(&[("a", Value::Int(1))]))]);
        let over = merge_entry(
            &mut NoSchemas,
            a,
            "k",
            Value::Int(5),
            ConfigEntryOperation::Override,
            None,
            true,
        )
        .unwrap();
        assert!(matches!(
            over.as_dict().and_then(|d| d.get("k")),
            Some(Value::Int(5))
        ));
        let or = union(
            &mut NoSchemas,
            Value::Int(1),
            &Value::Int(2),
            true,
            UnionOptions::default(),
        );
        assert!(matches!(or, Ok(Value::Int(3))));
    }
}
