//! Semantic versions as the Kubernetes semver library (version 1) reads
//! them: strict `MAJOR.MINOR.PATCH[-PRE][+BUILD]`, or, normalized, with a
//! leading `v`, missing minor and patch, and leading zeros tolerated.

use std::cmp::Ordering;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Semver {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pre: Vec<Identifier>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Identifier {
    Numeric(u64),
    Alphanumeric(String),
}

fn numeric(part: &str, what: &str) -> Result<u64, String> {
    if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "Invalid character(s) found in {what} number {part:?}"
        ));
    }
    if part.len() > 1 && part.starts_with('0') {
        return Err(format!(
            "{} number must not contain leading zeroes {part:?}",
            capitalized(what)
        ));
    }
    part.parse::<u64>().map_err(|e| e.to_string())
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

impl Semver {
    /// blang/semver's `Parse`, or with `normalize` the library's lenient
    /// reading, with blang/semver's error text.
    pub fn parse(raw: &str, normalize: bool) -> Result<Semver, String> {
        let text = if normalize {
            normalized(raw)
        } else {
            raw.to_string()
        };
        Semver::strict(&text)
    }

    fn strict(s: &str) -> Result<Semver, String> {
        if s.is_empty() {
            return Err("Version string empty".to_string());
        }
        let parts: Vec<&str> = s.splitn(3, '.').collect();
        if parts.len() != 3 {
            return Err("No Major.Minor.Patch elements found".to_string());
        }
        let major = numeric(parts[0], "major")?;
        let minor = numeric(parts[1], "minor")?;
        let rest = parts[2];
        let patch_end = rest.find(['-', '+']).unwrap_or(rest.len());
        let patch = numeric(&rest[..patch_end], "patch")?;
        let mut rest = &rest[patch_end..];
        let mut pre = Vec::new();
        if let Some(r) = rest.strip_prefix('-') {
            let end = r.find('+').unwrap_or(r.len());
            for id in r[..end].split('.') {
                if id.is_empty() {
                    return Err("Prerelease is empty".to_string());
                }
                if !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
                    return Err(format!("Invalid character(s) found in prerelease {id:?}"));
                }
                if id.bytes().all(|b| b.is_ascii_digit()) {
                    if id.len() > 1 && id.starts_with('0') {
                        return Err(format!(
                            "Numeric PreRelease version must not contain leading zeroes {id:?}"
                        ));
                    }
                    pre.push(Identifier::Numeric(
                        id.parse()
                            .map_err(|e: std::num::ParseIntError| e.to_string())?,
                    ));
                } else {
                    pre.push(Identifier::Alphanumeric(id.to_string()));
                }
            }
            rest = &r[end..];
        }
        if let Some(build) = rest.strip_prefix('+') {
            for id in build.split('.') {
                if id.is_empty() {
                    return Err("Build meta data is empty".to_string());
                }
                if !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
                    return Err(format!(
                        "Invalid character(s) found in build meta data {id:?}"
                    ));
                }
            }
        }
        Ok(Semver {
            major,
            minor,
            patch,
            pre,
        })
    }

    /// Semver precedence: build metadata is ignored, a pre-release sorts
    /// before its release.
    pub fn compare(&self, other: &Semver) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| match (self.pre.is_empty(), other.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => {
                    for (a, b) in self.pre.iter().zip(&other.pre) {
                        let order = match (a, b) {
                            (Identifier::Numeric(x), Identifier::Numeric(y)) => x.cmp(y),
                            (Identifier::Numeric(_), Identifier::Alphanumeric(_)) => Ordering::Less,
                            (Identifier::Alphanumeric(_), Identifier::Numeric(_)) => {
                                Ordering::Greater
                            }
                            (Identifier::Alphanumeric(x), Identifier::Alphanumeric(y)) => x.cmp(y),
                        };
                        if order != Ordering::Equal {
                            return order;
                        }
                    }
                    self.pre.len().cmp(&other.pre.len())
                }
            })
    }
}

/// The library's normalization: a leading `v` dropped, leading zeros of the
/// three numbers dropped, a missing minor or patch added as `0`.
fn normalized(raw: &str) -> String {
    let s = raw.strip_prefix('v').unwrap_or(raw);
    let core_end = s.find(['-', '+']).unwrap_or(s.len());
    let (core, tail) = s.split_at(core_end);
    let mut numbers: Vec<String> = core
        .split('.')
        .map(|n| {
            let trimmed = n.trim_start_matches('0');
            if trimmed.is_empty() && !n.is_empty() {
                "0".to_string()
            } else {
                trimmed.to_string()
            }
        })
        .collect();
    while numbers.len() < 3 {
        numbers.push("0".to_string());
    }
    format!("{}{tail}", numbers.join("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_order_by_semver_precedence() {
        let ordered = [
            ("1.0.0-alpha", "1.0.0-alpha.1"),
            ("1.0.0-alpha.1", "1.0.0-alpha.beta"),
            ("1.0.0-beta.2", "1.0.0-beta.11"),
            ("1.0.0-rc.1", "1.0.0"),
            ("1.0.0", "1.0.1"),
            ("1.9.0", "1.10.0"),
        ];
        for (lo, hi) in ordered {
            let lo_v = Semver::parse(lo, false).unwrap_or_else(|e| panic!("{lo}: {e}"));
            let hi_v = Semver::parse(hi, false).unwrap_or_else(|e| panic!("{hi}: {e}"));
            assert_eq!(lo_v.compare(&hi_v), Ordering::Less, "{lo} < {hi}");
        }
        let build = Semver::parse("1.2.3+build.5", false).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((build.major, build.minor, build.patch), (1, 2, 3));
        for raw in [
            "1.2", "v1.2.3", "01.2.3", "1.2.3-01", "1.2.3-", "1.2.3+", "a.b.c", "",
        ] {
            assert!(Semver::parse(raw, false).is_err(), "{raw}");
        }
        for (raw, major, minor, patch) in
            [("v1.2", 1, 2, 0), ("01.02.03", 1, 2, 3), ("v2", 2, 0, 0)]
        {
            let v = Semver::parse(raw, true).unwrap_or_else(|e| panic!("{raw}: {e}"));
            assert_eq!((v.major, v.minor, v.patch), (major, minor, patch), "{raw}");
        }
    }
}
