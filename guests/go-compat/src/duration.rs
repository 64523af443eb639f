//! Go's `time.ParseDuration`, for the TTLs functions' inputs set.

use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("time: invalid duration \"{0}\"")]
    Invalid(String),
    #[error("time: missing unit in duration \"{0}\"")]
    MissingUnit(String),
    #[error("time: unknown unit \"{unit}\" in duration \"{duration}\"")]
    UnknownUnit { unit: String, duration: String },
    /// Go accepts negative durations; a TTL cannot be one.
    #[error("time: negative duration \"{0}\" is not a valid TTL")]
    Negative(String),
}

fn unit_nanos(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => 1,
        "us" | "µs" | "μs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

/// Parses `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+` (or a bare `0`) as Go does.
pub fn parse_go_duration(orig: &str) -> Result<Duration, DurationError> {
    let invalid = || DurationError::Invalid(orig.to_string());
    let (negative, mut s) = match orig.as_bytes().first() {
        Some(b'-') => (true, &orig[1..]),
        Some(b'+') => (false, &orig[1..]),
        _ => (false, orig),
    };
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let max = 1_u64 << 63;
    let mut total: u64 = 0;
    while !s.is_empty() {
        if !s.starts_with(|c: char| c == '.' || c.is_ascii_digit()) {
            return Err(invalid());
        }
        let int_len = s.bytes().take_while(u8::is_ascii_digit).count();
        let mut value: u64 = 0;
        for d in s[..int_len].bytes() {
            value = value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(d - b'0')))
                .filter(|v| *v <= max)
                .ok_or_else(invalid)?;
        }
        s = &s[int_len..];
        let mut fraction = 0_u64;
        let mut scale = 1_f64;
        let mut has_fraction = false;
        if let Some(rest) = s.strip_prefix('.') {
            let frac_len = rest.bytes().take_while(u8::is_ascii_digit).count();
            let mut overflowed = false;
            for d in rest[..frac_len].bytes() {
                // Like Go, digits past what fits in 63 bits are dropped.
                if overflowed {
                    continue;
                }
                match fraction
                    .checked_mul(10)
                    .and_then(|f| f.checked_add(u64::from(d - b'0')))
                {
                    Some(f) if f <= max => {
                        fraction = f;
                        scale *= 10.0;
                    }
                    _ => overflowed = true,
                }
            }
            has_fraction = frac_len > 0;
            s = &rest[frac_len..];
        }
        if int_len == 0 && !has_fraction {
            return Err(invalid());
        }
        let unit_len = s
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if unit_len == 0 {
            return Err(DurationError::MissingUnit(orig.to_string()));
        }
        let unit_name = &s[..unit_len];
        s = &s[unit_len..];
        let unit = unit_nanos(unit_name).ok_or_else(|| DurationError::UnknownUnit {
            unit: unit_name.to_string(),
            duration: orig.to_string(),
        })?;
        if value > max / unit {
            return Err(invalid());
        }
        value *= unit;
        if fraction > 0 {
            // Go computes the fractional part in float64 and truncates.
            value += (fraction as f64 * (unit as f64 / scale)) as u64;
            if value > max {
                return Err(invalid());
            }
        }
        total = total
            .checked_add(value)
            .filter(|t| *t <= max)
            .ok_or_else(invalid)?;
    }
    if negative && total > 0 {
        return Err(DurationError::Negative(orig.to_string()));
    }
    if total > max - 1 {
        return Err(invalid());
    }
    Ok(Duration::from_nanos(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_durations() {
        let cases = [
            ("0", Ok(Duration::ZERO)),
            ("-0", Ok(Duration::ZERO)),
            ("1m0s", Ok(Duration::from_secs(60))),
            ("+30s", Ok(Duration::from_secs(30))),
            ("1.5h", Ok(Duration::from_secs(5400))),
            ("2h45m", Ok(Duration::from_secs(9900))),
            (".5s", Ok(Duration::from_millis(500))),
            ("1.s", Ok(Duration::from_secs(1))),
            ("300ms", Ok(Duration::from_millis(300))),
            ("10µs", Ok(Duration::from_micros(10))),
            ("7ns", Ok(Duration::from_nanos(7))),
            ("", Err(DurationError::Invalid("".into()))),
            ("1", Err(DurationError::MissingUnit("1".into()))),
            (".s", Err(DurationError::Invalid(".s".into()))),
            ("s", Err(DurationError::Invalid("s".into()))),
            (
                "1d",
                Err(DurationError::UnknownUnit {
                    unit: "d".into(),
                    duration: "1d".into(),
                }),
            ),
            ("-1s", Err(DurationError::Negative("-1s".into()))),
            (
                "9999999999h",
                Err(DurationError::Invalid("9999999999h".into())),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(parse_go_duration(input), want, "{input}");
        }
    }

    #[test]
    fn errors_read_like_go() {
        assert_eq!(
            parse_go_duration("1x").unwrap_err().to_string(),
            "time: unknown unit \"x\" in duration \"1x\""
        );
        assert_eq!(
            parse_go_duration("abc").unwrap_err().to_string(),
            "time: invalid duration \"abc\""
        );
    }
}
