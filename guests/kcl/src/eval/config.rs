//! Config literals: `k: v` unifies, `k = v` overrides, `k += v` inserts
//! (at an index with `k[i] += v`), dotted keys nest, `**x` spreads, and
//! `if`/`elif`/`else` entries add their entries when their test holds.

use std::rc::Rc;

use crate::ast::{self, ConfigEntryOperation, Expr, Node};
use crate::error::{ErrorKind, KclError, Result};
use crate::source::Span;
use crate::value::unify;
use crate::value::{Dict, Value};

use super::{Evaluator, Frame};

impl Evaluator {
    pub(crate) fn eval_config(
        &mut self,
        frame: &Rc<Frame>,
        config: &ast::ConfigExpr,
    ) -> Result<Value> {
        let scope = Frame::config_child(frame);
        let mut result = Value::dict(Dict::new());
        for item in &config.items {
            result = self.eval_config_entry(&scope, result, &item.node, item.span)?;
            // Later entries may read the keys set so far by name.
            match item.node.key.as_ref() {
                Some(k) => {
                    if let Some(key) = simple_key(&k.node)
                        && let Some(v) = result.as_dict().and_then(|d| d.get(key))
                    {
                        scope.set(key, v.clone());
                    }
                }
                // Keys an `if` entry set; a spread's keys are not names.
                None if matches!(item.node.value.node, Expr::ConfigIfEntry(_)) => {
                    if let Some(d) = result.as_dict() {
                        for (k, v) in d.iter() {
                            scope.set(k, v.clone());
                        }
                    }
                }
                None => {}
            }
        }
        Ok(result)
    }

    /// Adds one entry of a config literal to `target`.
    pub(crate) fn eval_config_entry(
        &mut self,
        frame: &Rc<Frame>,
        target: Value,
        entry: &ast::ConfigEntry,
        span: Span,
    ) -> Result<Value> {
        let Some(key) = &entry.key else {
            return self.eval_keyless_entry(frame, target, &entry.value, span);
        };
        let value = self.eval_expr(frame, &entry.value)?;
        let (path, index) = self.config_key_path(frame, key)?;
        let Some(path) = path else {
            return Ok(target);
        };
        self.insert_config_value(target, entry, path, index, value, span)
    }

    /// A dict comprehension's entry: its key is an expression.
    pub(crate) fn eval_comp_entry(
        &mut self,
        frame: &Rc<Frame>,
        target: Value,
        entry: &ast::ConfigEntry,
        span: Span,
    ) -> Result<Value> {
        let Some(key) = &entry.key else {
            return self.eval_keyless_entry(frame, target, &entry.value, span);
        };
        let key = self.eval_expr(frame, key)?;
        let value = self.eval_expr(frame, &entry.value)?;
        let key = self.key_string(&key);
        self.insert_config_value(target, entry, KeyPath::one(key), None, value, span)
    }

    fn insert_config_value(
        &mut self,
        target: Value,
        entry: &ast::ConfigEntry,
        path: KeyPath,
        index: Option<i64>,
        value: Value,
        span: Span,
    ) -> Result<Value> {
        self.note_config_position(&value, span);
        let (value, op, index) = match path.rest.split_last() {
            None => (value, entry.operation, index),
            Some((last, between)) => {
                // `a.b.c: v` is `a: {b: {c: v}}`, the operator applying to `c`.
                let mut nested = Dict::new();
                nested.entries.insert(last.clone(), value);
                nested.set_op(last, entry.operation);
                if let Some(i) = index {
                    nested.insert_indexes.insert(last.clone(), i);
                }
                let mut inner = Value::dict(nested);
                for k in between.iter().rev() {
                    let mut d = Dict::new();
                    d.insert(k.clone(), inner);
                    inner = Value::dict(d);
                }
                (inner, ConfigEntryOperation::Union, None)
            }
        };
        // The path's first name moves into the dict.
        unify::merge_entry(self, target, path.first, value, op, index, true)
            .map_err(|e| e.or_at(span))
    }

    fn eval_keyless_entry(
        &mut self,
        frame: &Rc<Frame>,
        target: Value,
        value: &Node<Expr>,
        span: Span,
    ) -> Result<Value> {
        match &value.node {
            Expr::ConfigIfEntry(entry) => {
                if self.eval_expr(frame, &entry.if_cond)?.is_truthy() {
                    let mut target = target;
                    for item in &entry.items {
                        target = self.eval_config_entry(frame, target, &item.node, item.span)?;
                    }
                    Ok(target)
                } else if let Some(orelse) = &entry.orelse {
                    match &orelse.node {
                        Expr::Config(c) => {
                            let mut target = target;
                            for item in &c.items {
                                target =
                                    self.eval_config_entry(frame, target, &item.node, item.span)?;
                            }
                            Ok(target)
                        }
                        _ => self.eval_keyless_entry(frame, target, orelse, span),
                    }
                } else {
                    Ok(target)
                }
            }
            Expr::Starred(s) => self.spread_into(frame, target, &s.value, span),
            _ => self.spread_into(frame, target, value, span),
        }
    }

    /// `**value`: each of its entries, with its own operator, as if
    /// written here.
    fn spread_into(
        &mut self,
        frame: &Rc<Frame>,
        target: Value,
        value: &Node<Expr>,
        span: Span,
    ) -> Result<Value> {
        let spread = self.eval_expr(frame, value)?;
        match &spread {
            Value::None | Value::Undefined => Ok(target),
            Value::Dict(_) => self
                .union_values(target, &spread, false)
                .map_err(|e| e.or_at(span)),
            Value::Schema(s) => self
                .union_values(target, &Value::dict(s.attrs.clone()), false)
                .map_err(|e| e.or_at(span)),
            other => Err(KclError::at(
                ErrorKind::EvaluationError,
                span,
                format!(
                    "only list, dict and schema object can be used with unpack operators * and **, got {}",
                    self.display(other)
                ),
            )),
        }
    }

    /// A config key as a path of names (`a.b.c`), with the index of
    /// `key[i] += …`.
    fn config_key_path(
        &mut self,
        frame: &Rc<Frame>,
        key: &Node<Expr>,
    ) -> Result<(Option<KeyPath>, Option<i64>)> {
        match &key.node {
            Expr::Identifier(id) => {
                let Some((first, rest)) = id.names.split_first() else {
                    return Ok((None, None));
                };
                // A key naming a loop variable or parameter is its value.
                let first = match frame.local_variable(&first.node) {
                    Some(v) => self.key_string(&v),
                    None => first.node.clone(),
                };
                let rest = rest.iter().map(|n| n.node.clone()).collect();
                Ok((Some(KeyPath { first, rest }), None))
            }
            Expr::StringLit(s) => Ok((Some(KeyPath::one(s.value.clone())), None)),
            Expr::Subscript(s)
                if s.index.is_some() && matches!(s.value.node, Expr::Identifier(_)) =>
            {
                let index = match &s.index {
                    Some(i) => self.eval_expr(frame, i)?,
                    None => Value::None,
                };
                let Value::Int(index) = index else {
                    let v = self.eval_expr(frame, key)?;
                    return Ok((Some(KeyPath::one(self.key_string(&v))), None));
                };
                let (path, _) = self.config_key_path(frame, &s.value)?;
                Ok((path, Some(index)))
            }
            _ => {
                let v = self.eval_expr(frame, key)?;
                Ok((Some(KeyPath::one(self.key_string(&v))), None))
            }
        }
    }

    /// A value used as a dict key (KCL's keys are strings).
    #[allow(clippy::unused_self)]
    pub(crate) fn key_string(&self, v: &Value) -> String {
        match v {
            Value::Str(s) => s.to_string(),
            other => self.display(other),
        }
    }
}

/// A config key as names: `a.b.c` is `a` then `[b, c]`. Nearly every key
/// is one name, which needs no list.
pub(crate) struct KeyPath {
    first: String,
    rest: Vec<String>,
}

impl KeyPath {
    fn one(first: String) -> KeyPath {
        KeyPath {
            first,
            rest: Vec::new(),
        }
    }
}

/// The name a key sets at the top of its config (`a` for `a: …` and
/// `a.b: …`).
fn simple_key(key: &Expr) -> Option<&str> {
    match key {
        Expr::Identifier(id) => id.names.first().map(|n| n.node.as_str()),
        Expr::StringLit(s) => Some(s.value.as_str()),
        _ => None,
    }
}
