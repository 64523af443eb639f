//! `file`: the program's files, which only it sees.
//!
//! Reads (`read`, `glob`, `exists`, `size`, `abs`) see the one directory
//! the host grants: relative paths start there, `..` may not leave it and,
//! natively, neither may symbolic links; with nothing granted there is
//! nothing to read. Writes (`write`, `append`, `mkdir`, `delete`, `cp`,
//! `mv`, and `json`/`yaml`'s `dump_to_file`) go to a scratch layer over
//! it that lives for the run: the program reads back what it wrote, as in
//! KCL, and the host's files never change. The layer holds at most
//! `SCRATCH_LIMIT` bytes. `current`, `workdir` and `modpath` say where the
//! program runs; the host's environment (`read_env`) is refused.

use std::collections::BTreeMap;
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

/// How much the scratch layer may hold, in bytes of file content.
pub const SCRATCH_LIMIT: usize = 16 << 20;

/// What the program wrote during the run, by path below the granted
/// directory: files, directories, and host paths it removed.
#[derive(Debug, Default, Clone)]
pub struct Scratch {
    entries: BTreeMap<PathBuf, Entry>,
    bytes: usize,
}

#[derive(Debug, Clone)]
enum Entry {
    File(Vec<u8>),
    Dir,
    Removed,
}

/// An error as the operating system words it, the same on every target.
fn os_error(kind: io::ErrorKind, text: &str, code: i32) -> io::Error {
    io::Error::new(kind, format!("{text} (os error {code})"))
}

fn not_found() -> io::Error {
    os_error(io::ErrorKind::NotFound, "No such file or directory", 2)
}

/// What a path is: a file of some length, or a directory.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    File(u64),
    Dir,
}

/// The program's view of its files: the granted directory under the
/// scratch layer.
struct Files<'a> {
    root: Option<PathBuf>,
    scratch: Option<&'a mut Scratch>,
}

impl<'a> Files<'a> {
    fn of(interp: &'a mut dyn Interp) -> Files<'a> {
        let root = interp.file_root().map(Path::to_path_buf);
        Files {
            root,
            scratch: interp.scratch(),
        }
    }

    /// The path below the granted directory, without `.` and `..`.
    fn key(&self, path: &str) -> io::Result<PathBuf> {
        let outside = || {
            io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("'{path}' is outside the directory the program may read"),
            )
        };
        let requested = Path::new(path);
        let relative = if requested.is_absolute() {
            let root = self.root.as_deref().ok_or_else(outside)?;
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
        Ok(normal)
    }

    fn scratch_entry(&self, key: &Path) -> Option<&Entry> {
        let scratch = self.scratch.as_deref()?;
        // A removed directory hides what was below it.
        if key
            .ancestors()
            .skip(1)
            .any(|a| matches!(scratch.entries.get(a), Some(Entry::Removed)))
        {
            return Some(&Entry::Removed);
        }
        scratch.entries.get(key)
    }

    fn host(&self, key: &Path) -> io::Result<PathBuf> {
        let root = self.root.as_deref().ok_or_else(not_granted)?;
        resolve_below(root, &key.to_string_lossy())
    }

    fn kind(&self, path: &str) -> io::Result<Kind> {
        let key = self.key(path)?;
        match self.scratch_entry(&key) {
            Some(Entry::File(bytes)) => Ok(Kind::File(bytes.len() as u64)),
            Some(Entry::Dir) => Ok(Kind::Dir),
            Some(Entry::Removed) => Err(not_found()),
            None => {
                let meta = std::fs::metadata(self.host(&key)?)?;
                Ok(if meta.is_dir() {
                    Kind::Dir
                } else {
                    Kind::File(meta.len())
                })
            }
        }
    }

    fn read(&self, path: &str) -> io::Result<Vec<u8>> {
        let key = self.key(path)?;
        match self.scratch_entry(&key) {
            Some(Entry::File(bytes)) => Ok(bytes.clone()),
            Some(Entry::Dir) => Err(os_error(io::ErrorKind::IsADirectory, "Is a directory", 21)),
            Some(Entry::Removed) => Err(not_found()),
            None => std::fs::read(self.host(&key)?),
        }
    }

    /// A directory's entries in name order, and which are directories.
    fn list(&self, dir: &str) -> io::Result<Vec<(String, bool)>> {
        let key = self.key(dir)?;
        let mut names: BTreeMap<String, bool> = BTreeMap::new();
        let mut found = false;
        match self.scratch_entry(&key) {
            Some(Entry::Removed) => return Err(not_found()),
            Some(Entry::File(_)) => {
                return Err(os_error(
                    io::ErrorKind::NotADirectory,
                    "Not a directory",
                    20,
                ));
            }
            Some(Entry::Dir) => found = true,
            None => {}
        }
        if let Ok(host) = self.host(&key) {
            match std::fs::read_dir(host) {
                Ok(entries) => {
                    found = true;
                    for entry in entries.flatten() {
                        let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
                        names.insert(entry.file_name().to_string_lossy().into_owned(), is_dir);
                    }
                }
                Err(e) if e.kind() != io::ErrorKind::NotFound && !found => return Err(e),
                Err(_) => {}
            }
        }
        if let Some(scratch) = self.scratch.as_deref() {
            for (path, entry) in scratch.entries.range(key.clone()..) {
                let Ok(rest) = path.strip_prefix(&key) else {
                    break;
                };
                let mut parts = rest.components();
                let (Some(name), None) = (parts.next(), parts.next()) else {
                    continue;
                };
                let name = name.as_os_str().to_string_lossy().into_owned();
                match entry {
                    Entry::File(_) => names.insert(name, false),
                    Entry::Dir => names.insert(name, true),
                    Entry::Removed => names.remove(&name),
                };
            }
        }
        if !found {
            return Err(not_found());
        }
        Ok(names.into_iter().collect())
    }

    fn scratch_mut(&mut self) -> io::Result<&mut Scratch> {
        self.scratch.as_deref_mut().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the program may not write files here",
            )
        })
    }

    fn parent_is_dir(&self, key: &Path) -> io::Result<()> {
        match key.parent() {
            None => Ok(()),
            Some(p) if p.as_os_str().is_empty() => Ok(()),
            Some(p) => match self.kind(&p.to_string_lossy())? {
                Kind::Dir => Ok(()),
                Kind::File(_) => Err(os_error(
                    io::ErrorKind::NotADirectory,
                    "Not a directory",
                    20,
                )),
            },
        }
    }

    fn put(&mut self, key: PathBuf, entry: Entry) -> io::Result<()> {
        let scratch = self.scratch_mut()?;
        let old = match scratch.entries.get(&key) {
            Some(Entry::File(b)) => b.len(),
            _ => 0,
        };
        let new = match &entry {
            Entry::File(b) => b.len(),
            _ => 0,
        };
        let total = scratch.bytes - old + new;
        if total > SCRATCH_LIMIT {
            return Err(io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!("the program's files would exceed {SCRATCH_LIMIT} bytes"),
            ));
        }
        scratch.bytes = total;
        scratch.entries.insert(key, entry);
        Ok(())
    }

    /// Writes (or appends to) a file, as `File::create` would: its
    /// directory must exist and it may not be a directory.
    fn write(&mut self, path: &str, content: &[u8], append: bool) -> io::Result<()> {
        let key = self.key(path)?;
        if key.as_os_str().is_empty() {
            return Err(os_error(io::ErrorKind::IsADirectory, "Is a directory", 21));
        }
        self.parent_is_dir(&key)?;
        let mut bytes = match self.kind(path) {
            Ok(Kind::Dir) => {
                return Err(os_error(io::ErrorKind::IsADirectory, "Is a directory", 21));
            }
            Ok(Kind::File(_)) if append => self.read(path)?,
            _ => Vec::new(),
        };
        bytes.extend_from_slice(content);
        self.put(key, Entry::File(bytes))
    }

    /// Makes a directory and its parents (`create_dir_all`).
    fn mkdir(&mut self, path: &str) -> io::Result<()> {
        let key = self.key(path)?;
        let mut done = PathBuf::new();
        for part in key.components() {
            done.push(part);
            match self.kind(&done.to_string_lossy()) {
                Ok(Kind::Dir) => {}
                Ok(Kind::File(_)) => {
                    return Err(os_error(io::ErrorKind::AlreadyExists, "File exists", 17));
                }
                Err(_) => self.put(done.clone(), Entry::Dir)?,
            }
        }
        Ok(())
    }

    /// Removes a file, or an empty directory.
    fn remove(&mut self, path: &str) -> io::Result<()> {
        let key = self.key(path)?;
        if self.kind(path)? == Kind::Dir && !self.list(path)?.is_empty() {
            return Err(os_error(
                io::ErrorKind::DirectoryNotEmpty,
                "Directory not empty",
                39,
            ));
        }
        self.put(key, Entry::Removed)
    }

    /// Copies a file, or a directory with everything below it.
    fn copy(&mut self, src: &str, dest: &str) -> io::Result<()> {
        match self.kind(src)? {
            Kind::File(_) => {
                let bytes = self.read(src)?;
                let dest = match self.kind(dest) {
                    Ok(Kind::Dir) => {
                        let name = Path::new(src)
                            .file_name()
                            .map(|n| n.to_string_lossy().into_owned());
                        format!("{dest}/{}", name.unwrap_or_default())
                    }
                    _ => dest.to_owned(),
                };
                self.write(&dest, &bytes, false)
            }
            Kind::Dir => {
                // Copying a directory into itself would never end.
                if self.key(dest)?.starts_with(self.key(src)?) {
                    return Err(os_error(
                        io::ErrorKind::InvalidInput,
                        "Invalid argument",
                        22,
                    ));
                }
                self.mkdir(dest)?;
                for (name, _) in self.list(src)? {
                    self.copy(&format!("{src}/{name}"), &format!("{dest}/{name}"))?;
                }
                Ok(())
            }
        }
    }
}

/// The bytes of a file the program may read (what it wrote first).
pub(crate) fn read_bytes(interp: &mut dyn Interp, path: &str) -> io::Result<Vec<u8>> {
    Files::of(interp).read(path)
}

/// Writes a file into the scratch layer (`json.dump_to_file`, …).
pub(crate) fn write_file(interp: &mut dyn Interp, path: &str, content: &str) -> io::Result<()> {
    Files::of(interp).write(path, content.as_bytes(), false)
}

fn missing(name: &str, what: &str) -> crate::error::KclError {
    error(format!("{name}() {what}"))
}

/// `read(filepath: str) -> str`
fn read(interp: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(path) = Args::new(args, kwargs).str(0, "filepath") else {
        return Err(missing("read", "takes exactly one argument (0 given)"));
    };
    let access =
        |e: &dyn std::fmt::Display| error(format!("failed to access the file '{path}': {e}"));
    let bytes = read_bytes(interp, path).map_err(|e| access(&e))?;
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
    Ok(Value::Bool(Files::of(interp).kind(path).is_ok()))
}

/// `size(filepath: str) -> int`
fn size(interp: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(path) = Args::new(args, kwargs).str(0, "filepath") else {
        return Err(missing("size", "takes exactly one argument (0 given)"));
    };
    let len = match Files::of(interp).kind(path) {
        Ok(Kind::File(len)) => len,
        // A directory's size is what the host's file system says.
        Ok(Kind::Dir) => 4096,
        Err(e) => return Err(error(format!("failed to get size of '{path}': {e}"))),
    };
    Ok(Value::Int(i64::try_from(len).unwrap_or(i64::MAX)))
}

/// `abs(filepath: str) -> str`: the path inside the granted directory,
/// without `.` and `..`, as the host names that directory.
fn abs(interp: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(path) = Args::new(args, kwargs).str(0, "filepath") else {
        return Err(missing("read", "takes exactly one argument (0 given)"));
    };
    let files = Files::of(interp);
    let resolved = files
        .kind(path)
        .and_then(|_| files.key(path))
        .ok()
        .and_then(|key| files.root.as_deref().map(|root| root.join(key)))
        .ok_or_else(|| error(format!("Could not get the absolute path of {path}")))?;
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
    let files = Files::of(interp);
    let mut found = Vec::new();
    let start = if pattern.starts_with('/') { "/" } else { "" };
    let mut walker = GlobWalk {
        files: &files,
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

/// Whether a name matches a pattern part: one pass with a single
/// backtracking point per `*`, so time stays linear-ish in the name.
fn matches_tokens(tokens: &[GlobToken], name: &[char]) -> bool {
    let one = |token: &GlobToken, c: char| match token {
        GlobToken::Char(t) => *t == c,
        GlobToken::AnyChar => true,
        GlobToken::Set(ranges, negated) => {
            ranges.iter().any(|(lo, hi)| *lo <= c && c <= *hi) != *negated
        }
        GlobToken::AnySequence => false,
    };
    let (mut t, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match tokens.get(t) {
            Some(GlobToken::AnySequence) => {
                star = Some((t, n));
                t += 1;
            }
            Some(token) if name.get(n).is_some_and(|c| one(token, *c)) => {
                t += 1;
                n += 1;
            }
            _ => match star {
                // Let the last `*` take one more character and retry.
                Some((star_t, star_n)) => {
                    t = star_t + 1;
                    n = star_n + 1;
                    star = Some((star_t, star_n + 1));
                }
                None => return false,
            },
        }
    }
    tokens
        .get(t..)
        .is_some_and(|rest| rest.iter().all(|tk| matches!(tk, GlobToken::AnySequence)))
}

struct GlobWalk<'a> {
    files: &'a Files<'a>,
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
    /// directories; none when it does not exist.
    fn list(&self, dir: &str) -> Result<Vec<(String, bool)>> {
        let dir = if dir.is_empty() { "." } else { dir };
        match self.files.list(dir) {
            Ok(names) => Ok(names),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(error(format!(
                "failed to access the file matching '{}': attempting to read `{dir}` resulted in an error: {e}",
                self.pattern
            ))),
        }
    }

    fn exists(&self, path: &str) -> bool {
        self.files.kind(path).is_ok()
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

/// `delete(filepath: str)`
fn delete(interp: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(path) = Args::new(args, kwargs).str(0, "filepath") else {
        return Err(missing("delete", "takes exactly one argument (0 given)"));
    };
    Files::of(interp)
        .remove(path)
        .map_err(|e| error(format!("failed to delete '{path}': {e}")))?;
    Ok(Value::None)
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
    Files::of(interp)
        .copy(src, dest)
        .map_err(|e| error(format!("Failed to copy from '{src}' to '{dest}': {e}")))?;
    Ok(Value::None)
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
    let mut files = Files::of(interp);
    let same = matches!((files.key(src), files.key(dest)), (Ok(a), Ok(b)) if a == b);
    if same && files.kind(src).is_ok() {
        return Ok(Value::None);
    }
    files
        .copy(src, dest)
        .and_then(|()| remove_all(&mut files, src))
        .map_err(|e| error(format!("Failed to move '{src}' to '{dest}': {e}")))?;
    Ok(Value::None)
}

/// Removes a path and, for a directory, everything below it.
fn remove_all(files: &mut Files, path: &str) -> io::Result<()> {
    if files.kind(path)? == Kind::Dir {
        for (name, _) in files.list(path)? {
            remove_all(files, &format!("{path}/{name}"))?;
        }
    }
    files.remove(path)
}

/// `write(filepath: str, content: str)`
fn write(interp: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let args = Args::new(args, kwargs);
    let Some(path) = args.str(0, "filepath") else {
        return Err(missing("write", "missing 'filepath' argument"));
    };
    let Some(content) = args.str(1, "content") else {
        return Err(missing("write", "missing 'content' argument"));
    };
    Files::of(interp)
        .write(path, content.as_bytes(), false)
        .map_err(|e| error(format!("Failed to create file '{path}': {e}")))?;
    Ok(Value::None)
}

/// `append(filepath: str, content: str)`
fn append(interp: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let args = Args::new(args, kwargs);
    let Some(path) = args.str(0, "filepath") else {
        return Err(missing("append", "requires 'filepath' argument"));
    };
    let Some(content) = args.str(1, "content") else {
        return Err(missing("append", "requires 'content' argument"));
    };
    Files::of(interp)
        .write(path, content.as_bytes(), true)
        .map_err(|e| error(format!("Failed to open or create file '{path}': {e}")))?;
    Ok(Value::None)
}

/// `mkdir(directory: str, exists: bool = False)`: with its parents; an
/// existing directory is fine.
fn mkdir(interp: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(path) = Args::new(args, kwargs).str(0, "directory") else {
        return Err(missing("mkdir", "takes exactly one argument (0 given)"));
    };
    Files::of(interp)
        .mkdir(path)
        .map_err(|e| error(format!("Failed to create directory '{path}': {e}")))?;
    Ok(Value::None)
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
        fn scratch(&mut self) -> Option<&mut Scratch> {
            self.inner.scratch()
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
        let stars = format!("{}b", "*a".repeat(40));
        assert_eq!(json(&run(&mut interp, "glob", &[s(&stars)]).unwrap()), "[]");
        let err = run(&mut interp, "glob", &[s("a***")]).unwrap_err();
        assert_eq!(
            err.message,
            "Failed to read glob pattern: Pattern syntax error near position 3: wildcards are either regular `*` or recursive `**`"
        );
    }

    #[test]
    fn exists_size_and_kcls_failures() {
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
                "write",
                &["no/such/dir.txt", "x"],
                "Failed to create file 'no/such/dir.txt': No such file or directory (os error 2)",
            ),
            (
                "read_env",
                &["HOME"],
                "file.read_env() is not allowed: the program may not read the host's environment",
            ),
        ];
        for (name, args, want) in cases {
            let args: Vec<Value> = args.iter().map(|a| s(a)).collect();
            let err = run(&mut interp, name, &args).unwrap_err();
            assert_eq!(err.message, *want, "{name}");
        }
    }

    #[test]
    fn writes_stay_in_the_run_and_read_back() {
        let (dir, mut interp) = granted();
        let steps: &[(&str, &[&str])] = &[
            ("write", &["new.txt", "hello"]),
            ("append", &["new.txt", ", world"]),
            ("write", &["b.txt", "changed"]),
            ("mkdir", &["out/deep"]),
            ("cp", &["new.txt", "out/deep"]),
            ("mv", &["sub", "moved"]),
            ("delete", &["test2.json"]),
        ];
        for (name, args) in steps {
            let args: Vec<Value> = args.iter().map(|a| s(a)).collect();
            run(&mut interp, name, &args).unwrap_or_else(|e| panic!("{name}: {}", e.message));
        }
        let read = |interp: &mut Granted, path: &str| {
            run(interp, "read", &[s(path)])
                .map(|v| json(&v))
                .map_err(|e| e.message)
        };
        assert_eq!(read(&mut interp, "new.txt"), Ok(r#""hello, world""#.into()));
        assert_eq!(read(&mut interp, "b.txt"), Ok(r#""changed""#.into()));
        assert_eq!(
            read(&mut interp, "out/deep/new.txt"),
            Ok(r#""hello, world""#.into())
        );
        assert_eq!(
            read(&mut interp, "moved/deep/d.json"),
            Ok(r#""sub/deep/d.json""#.into())
        );
        assert!(read(&mut interp, "sub/c.json").is_err());
        assert!(read(&mut interp, "test2.json").is_err());
        let listed = run(&mut interp, "glob", &[s("*")]).unwrap();
        assert_eq!(
            json(&listed),
            r#"["b.txt", "moved", "new.txt", "out", "test1.json"]"#
        );
        // The host's directory is as it was.
        assert_eq!(
            std::fs::read_to_string(dir.path().join("b.txt")).unwrap(),
            "b.txt"
        );
        assert!(dir.path().join("sub/c.json").exists());
        assert!(!dir.path().join("new.txt").exists());
        run(&mut interp, "mv", &[s("new.txt"), s("./new.txt")]).unwrap();
        assert_eq!(read(&mut interp, "new.txt"), Ok(r#""hello, world""#.into()));
        let err = run(&mut interp, "cp", &[s("moved"), s("moved/inner")]).unwrap_err();
        assert_eq!(
            err.message,
            "Failed to copy from 'moved' to 'moved/inner': Invalid argument (os error 22)"
        );
    }

    #[test]
    fn scratch_files_are_bounded() {
        let (_dir, mut interp) = granted();
        let big = "x".repeat(SCRATCH_LIMIT / 2 + 1);
        run(&mut interp, "write", &[s("a"), s(&big)]).unwrap();
        let err = run(&mut interp, "write", &[s("b"), s(&big)]).unwrap_err();
        assert_eq!(
            err.message,
            format!(
                "Failed to create file 'b': the program's files would exceed {SCRATCH_LIMIT} bytes"
            )
        );
    }
}
