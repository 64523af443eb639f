//! What a run outputs: the main package's expression values and variables
//! merged as KCL merges them, and `-S` path selectors.

use crate::ast::ConfigEntryOperation;
use crate::error::{ErrorKind, KclError, Result};
use crate::value::unify;
use crate::value::{Dict, Value};

use super::Evaluator;

/// The key KCL merges every output value under before it plans them.
const SCALAR_KEY: &str = "";

impl Evaluator {
    /// The value `kcl run` prints: expression statements' values, then
    /// each exported variable, unified in that order (hidden names only
    /// with `show_hidden`; the planner drops functions and `Undefined`).
    pub(crate) fn output(
        &mut self,
        scalars: &[Value],
        globals: &[(String, Value)],
        show_hidden: bool,
    ) -> Result<Value> {
        let exported: Vec<&(String, Value)> = globals
            .iter()
            .filter(|(name, v)| (show_hidden || !name.starts_with('_')) && !is_definition(v))
            .collect();
        if scalars.is_empty() && exported.is_empty() {
            return Ok(Value::dict(Dict::new()));
        }
        let mut out = Value::dict(Dict::new());
        for scalar in scalars {
            out = unify::merge_entry(
                self,
                out,
                SCALAR_KEY,
                scalar.clone(),
                ConfigEntryOperation::Union,
                None,
                true,
            )?;
        }
        for (name, value) in exported {
            let mut one = Dict::new();
            one.insert(name.clone(), value.clone());
            out = unify::merge_entry(
                self,
                out,
                SCALAR_KEY,
                Value::dict(one),
                ConfigEntryOperation::Union,
                None,
                true,
            )?;
        }
        Ok(out
            .as_dict()
            .and_then(|d| d.get(SCALAR_KEY))
            .cloned()
            .unwrap_or(Value::dict(Dict::new())))
    }
}

/// Schema types are package variables but not output.
fn is_definition(v: &Value) -> bool {
    matches!(v, Value::Function(_))
}

/// Applies `-S` selectors to the output: `name.path` prints the value
/// there; `pkg:name.path` keeps the path as nested keys, and may end in
/// `*`, `{a,b}` or `[0,1]`.
pub fn select_paths(output: &Value, selectors: &[String]) -> Result<Value> {
    if selectors.is_empty() {
        return Ok(output.clone());
    }
    let mut keep_structure = false;
    let mut result = Dict::new();
    let mut selected = Vec::new();
    for selector in selectors {
        let path = match selector.split_once(':') {
            Some((_, path)) => {
                keep_structure = true;
                path
            }
            None => selector.as_str(),
        };
        let parts = split_path(path);
        let Some((first, rest)) = parts.split_first() else {
            continue;
        };
        let root = output
            .as_dict()
            .and_then(|d| d.get(first))
            .cloned()
            .ok_or_else(|| not_found(selector))?;
        if keep_structure {
            let picked = pick_structured(&root, rest).ok_or_else(|| not_found(selector))?;
            result.insert(first.clone(), picked);
        } else {
            let mut value = root;
            for part in rest {
                value = value
                    .as_dict()
                    .and_then(|d| d.get(part))
                    .cloned()
                    .ok_or_else(|| not_found(selector))?;
            }
            selected.push(value);
        }
    }
    if keep_structure || selected.is_empty() {
        return Ok(Value::dict(result));
    }
    // Several selectors print one document per value, a selected list's
    // items each one, as KCL prints them.
    match <[Value; 1]>::try_from(selected) {
        Ok([single]) => Ok(single),
        Err(selected) => Ok(Value::list(
            selected
                .into_iter()
                .flat_map(|value| match value {
                    Value::List(items) => items.iter().cloned().collect(),
                    other => vec![other],
                })
                .collect(),
        )),
    }
}

fn split_path(path: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut depth = 0;
    for c in path.chars() {
        match c {
            '{' | '[' => {
                depth += 1;
                current.push(c);
            }
            '}' | ']' => {
                depth -= 1;
                current.push(c);
            }
            '.' if depth == 0 => parts.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    parts.push(current);
    parts
}

fn pick_structured(value: &Value, rest: &[String]) -> Option<Value> {
    let Some((part, rest)) = rest.split_first() else {
        return Some(value.clone());
    };
    if part == "*" {
        return Some(value.clone());
    }
    if let Some(inner) = part.strip_prefix('[').and_then(|p| p.strip_suffix(']')) {
        // One index only: KCL finds nothing for `[0,1]`.
        let i: usize = inner.trim().parse().ok()?;
        return pick_structured(value.as_list()?.get(i)?, rest);
    }
    let dict = value.as_dict()?;
    let keys: Vec<&str> = match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
        Some(inner) => inner.split(',').map(str::trim).collect(),
        None => vec![part.as_str()],
    };
    let mut out = Dict::new();
    for k in keys {
        out.insert(k, pick_structured(dict.get(k)?, rest)?);
    }
    Some(Value::dict(out))
}

fn not_found(selector: &str) -> KclError {
    KclError::new(
        ErrorKind::EvaluationError,
        format!("invalid path select operand {selector}, value not found"),
    )
}
