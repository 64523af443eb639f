//! Running KCL inside a host that holds its inputs as data: a program given
//! as text, `option()` values given as JSON values, and the program's
//! documents handed back as JSON values, with no YAML or JSON text in
//! between. This is how a composition function (plait's built-in KCL
//! function, function-kcl) runs a program in its sandbox.
//!
//! The program runs as `kcl run` would run it (the same stages as
//! [`crate::run`]: loading, static checks, evaluation, output planning);
//! only the edges differ.

use std::path::{Path, PathBuf};

use crate::eval::{self, EvalOptions};
use crate::modules::file::ProgramPaths;
use crate::value::json::{EncodeOptions, Node};
use crate::value::yaml::PlanOptions;
use crate::value::{Dict, Value};
use crate::{RunError, RunOptions, loader, source};

/// A program given as text.
#[derive(Debug, Clone, Default)]
pub struct Embedded {
    /// The name errors print for the program's file.
    pub name: String,
    pub source: String,
    /// `option(name)`'s values.
    pub options: Vec<(String, serde_json::Value)>,
    /// Statements and calls allowed before the evaluation stops; unlimited
    /// when `None` (the host's deadline bounds it instead).
    pub step_limit: Option<u64>,
    /// Bytes of stack the evaluation may use before a deep recursion ends
    /// in KCL's recursion error (`eval::DEFAULT_STACK_BUDGET` when `None`).
    /// In wasmtime a guest's calls also use the engine's own stack
    /// (512 KiB by default), which traps when it runs out: a guest gives
    /// less than that.
    pub stack_budget: Option<usize>,
}

/// What `kcl run`'s flags add to an embedded run, as KCL's API takes
/// them (function-kcl's `spec.config`).
#[derive(Debug, Clone, Default)]
pub struct RunConfig {
    /// Top-level arguments as KCL's API takes them, set after the
    /// program's `options`: a value that parses as JSON is that value,
    /// anything else the text itself. A name given twice keeps the value
    /// given last.
    pub arguments: Vec<(String, String)>,
    /// `-S`: keep only the selected values.
    pub path_selectors: Vec<String>,
    /// `--disable-none`: leave out `None` values.
    pub disable_none: bool,
    /// `--show-hidden`: keep hidden (`_name`) names and keys.
    pub show_hidden: bool,
    /// `-r`: numbers must stay within 32 bits.
    pub strict_range_check: bool,
    /// `-E name=dir`: external packages the program's imports reach by
    /// name (they win over a `kcl.mod`'s path dependencies of the same
    /// name), read through the run's file system.
    pub packages: Vec<(String, PathBuf)>,
}

/// What a successful run produced.
#[derive(Debug, Clone, Default)]
pub struct EmbeddedOutput {
    /// The documents `kcl run` would print, in order: one for a program's
    /// top-level names, one per config when its output is a list.
    pub documents: Vec<serde_json::Value>,
    /// The same documents as KCL values, in KCL's key order (JSON objects
    /// here keep theirs sorted), for a host whose output depends on it.
    pub values: Vec<Value>,
    /// What `print()` wrote.
    pub logs: String,
}

/// Loads, checks and evaluates `program`; its errors are values, as
/// [`crate::run`]'s. Nothing is read from a file system: a program that
/// imports a package of its own fails to find it.
pub fn run(program: &Embedded) -> Result<EmbeddedOutput, Box<RunError>> {
    run_with(program, &loader::MemoryFs::new(), &RunConfig::default())
}

/// [`run`], with `config`'s arguments, output flags and external
/// packages; only the packages are read, through `fs`.
pub fn run_with(
    program: &Embedded,
    fs: &dyn loader::FileSystem,
    config: &RunConfig,
) -> Result<EmbeddedOutput, Box<RunError>> {
    let options = RunOptions {
        sources: vec![(program.name.clone(), program.source.clone())],
        package_maps: config.packages.clone(),
        ..RunOptions::default()
    };
    evaluate(
        &options,
        fs,
        Path::new(""),
        program,
        ProgramPaths::for_main_file(Path::new(&program.name)),
        None,
        config,
    )
}

/// Loads, checks and evaluates the KCL package in `directory`, as
/// `kcl run <directory>` does: every `.k` file in it is the main package,
/// its `kcl.mod` (found there or above) names the path dependencies its
/// imports reach, and everything is read through `fs`. `program.name` and
/// `program.source` are not read; its options and limits are. The `file`
/// module may read below `directory`.
pub fn run_directory(
    directory: &Path,
    fs: &dyn loader::FileSystem,
    program: &Embedded,
) -> Result<EmbeddedOutput, Box<RunError>> {
    run_directory_with(directory, fs, program, &RunConfig::default())
}

/// [`run_directory`], with `config`'s arguments, output flags and
/// external packages (besides the `kcl.mod`'s path dependencies).
pub fn run_directory_with(
    directory: &Path,
    fs: &dyn loader::FileSystem,
    program: &Embedded,
    config: &RunConfig,
) -> Result<EmbeddedOutput, Box<RunError>> {
    let options = RunOptions {
        inputs: vec![directory.to_path_buf()],
        work_dir: Some(directory.to_path_buf()),
        package_maps: config.packages.clone(),
        ..RunOptions::default()
    };
    let main_file = first_k_file(fs, directory).unwrap_or_else(|| directory.join("main.k"));
    evaluate(
        &options,
        fs,
        directory,
        program,
        ProgramPaths::for_main_file(&main_file),
        Some(directory.to_path_buf()),
        config,
    )
}

/// The first `.k` file of a directory in name order, the one `kcl run`
/// treats as the program's main file.
fn first_k_file(fs: &dyn loader::FileSystem, directory: &Path) -> Option<PathBuf> {
    let mut files: Vec<_> = fs
        .read_dir(directory)
        .ok()?
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "k") && fs.is_file(p))
        .collect();
    files.sort();
    files.into_iter().next()
}

/// The stages every embedded run shares: loading through `fs`, static
/// checks, evaluation with the program's options and limits, and the
/// output read as documents.
fn evaluate(
    options: &RunOptions,
    fs: &dyn loader::FileSystem,
    current_dir: &Path,
    program: &Embedded,
    program_paths: ProgramPaths,
    file_root: Option<PathBuf>,
    config: &RunConfig,
) -> Result<EmbeddedOutput, Box<RunError>> {
    let mut sources = source::SourceMap::default();
    let fail = |error, sources: &source::SourceMap, logs| {
        Box::new(RunError::new(error, sources.clone(), logs))
    };
    let loaded = loader::load_run_options(options, fs, current_dir, &mut sources);
    let errors = crate::static_errors(loaded.errors, &loaded.program.packages);
    if let Some(failed) = crate::failure(errors, &sources, String::new()) {
        return Err(failed);
    }
    let eval_options = EvalOptions {
        options: program
            .options
            .iter()
            .map(|(name, value)| (name.clone(), from_json(value)))
            .chain(
                config
                    .arguments
                    .iter()
                    .map(|(name, text)| (name.clone(), api_argument(text))),
            )
            .collect(),
        show_hidden: config.show_hidden,
        strict_range_check: config.strict_range_check,
        step_limit: program.step_limit,
        stack_budget: program.stack_budget,
        program_paths,
        file_root,
    };
    let program = eval::Program {
        packages: loaded.program.packages,
    };
    let evaluated = eval::evaluate(program, eval_options)
        .map_err(|(e, logs)| fail(crate::runtime_positions(e), &sources, logs))?;
    // `manifests.yaml_stream` replaces the output and its flags.
    let (output, plan) = match &evaluated.output_stream {
        Some((stream, plan)) => (
            crate::decode_output_stream(stream, &sources, &evaluated.logs)?,
            plan.clone(),
        ),
        None => (
            evaluated.output.clone(),
            PlanOptions {
                disable_none: config.disable_none,
                show_hidden: config.show_hidden,
                ..PlanOptions::default()
            },
        ),
    };
    let output = eval::select_paths(&output, &config.path_selectors).map_err(|e| {
        let e = crate::runtime_positions(e.or_at(evaluated.end_span));
        fail(e, &sources, evaluated.logs.clone())
    })?;
    let values: Vec<Value> = document_values(&output)
        .iter()
        .map(|document| crate::value::yaml::filter(document, &plan))
        .collect();
    let encode = EncodeOptions {
        sort_keys: false,
        ignore_private: !plan.show_hidden,
        ignore_none: plan.disable_none,
    };
    Ok(EmbeddedOutput {
        documents: values.iter().map(|v| to_json_with(v, &encode)).collect(),
        values,
        logs: evaluated.logs,
    })
}

/// A JSON value as KCL reads it: objects keep their key order, integers
/// that fit in `i64` stay integers, larger ones become floats.
pub fn from_json(value: &serde_json::Value) -> Value {
    match value {
        serde_json::Value::Null => Value::None,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        serde_json::Value::String(s) => Value::str(s),
        serde_json::Value::Array(items) => Value::list(items.iter().map(from_json).collect()),
        serde_json::Value::Object(map) => Value::dict(
            map.iter()
                .map(|(key, item)| (key.clone(), from_json(item)))
                .collect::<Dict>(),
        ),
    }
}

/// A top-level argument's text as KCL's API reads it (kcl-go's
/// `WithOptions`, function-kcl's arguments): the JSON value it spells, or
/// else the text itself. Unlike `kcl run -D`, `True` and `12e1` are not
/// converted: `True` stays a string, `12e1` is the float JSON reads.
pub fn api_argument(text: &str) -> Value {
    crate::value::json::decode(text).unwrap_or_else(|_| Value::str(text))
}

/// The documents of a program's output, as `kcl run` plans them (see
/// [`crate::value::yaml::plan`]): a list is a stream of its dicts, schemas
/// and scalars (nested lists flattened), anything else one document.
/// Hidden (`_`) names, `Undefined` and functions are left out at every
/// depth.
pub fn documents(output: &Value) -> Vec<serde_json::Value> {
    document_values(output).iter().map(to_json).collect()
}

/// [`documents`], as KCL values.
fn document_values(output: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    match output {
        Value::List(_) => collect_documents(output, &mut out),
        other => out.push(other.clone()),
    }
    out
}

fn collect_documents(value: &Value, out: &mut Vec<Value>) {
    match value {
        Value::List(items) => items.iter().for_each(|item| collect_documents(item, out)),
        Value::Undefined | Value::Function(_) => {}
        document => out.push(document.clone()),
    }
}

/// A value as the planner prints it, as JSON: hidden names dropped, a
/// number with a unit as its value in base units, a float that is not
/// finite as `null`.
pub fn to_json(value: &Value) -> serde_json::Value {
    const PLAN: EncodeOptions = EncodeOptions {
        sort_keys: false,
        ignore_private: true,
        ignore_none: false,
    };
    to_json_with(value, &PLAN)
}

/// A value as the planner prints it with `options`, as JSON.
fn to_json_with(value: &Value, options: &EncodeOptions) -> serde_json::Value {
    match options.node(value) {
        Node::Null => serde_json::Value::Null,
        Node::Bool(b) => serde_json::Value::Bool(b),
        Node::Int(i) => serde_json::Value::from(i),
        Node::Float(f) => {
            serde_json::Number::from_f64(f).map_or(serde_json::Value::Null, Into::into)
        }
        Node::Str(s) => serde_json::Value::String(s.to_string()),
        Node::List(items) => serde_json::Value::Array(
            items
                .into_iter()
                .map(|item| to_json_with(item, options))
                .collect(),
        ),
        Node::Map(entries) => serde_json::Value::Object(
            entries
                .into_iter()
                .map(|(key, item)| (key.to_string(), to_json_with(item, options)))
                .collect(),
        ),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run_text(source: &str, params: serde_json::Value) -> Result<EmbeddedOutput, Box<RunError>> {
        run(&Embedded {
            name: "main.k".into(),
            source: source.into(),
            options: vec![("params".into(), params)],
            step_limit: None,
            stack_budget: None,
        })
    }

    #[test]
    fn options_are_given_as_values_and_documents_come_back_as_values() {
        let cases = [
            (
                "_hidden = 1\nitems = [{a = 1, _b = 2}, {c = None}]\n",
                json!(null),
                vec![json!({"items": [{"a": 1}, {"c": null}]})],
            ),
            (
                "[{a = 1}, [{b = 2}], 3]\n",
                json!(null),
                vec![json!({"a": 1}), json!({"b": 2}), json!(3)],
            ),
            (
                "x = 1.5\ny = 2Ki\n",
                json!(null),
                vec![json!({"x": 1.5, "y": 2048.0})],
            ),
        ];
        for (source, params, expected) in cases {
            let output = run_text(source, params).unwrap();
            assert_eq!(output.documents, expected, "{source}");
        }
    }

    #[test]
    fn option_values_are_the_values_given() {
        let params = json!({"oxr": {"metadata": {"name": "x"}}, "n": 1});
        let output = run_text(
            "p = option(\"params\")\nname = p.oxr.metadata.name\nn = p.n + 1\n",
            params.clone(),
        )
        .unwrap();
        assert_eq!(
            output.documents,
            vec![json!({"p": params, "name": "x", "n": 2})]
        );
    }

    #[test]
    fn a_package_directory_runs_with_its_imports_and_path_dependencies() {
        let mut fs = loader::MemoryFs::new();
        fs.insert(
            "/src/kcl.mod",
            "[package]\nname = \"app\"\n\n[dependencies]\nlib = { path = \"../lib\" }\n",
        );
        fs.insert(
            "/src/main.k",
            "import lib\nimport helpers\n\nitems = [helpers.make(lib.prefix, option(\"params\").n)]\n",
        );
        fs.insert(
            "/src/helpers/helpers.k",
            "make = lambda p: str, n: int {\n    {name = p + str(n)}\n}\n",
        );
        fs.insert("/lib/kcl.mod", "[package]\nname = \"lib\"\n");
        fs.insert("/lib/lib.k", "prefix = \"res-\"\n");
        let program = Embedded {
            options: vec![("params".into(), json!({"n": 3}))],
            ..Embedded::default()
        };
        let output = run_directory(Path::new("/src"), &fs, &program).unwrap();
        assert_eq!(
            output.documents,
            vec![json!({"items": [{"name": "res-3"}]})]
        );

        let missing = run_directory(Path::new("/empty"), &fs, &program).unwrap_err();
        assert!(!missing.render().is_empty());
    }

    // Expectations from kcl-lib 0.12.3's API, given the same program,
    // arguments and flags.
    #[test]
    fn run_config_sets_arguments_and_output_flags() {
        let source = "a = option(\"a\")\n_h = 1\nn = None\nitems = [{x = 1, _y = 2, z = None}]\n";
        let config = |edit: fn(&mut RunConfig)| {
            let mut config = RunConfig::default();
            edit(&mut config);
            config
        };
        let cases = [
            (
                config(|_| {}),
                vec![json!({"a": null, "n": null, "items": [{"x": 1, "z": null}]})],
            ),
            (
                config(|c| c.arguments = vec![("a".into(), "[1, 2]".into())]),
                vec![json!({"a": [1, 2], "n": null, "items": [{"x": 1, "z": null}]})],
            ),
            (
                config(|c| c.arguments = vec![("a".into(), "True".into())]),
                vec![json!({"a": "True", "n": null, "items": [{"x": 1, "z": null}]})],
            ),
            (
                config(|c| c.show_hidden = true),
                vec![
                    json!({"a": null, "_h": 1, "n": null, "items": [{"x": 1, "_y": 2, "z": null}]}),
                ],
            ),
            (
                config(|c| c.disable_none = true),
                vec![json!({"items": [{"x": 1}]})],
            ),
            (
                config(|c| c.path_selectors = vec!["items".into()]),
                vec![json!({"x": 1, "z": null})],
            ),
        ];
        for (config, expected) in cases {
            let program = Embedded {
                name: "main.k".into(),
                source: source.into(),
                ..Embedded::default()
            };
            let output = run_with(&program, &loader::MemoryFs::new(), &config).unwrap();
            assert_eq!(output.documents, expected, "{config:?}");
        }
    }

    #[test]
    fn external_packages_the_host_maps_are_imported_from_inline_and_directory_programs() {
        let mut fs = loader::MemoryFs::new();
        fs.insert("/deps/cidrs/kcl.mod", "[package]\nname = \"cidrs\"\n");
        fs.insert("/deps/cidrs/cidrs.k", "cidr = \"10.0.0.0/16\"\n");
        fs.insert("/deps/cidrs/subnets/subnets.k", "count = 3\n");
        fs.insert(
            "/source/kcl.mod",
            "[package]\nname = \"app\"\n[dependencies]\ncidrs = \"0.1.0\"\n",
        );
        fs.insert(
            "/source/main.k",
            "import cidrs\n\nitems = [{cidr = cidrs.cidr}]\n",
        );
        let config = RunConfig {
            packages: vec![("cidrs".to_string(), PathBuf::from("/deps/cidrs"))],
            ..RunConfig::default()
        };
        let inline = Embedded {
            name: "prog.k".into(),
            source: "import cidrs\nimport cidrs.subnets\n\nitems = [{cidr = cidrs.cidr, n = subnets.count}]\n".into(),
            ..Embedded::default()
        };
        let output = run_with(&inline, &fs, &config).unwrap();
        assert_eq!(
            output.documents,
            vec![json!({"items": [{"cidr": "10.0.0.0/16", "n": 3}]})]
        );
        let output =
            run_directory_with(Path::new("/source"), &fs, &Embedded::default(), &config).unwrap();
        assert_eq!(
            output.documents,
            vec![json!({"items": [{"cidr": "10.0.0.0/16"}]})]
        );
        let unmapped = run_with(&inline, &fs, &RunConfig::default()).unwrap_err();
        assert!(unmapped.render().contains("cidrs"), "{}", unmapped.render());
    }

    #[test]
    fn json_numbers_too_large_for_an_int_become_floats() {
        assert!(matches!(from_json(&json!(u64::MAX)), Value::Float(_)));
        assert!(matches!(from_json(&json!(-3)), Value::Int(-3)));
    }

    #[test]
    fn a_kcl_error_is_a_value_kcl_renders() {
        let cases = [
            ("assert False, \"stop here\"\n", "stop here"),
            ("a = \n", "InvalidSyntax"),
        ];
        for (source, expected) in cases {
            let error = run_text(source, json!(null)).unwrap_err();
            let rendered = error.render();
            assert!(rendered.contains(expected), "{source}: {rendered}");
        }
    }
}
