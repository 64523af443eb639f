//! Config literals checked against the type they are expected to have: a
//! schema's attributes, their types, index signatures, `**` spreads.

use super::*;

/// How many attributes a `**` spread's check looks at, at most.
const SPREAD_CHECK_BUDGET: usize = 10_000;

impl Checker<'_> {
    /// The expectation for the entry `key_name` of the config being walked:
    /// an attribute's is declared where the attribute is, an item's or
    /// value's where its container's is.
    pub(super) fn find_attr_ctx(&self, key_name: &str) -> Option<Expected> {
        if key_name.is_empty() {
            return None;
        }
        let top = self.config_ctx.last()?.as_ref()?;
        let inherited = |ty: Ty| {
            Some(Expected {
                ty,
                declared: top.declared,
            })
        };
        match &top.ty {
            Ty::List(item) => inherited((**item).clone()),
            Ty::Dict(d) => inherited(d.val.clone()),
            Ty::Schema(s) => match self.attr_of(s.id, key_name) {
                Some(a) => Some(Expected {
                    ty: a.ty.clone(),
                    declared: Some(a.span),
                }),
                None => self
                    .def(s.id)
                    .and_then(|d| d.index_sig.as_ref())
                    .and_then(|sig| inherited(sig.val.clone())),
            },
            Ty::Union(types) => {
                let mut possible = Vec::new();
                for t in types {
                    match t {
                        Ty::Schema(s) => match self.attr_of(s.id, key_name) {
                            Some(a) => possible.push(a.ty.clone()),
                            None => {
                                if let Some(sig) = self.def(s.id).and_then(|d| d.index_sig.as_ref())
                                {
                                    possible.push(sig.val.clone());
                                }
                            }
                        },
                        Ty::Dict(d) => possible.push(d.val.clone()),
                        _ => {}
                    }
                }
                inherited(self.sup(&possible))
            }
            _ => None,
        }
    }

    pub(super) fn switch_ctx_by_name(&mut self, name: &str) -> usize {
        let next = self.find_attr_ctx(name);
        self.config_ctx.push(next);
        1
    }

    pub(super) fn pop_ctx(&mut self, depth: usize) {
        for _ in 0..depth {
            self.config_ctx.pop();
        }
    }

    pub(super) fn key_names(key: &Node<Expr>, allow_negative_index: bool) -> Option<Vec<String>> {
        match &key.node {
            Expr::Identifier(ident) => Some(ident.names.iter().map(|n| n.node.clone()).collect()),
            Expr::Subscript(sub) => {
                let Expr::Identifier(ident) = &sub.value.node else {
                    return None;
                };
                let index = sub.index.as_ref()?;
                let ok = match &index.node {
                    Expr::NumberLit(_) => true,
                    Expr::Unary(u) => {
                        allow_negative_index && matches!(u.operand.node, Expr::NumberLit(_))
                    }
                    _ => false,
                };
                ok.then(|| ident.names.iter().map(|n| n.node.clone()).collect())
            }
            Expr::StringLit(s) => Some(vec![s.value.clone()]),
            _ => None,
        }
    }

    pub(super) fn switch_ctx_by_key(&mut self, key: Option<&Node<Expr>>) -> usize {
        let Some(key) = key else { return 0 };
        let names = match &key.node {
            Expr::JoinedString(_) | Expr::Missing => vec![String::new()],
            _ => match Self::key_names(key, false) {
                Some(names) => names,
                None => return 0,
            },
        };
        names.iter().map(|n| self.switch_ctx_by_name(n)).sum()
    }

    pub(super) fn must_check_config_attr(
        &mut self,
        attr: &str,
        ty: &Ty,
        span: Span,
        attr_span: Option<Span>,
    ) {
        match ty {
            Ty::Schema(s) => self.check_config_attr(attr, s.id, span, attr_span),
            Ty::Union(types) => {
                let mut names = Vec::new();
                let mut total = Vec::new();
                for t in types {
                    match t {
                        Ty::Schema(s) => {
                            let Some(d) = self.def(s.id) else { return };
                            if self.attr_of(s.id, attr).is_none()
                                && !d.is_mixin
                                && d.index_sig.is_none()
                            {
                                total.extend(suggestions(attr, d.attrs.keys().map(String::as_str)));
                                names.push(d.name.to_string());
                            } else {
                                return;
                            }
                        }
                        Ty::Dict(_) => return,
                        _ => {}
                    }
                }
                if names.is_empty() {
                    return;
                }
                let target = if names.len() > 1 {
                    format!("schemas {names:?}")
                } else {
                    format!("schema {}", names[0])
                };
                let mut err = KclError::at(
                    ErrorKind::CompileError,
                    span,
                    format!(
                        "Cannot add member '{attr}' to '{target}'{}",
                        did_you_mean(&total)
                    ),
                );
                if let Some(attr_span) = attr_span {
                    err = err.with_label(attr_span, "config attribute is defined here");
                }
                self.push_error(err);
            }
            _ => {}
        }
    }

    pub(super) fn check_config_attr(
        &mut self,
        attr: &str,
        id: SchemaId,
        span: Span,
        attr_span: Option<Span>,
    ) {
        let Some(d) = self.def(id) else {
            return;
        };
        // Each error's suggestions, found while `d` is borrowed: the schema
        // is not copied for every config attribute checked.
        let mut errors = Vec::new();
        if self.attr_of(id, attr).is_none() && !d.is_mixin && d.index_sig.is_none() {
            errors.push(suggestions(attr, d.attrs.keys().map(String::as_str)));
        }
        if let Some(sig) = &d.index_sig
            && !sig.any_other
        {
            match &sig.key {
                Ty::StrLit(name) if &**name != attr => {
                    errors.push(suggestions(attr, [&**name]));
                }
                Ty::Union(types) => {
                    let keys: Vec<&str> = types
                        .iter()
                        .filter_map(|t| match t {
                            Ty::StrLit(s) => Some(&**s),
                            _ => None,
                        })
                        .collect();
                    if !keys.is_empty() && !keys.contains(&attr) {
                        errors.push(suggestions(attr, keys));
                    }
                }
                _ => {}
            }
        }
        let schema = d.name.clone();
        for suggs in errors {
            self.add_config_attr_error(attr, &schema, span, attr_span, &suggs);
        }
    }

    pub(super) fn add_config_attr_error(
        &mut self,
        attr: &str,
        schema: &str,
        span: Span,
        attr_span: Option<Span>,
        suggs: &[String],
    ) {
        let mut err = KclError::at(
            ErrorKind::CompileError,
            span,
            format!(
                "Cannot add member '{attr}' to schema '{schema}'{}",
                did_you_mean(suggs)
            ),
        );
        if let Some(attr_span) = attr_span {
            err = err.with_label(attr_span, "config attribute is defined here");
        }
        self.push_error(err);
    }

    pub(super) fn check_config_value_recursively(&mut self, value_ty: &Ty, value_span: Span) {
        let mut visiting = Vec::new();
        let mut budget = SPREAD_CHECK_BUDGET;
        self.check_spread_value(value_ty, value_span, &mut visiting, &mut budget);
    }

    /// One level of `check_config_value_recursively`. A schema whose
    /// attributes have its own type would recurse without end, and one
    /// whose attributes' schemas share attributes of many schemas would
    /// take exponential time: a schema already being checked is not
    /// entered again, and the whole check stops after a budget of
    /// attributes (missing errors, never adding any).
    fn check_spread_value(
        &mut self,
        value_ty: &Ty,
        value_span: Span,
        visiting: &mut Vec<SchemaId>,
        budget: &mut usize,
    ) {
        // Without an expected type nothing below is checked.
        if !matches!(self.config_ctx.last(), Some(Some(_))) {
            return;
        }
        if let Ty::Schema(s) = value_ty {
            if visiting.contains(&s.id) {
                return;
            }
            visiting.push(s.id);
        }
        let attrs: Vec<(String, Ty, Span)> = match value_ty {
            Ty::Dict(d) => d
                .attrs
                .iter()
                .map(|(k, (t, s))| (k.clone(), t.clone(), *s))
                .collect(),
            Ty::Schema(s) => self
                .def(s.id)
                .map(|d| {
                    d.attrs
                        .iter()
                        .map(|(k, a)| (k.clone(), a.ty.clone(), a.span))
                        .collect()
                })
                .unwrap_or_default(),
            _ => return,
        };
        if self.depth > MAX_DEPTH {
            return;
        }
        self.depth += 1;
        for (key, attr_ty, attr_span) in attrs {
            if key.is_empty() {
                continue;
            }
            if *budget == 0 {
                break;
            }
            *budget -= 1;
            if let Some(Some(top)) = self.config_ctx.last().cloned() {
                self.must_check_config_attr(&key, &top.ty, value_span, Some(attr_span));
            }
            let depth = self.switch_ctx_by_name(&key);
            if let Some(Some(top)) = self.config_ctx.last().cloned() {
                self.attr_must_assignable_to(
                    &attr_ty,
                    &top.ty,
                    value_span,
                    top.declared,
                    Some(attr_span),
                );
            }
            self.check_spread_value(&attr_ty, value_span, visiting, budget);
            self.pop_ctx(depth);
        }
        self.depth -= 1;
        if let Ty::Schema(_) = value_ty {
            visiting.pop();
        }
    }

    /// Checks a keyed entry against the expected type; `Some` with the
    /// value's type when it walked the value.
    pub(super) fn check_config_entry(
        &mut self,
        key: Option<&Node<Expr>>,
        value: &Node<Expr>,
    ) -> Option<Ty> {
        match key {
            Some(key) => {
                if !matches!(self.config_ctx.last(), Some(Some(_))) {
                    return None;
                }
                let names = Self::key_names(key, true)?;
                let mut depth = 0;
                for name in &names {
                    if !name.is_empty()
                        && let Some(Some(top)) = self.config_ctx.last().cloned()
                    {
                        self.must_check_config_attr(name, &top.ty, key.span, None);
                    }
                    depth += self.switch_ctx_by_name(name);
                }
                let ret = self.expr(value);
                let mut val_ty = ret.clone();
                for _ in 1..names.len() {
                    val_ty = Ty::dict(Ty::Str, val_ty);
                }
                if let Some(Some(top)) = self.config_ctx.last().cloned() {
                    self.must_assignable_to(&val_ty, &top.ty, key.span, top.declared);
                }
                self.pop_ctx(depth);
                Some(ret)
            }
            None => {
                let value_ty = self.expr(value);
                self.check_config_value_recursively(&value_ty, value.span);
                Some(value_ty)
            }
        }
    }

    pub(super) fn check_attr_ty(&mut self, ty: &Ty, span: Span) {
        if !ty.is_any() && !ty.is_key() {
            self.error(
                ErrorKind::IllegalAttributeError,
                span,
                format!("A attribute must be string type, got '{ty}'"),
            );
        }
    }

    /// KCL reads `a.b.c: v` in a config as `a: {b: {c: v}}`; each level's
    /// key is the name's own position.
    pub(super) fn desugar_entry(entry: &Node<ast::ConfigEntry>) -> Option<Node<ast::ConfigEntry>> {
        let key = entry.node.key.as_ref()?;
        let Expr::Identifier(ident) = &key.node else {
            return None;
        };
        if ident.names.len() < 2 {
            return None;
        }
        let first = ident.names.first()?.clone();
        let mut value: Box<Node<Expr>> = entry.node.value.clone();
        for (i, name) in ident.names[1..].iter().rev().enumerate() {
            let inner = ast::ConfigEntry {
                key: Some(Box::new(Node::new(
                    Expr::Identifier(ast::Identifier {
                        names: vec![name.clone()],
                    }),
                    name.span,
                ))),
                value: value.clone(),
                operation: if i == 0 {
                    entry.node.operation
                } else {
                    ast::ConfigEntryOperation::Union
                },
            };
            let value_span = name.span.to(value.span);
            value = Box::new(Node::new(
                Expr::Config(ast::ConfigExpr {
                    items: vec![Node::new(inner, name.span.to(entry.span))],
                }),
                value_span,
            ));
        }
        Some(Node::new(
            ast::ConfigEntry {
                key: Some(Box::new(Node::new(
                    Expr::Identifier(ast::Identifier {
                        names: vec![first.clone()],
                    }),
                    first.span,
                ))),
                value,
                operation: ast::ConfigEntryOperation::Union,
            },
            entry.span,
        ))
    }

    pub(super) fn walk_config_entries(&mut self, entries: &[Node<ast::ConfigEntry>]) -> Ty {
        self.scopes.push(Scope::default());
        let mut key_types: Vec<Ty> = Vec::new();
        let mut val_types: Vec<Ty> = Vec::new();
        let mut attrs: IndexMap<String, (Ty, Span)> = IndexMap::default();
        for original in entries {
            let desugared = Self::desugar_entry(original);
            let item = desugared.as_ref().unwrap_or(original);
            let key = item.node.key.as_deref();
            let value = &item.node.value;
            let value_ty = self.check_config_entry(key, value);
            let depth = self.switch_ctx_by_key(key);
            let val_ty = match key {
                Some(key) => match &key.node {
                    Expr::Identifier(ident) => {
                        let mut val_ty = match value_ty {
                            Some(t) => t,
                            None => self.expr(value),
                        };
                        for _ in 1..ident.names.len() {
                            val_ty = Ty::dict(Ty::Str, val_ty);
                        }
                        let key_ty = if ident.names.len() == 1 {
                            let name = ident.names[0].node.clone();
                            let key_ty = if self.local_vars.contains(&name) {
                                self.config_ctx.push(None);
                                let t = self.expr(key);
                                self.config_ctx.pop();
                                t
                            } else {
                                Ty::StrLit(Rc::from(name.as_str()))
                            };
                            self.check_attr_ty(&key_ty, key.span);
                            let ty = match attrs.get(&name) {
                                Some((t, _)) => self.sup(&[t.clone(), val_ty.clone()]),
                                None => val_ty.clone(),
                            };
                            attrs.insert(name.clone(), (ty.widen(), key.span));
                            self.insert_object(&name, ty, Some(key.span));
                            key_ty
                        } else {
                            Ty::Str
                        };
                        key_types.push(key_ty);
                        val_types.push(val_ty.clone());
                        val_ty
                    }
                    Expr::Subscript(sub) if has_name_and_constant_index(sub) => {
                        let val_ty = match value_ty {
                            Some(t) => t,
                            None => self.expr(value),
                        };
                        key_types.push(Ty::Str);
                        if item.node.operation == ast::ConfigEntryOperation::Insert {
                            val_types.push(val_ty.clone());
                        } else {
                            val_types.push(Ty::list(val_ty.clone()));
                        }
                        val_ty
                    }
                    _ => {
                        self.config_ctx.push(None);
                        let key_ty = self.expr(key);
                        self.config_ctx.pop();
                        let val_ty = match value_ty {
                            Some(t) => t,
                            None => self.expr(value),
                        };
                        self.check_attr_ty(&key_ty, key.span);
                        if let Expr::StringLit(s) = &key.node {
                            let ty = match attrs.get(&s.value) {
                                Some((t, _)) => self.sup(&[t.clone(), val_ty.clone()]),
                                None => val_ty.clone(),
                            };
                            attrs.insert(s.value.clone(), (ty.widen(), key.span));
                            self.insert_object(&s.value, ty, Some(key.span));
                        }
                        key_types.push(key_ty);
                        val_types.push(val_ty.clone());
                        val_ty
                    }
                },
                None => {
                    let val_ty = match value_ty {
                        Some(t) => t,
                        None => self.expr(value),
                    };
                    match &val_ty {
                        Ty::None | Ty::Any => val_types.push(val_ty.clone()),
                        Ty::Dict(d) => {
                            key_types.push(d.key.clone());
                            val_types.push(d.val.clone());
                            for (k, v) in d.attrs.iter() {
                                attrs.insert(k.clone(), v.clone());
                            }
                        }
                        Ty::Schema(s) => {
                            key_types.push(Ty::Str);
                            let d = self.def(s.id).cloned();
                            val_types.push(
                                d.as_ref()
                                    .and_then(|d| d.index_sig.as_ref())
                                    .map_or(Ty::Any, |sig| sig.val.clone()),
                            );
                            if let Some(d) = d {
                                for (k, a) in &d.attrs {
                                    attrs.insert(k.clone(), (a.ty.clone(), a.span));
                                }
                            }
                        }
                        Ty::Union(types) if val_ty.all_kinds(|t| t.is_dict() || t.is_schema()) => {
                            let keys: Vec<Ty> = types.iter().map(Ty::config_key).collect();
                            let vals: Vec<Ty> = types
                                .iter()
                                .map(|t| match t {
                                    Ty::Dict(d) => d.val.clone(),
                                    Ty::Schema(s) => self
                                        .def(s.id)
                                        .and_then(|d| d.index_sig.as_ref())
                                        .map_or(Ty::Any, |sig| sig.val.clone()),
                                    _ => Ty::Any,
                                })
                                .collect();
                            key_types.push(self.sup(&keys));
                            val_types.push(self.sup(&vals));
                        }
                        _ => self.compile_error(
                            value.span,
                            format!("only dict and schema can be used ** unpack, got '{val_ty}'"),
                        ),
                    }
                    val_ty
                }
            };
            if item.node.operation == ast::ConfigEntryOperation::Insert
                && !val_ty.is_any()
                && !val_ty.is_list()
            {
                self.error(
                    ErrorKind::IllegalAttributeError,
                    value.span,
                    format!("only list type can in inserted, got '{val_ty}'"),
                );
            }
            self.pop_ctx(depth);
        }
        self.leave_scope();
        let key = self.sup(&key_types);
        let val = self.sup(&val_types);
        Ty::Dict(Rc::new(DictTy {
            key,
            val,
            attrs: Rc::new(attrs),
        }))
    }
}

/// `name[0]` or `name[-1]` as a config key.
fn has_name_and_constant_index(sub: &ast::Subscript) -> bool {
    let is_int = |e: &Node<Expr>| {
        matches!(
            &e.node,
            Expr::NumberLit(ast::NumberLit {
                value: ast::NumberLitValue::Int(_),
                ..
            })
        )
    };
    matches!(sub.value.node, Expr::Identifier(_))
        && sub.index.as_ref().is_some_and(|index| match &index.node {
            Expr::Unary(u) => is_int(&u.operand),
            _ => is_int(index),
        })
}
