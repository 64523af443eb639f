//! KCL source to a syntax tree.
//!
//! A hand-written LL(1) parser with KCL's grammar, precedence and error
//! recovery: a syntax error is recorded with KCL's message and position and
//! parsing goes on (skipping a token where nothing else helps), so a file
//! gets the same list of errors KCL reports. It never panics: every loop
//! consumes a token or stops, and nesting is bounded.
//!
//! By concern: `expr` (operators and operands), `config` (config and list
//! literals, comprehensions), `stmt` (statements), `schema` (schemas, rules
//! and their bodies), `ty` (type annotations), `strings` (string literals
//! and `${…}` interpolation).

mod config;
mod expr;
mod schema;
mod stmt;
mod strings;
mod ty;

#[cfg(test)]
mod tests;

use crate::ast::{Expr, Module, Node, NodeRef};
use crate::error::{ErrorKind, KclError};
use crate::lexer::{self, Token, TokenKind};
use crate::source::{FileId, Span};

/// How deep the tree may nest: deeper input is reported instead of
/// exhausting the stack, here or in the checker and evaluator that walk the
/// tree. Brackets, operators applied in a chain (`a + b + …`), selectors,
/// calls, subscripts and `elif`s count one level each, a statement three;
/// the deepest input takes under 1 MiB of stack unoptimized.
const MAX_DEPTH: usize = 100;

/// The result of parsing one file: the tree (with `Missing` where input was
/// wrong) and every syntax error, in the order KCL reports them.
#[derive(Debug, Clone)]
pub struct ParseResult {
    pub module: Module,
    pub errors: Vec<KclError>,
}

/// Parses one file. `file` is the file's id in the program's `SourceMap`
/// (every span points into it); `filename` and `pkg` are recorded on the
/// module.
pub fn parse_file(file: FileId, filename: &str, pkg: &str, src: &str) -> ParseResult {
    let lines = LineIndex::new(src);
    let (tokens, lex_errors) = lexer::tokenize(src, 0);
    let mut parser = Parser::new(file, src, &lines, tokens);
    for e in lex_errors {
        parser.error_at(e.message, e.lo, e.hi);
    }
    let (doc, body) = parser.parse_module();
    let mut errors = parser.errors;
    dedup(&mut errors);
    ParseResult {
        module: Module {
            filename: filename.to_string(),
            pkg: pkg.to_string(),
            doc,
            body,
        },
        errors,
    }
}

/// KCL keeps each diagnostic once.
fn dedup(errors: &mut Vec<KclError>) {
    let mut seen = crate::collections::HashSet::default();
    errors.retain(|e| seen.insert((e.kind, e.message.clone(), e.span())));
}

/// Byte offsets to lines and columns.
pub(crate) struct LineIndex<'a> {
    starts: Vec<usize>,
    /// Whether the text holds only ASCII: then a column is a byte count.
    ascii: bool,
    text: &'a str,
    /// The line of the last lookup: positions are asked for mostly in
    /// order, so it usually holds the next one too.
    last_line: std::cell::Cell<usize>,
}

impl LineIndex<'_> {
    pub(crate) fn new(src: &str) -> LineIndex<'_> {
        // As in KCL's source map, a line break ending the file starts no
        // line: the end of input is on the last line.
        let mut starts = vec![0];
        starts.extend(
            src.match_indices('\n')
                .map(|(i, _)| i + 1)
                .filter(|&start| start < src.len()),
        );
        LineIndex {
            starts,
            ascii: src.is_ascii(),
            text: src,
            last_line: std::cell::Cell::new(0),
        }
    }

    /// Line (from 1) and column (from 0, in characters) of a byte offset.
    fn position(&self, offset: usize) -> (u32, u32) {
        let cached = self.last_line.get();
        let in_cached = |line: usize| {
            self.starts.get(line).is_some_and(|&s| s <= offset)
                && self.starts.get(line + 1).is_none_or(|&next| offset < next)
        };
        let line = if in_cached(cached) {
            cached
        } else if in_cached(cached + 1) {
            cached + 1
        } else {
            match self.starts.binary_search(&offset) {
                Ok(i) => i,
                Err(i) => i.saturating_sub(1),
            }
        };
        self.last_line.set(line);
        let start = self.starts.get(line).copied().unwrap_or(0);
        let end = offset.min(self.text.len());
        let column = if self.ascii {
            end.saturating_sub(start)
        } else {
            self.text.get(start..end).map_or(0, |s| s.chars().count())
        };
        (
            u32::try_from(line + 1).unwrap_or(u32::MAX),
            u32::try_from(column).unwrap_or(u32::MAX),
        )
    }
}

pub(crate) struct Parser<'a> {
    file: FileId,
    src: &'a str,
    lines: &'a LineIndex<'a>,
    tokens: Vec<Token>,
    index: usize,
    token: Token,
    prev_token: Token,
    errors: Vec<KclError>,
    depth: usize,
    /// Set when the input nests too deeply: the rest is skipped and no
    /// more errors are reported.
    aborted: bool,
}

/// Where the parser was, to tell whether a loop made progress.
#[derive(Clone, Copy)]
pub(crate) struct Marker(usize);

fn eof_token(at: usize) -> Token {
    Token {
        kind: TokenKind::Eof,
        lo: at,
        hi: at,
    }
}

/// The token at `index`, moved out: the parser reads tokens once, in order,
/// and looks ahead only past the current one. What stays behind is an end
/// of input at the same place (the last token is one already).
fn take_token(tokens: &mut [Token], index: usize) -> Option<Token> {
    let slot = tokens.get_mut(index)?;
    let end = Token {
        kind: TokenKind::Eof,
        lo: slot.lo,
        hi: slot.hi,
    };
    Some(std::mem::replace(slot, end))
}

impl<'a> Parser<'a> {
    fn new(
        file: FileId,
        src: &'a str,
        lines: &'a LineIndex<'a>,
        mut tokens: Vec<Token>,
    ) -> Parser<'a> {
        let first = take_token(&mut tokens, 0).unwrap_or_else(|| eof_token(0));
        Parser {
            file,
            src,
            lines,
            tokens,
            index: 0,
            prev_token: first.clone(),
            token: first,
            errors: Vec::new(),
            depth: 0,
            aborted: false,
        }
    }

    // ~~~ Positions

    fn span(&self, lo: usize, hi: usize) -> Span {
        let (line, column) = self.lines.position(lo);
        let (end_line, end_column) = self.lines.position(hi.max(lo));
        Span::new(self.file, line, column, end_line, end_column)
    }

    /// From the start of `lo` to the end of the previous token.
    fn span_from(&self, lo: &Token) -> Span {
        self.span(lo.lo, self.prev_token.hi.max(lo.lo))
    }

    /// The range between the start of `lo` and the end of the previous
    /// token, whichever comes first (KCL's byte spans order their ends).
    fn ordered_span_from(&self, lo: &Token) -> Span {
        let (a, b) = (lo.lo, self.prev_token.hi);
        self.span(a.min(b), a.max(b))
    }

    fn node<T>(&self, node: T, lo: &Token) -> Node<T> {
        Node::new(node, self.span_from(lo))
    }

    fn boxed<T>(&self, node: T, lo: &Token) -> Box<Node<T>> {
        Box::new(self.node(node, lo))
    }

    // ~~~ Errors

    fn error_at(&mut self, message: impl Into<String>, lo: usize, hi: usize) {
        if self.aborted {
            return;
        }
        let span = self.span(lo, hi);
        self.errors
            .push(KclError::at(ErrorKind::InvalidSyntax, span, message));
    }

    fn error_here(&mut self, message: impl Into<String>) {
        let (lo, hi) = (self.token.lo, self.token.hi);
        self.error_at(message, lo, hi);
    }

    /// KCL's "expected one of [...] got ..." for the current token.
    fn token_error(&mut self, expected: &[&str]) {
        let got = self.token.kind.describe();
        self.error_here(format!("expected one of {expected:?} got {got}"));
    }

    // ~~~ Tokens

    fn bump(&mut self) {
        if self.index + 1 < self.tokens.len() {
            self.index += 1;
        }
        let next =
            take_token(&mut self.tokens, self.index).unwrap_or_else(|| eof_token(self.token.hi));
        self.prev_token = std::mem::replace(&mut self.token, next);
    }

    fn peek(&self) -> &TokenKind {
        self.peek_n(1)
    }

    fn peek_n(&self, n: usize) -> &TokenKind {
        self.tokens
            .get(self.index + n)
            .map_or(&TokenKind::Eof, |t| &t.kind)
    }

    /// Whether a token follows the current one.
    fn has_next(&self) -> bool {
        self.index + 1 < self.tokens.len()
    }

    fn is(&self, kind: &TokenKind) -> bool {
        &self.token.kind == kind
    }

    fn is_kw(&self, kw: &str) -> bool {
        self.token.is_keyword(kw)
    }

    fn at_eof(&self) -> bool {
        matches!(self.token.kind, TokenKind::Eof)
    }

    fn bump_kw(&mut self, kw: &str) {
        if !self.is_kw(kw) {
            self.token_error(&[kw]);
        }
        self.bump();
    }

    fn bump_token(&mut self, kind: TokenKind) {
        if !self.is(&kind) {
            let name = match &kind {
                TokenKind::Dedent(_) => "dedent",
                other => other.symbol(),
            };
            self.token_error(&[name]);
        }
        self.bump();
    }

    fn skip_newlines(&mut self) {
        while matches!(self.token.kind, TokenKind::Newline) {
            self.bump();
        }
    }

    fn clean_all_indentations(&mut self) {
        while matches!(self.token.kind, TokenKind::Indent) {
            self.bump();
        }
        while matches!(self.token.kind, TokenKind::Dedent(_)) {
            self.bump();
        }
    }

    fn clean_all_dedent(&mut self) {
        while matches!(self.token.kind, TokenKind::Dedent(_)) {
            self.bump();
        }
    }

    fn is_valid_dedent(&self) -> bool {
        matches!(self.token.kind, TokenKind::Dedent(0))
    }

    /// Reports a dedent to a level no block has, and skips it.
    fn validate_dedent(&mut self) {
        if let TokenKind::Dedent(n) = self.token.kind
            && n != 0
        {
            let unit = if n == 1 { "space" } else { "spaces" };
            self.error_here(format!(
                "invalid indentation with {n} {unit}, try to align indents by adding or removing spaces"
            ));
            self.bump();
        }
    }

    fn mark(&self) -> Marker {
        Marker(self.index)
    }

    /// Reports "expected expression" and skips the current token when
    /// nothing was consumed since `marker`: what keeps every loop moving.
    /// `true` when the loop must stop (no progress at the end of input).
    fn stuck(&mut self, marker: Marker) -> bool {
        if marker.0 != self.index {
            return false;
        }
        let got = self.token.kind.describe();
        self.error_here(format!("expected expression, got {got}"));
        if self.at_eof() {
            return true;
        }
        self.bump();
        false
    }

    fn missing_expr(&self) -> NodeRef<Expr> {
        Box::new(Node::new(
            Expr::Missing,
            self.span(self.token.lo, self.token.hi),
        ))
    }

    /// Enters one level of nesting; `false` when too deep, after reporting
    /// it once and skipping to the end of the input.
    fn enter(&mut self) -> bool {
        self.enter_weighted(1)
    }

    /// `enter` for a construct whose frames are `weight` times an
    /// expression's (a statement).
    fn enter_weighted(&mut self, weight: usize) -> bool {
        if self.depth + weight > MAX_DEPTH {
            self.error_here("the program nests too deeply to parse");
            self.aborted = true;
            self.index = self.tokens.len().saturating_sub(1);
            self.token = self
                .tokens
                .last()
                .cloned()
                .unwrap_or_else(|| eof_token(self.token.hi));
            return false;
        }
        self.depth += weight;
        true
    }

    fn leave(&mut self) {
        self.leave_weighted(1);
    }

    fn leave_weighted(&mut self, weight: usize) {
        self.depth = self.depth.saturating_sub(weight);
    }

    /// Strips the `$` that lets a keyword be a name (`$if`).
    fn ident_name(name: &str) -> String {
        name.strip_prefix('$').unwrap_or(name).to_string()
    }
}
