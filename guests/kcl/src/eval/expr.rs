//! Expressions: names, operators, selectors, subscripts, comprehensions,
//! quantifiers, string interpolation, literals.

use std::rc::Rc;

use crate::ast::{self, BinOp, Expr, NameConstant, Node, NumberLitValue, QuantOperation};
use crate::error::{ErrorKind, KclError, Result};
use crate::source::Span;
use crate::value::unify::{self, UnionOptions};
use crate::value::{Dict, Function, FunctionKind, UnitValue, Value};

use super::lambda::local_name;
use super::{Closure, Evaluator, Frame, Import};

fn eval_error(span: Span, message: impl Into<String>) -> KclError {
    KclError::at(ErrorKind::EvaluationError, span, message)
}

/// The multiplier of a unit suffix (`Ki` is 1024, `k` 1000).
pub(crate) fn unit_multiplier(suffix: ast::NumberBinarySuffix) -> f64 {
    use ast::NumberBinarySuffix::*;
    match suffix {
        N => 1e-9,
        U => 1e-6,
        M => 1e-3,
        K | KUpper => 1e3,
        MUpper => 1e6,
        G => 1e9,
        T => 1e12,
        P => 1e15,
        Ki => 1024.0,
        Mi => 1024.0 * 1024.0,
        Gi => 1024.0 * 1024.0 * 1024.0,
        Ti => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        Pi => 1024.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0,
    }
}

/// The items a `for` or quantifier walks: (key or index, value).
fn iteration_items(value: &Value, span: Span) -> Result<Vec<(Value, Value)>> {
    Ok(match value {
        Value::List(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (Value::Int(i as i64), v.clone()))
            .collect(),
        Value::Dict(_) | Value::Schema(_) => value
            .as_dict()
            .map(|d| d.iter().map(|(k, v)| (Value::str(k), v.clone())).collect())
            .unwrap_or_default(),
        Value::Str(s) => s
            .chars()
            .enumerate()
            .map(|(i, c)| (Value::Int(i as i64), Value::str(c.to_string())))
            .collect(),
        Value::None | Value::Undefined => Vec::new(),
        other => {
            return Err(eval_error(
                span,
                format!("'{}' object is not iterable", other.type_name()),
            ));
        }
    })
}

impl Evaluator {
    pub(crate) fn eval_expr(&mut self, frame: &Rc<Frame>, expr: &Node<Expr>) -> Result<Value> {
        self.enter(expr.span)?;
        self.last_node = expr.span;
        let result = self.eval_expr_inner(frame, expr);
        self.leave();
        result
    }

    fn eval_expr_inner(&mut self, frame: &Rc<Frame>, expr: &Node<Expr>) -> Result<Value> {
        let span = expr.span;
        match &expr.node {
            Expr::Identifier(id) => self.load_identifier(frame, id, span),
            Expr::Unary(u) => {
                let v = self.eval_expr(frame, &u.operand)?;
                v.unary(u.op).map_err(|e| e.or_at(span))
            }
            Expr::Binary(b) => self.eval_binary(frame, b, span),
            Expr::If(i) => {
                if self.eval_expr(frame, &i.cond)?.is_truthy() {
                    self.eval_expr(frame, &i.body)
                } else {
                    self.eval_expr(frame, &i.orelse)
                }
            }
            Expr::Selector(s) => {
                let value = self.eval_selector_base(frame, &s.value)?;
                self.select_attrs(value, s)
            }
            Expr::Call(c) => self.eval_call(frame, c, span),
            Expr::Paren(p) => self.eval_expr(frame, &p.expr),
            Expr::Quant(q) => self.eval_quant(frame, q, span),
            Expr::List(l) => {
                let mut items = Vec::with_capacity(l.elts.len());
                self.eval_list_items(frame, &l.elts, &mut items)?;
                Ok(Value::list(items))
            }
            Expr::ListIfItem(_) | Expr::Starred(_) => {
                let mut items = Vec::new();
                self.eval_list_items(frame, std::slice::from_ref(expr), &mut items)?;
                Ok(Value::list(items))
            }
            Expr::ListComp(c) => {
                let mut items = Vec::new();
                let scope = Frame::loop_child(frame);
                self.eval_comp(&scope, &c.generators, &mut |ev, f| {
                    let v = ev.eval_expr(f, &c.elt)?;
                    items.push(v);
                    Ok(())
                })?;
                Ok(Value::list(items))
            }
            Expr::DictComp(c) => {
                let mut result = Value::dict(Dict::new());
                let scope = Frame::loop_child(frame);
                self.eval_comp(&scope, &c.generators, &mut |ev, f| {
                    let current = std::mem::replace(&mut result, Value::Undefined);
                    result = ev.eval_comp_entry(f, current, &c.entry, span)?;
                    Ok(())
                })?;
                Ok(result)
            }
            Expr::ConfigIfEntry(_) => {
                let entry = ast::ConfigEntry {
                    key: None,
                    value: Box::new(expr.clone()),
                    operation: ast::ConfigEntryOperation::Union,
                };
                self.eval_config_entry(frame, Value::dict(Dict::new()), &entry, span)
            }
            Expr::Schema(s) => self.eval_schema_expr(frame, s, span),
            Expr::Config(c) => self.eval_config(frame, c),
            Expr::Lambda(l) => {
                let lambda = self.lambda_def(l);
                Ok(Value::Function(Rc::new(Function {
                    name: "lambda".into(),
                    kind: FunctionKind::Lambda(Rc::new(Closure {
                        lambda,
                        frame: frame.clone(),
                    })),
                })))
            }
            Expr::Subscript(s) => self.eval_subscript(frame, s, span),
            Expr::Compare(c) => {
                let mut left = self.eval_expr(frame, &c.left)?;
                for (op, right) in c.ops.iter().zip(c.comparators.iter()) {
                    let right = self.eval_expr(frame, right)?;
                    if !left.compare(*op, &right).map_err(|e| e.or_at(span))? {
                        return Ok(Value::Bool(false));
                    }
                    left = right;
                }
                Ok(Value::Bool(true))
            }
            Expr::NumberLit(n) => Ok(match (n.value, n.binary_suffix) {
                (NumberLitValue::Int(i), Some(suffix)) => Value::Unit(UnitValue {
                    value: i as f64 * unit_multiplier(suffix),
                    raw: i,
                    suffix,
                }),
                (NumberLitValue::Int(i), None) => Value::Int(i),
                (NumberLitValue::Float(f), _) => Value::Float(f),
            }),
            Expr::StringLit(s) => Ok(Value::str(&s.value)),
            Expr::NameConstantLit(c) => Ok(match c.value {
                NameConstant::True => Value::Bool(true),
                NameConstant::False => Value::Bool(false),
                NameConstant::None => Value::None,
                NameConstant::Undefined => Value::Undefined,
            }),
            Expr::JoinedString(j) => {
                let mut out = String::new();
                for part in &j.values {
                    match &part.node {
                        Expr::StringLit(s) => out.push_str(&s.value),
                        Expr::FormattedValue(f) => {
                            let text = self.eval_formatted(frame, f, part.span)?;
                            out.push_str(&text);
                        }
                        _ => {
                            let v = self.eval_expr(frame, part)?;
                            out.push_str(&self.display(&v));
                        }
                    }
                }
                Ok(Value::str(out))
            }
            Expr::FormattedValue(f) => Ok(Value::str(self.eval_formatted(frame, f, span)?)),
            Expr::Missing => Err(KclError::at(
                ErrorKind::InvalidSyntax,
                span,
                "expected an expression",
            )),
        }
    }

    fn eval_formatted(
        &mut self,
        frame: &Rc<Frame>,
        f: &ast::FormattedValue,
        span: Span,
    ) -> Result<String> {
        let v = self.eval_expr(frame, &f.value)?;
        match f.format_spec.as_deref().map(str::trim) {
            None | Some("") => Ok(self.display(&v)),
            Some(spec) => self.format_with_spec(&v, spec).map_err(|e| e.or_at(span)),
        }
    }

    /// The base of a selector: an import's name reads the module.
    fn eval_selector_base(&mut self, frame: &Rc<Frame>, expr: &Node<Expr>) -> Result<Value> {
        self.eval_expr(frame, expr)
    }

    /// A (dotted) name: a variable and attributes of it, or an imported
    /// module's member, or a builtin.
    pub(crate) fn load_identifier(
        &mut self,
        frame: &Rc<Frame>,
        id: &ast::Identifier,
        span: Span,
    ) -> Result<Value> {
        let Some((first, rest)) = id.names.split_first() else {
            return Ok(Value::Undefined);
        };
        let mut value = match self.lookup(frame, &first.node)? {
            Some(v) => v,
            None => {
                // Code from another package than the frame's (a parent's
                // or mixin's body) sees that package's names.
                let code_pkg = self.code_pkg.clone();
                let pkg = if !frame.is_package
                    && *code_pkg != *frame.pkgpath
                    && self.program.packages.contains_key(&*code_pkg)
                {
                    let package = self.package(&code_pkg)?;
                    if let Some(v) = self.lookup(&package, &first.node)? {
                        let mut value = v;
                        for name in rest {
                            value = self.select_attr(&value, &name.node, name.span)?;
                        }
                        return Ok(value);
                    }
                    code_pkg
                } else {
                    frame.pkgpath.clone()
                };
                // `type Name = pkg.Schema`: the alias names the schema.
                let alias = self
                    .aliases
                    .get(&*pkg)
                    .and_then(|a| a.get(&first.node))
                    .cloned();
                if let Some(ast::Type::Named(target)) = alias {
                    let mut value = self.load_identifier(frame, &target, span)?;
                    for name in rest {
                        value = self.select_attr(&value, &name.node, name.span)?;
                    }
                    return Ok(value);
                }
                let import = self
                    .imports
                    .get(&*pkg)
                    .and_then(|m| m.get(&first.node))
                    .cloned();
                match import {
                    Some(import) => {
                        let Some((member, rest)) = rest.split_first() else {
                            return Err(eval_error(
                                span,
                                format!("module '{}' is not a value", first.node),
                            ));
                        };
                        let mut value = self.module_member(&import, &member.node, member.span)?;
                        for name in rest {
                            value = self.select_attr(&value, &name.node, name.span)?;
                        }
                        return Ok(value);
                    }
                    None => match crate::builtins::lookup(&first.node) {
                        Some(f) => Value::Function(Rc::new(Function {
                            name: first.node.clone(),
                            kind: FunctionKind::Builtin(f),
                        })),
                        None => {
                            return Err(KclError::at(
                                ErrorKind::NameError,
                                first.span,
                                format!("name '{}' is not defined", first.node),
                            ));
                        }
                    },
                }
            }
        };
        for name in rest {
            value = self.select_attr(&value, &name.node, name.span)?;
        }
        Ok(value)
    }

    pub(crate) fn module_member(
        &mut self,
        import: &Import,
        member: &str,
        span: Span,
    ) -> Result<Value> {
        match import {
            Import::System(module) => crate::modules::member(module, member).ok_or_else(|| {
                KclError::at(
                    ErrorKind::AttributeError,
                    span,
                    format!("module '{module}' has no attribute '{member}'"),
                )
            }),
            Import::Package(pkg) => {
                let frame = self.package(pkg).map_err(|e| e.or_at(span))?;
                let alias = self.aliases.get(pkg).and_then(|a| a.get(member)).cloned();
                match self.lookup(&frame, member)? {
                    Some(v) => Ok(v),
                    None if matches!(alias, Some(ast::Type::Named(_))) => match alias {
                        Some(ast::Type::Named(target)) => {
                            let code_pkg =
                                std::mem::replace(&mut self.code_pkg, frame.pkgpath.clone());
                            let result = self.load_identifier(&frame, &target, span);
                            self.code_pkg = code_pkg;
                            result
                        }
                        _ => Ok(Value::Undefined),
                    },
                    None => Err(KclError::at(
                        ErrorKind::AttributeError,
                        span,
                        format!("module '{pkg}' has no attribute '{member}'"),
                    )),
                }
            }
        }
    }

    /// `value?.a.b`: `?.` guards its first name alone, and by the value's
    /// truth, not only against None: `""?.a` is None, `"x"?.a` an error,
    /// and `""?.a.b` reads `b` of None.
    pub(crate) fn select_attrs(&mut self, value: Value, s: &ast::SelectorExpr) -> Result<Value> {
        let mut names = s.attr.node.names.iter();
        let mut value = value;
        if s.has_question && !value.is_truthy() {
            names.next();
            value = Value::None;
        }
        for name in names {
            value = self.select_attr(&value, &name.node, name.span)?;
        }
        Ok(value)
    }

    /// `value.name`: a dict key or schema attribute, else a method.
    pub(crate) fn select_attr(&mut self, value: &Value, name: &str, span: Span) -> Result<Value> {
        match value {
            Value::Dict(d) => {
                if let Some(v) = d.get(name) {
                    return Ok(v.clone());
                }
            }
            Value::Schema(s) => {
                if let Some(v) = s.attrs.get(name) {
                    return Ok(v.clone());
                }
            }
            _ => {}
        }
        if let Value::Function(f) = value
            && matches!(f.kind, FunctionKind::Schema(_))
            && name == "instances"
        {
            return Ok(Value::Function(Rc::new(Function {
                name: name.to_string(),
                kind: FunctionKind::Method {
                    receiver: value.clone(),
                    method: instances_outside_evaluator,
                },
            })));
        }
        if let Some(method) = crate::builtins::method(value, name) {
            return Ok(Value::Function(Rc::new(Function {
                name: name.to_string(),
                kind: FunctionKind::Method {
                    receiver: value.clone(),
                    method,
                },
            })));
        }
        let message = match value {
            Value::Dict(_) | Value::Schema(_) => return Ok(Value::Undefined),
            Value::Str(_) => format!("str object attr '{name}' not found"),
            Value::Function(_) => format!("schema object attr '{name}' not found"),
            other => format!(
                "invalid value '{}' to load attribute '{name}'",
                other.type_name()
            ),
        };
        Err(eval_error(span, message))
    }

    fn eval_binary(&mut self, frame: &Rc<Frame>, b: &ast::BinaryExpr, span: Span) -> Result<Value> {
        match b.op {
            BinOp::And => {
                let left = self.eval_expr(frame, &b.left)?;
                if !left.is_truthy() {
                    return Ok(left);
                }
                self.eval_expr(frame, &b.right)
            }
            BinOp::Or => {
                let left = self.eval_expr(frame, &b.left)?;
                if left.is_truthy() {
                    return Ok(left);
                }
                self.eval_expr(frame, &b.right)
            }
            BinOp::As => {
                let left = self.eval_expr(frame, &b.left)?;
                let ty = match &b.right.node {
                    Expr::Identifier(id) => ast::Type::Named(id.clone()),
                    _ => return Err(eval_error(span, "invalid type after 'as'")),
                };
                let ty = self.normalize_named_type(frame, ty);
                if self.value_matches_type(frame, &left, &ty)? {
                    Ok(left)
                } else {
                    Err(self.type_mismatch(frame, &left, &ty)?.or_at(span))
                }
            }
            op => {
                let left = self.eval_expr(frame, &b.left)?;
                let right = self.eval_expr(frame, &b.right)?;
                self.binary_values(left, op, right)
                    .map_err(|e| e.or_at(span))
            }
        }
    }

    /// A binary operator on two values; `|` on containers unifies them.
    pub(crate) fn binary_values(&mut self, left: Value, op: BinOp, right: Value) -> Result<Value> {
        let container = |v: &Value| matches!(v, Value::List(_) | Value::Dict(_) | Value::Schema(_));
        if op == BinOp::BitOr && container(&left) && container(&right) {
            return self.union_values(left, &right, false);
        }
        if self.strict_range_check {
            crate::value::range::check(&left, op, &right)?;
        }
        left.binary(op, &right)
    }

    /// `left | right` on configs (the later scalar wins).
    pub(crate) fn union_values(
        &mut self,
        left: Value,
        right: &Value,
        idempotent: bool,
    ) -> Result<Value> {
        unify::union(
            self,
            left,
            right,
            true,
            UnionOptions {
                idempotent_check: idempotent,
            },
        )
    }

    fn eval_list_items(
        &mut self,
        frame: &Rc<Frame>,
        elts: &[Node<Expr>],
        items: &mut Vec<Value>,
    ) -> Result<()> {
        for elt in elts {
            match &elt.node {
                Expr::Starred(s) => {
                    let v = self.eval_expr(frame, &s.value)?;
                    match &v {
                        Value::List(l) => items.extend(l.iter().cloned()),
                        Value::Dict(_) | Value::Schema(_) => {
                            if let Some(d) = v.as_dict() {
                                items.extend(d.entries.keys().map(Value::str));
                            }
                        }
                        Value::None | Value::Undefined => {}
                        other => {
                            return Err(eval_error(
                                elt.span,
                                format!("'{}' object is not iterable", other.type_name()),
                            ));
                        }
                    }
                }
                Expr::ListIfItem(item) => {
                    if self.eval_expr(frame, &item.if_cond)?.is_truthy() {
                        self.eval_list_items(frame, &item.exprs, items)?;
                    } else if let Some(orelse) = &item.orelse {
                        match &orelse.node {
                            Expr::List(l) => self.eval_list_items(frame, &l.elts, items)?,
                            _ => {
                                self.eval_list_items(frame, std::slice::from_ref(orelse), items)?
                            }
                        }
                    }
                }
                _ => items.push(self.eval_expr(frame, elt)?),
            }
        }
        Ok(())
    }

    /// Runs `body` once per combination of the `for` clauses that passes
    /// their `if`s, with the loop variables set in `scope`.
    pub(crate) fn eval_comp(
        &mut self,
        scope: &Rc<Frame>,
        generators: &[Node<ast::CompClause>],
        body: &mut dyn FnMut(&mut Evaluator, &Rc<Frame>) -> Result<()>,
    ) -> Result<()> {
        let Some((first, rest)) = generators.split_first() else {
            return body(self, scope);
        };
        let iter = self.eval_expr(scope, &first.node.iter)?;
        let items = iteration_items(&iter, first.node.iter.span)?;
        let is_map = matches!(iter, Value::Dict(_) | Value::Schema(_));
        'items: for (key, value) in items {
            self.step(first.span)?;
            self.bind_loop_targets(scope, &first.node.targets, key, value, is_map, first.span)?;
            for cond in &first.node.ifs {
                if !self.eval_expr(scope, cond)?.is_truthy() {
                    continue 'items;
                }
            }
            self.eval_comp(scope, rest, body)?;
        }
        Ok(())
    }

    fn bind_loop_targets(
        &mut self,
        scope: &Rc<Frame>,
        targets: &[Node<ast::Identifier>],
        key: Value,
        value: Value,
        is_map: bool,
        span: Span,
    ) -> Result<()> {
        match targets {
            [one] => scope.set(&local_name(&one.node), if is_map { key } else { value }),
            [a, b] => {
                scope.set(&local_name(&a.node), key);
                scope.set(&local_name(&b.node), value);
            }
            _ => {
                return Err(eval_error(
                    span,
                    format!(
                        "the number of loop variables is {}, which can only be 1 or 2",
                        targets.len()
                    ),
                ));
            }
        }
        Ok(())
    }

    fn eval_quant(&mut self, frame: &Rc<Frame>, q: &ast::QuantExpr, span: Span) -> Result<Value> {
        let target = self.eval_expr(frame, &q.target)?;
        let items = iteration_items(&target, q.target.span)?;
        let is_map = matches!(target, Value::Dict(_) | Value::Schema(_));
        let scope = Frame::loop_child(frame);
        let mut mapped = Vec::new();
        let mut kept_list = Vec::new();
        let mut kept_dict = Dict::new();
        for (key, value) in items {
            self.step(span)?;
            self.bind_loop_targets(
                &scope,
                &q.variables,
                key.clone(),
                value.clone(),
                is_map,
                span,
            )?;
            if let Some(cond) = &q.if_cond
                && !self.eval_expr(&scope, cond)?.is_truthy()
            {
                continue;
            }
            let result = self.eval_expr(&scope, &q.test)?;
            match q.op {
                QuantOperation::All => {
                    if !result.is_truthy() {
                        return Ok(Value::Bool(false));
                    }
                }
                QuantOperation::Any => {
                    if result.is_truthy() {
                        return Ok(Value::Bool(true));
                    }
                }
                QuantOperation::Map => mapped.push(result),
                QuantOperation::Filter => {
                    if result.is_truthy() {
                        match (&key, is_map) {
                            (Value::Str(k), true) => kept_dict.insert(k.to_string(), value),
                            _ => kept_list.push(value),
                        }
                    }
                }
            }
        }
        Ok(match q.op {
            QuantOperation::All => Value::Bool(true),
            QuantOperation::Any => Value::Bool(false),
            QuantOperation::Map => Value::list(mapped),
            QuantOperation::Filter => match target {
                Value::Dict(_) | Value::Schema(_) => Value::dict(kept_dict),
                Value::Str(_) => Value::str(
                    kept_list
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<String>(),
                ),
                _ => Value::list(kept_list),
            },
        })
    }

    fn eval_subscript(
        &mut self,
        frame: &Rc<Frame>,
        s: &ast::Subscript,
        span: Span,
    ) -> Result<Value> {
        let value = self.eval_expr(frame, &s.value)?;
        // `?[` guards by the value's truth (`""?[0]` is None) once the
        // index or bounds are evaluated; an index out of range still fails.
        let guarded = s.has_question && !value.is_truthy();
        if let Some(index) = &s.index {
            let index = self.eval_expr(frame, index)?;
            if guarded {
                return Ok(Value::None);
            }
            return self.subscript_value(&value, &index, span);
        }
        let bound = |e: &Option<Box<Node<Expr>>>, ev: &mut Evaluator| -> Result<Option<i64>> {
            match e {
                None => Ok(None),
                Some(e) => match ev.eval_expr(frame, e)? {
                    Value::Int(i) => Ok(Some(i)),
                    Value::None | Value::Undefined => Ok(None),
                    other => Err(eval_error(
                        e.span,
                        format!(
                            "slice indices must be integers or None, got {}",
                            other.type_name()
                        ),
                    )),
                },
            }
        };
        let lower = bound(&s.lower, self)?;
        let upper = bound(&s.upper, self)?;
        let step = bound(&s.step, self)?.unwrap_or(1);
        if guarded {
            return Ok(Value::None);
        }
        if step == 0 {
            return Err(eval_error(span, "slice step cannot be zero"));
        }
        match &value {
            Value::List(l) => {
                let picked = slice_indices(l.len(), lower, upper, step);
                Ok(Value::list(
                    picked
                        .into_iter()
                        .filter_map(|i| l.get(i).cloned())
                        .collect(),
                ))
            }
            Value::Str(st) => {
                let chars: Vec<char> = st.chars().collect();
                let picked = slice_indices(chars.len(), lower, upper, step);
                Ok(Value::str(
                    picked
                        .into_iter()
                        .filter_map(|i| chars.get(i))
                        .collect::<String>(),
                ))
            }
            other => Err(eval_error(
                span,
                format!("invalid slice object {}", other.type_name()),
            )),
        }
    }

    pub(crate) fn subscript_value(
        &mut self,
        value: &Value,
        index: &Value,
        span: Span,
    ) -> Result<Value> {
        match (value, index) {
            (Value::List(l), Value::Int(i)) => {
                let len = l.len() as i64;
                let idx = if *i < 0 { i + len } else { *i };
                match usize::try_from(idx).ok().and_then(|u| l.get(u)) {
                    Some(v) => Ok(v.clone()),
                    // KCL's messages: its own for an index past the end,
                    // Rust's bounds panic for one before the start.
                    None if *i >= 0 => {
                        Err(eval_error(span, format!("list index out of range: {i}")))
                    }
                    None => Err(eval_error(
                        span,
                        format!("index out of bounds: the len is {len} but the index is {i}"),
                    )),
                }
            }
            (Value::Str(s), Value::Int(i)) => {
                let chars: Vec<char> = s.chars().collect();
                let len = chars.len() as i64;
                let idx = if *i < 0 { i + len } else { *i };
                match usize::try_from(idx).ok().and_then(|u| chars.get(u)) {
                    Some(c) => Ok(Value::str(c.to_string())),
                    None => Err(eval_error(span, format!("string index out of range: {i}"))),
                }
            }
            (Value::Dict(_) | Value::Schema(_), Value::Str(k)) => Ok(value
                .as_dict()
                .and_then(|d| d.get(k))
                .cloned()
                .unwrap_or(Value::Undefined)),
            (Value::Dict(_), _) => Ok(Value::Undefined),
            (other, index) => Err(eval_error(
                span,
                format!(
                    "'{}' object is not subscriptable with '{}'",
                    other.type_name(),
                    index.type_name()
                ),
            )),
        }
    }

    /// The shared copy of a lambda's definition (the tree lives as long as
    /// the program; one copy per lambda expression).
    fn lambda_def(&mut self, l: &ast::LambdaExpr) -> Rc<ast::LambdaExpr> {
        let key = l as *const ast::LambdaExpr as usize;
        self.lambdas
            .entry(key)
            .or_insert_with(|| Rc::new(l.clone()))
            .clone()
    }
}

/// `Schema.instances` called other than by the evaluator's calls (which
/// answer it themselves, see `call_value`).
fn instances_outside_evaluator(
    interp: &mut dyn crate::builtins::Interp,
    args: &[Value],
    _kwargs: &[(String, Value)],
) -> Result<Value> {
    let name = match args.first() {
        Some(Value::Function(f)) => match &f.kind {
            FunctionKind::Schema(ty) => ty.full_name(),
            _ => String::new(),
        },
        _ => String::new(),
    };
    Ok(Value::list(interp.instances(&name)))
}

/// Python's slice indices for a sequence of `len` items.
fn slice_indices(len: usize, lower: Option<i64>, upper: Option<i64>, step: i64) -> Vec<usize> {
    let len = len as i64;
    let clamp = |v: i64, lo: i64, hi: i64| v.max(lo).min(hi);
    let norm = |v: i64| if v < 0 { v + len } else { v };
    let mut out = Vec::new();
    if step > 0 {
        let start = lower.map_or(0, |v| clamp(norm(v), 0, len));
        let stop = upper.map_or(len, |v| clamp(norm(v), 0, len));
        let mut i = start;
        while i < stop {
            out.push(i as usize);
            i = i.saturating_add(step);
        }
    } else {
        let start = lower.map_or(len - 1, |v| clamp(norm(v), -1, len - 1));
        let stop = upper.map_or(-1, |v| clamp(norm(v), -1, len - 1));
        let mut i = start;
        while i > stop {
            out.push(i as usize);
            i = i.saturating_add(step);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::slice_indices;

    #[test]
    fn slices_follow_python() {
        type Case<'a> = (Option<i64>, Option<i64>, i64, &'a [usize]);
        let cases: &[Case] = &[
            (None, None, 1, &[0, 1, 2, 3, 4]),
            (None, None, -1, &[4, 3, 2, 1, 0]),
            (Some(1), Some(-1), 1, &[1, 2, 3]),
            (Some(-2), None, 1, &[3, 4]),
            (None, None, 2, &[0, 2, 4]),
            (Some(3), Some(0), -1, &[3, 2, 1]),
            (Some(10), None, 1, &[]),
        ];
        for (lo, hi, step, want) in cases {
            assert_eq!(
                slice_indices(5, *lo, *hi, *step),
                *want,
                "{lo:?}:{hi:?}:{step}"
            );
        }
    }
}
