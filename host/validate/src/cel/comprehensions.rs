//! Two-variable comprehensions (cel-go's `TwoVarComprehensions`, enabled
//! for CRD rules since Kubernetes 1.32): `all(i, v, p)`, `exists(i, v, p)`,
//! `existsOne(i, v, p)`, `transformList`, `transformMap` and
//! `transformMapEntry`, over a list's indices and values or a map's keys and
//! values.
//!
//! cel-rust's interpreter iterates with one variable, so each macro expands
//! to a one-variable comprehension over the target's keys (a list's
//! indices), with the target bound once to a hidden variable and the value
//! variable read as `target[key]`.

use std::collections::HashMap;

use cel::common::ast::{
    CallExpr, ComprehensionExpr, Expr, IdedExpr, ListExpr, LiteralValue, operators,
};
use cel::common::types::{
    CelBool, CelInt, CelList, CelMap, CelMapKey, CelString, CelUInt, LIST_TYPE, MAP_TYPE,
};
use cel::common::value::{CowVal, Val};
use cel::parser::{Macro, MacroExprHelper, ParseError};
use cel::{DeclarationError, Env, ExecutionError};

use super::library::error;

/// The hidden function a list's indices or a map's keys come from.
const KEYS: &str = "@keys";
/// Builds a map from a list of keys and a list of values.
const ZIP: &str = "@zipmap";
/// Merges a list of maps, refusing a key twice.
const MERGE: &str = "@mergemaps";
const RESULT: &str = "@result";

pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload(KEYS, "list.@keys()", LIST_TYPE, vec![], keys)?;
    env.add_member_overload(KEYS, "map.@keys()", MAP_TYPE, vec![], keys)?;
    env.add_overload(ZIP, "@zipmap(list,list)", vec![LIST_TYPE, LIST_TYPE], zip)?;
    env.add_overload(MERGE, "@mergemaps(list)", vec![LIST_TYPE], merge)?;
    for (name, kind) in [
        ("all", Kind::All),
        ("exists", Kind::Exists),
        ("existsOne", Kind::ExistsOne),
        ("exists_one", Kind::ExistsOne),
        ("transformList", Kind::List),
        ("transformMap", Kind::Map),
        ("transformMapEntry", Kind::MapEntry),
    ] {
        env.add_macro(Macro::receiver(name, 3, move |h, t, a| {
            expand(kind, h, t, a).map(Some)
        }))?;
        if matches!(kind, Kind::List | Kind::Map | Kind::MapEntry) {
            env.add_macro(Macro::receiver(name, 4, move |h, t, a| {
                expand(kind, h, t, a).map(Some)
            }))?;
        }
    }
    Ok(())
}

fn keys<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [target]: [CowVal; 1] = args
        .try_into()
        .map_err(|a: Vec<_>| ExecutionError::invalid_argument_count(1, a.len()))?;
    let iterable = target.as_iterable().ok_or_else(|| {
        ExecutionError::no_such_overload(KEYS, vec![target.get_type().name().to_owned()])
    })?;
    let mut items = iterable.iter();
    let mut out: Vec<Box<dyn Val + 'v>> = Vec::new();
    let is_list = target.get_type().name() == "list";
    let mut index = 0i64;
    while let Some(item) = items.next() {
        if is_list {
            out.push(Box::new(CelInt::from(index)));
            index += 1;
        } else {
            out.push(item.clone_as_boxed());
        }
    }
    Ok(CowVal::owned(CelList::from(out)))
}

fn elements<'b, 'v>(list: &'b (dyn Val + 'v)) -> Result<Vec<&'b (dyn Val + 'v)>, ExecutionError> {
    let iterable = list.as_iterable().ok_or_else(|| {
        ExecutionError::no_such_overload(ZIP, vec![list.get_type().name().to_owned()])
    })?;
    let mut items = iterable.iter();
    let mut out = Vec::new();
    while let Some(item) = items.next() {
        out.push(item);
    }
    Ok(out)
}

fn insert<'v>(
    map: &mut HashMap<CelMapKey<'v>, Box<dyn Val + 'v>>,
    key: Box<dyn Val + 'v>,
    value: Box<dyn Val + 'v>,
) -> Result<(), ExecutionError> {
    // Go's `%v` of the key.
    let shown = if let Some(s) = key.downcast_ref::<CelString>() {
        s.inner().to_owned()
    } else if let Some(i) = key.downcast_ref::<CelInt>() {
        i.inner().to_string()
    } else if let Some(u) = key.downcast_ref::<CelUInt>() {
        u.inner().to_string()
    } else if let Some(b) = key.downcast_ref::<CelBool>() {
        b.inner().to_string()
    } else {
        format!("{key:?}")
    };
    let key = CelMapKey::try_from(key)?;
    if map.contains_key(&key) {
        return Err(error(format!("insert failed: key {shown} already exists")));
    }
    map.insert(key, value);
    Ok(())
}

fn zip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [keys, values]: [CowVal; 2] = args
        .try_into()
        .map_err(|a: Vec<_>| ExecutionError::invalid_argument_count(2, a.len()))?;
    let mut map = HashMap::new();
    for (k, v) in elements(keys.as_ref())?
        .into_iter()
        .zip(elements(values.as_ref())?)
    {
        insert(&mut map, k.clone_as_boxed(), v.clone_as_boxed())?;
    }
    Ok(CowVal::owned(CelMap::from(map)))
}

fn merge<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [maps]: [CowVal; 1] = args
        .try_into()
        .map_err(|a: Vec<_>| ExecutionError::invalid_argument_count(1, a.len()))?;
    let mut merged = HashMap::new();
    for entry in elements(maps.as_ref())? {
        for key in elements(entry)? {
            let value = entry
                .as_indexer()
                .ok_or_else(|| {
                    ExecutionError::no_such_overload(
                        MERGE,
                        vec![entry.get_type().name().to_owned()],
                    )
                })?
                .get(key)?
                .into_owned();
            insert(&mut merged, key.clone_as_boxed(), value)?;
        }
    }
    Ok(CowVal::owned(CelMap::from(merged)))
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    All,
    Exists,
    ExistsOne,
    List,
    Map,
    MapEntry,
}

fn call(
    h: &mut MacroExprHelper<'_>,
    name: &str,
    target: Option<IdedExpr>,
    args: Vec<IdedExpr>,
) -> IdedExpr {
    h.next_expr(Expr::Call(CallExpr {
        func_name: name.to_owned(),
        target: target.map(Box::new),
        args,
    }))
}

fn ident(h: &mut MacroExprHelper<'_>, name: &str) -> IdedExpr {
    h.next_expr(Expr::Ident(name.to_owned()))
}

fn literal(h: &mut MacroExprHelper<'_>, value: LiteralValue) -> IdedExpr {
    h.next_expr(Expr::Literal(value))
}

fn variable(h: &MacroExprHelper<'_>, e: IdedExpr) -> Result<String, ParseError> {
    match e.expr {
        Expr::Ident(name) => Ok(name),
        _ => Err(h.new_error(e.id, "argument is not an identifier")),
    }
}

/// `e` with the variable `name` read as `target[key]`, except where a
/// comprehension inside binds `name` again.
fn substitute(
    h: &mut MacroExprHelper<'_>,
    e: IdedExpr,
    name: &str,
    target: &str,
    key: &str,
) -> IdedExpr {
    let id = e.id;
    let expr = match e.expr {
        Expr::Ident(n) if n == name => {
            let t = ident(h, target);
            let k = ident(h, key);
            return call(h, operators::INDEX, None, vec![t, k]);
        }
        Expr::Call(c) => Expr::Call(CallExpr {
            func_name: c.func_name,
            target: c
                .target
                .map(|t| Box::new(substitute(h, *t, name, target, key))),
            args: c
                .args
                .into_iter()
                .map(|a| substitute(h, a, name, target, key))
                .collect(),
        }),
        Expr::Select(mut s) => {
            s.operand = Box::new(substitute(h, *s.operand, name, target, key));
            Expr::Select(s)
        }
        Expr::List(l) => Expr::List(ListExpr::new_with_optionals(
            l.elements
                .into_iter()
                .map(|a| substitute(h, a, name, target, key))
                .collect(),
            l.optional_indices,
        )),
        Expr::Map(mut m) => {
            for entry in &mut m.entries {
                if let cel::common::ast::EntryExpr::MapEntry(entry) = &mut entry.expr {
                    entry.key = substitute(h, std::mem::take(&mut entry.key), name, target, key);
                    entry.value =
                        substitute(h, std::mem::take(&mut entry.value), name, target, key);
                }
            }
            Expr::Map(m)
        }
        Expr::Comprehension(mut c) => {
            c.iter_range = substitute(h, c.iter_range, name, target, key);
            c.accu_init = substitute(h, c.accu_init, name, target, key);
            if c.iter_var != name && c.iter_var2.as_deref() != Some(name) && c.accu_var != name {
                c.loop_cond = substitute(h, c.loop_cond, name, target, key);
                c.loop_step = substitute(h, c.loop_step, name, target, key);
                c.result = substitute(h, c.result, name, target, key);
            }
            Expr::Comprehension(c)
        }
        other => other,
    };
    IdedExpr { id, expr }
}

/// A one-variable comprehension over `range` with `var`, accumulating from
/// `init` with `step` while `cond` holds, giving `result`.
fn fold(
    h: &mut MacroExprHelper<'_>,
    range: IdedExpr,
    var: String,
    init: IdedExpr,
    cond: IdedExpr,
    step: IdedExpr,
    result: IdedExpr,
) -> IdedExpr {
    h.next_expr(Expr::Comprehension(Box::new(ComprehensionExpr {
        iter_range: range,
        iter_var: var,
        iter_var2: None,
        accu_var: RESULT.to_owned(),
        accu_init: init,
        loop_cond: cond,
        loop_step: step,
        result,
    })))
}

/// `keys.map(var, value)`, or with `filter` `keys.filter(var, filter)`
/// first; `keys` built afresh by `range`.
fn mapped(
    h: &mut MacroExprHelper<'_>,
    range: IdedExpr,
    var: &str,
    filter: Option<IdedExpr>,
    value: IdedExpr,
) -> IdedExpr {
    let init = h.next_expr(Expr::List(ListExpr::new(Vec::new())));
    let truth = literal(h, LiteralValue::Boolean(true.into()));
    let accu = ident(h, RESULT);
    let single = h.next_expr(Expr::List(ListExpr::new(vec![value])));
    let appended = call(h, operators::ADD, None, vec![accu, single]);
    let step = match filter {
        Some(f) => {
            let keep = ident(h, RESULT);
            call(h, operators::CONDITIONAL, None, vec![f, appended, keep])
        }
        None => appended,
    };
    let result = ident(h, RESULT);
    fold(h, range, var.to_owned(), init, truth, step, result)
}

fn expand(
    kind: Kind,
    h: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<IdedExpr, ParseError> {
    let Some(target_expr) = target.take() else {
        return Err(h.new_error(0, "a two-variable comprehension needs a target"));
    };
    let mut taken = std::mem::take(args).into_iter();
    let (Some(first), Some(second)) = (taken.next(), taken.next()) else {
        return Err(h.new_error(
            target_expr.id,
            "a two-variable comprehension needs two variables",
        ));
    };
    let key_var = variable(h, first)?;
    let value_var = variable(h, second)?;
    let marker = h.next_expr(Expr::Unspecified);
    let hidden = format!("@target{}", marker.id);
    let bodies: Vec<IdedExpr> = taken
        .map(|body| substitute(h, body, &value_var, &hidden, &key_var))
        .collect();
    let range = |h: &mut MacroExprHelper<'_>| {
        let t = ident(h, &hidden);
        call(h, KEYS, Some(t), Vec::new())
    };
    let mut bodies = bodies.into_iter();
    let body = bodies.next().unwrap_or_default();
    let inner = match kind {
        Kind::All | Kind::Exists => {
            let all = matches!(kind, Kind::All);
            let init = literal(h, LiteralValue::Boolean(all.into()));
            let accu = ident(h, RESULT);
            let tested = if all {
                accu
            } else {
                call(h, operators::LOGICAL_NOT, None, vec![accu])
            };
            let cond = call(h, operators::NOT_STRICTLY_FALSE, None, vec![tested]);
            let accu = ident(h, RESULT);
            let op = if all {
                operators::LOGICAL_AND
            } else {
                operators::LOGICAL_OR
            };
            let step = call(h, op, None, vec![accu, body]);
            let result = ident(h, RESULT);
            let r = range(h);
            fold(h, r, key_var, init, cond, step, result)
        }
        Kind::ExistsOne => {
            let init = literal(h, LiteralValue::Int(CelInt::from(0)));
            let truth = literal(h, LiteralValue::Boolean(true.into()));
            let accu = ident(h, RESULT);
            let one = literal(h, LiteralValue::Int(CelInt::from(1)));
            let plus = call(h, operators::ADD, None, vec![accu, one]);
            let keep = ident(h, RESULT);
            let step = call(h, operators::CONDITIONAL, None, vec![body, plus, keep]);
            let accu = ident(h, RESULT);
            let one = literal(h, LiteralValue::Int(CelInt::from(1)));
            let result = call(h, operators::EQUALS, None, vec![accu, one]);
            let r = range(h);
            fold(h, r, key_var, init, truth, step, result)
        }
        Kind::List | Kind::Map | Kind::MapEntry => {
            // With four arguments the first body is the filter.
            let (filter, value) = match bodies.next() {
                Some(value) => (Some(body), value),
                None => (None, body),
            };
            match kind {
                Kind::List => {
                    let r = range(h);
                    mapped(h, r, &key_var, filter, value)
                }
                Kind::Map => {
                    // The keys kept, and their values, in one order.
                    let kept_keys = {
                        let r = range(h);
                        let k = ident(h, &key_var);
                        mapped(h, r, &key_var, filter.clone(), k)
                    };
                    let r = range(h);
                    let values = mapped(h, r, &key_var, filter, value);
                    call(h, ZIP, None, vec![kept_keys, values])
                }
                _ => {
                    let r = range(h);
                    let entries = mapped(h, r, &key_var, filter, value);
                    call(h, MERGE, None, vec![entries])
                }
            }
        }
    };
    // `cel.bind(hidden, target, inner)`: the target is evaluated once.
    let empty = h.next_expr(Expr::List(ListExpr::new(Vec::new())));
    let never = literal(h, LiteralValue::Boolean(false.into()));
    let step = ident(h, &hidden);
    Ok(h.next_expr(Expr::Comprehension(Box::new(ComprehensionExpr {
        iter_range: empty,
        iter_var: "#unused".to_owned(),
        iter_var2: None,
        accu_var: hidden,
        accu_init: target_expr,
        loop_cond: never,
        loop_step: step,
        result: inner,
    }))))
}
