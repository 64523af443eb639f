//! Tokens of KCL source, with indentation as INDENT/DEDENT tokens.
//!
//! Like KCL's lexer, this one emits NEWLINE, INDENT and DEDENT everywhere,
//! also inside brackets: a lambda's body inside a call has statements and
//! blocks of its own, so the parser (not the lexer) decides where line
//! breaks and indentation matter. A line continued with `\` and a line
//! holding only a comment or nothing produce no indentation change.
//!
//! Errors do not stop the lexer: each is recorded (with KCL's message) and
//! the token is recovered, so the parser can go on and report more, as KCL
//! does.

use std::rc::Rc;

use crate::ast::NumberBinarySuffix;

#[derive(Debug, Clone, PartialEq)]
pub enum TokenKind {
    /// A name or keyword, as written (a leading `$` included).
    Ident(Rc<str>),
    /// An integer literal: its digits as written and its unit suffix.
    Int {
        text: Rc<str>,
        suffix: Option<NumberBinarySuffix>,
    },
    /// A float literal as written.
    Float(Rc<str>),
    Str(Rc<StrLit>),
    Newline,
    Indent,
    /// The end of an indented block. A non-zero count is a dedent to a
    /// level no enclosing block has: the count of spaces it is off by.
    Dedent(usize),
    Eof,
    // Operators.
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    StarStar,
    SlashSlash,
    Caret,
    Amp,
    Pipe,
    Shl,
    Shr,
    Tilde,
    /// `!`, reported and read as `not`.
    Bang,
    /// `+=`, `-=`, …: the operator before `=`.
    AugAssign(AugKind),
    EqEq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    At,
    Dot,
    DotDotDot,
    Comma,
    Colon,
    Dollar,
    Question,
    Assign,
    Arrow,
    OpenParen,
    CloseParen,
    OpenBracket,
    CloseBracket,
    OpenBrace,
    CloseBrace,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AugKind {
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    StarStar,
    SlashSlash,
    Caret,
    Amp,
    Pipe,
    Shl,
    Shr,
}

impl AugKind {
    pub fn op(self) -> crate::ast::AugOp {
        use crate::ast::AugOp;
        match self {
            AugKind::Plus => AugOp::Add,
            AugKind::Minus => AugOp::Sub,
            AugKind::Star => AugOp::Mul,
            AugKind::Slash => AugOp::Div,
            AugKind::Percent => AugOp::Mod,
            AugKind::StarStar => AugOp::Pow,
            AugKind::SlashSlash => AugOp::FloorDiv,
            AugKind::Caret => AugOp::BitXor,
            AugKind::Amp => AugOp::BitAnd,
            AugKind::Pipe => AugOp::BitOr,
            AugKind::Shl => AugOp::LShift,
            AugKind::Shr => AugOp::RShift,
        }
    }
}

/// A string literal token.
#[derive(Debug, Clone, PartialEq)]
pub struct StrLit {
    /// The value with escapes resolved (interpolations still in it).
    pub value: String,
    /// The literal as written, prefix and quotes included.
    pub raw: String,
    /// Triple-quoted.
    pub is_long: bool,
    /// `r"…"`: no escapes, no interpolation.
    pub is_raw: bool,
}

impl TokenKind {
    /// How KCL names the token in "expected one of … got …" messages.
    pub fn describe(&self) -> String {
        let s = match self {
            TokenKind::Ident(_) => "identifier",
            TokenKind::Int { text, suffix } => {
                return match suffix {
                    Some(s) => format!("{text}{}", s.as_str()),
                    None => text.to_string(),
                };
            }
            TokenKind::Float(text) => return text.to_string(),
            TokenKind::Str(s) => return s.value.clone(),
            TokenKind::Newline => "newline",
            TokenKind::Indent => "indent",
            TokenKind::Dedent(_) => "dedent",
            TokenKind::Eof => "eof",
            other => other.symbol(),
        };
        s.to_string()
    }

    /// The operator or delimiter as written; a word for the others.
    pub fn symbol(&self) -> &'static str {
        match self {
            TokenKind::Ident(_) => "identifier",
            TokenKind::Int { .. } | TokenKind::Float(_) | TokenKind::Str(_) => "literal",
            TokenKind::Newline => "newline",
            TokenKind::Indent => "indent",
            TokenKind::Dedent(_) => "dedent",
            TokenKind::Eof => "eof",
            TokenKind::Plus => "+",
            TokenKind::Minus => "-",
            TokenKind::Star => "*",
            TokenKind::Slash => "/",
            TokenKind::Percent => "%",
            TokenKind::StarStar => "**",
            TokenKind::SlashSlash => "//",
            TokenKind::Caret => "^",
            TokenKind::Amp => "&",
            TokenKind::Pipe => "|",
            TokenKind::Shl => "<<",
            TokenKind::Shr => ">>",
            TokenKind::Tilde => "~",
            TokenKind::Bang => "not",
            TokenKind::AugAssign(k) => match k {
                AugKind::Plus => "+=",
                AugKind::Minus => "-=",
                AugKind::Star => "*=",
                AugKind::Slash => "/=",
                AugKind::Percent => "%=",
                AugKind::StarStar => "**=",
                AugKind::SlashSlash => "//=",
                AugKind::Caret => "^=",
                AugKind::Amp => "&=",
                AugKind::Pipe => "|=",
                AugKind::Shl => "<<=",
                AugKind::Shr => ">>=",
            },
            TokenKind::EqEq => "==",
            TokenKind::NotEq => "!=",
            TokenKind::Lt => "<",
            TokenKind::LtEq => "<=",
            TokenKind::Gt => ">",
            TokenKind::GtEq => ">=",
            TokenKind::At => "@",
            TokenKind::Dot => ".",
            TokenKind::DotDotDot => "...",
            TokenKind::Comma => ",",
            TokenKind::Colon => ":",
            TokenKind::Dollar => "$",
            TokenKind::Question => "?",
            TokenKind::Assign => "=",
            TokenKind::Arrow => "->",
            TokenKind::OpenParen => "(",
            TokenKind::CloseParen => ")",
            TokenKind::OpenBracket => "[",
            TokenKind::CloseBracket => "]",
            TokenKind::OpenBrace => "{",
            TokenKind::CloseBrace => "}",
        }
    }
}

/// A token and its byte range in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub kind: TokenKind,
    pub lo: usize,
    pub hi: usize,
}

impl Token {
    pub fn is_keyword(&self, kw: &str) -> bool {
        matches!(&self.kind, TokenKind::Ident(name) if &**name == kw)
    }
}

/// A lexical error: KCL's message and the byte range it points at.
#[derive(Debug, Clone, PartialEq)]
pub struct LexError {
    pub message: String,
    pub lo: usize,
    pub hi: usize,
}

#[derive(Clone, Copy, Default, PartialEq, Debug)]
struct IndentLevel {
    tabs: usize,
    spaces: usize,
}

const INCONSISTENT_TABS: &str = "inconsistent use of tabs and spaces in indentation";

impl IndentLevel {
    fn cmp(&self, other: &IndentLevel) -> Result<std::cmp::Ordering, &'static str> {
        use std::cmp::Ordering;
        match self.tabs.cmp(&other.tabs) {
            Ordering::Less if self.spaces <= other.spaces => Ok(Ordering::Less),
            Ordering::Greater if self.spaces >= other.spaces => Ok(Ordering::Greater),
            Ordering::Equal => Ok(self.spaces.cmp(&other.spaces)),
            _ => Err(INCONSISTENT_TABS),
        }
    }
}

/// Tokenizes `src`, whose first byte is at offset `base` of its file.
pub fn tokenize(src: &str, base: usize) -> (Vec<Token>, Vec<LexError>) {
    let mut lexer = Lexer {
        src,
        base,
        pos: 0,
        tokens: Vec::with_capacity(src.len() / 4),
        errors: Vec::new(),
        delims: Vec::new(),
        tabs: 0,
        spaces: 0,
        new_line_beginning: false,
        indents: vec![IndentLevel::default()],
        names: crate::collections::HashMap::default(),
    };
    lexer.run();
    (lexer.tokens, lexer.errors)
}

struct Lexer<'a> {
    src: &'a str,
    base: usize,
    pos: usize,
    tokens: Vec<Token>,
    errors: Vec<LexError>,
    delims: Vec<TokenKind>,
    tabs: usize,
    spaces: usize,
    new_line_beginning: bool,
    indents: Vec<IndentLevel>,
    /// Each distinct name once: a name written again shares its text.
    names: crate::collections::HashMap<&'a str, Rc<str>>,
}

fn is_id_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_id_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Whitespace that is neither indentation nor a line break.
fn is_other_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{000B}'
            | '\u{000C}'
            | '\r'
            | '\u{0085}'
            | '\u{200E}'
            | '\u{200F}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// What one scan step found before it is turned into a token.
enum Raw {
    Comment,
    Tab,
    Space,
    Newline,
    Skip,
    Token(TokenKind),
}

impl<'a> Lexer<'a> {
    fn peek_at(&self, n: usize) -> Option<char> {
        // Most source is ASCII: a byte is a character.
        if let Some(&b) = self.src.as_bytes().get(self.pos + n)
            && b.is_ascii()
            && self
                .src
                .as_bytes()
                .get(self.pos..self.pos + n)
                .is_some_and(<[u8]>::is_ascii)
        {
            return Some(char::from(b));
        }
        self.src.get(self.pos..)?.chars().nth(n)
    }

    fn err(&mut self, message: impl Into<String>, lo: usize, hi: usize) {
        self.errors.push(LexError {
            message: message.into(),
            lo: self.base + lo,
            hi: self.base + hi,
        });
    }

    fn push(&mut self, kind: TokenKind, lo: usize, hi: usize) {
        self.tokens.push(Token {
            kind,
            lo: self.base + lo,
            hi: self.base + hi,
        });
    }

    fn run(&mut self) {
        while self.pos < self.src.len() {
            let start = self.pos;
            // A run of spaces is one step: counted as indentation at the
            // start of a line, skipped anywhere else.
            let spaces = self.src.as_bytes()[start..]
                .iter()
                .take_while(|&&b| b == b' ')
                .count();
            if spaces > 0 {
                if self.new_line_beginning {
                    self.spaces += spaces;
                }
                self.pos += spaces;
                continue;
            }
            let raw = self.scan();
            // The scan always advances; this guards the loop should it not.
            if self.pos <= start {
                self.pos = start + self.src[start..].chars().next().map_or(1, char::len_utf8);
                continue;
            }
            self.handle(raw, start);
        }
        let end = self.src.len();
        if !self.new_line_beginning {
            self.new_line_beginning = true;
            self.push(TokenKind::Newline, end, end);
        }
        while self.indents.len() > 1 {
            self.indents.pop();
            self.push(TokenKind::Dedent(0), end, end);
        }
        // KCL's parser sees a line break right before the end of input.
        if !matches!(self.tokens.last(), Some(t) if t.kind == TokenKind::Newline) {
            self.push(TokenKind::Newline, end, end);
        }
        self.push(TokenKind::Eof, end, end);
    }

    fn handle(&mut self, raw: Raw, start: usize) {
        // Indentation is measured on the first token of a line.
        if self.new_line_beginning {
            match raw {
                Raw::Comment | Raw::Newline => {
                    self.tabs = 0;
                    self.spaces = 0;
                }
                Raw::Tab => self.tabs += 1,
                Raw::Space => self.spaces += 1,
                Raw::Skip => {}
                Raw::Token(_) => {
                    self.new_line_beginning = false;
                    self.lex_indent(start);
                }
            }
        }
        match raw {
            Raw::Newline => {
                self.new_line_beginning = true;
                self.push(TokenKind::Newline, start, self.pos);
            }
            Raw::Token(kind) => {
                let kind = self.track_delims(kind, start);
                self.push(kind, start, self.pos);
            }
            _ => {}
        }
    }

    fn lex_indent(&mut self, at: usize) {
        use std::cmp::Ordering;
        let indent = IndentLevel {
            tabs: self.tabs,
            spaces: self.spaces,
        };
        self.tabs = 0;
        self.spaces = 0;
        let current = self.indents.last().copied().unwrap_or_default();
        match indent.cmp(&current) {
            Err(msg) => self.err(msg, at, at),
            Ok(Ordering::Equal) => {}
            Ok(Ordering::Greater) => {
                self.indents.push(indent);
                self.push(TokenKind::Indent, at, at);
            }
            Ok(Ordering::Less) => {
                let mut dedents = 0usize;
                let mut popped = Vec::new();
                let mut off_by = 0;
                loop {
                    let cur = self.indents.last().copied().unwrap_or_default();
                    match indent.cmp(&cur) {
                        Ok(Ordering::Less) => {
                            if let Some(level) = self.indents.pop() {
                                popped.push(level);
                            }
                            dedents += 1;
                            if self.indents.is_empty() {
                                self.indents.push(IndentLevel::default());
                            }
                        }
                        Ok(Ordering::Equal) => break,
                        Ok(Ordering::Greater) => {
                            // Between two levels: the last dedent stays, as
                            // an error the parser reports where it expects a
                            // block's end.
                            off_by = indent.spaces.saturating_sub(cur.spaces);
                            if let Some(level) = popped.pop() {
                                self.indents.push(level);
                            }
                            break;
                        }
                        Err(msg) => {
                            self.err(msg, at, at);
                            break;
                        }
                    }
                }
                for i in 0..dedents {
                    let n = if i + 1 == dedents { off_by } else { 0 };
                    self.push(TokenKind::Dedent(n), at, at);
                }
            }
        }
    }

    /// Checks closing delimiters against the open ones, recovering a
    /// mismatched one as the delimiter that was open, as KCL does.
    fn track_delims(&mut self, kind: TokenKind, start: usize) -> TokenKind {
        let (open, message) = match kind {
            TokenKind::OpenParen | TokenKind::OpenBracket | TokenKind::OpenBrace => {
                self.delims.push(kind.clone());
                return kind;
            }
            TokenKind::CloseParen => (TokenKind::OpenParen, "error nesting on close paren"),
            TokenKind::CloseBrace => (TokenKind::OpenBrace, "error nesting on close brace"),
            TokenKind::CloseBracket => (TokenKind::OpenBracket, "mismatched closing delimiter"),
            _ => return kind,
        };
        match self.delims.pop() {
            Some(top) if top == open => kind,
            Some(top) => {
                self.err(message, start, self.pos);
                match top {
                    TokenKind::OpenParen => TokenKind::CloseParen,
                    TokenKind::OpenBracket => TokenKind::CloseBracket,
                    _ => TokenKind::CloseBrace,
                }
            }
            None => {
                self.err(message, start, self.pos);
                kind
            }
        }
    }

    fn bump(&mut self) -> Option<char> {
        let c = match self.src.as_bytes().get(self.pos) {
            Some(&b) if b.is_ascii() => char::from(b),
            _ => self.src.get(self.pos..)?.chars().next()?,
        };
        self.pos += c.len_utf8();
        Some(c)
    }

    fn eat_if(&mut self, c: char) -> bool {
        if self.peek_at(0) == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn scan(&mut self) -> Raw {
        let start = self.pos;
        let Some(c) = self.bump() else {
            return Raw::Skip;
        };
        let tok = |k| Raw::Token(k);
        match c {
            '#' => {
                self.pos = self.src[self.pos..]
                    .find('\n')
                    .map_or(self.src.len(), |i| self.pos + i);
                Raw::Comment
            }
            c if is_other_whitespace(c) => Raw::Skip,
            'r' | 'R' if matches!(self.peek_at(0), Some('"' | '\'')) => {
                let quote = self.bump().unwrap_or('"');
                tok(self.string(start, quote, true))
            }
            '"' | '\'' => tok(self.string(start, c, false)),
            '$' if self.peek_at(0).is_some_and(is_id_start) => tok(self.name(start)),
            c if is_id_start(c) => tok(self.name(start)),
            '0'..='9' => tok(self.number(start, c)),
            '\t' => Raw::Tab,
            ' ' => Raw::Space,
            '\n' => Raw::Newline,
            ';' => {
                self.err(
                    "the semicolon ';' here is unnecessary, please remove it",
                    start,
                    self.pos,
                );
                Raw::Skip
            }
            ',' => tok(TokenKind::Comma),
            '.' => {
                if self.peek_at(0) == Some('.') && self.peek_at(1) == Some('.') {
                    self.pos += 2;
                    tok(TokenKind::DotDotDot)
                } else {
                    tok(TokenKind::Dot)
                }
            }
            '(' => tok(TokenKind::OpenParen),
            ')' => tok(TokenKind::CloseParen),
            '{' => tok(TokenKind::OpenBrace),
            '}' => tok(TokenKind::CloseBrace),
            '[' => tok(TokenKind::OpenBracket),
            ']' => tok(TokenKind::CloseBracket),
            '@' => tok(TokenKind::At),
            '~' => tok(TokenKind::Tilde),
            '?' => tok(TokenKind::Question),
            ':' => tok(TokenKind::Colon),
            '$' => tok(TokenKind::Dollar),
            '=' => tok(if self.eat_if('=') {
                TokenKind::EqEq
            } else {
                TokenKind::Assign
            }),
            '!' => {
                if self.eat_if('=') {
                    tok(TokenKind::NotEq)
                } else {
                    self.err("invalid token '!', consider using 'not '", start, self.pos);
                    tok(TokenKind::Bang)
                }
            }
            '<' => tok(if self.eat_if('=') {
                TokenKind::LtEq
            } else if self.eat_if('<') {
                self.aug_or(AugKind::Shl, TokenKind::Shl)
            } else {
                TokenKind::Lt
            }),
            '>' => tok(if self.eat_if('=') {
                TokenKind::GtEq
            } else if self.eat_if('>') {
                self.aug_or(AugKind::Shr, TokenKind::Shr)
            } else {
                TokenKind::Gt
            }),
            '-' => tok(if self.eat_if('>') {
                TokenKind::Arrow
            } else {
                self.aug_or(AugKind::Minus, TokenKind::Minus)
            }),
            '&' => tok(self.aug_or(AugKind::Amp, TokenKind::Amp)),
            '|' => tok(self.aug_or(AugKind::Pipe, TokenKind::Pipe)),
            '+' => tok(self.aug_or(AugKind::Plus, TokenKind::Plus)),
            '^' => tok(self.aug_or(AugKind::Caret, TokenKind::Caret)),
            '%' => tok(self.aug_or(AugKind::Percent, TokenKind::Percent)),
            '*' => tok(if self.eat_if('*') {
                self.aug_or(AugKind::StarStar, TokenKind::StarStar)
            } else {
                self.aug_or(AugKind::Star, TokenKind::Star)
            }),
            '/' => tok(if self.eat_if('/') {
                self.aug_or(AugKind::SlashSlash, TokenKind::SlashSlash)
            } else {
                self.aug_or(AugKind::Slash, TokenKind::Slash)
            }),
            '\\' => {
                match self.peek_at(0) {
                    Some('\n') => {
                        self.bump();
                    }
                    // `\` then `\r\n` continues the line too.
                    Some('\r') if self.peek_at(1) == Some('\n') => {
                        self.pos += 2;
                    }
                    None => {}
                    Some(_) => self.err(
                        "unexpected character after line continuation character",
                        start,
                        self.pos,
                    ),
                }
                Raw::Skip
            }
            _ => {
                self.err("unknown start of token", start, self.pos);
                Raw::Skip
            }
        }
    }

    /// The rest of a name whose first character is consumed: ASCII bytes
    /// directly, anything else by characters.
    fn name(&mut self, start: usize) -> TokenKind {
        let ascii = self.src.as_bytes()[self.pos..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
            .count();
        self.pos += ascii;
        if self
            .src
            .as_bytes()
            .get(self.pos)
            .is_some_and(|b| !b.is_ascii())
        {
            self.eat_while(is_id_continue);
        }
        let text = &self.src[start..self.pos];
        let name = match self.names.get(text) {
            Some(name) => name.clone(),
            None => {
                let name: Rc<str> = Rc::from(text);
                self.names.insert(text, name.clone());
                name
            }
        };
        TokenKind::Ident(name)
    }

    fn aug_or(&mut self, aug: AugKind, plain: TokenKind) -> TokenKind {
        if self.eat_if('=') {
            TokenKind::AugAssign(aug)
        } else {
            plain
        }
    }

    fn eat_while(&mut self, f: impl Fn(char) -> bool) {
        while let Some(c) = self.peek_at(0) {
            if !f(c) {
                break;
            }
            self.bump();
        }
    }

    fn eat_digits(&mut self, radix: u32) -> bool {
        let mut any = false;
        while let Some(c) = self.peek_at(0) {
            if c == '_' {
                self.bump();
            } else if c.is_digit(radix) {
                any = true;
                self.bump();
            } else {
                break;
            }
        }
        any
    }

    fn eat_exponent(&mut self) -> bool {
        if matches!(self.peek_at(0), Some('-' | '+')) {
            self.bump();
        }
        self.eat_digits(10)
    }

    fn number(&mut self, start: usize, first: char) -> TokenKind {
        let mut radix = 10;
        if first == '0' {
            let has_digits = match self.peek_at(0) {
                Some('b') => {
                    radix = 2;
                    self.bump();
                    self.eat_digits(10)
                }
                Some('o') => {
                    radix = 8;
                    self.bump();
                    self.eat_digits(10)
                }
                Some('0'..='9') => {
                    radix = 8;
                    self.bump();
                    self.eat_digits(10)
                }
                Some('x') => {
                    radix = 16;
                    self.bump();
                    self.eat_digits(16)
                }
                Some('_' | '.' | 'e' | 'E') => {
                    self.eat_digits(10);
                    true
                }
                _ => {
                    return self.int_with_suffix(start, self.pos, radix);
                }
            };
            if !has_digits {
                self.eat_suffix();
                self.err("no valid digits found for number", start, self.pos);
                return TokenKind::Int {
                    text: Rc::from("0"),
                    suffix: None,
                };
            }
        } else {
            self.eat_digits(10);
        }
        let is_float = match self.peek_at(0) {
            Some('.')
                if self.peek_at(1) != Some('.') && !self.peek_at(1).is_some_and(is_id_start) =>
            {
                self.bump();
                let mut empty_exponent = false;
                if self.peek_at(0).is_some_and(|c| c.is_ascii_digit()) {
                    self.eat_digits(10);
                    if matches!(self.peek_at(0), Some('e' | 'E')) {
                        self.bump();
                        empty_exponent = !self.eat_exponent();
                    }
                }
                Some(empty_exponent)
            }
            Some('e' | 'E') => {
                self.bump();
                Some(!self.eat_exponent())
            }
            _ => None,
        };
        match is_float {
            Some(empty_exponent) => {
                let end = self.pos;
                self.eat_suffix();
                if empty_exponent {
                    self.err("expected at least one digit in exponent", start, self.pos);
                    return TokenKind::Float(Rc::from("0"));
                }
                if radix != 10 {
                    let base = match radix {
                        2 => "binary",
                        8 => "octal",
                        _ => "hexadecimal",
                    };
                    self.err(
                        format!("{base} float literal is not supported"),
                        start,
                        self.pos,
                    );
                    return TokenKind::Float(Rc::from("0"));
                }
                TokenKind::Float(Rc::from(&self.src[start..end]))
            }
            None => {
                let end = self.pos;
                self.int_with_suffix(start, end, radix)
            }
        }
    }

    fn eat_suffix(&mut self) {
        if self.peek_at(0).is_some_and(is_id_start) {
            self.eat_while(is_id_continue);
        }
    }

    fn int_with_suffix(&mut self, start: usize, end: usize, radix: u32) -> TokenKind {
        self.eat_suffix();
        let mut text: Rc<str> = Rc::from(&self.src[start..end]);
        if radix != 10 {
            let digits = self.src.get(start + 2..end).unwrap_or("");
            if let Some((i, c)) = digits
                .char_indices()
                .find(|&(_, c)| c != '_' && !c.is_digit(radix))
            {
                let lo = start + 2 + i;
                self.err(
                    format!(
                        "invalid digit for a base {radix} literal, start: {lo}, stop: {}",
                        lo + c.len_utf8()
                    ),
                    lo,
                    self.pos,
                );
                text = Rc::from("0");
            }
        }
        let suffix = if end < self.pos {
            let s = &self.src[end..self.pos];
            match NumberBinarySuffix::from_str(s) {
                Some(suffix) => Some(suffix),
                None => {
                    self.err("invalid int binary suffix", start, self.pos);
                    None
                }
            }
        } else {
            None
        };
        TokenKind::Int { text, suffix }
    }

    /// Scans a string whose opening quote was just read; `start` is where
    /// the literal (its `r` prefix included) begins.
    fn string(&mut self, start: usize, quote: char, is_raw: bool) -> TokenKind {
        let quote_pos = self.pos - 1;
        let is_long = self.peek_at(0) == Some(quote) && self.peek_at(1) == Some(quote);
        if is_long {
            self.pos += 2;
        }
        let content_start = self.pos;
        let mut content_end = None;
        while let Some(c) = self.bump() {
            match c {
                '\\' if self.peek_at(0) == Some('\\') || self.peek_at(0) == Some(quote) => {
                    self.bump();
                }
                c if c == quote => {
                    if !is_long {
                        content_end = Some(self.pos - 1);
                        break;
                    }
                    if self.peek_at(0) == Some(quote) && self.peek_at(1) == Some(quote) {
                        content_end = Some(self.pos - 1);
                        self.pos += 2;
                        break;
                    }
                }
                _ if !is_long && matches!(self.peek_at(0), Some('\r' | '\n') | None) => break,
                _ => {}
            }
        }
        let raw = self.src[start..self.pos].to_string();
        let (content, content_start, is_long) = match content_end {
            Some(end) => (&self.src[content_start..end], content_start, is_long),
            None => {
                self.err("unterminated string", quote_pos, self.pos);
                // KCL reads an unterminated string as a one-quote string:
                // its text starts after the first quote.
                let from = quote_pos + 1;
                (&self.src[from..self.pos], from, false)
            }
        };
        let value = match unescape(content, quote, is_long, is_raw) {
            Some(v) => v,
            None => {
                self.err("invalid string syntax", content_start, self.pos);
                String::new()
            }
        };
        TokenKind::Str(Rc::new(StrLit {
            value,
            raw,
            is_long,
            is_raw,
        }))
    }
}

/// Resolves a string literal's escapes as KCL does (Python's rules; an
/// unknown escape is kept as written). `None` for a malformed literal.
fn unescape(content: &str, quote: char, is_long: bool, is_raw: bool) -> Option<String> {
    let mut out = String::with_capacity(content.len());
    let mut chars = content.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            if c == '\n' && !is_long {
                return None;
            }
            out.push(c);
            continue;
        }
        let next = chars.next();
        if next == Some(quote) && !is_raw {
            out.push(quote);
            continue;
        }
        if is_raw {
            out.push('\\');
            out.push(next?);
            continue;
        }
        match next? {
            '\\' => out.push('\\'),
            '\'' => out.push('\''),
            '"' => out.push('"'),
            '\n' => {}
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            o @ '0'..='7' => {
                let mut value = o.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            value = value * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(value).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
            'x' => out.push(hex_escape(&mut chars, 2)?),
            'u' => out.push(hex_escape(&mut chars, 4)?),
            'U' => out.push(hex_escape(&mut chars, 8)?),
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    Some(out)
}

fn hex_escape(chars: &mut std::iter::Peekable<std::str::Chars>, digits: usize) -> Option<char> {
    let mut value: u32 = 0;
    for _ in 0..digits {
        value = value
            .checked_mul(16)?
            .checked_add(chars.next()?.to_digit(16)?)?;
    }
    match value {
        0xD800..=0xDFFF => Some(char::REPLACEMENT_CHARACTER),
        _ => char::from_u32(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<TokenKind> {
        tokenize(src, 0).0.into_iter().map(|t| t.kind).collect()
    }

    fn errors(src: &str) -> Vec<String> {
        tokenize(src, 0).1.into_iter().map(|e| e.message).collect()
    }

    fn ident(s: &str) -> TokenKind {
        TokenKind::Ident(s.into())
    }

    fn int(s: &str) -> TokenKind {
        TokenKind::Int {
            text: s.into(),
            suffix: None,
        }
    }

    #[test]
    fn operators_are_longest_match() {
        use TokenKind::*;
        let cases: &[(&str, Vec<TokenKind>)] = &[
            ("**=", vec![AugAssign(AugKind::StarStar)]),
            ("//", vec![SlashSlash]),
            ("->", vec![Arrow]),
            ("...", vec![DotDotDot]),
            ("?.", vec![Question, Dot]),
            ("|=", vec![AugAssign(AugKind::Pipe)]),
            ("<<=", vec![AugAssign(AugKind::Shl)]),
            (">>", vec![Shr]),
            ("!=", vec![NotEq]),
            ("==", vec![EqEq]),
        ];
        for (src, want) in cases {
            let mut want = want.clone();
            want.extend([Newline, Eof]);
            assert_eq!(kinds(src), want, "{src}");
        }
    }

    #[test]
    fn indentation_becomes_indent_and_dedent() {
        use TokenKind::*;
        assert_eq!(
            kinds("if a:\n    b\n\n    # c\nd\n"),
            vec![
                ident("if"),
                ident("a"),
                Colon,
                Newline,
                Indent,
                ident("b"),
                Newline,
                Newline,
                Newline,
                Dedent(0),
                ident("d"),
                Newline,
                Eof
            ]
        );
    }

    #[test]
    fn dedent_between_levels_counts_the_spaces_it_is_off_by() {
        let ks = kinds("a:\n    b\n  c\n");
        assert!(ks.contains(&TokenKind::Dedent(2)), "{ks:?}");
    }

    #[test]
    fn mixed_tabs_and_spaces_are_reported() {
        assert_eq!(
            errors("schema P:\n    a: int\n\tb: int\n"),
            vec![INCONSISTENT_TABS.to_string()]
        );
    }

    #[test]
    fn line_continuation_joins_lines() {
        use TokenKind::*;
        assert_eq!(
            kinds("a = 1 + \\\n    2"),
            vec![ident("a"), Assign, int("1"), Plus, int("2"), Newline, Eof]
        );
    }

    #[test]
    fn numbers() {
        let cases: &[(&str, TokenKind)] = &[
            ("0x1F", int("0x1F")),
            ("0o17", int("0o17")),
            ("0b101", int("0b101")),
            ("1_000", int("1_000")),
            ("1.5", TokenKind::Float("1.5".into())),
            ("1e3", TokenKind::Float("1e3".into())),
            ("2.5E-3", TokenKind::Float("2.5E-3".into())),
            (
                "1Ki",
                TokenKind::Int {
                    text: "1".into(),
                    suffix: Some(NumberBinarySuffix::Ki),
                },
            ),
        ];
        for (src, want) in cases {
            assert_eq!(kinds(src)[0], *want, "{src}");
        }
        assert_eq!(errors("1mi"), vec!["invalid int binary suffix"]);
        assert_eq!(
            errors("1e"),
            vec!["expected at least one digit in exponent"]
        );
    }

    #[test]
    fn strings() {
        let cases: &[(&str, &str, bool, bool)] = &[
            (r#""a\nb""#, "a\nb", false, false),
            (r#"'it\'s'"#, "it's", false, false),
            (r#"r"a\nb""#, "a\\nb", false, true),
            ("\"\"\"a\n  b\"\"\"", "a\n  b", true, false),
            (r#""\x41\u00e9\101""#, "AéA", false, false),
            (r#""a\${x}""#, "a\\${x}", false, false),
            (r#""a\qb""#, "a\\qb", false, false),
        ];
        for (src, value, is_long, is_raw) in cases {
            match &kinds(src)[0] {
                TokenKind::Str(s) => {
                    assert_eq!(s.value, *value, "{src}");
                    assert_eq!(s.raw, *src);
                    assert_eq!((s.is_long, s.is_raw), (*is_long, *is_raw), "{src}");
                }
                other => panic!("{src}: {other:?}"),
            }
        }
        assert_eq!(errors("\"abc"), vec!["unterminated string"]);
    }

    #[test]
    fn stray_characters_are_reported_and_skipped() {
        assert_eq!(
            errors("a = 1;"),
            vec!["the semicolon ';' here is unnecessary, please remove it"]
        );
        assert_eq!(errors("a = `"), vec!["unknown start of token"]);
        assert_eq!(
            errors("a = !b"),
            vec!["invalid token '!', consider using 'not '"]
        );
    }

    #[test]
    fn raw_identifiers_keep_their_dollar() {
        assert_eq!(kinds("$type")[0], ident("$type"));
    }
}
