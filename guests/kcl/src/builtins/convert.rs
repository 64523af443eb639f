//! `int()` and `float()` with KCL 0.12.3's rules: `int` reads unit
//! strings (`"1Ki"` is 1024) in base 10 and prefixed digits (`"0xff"`) in
//! other bases, and `float` refuses infinities.

use crate::error::{ErrorKind, KclError, Result};
use crate::value::Value;

use super::fail;

/// `int(value, base=10)`.
pub(crate) fn to_int(value: &Value, base: Option<&Value>) -> Result<Value> {
    match value {
        Value::Int(i) => Ok(Value::Int(*i)),
        // Rust's casts saturate (and make NaN 0), as KCL's do.
        Value::Float(f) => Ok(Value::Int(*f as i64)),
        Value::Unit(u) => Ok(Value::Int(u.value as i64)),
        Value::Bool(b) => Ok(Value::Int(i64::from(*b))),
        Value::Str(s) => {
            // KCL reads the base as an int, and anything else as 0.
            let base = match base {
                None => 10,
                Some(Value::Int(i)) => *i,
                Some(Value::Float(f)) => *f as i64,
                Some(Value::Unit(u)) => u.value as i64,
                Some(_) => 0,
            };
            // Base 10 reads unit suffixes (`"1Ki"`). KCL 0.12.3 did so for
            // every base, which made `int("ff", 16)` fail; KCL has since
            // fixed that (its grammar suite's int/base_parameter), and plait
            // follows the fix: another base reads an optional sign and
            // `0x`/`0o`/`0b` prefix and the digits.
            let digits = if base == 10 {
                parse_quantity(s)?.to_string()
            } else {
                let (sign, unsigned) = match s.strip_prefix('-') {
                    Some(rest) => ("-", rest),
                    None => ("", &**s),
                };
                let unprefixed = ["0x", "0X", "0o", "0O", "0b", "0B"]
                    .iter()
                    .find_map(|p| unsigned.strip_prefix(p))
                    .unwrap_or(unsigned);
                format!("{sign}{unprefixed}")
            };
            let radix = base as u32;
            if !(2..=36).contains(&radix) {
                return Err(fail(format!(
                    "from_ascii_radix: radix must lie in the range `[2, 36]` - found {radix}"
                )));
            }
            i64::from_str_radix(&digits, radix)
                .map(Value::Int)
                .map_err(|_| fail(format!("invalid literal for int() with base {base}: '{s}'")))
        }
        other => Err(fail(format!(
            "int() argument must be a string or a number, not '{}'",
            other.runtime_type_str()
        ))),
    }
}

/// `float(value)`.
pub(crate) fn to_float(value: &Value) -> Result<Value> {
    let overflow = || {
        KclError::new(
            ErrorKind::FloatOverflow,
            "inf: A 64-bit floating point number overflow",
        )
    };
    match value {
        Value::Int(i) => Ok(Value::Float(*i as f64)),
        Value::Float(f) if f.is_infinite() => Err(overflow()),
        Value::Float(f) => Ok(Value::Float(*f)),
        Value::Unit(u) => Ok(Value::Float(u.value)),
        Value::Bool(b) => Ok(Value::Float(if *b { 1.0 } else { 0.0 })),
        Value::Str(s) => {
            // Rust's float syntax: `inf`, `NaN`, `1e5`, `.5`, no spaces.
            let f = s.parse::<f64>().map_err(|_| invalid_float(value))?;
            if f.is_infinite() {
                return Err(overflow());
            }
            Ok(Value::Float(f))
        }
        other => Err(invalid_float(other)),
    }
}

fn invalid_float(value: &Value) -> KclError {
    fail(format!(
        "invalid literal for float() with base 10: '{}'",
        value.to_kcl_string()
    ))
}

/// A quantity with an optional unit suffix as an int: `"2Ki"` is 2048,
/// `"3k"` 3000, `"5"` 5. Decimal suffixes (`k`, `M`, … `P`) multiply by
/// powers of 1000, `i` suffixes (`Ki`, … `Pi`) by powers of 1024. KCL's
/// arithmetic wraps around, so the fractional suffixes (`n`, `u`, `m`)
/// make 0 and huge quantities wrap; this keeps that.
pub fn parse_quantity(quantity: &str) -> Result<i64> {
    let exponent = |c: char| -> Option<i32> {
        Some(match c {
            'n' => -3,
            'u' => -2,
            'm' => -1,
            'k' | 'K' => 1,
            'M' => 2,
            'G' => 3,
            'T' => 4,
            'P' => 5,
            _ => return None,
        })
    };
    let mut chars = quantity.chars().rev();
    let (number, unit) = match (chars.next(), chars.next()) {
        (Some('i'), Some(c)) if exponent(c).is_some() => {
            (&quantity[..quantity.len() - 2], Some((c, 1024i64)))
        }
        (Some(c), _) if exponent(c).is_some() => {
            (&quantity[..quantity.len() - 1], Some((c, 1000i64)))
        }
        _ => (quantity, None),
    };
    if number.is_empty() {
        return Err(fail("number can't be empty"));
    }
    let number: i64 = number.parse().map_err(|e| {
        fail(format!(
            "called `Result::unwrap()` on an `Err` value: {e:?}"
        ))
    })?;
    let Some((suffix, base)) = unit else {
        return Ok(number);
    };
    let exponent = exponent(suffix).unwrap_or(0);
    // A negative exponent is taken as a huge unsigned power, as KCL does.
    Ok(number.wrapping_mul(base.wrapping_pow(exponent as u32)))
}
