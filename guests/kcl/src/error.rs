//! KCL's errors as values: every failure of parsing, checking or
//! evaluation is a `KclError` with KCL's kind, code, message and positions,
//! never a panic. `render` prints it as KCL's command line does.

use crate::source::Span;

/// KCL's error kinds, with the codes KCL prints (`error[E2G22]: TypeError`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    InvalidSyntax,
    TabError,
    IndentationError,
    IllegalArgumentError,
    IllegalParameterError,
    ImmutableError,
    CannotFindModule,
    RecursiveLoad,
    CompileError,
    TypeError,
    NameError,
    UniqueKeyError,
    AttributeError,
    IllegalAttributeError,
    IllegalInheritError,
    IndexSignatureError,
    SchemaCheckFailure,
    AssertionError,
    /// A runtime failure (KCL's `EvaluationError`, code E3M38).
    EvaluationError,
    RecursionError,
    FloatOverflow,
    IntOverflow,
    ValueError,
    KeyError,
    DeprecatedError,
    /// The host stopped the evaluation (deadline, memory).
    Interrupted,
}

impl ErrorKind {
    /// The code KCL prints between brackets.
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::InvalidSyntax
            | ErrorKind::TabError
            | ErrorKind::IndentationError
            | ErrorKind::IllegalArgumentError
            | ErrorKind::IllegalParameterError
            | ErrorKind::ImmutableError
            | ErrorKind::RecursiveLoad
            | ErrorKind::NameError
            | ErrorKind::IndexSignatureError
            | ErrorKind::DeprecatedError => "E1001",
            ErrorKind::CannotFindModule => "E2F04",
            ErrorKind::CompileError => "E2L23",
            ErrorKind::TypeError => "E2G22",
            ErrorKind::UniqueKeyError => "E2L28",
            ErrorKind::AttributeError => "E2A31",
            ErrorKind::IllegalAttributeError => "E2A31",
            ErrorKind::IllegalInheritError => "E2D34",
            ErrorKind::SchemaCheckFailure
            | ErrorKind::AssertionError
            | ErrorKind::EvaluationError
            | ErrorKind::RecursionError
            | ErrorKind::FloatOverflow
            | ErrorKind::IntOverflow
            | ErrorKind::ValueError
            | ErrorKind::KeyError
            | ErrorKind::Interrupted => "E3M38",
        }
    }

    /// The title KCL prints after the code.
    pub fn title(self) -> &'static str {
        match self {
            ErrorKind::InvalidSyntax => "InvalidSyntax",
            ErrorKind::TabError => "TabError",
            ErrorKind::IndentationError => "IndentationError",
            ErrorKind::IllegalArgumentError => "IllegalArgumentError",
            ErrorKind::IllegalParameterError => "IllegalParameterError",
            ErrorKind::ImmutableError => "ImmutableError",
            ErrorKind::CannotFindModule => "CannotFindModule",
            ErrorKind::RecursiveLoad => "RecursiveLoad",
            ErrorKind::CompileError => "CompileError",
            ErrorKind::TypeError => "TypeError",
            ErrorKind::NameError => "NameError",
            ErrorKind::UniqueKeyError => "UniqueKeyError",
            ErrorKind::AttributeError => "AttributeError",
            ErrorKind::IllegalAttributeError => "IllegalAttributeError",
            ErrorKind::IllegalInheritError => "IllegalInheritError",
            ErrorKind::IndexSignatureError => "IndexSignatureError",
            ErrorKind::DeprecatedError => "DeprecatedError",
            ErrorKind::SchemaCheckFailure
            | ErrorKind::AssertionError
            | ErrorKind::EvaluationError
            | ErrorKind::RecursionError
            | ErrorKind::FloatOverflow
            | ErrorKind::IntOverflow
            | ErrorKind::ValueError
            | ErrorKind::KeyError
            | ErrorKind::Interrupted => "EvaluationError",
        }
    }
}

/// One position an error points at, with the label printed under it.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

/// A KCL error: kind, message, where it happened, and notes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {message}", kind.title())]
pub struct KclError {
    pub kind: ErrorKind,
    /// The main message (printed beside the first label's caret).
    pub message: String,
    /// Primary position first; more positions (e.g. "declared here") after.
    pub labels: Vec<Label>,
    /// `note: …` lines printed after the snippet.
    pub notes: Vec<String>,
}

impl KclError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> KclError {
        KclError {
            kind,
            message: message.into(),
            labels: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub fn at(kind: ErrorKind, span: Span, message: impl Into<String>) -> KclError {
        let message = message.into();
        KclError {
            kind,
            labels: vec![Label {
                span,
                message: message.clone(),
            }],
            message,
            notes: Vec::new(),
        }
    }

    /// Adds a position if the error has none yet (an error raised deep in a
    /// builtin gets the position of the call that reached it).
    pub fn or_at(mut self, span: Span) -> KclError {
        if self.labels.is_empty() {
            self.labels.push(Label {
                span,
                message: self.message.clone(),
            });
        }
        self
    }

    pub fn with_label(mut self, span: Span, message: impl Into<String>) -> KclError {
        self.labels.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> KclError {
        self.notes.push(note.into());
        self
    }

    /// The primary position.
    pub fn span(&self) -> Option<Span> {
        self.labels.first().map(|l| l.span)
    }
}

pub type Result<T, E = KclError> = std::result::Result<T, E>;
