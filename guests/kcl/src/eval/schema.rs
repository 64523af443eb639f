//! Schemas: making an instance runs the bodies of its parents, itself and
//! its mixins in one lazy frame whose variables are the attributes, merges
//! the config into each attribute as its statement runs, adds the config's
//! other keys (relaxed schemas, index signatures), checks required
//! attributes and runs the check blocks.

use crate::collections::HashMap;
use std::borrow::Cow;
use std::rc::Rc;

use crate::ast::{self, AugOp, ConfigEntryOperation, Stmt};
use crate::error::{ErrorKind, KclError, Result};
use crate::source::Span;
use crate::value::unify::{self, UnionOptions};
use crate::value::{Dict, FunctionKind, SchemaValue, Value};

use super::scope::{Body, LazyBody, StmtRef};
use super::{Evaluator, Frame, SchemaDef, SchemaType};

/// The schema being made: its body frame, its config and its attributes'
/// types.
pub(crate) struct SchemaCtx {
    frame: Rc<Frame>,
    /// Where the instance is made: errors about its config point there.
    span: Span,
    config: Rc<Dict>,
    attrs: Rc<DeclaredAttrs>,
}

/// The attributes a schema's instances declare over its chain of schemas
/// (see [`chain`]): their names in the order the bodies declare them, and
/// each one's type from the last schema that declares it.
#[derive(Debug)]
pub(crate) struct DeclaredAttrs {
    names: Vec<String>,
    types: HashMap<String, AttrInfo>,
}

#[derive(Debug)]
struct AttrInfo {
    ty: ast::Type,
    /// The frame the type is resolved in (the declaring schema's package).
    frame: Rc<Frame>,
}

impl DeclaredAttrs {
    fn of(schemas: &[Rc<SchemaType>]) -> DeclaredAttrs {
        let mut names = Vec::new();
        let mut types = HashMap::default();
        for s in schemas {
            if let SchemaDef::Schema(def) = &s.def {
                let mut declared = Vec::new();
                declared_attrs(&def.body, &mut declared);
                for (name, ty) in declared {
                    names.push(name.clone());
                    types.insert(
                        name.clone(),
                        AttrInfo {
                            ty: ty.clone(),
                            frame: s.frame.clone(),
                        },
                    );
                }
            }
        }
        DeclaredAttrs { names, types }
    }
}

/// The schemas whose bodies make an instance, in the order they run:
/// parents first, then the schema, then its mixins.
/// The statements of a schema's body and of its parents' and mixins'
/// (`chain` order), as one lazy body.
fn body_stmts(schemas: &[Rc<SchemaType>]) -> Vec<StmtRef> {
    let mut stmts = Vec::new();
    for s in schemas {
        if let SchemaDef::Schema(def) = &s.def {
            stmts.extend((0..def.body.len()).map(|index| StmtRef {
                body: Body::Schema(def.clone()),
                index,
                pkg: s.frame.pkgpath.clone(),
            }));
        }
    }
    stmts
}

fn chain(ty: &Rc<SchemaType>, out: &mut Vec<Rc<SchemaType>>) {
    if out.len() > 64 {
        return;
    }
    if let Some(parent) = &ty.parent {
        chain(parent, out);
    }
    out.push(ty.clone());
    for m in &ty.mixins {
        chain(m, out);
    }
}

impl Evaluator {
    pub(crate) fn in_schema_body(&self, frame: &Rc<Frame>) -> bool {
        self.schema_stack
            .last()
            .is_some_and(|ctx| Rc::ptr_eq(&ctx.frame, frame))
    }

    /// `Name(args) {config}`.
    pub(crate) fn eval_schema_expr(
        &mut self,
        frame: &Rc<Frame>,
        expr: &ast::SchemaExpr,
        span: Span,
    ) -> Result<Value> {
        self.schema_expr_depth += 1;
        let creating = std::mem::replace(&mut self.creating_pkg, frame.pkgpath.clone());
        let result = self.eval_schema_expr_inner(frame, expr, span);
        self.creating_pkg = creating;
        self.schema_expr_depth -= 1;
        result
    }

    fn eval_schema_expr_inner(
        &mut self,
        frame: &Rc<Frame>,
        expr: &ast::SchemaExpr,
        span: Span,
    ) -> Result<Value> {
        let target = self.load_identifier(frame, &expr.name.node, expr.name.span)?;
        let config = self.eval_expr(frame, &expr.config)?;
        match &target {
            Value::Function(f) => match &f.kind {
                FunctionKind::Schema(ty) => {
                    let ty = ty.clone();
                    // The config literal's dict was made for this instance:
                    // taken, not copied, when nothing else holds it.
                    let config_dict = match config {
                        Value::Dict(d) => Rc::try_unwrap(d).unwrap_or_else(|d| d.as_ref().clone()),
                        Value::Schema(s) => s.attrs.clone(),
                        _ => Dict::default(),
                    };
                    let (args, kwargs) = self.eval_arguments(frame, &expr.args, &expr.kwargs)?;
                    self.instantiate(&ty, config_dict, args, kwargs, span)
                }
                _ => Err(not_a_schema(span, &expr.name.node.name())),
            },
            Value::Dict(_) | Value::Schema(_) => self.union_values(target.clone(), &config, false),
            _ => Err(not_a_schema(span, &expr.name.node.name())),
        }
    }

    /// Makes an instance of a schema from a config.
    pub(crate) fn instantiate(
        &mut self,
        ty: &Rc<SchemaType>,
        config: Dict,
        args: Vec<Value>,
        kwargs: Vec<(String, Value)>,
        span: Span,
    ) -> Result<Value> {
        self.enter(span)?;
        let result = self.instantiate_inner(ty, config, args, kwargs, span);
        self.leave();
        result.map_err(|e| super::locate(e, span))
    }

    fn instantiate_inner(
        &mut self,
        ty: &Rc<SchemaType>,
        config: Dict,
        args: Vec<Value>,
        kwargs: Vec<(String, Value)>,
        span: Span,
    ) -> Result<Value> {
        let mut schemas = Vec::new();
        chain(ty, &mut schemas);
        let params = Frame::child(&ty.frame);
        for s in &schemas {
            match &s.def {
                SchemaDef::Schema(def) => {
                    if let Some(p) = &def.args {
                        self.bind_parameters(
                            &params,
                            &s.frame,
                            Some(p),
                            super::lambda::Arguments {
                                args: args.clone(),
                                kwargs: kwargs.clone(),
                                missing_undefined: true,
                            },
                            &s.name,
                            span,
                        )?;
                    }
                }
                SchemaDef::Rule(def) => {
                    if let Some(p) = &def.args {
                        self.bind_parameters(
                            &params,
                            &s.frame,
                            Some(p),
                            super::lambda::Arguments {
                                args: args.clone(),
                                kwargs: kwargs.clone(),
                                missing_undefined: true,
                            },
                            &s.name,
                            span,
                        )?;
                    }
                }
            }
        }
        let lazy_body = ty
            .body
            .get_or_init(|| Rc::new(LazyBody::new(body_stmts(&schemas))))
            .clone();
        let body = Frame::lazy_child(&params, lazy_body);
        let attrs = ty
            .declared
            .get_or_init(|| Rc::new(DeclaredAttrs::of(&schemas)))
            .clone();
        {
            let mut vars = body.vars.borrow_mut();
            for name in &attrs.names {
                if !vars.contains_key(name) {
                    vars.insert(name.clone(), Value::Undefined);
                }
            }
        }
        let config = Rc::new(config);
        self.schema_stack.push(SchemaCtx {
            frame: body.clone(),
            span,
            config: config.clone(),
            attrs,
        });
        let result = self.run_schema(ty, &schemas, &body, &config, span);
        self.schema_stack.pop();
        let instance = result?;
        let value = Value::Schema(Rc::new(SchemaValue {
            name: ty.name.clone(),
            pkgpath: ty.pkgpath.clone(),
            attrs: instance,
            config_keys: config.entries.keys().cloned().collect(),
            args,
            kwargs,
            ty: Some(ty.clone()),
        }));
        if let Value::Schema(instance) = &value
            && span != Span::default()
        {
            self.instance_spans
                .insert(Rc::as_ptr(instance) as usize, span);
        }
        let mut owner = Some(ty.clone());
        while let Some(t) = owner {
            let made = (value.clone(), self.creating_pkg.clone());
            // A main-package schema's full name is its name: looked up
            // without making the name again for every instance.
            let full_name = if t.pkgpath.is_empty() || t.pkgpath == super::MAIN_PKG {
                Cow::Borrowed(t.name.as_str())
            } else {
                Cow::Owned(t.full_name())
            };
            match self.instances.get_mut(&*full_name) {
                Some(list) => list.push(made),
                None => {
                    self.instances.insert(full_name.into_owned(), vec![made]);
                }
            }
            owner = t.parent.clone();
        }
        Ok(value)
    }

    /// Remembers the config entry a dict (or the dicts of a list) was
    /// written in.
    pub(crate) fn note_config_position(&mut self, value: &Value, span: Span) {
        match value {
            Value::Dict(d) => {
                self.config_spans.insert(Rc::as_ptr(d) as usize, span);
            }
            Value::List(items) => {
                for item in items.iter() {
                    if let Value::Dict(d) = item {
                        self.config_spans.insert(Rc::as_ptr(d) as usize, span);
                    }
                }
            }
            _ => {}
        }
    }

    /// Where a config entry wrote this dict, if one did.
    pub(crate) fn config_position(&self, d: &Rc<Dict>) -> Span {
        self.config_spans
            .get(&(Rc::as_ptr(d) as usize))
            .copied()
            .unwrap_or_default()
    }

    /// `Schema.instances(full_pkg=False)`: the instances of a schema and
    /// of its children made so far by the main package's code (by any
    /// package's with `full_pkg`).
    pub(crate) fn schema_instances(&self, full_name: &str, full_pkg: bool) -> Vec<Value> {
        self.instances
            .get(full_name)
            .map(|list| {
                list.iter()
                    .filter(|(_, pkg)| full_pkg || &**pkg == super::MAIN_PKG)
                    .map(|(v, _)| v.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn run_schema(
        &mut self,
        ty: &Rc<SchemaType>,
        schemas: &[Rc<SchemaType>],
        body: &Rc<Frame>,
        config: &Rc<Dict>,
        span: Span,
    ) -> Result<Dict> {
        self.run_lazy_body(body)?;
        // Each schema of the chain checks its own decorators (a deprecated
        // parent refuses its children too).
        for s in schemas {
            if let SchemaDef::Schema(def) = &s.def {
                for decorator in &def.decorators {
                    self.apply_decorator(&s.frame, &decorator.node, &s.name, true, span)?;
                }
            }
        }
        let index_signature = schemas.iter().rev().find_map(|s| match &s.def {
            SchemaDef::Schema(def) => def.index_signature.as_ref().map(|i| (s.clone(), i.clone())),
            SchemaDef::Rule(_) => None,
        });
        // The config's keys no statement set: relaxed attributes.
        let mut relaxed = Vec::new();
        for (key, value) in config.iter() {
            if body.vars.borrow().contains_key(key) {
                continue;
            }
            match &index_signature {
                Some((owner, sig)) => {
                    let mut v = value.clone();
                    if let Some(default) = &sig.node.value
                        && config.op(key) != ConfigEntryOperation::Override
                    {
                        // The default may read the key by the signature's name.
                        let scope = Frame::child(body);
                        if let Some(k) = &sig.node.key_name {
                            scope.set(&k.node, Value::str(key));
                        }
                        let d = self.eval_expr(&scope, default)?;
                        // The merged instance was made where the default's
                        // instance was, else where the value's was (KCL's
                        // union keeps its left schema's origin).
                        let made_at = self.made_at(&d).or_else(|| self.made_at(&v));
                        v = self.union_values(d, &v, false)?;
                        if let (Value::Schema(merged), Some(at)) = (&v, made_at) {
                            self.instance_spans.insert(Rc::as_ptr(merged) as usize, at);
                        }
                    }
                    let v = self
                        .convert_to_type(&owner.frame, v, &sig.node.value_ty.node)
                        .map_err(|e| e.or_at(sig.span))?;
                    body.set(key, v);
                    relaxed.push(key.clone());
                }
                // A rule's config is what its checks read.
                None if is_rule(ty) => {
                    body.set(key, value.clone());
                }
                None => {
                    body.set(key, value.clone());
                    relaxed.push(key.clone());
                }
            }
        }
        // Required attributes are checked once the outermost instance is
        // complete (a nested one may still get its values from its
        // parent's config), through every schema inside it.
        if self.schema_stack.len() <= 1 && self.schema_expr_depth <= 1 {
            let vars: Vec<Value> = body.vars.borrow().values().cloned().collect();
            self.check_required(ty, &body.vars.borrow(), span)?;
            for v in &vars {
                self.check_required_nested(v, span)?;
            }
        }
        let key_name = index_signature
            .as_ref()
            .and_then(|(_, sig)| sig.node.key_name.as_ref().map(|k| k.node.clone()));
        match key_name {
            Some(key_name) if !relaxed.is_empty() => {
                for key in &relaxed {
                    body.set(&key_name, Value::str(key));
                    self.run_checks(schemas, body, span)?;
                }
                body.vars.borrow_mut().shift_remove(&key_name);
            }
            _ => self.run_checks(schemas, body, span)?,
        }
        let vars = body.vars.borrow();
        let mut attrs: Dict = vars.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        // The instance keeps its config's operators, which apply when it
        // is unified into another value (`+=` appends there too).
        for (k, op) in config.ops() {
            attrs.set_op(k, op);
        }
        for (k, i) in &config.insert_indexes {
            if attrs.entries.contains_key(k) {
                attrs.insert_indexes.insert(k.clone(), *i);
            }
        }
        Ok(attrs)
    }

    fn check_required(
        &self,
        ty: &Rc<SchemaType>,
        attrs: &crate::collections::IndexMap<String, Value>,
        span: Span,
    ) -> Result<()> {
        let mut schemas = Vec::new();
        chain(ty, &mut schemas);
        for s in &schemas {
            let SchemaDef::Schema(def) = &s.def else {
                continue;
            };
            for stmt in &def.body {
                let Stmt::SchemaAttr(a) = &stmt.node else {
                    continue;
                };
                let name = &a.name.node;
                if a.is_optional {
                    continue;
                }
                if attrs.get(name).is_none_or(Value::is_none_or_undefined) {
                    return Err(super::error_at(
                        ErrorKind::EvaluationError,
                        span,
                        format!(
                            "attribute '{name}' of {} is required and can't be None or Undefined",
                            ty.name
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Where an instance was made, if `v` is one whose origin is known.
    fn made_at(&self, v: &Value) -> Option<Span> {
        match v {
            Value::Schema(s) => self.instance_spans.get(&(Rc::as_ptr(s) as usize)).copied(),
            _ => None,
        }
    }

    /// The required-attribute check of every schema instance inside a
    /// value.
    fn check_required_nested(&self, v: &Value, span: Span) -> Result<()> {
        match v {
            Value::Schema(s) => {
                if let Some(ty) = &s.ty {
                    let made_at = self
                        .instance_spans
                        .get(&(Rc::as_ptr(s) as usize))
                        .copied()
                        .unwrap_or(span);
                    self.check_required(ty, &s.attrs.entries, made_at)?;
                }
                for inner in s.attrs.entries.values() {
                    self.check_required_nested(inner, span)?;
                }
            }
            Value::Dict(d) => {
                for inner in d.entries.values() {
                    self.check_required_nested(inner, span)?;
                }
            }
            Value::List(items) => {
                for inner in items.iter() {
                    self.check_required_nested(inner, span)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn run_checks(
        &mut self,
        schemas: &[Rc<SchemaType>],
        body: &Rc<Frame>,
        span: Span,
    ) -> Result<()> {
        for s in schemas {
            let checks = match &s.def {
                SchemaDef::Schema(def) => &def.checks,
                SchemaDef::Rule(def) => &def.checks,
            };
            let code_pkg = std::mem::replace(&mut self.code_pkg, s.frame.pkgpath.clone());
            let result = self.run_schema_checks(checks, body, span);
            self.code_pkg = code_pkg;
            result?;
        }
        Ok(())
    }

    fn run_schema_checks(
        &mut self,
        checks: &[ast::Node<ast::CheckExpr>],
        body: &Rc<Frame>,
        span: Span,
    ) -> Result<()> {
        for check in checks {
            if let Some(cond) = &check.node.if_cond
                && !self.eval_expr(body, cond)?.is_truthy()
            {
                continue;
            }
            if self.eval_expr(body, &check.node.test)?.is_truthy() {
                continue;
            }
            let msg = match &check.node.msg {
                Some(m) => {
                    let v = self.eval_expr(body, m)?;
                    self.display(&v)
                }
                None => String::new(),
            };
            let label = if msg.is_empty() {
                "Check failed on the condition".to_string()
            } else {
                format!("Check failed on the condition: {msg}")
            };
            let check_line = Span::new(
                check.span.file,
                check.span.end_line,
                0,
                check.span.end_line,
                0,
            );
            return Err(super::error_at(
                ErrorKind::SchemaCheckFailure,
                span,
                "Instance check failed",
            )
            .with_label(check_line, label));
        }
        Ok(())
    }

    /// `name: T = default` in a schema body, merged with the config's value
    /// for `name` as KCL does: the config's `=` replaces the default, `:`
    /// unifies with it.
    pub(crate) fn exec_schema_attr(
        &mut self,
        frame: &Rc<Frame>,
        attr: &ast::SchemaAttr,
        span: Span,
    ) -> Result<()> {
        let name = attr.name.node.as_str();
        let config = self
            .schema_stack
            .last()
            .map(|c| c.config.clone())
            .unwrap_or_default();
        let config_entry = config.get(name).cloned();
        let instance_span = self.schema_stack.last().map_or(span, |c| c.span);
        for decorator in &attr.decorators {
            self.apply_decorator(
                frame,
                &decorator.node,
                name,
                config_entry.is_some(),
                instance_span,
            )?;
        }
        let override_only = config_entry.is_some()
            && config.op(name) == ConfigEntryOperation::Override
            && !config.insert_indexes.contains_key(name);
        if !override_only {
            let default = match &attr.value {
                Some(v) => self.eval_expr(frame, v)?,
                // An attribute typed with a single literal defaults to it.
                None => match &attr.ty.node {
                    ast::Type::Literal(l) => literal_value(l),
                    _ => Value::Undefined,
                },
            };
            let op = match (&attr.op, &attr.value, &attr.ty.node) {
                (None, None, ast::Type::Literal(_)) => Some(AugOp::Assign),
                (op, _, _) => *op,
            };
            match op {
                Some(AugOp::BitOr) => {
                    let current = frame.get_local(name).unwrap_or(Value::Undefined);
                    let merged = self.binary_values(current, ast::BinOp::BitOr, default)?;
                    let merged = self.attr_typed(name, merged).map_err(|e| e.or_at(span))?;
                    frame.set(name, merged);
                }
                Some(_) => {
                    let v = self.attr_typed(name, default).map_err(|e| e.or_at(span))?;
                    frame.set(name, v);
                }
                None => {}
            }
        }
        if let Some(value) = config_entry {
            self.merge_config_value(frame, &config, name, value, span)?;
        }
        Ok(())
    }

    /// Merges the config's value for `name` into the attribute.
    fn merge_config_value(
        &mut self,
        frame: &Rc<Frame>,
        config: &Dict,
        name: &str,
        value: Value,
        span: Span,
    ) -> Result<()> {
        let index = config.insert_indexes.get(name).copied();
        let current = frame.get_local(name).filter(|v| !v.is_undefined());
        // Without an index, what the one-key union below makes of the
        // value is known: the value itself where the attribute has none
        // yet or the config overrides it, the two unified where both hold
        // one and the config unifies; no dicts need be built for those.
        let op = config.op(name);
        let v = match (current, index, op) {
            (None, None, _) | (Some(_), None, ConfigEntryOperation::Override) => value,
            (Some(current), None, ConfigEntryOperation::Union) => {
                unify::union(self, current, &value, false, UnionOptions::default())
                    .map_err(|e| e.or_at(span))?
            }
            (current, index, op) => {
                self.merge_config_value_in_dicts(name, current, value, op, index, span)?
            }
        };
        let v = self.attr_typed(name, v).map_err(|e| e.or_at(span))?;
        frame.set(name, v);
        Ok(())
    }

    /// `name`'s value after the config's entry `name <op>[index] value`
    /// is unified into a dict holding the attribute's `current` value.
    fn merge_config_value_in_dicts(
        &mut self,
        name: &str,
        current: Option<Value>,
        value: Value,
        op: ConfigEntryOperation,
        index: Option<i64>,
        span: Span,
    ) -> Result<Value> {
        let mut delta = Dict::new();
        delta.entries.insert(name.to_string(), value);
        delta.set_op(name, op);
        if let Some(i) = index {
            delta.insert_indexes.insert(name.to_string(), i);
        }
        let mut holder = Dict::new();
        if let Some(current) = current {
            holder.insert(name, current);
        }
        let merged = unify::union(
            self,
            Value::dict(holder),
            &Value::dict(delta),
            true,
            UnionOptions::default(),
        )
        .map_err(|e| e.or_at(span))?;
        Ok(merged
            .as_dict()
            .and_then(|d| d.get(name))
            .cloned()
            .unwrap_or(Value::Undefined))
    }

    /// An assignment to a name in a schema body: the config still has the
    /// last word for configured attributes.
    pub(crate) fn schema_attr_assign(
        &mut self,
        frame: &Rc<Frame>,
        name: &str,
        value: Value,
        span: Span,
    ) -> Result<()> {
        let value = self.attr_typed(name, value).map_err(|e| e.or_at(span))?;
        frame.set(name, value);
        let config = self
            .schema_stack
            .last()
            .map(|c| c.config.clone())
            .unwrap_or_default();
        if let Some(v) = config.get(name).cloned() {
            self.merge_config_value(frame, &config, name, v, span)?;
        }
        Ok(())
    }

    /// `@deprecated(version, reason, strict)` refuses a deprecated schema,
    /// or an attribute its config sets; `@info` says nothing.
    fn apply_decorator(
        &mut self,
        frame: &Rc<Frame>,
        decorator: &ast::CallExpr,
        target: &str,
        used: bool,
        span: Span,
    ) -> Result<()> {
        let name = match &decorator.func.node {
            ast::Expr::Identifier(id) => id.name(),
            _ => String::new(),
        };
        match name.as_str() {
            "deprecated" => {
                let (_, kwargs) =
                    self.eval_arguments(frame, &decorator.args, &decorator.keywords)?;
                let arg = |k: &str| kwargs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
                let text = |v: Option<Value>| match v {
                    Some(Value::Str(s)) => s.to_string(),
                    _ => String::new(),
                };
                let version = text(arg("version"));
                let reason = text(arg("reason"));
                let strict = arg("strict").is_none_or(|v| v.is_truthy());
                let mut msg = format!("{target} was deprecated ");
                if !version.is_empty() {
                    msg.push_str(&format!("since version {version}"));
                }
                if !reason.is_empty() {
                    msg.push_str(&format!(", {reason}"));
                }
                if strict && used {
                    return Err(super::error_at(ErrorKind::EvaluationError, span, msg));
                }
                Ok(())
            }
            "info" => Ok(()),
            other => Err(KclError::at(
                ErrorKind::EvaluationError,
                span,
                format!("Unknown decorator {other}"),
            )),
        }
    }

    /// A value for an attribute, checked and converted to its declared
    /// type.
    fn attr_typed(&mut self, name: &str, value: Value) -> Result<Value> {
        let Some(ctx) = self.schema_stack.last() else {
            return Ok(value);
        };
        let attrs = ctx.attrs.clone();
        let Some(info) = attrs.types.get(name) else {
            return Ok(value);
        };
        self.convert_to_type(&info.frame, value, &info.ty)
    }

    /// Whether a dict's keys all belong to a schema (a dict converts to a
    /// schema in a union type only then).
    pub(crate) fn dict_fits_schema(&self, ty: &Rc<SchemaType>, d: &Dict) -> bool {
        let mut schemas = Vec::new();
        chain(ty, &mut schemas);
        let mut has_index_signature = false;
        let mut names = Vec::new();
        for s in &schemas {
            if let SchemaDef::Schema(def) = &s.def {
                has_index_signature |= def.index_signature.is_some();
                for stmt in &def.body {
                    let mut n = Vec::new();
                    super::scope::assigned_names(&stmt.node, &mut n);
                    names.extend(n);
                }
            }
        }
        has_index_signature || d.entries.keys().all(|k| names.contains(k))
    }
}

/// The last statement a schema's body runs (its parents' and mixins'
/// bodies run too, in `chain`'s order).
pub(crate) fn body_end(ty: &Rc<SchemaType>) -> Option<Span> {
    let mut schemas = Vec::new();
    chain(ty, &mut schemas);
    schemas.iter().rev().find_map(|s| match &s.def {
        SchemaDef::Schema(def) => def.body.last().map(|stmt| stmt.span),
        SchemaDef::Rule(_) => None,
    })
}

/// One attribute of a schema, as type checks see it.
pub(crate) struct AttrShape {
    pub name: String,
    pub optional: bool,
    pub has_default: bool,
}

/// A schema's attributes (its parents' and mixins' too) and whether it
/// has an index signature.
pub(crate) fn schema_attrs(ty: &Rc<SchemaType>) -> (Vec<AttrShape>, bool) {
    let mut schemas = Vec::new();
    chain(ty, &mut schemas);
    let mut attrs: Vec<AttrShape> = Vec::new();
    let mut has_index_signature = false;
    for s in &schemas {
        if let SchemaDef::Schema(def) = &s.def {
            has_index_signature |= def.index_signature.is_some();
            for stmt in &def.body {
                if let Stmt::SchemaAttr(a) = &stmt.node {
                    let shape = AttrShape {
                        name: a.name.node.clone(),
                        optional: a.is_optional,
                        has_default: a.value.is_some(),
                    };
                    match attrs.iter_mut().find(|x| x.name == a.name.node) {
                        Some(existing) => *existing = shape,
                        None => attrs.push(shape),
                    }
                }
            }
        }
    }
    (attrs, has_index_signature)
}

/// The attributes a body declares (`name: T …`, in `if` blocks too), in
/// order.
fn declared_attrs<'a>(body: &'a [ast::Node<Stmt>], out: &mut Vec<(&'a String, &'a ast::Type)>) {
    for stmt in body {
        match &stmt.node {
            Stmt::SchemaAttr(a) => out.push((&a.name.node, &a.ty.node)),
            Stmt::Assign(ast::AssignStmt {
                targets,
                ty: Some(ty),
                ..
            }) => {
                for t in targets.iter().filter(|t| t.node.paths.is_empty()) {
                    out.push((&t.node.name.node, &ty.node));
                }
            }
            Stmt::If(i) => {
                declared_attrs(&i.body, out);
                declared_attrs(&i.orelse, out);
            }
            _ => {}
        }
    }
}

fn literal_value(l: &ast::LiteralType) -> Value {
    match l {
        ast::LiteralType::Bool(b) => Value::Bool(*b),
        ast::LiteralType::Int(i, None) => Value::Int(*i),
        ast::LiteralType::Int(i, Some(suffix)) => Value::Unit(crate::value::UnitValue {
            value: *i as f64 * super::expr::unit_multiplier(*suffix),
            raw: *i,
            suffix: *suffix,
        }),
        ast::LiteralType::Float(f) => Value::Float(*f),
        ast::LiteralType::Str(s) => Value::str(s),
        ast::LiteralType::None => Value::None,
        ast::LiteralType::Undefined => Value::Undefined,
    }
}

fn is_rule(ty: &SchemaType) -> bool {
    ty.is_rule()
}

fn not_a_schema(span: Span, name: &str) -> KclError {
    KclError::at(
        ErrorKind::EvaluationError,
        span,
        format!("'{name}' is not a schema"),
    )
}
