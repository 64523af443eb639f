//! Values to YAML text and back, and the planner that turns a program's
//! values into what `kcl run` prints.
//!
//! KCL prints YAML with libyaml's block emitter, behind a serde layer that
//! picks each string's style. The emitter here writes that same text for
//! the trees KCL emits (no tags, no anchors, unlimited width): block
//! mappings and sequences, `[]` and `{}` for empty ones, a sequence inside a
//! mapping not indented, literal `|` blocks for strings with a line break,
//! and quotes where a plain string would read back as something else —
//! including the YAML 1.1 booleans (`'y'`, `'on'`, `'No'`) and anything
//! starting with a digit, `-`, `.` or `+`.
//!
//! Decoding uses libyaml's parser (through `serde_yaml_ng`, the same parser
//! and scalar rules KCL uses), so its messages are KCL's.

use serde::Deserialize;

use super::Value;
use super::json::{EncodeOptions, Node, format_float, json_roundtrip};

/// `yaml.encode(data, sort_keys, ignore_private, ignore_none)`: one YAML
/// document, ending with a line break.
pub fn encode(value: &Value, options: &EncodeOptions) -> String {
    let mut emitter = Emitter::new(*options);
    emitter.node(value, Context::ROOT);
    // The document's end starts a new line if the value did not end one.
    emitter.write_indent();
    emitter.out
}

/// `yaml.encode_all(data, …)`: each item of a list as a document, joined
/// by `---` lines.
pub fn encode_all(values: &[Value], options: &EncodeOptions) -> String {
    values
        .iter()
        .map(|v| encode(v, options))
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// `yaml.decode(value)`: the single document of a YAML text, or libyaml's
/// message (`mapping values are not allowed in this context at line 2
/// column 4`).
pub fn decode(text: &str) -> Result<Value, String> {
    serde_yaml_ng::from_str::<super::json::Decoded>(text)
        .map(|d| through_json(d.0))
        .map_err(|e| e.to_string())
}

/// KCL reads YAML into JSON text and that text into values: floats take
/// that trip (`json_roundtrip`).
fn through_json(value: Value) -> Value {
    match value {
        Value::Float(f) => Value::Float(json_roundtrip(f)),
        Value::List(items) => Value::list(
            std::rc::Rc::unwrap_or_clone(items)
                .into_iter()
                .map(through_json)
                .collect(),
        ),
        Value::Dict(dict) => {
            let dict = std::rc::Rc::unwrap_or_clone(dict);
            Value::dict(
                dict.entries
                    .into_iter()
                    .map(|(k, v)| (k, through_json(v)))
                    .collect(),
            )
        }
        other => other,
    }
}

/// `yaml.decode_all(value)`: every document of a YAML stream.
pub fn decode_all(text: &str) -> Result<Vec<Value>, String> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|document| {
            super::json::Decoded::deserialize(document)
                .map(|d| through_json(d.0))
                .map_err(|e| e.to_string())
        })
        .collect()
}

/// A YAML stream as one value, as KCL reads `manifests.yaml_stream`'s
/// output back: no document is `{}`, one document is its value, several
/// are a list.
pub fn decode_stream(text: &str) -> Result<Value, String> {
    let mut documents = decode_all(text)?;
    Ok(match documents.len() {
        0 => Value::dict(super::Dict::new()),
        1 => documents.pop().unwrap_or(Value::None),
        _ => Value::list(documents),
    })
}

/// How `kcl run` prints a program's values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanOptions {
    /// `--sort-keys`
    pub sort_keys: bool,
    /// `--disable-none`: drop `None` entries and list items.
    pub disable_none: bool,
    /// `--show-hidden`: keep names starting with `_`.
    pub show_hidden: bool,
    /// The line between documents, when `manifests.yaml_stream` chose the
    /// output (`---` otherwise).
    pub sep: Option<String>,
}

/// The program's output as KCL plans it (its `yaml_result`, without a
/// final line break; `kcl run` prints one after it).
///
/// A dict (the program's top-level names) is one document. A list of
/// dicts and schemas is a stream, a document each; so is any list
/// `manifests.yaml_stream` output, each scalar and each dict in it (in
/// nested lists too) a document. Another list is one document: KCL 0.13's
/// fix of 0.12.3, which streamed it too, flattening nested lists. Inside
/// dicts, hidden names (unless `show_hidden`), `None` (when
/// `disable_none`), `Undefined` and functions are dropped, at every depth;
/// a list that is one document keeps its non-dict items as they are.
/// Anything else is one document as it is.
pub fn plan(value: &Value, options: &PlanOptions) -> String {
    let encode_options = EncodeOptions {
        sort_keys: options.sort_keys,
        ..EncodeOptions::default()
    };
    let is_config = |v: &Value| matches!(v, Value::Dict(_) | Value::Schema(_));
    let documents = match value {
        Value::List(items) if options.sep.is_some() || items.iter().all(is_config) => {
            let mut documents = Vec::new();
            collect_documents(value, options, &mut documents);
            documents
        }
        Value::List(items) => vec![Value::list(
            items
                .iter()
                .map(|item| {
                    if is_config(item) {
                        filter(item, options)
                    } else {
                        item.clone()
                    }
                })
                .collect(),
        )],
        Value::Dict(_) | Value::Schema(_) => vec![filter(value, options)],
        _ => return encode(value, &encode_options),
    };
    documents
        .iter()
        .map(|d| {
            let text = encode(d, &encode_options);
            text.strip_suffix('\n').map(str::to_owned).unwrap_or(text)
        })
        .collect::<Vec<_>>()
        .join(&format!("\n{}\n", options.sep.as_deref().unwrap_or("---")))
}

fn collect_documents(value: &Value, options: &PlanOptions, documents: &mut Vec<Value>) {
    match value {
        Value::List(items) => {
            for item in items.iter() {
                collect_documents(item, options, documents);
            }
        }
        Value::Dict(_) | Value::Schema(_) => documents.push(filter(value, options)),
        Value::Undefined | Value::Function(_) => {}
        scalar => documents.push(scalar.clone()),
    }
}

/// A dict, schema or list without what the plan drops; other values as
/// they are.
pub(crate) fn filter(value: &Value, options: &PlanOptions) -> Value {
    match value {
        Value::Dict(_) | Value::Schema(_) => {
            let Some(dict) = value.as_dict() else {
                return value.clone();
            };
            let mut out = super::Dict::new();
            for (key, item) in dict.iter() {
                let dropped = (item.is_none() && options.disable_none)
                    || (key.starts_with('_') && !options.show_hidden)
                    || matches!(item, Value::Undefined | Value::Function(_));
                if !dropped {
                    out.insert(key.clone(), filter(item, options));
                }
            }
            Value::dict(out)
        }
        Value::List(items) => Value::list(
            items
                .iter()
                .filter(|item| {
                    let dropped = (item.is_none() && options.disable_none)
                        || matches!(item, Value::Undefined | Value::Function(_));
                    !dropped
                })
                .map(|item| filter(item, options))
                .collect(),
        ),
        _ => value.clone(),
    }
}

/// The style a string asks for before the emitter checks it can use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
}

/// Where a node is written (libyaml's emitter contexts).
#[derive(Debug, Clone, Copy)]
struct Context {
    mapping: bool,
    simple_key: bool,
}

impl Context {
    const ROOT: Context = Context {
        mapping: false,
        simple_key: false,
    };
    const SEQUENCE_ITEM: Context = Context::ROOT;
    const MAPPING_VALUE: Context = Context {
        mapping: true,
        simple_key: false,
    };
    const SIMPLE_KEY: Context = Context {
        mapping: true,
        simple_key: true,
    };
}

/// Whether a string would read back as something other than a string, or
/// could with another YAML reader (YAML 1.1's `yes`, `on`, `y`, …): such
/// strings are single-quoted.
fn ambiguous(s: &str) -> bool {
    let lower = s.to_lowercase();
    matches!(
        lower.as_str(),
        "" | "true"
            | "false"
            | "null"
            | "~"
            | "y"
            | "yes"
            | "n"
            | "no"
            | "on"
            | "off"
            | "nil"
            | "nan"
    ) || lower.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '-' | '.' | '+'))
}

fn requested_style(s: &str) -> Style {
    if s.contains('\n') {
        Style::Literal
    } else if ambiguous(s) {
        Style::SingleQuoted
    } else {
        Style::Plain
    }
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// A blank, a break, or the end of the text (libyaml's `IS_BLANKZ`; a NUL
/// counts as the end).
fn is_blankz(c: Option<char>) -> bool {
    match c {
        None | Some('\0' | ' ' | '\t') => true,
        Some(c) => is_break(c),
    }
}

fn is_printable(c: char) -> bool {
    let c = c as u32;
    c == 0x0A
        || (0x20..=0x7E).contains(&c)
        || (0xA0..=0xD7FF).contains(&c)
        || ((0xE000..=0xFFFD).contains(&c) && c != 0xFEFF)
        || c >= 0x10000
}

/// What libyaml's scalar analysis allows for a string.
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let mut block_indicators = s.starts_with("---") || s.starts_with("...");
    let mut line_breaks = false;
    let mut special_characters = false;
    let (mut leading_space, mut leading_break) = (false, false);
    let (mut trailing_space, mut trailing_break) = (false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    let chars: Vec<char> = s.chars().collect();
    let mut preceded_by_whitespace = true;
    for (i, &c) in chars.iter().enumerate() {
        let first = i == 0;
        let last = i + 1 == chars.len();
        let followed_by_whitespace = is_blankz(chars.get(i + 1).copied());
        if first {
            if matches!(
                c,
                '#' | ','
                    | '['
                    | ']'
                    | '{'
                    | '}'
                    | '&'
                    | '*'
                    | '!'
                    | '|'
                    | '>'
                    | '\''
                    | '"'
                    | '%'
                    | '@'
                    | '`'
            ) || ((c == '?' || c == ':' || c == '-') && followed_by_whitespace)
            {
                block_indicators = true;
            }
        } else if (c == ':' && followed_by_whitespace) || (c == '#' && preceded_by_whitespace) {
            block_indicators = true;
        }
        if !is_printable(c) {
            special_characters = true;
        }
        if is_break(c) {
            line_breaks = true;
        }
        if c == ' ' {
            leading_space |= first;
            trailing_space |= last;
            break_space |= previous_break;
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            leading_break |= first;
            trailing_break |= last;
            space_break |= previous_space;
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = is_blankz(Some(c));
    }
    let mut analysis = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        analysis.block_plain_allowed = false;
    }
    if trailing_space {
        analysis.block_allowed = false;
    }
    if break_space {
        analysis.block_plain_allowed = false;
        analysis.single_quoted_allowed = false;
    }
    if space_break || special_characters {
        analysis.block_plain_allowed = false;
        analysis.single_quoted_allowed = false;
        analysis.block_allowed = false;
    }
    if line_breaks || block_indicators {
        analysis.block_plain_allowed = false;
    }
    analysis
}

/// libyaml's block emitter, reduced to what KCL's values need: the state
/// it keeps between writes decides spaces, line breaks and indentation.
struct Emitter {
    out: String,
    options: EncodeOptions,
    column: usize,
    /// The last thing written was whitespace (or nothing).
    whitespace: bool,
    /// Only indentation has been written on this line so far.
    indention: bool,
    indent: i64,
    indents: Vec<i64>,
}

const BEST_INDENT: i64 = 2;

impl Emitter {
    fn new(options: EncodeOptions) -> Emitter {
        Emitter {
            out: String::new(),
            options,
            column: 0,
            whitespace: true,
            indention: true,
            indent: -1,
            indents: Vec::new(),
        }
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn restore_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    /// Writes a line break from the text: `\n` as a new line, the other
    /// breaks as they are.
    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn write_indent(&mut self) {
        let indent = usize::try_from(self.indent).unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        for c in indicator.chars() {
            self.put(c);
        }
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    fn node(&mut self, value: &Value, context: Context) {
        match self.options.node(value) {
            Node::Null => self.scalar("null", Style::Plain, context),
            Node::Bool(b) => self.scalar(if b { "true" } else { "false" }, Style::Plain, context),
            Node::Int(i) => self.scalar(&i.to_string(), Style::Plain, context),
            Node::Float(f) => {
                let f = json_roundtrip(f);
                self.scalar(&format_float(f), Style::Plain, context)
            }
            Node::Str(s) => self.scalar(s, requested_style(s), context),
            Node::List(items) if items.is_empty() => self.empty_flow("[", "]"),
            Node::Map(entries) if entries.is_empty() => self.empty_flow("{", "}"),
            Node::List(items) => {
                let indentless = context.mapping && !self.indention;
                self.increase_indent(false, indentless);
                for item in items {
                    self.write_indent();
                    self.write_indicator("-", true, false, true);
                    self.node(item, Context::SEQUENCE_ITEM);
                }
                self.restore_indent();
            }
            Node::Map(entries) => {
                self.increase_indent(false, false);
                for (key, item) in entries {
                    self.write_indent();
                    let simple = !analyze(key).multiline && key.len() <= 128;
                    if simple {
                        self.scalar(key, requested_style(key), Context::SIMPLE_KEY);
                        self.write_indicator(":", false, false, false);
                    } else {
                        self.write_indicator("?", true, false, true);
                        self.scalar(key, requested_style(key), Context::MAPPING_VALUE);
                        self.write_indent();
                        self.write_indicator(":", true, false, true);
                    }
                    self.node(item, Context::MAPPING_VALUE);
                }
                self.restore_indent();
            }
        }
    }

    fn empty_flow(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.increase_indent(true, false);
        self.restore_indent();
        self.write_indicator(close, false, false, false);
    }

    fn scalar(&mut self, text: &str, requested: Style, context: Context) {
        let analysis = analyze(text);
        let mut style = requested;
        if context.simple_key && analysis.multiline {
            style = Style::DoubleQuoted;
        }
        if style == Style::Plain
            && (!analysis.block_plain_allowed || (text.is_empty() && context.simple_key))
        {
            style = Style::SingleQuoted;
        }
        if style == Style::SingleQuoted && !analysis.single_quoted_allowed {
            style = Style::DoubleQuoted;
        }
        if style == Style::Literal && (!analysis.block_allowed || context.simple_key) {
            style = Style::DoubleQuoted;
        }
        self.increase_indent(true, false);
        match style {
            Style::Plain => self.write_plain(text),
            Style::SingleQuoted => self.write_single_quoted(text),
            Style::DoubleQuoted => self.write_double_quoted(text),
            Style::Literal => self.write_literal(text),
        }
        self.restore_indent();
    }

    fn write_plain(&mut self, text: &str) {
        if !self.whitespace && !text.is_empty() {
            self.put(' ');
        }
        for c in text.chars() {
            self.put(c);
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single_quoted(&mut self, text: &str) {
        self.write_indicator("'", true, false, false);
        let mut breaks = false;
        for c in text.chars() {
            if c == ' ' {
                self.put(c);
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
        if breaks {
            self.write_indent();
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double_quoted(&mut self, text: &str) {
        self.write_indicator("\"", true, false, false);
        for c in text.chars() {
            if !is_printable(c) || c == '\u{feff}' || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                let escape = match c {
                    '\0' => Some('0'),
                    '\u{7}' => Some('a'),
                    '\u{8}' => Some('b'),
                    '\t' => Some('t'),
                    '\n' => Some('n'),
                    '\u{b}' => Some('v'),
                    '\u{c}' => Some('f'),
                    '\r' => Some('r'),
                    '\u{1b}' => Some('e'),
                    '"' => Some('"'),
                    '\\' => Some('\\'),
                    '\u{85}' => Some('N'),
                    '\u{a0}' => Some('_'),
                    '\u{2028}' => Some('L'),
                    '\u{2029}' => Some('P'),
                    _ => None,
                };
                match escape {
                    Some(e) => self.put(e),
                    None => {
                        let code = c as u32;
                        let (letter, digits) = match code {
                            0..=0xFF => ('x', 2),
                            0x100..=0xFFFF => ('u', 4),
                            _ => ('U', 8),
                        };
                        self.put(letter);
                        for digit in format!("{code:0digits$X}").chars() {
                            self.put(digit);
                        }
                    }
                }
            } else {
                self.put(c);
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_literal(&mut self, text: &str) {
        self.write_indicator("|", true, false, false);
        // Hints: an indentation indicator when the text starts with a space
        // or a break; `-` strips a text without a final break, `+` keeps
        // more than one.
        let mut chars = text.chars();
        if chars.next().is_some_and(|c| c == ' ' || is_break(c)) {
            self.write_indicator("2", false, false, false);
        }
        let mut from_end = text.chars().rev();
        let chomp = match (from_end.next(), from_end.next()) {
            (None, _) => Some("-"),
            (Some(last), _) if !is_break(last) => Some("-"),
            (Some(_), None) => Some("+"),
            (Some(_), Some(before)) if is_break(before) => Some("+"),
            _ => None,
        };
        if let Some(chomp) = chomp {
            self.write_indicator(chomp, false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for c in text.chars() {
            if is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Dict;

    fn dict(entries: &[(&str, Value)]) -> Value {
        Value::dict(
            entries
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    }

    fn s(text: &str) -> Value {
        Value::str(text)
    }

    // Expectations from KCL 0.12.3 (`kcl run` and `yaml.encode`).
    #[test]
    fn encode_quotes_strings_as_kcl() {
        let cases: &[(&str, &str)] = &[
            ("-foo", "'-foo'\n"),
            ("y", "'y'\n"),
            ("Yes", "'Yes'\n"),
            ("on", "'on'\n"),
            ("1abc", "'1abc'\n"),
            ("", "''\n"),
            ("a: b", "'a: b'\n"),
            (" lead", "' lead'\n"),
            ("trail ", "'trail '\n"),
            ("é", "é\n"),
            ("\t", "\"\\t\"\n"),
            ("it's", "it's\n"),
            ("#x", "'#x'\n"),
            ("a #b", "'a #b'\n"),
            ("a#b", "a#b\n"),
            ("x\n\n", "|+\n  x\n\n"),
            ("multi\nline", "|-\n  multi\n  line\n"),
            ("x\n", "|\n  x\n"),
            ("\n", "|2+\n\n"),
            (" \n", "\" \\n\"\n"),
            ("a\n\nb", "|-\n  a\n\n  b\n"),
            ("\u{1}", "\"\\x01\"\n"),
            ("\u{feff}", "\"\\uFEFF\"\n"),
            ("'1'", "'''1'''\n"),
            ("[a]", "'[a]'\n"),
            ("a[b]", "a[b]\n"),
            ("null", "'null'\n"),
            ("~", "'~'\n"),
            ("a\u{2028}b", "'a\u{2028}  b'\n"),
            ("x:", "'x:'\n"),
            ("?x", "?x\n"),
            ("- x", "'- x'\n"),
            ("-", "'-'\n"),
            ("a:b", "a:b\n"),
            ("@x", "'@x'\n"),
            ("a@", "a@\n"),
            ("\u{85}", "\"\\N\"\n"),
            ("\u{a0}x", "\u{a0}x\n"),
            ("é\n", "|\n  é\n"),
        ];
        for (text, want) in cases {
            assert_eq!(
                encode(&s(text), &EncodeOptions::default()),
                *want,
                "{text:?}"
            );
        }
    }

    #[test]
    fn encode_lays_out_containers_as_kcl() {
        let value = dict(&[
            (
                "g",
                Value::list(vec![
                    Value::list(vec![Value::Int(1), Value::Int(2)]),
                    Value::list(vec![]),
                    dict(&[]),
                    Value::list(vec![dict(&[
                        ("a", Value::Int(1)),
                        ("b", Value::list(vec![Value::Int(1)])),
                    ])]),
                ]),
            ),
            ("n", Value::None),
            ("f", Value::Float(1e20)),
            ("r", Value::Float(0.12000000000000455)),
            (
                "m",
                dict(&[("x", s("a\nb")), ("y", dict(&[("z", Value::Bool(true))]))]),
            ),
        ]);
        let want = "g:\n- - 1\n  - 2\n- []\n- {}\n- - a: 1\n    b:\n    - 1\n'n': null\nf: 1e20\nr: 0.12000000000000456\nm:\n  x: |-\n    a\n    b\n  'y':\n    z: true\n";
        assert_eq!(encode(&value, &EncodeOptions::default()), want);
    }

    #[test]
    fn encode_long_and_multiline_keys_as_complex_keys() {
        let long = "k".repeat(129);
        let value = dict(&[(long.as_str(), Value::Int(1)), ("a\nb", Value::Int(2))]);
        let want = format!("? {long}\n: 1\n? |-\n  a\n  b\n: 2\n");
        assert_eq!(encode(&value, &EncodeOptions::default()), want);
    }

    #[test]
    fn plan_filters_and_streams_as_kcl() {
        let config = dict(&[
            ("data", dict(&[("_x", Value::Int(1)), ("k", Value::None)])),
            ("_hidden", Value::Int(1)),
            ("vec", Value::list(vec![])),
            ("empty", Value::None),
            ("u", Value::Undefined),
        ]);
        let cases: &[(PlanOptions, &str)] = &[
            (
                PlanOptions::default(),
                "data:\n  k: null\nvec: []\nempty: null",
            ),
            (
                PlanOptions {
                    show_hidden: true,
                    sort_keys: true,
                    ..PlanOptions::default()
                },
                "_hidden: 1\ndata:\n  _x: 1\n  k: null\nempty: null\nvec: []",
            ),
            (
                PlanOptions {
                    disable_none: true,
                    ..PlanOptions::default()
                },
                "data: {}\nvec: []",
            ),
        ];
        for (options, want) in cases {
            assert_eq!(plan(&config, options), *want, "{options:?}");
        }
        let configs = Value::list(vec![
            dict(&[("a", Value::Int(1)), ("_h", Value::Int(0))]),
            dict(&[("b", Value::Int(2))]),
        ]);
        assert_eq!(plan(&configs, &PlanOptions::default()), "a: 1\n---\nb: 2");
        let mixed = Value::list(vec![
            dict(&[("a", Value::Int(1)), ("_h", Value::Int(0))]),
            Value::list(vec![dict(&[("b", Value::Int(2))]), Value::Int(3)]),
        ]);
        assert_eq!(
            plan(&mixed, &PlanOptions::default()),
            "- a: 1\n- - b: 2\n  - 3"
        );
        let stream = PlanOptions {
            sep: Some("---".into()),
            ..PlanOptions::default()
        };
        assert_eq!(plan(&mixed, &stream), "a: 1\n---\nb: 2\n---\n3");
        assert_eq!(
            plan(&Value::dict(Dict::new()), &PlanOptions::default()),
            "{}"
        );
    }

    #[test]
    fn decode_keeps_order_and_reports_libyaml_messages() {
        let got = decode("b: [1, 2.5, 0x1F]\na: s\n1: ~\n").unwrap();
        assert_eq!(
            crate::value::json::encode(&got, &EncodeOptions::default(), 0),
            r#"{"b": [1, 2.5, 31], "a": "s", "1": null}"#
        );
        assert_eq!(
            decode("a: 1\n  b: 2\nc: 3").unwrap_err(),
            "mapping values are not allowed in this context at line 2 column 4"
        );
        let cases: &[(&str, &str)] = &[
            ("", "null"),
            (".inf", "null"),
            (
                "1: a\ntrue: b\n~: c\n\"q\": d",
                r#"{"1": "a", "true": "b", "~": "c", "q": "d"}"#,
            ),
            ("a: &x [1]\nb: *x", r#"{"a": [1], "b": [1]}"#),
            ("9223372036854775808", "9.223372036854776e18"),
            ("0o17", "15"),
            ("012", "\"012\""),
        ];
        for (text, want) in cases {
            let got = decode(text).unwrap();
            assert_eq!(
                crate::value::json::encode(&got, &EncodeOptions::default(), 0),
                *want,
                "{text:?}"
            );
        }
        // Messages found by feeding random YAML to kcl-lib 0.12.3 and here.
        let errors = [
            (
                "!tag x",
                "invalid type: enum, expected any valid JSON value",
            ),
            (
                "- 1\n- \n- [",
                "did not find expected node content at line 4 column 1, while parsing a flow node",
            ),
            (
                "a:\n1",
                "could not find expected ':' at line 3 column 1, while scanning a simple key at line 2 column 1",
            ),
            (
                "b: : ",
                "mapping values are not allowed in this context at line 1 column 4",
            ),
        ];
        for (text, want) in errors {
            assert_eq!(decode(text).unwrap_err(), want, "{text:?}");
        }
        let all = |text| {
            let values = decode_all(text).unwrap();
            crate::value::json::encode(&Value::list(values), &EncodeOptions::default(), 0)
        };
        assert_eq!(all(""), "[null]");
        assert_eq!(all("a: 1\n---\n---\nb: 2"), r#"[{"a": 1}, null, {"b": 2}]"#);
        assert_eq!(
            decode_all("a: 1\n---\na: 1\n  b: 2\nc: 3").unwrap_err(),
            "mapping values are not allowed in this context at line 4 column 4"
        );
    }
}
