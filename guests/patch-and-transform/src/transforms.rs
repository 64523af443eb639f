//! The `transforms[]` of patch-and-transform patches: their input schema
//! (`pt.fn.crossplane.io/v1beta1`), validation and resolution, with
//! upstream's error texts.
//!
//! Values follow the int-preserving model: integral JSON numbers are Go
//! `int64`, others `float64` (see `gofmt::GoNumber`).

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Number, Value};
use sha1::Digest as _;

use crate::gofmt::{
    GoNumber, format_float_f, format_v, go_json, go_lossy, go_type_name, quote, sprintf,
};
use crate::quantity::parse_quantity;

/// One entry of a patch's `transforms`.
///
/// `type` may be omitted when exactly one configuration block is set, as
/// legacy native Compositions do (`string: {fmt: ...}`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Transform {
    #[serde(rename = "type", default)]
    pub transform_type: String,
    pub math: Option<MathTransform>,
    pub map: Option<MapTransform>,
    #[serde(rename = "match")]
    pub match_transform: Option<MatchTransform>,
    pub string: Option<StringTransform>,
    pub convert: Option<ConvertTransform>,
}

impl Transform {
    /// The transform type, inferred from the only configuration block when
    /// `type` is absent.
    pub fn kind(&self) -> &str {
        if !self.transform_type.is_empty() {
            return &self.transform_type;
        }
        let set = [
            ("math", self.math.is_some()),
            ("map", self.map.is_some()),
            ("match", self.match_transform.is_some()),
            ("string", self.string.is_some()),
            ("convert", self.convert.is_some()),
        ];
        let mut present = set.iter().filter(|(_, is_set)| *is_set);
        match (present.next(), present.next()) {
            (Some((kind, _)), None) => kind,
            _ => "",
        }
    }
}

/// `math`: Multiply, ClampMin or ClampMax with int64 operands.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MathTransform {
    #[serde(rename = "type", default)]
    pub math_type: String,
    pub multiply: Option<i64>,
    pub clamp_min: Option<i64>,
    pub clamp_max: Option<i64>,
}

impl MathTransform {
    /// The math type; a legacy transform with only `multiply` multiplies.
    pub fn kind(&self) -> &str {
        if self.math_type.is_empty() && self.multiply.is_some() {
            return "Multiply";
        }
        &self.math_type
    }
}

/// `map`: the input string looked up in the pairs.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct MapTransform {
    pub pairs: BTreeMap<String, Value>,
}

/// `match`: the first matching pattern's result, else the fallback.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MatchTransform {
    #[serde(default)]
    pub patterns: Vec<MatchTransformPattern>,
    /// `null` stands for "not set", as with upstream's raw JSON.
    #[serde(default)]
    pub fallback_value: Value,
    #[serde(default)]
    pub fallback_to: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatchTransformPattern {
    #[serde(rename = "type", default)]
    pub pattern_type: String,
    pub literal: Option<String>,
    pub regexp: Option<String>,
    #[serde(default)]
    pub result: Value,
}

/// `string`: Format, Convert, TrimPrefix, TrimSuffix, Regexp, Join, Replace.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StringTransform {
    #[serde(rename = "type", default)]
    pub string_type: String,
    pub fmt: Option<String>,
    pub convert: Option<String>,
    pub trim: Option<String>,
    pub regexp: Option<StringTransformRegexp>,
    pub join: Option<StringTransformJoin>,
    pub replace: Option<StringTransformReplace>,
}

impl StringTransform {
    /// The string type; a legacy transform with only `fmt` formats.
    pub fn kind(&self) -> &str {
        if self.string_type.is_empty() && self.fmt.is_some() {
            return "Format";
        }
        &self.string_type
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StringTransformRegexp {
    #[serde(rename = "match", default)]
    pub match_expr: String,
    pub group: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StringTransformJoin {
    #[serde(default)]
    pub separator: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StringTransformReplace {
    #[serde(default)]
    pub search: String,
    #[serde(default)]
    pub replace: String,
}

/// `convert`: a cast to `toType`, optionally parsing a `format`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConvertTransform {
    #[serde(default)]
    pub to_type: String,
    pub format: Option<String>,
}

impl ConvertTransform {
    fn format_or_none(&self) -> &str {
        self.format.as_deref().unwrap_or("none")
    }
}

/// A transform failure, rendered exactly as upstream.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct TransformError {
    pub message: String,
}

impl TransformError {
    fn new(message: impl Into<String>) -> Self {
        TransformError {
            message: message.into(),
        }
    }
}

/// The kind of a Kubernetes `field.Error`.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldErrorKind {
    Required,
    Invalid(Value),
    NotSupported(Value),
}

/// A validation failure, rendered like Kubernetes' `field.Error`:
/// `math.multiply: Required value: must specify ...`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct TransformValidationError {
    /// The path of the offending field, relative to the transform.
    pub field: String,
    pub kind: FieldErrorKind,
    pub detail: String,
}

impl TransformValidationError {
    pub fn required(field: &str, detail: &str) -> Self {
        TransformValidationError {
            field: field.to_string(),
            kind: FieldErrorKind::Required,
            detail: detail.to_string(),
        }
    }

    pub fn invalid(field: &str, value: &str, detail: &str) -> Self {
        TransformValidationError {
            field: field.to_string(),
            kind: FieldErrorKind::Invalid(Value::String(value.to_string())),
            detail: detail.to_string(),
        }
    }

    /// Roots the field path under `prefix` (upstream's `WrapFieldError`).
    pub fn with_prefix(mut self, prefix: &str) -> Self {
        self.field = if self.field.is_empty() {
            prefix.to_string()
        } else {
            format!("{prefix}.{}", self.field)
        };
        self
    }
}

/// How `field.Error` prints a bad value: strings quoted, scalars bare.
fn field_error_value(value: &Value) -> String {
    match value {
        Value::String(s) => quote(s),
        Value::Null => "null".to_string(),
        other => format_v(other),
    }
}

impl fmt::Display for TransformValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let body = match &self.kind {
            FieldErrorKind::Required => "Required value".to_string(),
            FieldErrorKind::Invalid(v) => format!("Invalid value: {}", field_error_value(v)),
            FieldErrorKind::NotSupported(v) => {
                format!("Unsupported value: {}", field_error_value(v))
            }
        };
        write!(f, "{}: {body}", self.field)?;
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// Validates a transform before anything runs, as the function does for
/// its whole input.
pub fn validate(transform: &Transform) -> Result<(), TransformValidationError> {
    let kind = transform.kind();
    let missing = || {
        TransformValidationError::required(
            kind,
            &format!("given transform type {kind} requires configuration"),
        )
    };
    match kind {
        "math" => {
            let m = transform.math.as_ref().ok_or_else(missing)?;
            validate_math(m).map_err(|e| e.with_prefix("math"))
        }
        "map" => {
            let m = transform.map.as_ref().ok_or_else(missing)?;
            if m.pairs.is_empty() {
                return Err(TransformValidationError::required(
                    "map.pairs",
                    "at least one pair must be specified if a map transform is specified",
                ));
            }
            Ok(())
        }
        "match" => {
            let m = transform.match_transform.as_ref().ok_or_else(missing)?;
            validate_match(m).map_err(|e| e.with_prefix("match"))
        }
        "string" => {
            let s = transform.string.as_ref().ok_or_else(missing)?;
            validate_string(s).map_err(|e| e.with_prefix("string"))
        }
        "convert" => {
            let c = transform.convert.as_ref().ok_or_else(missing)?;
            validate_convert(c).map_err(|e| e.with_prefix("convert"))
        }
        other => Err(TransformValidationError::invalid(
            "type",
            other,
            "unknown transform type",
        )),
    }
}

fn validate_math(m: &MathTransform) -> Result<(), TransformValidationError> {
    let required = |field: &str, what: &str| {
        TransformValidationError::required(
            field,
            &format!("must specify a value if a {what} math transform is specified"),
        )
    };
    match m.kind() {
        "" => Err(TransformValidationError::required(
            "type",
            "math transform type is required",
        )),
        "Multiply" if m.multiply.is_none() => Err(required("multiply", "multiply")),
        "ClampMin" if m.clamp_min.is_none() => Err(required("clampMin", "clamp min")),
        "ClampMax" if m.clamp_max.is_none() => Err(required("clampMax", "clamp max")),
        "Multiply" | "ClampMin" | "ClampMax" => Ok(()),
        other => Err(TransformValidationError::invalid(
            "type",
            other,
            "unknown math transform type",
        )),
    }
}

fn validate_match(m: &MatchTransform) -> Result<(), TransformValidationError> {
    if m.patterns.is_empty() {
        return Err(TransformValidationError::required(
            "patterns",
            "at least one pattern must be specified if a match transform is specified",
        ));
    }
    for (i, p) in m.patterns.iter().enumerate() {
        let prefix = format!("patterns[{i}]");
        match p.pattern_type.as_str() {
            "literal" | "" => {
                if p.literal.is_none() {
                    return Err(TransformValidationError::required(
                        "literal",
                        "literal pattern type requires a literal",
                    )
                    .with_prefix(&prefix));
                }
            }
            "regexp" => {
                let Some(re) = &p.regexp else {
                    return Err(TransformValidationError::required(
                        "regexp",
                        "regexp pattern type requires a regexp",
                    )
                    .with_prefix(&prefix));
                };
                if compile_regexp(re).is_err() {
                    return Err(
                        TransformValidationError::invalid("regexp", re, "invalid regexp")
                            .with_prefix(&prefix),
                    );
                }
            }
            other => {
                return Err(TransformValidationError::invalid(
                    "type",
                    other,
                    "unknown pattern type",
                )
                .with_prefix(&prefix));
            }
        }
    }
    Ok(())
}

fn validate_string(s: &StringTransform) -> Result<(), TransformValidationError> {
    let required = TransformValidationError::required;
    match s.kind() {
        "" => Err(required("type", "string transform type is required")),
        "Format" if s.fmt.is_none() => Err(required("fmt", "format transform requires a format")),
        "Convert" if s.convert.is_none() => Err(required(
            "convert",
            "convert transform requires a conversion type",
        )),
        "TrimPrefix" | "TrimSuffix" if s.trim.is_none() => {
            Err(required("trim", "trim transform requires a trim value"))
        }
        "Regexp" => {
            let Some(r) = &s.regexp else {
                return Err(required("regexp", "regexp transform requires a regexp"));
            };
            if r.match_expr.is_empty() {
                return Err(required(
                    "regexp.match",
                    "regexp transform requires a match",
                ));
            }
            if compile_regexp(&r.match_expr).is_err() {
                return Err(TransformValidationError::invalid(
                    "regexp.match",
                    &r.match_expr,
                    "invalid regexp",
                ));
            }
            Ok(())
        }
        "Join" if s.join.is_none() => Err(required("join", "join transform requires a join")),
        "Replace" => match &s.replace {
            None => Err(required("replace", "replace transform requires a replace")),
            Some(r) if r.search.is_empty() => Err(required(
                "replace.search",
                "replace transform requires a search",
            )),
            Some(_) => Ok(()),
        },
        "Format" | "Convert" | "TrimPrefix" | "TrimSuffix" | "Join" => Ok(()),
        other => Err(TransformValidationError::invalid(
            "type",
            other,
            "unknown string transform type",
        )),
    }
}

const IO_TYPES: [&str; 7] = [
    "string", "bool", "int", "int64", "float64", "object", "array",
];

fn validate_convert(c: &ConvertTransform) -> Result<(), TransformValidationError> {
    let format = c.format_or_none();
    if !matches!(format, "none" | "quantity" | "json") {
        return Err(TransformValidationError::invalid(
            "format",
            format,
            "invalid format",
        ));
    }
    if !IO_TYPES.contains(&c.to_type.as_str()) {
        return Err(TransformValidationError::invalid(
            "toType",
            &c.to_type,
            "invalid type",
        ));
    }
    Ok(())
}

/// Runs the transforms in order, each on the previous one's output.
pub fn resolve_all(transforms: &[Transform], input: Value) -> Result<Value, TransformError> {
    let mut value = input;
    for (i, t) in transforms.iter().enumerate() {
        value = resolve(t, value).map_err(|e| {
            TransformError::new(format!("transform at index {i} returned error: {e}"))
        })?;
    }
    Ok(value)
}

/// Runs one transform.
pub fn resolve(transform: &Transform, input: Value) -> Result<Value, TransformError> {
    let kind = transform.kind();
    let missing = || {
        TransformError::new(format!(
            "given transform type {kind} requires configuration"
        ))
    };
    let result = match kind {
        "math" => resolve_math(transform.math.as_ref().ok_or_else(missing)?, input),
        "map" => resolve_map(transform.map.as_ref().ok_or_else(missing)?, input),
        "match" => resolve_match(
            transform.match_transform.as_ref().ok_or_else(missing)?,
            input,
        ),
        "string" => {
            resolve_string(transform.string.as_ref().ok_or_else(missing)?, input).map(Value::String)
        }
        "convert" => resolve_convert(transform.convert.as_ref().ok_or_else(missing)?, input),
        other => {
            return Err(TransformError::new(format!(
                "transform type {other} is not supported"
            )));
        }
    };
    result.map_err(|inner| {
        TransformError::new(format!("{kind} transform could not resolve: {inner}"))
    })
}

/// A float64 result as a JSON value. Go would carry NaN and ±Inf on and fail
/// when marshalling them; they cannot exist in a JSON value, so fail here
/// with the marshalling error.
fn float_value(f: f64) -> Result<Value, String> {
    Number::from_f64(f).map(Value::Number).ok_or_else(|| {
        let shown = if f.is_nan() {
            "NaN"
        } else if f > 0.0 {
            "+Inf"
        } else {
            "-Inf"
        };
        format!("json: unsupported value: {shown}")
    })
}

fn number_of(value: &Value) -> Option<GoNumber> {
    match value {
        Value::Number(n) => Some(GoNumber::of(n)),
        _ => None,
    }
}

fn resolve_math(m: &MathTransform, input: Value) -> Result<Value, String> {
    validate_math(m).map_err(|e| e.to_string())?;
    let Some(n) = number_of(&input) else {
        return Err(format!(
            "input is required to be a number for math transformer, got {}",
            go_type_name(&input)
        ));
    };
    // Validation guarantees the operand of the selected type is set.
    let operand = |v: Option<i64>| {
        v.ok_or_else(|| format!("type {} is not supported for math transform type", m.kind()))
    };
    match m.kind() {
        "Multiply" => {
            let factor = operand(m.multiply)?;
            match n {
                GoNumber::Int(i) => Ok(Value::from(i.wrapping_mul(factor))),
                GoNumber::Float(f) => float_value(f * factor as f64),
            }
        }
        kind => {
            // Upstream compares the input truncated to int64, and returns
            // the untouched input when the clamp does not apply.
            let truncated = match n {
                GoNumber::Int(i) => i,
                GoNumber::Float(f) => f as i64,
            };
            let (bound, clamps) = if kind == "ClampMin" {
                let min = operand(m.clamp_min)?;
                (min, truncated < min)
            } else {
                let max = operand(m.clamp_max)?;
                (max, truncated > max)
            };
            Ok(if clamps { Value::from(bound) } else { input })
        }
    }
}

fn resolve_map(m: &MapTransform, input: Value) -> Result<Value, String> {
    let Value::String(key) = &input else {
        return Err(format!(
            "type {} is not supported for map transform",
            go_type_name(&input)
        ));
    };
    match m.pairs.get(key) {
        None => Err(format!("key {key} is not found in map")),
        // A null value is upstream's empty raw JSON, which fails to decode.
        Some(Value::Null) => Err(format!(
            "value for key {key} is not valid JSON: unexpected end of JSON input"
        )),
        Some(v) => Ok(v.clone()),
    }
}

fn resolve_match(m: &MatchTransform, input: Value) -> Result<Value, String> {
    for (i, p) in m.patterns.iter().enumerate() {
        let matched = pattern_matches(p, &input)
            .map_err(|e| format!("cannot match pattern at index {i}: {e}"))?;
        if matched {
            return Ok(p.result.clone());
        }
    }
    if m.fallback_to == "Input" {
        if !m.fallback_value.is_null() {
            return Err(
                "cannot set both a fallback value and the fallback to input flag".to_string(),
            );
        }
        return Ok(input);
    }
    Ok(m.fallback_value.clone())
}

fn pattern_matches(p: &MatchTransformPattern, input: &Value) -> Result<bool, String> {
    match p.pattern_type.as_str() {
        "literal" => {
            let literal = p
                .literal
                .as_ref()
                .ok_or("literal is required by type literal")?;
            let Value::String(s) = input else {
                return Err(format!("unsupported input type '{}'", go_type_name(input)));
            };
            Ok(s == literal)
        }
        "regexp" => {
            let re = p
                .regexp
                .as_ref()
                .ok_or("regexp is required by type regexp")?;
            let re = compile_regexp(re).map_err(|e| format!("cannot compile regexp: {e}"))?;
            match input {
                Value::Null => Err("unsupported input type 'null'".to_string()),
                Value::String(s) => Ok(re.is_match(s)),
                other => Err(format!("unsupported input type '{}'", go_type_name(other))),
            }
        }
        other => Err(format!("unsupported pattern type '{other}'")),
    }
}

fn resolve_string(s: &StringTransform, input: Value) -> Result<String, String> {
    let kind = s.kind();
    let not_set = |what: &str| format!("string transform of type {kind} {what} is not set");
    match kind {
        "Format" => {
            let f = s.fmt.as_ref().ok_or_else(|| not_set("fmt"))?;
            Ok(sprintf(f, std::slice::from_ref(&input)))
        }
        "Convert" => {
            let c = s.convert.as_ref().ok_or_else(|| not_set("convert"))?;
            string_convert(c, &input)
        }
        "TrimPrefix" | "TrimSuffix" => {
            let trim = s.trim.as_ref().ok_or_else(|| not_set("trim"))?;
            let v = format_v(&input);
            let trimmed = if kind == "TrimPrefix" {
                v.strip_prefix(trim.as_str())
            } else {
                v.strip_suffix(trim.as_str())
            };
            Ok(trimmed.map_or_else(|| v.clone(), str::to_string))
        }
        "Regexp" => {
            let r = s.regexp.as_ref().ok_or_else(|| not_set("regexp"))?;
            string_regexp(r, &input)
        }
        "Join" => {
            let j = s.join.as_ref().ok_or_else(|| not_set("join"))?;
            string_join(j, &input)
        }
        "Replace" => {
            let r = s.replace.as_ref().ok_or_else(|| not_set("replace"))?;
            Ok(format_v(&input).replace(&r.search, &r.replace))
        }
        other => Err(format!(
            "type {other} is not supported for string transform type"
        )),
    }
}

/// The bytes upstream hashes: a string's own bytes, anything else's JSON.
fn hash_input(input: &Value) -> Vec<u8> {
    match input {
        Value::String(s) => s.as_bytes().to_vec(),
        other => go_json(other).into_bytes(),
    }
}

fn string_convert(conversion: &str, input: &Value) -> Result<String, String> {
    let s = format_v(input);
    match conversion {
        "ToUpper" => Ok(map_chars(&s, |c| c.to_uppercase())),
        "ToLower" => Ok(map_chars(&s, |c| c.to_lowercase())),
        "ToJson" => Ok(go_json(input)),
        "ToBase64" => Ok(base64::engine::general_purpose::STANDARD.encode(s.as_bytes())),
        "FromBase64" => go_base64_decode(s.as_bytes())
            .map(|bytes| go_lossy(&bytes))
            .map_err(|pos| {
                format!("string is not valid base64: illegal base64 data at input byte {pos}")
            }),
        "ToSha1" => Ok(hex::encode(sha1::Sha1::digest(hash_input(input)))),
        "ToSha256" => Ok(hex::encode(sha2::Sha256::digest(hash_input(input)))),
        "ToSha512" => Ok(hex::encode(sha2::Sha512::digest(hash_input(input)))),
        "ToAdler32" => Ok(adler32(&hash_input(input)).to_string()),
        other => Err(format!("type {other} is not supported for string convert")),
    }
}

/// Go's `strings.ToUpper`/`ToLower` map each rune to one rune; where
/// Unicode's full mapping has several (`ß` to `SS`), Go keeps the rune.
fn map_chars<I: Iterator<Item = char>>(s: &str, f: impl Fn(char) -> I) -> String {
    s.chars()
        .map(|c| {
            let mut mapped = f(c);
            match (mapped.next(), mapped.next()) {
                (Some(m), None) => m,
                _ => c,
            }
        })
        .collect()
}

fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &byte in chunk {
            a += u32::from(byte);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

/// Go's `base64.StdEncoding.DecodeString`: padding required, `\r` and `\n`
/// skipped, non-zero trailing bits tolerated. The error is the offset of the
/// first illegal byte.
fn go_base64_decode(src: &[u8]) -> Result<Vec<u8>, usize> {
    fn decode_char(c: u8) -> Option<u8> {
        match c {
            b'A'..=b'Z' => Some(c - b'A'),
            b'a'..=b'z' => Some(c - b'a' + 26),
            b'0'..=b'9' => Some(c - b'0' + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    }
    let is_newline = |c: u8| c == b'\n' || c == b'\r';
    let mut out = Vec::new();
    let mut si = 0;
    loop {
        let mut dbuf = [0u8; 4];
        let mut dlen = 4;
        let mut j = 0;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(out);
                }
                return Err(si - j);
            }
            let c = src[si];
            si += 1;
            if let Some(v) = decode_char(c) {
                dbuf[j] = v;
                j += 1;
                continue;
            }
            if is_newline(c) {
                continue;
            }
            if c != b'=' {
                return Err(si - 1);
            }
            // Padding: only valid as the third or fourth character.
            match j {
                0 | 1 => return Err(si - 1),
                2 => {
                    while si < src.len() && is_newline(src[si]) {
                        si += 1;
                    }
                    if si == src.len() {
                        return Err(src.len());
                    }
                    if src[si] != b'=' {
                        return Err(si - 1);
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < src.len() && is_newline(src[si]) {
                si += 1;
            }
            if si < src.len() {
                return Err(si);
            }
            dlen = j;
            break;
        }
        let val = (u32::from(dbuf[0]) << 18)
            | (u32::from(dbuf[1]) << 12)
            | (u32::from(dbuf[2]) << 6)
            | u32::from(dbuf[3]);
        let bytes = [(val >> 16) as u8, (val >> 8) as u8, val as u8];
        out.extend_from_slice(&bytes[..dlen - 1]);
        if dlen < 4 {
            return Ok(out);
        }
    }
}

fn string_regexp(r: &StringTransformRegexp, input: &Value) -> Result<String, String> {
    let re = compile_regexp(&r.match_expr).map_err(|e| format!("could not compile regexp: {e}"))?;
    let group = r.group.unwrap_or(0);
    let no_match = || {
        format!(
            "regexp {} had no matches for group {group}",
            quote(&r.match_expr)
        )
    };
    let haystack = format_v(input);
    let captures = re.captures(&haystack).ok_or_else(no_match)?;
    // A negative group would crash upstream; it simply matches nothing here.
    let index = usize::try_from(group).map_err(|_| no_match())?;
    if index >= captures.len() {
        return Err(no_match());
    }
    Ok(captures.get(index).map_or("", |m| m.as_str()).to_string())
}

/// Joins the `%v` of each element. Upstream appends the separator after
/// every element and then drops the last *byte*: `", "` yields `a, b,` and a
/// multi-byte separator leaves a broken UTF-8 tail (shown as U+FFFD, as Go's
/// JSON encoder writes it). Reproduced on purpose, per the reference digest.
fn string_join(j: &StringTransformJoin, input: &Value) -> Result<String, String> {
    let Value::Array(items) = input else {
        return Err("could not parse input array".to_string());
    };
    let mut bytes = Vec::new();
    for item in items {
        bytes.extend_from_slice(format_v(item).as_bytes());
        bytes.extend_from_slice(j.separator.as_bytes());
    }
    if !j.separator.is_empty() {
        bytes.pop();
    }
    Ok(go_lossy(&bytes))
}

fn parse_error(func: &str, input: &str, what: &str) -> String {
    format!("strconv.{func}: parsing {}: {what}", quote(input))
}

/// Go's `strconv.ParseInt(s, 10, 64)`.
fn go_parse_int(s: &str) -> Result<i64, String> {
    s.parse::<i64>().map_err(|e| {
        let what = match e.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                "value out of range"
            }
            _ => "invalid syntax",
        };
        parse_error("ParseInt", s, what)
    })
}

/// Go's `strconv.ParseBool`.
fn go_parse_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(parse_error("ParseBool", s, "invalid syntax")),
    }
}

/// Go's `strconv.ParseFloat(s, 64)`, except hexadecimal floats and
/// underscores, which Go accepts and this rejects as invalid syntax.
fn go_parse_float(s: &str) -> Result<f64, String> {
    let f: f64 = s
        .parse()
        .map_err(|_| parse_error("ParseFloat", s, "invalid syntax"))?;
    let unsigned = s.trim_start_matches(['+', '-']).to_ascii_lowercase();
    if f.is_infinite() && unsigned != "inf" && unsigned != "infinity" {
        return Err(parse_error("ParseFloat", s, "value out of range"));
    }
    Ok(f)
}

/// Go's `json.Unmarshal` error texts for the common failures.
fn go_json_error(e: &serde_json::Error) -> String {
    if e.is_eof() {
        "unexpected end of JSON input".to_string()
    } else {
        e.to_string()
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn resolve_convert(c: &ConvertTransform, input: Value) -> Result<Value, String> {
    validate_convert(c).map_err(|e| e.to_string())?;
    let from = go_type_name(&input);
    if !IO_TYPES.contains(&from) {
        return Err(format!("invalid input type {from}"));
    }
    let to = if c.to_type == "int" {
        "int64"
    } else {
        c.to_type.as_str()
    };
    if from == to {
        return Ok(input);
    }
    let format = c.format_or_none();
    let unsupported =
        || format!("conversion from {from} to {to} is not supported with format {format}");
    match (&input, to, format) {
        (Value::String(s), "int64", "none") => go_parse_int(s).map(Value::from),
        (Value::String(s), "bool", "none") => go_parse_bool(s).map(Value::from),
        (Value::String(s), "float64", "none") => float_value(go_parse_float(s)?),
        (Value::String(s), "float64", "quantity") => float_value(parse_quantity(s)?),
        (Value::String(s), "object" | "array", "json") => {
            let parsed: Value = serde_json::from_str(s).map_err(|e| go_json_error(&e))?;
            let (want, go_type) = if to == "object" {
                (parsed.is_object(), "map[string]interface {}")
            } else {
                (parsed.is_array(), "[]interface {}")
            };
            if want || parsed.is_null() {
                Ok(parsed)
            } else {
                Err(format!(
                    "json: cannot unmarshal {} into Go value of type {go_type}",
                    json_kind(&parsed)
                ))
            }
        }
        (Value::Number(n), _, "none") => match (GoNumber::of(n), to) {
            (GoNumber::Int(i), "string") => Ok(Value::String(i.to_string())),
            (GoNumber::Int(i), "bool") => Ok(Value::Bool(i == 1)),
            (GoNumber::Int(i), "float64") => float_value(i as f64),
            (GoNumber::Float(f), "string") => Ok(Value::String(format_float_f(f))),
            (GoNumber::Float(f), "int64") => Ok(Value::from(f as i64)),
            (GoNumber::Float(f), "bool") => Ok(Value::Bool(f == 1.0)),
            _ => Err(unsupported()),
        },
        (Value::Bool(b), "string", "none") => Ok(Value::String(b.to_string())),
        (Value::Bool(b), "int64", "none") => Ok(Value::from(i64::from(*b))),
        (Value::Bool(b), "float64", "none") => float_value(if *b { 1.0 } else { 0.0 }),
        _ => Err(unsupported()),
    }
}

/// Compiles a Go (RE2) regular expression. Failures read like Go's
/// `error parsing regexp: <code>: `<fragment>``.
fn compile_regexp(pattern: &str) -> Result<regex::Regex, String> {
    if let Err(e) = regex_syntax::ast::parse::Parser::new().parse(pattern) {
        return Err(go_regexp_error(pattern, &e));
    }
    regex::Regex::new(pattern).map_err(|e| format!("error parsing regexp: {e}"))
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
        K::RepetitionMissing => ("missing argument to repetition operator", spanned),
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
