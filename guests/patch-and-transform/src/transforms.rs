//! The `transforms[]` of patch-and-transform patches: their input schema
//! (`pt.fn.crossplane.io/v1beta1`), validation and resolution, with
//! upstream's error texts.
//!
//! Values follow the int-preserving model: integral JSON numbers are Go
//! `int64`, others `float64` (see `plait_go_compat::value::GoNumber`).

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Number, Value};
use sha1::Digest as _;

use crate::quantity::parse_quantity;
use plait_go_compat::field::{Error as FieldError, Path};
use plait_go_compat::float::format_float_f;
use plait_go_compat::json::{go_json, go_lossy};
use plait_go_compat::printf::{format_v, sprintf};
use plait_go_compat::strconv::quote;
use plait_go_compat::value::{GoNumber, go_type_name};

/// One entry of a patch's `transforms`.
///
/// `type` may be omitted when exactly one configuration block is set, as
/// legacy native Compositions do (`string: {fmt: ...}`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
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
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
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
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
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
#[serde(remote = "Self", deny_unknown_fields)]
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
#[serde(remote = "Self", deny_unknown_fields)]
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
#[serde(remote = "Self", deny_unknown_fields)]
pub struct StringTransformRegexp {
    #[serde(rename = "match", default)]
    pub match_expr: String,
    pub group: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct StringTransformJoin {
    #[serde(default)]
    pub separator: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct StringTransformReplace {
    #[serde(default)]
    pub search: String,
    #[serde(default)]
    pub replace: String,
}

/// `convert`: a cast to `toType`, optionally parsing a `format`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
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

/// Validates a transform before anything runs, as the function does for
/// its whole input.
pub fn validate(transform: &Transform) -> Result<(), FieldError> {
    let kind = transform.kind();
    let missing = || {
        FieldError::required(
            Path::new(kind),
            format!("given transform type {kind} requires configuration"),
        )
    };
    match kind {
        "math" => {
            let m = transform.math.as_ref().ok_or_else(missing)?;
            validate_math(m).map_err(|e| e.under(&Path::new("math")))
        }
        "map" => {
            let m = transform.map.as_ref().ok_or_else(missing)?;
            if m.pairs.is_empty() {
                return Err(FieldError::required(
                    Path::new("map").child("pairs"),
                    "at least one pair must be specified if a map transform is specified",
                ));
            }
            Ok(())
        }
        "match" => {
            let m = transform.match_transform.as_ref().ok_or_else(missing)?;
            validate_match(m).map_err(|e| e.under(&Path::new("match")))
        }
        "string" => {
            let s = transform.string.as_ref().ok_or_else(missing)?;
            validate_string(s).map_err(|e| e.under(&Path::new("string")))
        }
        "convert" => {
            let c = transform.convert.as_ref().ok_or_else(missing)?;
            validate_convert(c).map_err(|e| e.under(&Path::new("convert")))
        }
        other => Err(FieldError::invalid(
            Path::new("type"),
            other,
            "unknown transform type",
        )),
    }
}

fn validate_math(m: &MathTransform) -> Result<(), FieldError> {
    let required = |field: &str, what: &str| {
        FieldError::required(
            Path::new(field),
            format!("must specify a value if a {what} math transform is specified"),
        )
    };
    match m.kind() {
        "" => Err(FieldError::required(
            Path::new("type"),
            "math transform type is required",
        )),
        "Multiply" if m.multiply.is_none() => Err(required("multiply", "multiply")),
        "ClampMin" if m.clamp_min.is_none() => Err(required("clampMin", "clamp min")),
        "ClampMax" if m.clamp_max.is_none() => Err(required("clampMax", "clamp max")),
        "Multiply" | "ClampMin" | "ClampMax" => Ok(()),
        other => Err(FieldError::invalid(
            Path::new("type"),
            other,
            "unknown math transform type",
        )),
    }
}

fn validate_match(m: &MatchTransform) -> Result<(), FieldError> {
    if m.patterns.is_empty() {
        return Err(FieldError::required(
            Path::new("patterns"),
            "at least one pattern must be specified if a match transform is specified",
        ));
    }
    for (i, p) in m.patterns.iter().enumerate() {
        let prefix = Path::new("patterns").index(i);
        match p.pattern_type.as_str() {
            "literal" | "" => {
                if p.literal.is_none() {
                    return Err(FieldError::required(
                        Path::new("literal"),
                        "literal pattern type requires a literal",
                    )
                    .under(&prefix));
                }
            }
            "regexp" => {
                let Some(re) = &p.regexp else {
                    return Err(FieldError::required(
                        Path::new("regexp"),
                        "regexp pattern type requires a regexp",
                    )
                    .under(&prefix));
                };
                if compile_regexp(re).is_err() {
                    return Err(FieldError::invalid(
                        Path::new("regexp"),
                        re.as_str(),
                        "invalid regexp",
                    )
                    .under(&prefix));
                }
            }
            other => {
                return Err(
                    FieldError::invalid(Path::new("type"), other, "unknown pattern type")
                        .under(&prefix),
                );
            }
        }
    }
    Ok(())
}

fn validate_string(s: &StringTransform) -> Result<(), FieldError> {
    match s.kind() {
        "" => Err(FieldError::required(
            Path::new("type"),
            "string transform type is required",
        )),
        "Format" if s.fmt.is_none() => Err(FieldError::required(
            Path::new("fmt"),
            "format transform requires a format",
        )),
        "Convert" if s.convert.is_none() => Err(FieldError::required(
            Path::new("convert"),
            "convert transform requires a conversion type",
        )),
        "TrimPrefix" | "TrimSuffix" if s.trim.is_none() => Err(FieldError::required(
            Path::new("trim"),
            "trim transform requires a trim value",
        )),
        "Regexp" => {
            let Some(r) = &s.regexp else {
                return Err(FieldError::required(
                    Path::new("regexp"),
                    "regexp transform requires a regexp",
                ));
            };
            if r.match_expr.is_empty() {
                return Err(FieldError::required(
                    Path::new("regexp").child("match"),
                    "regexp transform requires a match",
                ));
            }
            if compile_regexp(&r.match_expr).is_err() {
                return Err(FieldError::invalid(
                    Path::new("regexp").child("match"),
                    r.match_expr.as_str(),
                    "invalid regexp",
                ));
            }
            Ok(())
        }
        "Join" if s.join.is_none() => Err(FieldError::required(
            Path::new("join"),
            "join transform requires a join",
        )),
        "Replace" => match &s.replace {
            None => Err(FieldError::required(
                Path::new("replace"),
                "replace transform requires a replace",
            )),
            Some(r) if r.search.is_empty() => Err(FieldError::required(
                Path::new("replace").child("search"),
                "replace transform requires a search",
            )),
            Some(_) => Ok(()),
        },
        "Format" | "Convert" | "TrimPrefix" | "TrimSuffix" | "Join" => Ok(()),
        other => Err(FieldError::invalid(
            Path::new("type"),
            other,
            "unknown string transform type",
        )),
    }
}

const IO_TYPES: [&str; 7] = [
    "string", "bool", "int", "int64", "float64", "object", "array",
];

fn validate_convert(c: &ConvertTransform) -> Result<(), FieldError> {
    let format = c.format_or_none();
    if !matches!(format, "none" | "quantity" | "json") {
        return Err(FieldError::invalid(
            Path::new("format"),
            format,
            "invalid format",
        ));
    }
    if !IO_TYPES.contains(&c.to_type.as_str()) {
        return Err(FieldError::invalid(
            Path::new("toType"),
            c.to_type.as_str(),
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

plait_go_compat::deserialize_from_objects_only!(
    Transform,
    MathTransform,
    MatchTransform,
    MatchTransformPattern,
    StringTransform,
    StringTransformRegexp,
    StringTransformJoin,
    StringTransformReplace,
    ConvertTransform,
);

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use plait_go_compat::field::ErrorKind;
    use serde_json::json;

    fn transform(v: Value) -> Transform {
        serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"))
    }

    type Want = Result<Value, &'static str>;

    fn check(cases: Vec<(&str, Value, Value, Want)>) {
        for (rule, t, input, want) in cases {
            let got = resolve(&transform(t), input);
            match want {
                Ok(w) => assert_eq!(got, Ok(w), "{rule}"),
                Err(msg) => assert_eq!(got.map_err(|e| e.message), Err(msg.to_string()), "{rule}"),
            }
        }
    }

    #[test]
    fn map_transform() {
        let t = json!({"type": "map", "map": {"us-east": "use1", "a.b": 2, "n": null, "obj": {"k": [1]}}});
        check(vec![
            ("maps a key", t.clone(), json!("us-east"), Ok(json!("use1"))),
            (
                "keys may contain dots",
                t.clone(),
                json!("a.b"),
                Ok(json!(2)),
            ),
            (
                "values may be objects",
                t.clone(),
                json!("obj"),
                Ok(json!({"k": [1]})),
            ),
            (
                "lookup is case-sensitive",
                t.clone(),
                json!("US-EAST"),
                Err("map transform could not resolve: key US-EAST is not found in map"),
            ),
            (
                "null value is invalid JSON",
                t.clone(),
                json!("n"),
                Err(
                    "map transform could not resolve: value for key n is not valid JSON: unexpected end of JSON input",
                ),
            ),
            (
                "int input",
                t.clone(),
                json!(3),
                Err(
                    "map transform could not resolve: type int64 is not supported for map transform",
                ),
            ),
            (
                "float input",
                t.clone(),
                json!(3.5),
                Err(
                    "map transform could not resolve: type float64 is not supported for map transform",
                ),
            ),
            (
                "bool input",
                t.clone(),
                json!(true),
                Err(
                    "map transform could not resolve: type bool is not supported for map transform",
                ),
            ),
            (
                "null input",
                t.clone(),
                Value::Null,
                Err(
                    "map transform could not resolve: type <nil> is not supported for map transform",
                ),
            ),
            (
                "missing config",
                json!({"type": "map"}),
                json!("x"),
                Err("given transform type map requires configuration"),
            ),
        ]);
    }

    #[test]
    fn match_transform() {
        let lit = json!({"type": "match", "match": {"patterns": [
            {"type": "literal", "literal": "a", "result": 1},
            {"type": "regexp", "regexp": "^b.*", "result": {"x": true}},
            {"type": "literal", "literal": "c"},
        ], "fallbackValue": "fb"}});
        check(vec![
            (
                "literal match returns result",
                lit.clone(),
                json!("a"),
                Ok(json!(1)),
            ),
            (
                "regexp match",
                lit.clone(),
                json!("banana"),
                Ok(json!({"x": true})),
            ),
            (
                "absent result is null",
                lit.clone(),
                json!("c"),
                Ok(Value::Null),
            ),
            (
                "literal is case-sensitive, falls back",
                lit.clone(),
                json!("A"),
                Ok(json!("fb")),
            ),
            (
                "non-string input errors at first pattern",
                lit.clone(),
                json!(5.0),
                Err(
                    "match transform could not resolve: cannot match pattern at index 0: unsupported input type 'float64'",
                ),
            ),
            (
                "null input at a literal pattern",
                lit.clone(),
                Value::Null,
                Err(
                    "match transform could not resolve: cannot match pattern at index 0: unsupported input type '<nil>'",
                ),
            ),
            (
                "null input at a regexp pattern",
                json!({"type": "match", "match": {"patterns": [{"type": "regexp", "regexp": ".*", "result": 1}]}}),
                Value::Null,
                Err(
                    "match transform could not resolve: cannot match pattern at index 0: unsupported input type 'null'",
                ),
            ),
            (
                "regexp is unanchored",
                json!({"type": "match", "match": {"patterns": [{"type": "regexp", "regexp": "an", "result": 1}]}}),
                json!("banana"),
                Ok(json!(1)),
            ),
            (
                "first matching pattern wins",
                json!({"type": "match", "match": {"patterns": [
                    {"type": "regexp", "regexp": ".*", "result": "first"},
                    {"type": "literal", "literal": "x", "result": "second"},
                ]}}),
                json!("x"),
                Ok(json!("first")),
            ),
            (
                "no match, no fallback is null",
                json!({"type": "match", "match": {"patterns": [{"type": "literal", "literal": "x", "result": 1}]}}),
                json!("y"),
                Ok(Value::Null),
            ),
            (
                "fallbackTo Input returns input",
                json!({"type": "match", "match": {"patterns": [{"type": "literal", "literal": "x", "result": 1}], "fallbackTo": "Input"}}),
                json!("y"),
                Ok(json!("y")),
            ),
            (
                "fallbackTo Input with fallbackValue",
                json!({"type": "match", "match": {"patterns": [{"type": "literal", "literal": "x", "result": 1}], "fallbackTo": "Input", "fallbackValue": ""}}),
                json!("y"),
                Err(
                    "match transform could not resolve: cannot set both a fallback value and the fallback to input flag",
                ),
            ),
            (
                "fallbackTo Input with null fallbackValue",
                json!({"type": "match", "match": {"patterns": [{"type": "literal", "literal": "x", "result": 1}], "fallbackTo": "Input", "fallbackValue": null}}),
                json!("y"),
                Ok(json!("y")),
            ),
            (
                "unknown fallbackTo behaves like Value",
                json!({"type": "match", "match": {"patterns": [{"type": "literal", "literal": "x", "result": 1}], "fallbackTo": "Other", "fallbackValue": 7}}),
                json!("y"),
                Ok(json!(7)),
            ),
            (
                "empty pattern type errors at runtime",
                json!({"type": "match", "match": {"patterns": [{"literal": "x", "result": 1}]}}),
                json!("x"),
                Err(
                    "match transform could not resolve: cannot match pattern at index 0: unsupported pattern type ''",
                ),
            ),
            (
                "literal pattern without literal",
                json!({"type": "match", "match": {"patterns": [{"type": "literal", "result": 1}]}}),
                json!("x"),
                Err(
                    "match transform could not resolve: cannot match pattern at index 0: literal is required by type literal",
                ),
            ),
            (
                "regexp pattern without regexp",
                json!({"type": "match", "match": {"patterns": [{"type": "regexp", "result": 1}]}}),
                json!("x"),
                Err(
                    "match transform could not resolve: cannot match pattern at index 0: regexp is required by type regexp",
                ),
            ),
            (
                "regexp compile failure",
                json!({"type": "match", "match": {"patterns": [{"type": "regexp", "regexp": "(", "result": 1}]}}),
                json!("x"),
                Err(
                    "match transform could not resolve: cannot match pattern at index 0: cannot compile regexp: error parsing regexp: missing closing ): `(`",
                ),
            ),
            (
                "no patterns falls back",
                json!({"type": "match", "match": {"fallbackValue": [1]}}),
                json!("x"),
                Ok(json!([1])),
            ),
        ]);
    }

    #[test]
    fn math_transform() {
        let mul = |m: i64| json!({"type": "math", "math": {"type": "Multiply", "multiply": m}});
        check(vec![
            ("multiply int stays int", mul(2), json!(3), Ok(json!(6))),
            (
                "multiply float stays float",
                mul(3),
                json!(0.1),
                Ok(json!(0.30000000000000004)),
            ),
            (
                "multiply integral float stays float",
                mul(2),
                json!(1.5),
                Ok(json!(3.0)),
            ),
            (
                "multiply int wraps like Go",
                mul(2),
                json!(i64::MAX),
                Ok(json!(-2)),
            ),
            (
                "legacy multiply without type",
                json!({"type": "math", "math": {"multiply": 2}}),
                json!(4),
                Ok(json!(8)),
            ),
            (
                "legacy math without transform type",
                json!({"math": {"multiply": 2}}),
                json!(4),
                Ok(json!(8)),
            ),
            (
                "multiply string input",
                mul(2),
                json!("3"),
                Err(
                    "math transform could not resolve: input is required to be a number for math transformer, got string",
                ),
            ),
            (
                "multiply bool input",
                mul(2),
                json!(true),
                Err(
                    "math transform could not resolve: input is required to be a number for math transformer, got bool",
                ),
            ),
            (
                "multiply null input",
                mul(2),
                Value::Null,
                Err(
                    "math transform could not resolve: input is required to be a number for math transformer, got <nil>",
                ),
            ),
            (
                "clampMin raises",
                json!({"type": "math", "math": {"type": "ClampMin", "clampMin": 5}}),
                json!(4.9),
                Ok(json!(5)),
            ),
            (
                "clampMin keeps larger",
                json!({"type": "math", "math": {"type": "ClampMin", "clampMin": 5}}),
                json!(7),
                Ok(json!(7)),
            ),
            (
                "clampMin compares truncated input",
                json!({"type": "math", "math": {"type": "ClampMin", "clampMin": -1}}),
                json!(-1.5),
                Ok(json!(-1.5)),
            ),
            (
                "clampMax compares truncated input",
                json!({"type": "math", "math": {"type": "ClampMax", "clampMax": 5}}),
                json!(5.5),
                Ok(json!(5.5)),
            ),
            (
                "clampMax lowers",
                json!({"type": "math", "math": {"type": "ClampMax", "clampMax": 5}}),
                json!(6),
                Ok(json!(5)),
            ),
            (
                "missing math type",
                json!({"type": "math", "math": {"clampMin": 1}}),
                json!(1),
                Err(
                    "math transform could not resolve: type: Required value: math transform type is required",
                ),
            ),
            (
                "unknown math type",
                json!({"type": "math", "math": {"type": "Divide"}}),
                json!(1),
                Err(
                    "math transform could not resolve: type: Invalid value: \"Divide\": unknown math transform type",
                ),
            ),
            (
                "multiply without value",
                json!({"type": "math", "math": {"type": "Multiply"}}),
                json!(1),
                Err(
                    "math transform could not resolve: multiply: Required value: must specify a value if a multiply math transform is specified",
                ),
            ),
            (
                "clampMin without value",
                json!({"type": "math", "math": {"type": "ClampMin"}}),
                json!(1),
                Err(
                    "math transform could not resolve: clampMin: Required value: must specify a value if a clamp min math transform is specified",
                ),
            ),
            (
                "clampMax without value",
                json!({"type": "math", "math": {"type": "ClampMax"}}),
                json!(1),
                Err(
                    "math transform could not resolve: clampMax: Required value: must specify a value if a clamp max math transform is specified",
                ),
            ),
            (
                "float overflow cannot be JSON",
                mul(10),
                json!(1e308),
                Err("math transform could not resolve: json: unsupported value: +Inf"),
            ),
        ]);
    }

    #[test]
    fn string_transform() {
        let fmt = |f: &str| json!({"type": "string", "string": {"type": "Format", "fmt": f}});
        let conv = |c: &str| json!({"type": "string", "string": {"type": "Convert", "convert": c}});
        check(vec![
            ("format", fmt("db-%s"), json!("x"), Ok(json!("db-x"))),
            ("format %d on int", fmt("%d"), json!(3), Ok(json!("3"))),
            (
                "format %d on float",
                fmt("%d"),
                json!(3.0),
                Ok(json!("%!d(float64=3)")),
            ),
            (
                "format without verb",
                fmt("static"),
                json!("x"),
                Ok(json!("static%!(EXTRA string=x)")),
            ),
            (
                "format explicit index",
                fmt("%[1]s-%[1]s"),
                json!("a"),
                Ok(json!("a-a")),
            ),
            (
                "legacy fmt without types",
                json!({"string": {"fmt": "%s-x"}}),
                json!("a"),
                Ok(json!("a-x")),
            ),
            (
                "legacy fmt without string type",
                json!({"type": "string", "string": {"fmt": "%s!"}}),
                json!("a"),
                Ok(json!("a!")),
            ),
            ("upper", conv("ToUpper"), json!("abc"), Ok(json!("ABC"))),
            (
                "upper on a map",
                conv("ToUpper"),
                json!({"a": "b"}),
                Ok(json!("MAP[A:B]")),
            ),
            (
                "upper keeps ß like Go",
                conv("ToUpper"),
                json!("straße"),
                Ok(json!("STRAßE")),
            ),
            (
                "lower unicode",
                conv("ToLower"),
                json!("ÄBC"),
                Ok(json!("äbc")),
            ),
            ("base64", conv("ToBase64"), json!("hi"), Ok(json!("aGk="))),
            (
                "base64 of null",
                conv("ToBase64"),
                Value::Null,
                Ok(json!("PG5pbD4=")),
            ),
            (
                "from base64",
                conv("FromBase64"),
                json!("aGk="),
                Ok(json!("hi")),
            ),
            (
                "from base64 skips newlines",
                conv("FromBase64"),
                json!("aG\nk="),
                Ok(json!("hi")),
            ),
            (
                "from base64 unpadded",
                conv("FromBase64"),
                json!("aGk"),
                Err(
                    "string transform could not resolve: string is not valid base64: illegal base64 data at input byte 0",
                ),
            ),
            (
                "from base64 bad char",
                conv("FromBase64"),
                json!("a!k="),
                Err(
                    "string transform could not resolve: string is not valid base64: illegal base64 data at input byte 1",
                ),
            ),
            (
                "from base64 trailing garbage",
                conv("FromBase64"),
                json!("aGk=x"),
                Err(
                    "string transform could not resolve: string is not valid base64: illegal base64 data at input byte 4",
                ),
            ),
            (
                "from base64 missing second pad",
                conv("FromBase64"),
                json!("aA="),
                Err(
                    "string transform could not resolve: string is not valid base64: illegal base64 data at input byte 3",
                ),
            ),
            (
                "to json map",
                conv("ToJson"),
                json!({"b": "<x>", "a": 3.0}),
                Ok(json!("{\"a\":3,\"b\":\"\\u003cx\\u003e\"}")),
            ),
            (
                "to json large float",
                conv("ToJson"),
                json!(1e21),
                Ok(json!("1e+21")),
            ),
            (
                "to json small float",
                conv("ToJson"),
                json!(1e-7),
                Ok(json!("1e-7")),
            ),
            (
                "sha1 of string",
                conv("ToSha1"),
                json!("hi"),
                Ok(json!("c22b5f9178342609428d6f51b2c5af4c0bde6a42")),
            ),
            (
                "sha256 of string",
                conv("ToSha256"),
                json!("hi"),
                Ok(json!(
                    "8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4"
                )),
            ),
            (
                "sha256 of number hashes its JSON",
                conv("ToSha256"),
                json!(1234),
                Ok(json!(
                    "03ac674216f3e15c761ee1a5e255f067953623c8b388b4459e13f978d7c846f4"
                )),
            ),
            (
                "sha512 of empty",
                conv("ToSha512"),
                json!(""),
                Ok(json!(
                    "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"
                )),
            ),
            (
                "adler32 of empty",
                conv("ToAdler32"),
                json!(""),
                Ok(json!("1")),
            ),
            (
                "adler32 of Wikipedia",
                conv("ToAdler32"),
                json!("Wikipedia"),
                Ok(json!("300286872")),
            ),
            (
                "unknown conversion",
                conv("ToRot13"),
                json!("x"),
                Err(
                    "string transform could not resolve: type ToRot13 is not supported for string convert",
                ),
            ),
            (
                "trim prefix once",
                json!({"type": "string", "string": {"type": "TrimPrefix", "trim": "x-"}}),
                json!("x-x-a"),
                Ok(json!("x-a")),
            ),
            (
                "trim suffix once",
                json!({"type": "string", "string": {"type": "TrimSuffix", "trim": "-x"}}),
                json!("a-x-x"),
                Ok(json!("a-x")),
            ),
            (
                "trim prefix of number",
                json!({"type": "string", "string": {"type": "TrimPrefix", "trim": "1"}}),
                json!(123),
                Ok(json!("23")),
            ),
            (
                "trim without match",
                json!({"type": "string", "string": {"type": "TrimSuffix", "trim": "z"}}),
                json!("abc"),
                Ok(json!("abc")),
            ),
            (
                "regexp whole match",
                json!({"type": "string", "string": {"type": "Regexp", "regexp": {"match": "[0-9]+"}}}),
                json!("ab12cd34"),
                Ok(json!("12")),
            ),
            (
                "regexp group",
                json!({"type": "string", "string": {"type": "Regexp", "regexp": {"match": "arn:aws:iam::(\\d+):(.*)", "group": 1}}}),
                json!("arn:aws:iam::123:role/x"),
                Ok(json!("123")),
            ),
            (
                "regexp non-participating group",
                json!({"type": "string", "string": {"type": "Regexp", "regexp": {"match": "a(x)?", "group": 1}}}),
                json!("ab"),
                Ok(json!("")),
            ),
            (
                "regexp no match",
                json!({"type": "string", "string": {"type": "Regexp", "regexp": {"match": "z+"}}}),
                json!("abc"),
                Err("string transform could not resolve: regexp \"z+\" had no matches for group 0"),
            ),
            (
                "regexp group too large",
                json!({"type": "string", "string": {"type": "Regexp", "regexp": {"match": "a", "group": 1}}}),
                json!("abc"),
                Err("string transform could not resolve: regexp \"a\" had no matches for group 1"),
            ),
            (
                "regexp bad pattern",
                json!({"type": "string", "string": {"type": "Regexp", "regexp": {"match": "a)"}}}),
                json!("abc"),
                Err(
                    "string transform could not resolve: could not compile regexp: error parsing regexp: unexpected ): `a)`",
                ),
            ),
            (
                "join",
                json!({"type": "string", "string": {"type": "Join", "join": {"separator": ","}}}),
                json!(["a", "b", "c"]),
                Ok(json!("a,b,c")),
            ),
            (
                "join numbers with %v",
                json!({"type": "string", "string": {"type": "Join", "join": {"separator": ","}}}),
                json!([0, 1.5, true]),
                Ok(json!("0,1.5,true")),
            ),
            (
                "join multi-char separator keeps all but the last byte",
                json!({"type": "string", "string": {"type": "Join", "join": {"separator": ", "}}}),
                json!(["a", "b"]),
                Ok(json!("a, b,")),
            ),
            (
                "join multi-byte separator leaves broken bytes",
                json!({"type": "string", "string": {"type": "Join", "join": {"separator": "→"}}}),
                json!(["a", "b"]),
                Ok(json!("a→b\u{FFFD}\u{FFFD}")),
            ),
            (
                "join empty separator",
                json!({"type": "string", "string": {"type": "Join", "join": {"separator": ""}}}),
                json!(["a", "b"]),
                Ok(json!("ab")),
            ),
            (
                "join empty array",
                json!({"type": "string", "string": {"type": "Join", "join": {"separator": ","}}}),
                json!([]),
                Ok(json!("")),
            ),
            (
                "join non-array",
                json!({"type": "string", "string": {"type": "Join", "join": {"separator": ","}}}),
                json!("a"),
                Err("string transform could not resolve: could not parse input array"),
            ),
            (
                "replace all",
                json!({"type": "string", "string": {"type": "Replace", "replace": {"search": "-", "replace": "_"}}}),
                json!("a-b-c"),
                Ok(json!("a_b_c")),
            ),
            (
                "replace on number",
                json!({"type": "string", "string": {"type": "Replace", "replace": {"search": "0", "replace": ""}}}),
                json!(1000),
                Ok(json!("1")),
            ),
            (
                "format not set",
                json!({"type": "string", "string": {"type": "Format"}}),
                json!("x"),
                Err(
                    "string transform could not resolve: string transform of type Format fmt is not set",
                ),
            ),
            (
                "convert not set",
                json!({"type": "string", "string": {"type": "Convert"}}),
                json!("x"),
                Err(
                    "string transform could not resolve: string transform of type Convert convert is not set",
                ),
            ),
            (
                "trim not set",
                json!({"type": "string", "string": {"type": "TrimPrefix"}}),
                json!("x"),
                Err(
                    "string transform could not resolve: string transform of type TrimPrefix trim is not set",
                ),
            ),
            (
                "regexp not set",
                json!({"type": "string", "string": {"type": "Regexp"}}),
                json!("x"),
                Err(
                    "string transform could not resolve: string transform of type Regexp regexp is not set",
                ),
            ),
            (
                "join not set",
                json!({"type": "string", "string": {"type": "Join"}}),
                json!("x"),
                Err(
                    "string transform could not resolve: string transform of type Join join is not set",
                ),
            ),
            (
                "replace not set",
                json!({"type": "string", "string": {"type": "Replace"}}),
                json!("x"),
                Err(
                    "string transform could not resolve: string transform of type Replace replace is not set",
                ),
            ),
            (
                "unknown string type",
                json!({"type": "string", "string": {"type": "Reverse"}}),
                json!("x"),
                Err(
                    "string transform could not resolve: type Reverse is not supported for string transform type",
                ),
            ),
        ]);
    }

    #[test]
    fn convert_transform() {
        let to = |t: &str| json!({"type": "convert", "convert": {"toType": t}});
        let tof =
            |t: &str, f: &str| json!({"type": "convert", "convert": {"toType": t, "format": f}});
        check(vec![
            ("string to int", to("int"), json!("+42"), Ok(json!(42))),
            ("string to int64", to("int64"), json!("-7"), Ok(json!(-7))),
            (
                "decimal string to int",
                to("int"),
                json!("4.2"),
                Err(
                    "convert transform could not resolve: strconv.ParseInt: parsing \"4.2\": invalid syntax",
                ),
            ),
            (
                "hex string to int",
                to("int"),
                json!("0x10"),
                Err(
                    "convert transform could not resolve: strconv.ParseInt: parsing \"0x10\": invalid syntax",
                ),
            ),
            (
                "space to int",
                to("int"),
                json!(" 1"),
                Err(
                    "convert transform could not resolve: strconv.ParseInt: parsing \" 1\": invalid syntax",
                ),
            ),
            (
                "int out of range",
                to("int"),
                json!("9223372036854775808"),
                Err(
                    "convert transform could not resolve: strconv.ParseInt: parsing \"9223372036854775808\": value out of range",
                ),
            ),
            ("string to bool", to("bool"), json!("True"), Ok(json!(true))),
            ("string 0 to bool", to("bool"), json!("0"), Ok(json!(false))),
            (
                "string yes to bool",
                to("bool"),
                json!("yes"),
                Err(
                    "convert transform could not resolve: strconv.ParseBool: parsing \"yes\": invalid syntax",
                ),
            ),
            (
                "string to float",
                to("float64"),
                json!("2.5"),
                Ok(json!(2.5)),
            ),
            (
                "string to float bad",
                to("float64"),
                json!("abc"),
                Err(
                    "convert transform could not resolve: strconv.ParseFloat: parsing \"abc\": invalid syntax",
                ),
            ),
            (
                "string to float overflow",
                to("float64"),
                json!("1e400"),
                Err(
                    "convert transform could not resolve: strconv.ParseFloat: parsing \"1e400\": value out of range",
                ),
            ),
            (
                "quantity",
                tof("float64", "quantity"),
                json!("1000m"),
                Ok(json!(1.0)),
            ),
            (
                "quantity gibi",
                tof("float64", "quantity"),
                json!("1Gi"),
                Ok(json!(1073741824.0)),
            ),
            (
                "quantity invalid",
                tof("float64", "quantity"),
                json!("abc"),
                Err(
                    "convert transform could not resolve: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                ),
            ),
            (
                "string to object",
                tof("object", "json"),
                json!("{\"a\":1}"),
                Ok(json!({"a": 1})),
            ),
            (
                "string array to object",
                tof("object", "json"),
                json!("[1]"),
                Err(
                    "convert transform could not resolve: json: cannot unmarshal array into Go value of type map[string]interface {}",
                ),
            ),
            (
                "string null to object",
                tof("object", "json"),
                json!("null"),
                Ok(Value::Null),
            ),
            (
                "string to array",
                tof("array", "json"),
                json!("[1,\"a\"]"),
                Ok(json!([1, "a"])),
            ),
            (
                "string null to array",
                tof("array", "json"),
                json!("null"),
                Ok(Value::Null),
            ),
            (
                "malformed json",
                tof("array", "json"),
                json!("[1,"),
                Err("convert transform could not resolve: unexpected end of JSON input"),
            ),
            (
                "object to array mismatch",
                tof("array", "json"),
                json!("{}"),
                Err(
                    "convert transform could not resolve: json: cannot unmarshal object into Go value of type []interface {}",
                ),
            ),
            ("int to string", to("string"), json!(42), Ok(json!("42"))),
            ("int 1 to bool", to("bool"), json!(1), Ok(json!(true))),
            ("int 2 to bool", to("bool"), json!(2), Ok(json!(false))),
            ("int to float", to("float64"), json!(3), Ok(json!(3.0))),
            (
                "bool to string",
                to("string"),
                json!(false),
                Ok(json!("false")),
            ),
            ("bool to int", to("int"), json!(true), Ok(json!(1))),
            ("bool to float", to("float64"), json!(true), Ok(json!(1.0))),
            (
                "float to string never uses exponent",
                to("string"),
                json!(1e21),
                Ok(json!("1000000000000000000000")),
            ),
            (
                "float to string",
                to("string"),
                json!(2.5),
                Ok(json!("2.5")),
            ),
            (
                "float to int truncates",
                to("int"),
                json!(2.7),
                Ok(json!(2)),
            ),
            (
                "negative float to int truncates toward zero",
                to("int64"),
                json!(-2.7),
                Ok(json!(-2)),
            ),
            ("float 1 to bool", to("bool"), json!(1.0), Ok(json!(true))),
            (
                "same type returns input, ignoring format",
                tof("string", "quantity"),
                json!("x"),
                Ok(json!("x")),
            ),
            ("int to int is identity", to("int"), json!(5), Ok(json!(5))),
            (
                "map input",
                to("string"),
                json!({"a": 1}),
                Err(
                    "convert transform could not resolve: invalid input type map[string]interface {}",
                ),
            ),
            (
                "array input",
                to("string"),
                json!([1]),
                Err("convert transform could not resolve: invalid input type []interface {}"),
            ),
            (
                "null input",
                to("string"),
                Value::Null,
                Err("convert transform could not resolve: invalid input type <nil>"),
            ),
            (
                "unsupported pair",
                to("object"),
                json!(1),
                Err(
                    "convert transform could not resolve: conversion from int64 to object is not supported with format none",
                ),
            ),
            (
                "wrong format",
                tof("int", "json"),
                json!("1"),
                Err(
                    "convert transform could not resolve: conversion from string to int64 is not supported with format json",
                ),
            ),
            (
                "invalid format",
                tof("string", "yaml"),
                json!(1),
                Err(
                    "convert transform could not resolve: format: Invalid value: \"yaml\": invalid format",
                ),
            ),
            (
                "invalid type",
                to("integer"),
                json!(1),
                Err(
                    "convert transform could not resolve: toType: Invalid value: \"integer\": invalid type",
                ),
            ),
        ]);
    }

    #[test]
    fn transform_type_dispatch() {
        check(vec![
            (
                "unknown type",
                json!({"type": "reverse"}),
                json!("x"),
                Err("transform type reverse is not supported"),
            ),
            (
                "no type and no config",
                json!({}),
                json!("x"),
                Err("transform type  is not supported"),
            ),
            (
                "no type and two configs",
                json!({"map": {"a": 1}, "string": {"fmt": "%s"}}),
                json!("a"),
                Err("transform type  is not supported"),
            ),
            (
                "missing math config",
                json!({"type": "math"}),
                json!(1),
                Err("given transform type math requires configuration"),
            ),
            (
                "missing match config",
                json!({"type": "match"}),
                json!(1),
                Err("given transform type match requires configuration"),
            ),
            (
                "missing string config",
                json!({"type": "string"}),
                json!(1),
                Err("given transform type string requires configuration"),
            ),
            (
                "missing convert config",
                json!({"type": "convert"}),
                json!(1),
                Err("given transform type convert requires configuration"),
            ),
            (
                "inferred map",
                json!({"map": {"a": "b"}}),
                json!("a"),
                Ok(json!("b")),
            ),
            (
                "inferred convert",
                json!({"convert": {"toType": "string"}}),
                json!(1),
                Ok(json!("1")),
            ),
        ]);
    }

    #[test]
    fn resolve_all_chains_and_wraps_errors() {
        let ts: Vec<Transform> = serde_json::from_value(json!([
            {"type": "map", "map": {"small": "1", "large": "3"}},
            {"type": "convert", "convert": {"toType": "int"}},
            {"type": "math", "math": {"multiply": 2}},
            {"type": "string", "string": {"fmt": "%d-nodes"}},
        ]))
        .unwrap();
        assert_eq!(resolve_all(&ts, json!("large")), Ok(json!("6-nodes")));
        assert_eq!(
            resolve_all(&ts, json!("huge")).map_err(|e| e.message),
            Err("transform at index 0 returned error: map transform could not resolve: key huge is not found in map".to_string())
        );
        assert_eq!(resolve_all(&[], json!(1)), Ok(json!(1)));
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let cases = [
            json!({"type": "map", "mapp": {}}),
            json!({"type": "math", "math": {"type": "Multiply", "multiply": 2, "divide": 3}}),
            json!({"type": "string", "string": {"type": "Format", "fmt": "%s", "format": "x"}}),
            json!({"type": "match", "match": {"patterns": [{"type": "literal", "literal": "a", "value": 1}]}}),
            json!({"type": "convert", "convert": {"toType": "int", "from": "string"}}),
            json!({"type": "math", "math": {"multiply": 2.5}}),
        ];
        for c in cases {
            assert!(
                serde_json::from_value::<Transform>(c.clone()).is_err(),
                "{c} should be rejected"
            );
        }
    }

    #[test]
    fn validate_reports_field_errors_like_upstream() {
        let cases: Vec<(&str, Value, Option<&str>)> = vec![
            ("valid map", json!({"type": "map", "map": {"a": "b"}}), None),
            (
                "empty map",
                json!({"type": "map", "map": {}}),
                Some(
                    "map.pairs: Required value: at least one pair must be specified if a map transform is specified",
                ),
            ),
            (
                "missing map config",
                json!({"type": "map"}),
                Some("map: Required value: given transform type map requires configuration"),
            ),
            (
                "empty patterns",
                json!({"type": "match", "match": {"patterns": []}}),
                Some(
                    "match.patterns: Required value: at least one pattern must be specified if a match transform is specified",
                ),
            ),
            (
                "pattern without literal",
                json!({"type": "match", "match": {"patterns": [{"type": "literal"}]}}),
                Some(
                    "match.patterns[0].literal: Required value: literal pattern type requires a literal",
                ),
            ),
            (
                "untyped pattern is literal",
                json!({"type": "match", "match": {"patterns": [{"literal": "a"}]}}),
                None,
            ),
            (
                "pattern without regexp",
                json!({"type": "match", "match": {"patterns": [{"type": "literal", "literal": "a"}, {"type": "regexp"}]}}),
                Some(
                    "match.patterns[1].regexp: Required value: regexp pattern type requires a regexp",
                ),
            ),
            (
                "invalid pattern regexp",
                json!({"type": "match", "match": {"patterns": [{"type": "regexp", "regexp": "("}]}}),
                Some("match.patterns[0].regexp: Invalid value: \"(\": invalid regexp"),
            ),
            (
                "unknown pattern type",
                json!({"type": "match", "match": {"patterns": [{"type": "glob"}]}}),
                Some("match.patterns[0].type: Invalid value: \"glob\": unknown pattern type"),
            ),
            (
                "math without type",
                json!({"type": "math", "math": {"clampMax": 1}}),
                Some("math.type: Required value: math transform type is required"),
            ),
            (
                "legacy multiply",
                json!({"type": "math", "math": {"multiply": 2}}),
                None,
            ),
            (
                "multiply without value",
                json!({"type": "math", "math": {"type": "Multiply"}}),
                Some(
                    "math.multiply: Required value: must specify a value if a multiply math transform is specified",
                ),
            ),
            (
                "unknown math type",
                json!({"type": "math", "math": {"type": "Divide"}}),
                Some("math.type: Invalid value: \"Divide\": unknown math transform type"),
            ),
            (
                "string without type",
                json!({"type": "string", "string": {"trim": "x"}}),
                Some("string.type: Required value: string transform type is required"),
            ),
            ("legacy fmt", json!({"string": {"fmt": "%s"}}), None),
            (
                "format without fmt",
                json!({"type": "string", "string": {"type": "Format"}}),
                Some("string.fmt: Required value: format transform requires a format"),
            ),
            (
                "convert without conversion",
                json!({"type": "string", "string": {"type": "Convert"}}),
                Some(
                    "string.convert: Required value: convert transform requires a conversion type",
                ),
            ),
            (
                "trim without value",
                json!({"type": "string", "string": {"type": "TrimSuffix"}}),
                Some("string.trim: Required value: trim transform requires a trim value"),
            ),
            (
                "regexp without block",
                json!({"type": "string", "string": {"type": "Regexp"}}),
                Some("string.regexp: Required value: regexp transform requires a regexp"),
            ),
            (
                "regexp empty match",
                json!({"type": "string", "string": {"type": "Regexp", "regexp": {"match": ""}}}),
                Some("string.regexp.match: Required value: regexp transform requires a match"),
            ),
            (
                "regexp invalid",
                json!({"type": "string", "string": {"type": "Regexp", "regexp": {"match": "[a"}}}),
                Some("string.regexp.match: Invalid value: \"[a\": invalid regexp"),
            ),
            (
                "join without block",
                json!({"type": "string", "string": {"type": "Join"}}),
                Some("string.join: Required value: join transform requires a join"),
            ),
            (
                "replace without block",
                json!({"type": "string", "string": {"type": "Replace"}}),
                Some("string.replace: Required value: replace transform requires a replace"),
            ),
            (
                "replace empty search",
                json!({"type": "string", "string": {"type": "Replace", "replace": {"search": "", "replace": "x"}}}),
                Some("string.replace.search: Required value: replace transform requires a search"),
            ),
            (
                "unknown string type",
                json!({"type": "string", "string": {"type": "Reverse"}}),
                Some("string.type: Invalid value: \"Reverse\": unknown string transform type"),
            ),
            (
                "convert invalid format",
                json!({"type": "convert", "convert": {"toType": "string", "format": "yaml"}}),
                Some("convert.format: Invalid value: \"yaml\": invalid format"),
            ),
            (
                "convert invalid type",
                json!({"type": "convert", "convert": {"toType": "integer"}}),
                Some("convert.toType: Invalid value: \"integer\": invalid type"),
            ),
            (
                "convert valid",
                json!({"type": "convert", "convert": {"toType": "int", "format": "none"}}),
                None,
            ),
            (
                "unknown transform type",
                json!({"type": "reverse"}),
                Some("type: Invalid value: \"reverse\": unknown transform type"),
            ),
            (
                "no type, no config",
                json!({}),
                Some("type: Invalid value: \"\": unknown transform type"),
            ),
        ];
        for (rule, t, want) in cases {
            let got = validate(&transform(t)).map_err(|e| e.to_string());
            match want {
                None => assert_eq!(got, Ok(()), "{rule}"),
                Some(msg) => assert_eq!(got, Err(msg.to_string()), "{rule}"),
            }
        }
    }

    #[test]
    fn validation_errors_can_be_rooted_under_a_patch() {
        let err = validate(&transform(
            json!({"type": "math", "math": {"type": "Multiply"}}),
        ))
        .expect_err("invalid")
        .under(
            &Path::new("resources")
                .index(0)
                .child("patches")
                .index(1)
                .child("transforms")
                .index(2),
        );
        assert_eq!(
            err.path.as_str(),
            "resources[0].patches[1].transforms[2].math.multiply"
        );
        assert_eq!(err.kind, ErrorKind::Required);
        let not_supported = FieldError {
            path: Path::new("policy").child("toFieldPath"),
            kind: ErrorKind::NotSupported(json!("Merge")),
            detail: "supported values: \"Replace\"".to_string(),
        };
        assert_eq!(
            not_supported.to_string(),
            "policy.toFieldPath: Unsupported value: \"Merge\": supported values: \"Replace\""
        );
        let invalid_number = FieldError {
            path: Path::new("x"),
            kind: ErrorKind::Invalid(json!(3)),
            detail: String::new(),
        };
        assert_eq!(invalid_number.to_string(), "x: Invalid value: 3");
    }

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
