//! String literals and their `${…}` interpolations.
//!
//! As KCL does, an interpolation runs from `${` to the first `}`, its text
//! is parsed as an expression, and what follows a `:` must be a `#json` or
//! `#yaml` spec. `\${` keeps the text literally (without the backslash);
//! `$${x}` is a `$` followed by the interpolation.

use super::{Parser, dedup};
use crate::ast::*;
use crate::lexer::{self, TokenKind};
use std::rc::Rc;

impl Parser<'_> {
    pub(super) fn parse_string_expr(&mut self) -> NodeRef<Expr> {
        let lo = self.token.lo;
        // The literal's text moves from its token into the tree: the
        // parser never reads a token it has passed.
        let lit = match std::mem::replace(&mut self.token.kind, TokenKind::Eof) {
            TokenKind::Str(lit) => lit,
            other => {
                self.token.kind = other;
                self.token_error(&["string"]);
                return self.missing_expr();
            }
        };
        self.bump();
        let span = self.span(lo, self.prev_token.hi.max(lo));
        let lit = Rc::try_unwrap(lit).unwrap_or_else(|shared| (*shared).clone());
        let plain = lit.is_raw || !lit.value.contains("${");
        let string = StringLit {
            is_long_string: lit.is_long,
            raw_value: lit.raw,
            value: lit.value,
        };
        if plain {
            return Box::new(Node::new(Expr::StringLit(string), span));
        }
        let joined = self.parse_joined_string(string, lo, span);
        Box::new(Node::new(Expr::JoinedString(joined), span))
    }

    fn parse_joined_string(
        &mut self,
        s: StringLit,
        start: usize,
        span: crate::source::Span,
    ) -> JoinedString {
        let quote_len = if s.is_long_string { 3 } else { 1 };
        let data = s.value.as_str();
        let raw_data = s
            .raw_value
            .get(..s.raw_value.len().saturating_sub(quote_len))
            .unwrap_or("");
        let mut values = Vec::new();
        let part = |raw: &str, value: &str| {
            Node::new(
                Expr::StringLit(StringLit {
                    is_long_string: false,
                    raw_value: raw.to_string(),
                    value: value.to_string(),
                }),
                span,
            )
        };
        let mut data_off = 0;
        let mut raw_off = quote_len;
        while raw_off < raw_data.len() && data_off < data.len() {
            let raw_rest = raw_data.get(raw_off..).unwrap_or("");
            let data_rest = data.get(data_off..).unwrap_or("");
            let (Some(raw_i), Some(data_i)) = (raw_rest.find("${"), data_rest.find("${")) else {
                values.push(part(raw_rest, data_rest));
                break;
            };
            let raw_lo = raw_off + raw_i;
            let data_lo = data_off + data_i;
            let raw_j = raw_data.get(raw_lo..).and_then(|r| r.find('}'));
            let data_j = data.get(data_lo..).and_then(|d| d.find('}'));
            let (Some(raw_j), Some(data_j)) = (raw_j, data_j) else {
                // KCL points at the token after the string.
                self.error_here("invalid joined string");
                values.push(part(raw_rest, data_rest));
                break;
            };
            let raw_hi = raw_lo + raw_j + 1;
            let data_hi = data_lo + data_j + 1;
            let before = data.get(data_off..data_lo).unwrap_or("");
            let before_raw = raw_data.get(raw_off..raw_lo).unwrap_or("");
            if before_raw.ends_with('\\') {
                let text = data
                    .get(data_off..data_hi)
                    .unwrap_or("")
                    .replace("\\$", "$");
                values.push(part(raw_data.get(raw_off..raw_hi).unwrap_or(""), &text));
            } else {
                if !before.is_empty() {
                    values.push(part(before_raw, before));
                }
                let interp = raw_data.get(raw_lo..raw_hi).unwrap_or("");
                values.push(self.parse_interpolation(interp, start + raw_lo));
            }
            data_off = data_hi;
            raw_off = raw_hi;
        }
        JoinedString {
            is_long_string: s.is_long_string,
            values,
            raw_value: s.raw_value,
        }
    }

    /// `${expr}` or `${expr: #spec}` whose `$` is at byte `start`.
    fn parse_interpolation(&mut self, text: &str, start: usize) -> Node<Expr> {
        let inner = text.get(2..text.len().saturating_sub(1)).unwrap_or("");
        let inner_start = start + 2;
        let inner_end = inner_start + inner.len();
        if inner.is_empty() {
            self.error_at(
                "invalid string interpolation expression: ''",
                start,
                start + text.len(),
            );
        }
        let (tokens, lex_errors) = lexer::tokenize(inner, inner_start);
        let mut sub = Parser::new(self.file, self.src, self.lines, tokens);
        sub.depth = self.depth;
        for e in lex_errors {
            sub.error_at(e.message, e.lo, e.hi);
        }
        let value = sub.parse_expr();
        let mut format_spec = None;
        if sub.is(&TokenKind::Colon) {
            let colon_end = sub.token.hi;
            sub.bump();
            let rest = self
                .src
                .get(colon_end..inner_end)
                .unwrap_or("")
                .trim_start();
            if rest.starts_with('#') {
                format_spec = Some(rest.lines().next().unwrap_or("").to_string());
                // The spec is a comment to the lexer: nothing more to skip.
            } else {
                sub.error_here("invalid joined string spec without #");
                sub.bump();
            }
        }
        sub.skip_newlines();
        if !inner.is_empty() && sub.has_next() {
            sub.error_at(
                format!("invalid string interpolation expression: '{inner}'"),
                inner_start,
                inner_end,
            );
        }
        let mut errors = std::mem::take(&mut sub.errors);
        dedup(&mut errors);
        self.errors.extend(errors);
        if sub.aborted {
            self.aborted = true;
        }
        Node::new(
            Expr::FormattedValue(FormattedValue {
                is_long_string: false,
                value,
                format_spec,
            }),
            self.span(inner_start, inner_end),
        )
    }
}
