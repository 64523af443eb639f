//! Field paths, as crossplane-runtime's `pkg/fieldpath` parses and resolves them.
//!
//! Paths look like `spec.containers[0].name` or `metadata.labels['app.io/x']`.
//! Parsing, error texts, intermediate creation on set and wildcard expansion
//! all follow upstream, so that patches behave (and fail) the same way.

use std::fmt;

use serde_json::{Map, Number, Value};

use crate::strconv::quote;

/// The largest array index `set_value` will write, like upstream's
/// `DefaultMaxFieldPathIndex`: it bounds how far a patch can grow an array.
pub const MAX_FIELD_PATH_INDEX: usize = 1024;

const WILDCARD: &str = "*";

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment<'a> {
    /// A key of an object, borrowed from the path (or, for an expanded
    /// wildcard, from the object's keys): paths are parsed on every patch.
    Field(&'a str),
    /// An element of an array.
    Index(usize),
}

impl<'a> Segment<'a> {
    /// Bracket contents are an index only if they are an unsigned 32-bit
    /// decimal; anything else (`-1`, `3.0`, `*`) is a field name.
    fn field_or_index(s: &'a str) -> Segment<'a> {
        let all_digits = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        match s.parse::<u32>() {
            Ok(i) if all_digits => Segment::Index(i as usize),
            _ => Segment::field(s),
        }
    }

    /// Field names have all leading and trailing quotes trimmed, so
    /// `['a.b']` and `'a'` name the fields `a.b` and `a`.
    fn field(s: &'a str) -> Segment<'a> {
        Segment::Field(s.trim_matches(|c| c == '\'' || c == '"'))
    }

    fn is_wildcard(&self) -> bool {
        matches!(self, Segment::Field(f) if *f == WILDCARD)
    }
}

/// A parsed field path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldPath<'a> {
    pub segments: Vec<Segment<'a>>,
}

/// Renders a segment list the way upstream's `Segments.String` does.
struct Rendered<'a, 'p>(&'a [Segment<'p>]);

impl fmt::Display for Rendered<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        for segment in self.0 {
            match segment {
                Segment::Field(name) if *name == WILDCARD || name.contains('.') => {
                    out.push('[');
                    out.push_str(name);
                    out.push(']');
                }
                Segment::Field(name) => {
                    out.push('.');
                    out.push_str(name);
                }
                Segment::Index(i) => {
                    out.push_str(&format!("[{i}]"));
                }
            }
        }
        f.write_str(out.strip_prefix('.').unwrap_or(&out))
    }
}

impl fmt::Display for FieldPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Rendered(&self.segments).fmt(f)
    }
}

/// A field path error. `not_found` marks the errors upstream tags as
/// NotFound, which patches treat as "skip" rather than "fail".
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct FieldPathError {
    pub message: String,
    pub not_found: bool,
}

impl FieldPathError {
    fn fatal(message: String) -> Self {
        FieldPathError {
            message,
            not_found: false,
        }
    }

    fn not_found(message: String) -> Self {
        FieldPathError {
            message,
            not_found: true,
        }
    }

    /// Prefixes the message, keeping the NotFound marker (upstream wraps
    /// errors and still finds the NotFound cause underneath).
    fn wrap(self, context: String) -> Self {
        FieldPathError {
            message: format!("{context}: {}", self.message),
            not_found: self.not_found,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.not_found
    }
}

impl<'a> FieldPath<'a> {
    /// Parses a path with upstream's lexer rules and error positions (byte
    /// offsets).
    pub fn parse(path: &'a str) -> Result<FieldPath<'a>, FieldPathError> {
        lex(path)
            .map(|segments| FieldPath { segments })
            .map_err(|(msg, pos)| {
                FieldPathError::fatal(format!(
                    "cannot parse path {}: {msg} at position {pos}",
                    quote(path)
                ))
            })
    }
}

/// A port of upstream's state-machine lexer. Only the error positions and
/// which tokens become fields versus field-or-index matter here.
fn lex(input: &str) -> Result<Vec<Segment<'_>>, (String, usize)> {
    enum State {
        Field,
        Period,
        LeftBracket,
    }
    let bytes = input.as_bytes();
    let mut segments = Vec::new();
    let mut pos = 0;
    let mut state = State::Field;
    loop {
        match state {
            State::Field => {
                let rest = &input[pos..];
                match rest.find(['[', ']', '.']) {
                    Some(i) if bytes[pos + i] == b']' => {
                        return Err(("unexpected ']'".to_string(), pos + i));
                    }
                    Some(i) => {
                        if i > 0 {
                            segments.push(Segment::field(&rest[..i]));
                        }
                        pos += i;
                        state = if bytes[pos] == b'[' {
                            State::LeftBracket
                        } else {
                            State::Period
                        };
                    }
                    None => {
                        if !rest.is_empty() {
                            segments.push(Segment::field(rest));
                        }
                        return Ok(segments);
                    }
                }
            }
            State::Period => {
                // A period may not start or end the path, nor be followed by
                // another period or a bracket.
                if pos == 0 || pos == input.len() - 1 {
                    return Err(("unexpected '.'".to_string(), pos));
                }
                pos += 1;
                match bytes[pos] {
                    b'.' => return Err(("unexpected '.'".to_string(), pos)),
                    b'[' => return Err(("unexpected '['".to_string(), pos)),
                    _ => state = State::Field,
                }
            }
            State::LeftBracket => {
                let rest = &input[pos..];
                let Some(rbi) = rest.find(']') else {
                    return Err(("unterminated '['".to_string(), pos));
                };
                pos += 1;
                let inner = &input[pos..pos + rbi - 1];
                if inner.is_empty() {
                    return Err(("unexpected ']'".to_string(), pos));
                }
                if let Some(lbi) = inner.find('[') {
                    return Err(("unexpected '['".to_string(), pos + lbi));
                }
                segments.push(Segment::field_or_index(inner));
                pos += inner.len() + 1;
                state = State::Field;
            }
        }
    }
}

fn parse(path: &str) -> Result<Vec<Segment<'_>>, FieldPathError> {
    FieldPath::parse(path).map(|p| p.segments)
}

static NULL: Value = Value::Null;

/// Reads the value at `path`. An empty path yields `null`.
pub fn get_value<'a>(object: &'a Value, path: &str) -> Result<&'a Value, FieldPathError> {
    let segments = parse(path)?;
    get_segments(object, &segments)
}

/// Reads the string at `path` (`Paved.GetString`).
pub fn get_string<'a>(object: &'a Value, path: &str) -> Result<&'a str, FieldPathError> {
    match get_value(object, path)? {
        Value::String(s) => Ok(s),
        _ => Err(FieldPathError::fatal(format!("{path}: not a string"))),
    }
}

fn get_segments<'a>(
    object: &'a Value,
    segments: &[Segment<'_>],
) -> Result<&'a Value, FieldPathError> {
    let mut it = object;
    for (i, current) in segments.iter().enumerate() {
        match current {
            Segment::Index(index) => {
                let Value::Array(array) = it else {
                    return Err(FieldPathError::fatal(format!(
                        "{}: not an array",
                        Rendered(&segments[..i])
                    )));
                };
                it = array.get(*index).ok_or_else(|| {
                    FieldPathError::not_found(format!(
                        "{}: no such element",
                        Rendered(&segments[..=i])
                    ))
                })?;
            }
            Segment::Field(name) => match it {
                Value::Object(map) => {
                    it = map.get(*name).ok_or_else(|| {
                        FieldPathError::not_found(format!(
                            "{}: no such field",
                            Rendered(&segments[..=i])
                        ))
                    })?;
                }
                Value::Null => {
                    return Err(FieldPathError::not_found(format!(
                        "{}: expected map, got nil",
                        Rendered(&segments[..i])
                    )));
                }
                _ => {
                    return Err(FieldPathError::fatal(format!(
                        "{}: not an object",
                        Rendered(&segments[..i])
                    )));
                }
            },
        }
    }
    if segments.is_empty() {
        return Ok(&NULL);
    }
    Ok(it)
}

/// Normalises a value the way upstream's JSON round trip (`toValidJSON`,
/// decoding with Kubernetes' int-preserving JSON) does: integral floats that
/// Go would print without an exponent become integers, and integers beyond
/// int64 become floats.
pub fn to_valid_json(mut value: Value) -> Value {
    normalize(&mut value);
    value
}

/// Normalises in place: only numbers change, so containers are not rebuilt.
fn normalize(value: &mut Value) {
    match value {
        Value::Number(n) if !n.is_i64() => *n = normalize_number(n.clone()),
        Value::Array(items) => items.iter_mut().for_each(normalize),
        Value::Object(map) => map.values_mut().for_each(normalize),
        _ => {}
    }
}

fn normalize_number(n: Number) -> Number {
    if let Some(u) = n.as_u64() {
        // Too big for int64: Go falls back to float64.
        return Number::from_f64(u as f64).unwrap_or(n);
    }
    match n.as_f64() {
        // 2^63 itself does not fit int64; -2^63 does.
        Some(f)
            if f.fract() == 0.0
                && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) =>
        {
            Number::from(f as i64)
        }
        _ => n,
    }
}

/// Writes `value` at `path`, creating missing intermediate objects and arrays
/// from the kind of the following segment. An empty path does nothing.
pub fn set_value(object: &mut Value, path: &str, value: Value) -> Result<(), FieldPathError> {
    let segments = parse(path)?;
    let value = to_valid_json(value);
    if let Some(index) = segments.iter().find_map(|s| match s {
        Segment::Index(i) if *i > MAX_FIELD_PATH_INDEX => Some(*i),
        _ => None,
    }) {
        return Err(FieldPathError::fatal(format!(
            "index {index} is greater than max allowed index {MAX_FIELD_PATH_INDEX}"
        )));
    }
    let Some((last, parents)) = segments.split_last() else {
        return Ok(());
    };
    let mut it = object;
    for (i, current) in parents.iter().enumerate() {
        let next = &segments[i + 1];
        it = match current {
            Segment::Index(index) => {
                let Value::Array(array) = it else {
                    return Err(not_an_array(&segments[..i]));
                };
                ensure_len(array, *index + 1);
                let element = &mut array[*index];
                // A null element is replaced by a container; an existing
                // array is grown to fit the next index.
                if element.is_null() {
                    *element = empty_container(next);
                } else {
                    grow_for(element, next);
                }
                element
            }
            Segment::Field(name) => {
                let Value::Object(map) = it else {
                    return Err(not_an_object(&segments[..i]));
                };
                // Unlike array elements, a null map value is kept as is, so
                // the next segment then fails on it.
                let entry = map
                    .entry((*name).to_owned())
                    .or_insert_with(|| empty_container(next));
                grow_for(entry, next);
                entry
            }
        };
    }
    let last_prefix = &segments[..parents.len()];
    match last {
        Segment::Index(index) => {
            let Value::Array(array) = it else {
                return Err(not_an_array(last_prefix));
            };
            ensure_len(array, *index + 1);
            array[*index] = value;
        }
        Segment::Field(name) => {
            let Value::Object(map) = it else {
                return Err(not_an_object(last_prefix));
            };
            map.insert((*name).to_owned(), value);
        }
    }
    Ok(())
}

fn not_an_array(prefix: &[Segment<'_>]) -> FieldPathError {
    FieldPathError::fatal(format!("{} is not an array", Rendered(prefix)))
}

fn not_an_object(prefix: &[Segment<'_>]) -> FieldPathError {
    FieldPathError::fatal(format!("{} is not an object", Rendered(prefix)))
}

fn empty_container(next: &Segment<'_>) -> Value {
    match next {
        Segment::Index(i) => Value::Array(vec![Value::Null; i + 1]),
        Segment::Field(_) => Value::Object(Map::new()),
    }
}

fn grow_for(value: &mut Value, next: &Segment<'_>) {
    if let (Value::Array(array), Segment::Index(i)) = (value, next) {
        ensure_len(array, i + 1);
    }
}

fn ensure_len(array: &mut Vec<Value>, len: usize) {
    if array.len() < len {
        array.resize(len, Value::Null);
    }
}

/// Expands each `[*]` of `path` over the elements (or keys) that exist in
/// `object`. Only paths whose every segment exists survive, so the result
/// may be empty. Wildcards over null are NotFound; over scalars, fatal.
pub fn expand_wildcards(object: &Value, path: &str) -> Result<Vec<String>, FieldPathError> {
    let segments = parse(path)?;
    let expanded = expand(object, segments.clone()).map_err(|e| {
        e.wrap(format!(
            "cannot expand wildcards for segments: {}",
            quote(&Rendered(&segments).to_string())
        ))
    })?;
    Ok(expanded.iter().map(|s| Rendered(s).to_string()).collect())
}

fn expand<'a>(
    data: &'a Value,
    segments: Vec<Segment<'a>>,
) -> Result<Vec<Vec<Segment<'a>>>, FieldPathError> {
    for i in 0..segments.len() {
        if segments[i].is_wildcard() {
            let it = if i == 0 {
                data
            } else {
                get_segments(data, &segments[..i])?
            };
            let replacements: Vec<Segment<'a>> = match it {
                // An element's position always reads back as an index.
                Value::Array(items) => (0..items.len()).map(Segment::Index).collect(),
                Value::Object(map) => map.keys().map(|k| Segment::field(k)).collect(),
                Value::Null => {
                    return Err(FieldPathError::not_found(format!(
                        "wildcard field {} is not found in the path",
                        quote(&Rendered(&segments[..i]).to_string())
                    )));
                }
                _ => {
                    return Err(FieldPathError::fatal(format!(
                        "{}: unexpected wildcard usage",
                        quote(&Rendered(&segments[..i]).to_string())
                    )));
                }
            };
            let mut out = Vec::new();
            for replacement in replacements {
                let mut candidate = segments.clone();
                candidate[i] = replacement;
                let rendered = quote(&Rendered(&candidate).to_string());
                let found = expand(data, candidate)
                    .map_err(|e| e.wrap(format!("{rendered}: cannot expand wildcards")))?;
                out.extend(found);
            }
            return Ok(out);
        }
        match get_segments(data, &segments[..=i]) {
            Ok(_) => {}
            Err(e) if e.is_not_found() => return Ok(Vec::new()),
            Err(e) => return Err(e),
        }
    }
    Ok(vec![segments])
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(s: &str) -> Segment<'_> {
        Segment::Field(s)
    }

    fn ix(i: usize) -> Segment<'static> {
        Segment::Index(i)
    }

    #[test]
    fn parse_splits_paths_into_segments() {
        let cases: Vec<(&str, &str, Vec<Segment>)> = vec![
            ("empty path has no segments", "", vec![]),
            ("single field", "apiVersion", vec![f("apiVersion")]),
            (
                "dotted fields",
                "metadata.name",
                vec![f("metadata"), f("name")],
            ),
            (
                "index after field",
                "spec.containers[0].name",
                vec![f("spec"), f("containers"), ix(0), f("name")],
            ),
            (
                "periods literal in brackets",
                "data[.config.yml]",
                vec![f("data"), f(".config.yml")],
            ),
            (
                "quoted bracket field",
                "metadata.annotations['crossplane.io/external-name']",
                vec![
                    f("metadata"),
                    f("annotations"),
                    f("crossplane.io/external-name"),
                ],
            ),
            (
                "double-quoted bracket field",
                "labels[\"app.hash\"]",
                vec![f("labels"), f("app.hash")],
            ),
            (
                "consecutive indexes",
                "spec.items[0][8]",
                vec![f("spec"), f("items"), ix(0), ix(8)],
            ),
            ("root index", "[42]", vec![ix(42)]),
            ("dotted digits are fields", "a.0", vec![f("a"), f("0")]),
            (
                "negative index is a field",
                "arr[-1]",
                vec![f("arr"), f("-1")],
            ),
            (
                "decimal index is a field",
                "arr[3.0]",
                vec![f("arr"), f("3.0")],
            ),
            (
                "index above u32 is a field",
                "arr[4294967296]",
                vec![f("arr"), f("4294967296")],
            ),
            (
                "u32 max is an index",
                "arr[4294967295]",
                vec![f("arr"), ix(4294967295)],
            ),
            ("plus sign is a field", "arr[+1]", vec![f("arr"), f("+1")]),
            (
                "leading zeros are an index",
                "arr[007]",
                vec![f("arr"), ix(7)],
            ),
            (
                "wildcard is a field",
                "a[*].b",
                vec![f("a"), f("*"), f("b")],
            ),
            ("quoted digits are a field", "a['0']", vec![f("a"), f("0")]),
            (
                "quotes trimmed on dotted names",
                "metadata.'foo'",
                vec![f("metadata"), f("foo")],
            ),
            (
                "all surrounding quotes trimmed",
                "a['\"x\"']",
                vec![f("a"), f("x")],
            ),
            (
                "no separator after bracket",
                "a[0]b",
                vec![f("a"), ix(0), f("b")],
            ),
            (
                "bracketed field then index",
                "spec[containers][0].name",
                vec![f("spec"), f("containers"), ix(0), f("name")],
            ),
            (
                "slash in bracket",
                "annotations[crossplane.io/external-name]",
                vec![f("annotations"), f("crossplane.io/external-name")],
            ),
            ("unicode field", "spec.naïve", vec![f("spec"), f("naïve")]),
        ];
        for (rule, path, want) in cases {
            let got = FieldPath::parse(path).unwrap_or_else(|e| panic!("{rule}: {e}"));
            assert_eq!(got.segments, want, "{rule}: {path}");
        }
    }

    #[test]
    fn parse_errors_report_upstream_positions() {
        let cases = [
            ("leading period", ".a", "unexpected '.' at position 0"),
            ("trailing period", "a.", "unexpected '.' at position 1"),
            ("lone period", ".", "unexpected '.' at position 0"),
            (
                "double period",
                "metadata..name",
                "unexpected '.' at position 9",
            ),
            (
                "period before bracket",
                "spec.containers.[0]",
                "unexpected '[' at position 16",
            ),
            ("stray right bracket", "a]", "unexpected ']' at position 1"),
            (
                "unterminated bracket",
                "spec[name",
                "unterminated '[' at position 4",
            ),
            ("empty brackets", "spec[]", "unexpected ']' at position 5"),
            (
                "nested bracket",
                "spec[a[b]]",
                "unexpected '[' at position 6",
            ),
            (
                "trailing period after index",
                "a[0].",
                "unexpected '.' at position 4",
            ),
            (
                "right bracket after index",
                "a[0]]",
                "unexpected ']' at position 4",
            ),
            (
                "byte positions with unicode",
                "é..",
                "unexpected '.' at position 3",
            ),
        ];
        for (rule, path, want) in cases {
            let err = FieldPath::parse(path).expect_err(rule);
            assert_eq!(
                err.message,
                format!("cannot parse path {}: {want}", quote(path)),
                "{rule}"
            );
            assert!(!err.is_not_found(), "{rule}: parse errors are fatal");
        }
    }

    #[test]
    fn display_renders_like_upstream_segments_string() {
        let cases = [
            ("a.b[0][c.d]", "a.b[0][c.d]"),
            ("a[*].b", "a[*].b"),
            ("metadata.labels['app.hash']", "metadata.labels[app.hash]"),
            ("[0].a", "[0].a"),
            ("spec[containers][0]", "spec.containers[0]"),
            ("a['0']", "a.0"),
            ("", ""),
        ];
        for (path, want) in cases {
            let parsed = FieldPath::parse(path).expect("valid path");
            assert_eq!(parsed.to_string(), want, "{path}");
        }
    }

    #[test]
    fn get_value_reads_and_reports_errors() {
        let doc = json!({
            "spec": {
                "a": {"b": "x"},
                "arr": [1, {"name": "n"}],
                "nil": null,
                "s": "str",
                "n": 3,
                "dotted.key": true,
            },
        });
        // (rule, path, Ok(value) | Err((message, not_found)))
        type Want = Result<Value, (&'static str, bool)>;
        let cases: Vec<(&str, &str, Want)> = vec![
            ("empty path is null", "", Ok(Value::Null)),
            ("nested field", "spec.a.b", Ok(json!("x"))),
            ("whole object", "spec.a", Ok(json!({"b": "x"}))),
            ("array element", "spec.arr[0]", Ok(json!(1))),
            ("field in element", "spec.arr[1].name", Ok(json!("n"))),
            ("null leaf", "spec.nil", Ok(Value::Null)),
            ("bracketed dotted key", "spec[dotted.key]", Ok(json!(true))),
            (
                "missing key includes segment",
                "spec.missing",
                Err(("spec.missing: no such field", true)),
            ),
            (
                "missing nested",
                "spec.a.c.d",
                Err(("spec.a.c: no such field", true)),
            ),
            (
                "index out of range",
                "spec.arr[3]",
                Err(("spec.arr[3]: no such element", true)),
            ),
            (
                "field on null",
                "spec.nil.x",
                Err(("spec.nil: expected map, got nil", true)),
            ),
            (
                "field on string",
                "spec.s.x",
                Err(("spec.s: not an object", false)),
            ),
            (
                "field on number",
                "spec.n.x",
                Err(("spec.n: not an object", false)),
            ),
            (
                "field on array",
                "spec.arr.x",
                Err(("spec.arr: not an object", false)),
            ),
            (
                "index on object",
                "spec.a[0]",
                Err(("spec.a: not an array", false)),
            ),
            (
                "index on null",
                "spec.nil[0]",
                Err(("spec.nil: not an array", false)),
            ),
            (
                "negative index is a field",
                "spec.arr[-1]",
                Err(("spec.arr: not an object", false)),
            ),
            (
                "wildcard is a field",
                "spec.arr[*].name",
                Err(("spec.arr: not an object", false)),
            ),
            ("root index", "[0]", Err((": not an array", false))),
            (
                "dotted key rendered in brackets",
                "spec[dotted.key].x",
                Err(("spec[dotted.key]: not an object", false)),
            ),
            (
                "parse error",
                "spec..a",
                Err((
                    "cannot parse path \"spec..a\": unexpected '.' at position 5",
                    false,
                )),
            ),
        ];
        for (rule, path, want) in cases {
            let got = get_value(&doc, path);
            match (got, want) {
                (Ok(v), Ok(w)) => assert_eq!(*v, w, "{rule}"),
                (Err(e), Err((msg, nf))) => {
                    assert_eq!(e.message, msg, "{rule}");
                    assert_eq!(e.is_not_found(), nf, "{rule}: not_found");
                }
                (got, want) => panic!("{rule}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn set_value_creates_intermediates_and_reports_errors() {
        type Want = Result<Value, &'static str>;
        let cases: Vec<(&str, Value, &str, Value, Want)> = vec![
            (
                "sets a top-level field",
                json!({}),
                "a",
                json!(1),
                Ok(json!({"a": 1})),
            ),
            (
                "creates nested maps",
                json!({}),
                "spec.a.b",
                json!("x"),
                Ok(json!({"spec": {"a": {"b": "x"}}})),
            ),
            (
                "creates arrays of nulls",
                json!({}),
                "spec.arr[2]",
                json!("x"),
                Ok(json!({"spec": {"arr": [null, null, "x"]}})),
            ),
            (
                "extends existing arrays",
                json!({"spec": {"arr": ["a"]}}),
                "spec.arr[3]",
                json!("x"),
                Ok(json!({"spec": {"arr": ["a", null, null, "x"]}})),
            ),
            (
                "creates map inside new array",
                json!({}),
                "spec.arr[1].name",
                json!("x"),
                Ok(json!({"spec": {"arr": [null, {"name": "x"}]}})),
            ),
            (
                "replaces null element with container",
                json!({"a": [null]}),
                "a[0].b",
                json!(1),
                Ok(json!({"a": [{"b": 1}]})),
            ),
            (
                "replaces null element with array",
                json!({"a": [null]}),
                "a[0][1]",
                json!(1),
                Ok(json!({"a": [[null, 1]]})),
            ),
            (
                "extends nested array element",
                json!({"a": [[1]]}),
                "a[0][2]",
                json!(3),
                Ok(json!({"a": [[1, null, 3]]})),
            ),
            (
                "overwrites existing value",
                json!({"a": {"b": 1}}),
                "a.b",
                json!({"c": 2}),
                Ok(json!({"a": {"b": {"c": 2}}})),
            ),
            (
                "empty path does nothing",
                json!({"a": 1}),
                "",
                json!(2),
                Ok(json!({"a": 1})),
            ),
            (
                "normalises integral floats",
                json!({}),
                "a",
                json!(6.0),
                Ok(json!({"a": 6})),
            ),
            (
                "keeps fractional floats",
                json!({}),
                "a",
                json!(6.5),
                Ok(json!({"a": 6.5})),
            ),
            (
                "normalises nested floats",
                json!({}),
                "a",
                json!([1.0, {"b": 2.0}]),
                Ok(json!({"a": [1, {"b": 2}]})),
            ),
            (
                "index at the cap",
                json!({}),
                "a[1024]",
                json!(1),
                Ok(
                    json!({"a": (0..1025).map(|i| if i == 1024 { json!(1) } else { Value::Null }).collect::<Vec<_>>()}),
                ),
            ),
            (
                "index above the cap",
                json!({}),
                "a[1025]",
                json!(1),
                Err("index 1025 is greater than max allowed index 1024"),
            ),
            (
                "null map value is not replaced",
                json!({"spec": {"a": null}}),
                "spec.a.b",
                json!(1),
                Err("spec.a is not an object"),
            ),
            (
                "field through string",
                json!({"a": "s"}),
                "a.b",
                json!(1),
                Err("a is not an object"),
            ),
            (
                "index through object",
                json!({"a": {}}),
                "a[0]",
                json!(1),
                Err("a is not an array"),
            ),
            (
                "index through null map value",
                json!({"a": null}),
                "a[0]",
                json!(1),
                Err("a is not an array"),
            ),
            (
                "root index",
                json!({}),
                "[0]",
                json!(1),
                Err(" is not an array"),
            ),
            (
                "deep mismatch prefix",
                json!({"a": [{"b": 1}]}),
                "a[0].b.c",
                json!(1),
                Err("a[0].b is not an object"),
            ),
            (
                "parse error",
                json!({}),
                "a[",
                json!(1),
                Err("cannot parse path \"a[\": unterminated '[' at position 1"),
            ),
        ];
        for (rule, mut doc, path, value, want) in cases {
            let got = set_value(&mut doc, path, value);
            match want {
                Ok(w) => {
                    assert_eq!(got, Ok(()), "{rule}");
                    assert_eq!(doc, w, "{rule}");
                }
                Err(msg) => {
                    let e = got.expect_err(rule);
                    assert_eq!(e.message, msg, "{rule}");
                    assert!(!e.is_not_found(), "{rule}");
                }
            }
        }
    }

    #[test]
    fn to_valid_json_normalises_numbers_like_go() {
        let cases = [
            (json!(6.0), json!(6)),
            (json!(-0.0), json!(0)),
            (json!(1e20), json!(100000000000000000000.0)),
            (json!(1e18), json!(1000000000000000000i64)),
            (json!(-9.223_372_036_854_776e18), json!(i64::MIN)),
            (json!(u64::MAX), json!(18446744073709551615.0)),
            (json!(0.5), json!(0.5)),
            (json!("6.0"), json!("6.0")),
        ];
        for (input, want) in cases {
            assert_eq!(to_valid_json(input.clone()), want, "{input}");
        }
    }

    #[test]
    fn expand_wildcards_over_existing_elements() {
        let doc = json!({
            "spec": {
                "containers": [
                    {"name": "cool", "args": ["start", "now", "debug"]},
                    {"name": "other", "args": []},
                ],
                "items": [{"b": 1}, {"c": 2}],
                "m": {"x": {"v": 1}, "y.z": {"v": 2}},
                "nil": null,
                "s": "str",
                "empty": [],
            },
        });
        type Want = Result<Vec<&'static str>, (&'static str, bool)>;
        let cases: Vec<(&str, &str, Want)> = vec![
            (
                "nested wildcards depth first",
                "spec.containers[*].args[*]",
                Ok(vec![
                    "spec.containers[0].args[0]",
                    "spec.containers[0].args[1]",
                    "spec.containers[0].args[2]",
                ]),
            ),
            (
                "single wildcard",
                "spec.containers[*].name",
                Ok(vec!["spec.containers[0].name", "spec.containers[1].name"]),
            ),
            (
                "drops missing leaves",
                "spec.items[*].b",
                Ok(vec!["spec.items[0].b"]),
            ),
            (
                "map keys sorted, dotted keys bracketed",
                "spec.m[*].v",
                Ok(vec!["spec.m.x.v", "spec.m[y.z].v"]),
            ),
            ("no wildcard, existing", "spec.s", Ok(vec!["spec.s"])),
            ("no wildcard, missing", "spec.nope", Ok(vec![])),
            ("empty array", "spec.empty[*]", Ok(vec![])),
            ("missing array", "spec.missing[*]", Ok(vec![])),
            (
                "wildcard on null is not found",
                "spec.nil[*]",
                Err((
                    "cannot expand wildcards for segments: \"spec.nil[*]\": wildcard field \"spec.nil\" is not found in the path",
                    true,
                )),
            ),
            (
                "wildcard on scalar is fatal",
                "spec.s[*]",
                Err((
                    "cannot expand wildcards for segments: \"spec.s[*]\": \"spec.s\": unexpected wildcard usage",
                    false,
                )),
            ),
            (
                "nested wildcard errors are wrapped per expansion",
                "spec.containers[*].name[*]",
                Err((
                    "cannot expand wildcards for segments: \"spec.containers[*].name[*]\": \"spec.containers[0].name[*]\": cannot expand wildcards: \"spec.containers[0].name\": unexpected wildcard usage",
                    false,
                )),
            ),
            (
                "non-not-found read error is fatal",
                "spec.s.x[*]",
                Err((
                    "cannot expand wildcards for segments: \"spec.s.x[*]\": spec.s: not an object",
                    false,
                )),
            ),
        ];
        for (rule, path, want) in cases {
            match (expand_wildcards(&doc, path), want) {
                (Ok(got), Ok(w)) => assert_eq!(got, w, "{rule}"),
                (Err(e), Err((msg, nf))) => {
                    assert_eq!(e.message, msg, "{rule}");
                    assert_eq!(e.is_not_found(), nf, "{rule}");
                }
                (got, want) => panic!("{rule}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn expand_wildcards_at_root_iterates_keys() {
        let doc = json!({"a": {"v": 1}, "b": {"w": 2}});
        assert_eq!(
            expand_wildcards(&doc, "[*].v").expect("expands"),
            vec!["a.v"]
        );
    }
}
