//! The KCL configuration language.
//!
//! Stages, each in its own module: source positions (`source`), tokens
//! (`lexer`), the syntax tree (`ast`, built by `parser`), loading a program's
//! files and packages (`loader`), static checks (`checker`), evaluation
//! (`eval`) over KCL's values (`value`: the value model, unification, YAML
//! and JSON), the builtins (`builtins`) and system modules (`modules`).
//! Errors are values (`error::KclError`) at every stage: nothing panics on
//! any input.

pub mod ast;
pub mod builtins;
pub mod checker;
pub mod cli;
pub mod diagnostic;
pub mod embed;
pub mod error;
pub mod eval;
pub mod lexer;
pub mod loader;
pub mod modules;
pub mod parser;
pub mod source;
pub mod value;

mod settings;

pub use error::{ErrorKind, KclError};

use std::path::PathBuf;

/// What `kcl run` is given.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Files and directories, as on `kcl run`'s command line (a directory
    /// is every `.k` file in it); together they are the main package.
    pub inputs: Vec<PathBuf>,
    /// Files given as text instead of paths: (name as printed in errors,
    /// source). Used when nothing is read from a file system.
    pub sources: Vec<(String, String)>,
    /// The directory relative paths, `kcl.mod` lookup and imports start
    /// from; the current directory when `None`.
    pub work_dir: Option<PathBuf>,
    /// `-D name=value`, the value as written (parsed as KCL parses it).
    pub options: Vec<(String, String)>,
    /// `-Y settings.yaml` files.
    pub settings: Vec<PathBuf>,
    /// `-S path`: print only the selected values.
    pub path_selectors: Vec<String>,
    /// `--sort-keys`
    pub sort_keys: bool,
    /// `--disable-none`: drop `None` values from the output.
    pub disable_none: bool,
    /// `--show-hidden`: also print `_hidden` names.
    pub show_hidden: bool,
    /// The directory the `file` module may read below; nothing when `None`.
    pub file_root: Option<PathBuf>,
    /// Bytes of stack the evaluation may use before a deep recursion ends
    /// in KCL's recursion error (`eval::DEFAULT_STACK_BUDGET` when
    /// `None`); a host running on a larger stack may allow more.
    pub stack_budget: Option<usize>,
}

/// What a successful run printed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunOutput {
    /// The program's values as `kcl run` prints them (YAML; a stream when the
    /// program's output is a list of configs).
    pub yaml: String,
    /// What `print()` wrote, in order.
    pub logs: String,
}

/// A failed run: the error and the program's sources, to render it.
#[derive(Debug, Clone)]
pub struct RunError {
    pub error: KclError,
    pub sources: source::SourceMap,
    /// What `print()` wrote before the failure.
    pub logs: String,
}

impl RunError {
    /// The error as `kcl run` prints it on stderr: `error[code]: Kind`, the
    /// source line under each position with a caret and label, then the
    /// notes.
    pub fn render(&self) -> String {
        diagnostic::render(&self.error, &self.sources)
    }
}

/// Loads, checks and evaluates a program as `kcl run` does.
pub fn run(options: &RunOptions) -> Result<RunOutput, Box<RunError>> {
    let mut sources = source::SourceMap::default();
    let fail = |error: KclError, sources: &source::SourceMap, logs: String| {
        Box::new(RunError {
            error,
            sources: sources.clone(),
            logs,
        })
    };
    let current_dir = std::env::current_dir().unwrap_or_default();
    let base = match &options.work_dir {
        Some(dir) => current_dir.join(dir),
        None => current_dir.clone(),
    };
    let settings::Settings {
        options: merged,
        values,
    } = settings::apply(options, &base).map_err(|e| fail(e, &sources, String::new()))?;
    let options = &merged;
    let loaded = loader::load_run_options(options, &loader::NativeFs, &current_dir, &mut sources);
    if let Some(e) = loaded.errors.into_iter().next() {
        return Err(fail(e, &sources, String::new()));
    }
    let program = eval::Program {
        packages: loaded.program.packages,
    };
    let checked: indexmap::IndexMap<String, Vec<ast::Module>> = program
        .packages
        .iter()
        .map(|(pkg, modules)| {
            (
                pkg.clone(),
                modules.iter().map(|m| m.as_ref().clone()).collect(),
            )
        })
        .collect();
    if let Err(e) = checker::check_packages(&checked) {
        return Err(fail(e, &sources, String::new()));
    }
    let eval_options = eval::EvalOptions {
        options: values,
        file_root: options.file_root.clone(),
        step_limit: None,
        show_hidden: options.show_hidden,
        stack_budget: options.stack_budget,
        program_paths: sources
            .files()
            .first()
            .map(|f| modules::file::ProgramPaths::for_main_file(std::path::Path::new(&f.path)))
            .unwrap_or_default(),
    };
    let evaluated = eval::evaluate(program, eval_options)
        .map_err(|(e, logs)| fail(runtime_positions(e), &sources, logs))?;
    // `manifests.yaml_stream` replaces the output and the plan's options.
    let (output, plan) = match &evaluated.output_stream {
        Some((stream, plan)) => {
            let output = value::yaml::decode_stream(stream).map_err(|e| {
                let message = format!("called `Result::unwrap()` on an `Err` value: {e}");
                fail(
                    KclError::new(ErrorKind::EvaluationError, message),
                    &sources,
                    evaluated.logs.clone(),
                )
            })?;
            (output, plan.clone())
        }
        None => (
            evaluated.output.clone(),
            value::yaml::PlanOptions {
                sort_keys: options.sort_keys,
                disable_none: options.disable_none,
                show_hidden: options.show_hidden,
                ..value::yaml::PlanOptions::default()
            },
        ),
    };
    let output = eval::select_paths(&output, &options.path_selectors).map_err(|e| {
        let e = runtime_positions(e.or_at(evaluated.end_span));
        fail(e, &sources, evaluated.logs.clone())
    })?;
    let mut yaml = value::yaml::plan(&output, &plan);
    if !yaml.is_empty() && !yaml.ends_with('\n') {
        yaml.push('\n');
    }
    Ok(RunOutput {
        yaml,
        logs: evaluated.logs,
    })
}

/// KCL's runtime errors know the line they happened on, not the column:
/// only a failed check points at its schema expression.
fn runtime_positions(mut error: KclError) -> KclError {
    let keep_first = error.kind == ErrorKind::SchemaCheckFailure;
    for (i, label) in error.labels.iter_mut().enumerate() {
        if !(keep_first && i == 0) {
            label.span = diagnostic::line_only(label.span);
        }
    }
    error
}
