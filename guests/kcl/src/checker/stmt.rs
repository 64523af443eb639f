//! Statements: assignments and their targets, schema and rule bodies, and
//! how a name resolves in them (KCL's load and store contexts).

use super::*;

impl Checker<'_> {
    pub(super) fn stmts(&mut self, stmts: &[Node<Stmt>]) -> Ty {
        let mut last = Ty::Any;
        for stmt in stmts {
            last = self.stmt(stmt);
        }
        last
    }

    pub(super) fn stmt(&mut self, stmt: &Node<Stmt>) -> Ty {
        match &stmt.node {
            Stmt::TypeAlias(alias) => {
                if !self.top_level() {
                    self.walk_type_alias(alias);
                }
                Ty::Any
            }
            Stmt::Expr(e) => {
                let mut last = Ty::Any;
                for (i, expr) in e.exprs.iter().enumerate() {
                    last = self.expr(expr);
                    if i == 1 {
                        self.compile_error(
                            expr.span,
                            "expression statement can only have one expression".to_string(),
                        );
                    }
                }
                last
            }
            Stmt::Unification(u) => self.walk_unification(u),
            Stmt::Assign(a) => self.walk_assign(a),
            Stmt::AugAssign(a) => self.walk_aug_assign(a),
            Stmt::Assert(a) => {
                self.expr(&a.test);
                if let Some(c) = &a.if_cond {
                    self.expr(c);
                }
                if let Some(m) = &a.msg {
                    let ty = self.expr(m);
                    self.must_assignable_to(&ty, &Ty::Str, m.span, None);
                }
                Ty::Any
            }
            Stmt::If(if_stmt) => {
                self.expr(&if_stmt.cond);
                let a = self.stmts(&if_stmt.body);
                let b = self.stmts(&if_stmt.orelse);
                self.sup(&[a, b])
            }
            Stmt::Import(_) => Ty::Any,
            Stmt::SchemaAttr(attr) => self.walk_schema_attr(attr),
            Stmt::Schema(s) => self.walk_schema_stmt(s, stmt.span),
            Stmt::Rule(r) => self.walk_rule_stmt(r),
        }
    }

    pub(super) fn resolve_unique_key(&mut self, name: &str, span: Span) {
        let top = self.top_level();
        let existing = self.global_names_mut().get(name).copied();
        match existing {
            None if top => {
                self.global_names_mut().insert(name.to_string(), span);
            }
            _ => {
                let mut err = KclError::at(
                    ErrorKind::UniqueKeyError,
                    span,
                    format!("Unique key error name '{name}'"),
                );
                if let Some(declared) = existing {
                    err =
                        err.with_label(declared, format!("The variable '{name}' is declared here"));
                }
                self.push_error(err);
            }
        }
    }

    pub(super) fn walk_unification(&mut self, u: &ast::UnificationStmt) -> Ty {
        let names = &u.target.node.names;
        if names.len() > 1 {
            self.compile_error(
                u.target.span,
                "unification identifier can not be selected".to_string(),
            );
        }
        let Some(first) = names.first() else {
            return Ty::Any;
        };
        let expected_ty = self.resolve_store(&first.node, u.target.span);
        self.config_ctx
            .push(expected(&expected_ty, Some(u.value.span)));
        let ty = self.walk_schema_expr(&u.value.node);
        self.config_ctx.pop();
        self.must_assignable_to(&ty, &expected_ty, u.target.span, None);
        if !ty.is_any() && expected_ty.is_any() {
            self.set_type_in_current_scope(&first.node, ty.widen());
        }
        expected_ty
    }

    pub(super) fn walk_assign(&mut self, assign: &ast::AssignStmt) -> Ty {
        self.local_vars.clear();
        let mut value_ty = Ty::Any;
        let is_config = matches!(assign.value.node, Expr::Schema(_));
        for target in &assign.targets {
            let name = &target.node.name.node;
            if self.top_level() {
                let contains = self.global_names_mut().contains_key(name);
                if is_private(name) || is_config || !contains {
                    self.global_names_mut().insert(name.clone(), target.span);
                }
            }
            if target.node.paths.is_empty() {
                let expected = self.resolve_store(name, target.span);
                match &expected {
                    Ty::Schema(_) => {
                        self.config_ctx.push(Some(Expected {
                            ty: expected.clone(),
                            declared: Some(target.span.to(assign.value.span)),
                        }));
                        value_ty = self.expr(&assign.value);
                        self.config_ctx.pop();
                    }
                    Ty::List(_) | Ty::Dict(_) | Ty::Union(_) => {
                        self.config_ctx.push(Some(Expected {
                            ty: expected.clone(),
                            declared: Some(target.span.to(assign.value.span)),
                        }));
                        value_ty = self.expr(&assign.value);
                        self.check_assignment_annotation(assign, &value_ty);
                        self.config_ctx.pop();
                    }
                    _ => {
                        value_ty = self.expr(&assign.value);
                        self.check_assignment_annotation(assign, &value_ty);
                    }
                }
                self.must_assignable_to(&value_ty, &expected, target.span, None);
                if !value_ty.is_any() && expected.is_any() && assign.ty.is_none() {
                    self.set_type_in_current_scope(name, value_ty.widen());
                    if self.schema.is_some() {
                        self.schema_inferred.insert(name.clone(), value_ty.widen());
                    }
                }
            } else {
                self.lookup_type_from_scope(name, target.span);
                let expected = self.resolve_target(&target.node, target.span);
                value_ty = self.expr(&assign.value);
                self.check_assignment_annotation(assign, &value_ty);
                self.must_assignable_to(&value_ty, &expected, target.span, None);
            }
        }
        value_ty
    }

    pub(super) fn check_assignment_annotation(&mut self, assign: &ast::AssignStmt, value_ty: &Ty) {
        let Some(annotation) = &assign.ty else {
            return;
        };
        for target in &assign.targets {
            let name = &target.node.name.node;
            let annotation_ty = self.parse_type(annotation);
            let existing = self.current_scope().names.get(name).cloned();
            let target_ty = match existing {
                Some((old, declared)) if !old.is_any() => {
                    if !is_upper_bound(&self.bases(), &annotation_ty, &old) {
                        let mut err = KclError::at(
                            ErrorKind::TypeError,
                            target.span,
                            format!("can not change the type of '{name}' to {annotation_ty}"),
                        );
                        if let Some(declared) = declared {
                            err = err.with_label(declared, format!("expected {old}"));
                        }
                        self.push_error(err);
                    }
                    old
                }
                _ => annotation_ty,
            };
            self.set_type_in_current_scope(name, target_ty.clone());
            self.must_assignable_to(value_ty, &target_ty, target.span, None);
        }
    }

    pub(super) fn walk_aug_assign(&mut self, aug: &ast::AugAssignStmt) -> Ty {
        let name = &aug.target.node.name.node;
        let is_config = matches!(aug.value.node, Expr::Schema(_));
        let contains = self.global_names_mut().contains_key(name);
        if is_private(name) || is_config || !contains {
            if self.top_level() {
                self.global_names_mut()
                    .insert(name.clone(), aug.target.span);
            }
        } else {
            let declared = self.global_names_mut().get(name).copied();
            let mut err = KclError::at(
                ErrorKind::ImmutableError,
                aug.target.span,
                format!("Immutable variable '{name}' is modified during compiling"),
            );
            if let Some(declared) = declared {
                err = err
                    .with_label(
                        declared,
                        format!("The variable '{name}' is declared here firstly"),
                    )
                    .with_note(format!(
                        "change the variable name to '_{name}' to make it mutable"
                    ));
            }
            self.push_error(err);
        }
        let left = self.resolve_target_load(&aug.target.node, aug.target.span);
        let right = self.expr(&aug.value);
        let Some(op) = aug.op.bin_op() else {
            return right;
        };
        let new_ty = self.binary(&left, &right, op, aug.target.span);
        let expected = self.resolve_target(&aug.target.node, aug.target.span);
        self.must_assignable_to(&new_ty, &expected, aug.target.span, None);
        new_ty
    }

    pub(super) fn walk_schema_attr(&mut self, attr: &ast::SchemaAttr) -> Ty {
        self.local_vars.clear();
        let name = attr.name.node.clone();
        let expected = self
            .schema
            .and_then(|id| self.schema_attr_ty(id, &name))
            .unwrap_or(Ty::Any);
        self.insert_object(&name, expected.clone(), Some(attr.name.span));
        if let Some(value) = &attr.value {
            let value_ty = if let Ty::Schema(_) = expected {
                self.config_ctx.push(Some(Expected {
                    ty: expected.clone(),
                    declared: Some(value.span),
                }));
                let t = self.expr(value);
                self.config_ctx.pop();
                t
            } else {
                self.expr(value)
            };
            if attr.op == Some(ast::AugOp::BitOr) {
                let t = self.binary(&value_ty, &expected, ast::BinOp::BitOr, attr.name.span);
                self.must_assignable_to(&t, &expected, attr.name.span, None);
            } else {
                self.must_assignable_to(&value_ty, &expected, attr.name.span, None);
            }
        }
        Ty::Any
    }

    pub(super) fn do_parameters_check(&mut self, args: Option<&Node<ast::Arguments>>) {
        let Some(args) = args else { return };
        let mut mark = false;
        for default in args.node.defaults.iter().rev() {
            match default {
                Some(default) => {
                    if mark {
                        self.push_error(
                            KclError::at(
                                ErrorKind::IllegalParameterError,
                                default.span,
                                "non-default argument follows default argument",
                            )
                            .with_note("A default argument"),
                        );
                    }
                }
                None => mark = true,
            }
        }
    }

    pub(super) fn walk_schema_stmt(&mut self, s: &ast::SchemaStmt, stmt_span: Span) -> Ty {
        self.resolve_unique_key(&s.name.node, s.name.span);
        let ty = self.lookup_type_from_scope(&s.name.node, s.name.span);
        let Ty::Schema(st) = &ty else {
            self.type_error(stmt_span, format!("expected schema type, got {ty}"));
            return ty;
        };
        let id = st.id;
        let saved_schema = self.schema.replace(id);
        let saved_inferred = std::mem::take(&mut self.schema_inferred);
        self.do_parameters_check(s.args.as_ref());
        self.scopes.push(Scope::default());
        let params = self.def(id).map(|d| d.params.clone()).unwrap_or_default();
        for p in params {
            self.insert_object(&p.name, p.ty.clone(), p.span);
        }
        let index_sig = self.def(id).and_then(|d| d.index_sig.clone());
        if let (Some(sig), Some(sig_node)) = (index_sig, &s.index_signature) {
            if let Some(key_name) = &sig.key_name {
                self.insert_object(key_name, sig.key.clone(), Some(sig_node.span));
            }
            if let Some(value) = &sig_node.node.value {
                let value_ty = if let Ty::Schema(_) = sig.val {
                    self.config_ctx.push(Some(Expected {
                        ty: sig.val.clone(),
                        declared: Some(value.span),
                    }));
                    let t = self.expr(value);
                    self.config_ctx.pop();
                    t
                } else {
                    self.expr(value)
                };
                self.must_assignable_to(&value_ty, &sig.val, sig_node.span, None);
            }
        }
        let mut names = Vec::new();
        left_identifiers(&s.body, &mut names);
        for name in names {
            if !self.contains_object(&name) {
                self.insert_object(&name, Ty::Any, None);
            }
        }
        self.stmts(&s.body);
        for check in &s.checks {
            self.walk_check(&check.node);
        }
        self.leave_scope();
        self.schema = saved_schema;
        self.schema_inferred = saved_inferred;
        ty
    }

    pub(super) fn walk_rule_stmt(&mut self, r: &ast::RuleStmt) -> Ty {
        self.resolve_unique_key(&r.name.node, r.name.span);
        let ty = self.lookup_type_from_scope(&r.name.node, r.name.span);
        let Ty::Schema(st) = &ty else {
            return ty;
        };
        let id = st.id;
        let saved_schema = self.schema.replace(id);
        self.do_parameters_check(r.args.as_ref());
        self.scopes.push(Scope::default());
        let params = self.def(id).map(|d| d.params.clone()).unwrap_or_default();
        for p in params {
            self.insert_object(&p.name, p.ty.clone(), p.span);
        }
        for check in &r.checks {
            self.walk_check(&check.node);
        }
        self.leave_scope();
        self.schema = saved_schema;
        ty
    }

    pub(super) fn walk_check(&mut self, check: &ast::CheckExpr) {
        if let Some(msg) = &check.msg {
            let ty = self.expr(msg);
            self.must_assignable_to(&ty, &Ty::Str, msg.span, None);
        }
        if let Some(c) = &check.if_cond {
            self.expr(c);
        }
        self.expr(&check.test);
    }

    // ---- names ----

    /// The type of a name being assigned (KCL's store context).
    pub(super) fn resolve_store(&mut self, name: &str, span: Span) -> Ty {
        if let Some(id) = self.schema {
            let attr_ty = self.schema_attr_ty(id, name);
            if !self.contains_object(name) || attr_ty.is_none() {
                self.insert_object(name, Ty::Any, Some(span));
                if attr_ty.is_none() {
                    self.schema_inferred.insert(name.to_string(), Ty::Any);
                }
                return Ty::Any;
            }
            match attr_ty {
                Some(t) => t,
                None => self.lookup_type_from_scope(name, span),
            }
        } else {
            if !self.contains_object(name) {
                self.insert_object(name, Ty::Any, Some(span));
                return Ty::Any;
            }
            self.lookup_type_from_scope(name, span)
        }
    }

    /// The type of the current schema's attribute, with what its body
    /// assigned so far (KCL types an attribute by its first value).
    pub(super) fn schema_attr_ty(&self, id: SchemaId, name: &str) -> Option<Ty> {
        match self.schema_inferred.get(name) {
            Some(t) => Some(t.clone()),
            None => self.attr_of(id, name).map(|a| a.ty.clone()),
        }
    }

    /// The type of a name being read.
    pub(super) fn resolve_load(&mut self, name: &str, span: Span) -> Ty {
        let Some(id) = self.schema else {
            return self.lookup_type_from_scope(name, span);
        };
        let attr_ty = self.schema_attr_ty(id, name);
        let scope_ty = self.find_type_in_scope(name);
        if self.local_vars.iter().any(|v| v == name) {
            return scope_ty.unwrap_or(Ty::Any);
        }
        if let Some(t) = &attr_ty
            && !t.is_any()
        {
            return t.clone();
        }
        let (is_mixin, is_rule, mixins) = match self.def(id) {
            Some(d) => (d.is_mixin, d.is_rule, d.mixins.clone()),
            None => (false, false, Vec::new()),
        };
        if attr_ty.is_none() && !is_mixin {
            for m in mixins {
                if let Some(a) = self.attr_of(m, name) {
                    return a.ty.clone();
                }
            }
        }
        // KCL 0.12.3 leaves every unknown name in a mixin or rule to its
        // host (later versions report capitalized ones).
        if attr_ty.is_none() && scope_ty.is_none() && !is_mixin && !is_rule {
            self.lookup_type_from_scope(name, span)
        } else {
            scope_ty.unwrap_or(Ty::Any)
        }
    }

    /// `a.b.c` read as a value: the first name, then its attributes.
    pub(super) fn walk_identifier_names(&mut self, ident: &ast::Identifier, span: Span) -> Ty {
        let Some(first) = ident.names.first() else {
            self.compile_error(span, "missing variable".to_string());
            return Ty::Any;
        };
        let mut ty = self.resolve_load(&first.node, span);
        for name in ident.names.iter().skip(1) {
            ty = self.load_attr(&ty, &name.node, span);
        }
        ty
    }

    pub(super) fn resolve_target_load(&mut self, target: &ast::Target, span: Span) -> Ty {
        let mut ty = self.resolve_load(&target.name.node, span);
        for path in &target.paths {
            ty = match path {
                ast::MemberOrIndex::Member(m) => self.load_attr(&ty, &m.node, span),
                ast::MemberOrIndex::Index(index) => self.subscript_index(&ty, index, span),
            };
        }
        ty
    }

    /// The type of an assignment target with a path (`a.b[0] = …`).
    pub(super) fn resolve_target(&mut self, target: &ast::Target, span: Span) -> Ty {
        let mut ty = if target.paths.is_empty() {
            self.resolve_store(&target.name.node, span)
        } else {
            self.resolve_load(&target.name.node, span)
        };
        for path in &target.paths {
            ty = match path {
                ast::MemberOrIndex::Member(m) => {
                    self.must_check_config_attr(&m.node, &ty, span, None);
                    self.load_attr(&ty, &m.node, span)
                }
                ast::MemberOrIndex::Index(index) => {
                    if let Expr::StringLit(s) = &index.node {
                        self.must_check_config_attr(&s.value, &ty, span, None);
                    }
                    self.subscript_index(&ty, index, span)
                }
            };
        }
        ty
    }

    pub(super) fn load_attr(&mut self, obj: &Ty, attr: &str, span: Span) -> Ty {
        let found: Option<Ty> = match obj {
            Ty::Any => Some(Ty::Any),
            Ty::Str | Ty::StrLit(_) => builtin::string_method(attr),
            Ty::Dict(d) => Some(d.attrs.get(attr).map_or(d.val.clone(), |(t, _)| t.clone())),
            Ty::Union(_) => Some(Ty::Any),
            Ty::Schema(s) => {
                let d = self.def(s.id);
                match self.attr_of(s.id, attr) {
                    Some(a) => Some(a.ty.clone()),
                    None if d.is_some_and(|d| d.is_mixin || d.index_sig.is_some()) => Some(Ty::Any),
                    None if !s.instance && builtin::SCHEMA_MEMBER_FUNCTIONS.contains(&attr) => {
                        Some(Ty::Function(Rc::new(FnTy {
                            params: vec![Param {
                                name: "full_pkg".to_string(),
                                ty: Ty::Bool,
                                has_default: true,
                                span: None,
                            }],
                            ret: Ty::list(Ty::Any),
                            variadic: false,
                        })))
                    }
                    None => None,
                }
            }
            Ty::Module(m) => match m.kind {
                ModuleKind::User => self
                    .pkg_scopes
                    .get(m.pkgpath.as_str())
                    .map_or(Some(Ty::Any), |scope| {
                        scope.names.get(attr).map(|(t, _)| t.clone())
                    }),
                ModuleKind::System => builtin::system_module_member(&m.pkgpath, attr),
                ModuleKind::Plugin => Some(Ty::Any),
            },
            _ => None,
        };
        match found {
            Some(t) => t,
            None => {
                let (attr, suggestion) = if attr.is_empty() {
                    ("[missing name]".to_string(), String::new())
                } else {
                    let suggestion = match obj {
                        Ty::Schema(s) => {
                            let candidates: Vec<String> = if s.instance {
                                self.def(s.id)
                                    .map(|d| d.attrs.keys().cloned().collect())
                                    .unwrap_or_default()
                            } else {
                                builtin::SCHEMA_MEMBER_FUNCTIONS
                                    .iter()
                                    .map(|s| s.to_string())
                                    .collect()
                            };
                            did_you_mean(&suggestions(attr, candidates.iter().map(String::as_str)))
                        }
                        _ => String::new(),
                    };
                    (attr.to_string(), suggestion)
                };
                self.type_error(
                    span,
                    format!("attribute '{attr}' not found in '{obj}'{suggestion}"),
                );
                Ty::Any
            }
        }
    }
}
