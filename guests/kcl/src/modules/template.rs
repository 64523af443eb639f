//! `template`: Handlebars templates over KCL values, rendered as KCL's
//! engine (handlebars-rust) renders them, and `html_escape`.
//!
//! Supported: `{{path}}` (HTML-escaped), `{{{path}}}` and `{{raw path}}`
//! (as is), paths with `this`, `.`/`/` steps, `../`, `@root`, `@index`,
//! `@key`, `@first`, `@last`; the blocks `#if`, `#unless`, `#each` (with
//! `as |item index|`), `#with`, with `{{else}}` and `{{else if …}}`;
//! subexpressions and the helpers `eq`, `ne`, `gt`, `gte`, `lt`, `lte`,
//! `and`, `or`, `not`, `len`, `lookup`; comments; `~` whitespace control
//! and standalone block lines. Partials and custom helpers are not.
//!
//! `{{raw x}}` is KCL 0.13's helper; 0.12.3 renders it as nothing.

use std::fmt::Write as _;

use super::{Args, error};
use crate::builtins::{BuiltinFn, Interp};
use crate::error::{KclError, Result};
use crate::value::json::{EncodeOptions, Node as JsonNode, format_float, write_json_string};
use crate::value::{Dict, Value};

pub(super) const MEMBERS: &[(&str, BuiltinFn)] =
    &[("execute", execute), ("html_escape", html_escape)];

/// `execute(template: str, data: {str:} = {}) -> str`
fn execute(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let args = Args::new(args, kwargs);
    let Some(template) = args.str(0, "template") else {
        return Err(error("execute() takes exactly one argument (0 given)"));
    };
    let data = match args.get(1, "data") {
        None => Value::dict(Dict::new()),
        Some(d) if d.as_dict().is_some() => d.clone(),
        Some(_) => return Err(error("invalid dict value")),
    };
    let nodes = parse(template).map_err(|e| error(format!("register template failed: {e}")))?;
    let mut out = String::new();
    let mut renderer = Renderer {
        root: &data,
        out: &mut out,
    };
    let scope = Scope {
        this: &data,
        parent: None,
        locals: Vec::new(),
    };
    renderer
        .render(&nodes, &scope)
        .map_err(|e| error(format!("render template failed: {}", e.message)))?;
    Ok(Value::str(out))
}

/// `html_escape(data: str) -> str`
fn html_escape(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(data) = Args::new(args, kwargs).str(0, "data") else {
        return Err(error("html_escape() takes exactly one argument (0 given)"));
    };
    Ok(Value::str(escape(data)))
}

/// handlebars-rust's HTML escaping.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '&' => out.push_str("&amp;"),
            '\'' => out.push_str("&#x27;"),
            '`' => out.push_str("&#x60;"),
            '=' => out.push_str("&#x3D;"),
            c => out.push(c),
        }
    }
    out
}

/// An argument of a tag: a path, a literal or a subexpression.
#[derive(Debug, Clone)]
enum Param {
    Path(Path),
    Literal(Value),
    Sub(Box<Call>),
}

/// `../` steps, an `@root` or `@data` start, and the segments after.
#[derive(Debug, Clone, Default)]
struct Path {
    up: usize,
    root: bool,
    data: Option<String>,
    segments: Vec<String>,
}

/// A helper or path with its arguments.
#[derive(Debug, Clone)]
struct Call {
    name: Param,
    params: Vec<Param>,
    hash: Vec<(String, Param)>,
    block_params: Vec<String>,
}

#[derive(Debug)]
enum Node {
    Text(String),
    Expr { call: Call, escaped: bool },
    Block(Block),
}

#[derive(Debug)]
struct Block {
    helper: String,
    call: Call,
    body: Vec<Node>,
    /// `{{else}}`'s part, or an `{{else if …}}` chain as a block.
    inverse: Vec<Node>,
}

/// A mustache or the text between them, before the tree is built.
#[derive(Debug)]
enum Token {
    Text(String),
    Tag {
        kind: TagKind,
        content: String,
        trim_before: bool,
        trim_after: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum TagKind {
    Expr,
    Raw,
    Open,
    Close,
    Else,
    Comment,
}

impl TagKind {
    /// Tags that may stand alone on a line (and take the line with them).
    fn standalone(self) -> bool {
        matches!(
            self,
            TagKind::Open | TagKind::Close | TagKind::Else | TagKind::Comment
        )
    }
}

fn tokenize(template: &str) -> std::result::Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        if start > 0 {
            tokens.push(Token::Text(rest[..start].to_owned()));
        }
        let after = &rest[start..];
        let (raw, open_len, close) = if after.starts_with("{{{") {
            (true, 3, "}}}")
        } else {
            (false, 2, "}}")
        };
        let is_long_comment = after[open_len..].trim_start_matches('~').starts_with("!--");
        let end = if is_long_comment {
            after
                .find("--}}")
                .map(|i| i + 2)
                .or_else(|| after.find("--~}}").map(|i| i + 3))
        } else {
            after[open_len..].find(close).map(|i| i + open_len)
        };
        let Some(end) = end else {
            return Err(format!("unclosed expression at offset {start}"));
        };
        let mut content = &after[open_len..end];
        let trim_before = content.starts_with('~');
        if trim_before {
            content = &content[1..];
        }
        let trim_after = content.ends_with('~');
        if trim_after {
            content = &content[..content.len() - 1];
        }
        let kind = if raw {
            TagKind::Raw
        } else if let Some(c) = content.strip_prefix('!') {
            content = c;
            TagKind::Comment
        } else if let Some(c) = content.strip_prefix('#') {
            content = c;
            TagKind::Open
        } else if let Some(c) = content.strip_prefix('/') {
            content = c;
            TagKind::Close
        } else if content.trim() == "^" {
            content = "";
            TagKind::Else
        } else if content.trim() == "else" || content.trim_start().starts_with("else ") {
            content = content.trim_start().strip_prefix("else").unwrap_or("");
            TagKind::Else
        } else if content.trim_start().starts_with('>') {
            return Err("partials are not supported".into());
        } else {
            TagKind::Expr
        };
        tokens.push(Token::Tag {
            kind,
            content: content.trim().to_owned(),
            trim_before,
            trim_after,
        });
        rest = &after[end + close.len()..];
    }
    if !rest.is_empty() {
        tokens.push(Token::Text(rest.to_owned()));
    }
    apply_whitespace_rules(&mut tokens);
    Ok(tokens)
}

/// `~` trims the neighbouring text; a block tag alone on its line takes
/// its indentation and line break with it. Which tags stand alone is
/// decided on the text as written, before anything is trimmed.
fn apply_whitespace_rules(tokens: &mut [Token]) {
    let text = |t: Option<&Token>| match t {
        Some(Token::Text(s)) => Some(s.clone()),
        _ => None,
    };
    let standalone: Vec<bool> = (0..tokens.len())
        .map(|i| {
            let Some(Token::Tag { kind, .. }) = tokens.get(i) else {
                return false;
            };
            if !kind.standalone() {
                return false;
            }
            let before_ok = match i.checked_sub(1) {
                None => true,
                Some(p) => text(tokens.get(p)).is_some_and(|prev| {
                    let line = prev.rsplit('\n').next().unwrap_or("");
                    line.chars().all(|c| c == ' ' || c == '\t') && (prev.contains('\n') || p == 0)
                }),
            };
            let after_ok = match tokens.get(i + 1) {
                None => true,
                next => text(next).is_some_and(|next| {
                    let line = next.split('\n').next().unwrap_or("");
                    line.trim_end_matches('\r')
                        .chars()
                        .all(|c| c == ' ' || c == '\t')
                        && (next.contains('\n') || i + 2 == tokens.len())
                }),
            };
            before_ok && after_ok
        })
        .collect();
    for (i, alone) in standalone.into_iter().enumerate() {
        let (trim_before, trim_after) = match tokens.get(i) {
            Some(Token::Tag {
                trim_before,
                trim_after,
                ..
            }) => (*trim_before, *trim_after),
            _ => continue,
        };
        if let Some(Token::Text(prev)) = i.checked_sub(1).and_then(|p| tokens.get_mut(p)) {
            if trim_before {
                let kept = prev.trim_end().len();
                prev.truncate(kept);
            } else if alone {
                let keep = prev.rfind('\n').map_or(0, |n| n + 1);
                prev.truncate(keep);
            }
        }
        if let Some(Token::Text(next)) = tokens.get_mut(i + 1) {
            if trim_after {
                *next = next.trim_start().to_owned();
            } else if alone {
                *next = match next.find('\n') {
                    Some(n) => next[n + 1..].to_owned(),
                    None => String::new(),
                };
            }
        }
    }
}

fn parse(template: &str) -> std::result::Result<Vec<Node>, String> {
    let tokens = tokenize(template)?;
    let mut depth = 0usize;
    for token in &tokens {
        match token {
            Token::Tag {
                kind: TagKind::Open,
                ..
            } => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(format!("blocks nest deeper than {MAX_NESTING}"));
                }
            }
            Token::Tag {
                kind: TagKind::Close,
                ..
            } => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    let mut iter = tokens.into_iter().peekable();
    let (nodes, end) = parse_nodes(&mut iter)?;
    match end {
        None => Ok(nodes),
        Some(tag) => Err(format!("unexpected {{{{{tag}}}}}")),
    }
}

type Tokens = std::iter::Peekable<std::vec::IntoIter<Token>>;

/// Nodes up to a closing or `else` tag, which is returned (its content).
fn parse_nodes(tokens: &mut Tokens) -> std::result::Result<(Vec<Node>, Option<String>), String> {
    let mut nodes = Vec::new();
    while let Some(token) = tokens.next() {
        match token {
            Token::Text(t) => {
                if !t.is_empty() {
                    nodes.push(Node::Text(t));
                }
            }
            Token::Tag { kind, content, .. } => match kind {
                TagKind::Comment => {}
                TagKind::Expr | TagKind::Raw => nodes.push(Node::Expr {
                    call: parse_call(&content)?,
                    escaped: kind == TagKind::Expr,
                }),
                TagKind::Open => nodes.push(Node::Block(parse_block(&content, tokens)?)),
                TagKind::Close => return Ok((nodes, Some(format!("/{content}")))),
                TagKind::Else => return Ok((nodes, Some(format!("else {content}")))),
            },
        }
    }
    Ok((nodes, None))
}

fn parse_block(content: &str, tokens: &mut Tokens) -> std::result::Result<Block, String> {
    let call = parse_call(content)?;
    let helper = match &call.name {
        Param::Path(p) if p.segments.len() == 1 && p.up == 0 && !p.root => p.segments[0].clone(),
        _ => return Err(format!("invalid block {content}")),
    };
    let (body, end) = parse_nodes(tokens)?;
    let mut block = Block {
        helper: helper.clone(),
        call,
        body,
        inverse: Vec::new(),
    };
    let mut end = end;
    if let Some(tag) = end.as_deref()
        && let Some(rest) = tag.strip_prefix("else")
    {
        let rest = rest.trim();
        if rest.is_empty() {
            let (inverse, next) = parse_nodes(tokens)?;
            block.inverse = inverse;
            end = next;
        } else {
            // `{{else if c}}`: the rest of the chain is a block in the
            // inverse, closed by this block's closing tag.
            let chained = parse_block_chain(rest, tokens, &helper)?;
            block.inverse = vec![Node::Block(chained)];
            return Ok(block);
        }
    }
    match end {
        Some(tag) if tag.trim_start_matches('/').trim() == helper => Ok(block),
        Some(tag) => Err(format!("{{{{#{helper}}}}} closed by {{{{{tag}}}}}")),
        None => Err(format!("{{{{#{helper}}}}} is not closed")),
    }
}

/// The block an `{{else helper …}}` starts; it ends with the outer
/// block's closing tag, which it leaves to be checked as its own.
fn parse_block_chain(
    content: &str,
    tokens: &mut Tokens,
    outer: &str,
) -> std::result::Result<Block, String> {
    let call = parse_call(content)?;
    let helper = match &call.name {
        Param::Path(p) if p.segments.len() == 1 => p.segments[0].clone(),
        _ => return Err(format!("invalid block {content}")),
    };
    let (body, end) = parse_nodes(tokens)?;
    let mut block = Block {
        helper,
        call,
        body,
        inverse: Vec::new(),
    };
    match end.as_deref() {
        Some(tag) if tag.starts_with("else") => {
            let rest = tag.trim_start_matches("else").trim();
            if rest.is_empty() {
                let (inverse, next) = parse_nodes(tokens)?;
                block.inverse = inverse;
                check_close(next, outer)?;
            } else {
                block.inverse = vec![Node::Block(parse_block_chain(rest, tokens, outer)?)];
            }
            Ok(block)
        }
        other => {
            check_close(other.map(str::to_owned), outer)?;
            Ok(block)
        }
    }
}

fn check_close(end: Option<String>, helper: &str) -> std::result::Result<(), String> {
    match end {
        Some(tag) if tag.trim_start_matches('/').trim() == helper => Ok(()),
        Some(tag) => Err(format!("{{{{#{helper}}}}} closed by {{{{{tag}}}}}")),
        None => Err(format!("{{{{#{helper}}}}} is not closed")),
    }
}

/// How deep blocks and subexpressions may nest: parsing and rendering
/// recurse once per level.
const MAX_NESTING: usize = 64;

/// Where the quoted string or parenthesised group at `i` ends.
fn group_end(chars: &[char], i: usize, content: &str) -> std::result::Result<usize, String> {
    match chars.get(i) {
        Some(&q) if q == '"' || q == '\'' => {
            let close = chars.iter().skip(i + 1).position(|c| *c == q);
            Ok(close.map_or(chars.len(), |k| i + 1 + k + 1))
        }
        Some('(') => {
            let mut depth = 0usize;
            for (k, c) in chars.iter().enumerate().skip(i) {
                match c {
                    '(' => {
                        depth += 1;
                        if depth > MAX_NESTING {
                            return Err(format!("subexpressions nest deeper than {MAX_NESTING}"));
                        }
                    }
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(k + 1);
                        }
                    }
                    _ => {}
                }
            }
            Err(format!("unclosed subexpression in {content}"))
        }
        _ => Ok(i + 1),
    }
}

/// Splits a tag's content into words, keeping strings, parenthesised
/// subexpressions and `key=value` pairs whole.
fn words(content: &str) -> std::result::Result<Vec<String>, String> {
    let mut out = Vec::new();
    let chars: Vec<char> = content.chars().collect();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c == '"' || c == '\'' || c == '(' {
            i = group_end(&chars, i, content)?;
        } else if c == '|' {
            let close = chars.iter().skip(i + 1).position(|c| *c == '|');
            i = close.map_or(chars.len(), |k| i + 1 + k + 1);
        } else {
            while let Some(&c) = chars.get(i) {
                if c.is_whitespace() {
                    break;
                }
                i += 1;
                // `key=value`: the value, maybe quoted, belongs to it.
                if c == '=' && matches!(chars.get(i), Some('"' | '\'' | '(')) {
                    i = group_end(&chars, i, content)?;
                }
            }
        }
        out.push(
            chars
                .get(start..i.min(chars.len()))
                .unwrap_or(&[])
                .iter()
                .collect(),
        );
    }
    Ok(out)
}

fn parse_call(content: &str) -> std::result::Result<Call, String> {
    let mut parts = words(content)?.into_iter();
    let Some(first) = parts.next() else {
        return Err("empty expression".into());
    };
    let mut call = Call {
        name: parse_param(&first)?,
        params: Vec::new(),
        hash: Vec::new(),
        block_params: Vec::new(),
    };
    let mut rest: Vec<String> = parts.collect();
    if let Some(pos) = rest.iter().position(|w| w == "as") {
        let names = rest.split_off(pos);
        for name in names.iter().skip(1) {
            call.block_params
                .extend(name.trim_matches('|').split_whitespace().map(str::to_owned));
        }
    }
    for word in rest {
        match word.split_once('=') {
            Some((key, value)) if !key.starts_with(['"', '\'', '(']) => {
                call.hash.push((key.to_owned(), parse_param(value)?));
            }
            _ => call.params.push(parse_param(&word)?),
        }
    }
    Ok(call)
}

fn parse_param(word: &str) -> std::result::Result<Param, String> {
    if let Some(inner) = word.strip_prefix('(').and_then(|w| w.strip_suffix(')')) {
        return Ok(Param::Sub(Box::new(parse_call(inner)?)));
    }
    for quote in ['"', '\''] {
        if let Some(s) = word.strip_prefix(quote).and_then(|w| w.strip_suffix(quote)) {
            return Ok(Param::Literal(Value::str(s)));
        }
    }
    match word {
        "true" => return Ok(Param::Literal(Value::Bool(true))),
        "false" => return Ok(Param::Literal(Value::Bool(false))),
        "null" | "undefined" => return Ok(Param::Literal(Value::None)),
        _ => {}
    }
    if word.starts_with(|c: char| c.is_ascii_digit() || c == '-')
        && let Ok(i) = word.parse::<i64>()
    {
        return Ok(Param::Literal(Value::Int(i)));
    }
    if word.starts_with(|c: char| c.is_ascii_digit() || c == '-')
        && let Ok(f) = word.parse::<f64>()
    {
        return Ok(Param::Literal(Value::Float(f)));
    }
    Ok(Param::Path(parse_path(word)))
}

fn parse_path(word: &str) -> Path {
    let mut path = Path::default();
    let mut rest = word;
    while let Some(r) = rest.strip_prefix("../") {
        path.up += 1;
        rest = r;
    }
    if let Some(r) = rest.strip_prefix('@') {
        let (head, tail) = r.split_once(['.', '/']).unwrap_or((r, ""));
        if head == "root" {
            path.root = true;
        } else {
            path.data = Some(head.to_owned());
        }
        rest = tail;
    }
    for segment in rest.split(['.', '/']) {
        let segment = segment.trim_start_matches('[').trim_end_matches(']');
        if segment.is_empty() || (segment == "this" && path.segments.is_empty()) {
            continue;
        }
        path.segments.push(segment.to_owned());
    }
    path
}

/// Where names are looked up: the current value, the scope it was entered
/// from, and the `@` data and block parameters set here.
struct Scope<'a> {
    this: &'a Value,
    parent: Option<&'a Scope<'a>>,
    locals: Vec<(String, Value)>,
}

impl Scope<'_> {
    fn data(&self, name: &str) -> Option<&Value> {
        self.locals
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
            .or_else(|| self.parent.and_then(|p| p.data(name)))
    }
}

struct Renderer<'a> {
    root: &'a Value,
    out: &'a mut String,
}

fn render_error(message: impl Into<String>) -> KclError {
    error(message)
}

/// A child of a value as the template sees it (`Undefined` and functions
/// are not there; a list is indexed by number).
fn child(value: &Value, key: &str) -> Value {
    match value {
        Value::Dict(_) | Value::Schema(_) => value
            .as_dict()
            .and_then(|d| d.get(key))
            .filter(|v| !matches!(v, Value::Undefined | Value::Function(_)))
            .cloned()
            .unwrap_or(Value::None),
        Value::List(items) => key
            .parse::<usize>()
            .ok()
            .and_then(|i| {
                items
                    .iter()
                    .filter(|v| !matches!(v, Value::Undefined | Value::Function(_)))
                    .nth(i)
            })
            .cloned()
            .unwrap_or(Value::None),
        _ => Value::None,
    }
}

/// handlebars-rust's truth: zero, empty text and empty containers are
/// false.
fn truthy(value: &Value, include_zero: bool) -> bool {
    match EncodeOptions::default().node(value) {
        JsonNode::Null => false,
        JsonNode::Bool(b) => b,
        JsonNode::Int(i) => include_zero || i != 0,
        JsonNode::Float(f) => include_zero || f != 0.0,
        JsonNode::Str(s) => !s.is_empty(),
        JsonNode::List(items) => !items.is_empty(),
        JsonNode::Map(entries) => !entries.is_empty(),
    }
}

/// How a value prints in a template: lists as `[a, b]`, objects as
/// `[object]`, null as nothing.
fn render_value(value: &Value) -> String {
    match EncodeOptions::default().node(value) {
        JsonNode::Null => String::new(),
        JsonNode::Bool(b) => b.to_string(),
        JsonNode::Int(i) => i.to_string(),
        JsonNode::Float(f) => format_float(f),
        JsonNode::Str(s) => s.to_owned(),
        JsonNode::List(items) => {
            let parts: Vec<String> = items.iter().map(|v| render_value(v)).collect();
            format!("[{}]", parts.join(", "))
        }
        JsonNode::Map(_) => "[object]".to_owned(),
    }
}

/// A value as compact JSON (what `raw` prints for a non-string).
fn compact_json(value: &Value, out: &mut String) {
    match EncodeOptions::default().node(value) {
        JsonNode::Null => out.push_str("null"),
        JsonNode::Bool(b) => out.push_str(if b { "true" } else { "false" }),
        JsonNode::Int(i) => {
            let _ = write!(out, "{i}");
        }
        JsonNode::Float(f) => out.push_str(&format_float(f)),
        JsonNode::Str(s) => write_json_string(out, s),
        JsonNode::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                compact_json(item, out);
            }
            out.push(']');
        }
        JsonNode::Map(entries) => {
            out.push('{');
            for (i, (key, item)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, key);
                out.push(':');
                compact_json(item, out);
            }
            out.push('}');
        }
    }
}

fn as_i64(value: &Value, helper: &str) -> Result<i64> {
    match value {
        Value::Int(i) => Ok(*i),
        _ => Err(render_error(format!(
            "Invalid parameter type for helper \"{helper}\": i64 expected"
        ))),
    }
}

impl Renderer<'_> {
    fn resolve(&self, path: &Path, scope: &Scope) -> Value {
        if let Some(name) = &path.data {
            let start = scope.data(name).cloned().unwrap_or(Value::None);
            return path.segments.iter().fold(start, |v, s| child(&v, s));
        }
        if path.root {
            return path
                .segments
                .iter()
                .fold(self.root.clone(), |v, s| child(&v, s));
        }
        let mut at = scope;
        for _ in 0..path.up {
            match at.parent {
                Some(p) => at = p,
                None => break,
            }
        }
        if path.up == 0
            && let Some(first) = path.segments.first()
            && let Some(local) = at.locals.iter().rev().find(|(k, _)| k == first)
        {
            return path.segments[1..]
                .iter()
                .fold(local.1.clone(), |v, s| child(&v, s));
        }
        path.segments
            .iter()
            .fold(at.this.clone(), |v, s| child(&v, s))
    }

    fn eval(&self, param: &Param, scope: &Scope) -> Result<Value> {
        match param {
            Param::Literal(v) => Ok(v.clone()),
            Param::Path(p) => Ok(self.resolve(p, scope)),
            Param::Sub(call) => self.call(call, scope),
        }
    }

    /// A helper's value, or the path's when no helper has the name.
    fn call(&self, call: &Call, scope: &Scope) -> Result<Value> {
        let name = match &call.name {
            Param::Path(p) if p.up == 0 && !p.root && p.data.is_none() && p.segments.len() == 1 => {
                p.segments[0].as_str()
            }
            other => return self.eval(other, scope),
        };
        let params = call
            .params
            .iter()
            .map(|p| self.eval(p, scope))
            .collect::<Result<Vec<Value>>>()?;
        let arg = |i: usize| params.get(i).cloned().unwrap_or(Value::None);
        let two = |helper: &str| -> Result<(i64, i64)> {
            Ok((as_i64(&arg(0), helper)?, as_i64(&arg(1), helper)?))
        };
        Ok(match name {
            "eq" => Value::Bool(arg(0).kcl_eq(&arg(1))),
            "ne" => Value::Bool(!arg(0).kcl_eq(&arg(1))),
            "gt" => two("gt").map(|(a, b)| Value::Bool(a > b))?,
            "gte" => two("gte").map(|(a, b)| Value::Bool(a >= b))?,
            "lt" => two("lt").map(|(a, b)| Value::Bool(a < b))?,
            "lte" => two("lte").map(|(a, b)| Value::Bool(a <= b))?,
            "and" => Value::Bool(truthy(&arg(0), false) && truthy(&arg(1), false)),
            "or" => Value::Bool(truthy(&arg(0), false) || truthy(&arg(1), false)),
            "not" => Value::Bool(!truthy(&arg(0), false)),
            "len" => Value::Int(match arg(0) {
                Value::Str(s) => s.len() as i64,
                v => match EncodeOptions::default().node(&v) {
                    JsonNode::List(items) => items.len() as i64,
                    JsonNode::Map(entries) => entries.len() as i64,
                    _ => 0,
                },
            }),
            "lookup" => {
                let key = match arg(1) {
                    Value::Str(s) => s.to_string(),
                    Value::Int(i) => i.to_string(),
                    _ => String::new(),
                };
                child(&arg(0), &key)
            }
            _ if params.is_empty() && call.hash.is_empty() => self.eval(&call.name, scope)?,
            // An unknown helper with arguments renders nothing.
            _ => Value::None,
        })
    }

    fn render(&mut self, nodes: &[Node], scope: &Scope) -> Result<()> {
        for node in nodes {
            match node {
                Node::Text(t) => self.out.push_str(t),
                Node::Expr { call, escaped } => {
                    let is_raw = matches!(&call.name, Param::Path(p) if p.segments == ["raw"] && p.up == 0)
                        && call.params.len() == 1;
                    if is_raw {
                        let value = self.eval(&call.params[0], scope)?;
                        match &value {
                            Value::Str(s) => self.out.push_str(s),
                            other => compact_json(other, self.out),
                        }
                        continue;
                    }
                    let text = render_value(&self.call(call, scope)?);
                    if *escaped {
                        self.out.push_str(&escape(&text));
                    } else {
                        self.out.push_str(&text);
                    }
                }
                Node::Block(block) => self.render_block(block, scope)?,
            }
        }
        Ok(())
    }

    fn render_block(&mut self, block: &Block, scope: &Scope) -> Result<()> {
        let param = match block.call.params.first() {
            Some(p) => self.eval(p, scope)?,
            None => Value::None,
        };
        let include_zero = block
            .call
            .hash
            .iter()
            .find(|(k, _)| k == "includeZero")
            .map(|(_, v)| self.eval(v, scope).map(|v| truthy(&v, false)))
            .transpose()?
            .unwrap_or(false);
        match block.helper.as_str() {
            "if" => {
                let nodes = if truthy(&param, include_zero) {
                    &block.body
                } else {
                    &block.inverse
                };
                self.render(nodes, scope)
            }
            "unless" => {
                let nodes = if truthy(&param, include_zero) {
                    &block.inverse
                } else {
                    &block.body
                };
                self.render(nodes, scope)
            }
            "with" => {
                if !truthy(&param, false) {
                    return self.render(&block.inverse, scope);
                }
                let mut inner = Scope {
                    this: &param,
                    parent: Some(scope),
                    locals: Vec::new(),
                };
                if let Some(name) = block.call.block_params.first() {
                    inner.locals.push((name.clone(), param.clone()));
                }
                self.render(&block.body, &inner)
            }
            "each" => self.render_each(block, &param, scope),
            other => Err(render_error(format!("Helper not defined: {other:?}"))),
        }
    }

    fn render_each(&mut self, block: &Block, param: &Value, scope: &Scope) -> Result<()> {
        let items: Vec<(Option<String>, Value)> = match EncodeOptions::default().node(param) {
            JsonNode::List(items) => items.into_iter().map(|v| (None, v.clone())).collect(),
            JsonNode::Map(entries) => entries
                .into_iter()
                .map(|(k, v)| (Some(k.to_owned()), v.clone()))
                .collect(),
            _ => Vec::new(),
        };
        if items.is_empty() {
            return self.render(&block.inverse, scope);
        }
        let last = items.len() - 1;
        for (index, (key, item)) in items.iter().enumerate() {
            let mut inner = Scope {
                this: item,
                parent: Some(scope),
                locals: vec![
                    ("first".to_owned(), Value::Bool(index == 0)),
                    ("last".to_owned(), Value::Bool(index == last)),
                ],
            };
            // An object's entries have a `@key`; only a list's items have
            // an `@index`.
            match key {
                Some(k) => inner.locals.push(("key".to_owned(), Value::str(k))),
                None => inner
                    .locals
                    .push(("index".to_owned(), Value::Int(index as i64))),
            }
            let names = &block.call.block_params;
            if let Some(name) = names.first() {
                inner.locals.push((name.clone(), item.clone()));
            }
            if let Some(name) = names.get(1) {
                let position = match key {
                    Some(k) => Value::str(k),
                    None => Value::Int(index as i64),
                };
                inner.locals.push((name.clone(), position));
            }
            self.render(&block.body, &inner)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{call, s};
    use crate::value::{Dict, Value};

    fn dict(entries: &[(&str, Value)]) -> Value {
        Value::dict(
            entries
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<Dict>(),
        )
    }

    fn render(template: &str, data: Value) -> String {
        let got = call("template", "execute", &[s(template), data], &[]).unwrap();
        got.as_str().unwrap().to_owned()
    }

    // Expectations from KCL's grammar suite (template cases) and
    // handlebars-rust's behaviour.
    #[test]
    fn renders_as_kcl() {
        let data = dict(&[
            ("name", s("handlebars")),
            (
                "v",
                Value::list(vec![
                    dict(&[("a", Value::Int(1))]),
                    dict(&[("a", Value::Int(2))]),
                ]),
            ),
            ("c", dict(&[("d", Value::Int(5))])),
            (
                "people",
                Value::list(vec![s("Yehuda Katz"), s("Alan Johnson")]),
            ),
            ("author", Value::Bool(true)),
            ("html", s("<div>test</div>")),
            ("zero", Value::Int(0)),
            ("f", Value::Float(1.0)),
        ]);
        let cases = [
            ("hello {{name}}", "hello handlebars"),
            (
                "Hello {{name}}\n\n{{#each v}}\n{{this.a}}\n{{/each}}\n{{ c.d }}\n{{#each people}}\n{{ this }}\n{{/each}}\n",
                "Hello handlebars\n\n1\n2\n5\nYehuda Katz\nAlan Johnson\n",
            ),
            (
                "<div class=\"entry\">\n{{#if author}}\n<h1>{{name}}</h1>\n{{/if}}\n</div>\n",
                "<div class=\"entry\">\n<h1>handlebars</h1>\n</div>\n",
            ),
            (
                "{{this.v}}|{{this.c}}|{{this.people}}",
                "[[object], [object]]|[object]|[Yehuda Katz, Alan Johnson]",
            ),
            ("{{html}}", "&lt;div&gt;test&lt;/div&gt;"),
            ("{{{html}}}", "<div>test</div>"),
            ("{{raw html}}", "<div>test</div>"),
            ("{{raw c}}", "{\"d\":5}"),
            ("{{#if zero}}y{{else}}n{{/if}}", "n"),
            ("{{#if zero includeZero=true}}y{{else}}n{{/if}}", "y"),
            ("{{#unless author}}y{{else}}n{{/unless}}", "n"),
            ("{{#if missing}}a{{else if author}}b{{else}}c{{/if}}", "b"),
            (
                "{{#each people}}{{@index}}:{{this}}{{#unless @last}},{{/unless}}{{/each}}",
                "0:Yehuda Katz,1:Alan Johnson",
            ),
            ("{{#each c}}{{@key}}={{this}}{{@index}}{{/each}}", "d=5"),
            (
                "{{#each people as |p i|}}{{i}}{{p}} {{/each}}",
                "0Yehuda Katz 1Alan Johnson ",
            ),
            ("{{#each missing}}x{{else}}none{{/each}}", "none"),
            ("{{#with c}}{{d}}{{../name}}{{/with}}", "5handlebars"),
            ("{{#if (eq name \"handlebars\")}}yes{{/if}}", "yes"),
            ("{{#if (gt c.d 3)}}big{{/if}}", "big"),
            (
                "{{len people}} {{lookup people 1}} {{not author}}",
                "2 Alan Johnson false",
            ),
            ("a {{! comment }} b {{!-- long }} --}}c", "a  b c"),
            ("a   {{~name~}}   b", "ahandlebarsb"),
            ("{{#if author}}\n{{/if}}\nX", "X"),
            ("  {{#if author}}\n  in\n  {{/if}}\nX", "  in\nX"),
            ("{{f}} {{missing}}.", "1.0 ."),
            (
                "{{people.[1]}} {{people.0}} {{@root.c.d}}",
                "Alan Johnson Yehuda Katz 5",
            ),
        ];
        for (template, want) in cases {
            assert_eq!(render(template, data.clone()), want, "{template:?}");
        }
    }

    #[test]
    fn html_escape_as_kcl() {
        let got = call(
            "template",
            "html_escape",
            &[s("<div class=\"entry\">{{x}}</div>'`")],
            &[],
        )
        .unwrap();
        assert_eq!(
            got.as_str(),
            Some("&lt;div class&#x3D;&quot;entry&quot;&gt;{{x}}&lt;/div&gt;&#x27;&#x60;")
        );
    }

    #[test]
    fn deep_nesting_fails_instead_of_exhausting_the_stack() {
        let blocks = "{{#if a}}".repeat(10_000);
        let err = call("template", "execute", &[s(&blocks)], &[]).unwrap_err();
        assert_eq!(
            err.message,
            "register template failed: blocks nest deeper than 64"
        );
        let subexpressions = format!("{{{{{}x{}}}}}", "(not ".repeat(10_000), ")".repeat(10_000));
        let err = call("template", "execute", &[s(&subexpressions)], &[]).unwrap_err();
        assert_eq!(
            err.message,
            "register template failed: subexpressions nest deeper than 64"
        );
        let hashes = format!("{{{{#if a {}}}}}{{{{/if}}}}", "k='v' ".repeat(10_000));
        assert!(call("template", "execute", &[s(&hashes)], &[]).is_ok());
    }

    #[test]
    fn bad_templates_fail() {
        let err = call("template", "execute", &[s("{{#if a}}x")], &[]).unwrap_err();
        assert_eq!(
            err.message,
            "register template failed: {{#if}} is not closed"
        );
        let err = call("template", "execute", &[s("x"), Value::Int(1)], &[]).unwrap_err();
        assert_eq!(err.message, "invalid dict value");
    }
}
