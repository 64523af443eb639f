//! Tries what its input lists on the filesystem it was given and reports
//! each outcome, in order, as the context's `outcomes`: `ok: <what it got>`
//! or `error: <why>`. Input: `{"try": [["read", "/data/a.txt"], ...]}`,
//! each an operation (`read`, `list`, `tree`, `write`, `append`, `mkdir`,
//! `remove`) and a path. `tree` reads every file under a directory and
//! gets one `<relative path>=<content>` line per file, in path order.

use std::io::Write;
use std::path::Path;

use plait_sdk::{Function, FunctionError, Request, Response};
use serde_json::{Value, json};

pub struct Files;

fn attempt(operation: &str, path: &str) -> Result<String, String> {
    let io = |e: std::io::Error| e.to_string();
    match operation {
        "read" => std::fs::read_to_string(path).map_err(io),
        "list" => {
            let mut names = std::fs::read_dir(path)
                .map_err(io)?
                .map(|entry| entry.map(|e| e.file_name().to_string_lossy().into_owned()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(io)?;
            names.sort();
            Ok(names.join(","))
        }
        "tree" => {
            let mut lines = Vec::new();
            read_tree(Path::new(path), Path::new(""), &mut lines).map_err(io)?;
            lines.sort();
            Ok(lines.join("\n"))
        }
        "write" => std::fs::write(path, "written")
            .map(|()| String::new())
            .map_err(io),
        "append" => std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(b"appended"))
            .map(|()| String::new())
            .map_err(io),
        "mkdir" => std::fs::create_dir(path)
            .map(|()| String::new())
            .map_err(io),
        "remove" => std::fs::remove_file(path)
            .map(|()| String::new())
            .map_err(io),
        other => Err(format!("unknown operation {other:?}")),
    }
}

/// Adds a `<path relative to the top>=<content>` line for each file under
/// `dir`, which is `relative` below the top.
fn read_tree(dir: &Path, relative: &Path, lines: &mut Vec<String>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = relative.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            read_tree(&entry.path(), &path, lines)?;
        } else {
            let content = std::fs::read_to_string(entry.path())?;
            lines.push(format!("{}={content}", path.display()));
        }
    }
    Ok(())
}

impl Function for Files {
    fn run(request: Request) -> Result<Response, FunctionError> {
        let tries = request
            .input
            .as_ref()
            .and_then(|i| i.get("try"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let outcomes: Vec<String> = tries
            .iter()
            .map(|t| {
                let operation = t.get(0).and_then(Value::as_str).unwrap_or_default();
                let path = t.get(1).and_then(Value::as_str).unwrap_or_default();
                match attempt(operation, path) {
                    Ok(got) => format!("ok: {got}"),
                    Err(why) => format!("error: {why}"),
                }
            })
            .collect();
        let mut response = Response::from_request(&request);
        response.context = json!({ "outcomes": outcomes });
        Ok(response)
    }
}

plait_sdk::export_function!(Files);
