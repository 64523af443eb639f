//! URLs as the Kubernetes URL library reads them: `url()` accepts what Go's
//! `url.ParseRequestURI` accepts (an absolute URI or an absolute path), and
//! the accessors answer what Go's `url.URL` answers.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub scheme: String,
    /// `host[:port]`, as written (IPv6 literals keep their brackets).
    pub host: String,
    /// The path as written, still escaped.
    pub raw_path: String,
    pub raw_query: String,
}

fn parse_error(raw: &str, why: &str) -> String {
    format!(
        "URL parse error during conversion from string: parse {}: {why}",
        plait_go_compat::strconv::quote(raw)
    )
}

fn is_hex(b: u8) -> bool {
    b.is_ascii_hexdigit()
}

/// Go's `unescape`: every `%` starts two hex digits.
fn check_escapes(s: &str) -> Result<(), String> {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            if i + 2 >= bytes.len() || !is_hex(bytes[i + 1]) || !is_hex(bytes[i + 2]) {
                let end = (i + 3).min(bytes.len());
                return Err(format!(
                    "invalid URL escape {}",
                    plait_go_compat::strconv::quote(&s[i..end])
                ));
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    Ok(())
}

fn unescape(s: &str, plus_is_space: bool) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

impl Url {
    /// `url.ParseRequestURI`, with the Kubernetes library's error text.
    pub fn parse_request_uri(raw: &str) -> Result<Url, String> {
        if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
            return Err(parse_error(
                raw,
                "net/url: invalid control character in URL",
            ));
        }
        let (scheme, rest) = match split_scheme(raw) {
            Ok(split) => split,
            Err(why) => return Err(parse_error(raw, why)),
        };
        let (rest, raw_query) = match rest.split_once('?') {
            Some((r, q)) => (r, q.to_string()),
            None => (rest, String::new()),
        };
        if !rest.starts_with('/') {
            if scheme.is_empty() {
                return Err(parse_error(raw, "invalid URI for request"));
            }
            // An opaque URI, `mailto:a@b`.
            return Ok(Url {
                scheme,
                host: String::new(),
                raw_path: String::new(),
                raw_query,
            });
        }
        let (host, path) = if !scheme.is_empty() && rest.starts_with("//") {
            let authority_and_path = &rest[2..];
            let end = authority_and_path
                .find('/')
                .unwrap_or(authority_and_path.len());
            let authority = &authority_and_path[..end];
            let host = match authority.rfind('@') {
                Some(at) => &authority[at + 1..],
                None => authority,
            };
            check_host(host).map_err(|why| parse_error(raw, &why))?;
            (host.to_string(), &authority_and_path[end..])
        } else {
            (String::new(), rest)
        };
        check_escapes(path).map_err(|why| parse_error(raw, &why))?;
        Ok(Url {
            scheme,
            host,
            raw_path: path.to_string(),
            raw_query,
        })
    }

    /// `URL.Hostname()`: the host without port or IPv6 brackets.
    pub fn hostname(&self) -> &str {
        let (host, _) = split_host_port(&self.host);
        host.strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host)
    }

    /// `URL.Port()`.
    pub fn port(&self) -> &str {
        split_host_port(&self.host).1
    }

    /// `URL.EscapedPath()`.
    pub fn escaped_path(&self) -> String {
        let valid = self
            .raw_path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/%".contains(&b));
        if valid {
            return self.raw_path.clone();
        }
        let path = unescape(&self.raw_path, false).unwrap_or_else(|| self.raw_path.clone());
        let mut out = String::new();
        for b in path.bytes() {
            if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&b) {
                out.push(char::from(b));
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        out
    }

    /// `URL.Query()`: pairs that do not unescape are dropped, as are keys
    /// with a `;`.
    pub fn query(&self) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for pair in self.raw_query.split('&') {
            if pair.is_empty() || pair.contains(';') {
                continue;
            }
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            if let (Some(k), Some(v)) = (unescape(key, true), unescape(value, true)) {
                out.entry(k).or_default().push(v);
            }
        }
        out
    }
}

/// Go's `getScheme`.
fn split_scheme(raw: &str) -> Result<(String, &str), &'static str> {
    for (i, c) in raw.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' => {
                if i == 0 {
                    return Err("missing protocol scheme");
                }
                return Ok((raw[..i].to_ascii_lowercase(), &raw[i + 1..]));
            }
            _ => return Ok((String::new(), raw)),
        }
    }
    Ok((String::new(), raw))
}

fn split_host_port(host: &str) -> (&str, &str) {
    if let Some(close) = host.rfind(']') {
        let after = &host[close + 1..];
        return match after.strip_prefix(':') {
            Some(port) => (&host[..=close], port),
            None => (&host[..=close], ""),
        };
    }
    match host.rfind(':') {
        Some(colon) => (&host[..colon], &host[colon + 1..]),
        None => (host, ""),
    }
}

/// Go's `parseHost`: a bracketed IPv6 literal or a name, then an optional
/// `:port` of digits.
fn check_host(host: &str) -> Result<(), String> {
    let quote = plait_go_compat::strconv::quote;
    let (name, port) = if host.starts_with('[') {
        let Some(close) = host.rfind(']') else {
            return Err("missing ']' in host".to_string());
        };
        let after = &host[close + 1..];
        if !after.is_empty() && !after.starts_with(':') {
            return Err(format!("invalid port {} after host", quote(after)));
        }
        (&host[..=close], after)
    } else {
        match host.rfind(':') {
            Some(colon) => (&host[..colon], &host[colon..]),
            None => (host, ""),
        }
    };
    if let Some(digits) = port.strip_prefix(':')
        && !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(format!("invalid port {} after host", quote(port)));
    }
    for c in name.chars() {
        let allowed =
            c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=:[]%".contains(c) || !c.is_ascii();
        if !allowed {
            return Err(format!(
                "invalid character {} in host name",
                quote(&c.to_string())
            ));
        }
    }
    check_escapes(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_read_as_go_reads_a_request_uri() {
        let cases = [
            (
                "https://example.com:8080/a/b?x=1&y=2&x=3",
                "https",
                "example.com:8080",
                "example.com",
                "8080",
                "/a/b",
            ),
            ("http://[::1]:80/", "http", "[::1]:80", "::1", "80", "/"),
            (
                "https://user:pw@example.com",
                "https",
                "example.com",
                "example.com",
                "",
                "",
            ),
            ("/just/a/path", "", "", "", "", "/just/a/path"),
            (
                "HTTPS://EXAMPLE.com/%7Efoo",
                "https",
                "EXAMPLE.com",
                "EXAMPLE.com",
                "",
                "/%7Efoo",
            ),
        ];
        for (raw, scheme, host, hostname, port, path) in cases {
            let url = Url::parse_request_uri(raw).unwrap_or_else(|e| panic!("{raw}: {e}"));
            assert_eq!(
                (
                    url.scheme.as_str(),
                    url.host.as_str(),
                    url.hostname(),
                    url.port(),
                    url.escaped_path().as_str()
                ),
                (scheme, host, hostname, port, path),
                "{raw}"
            );
        }
        let query = Url::parse_request_uri("https://a/?x=1&y=a+b&x=%41").map(|u| u.query());
        assert_eq!(
            query.ok().and_then(|q| serde_json::to_value(q).ok()),
            Some(serde_json::json!({"x": ["1", "A"], "y": ["a b"]}))
        );
        for raw in [
            "example.com",
            ":foo",
            "http://a b/",
            "https://a:xx/",
            "/%zz",
            "",
        ] {
            assert!(Url::parse_request_uri(raw).is_err(), "{raw:?}");
        }
    }
}
