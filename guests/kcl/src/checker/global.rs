//! A package's first passes, before its statements are walked: schema and
//! rule names, type aliases, top-level names (immutability, annotation
//! changes), top-level lambdas' signatures, and each schema's attributes,
//! parameters, index signature, parent, protocol and mixins, with the
//! errors KCL reports on them. Type annotations are read here too.

use super::*;

impl Checker<'_> {
    /// KCL's first passes over a package: its schemas and rules, type
    /// aliases and top-level names, then the schemas' attributes.
    pub(super) fn init_global_types(&mut self, pkgpath: &str, modules: &[&ast::Module]) {
        // 1. Schema and rule names.
        let mut stmt_defs: Vec<(usize, usize, SchemaId)> = Vec::new();
        for (mi, module) in modules.iter().enumerate() {
            for (si, stmt) in module.body.iter().enumerate() {
                let (name, is_mixin, is_protocol, is_rule) = match &stmt.node {
                    Stmt::Schema(s) => (&s.name.node, s.is_mixin, s.is_protocol, false),
                    Stmt::Rule(r) => (&r.name.node, false, false, true),
                    _ => continue,
                };
                if self.contains_object(name) {
                    self.error(
                        ErrorKind::UniqueKeyError,
                        stmt.span,
                        format!("Unique key error name '{name}'"),
                    );
                }
                let id = self.defs.len();
                self.defs.push(SchemaDef {
                    name: Rc::from(name.as_str()),
                    pkg: Rc::from(pkgpath),
                    is_mixin,
                    is_protocol,
                    is_rule,
                    base: None,
                    protocol: None,
                    mixins: Vec::new(),
                    attrs: IndexMap::default(),
                    params: Vec::new(),
                    index_sig: None,
                });
                stmt_defs.push((mi, si, id));
                if !self.contains_object(name) {
                    let ty = self.schema_ty(id, false);
                    self.insert_object(name, ty, Some(stmt.span));
                }
            }
        }
        // Later definitions of a name win, as in KCL.
        for &(mi, si, id) in &stmt_defs {
            if let Some(stmt) = modules.get(mi).and_then(|m| m.body.get(si)) {
                let name = match &stmt.node {
                    Stmt::Schema(s) => &s.name.node,
                    Stmt::Rule(r) => &r.name.node,
                    _ => continue,
                };
                let ty = self.schema_ty(id, false);
                self.insert_object(name, ty, Some(stmt.span));
            }
        }
        // 2. Type aliases and top-level names.
        for module in modules {
            self.set_file_imports(pkgpath, module);
            for stmt in &module.body {
                if let Stmt::TypeAlias(alias) = &stmt.node {
                    self.walk_type_alias(alias);
                }
            }
            self.init_scope_with_stmts(&module.body, true);
        }
        // 3. Schema types: parents first, so that attributes are inherited.
        let mut order: Vec<(usize, usize, SchemaId)> = stmt_defs.clone();
        let mut done: HashSet<SchemaId> = HashSet::default();
        let mut cycle_reported = false;
        for &(mi, si, id) in &stmt_defs {
            if let Some((module, stmt)) =
                modules.get(mi).and_then(|m| m.body.get(si).map(|s| (m, s)))
            {
                self.set_file_imports(pkgpath, module);
                match &stmt.node {
                    Stmt::Schema(s) => self.link_schema_parents(s, id),
                    Stmt::Rule(r) => self.link_rule(r, id),
                    _ => {}
                }
            }
        }
        // Build in an order where each base comes before its children.
        order.sort_by_key(|&(_, _, id)| self.inherit_depth(id));
        for &(mi, si, id) in &order {
            if done.contains(&id) {
                continue;
            }
            done.insert(id);
            if let Some((module, stmt)) =
                modules.get(mi).and_then(|m| m.body.get(si).map(|s| (m, s)))
            {
                self.set_file_imports(pkgpath, module);
                if let Stmt::Schema(s) = &stmt.node {
                    self.build_schema_type(s, id, &mut cycle_reported);
                }
            }
        }
        // The top-level lambdas' signatures, for calls before them.
        let mut lambdas: HashMap<String, Option<FnTy>> = HashMap::default();
        for module in modules {
            self.set_file_imports(pkgpath, module);
            for stmt in &module.body {
                let Stmt::Assign(assign) = &stmt.node else {
                    continue;
                };
                let [target] = assign.targets.as_slice() else {
                    continue;
                };
                if !target.node.paths.is_empty() {
                    continue;
                }
                let name = target.node.name.node.clone();
                // A name assigned twice has no one signature.
                let f = match (lambdas.contains_key(&name), &assign.ty, &assign.value.node) {
                    // Only the arguments' types: KCL 0.12.3 does not check a
                    // call before the lambda at all, and runs one with
                    // extra arguments.
                    (false, None, Expr::Lambda(l)) => Some(FnTy {
                        params: self.parse_params(l.args.as_ref(), true),
                        ret: Ty::Any,
                        variadic: true,
                    }),
                    _ => None,
                };
                lambdas.insert(name, f);
            }
        }
        self.global_lambdas.insert(pkgpath.to_string(), lambdas);
        // KCL scans the top-level names again once schemas are built.
        for module in modules {
            self.set_file_imports(pkgpath, module);
            self.init_scope_with_stmts(&module.body, false);
        }
        // A rule has its protocol's index signature, known only now.
        for &(_, _, id) in &stmt_defs {
            let Some(d) = self.def(id) else { continue };
            if !d.is_rule {
                continue;
            }
            let sig = d
                .protocol
                .and_then(|p| self.def(p))
                .and_then(|p| p.index_sig.clone());
            if let Some(d) = self.defs.get_mut(id) {
                d.index_sig = sig;
            }
        }
        self.imports.clear();
    }

    pub(super) fn inherit_depth(&self, id: SchemaId) -> usize {
        let mut depth = 0;
        let mut cur = self.def(id).and_then(|d| d.base);
        while let Some(b) = cur {
            depth += 1;
            if depth > 256 {
                break;
            }
            cur = self.def(b).and_then(|d| d.base);
        }
        depth
    }

    pub(super) fn init_scope_with_stmts(&mut self, stmts: &[Node<Stmt>], unique_check: bool) {
        for stmt in stmts {
            match &stmt.node {
                Stmt::Assign(assign) => self.init_scope_with_assign(assign, unique_check),
                Stmt::Unification(u) => {
                    if let Some(first) = u.target.node.names.first() {
                        let ty = self
                            .walk_identifier_names(&u.value.node.name.node, u.value.node.name.span);
                        self.insert_object(&first.node, ty, Some(u.target.span));
                    }
                }
                Stmt::If(if_stmt) => {
                    self.init_scope_with_stmts(&if_stmt.body, unique_check);
                    self.init_scope_with_stmts(&if_stmt.orelse, unique_check);
                }
                _ => {}
            }
        }
    }

    pub(super) fn init_scope_with_assign(&mut self, assign: &ast::AssignStmt, unique_check: bool) {
        for target in &assign.targets {
            let name = &target.node.name.node;
            let existing = match self.current_scope().names.get(name).cloned() {
                Some(found) => Some(found),
                None => self.import_of(name).map(|(ty, span)| (ty, Some(span))),
            };
            if let Some((_, declared)) = &existing
                && unique_check
                && !is_private(name)
            {
                let mut err = KclError::at(
                    ErrorKind::ImmutableError,
                    target.span,
                    format!(
                        "Can not change the value of '{name}', because it was declared immutable"
                    ),
                );
                if let Some(declared) = declared {
                    err = err
                        .with_label(*declared, format!("The variable '{name}' is declared here"))
                        .with_note(format!(
                            "change the variable name to '_{name}' to make it mutable"
                        ));
                }
                self.push_error(err);
                continue;
            }
            let ty = if let Some(annotation) = &assign.ty {
                let ty = self.parse_type(annotation);
                if let Some((old, declared)) = &existing
                    && !is_upper_bound(&self.bases(), old, &ty)
                {
                    let mut err = KclError::at(
                        ErrorKind::TypeError,
                        target.span,
                        format!("can not change the type of '{name}' to {old}"),
                    );
                    if let Some(declared) = declared {
                        err = err.with_label(*declared, format!("expected {old}"));
                    }
                    self.push_error(err);
                }
                ty
            } else if let Some((old, _)) = &existing {
                old.clone()
            } else {
                Ty::Any
            };
            // The name is now declared here, as in KCL's scope.
            self.insert_object(name, ty, Some(target.span));
        }
    }

    pub(super) fn walk_type_alias(&mut self, alias: &ast::TypeAliasStmt) {
        let mut ty = self.parse_type(&alias.ty);
        if let Ty::Schema(s) = &mut ty {
            s.instance = false;
        }
        let name = alias.type_name.node.name();
        if ["any", "int", "float", "str", "bool"].contains(&name.as_str()) {
            self.type_error(
                alias.type_name.span,
                format!(
                    "type alias '{name}' cannot be the same as the built-in types ([\"any\", \"int\", \"float\", \"str\", \"bool\"])"
                ),
            );
        }
        self.insert_object(&name, ty, Some(alias.type_name.span));
    }

    pub(super) fn schema_ident_ty(&mut self, ident: &Node<ast::Identifier>) -> Ty {
        self.walk_identifier_names(&ident.node, ident.span)
    }

    pub(super) fn link_schema_parents(&mut self, s: &ast::SchemaStmt, id: SchemaId) {
        if let Some(parent) = &s.parent_name {
            let errors_before = self.errors.len();
            let ty = self.schema_ident_ty(parent);
            let base = match &ty {
                Ty::Schema(p) if !p.instance => {
                    let d = self.def(p.id);
                    if d.is_some_and(|d| !d.is_protocol && !d.is_mixin) {
                        Some(p.id)
                    } else {
                        None
                    }
                }
                _ => None,
            };
            match base {
                Some(base) => {
                    if let Some(d) = self.defs.get_mut(id) {
                        d.base = Some(base);
                    }
                }
                // A module the loader could not find: it reports that.
                None if ty.is_any() && self.errors.len() == errors_before => {}
                None => self.error(
                    ErrorKind::IllegalInheritError,
                    parent.span,
                    format!("invalid schema inherit object type, expect schema, got '{ty}'"),
                ),
            }
        }
        if let Some(host) = &s.for_host_name {
            if !s.is_mixin {
                self.error(
                    ErrorKind::IllegalInheritError,
                    host.span,
                    "only schema mixin can inherit from protocol".to_string(),
                );
            } else {
                let ty = self.schema_ident_ty(host);
                match &ty {
                    Ty::Schema(p)
                        if !p.instance && self.def(p.id).is_some_and(|d| d.is_protocol) =>
                    {
                        let pid = p.id;
                        if let Some(d) = self.defs.get_mut(id) {
                            d.protocol = Some(pid);
                        }
                    }
                    _ => self.error(
                        ErrorKind::IllegalInheritError,
                        host.span,
                        format!("invalid schema inherit object type, expect protocol, got '{ty}'"),
                    ),
                }
            }
        }
    }

    pub(super) fn link_rule(&mut self, r: &ast::RuleStmt, id: SchemaId) {
        let mut params = self.parse_params(r.args.as_ref(), false);
        // KCL takes every rule parameter for one with a default.
        for p in &mut params {
            p.has_default = true;
        }
        let mut parents = Vec::new();
        for parent in &r.parent_rules {
            let ty = self.schema_ident_ty(parent);
            match &ty {
                Ty::Schema(p) if !p.instance && self.def(p.id).is_some_and(|d| d.is_rule) => {
                    parents.push(p.id)
                }
                Ty::Any => {}
                _ => self.error(
                    ErrorKind::IllegalInheritError,
                    parent.span,
                    format!("illegal rule type '{ty}'"),
                ),
            }
        }
        let protocol = match &r.for_host_name {
            Some(host) => match self.schema_ident_ty(host) {
                Ty::Schema(p) if !p.instance && self.def(p.id).is_some_and(|d| d.is_protocol) => {
                    Some(p.id)
                }
                _ => None,
            },
            None => None,
        };
        if let Some(d) = self.defs.get_mut(id) {
            d.params = params;
            d.mixins = parents;
            d.protocol = protocol;
        }
    }

    /// A schema's parameters as a function's.
    pub(super) fn parse_params(
        &mut self,
        args: Option<&Node<ast::Arguments>>,
        instance: bool,
    ) -> Vec<Param> {
        let mut params = Vec::new();
        if let Some(args) = args {
            for (i, arg) in args.node.args.iter().enumerate() {
                let mut ty = match args.node.ty_list.get(i).and_then(|t| t.as_ref()) {
                    Some(t) => self.parse_type(t),
                    None => Ty::Any,
                };
                if instance && let Ty::Schema(s) = &mut ty {
                    s.instance = true;
                }
                params.push(Param {
                    name: arg.node.name(),
                    ty,
                    has_default: args.node.defaults.get(i).is_some_and(|d| d.is_some()),
                    span: Some(arg.span),
                });
            }
        }
        params
    }

    pub(super) fn build_schema_type(
        &mut self,
        s: &ast::SchemaStmt,
        id: SchemaId,
        cycle_reported: &mut bool,
    ) {
        let name = s.name.node.clone();
        if ["any", "int", "float", "str", "bool"].contains(&name.as_str()) {
            self.compile_error(
                s.name.span,
                format!(
                    "schema name '{name}' cannot be the same as the built-in types ([\"any\", \"int\", \"float\", \"str\", \"bool\"])"
                ),
            );
        }
        // A cycle in inheritance: every schema in it is reported at its name.
        if let Some(cycle) = self.inherit_cycle(id) {
            if !*cycle_reported {
                *cycle_reported = true;
                let names: Vec<String> = cycle
                    .iter()
                    .filter_map(|c| self.def(*c))
                    .map(|d| {
                        if &*d.pkg == MAIN_PKG {
                            d.name.to_string()
                        } else {
                            format!("{}.{}", d.pkg, d.name)
                        }
                    })
                    .collect();
                let spans = self.cycle_spans(&cycle);
                for span in spans {
                    self.compile_error(
                        span,
                        format!(
                            "There is a circular reference between schemas {}",
                            names.join(", ")
                        ),
                    );
                }
            }
            // Break the cycle so that attribute lookups end.
            if let Some(d) = self.defs.get_mut(id) {
                d.base = None;
            }
        }
        let base = self.def(id).and_then(|d| d.base);
        if let Some(base) = base {
            let base_name = self
                .def(base)
                .map(|d| d.name.to_string())
                .unwrap_or_default();
            if base_name.ends_with("Mixin") {
                self.error(
                    ErrorKind::IllegalInheritError,
                    s.name.span,
                    format!("mixin inheritance {base_name} is prohibited"),
                );
            }
        }
        let mut attr_names = Vec::new();
        left_identifiers(&s.body, &mut attr_names);
        let index_sig = s.index_signature.as_ref().map(|sig| {
            if let Some(key_name) = &sig.node.key_name
                && attr_names.contains(&key_name.node) {
                    self.error(
                        ErrorKind::IndexSignatureError,
                        sig.span,
                        format!(
                            "index signature attribute name '{}' cannot have the same name as schema attributes",
                            key_name.node
                        ),
                    );
                }
            let key = self.parse_type(&sig.node.key_ty);
            let val = self.parse_type(&sig.node.value_ty);
            IndexSig {
                key_name: sig.node.key_name.as_ref().map(|n| n.node.clone()),
                key,
                val,
                any_other: sig.node.any_other,
            }
        });
        let mut attrs: IndexMap<String, AttrDef> = IndexMap::default();
        for stmt in &s.body {
            let (attr_name, ty, optional) = match &stmt.node {
                Stmt::SchemaAttr(attr) => {
                    self.check_decorators(&attr.decorators);
                    (
                        attr.name.node.clone(),
                        self.parse_type(&attr.ty),
                        attr.is_optional,
                    )
                }
                Stmt::Unification(u) => {
                    let Some(first) = u.target.node.names.first() else {
                        continue;
                    };
                    let ty = self.schema_ident_ty(&u.value.node.name);
                    (first.node.clone(), ty, false)
                }
                _ => continue,
            };
            let base_attr = base.and_then(|b| self.attr_of(b, &attr_name)).cloned();
            let base_attr_ty = base_attr.as_ref().map(|a| a.ty.clone()).unwrap_or(Ty::Any);
            if !attrs.contains_key(&attr_name) {
                attrs.insert(
                    attr_name.clone(),
                    AttrDef {
                        ty: ty.clone(),
                        optional: base_attr.as_ref().map_or(optional, |a| a.optional),
                        span: stmt.span,
                    },
                );
            }
            let Some(own) = attrs.get(&attr_name).cloned() else {
                continue;
            };
            if !is_upper_bound(&self.bases(), &own.ty, &ty)
                || !is_upper_bound(&self.bases(), &base_attr_ty, &ty)
            {
                self.type_error(
                    stmt.span,
                    format!(
                        "can't change schema field type of '{attr_name}' from {} to {ty}",
                        own.ty
                    ),
                );
            }
            if optional && !own.optional {
                self.type_error(
                    stmt.span,
                    format!(
                        "can't change the required schema attribute of '{attr_name}' to optional"
                    ),
                );
            }
            if let Some(sig) = &index_sig
                && !sig.any_other
                && !is_upper_bound(&self.bases(), &sig.val, &ty)
            {
                let sig_str = format!(
                    "{}{}{}]: {}",
                    sig.key_name
                        .as_ref()
                        .map_or("[".to_string(), |n| format!("[{n}: ")),
                    if sig.any_other { "..." } else { "" },
                    sig.key,
                    sig.val
                );
                self.error(
                        ErrorKind::IndexSignatureError,
                        stmt.span,
                        format!(
                            "the type '{ty}' of schema attribute '{attr_name}' does not meet the index signature definition {sig_str}"
                        ),
                    );
            }
        }
        let mut mixins = Vec::new();
        for mixin in &s.mixins {
            let last = mixin
                .node
                .names
                .last()
                .map(|n| n.node.clone())
                .unwrap_or_default();
            if !last.ends_with("Mixin") {
                self.error(
                    ErrorKind::NameError,
                    mixin.span,
                    format!("a valid mixin name should end with 'Mixin', got '{last}'"),
                );
            }
            let ty = self.schema_ident_ty(mixin);
            match &ty {
                Ty::Schema(m)
                    if !m.instance
                        && self.def(m.id).is_some_and(|d| d.is_mixin && !d.is_protocol) =>
                {
                    let mid = m.id;
                    let mixin_attrs: Vec<(String, AttrDef)> = self
                        .def(mid)
                        .map(|d| {
                            d.attrs
                                .iter()
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .collect()
                        })
                        .unwrap_or_default();
                    for (k, v) in mixin_attrs {
                        attrs.entry(k).or_insert(v);
                    }
                    mixins.push(mid);
                }
                Ty::Any => {}
                _ => self.error(
                    ErrorKind::IllegalInheritError,
                    mixin.span,
                    format!("illegal schema mixin object type, expected mixin, got '{ty}'"),
                ),
            }
        }
        let mut params = self.parse_params(s.args.as_ref(), false);
        for p in &mut params {
            if attr_names.contains(&p.name)
                && let Some(span) = p.span
            {
                self.compile_error(
                    span,
                    format!(
                        "Unexpected parameter name '{}' with the same name as the schema attribute",
                        p.name
                    ),
                );
            }
        }
        self.check_decorators(&s.decorators);
        if let Some(d) = self.defs.get_mut(id) {
            d.attrs = attrs;
            d.params = params;
            d.index_sig = index_sig;
            d.mixins = mixins;
        }
    }

    pub(super) fn inherit_cycle(&self, id: SchemaId) -> Option<Vec<SchemaId>> {
        let mut seen = vec![id];
        let mut cur = self.def(id).and_then(|d| d.base);
        while let Some(b) = cur {
            if b == id {
                return Some(seen);
            }
            if seen.contains(&b) || seen.len() > 256 {
                return None;
            }
            seen.push(b);
            cur = self.def(b).and_then(|d| d.base);
        }
        None
    }

    pub(super) fn cycle_spans(&self, cycle: &[SchemaId]) -> Vec<Span> {
        let mut spans = Vec::new();
        for id in cycle {
            let Some(d) = self.def(*id) else { continue };
            let Some(modules) = self.pkgs.get(&*d.pkg) else {
                continue;
            };
            for module in modules {
                for stmt in &module.body {
                    if let Stmt::Schema(s) = &stmt.node
                        && s.name.node == *d.name
                    {
                        spans.push(s.name.span);
                    }
                }
            }
        }
        spans.sort_by_key(|s| (s.file, s.line, s.column));
        spans.dedup();
        spans
    }

    pub(super) fn check_decorators(&mut self, decorators: &[Node<ast::CallExpr>]) {
        for decorator in decorators {
            match &decorator.node.func.node {
                Expr::Identifier(ident) if ident.names.len() == 1 => {
                    let name = ident.name();
                    if !builtin::BUILTIN_DECORATORS.contains(&name.as_str()) {
                        self.compile_error(decorator.span, format!("UnKnown decorator {name}"));
                    }
                }
                _ => self.type_error(
                    decorator.span,
                    "decorator name must be a single identifier".to_string(),
                ),
            }
        }
    }

    // ---- type annotations ----

    pub(super) fn parse_type(&mut self, t: &Node<ast::Type>) -> Ty {
        match &t.node {
            ast::Type::Any => Ty::Any,
            ast::Type::Basic(b) => match b {
                ast::BasicType::Bool => Ty::Bool,
                ast::BasicType::Int => Ty::Int,
                ast::BasicType::Float => Ty::Float,
                ast::BasicType::Str => Ty::Str,
            },
            ast::Type::List(inner) => Ty::list(match inner {
                Some(inner) => self.parse_type(inner),
                None => Ty::Any,
            }),
            ast::Type::Dict { key, value } => {
                let key = match key {
                    Some(k) => self.parse_type(k),
                    None => Ty::Any,
                };
                let value = match value {
                    Some(v) => self.parse_type(v),
                    None => Ty::Any,
                };
                Ty::dict(key, value)
            }
            ast::Type::Union(types) => {
                Ty::Union(types.iter().map(|t| self.parse_type(t)).collect())
            }
            ast::Type::Literal(lit) => match lit {
                ast::LiteralType::Bool(b) => Ty::BoolLit(*b),
                ast::LiteralType::Int(v, None) => Ty::IntLit(*v),
                ast::LiteralType::Int(v, Some(suffix)) => Ty::NumberMultiplier(Some((*v, *suffix))),
                ast::LiteralType::Float(v) => Ty::FloatLit(*v),
                ast::LiteralType::Str(s) => Ty::StrLit(Rc::from(s.as_str())),
                // KCL reads `None` in a type as a name, and no name is `None`.
                ast::LiteralType::None => {
                    self.compile_error(t.span, "name 'None' is not defined".to_string());
                    Ty::Any
                }
                ast::LiteralType::Undefined => Ty::None,
            },
            ast::Type::Function { params, ret } => {
                let params = params
                    .iter()
                    .enumerate()
                    .map(|(i, p)| Param {
                        name: format!("arg{i}"),
                        ty: self.parse_type(p),
                        has_default: false,
                        span: None,
                    })
                    .collect();
                let ret = match ret {
                    Some(r) => self.parse_type(r),
                    None => Ty::Any,
                };
                Ty::Function(Rc::new(FnTy {
                    params,
                    ret,
                    variadic: false,
                }))
            }
            ast::Type::Named(ident) => self.walk_identifier_names(ident, t.span),
        }
    }

    /// A type named in an `as` expression.
    pub(super) fn parse_type_name(&mut self, ident: &ast::Identifier, span: Span) -> Ty {
        let name = ident.name();
        match name.as_str() {
            "any" => Ty::Any,
            "bool" => Ty::Bool,
            "int" => Ty::Int,
            "float" => Ty::Float,
            "str" => Ty::Str,
            _ => self.walk_identifier_names(ident, span),
        }
    }
}
