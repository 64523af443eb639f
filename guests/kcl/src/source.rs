//! Source files and positions: every syntax node and every error points
//! into a file by line and column, as KCL reports them (lines from 1,
//! columns from 0 internally, printed from 1).

use std::rc::Rc;

/// One source file of a program.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The path as it is printed in errors (`${CWD}/main.k` in KCL's goldens).
    pub path: String,
    pub text: Rc<str>,
}

impl SourceFile {
    pub fn new(path: impl Into<String>, text: impl Into<Rc<str>>) -> SourceFile {
        SourceFile {
            path: path.into(),
            text: text.into(),
        }
    }

    /// The text of line `line` (1-based), without its line break.
    pub fn line(&self, line: u32) -> Option<&str> {
        self.text
            .split('\n')
            .nth(line.checked_sub(1)? as usize)
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
    }
}

/// Index of a file in the program's `SourceMap`.
pub type FileId = u32;

/// A range in one file: start and end line (1-based) and column (0-based,
/// counted in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub file: FileId,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
}

impl Span {
    pub fn new(file: FileId, line: u32, column: u32, end_line: u32, end_column: u32) -> Span {
        Span {
            file,
            line,
            column,
            end_line,
            end_column,
        }
    }

    /// The span from the start of `self` to the end of `other`.
    pub fn to(self, other: Span) -> Span {
        Span {
            file: self.file,
            line: self.line,
            column: self.column,
            end_line: other.end_line,
            end_column: other.end_column,
        }
    }
}

/// Every file of a program, by `FileId`.
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    pub fn add(&mut self, file: SourceFile) -> FileId {
        self.files.push(file);
        (self.files.len() - 1) as FileId
    }

    pub fn get(&self, id: FileId) -> Option<&SourceFile> {
        self.files.get(id as usize)
    }

    pub fn files(&self) -> &[SourceFile] {
        &self.files
    }
}
