//! Resource quantities (`500m`, `1Gi`, `1e3`) as apimachinery's
//! `resource.ParseQuantity` reads them, exact enough to compare: the
//! value in billionths, saturating far beyond any real request.

use std::cmp::Ordering;

/// Why a quantity does not parse: the decoder's message.
pub(crate) const FORMAT_ERROR: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
pub(crate) const SUFFIX_ERROR: &str = "unable to parse quantity's suffix";

/// A parsed quantity, in billionths of its unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Quantity(i128);

impl Quantity {
    pub(crate) fn is_negative(self) -> bool {
        self.0 < 0
    }

    pub(crate) fn is_zero(self) -> bool {
        self.0 == 0
    }
}

/// Parses `s`, or says why not with the decoder's message.
pub(crate) fn parse(s: &str) -> Result<Quantity, &'static str> {
    let (negative, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let number_len = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_len);
    if number.is_empty() || number.matches('.').count() > 1 || number == "." {
        return Err(FORMAT_ERROR);
    }
    let suffix_shaped = {
        let letters = suffix
            .find(|c: char| !"eEinumkKMGTP".contains(c))
            .unwrap_or(suffix.len());
        let tail = &suffix[letters..];
        let tail = tail.strip_prefix(['+', '-']).unwrap_or(tail);
        tail.bytes().all(|c| c.is_ascii_digit())
    };
    if !suffix_shaped {
        return Err(FORMAT_ERROR);
    }
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    // Digits as an integer, and the power of ten they are scaled by.
    let mut mantissa: i128 = 0;
    let mut scale: i32 = 0;
    for c in int_part.bytes().chain(frac_part.bytes()) {
        if mantissa < i128::MAX / 100 {
            mantissa = mantissa * 10 + i128::from(c - b'0');
        } else {
            scale += 1;
        }
    }
    scale -= i32::try_from(frac_part.len()).unwrap_or(i32::MAX);
    let (ten, two) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        exponent if exponent.starts_with(['e', 'E']) => match exponent[1..].parse::<i32>() {
            Ok(e) => (e, 0),
            Err(_) => return Err(SUFFIX_ERROR),
        },
        _ => return Err(SUFFIX_ERROR),
    };
    let mut value = mantissa;
    let mut power = scale + ten + 9;
    while power > 0 {
        value = value.saturating_mul(10);
        power -= 1;
    }
    while power < 0 {
        // Go rounds a quantity finer than a billionth up.
        let rounded_up = value % 10 != 0;
        value = value / 10 + i128::from(rounded_up);
        power += 1;
    }
    value = value.saturating_mul(1_i128.checked_shl(two).unwrap_or(i128::MAX));
    Ok(Quantity(if negative { -value } else { value }))
}

/// Compares two quantities as `resource.Quantity.Cmp` does.
pub(crate) fn compare(a: Quantity, b: Quantity) -> Ordering {
    a.cmp(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse_and_compare_as_apimachinery_reads_them() {
        let equal = [
            ("1", "1000m"),
            ("0.5", "500m"),
            ("1Ki", "1024"),
            ("1e3", "1k"),
            ("1Gi", "1073741824"),
        ];
        for (a, b) in equal {
            assert_eq!(parse(a), parse(b), "{a} = {b}");
        }
        let less = [("100m", "1"), ("512Mi", "1Gi"), ("-1", "0"), ("1G", "1Gi")];
        for (a, b) in less {
            let (Ok(a), Ok(b)) = (parse(a), parse(b)) else {
                panic!("{a} {b}")
            };
            assert_eq!(compare(a, b), Ordering::Less);
        }
        let wrong = [
            ("lots", FORMAT_ERROR),
            ("", FORMAT_ERROR),
            ("1.2.3", FORMAT_ERROR),
            ("1 Gi", FORMAT_ERROR),
            ("1Gb", FORMAT_ERROR),
            ("1iK", SUFFIX_ERROR),
            ("1mm", SUFFIX_ERROR),
        ];
        for (s, error) in wrong {
            assert_eq!(parse(s), Err(error), "{s}");
        }
    }
}
