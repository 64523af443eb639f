//! The string formats a custom resource's schema may name, checked as
//! kube-apiserver checks them: kube-openapi's `strfmt` registry (its own
//! copy of go-openapi's, with govalidator's rules) behind the
//! apiextensions list of supported formats. A format outside that list
//! takes any string, as there.

use std::net::{IpAddr, Ipv6Addr};
use std::sync::LazyLock;

use regex::Regex;

use crate::cel::url::Url;

fn compiled(pattern: &str) -> Regex {
    // The patterns are constants of this module.
    #[allow(clippy::expect_used)]
    Regex::new(pattern).expect("a valid constant pattern")
}

fn anchored(pattern: &str) -> Regex {
    compiled(&format!("^(?:{pattern})$"))
}

/// Go's `\s` and `\d` are ASCII-only; these stand for them in patterns
/// that Rust would otherwise read as Unicode classes.
const GO_SPACE: &str = r"[\t\n\f\r ]";

static HOSTNAME: LazyLock<Regex> = LazyLock::new(|| {
    anchored(
        r"[a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63}",
    )
});
static UUID: LazyLock<Regex> = LazyLock::new(|| {
    anchored("(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}")
});
static UUID3: LazyLock<Regex> = LazyLock::new(|| {
    anchored("(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}")
});
static UUID4: LazyLock<Regex> = LazyLock::new(|| {
    anchored("(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}")
});
static UUID5: LazyLock<Regex> = LazyLock::new(|| {
    anchored("(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}")
});
static CREDIT_CARD: LazyLock<Regex> = LazyLock::new(|| {
    anchored(
        "4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11}",
    )
});
static SSN: LazyLock<Regex> = LazyLock::new(|| anchored("[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}"));
static HEX_COLOR: LazyLock<Regex> = LazyLock::new(|| anchored("#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})"));
static RGB_COLOR: LazyLock<Regex> = LazyLock::new(|| {
    let byte = "(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])";
    let s = GO_SPACE;
    anchored(&format!(
        r"rgb\({s}*{byte}{s}*,{s}*{byte}{s}*,{s}*{byte}{s}*\)"
    ))
});
static BASE64: LazyLock<Regex> = LazyLock::new(|| {
    anchored("(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})")
});
static TIME_OF_DAY: LazyLock<Regex> = LazyLock::new(|| {
    anchored("([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))")
});
/// strfmt's lenient duration: any `<digits> <unit word>` run in the text.
static DURATION_PART: LazyLock<Regex> =
    LazyLock::new(|| compiled(&format!("([0-9]+){GO_SPACE}*([A-Za-zµ]+)")));

/// Whether `s` is in `format` as kube-apiserver checks a custom resource's
/// string; a format it does not check takes any string.
pub(crate) fn schema_format_matches(format: &str, s: &str) -> bool {
    // strfmt looks formats up with dashes and underscores removed.
    match format.to_ascii_lowercase().replace(['-', '_'], "").as_str() {
        "bsonobjectid" => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => Url::parse_request_uri(s).is_ok(),
        "email" => is_email(s),
        "hostname" => HOSTNAME.is_match(s) && s.len() <= 255 && s.split('.').all(|p| p.len() <= 63),
        "ipv4" => is_ipv4_sloppy(s) || (s.contains('.') && s.parse::<Ipv6Addr>().is_ok()),
        "ipv6" => s.contains(':') && s.parse::<IpAddr>().is_ok(),
        "cidr" => is_cidr_sloppy(s),
        "mac" => is_mac(s),
        "uuid" => UUID.is_match(s),
        "uuid3" => UUID3.is_match(s),
        "uuid4" => UUID4.is_match(s),
        "uuid5" => UUID5.is_match(s),
        "isbn" => is_isbn10(s) || is_isbn13(s),
        "isbn10" => is_isbn10(s),
        "isbn13" => is_isbn13(s),
        "creditcard" => is_credit_card(s),
        "ssn" => s.len() == 11 && SSN.is_match(s),
        "hexcolor" => HEX_COLOR.is_match(s),
        "rgbcolor" => RGB_COLOR.is_match(s),
        "byte" => BASE64.is_match(s),
        "date" => crate::openapi::is_date(s),
        "datetime" => is_date_time(s),
        "duration" => is_duration(s),
        _ => true,
    }
}

/// Go's `net/mail.ParseAddress`: an addr-spec, with any comments after
/// it, or an angle address after a display name (not checked).
fn is_email(s: &str) -> bool {
    let s = s.trim();
    let s = match (s.rfind('<'), s.strip_suffix('>')) {
        (Some(open), Some(inner)) => &inner[open + 1..],
        _ => without_trailing_comments(s),
    };
    let Some((user, domain)) = s.rsplit_once('@') else {
        return false;
    };
    let domain = domain.trim_start();
    let atext =
        |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c) || !c.is_ascii();
    let dot_atom =
        |t: &str| !t.is_empty() && t.split('.').all(|p| !p.is_empty() && p.chars().all(atext));
    let quoted = user.len() >= 2 && user.starts_with('"') && user.ends_with('"');
    (quoted || dot_atom(user))
        && (dot_atom(domain) || (domain.starts_with('[') && domain.ends_with(']')))
}

/// `s` without the comments (`(…)`, nested) and spaces that follow an
/// address, which net/mail skips.
fn without_trailing_comments(mut s: &str) -> &str {
    while let Some(inner) = s.strip_suffix(')') {
        let mut depth = 1;
        let open = inner.char_indices().rev().find_map(|(i, c)| {
            match c {
                ')' => depth += 1,
                '(' => depth -= 1,
                _ => {}
            }
            (depth == 0).then_some(i)
        });
        match open {
            Some(open) => s = inner[..open].trim_end(),
            None => return s,
        }
    }
    s
}

/// `k8s.io/utils/net.ParseIPSloppy` for IPv4: four decimal fields up to
/// 255, leading zeros allowed.
fn is_ipv4_sloppy(s: &str) -> bool {
    let fields: Vec<&str> = s.split('.').collect();
    fields.len() == 4
        && fields.iter().all(|f| {
            let significant = f.trim_start_matches('0');
            !f.is_empty()
                && f.bytes().all(|b| b.is_ascii_digit())
                && significant.len() <= 3
                && significant
                    .parse::<u32>()
                    .map_or(significant.is_empty(), |n| n <= 255)
        })
}

/// `k8s.io/utils/net.ParseCIDRSloppy`: an address, `/`, and a decimal
/// prefix length no longer than the address.
fn is_cidr_sloppy(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let width = if is_ipv4_sloppy(ip) {
        32
    } else if ip.parse::<Ipv6Addr>().is_ok() {
        128
    } else {
        return false;
    };
    !bits.is_empty()
        && bits.len() <= 3
        && bits.bytes().all(|b| b.is_ascii_digit())
        && bits.parse::<u16>().is_ok_and(|n| n <= width)
}

/// Go's `net.ParseMAC`: 6, 8 or 20 bytes as hex pairs separated by `:` or
/// `-`, as dotted groups of four hex digits, or (Go 1.24 on) as bare hex.
fn is_mac(s: &str) -> bool {
    let hex =
        |part: &str, len: usize| part.len() == len && part.bytes().all(|b| b.is_ascii_hexdigit());
    let sizes = [6, 8, 20];
    if s.len() < 12 {
        return false;
    }
    let b = s.as_bytes();
    if b[2] == b':' || b[2] == b'-' {
        let separator = b[2] as char;
        let parts: Vec<&str> = s.split(separator).collect();
        return sizes.contains(&parts.len()) && parts.iter().all(|p| hex(p, 2));
    }
    if b[4] == b'.' {
        let groups: Vec<&str> = s.split('.').collect();
        return sizes.contains(&(groups.len() * 2)) && groups.iter().all(|g| hex(g, 4));
    }
    s.len().is_multiple_of(2) && sizes.contains(&(s.len() / 2)) && hex(s, s.len())
}

/// govalidator's ISBN checks read the digits with spaces and dashes removed.
fn isbn_digits(s: &str) -> Vec<u8> {
    s.bytes()
        .filter(|b| !matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'-' | b'\x0b'))
        .collect()
}

fn is_isbn10(s: &str) -> bool {
    let d = isbn_digits(s);
    let shaped = d.len() == 10
        && d[..9].iter().all(u8::is_ascii_digit)
        && (d[9].is_ascii_digit() || d[9] == b'X');
    if !shaped {
        return false;
    }
    let mut sum: u32 = (0..9)
        .map(|i| (i as u32 + 1) * u32::from(d[i] - b'0'))
        .sum();
    sum += 10
        * if d[9] == b'X' {
            10
        } else {
            u32::from(d[9] - b'0')
        };
    sum.is_multiple_of(11)
}

fn is_isbn13(s: &str) -> bool {
    let d = isbn_digits(s);
    if d.len() != 13 || !d.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 = (0..12)
        .map(|i| [1, 3][i % 2] * u32::from(d[i] - b'0'))
        .sum();
    u32::from(d[12] - b'0') == (10 - sum % 10) % 10
}

/// govalidator: the digits (all else dropped) match a card issuer's
/// numbering and pass the Luhn check.
fn is_credit_card(s: &str) -> bool {
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    if !CREDIT_CARD.is_match(&digits) {
        return false;
    }
    let sum: u32 = digits
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, b)| {
            let d = u32::from(b - b'0');
            if i % 2 == 1 {
                let doubled = d * 2;
                if doubled >= 10 {
                    doubled % 10 + 1
                } else {
                    doubled
                }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// strfmt's `IsDateTime`: the lower-cased text split at every `t`; the
/// first piece a date, the second a time of day (hours to 23, minutes
/// and seconds to 59) with a zone.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let mut pieces = lower.split('t');
    let (Some(date), Some(time)) = (pieces.next(), pieces.next()) else {
        return false;
    };
    if !crate::openapi::is_date(date) {
        return false;
    }
    let Some(m) = TIME_OF_DAY.captures(time) else {
        return false;
    };
    let field = |i: usize| m.get(i).map_or("", |g| g.as_str());
    field(1) <= "23" && field(2) <= "59" && field(3) <= "59"
}

/// strfmt's `ParseDuration`: Go's `time.ParseDuration`, or else any
/// `<digits><unit>` run whose unit it knows (`3 days`, `2 weeks`); a run
/// whose digits overflow fails the whole text.
fn is_duration(s: &str) -> bool {
    if crate::openapi::is_go_duration(s) {
        return true;
    }
    // Each unit's spellings; the last of each is a prefix (`hours`).
    const UNITS: [&[&str]; 8] = [
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let mut known = false;
    for run in DURATION_PART.captures_iter(s) {
        let digits = run.get(1).map_or("", |g| g.as_str());
        if digits.parse::<i64>().is_err() {
            return false;
        }
        let unit = run
            .get(2)
            .map_or(String::new(), |g| g.as_str().to_lowercase());
        known |= UNITS.iter().any(|spellings| {
            let last = spellings.len() - 1;
            spellings
                .iter()
                .enumerate()
                .any(|(i, v)| (i == last && unit.starts_with(v)) || unit == *v)
        });
    }
    known
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_answer_as_kube_apiserver_strfmt_does() {
        let cases = [
            ("bsonobjectid", "507f1f77bcf86cd799439011", true),
            ("bsonobjectid", "507f1f77bcf86cd79943901", false),
            ("uri", "https://example.org/a?b=c", true),
            ("uri", "/relative/path", true),
            ("uri", "plain text", false),
            ("uri", "", false),
            ("hostname", "host-1.example.org", true),
            ("hostname", "aGVsbG8=", true),
            ("hostname", "192.168.0.1", false),
            ("hostname", "-bad-.example", false),
            ("ipv4", "192.168.0.1", true),
            ("ipv4", "010.001.0.1", true),
            ("ipv4", "256.1.1.1", false),
            ("ipv6", "fd00::1", true),
            ("ipv6", "192.168.0.1", false),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("mac", "00:1a:2b:3c:4d:5e", true),
            ("mac", "4111111111111111", true),
            ("mac", "0000.5e00.5301", true),
            ("mac", "zz:zz:zz", false),
            ("uuid", "f47ac10b58cc4372a5670e02b2c3d479", true),
            ("uuid3", "a3bb189e-8bf9-3888-9912-ace4e6543002", true),
            ("uuid3", "f47ac10b-58cc-4372-a567-0e02b2c3d479", false),
            ("uuid4", "f47ac10b-58cc-4372-a567-0e02b2c3d479", true),
            ("uuid4", "886313e1-3b8a-5372-9b90-0c9aee199e5d", false),
            ("uuid5", "886313e1-3b8a-5372-9b90-0c9aee199e5d", true),
            ("isbn", "978-3-16-148410-0", true),
            ("isbn10", "0-306-40615-2", true),
            ("isbn10", "978-3-16-148410-0", false),
            ("isbn13", "978-3-16-148410-0", true),
            ("creditcard", "4111111111111111", true),
            ("creditcard", "4111111111111112", false),
            ("ssn", "123-45-6789", true),
            ("ssn", "123456789", false),
            ("hexcolor", "#ffaa00", true),
            ("hexcolor", "#ffaa0", false),
            ("rgbcolor", "rgb(255, 170, 0)", true),
            ("rgbcolor", "rgb(256, 0, 0)", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "aGVsbG8", false),
            ("byte", "", false),
            ("date", "2024-02-29", true),
            ("date", "2026-02-30", false),
            ("date-time", "2026-11-25T10:00:00.123+01:00", true),
            ("datetime", "2026-11-25T25:00:00Z", false),
            ("date-time", "2026-11-25 10:00:00", false),
            ("duration", "1h30m", true),
            ("duration", "3 days", true),
            ("duration", "00:1a:2b:3c:4d:5e", true),
            ("duration", "plain text", false),
            ("duration", "99999999999999999999 days", false),
            ("email", "a@b.c", true),
            ("email", "a@b.c (comment)", true),
            ("email", "a@b.c (nested (comment))", true),
            ("email", "a@b.c(comment)", true),
            ("email", "John (x) <a@b.c>", true),
            ("email", "=?utf-8?q?J=C3=B6rg?= <j@b.c>", true),
            ("email", "\"a b\"@c.d", true),
            ("email", "a@[1.2.3.4]", true),
            ("email", "a@ b.c", true),
            ("email", "ü@b.c", true),
            ("email", "a @b.c", false),
            ("email", "a..b@c", false),
            ("email", "a@b.c.", false),
            ("email", "", false),
            ("password", "anything", true),
            ("k8s-short-name", "Not A Name", true),
        ];
        for (format, s, want) in cases {
            assert_eq!(schema_format_matches(format, s), want, "{format} {s:?}");
        }
    }
}
