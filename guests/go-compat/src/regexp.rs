//! Go (RE2) regular expressions: compiled with `regex`, refused with the
//! error text Go's `regexp.Compile` gives.

/// Compiles a Go (RE2) regular expression. Failures read like Go's
/// `error parsing regexp: <code>: `<fragment>``.
pub fn compile_regexp(pattern: &str) -> Result<regex::Regex, String> {
    if let Err(e) = regex_syntax::ast::parse::Parser::new().parse(pattern) {
        return Err(go_regexp_error(pattern, &e));
    }
    regex::Regex::new(pattern).map_err(|e| format!("error parsing regexp: {e}"))
}

/// The repetition operator at `start` (`*`, `+?`, `{2,3}`), which Go quotes
/// in its error.
fn repetition_operator(pattern: &str, start: usize) -> &str {
    let rest = pattern.get(start..).unwrap_or_default();
    let len = if rest.starts_with('{') {
        rest.find('}').map_or(rest.len(), |i| i + 1)
    } else {
        rest.chars().next().map_or(0, char::len_utf8)
    };
    let len = if rest[len..].starts_with('?') {
        len + 1
    } else {
        len
    };
    &rest[..len]
}

fn go_regexp_error(pattern: &str, e: &regex_syntax::ast::Error) -> String {
    use regex_syntax::ast::ErrorKind as K;
    let span = e.span();
    let spanned = pattern
        .get(span.start.offset..span.end.offset)
        .unwrap_or(pattern);
    let (code, fragment) = match e.kind() {
        K::GroupUnclosed => ("missing closing )", pattern),
        K::GroupUnopened => ("unexpected )", pattern),
        K::ClassUnclosed => (
            "missing closing ]",
            pattern.get(span.start.offset..).unwrap_or(pattern),
        ),
        K::ClassRangeInvalid | K::ClassRangeLiteral => ("invalid character class range", spanned),
        K::ClassEscapeInvalid
        | K::EscapeUnrecognized
        | K::EscapeHexInvalid
        | K::EscapeHexInvalidDigit
        | K::EscapeHexEmpty => ("invalid escape sequence", spanned),
        K::EscapeUnexpectedEof => ("trailing backslash at end of expression", ""),
        K::RepetitionMissing => (
            "missing argument to repetition operator",
            repetition_operator(pattern, span.start.offset),
        ),
        K::RepetitionCountInvalid | K::RepetitionCountDecimalEmpty | K::RepetitionCountUnclosed => {
            ("invalid repeat count", spanned)
        }
        K::GroupNameDuplicate { .. } => ("duplicate capture group name", spanned),
        K::GroupNameEmpty | K::GroupNameInvalid | K::GroupNameUnexpectedEof => {
            ("invalid named capture", spanned)
        }
        K::NestLimitExceeded(_) => ("expression nests too deeply", pattern),
        _ => ("invalid or unsupported Perl syntax", spanned),
    };
    format!("error parsing regexp: {code}: `{fragment}`")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn regexp_errors_read_like_go() {
        let cases = [
            ("(", "error parsing regexp: missing closing ): `(`"),
            ("a)", "error parsing regexp: unexpected ): `a)`"),
            ("x[a", "error parsing regexp: missing closing ]: `[a`"),
            (
                "*",
                "error parsing regexp: missing argument to repetition operator: `*`",
            ),
            (
                "+?",
                "error parsing regexp: missing argument to repetition operator: `+?`",
            ),
            (
                "(?:{2})",
                "error parsing regexp: missing argument to repetition operator: `{2}`",
            ),
            (
                "a\\",
                "error parsing regexp: trailing backslash at end of expression: ``",
            ),
            (
                "[z-a]",
                "error parsing regexp: invalid character class range: `z-a`",
            ),
        ];
        for (pattern, want) in cases {
            assert_eq!(
                compile_regexp(pattern).map(|_| ()),
                Err(want.to_string()),
                "{pattern}"
            );
        }
    }
}
