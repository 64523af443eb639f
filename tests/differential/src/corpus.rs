//! A recorded corpus: one directory per case, holding the inputs upstream
//! `crossplane render` was run on (`xr.yaml`, `composition.yaml`,
//! `functions.yaml`, and its further arguments in `args`) and what it
//! rendered (`expected.yaml`, or `expected-error.txt` when it refused the
//! case). The corpus tests render each case with `plait render` the same
//! way and compare.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::deliberate::{self, CaseInputs};
use crate::{Error, Rendered, compare, parse_stream};

/// The cases under `root` (each directory with a `composition.yaml`), in
/// name order.
pub fn case_dirs(root: &Path) -> Result<Vec<PathBuf>, Error> {
    let entries = std::fs::read_dir(root).map_err(|e| Error::Io(root.display().to_string(), e))?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.join("composition.yaml").exists())
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// The case's name: its directory's.
pub fn case_name(dir: &Path) -> String {
    dir.file_name()
        .and_then(|name| name.to_str())
        .unwrap_or_default()
        .to_string()
}

fn read(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|e| Error::Io(path.display().to_string(), e))
}

/// `plait render xr.yaml composition.yaml <functions> <args>` in the case's
/// directory, as upstream was run, with `plait` the binary and `cache` its
/// module cache. `functions` is read from the case's directory when it is
/// relative.
pub fn render_case(
    plait: &Path,
    cache: &Path,
    dir: &Path,
    functions: &Path,
) -> Result<Rendered, Error> {
    let args = read(&dir.join("args"))?;
    let out = Command::new(plait)
        .args(["render", "xr.yaml", "composition.yaml"])
        .arg(functions)
        .args(args.split_whitespace())
        .current_dir(dir)
        .env("PLAIT_CACHE_DIR", cache)
        .output()
        .map_err(|e| Error::Io(plait.display().to_string(), e))?;
    if !out.status.success() {
        return Ok(Rendered::Failed(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    Ok(match parse_stream(&String::from_utf8_lossy(&out.stdout)) {
        Ok(documents) => Rendered::Output(documents),
        Err(e) => Rendered::Failed(format!("plait printed no YAML stream: {e}")),
    })
}

/// What upstream recorded for the case in `dir`.
pub fn recorded(dir: &Path) -> Result<Rendered, Error> {
    let refused = dir.join("expected-error.txt");
    if refused.exists() {
        return Ok(Rendered::Failed(read(&refused)?.trim().to_string()));
    }
    Ok(Rendered::Output(parse_stream(&read(
        &dir.join("expected.yaml"),
    )?)?))
}

/// Where `plait` differs from `upstream` on a case whose Composition is
/// `composition`, leaving out the documented deliberate differences.
pub fn unexplained_differences(
    composition: &str,
    plait: &Rendered,
    upstream: &Rendered,
) -> Vec<String> {
    let inputs = CaseInputs { composition };
    compare(plait, upstream)
        .into_iter()
        .filter(|difference| deliberate::explain(&inputs, difference).is_none())
        .map(|difference| difference.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap_or_else(|e| panic!("{name}: {e}"));
    }

    #[test]
    fn a_recorded_refusal_wins_over_a_recorded_render_and_either_is_read() {
        let scratch = std::env::temp_dir().join(format!("plait-corpus-{}", std::process::id()));
        let cases = [
            (Some("kind: A\n---\n---\nkind: B\n"), None, Ok(2)),
            (Some("kind: A\n"), Some("  refused\n"), Err("refused")),
            (None, Some("no\n"), Err("no")),
        ];
        for (index, (expected, refused, want)) in cases.into_iter().enumerate() {
            let dir = scratch.join(index.to_string());
            std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
            if let Some(text) = expected {
                write(&dir, "expected.yaml", text);
            }
            if let Some(text) = refused {
                write(&dir, "expected-error.txt", text);
            }
            match (recorded(&dir), want) {
                (Ok(Rendered::Output(documents)), Ok(count)) => assert_eq!(documents.len(), count),
                (Ok(Rendered::Failed(message)), Err(text)) => assert_eq!(message, text),
                (got, want) => panic!("case {index}: got {got:?}, want {want:?}"),
            }
        }
        let _ = std::fs::remove_dir_all(&scratch);
    }

    #[test]
    fn only_directories_with_a_composition_are_cases_in_name_order() {
        let root = std::env::temp_dir().join(format!("plait-corpus-dirs-{}", std::process::id()));
        for (name, composition) in [("b", true), ("a", true), ("notes", false)] {
            let dir = root.join(name);
            std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
            if composition {
                write(&dir, "composition.yaml", "kind: Composition\n");
            }
        }
        let names: Vec<String> = case_dirs(&root)
            .unwrap_or_else(|e| panic!("{e}"))
            .iter()
            .map(|dir| case_name(dir))
            .collect();
        assert_eq!(names, ["a", "b"]);
        let _ = std::fs::remove_dir_all(&root);
    }
}
