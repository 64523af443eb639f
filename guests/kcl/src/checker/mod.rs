//! The static checks KCL makes before it evaluates a program: names that
//! are not defined, attributes a schema does not have, values whose type
//! does not fit where they go, wrong argument counts, illegal inheritance,
//! immutable names assigned twice. It follows KCL's resolver (its
//! messages, positions and order), and where it cannot know a type it
//! says `any` and lets the evaluator decide: a program KCL accepts must
//! pass here.
//!
//! Where KCL 0.12.3 and later versions differ: an unknown name in a mixin
//! is left to the host as 0.12.3 does (later versions report capitalized
//! ones); a top-level lambda called before its declaration is checked
//! against its parameters as later versions do (0.12.3 fails at run time
//! instead), which is what the language suite expects.
//!
//! By concern: `ty` (the types and their rules), `global` (a package's
//! first passes: schemas, names, annotations), `stmt` (statements and
//! names), `expr` (expressions, calls, operators), `config` (config
//! literals against their expected type), `assign` (type compatibility,
//! attributes), `merge` (same-name configs merged first), `builtin` and
//! `signatures` (what KCL declares of its builtins and system modules).

mod assign;
mod builtin;
mod config;
mod expr;
mod global;
mod merge;
mod signatures;
mod stmt;
mod ty;

use crate::collections::IndexMap;
use crate::collections::{HashMap, HashSet};
use std::borrow::Borrow;
use std::rc::Rc;

use crate::ast::{self, Expr, Node, Stmt};
use crate::error::{ErrorKind, KclError};
use crate::loader::Program;
use crate::source::Span;
use ty::{
    DictTy, FnTy, ModuleKind, ModuleTy, Param, SchemaBases, SchemaId, SchemaTy, Ty, assignable_to,
    is_upper_bound, sup_with,
};

pub use crate::ast::MAIN_PKG;

/// How deep expressions may nest before the checker stops descending (the
/// evaluator reports the program's own recursion; this only keeps the
/// checker's stack bounded).
const MAX_DEPTH: usize = 256;

/// Checks a loaded program and returns the first error, in KCL's order.
pub fn check(program: &Program) -> Result<(), KclError> {
    match check_all(program).into_iter().next() {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

/// Every error the checker finds in a loaded program, in KCL's order (KCL
/// prints them all).
pub fn check_all(program: &Program) -> Vec<KclError> {
    check_packages_all(&program.packages)
}

/// Checks a program given as its packages' modules (the main package under
/// `MAIN_PKG`, imported ones under their package path) and returns the
/// first error, in KCL's order.
pub fn check_packages<M: Borrow<ast::Module>>(
    pkgs: &indexmap::IndexMap<String, Vec<M>>,
) -> Result<(), KclError> {
    match check_packages_all(pkgs).into_iter().next() {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

/// Every error in a program given as its packages' modules.
pub fn check_packages_all<M: Borrow<ast::Module>>(
    pkgs: &indexmap::IndexMap<String, Vec<M>>,
) -> Vec<KclError> {
    let mut modules: IndexMap<String, Vec<&ast::Module>> = pkgs
        .iter()
        .map(|(pkg, modules)| (pkg.clone(), modules.iter().map(Borrow::borrow).collect()))
        .collect();
    // KCL checks the main package with same-name top-level configs merged.
    let merged = modules
        .get(MAIN_PKG)
        .and_then(|main| merge::merge_configs(main));
    if let Some(merged) = &merged {
        modules.insert(MAIN_PKG.to_string(), merged.iter().collect());
    }
    let mut checker = Checker::new(&modules);
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

/// A config literal's expected type and where it was declared.
#[derive(Debug, Clone)]
struct Expected {
    ty: Ty,
    declared: Option<Span>,
}

fn expected(ty: &Ty, declared: Option<Span>) -> Option<Expected> {
    Some(Expected {
        ty: ty.clone(),
        declared,
    })
}

/// What makes two errors the same.
type ErrorKey = (ErrorKind, String, Vec<(Span, String)>, Vec<String>);

struct Checker<'p> {
    pkgs: &'p IndexMap<String, Vec<&'p ast::Module>>,
    defs: Vec<SchemaDef>,
    /// Package scopes, by package path.
    pkg_scopes: HashMap<Rc<str>, Scope>,
    /// Top-level names already assigned, by package (for immutability and
    /// unique keys).
    global_names: HashMap<Rc<str>, IndexMap<String, Span>>,
    checked: HashSet<String>,
    /// Packages importing packages: each with the position of its last
    /// import, in the order KCL first met them.
    import_nodes: IndexMap<String, Option<Span>>,
    import_edges: Vec<(String, String)>,
    errors: Vec<KclError>,
    reported: HashSet<ErrorKey>,
    // The position of the walk. Shared: the package's maps are looked up
    // by it for nearly every name.
    pkg: Rc<str>,
    /// The current file's imports, with where they were written.
    imports: HashMap<String, (Ty, Span)>,
    /// Every file's imports, by package.
    pkg_imports: HashMap<String, HashMap<String, (Ty, Span)>>,
    scopes: Vec<Scope>,
    /// Top-level lambdas' signatures by package (`None`: assigned twice).
    global_lambdas: HashMap<String, HashMap<String, Option<FnTy>>>,
    schema: Option<SchemaId>,
    /// The current schema body's attribute types as its assignments give
    /// them (KCL's resolver keeps them on its copy of the schema).
    schema_inferred: HashMap<String, Ty>,
    local_vars: Vec<String>,
    /// What the config literal being walked is expected to be, with where
    /// that expectation was declared (an attribute, an annotation).
    config_ctx: Vec<Option<Expected>>,
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
    fn new(pkgs: &'p IndexMap<String, Vec<&'p ast::Module>>) -> Checker<'p> {
        Checker {
            pkgs,
            defs: Vec::new(),
            pkg_scopes: HashMap::default(),
            global_names: HashMap::default(),
            checked: HashSet::default(),
            import_nodes: IndexMap::default(),
            import_edges: Vec::new(),
            errors: Vec::new(),
            reported: HashSet::default(),
            pkg: Rc::from(MAIN_PKG),
            imports: HashMap::default(),
            pkg_imports: HashMap::default(),
            scopes: Vec::new(),
            global_lambdas: HashMap::default(),
            schema: None,
            schema_inferred: HashMap::default(),
            local_vars: Vec::new(),
            config_ctx: Vec::new(),
            depth: 0,
        }
    }

    // ---- errors ----

    /// KCL reports an error once however often its checks meet it.
    fn push_error(&mut self, err: KclError) {
        let key: ErrorKey = (
            err.kind,
            err.message.clone(),
            err.labels
                .iter()
                .map(|l| (l.span, l.message.clone()))
                .collect(),
            err.notes.clone(),
        );
        if self.reported.insert(key) {
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
            .or_else(|| self.pkg_imports.get(&*self.pkg).and_then(|m| m.get(name)))
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
        names.extend(builtin::builtin_names().map(str::to_string));
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
        if modules.is_empty() {
            // A package of no files (a dependency's module path naming
            // nothing) has no names: reading one is an error.
            self.pkg_scopes.entry(Rc::from(pkgpath)).or_default();
            return;
        }
        // Imported packages are checked first, as KCL does.
        let mut import_table: HashMap<String, String> = HashMap::default();
        for module in modules {
            for stmt in &module.body {
                if let Stmt::Import(import) = &stmt.node {
                    let path = import.resolved_pkgpath(&module.pkg_or(pkgpath));
                    match import_table.get(&import.name) {
                        Some(previous) if *previous != path => self.compile_error(
                            stmt.span,
                            format!(
                                "the name '{0}' is defined multiple times, '{0}' must be defined only once",
                                import.name
                            ),
                        ),
                        Some(_) => {}
                        None => {
                            import_table.insert(import.name.clone(), path.clone());
                        }
                    }
                    if pkgs.contains_key(&path) {
                        self.add_dependency(pkgpath, &path, stmt.span);
                        self.report_import_cycles(pkgpath);
                        self.check_pkg(&path);
                    }
                }
            }
        }
        let saved_pkg = std::mem::replace(&mut self.pkg, Rc::from(pkgpath));
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

    fn add_dependency(&mut self, from: &str, to: &str, span: Span) {
        for node in [from, to] {
            if !self.import_nodes.contains_key(node) {
                self.import_nodes.insert(node.to_string(), None);
            }
        }
        // KCL remembers one import position per package: the last one.
        self.import_nodes.insert(from.to_string(), Some(span));
        self.import_edges.push((from.to_string(), to.to_string()));
    }

    fn reachable(&self, start: &str, forward: bool) -> HashSet<String> {
        let mut seen: HashSet<String> = HashSet::default();
        let mut todo = vec![start.to_string()];
        while let Some(node) = todo.pop() {
            for (a, b) in &self.import_edges {
                let (from, to) = if forward { (a, b) } else { (b, a) };
                if *from == node && seen.insert(to.clone()) {
                    todo.push(to.clone());
                }
            }
        }
        seen
    }

    /// Packages importing each other: every import in the cycle is reported.
    fn report_import_cycles(&mut self, pkgpath: &str) {
        let forward = self.reachable(pkgpath, true);
        if !forward.contains(pkgpath) {
            return;
        }
        let backward = self.reachable(pkgpath, false);
        let cycle: Vec<(String, Option<Span>)> = self
            .import_nodes
            .iter()
            .filter(|(n, _)| forward.contains(*n) && backward.contains(*n))
            .map(|(n, s)| (n.clone(), *s))
            .collect();
        if cycle.len() < 2 {
            return;
        }
        let names: Vec<&str> = cycle.iter().map(|(n, _)| n.as_str()).collect();
        let message = format!(
            "There is a circular reference between modules {}",
            names.join(", ")
        );
        for span in cycle.iter().filter_map(|(_, s)| *s) {
            self.compile_error(span, message.clone());
        }
    }

    fn set_file_imports(&mut self, pkgpath: &str, module: &ast::Module) {
        self.imports.clear();
        for stmt in &module.body {
            if let Stmt::Import(import) = &stmt.node {
                let path = import.resolved_pkgpath(&module.pkg_or(pkgpath));
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
}

impl ast::ImportStmt {
    /// The package imported: as the loader resolved it, else from the path
    /// as written.
    fn resolved_pkgpath(&self, importing_pkg: &str) -> String {
        if self.pkgpath.is_empty() {
            import_pkgpath(importing_pkg, &self.rawpath.node)
        } else {
            self.pkgpath.clone()
        }
    }
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
mod suite;
#[cfg(test)]
mod tests;
