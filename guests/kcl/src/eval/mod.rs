//! The evaluator: runs a checked program and produces its top-level
//! values.
//!
//! Package variables and schema attributes are evaluated as KCL does: in
//! order, but a name read before the statement that sets it runs that
//! statement first (KCL's backtracking), so the order of definitions does
//! not matter. Scopes are frames linked to their parent; a lambda keeps
//! the frame it was written in (closures see later changes to it).

mod config;
mod display;
mod expr;
mod lambda;
mod merge;
mod output;
mod schema;
mod scope;
mod stmt;
#[cfg(test)]
mod tests;
pub(crate) mod types;

use crate::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;

use crate::collections::IndexMap;

use crate::ast;
use crate::error::{ErrorKind, KclError, Result};
use crate::source::Span;
use crate::value::{Dict, Value};

pub use output::select_paths;
pub(crate) use scope::Frame;

/// A lambda and the scope it closed over.
#[derive(Debug)]
pub struct Closure {
    pub lambda: Rc<ast::LambdaExpr>,
    pub(crate) frame: Rc<Frame>,
}

/// A schema or rule definition as the evaluator holds it.
#[derive(Debug)]
pub struct SchemaType {
    pub name: String,
    pub pkgpath: String,
    pub(crate) def: SchemaDef,
    pub(crate) parent: Option<Rc<SchemaType>>,
    pub(crate) mixins: Vec<Rc<SchemaType>>,
    /// The package frame the schema was declared in.
    pub(crate) frame: Rc<Frame>,
    /// The attributes its instances declare, found once on the first
    /// instance (`schema::DeclaredAttrs`).
    pub(crate) declared: std::cell::OnceCell<Rc<schema::DeclaredAttrs>>,
    /// Its instances' lazy body, found once on the first instance.
    pub(crate) body: std::cell::OnceCell<Rc<scope::LazyBody>>,
}

#[derive(Debug)]
pub(crate) enum SchemaDef {
    Schema(Rc<ast::SchemaStmt>),
    Rule(Rc<ast::RuleStmt>),
}

impl SchemaType {
    pub fn full_name(&self) -> String {
        if self.pkgpath.is_empty() || self.pkgpath == MAIN_PKG {
            self.name.clone()
        } else {
            format!("{}.{}", self.pkgpath, self.name)
        }
    }

    pub fn is_rule(&self) -> bool {
        matches!(self.def, SchemaDef::Rule(_))
    }
}

pub const MAIN_PKG: &str = "__main__";

/// A loaded program: its packages' files by package path (`__main__` for
/// the files run).
#[derive(Debug, Default, Clone)]
pub struct Program {
    pub packages: indexmap::IndexMap<String, Vec<Rc<ast::Module>>>,
}

/// What evaluation needs besides the program.
#[derive(Debug, Default, Clone)]
pub struct EvalOptions {
    /// `-D` and settings options, already parsed to values.
    pub options: Vec<(String, Value)>,
    pub file_root: Option<PathBuf>,
    /// Statements and calls allowed before the evaluation stops (the
    /// host's budget); unlimited when `None`.
    pub step_limit: Option<u64>,
    /// `--show-hidden`: output `_hidden` variables too.
    pub show_hidden: bool,
    /// `-r`: numbers must stay within 32 bits (see `value::range`).
    pub strict_range_check: bool,
    /// Bytes of stack the evaluation may use before it stops with KCL's
    /// recursion error instead of overflowing (`DEFAULT_STACK_BUDGET`
    /// when `None`; a WebAssembly guest with a 1 MiB stack gives less).
    pub stack_budget: Option<usize>,
    /// What `file.current()`, `file.workdir()` and `file.modpath()` say.
    pub program_paths: crate::modules::file::ProgramPaths,
}

/// What evaluating the main package produced.
#[derive(Debug, Clone)]
pub struct Evaluated {
    /// What `kcl run` prints, before planning (`crate::value::yaml::plan`).
    pub output: Value,
    /// What `print()` wrote.
    pub logs: String,
    /// The main package's last statement: where an error found in the
    /// output afterwards (a `-S` path not found) points.
    pub end_span: Span,
    /// `manifests.yaml_stream`'s output, when the program called it: it
    /// replaces `output`, planned with its options.
    pub output_stream: Option<(String, crate::value::yaml::PlanOptions)>,
}

/// How deep calls and nested schemas may go before KCL's recursion error
/// (the stack budget usually ends a recursion first).
const MAX_DEPTH: usize = 10_000;

/// The stack the evaluation may use by default: less than the smallest
/// stack it runs on (a WebAssembly guest's 1 MiB, a test thread's 2 MiB).
/// A host with more (a native main thread has 8 MiB) may allow more.
pub const DEFAULT_STACK_BUDGET: usize = 768 << 10;

/// The address of a local of the calling function: how far down the
/// stack is (it grows downwards on every target we build for, the
/// WebAssembly shadow stack included).
#[inline(never)]
fn stack_position() -> usize {
    let marker = 0u8;
    std::hint::black_box(std::ptr::addr_of!(marker)) as usize
}

/// The state of one evaluation.
pub struct Evaluator {
    program: Program,
    packages: HashMap<String, Rc<Frame>>,
    /// Per package: the names its files import, to the package path or
    /// system module they name.
    imports: HashMap<String, HashMap<String, Import>>,
    /// Type aliases per package.
    aliases: HashMap<String, HashMap<String, ast::Type>>,
    options: IndexMap<String, Value>,
    logs: String,
    file_root: Option<PathBuf>,
    /// Every instance made, under its schema's and each parent's full
    /// name, with the package whose code made it.
    instances: IndexMap<String, Vec<(Value, Rc<str>)>>,
    /// The last package statement run: errors found after the run (its
    /// output's conflicts) point there, as KCL's do.
    last_stmt: Span,
    /// The last statement or expression entered (KCL's "panic line"): a
    /// config converted to a schema by an annotation is an instance made
    /// there, as KCL records it.
    last_node: Span,
    /// The package whose code is running: names a parent's or mixin's
    /// body does not find in the instance's frames are its package's.
    code_pkg: Rc<str>,
    /// The package of the schema expression being evaluated.
    creating_pkg: Rc<str>,
    /// Where each instance was made, by the address of its value: a
    /// required attribute missing in a nested instance is reported there.
    instance_spans: HashMap<usize, Span>,
    /// The config entry each dict value was written in, by its address:
    /// an instance made from it later is reported there (KCL's config
    /// meta).
    config_spans: HashMap<usize, Span>,
    schema_stack: Vec<schema::SchemaCtx>,
    scalars: Vec<Value>,
    /// The index in `scalars` of the last schema expression statement's
    /// value.
    schema_scalar: Option<usize>,
    depth: usize,
    /// Where the stack was when the evaluation started, and how much of
    /// it the evaluation may use.
    stack_base: usize,
    stack_budget: usize,
    steps: u64,
    step_limit: Option<u64>,
    show_hidden: bool,
    strict_range_check: bool,
    /// How many schema expressions are being evaluated, one inside
    /// another.
    schema_expr_depth: usize,
    /// One shared copy per lambda expression of the program, by address.
    lambdas: HashMap<usize, Rc<ast::LambdaExpr>>,
    program_paths: crate::modules::file::ProgramPaths,
    output_stream: Option<(String, crate::value::yaml::PlanOptions)>,
    scratch: crate::modules::file::Scratch,
}

#[derive(Debug, Clone)]
pub(crate) enum Import {
    Package(String),
    System(String),
}

impl Evaluator {
    pub fn new(program: Program, options: EvalOptions) -> Evaluator {
        Evaluator {
            program,
            packages: HashMap::default(),
            imports: HashMap::default(),
            aliases: HashMap::default(),
            options: options.options.into_iter().collect(),
            logs: String::new(),
            file_root: options.file_root,
            instances: IndexMap::default(),
            creating_pkg: Rc::from(MAIN_PKG),
            code_pkg: Rc::from(MAIN_PKG),
            last_stmt: Span::default(),
            last_node: Span::default(),
            instance_spans: HashMap::default(),
            config_spans: HashMap::default(),
            schema_stack: Vec::new(),
            scalars: Vec::new(),
            schema_scalar: None,
            depth: 0,
            stack_base: stack_position(),
            stack_budget: options.stack_budget.unwrap_or(DEFAULT_STACK_BUDGET),
            steps: 0,
            step_limit: options.step_limit,
            lambdas: HashMap::default(),
            program_paths: options.program_paths,
            output_stream: None,
            scratch: crate::modules::file::Scratch::default(),
            show_hidden: options.show_hidden,
            strict_range_check: options.strict_range_check,
            schema_expr_depth: 0,
        }
    }

    /// Evaluates the main package.
    pub fn run_main(mut self) -> std::result::Result<Evaluated, (KclError, String)> {
        let result = self.package(MAIN_PKG).and_then(|frame| {
            let globals = frame.globals_in_order();
            let scalars = std::mem::take(&mut self.scalars);
            self.output(&scalars, &globals, self.show_hidden)
                .map_err(|e| locate(e, self.last_stmt))
        });
        let logs = std::mem::take(&mut self.logs);
        match result {
            Ok(output) => Ok(Evaluated {
                output,
                logs,
                end_span: self.last_stmt,
                output_stream: self.output_stream.take(),
            }),
            Err(e) => Err((e, logs)),
        }
    }

    /// The frame of a package, evaluating it the first time.
    pub(crate) fn package(&mut self, pkgpath: &str) -> Result<Rc<Frame>> {
        if let Some(frame) = self.packages.get(pkgpath) {
            return Ok(frame.clone());
        }
        let mut modules = self.program.packages.get(pkgpath).cloned().ok_or_else(|| {
            KclError::new(
                ErrorKind::CannotFindModule,
                format!("Cannot find the module {pkgpath}"),
            )
        })?;
        if pkgpath == MAIN_PKG {
            merge::merge_configs(&mut modules);
        }
        let frame = Frame::package(pkgpath, &modules);
        self.packages.insert(pkgpath.to_string(), frame.clone());
        for module in &modules {
            self.scan_module(pkgpath, module)?;
        }
        self.run_lazy_body(&frame)?;
        Ok(frame)
    }

    /// Records a module's imports and type aliases before its statements
    /// run (both may be used before they are written).
    fn scan_module(&mut self, pkgpath: &str, module: &ast::Module) -> Result<()> {
        for stmt in &module.body {
            match &stmt.node {
                ast::Stmt::Import(import) => {
                    let target = if crate::modules::is_system_module(&import.pkgpath)
                        || (import.pkgpath.is_empty()
                            && crate::modules::is_system_module(&import.rawpath.node))
                    {
                        let name = if import.pkgpath.is_empty() {
                            &import.rawpath.node
                        } else {
                            &import.pkgpath
                        };
                        Import::System(name.clone())
                    } else if import.pkgpath.is_empty() {
                        self.resolve_import(pkgpath, &import.rawpath.node)
                    } else {
                        Import::Package(import.pkgpath.clone())
                    };
                    self.imports
                        .entry(pkgpath.to_string())
                        .or_default()
                        .insert(import.name.clone(), target);
                }
                ast::Stmt::TypeAlias(alias) => {
                    self.aliases
                        .entry(pkgpath.to_string())
                        .or_default()
                        .insert(alias.type_name.node.name(), alias.ty.node.clone());
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn resolve_import(&self, from: &str, rawpath: &str) -> Import {
        if crate::modules::is_system_module(rawpath) {
            return Import::System(rawpath.to_string());
        }
        let leading = rawpath.chars().take_while(|c| *c == '.').count();
        let rest = rawpath.get(leading..).unwrap_or_default();
        if leading == 0 {
            return Import::Package(rest.to_string());
        }
        let mut base: Vec<&str> = if from == MAIN_PKG {
            Vec::new()
        } else {
            from.split('.').collect()
        };
        for _ in 1..leading {
            base.pop();
        }
        if !rest.is_empty() {
            base.push(rest);
        }
        Import::Package(base.join("."))
    }

    /// Counts a step of the budget and a level of depth.
    pub(crate) fn enter(&mut self, span: Span) -> Result<()> {
        self.steps = self.steps.saturating_add(1);
        if let Some(limit) = self.step_limit
            && self.steps > limit
        {
            return Err(KclError::at(
                ErrorKind::Interrupted,
                span,
                "the evaluation exceeded its step budget",
            ));
        }
        let used = self.stack_base.saturating_sub(stack_position());
        if self.depth >= MAX_DEPTH || used > self.stack_budget {
            return Err(error_at(
                ErrorKind::RecursionError,
                span,
                "maximum recursion depth exceeded",
            ));
        }
        self.depth += 1;
        Ok(())
    }

    pub(crate) fn add_scalar(&mut self, value: Value, is_schema: bool) {
        if is_schema {
            if let Some(i) = self.schema_scalar
                && i < self.scalars.len()
            {
                self.scalars.remove(i);
            }
            self.schema_scalar = Some(self.scalars.len());
        }
        self.scalars.push(value);
    }

    pub(crate) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    pub(crate) fn step(&mut self, span: Span) -> Result<()> {
        self.steps = self.steps.saturating_add(1);
        match self.step_limit {
            Some(limit) if self.steps > limit => Err(KclError::at(
                ErrorKind::Interrupted,
                span,
                "the evaluation exceeded its step budget",
            )),
            _ => Ok(()),
        }
    }
}

/// Places an error at `span` unless it has a place already or `span` is
/// unknown (a call from a builtin, a conversion without a statement).
pub(crate) fn locate(e: KclError, span: Span) -> KclError {
    if span == Span::default() {
        e
    } else {
        e.or_at(span)
    }
}

/// An error at `span`, or without a position when `span` is unknown.
pub(crate) fn error_at(kind: ErrorKind, span: Span, message: impl Into<String>) -> KclError {
    locate(KclError::new(kind, message), span)
}

impl crate::value::unify::SchemaResolver for Evaluator {
    fn resolve_schema(
        &mut self,
        schema: &crate::value::SchemaValue,
        attrs: Dict,
        keys: Vec<String>,
    ) -> Result<Value> {
        let Some(ty) = schema.ty.clone() else {
            return Ok(Value::Schema(Rc::new(crate::value::SchemaValue {
                attrs,
                ..schema.clone()
            })));
        };
        let mut config = Dict::new();
        for key in &keys {
            if let Some(v) = attrs.get(key) {
                config.insert_with_op(key.clone(), v.clone(), ast::ConfigEntryOperation::Override);
            }
        }
        // Errors point where the instance was made, else at the
        // statement that unified it, as KCL's do.
        let made_at = self
            .instance_spans
            .get(&(std::ptr::from_ref(schema) as usize))
            .copied()
            .unwrap_or(self.last_stmt);
        self.instantiate(
            &ty,
            config,
            schema.args.clone(),
            schema.kwargs.clone(),
            made_at,
        )
    }
}

impl crate::builtins::Interp for Evaluator {
    fn call(
        &mut self,
        func: &Value,
        args: Vec<Value>,
        kwargs: Vec<(String, Value)>,
    ) -> Result<Value> {
        self.call_value(func, args, kwargs, Span::default())
    }

    fn option(&self, name: &str) -> Option<Value> {
        self.options.get(name).cloned()
    }

    fn print(&mut self, text: &str) {
        self.logs.push_str(text);
    }

    fn read_file(&self, path: &str) -> Option<std::io::Result<Vec<u8>>> {
        Some(crate::modules::file::read_below(
            self.file_root.as_ref()?,
            path,
        ))
    }

    fn instances(&self, schema_full_name: &str) -> Vec<Value> {
        self.schema_instances(schema_full_name, false)
    }

    fn file_root(&self) -> Option<&std::path::Path> {
        self.file_root.as_deref()
    }

    fn program_path(&self, which: crate::modules::file::ProgramPath) -> String {
        self.program_paths.get(which).to_owned()
    }

    fn scratch(&mut self) -> Option<&mut crate::modules::file::Scratch> {
        Some(&mut self.scratch)
    }

    fn set_output_stream(&mut self, yaml: String, options: crate::value::yaml::PlanOptions) {
        self.output_stream = Some((yaml, options));
    }

    fn union(&mut self, left: Value, right: &Value) -> Result<Value> {
        self.binary_values(left, ast::BinOp::BitOr, right.clone())
    }
}

/// Evaluates a loaded program's main package.
pub fn evaluate(
    program: Program,
    options: EvalOptions,
) -> std::result::Result<Evaluated, (KclError, String)> {
    Evaluator::new(program, options).run_main()
}
