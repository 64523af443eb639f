//! Kubernetes `resource.Quantity` parsing, as far as `convert` with
//! `format: quantity` needs it: `ParseQuantity(s).AsApproximateFloat64()`.
//!
//! The parse follows apimachinery's `ParseQuantity` step by step (including
//! its int64 fast path, the round-up to nano precision and the int64 cap), so
//! that the approximate float64 matches upstream's.

const ERR_FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const ERR_NUMERIC: &str = "unable to parse numeric part of quantity";
const ERR_SUFFIX: &str = "unable to parse quantity's suffix";

/// Scale of the smallest representable quantity (nano).
const NANO: i32 = -9;
/// Digits an int64 always holds.
const MAX_INT64_FACTORS: i32 = 18;
const MAX_ALLOWED: &str = "9223372036854775807";

#[derive(Debug, Clone, Copy, PartialEq)]
enum Format {
    DecimalSi,
    BinarySi,
    DecimalExponent,
}

struct Parts<'a> {
    positive: bool,
    /// Whether the numeric part has any digit; the slow path needs one.
    has_digits: bool,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

/// apimachinery's `parseQuantityString`.
fn split(s: &str) -> Result<Parts<'_>, String> {
    let b = s.as_bytes();
    let end = b.len();
    let mut positive = true;
    let mut pos = 0;
    if pos < end {
        match b[0] {
            b'-' => {
                positive = false;
                pos += 1;
            }
            b'+' => pos += 1,
            _ => {}
        }
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok(Parts {
            positive,
            has_digits: true,
            num: "0",
            denom: "",
            suffix: "",
        });
    }
    let num_start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let mut num = &s[num_start..pos];
    if pos >= end {
        return Ok(Parts {
            positive,
            has_digits: true,
            num,
            denom: "",
            suffix: "",
        });
    }
    if num.is_empty() {
        num = "0";
    }
    let mut denom = "";
    if b[pos] == b'.' {
        pos += 1;
        let denom_start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[denom_start..pos];
    }
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(ERR_FORMAT_WRONG.to_string());
    }
    Ok(Parts {
        positive,
        has_digits: s[..suffix_start].bytes().any(|c| c.is_ascii_digit()),
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// apimachinery's suffix interpretation: (base, exponent, format).
fn interpret(suffix: &str) -> Option<(u32, i32, Format)> {
    let decimal = match suffix {
        "n" => Some(-9),
        "u" => Some(-6),
        "m" => Some(-3),
        "" => Some(0),
        "k" => Some(3),
        "M" => Some(6),
        "G" => Some(9),
        "T" => Some(12),
        "P" => Some(15),
        "E" => Some(18),
        _ => None,
    };
    if let Some(e) = decimal {
        return Some((10, e, Format::DecimalSi));
    }
    let binary = match suffix {
        "Ki" => Some(10),
        "Mi" => Some(20),
        "Gi" => Some(30),
        "Ti" => Some(40),
        "Pi" => Some(50),
        "Ei" => Some(60),
        _ => None,
    };
    if let Some(e) = binary {
        return Some((2, e, Format::BinarySi));
    }
    let rest = suffix.strip_prefix(['e', 'E']).filter(|r| !r.is_empty())?;
    // Go's ParseInt rules (sign allowed, no spaces); the int32 truncation is
    // upstream's.
    let parsed: i64 = rest.parse().ok()?;
    Some((10, parsed as i32, Format::DecimalExponent))
}

/// Go's `math.Pow10`, built from the same exact tables so products round the
/// same way.
fn pow10(n: i32) -> f64 {
    const TAB: [f64; 32] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31,
    ];
    const POS32: [f64; 10] = [
        1e0, 1e32, 1e64, 1e96, 1e128, 1e160, 1e192, 1e224, 1e256, 1e288,
    ];
    const NEG32: [f64; 11] = [
        1e-0, 1e-32, 1e-64, 1e-96, 1e-128, 1e-160, 1e-192, 1e-224, 1e-256, 1e-288, 1e-320,
    ];
    if (0..=308).contains(&n) {
        let n = n as usize;
        return POS32[n / 32] * TAB[n % 32];
    }
    if (-323..=0).contains(&n) {
        let n = (-n) as usize;
        return NEG32[n / 32] / TAB[n % 32];
    }
    if n > 0 { f64::INFINITY } else { 0.0 }
}

/// Parses a Kubernetes quantity (`1.5Gi`, `250m`, `1e3`) into the float64
/// `AsApproximateFloat64` returns, or upstream's error text.
pub fn parse_quantity(s: &str) -> Result<f64, String> {
    if s.is_empty() {
        return Err(ERR_FORMAT_WRONG.to_string());
    }
    if s == "0" {
        return Ok(0.0);
    }
    let parts = split(s)?;
    let (base, exponent, format) = interpret(parts.suffix).ok_or_else(|| ERR_SUFFIX.to_string())?;
    let digits_len = (parts.num.len() + parts.denom.len()) as i32;
    let (mut scale, mantissa, precision) = match format {
        Format::DecimalSi | Format::DecimalExponent => {
            (exponent, 1i64, MAX_INT64_FACTORS - digits_len)
        }
        Format::BinarySi if parts.denom.is_empty() => {
            let precision = 15 - parts.num.len() as i32 - exponent * 3 / 10 - 1;
            (0, 1i64 << exponent, precision)
        }
        Format::BinarySi => (0, 1, -1),
    };
    if precision >= 0 {
        scale -= parts.denom.len() as i32;
        if scale >= NANO {
            let shifted = format!("{}{}", parts.num, parts.denom);
            let value: i64 = shifted.parse().map_err(|_| ERR_NUMERIC.to_string())?;
            if let Some(result) = value.checked_mul(mantissa) {
                let result = if parts.positive { result } else { -result };
                return Ok(if scale == 0 {
                    result as f64
                } else {
                    result as f64 * pow10(scale)
                });
            }
        }
    }
    slow_path(&parts, base, exponent)
}

/// The arbitrary-precision path (`inf.Dec`), on decimal digit strings.
fn slow_path(parts: &Parts<'_>, base: u32, exponent: i32) -> Result<f64, String> {
    if !parts.has_digits {
        return Err(ERR_NUMERIC.to_string());
    }
    let raw = format!("{}{}", parts.num, parts.denom);
    let mut unscaled: Vec<u8> = raw.bytes().map(|b| b - b'0').collect();
    let mut scale = parts.denom.len() as i64;
    if base == 10 {
        scale -= i64::from(exponent);
    } else {
        for _ in 0..exponent {
            double(&mut unscaled);
        }
    }
    strip_leading_zeros(&mut unscaled);
    if unscaled.iter().all(|d| *d == 0) {
        return Ok(0.0);
    }
    // Non-zero values round up (away from zero) to nano precision.
    let nano_scale = -i64::from(NANO);
    if scale > nano_scale {
        let drop = (scale - nano_scale) as usize;
        let keep = unscaled.len().saturating_sub(drop);
        let truncated_nonzero = unscaled[keep..].iter().any(|d| *d != 0);
        unscaled.truncate(keep);
        if unscaled.is_empty() {
            unscaled.push(0);
        }
        if truncated_nonzero {
            increment(&mut unscaled);
        }
        scale = nano_scale;
    }
    let magnitude = if exceeds_max(&unscaled, scale) {
        MAX_ALLOWED.parse::<f64>().map_err(|e| e.to_string())?
    } else {
        let digits: String = unscaled.iter().map(|d| char::from(b'0' + d)).collect();
        let base_value: f64 = digits.parse().map_err(|_| ERR_NUMERIC.to_string())?;
        if scale == 0 {
            base_value
        } else {
            base_value
                * pow10(i32::try_from(-scale).unwrap_or(if scale > 0 {
                    i32::MIN
                } else {
                    i32::MAX
                }))
        }
    };
    Ok(if parts.positive {
        magnitude
    } else {
        -magnitude
    })
}

fn strip_leading_zeros(digits: &mut Vec<u8>) {
    let first = digits
        .iter()
        .position(|d| *d != 0)
        .unwrap_or(digits.len().saturating_sub(1));
    digits.drain(..first);
}

fn double(digits: &mut Vec<u8>) {
    let mut carry = 0;
    for d in digits.iter_mut().rev() {
        let v = *d * 2 + carry;
        *d = v % 10;
        carry = v / 10;
    }
    if carry > 0 {
        digits.insert(0, carry);
    }
}

fn increment(digits: &mut Vec<u8>) {
    for d in digits.iter_mut().rev() {
        if *d == 9 {
            *d = 0;
        } else {
            *d += 1;
            return;
        }
    }
    digits.insert(0, 1);
}

/// Whether unscaled × 10^-scale is above int64's maximum.
fn exceeds_max(unscaled: &[u8], scale: i64) -> bool {
    let (int_part, frac_nonzero): (Vec<u8>, bool) = if scale >= 0 {
        let keep = unscaled.len().saturating_sub(scale as usize);
        (
            unscaled[..keep].to_vec(),
            unscaled[keep..].iter().any(|d| *d != 0),
        )
    } else {
        let zeros = (-scale) as usize;
        if unscaled.len() + zeros > MAX_ALLOWED.len() {
            return true;
        }
        let mut v = unscaled.to_vec();
        v.extend(std::iter::repeat_n(0, zeros));
        (v, false)
    };
    let first = int_part
        .iter()
        .position(|d| *d != 0)
        .unwrap_or(int_part.len());
    let int_str: String = int_part[first..]
        .iter()
        .map(|d| char::from(b'0' + d))
        .collect();
    match int_str.len().cmp(&MAX_ALLOWED.len()) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => match int_str.as_str().cmp(MAX_ALLOWED) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => frac_nonzero,
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_quantities_to_approximate_floats() {
        let cases: Vec<(&str, &str, f64)> = vec![
            ("reference: millis", "1000m", 1.0),
            ("zero", "0", 0.0),
            ("plain integer", "42", 42.0),
            ("decimal", "1.5", 15.0 * 0.1),
            ("negative", "-2", -2.0),
            ("explicit plus", "+3", 3.0),
            ("leading zeros", "007", 7.0),
            ("kilo", "1k", 1000.0),
            ("mega", "2M", 2e6),
            ("giga", "1.5G", 1.5e9),
            ("tera", "1T", 1e12),
            ("peta", "1P", 1e15),
            ("exa", "1E", 1e18),
            ("milli: value times Pow10(scale)", "250m", 250.0 * 1e-3),
            ("micro", "5u", 5.0 * 1e-6),
            ("nano", "3n", 3.0 * 1e-9),
            ("kibi", "1Ki", 1024.0),
            ("mebi", "128Mi", 134217728.0),
            ("gibi", "1Gi", 1073741824.0),
            ("tebi", "2Ti", 2199023255552.0),
            ("fractional gibi takes the slow path", "1.5Gi", 1610612736.0),
            ("exponent", "1e3", 1000.0),
            ("upper exponent", "2E2", 200.0),
            ("negative exponent", "5e-3", 5.0 * 1e-3),
            ("explicit plus exponent", "1e+2", 100.0),
            ("sign only is zero", "-", 0.0),
            ("dot only is zero", ".", 0.0),
            ("trailing dot", "1.", 1.0),
            ("leading dot", ".5", 0.5),
            ("sub-nano rounds up", "1e-10", 1e-9),
            ("sub-nano negative rounds away from zero", "-1e-10", -1e-9),
            ("many decimals round up at nano", "0.0000000011", 2e-9),
            ("fast path is not capped", "1e19", 1e19),
            (
                "slow path above int64 is capped",
                "12345678901234567890",
                i64::MAX as f64,
            ),
            (
                "huge exponent is capped",
                "123456789012345678901234567890",
                i64::MAX as f64,
            ),
            ("int64 max fits", "9223372036854775807", i64::MAX as f64),
            ("ei", "8Ei", i64::MAX as f64),
            ("fast path large scale", "1e20", 1e20),
        ];
        for (rule, input, want) in cases {
            let got = parse_quantity(input).unwrap_or_else(|e| panic!("{rule}: {input}: {e}"));
            assert_eq!(got, want, "{rule}: {input}");
        }
    }

    #[test]
    fn rejects_malformed_quantities_with_upstream_errors() {
        let cases = [
            ("empty", "", ERR_FORMAT_WRONG),
            ("letters", "abc", ERR_FORMAT_WRONG),
            ("space", "1 Gi", ERR_FORMAT_WRONG),
            ("garbage after exponent", "1e3e", ERR_FORMAT_WRONG),
            ("unknown suffix", "1Qi", ERR_FORMAT_WRONG),
            ("bad suffix letters", "1ki", ERR_SUFFIX),
            ("lone lowercase e", "1e", ERR_SUFFIX),
            ("suffix then digits", "1Ki5", ERR_SUFFIX),
            ("two dots", "1.2.3", ERR_FORMAT_WRONG),
            ("slow path without digits", ".e-10", ERR_NUMERIC),
        ];
        for (rule, input, want) in cases {
            assert_eq!(
                parse_quantity(input),
                Err(want.to_string()),
                "{rule}: {input:?}"
            );
        }
    }

    #[test]
    fn pow10_matches_go_tables() {
        assert_eq!(pow10(0), 1.0);
        assert_eq!(pow10(-3), 0.001);
        assert_eq!(pow10(22), 1e22);
        assert_eq!(pow10(309), f64::INFINITY);
        assert_eq!(pow10(-324), 0.0);
    }
}
