//! Upstream Crossplane's Composition hash and revision naming (v2.3.4), so that
//! plait can recognise and make the same CompositionRevisions Crossplane does.
//!
//! Upstream's `Composition.Hash()` is the SHA-256 of three YAML documents
//! concatenated: the labels, the annotations and the spec of the typed Go struct,
//! each written by `sigs.k8s.io/yaml` (JSON of the typed value, read back and
//! written by `go-yaml` v2: keys in its natural order, its quoting rules, plain and
//! quoted strings folded at 80 columns). [`upstream_composition_hash`] keeps only
//! the spec fields the typed struct has and writes the YAML as `go-yaml` v2 does.

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};

/// The label naming a revision's Composition.
pub const LABEL_COMPOSITION_NAME: &str = "crossplane.io/composition-name";
/// The label holding the first 63 characters of the Composition's hash.
pub const LABEL_COMPOSITION_HASH: &str = "crossplane.io/composition-hash";

/// A Composition whose fields do not have the types upstream's Go struct gives
/// them, so upstream could not have read it either.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Composition {field}: must be {expected}")]
pub struct HashError {
    pub field: String,
    pub expected: &'static str,
}

/// Upstream's `Composition.Hash()` of `composition` as the API server stores it:
/// 64 lowercase hexadecimal digits, or [`UNKNOWN_HASH`] where upstream's YAML
/// round trip fails.
pub fn upstream_composition_hash(composition: &Value) -> Result<String, HashError> {
    let metadata = composition.get("metadata").unwrap_or(&Value::Null);
    let labels = string_map(metadata.get("labels"), "metadata.labels")?;
    let annotations = string_map(metadata.get("annotations"), "metadata.annotations")?;
    let spec = typed_spec(composition.get("spec").unwrap_or(&Value::Null))?;
    let documents = [labels, annotations, spec];
    if documents.iter().any(go_yaml_refuses) {
        return Ok(UNKNOWN_HASH.into());
    }
    let Some(documents) = documents
        .iter()
        .map(read_back)
        .collect::<Option<Vec<Value>>>()
    else {
        return Ok(UNKNOWN_HASH.into());
    };
    let mut hasher = Sha256::new();
    for document in &documents {
        hasher.update(to_go_yaml(document));
    }
    Ok(hex::encode(hasher.finalize()))
}

/// What upstream's hash is when `sigs.k8s.io/yaml` cannot write the Composition.
pub const UNKNOWN_HASH: &str = "unknown";

/// `value` as `go-yaml` v2 reads it back from Go's JSON: a raw NEL (U+0085, which
/// Go's JSON encoder does not escape) is a line break inside a double-quoted
/// scalar and is folded, with the spaces around it; `None` where `go-yaml`
/// refuses it: a key with a NEL (a simple key may not span lines), or a folded
/// line starting with a document marker.
fn read_back(value: &Value) -> Option<Value> {
    Some(match value {
        Value::String(s) => Value::String(fold_next_lines(s)?),
        Value::Array(items) => Value::Array(items.iter().map(read_back).collect::<Option<_>>()?),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| {
                    // A key is a simple key, which may not span lines.
                    (!key.contains('\u{85}')).then_some(())?;
                    Some((key.clone(), read_back(value)?))
                })
                .collect::<Option<_>>()?,
        ),
        other => other.clone(),
    })
}

fn fold_next_lines(s: &str) -> Option<String> {
    const NEL: char = '\u{85}';
    if !s.contains(NEL) {
        return Some(s.to_string());
    }
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let mut at_line_start = false;
    while i < chars.len() {
        if at_line_start {
            let rest: String = chars[i..chars.len().min(i + 3)].iter().collect();
            let after = chars.get(i + 3).copied();
            if (rest == "---" || rest == "...") && after.is_some_and(|c| c == ' ' || c == NEL) {
                return None;
            }
        }
        while i < chars.len() && chars[i] != ' ' && chars[i] != NEL {
            out.push(chars[i]);
            i += 1;
        }
        let (mut spaces, mut folded, mut line_breaks) = (String::new(), false, String::new());
        at_line_start = false;
        while i < chars.len() && (chars[i] == ' ' || chars[i] == NEL) {
            if chars[i] == ' ' {
                if !folded {
                    spaces.push(' ');
                }
                at_line_start = false;
            } else {
                if folded {
                    line_breaks.push('\n');
                } else {
                    spaces.clear();
                    folded = true;
                }
                at_line_start = true;
            }
            i += 1;
        }
        if !folded {
            out.push_str(&spaces);
        } else if line_breaks.is_empty() {
            out.push(' ');
        } else {
            out.push_str(&line_breaks);
        }
    }
    Some(out)
}

/// Whether `go-yaml` v2 refuses to read `value` as Go's JSON encoder writes it:
/// the encoder escapes the C0 controls but leaves DEL, the C1 controls and
/// U+FFFE/U+FFFF as they are, and `go-yaml`'s reader allows none of them (but
/// NEL), so upstream's `Hash()` fails and returns [`UNKNOWN_HASH`].
fn go_yaml_refuses(value: &Value) -> bool {
    let refused = |s: &str| {
        s.chars().any(|c| {
            matches!(c, '\u{7F}' | '\u{FFFE}' | '\u{FFFF}')
                || (('\u{80}'..='\u{9F}').contains(&c) && c != '\u{85}')
        })
    };
    match value {
        Value::String(s) => refused(s),
        Value::Array(items) => items.iter().any(go_yaml_refuses),
        Value::Object(map) => map
            .iter()
            .any(|(key, value)| refused(key) || go_yaml_refuses(value)),
        _ => false,
    }
}

/// What upstream names the revision of `composition_name` with hash `hash`:
/// `<composition>-<first 7 characters of the hash>`.
pub fn upstream_revision_name(composition_name: &str, hash: &str) -> String {
    let suffix: String = hash.chars().take(7).collect();
    format!("{composition_name}-{suffix}")
}

/// The value of [`LABEL_COMPOSITION_HASH`] upstream gives a revision: the hash
/// cut to 63 characters, the longest a label value may be.
pub fn upstream_revision_hash_label(hash: &str) -> String {
    hash.chars().take(63).collect()
}

fn string_map(value: Option<&Value>, field: &str) -> Result<Value, HashError> {
    match value {
        None | Some(Value::Null) => Ok(Value::Null),
        Some(Value::Object(map)) if map.values().all(Value::is_string) => {
            Ok(Value::Object(map.clone()))
        }
        Some(_) => Err(HashError {
            field: field.into(),
            expected: "a map of strings",
        }),
    }
}

/// How a field of a typed Go struct is written to JSON.
enum Go {
    /// A string without `omitempty`: written even when absent (as "").
    String,
    /// A string with `omitempty`: left out when absent or empty.
    OptionalString,
    /// A `*string`: left out only when absent or null.
    StringPointer,
    /// A struct without `omitempty`: written even when absent.
    Struct(&'static [(&'static str, Go)]),
    /// A pointer to a struct: left out when absent or null.
    StructPointer(&'static [(&'static str, Go)]),
    /// A slice with `omitempty`: left out when absent or empty.
    Slice(&'static [(&'static str, Go)]),
    /// A `map[string]string` with `omitempty`.
    StringMap,
    /// A `*runtime.RawExtension`: its JSON as written, left out when absent or null.
    Raw,
}

const TYPE_REFERENCE: &[(&str, Go)] = &[("apiVersion", Go::String), ("kind", Go::String)];
const SECRET_REFERENCE: &[(&str, Go)] = &[("name", Go::String), ("namespace", Go::String)];
const CREDENTIALS: &[(&str, Go)] = &[
    ("name", Go::String),
    ("source", Go::String),
    ("secretRef", Go::StructPointer(SECRET_REFERENCE)),
];
const REQUIRED_RESOURCE: &[(&str, Go)] = &[
    ("requirementName", Go::String),
    ("apiVersion", Go::String),
    ("kind", Go::String),
    ("namespace", Go::StringPointer),
    ("name", Go::StringPointer),
    ("matchLabels", Go::StringMap),
];
const REQUIRED_SCHEMA: &[(&str, Go)] = &[
    ("requirementName", Go::String),
    ("apiVersion", Go::String),
    ("kind", Go::String),
];
const REQUIREMENTS: &[(&str, Go)] = &[
    ("requiredResources", Go::Slice(REQUIRED_RESOURCE)),
    ("requiredSchemas", Go::Slice(REQUIRED_SCHEMA)),
];
const PIPELINE_STEP: &[(&str, Go)] = &[
    ("step", Go::String),
    ("functionRef", Go::Struct(&[("name", Go::String)])),
    ("input", Go::Raw),
    ("credentials", Go::Slice(CREDENTIALS)),
    ("requirements", Go::StructPointer(REQUIREMENTS)),
];
/// Upstream v2.3.4's `CompositionSpec`: v1's `resources`, `patchSets` and
/// `environment` are gone from it, so they do not count.
const COMPOSITION_SPEC: &[(&str, Go)] = &[
    ("compositeTypeRef", Go::Struct(TYPE_REFERENCE)),
    ("mode", Go::OptionalString),
    ("pipeline", Go::Slice(PIPELINE_STEP)),
    ("writeConnectionSecretsToNamespace", Go::StringPointer),
];

fn typed_spec(spec: &Value) -> Result<Value, HashError> {
    typed_struct(spec, COMPOSITION_SPEC, "spec")
}

fn typed_struct(
    value: &Value,
    fields: &'static [(&'static str, Go)],
    path: &str,
) -> Result<Value, HashError> {
    let object = match value {
        Value::Null => &Map::new(),
        Value::Object(object) => object,
        _ => {
            return Err(HashError {
                field: path.into(),
                expected: "an object",
            });
        }
    };
    let mut out = Map::new();
    for (name, kind) in fields {
        let path = format!("{path}.{name}");
        if let Some(written) = typed_field(object.get(*name), kind, &path)? {
            out.insert((*name).to_string(), written);
        }
    }
    Ok(Value::Object(out))
}

fn typed_field(value: Option<&Value>, kind: &Go, path: &str) -> Result<Option<Value>, HashError> {
    let value = value.filter(|v| !v.is_null());
    let string = |v: &Value| match v {
        Value::String(s) => Ok(s.clone()),
        _ => Err(HashError {
            field: path.into(),
            expected: "a string",
        }),
    };
    Ok(match (kind, value) {
        (Go::String, None) => Some(Value::String(String::new())),
        (Go::String, Some(v)) => Some(Value::String(string(v)?)),
        (Go::OptionalString, None) => None,
        (Go::OptionalString, Some(v)) => Some(string(v)?)
            .filter(|s| !s.is_empty())
            .map(Value::String),
        (Go::StringPointer, None) => None,
        (Go::StringPointer, Some(v)) => Some(Value::String(string(v)?)),
        (Go::Struct(fields), v) => Some(typed_struct(v.unwrap_or(&Value::Null), fields, path)?),
        (Go::StructPointer(_), None) => None,
        (Go::StructPointer(fields), Some(v)) => Some(typed_struct(v, fields, path)?),
        (Go::Slice(_), None) => None,
        (Go::Slice(fields), Some(Value::Array(items))) if !items.is_empty() => Some(Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| typed_struct(item, fields, &format!("{path}[{i}]")))
                .collect::<Result<_, _>>()?,
        )),
        (Go::Slice(_), Some(Value::Array(_))) => None,
        (Go::Slice(_), Some(_)) => {
            return Err(HashError {
                field: path.into(),
                expected: "a list",
            });
        }
        (Go::StringMap, None) => None,
        (Go::StringMap, Some(Value::Object(map))) if map.values().all(Value::is_string) => {
            Some(Value::Object(map.clone())).filter(|_| !map.is_empty())
        }
        (Go::StringMap, Some(_)) => {
            return Err(HashError {
                field: path.into(),
                expected: "a map of strings",
            });
        }
        (Go::Raw, v) => v.cloned(),
    })
}

/// `value` as `sigs.k8s.io/yaml.Marshal` writes it (through `go-yaml` v2).
pub fn to_go_yaml(value: &Value) -> Vec<u8> {
    let mut emitter = Emitter::default();
    emitter.node(value, Context::ROOT);
    // The document ends on a line of its own, unless the last scalar ended one.
    emitter.write_indent();
    emitter.out
}

/// Where a node stands, as `go-yaml`'s emitter tracks it.
#[derive(Clone, Copy)]
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
    const KEY: Context = Context {
        mapping: true,
        simple_key: true,
    };
    const VALUE: Context = Context {
        mapping: true,
        simple_key: false,
    };
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
}

/// `go-yaml` v2's emitter for the block style it writes, its width (80) and
/// indentation (2), with Unicode allowed.
struct Emitter {
    out: Vec<u8>,
    column: usize,
    indent: isize,
    indents: Vec<isize>,
    whitespace: bool,
    indention: bool,
}

impl Default for Emitter {
    fn default() -> Self {
        Emitter {
            out: Vec::new(),
            column: 0,
            indent: -1,
            indents: Vec::new(),
            whitespace: true,
            indention: true,
        }
    }
}

const BEST_WIDTH: usize = 80;
const BEST_INDENT: isize = 2;

impl Emitter {
    fn node(&mut self, value: &Value, context: Context) {
        match value {
            Value::Null => self.scalar(b"null", Style::Plain, context),
            Value::Bool(b) => self.scalar(b.to_string().as_bytes(), Style::Plain, context),
            Value::Number(n) => self.scalar(go_number(n).as_bytes(), Style::Plain, context),
            Value::String(s) => self.scalar(s.as_bytes(), requested_style(s), context),
            Value::Array(items) if items.is_empty() => self.empty_flow(b'[', b']'),
            Value::Object(map) if map.is_empty() => self.empty_flow(b'{', b'}'),
            Value::Array(items) => self.block_sequence(items, context),
            Value::Object(map) => self.block_mapping(map),
        }
    }

    fn empty_flow(&mut self, open: u8, close: u8) {
        self.indicator(&[open], true, true, false);
        self.indicator(&[close], false, false, false);
    }

    fn block_sequence(&mut self, items: &[Value], context: Context) {
        self.increase_indent(false, context.mapping && !self.indention);
        for item in items {
            self.write_indent();
            self.indicator(b"-", true, false, true);
            self.node(item, Context::SEQUENCE_ITEM);
        }
        self.pop_indent();
    }

    fn block_mapping(&mut self, map: &Map<String, Value>) {
        self.increase_indent(false, false);
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort_by(|a, b| go_key_order(a, b));
        for key in keys {
            self.write_indent();
            let analysis = analyze(key.as_bytes());
            if !analysis.multiline && key.len() <= 128 {
                self.scalar(key.as_bytes(), requested_style(key), Context::KEY);
                self.indicator(b":", false, false, false);
            } else {
                self.indicator(b"?", true, false, true);
                self.scalar(key.as_bytes(), requested_style(key), Context::VALUE);
                self.write_indent();
                self.indicator(b":", true, false, true);
            }
            self.node(&map[key], Context::VALUE);
        }
        self.pop_indent();
    }

    fn scalar(&mut self, value: &[u8], requested: Style, context: Context) {
        let analysis = analyze(value);
        let mut style = requested;
        if context.simple_key && analysis.multiline {
            style = Style::DoubleQuoted;
        }
        if style == Style::Plain
            && (!analysis.block_plain_allowed || (value.is_empty() && context.simple_key))
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
        let allow_breaks = !context.simple_key;
        match style {
            Style::Plain => self.plain(value, allow_breaks),
            Style::SingleQuoted => self.single_quoted(value, allow_breaks),
            Style::DoubleQuoted => self.double_quoted(value, allow_breaks),
            Style::Literal => self.literal(value),
        }
        self.pop_indent();
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn put(&mut self, byte: u8) {
        self.out.push(byte);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push(b'\n');
        self.column = 0;
    }

    /// Copies the character at `*i` and moves past it.
    fn write(&mut self, value: &[u8], i: &mut usize) {
        let width = char_width(value[*i]);
        let end = (*i + width).min(value.len());
        self.out.extend_from_slice(&value[*i..end]);
        self.column += 1;
        *i = end;
    }

    fn write_break(&mut self, value: &[u8], i: &mut usize) {
        if value[*i] == b'\n' {
            self.put_break();
            *i += 1;
        } else {
            self.write(value, i);
            self.column = 0;
        }
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0) as usize;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(b' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn indicator(
        &mut self,
        indicator: &[u8],
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(b' ');
        }
        let mut i = 0;
        while i < indicator.len() {
            self.write(indicator, &mut i);
        }
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    fn plain(&mut self, value: &[u8], allow_breaks: bool) {
        if !self.whitespace {
            self.put(b' ');
        }
        let (mut spaces, mut breaks) = (false, false);
        let mut i = 0;
        while i < value.len() {
            if value[i] == b' ' {
                if allow_breaks && !spaces && self.column > BEST_WIDTH && at(value, i + 1) != b' ' {
                    self.write_indent();
                    i += 1;
                } else {
                    self.write(value, &mut i);
                }
                spaces = true;
            } else if is_break(value, i) {
                if !breaks && value[i] == b'\n' {
                    self.put_break();
                }
                self.write_break(value, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write(value, &mut i);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn single_quoted(&mut self, value: &[u8], allow_breaks: bool) {
        self.indicator(b"'", true, false, false);
        let (mut spaces, mut breaks) = (false, false);
        let mut i = 0;
        while i < value.len() {
            if value[i] == b' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i < value.len() - 1
                    && at(value, i + 1) != b' '
                {
                    self.write_indent();
                    i += 1;
                } else {
                    self.write(value, &mut i);
                }
                spaces = true;
            } else if is_break(value, i) {
                if !breaks && value[i] == b'\n' {
                    self.put_break();
                }
                self.write_break(value, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if value[i] == b'\'' {
                    self.put(b'\'');
                }
                self.write(value, &mut i);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.indicator(b"'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn double_quoted(&mut self, value: &[u8], allow_breaks: bool) {
        let starts_with_bom = value.starts_with(&[0xEF, 0xBB, 0xBF]);
        let mut spaces = false;
        self.indicator(b"\"", true, false, false);
        let mut i = 0;
        while i < value.len() {
            if !is_printable(value, i)
                || starts_with_bom
                || is_break(value, i)
                || value[i] == b'"'
                || value[i] == b'\\'
            {
                let width = char_width(value[i]);
                let end = (i + width).min(value.len());
                let code = std::str::from_utf8(&value[i..end])
                    .ok()
                    .and_then(|s| s.chars().next())
                    .map_or(u32::from(value[i]), u32::from);
                i = end;
                self.put(b'\\');
                match code {
                    0x00 => self.put(b'0'),
                    0x07 => self.put(b'a'),
                    0x08 => self.put(b'b'),
                    0x09 => self.put(b't'),
                    0x0A => self.put(b'n'),
                    0x0B => self.put(b'v'),
                    0x0C => self.put(b'f'),
                    0x0D => self.put(b'r'),
                    0x1B => self.put(b'e'),
                    0x22 => self.put(b'"'),
                    0x5C => self.put(b'\\'),
                    0x85 => self.put(b'N'),
                    0xA0 => self.put(b'_'),
                    0x2028 => self.put(b'L'),
                    0x2029 => self.put(b'P'),
                    _ => {
                        let (letter, digits) = match code {
                            0..=0xFF => (b'x', 2),
                            0x100..=0xFFFF => (b'u', 4),
                            _ => (b'U', 8),
                        };
                        self.put(letter);
                        for digit in format!("{code:0digits$X}").bytes() {
                            self.put(digit);
                        }
                    }
                }
                spaces = false;
            } else if value[i] == b' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i < value.len() - 1
                {
                    self.write_indent();
                    if at(value, i + 1) == b' ' {
                        self.put(b'\\');
                    }
                    i += 1;
                } else {
                    self.write(value, &mut i);
                }
                spaces = true;
            } else {
                self.write(value, &mut i);
                spaces = false;
            }
        }
        self.indicator(b"\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn literal(&mut self, value: &[u8]) {
        self.indicator(b"|", true, false, false);
        if value.first() == Some(&b' ') || is_break(value, 0) {
            self.indicator(&[b'0' + BEST_INDENT as u8], false, false, false);
        }
        if let Some(chomp) = chomping(value) {
            self.indicator(&[chomp], false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        let mut i = 0;
        while i < value.len() {
            if is_break(value, i) {
                self.write_break(value, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write(value, &mut i);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

/// The chomping indicator of a literal: `-` without a final line break, none with
/// one, `+` with more.
fn chomping(value: &[u8]) -> Option<u8> {
    let last = last_char_start(value, value.len())?;
    if !is_break(value, last) {
        return Some(b'-');
    }
    if last == 0 {
        return Some(b'+');
    }
    let before = last_char_start(value, last)?;
    is_break(value, before).then_some(b'+')
}

fn last_char_start(value: &[u8], end: usize) -> Option<usize> {
    let mut i = end.checked_sub(1)?;
    while i > 0 && value[i] & 0xC0 == 0x80 {
        i -= 1;
    }
    Some(i)
}

/// The style `go-yaml`'s encoder asks for a string: literal when it has a line
/// break, plain when it would read back as the same string, double-quoted otherwise.
fn requested_style(s: &str) -> Style {
    if s.contains('\n') {
        Style::Literal
    } else if resolves_to_string(s) && !is_base60_float(s) {
        Style::Plain
    } else {
        Style::DoubleQuoted
    }
}

/// What `go-yaml` v2's emitter learns of a scalar before choosing its style.
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

fn analyze(value: &[u8]) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let mut block_indicators = value.starts_with(b"---") || value.starts_with(b"...");
    let (mut line_breaks, mut special_characters) = (false, false);
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    let mut preceded_by_whitespace = true;
    let mut i = 0;
    while i < value.len() {
        let width = char_width(value[i]);
        let followed_by_whitespace = i + width >= value.len() || is_blank(value, i + width);
        if i == 0 {
            match value[i] {
                b'#' | b',' | b'[' | b']' | b'{' | b'}' | b'&' | b'*' | b'!' | b'|' | b'>'
                | b'\'' | b'"' | b'%' | b'@' | b'`' => block_indicators = true,
                b'?' | b':' | b'-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match value[i] {
                b':' if followed_by_whitespace => block_indicators = true,
                b'#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if !is_printable(value, i) {
            special_characters = true;
        }
        if value[i] == b' ' {
            leading_space |= i == 0;
            trailing_space |= i + width == value.len();
            break_space |= previous_break;
            previous_space = true;
            previous_break = false;
        } else if is_break(value, i) {
            line_breaks = true;
            leading_break |= i == 0;
            trailing_break |= i + width == value.len();
            space_break |= previous_space;
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = is_blankz(value, i);
        i += width;
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

fn at(value: &[u8], i: usize) -> u8 {
    value.get(i).copied().unwrap_or(0)
}

fn char_width(first: u8) -> usize {
    match first {
        b if b & 0x80 == 0x00 => 1,
        b if b & 0xE0 == 0xC0 => 2,
        b if b & 0xF0 == 0xE0 => 3,
        b if b & 0xF8 == 0xF0 => 4,
        _ => 1,
    }
}

fn is_printable(b: &[u8], i: usize) -> bool {
    let (c, next, third) = (at(b, i), at(b, i + 1), at(b, i + 2));
    c == 0x0A
        || (0x20..=0x7E).contains(&c)
        || (c == 0xC2 && next >= 0xA0)
        || (c > 0xC2 && c < 0xED)
        || (c == 0xED && next < 0xA0)
        || c == 0xEE
        || (c == 0xEF
            && !(next == 0xBB && third == 0xBF)
            && !(next == 0xBF && (third == 0xBE || third == 0xBF)))
}

fn is_break(b: &[u8], i: usize) -> bool {
    let (c, next, third) = (at(b, i), at(b, i + 1), at(b, i + 2));
    c == b'\r'
        || c == b'\n'
        || (c == 0xC2 && next == 0x85)
        || (c == 0xE2 && next == 0x80 && (third == 0xA8 || third == 0xA9))
}

fn is_blank(b: &[u8], i: usize) -> bool {
    matches!(at(b, i), b' ' | b'\t')
}

fn is_blankz(b: &[u8], i: usize) -> bool {
    is_blank(b, i) || is_break(b, i) || at(b, i) == 0
}

/// A JSON number as `go-yaml` v2 writes it after reading it back: integers as
/// they are, other numbers with Go's shortest `%g` (exponent from 1e+06 up or
/// below 1e-04).
fn go_number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    go_float(n.as_f64().unwrap_or(f64::NAN))
}

fn go_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    // Rust's `{:e}` gives the shortest digits that read back as `f`, as Go's does.
    let formatted = format!("{f:e}");
    let (mantissa, exponent) = formatted.split_once('e').unwrap_or((&formatted, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if (-4..6).contains(&exponent) {
        let point = exponent + 1;
        let text = if point <= 0 {
            format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
        } else if point as usize >= digits.len() {
            format!("{digits}{}", "0".repeat(point as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..point as usize],
                &digits[point as usize..]
            )
        };
        return format!("{sign}{text}");
    }
    let (first, rest) = digits.split_at(1);
    let fraction = if rest.is_empty() {
        String::new()
    } else {
        format!(".{rest}")
    };
    let exponent_sign = if exponent < 0 { '-' } else { '+' };
    format!(
        "{sign}{first}{fraction}e{exponent_sign}{:02}",
        exponent.unsigned_abs()
    )
}

/// Whether `go-yaml` v2 reads `s`, written plain, back as the string `s` (not as a
/// null, bool, number or timestamp). Like `go-yaml`, it looks `s` up only when its
/// first character can start one of those, so `<<` (a merge key when read) counts
/// as a string.
fn resolves_to_string(s: &str) -> bool {
    const SPECIAL: &[&str] = &[
        "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", "n", "N", "no",
        "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF", "", "~", "null", "Null",
        "NULL", ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
        "-.Inf", "-.INF",
    ];
    if SPECIAL.contains(&s) {
        return false;
    }
    match s.as_bytes()[0] {
        b'.' => !is_go_float(s),
        b'+' | b'-' | b'0'..=b'9' => {
            if is_timestamp(s) {
                return false;
            }
            let plain = s.replace('_', "");
            !(is_go_int(&plain) || (is_yaml_style_float(&plain) && is_go_float(&plain)) || {
                let binary = plain
                    .strip_prefix("0b")
                    .or_else(|| plain.strip_prefix("-0b"));
                binary.is_some_and(|digits| {
                    !digits.is_empty() && digits.bytes().all(|b| b == b'0' || b == b'1')
                })
            })
        }
        _ => true,
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)` or `ParseUint(s, 0, 64)` succeeds.
fn is_go_int(s: &str) -> bool {
    let (negative, unsigned) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = unsigned.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    let Ok(magnitude) = u128::from_str_radix(digits, radix) else {
        return false;
    };
    if digits.starts_with('+') || digits.starts_with('-') {
        return false;
    }
    if negative {
        magnitude <= 1u128 << 63
    } else {
        magnitude <= u128::from(u64::MAX)
    }
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_style_float(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (number, exponent) = match s.find(['e', 'E']) {
        Some(at) => (&s[..at], Some(&s[at + 1..])),
        None => (s, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let number_ok = match number.split_once('.') {
        Some(("", fraction)) => digits(fraction),
        Some((whole, fraction)) => {
            digits(whole) && (fraction.is_empty() || fraction.bytes().all(|b| b.is_ascii_digit()))
        }
        None => digits(number),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    number_ok && exponent_ok
}

/// Go's `strconv.ParseFloat(s, 64)` succeeds on a decimal `s` (finite, in range).
fn is_go_float(s: &str) -> bool {
    is_yaml_style_float(s) && s.parse::<f64>().is_ok_and(f64::is_finite)
}

/// `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`
fn is_base60_float(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (body, fraction) = match s.split_once('.') {
        Some((body, fraction)) => (body, Some(fraction)),
        None => (s, None),
    };
    if fraction.is_some_and(|f| !f.bytes().all(|b| b.is_ascii_digit() || b == b'_')) {
        return false;
    }
    let mut parts = body.split(':');
    let head = parts.next().unwrap_or_default();
    let head_ok = head.as_bytes().first().is_some_and(u8::is_ascii_digit)
        && head.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    let mut sexagesimals = 0;
    for part in parts {
        let ok = match part.as_bytes() {
            [d] => d.is_ascii_digit(),
            [t, d] => (b'0'..=b'5').contains(t) && d.is_ascii_digit(),
            _ => false,
        };
        if !ok {
            return false;
        }
        sexagesimals += 1;
    }
    head_ok && sexagesimals > 0
}

/// `go-yaml` v2's timestamps: `YYYY-M-D`, optionally with a time after `T`, `t`
/// (then a zone, `Z` or `±hh:mm`) or a space (no zone).
fn is_timestamp(s: &str) -> bool {
    let bytes = s.as_bytes();
    if bytes.len() < 5 || !bytes[..4].iter().all(u8::is_ascii_digit) || bytes[4] != b'-' {
        return false;
    }
    let (date, time) = match s.find(['T', 't', ' ']) {
        Some(at) => (&s[..at], Some((bytes[at], &s[at + 1..]))),
        None => (s, None),
    };
    let mut fields = date.split('-');
    let (Some(year), Some(month), Some(day), None) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return false;
    };
    let number = |t: &str, max_len: usize| -> Option<u32> {
        (!t.is_empty() && t.len() <= max_len && t.bytes().all(|b| b.is_ascii_digit()))
            .then(|| t.parse().ok())
            .flatten()
    };
    let (Some(year), Some(month), Some(day)) = (number(year, 4), number(month, 2), number(day, 2))
    else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    if day == 0 || day > days {
        return false;
    }
    let Some((separator, time)) = time else {
        return true;
    };
    let (clock, zone) = if separator == b' ' {
        (time, None)
    } else if let Some(clock) = time.strip_suffix('Z') {
        (clock, Some("Z"))
    } else {
        match time.rfind(['+', '-']) {
            Some(at) => (&time[..at], Some(&time[at..])),
            None => return false,
        }
    };
    if let Some(zone) = zone
        && zone != "Z"
    {
        let z = zone.as_bytes();
        if z.len() != 6 || z[3] != b':' || !z[1..3].iter().chain(&z[4..6]).all(u8::is_ascii_digit) {
            return false;
        }
    }
    let (clock, fraction) = match clock.split_once('.') {
        Some((clock, fraction)) => (clock, Some(fraction)),
        None => (clock, None),
    };
    if fraction
        .is_some_and(|f| f.is_empty() || f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()))
    {
        return false;
    }
    let mut parts = clock.split(':');
    let (Some(hour), Some(minute), Some(second), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    matches!(
        (number(hour, 2), number(minute, 2), number(second, 2)),
        (Some(h), Some(m), Some(s)) if h < 24 && m < 60 && s < 60
    )
}

/// `go-yaml` v2's order of string map keys: letters by code point, runs of digits
/// by their value, letters after other characters.
fn go_key_order(a: &str, b: &str) -> Ordering {
    if go_key_less(a, b) {
        Ordering::Less
    } else if go_key_less(b, a) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

fn go_key_less(a: &str, b: &str) -> bool {
    let (ar, br): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let digit = |c: char| c.is_ascii_digit();
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let (al, bl) = (ar[i].is_alphabetic(), br[i].is_alphabetic());
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn): (i64, i64) = (0, 0);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && digit(ar[j - 1]) {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && digit(ar[ai]) {
            an = an
                .wrapping_mul(10)
                .wrapping_add(i64::from(ar[ai] as u8 - b'0'));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && digit(br[bi]) {
            bn = bn
                .wrapping_mul(10)
                .wrapping_add(i64::from(br[bi] as u8 - b'0'));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}
