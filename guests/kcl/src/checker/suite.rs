//! The checker over KCL's language suite (kcl-lang/kcl `tests/grammar`,
//! fetched outside the repository): no case with a `stdout.golden` may be
//! refused, and a case whose `stderr.golden` starts with a compile-time
//! error should get that error, kind, position and message, first.
//!
//! `cargo test -p plait-kcl checker::suite -- --ignored --nocapture`
//! (the suite is read from `$KCL_GRAMMAR`, else
//! `~/.cache/plait/kcl-grammar/tests/grammar`).

use std::path::{Path, PathBuf};

use super::{builtin, check_all};
use crate::error::ErrorKind;
use crate::loader::{LoadInputs, NativeFs, load};
use crate::source::SourceMap;

fn suite_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("KCL_GRAMMAR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            PathBuf::from(std::env::var_os("HOME")?).join(".cache/plait/kcl-grammar/tests/grammar")
        }
    };
    dir.is_dir().then_some(dir)
}

fn cases(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if path.join("main.k").is_file()
                && (path.join("stdout.golden").is_file() || path.join("stderr.golden").is_file())
            {
                out.push(path.clone());
            }
            cases(&path, out);
        }
    }
}

/// The errors KCL reports before it evaluates.
const COMPILE_TIME: &[ErrorKind] = &[
    ErrorKind::CompileError,
    ErrorKind::TypeError,
    ErrorKind::IllegalInheritError,
    ErrorKind::UniqueKeyError,
    ErrorKind::IllegalAttributeError,
    ErrorKind::IllegalParameterError,
    ErrorKind::ImmutableError,
    ErrorKind::NameError,
];

type GoldenError = (String, String, String);

/// What the checker found in a case.
struct Checked {
    /// The first error as KCL's golden text has it (header, position,
    /// message).
    first: Option<GoldenError>,
    /// Every error rendered as `kcl run` prints them, without blank lines
    /// and with the case's directory as `${CWD}`, as KCL's runner compares.
    rendered: String,
}

fn without_blank_lines(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `Err` when the program does not load.
fn check_case(case: &Path) -> Result<Checked, ()> {
    let settings = std::fs::read_to_string(case.join("settings.yaml")).unwrap_or_default();
    let mut paths = vec![PathBuf::from("main.k")];
    paths.extend(
        settings
            .split_whitespace()
            .filter(|t| t.ends_with(".k") && *t != "main.k")
            .map(PathBuf::from),
    );
    let inputs = LoadInputs {
        paths,
        work_dir: case.to_path_buf(),
        ..LoadInputs::default()
    };
    let mut sources = SourceMap::default();
    let loaded = load(&inputs, &NativeFs, &mut sources);
    // A system module the loader does not know yet is no load error here.
    let load_failed = loaded.errors.iter().any(|e| {
        !e.message
            .strip_prefix("Cannot find the module ")
            .and_then(|rest| rest.split(' ').next())
            .is_some_and(builtin::is_system_module)
    });
    if load_failed {
        return Err(());
    }
    let errors = check_all(&loaded.program);
    let rendered = without_blank_lines(
        &crate::diagnostic::render_all(&errors, &sources)
            .replace(&case.display().to_string(), "${CWD}"),
    );
    let Some(err) = errors.into_iter().next() else {
        return Ok(Checked {
            first: None,
            rendered,
        });
    };
    let (file, line, column) = match err.span() {
        Some(span) => (
            sources
                .get(span.file)
                .map(|f| f.path.clone())
                .unwrap_or_default(),
            span.line,
            span.column + 1,
        ),
        None => (String::new(), 0, 0),
    };
    let prefix = format!("{}/", case.display());
    let file = file.strip_prefix(&prefix).unwrap_or(&file);
    Ok(Checked {
        first: Some((
            format!("error[{}]: {}", err.kind.code(), err.kind.title()),
            format!("--> ${{CWD}}/{file}:{line}:{column}"),
            err.message,
        )),
        rendered,
    })
}

#[test]
#[ignore = "needs KCL's language suite on disk"]
fn the_language_suite() {
    let Some(dir) = suite_dir() else {
        eprintln!("no language suite: set KCL_GRAMMAR");
        return;
    };
    let mut all = Vec::new();
    cases(&dir, &mut all);
    let (mut accepted, mut refused, mut compile_time, mut caught) = (0, Vec::new(), 0, 0);
    let (mut missed, mut not_loaded, mut whole_text) = (Vec::new(), 0, 0);
    for case in &all {
        let name = case
            .strip_prefix(&dir)
            .unwrap_or(case)
            .display()
            .to_string();
        let Ok(Checked { first, rendered }) = check_case(case) else {
            not_loaded += 1;
            if case.join("stdout.golden").is_file() {
                println!("  not loaded {name}");
            }
            continue;
        };
        if case.join("stdout.golden").is_file() {
            match first {
                Some(err) => refused.push((name, err)),
                None => accepted += 1,
            }
            continue;
        }
        let golden = std::fs::read_to_string(case.join("stderr.golden")).unwrap_or_default();
        let expects_check = COMPILE_TIME.iter().any(|kind| {
            golden
                .lines()
                .next()
                .is_some_and(|l| l.ends_with(&format!("]: {}", kind.title())))
        });
        if !expects_check {
            continue;
        }
        compile_time += 1;
        if rendered.contains(&without_blank_lines(&golden)) {
            whole_text += 1;
        }
        match first {
            Some((head, pos, message))
                if golden.contains(&head) && golden.contains(&pos) && golden.contains(&message) =>
            {
                caught += 1
            }
            other => missed.push((name, other)),
        }
    }
    println!("cases: {}, not loaded: {not_loaded}", all.len());
    println!(
        "stdout cases passing the checker: {accepted}, refused: {}",
        refused.len()
    );
    for (name, err) in &refused {
        println!("  refused {name}: {err:?}");
    }
    println!(
        "compile-time stderr cases: {compile_time}, first error as KCL's: {caught}, \
         golden text within the rendered errors: {whole_text}"
    );
    for (name, err) in &missed {
        println!("  missed {name}: {err:?}");
    }
    assert_eq!(refused, vec![], "the checker refuses programs KCL accepts");
}
