use super::*;
use crate::ast::*;

fn parse(src: &str) -> ParseResult {
    parse_file(0, "main.k", "__main__", src)
}

fn messages(src: &str) -> Vec<String> {
    parse(src).errors.into_iter().map(|e| e.message).collect()
}

/// Every `main.k` of KCL's grammar suite with a `stdout.golden` parses
/// without error (run with `--ignored` where the suite is fetched).
#[test]
#[ignore]
fn grammar_suite_parses() {
    let Some(home) = std::env::var_os("HOME") else {
        return;
    };
    let root = std::path::Path::new(&home).join(".cache/plait/kcl-grammar/tests/grammar");
    let mut stack = vec![root];
    let (mut total, mut failed) = (0, 0);
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "k") {
                files.push(path);
            }
        }
        if !dir.join("stdout.golden").exists() {
            continue;
        }
        for file in files {
            let Ok(src) = std::fs::read_to_string(&file) else {
                continue;
            };
            total += 1;
            let result = parse(&src);
            if !result.errors.is_empty() {
                failed += 1;
                let e = &result.errors[0];
                let at = e.span().map(|s| (s.line, s.column + 1)).unwrap_or_default();
                println!("FAIL {}:{}:{}: {}", file.display(), at.0, at.1, e.message);
            }
        }
    }
    println!("parsed {} of {total} files", total - failed);
    assert_eq!(failed, 0);
}

#[test]
#[ignore]
fn dump() {
    let src = std::fs::read_to_string("/tmp/dump.k").unwrap_or_default();
    let r = parse(&src);
    println!("{:#?}", r.module.body);
    for e in r.errors {
        println!("ERR {:?} {}", e.span(), e.message);
    }
}

/// KCL's grammar-suite cases whose expected stderr holds syntax errors:
/// ours, rendered, hold the same syntax errors (run with `--ignored`).
#[test]
#[ignore]
fn grammar_suite_syntax_errors() {
    let Some(home) = std::env::var_os("HOME") else {
        return;
    };
    let root = std::path::Path::new(&home).join(".cache/plait/kcl-grammar/tests/grammar");
    let mut stack = vec![root];
    let (mut total, mut matched) = (0, 0);
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.path().is_dir() {
                stack.push(entry.path());
            }
        }
        let Ok(golden) = std::fs::read_to_string(dir.join("stderr.golden")) else {
            continue;
        };
        if !golden.contains("InvalidSyntax") {
            continue;
        }
        let Ok(src) = std::fs::read_to_string(dir.join("main.k")) else {
            continue;
        };
        total += 1;
        let mut want = String::new();
        let mut keep = false;
        for line in golden.lines() {
            if line.starts_with("error[") {
                keep = line.contains("InvalidSyntax");
            }
            if keep && !line.trim().is_empty() {
                want.push_str(line);
                want.push('\n');
            }
        }
        let mut sources = crate::source::SourceMap::default();
        sources.add(crate::source::SourceFile::new(
            "${CWD}/main.k",
            src.as_str(),
        ));
        let result = parse_file(0, "${CWD}/main.k", "__main__", &src);
        let got: String = crate::diagnostic::render_all(&result.errors, &sources)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| format!("{l}\n"))
            .collect();
        if got.contains(&want) {
            matched += 1;
        } else {
            println!("MISMATCH {}\n--- want\n{want}--- got\n{got}", dir.display());
        }
    }
    println!("syntax errors as KCL's in {matched} of {total} cases");
}
