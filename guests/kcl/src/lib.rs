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
mod collections;
pub mod diagnostic;
pub mod embed;
pub mod error;
pub mod eval;
pub mod r#import;
pub mod lexer;
pub mod loader;
pub mod modules;
pub mod parser;
pub mod source;
pub mod value;

pub mod settings;

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
    /// `-E name=dir`: external packages the imports reach by name; they
    /// win over `kcl.mod`'s path dependencies of the same name.
    pub package_maps: Vec<(String, PathBuf)>,
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
    /// `-r`, `--strict-range-check`: `+`, `-`, `*`, `**` and `<<` must keep
    /// numbers within 32 bits.
    pub strict_range_check: bool,
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
    /// The first error, the one a host reports as the step's failure.
    pub error: KclError,
    /// The errors KCL prints after `error`, in its order: a program that
    /// fails before it runs reports every syntax and static error it has.
    pub more: Vec<KclError>,
    pub sources: source::SourceMap,
    /// What `print()` wrote before the failure.
    pub logs: String,
}

impl RunError {
    /// A failure with one error.
    pub fn new(error: KclError, sources: source::SourceMap, logs: String) -> RunError {
        RunError {
            error,
            more: Vec::new(),
            sources,
            logs,
        }
    }

    /// Every error, in the order KCL prints them.
    pub fn errors(&self) -> impl Iterator<Item = &KclError> {
        std::iter::once(&self.error).chain(&self.more)
    }

    /// The errors as `kcl run` prints them on stderr, one after the other:
    /// `error[code]: Kind`, the source line under each position with a
    /// caret and label, then the notes.
    pub fn render(&self) -> String {
        self.errors()
            .map(|e| diagnostic::render(e, &self.sources))
            .collect()
    }
}

/// The errors KCL reports before it evaluates a loaded program, in its
/// order: every file's syntax and import errors, then the checker's. KCL's
/// parser recovers from a syntax error and its checker still runs, so a
/// program with both prints both.
pub(crate) fn static_errors(
    load_errors: Vec<KclError>,
    packages: &indexmap::IndexMap<String, Vec<std::rc::Rc<ast::Module>>>,
) -> Vec<KclError> {
    let mut errors = load_errors;
    errors.extend(checker::check_packages_all(packages));
    errors
}

/// A failure with `errors` (at least one).
pub(crate) fn failure(
    errors: Vec<KclError>,
    sources: &source::SourceMap,
    logs: String,
) -> Option<Box<RunError>> {
    let mut errors = errors.into_iter();
    let error = errors.next()?;
    Some(Box::new(RunError {
        error,
        more: errors.collect(),
        sources: sources.clone(),
        logs,
    }))
}

/// Loads, checks and evaluates a program as `kcl run` does.
pub fn run(options: &RunOptions) -> Result<RunOutput, Box<RunError>> {
    let mut sources = source::SourceMap::default();
    let fail = |error: KclError, sources: &source::SourceMap, logs: String| {
        Box::new(RunError::new(error, sources.clone(), logs))
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
    let errors = static_errors(loaded.errors, &loaded.program.packages);
    if let Some(failed) = failure(errors, &sources, String::new()) {
        return Err(failed);
    }
    let program = eval::Program {
        packages: loaded.program.packages,
    };
    let eval_options = eval::EvalOptions {
        options: values,
        file_root: options.file_root.clone(),
        step_limit: None,
        show_hidden: options.show_hidden,
        strict_range_check: options.strict_range_check,
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
        Some((stream, plan)) => (
            decode_output_stream(stream, &sources, &evaluated.logs)?,
            plan.clone(),
        ),
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

/// What `manifests.yaml_stream` wrote, read back as the program's output
/// (KCL unwraps the reading, so a failure reads as its panic message).
pub(crate) fn decode_output_stream(
    stream: &str,
    sources: &source::SourceMap,
    logs: &str,
) -> Result<value::Value, Box<RunError>> {
    value::yaml::decode_stream(stream).map_err(|e| {
        let message = format!("called `Result::unwrap()` on an `Err` value: {e}");
        Box::new(RunError::new(
            KclError::new(ErrorKind::EvaluationError, message),
            sources.clone(),
            logs.to_string(),
        ))
    })
}

/// KCL's runtime errors know the line they happened on, not the column:
/// only a failed check points at its schema expression.
pub(crate) fn runtime_positions(mut error: KclError) -> KclError {
    let keep_first = error.kind == ErrorKind::SchemaCheckFailure;
    for (i, label) in error.labels.iter_mut().enumerate() {
        if !(keep_first && i == 0) {
            label.span = diagnostic::line_only(label.span);
        }
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors_of(source: &str) -> Vec<(String, String)> {
        let options = RunOptions {
            sources: vec![("/kcl/main.k".to_string(), source.to_string())],
            work_dir: Some(PathBuf::from("/kcl")),
            ..RunOptions::default()
        };
        match run(&options) {
            Ok(output) => panic!("expected errors, got {:?}", output.yaml),
            Err(failed) => failed
                .errors()
                .map(|e| {
                    let message = e.labels.first().map_or(&e.message, |l| &l.message);
                    (e.kind.title().to_string(), message.clone())
                })
                .collect(),
        }
    }

    /// An error's kind and first label, as KCL prints them.
    type Printed = (&'static str, &'static str);

    // Expectations from KCL 0.12.3 (kcl-lib), which prints each of these.
    #[test]
    fn reports_every_error_found_before_evaluation() {
        let cases: &[(&str, &str, &[Printed])] = &[
            (
                "syntax errors, then the checker's",
                "a = 1 +\nb: int = \"s\"\nc: str = 1\n",
                &[
                    (
                        "InvalidSyntax",
                        "expected one of [\"identifier\", \"literal\", \"(\", \"[\", \"{\"] got newline",
                    ),
                    ("TypeError", "expected int, got str(s)"),
                    ("TypeError", "expected str, got int(1)"),
                ],
            ),
            (
                "several checker errors in source order",
                "schema A:\n    x: int\na = A {y = 1}\nb: str = 1\n",
                &[
                    ("CompileError", "Cannot add member 'y' to schema 'A'"),
                    ("TypeError", "expected str, got int(1)"),
                ],
            ),
            (
                "a runtime error alone",
                "a = [1][3]\n",
                &[("EvaluationError", "list index out of range: 3")],
            ),
        ];
        for (name, source, want) in cases {
            let want: Vec<(String, String)> = want
                .iter()
                .map(|(k, m)| (k.to_string(), m.to_string()))
                .collect();
            assert_eq!(errors_of(source), want, "{name}");
        }
    }
}
