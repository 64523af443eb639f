//! `file`: reading below the one directory the host grants, nothing else.
//!
//! `read`, `glob`, `exists`, `size` and `abs` see only paths that resolve
//! inside the granted directory (relative paths start there; `..` may not
//! leave it; natively, symbolic links may not either). Where nothing was
//! granted every path is refused. `current`, `workdir` and `modpath` say
//! where the program runs. Writing (`write`, `append`, `mkdir`, `delete`,
//! `cp`, `mv`) and the host's environment (`read_env`) are refused; a
//! `cp`, `mv` or `delete` of a path that does not exist fails as KCL's does.

use std::io;
use std::path::{Component, Path, PathBuf};

use super::{Args, error};
use crate::builtins::{BuiltinFn, Interp};
use crate::error::Result;
use crate::value::Value;

pub(super) const MEMBERS: &[(&str, BuiltinFn)] = &[
    ("read", read),
    ("glob", glob),
    ("modpath", modpath),
    ("workdir", workdir),
    ("current", current),
    ("exists", exists),
    ("abs", abs),
    ("append", append),
    ("mkdir", mkdir),
    ("delete", delete),
    ("cp", cp),
    ("mv", mv),
    ("size", size),
    ("write", write),
    ("read_env", read_env),
];

/// Which of the program's paths `Interp::program_path` is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgramPath {
    /// The file whose code is running (`file.current()`).
    Current,
    /// The work directory of the run (`file.workdir()`).
    WorkDir,
    /// The root of the program's module (`file.modpath()`).
    ModRoot,
}

/// The paths `ProgramPath` names, as the run gives them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProgramPaths {
    pub current: String,
    pub work_dir: String,
    pub mod_root: String,
}

impl ProgramPaths {
    pub fn get(&self, which: ProgramPath) -> &str {
        match which {
            ProgramPath::Current => &self.current,
            ProgramPath::WorkDir => &self.work_dir,
            ProgramPath::ModRoot => &self.mod_root,
        }
    }

    /// KCL's paths for a program whose first file is `main_file`: the
    /// module root is the nearest directory above it with a `kcl.mod`,
    /// else its own directory; KCL's work directory is empty unless given.
    pub fn for_main_file(main_file: &Path) -> ProgramPaths {
        let dir = main_file.parent().unwrap_or(Path::new(""));
        let mod_root = dir
            .ancestors()
            .find(|d| d.join("kcl.mod").is_file())
            .unwrap_or(dir);
        ProgramPaths {
            current: main_file.to_string_lossy().into_owned(),
            work_dir: String::new(),
            mod_root: mod_root.to_string_lossy().into_owned(),
        }
    }
}

fn not_granted() -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        "no directory is granted to the program to read from",
    )
}

/// `path` resolved below `root`: an absolute path must lie inside it, a
/// relative one starts from it, and `..` may not climb out. Natively the
/// result is also checked after symbolic links are followed; in Wasm the
/// host's preopened directory keeps links inside.
pub fn resolve_below(root: &Path, path: &str) -> io::Result<PathBuf> {
    let outside = || {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("'{path}' is outside the directory the program may read"),
        )
    };
    let requested = Path::new(path);
    let relative = if requested.is_absolute() {
        requested.strip_prefix(root).map_err(|_| outside())?
    } else {
        requested
    };
    let mut normal = PathBuf::new();
    for component in relative.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !normal.pop() {
                    return Err(outside());
                }
            }
            Component::Normal(part) => normal.push(part),
            Component::RootDir | Component::Prefix(_) => return Err(outside()),
        }
    }
    let full = root.join(&normal);
    if let (Ok(real), Ok(real_root)) = (full.canonicalize(), root.canonicalize())
        && !real.starts_with(&real_root)
    {
        return Err(outside());
    }
    Ok(full)
}

/// Reads a file below `root` (the evaluator's `Interp::read_file`).
pub fn read_below(root: &Path, path: &str) -> io::Result<Vec<u8>> {
    std::fs::read(resolve_below(root, path)?)
}

/// The bytes of a file the program may read.
pub(crate) fn read_bytes(interp: &dyn Interp, path: &str) -> io::Result<Vec<u8>> {
    interp.read_file(path).unwrap_or_else(|| Err(not_granted()))
}

fn metadata(interp: &dyn Interp, path: &str) -> io::Result<std::fs::Metadata> {
    let root = interp.file_root().ok_or_else(not_granted)?;
    std::fs::metadata(resolve_below(root, path)?)
}

fn missing(name: &str, what: &str) -> crate::error::KclError {
    error(format!("{name}() {what}"))
}

fn refused(name: &str) -> crate::error::KclError {
    error(format!(
        "file.{name}() is not allowed: the program may only read files below the directory it was granted"
    ))
}

/// `read(filepath: str) -> str`
fn read(interp: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(path) = Args::new(args, kwargs).str(0, "filepath") else {
        return Err(missing("read", "takes exactly one argument (0 given)"));
    };
    let access =
        |e: &dyn std::fmt::Display| error(format!("failed to access the file '{path}': {e}"));
    let bytes = read_bytes(&*interp, path).map_err(|e| access(&e))?;
    let text = String::from_utf8(bytes).map_err(|_| {
        access(&io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        ))
    })?;
    Ok(Value::str(text))
}

/// `exists(filepath: str) -> bool`
fn exists(interp: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(path) = Args::new(args, kwargs).str(0, "filepath") else {
        return Err(missing("read", "takes exactly one argument (0 given)"));
    };
    Ok(Value::Bool(metadata(&*interp, path).is_ok()))
}

/// `size(filepath: str) -> int`
fn size(interp: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(path) = Args::new(args, kwargs).str(0, "filepath") else {
        return Err(missing("size", "takes exactly one argument (0 given)"));
    };
    let meta = metadata(&*interp, path)
        .map_err(|e| error(format!("failed to get size of '{path}': {e}")))?;
    Ok(Value::Int(i64::try_from(meta.len()).unwrap_or(i64::MAX)))
}

/// `abs(filepath: str) -> str`: the path inside the granted directory,
/// without `.` and `..`, as the host names that directory.
fn abs(interp: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(path) = Args::new(args, kwargs).str(0, "filepath") else {
        return Err(missing("read", "takes exactly one argument (0 given)"));
    };
    let resolved = interp
        .file_root()
        .ok_or_else(not_granted)
        .and_then(|root| resolve_below(root, path))
        .and_then(|full| std::fs::metadata(&full).map(|_| full))
        .map_err(|_| error(format!("Could not get the absolute path of {path}")))?;
    Ok(Value::str(resolved.to_string_lossy()))
}

/// `modpath() -> str`
fn modpath(interp: &mut dyn Interp, _: &[Value], _: &[(String, Value)]) -> Result<Value> {
    Ok(Value::str(interp.program_path(ProgramPath::ModRoot)))
}

/// `workdir() -> str`
fn workdir(interp: &mut dyn Interp, _: &[Value], _: &[(String, Value)]) -> Result<Value> {
    Ok(Value::str(interp.program_path(ProgramPath::WorkDir)))
}

/// `current() -> str`
fn current(interp: &mut dyn Interp, _: &[Value], _: &[(String, Value)]) -> Result<Value> {
    Ok(Value::str(interp.program_path(ProgramPath::Current)))
}

/// `glob(pattern: str) -> [str]`: matching paths, each directory's
/// entries in name order, relative paths without a leading `./`.
fn glob(interp: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(pattern) = Args::new(args, kwargs).str(0, "pattern") else {
        return Err(error("glob() takes exactly one argument (0 given)"));
    };
    let components =
        parse_pattern(pattern).map_err(|e| error(format!("Failed to read glob pattern: {e}")))?;
    let root = interp.file_root();
    let mut found = Vec::new();
    let start = if pattern.starts_with('/') { "/" } else { "" };
    let mut walker = GlobWalk {
        root,
        pattern,
        found: &mut found,
    };
    walker.walk(start, &components)?;
    Ok(Value::list(found.into_iter().map(Value::str).collect()))
}

/// One `/`-separated part of a glob pattern.
#[derive(Debug, PartialEq)]
enum GlobPart {
    /// `.` or `..` or a name without wildcards.
    Literal(String),
    /// `**`: any number of directories.
    AnyDirs,
    Pattern(Vec<GlobToken>),
}

#[derive(Debug, PartialEq)]
enum GlobToken {
    Char(char),
    AnyChar,
    AnySequence,
    /// `[...]` or `[!...]`: ranges, and whether the set is negated.
    Set(Vec<(char, char)>, bool),
}

/// The glob crate's pattern rules and messages.
fn parse_pattern(pattern: &str) -> std::result::Result<Vec<GlobPart>, String> {
    let syntax = |pos: usize, msg: &str| format!("Pattern syntax error near position {pos}: {msg}");
    let chars: Vec<char> = pattern.chars().collect();
    let mut parts = Vec::new();
    let mut i = 0;
    let mut part_start = 0;
    let mut tokens: Vec<GlobToken> = Vec::new();
    let mut literal = true;
    let flush = |tokens: &mut Vec<GlobToken>, literal: &mut bool, parts: &mut Vec<GlobPart>| {
        if !tokens.is_empty() {
            let taken = std::mem::take(tokens);
            if *literal {
                parts.push(GlobPart::Literal(
                    taken
                        .iter()
                        .filter_map(|t| match t {
                            GlobToken::Char(c) => Some(*c),
                            _ => None,
                        })
                        .collect(),
                ));
            } else {
                parts.push(GlobPart::Pattern(taken));
            }
        }
        *literal = true;
    };
    while let Some(&c) = chars.get(i) {
        match c {
            '/' => {
                flush(&mut tokens, &mut literal, &mut parts);
                part_start = i + 1;
                i += 1;
            }
            '?' => {
                tokens.push(GlobToken::AnyChar);
                literal = false;
                i += 1;
            }
            '*' => {
                let run = chars[i..].iter().take_while(|c| **c == '*').count();
                if run > 2 {
                    return Err(syntax(
                        i + 2,
                        "wildcards are either regular `*` or recursive `**`",
                    ));
                }
                if run == 2 {
                    let alone_before = i == part_start;
                    let alone_after = matches!(chars.get(i + 2), None | Some('/'));
                    if !(alone_before && alone_after) {
                        return Err(syntax(
                            i,
                            "recursive wildcards must form a single path component",
                        ));
                    }
                    parts.push(GlobPart::AnyDirs);
                    i += 2;
                    if chars.get(i) == Some(&'/') {
                        i += 1;
                        part_start = i;
                    }
                    continue;
                }
                tokens.push(GlobToken::AnySequence);
                literal = false;
                i += 1;
            }
            '[' => {
                let negated = matches!(chars.get(i + 1), Some('!'));
                let body_start = if negated { i + 2 } else { i + 1 };
                // A `]` right after the opening is part of the set.
                let close = chars
                    .iter()
                    .enumerate()
                    .skip(body_start + 1)
                    .find(|(_, c)| **c == ']')
                    .map(|(k, _)| k);
                let Some(close) = close.filter(|_| chars.len() > body_start) else {
                    return Err(syntax(i, "invalid range pattern"));
                };
                let body = &chars[body_start..close];
                let mut ranges = Vec::new();
                let mut k = 0;
                while let Some(&lo) = body.get(k) {
                    if body.get(k + 1) == Some(&'-')
                        && let Some(&hi) = body.get(k + 2)
                    {
                        ranges.push((lo, hi));
                        k += 3;
                    } else {
                        ranges.push((lo, lo));
                        k += 1;
                    }
                }
                tokens.push(GlobToken::Set(ranges, negated));
                literal = false;
                i = close + 1;
            }
            c => {
                tokens.push(GlobToken::Char(c));
                i += 1;
            }
        }
    }
    flush(&mut tokens, &mut literal, &mut parts);
    Ok(parts)
}

fn matches_tokens(tokens: &[GlobToken], name: &[char]) -> bool {
    match tokens.split_first() {
        None => name.is_empty(),
        Some((GlobToken::AnySequence, rest)) => {
            (0..=name.len()).any(|skip| matches_tokens(rest, name.get(skip..).unwrap_or(&[])))
        }
        Some((token, rest)) => match name.split_first() {
            None => false,
            Some((c, tail)) => {
                let ok = match token {
                    GlobToken::Char(t) => t == c,
                    GlobToken::AnyChar => true,
                    GlobToken::Set(ranges, negated) => {
                        ranges.iter().any(|(lo, hi)| lo <= c && c <= hi) != *negated
                    }
                    GlobToken::AnySequence => false,
                };
                ok && matches_tokens(rest, tail)
            }
        },
    }
}

struct GlobWalk<'a> {
    root: Option<&'a Path>,
    pattern: &'a str,
    found: &'a mut Vec<String>,
}

impl GlobWalk<'_> {
    fn join(dir: &str, name: &str) -> String {
        match dir {
            "" => name.to_owned(),
            "/" => format!("/{name}"),
            _ => format!("{dir}/{name}"),
        }
    }

    /// The entries of a directory in name order, and which are
    /// directories.
    fn list(&self, dir: &str) -> Result<Vec<(String, bool)>> {
        let listing = self
            .root
            .ok_or_else(not_granted)
            .and_then(|root| resolve_below(root, if dir.is_empty() { "." } else { dir }))
            .and_then(std::fs::read_dir);
        let entries = match listing {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(error(format!(
                    "failed to access the file matching '{}': attempting to read `{}` resulted in an error: {e}",
                    self.pattern,
                    if dir.is_empty() { "." } else { dir }
                )));
            }
        };
        let mut names: Vec<(String, bool)> = entries
            .filter_map(|entry| entry.ok())
            .map(|entry| {
                let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
                (entry.file_name().to_string_lossy().into_owned(), is_dir)
            })
            .collect();
        names.sort();
        Ok(names)
    }

    fn exists(&self, path: &str) -> bool {
        self.root
            .and_then(|root| resolve_below(root, path).ok())
            .is_some_and(|p| p.exists())
    }

    fn walk(&mut self, dir: &str, parts: &[GlobPart]) -> Result<()> {
        let Some((part, rest)) = parts.split_first() else {
            if !dir.is_empty() {
                self.found.push(dir.to_owned());
            }
            return Ok(());
        };
        match part {
            GlobPart::Literal(name) => {
                let next = if dir.is_empty() && name == "." {
                    String::new()
                } else {
                    Self::join(dir, name)
                };
                if rest.is_empty() {
                    if !next.is_empty() && self.exists(&next) {
                        self.found.push(next);
                    }
                    Ok(())
                } else {
                    self.walk(&next, rest)
                }
            }
            GlobPart::Pattern(tokens) => {
                for (name, is_dir) in self.list(dir)? {
                    let chars: Vec<char> = name.chars().collect();
                    if matches_tokens(tokens, &chars) && (rest.is_empty() || is_dir) {
                        self.walk(&Self::join(dir, &name), rest)?;
                    }
                }
                Ok(())
            }
            GlobPart::AnyDirs => {
                self.walk(dir, rest)?;
                for (name, is_dir) in self.list(dir)? {
                    if is_dir {
                        self.walk(&Self::join(dir, &name), parts)?;
                    }
                }
                Ok(())
            }
        }
    }
}

/// A `cp`/`mv`/`delete` of a path that does not exist fails with KCL's
/// message; one that would change a file is refused.
fn refuse_change(
    interp: &dyn Interp,
    name: &str,
    source: &str,
    kcl_message: impl Fn(&io::Error) -> String,
) -> Result<Value> {
    match metadata(interp, source) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(error(kcl_message(&e))),
        _ => Err(refused(name)),
    }
}

/// `delete(filepath: str)`
fn delete(interp: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(path) = Args::new(args, kwargs).str(0, "filepath") else {
        return Err(missing("delete", "takes exactly one argument (0 given)"));
    };
    refuse_change(&*interp, "delete", path, |e| {
        format!("failed to delete '{path}': {e}")
    })
}

/// `cp(src: str, dest: str)`
fn cp(interp: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let args = Args::new(args, kwargs);
    let Some(src) = args.str(0, "src") else {
        return Err(missing("cp", "missing 'src_path' argument"));
    };
    let Some(dest) = args.str(1, "dest") else {
        return Err(missing("cp", "missing 'dest_path' argument"));
    };
    refuse_change(&*interp, "cp", src, |e| {
        format!("Failed to copy from '{src}' to '{dest}': {e}")
    })
}

/// `mv(src: str, dest: str)`
fn mv(interp: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let args = Args::new(args, kwargs);
    let Some(src) = args.str(0, "src") else {
        return Err(missing("mv", "missing 'src_path' argument"));
    };
    let Some(dest) = args.str(1, "dest") else {
        return Err(missing("mv", "missing 'dest_path' argument"));
    };
    refuse_change(&*interp, "mv", src, |e| {
        format!("Failed to move '{src}' to '{dest}': {e}")
    })
}

/// `write(filepath: str, content: str)`: refused.
fn write(_: &mut dyn Interp, _: &[Value], _: &[(String, Value)]) -> Result<Value> {
    Err(refused("write"))
}

/// `append(filepath: str, content: str)`: refused.
fn append(_: &mut dyn Interp, _: &[Value], _: &[(String, Value)]) -> Result<Value> {
    Err(refused("append"))
}

/// `mkdir(directory: str, exists: bool = False)`: refused.
fn mkdir(_: &mut dyn Interp, _: &[Value], _: &[(String, Value)]) -> Result<Value> {
    Err(refused("mkdir"))
}

/// `read_env(key: str) -> str`: refused, the host's environment is not
/// the program's.
fn read_env(_: &mut dyn Interp, _: &[Value], _: &[(String, Value)]) -> Result<Value> {
    Err(error(
        "file.read_env() is not allowed: the program may not read the host's environment",
    ))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{TestInterp, json, s};
    use super::*;

    /// A test interpreter granted a directory.
    struct Granted {
        inner: TestInterp,
        root: PathBuf,
    }

    impl Interp for Granted {
        fn call(
            &mut self,
            func: &Value,
            args: Vec<Value>,
            kwargs: Vec<(String, Value)>,
        ) -> Result<Value> {
            self.inner.call(func, args, kwargs)
        }
        fn option(&self, _: &str) -> Option<Value> {
            None
        }
        fn print(&mut self, _: &str) {}
        fn read_file(&self, path: &str) -> Option<io::Result<Vec<u8>>> {
            Some(read_below(&self.root, path))
        }
        fn instances(&self, _: &str) -> Vec<Value> {
            Vec::new()
        }
        fn file_root(&self) -> Option<&Path> {
            Some(&self.root)
        }
    }

    fn granted() -> (tempfile::TempDir, Granted) {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "test1.json",
            "test2.json",
            "b.txt",
            "sub/c.json",
            "sub/deep/d.json",
        ] {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, name).unwrap();
        }
        let root = dir.path().to_path_buf();
        (
            dir,
            Granted {
                inner: TestInterp::default(),
                root,
            },
        )
    }

    fn run(interp: &mut dyn Interp, name: &str, args: &[Value]) -> Result<Value> {
        let (_, f) = MEMBERS.iter().find(|(n, _)| *n == name).unwrap();
        f(interp, args, &[])
    }

    #[test]
    fn reads_only_below_the_granted_directory() {
        let (_dir, mut interp) = granted();
        let cases: &[(&str, std::result::Result<&str, &str>)] = &[
            ("b.txt", Ok("b.txt")),
            ("./sub/../b.txt", Ok("b.txt")),
            ("sub/c.json", Ok("sub/c.json")),
            (
                "../b.txt",
                Err(
                    "failed to access the file '../b.txt': '../b.txt' is outside the directory the program may read",
                ),
            ),
            (
                "/etc/passwd",
                Err(
                    "failed to access the file '/etc/passwd': '/etc/passwd' is outside the directory the program may read",
                ),
            ),
            (
                "missing.txt",
                Err(
                    "failed to access the file 'missing.txt': No such file or directory (os error 2)",
                ),
            ),
        ];
        for (path, want) in cases {
            let got = run(&mut interp, "read", &[s(path)]);
            match want {
                Ok(text) => assert_eq!(got.unwrap().as_str(), Some(*text), "{path}"),
                Err(message) => assert_eq!(got.unwrap_err().message, *message, "{path}"),
            }
        }
        let absolute = interp.root.join("b.txt");
        let got = run(&mut interp, "read", &[s(&absolute.to_string_lossy())]).unwrap();
        assert_eq!(got.as_str(), Some("b.txt"));
    }

    #[test]
    fn nothing_is_readable_without_a_granted_directory() {
        let mut interp = TestInterp::default();
        let err = run(&mut interp, "read", &[s("b.txt")]).unwrap_err();
        assert_eq!(
            err.message,
            "failed to access the file 'b.txt': no directory is granted to the program to read from"
        );
        assert_eq!(
            json(&run(&mut interp, "exists", &[s("b.txt")]).unwrap()),
            "false"
        );
    }

    #[test]
    fn glob_lists_as_kcl() {
        let (_dir, mut interp) = granted();
        let cases = [
            ("./*.json", r#"["test1.json", "test2.json"]"#),
            ("*.json", r#"["test1.json", "test2.json"]"#),
            ("test[12].json", r#"["test1.json", "test2.json"]"#),
            ("test[!1].json", r#"["test2.json"]"#),
            (
                "**/*.json",
                r#"["test1.json", "test2.json", "sub/c.json", "sub/deep/d.json"]"#,
            ),
            ("sub/*", r#"["sub/c.json", "sub/deep"]"#),
            ("b.txt", r#"["b.txt"]"#),
            ("nothing*", "[]"),
        ];
        for (pattern, want) in cases {
            let got = run(&mut interp, "glob", &[s(pattern)]).unwrap();
            assert_eq!(json(&got), want, "{pattern}");
        }
        let err = run(&mut interp, "glob", &[s("a***")]).unwrap_err();
        assert_eq!(
            err.message,
            "Failed to read glob pattern: Pattern syntax error near position 3: wildcards are either regular `*` or recursive `**`"
        );
    }

    #[test]
    fn exists_size_and_refusals() {
        let (_dir, mut interp) = granted();
        assert_eq!(
            json(&run(&mut interp, "exists", &[s("b.txt")]).unwrap()),
            "true"
        );
        assert_eq!(
            json(&run(&mut interp, "exists", &[s("c.txt")]).unwrap()),
            "false"
        );
        assert_eq!(json(&run(&mut interp, "size", &[s("b.txt")]).unwrap()), "5");
        let cases: &[(&str, &[&str], &str)] = &[
            (
                "size",
                &["source_file.txt"],
                "failed to get size of 'source_file.txt': No such file or directory (os error 2)",
            ),
            (
                "cp",
                &["source.txt", "destination.txt"],
                "Failed to copy from 'source.txt' to 'destination.txt': No such file or directory (os error 2)",
            ),
            (
                "mv",
                &["source.txt", "destination.txt"],
                "Failed to move 'source.txt' to 'destination.txt': No such file or directory (os error 2)",
            ),
            (
                "delete",
                &["test_dir"],
                "failed to delete 'test_dir': No such file or directory (os error 2)",
            ),
            (
                "cp",
                &["b.txt", "c.txt"],
                "file.cp() is not allowed: the program may only read files below the directory it was granted",
            ),
            (
                "write",
                &["b.txt", "x"],
                "file.write() is not allowed: the program may only read files below the directory it was granted",
            ),
        ];
        for (name, args, want) in cases {
            let args: Vec<Value> = args.iter().map(|a| s(a)).collect();
            let err = run(&mut interp, name, &args).unwrap_err();
            assert_eq!(err.message, *want, "{name}");
        }
    }
}
