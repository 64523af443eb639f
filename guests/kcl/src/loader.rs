//! Loading a program: the main package from the files run, then every
//! package an `import` reaches, each parsed once.
//!
//! As KCL does: the program's root is the directory of the `kcl.mod` above
//! the inputs (else the working directory); `import a.b` is `a/b/` (every
//! `.k` file in it but `_*.k` and `*_test.k`) or `a/b.k` below the root;
//! `import .sub` and `import ..sub` are relative to the importing file's
//! directory; the first name of any other import may be a dependency of
//! `kcl.mod` (`name = { path = "…" }`) or a package the host maps to a
//! directory holding a `kcl.mod`. Inside such a dependency every module
//! path resolves: one naming no directory or file is an empty package, an
//! error only when a member is read. System modules are left to the
//! evaluator. Each import's package path is written into its
//! `ImportStmt::pkgpath`.
//!
//! Errors are collected, not fatal, in KCL's order: every file's syntax
//! errors, an import cycle (`RecursiveLoad`), and imports of missing
//! packages (`CannotFindModule`, with KCL's suggestions as notes).
//!
//! Files are read through [`FileSystem`] only: [`NativeFs`] on a host,
//! [`MemoryFs`] in WebAssembly and in tests.

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use indexmap::IndexMap;

use crate::ast::{self, MAIN_PKG, Module, Stmt};
use crate::error::{ErrorKind, KclError};
use crate::source::{FileId, SourceFile, SourceMap};

/// The input path prefix that stands for the program's root.
const KCL_MOD: &str = "${KCL_MOD}";

/// The file access a program's loading needs.
pub trait FileSystem {
    fn read_to_string(&self, path: &Path) -> std::io::Result<String>;
    fn is_file(&self, path: &Path) -> bool;
    fn is_dir(&self, path: &Path) -> bool;
    /// The paths of a directory's entries, in any order.
    fn read_dir(&self, path: &Path) -> std::io::Result<Vec<PathBuf>>;
}

/// The host's file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct NativeFs;

impl FileSystem for NativeFs {
    fn read_to_string(&self, path: &Path) -> std::io::Result<String> {
        std::fs::read_to_string(path)
    }

    fn is_file(&self, path: &Path) -> bool {
        path.is_file()
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn read_dir(&self, path: &Path) -> std::io::Result<Vec<PathBuf>> {
        std::fs::read_dir(path)?
            .map(|entry| entry.map(|e| e.path()))
            .collect()
    }
}

/// Files held in memory by absolute path; directories are implied by the
/// files below them.
#[derive(Debug, Default, Clone)]
pub struct MemoryFs {
    files: BTreeMap<PathBuf, String>,
}

impl MemoryFs {
    pub fn new() -> MemoryFs {
        MemoryFs::default()
    }

    pub fn insert(&mut self, path: impl Into<PathBuf>, text: impl Into<String>) {
        self.files.insert(normalize(&path.into()), text.into());
    }
}

impl FileSystem for MemoryFs {
    fn read_to_string(&self, path: &Path) -> std::io::Result<String> {
        self.files
            .get(&normalize(path))
            .cloned()
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
    }

    fn is_file(&self, path: &Path) -> bool {
        self.files.contains_key(&normalize(path))
    }

    fn is_dir(&self, path: &Path) -> bool {
        let dir = normalize(path);
        self.files.keys().any(|f| f != &dir && f.starts_with(&dir))
    }

    fn read_dir(&self, path: &Path) -> std::io::Result<Vec<PathBuf>> {
        let dir = normalize(path);
        let mut entries: Vec<PathBuf> = Vec::new();
        for file in self.files.keys() {
            if let Ok(rest) = file.strip_prefix(&dir)
                && let Some(first) = rest.components().next()
            {
                let entry = dir.join(first);
                if !entries.contains(&entry) {
                    entries.push(entry);
                }
            }
        }
        if entries.is_empty() {
            return Err(std::io::Error::from(std::io::ErrorKind::NotFound));
        }
        Ok(entries)
    }
}

/// What a program is loaded from.
#[derive(Debug, Clone, Default)]
pub struct LoadInputs {
    /// Files and directories of the main package, absolute or relative to
    /// `work_dir`.
    pub paths: Vec<PathBuf>,
    /// Main-package files given as text: (name as printed, source).
    pub sources: Vec<(String, String)>,
    /// Where relative paths start and the root when no `kcl.mod` is found.
    pub work_dir: PathBuf,
    /// External packages the host provides: name to directory.
    pub package_maps: IndexMap<String, PathBuf>,
}

/// A loaded program.
#[derive(Debug, Clone, Default)]
pub struct Program {
    /// The directory imports resolve from (the `kcl.mod`'s).
    pub root: PathBuf,
    /// Files by package path: `__main__` (the files run) first, then each
    /// imported package in the order it was reached.
    pub packages: IndexMap<String, Vec<Rc<Module>>>,
}

/// The program and every error found while loading it.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    pub program: Program,
    pub errors: Vec<KclError>,
}

/// Where a package's files are and how its imports resolve.
#[derive(Debug, Clone)]
struct PkgContext {
    /// `__main__` for the main package and the packages below the root;
    /// the dependency's name inside an external package.
    name: String,
    root: PathBuf,
}

struct PendingPkg {
    pkgpath: String,
    files: Vec<PathBuf>,
    context: PkgContext,
}

struct Loader<'a> {
    fs: &'a dyn FileSystem,
    sources: &'a mut SourceMap,
    file_ids: HashMap<String, FileId>,
    package_maps: IndexMap<String, PathBuf>,
    errors: Vec<KclError>,
    missing: Vec<KclError>,
    /// File to the files of the packages it imports, for cycle detection.
    graph: IndexMap<String, Vec<String>>,
}

/// Loads the program `inputs` name, reading through `fs`; its files are
/// added to `sources`.
pub fn load(inputs: &LoadInputs, fs: &dyn FileSystem, sources: &mut SourceMap) -> Loaded {
    let work_dir = normalize(&inputs.work_dir);
    // `${KCL_MOD}/a.k` is relative to the program's root, known once the
    // other inputs are.
    let (mod_relative, plain): (Vec<&PathBuf>, Vec<&PathBuf>) =
        inputs.paths.iter().partition(|p| p.starts_with(KCL_MOD));
    let plain: Vec<PathBuf> = plain.iter().map(|p| normalize(&work_dir.join(p))).collect();
    let mut roots: Vec<PathBuf> = Vec::new();
    for p in &plain {
        let start = if fs.is_dir(p) {
            p.clone()
        } else {
            p.parent().map(Path::to_path_buf).unwrap_or_default()
        };
        if let Some(root) = find_mod_root(fs, &start)
            && !roots.contains(&root)
        {
            roots.push(root);
        }
    }
    let root = match roots.as_slice() {
        [one] => one.clone(),
        _ => find_mod_root(fs, &work_dir).unwrap_or_else(|| work_dir.clone()),
    };
    let paths: Vec<PathBuf> = inputs
        .paths
        .iter()
        .map(|p| match p.strip_prefix(KCL_MOD) {
            Ok(rest) if mod_relative.contains(&p) => normalize(&root.join(rest)),
            _ => normalize(&work_dir.join(p)),
        })
        .collect();
    let mut package_maps = read_mod_dependencies(fs, &root);
    package_maps.extend(inputs.package_maps.clone());

    let mut loader = Loader {
        fs,
        sources,
        file_ids: HashMap::new(),
        package_maps,
        errors: Vec::new(),
        missing: Vec::new(),
        graph: IndexMap::new(),
    };
    let main_context = PkgContext {
        name: MAIN_PKG.to_string(),
        root: root.clone(),
    };
    let mut main_files: Vec<(String, Option<String>)> = Vec::new();
    // A file named twice (`main.k` and its directory) is read once.
    let mut add_main = |path: String| {
        if !main_files.iter().any(|(p, _)| *p == path) {
            main_files.push((path, None));
        }
    };
    let mut input_errors = Vec::new();
    for p in &paths {
        if fs.is_dir(p) {
            for f in k_files(fs, p, false) {
                add_main(path_string(&f));
            }
        } else if fs.is_file(p) {
            add_main(path_string(p));
        } else {
            input_errors.push(KclError::new(
                ErrorKind::EvaluationError,
                format!(
                    "Cannot find the kcl file, please check the file path {}",
                    path_string(p)
                ),
            ));
        }
    }
    for (name, text) in &inputs.sources {
        let path = if Path::new(name).is_absolute() {
            name.clone()
        } else {
            path_string(&normalize(&work_dir.join(name)))
        };
        main_files.push((path, Some(text.clone())));
    }
    if !input_errors.is_empty() || main_files.is_empty() {
        if input_errors.is_empty() {
            input_errors.push(KclError::new(
                ErrorKind::EvaluationError,
                "No input KCL files",
            ));
        }
        return Loaded {
            program: Program {
                root,
                packages: IndexMap::new(),
            },
            errors: input_errors,
        };
    }

    let mut program = Program {
        root,
        packages: IndexMap::new(),
    };
    let mut queue: Vec<PendingPkg> = Vec::new();
    let mut main_modules = Vec::new();
    for (path, text) in main_files {
        let module = loader.load_file(&path, text, MAIN_PKG, &main_context, &mut queue);
        main_modules.push(Rc::new(module));
    }
    program.packages.insert(MAIN_PKG.to_string(), main_modules);
    let mut next = 0;
    while next < queue.len() {
        let pkgpath = queue[next].pkgpath.clone();
        let files = queue[next].files.clone();
        let context = queue[next].context.clone();
        next += 1;
        if program.packages.contains_key(&pkgpath) {
            continue;
        }
        // Reserve the slot first: a package importing itself is loaded once.
        program.packages.insert(pkgpath.clone(), Vec::new());
        let mut modules = Vec::new();
        for f in files {
            let module = loader.load_file(&path_string(&f), None, &pkgpath, &context, &mut queue);
            modules.push(Rc::new(module));
        }
        program.packages.insert(pkgpath, modules);
    }
    if let Some(cycle) = find_cycle(&loader.graph) {
        let files: String = cycle.iter().map(|f| format!("\n- {f}")).collect();
        loader.errors.push(KclError::new(
            ErrorKind::RecursiveLoad,
            format!("Could not compiles due to cyclic import statements{files}"),
        ));
    }
    let mut errors = loader.errors;
    errors.extend(loader.missing);
    Loaded { program, errors }
}

/// `load` for the options of `kcl run`, reading from `fs`; relative paths
/// start at `options.work_dir`, else at `current_dir`.
pub fn load_run_options(
    options: &crate::RunOptions,
    fs: &dyn FileSystem,
    current_dir: &Path,
    sources: &mut SourceMap,
) -> Loaded {
    let work_dir = match &options.work_dir {
        Some(dir) => current_dir.join(dir),
        None => current_dir.to_path_buf(),
    };
    let inputs = LoadInputs {
        paths: options.inputs.clone(),
        sources: options.sources.clone(),
        work_dir,
        package_maps: options.package_maps.iter().cloned().collect(),
    };
    load(&inputs, fs, sources)
}

impl Loader<'_> {
    /// Reads (unless `text` is given), parses and resolves one file; the
    /// packages its imports reach are queued.
    fn load_file(
        &mut self,
        path: &str,
        text: Option<String>,
        pkgpath: &str,
        context: &PkgContext,
        queue: &mut Vec<PendingPkg>,
    ) -> Module {
        let text = match text {
            Some(t) => t,
            None => match self.fs.read_to_string(Path::new(path)) {
                Ok(t) => t,
                Err(e) => {
                    self.errors.push(KclError::new(
                        ErrorKind::CannotFindModule,
                        format!("Cannot read {path}: {e}"),
                    ));
                    String::new()
                }
            },
        };
        let id = match self.file_ids.get(path) {
            Some(id) => *id,
            None => {
                let id = self.sources.add(SourceFile::new(path, text.as_str()));
                self.file_ids.insert(path.to_string(), id);
                id
            }
        };
        let parsed = crate::parser::parse_file(id, path, pkgpath, &text);
        let mut module = parsed.module;
        for e in parsed.errors {
            if !self.errors.contains(&e) {
                self.errors.push(e);
            }
        }
        let mut deps = Vec::new();
        for stmt in &mut module.body {
            let span = stmt.span;
            if let Stmt::Import(import) = &mut stmt.node {
                self.resolve_import(path, span, import, context, queue, &mut deps);
            }
        }
        let entry = self.graph.entry(path.to_string()).or_default();
        for d in deps {
            if !entry.contains(&d) {
                entry.push(d);
            }
        }
        module
    }

    fn resolve_import(
        &mut self,
        file: &str,
        span: crate::source::Span,
        import: &mut ast::ImportStmt,
        context: &PkgContext,
        queue: &mut Vec<PendingPkg>,
        deps: &mut Vec<String>,
    ) {
        let fixed = fix_import_path(&context.root, Path::new(file), &import.rawpath.node);
        // KCL runs plugins only when its host enables them; plait has none.
        if fixed.starts_with("kcl_plugin.") {
            self.missing.push(KclError::at(
                ErrorKind::CannotFindModule,
                span,
                format!(
                    "the plugin package `{fixed}` is not found, please confirm if plugin mode is enabled"
                ),
            ));
            import.pkgpath = fixed;
            return;
        }
        if crate::modules::is_system_module(&fixed) {
            import.pkgpath = fixed;
            return;
        }
        // Inside the package's own tree.
        let rel: PathBuf = fixed.split('.').collect();
        let internal = if fixed.is_empty() {
            None
        } else {
            package_files(self.fs, &context.root.join(&rel))
        };
        let found = match internal {
            Some(files) => {
                let pkgpath = if context.name == MAIN_PKG {
                    fixed.clone()
                } else {
                    format!("{}.{fixed}", context.name)
                };
                Some((pkgpath, files, context.clone()))
            }
            None => {
                let name = fixed.split('.').next().unwrap_or("").to_string();
                match self.package_maps.get(&name).cloned() {
                    // As KCL: a dependency is a package when its directory
                    // holds a `kcl.mod`, and any module path inside it
                    // then resolves, one that names nothing to an empty
                    // package (an error only when a member is read).
                    Some(dir) if self.fs.is_file(&dir.join("kcl.mod")) => {
                        let rest: PathBuf = fixed.split('.').skip(1).collect();
                        let files = package_files(self.fs, &dir.join(rest)).unwrap_or_default();
                        Some((fixed.clone(), files, PkgContext { name, root: dir }))
                    }
                    _ => None,
                }
            }
        };
        match found {
            Some((pkgpath, files, pkg_context)) => {
                deps.extend(files.iter().map(|f| path_string(f)));
                import.pkgpath = pkgpath.clone();
                queue.push(PendingPkg {
                    pkgpath,
                    files,
                    context: pkg_context,
                });
            }
            None if fixed.is_empty() => {
                // More leading dots than directories above the file: KCL
                // looks in the root itself, which is no package.
                let real = path_string(&context.root.join(""));
                self.missing.push(KclError::at(
                    ErrorKind::CannotFindModule,
                    span,
                    format!(
                        "Failed to import the module {} from {real}. No KCL files found in the specified folder",
                        import.rawpath.node
                    ),
                ));
            }
            None => {
                let real = path_string(&context.root.join(fixed.replace('.', "/")));
                let name = fixed.split('.').next().unwrap_or("").to_string();
                self.missing.push(
                    KclError::at(
                        ErrorKind::CannotFindModule,
                        span,
                        format!("Cannot find the module {} from {real}", import.rawpath.node),
                    )
                    .with_note(format!(
                        "suggestion: try 'kcl mod add {name}' to download the missing package"
                    ))
                    .with_note("suggestion: browse more packages at 'https://artifacthub.io'"),
                );
                import.pkgpath = fixed;
            }
        }
    }
}

/// The files of the package at `path`: a directory's `.k` files or the file
/// `path.k`; `None` when neither exists.
fn package_files(fs: &dyn FileSystem, path: &Path) -> Option<Vec<PathBuf>> {
    if fs.is_dir(path) {
        return Some(k_files(fs, path, true));
    }
    let file = PathBuf::from(format!("{}.k", path_string(path)));
    if fs.is_file(&file) {
        return Some(vec![file]);
    }
    None
}

/// A directory's `.k` files, sorted; `*_test.k` never, `_*.k` not in an
/// imported package.
fn k_files(fs: &dyn FileSystem, dir: &Path, skip_private: bool) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs
        .read_dir(dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".k")
                && !name.ends_with("_test.k")
                && !(skip_private && name.starts_with('_'))
                && fs.is_file(p)
        })
        .collect();
    files.sort();
    files
}

/// The nearest directory at or above `start` holding a `kcl.mod`.
fn find_mod_root(fs: &dyn FileSystem, start: &Path) -> Option<PathBuf> {
    let mut dir = Some(start);
    while let Some(d) = dir {
        if fs.is_file(&d.join("kcl.mod")) {
            return Some(d.to_path_buf());
        }
        dir = d.parent();
    }
    None
}

/// `[dependencies]` of the root's `kcl.mod` that name a local path:
/// `name = { path = "../lib" }`.
fn read_mod_dependencies(fs: &dyn FileSystem, root: &Path) -> IndexMap<String, PathBuf> {
    let mut deps = IndexMap::new();
    let Ok(text) = fs.read_to_string(&root.join("kcl.mod")) else {
        return deps;
    };
    let mut in_deps = false;
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if !in_deps {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let name = name.trim().trim_matches('"').to_string();
        let value = value.trim();
        let Some(table) = value.strip_prefix('{').and_then(|v| v.strip_suffix('}')) else {
            continue;
        };
        for field in table.split(',') {
            if let Some((key, v)) = field.split_once('=')
                && key.trim() == "path"
            {
                let path = v.trim().trim_matches('"');
                deps.insert(name.clone(), normalize(&root.join(path)));
            }
        }
    }
    deps
}

/// The package path of an import as written in `file`: leading dots climb
/// from the file's directory (relative to `root`), as KCL's
/// `fix_import_path` does.
pub fn fix_import_path(root: &Path, file: &Path, import: &str) -> String {
    if !import.starts_with('.') {
        return import.to_string();
    }
    let dir = file.parent().unwrap_or(Path::new(""));
    let relative = relative_to(dir, root);
    let pkgpath = relative.trim_end_matches('.').to_string();
    let leading = import.chars().take_while(|&c| c == '.').count();
    let suffix = import.get(leading..).unwrap_or("");
    if pkgpath.is_empty() {
        return if leading <= 1 {
            import.trim_matches('.').to_string()
        } else {
            String::new()
        };
    }
    if leading == 1 {
        return format!("{pkgpath}{import}");
    }
    let parts: Vec<&str> = pkgpath.split('.').collect();
    if leading - 1 < parts.len() {
        let prefix = parts[..parts.len() - (leading - 1)].join(".");
        return format!("{prefix}.{suffix}");
    }
    if leading - 1 == parts.len() {
        return suffix.to_string();
    }
    String::new()
}

/// `dir` relative to `root` with `.` between the parts.
fn relative_to(dir: &Path, root: &Path) -> String {
    match dir.strip_prefix(root) {
        Ok(rest) => rest
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("."),
        Err(_) => path_string(dir).replace(['/', '\\'], "."),
    }
}

/// The first cycle of the file graph, from the first file that is in one.
fn find_cycle(graph: &IndexMap<String, Vec<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Active,
        Done,
    }
    let mut marks: HashMap<&str, Mark> = HashMap::new();
    for start in graph.keys() {
        if marks.get(start.as_str()).copied().unwrap_or(Mark::New) != Mark::New {
            continue;
        }
        // Iterative depth-first search: (node, index of the next edge).
        let mut stack: Vec<(&str, usize)> = vec![(start.as_str(), 0)];
        marks.insert(start.as_str(), Mark::Active);
        while let Some((node, edge)) = stack.last().copied() {
            let next = graph.get(node).and_then(|edges| edges.get(edge));
            match next {
                Some(next) => {
                    if let Some(top) = stack.last_mut() {
                        top.1 += 1;
                    }
                    match marks.get(next.as_str()).copied().unwrap_or(Mark::New) {
                        Mark::Active => {
                            let from = stack.iter().position(|(n, _)| *n == next.as_str())?;
                            return Some(
                                stack[from..].iter().map(|(n, _)| n.to_string()).collect(),
                            );
                        }
                        Mark::New => {
                            marks.insert(next.as_str(), Mark::Active);
                            stack.push((next.as_str(), 0));
                        }
                        Mark::Done => {}
                    }
                }
                None => {
                    marks.insert(node, Mark::Done);
                    stack.pop();
                }
            }
        }
    }
    None
}

/// `path` without `.` and with `..` applied, lexically (symlinks are
/// kept, as the paths KCL prints are the ones given). As on POSIX, `..`
/// at the root stays at the root; a relative path keeps the `..` it
/// cannot apply.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                Some(Component::ParentDir | Component::CurDir) | None => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    out
}

fn path_string(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_normalize_as_posix_resolves_dot_dot() {
        // (path, normalized)
        let cases = [
            ("/src/../../x", "/x"),
            ("/src/./a/../b", "/src/b"),
            ("/..", "/"),
            ("/src/..", "/"),
            ("a/../b", "b"),
            ("a/..", ""),
            ("../x", "../x"),
            ("../../x", "../../x"),
            ("a/../../x", "../x"),
            ("./a/./b/", "a/b"),
        ];
        for (path, want) in cases {
            assert_eq!(normalize(Path::new(path)), PathBuf::from(want), "{path}");
        }
    }

    fn fs(files: &[(&str, &str)]) -> MemoryFs {
        let mut fs = MemoryFs::new();
        for (path, text) in files {
            fs.insert(*path, *text);
        }
        fs
    }

    fn load_main(fs: &MemoryFs, work_dir: &str) -> Loaded {
        let inputs = LoadInputs {
            paths: vec![PathBuf::from("main.k")],
            work_dir: PathBuf::from(work_dir),
            ..LoadInputs::default()
        };
        load(&inputs, fs, &mut SourceMap::default())
    }

    fn import_paths(loaded: &Loaded, pkg: &str) -> Vec<String> {
        loaded.program.packages[pkg]
            .iter()
            .flat_map(|m| m.body.iter())
            .filter_map(|s| match &s.node {
                Stmt::Import(i) => Some(i.pkgpath.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn fixes_relative_import_paths() {
        let root = Path::new("/home/konfig");
        let file = Path::new("/home/konfig/path/to/app/file.k");
        let cases = [
            (".sub", "path.to.app.sub"),
            ("..sub", "path.to.sub"),
            ("...sub", "path.sub"),
            ("....sub", "sub"),
            (".....sub", ""),
            ("path.to.sub", "path.to.sub"),
        ];
        for (import, want) in cases {
            assert_eq!(fix_import_path(root, file, import), want, "{import}");
        }
        assert_eq!(
            fix_import_path(root, Path::new("/home/konfig/main.k"), ".a.b"),
            "a.b"
        );
    }

    #[test]
    fn loads_packages_as_directories_and_files() {
        let fs = fs(&[
            ("/p/main.k", "import pkg1\nimport pkg2\nimport .rel.mod\n"),
            ("/p/pkg1/a.k", "a = 1\n"),
            ("/p/pkg1/_hidden.k", "h = 1\n"),
            ("/p/pkg1/a_test.k", "t = 1\n"),
            ("/p/pkg2.k", "b = 2\n"),
            ("/p/rel/mod.k", "import ..pkg2\n"),
        ]);
        let loaded = load_main(&fs, "/p");
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        let pkgs: Vec<&str> = loaded.program.packages.keys().map(String::as_str).collect();
        assert_eq!(pkgs, vec![MAIN_PKG, "pkg1", "pkg2", "rel.mod"]);
        assert_eq!(loaded.program.packages["pkg1"].len(), 1);
        assert_eq!(
            import_paths(&loaded, MAIN_PKG),
            vec!["pkg1", "pkg2", "rel.mod"]
        );
        assert_eq!(import_paths(&loaded, "rel.mod"), vec!["pkg2"]);
    }

    #[test]
    fn root_is_the_kcl_mod_directory() {
        let fs = fs(&[
            ("/r/kcl.mod", "[package]\n"),
            (
                "/r/app/main.k",
                "import some.pkg\nimport ..some.pkg as other\nimport .local\n",
            ),
            ("/r/some/pkg/p.k", "x = 1\n"),
            ("/r/app/local.k", "y = 1\n"),
        ]);
        let loaded = load_main(&fs, "/r/app");
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        assert_eq!(loaded.program.root, PathBuf::from("/r"));
        assert_eq!(
            import_paths(&loaded, MAIN_PKG),
            vec!["some.pkg", "some.pkg", "app.local"]
        );
    }

    #[test]
    fn inputs_relative_to_the_root_and_named_twice() {
        let fs = fs(&[
            ("/r/kcl.mod", ""),
            ("/r/main.k", "a = 1\n"),
            ("/r/pkg/pkg.k", "b = 1\n"),
        ]);
        let inputs = LoadInputs {
            paths: vec![
                PathBuf::from("${KCL_MOD}/pkg/pkg.k"),
                PathBuf::from("main.k"),
                PathBuf::from("."),
            ],
            work_dir: PathBuf::from("/r"),
            ..LoadInputs::default()
        };
        let loaded = load(&inputs, &fs, &mut SourceMap::default());
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        let files: Vec<&str> = loaded.program.packages[MAIN_PKG]
            .iter()
            .map(|m| m.filename.as_str())
            .collect();
        assert_eq!(files, vec!["/r/pkg/pkg.k", "/r/main.k"]);
    }

    #[test]
    fn kcl_mod_path_dependencies_are_packages() {
        let fs = fs(&[
            (
                "/w/kcl.mod",
                "[package]\nname = \"w\"\n[dependencies]\nlib = { path = \"../lib\" }\n",
            ),
            ("/w/main.k", "import lib.sub\n"),
            ("/lib/kcl.mod", "[package]\n"),
            ("/lib/sub/s.k", "import inner\n"),
            ("/lib/inner.k", "z = 1\n"),
        ]);
        let loaded = load_main(&fs, "/w");
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        assert_eq!(import_paths(&loaded, MAIN_PKG), vec!["lib.sub"]);
        assert_eq!(import_paths(&loaded, "lib.sub"), vec!["lib.inner"]);
    }

    #[test]
    fn missing_module_paths_of_a_dependency_are_empty_packages() {
        let fs = fs(&[
            (
                "/w/kcl.mod",
                "[package]\nname = \"w\"\n[dependencies]\nlib = { path = \"../lib\" }\nbare = { path = \"../bare\" }\n",
            ),
            ("/lib/kcl.mod", "[package]\n"),
            ("/lib/io/v1/s.k", "a = 1\n"),
            ("/bare/io/v1/s.k", "a = 1\n"),
        ]);
        struct Case {
            main: &'static str,
            /// The package paths of its imports.
            imports: &'static [&'static str],
            /// The files of the last package imported.
            files: &'static [&'static str],
            errors: &'static [&'static str],
        }
        let cases = [
            Case {
                main: "import lib.io.v2 as v2\n",
                imports: &["lib.io.v2"],
                files: &[],
                errors: &[],
            },
            Case {
                main: "import lib.io.v1\n",
                imports: &["lib.io.v1"],
                files: &["/lib/io/v1/s.k"],
                errors: &[],
            },
            Case {
                main: "import bare.io.v1\n",
                imports: &["bare.io.v1"],
                files: &[],
                errors: &["Cannot find the module bare.io.v1 from /w/bare/io/v1"],
            },
            Case {
                main: "import w.io.v2\n",
                imports: &["w.io.v2"],
                files: &[],
                errors: &["Cannot find the module w.io.v2 from /w/w/io/v2"],
            },
        ];
        for Case {
            main,
            imports,
            files,
            errors,
        } in cases
        {
            let mut fs = fs.clone();
            fs.insert("/w/main.k", main);
            let loaded = load_main(&fs, "/w");
            let messages: Vec<&str> = loaded.errors.iter().map(|e| e.message.as_str()).collect();
            assert_eq!(messages, errors, "{main}");
            assert_eq!(import_paths(&loaded, MAIN_PKG), imports, "{main}");
            let package = imports.last().and_then(|p| loaded.program.packages.get(*p));
            let loaded_files: Vec<&str> = package
                .into_iter()
                .flatten()
                .map(|m| m.filename.as_str())
                .collect();
            assert_eq!(loaded_files, files, "{main}");
        }
    }

    #[test]
    fn missing_module_is_reported_with_kcl_suggestions() {
        let fs = fs(&[("/m/main.k", "import .some0..pkg1 as x\n")]);
        let loaded = load_main(&fs, "/m");
        let messages: Vec<(ErrorKind, &str)> = loaded
            .errors
            .iter()
            .map(|e| (e.kind, e.message.as_str()))
            .collect();
        assert_eq!(
            messages,
            vec![
                (
                    ErrorKind::InvalidSyntax,
                    "expected one of [\"identifier\"] got ."
                ),
                (
                    ErrorKind::CannotFindModule,
                    "Cannot find the module .some0..pkg1 from /m/some0//pkg1"
                ),
            ]
        );
        assert_eq!(
            loaded.errors[1].notes,
            vec![
                "suggestion: try 'kcl mod add some0' to download the missing package",
                "suggestion: browse more packages at 'https://artifacthub.io'"
            ]
        );
    }

    #[test]
    fn plugin_packages_are_not_found() {
        let cases = [
            (
                "import kcl_plugin.hello as hello\n",
                "the plugin package `kcl_plugin.hello` is not found, please confirm if plugin mode is enabled",
            ),
            (
                "import kcl_plugin.a.b\n",
                "the plugin package `kcl_plugin.a.b` is not found, please confirm if plugin mode is enabled",
            ),
        ];
        for (text, want) in cases {
            let fs = fs(&[("/p/main.k", text)]);
            let loaded = load_main(&fs, "/p");
            let messages: Vec<(ErrorKind, &str)> = loaded
                .errors
                .iter()
                .map(|e| (e.kind, e.message.as_str()))
                .collect();
            assert_eq!(
                messages,
                vec![(ErrorKind::CannotFindModule, want)],
                "{text}"
            );
            assert!(loaded.errors[0].notes.is_empty(), "{text}");
        }
    }

    #[test]
    fn missing_inputs_are_reported_as_kcl_does() {
        let fs = fs(&[("/d/sub/x.txt", "")]);
        let cases = [
            (
                "missing.k",
                "Cannot find the kcl file, please check the file path /d/missing.k",
            ),
            ("sub", "No input KCL files"),
        ];
        for (input, want) in cases {
            let inputs = LoadInputs {
                paths: vec![PathBuf::from(input)],
                work_dir: PathBuf::from("/d"),
                ..LoadInputs::default()
            };
            let loaded = load(&inputs, &fs, &mut SourceMap::default());
            let messages: Vec<&str> = loaded.errors.iter().map(|e| e.message.as_str()).collect();
            assert_eq!(messages, vec![want], "{input}");
        }
    }

    #[test]
    fn climbing_above_the_root_finds_no_package() {
        let fs = fs(&[
            ("/r/kcl.mod", ""),
            ("/r/app/main.k", "import ...some.pkg as x\n"),
            ("/r/some/pkg/p.k", "x = 1\n"),
        ]);
        let loaded = load_main(&fs, "/r/app");
        let messages: Vec<&str> = loaded.errors.iter().map(|e| e.message.as_str()).collect();
        assert_eq!(
            messages,
            vec![
                "Failed to import the module ...some.pkg from /r/. No KCL files found in the specified folder"
            ]
        );
    }

    #[test]
    fn import_cycles_are_reported() {
        let fs = fs(&[
            ("/c/kcl.mod", ""),
            ("/c/main.k", "import module\n"),
            ("/c/module.k", "import main\n"),
        ]);
        let loaded = load_main(&fs, "/c");
        let cycle: Vec<&str> = loaded
            .errors
            .iter()
            .filter(|e| e.kind == ErrorKind::RecursiveLoad)
            .map(|e| e.message.as_str())
            .collect();
        assert_eq!(
            cycle,
            vec!["Could not compiles due to cyclic import statements\n- /c/main.k\n- /c/module.k"]
        );
        let fs = self::fs(&[("/s/main.k", "import main\n")]);
        let loaded = load_main(&fs, "/s");
        assert_eq!(
            loaded.errors[0].message,
            "Could not compiles due to cyclic import statements\n- /s/main.k"
        );
    }

    #[test]
    fn sources_given_as_text_are_the_main_package() {
        let fs = MemoryFs::new();
        let inputs = LoadInputs {
            sources: vec![("main.k".into(), "a = 1\n".into())],
            work_dir: PathBuf::from("/x"),
            ..LoadInputs::default()
        };
        let mut sources = SourceMap::default();
        let loaded = load(&inputs, &fs, &mut sources);
        assert!(loaded.errors.is_empty());
        assert_eq!(loaded.program.packages[MAIN_PKG][0].filename, "/x/main.k");
        assert_eq!(sources.files()[0].path, "/x/main.k");
    }
}
