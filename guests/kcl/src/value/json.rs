//! Values to JSON text and back, as KCL's `json` module and its planner do.
//!
//! Encoding follows KCL's rules for which values appear: `Undefined` and
//! functions inside lists and dicts are dropped, `None` is dropped when
//! `ignore_none`, names starting with `_` when `ignore_private`; a float
//! that is not finite becomes `null`; a number with a unit is its value in
//! base units (`1Ki` is `1024.0`). The text is laid out as KCL's formatter
//! lays it out: `", "` and `": "` between items when `indent` is 0, else
//! one item a line.
//!
//! Decoding keeps the key order of the text, keeps integers as integers
//! (up to `i64::MAX`; larger ones become floats) and reports serde_json's
//! messages, which are KCL's.

use std::fmt::Write as _;
use std::rc::Rc;

use serde::de::{self, Deserialize, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use super::{Dict, Value};

/// Which values an encoding keeps, and in which key order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EncodeOptions {
    /// Dict keys in sorted (byte) order instead of KCL's order.
    pub sort_keys: bool,
    /// Drop dict entries whose name starts with `_`.
    pub ignore_private: bool,
    /// Drop `None` dict entries and list items.
    pub ignore_none: bool,
}

/// One value as the encoders see it: a scalar, or a container whose
/// children are already filtered by the options.
pub(crate) enum Node<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'a str),
    List(Vec<&'a Value>),
    Map(Vec<(&'a str, &'a Value)>),
}

impl EncodeOptions {
    /// Whether a container keeps `value` as a child.
    fn keeps(&self, value: &Value) -> bool {
        match value {
            Value::Undefined | Value::Function(_) => false,
            Value::None => !self.ignore_none,
            _ => true,
        }
    }

    pub(crate) fn node<'a>(&self, value: &'a Value) -> Node<'a> {
        match value {
            Value::Undefined | Value::None | Value::Function(_) => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Int(i) => Node::Int(*i),
            Value::Float(f) if f.is_finite() => Node::Float(*f),
            Value::Unit(u) if u.value.is_finite() => Node::Float(u.value),
            Value::Float(_) | Value::Unit(_) => Node::Null,
            Value::Str(s) => Node::Str(s),
            Value::List(items) => Node::List(items.iter().filter(|v| self.keeps(v)).collect()),
            Value::Dict(_) | Value::Schema(_) => {
                let Some(dict) = value.as_dict() else {
                    return Node::Null;
                };
                let mut entries: Vec<(&str, &Value)> = dict
                    .iter()
                    .filter(|(k, v)| !(self.ignore_private && k.starts_with('_')) && self.keeps(v))
                    .map(|(k, v)| (k.as_str(), v))
                    .collect();
                if self.sort_keys {
                    entries.sort_by(|a, b| a.0.cmp(b.0));
                }
                Node::Map(entries)
            }
        }
    }
}

/// How a float is printed in JSON and YAML: the shortest text that reads
/// back as the same float, always with a `.` or an exponent (`1.0`, `1e20`,
/// `1e-7`).
pub(crate) fn format_float(f: f64) -> String {
    ryu::Buffer::new().format_finite(f).to_owned()
}

/// A float after KCL's trip through JSON text: printed shortest, then read
/// back by serde_json's fast reader, which may land one step off for
/// numbers of 16 or more digits. KCL's YAML output and `yaml.decode` take
/// that trip, so their floats are these.
pub(crate) fn json_roundtrip(f: f64) -> f64 {
    if !f.is_finite() {
        return f;
    }
    let text = format_float(f);
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.as_str()),
    };
    let (mantissa, exp_text) = match unsigned.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e)),
        None => (unsigned, None),
    };
    let mut significand: u64 = 0;
    let mut exponent: i32 = 0;
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    for d in int_part.bytes().chain(frac_part.bytes()) {
        significand = significand
            .saturating_mul(10)
            .saturating_add(u64::from(d.wrapping_sub(b'0')));
    }
    exponent -= frac_part.len() as i32;
    if let Some(e) = exp_text {
        exponent += e.parse::<i32>().unwrap_or(0);
    }
    let mut value = significand as f64;
    loop {
        let magnitude = exponent.unsigned_abs();
        if magnitude <= 308 {
            // The correctly rounded power, as serde_json's table holds it:
            // up to 1e22 repeated multiplication is exact.
            let pow: f64 = if magnitude <= 22 {
                10f64.powi(magnitude as i32)
            } else {
                format!("1e{magnitude}").parse().unwrap_or(f64::INFINITY)
            };
            if exponent >= 0 {
                value *= pow;
            } else {
                value /= pow;
            }
            break;
        }
        if value == 0.0 || exponent >= 0 {
            break;
        }
        value /= 1e308;
        exponent += 308;
    }
    if negative { -value } else { value }
}

/// `json.encode(data, sort_keys, indent, ignore_private, ignore_none)`.
/// A negative `indent` is 0.
pub fn encode(value: &Value, options: &EncodeOptions, indent: i64) -> String {
    let mut writer = JsonWriter {
        out: String::new(),
        indent: usize::try_from(indent).unwrap_or(0),
        depth: 0,
        has_value: false,
        options: *options,
    };
    writer.value(value);
    writer.out
}

/// Lays out JSON as KCL's formatter does. `has_value` is one flag for the
/// whole writer, not one per container, as KCL's is: it decides whether a
/// closing bracket goes on its own line.
struct JsonWriter {
    out: String,
    indent: usize,
    depth: usize,
    has_value: bool,
    options: EncodeOptions,
}

impl JsonWriter {
    fn value(&mut self, value: &Value) {
        match self.options.node(value) {
            Node::Null => self.out.push_str("null"),
            Node::Bool(b) => self.out.push_str(if b { "true" } else { "false" }),
            Node::Int(i) => {
                let _ = write!(self.out, "{i}");
            }
            Node::Float(f) => self.out.push_str(&format_float(f)),
            Node::Str(s) => write_json_string(&mut self.out, s),
            Node::List(items) => {
                self.open('[');
                for (i, item) in items.into_iter().enumerate() {
                    self.item_start(i == 0);
                    self.value(item);
                    self.has_value = true;
                }
                self.close(']');
            }
            Node::Map(entries) => {
                self.open('{');
                for (i, (key, item)) in entries.into_iter().enumerate() {
                    self.item_start(i == 0);
                    write_json_string(&mut self.out, key);
                    self.out.push_str(": ");
                    self.value(item);
                    self.has_value = true;
                }
                self.close('}');
            }
        }
    }

    fn open(&mut self, bracket: char) {
        self.depth += 1;
        self.has_value = false;
        self.out.push(bracket);
    }

    fn item_start(&mut self, first: bool) {
        if !first {
            self.out.push(',');
        }
        if self.indent > 0 {
            self.out.push('\n');
            self.write_indent();
        } else if !first {
            self.out.push(' ');
        }
    }

    fn close(&mut self, bracket: char) {
        self.depth -= 1;
        if self.has_value && self.indent > 0 {
            self.out.push('\n');
            self.write_indent();
        }
        self.out.push(bracket);
    }

    fn write_indent(&mut self) {
        for _ in 0..self.depth * self.indent {
            self.out.push(' ');
        }
    }
}

/// A JSON string literal with serde_json's escapes: the short forms for
/// `" \ \n \r \t \b \f`, `\u00XX` for other control characters, everything
/// else as is.
pub(crate) fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `json.decode(value)`: the value of a JSON text, or serde_json's message
/// (`EOF while parsing an object at line 1 column 1`).
pub fn decode(text: &str) -> Result<Value, String> {
    serde_json::from_str::<Decoded>(text)
        .map(|d| d.0)
        .map_err(|e| e.to_string())
}

/// A value read by a serde deserializer (JSON or YAML) as KCL reads it.
pub(crate) struct Decoded(pub(crate) Value);

impl<'de> Deserialize<'de> for Decoded {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Decoded, D::Error> {
        deserializer.deserialize_any(DecodedVisitor).map(Decoded)
    }
}

/// Reads the value at hand; used as a seed so the visitor stays one type.
struct DecodedSeed;

impl<'de> DeserializeSeed<'de> for DecodedSeed {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(DecodedVisitor)
    }
}

/// Dict keys are read as text (a YAML key `1` is the string `"1"`).
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = String;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = String;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E>(self, s: &str) -> Result<String, E> {
        Ok(s.to_owned())
    }

    fn visit_string<E>(self, s: String) -> Result<String, E> {
        Ok(s)
    }
}

struct DecodedVisitor;

impl<'de> Visitor<'de> for DecodedVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
        Ok(Value::Int(i))
    }

    fn visit_u64<E>(self, u: u64) -> Result<Value, E> {
        Ok(match i64::try_from(u) {
            Ok(i) => Value::Int(i),
            Err(_) => Value::Float(u as f64),
        })
    }

    /// KCL's reader has no NaN or infinity: those become `None`.
    fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
        Ok(if f.is_finite() {
            Value::Float(f)
        } else {
            Value::None
        })
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::Str(Rc::from(s)))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::None)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        DecodedSeed.deserialize(deserializer)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::None)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(DecodedSeed)? {
            items.push(item);
        }
        Ok(Value::list(items))
    }

    /// A repeated key keeps its first position and its last value.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut dict = Dict::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let value = map.next_value_seed(DecodedSeed)?;
            dict.insert(key, value);
        }
        Ok(Value::dict(dict))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dict(entries: &[(&str, Value)]) -> Value {
        Value::dict(
            entries
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    }

    fn sample() -> Value {
        dict(&[
            ("b", Value::Int(1)),
            ("_a", Value::str("x\"y\n")),
            ("n", Value::None),
            ("u", Value::Undefined),
            (
                "l",
                Value::list(vec![Value::Float(1.0), Value::None, Value::Undefined]),
            ),
            ("e", Value::list(vec![])),
            ("d", dict(&[])),
        ])
    }

    // Expectations from KCL 0.12.3's json.encode.
    #[test]
    fn encode_lays_out_and_filters_as_kcl() {
        let cases: &[(EncodeOptions, i64, &str)] = &[
            (
                EncodeOptions::default(),
                0,
                r#"{"b": 1, "_a": "x\"y\n", "n": null, "l": [1.0, null], "e": [], "d": {}}"#,
            ),
            (
                EncodeOptions {
                    sort_keys: true,
                    ignore_private: true,
                    ignore_none: true,
                },
                0,
                r#"{"b": 1, "d": {}, "e": [], "l": [1.0]}"#,
            ),
            (
                EncodeOptions::default(),
                2,
                "{\n  \"b\": 1,\n  \"_a\": \"x\\\"y\\n\",\n  \"n\": null,\n  \"l\": [\n    1.0,\n    null\n  ],\n  \"e\": [],\n  \"d\": {}\n}",
            ),
            (
                EncodeOptions::default(),
                -3,
                r#"{"b": 1, "_a": "x\"y\n", "n": null, "l": [1.0, null], "e": [], "d": {}}"#,
            ),
        ];
        for (options, indent, want) in cases {
            assert_eq!(
                encode(&sample(), options, *indent),
                *want,
                "{options:?} {indent}"
            );
        }
    }

    #[test]
    fn encode_scalars_as_kcl() {
        let cases: &[(Value, &str)] = &[
            (Value::Float(1e20), "1e20"),
            (Value::Float(1e-7), "1e-7"),
            (Value::Float(0.1), "0.1"),
            (Value::Float(f64::NAN), "null"),
            (Value::Undefined, "null"),
            (Value::str("\u{1}\u{7f}é\t"), "\"\\u0001\u{7f}é\\t\""),
            (Value::Int(i64::MIN), "-9223372036854775808"),
        ];
        for (value, want) in cases {
            assert_eq!(encode(value, &EncodeOptions::default(), 0), *want);
        }
    }

    #[test]
    fn floats_take_kcls_trip_through_json_text() {
        let cases = [
            (0.12000000000000455, 0.12000000000000456),
            (0.1, 0.1),
            (1e20, 1e20),
            (100.0, 100.0),
            (-2.5e-300, -2.5e-300),
        ];
        for (input, want) in cases {
            assert_eq!(json_roundtrip(input), want, "{input}");
        }
    }

    #[test]
    fn decode_keeps_order_and_ints() {
        let got =
            decode(r#"{"b": [1, 2.5, true, null], "a": "s", "b": 18446744073709551615}"#).unwrap();
        assert_eq!(
            encode(&got, &EncodeOptions::default(), 0),
            r#"{"b": 1.8446744073709552e19, "a": "s"}"#
        );
        let got = decode("[1, -2, 9223372036854775807]").unwrap();
        assert_eq!(
            encode(&got, &EncodeOptions::default(), 0),
            "[1, -2, 9223372036854775807]"
        );
    }

    #[test]
    fn decode_reports_serde_json_messages() {
        let cases = [
            ("{", "EOF while parsing an object at line 1 column 1"),
            ("{\"a\": 1,}", "trailing comma at line 1 column 9"),
            ("{\"a\": ]}", "expected value at line 1 column 7"),
            ("[}", "expected value at line 1 column 2"),
            ("1 2", "trailing characters at line 1 column 3"),
        ];
        for (text, want) in cases {
            assert_eq!(decode(text).unwrap_err(), want);
        }
    }
}
