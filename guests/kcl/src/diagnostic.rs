//! KCL's diagnostic text: how `kcl run` prints an error on stderr.
//!
//! ```text
//! error[E2G22]: TypeError
//!  --> main.k:6:5
//!   |
//! 6 |     name: "test"
//!   |     ^ expected int, got str(test)
//!   |
//! note: …
//! ```
//!
//! The gutter is as wide as the line number. One caret marks the label's
//! start column (clamped to the line's last character). No caret is drawn
//! where KCL draws none: for a syntax error at column 0 (KCL keeps no
//! column there), and for a label whose span is empty at column 0, which is
//! how an error that knows only its line (as KCL's runtime errors do) is
//! written — see [`line_only`].
//!
//! A note that starts with `suggestion: ` is printed as it is, as KCL
//! prints its suggestions; an import cycle is printed inside an
//! evaluation error, as `kcl run` prints it.

use crate::error::{ErrorKind, KclError};
use crate::source::{SourceMap, Span};

/// A span that points at a whole line: rendered as `file:line:1` with no
/// caret, as KCL prints its runtime errors.
pub fn line_only(span: Span) -> Span {
    Span::new(span.file, span.line, 0, span.line, 0)
}

/// Renders one error as KCL prints it.
pub fn render(error: &KclError, sources: &SourceMap) -> String {
    let mut out = String::new();
    // `kcl run` prints an import cycle inside an evaluation error.
    if error.kind == ErrorKind::RecursiveLoad {
        out.push_str("error[E3M38]: ");
    }
    out.push_str(&format!(
        "error[{}]: {}\n",
        error.kind.code(),
        error.kind.title()
    ));
    if error.labels.is_empty() {
        out.push_str(&error.message);
        out.push('\n');
    }
    for label in &error.labels {
        render_label(&mut out, error.kind, label.span, &label.message, sources);
    }
    for note in &error.notes {
        if !note.starts_with("suggestion: ") {
            out.push_str("note: ");
        }
        out.push_str(note);
        out.push('\n');
    }
    out.push('\n');
    out
}

/// Renders several errors one after the other (a file's syntax errors).
pub fn render_all(errors: &[KclError], sources: &SourceMap) -> String {
    errors.iter().map(|e| render(e, sources)).collect()
}

fn is_syntax_error(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::InvalidSyntax | ErrorKind::TabError | ErrorKind::IndentationError
    )
}

fn render_label(out: &mut String, kind: ErrorKind, span: Span, message: &str, sources: &SourceMap) {
    let Some(file) = sources.get(span.file) else {
        out.push_str(message);
        out.push('\n');
        return;
    };
    let Some(text) = file.line(span.line) else {
        out.push_str(&format!(
            "---> File {}:{}:{}: {message}\n",
            file.path,
            span.line,
            u64::from(span.column) + 1
        ));
        return;
    };
    if text.is_empty() {
        // What KCL's snippet renderer prints for an empty line: no line
        // number, no label.
        out.push_str(&format!("--> {}:1:1\n |\n |\n", file.path));
        return;
    }
    let length = text.chars().count();
    let line_only = span.column == 0 && span.end_line == span.line && span.end_column == 0;
    let no_column = span.column == 0 && is_syntax_error(kind);
    // The caret's character index, if there is a caret.
    let caret = if line_only || no_column {
        None
    } else {
        Some((span.column as usize).min(length.saturating_sub(1)))
    };
    let width = span.line.to_string().len();
    let pad = " ".repeat(width);
    let column = caret.map_or(1, |c| c + 1);
    out.push_str(&format!("{pad}--> {}:{}:{column}\n", file.path, span.line));
    out.push_str(&format!("{pad} |\n"));
    out.push_str(&format!("{} | {text}\n", span.line));
    // An empty label leaves nothing after the mark (`assert False`).
    let label = if message.is_empty() {
        String::new()
    } else {
        format!(" {message}")
    };
    match caret {
        Some(c) => {
            let offset: usize = text.chars().take(c).map(display_width).sum();
            out.push_str(&format!("{pad} | {}^{label}\n", " ".repeat(offset)));
        }
        None => out.push_str(&format!("{pad} | {label}\n")),
    }
    out.push_str(&format!("{pad} |\n"));
}

/// Columns a character takes in a terminal, as the snippet renderer KCL
/// uses counts them: control characters (a tab) none, wide ones two.
fn display_width(c: char) -> usize {
    if c.is_control() {
        return 0;
    }
    let wide = matches!(c as u32,
        0x1100..=0x115F
        | 0x2E80..=0x303E
        | 0x3041..=0x33FF
        | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xA000..=0xA4CF
        | 0xAC00..=0xD7A3
        | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F
        | 0xFF00..=0xFF60
        | 0xFFE0..=0xFFE6
        | 0x1F300..=0x1F64F
        | 0x1F900..=0x1F9FF
        | 0x20000..=0x3FFFD);
    if wide { 2 } else { 1 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::SourceFile;

    fn sources(text: &str) -> SourceMap {
        let mut map = SourceMap::default();
        map.add(SourceFile::new("${CWD}/main.k", text));
        map
    }

    #[test]
    fn renders_kcl_snippets() {
        struct Case {
            name: &'static str,
            text: &'static str,
            error: KclError,
            want: &'static str,
        }
        let cases = [
            Case {
                name: "caret under the column",
                text: "schema Person:\n    name: str\n   age: int\n",
                error: KclError::at(
                    ErrorKind::InvalidSyntax,
                    Span::new(0, 3, 3, 3, 3),
                    "invalid indentation with 3 spaces, try to align indents by adding or removing spaces",
                ),
                want: "error[E1001]: InvalidSyntax\n --> ${CWD}/main.k:3:4\n  |\n3 |    age: int\n  |    ^ invalid indentation with 3 spaces, try to align indents by adding or removing spaces\n  |\n\n",
            },
            Case {
                name: "a tab takes no room before the caret",
                text: "a = 1\n\tc = 3\n",
                error: KclError::at(
                    ErrorKind::InvalidSyntax,
                    Span::new(0, 2, 1, 2, 1),
                    "inconsistent use of tabs and spaces in indentation",
                ),
                want: "error[E1001]: InvalidSyntax\n --> ${CWD}/main.k:2:2\n  |\n2 | \tc = 3\n  | ^ inconsistent use of tabs and spaces in indentation\n  |\n\n",
            },
            Case {
                name: "a syntax error at column 0 has no caret",
                text: "\n\n\n\n\n\n\n\n\n\n\nJonSnow = Person {\n",
                error: KclError::at(
                    ErrorKind::InvalidSyntax,
                    Span::new(0, 12, 0, 12, 0),
                    "unexpected token 'dedent'",
                ),
                want: "error[E1001]: InvalidSyntax\n  --> ${CWD}/main.k:12:1\n   |\n12 | JonSnow = Person {\n   |  unexpected token 'dedent'\n   |\n\n",
            },
            Case {
                name: "a second label and a note",
                text: "a = 5\na |= 20\n",
                error: KclError::at(
                    ErrorKind::ImmutableError,
                    Span::new(0, 2, 0, 2, 1),
                    "Immutable variable 'a' is modified during compiling",
                )
                .with_label(
                    Span::new(0, 1, 0, 1, 1),
                    "The variable 'a' is declared here firstly",
                )
                .with_note("change the variable name to '_a' to make it mutable"),
                want: "error[E1001]: ImmutableError\n --> ${CWD}/main.k:2:1\n  |\n2 | a |= 20\n  | ^ Immutable variable 'a' is modified during compiling\n  |\n --> ${CWD}/main.k:1:1\n  |\n1 | a = 5\n  | ^ The variable 'a' is declared here firstly\n  |\nnote: change the variable name to '_a' to make it mutable\n\n",
            },
            Case {
                name: "a runtime error knows only its line",
                text: "schema A:\n    name: str\n",
                error: KclError::at(
                    ErrorKind::EvaluationError,
                    line_only(Span::new(0, 2, 4, 2, 8)),
                    "expect str, got int",
                ),
                want: "error[E3M38]: EvaluationError\n --> ${CWD}/main.k:2:1\n  |\n2 |     name: str\n  |  expect str, got int\n  |\n\n",
            },
            Case {
                name: "a runtime error with no message",
                text: "assert False\n",
                error: KclError::at(
                    ErrorKind::EvaluationError,
                    line_only(Span::new(0, 1, 0, 1, 12)),
                    "",
                ),
                want: "error[E3M38]: EvaluationError\n --> ${CWD}/main.k:1:1\n  |\n1 | assert False\n  | \n  |\n\n",
            },
            Case {
                name: "suggestions print as KCL prints them",
                text: "import .some0.pkg1 as some00\n",
                error: KclError::at(
                    ErrorKind::CannotFindModule,
                    Span::new(0, 1, 0, 1, 28),
                    "Cannot find the module .some0.pkg1 from /x/some0/pkg1",
                )
                .with_note("suggestion: try 'kcl mod add app-main' to download the missing package")
                .with_note("suggestion: browse more packages at 'https://artifacthub.io'"),
                want: "error[E2F04]: CannotFindModule\n --> ${CWD}/main.k:1:1\n  |\n1 | import .some0.pkg1 as some00\n  | ^ Cannot find the module .some0.pkg1 from /x/some0/pkg1\n  |\nsuggestion: try 'kcl mod add app-main' to download the missing package\nsuggestion: browse more packages at 'https://artifacthub.io'\n\n",
            },
            Case {
                name: "an import cycle inside an evaluation error",
                text: "import main\n",
                error: KclError::new(
                    ErrorKind::RecursiveLoad,
                    "Could not compiles due to cyclic import statements\n- ${CWD}/main.k",
                ),
                want: "error[E3M38]: error[E1001]: RecursiveLoad\nCould not compiles due to cyclic import statements\n- ${CWD}/main.k\n\n",
            },
            Case {
                name: "an empty source line",
                text: "a:\n\n",
                error: KclError::at(ErrorKind::InvalidSyntax, Span::new(0, 2, 0, 2, 0), "x"),
                want: "error[E1001]: InvalidSyntax\n--> ${CWD}/main.k:1:1\n |\n |\n\n",
            },
            Case {
                name: "a column past the line's end marks its last character",
                text: "a = (1\n",
                error: KclError::at(
                    ErrorKind::InvalidSyntax,
                    Span::new(0, 1, 6, 1, 7),
                    "expected one of [\")\"] got newline",
                ),
                want: "error[E1001]: InvalidSyntax\n --> ${CWD}/main.k:1:6\n  |\n1 | a = (1\n  |      ^ expected one of [\")\"] got newline\n  |\n\n",
            },
            Case {
                name: "no position",
                text: "",
                error: KclError::new(ErrorKind::EvaluationError, "boom"),
                want: "error[E3M38]: EvaluationError\nboom\n\n",
            },
        ];
        for case in cases {
            assert_eq!(
                render(&case.error, &sources(case.text)),
                case.want,
                "{}",
                case.name
            );
        }
    }
}
