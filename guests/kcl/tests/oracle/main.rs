//! plait's KCL against the real one: every program here runs through
//! `plait_kcl::run` and through KCL 0.12.3 (PyPI `kcl-lib`, in the venv
//! `make kcl-oracle` makes), and the two must print the same YAML and the
//! same `print()` output, or fail with the same error kind, message and
//! position. `features` is a table of programs, one or more per feature of
//! the language; `generated` makes programs from a seed.
//!
//! The oracle runs all of a test's programs in one Python process
//! (tests/kcl/oracle.py): starting Python and loading KCL costs far more
//! than a program.

// A test whose setup fails (no oracle, no temporary directory) has failed.
#![allow(clippy::expect_used)]

mod features;
mod generated;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use plait_kcl::{RunOptions, run};
use serde_json::{Value, json};

/// The oracle's venv, keyed by KCL's version as the Makefile makes it.
const ORACLE_VENV: &str = ".cache/plait/kcl-lib-0.12.3";

/// One program and the `kcl run` flags it runs with.
#[derive(Debug, Clone, Default)]
pub struct Program {
    pub name: String,
    /// `main.k`, the file run.
    pub source: String,
    /// More files beside it (path relative to `main.k`'s directory, text):
    /// packages, `kcl.mod`, files the program reads.
    pub files: Vec<(String, String)>,
    /// `-D name=value`
    pub args: Vec<(String, String)>,
    pub sort_keys: bool,
    pub disable_none: bool,
    pub show_hidden: bool,
    /// `-S path`
    pub path_selectors: Vec<String>,
    /// `-r`
    pub strict_range_check: bool,
}

impl Program {
    pub fn new(name: impl Into<String>, source: impl Into<String>) -> Program {
        Program {
            name: name.into(),
            source: source.into(),
            ..Program::default()
        }
    }
}

/// What a run printed, or how it failed, in terms both sides can give.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Output {
        yaml: String,
        log: String,
    },
    /// The errors reported, in order: plait reports one; KCL may report
    /// several (and its API orders them unlike `kcl run`).
    Errors(Vec<Fault>),
}

/// One error: KCL's kind (`TypeError`), message and position.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    pub kind: String,
    pub message: String,
    /// Line and 1-based column of the primary position, when there is one.
    pub position: Option<(u64, u64)>,
}

/// The oracle's Python, or a failure that says how to install it: a
/// missing oracle fails the tests rather than skipping them.
fn oracle_python() -> PathBuf {
    let home = std::env::var_os("HOME").expect("HOME is set");
    let python = Path::new(&home).join(ORACLE_VENV).join("bin/python");
    assert!(
        python.exists(),
        "KCL's oracle (kcl-lib 0.12.3) is not installed at {}: run `make kcl-oracle` \
         (python3 -m venv ~/{ORACLE_VENV} && ~/{ORACLE_VENV}/bin/pip install kcl-lib==0.12.3)",
        python.display()
    );
    python
}

fn oracle_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/kcl/oracle.py")
}

/// Writes each program to `<dir>/<index>/main.k`, as both sides read it.
fn write_programs(dir: &Path, programs: &[Program]) -> Vec<PathBuf> {
    programs
        .iter()
        .enumerate()
        .map(|(index, program)| {
            let case = dir.join(index.to_string());
            std::fs::create_dir_all(&case).expect("create the case directory");
            for (path, text) in &program.files {
                let path = case.join(path);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).expect("create a package directory");
                }
                std::fs::write(path, text).expect("write a program's file");
            }
            let file = case.join("main.k");
            std::fs::write(&file, &program.source).expect("write main.k");
            file
        })
        .collect()
}

/// Runs every program with kcl-lib, in one process.
fn run_oracle(files: &[PathBuf], programs: &[Program]) -> Vec<Outcome> {
    let requests: Vec<Value> = files
        .iter()
        .zip(programs)
        .map(|(file, program)| {
            json!({
                "file": file,
                "args": program.args,
                "sort_keys": program.sort_keys,
                "disable_none": program.disable_none,
                "show_hidden": program.show_hidden,
                "path_selectors": program.path_selectors,
                "strict_range_check": program.strict_range_check,
            })
        })
        .collect();
    let mut child = Command::new(oracle_python())
        .arg(oracle_script())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the KCL oracle");
    let input = serde_json::to_vec(&requests).expect("requests are JSON");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(&input).expect("write to the oracle");
    });
    let output = child.wait_with_output().expect("the oracle runs");
    writer.join().expect("the writer ends");
    assert!(
        output.status.success(),
        "the KCL oracle failed (`make kcl-oracle` installs it): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results: Vec<Value> =
        serde_json::from_slice(&output.stdout).expect("the oracle prints JSON");
    assert_eq!(results.len(), programs.len(), "one result per program");
    results.iter().map(oracle_outcome).collect()
}

fn oracle_outcome(result: &Value) -> Outcome {
    let text = |value: &Value| value.as_str().unwrap_or_default().to_string();
    let errors = result["errors"].as_array().cloned().unwrap_or_default();
    if errors.is_empty() {
        return Outcome::Output {
            yaml: text(&result["yaml"]),
            log: text(&result["log"]),
        };
    }
    Outcome::Errors(
        errors
            .iter()
            .map(|error| Fault {
                kind: text(&error["kind"]),
                message: text(&error["message"]),
                position: error["line"].as_u64().zip(error["column"].as_u64()),
            })
            .collect(),
    )
}

fn run_plait(file: &Path, program: &Program) -> Outcome {
    let dir = file.parent().map(Path::to_path_buf);
    let options = RunOptions {
        inputs: vec![file.to_path_buf()],
        work_dir: dir.clone(),
        file_root: dir,
        options: program.args.clone(),
        sort_keys: program.sort_keys,
        disable_none: program.disable_none,
        show_hidden: program.show_hidden,
        path_selectors: program.path_selectors.clone(),
        strict_range_check: program.strict_range_check,
        ..RunOptions::default()
    };
    match run(&options) {
        Ok(output) => Outcome::Output {
            yaml: output.yaml,
            log: output.logs,
        },
        Err(error) => Outcome::Errors(vec![Fault {
            kind: error.error.kind.title().to_string(),
            message: error.error.message.clone(),
            position: error
                .error
                .span()
                .map(|span| (u64::from(span.line), u64::from(span.column) + 1)),
        }]),
    }
}

/// Whether plait agrees with KCL: the same output, or an error of the same
/// kind and message as one KCL reports, at its position when it names one.
fn agree(plait: &Outcome, kcl: &Outcome) -> bool {
    match (plait, kcl) {
        (Outcome::Errors(plait), Outcome::Errors(kcl)) => plait.iter().any(|fault| {
            kcl.iter().any(|k| {
                k.kind == fault.kind
                    && k.message == fault.message
                    && (k.position.is_none() || k.position == fault.position)
            })
        }),
        _ => plait == kcl,
    }
}

/// Runs the programs on both sides, keeping those on which KCL's outcome
/// passes `keep`; returns KCL's outcomes and a report of every kept program
/// on which plait differs (empty when they all agree).
pub fn compare(programs: &[Program], keep: impl Fn(&Outcome) -> bool) -> (Vec<Outcome>, String) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let files = write_programs(dir.path(), programs);
    let expected = run_oracle(&files, programs);
    let mut report = String::new();
    let (mut kept, mut differing) = (0, 0);
    for ((program, file), kcl) in programs.iter().zip(&files).zip(&expected) {
        if !keep(kcl) {
            continue;
        }
        kept += 1;
        let plait = run_plait(file, program);
        if !agree(&plait, kcl) {
            differing += 1;
            let _ = writeln!(
                report,
                "--- {} ---\n{}\n  kcl:   {kcl:?}\n  plait: {plait:?}\n",
                program.name,
                program.source.trim_end()
            );
        }
    }
    if differing > 0 {
        report.insert_str(
            0,
            &format!("plait differs from KCL 0.12.3 on {differing} of {kept} programs:\n\n"),
        );
    }
    (expected, report)
}
