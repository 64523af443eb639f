//! Python's format mini-language as KCL implements it, for `"…".format()`,
//! and the specs of string interpolation (`"${x: #json}"`).
//!
//! KCL's implementation differs from Python's, and programs see the
//! differences, so they are kept:
//! - only ints and floats honour a spec; every other value prints as
//!   `str()` prints it, ignoring width and alignment (`"{:>5}".format("a")`
//!   is `a`);
//! - a float with no type prints with an exponent from 1e16 up and below
//!   1e-4 (`1e+20`, `1.5e-07`), otherwise as `str()` does;
//! - an int with a float type (`f`, `e`, `%`) is formatted as the float,
//!   width and sign included, and then signed and aligned again as an int
//!   (`"{:.2f}".format(-5)` is `--5.00`);
//! - the conversion (`!r`, `!s`) is accepted and ignored;
//! - widths wrap around as 32-bit numbers, and a precision above 65535 is
//!   refused with Rust's message, as KCL's Rust formatting does.

use crate::error::Result;
use crate::value::Value;

use super::{UNWRAP_NONE, fail};

/// Rust refuses a formatting precision above this; KCL reports its message.
const MAX_PRECISION: usize = u16::MAX as usize;

/// The most padding one field may add. KCL has no limit short of memory;
/// this keeps a typo'd width from exhausting the guest's memory.
const MAX_FILL: i64 = 1 << 24;

/// `"${value: spec}"`: KCL's interpolation takes only `#json` and `#yaml`
/// (in any case); the parser has already refused specs without `#`.
pub fn format_with_spec(value: &Value, spec: &str) -> Result<String> {
    let options = crate::value::json::EncodeOptions::default();
    match spec.to_lowercase().as_str() {
        "#json" => Ok(crate::value::json::encode(value, &options, 0)),
        "#yaml" => Ok(crate::value::yaml::encode(value, &options)),
        _ => Err(fail("Invalid string interpolation format specification")),
    }
}

/// `template.format(*args, **kwargs)`.
pub fn format_string(template: &str, args: &[Value], kwargs: &[(String, Value)]) -> Result<String> {
    let parts = parse_template(template).ok_or_else(|| fail("format error"))?;
    let mut out = String::new();
    let mut next_auto = 0usize;
    for part in parts {
        match part {
            TemplatePart::Literal(text) => out.push_str(&text),
            TemplatePart::Field { name, spec } => {
                let field = parse_field_name(&name).map_err(|e| {
                    fail(format!(
                        "called `Result::unwrap()` on an `Err` value: {e:?}"
                    ))
                })?;
                let mut value = match field.first {
                    FieldStart::Auto => {
                        next_auto += 1;
                        args.get(next_auto - 1)
                            .ok_or_else(|| fail("argument tuple index out of range"))?
                            .clone()
                    }
                    FieldStart::Index(i) => {
                        if next_auto != 0 {
                            return Err(fail(
                                "cannot switch from automatic field numbering to manual field specification",
                            ));
                        }
                        args.get(i)
                            .ok_or_else(|| fail("argument tuple index out of range"))?
                            .clone()
                    }
                    FieldStart::Keyword(key) => super::kwarg(kwargs, &key)
                        .ok_or_else(|| fail(format!("keyword argument '{key}' not found")))?
                        .clone(),
                };
                for access in field.accesses {
                    value = match access {
                        FieldAccess::Key(key) => value
                            .as_dict()
                            .and_then(|d| d.get(&key))
                            .cloned()
                            .ok_or_else(|| fail(UNWRAP_NONE))?,
                        FieldAccess::Index(i) => list_item(&value, i)?,
                    };
                }
                out.push_str(&format_value(&value, &spec)?);
            }
        }
    }
    Ok(out)
}

/// `value[i]` inside a replacement field, with KCL's messages.
fn list_item(value: &Value, index: usize) -> Result<Value> {
    let Value::List(items) = value else {
        return Err(fail("Invalid list object in list_get"));
    };
    if items.is_empty() {
        return Err(fail(UNWRAP_NONE));
    }
    items.get(index).cloned().ok_or_else(|| {
        fail(format!(
            "index out of bounds: the len is {} but the index is {index}",
            items.len()
        ))
    })
}

/// One value under one spec: ints and floats honour it, the rest print as
/// `str()` does.
pub(crate) fn format_value(value: &Value, spec: &str) -> Result<String> {
    match value {
        Value::Int(i) => FormatSpec::parse(spec)
            .and_then(|s| s.format_int(*i))
            .map_err(fail),
        Value::Float(f) => FormatSpec::parse(spec)
            .and_then(|s| s.format_float(*f))
            .map_err(fail),
        other => Ok(other.to_kcl_string()),
    }
}

enum TemplatePart {
    Literal(String),
    Field { name: String, spec: String },
}

/// Splits a template into literal text and `{…}` fields (`{{` and `}}`
/// stand for braces); `None` when the braces do not pair up.
fn parse_template(template: &str) -> Option<Vec<TemplatePart>> {
    let mut parts = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        let (literal, after) = parse_literal(rest);
        if !literal.is_empty() {
            parts.push(TemplatePart::Literal(literal));
            rest = after;
            continue;
        }
        let (field, after) = parse_field(rest)?;
        parts.push(field);
        rest = after;
    }
    Some(parts)
}

/// Literal text up to the first brace that is not doubled.
fn parse_literal(text: &str) -> (String, &str) {
    let mut literal = String::new();
    let mut rest = text;
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        if (c == '{' || c == '}') && chars.next() != Some(c) {
            break;
        }
        literal.push(c);
        rest = chars.as_str();
    }
    (literal, rest)
}

/// `{name!conv:spec}` at the start of `text`; the spec may hold one level
/// of nested braces.
fn parse_field(text: &str) -> Option<(TemplatePart, &str)> {
    let inner = text.strip_prefix('{')?;
    let mut nested = false;
    let mut end = None;
    for (i, c) in inner.char_indices() {
        match c {
            '{' if nested => return None,
            '{' => nested = true,
            '}' if nested => nested = false,
            '}' => {
                end = Some(i);
                break;
            }
            _ => {}
        }
    }
    let end = end?;
    let body = inner.get(..end)?;
    let rest = inner.get(end + 1..)?;
    let (name, spec) = body.split_once(':').unwrap_or((body, ""));
    let name = name.split_once('!').map_or(name, |(n, _)| n);
    Some((
        TemplatePart::Field {
            name: name.to_string(),
            spec: spec.to_string(),
        },
        rest,
    ))
}

struct FieldName {
    first: FieldStart,
    accesses: Vec<FieldAccess>,
}

enum FieldStart {
    Auto,
    Index(usize),
    Keyword(String),
}

enum FieldAccess {
    /// `.name` or `[name]`
    Key(String),
    /// `[0]`
    Index(usize),
}

/// Why a field name does not parse; KCL prints the variant's name.
#[derive(Debug)]
enum FieldNameError {
    EmptyAttribute,
    MissingRightBracket,
    InvalidCharacterAfterRightBracket,
}

/// `0`, `name`, `0.attr`, `name[0]`, `[key]`…
fn parse_field_name(text: &str) -> Result<FieldName, FieldNameError> {
    let split = text.find(['.', '[']).unwrap_or(text.len());
    let (first, mut rest) = text.split_at(split);
    let first = if first.is_empty() {
        FieldStart::Auto
    } else if let Ok(i) = first.parse::<usize>() {
        FieldStart::Index(i)
    } else {
        FieldStart::Keyword(first.to_string())
    };
    let mut accesses = Vec::new();
    while let Some(c) = rest.chars().next() {
        let after = &rest[c.len_utf8()..];
        match c {
            '.' => {
                let end = after.find(['.', '[']).unwrap_or(after.len());
                let (attr, tail) = after.split_at(end);
                if attr.is_empty() {
                    return Err(FieldNameError::EmptyAttribute);
                }
                accesses.push(FieldAccess::Key(attr.to_string()));
                rest = tail;
            }
            '[' => {
                let (key, tail) = after
                    .split_once(']')
                    .ok_or(FieldNameError::MissingRightBracket)?;
                if key.is_empty() {
                    return Err(FieldNameError::EmptyAttribute);
                }
                accesses.push(match key.parse::<usize>() {
                    Ok(i) => FieldAccess::Index(i),
                    Err(_) => FieldAccess::Key(key.to_string()),
                });
                rest = tail;
            }
            _ => return Err(FieldNameError::InvalidCharacterAfterRightBracket),
        }
    }
    Ok(FieldName { first, accesses })
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Align {
    Left,
    Right,
    AfterSign,
    Center,
}

impl Align {
    fn from_char(c: char) -> Option<Align> {
        match c {
            '<' => Some(Align::Left),
            '>' => Some(Align::Right),
            '=' => Some(Align::AfterSign),
            '^' => Some(Align::Center),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Sign {
    Plus,
    Minus,
    Space,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Grouping {
    Comma,
    Underscore,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Case {
    Lower,
    Upper,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Type {
    String,
    Binary,
    Character,
    Decimal,
    Octal,
    Hex(Case),
    Number,
    Exponent(Case),
    General(Case),
    Fixed(Case),
    Percentage,
}

impl Type {
    fn from_char(c: char) -> Option<Type> {
        Some(match c {
            's' => Type::String,
            'b' => Type::Binary,
            'c' => Type::Character,
            'd' => Type::Decimal,
            'o' => Type::Octal,
            'x' => Type::Hex(Case::Lower),
            'X' => Type::Hex(Case::Upper),
            'e' => Type::Exponent(Case::Lower),
            'E' => Type::Exponent(Case::Upper),
            'f' => Type::Fixed(Case::Lower),
            'F' => Type::Fixed(Case::Upper),
            'g' => Type::General(Case::Lower),
            'G' => Type::General(Case::Upper),
            'n' => Type::Number,
            '%' => Type::Percentage,
            _ => return None,
        })
    }

    fn code(self) -> char {
        match self {
            Type::String => 's',
            Type::Binary => 'b',
            Type::Character => 'c',
            Type::Decimal => 'd',
            Type::Octal => 'o',
            Type::Hex(Case::Lower) => 'x',
            Type::Hex(Case::Upper) => 'X',
            Type::Exponent(Case::Lower) => 'e',
            Type::Exponent(Case::Upper) => 'E',
            Type::Fixed(Case::Lower) => 'f',
            Type::Fixed(Case::Upper) => 'F',
            Type::General(Case::Lower) => 'g',
            Type::General(Case::Upper) => 'G',
            Type::Number => 'n',
            Type::Percentage => '%',
        }
    }
}

/// `[[fill]align][sign][#][0][width][grouping][.precision][type]`, after an
/// optional ignored `!conversion`.
#[derive(Debug, Default)]
struct FormatSpec {
    fill: Option<char>,
    align: Option<Align>,
    sign: Option<Sign>,
    alternate: bool,
    width: Option<usize>,
    grouping: Option<Grouping>,
    precision: Option<usize>,
    ty: Option<Type>,
}

const INVALID_SPEC: &str = "Invalid format specifier";
const TOO_MANY_DIGITS: &str = "Too many decimal digits in format string";
const SEPARATORS_ONLY_FOR_NUMBERS: &str = "Separators only valid for numbers!";
const PRECISION_OUT_OF_RANGE: &str = "Formatting argument out of range";

impl FormatSpec {
    fn parse(text: &str) -> Result<FormatSpec, String> {
        let mut spec = FormatSpec::default();
        let mut rest = text;
        if let Some(after) = rest.strip_prefix('!')
            && let Some(c) = after.chars().next()
            && matches!(c, 's' | 'r' | 'a' | 'b')
        {
            rest = &after[c.len_utf8()..];
        }
        let mut chars = rest.chars();
        let first = chars.next();
        let second = chars.next();
        if let (Some(fill), Some(align)) = (first, second.and_then(Align::from_char)) {
            spec.fill = Some(fill);
            spec.align = Some(align);
            rest = chars.as_str();
        } else if let Some(align) = first.and_then(Align::from_char) {
            spec.align = Some(align);
            rest = &rest[1..];
        }
        spec.sign = match rest.chars().next() {
            Some('+') => Some(Sign::Plus),
            Some('-') => Some(Sign::Minus),
            Some(' ') => Some(Sign::Space),
            _ => None,
        };
        if spec.sign.is_some() {
            rest = &rest[1..];
        }
        if let Some(after) = rest.strip_prefix('#') {
            spec.alternate = true;
            rest = after;
        }
        let zero = rest.starts_with('0');
        if zero {
            rest = &rest[1..];
        }
        (spec.width, rest) = parse_number(rest)?;
        spec.grouping = match rest.chars().next() {
            Some(',') => Some(Grouping::Comma),
            Some('_') => Some(Grouping::Underscore),
            _ => None,
        };
        if spec.grouping.is_some() {
            rest = &rest[1..];
        }
        if let Some(after) = rest.strip_prefix('.') {
            let (precision, after) = parse_number(after)?;
            if precision.is_some() {
                spec.precision = precision;
                rest = after;
            }
        }
        if let Some(ty) = rest.chars().next().and_then(Type::from_char) {
            spec.ty = Some(ty);
            rest = &rest[1..];
        }
        if !rest.is_empty() {
            return Err(INVALID_SPEC.into());
        }
        if zero && spec.fill.is_none() {
            spec.fill = Some('0');
            spec.align = spec.align.or(Some(Align::AfterSign));
        }
        Ok(spec)
    }

    fn format_int(&self, num: i64) -> Result<String, String> {
        // KCL takes the magnitude with a wrapping `abs`, so `i64::MIN`
        // keeps its sign inside the digits.
        let magnitude = num.wrapping_abs();
        let prefix = match (self.alternate, self.ty) {
            (true, Some(Type::Binary)) => "0b",
            (true, Some(Type::Octal)) => "0o",
            (true, Some(Type::Hex(_))) => "0x",
            _ => "",
        };
        let raw = match self.ty {
            Some(Type::Binary) => format!("{magnitude:b}"),
            Some(Type::Octal) => format!("{magnitude:o}"),
            Some(Type::Hex(Case::Lower)) => format!("{magnitude:x}"),
            Some(Type::Hex(Case::Upper)) => format!("{magnitude:X}"),
            Some(Type::Decimal | Type::Number) | None => magnitude.to_string(),
            Some(ty @ (Type::String | Type::Character | Type::General(_))) => {
                return Err(unknown_code(ty, "int"));
            }
            Some(Type::Fixed(_) | Type::Exponent(_) | Type::Percentage) => {
                self.format_float(num as f64)?
            }
        };
        let digits = format!("{prefix}{}", self.add_separators(raw)?);
        let sign = if num < 0 {
            "-"
        } else {
            self.sign_for_positive()
        };
        self.pad(&digits, sign)
    }

    fn format_float(&self, num: f64) -> Result<String, String> {
        let precision = self.precision.unwrap_or(6);
        let magnitude = num.abs();
        let raw = match self.ty {
            Some(Type::Fixed(case)) => format_fixed(precision, magnitude, case)?,
            Some(
                ty @ (Type::Decimal
                | Type::Binary
                | Type::Octal
                | Type::Hex(_)
                | Type::String
                | Type::Character),
            ) => return Err(unknown_code(ty, "float")),
            Some(Type::Number) => {
                return Err(
                    "Format code 'n' for object of type 'float' not implemented yet".into(),
                );
            }
            Some(Type::General(case)) => format_general(precision.max(1), magnitude, case)?,
            Some(Type::Exponent(case)) => format_exponent(precision, magnitude, case)?,
            Some(Type::Percentage) => {
                if magnitude.is_nan() {
                    "nan%".to_string()
                } else if magnitude.is_infinite() {
                    "inf%".to_string()
                } else {
                    format!("{:.*}%", check_precision(precision)?, magnitude * 100.0)
                }
            }
            None => {
                if magnitude.is_nan() {
                    "nan".to_string()
                } else if magnitude.is_infinite() {
                    "inf".to_string()
                } else {
                    float_to_string(magnitude)
                }
            }
        };
        let digits = self.add_separators(raw)?;
        let sign = if num.is_sign_negative() && !num.is_nan() {
            "-"
        } else {
            self.sign_for_positive()
        };
        self.pad(&digits, sign)
    }

    fn sign_for_positive(&self) -> &'static str {
        match self.sign {
            Some(Sign::Plus) => "+",
            Some(Sign::Space) => " ",
            Some(Sign::Minus) | None => "",
        }
    }

    fn add_separators(&self, digits: String) -> Result<String, String> {
        let Some(grouping) = self.grouping else {
            return Ok(digits);
        };
        let interval = match self.ty {
            Some(Type::Binary | Type::Octal | Type::Hex(_)) => 4,
            Some(Type::Decimal | Type::Number | Type::Fixed(_)) | None => 3,
            Some(_) => return Err(SEPARATORS_ONLY_FOR_NUMBERS.into()),
        };
        let separator = match grouping {
            Grouping::Comma => ',',
            Grouping::Underscore => '_',
        };
        let (integer, fraction) = match digits.split_once('.') {
            Some((i, f)) => (i, Some(f)),
            None => (digits.as_str(), None),
        };
        let mut out = String::with_capacity(digits.len() + digits.len() / interval);
        let mut remaining = integer.len();
        for c in integer.chars() {
            out.push(c);
            remaining = remaining.saturating_sub(c.len_utf8());
            if remaining > 0 && remaining % interval == 0 {
                out.push(separator);
            }
        }
        if let Some(fraction) = fraction {
            out.push('.');
            out.push_str(fraction);
        }
        Ok(out)
    }

    /// Fills to the width around the sign and digits. KCL counts the
    /// digits' bytes and takes the width as a wrapping 32-bit number.
    fn pad(&self, digits: &str, sign: &str) -> Result<String, String> {
        let width = self.width.map_or(0, |w| i64::from(w as i32));
        let needed = (width - digits.len() as i64 - sign.len() as i64).max(0);
        if needed > MAX_FILL {
            return Err("format width too large".into());
        }
        let fill = self.fill.unwrap_or(' ');
        let fill_str = |n: i64| std::iter::repeat_n(fill, n as usize).collect::<String>();
        Ok(match self.align.unwrap_or(Align::Right) {
            Align::Left => format!("{sign}{digits}{}", fill_str(needed)),
            Align::Right => format!("{}{sign}{digits}", fill_str(needed)),
            Align::AfterSign => format!("{sign}{}{digits}", fill_str(needed)),
            Align::Center => {
                let left = needed / 2;
                format!(
                    "{}{sign}{digits}{}",
                    fill_str(left),
                    fill_str(needed - left)
                )
            }
        })
    }
}

fn unknown_code(ty: Type, type_name: &str) -> String {
    format!(
        "Unknown format code '{}' for object of type '{type_name}'",
        ty.code()
    )
}

/// Digits, or `None` when there are none; too many for a `usize` is KCL's
/// error.
fn parse_number(text: &str) -> Result<(Option<usize>, &str), String> {
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    if end == 0 {
        return Ok((None, text));
    }
    let (digits, rest) = text.split_at(end);
    let n = digits
        .parse::<usize>()
        .map_err(|_| TOO_MANY_DIGITS.to_string())?;
    Ok((Some(n), rest))
}

fn check_precision(precision: usize) -> Result<usize, String> {
    if precision > MAX_PRECISION {
        Err(PRECISION_OUT_OF_RANGE.into())
    } else {
        Ok(precision)
    }
}

fn nan_or_inf(magnitude: f64, case: Case) -> Option<String> {
    let text = if magnitude.is_nan() {
        "nan"
    } else if magnitude.is_infinite() {
        "inf"
    } else {
        return None;
    };
    Some(match case {
        Case::Lower => text.to_string(),
        Case::Upper => text.to_uppercase(),
    })
}

fn format_fixed(precision: usize, magnitude: f64, case: Case) -> Result<String, String> {
    if let Some(text) = nan_or_inf(magnitude, case) {
        return Ok(text);
    }
    Ok(format!("{magnitude:.*}", check_precision(precision)?))
}

/// Python-style exponent: `1.500000e+00`.
fn format_exponent(precision: usize, magnitude: f64, case: Case) -> Result<String, String> {
    if let Some(text) = nan_or_inf(magnitude, case) {
        return Ok(text);
    }
    let rust = format!("{magnitude:.*e}", check_precision(precision)?);
    let (base, exponent) = split_exponent(&rust);
    Ok(format!(
        "{base}{}{}",
        exponent_char(case),
        python_exponent(exponent)
    ))
}

/// `g`: exponent notation when the exponent is below -4 or at least the
/// precision, else fixed; trailing zeros removed either way.
fn format_general(precision: usize, magnitude: f64, case: Case) -> Result<String, String> {
    if let Some(text) = nan_or_inf(magnitude, case) {
        return Ok(text);
    }
    let rust = format!("{magnitude:.*e}", check_precision(precision - 1)?);
    let (base, exponent) = split_exponent(&rust);
    if exponent < -4 || exponent >= precision as i64 {
        // KCL cuts the mantissa text to `precision + 1` characters.
        check_precision(precision + 1)?;
        let base: String = base.chars().take(precision + 1).collect();
        Ok(format!(
            "{}{}{}",
            trim_fraction_zeros(base),
            exponent_char(case),
            python_exponent(exponent)
        ))
    } else {
        let decimals = (precision as i64 - 1 - exponent).max(0) as usize;
        Ok(trim_fraction_zeros(format!(
            "{magnitude:.*}",
            check_precision(decimals)?
        )))
    }
}

fn split_exponent(rust: &str) -> (&str, i64) {
    match rust.split_once('e') {
        Some((base, exp)) => (base, exp.parse().unwrap_or(0)),
        None => (rust, 0),
    }
}

fn exponent_char(case: Case) -> char {
    match case {
        Case::Lower => 'e',
        Case::Upper => 'E',
    }
}

/// `+05`, `-07`, `+123`: a sign and at least two digits.
fn python_exponent(exponent: i64) -> String {
    format!("{exponent:+03}")
}

/// Drops trailing zeros, then a trailing point, from a number with a point.
fn trim_fraction_zeros(s: String) -> String {
    if !s.contains('.') {
        return s;
    }
    let trimmed = s.trim_end_matches('0');
    trimmed.strip_suffix('.').unwrap_or(trimmed).to_string()
}

/// A float with no format type: as `str()` prints it between 1e-4 and
/// 1e16, else in exponent form (`1e+20`).
fn float_to_string(value: f64) -> String {
    let rust = format!("{value:e}");
    let (significand, exponent) = split_exponent(&rust);
    if exponent < 16 && exponent > -5 {
        if (value - value.round()).abs() < f64::EPSILON {
            format!("{value:.1?}")
        } else {
            value.to_string()
        }
    } else {
        format!("{significand}e{}", python_exponent(exponent))
    }
}
