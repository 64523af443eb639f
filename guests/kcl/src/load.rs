//! Finding and parsing a program's files: the main package from the
//! inputs, then each package an `import` names (a `.k` file or a directory
//! of them below the program's root), once each.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::ast::{Module, Stmt};
use crate::error::{ErrorKind, KclError, Result};
use crate::eval::{Program, MAIN_PKG};
use crate::source::{SourceFile, SourceMap};
use crate::RunOptions;

fn k_files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.extension().is_some_and(|e| e == "k")
                        && !p
                            .file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.ends_with("_test.k"))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn parse(sources: &mut SourceMap, path: &str, pkg: &str, text: String) -> Result<Module> {
    let id = sources.add(SourceFile::new(path, text.as_str()));
    let parsed = crate::parser::parse_file(id, path, pkg, &text);
    match parsed.errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(parsed.module),
    }
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| {
        KclError::new(
            ErrorKind::CannotFindModule,
            format!("Cannot read {}: {e}", path.display()),
        )
    })
}

/// The package paths a module imports (system modules excluded), as the
/// evaluator resolves them.
fn imported_packages(module: &Module) -> Vec<String> {
    let mut out = Vec::new();
    for stmt in &module.body {
        if let Stmt::Import(i) = &stmt.node {
            let raw = &i.rawpath.node;
            if crate::modules::is_system_module(raw) {
                continue;
            }
            let leading = raw.chars().take_while(|c| *c == '.').count();
            let rest = raw.get(leading..).unwrap_or_default();
            if leading == 0 {
                out.push(rest.to_string());
                continue;
            }
            let mut base: Vec<&str> = if module.pkg == MAIN_PKG {
                Vec::new()
            } else {
                module.pkg.split('.').collect()
            };
            for _ in 1..leading {
                base.pop();
            }
            if !rest.is_empty() {
                base.push(rest);
            }
            out.push(base.join("."));
        }
    }
    out
}

pub(crate) fn load(options: &RunOptions, sources: &mut SourceMap) -> Result<Program> {
    let mut program = Program::default();
    let mut main = Vec::new();
    let mut root: Option<PathBuf> = options.work_dir.clone();
    for input in &options.inputs {
        let path = match &options.work_dir {
            Some(dir) if input.is_relative() => dir.join(input),
            // Errors name files by absolute path, as KCL prints them.
            _ => std::path::absolute(input).unwrap_or_else(|_| input.clone()),
        };
        if path.is_dir() {
            root.get_or_insert_with(|| path.clone());
            for f in k_files_in(&path) {
                let text = read(&f)?;
                main.push(Rc::new(parse(sources, &f.to_string_lossy(), MAIN_PKG, text)?));
            }
        } else {
            if root.is_none() {
                root = path.parent().map(Path::to_path_buf);
            }
            let text = read(&path)?;
            main.push(Rc::new(parse(sources, &path.to_string_lossy(), MAIN_PKG, text)?));
        }
    }
    for (name, text) in &options.sources {
        main.push(Rc::new(parse(sources, name, MAIN_PKG, text.clone())?));
    }
    let root = root.unwrap_or_else(|| PathBuf::from("."));
    let mut queue: Vec<String> = main.iter().flat_map(|m| imported_packages(m)).collect();
    program.packages.insert(MAIN_PKG.to_string(), main);
    while let Some(pkg) = queue.pop() {
        if program.packages.contains_key(&pkg) {
            continue;
        }
        let rel: PathBuf = pkg.split('.').collect();
        let file = root.join(&rel).with_extension("k");
        let dir = root.join(&rel);
        let files = if file.is_file() {
            vec![file]
        } else if dir.is_dir() {
            k_files_in(&dir)
        } else {
            return Err(KclError::new(
                ErrorKind::CannotFindModule,
                format!("Cannot find the module {pkg} from {}", dir.display()),
            ));
        };
        let mut modules = Vec::new();
        for f in files {
            let text = read(&f)?;
            let module = parse(sources, &f.to_string_lossy(), &pkg, text)?;
            queue.extend(imported_packages(&module));
            modules.push(Rc::new(module));
        }
        program.packages.insert(pkg, modules);
    }
    Ok(program)
}
