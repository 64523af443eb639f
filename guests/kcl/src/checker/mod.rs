//! The static checks KCL makes before it evaluates a program: names that
//! are not defined, attributes a schema does not have, values whose type
//! does not fit where they go, wrong argument counts, illegal inheritance,
//! immutable names assigned twice. It follows KCL's resolver (its
//! messages, positions and order), and where it cannot know a type it
//! says `any` and lets the evaluator decide: a program KCL accepts must
//! pass here.

mod builtin;
mod ty;

use indexmap::IndexMap;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::ast::{self, Expr, Node, Stmt};
use crate::error::{ErrorKind, KclError};
use crate::source::Span;
use ty::{
    DictTy, FnTy, ModuleKind, ModuleTy, Param, SchemaBases, SchemaId, SchemaTy, Ty, assignable_to,
    is_upper_bound, sup_with,
};

/// The package the files run belong to.
pub const MAIN_PKG: &str = "__main__";

/// How deep expressions may nest before the checker stops descending (the
/// evaluator reports the program's own recursion; this only keeps the
/// checker's stack bounded).
const MAX_DEPTH: usize = 256;

/// Checks a program given as its packages' modules (the main package under
/// `MAIN_PKG`, imported ones under their package path) and returns the
/// first error, in KCL's order.
pub fn check_packages(pkgs: &IndexMap<String, Vec<ast::Module>>) -> Result<(), KclError> {
    match check_packages_all(pkgs).into_iter().next() {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

/// Every error the checker finds, in KCL's order (KCL prints them all).
pub fn check_packages_all(pkgs: &IndexMap<String, Vec<ast::Module>>) -> Vec<KclError> {
    let mut checker = Checker::new(pkgs);
    checker.check_pkg(MAIN_PKG);
    checker.errors
}

#[derive(Debug, Clone)]
struct AttrDef {
    ty: Ty,
    optional: bool,
    span: Span,
}

#[derive(Debug, Clone)]
struct IndexSig {
    key_name: Option<String>,
    key: Ty,
    val: Ty,
    any_other: bool,
}

#[derive(Debug, Clone)]
struct SchemaDef {
    name: Rc<str>,
    pkg: Rc<str>,
    is_mixin: bool,
    is_protocol: bool,
    is_rule: bool,
    base: Option<SchemaId>,
    protocol: Option<SchemaId>,
    mixins: Vec<SchemaId>,
    attrs: IndexMap<String, AttrDef>,
    params: Vec<Param>,
    index_sig: Option<IndexSig>,
}

struct Defs<'s>(&'s [SchemaDef]);

impl SchemaBases for Defs<'_> {
    fn base_of(&self, id: SchemaId) -> Option<SchemaId> {
        self.0.get(id).and_then(|d| d.base)
    }
}

/// Names visible in a package, schema body, lambda, comprehension or
/// config literal, with their types and where they were declared.
#[derive(Debug, Clone, Default)]
struct Scope {
    names: IndexMap<String, (Ty, Option<Span>)>,
}

struct Checker<'p> {
    pkgs: &'p IndexMap<String, Vec<ast::Module>>,
    defs: Vec<SchemaDef>,
    /// Package scopes, by package path.
    pkg_scopes: HashMap<String, Scope>,
    /// Top-level names already assigned, by package (for immutability and
    /// unique keys).
    global_names: HashMap<String, IndexMap<String, Span>>,
    checked: HashSet<String>,
    errors: Vec<KclError>,
    // The position of the walk.
    pkg: String,
    /// The current file's imports, with where they were written.
    imports: HashMap<String, (Ty, Span)>,
    /// Every file's imports, by package.
    pkg_imports: HashMap<String, HashMap<String, (Ty, Span)>>,
    scopes: Vec<Scope>,
    schema: Option<SchemaId>,
    local_vars: Vec<String>,
    config_ctx: Vec<Option<Ty>>,
    depth: usize,
}

fn is_private(name: &str) -> bool {
    name.starts_with('_')
}

fn unit_count(n: usize, unit: &str) -> String {
    if n > 1 {
        format!("{n} {unit}s")
    } else {
        format!("{n} {unit}")
    }
}

/// The names similar to `name` among `candidates`, worst match first, as
/// KCL's "did you mean" lists them.
fn suggestions<'c>(name: &str, candidates: impl IntoIterator<Item = &'c str>) -> Vec<String> {
    let mut found: Vec<(f64, String)> = candidates
        .into_iter()
        .map(|c| (jaro_winkler(name, c), c.to_string()))
        .filter(|(score, _)| *score > 0.8)
        .collect();
    found.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    found.into_iter().map(|(_, c)| c).collect()
}

/// Jaro similarity as KCL's suggestion library computes it (strsim 0.10):
/// a match out of order with the previous one counts as a transposition.
fn jaro(a: &str, b: &str) -> f64 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    match (a.len(), b.len()) {
        (0, 0) => return 1.0,
        (0, _) | (_, 0) => return 0.0,
        (1, 1) => return if a == b { 1.0 } else { 0.0 },
        _ => {}
    }
    let range = (a.len().max(b.len()) / 2).saturating_sub(1);
    let mut used = vec![false; b.len()];
    let (mut matches, mut transpositions) = (0.0_f64, 0.0_f64);
    let mut last_match = 0;
    for (i, ca) in a.iter().enumerate() {
        let lo = i.saturating_sub(range);
        let hi = (i + range).min(b.len() - 1);
        if lo > hi {
            continue;
        }
        for j in lo..=hi {
            if !used[j] && b[j] == *ca {
                used[j] = true;
                matches += 1.0;
                if j < last_match {
                    transpositions += 1.0;
                }
                last_match = j;
                break;
            }
        }
    }
    if matches == 0.0 {
        return 0.0;
    }
    (matches / a.len() as f64 + matches / b.len() as f64 + (matches - transpositions) / matches)
        / 3.0
}

/// Jaro-Winkler: the whole common prefix raises the similarity.
fn jaro_winkler(a: &str, b: &str) -> f64 {
    let j = jaro(a, b);
    let prefix = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    (j + 0.1 * prefix as f64 * (1.0 - j)).min(1.0)
}

fn did_you_mean(suggs: &[String]) -> String {
    if suggs.is_empty() {
        String::new()
    } else {
        format!(", did you mean '{suggs:?}'?")
    }
}

/// The package an import refers to: `.sub` is relative to the importing
/// package's directory, `..x` to its parent.
pub fn import_pkgpath(importing_pkg: &str, rawpath: &str) -> String {
    let dots = rawpath.chars().take_while(|c| *c == '.').count();
    if dots == 0 {
        return rawpath.to_string();
    }
    let rest = &rawpath[dots..];
    let mut base: Vec<&str> = if importing_pkg == MAIN_PKG || importing_pkg.is_empty() {
        Vec::new()
    } else {
        importing_pkg.split('.').collect()
    };
    for _ in 1..dots {
        base.pop();
    }
    if !rest.is_empty() {
        base.push(rest);
    }
    base.join(".")
}

/// The names a schema body assigns (its attributes and plain assignments,
/// also inside `if` blocks).
fn left_identifiers(body: &[Node<Stmt>], out: &mut Vec<String>) {
    for stmt in body {
        match &stmt.node {
            Stmt::SchemaAttr(attr) => out.push(attr.name.node.clone()),
            Stmt::Assign(assign) => {
                for t in &assign.targets {
                    out.push(t.node.name.node.clone());
                }
            }
            Stmt::AugAssign(aug) => out.push(aug.target.node.name.node.clone()),
            Stmt::Unification(u) => {
                if let Some(n) = u.target.node.names.first() {
                    out.push(n.node.clone());
                }
            }
            Stmt::If(if_stmt) => {
                left_identifiers(&if_stmt.body, out);
                left_identifiers(&if_stmt.orelse, out);
            }
            _ => {}
        }
    }
}

impl<'p> Checker<'p> {
    fn new(pkgs: &'p IndexMap<String, Vec<ast::Module>>) -> Checker<'p> {
        Checker {
            pkgs,
            defs: Vec::new(),
            pkg_scopes: HashMap::new(),
            global_names: HashMap::new(),
            checked: HashSet::new(),
            errors: Vec::new(),
            pkg: MAIN_PKG.to_string(),
            imports: HashMap::new(),
            pkg_imports: HashMap::new(),
            scopes: Vec::new(),
            schema: None,
            local_vars: Vec::new(),
            config_ctx: Vec::new(),
            depth: 0,
        }
    }

    // ---- errors ----

    fn push_error(&mut self, err: KclError) {
        if !self.errors.contains(&err) {
            self.errors.push(err);
        }
    }

    fn error(&mut self, kind: ErrorKind, span: Span, message: String) {
        self.push_error(KclError::at(kind, span, message));
    }

    fn compile_error(&mut self, span: Span, message: String) {
        self.error(ErrorKind::CompileError, span, message);
    }

    fn type_error(&mut self, span: Span, message: String) {
        self.error(ErrorKind::TypeError, span, message);
    }

    // ---- types ----

    fn bases(&self) -> Defs<'_> {
        Defs(&self.defs)
    }

    fn sup(&self, types: &[Ty]) -> Ty {
        sup_with(&self.bases(), types)
    }

    fn def(&self, id: SchemaId) -> Option<&SchemaDef> {
        self.defs.get(id)
    }

    fn schema_ty(&self, id: SchemaId, instance: bool) -> Ty {
        match self.def(id) {
            Some(d) => Ty::Schema(SchemaTy {
                id,
                name: d.name.clone(),
                pkg: d.pkg.clone(),
                instance,
            }),
            None => Ty::Any,
        }
    }

    /// A schema's attribute: its own, else its base's, else its protocol's.
    fn attr_of(&self, id: SchemaId, name: &str) -> Option<&AttrDef> {
        let mut cur = Some(id);
        for _ in 0..256 {
            let d = self.def(cur?)?;
            if let Some(a) = d.attrs.get(name) {
                return Some(a);
            }
            cur = match d.base {
                Some(base) => Some(base),
                None => return d.protocol.and_then(|p| self.attr_of_shallow(p, name)),
            };
        }
        None
    }

    fn attr_of_shallow(&self, id: SchemaId, name: &str) -> Option<&AttrDef> {
        self.def(id)?.attrs.get(name)
    }

    fn full_ty_str(&self, ty: &Ty) -> String {
        match ty {
            Ty::Schema(s) if !s.pkg.is_empty() && &*s.pkg != MAIN_PKG => {
                format!("{}.{}", s.pkg, s.name)
            }
            Ty::List(item) => format!("[{}]", self.full_ty_str(item)),
            Ty::Dict(d) => format!(
                "{{{}:{}}}",
                self.full_ty_str(&d.key),
                self.full_ty_str(&d.val)
            ),
            Ty::Union(types) => types
                .iter()
                .map(|t| self.full_ty_str(t))
                .collect::<Vec<_>>()
                .join(" | "),
            ty => ty.to_string(),
        }
    }

    // ---- scopes ----

    fn current_scope(&mut self) -> &mut Scope {
        if self.scopes.is_empty() {
            let pkg = self.pkg.clone();
            return self.pkg_scopes.entry(pkg).or_default();
        }
        let last = self.scopes.len() - 1;
        &mut self.scopes[last]
    }

    /// Leaving any scope forgets the loop variables, as KCL does.
    fn leave_scope(&mut self) {
        self.scopes.pop();
        self.local_vars.clear();
    }

    fn contains_object(&mut self, name: &str) -> bool {
        self.current_scope().names.contains_key(name)
    }

    fn insert_object(&mut self, name: &str, ty: Ty, span: Option<Span>) {
        self.current_scope()
            .names
            .insert(name.to_string(), (ty, span));
    }

    fn set_type_in_current_scope(&mut self, name: &str, ty: Ty) {
        if let Some(entry) = self.current_scope().names.get_mut(name) {
            entry.0 = ty;
        }
    }

    fn find_type_in_scope(&self, name: &str) -> Option<Ty> {
        for scope in self.scopes.iter().rev() {
            if let Some((ty, _)) = scope.names.get(name) {
                return Some(ty.clone());
            }
        }
        if let Some((ty, _)) = self
            .pkg_scopes
            .get(&self.pkg)
            .and_then(|s| s.names.get(name))
        {
            return Some(ty.clone());
        }
        if let Some(ty) = self.import_of(name) {
            return Some(ty.0);
        }
        builtin::builtin_function(name)
    }

    /// An import of the current file, else of another file of the package
    /// (an import is in the whole package's scope).
    fn import_of(&self, name: &str) -> Option<(Ty, Span)> {
        self.imports
            .get(name)
            .or_else(|| self.pkg_imports.get(&self.pkg).and_then(|m| m.get(name)))
            .cloned()
    }

    fn usable_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        if let Some(scope) = self.pkg_scopes.get(&self.pkg) {
            names.extend(scope.names.keys().cloned());
        }
        for scope in &self.scopes {
            names.extend(scope.names.keys().cloned());
        }
        names.extend(self.imports.keys().cloned());
        names.extend(builtin::BUILTIN_FUNCTIONS.iter().map(|s| s.to_string()));
        names
    }

    fn lookup_type_from_scope(&mut self, name: &str, span: Span) -> Ty {
        match self.find_type_in_scope(name) {
            Some(ty) => ty,
            None => {
                let names = self.usable_names();
                let suggs = suggestions(name, names.iter().map(String::as_str));
                self.compile_error(
                    span,
                    format!(
                        "name '{}' is not defined{}",
                        name.replace('@', ""),
                        did_you_mean(&suggs)
                    ),
                );
                Ty::Any
            }
        }
    }

    fn top_level(&self) -> bool {
        self.scopes.is_empty() && self.schema.is_none()
    }

    fn global_names_mut(&mut self) -> &mut IndexMap<String, Span> {
        let pkg = self.pkg.clone();
        self.global_names.entry(pkg).or_default()
    }

    // ---- packages ----

    fn check_pkg(&mut self, pkgpath: &str) {
        if !self.checked.insert(pkgpath.to_string()) {
            return;
        }
        let pkgs = self.pkgs;
        let Some(modules) = pkgs.get(pkgpath) else {
            return;
        };
        // Imported packages are checked first, as KCL does.
        for module in modules {
            for stmt in &module.body {
                if let Stmt::Import(import) = &stmt.node {
                    let path = import_pkgpath(&module.pkg_or(pkgpath), &import.rawpath.node);
                    if pkgs.contains_key(&path) {
                        self.check_pkg(&path);
                    }
                }
            }
        }
        let saved_pkg = std::mem::replace(&mut self.pkg, pkgpath.to_string());
        let saved_imports = std::mem::take(&mut self.imports);
        self.init_global_types(pkgpath, modules);
        for module in modules {
            self.set_file_imports(pkgpath, module);
            for stmt in &module.body {
                self.stmt(stmt);
            }
        }
        self.pkg = saved_pkg;
        self.imports = saved_imports;
    }

    fn set_file_imports(&mut self, pkgpath: &str, module: &ast::Module) {
        self.imports.clear();
        for stmt in &module.body {
            if let Stmt::Import(import) = &stmt.node {
                let path = import_pkgpath(&module.pkg_or(pkgpath), &import.rawpath.node);
                let kind = if self.pkgs.contains_key(&path) {
                    ModuleKind::User
                } else if builtin::is_system_module(&path) {
                    ModuleKind::System
                } else if path.starts_with("kcl_plugin") {
                    ModuleKind::Plugin
                } else {
                    // The loader reports a module it cannot find; here it is
                    // simply unknown.
                    self.imports
                        .insert(import.name.clone(), (Ty::Any, stmt.span));
                    continue;
                };
                self.imports.insert(
                    import.name.clone(),
                    (
                        Ty::Module(Rc::new(ModuleTy {
                            pkgpath: path,
                            kind,
                        })),
                        stmt.span,
                    ),
                );
            }
        }
        let all = self.pkg_imports.entry(pkgpath.to_string()).or_default();
        for (name, import) in &self.imports {
            all.entry(name.clone()).or_insert_with(|| import.clone());
        }
    }

    /// KCL's first passes over a package: its schemas and rules, type
    /// aliases and top-level names, then the schemas' attributes.
    fn init_global_types(&mut self, pkgpath: &str, modules: &[ast::Module]) {
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
                    attrs: IndexMap::new(),
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
        let mut done: HashSet<SchemaId> = HashSet::new();
        let mut cycle_reported = false;
        for &(mi, si, id) in &stmt_defs {
            if let Some(stmt) = modules.get(mi).and_then(|m| m.body.get(si)) {
                self.set_file_imports(pkgpath, &modules[mi]);
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
            if let Some(stmt) = modules.get(mi).and_then(|m| m.body.get(si)) {
                self.set_file_imports(pkgpath, &modules[mi]);
                if let Stmt::Schema(s) = &stmt.node {
                    self.build_schema_type(s, id, &mut cycle_reported);
                }
            }
        }
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

    fn inherit_depth(&self, id: SchemaId) -> usize {
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

    fn init_scope_with_stmts(&mut self, stmts: &[Node<Stmt>], unique_check: bool) {
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

    fn init_scope_with_assign(&mut self, assign: &ast::AssignStmt, unique_check: bool) {
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
            let span = existing.and_then(|(_, s)| s).unwrap_or(target.span);
            self.insert_object(name, ty, Some(span));
        }
    }

    fn walk_type_alias(&mut self, alias: &ast::TypeAliasStmt) {
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

    fn schema_ident_ty(&mut self, ident: &Node<ast::Identifier>) -> Ty {
        self.walk_identifier_names(&ident.node, ident.span)
    }

    fn link_schema_parents(&mut self, s: &ast::SchemaStmt, id: SchemaId) {
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

    fn link_rule(&mut self, r: &ast::RuleStmt, id: SchemaId) {
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
    fn parse_params(&mut self, args: Option<&Node<ast::Arguments>>, instance: bool) -> Vec<Param> {
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

    fn build_schema_type(&mut self, s: &ast::SchemaStmt, id: SchemaId, cycle_reported: &mut bool) {
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
        let mut attrs: IndexMap<String, AttrDef> = IndexMap::new();
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

    fn inherit_cycle(&self, id: SchemaId) -> Option<Vec<SchemaId>> {
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

    fn cycle_spans(&self, cycle: &[SchemaId]) -> Vec<Span> {
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

    fn check_decorators(&mut self, decorators: &[Node<ast::CallExpr>]) {
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

    fn parse_type(&mut self, t: &Node<ast::Type>) -> Ty {
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
                ast::LiteralType::Str(s) => Ty::StrLit(s.clone()),
                ast::LiteralType::None | ast::LiteralType::Undefined => Ty::None,
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
    fn parse_type_name(&mut self, ident: &ast::Identifier, span: Span) -> Ty {
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

    // ---- statements ----

    fn stmts(&mut self, stmts: &[Node<Stmt>]) -> Ty {
        let mut last = Ty::Any;
        for stmt in stmts {
            last = self.stmt(stmt);
        }
        last
    }

    fn stmt(&mut self, stmt: &Node<Stmt>) -> Ty {
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

    fn resolve_unique_key(&mut self, name: &str, span: Span) {
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

    fn walk_unification(&mut self, u: &ast::UnificationStmt) -> Ty {
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
        let expected = self.resolve_store(&first.node, u.target.span);
        self.config_ctx.push(Some(expected.clone()));
        let ty = self.walk_schema_expr(&u.value.node, u.value.span);
        self.config_ctx.pop();
        self.must_assignable_to(&ty, &expected, u.target.span, None);
        if !ty.is_any() && expected.is_any() {
            self.set_type_in_current_scope(&first.node, ty.widen());
        }
        expected
    }

    fn walk_assign(&mut self, assign: &ast::AssignStmt) -> Ty {
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
                        self.config_ctx.push(Some(expected.clone()));
                        value_ty = self.expr(&assign.value);
                        self.config_ctx.pop();
                    }
                    Ty::List(_) | Ty::Dict(_) | Ty::Union(_) => {
                        self.config_ctx.push(Some(expected.clone()));
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

    fn check_assignment_annotation(&mut self, assign: &ast::AssignStmt, value_ty: &Ty) {
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

    fn walk_aug_assign(&mut self, aug: &ast::AugAssignStmt) -> Ty {
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

    fn walk_schema_attr(&mut self, attr: &ast::SchemaAttr) -> Ty {
        self.local_vars.clear();
        let name = attr.name.node.clone();
        let expected = self
            .schema
            .and_then(|id| self.attr_of(id, &name))
            .map(|a| a.ty.clone())
            .unwrap_or(Ty::Any);
        self.insert_object(&name, expected.clone(), Some(attr.name.span));
        if let Some(value) = &attr.value {
            let value_ty = if let Ty::Schema(_) = expected {
                self.config_ctx.push(Some(expected.clone()));
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

    fn do_parameters_check(&mut self, args: Option<&Node<ast::Arguments>>) {
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

    fn walk_schema_stmt(&mut self, s: &ast::SchemaStmt, stmt_span: Span) -> Ty {
        self.resolve_unique_key(&s.name.node, s.name.span);
        let ty = self.lookup_type_from_scope(&s.name.node, s.name.span);
        let Ty::Schema(st) = &ty else {
            self.type_error(stmt_span, format!("expected schema type, got {ty}"));
            return ty;
        };
        let id = st.id;
        let saved_schema = self.schema.replace(id);
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
                    self.config_ctx.push(Some(sig.val.clone()));
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
        ty
    }

    fn walk_rule_stmt(&mut self, r: &ast::RuleStmt) -> Ty {
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

    fn walk_check(&mut self, check: &ast::CheckExpr) {
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
    fn resolve_store(&mut self, name: &str, span: Span) -> Ty {
        if let Some(id) = self.schema {
            let attr_ty = self.attr_of(id, name).map(|a| a.ty.clone());
            if !self.contains_object(name) || attr_ty.is_none() {
                self.insert_object(name, Ty::Any, Some(span));
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

    /// The type of a name being read.
    fn resolve_load(&mut self, name: &str, span: Span) -> Ty {
        let Some(id) = self.schema else {
            return self.lookup_type_from_scope(name, span);
        };
        let attr_ty = self.attr_of(id, name).map(|a| a.ty.clone());
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
        let is_type_ref = name.starts_with(|c: char| c.is_uppercase());
        if attr_ty.is_none() && scope_ty.is_none() && (!is_mixin || is_type_ref) && !is_rule {
            self.lookup_type_from_scope(name, span)
        } else {
            scope_ty.unwrap_or(Ty::Any)
        }
    }

    /// `a.b.c` read as a value: the first name, then its attributes.
    fn walk_identifier_names(&mut self, ident: &ast::Identifier, span: Span) -> Ty {
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

    fn resolve_target_load(&mut self, target: &ast::Target, span: Span) -> Ty {
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
    fn resolve_target(&mut self, target: &ast::Target, span: Span) -> Ty {
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

    fn load_attr(&mut self, obj: &Ty, attr: &str, span: Span) -> Ty {
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
                    .get(&m.pkgpath)
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

    // ---- type compatibility ----

    fn must_assignable_to(&mut self, ty: &Ty, expected: &Ty, span: Span, def_span: Option<Span>) {
        self.attr_must_assignable_to(ty, expected, span, def_span, None);
    }

    fn attr_must_assignable_to(
        &mut self,
        ty: &Ty,
        expected: &Ty,
        span: Span,
        def_span: Option<Span>,
        attr_span: Option<Span>,
    ) {
        if self.check_type(ty, expected, span) {
            return;
        }
        let mut err = KclError::at(
            ErrorKind::TypeError,
            span,
            format!("expected {expected}, got {ty}"),
        );
        if let Some(def_span) = def_span {
            err = err.with_label(
                def_span,
                format!("variable is defined here, its type is {expected}, but got {ty}"),
            );
        }
        if let Some(attr_span) = attr_span {
            err = err.with_label(attr_span, "config attribute is defined here");
        }
        self.push_error(err);
    }

    fn check_type(&mut self, ty: &Ty, expected: &Ty, span: Span) -> bool {
        match (ty, expected) {
            (Ty::List(item), Ty::List(expected_item)) => self.check_type(item, expected_item, span),
            (Ty::Dict(d), Ty::Dict(e)) => {
                self.check_type(&d.key, &e.key, span) && self.check_type(&d.val, &e.val, span)
            }
            (Ty::Dict(d), Ty::Schema(s)) => {
                let (d, id) = (d.clone(), s.id);
                self.dict_assignable_to_schema(&d, id, span)
            }
            (Ty::Union(types), _) => {
                let types = types.clone();
                types.iter().all(|t| self.check_type(t, expected, span))
            }
            (_, Ty::Union(types)) => {
                let types = types.clone();
                types.iter().any(|e| self.check_type(ty, e, span))
            }
            _ => assignable_to(&self.bases(), ty, expected),
        }
    }

    fn dict_assignable_to_schema(&mut self, d: &DictTy, id: SchemaId, span: Span) -> bool {
        let Some(def) = self.def(id).cloned() else {
            return true;
        };
        if let Some(sig) = &def.index_sig {
            let val_ty = match (&d.key, &d.val) {
                (Ty::Union(keys), Ty::Union(vals)) => {
                    let mut tys = Vec::new();
                    for (i, key) in keys.iter().enumerate() {
                        if let Ty::StrLit(s) = key
                            && !def.attrs.contains_key(s)
                            && let Some(v) = vals.get(i)
                        {
                            tys.push(v.clone());
                        }
                    }
                    self.sup(&tys)
                }
                _ => d.val.clone(),
            };
            if d.attrs.is_empty() {
                if !self.check_type(&val_ty, &sig.val, span) {
                    self.type_error(
                        span,
                        format!(
                            "expected schema index signature value type {}, got {val_ty}",
                            sig.val
                        ),
                    );
                }
            } else {
                for (name, (attr_ty, attr_span)) in &d.attrs {
                    match def.attrs.get(name) {
                        Some(a) if sig.any_other => {
                            self.must_assignable_to(attr_ty, &a.ty, span, Some(a.span))
                        }
                        _ => self.must_assignable_to(attr_ty, &sig.val, *attr_span, None),
                    }
                }
            }
            true
        } else {
            if let Ty::StrLit(key) = &d.key
                && let Some(a) = def.attrs.get(key)
                && let Some((attr_ty, _)) = d.attrs.get(key)
            {
                self.must_assignable_to(attr_ty, &a.ty, span, Some(a.span));
            }
            true
        }
    }

    // ---- config literals against their expected type ----

    fn find_attr_ctx(&self, key_name: &str) -> Option<Ty> {
        if key_name.is_empty() {
            return None;
        }
        let top = self.config_ctx.last()?.as_ref()?;
        match top {
            Ty::List(item) => Some((**item).clone()),
            Ty::Dict(d) => Some(d.val.clone()),
            Ty::Schema(s) => match self.attr_of(s.id, key_name) {
                Some(a) => Some(a.ty.clone()),
                None => self
                    .def(s.id)
                    .and_then(|d| d.index_sig.as_ref())
                    .map(|sig| sig.val.clone()),
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
                Some(self.sup(&possible))
            }
            _ => None,
        }
    }

    fn switch_ctx_by_name(&mut self, name: &str) -> usize {
        let next = self.find_attr_ctx(name);
        self.config_ctx.push(next);
        1
    }

    fn pop_ctx(&mut self, depth: usize) {
        for _ in 0..depth {
            self.config_ctx.pop();
        }
    }

    fn key_names(key: &Node<Expr>, allow_negative_index: bool) -> Option<Vec<String>> {
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

    fn switch_ctx_by_key(&mut self, key: Option<&Node<Expr>>) -> usize {
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

    fn must_check_config_attr(&mut self, attr: &str, ty: &Ty, span: Span, attr_span: Option<Span>) {
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

    fn check_config_attr(&mut self, attr: &str, id: SchemaId, span: Span, attr_span: Option<Span>) {
        let Some(d) = self.def(id).cloned() else {
            return;
        };
        if self.attr_of(id, attr).is_none() && !d.is_mixin && d.index_sig.is_none() {
            let suggs = suggestions(attr, d.attrs.keys().map(String::as_str));
            self.add_config_attr_error(attr, &d.name, span, attr_span, &suggs);
        }
        if let Some(sig) = &d.index_sig
            && !sig.any_other
        {
            match &sig.key {
                Ty::StrLit(name) if name != attr => {
                    let suggs = suggestions(attr, [name.as_str()]);
                    self.add_config_attr_error(attr, &d.name, span, attr_span, &suggs);
                }
                Ty::Union(types) => {
                    let keys: Vec<&str> = types
                        .iter()
                        .filter_map(|t| match t {
                            Ty::StrLit(s) => Some(s.as_str()),
                            _ => None,
                        })
                        .collect();
                    if !keys.is_empty() && !keys.contains(&attr) {
                        let suggs = suggestions(attr, keys);
                        self.add_config_attr_error(attr, &d.name, span, attr_span, &suggs);
                    }
                }
                _ => {}
            }
        }
    }

    fn add_config_attr_error(
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

    fn check_config_value_recursively(&mut self, value_ty: &Ty, value_span: Span) {
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
            if let Some(Some(top)) = self.config_ctx.last().cloned() {
                self.must_check_config_attr(&key, &top, value_span, Some(attr_span));
            }
            let depth = self.switch_ctx_by_name(&key);
            if let Some(Some(top)) = self.config_ctx.last().cloned() {
                self.attr_must_assignable_to(&attr_ty, &top, value_span, None, Some(attr_span));
            }
            self.check_config_value_recursively(&attr_ty, value_span);
            self.pop_ctx(depth);
        }
        self.depth -= 1;
    }

    /// Checks a keyed entry against the expected type; `Some` with the
    /// value's type when it walked the value.
    fn check_config_entry(&mut self, key: Option<&Node<Expr>>, value: &Node<Expr>) -> Option<Ty> {
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
                        self.must_check_config_attr(name, &top, key.span, None);
                    }
                    depth += self.switch_ctx_by_name(name);
                }
                let ret = self.expr(value);
                let mut val_ty = ret.clone();
                for _ in 1..names.len() {
                    val_ty = Ty::dict(Ty::Str, val_ty);
                }
                if let Some(Some(top)) = self.config_ctx.last().cloned() {
                    self.must_assignable_to(&val_ty, &top, key.span, None);
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

    fn check_attr_ty(&mut self, ty: &Ty, span: Span) {
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
    fn desugar_entry(entry: &Node<ast::ConfigEntry>) -> Option<Node<ast::ConfigEntry>> {
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

    fn walk_config_entries(&mut self, entries: &[Node<ast::ConfigEntry>]) -> Ty {
        self.scopes.push(Scope::default());
        let mut key_types: Vec<Ty> = Vec::new();
        let mut val_types: Vec<Ty> = Vec::new();
        let mut attrs: IndexMap<String, (Ty, Span)> = IndexMap::new();
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
                                Ty::StrLit(name.clone())
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
                            for (k, v) in &d.attrs {
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
        Ty::Dict(Rc::new(DictTy { key, val, attrs }))
    }

    // ---- expressions ----

    fn expr(&mut self, e: &Node<Expr>) -> Ty {
        if self.depth > MAX_DEPTH {
            return Ty::Any;
        }
        self.depth += 1;
        let ty = self.walk_expr(e);
        self.depth -= 1;
        ty
    }

    fn opt_expr(&mut self, e: Option<&Node<Expr>>) -> Ty {
        match e {
            Some(e) => self.expr(e),
            None => Ty::Any,
        }
    }

    fn walk_expr(&mut self, e: &Node<Expr>) -> Ty {
        match &e.node {
            Expr::Identifier(ident) => self.walk_identifier_names(ident, e.span),
            Expr::Unary(u) => {
                let operand = self.expr(&u.operand);
                self.unary(&operand, u.op, u.operand.span)
            }
            Expr::Binary(b) => {
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
            Expr::If(i) => {
                self.expr(&i.cond);
                let body = self.expr(&i.body);
                let orelse = self.expr(&i.orelse);
                self.sup(&[body, orelse])
            }
            Expr::Selector(s) => {
                let mut ty = self.expr(&s.value);
                for name in &s.attr.node.names {
                    ty = self.load_attr(&ty, &name.node, s.attr.span);
                }
                ty
            }
            Expr::Call(c) => self.walk_call(c),
            Expr::Paren(p) => self.expr(&p.expr),
            Expr::Quant(q) => self.walk_quant(q),
            Expr::List(l) => {
                let depth = self.switch_ctx_by_name("[]");
                let items: Vec<Ty> = l.elts.iter().map(|x| self.expr(x)).collect();
                let item = self.sup(&items);
                self.pop_ctx(depth);
                Ty::list(item)
            }
            Expr::ListIfItem(item) => {
                self.expr(&item.if_cond);
                let mut orelse = self.opt_expr(item.orelse.as_deref());
                if let Ty::List(inner) = &orelse {
                    orelse = (**inner).clone();
                }
                let items: Vec<Ty> = item.exprs.iter().map(|x| self.expr(x)).collect();
                let items = self.sup(&items);
                self.sup(&[orelse, items])
            }
            Expr::ListComp(lc) => {
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
            Expr::Starred(s) => {
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
            Expr::DictComp(dc) => self.walk_dict_comp(dc),
            Expr::ConfigIfEntry(c) => {
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
            Expr::Schema(s) => self.walk_schema_expr(s, e.span),
            Expr::Config(c) => self.walk_config_entries(&c.items),
            Expr::Lambda(l) => self.walk_lambda(l, e.span),
            Expr::Subscript(s) => {
                let value = self.expr(&s.value);
                self.subscript(&value, s, s.value.span)
            }
            Expr::Compare(c) => {
                let t1 = self.expr(&c.left);
                if let (Some(first), Some(op)) = (c.comparators.first(), c.ops.first()) {
                    let t2 = self.expr(first);
                    self.compare(&t1, &t2, *op, c.left.span.to(first.span));
                    // KCL checks the later comparisons against the left
                    // operand with the next operator, and skips the last one.
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
            Expr::NumberLit(n) => match (n.binary_suffix, n.value) {
                (Some(suffix), value) => {
                    let raw = match value {
                        ast::NumberLitValue::Int(v) => v,
                        ast::NumberLitValue::Float(v) => {
                            self.compile_error(
                                e.span,
                                "float literal can not be followed the unit suffix".to_string(),
                            );
                            v as i64
                        }
                    };
                    Ty::NumberMultiplier(Some((raw, suffix)))
                }
                (None, ast::NumberLitValue::Int(v)) => Ty::IntLit(v),
                (None, ast::NumberLitValue::Float(v)) => Ty::FloatLit(v),
            },
            Expr::StringLit(s) => Ty::StrLit(s.value.clone()),
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
            Expr::FormattedValue(f) => {
                if let Some(spec) = &f.format_spec {
                    let spec = spec.trim();
                    if spec.starts_with('#')
                        && !["#json", "#yaml"].contains(&spec.to_lowercase().as_str())
                    {
                        self.compile_error(
                            f.value.span,
                            format!("{spec} is a invalid format spec"),
                        );
                    }
                }
                self.expr(&f.value)
            }
            Expr::Missing => Ty::Any,
        }
    }

    fn starred_item(&self, ty: &Ty) -> (Ty, bool) {
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
    fn loop_targets(&mut self, targets: &[Node<ast::Identifier>]) -> Vec<String> {
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

    fn walk_comp_clause(&mut self, clause: &ast::CompClause) {
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
    fn loop_type_check(&mut self, names: &[String], iter_ty: &Ty, iter_span: Span) {
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

    fn walk_quant(&mut self, q: &ast::QuantExpr) -> Ty {
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

    fn walk_dict_comp(&mut self, dc: &ast::DictComp) -> Ty {
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

    fn walk_schema_expr(&mut self, s: &ast::SchemaExpr, _span: Span) -> Ty {
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
                self.config_ctx.push(Some(def_ty.clone()));
                let config = self.expr(&s.config);
                self.config_ctx.pop();
                self.binary(&def_ty, &config, ast::BinOp::BitOr, s.name.span)
            }
            Ty::Schema(st) => {
                self.config_ctx.push(Some(def_ty.clone()));
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

    fn func_name(func: &Expr) -> String {
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

    fn walk_call(&mut self, c: &ast::CallExpr) -> Ty {
        let call_ty = self.expr(&c.func);
        let span = c.func.span;
        let name = Self::func_name(&c.func.node);
        match &call_ty {
            Ty::Any => {
                self.do_arguments_check(&name, span, &c.args, &c.keywords, &FnTy::variadic());
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
    fn upgrade_type_for_expr(
        &mut self,
        expected: &Ty,
        expr: &Node<Expr>,
        span: Span,
        def_span: Option<Span>,
    ) -> Ty {
        let value_ty = match expected {
            Ty::Schema(_) | Ty::List(_) | Ty::Dict(_) | Ty::Union(_) => {
                self.config_ctx.push(Some(expected.clone()));
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

    fn do_arguments_check(
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

    fn walk_lambda(&mut self, l: &ast::LambdaExpr, span: Span) -> Ty {
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

    fn subscript_index(&mut self, value: &Ty, index: &Node<Expr>, span: Span) -> Ty {
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

    fn subscript(&mut self, value: &Ty, s: &ast::Subscript, span: Span) -> Ty {
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

    fn binary(&mut self, left: &Ty, right: &Ty, op: ast::BinOp, span: Span) -> Ty {
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
                    let mut attrs = d1.attrs.clone();
                    for (k, v) in &d2.attrs {
                        attrs.insert(k.clone(), v.clone());
                    }
                    let key = self.sup(&[d1.key.clone(), d2.key.clone()]);
                    let val = self.sup(&[d1.val.clone(), d2.val.clone()]);
                    (true, Ty::Dict(Rc::new(DictTy { key, val, attrs })))
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

    fn unary(&mut self, ty: &Ty, op: ast::UnaryOp, span: Span) -> Ty {
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

    fn compare(&mut self, left: &Ty, right: &Ty, op: ast::CmpOp, span: Span) {
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

trait ModulePkg {
    /// The module's package, or the given one when the module has none.
    fn pkg_or(&self, pkgpath: &str) -> String;
}

impl ModulePkg for ast::Module {
    fn pkg_or(&self, pkgpath: &str) -> String {
        if self.pkg.is_empty() {
            pkgpath.to_string()
        } else {
            self.pkg.clone()
        }
    }
}

#[cfg(test)]
mod tests;
