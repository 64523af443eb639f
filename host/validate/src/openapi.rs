//! What OpenAPI calls a JSON value: its `type` name and whether a string is
//! in a `format`, as kube-openapi decides both. Shared by the structural
//! schema walk and the CEL library (`isURL`-style format checks, type
//! names in rule messages), so neither needs the other for them.

use base64::Engine;
use serde_json::Value;

/// The JSON type name kube-openapi reports for a value.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether `s` is in one of the formats the API server checks; unknown
/// formats pass, as there.
pub(crate) fn format_matches(format: &str, s: &str) -> bool {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    match format {
        "byte" => base64::engine::general_purpose::STANDARD.decode(s).is_ok(),
        "date-time" | "datetime" => is_date_time(s),
        "date" => is_date(s),
        "uuid" | "uuid3" | "uuid4" | "uuid5" => is_uuid(s),
        "ipv4" => s.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<Ipv6Addr>().is_ok(),
        "cidr" => s.split_once('/').is_some_and(|(ip, bits)| {
            let width = match ip.parse::<IpAddr>() {
                Ok(IpAddr::V4(_)) => 32,
                Ok(IpAddr::V6(_)) => 128,
                Err(_) => return false,
            };
            // Go's net.ParseCIDR: decimal digits only, no sign, at most the width.
            !bits.is_empty()
                && bits.bytes().all(|b| b.is_ascii_digit())
                && bits.parse::<u16>().is_ok_and(|n| n <= width)
        }),
        "mac" => is_mac(s),
        "hostname" => is_hostname(s),
        "email" => s
            .split_once('@')
            .is_some_and(|(user, host)| !user.is_empty() && is_hostname(host)),
        "duration" => is_go_duration(s),
        _ => true,
    }
}

/// `YYYY-MM-DD`, a day that exists (Go's `time.Parse` with `2006-01-02`).
pub(crate) fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    let shaped = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && [0, 1, 2, 3, 5, 6, 8, 9]
            .iter()
            .all(|&i| b[i].is_ascii_digit());
    if !shaped {
        return false;
    }
    let number = |range: std::ops::Range<usize>| {
        s.get(range)
            .and_then(|t| t.parse::<u32>().ok())
            .unwrap_or(0)
    };
    let (year, month, day) = (number(0..4), number(5..7), number(8..10));
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// A hardware address as Go's `net.ParseMAC` reads one: 6, 8 or 20 bytes
/// as hex pairs separated by `:` or `-`, or as dotted groups of four hex
/// digits.
fn is_mac(s: &str) -> bool {
    let hex =
        |part: &str, len: usize| part.len() == len && part.bytes().all(|b| b.is_ascii_hexdigit());
    let sizes = [6, 8, 20];
    for separator in [':', '-'] {
        let parts: Vec<&str> = s.split(separator).collect();
        if parts.len() > 1 {
            return sizes.contains(&parts.len()) && parts.iter().all(|p| hex(p, 2));
        }
    }
    let groups: Vec<&str> = s.split('.').collect();
    groups.len() > 1 && sizes.contains(&(groups.len() * 2)) && groups.iter().all(|g| hex(g, 4))
}

fn is_date_time(s: &str) -> bool {
    let Some((date, time)) = s.split_once(['T', 't', ' ']) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let b = time.as_bytes();
    if b.len() < 8 || b[2] != b':' || b[5] != b':' {
        return false;
    }
    let rest = &time[8..];
    let rest = rest
        .strip_prefix('.')
        .map(|r| r.trim_start_matches(|c: char| c.is_ascii_digit()))
        .unwrap_or(rest);
    matches!(rest, "Z" | "z")
        || (rest.len() == 6
            && (rest.starts_with('+') || rest.starts_with('-'))
            && rest.as_bytes()[3] == b':')
}

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(p, n)| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit()))
}

fn is_hostname(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// Go's `time.ParseDuration` syntax: `1h30m`, `250ms`, `-1.5s`, `0`.
pub(crate) fn is_go_duration(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    if s == "0" {
        return true;
    }
    if s.is_empty() {
        return false;
    }
    let mut rest = s;
    while !rest.is_empty() {
        let whole = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let mut taken = whole;
        let mut fraction = 0;
        if rest[taken..].starts_with('.') {
            taken += 1;
            fraction = rest[taken..]
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len() - taken);
            taken += fraction;
        }
        if whole == 0 && fraction == 0 {
            return false;
        }
        rest = &rest[taken..];
        let unit = ["ns", "us", "µs", "μs", "ms", "s", "m", "h"]
            .iter()
            .find(|u| rest.starts_with(**u));
        match unit {
            Some(u) => rest = &rest[u.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_accept_what_the_api_server_accepts() {
        let cases = [
            ("date-time", "2024-01-01T00:00:00Z", true),
            ("date-time", "2024-01-01T00:00:00.123+02:00", true),
            ("date-time", "2024-01-01", false),
            ("date", "2024-01-01", true),
            ("byte", "aGVsbG8=", true),
            ("byte", "not base64!", false),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uuid", "123", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "10.0.0", false),
            ("cidr", "10.0.0.0/16", true),
            ("cidr", "10.0.0.0", false),
            ("cidr", "10.0.0.0/32", true),
            ("cidr", "10.0.0.0/33", false),
            ("cidr", "fd00::/128", true),
            ("cidr", "fd00::/129", false),
            ("cidr", "10.0.0.0/+8", false),
            ("date", "2024-02-29", true),
            ("date", "2026-02-29", false),
            ("date", "2026-02-30", false),
            ("date", "2026-13-45", false),
            ("date", "2026-04-31", false),
            ("mac", "00:1a:2B:3c:4d:5e", true),
            ("mac", "00-1a-2b-3c-4d-5e", true),
            ("mac", "001a.2b3c.4d5e", true),
            ("mac", "00:00:5e:00:53:01:00:00", true),
            ("mac", "zz:zz:zz", false),
            ("mac", "00:1a:2b:3c:4d", false),
            ("mac", "001a2b3c4d5e", false),
            ("duration", "1h30m", true),
            ("duration", "5 minutes", false),
            ("hostname", "example.com", true),
            ("hostname", "-bad-.com", false),
            ("email", "a@example.com", true),
            ("email", "example.com", false),
            ("some-format-nobody-knows", "anything", true),
        ];
        for (format, s, want) in cases {
            assert_eq!(format_matches(format, s), want, "{format} {s}");
        }
    }
}
