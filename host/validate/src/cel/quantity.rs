//! Kubernetes resource quantities (`quantity('1.5Gi')`), parsed and compared
//! as `resource.ParseQuantity` and `Quantity.Cmp` do: exact decimal values,
//! rounded up to the nano unit, binary-suffixed ones capped at 2^63-1.

use std::cmp::Ordering;

/// The format `ParseQuantity` refuses a string with.
pub const FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const NUMERIC: &str = "unable to parse numeric part of quantity";
const SUFFIX: &str = "unable to parse quantity's suffix";

/// A quantity's exact value, `mantissa × 10^exponent`, with no trailing
/// zero in the mantissa (zero is `0 × 10^0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantity {
    mantissa: i128,
    exponent: i32,
}

enum Suffix {
    Decimal(i32),
    Binary(u32),
}

fn suffix(s: &str) -> Option<Suffix> {
    Some(match s {
        "" => Suffix::Decimal(0),
        "n" => Suffix::Decimal(-9),
        "u" => Suffix::Decimal(-6),
        "m" => Suffix::Decimal(-3),
        "k" => Suffix::Decimal(3),
        "M" => Suffix::Decimal(6),
        "G" => Suffix::Decimal(9),
        "T" => Suffix::Decimal(12),
        "P" => Suffix::Decimal(15),
        "E" => Suffix::Decimal(18),
        "Ki" => Suffix::Binary(10),
        "Mi" => Suffix::Binary(20),
        "Gi" => Suffix::Binary(30),
        "Ti" => Suffix::Binary(40),
        "Pi" => Suffix::Binary(50),
        "Ei" => Suffix::Binary(60),
        _ => {
            let rest = s.strip_prefix(['e', 'E'])?;
            // Go's ParseInt: an optional sign and digits, nothing else.
            let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Suffix::Decimal(rest.parse::<i32>().ok()?)
        }
    })
}

/// The pieces `parseQuantityString` splits a quantity into: sign, integer
/// digits, fraction digits, suffix.
fn split(s: &str) -> Result<(bool, &str, &str, &str), &'static str> {
    let bytes = s.as_bytes();
    let mut pos = 0;
    let mut positive = true;
    match bytes.first() {
        Some(b'-') => {
            positive = false;
            pos = 1;
        }
        Some(b'+') => pos = 1,
        _ => {}
    }
    while pos < bytes.len() && bytes[pos] == b'0' {
        pos += 1;
    }
    if pos >= bytes.len() {
        return Ok((positive, "0", "", ""));
    }
    let digits_end = |from: usize| {
        (from..bytes.len())
            .find(|&i| !bytes[i].is_ascii_digit())
            .unwrap_or(bytes.len())
    };
    let num_end = digits_end(pos);
    let num = &s[pos..num_end];
    pos = num_end;
    let mut denom = "";
    if pos < bytes.len() && bytes[pos] == b'.' {
        let end = digits_end(pos + 1);
        denom = &s[pos + 1..end];
        pos = end;
    }
    if pos == bytes.len() {
        if num.is_empty() && denom.is_empty() {
            return Err(NUMERIC);
        }
        return Ok((positive, num, denom, ""));
    }
    let suffix_start = pos;
    while pos < bytes.len() && b"eEinumkKMGTP".contains(&bytes[pos]) {
        pos += 1;
    }
    if pos < bytes.len() && (bytes[pos] == b'-' || bytes[pos] == b'+') {
        pos += 1;
    }
    if digits_end(pos) != bytes.len() {
        return Err(FORMAT_WRONG);
    }
    Ok((positive, num, denom, &s[suffix_start..]))
}

impl Quantity {
    /// `resource.ParseQuantity`.
    pub fn parse(s: &str) -> Result<Self, &'static str> {
        if s.is_empty() {
            return Err(FORMAT_WRONG);
        }
        let (positive, num, denom, suffix_text) = split(s)?;
        let suffix = suffix(suffix_text).ok_or(SUFFIX)?;
        if num.is_empty() && denom.is_empty() {
            return Err(NUMERIC);
        }
        let digits = format!("{num}{denom}");
        let digits = digits.trim_start_matches('0');
        let fraction = i32::try_from(denom.len()).map_err(|_| NUMERIC)?;
        let (mut magnitude, binary) = match suffix {
            Suffix::Decimal(e) => (
                Decimal::from_digits(digits, e.checked_sub(fraction).ok_or(NUMERIC)?)?,
                false,
            ),
            Suffix::Binary(shift) => {
                let d = Decimal::from_digits(digits, -fraction)?;
                let m = d.mantissa.checked_mul(1i128 << shift).ok_or(NUMERIC)?;
                (
                    Decimal {
                        mantissa: m,
                        exponent: d.exponent,
                    },
                    true,
                )
            }
        };
        magnitude = magnitude.round_up_to_nano()?;
        let cap = Decimal {
            mantissa: i128::from(i64::MAX),
            exponent: 0,
        };
        if binary && magnitude.cmp(&cap) == Ordering::Greater {
            magnitude = cap;
        }
        let mantissa = if positive {
            magnitude.mantissa
        } else {
            -magnitude.mantissa
        };
        Ok(Quantity::new(mantissa, magnitude.exponent))
    }

    fn new(mantissa: i128, exponent: i32) -> Self {
        let d = Decimal { mantissa, exponent }.normalized();
        Quantity {
            mantissa: d.mantissa,
            exponent: d.exponent,
        }
    }

    fn decimal(self) -> Decimal {
        Decimal {
            mantissa: self.mantissa,
            exponent: self.exponent,
        }
    }

    pub fn sign(self) -> i64 {
        match self.mantissa.cmp(&0) {
            Ordering::Less => -1,
            Ordering::Equal => 0,
            Ordering::Greater => 1,
        }
    }

    /// `Quantity.Cmp`.
    pub fn compare(self, other: Quantity) -> Ordering {
        self.decimal().cmp(&other.decimal())
    }

    /// `Quantity.AsInt64`.
    pub fn as_i64(self) -> Option<i64> {
        if self.exponent < 0 {
            return None;
        }
        let scale = 10i128.checked_pow(self.exponent.unsigned_abs())?;
        i64::try_from(self.mantissa.checked_mul(scale)?).ok()
    }

    /// `Quantity.AsApproximateFloat64`.
    #[allow(clippy::cast_precision_loss)]
    pub fn as_f64(self) -> f64 {
        self.mantissa as f64 * 10f64.powi(self.exponent)
    }

    pub fn add(self, other: Quantity) -> Option<Quantity> {
        let (a, b, exponent) = self.decimal().aligned(other.decimal())?;
        Some(Quantity::new(a.checked_add(b)?, exponent))
    }

    pub fn sub(self, other: Quantity) -> Option<Quantity> {
        let (a, b, exponent) = self.decimal().aligned(other.decimal())?;
        Some(Quantity::new(a.checked_sub(b)?, exponent))
    }

    pub fn from_i64(i: i64) -> Quantity {
        Quantity::new(i128::from(i), 0)
    }
}

#[derive(Debug, Clone, Copy)]
struct Decimal {
    mantissa: i128,
    exponent: i32,
}

impl Decimal {
    /// The non-negative value of `digits × 10^exponent`, kept exact to the
    /// nano unit: digits below it only say whether to round up.
    fn from_digits(digits: &str, exponent: i32) -> Result<Decimal, &'static str> {
        let significant = digits.trim_end_matches('0');
        let trailing_zeros =
            i32::try_from(digits.len() - significant.len()).map_err(|_| NUMERIC)?;
        let mut exponent = exponent.checked_add(trailing_zeros).ok_or(NUMERIC)?;
        let mut kept = significant;
        let mut round_up = false;
        if exponent < -9 {
            let drop = usize::try_from(-9 - i64::from(exponent)).map_err(|_| NUMERIC)?;
            if drop >= significant.len() {
                kept = "";
                round_up = !significant.is_empty();
            } else {
                kept = &significant[..significant.len() - drop];
                round_up = true;
            }
            exponent = -9;
        }
        let mut mantissa: i128 = 0;
        for b in kept.bytes() {
            mantissa = mantissa
                .checked_mul(10)
                .and_then(|m| m.checked_add(i128::from(b - b'0')))
                .ok_or(NUMERIC)?;
        }
        if round_up {
            mantissa = mantissa.checked_add(1).ok_or(NUMERIC)?;
        }
        Ok(Decimal { mantissa, exponent }.normalized())
    }

    fn normalized(mut self) -> Decimal {
        if self.mantissa == 0 {
            return Decimal {
                mantissa: 0,
                exponent: 0,
            };
        }
        while self.mantissa % 10 == 0 {
            self.mantissa /= 10;
            self.exponent += 1;
        }
        self
    }

    /// Values below the nano unit round up, away from zero, to it.
    fn round_up_to_nano(self) -> Result<Decimal, &'static str> {
        if self.exponent >= -9 {
            return Ok(self.normalized());
        }
        let drop = (-9 - self.exponent).unsigned_abs();
        let scale = 10i128.checked_pow(drop);
        let mantissa = match scale {
            Some(scale) => {
                let q = self.mantissa / scale;
                if self.mantissa % scale == 0 { q } else { q + 1 }
            }
            None => 1,
        };
        Ok(Decimal {
            mantissa,
            exponent: -9,
        }
        .normalized())
    }

    /// Both mantissas at the smaller exponent.
    fn aligned(self, other: Decimal) -> Option<(i128, i128, i32)> {
        let exponent = self.exponent.min(other.exponent);
        let scale = |d: Decimal| {
            10i128
                .checked_pow((d.exponent - exponent).unsigned_abs())
                .and_then(|s| d.mantissa.checked_mul(s))
        };
        Some((scale(self)?, scale(other)?, exponent))
    }

    fn cmp(&self, other: &Decimal) -> Ordering {
        if let Some((a, b, _)) = self.aligned(*other) {
            return a.cmp(&b);
        }
        // Too far apart to align: the signs, then the magnitudes' orders.
        let sign = |m: i128| m.signum();
        match sign(self.mantissa).cmp(&sign(other.mantissa)) {
            Ordering::Equal => {}
            unequal => return unequal,
        }
        let order = |d: &Decimal| {
            i64::from(d.exponent)
                + i64::from(d.mantissa.unsigned_abs().checked_ilog10().unwrap_or(0))
        };
        let by_magnitude = order(self).cmp(&order(other));
        if self.mantissa < 0 {
            by_magnitude.reverse()
        } else {
            by_magnitude
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse_and_compare_as_resource_parse_quantity_does() {
        let equal = [
            ("1", "1000m"),
            ("1Ki", "1024"),
            ("1.5Gi", "1536Mi"),
            ("1e3", "1k"),
            ("1E3", "1k"),
            ("0.1", "100m"),
            ("1n", "0.000000001"),
            ("0.0000000001", "1n"),
            ("-0.0000000001", "-1n"),
            ("-0", "0"),
            ("+5", "5"),
            ("1.", "1"),
            ("007", "7"),
            ("8Ei", "9223372036854775807"),
            ("1e-3", "1m"),
        ];
        for (a, b) in equal {
            let (qa, qb) = (Quantity::parse(a), Quantity::parse(b));
            assert_eq!(qa, qb, "{a} = {b}");
            assert!(qa.is_ok(), "{a}");
        }
        let ordered = [
            ("1", "2"),
            ("999m", "1"),
            ("-1", "0"),
            ("1Mi", "1.1M"),
            ("1e30", "1e31"),
        ];
        for (lo, hi) in ordered {
            let (lo_q, hi_q) = (Quantity::parse(lo), Quantity::parse(hi));
            assert_eq!(
                lo_q.and_then(|l| hi_q.map(|h| l.compare(h))),
                Ok(Ordering::Less),
                "{lo} < {hi}"
            );
        }
        let refused = [
            ("", FORMAT_WRONG),
            ("abc", FORMAT_WRONG),
            ("1.5.5", FORMAT_WRONG),
            ("1Ki2", SUFFIX),
            ("1K-x", FORMAT_WRONG),
            ("1x", FORMAT_WRONG),
            ("1e", SUFFIX),
            ("1KiB", FORMAT_WRONG),
            ("1mm", SUFFIX),
            (".", NUMERIC),
            ("m", NUMERIC),
        ];
        for (text, error) in refused {
            assert_eq!(Quantity::parse(text), Err(error), "{text:?}");
        }
    }

    #[test]
    fn integer_and_float_views_of_a_quantity() {
        let cases = [
            ("1k", Some(1000), 1000.0),
            ("1.5", None, 1.5),
            ("-2Ki", Some(-2048), -2048.0),
            ("100m", None, 0.1),
            ("1e19", None, 1e19),
        ];
        for (text, integer, float) in cases {
            let q = Quantity::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(q.as_i64(), integer, "{text}");
            assert!(
                (q.as_f64() - float).abs() < 1e-9 * float.abs().max(1.0),
                "{text}"
            );
        }
    }
}
