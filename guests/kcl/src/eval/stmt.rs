//! Statements: assignments (with types, to paths), augmented assignments,
//! `assert`, `if`, expression statements, schema and rule definitions.

use std::rc::Rc;

use crate::ast::{self, AugOp, BinOp, MemberOrIndex, Node, Stmt};
use crate::error::{ErrorKind, KclError, Result};
use crate::value::{Function, FunctionKind, Value};

use super::{Evaluator, Frame, MAIN_PKG, SchemaDef, SchemaType};

impl Evaluator {
    pub(crate) fn exec_stmts(&mut self, frame: &Rc<Frame>, stmts: &[Node<Stmt>]) -> Result<()> {
        for stmt in stmts {
            self.exec_stmt(frame, stmt)?;
        }
        Ok(())
    }

    pub(crate) fn exec_stmt(&mut self, frame: &Rc<Frame>, stmt: &Node<Stmt>) -> Result<()> {
        self.step(stmt.span)?;
        self.last_node = stmt.span;
        if frame.is_package {
            self.last_stmt = stmt.span;
        }
        match &stmt.node {
            Stmt::TypeAlias(_) | Stmt::Import(_) => Ok(()),
            Stmt::Expr(e) => {
                let top_level = frame.is_package && &*frame.pkgpath == MAIN_PKG;
                for expr in &e.exprs {
                    let value = self.eval_expr(frame, expr)?;
                    // A call's value is not output (functions may return
                    // nothing); the last schema expression replaces the
                    // one before (as KCL keeps them).
                    if top_level && !matches!(expr.node, ast::Expr::Call(_)) {
                        self.add_scalar(value, matches!(expr.node, ast::Expr::Schema(_)));
                    }
                }
                Ok(())
            }
            Stmt::Unification(u) => {
                let name = u.target.node.name();
                let value = self.eval_schema_expr(frame, &u.value.node, u.value.span)?;
                if self.in_schema_body(frame) {
                    let value = match frame.get_local(&name) {
                        Some(existing) if !existing.is_none_or_undefined() => {
                            self.union_values(existing, &value, false)?
                        }
                        _ => value,
                    };
                    self.schema_attr_assign(frame, &name, value, stmt.span)
                } else {
                    let value = match self.lookup_local_only(frame, &name) {
                        Some(existing) if !existing.is_none_or_undefined() => {
                            self.union_values(existing, &value, false)?
                        }
                        _ => value,
                    };
                    self.assign_name(frame, &name, value, u.target.span)
                }
            }
            Stmt::Assign(a) => {
                let mut value = self.eval_expr(frame, &a.value)?;
                if let Some(ty) = &a.ty {
                    value = self
                        .convert_to_type(frame, value, &ty.node)
                        .map_err(|e| e.or_at(a.value.span))?;
                }
                for target in &a.targets {
                    self.assign_target(frame, &target.node, value.clone(), target.span)?;
                }
                Ok(())
            }
            Stmt::AugAssign(a) => {
                let right = self.eval_expr(frame, &a.value)?;
                let current = self.load_target(frame, &a.target.node)?;
                let op = a.op.bin_op().unwrap_or(BinOp::Add);
                let value = if a.op == AugOp::Assign {
                    right
                } else {
                    self.binary_values(current, op, right)
                        .map_err(|e| e.or_at(stmt.span))?
                };
                self.assign_target(frame, &a.target.node, value, a.target.span)
            }
            Stmt::Assert(a) => {
                if let Some(cond) = &a.if_cond
                    && !self.eval_expr(frame, cond)?.is_truthy()
                {
                    return Ok(());
                }
                if self.eval_expr(frame, &a.test)?.is_truthy() {
                    return Ok(());
                }
                let msg = match &a.msg {
                    Some(m) => {
                        let v = self.eval_expr(frame, m)?;
                        self.display(&v)
                    }
                    None => String::new(),
                };
                Err(KclError::at(ErrorKind::AssertionError, stmt.span, msg))
            }
            Stmt::If(i) => {
                if self.eval_expr(frame, &i.cond)?.is_truthy() {
                    self.exec_stmts(frame, &i.body)
                } else {
                    self.exec_stmts(frame, &i.orelse)
                }
            }
            Stmt::SchemaAttr(attr) => self.exec_schema_attr(frame, attr, stmt.span),
            Stmt::Schema(s) => {
                let def = Rc::new(s.clone());
                let parent = match &s.parent_name {
                    Some(p) => Some(self.schema_type_named(frame, &p.node, p.span)?),
                    None => None,
                };
                let mut mixins = Vec::new();
                for m in &s.mixins {
                    mixins.push(self.schema_type_named(frame, &m.node, m.span)?);
                }
                let ty = SchemaType {
                    name: s.name.node.clone(),
                    pkgpath: frame.pkgpath.to_string(),
                    def: SchemaDef::Schema(def),
                    parent,
                    mixins,
                    frame: frame.root(),
                    declared: std::cell::OnceCell::new(),
                    body: std::cell::OnceCell::new(),
                };
                let value = schema_type_value(ty);
                self.assign_name(frame, &s.name.node, value, s.name.span)
            }
            Stmt::Rule(r) => {
                let mut mixins = Vec::new();
                for p in &r.parent_rules {
                    mixins.push(self.schema_type_named(frame, &p.node, p.span)?);
                }
                let ty = SchemaType {
                    name: r.name.node.clone(),
                    pkgpath: frame.pkgpath.to_string(),
                    def: SchemaDef::Rule(Rc::new(r.clone())),
                    parent: None,
                    mixins,
                    frame: frame.root(),
                    declared: std::cell::OnceCell::new(),
                    body: std::cell::OnceCell::new(),
                };
                let value = schema_type_value(ty);
                self.assign_name(frame, &r.name.node, value, r.name.span)
            }
        }
    }

    /// A variable of this frame only (no backtracking, no parents).
    fn lookup_local_only(&self, frame: &Rc<Frame>, name: &str) -> Option<Value> {
        frame.get_local(name)
    }

    fn schema_type_named(
        &mut self,
        frame: &Rc<Frame>,
        id: &ast::Identifier,
        span: crate::source::Span,
    ) -> Result<Rc<SchemaType>> {
        let value = self.load_identifier(frame, id, span)?;
        match value {
            Value::Function(f) => match &f.kind {
                FunctionKind::Schema(ty) => Ok(ty.clone()),
                _ => Err(inherit_error(span, "function")),
            },
            other => Err(inherit_error(span, &other.type_name())),
        }
    }

    /// The current value of an assignment target (`a`, `a.b[0]`).
    fn load_target(&mut self, frame: &Rc<Frame>, target: &ast::Target) -> Result<Value> {
        let mut value = self
            .lookup(frame, &target.name.node)?
            .unwrap_or(Value::Undefined);
        for path in &target.paths {
            value = match path {
                MemberOrIndex::Member(m) if value.is_none_or_undefined() => {
                    return Err(KclError::at(
                        ErrorKind::EvaluationError,
                        m.span,
                        format!(
                            "invalid value '{}' to load attribute '{}'",
                            value.type_name(),
                            m.node
                        ),
                    ));
                }
                MemberOrIndex::Member(m) => self.select_attr(&value, &m.node, m.span)?,
                MemberOrIndex::Index(i) => {
                    let index = self.eval_expr(frame, i)?;
                    self.subscript_value(&value, &index, i.span)?
                }
            };
        }
        Ok(value)
    }

    pub(crate) fn assign_target(
        &mut self,
        frame: &Rc<Frame>,
        target: &ast::Target,
        value: Value,
        span: crate::source::Span,
    ) -> Result<()> {
        let name = &target.name.node;
        if target.paths.is_empty() {
            if self.in_schema_body(frame) {
                return self.schema_attr_assign(frame, name, value, span);
            }
            return self.assign_name(frame, name, value, span);
        }
        let mut keys = Vec::new();
        for path in &target.paths {
            keys.push(match path {
                MemberOrIndex::Member(m) => Value::str(&m.node),
                MemberOrIndex::Index(i) => self.eval_expr(frame, i)?,
            });
        }
        let base = self.lookup(frame, name)?.unwrap_or(Value::Undefined);
        let updated = self.set_path(base, &keys, value, span)?;
        if self.in_schema_body(frame) {
            return self.schema_attr_assign(frame, name, updated, span);
        }
        frame.set(name, updated);
        Ok(())
    }

    /// `base.k1[k2]… = value`, copying the containers on the way.
    fn set_path(
        &mut self,
        base: Value,
        keys: &[Value],
        value: Value,
        span: crate::source::Span,
    ) -> Result<Value> {
        let Some((key, rest)) = keys.split_first() else {
            return Ok(value);
        };
        match (base, key) {
            (Value::Dict(mut d), Value::Str(k)) => {
                let inner = d.get(k).cloned().unwrap_or(Value::Undefined);
                let new = self.set_path(inner, rest, value, span)?;
                Rc::make_mut(&mut d).insert(k.to_string(), new);
                Ok(Value::Dict(d))
            }
            (Value::Schema(mut s), Value::Str(k)) => {
                let inner = s.attrs.get(k).cloned().unwrap_or(Value::Undefined);
                let new = self.set_path(inner, rest, value, span)?;
                let instance = Rc::make_mut(&mut s);
                instance.attrs.insert(k.to_string(), new);
                // The assigned attribute counts as configured: the
                // instance is evaluated again with it (KCL's
                // `dict_set_value`).
                if !instance.config_keys.iter().any(|c| **c == **k) {
                    instance.config_keys.push(k.to_string());
                }
                let attrs = instance.attrs.clone();
                let keys = instance.config_keys.clone();
                crate::value::unify::SchemaResolver::resolve_schema(self, &s, attrs, keys)
            }
            (Value::List(mut l), Value::Int(i)) => {
                let len = l.len() as i64;
                let idx = if *i < 0 { i + len } else { *i };
                let slot = usize::try_from(idx)
                    .ok()
                    .and_then(|u| Rc::make_mut(&mut l).get_mut(u))
                    .ok_or_else(|| {
                        KclError::at(
                            ErrorKind::EvaluationError,
                            span,
                            format!("index out of bounds: the len is {len} but the index is {i}"),
                        )
                    })?;
                let inner = std::mem::replace(slot, Value::Undefined);
                let new = self.set_path(inner, rest, value, span)?;
                if let Some(slot) = usize::try_from(idx)
                    .ok()
                    .and_then(|u| Rc::make_mut(&mut l).get_mut(u))
                {
                    *slot = new;
                }
                Ok(Value::List(l))
            }
            (base, key) => Err(KclError::at(
                ErrorKind::EvaluationError,
                span,
                format!(
                    "failed to update the dict. An iterable of key-value pairs was expected, but got {}. Check if the syntax for updating the dictionary with the attribute '{}' is correct",
                    base.type_name(),
                    self.display(key)
                ),
            )),
        }
    }
}

fn schema_type_value(ty: SchemaType) -> Value {
    Value::Function(Rc::new(Function {
        name: ty.name.clone(),
        kind: FunctionKind::Schema(Rc::new(ty)),
    }))
}

fn inherit_error(span: crate::source::Span, got: &str) -> KclError {
    KclError::at(
        ErrorKind::IllegalInheritError,
        span,
        format!("invalid schema inherit object type, expect schema, got '{got}'"),
    )
}
