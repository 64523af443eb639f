//! Expressions, calls and their arguments, lambdas, comprehensions and
//! operators.

use super::*;

impl Checker<'_> {
    pub(super) fn expr(&mut self, e: &Node<Expr>) -> Ty {
        if self.depth > MAX_DEPTH {
            return Ty::Any;
        }
        self.depth += 1;
        let ty = self.walk_expr(e);
        self.depth -= 1;
        ty
    }

    pub(super) fn opt_expr(&mut self, e: Option<&Node<Expr>>) -> Ty {
        match e {
            Some(e) => self.expr(e),
            None => Ty::Any,
        }
    }

    /// Dispatches on the expression; each kind has its own method, so that
    /// the frames of nested expressions stay small.
    pub(super) fn walk_expr(&mut self, e: &Node<Expr>) -> Ty {
        match &e.node {
            Expr::Identifier(ident) => self.walk_identifier_names(ident, e.span),
            Expr::Unary(u) => self.walk_unary(u),
            Expr::Binary(b) => self.walk_binary(b),
            Expr::If(i) => self.walk_if_expr(i),
            Expr::Selector(s) => self.walk_selector(s),
            Expr::Call(c) => self.walk_call(c),
            Expr::Paren(p) => self.expr(&p.expr),
            Expr::Quant(q) => self.walk_quant(q),
            Expr::List(l) => self.walk_list(l),
            Expr::ListIfItem(item) => self.walk_list_if_item(item),
            Expr::ListComp(lc) => self.walk_list_comp(lc),
            Expr::Starred(s) => self.walk_starred(s),
            Expr::DictComp(dc) => self.walk_dict_comp(dc),
            Expr::ConfigIfEntry(c) => self.walk_config_if_entry(c),
            Expr::Schema(s) => self.walk_schema_expr(s),
            Expr::Config(c) => self.walk_config_entries(&c.items),
            Expr::Lambda(l) => self.walk_lambda(l, e.span),
            Expr::Subscript(s) => self.walk_subscript(s),
            Expr::Compare(c) => self.walk_compare(c),
            Expr::NumberLit(n) => self.walk_number(n, e.span),
            Expr::StringLit(s) => Ty::StrLit(Rc::from(s.value.as_str())),
            Expr::NameConstantLit(c) => match c.value {
                ast::NameConstant::True => Ty::BoolLit(true),
                ast::NameConstant::False => Ty::BoolLit(false),
                ast::NameConstant::None | ast::NameConstant::Undefined => Ty::None,
            },
            Expr::JoinedString(j) => {
                for v in &j.values {
                    self.expr(v);
                }
                Ty::Str
            }
            Expr::FormattedValue(f) => self.walk_formatted_value(f),
            Expr::Missing => Ty::Any,
        }
    }

    pub(super) fn walk_unary(&mut self, u: &ast::UnaryExpr) -> Ty {
        let operand = self.expr(&u.operand);
        self.unary(&operand, u.op, u.operand.span)
    }

    pub(super) fn walk_binary(&mut self, b: &ast::BinaryExpr) -> Ty {
        let left = self.expr(&b.left);
        let span = b.left.span.to(b.right.span);
        if b.op == ast::BinOp::As {
            let Expr::Identifier(ident) = &b.right.node else {
                self.compile_error(
                    span,
                    "keyword 'as' right operand must be a type".to_string(),
                );
                return left;
            };
            let mut right = self.parse_type_name(ident, b.right.span);
            if let Ty::Schema(s) = &mut right {
                s.instance = true;
            }
            return self.binary(&left, &right, b.op, span);
        }
        let right = self.expr(&b.right);
        self.binary(&left, &right, b.op, span)
    }

    pub(super) fn walk_if_expr(&mut self, i: &ast::IfExpr) -> Ty {
        self.expr(&i.cond);
        let body = self.expr(&i.body);
        let orelse = self.expr(&i.orelse);
        self.sup(&[body, orelse])
    }

    pub(super) fn walk_selector(&mut self, s: &ast::SelectorExpr) -> Ty {
        let mut ty = self.expr(&s.value);
        if s.has_question && matches!(ty, Ty::Module(_)) {
            let attr = s.attr.node.name();
            let span = Span {
                line: s.value.span.end_line,
                column: s.value.span.end_column,
                ..s.attr.span
            };
            self.compile_error(
                span,
                format!(
                    "For the module type, the use of '?.{attr}' is unnecessary and it can be modified as '.{attr}'"
                ),
            );
        }
        for name in &s.attr.node.names {
            ty = self.load_attr(&ty, &name.node, s.attr.span);
        }
        ty
    }

    pub(super) fn walk_list(&mut self, l: &ast::ListExpr) -> Ty {
        let depth = self.switch_ctx_by_name("[]");
        let items: Vec<Ty> = l.elts.iter().map(|x| self.expr(x)).collect();
        let item = self.sup(&items);
        self.pop_ctx(depth);
        Ty::list(item)
    }

    pub(super) fn walk_list_if_item(&mut self, item: &ast::ListIfItemExpr) -> Ty {
        self.expr(&item.if_cond);
        let mut orelse = self.opt_expr(item.orelse.as_deref());
        // An `else` branch is a list whose items are the ones that count.
        if let Ty::List(inner) = &orelse {
            orelse = (**inner).clone();
        }
        let items: Vec<Ty> = item.exprs.iter().map(|x| self.expr(x)).collect();
        let items = self.sup(&items);
        self.sup(&[orelse, items])
    }

    pub(super) fn walk_list_comp(&mut self, lc: &ast::ListComp) -> Ty {
        let depth = self.switch_ctx_by_name("[]");
        self.scopes.push(Scope::default());
        for g in &lc.generators {
            self.walk_comp_clause(&g.node);
        }
        if let Expr::Starred(_) = lc.elt.node {
            self.compile_error(
                lc.elt.span,
                "list unpacking cannot be used in list comprehension".to_string(),
            );
        }
        let item = self.expr(&lc.elt);
        self.leave_scope();
        self.pop_ctx(depth);
        Ty::list(item)
    }

    pub(super) fn walk_starred(&mut self, s: &ast::StarredExpr) -> Ty {
        let value = self.expr(&s.value);
        let (ty, ok) = self.starred_item(&value);
        if !ok {
            self.compile_error(
                s.value.span,
                format!("only list, dict, schema object can be used * unpacked, got {ty}"),
            );
        }
        ty
    }

    pub(super) fn walk_config_if_entry(&mut self, c: &ast::ConfigIfEntryExpr) -> Ty {
        self.expr(&c.if_cond);
        let dict = self.walk_config_entries(&c.items);
        match &c.orelse {
            Some(orelse) => {
                let o = self.expr(orelse);
                self.sup(&[dict, o])
            }
            None => dict,
        }
    }

    pub(super) fn walk_subscript(&mut self, s: &ast::Subscript) -> Ty {
        let value = self.expr(&s.value);
        self.subscript(&value, s, s.value.span)
    }

    pub(super) fn walk_compare(&mut self, c: &ast::Compare) -> Ty {
        let t1 = self.expr(&c.left);
        if let (Some(first), Some(op)) = (c.comparators.first(), c.ops.first()) {
            let t2 = self.expr(first);
            self.compare(&t1, &t2, *op, c.left.span.to(first.span));
            // KCL checks the later comparisons against the left operand
            // with the next operator, and skips the last one.
            for i in 1..c.comparators.len().saturating_sub(1) {
                let (Some(op), Some(cmp)) = (c.ops.get(i + 1), c.comparators.get(i)) else {
                    break;
                };
                let t2 = self.expr(cmp);
                self.compare(&t1, &t2, *op, cmp.span);
            }
        }
        Ty::Bool
    }

    pub(super) fn walk_number(&mut self, n: &ast::NumberLit, span: Span) -> Ty {
        match (n.binary_suffix, n.value) {
            (Some(suffix), value) => {
                let raw = match value {
                    ast::NumberLitValue::Int(v) => v,
                    ast::NumberLitValue::Float(v) => {
                        self.compile_error(
                            span,
                            "float literal can not be followed the unit suffix".to_string(),
                        );
                        v as i64
                    }
                };
                Ty::NumberMultiplier(Some((raw, suffix)))
            }
            (None, ast::NumberLitValue::Int(v)) => Ty::IntLit(v),
            (None, ast::NumberLitValue::Float(v)) => Ty::FloatLit(v),
        }
    }

    pub(super) fn walk_formatted_value(&mut self, f: &ast::FormattedValue) -> Ty {
        if let Some(spec) = &f.format_spec {
            let spec = spec.trim();
            if spec.starts_with('#') && !["#json", "#yaml"].contains(&spec.to_lowercase().as_str())
            {
                self.compile_error(f.value.span, format!("{spec} is a invalid format spec"));
            }
        }
        self.expr(&f.value)
    }

    pub(super) fn starred_item(&self, ty: &Ty) -> (Ty, bool) {
        match ty {
            Ty::None | Ty::Any => (ty.clone(), true),
            Ty::List(item) => ((**item).clone(), true),
            Ty::Dict(d) => (d.key.clone(), true),
            Ty::Schema(_) => (Ty::Str, true),
            Ty::Union(types) => {
                let results: Vec<(Ty, bool)> = types.iter().map(|t| self.starred_item(t)).collect();
                let tys: Vec<Ty> = results.iter().map(|(t, _)| t.clone()).collect();
                (self.sup(&tys), results.iter().all(|(_, ok)| *ok))
            }
            _ => (Ty::Any, false),
        }
    }

    /// Declares a comprehension's loop variables; returns their names.
    pub(super) fn loop_targets(&mut self, targets: &[Node<ast::Identifier>]) -> Vec<String> {
        let mut names = Vec::new();
        let mut prev_end: Option<Span> = None;
        let count = targets.len();
        for (i, target) in targets.iter().enumerate() {
            let Some(first) = target.node.names.first() else {
                continue;
            };
            if target.node.names.len() > 1 {
                self.compile_error(
                    target.span,
                    "loop variables can only be ordinary identifiers".to_string(),
                );
            }
            if i >= 2 {
                let span = match prev_end {
                    Some(prev) => Span {
                        line: prev.end_line,
                        column: prev.end_column,
                        ..target.span
                    },
                    None => target.span,
                };
                self.compile_error(
                    span,
                    format!("the number of loop variables is {count}, which can only be 1 or 2"),
                );
                break;
            }
            self.local_vars.push(first.node.clone());
            self.insert_object(&first.node, Ty::Any, Some(target.span));
            names.push(first.node.clone());
            prev_end = Some(target.span);
        }
        names
    }

    pub(super) fn walk_comp_clause(&mut self, clause: &ast::CompClause) {
        let iter_ty = self.expr(&clause.iter);
        let names = self.loop_targets(&clause.targets);
        if !iter_ty.is_any() {
            self.loop_type_check(&names, &iter_ty, clause.iter.span);
        }
        for cond in &clause.ifs {
            self.expr(cond);
        }
    }

    /// Gives loop variables the types of what they iterate over.
    pub(super) fn loop_type_check(&mut self, names: &[String], iter_ty: &Ty, iter_span: Span) {
        let Some(first) = names.first() else { return };
        let second = names.get(1);
        let types = match iter_ty {
            Ty::Union(types) => types.clone(),
            t => vec![t.clone()],
        };
        let mut first_tys: Vec<Ty> = Vec::new();
        let mut second_tys: Vec<Ty> = Vec::new();
        for t in &types {
            if !(t.is_iterable() || t.is_any()) {
                self.compile_error(iter_span, format!("'{t}' object is not iterable"));
            }
            let (key, val) = match t {
                Ty::List(item) if second.is_some() => (Ty::Int, Some((**item).clone())),
                Ty::List(item) => ((**item).clone(), None),
                Ty::Dict(d) => (d.key.clone(), Some(d.val.clone())),
                Ty::Schema(s) => (
                    Ty::Str,
                    Some(
                        self.def(s.id)
                            .and_then(|d| d.index_sig.as_ref())
                            .map_or(Ty::Any, |sig| sig.val.clone()),
                    ),
                ),
                Ty::Str | Ty::StrLit(_) if second.is_some() => (Ty::Int, Some(Ty::Str)),
                Ty::Str | Ty::StrLit(_) => (Ty::Str, None),
                _ => continue,
            };
            first_tys.push(key);
            let ty = self.sup(&first_tys).widen();
            self.set_type_in_current_scope(first, ty);
            if let (Some(second), Some(val)) = (second, val) {
                second_tys.push(val);
                let ty = self.sup(&second_tys).widen();
                self.set_type_in_current_scope(second, ty);
            }
        }
    }

    pub(super) fn walk_quant(&mut self, q: &ast::QuantExpr) -> Ty {
        let iter_ty = self.expr(&q.target);
        self.scopes.push(Scope::default());
        let mut names = Vec::new();
        for (i, target) in q.variables.iter().enumerate() {
            let Some(first) = target.node.names.first() else {
                continue;
            };
            if target.node.names.len() > 1 {
                self.compile_error(
                    target.span,
                    "loop variables can only be ordinary identifiers".to_string(),
                );
            }
            if i >= 2 {
                self.compile_error(
                    target.span,
                    format!(
                        "the number of loop variables is {}, which can only be 1 or 2",
                        q.variables.len()
                    ),
                );
                break;
            }
            self.local_vars.push(first.node.clone());
            self.insert_object(&first.node, Ty::Any, Some(target.span));
            names.push(first.node.clone());
        }
        self.loop_type_check(&names, &iter_ty, q.target.span);
        self.opt_expr(q.if_cond.as_deref());
        let item = self.expr(&q.test);
        self.leave_scope();
        match q.op {
            ast::QuantOperation::All | ast::QuantOperation::Any => Ty::Bool,
            ast::QuantOperation::Filter => iter_ty,
            ast::QuantOperation::Map => Ty::list(item),
        }
    }

    pub(super) fn walk_dict_comp(&mut self, dc: &ast::DictComp) -> Ty {
        self.scopes.push(Scope::default());
        for g in &dc.generators {
            self.walk_comp_clause(&g.node);
        }
        let ty = match &dc.entry.key {
            None => {
                self.compile_error(
                    dc.entry.value.span,
                    "dict unpacking cannot be used in dict comprehension".to_string(),
                );
                let val = self.expr(&dc.entry.value);
                Ty::dict(val.config_key(), val)
            }
            Some(key) => {
                let key_ty = self.expr(key);
                self.check_attr_ty(&key_ty, key.span);
                let depth = self.switch_ctx_by_key(Some(key));
                let val = self.expr(&dc.entry.value);
                self.pop_ctx(depth);
                Ty::dict(key_ty, val)
            }
        };
        self.leave_scope();
        ty
    }

    pub(super) fn walk_schema_expr(&mut self, s: &ast::SchemaExpr) -> Ty {
        let def_ty = self.walk_identifier_names(&s.name.node, s.name.span);
        if !matches!(s.config.node, Expr::Config(_)) {
            self.compile_error(
                s.config.span,
                "Invalid schema config expr, expect config entries, e.g., {k1 = v1, k2 = v2}"
                    .to_string(),
            );
        }
        match &def_ty {
            Ty::Dict(_) => {
                self.config_ctx.push(expected(&def_ty, None));
                let config = self.expr(&s.config);
                self.config_ctx.pop();
                self.binary(&def_ty, &config, ast::BinOp::BitOr, s.name.span)
            }
            Ty::Schema(st) => {
                self.config_ctx.push(expected(&def_ty, None));
                self.expr(&s.config);
                self.config_ctx.pop();
                if st.instance {
                    if !s.args.is_empty() || !s.kwargs.is_empty() {
                        self.compile_error(
                            s.name.span,
                            "Arguments cannot be used in the schema modification expression"
                                .to_string(),
                        );
                    }
                } else {
                    let params = self
                        .def(st.id)
                        .map(|d| d.params.clone())
                        .unwrap_or_default();
                    let func = FnTy {
                        params,
                        ret: Ty::Any,
                        variadic: false,
                    };
                    let name = format!("\"{}\"", s.name.node.name());
                    self.do_arguments_check(&name, s.name.span, &s.args, &s.kwargs, &func);
                }
                let mut t = st.clone();
                t.instance = true;
                Ty::Schema(t)
            }
            Ty::Any => Ty::Any,
            _ => {
                self.compile_error(s.name.span, format!("Invalid schema type '{def_ty}'"));
                Ty::Any
            }
        }
    }

    /// The signature of the package's top-level lambda `name`, unless a
    /// local name hides it.
    pub(super) fn forward_lambda(&self, name: &str) -> Option<FnTy> {
        if self.scopes.iter().any(|s| s.names.contains_key(name)) {
            return None;
        }
        self.global_lambdas
            .get(&*self.pkg)
            .and_then(|m| m.get(name))
            .cloned()
            .flatten()
    }

    pub(super) fn func_name(func: &Expr) -> String {
        let mut callee = func;
        for _ in 0..MAX_DEPTH {
            match callee {
                Expr::Identifier(ident) => return format!("\"{}\"", ident.name()),
                Expr::Selector(s) => return format!("\"{}\"", s.attr.node.name()),
                Expr::Paren(p) => callee = &p.expr.node,
                _ => break,
            }
        }
        "anonymous function".to_string()
    }

    pub(super) fn walk_call(&mut self, c: &ast::CallExpr) -> Ty {
        let call_ty = self.expr(&c.func);
        let span = c.func.span;
        let name = Self::func_name(&c.func.node);
        match &call_ty {
            Ty::Any => {
                // A top-level lambda called before its declaration is
                // checked against its parameters.
                let f = match &c.func.node {
                    Expr::Identifier(ident) if ident.names.len() == 1 => {
                        self.forward_lambda(&ident.names[0].node)
                    }
                    _ => None,
                };
                let f = f.unwrap_or_else(FnTy::variadic);
                self.do_arguments_check(&name, span, &c.args, &c.keywords, &f);
                Ty::Any
            }
            Ty::Function(f) => {
                let f = f.clone();
                self.do_arguments_check(&name, span, &c.args, &c.keywords, &f);
                f.ret.clone()
            }
            Ty::Schema(st) => {
                if st.instance {
                    self.compile_error(
                        span,
                        format!("schema '{call_ty}' instance is not callable"),
                    );
                    Ty::Any
                } else {
                    let params = self
                        .def(st.id)
                        .map(|d| d.params.clone())
                        .unwrap_or_default();
                    let f = FnTy {
                        params,
                        ret: Ty::Any,
                        variadic: false,
                    };
                    self.do_arguments_check(&name, span, &c.args, &c.keywords, &f);
                    let mut t = st.clone();
                    t.instance = true;
                    Ty::Schema(t)
                }
            }
            _ => {
                self.compile_error(span, format!("'{call_ty}' object is not callable"));
                Ty::Any
            }
        }
    }

    /// Walks `expr` with `expected` as its context and checks it fits.
    pub(super) fn upgrade_type_for_expr(
        &mut self,
        expected: &Ty,
        expr: &Node<Expr>,
        span: Span,
        def_span: Option<Span>,
    ) -> Ty {
        let value_ty = match expected {
            Ty::Schema(_) | Ty::List(_) | Ty::Dict(_) | Ty::Union(_) => {
                self.config_ctx.push(Some(Expected {
                    ty: expected.clone(),
                    declared: Some(expr.span),
                }));
                let t = self.expr(expr);
                self.config_ctx.pop();
                t
            }
            _ => {
                self.config_ctx.push(None);
                let t = self.expr(expr);
                self.config_ctx.pop();
                t
            }
        };
        self.must_assignable_to(&value_ty, expected, span, def_span);
        value_ty
    }

    pub(super) fn do_arguments_check(
        &mut self,
        func_name: &str,
        func_span: Span,
        args: &[Node<Expr>],
        kwargs: &[Node<ast::Keyword>],
        f: &FnTy,
    ) {
        for (i, arg) in args.iter().enumerate() {
            match f.params.get(i) {
                Some(p) => {
                    let (ty, span) = (p.ty.clone(), p.span);
                    self.upgrade_type_for_expr(&ty, arg, arg.span, span);
                }
                None => {
                    self.expr(arg);
                    if !f.variadic {
                        self.compile_error(
                            arg.span,
                            format!(
                                "{func_name} takes {} but {} were given",
                                unit_count(f.params.len(), "positional argument"),
                                args.len()
                            ),
                        );
                        break;
                    }
                }
            }
        }
        let mut seen: Vec<String> = Vec::new();
        let mut prev_end: Option<Span> = None;
        for kw in kwargs {
            let Some(arg_name) = kw.node.arg.node.names.first().map(|n| n.node.clone()) else {
                self.compile_error(kw.span, "missing argument".to_string());
                continue;
            };
            if seen.contains(&arg_name) {
                let span = match prev_end {
                    Some(prev) => Span {
                        line: prev.end_line,
                        column: prev.end_column,
                        ..kw.span
                    },
                    None => kw.span,
                };
                self.compile_error(
                    span,
                    format!("{func_name} has duplicated keyword argument {arg_name}"),
                );
            }
            seen.push(arg_name.clone());
            if !f.variadic && !f.params.iter().any(|p| p.name == arg_name) {
                let suggs = suggestions(&arg_name, f.params.iter().map(|p| p.name.as_str()));
                let msg = if suggs.is_empty() {
                    String::new()
                } else {
                    format!(", did you mean '{}'?", suggs.join(" or "))
                };
                self.compile_error(
                    kw.node.arg.span,
                    format!("{func_name} got an unexpected keyword argument '{arg_name}'{msg}"),
                );
            }
            let expected = f.params.iter().find(|p| p.name == arg_name).cloned();
            match (expected, &kw.node.value) {
                (Some(p), Some(value)) => {
                    self.upgrade_type_for_expr(&p.ty, value, value.span, p.span);
                }
                (None, Some(value)) => {
                    self.expr(value);
                }
                _ => {}
            }
            prev_end = Some(kw.span);
        }
        if !f.variadic {
            let mut expect = 0;
            let mut got = 0;
            for p in &f.params {
                if !p.has_default {
                    expect += 1;
                    if seen.contains(&p.name) {
                        got += 1;
                    }
                }
            }
            got += args.len();
            if got < expect {
                self.compile_error(
                    func_span,
                    format!(
                        "expected {}, found {got}",
                        unit_count(expect, "positional argument")
                    ),
                );
            }
        }
    }

    pub(super) fn walk_lambda(&mut self, l: &ast::LambdaExpr, span: Span) -> Ty {
        self.do_parameters_check(l.args.as_ref());
        let params = self.parse_params(l.args.as_ref(), true);
        if let Some(args) = &l.args {
            for d in args.node.defaults.iter().flatten() {
                self.expr(d);
            }
        }
        let mut ret_ty = match &l.return_ty {
            Some(t) => self.parse_type(t),
            None => Ty::Any,
        };
        self.scopes.push(Scope::default());
        for p in &params {
            self.insert_object(&p.name, p.ty.clone(), p.span);
        }
        if let Some(last) = l.body.last()
            && !matches!(
                last.node,
                Stmt::Expr(_) | Stmt::Assign(_) | Stmt::AugAssign(_) | Stmt::Assert(_)
            )
        {
            self.compile_error(
                last.span,
                "The last statement of the lambda body must be a expression e.g., x, 1, etc."
                    .to_string(),
            );
        }
        if l.body.len() > 1 {
            self.stmts(&l.body[..l.body.len() - 1]);
        }
        let real_ret = match l.body.last() {
            Some(last) => match &last.node {
                Stmt::Expr(e) if !e.exprs.is_empty() => match e.exprs.last() {
                    Some(expr) => self.upgrade_type_for_expr(&ret_ty, expr, expr.span, None),
                    None => Ty::Any,
                },
                _ => {
                    let t = self.stmt(last);
                    self.must_assignable_to(&t, &ret_ty, span, None);
                    t
                }
            },
            None => Ty::Any,
        };
        self.leave_scope();
        if !real_ret.is_any() && ret_ty.is_any() && l.return_ty.is_none() {
            ret_ty = real_ret;
        }
        Ty::Function(Rc::new(FnTy {
            params,
            ret: ret_ty,
            variadic: false,
        }))
    }

    pub(super) fn subscript_index(&mut self, value: &Ty, index: &Node<Expr>, span: Span) -> Ty {
        match value {
            Ty::Any => Ty::Any,
            Ty::Str | Ty::StrLit(_) | Ty::List(_) => {
                let t = self.expr(index);
                self.must_assignable_to(&t, &Ty::Int, index.span, None);
                match value {
                    Ty::List(item) => (**item).clone(),
                    _ => Ty::Str,
                }
            }
            Ty::Dict(_) | Ty::Schema(_) => {
                let key = self.expr(index);
                let default_val = match value {
                    Ty::Dict(d) => d.val.clone(),
                    Ty::Schema(s) => self
                        .def(s.id)
                        .and_then(|d| d.index_sig.as_ref())
                        .map_or(Ty::Any, |sig| sig.val.clone()),
                    _ => Ty::Any,
                };
                if key.is_none() || key.is_any() {
                    default_val
                } else if !key.is_key() {
                    self.compile_error(span, format!("invalid dict/schema key type: '{key}'"));
                    Ty::Any
                } else if let Ty::StrLit(lit) = &key {
                    self.load_attr(value, lit, span)
                } else {
                    default_val
                }
            }
            _ => {
                self.compile_error(span, format!("'{value}' object is not subscriptable"));
                Ty::Any
            }
        }
    }

    pub(super) fn subscript(&mut self, value: &Ty, s: &ast::Subscript, span: Span) -> Ty {
        match value {
            Ty::Any => Ty::Any,
            Ty::Str | Ty::StrLit(_) | Ty::List(_) => {
                if let Some(index) = &s.index {
                    self.subscript_index(value, index, span)
                } else {
                    for e in [&s.lower, &s.upper, &s.step].into_iter().flatten() {
                        let t = self.expr(e);
                        self.must_assignable_to(&t, &Ty::Int, e.span, None);
                    }
                    if value.is_list() {
                        value.clone()
                    } else {
                        Ty::Str
                    }
                }
            }
            Ty::Dict(_) | Ty::Schema(_) => match &s.index {
                Some(index) => self.subscript_index(value, index, span),
                None => {
                    self.compile_error(span, "unhashable type: 'slice'".to_string());
                    Ty::Any
                }
            },
            _ => {
                self.compile_error(span, format!("'{value}' object is not subscriptable"));
                Ty::Any
            }
        }
    }

    // ---- operators ----

    pub(super) fn binary(&mut self, left: &Ty, right: &Ty, op: ast::BinOp, span: Span) -> Ty {
        use ast::BinOp as B;
        let t1 = left.widen_union();
        let t2 = right.widen_union();
        if t1.is_any() || t2.is_any() {
            return Ty::Any;
        }
        let number = |a: &Ty, b: &Ty| {
            if a.is_float() || b.is_float() {
                Ty::Float
            } else {
                Ty::Int
            }
        };
        let mul_val =
            |t: &Ty| t.all_kinds(|t| t.is_int() || t.is_float() || t.is_str() || t.is_list());
        let (ok, ret) = match op {
            B::Add => {
                if t1.is_number() && t2.is_number() {
                    (true, number(&t1, &t2))
                } else if t1.is_str() && t2.is_str() {
                    (true, Ty::Str)
                } else if t1.is_list() && t2.is_list() {
                    (true, Ty::list(self.sup(&[t1.list_item(), t2.list_item()])))
                } else {
                    (false, Ty::Any)
                }
            }
            B::Sub | B::Pow => {
                if t1.is_number() && t2.is_number() {
                    (true, number(&t1, &t2))
                } else {
                    (false, Ty::Any)
                }
            }
            B::Mul => {
                if t1.is_number() && t2.is_number() {
                    (true, number(&t1, &t2))
                } else if t1.is_int() && mul_val(&t2) {
                    (true, t2.clone())
                } else if mul_val(&t1) && t2.is_int() {
                    (true, t1.clone())
                } else {
                    (false, Ty::Any)
                }
            }
            B::Div | B::FloorDiv | B::Mod => {
                if t1.is_number() && t2.is_number() {
                    if matches!(t2, Ty::IntLit(0)) || matches!(t2, Ty::FloatLit(v) if v == 0.0) {
                        self.type_error(span, "integer division or modulo by zero".to_string());
                    }
                    if op == B::Mod {
                        (true, Ty::Int)
                    } else {
                        (true, number(&t1, &t2))
                    }
                } else {
                    (false, Ty::Any)
                }
            }
            B::LShift | B::RShift | B::BitXor | B::BitAnd => {
                if t1.is_int() && t2.is_int() {
                    (true, Ty::Int)
                } else {
                    (false, Ty::Any)
                }
            }
            B::BitOr => {
                if t1.is_int() && t2.is_int() {
                    (true, Ty::Int)
                } else if t1.is_none() {
                    (true, t2.clone())
                } else if t2.is_none() {
                    (true, t1.clone())
                } else if t1.is_list() && t2.is_list() {
                    (true, Ty::list(self.sup(&[t1.list_item(), t2.list_item()])))
                } else if let (Ty::Dict(d1), Ty::Dict(d2)) = (&t1, &t2) {
                    let mut attrs = (*d1.attrs).clone();
                    for (k, v) in d2.attrs.iter() {
                        attrs.insert(k.clone(), v.clone());
                    }
                    let key = self.sup(&[d1.key.clone(), d2.key.clone()]);
                    let val = self.sup(&[d1.val.clone(), d2.val.clone()]);
                    (
                        true,
                        Ty::Dict(Rc::new(DictTy {
                            key,
                            val,
                            attrs: Rc::new(attrs),
                        })),
                    )
                } else if t1.is_schema() && (t2.is_schema() || t2.is_dict()) {
                    (true, t1.clone())
                } else {
                    (false, Ty::Any)
                }
            }
            B::And => (true, Ty::Bool),
            B::Or => (true, self.sup(&[t1.clone(), t2.clone()])),
            B::As => {
                if !is_upper_bound(&self.bases(), &t1.widen(), &t2) {
                    let msg = format!(
                        "Conversion of type '{}' to type '{}' may be a mistake because neither type sufficiently overlaps with the other",
                        self.full_ty_str(&t1),
                        self.full_ty_str(&t2)
                    );
                    self.type_error(span, msg);
                }
                (true, t2.clone())
            }
        };
        if !ok {
            self.type_error(
                span,
                format!(
                    "unsupported operand type(s) for {}: '{left}' and '{right}'",
                    op.symbol()
                ),
            );
        }
        ret
    }

    pub(super) fn unary(&mut self, ty: &Ty, op: ast::UnaryOp, span: Span) -> Ty {
        if ty.is_any() {
            return Ty::Any;
        }
        let var_ty = ty.widen_union();
        let ok = match op {
            ast::UnaryOp::UAdd | ast::UnaryOp::USub => var_ty.is_number(),
            ast::UnaryOp::Invert => var_ty.is_int() || var_ty.is_bool(),
            ast::UnaryOp::Not => true,
        };
        if ok {
            var_ty
        } else {
            self.type_error(
                span,
                format!("bad operand type for unary {}: '{ty}'", op.symbol()),
            );
            Ty::Any
        }
    }

    pub(super) fn compare(&mut self, left: &Ty, right: &Ty, op: ast::CmpOp, span: Span) {
        use ast::CmpOp as C;
        let t1 = left.widen_union();
        let t2 = right.widen_union();
        if t1.is_any() || t2.is_any() {
            return;
        }
        let num_bool = |t: &Ty| t.all_kinds(|t| t.is_int() || t.is_float() || t.is_bool());
        let primitive =
            |t: &Ty| t.all_kinds(|t| t.is_int() || t.is_float() || t.is_bool() || t.is_str());
        let is_in = matches!(op, C::In | C::NotIn);
        if num_bool(&t1) && num_bool(&t2) && !is_in {
            return;
        }
        let config = |t: &Ty| t.is_dict() || t.is_schema();
        if matches!(op, C::Eq | C::NotEq)
            && ((t1.is_list() && t2.is_list())
                || (config(&t1) && config(&t2))
                || (primitive(&t1) && primitive(&t2)))
        {
            return;
        }
        if is_in && t2.is_iterable() {
            return;
        }
        if (t1.is_none() || t2.is_none())
            && matches!(op, C::Eq | C::NotEq | C::Is | C::IsNot | C::Not)
        {
            return;
        }
        self.type_error(
            span,
            format!(
                "unsupported operand type(s) for {}: '{t1}' and '{t2}'",
                op.symbol()
            ),
        );
    }
}
