//! The named string formats of the Kubernetes format library
//! (`format.dns1123Label().validate(s)`), each answering the messages of the
//! apimachinery validator it stands for.

use std::sync::LazyLock;

use regex::Regex;

use super::url::Url;

/// The formats the library names, by their `format.<name>()` name.
pub const NAMES: [&str; 13] = [
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

const LABEL: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1035: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const LABEL_VALUE: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const QUALIFIED_NAME: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";

fn anchored(pattern: &str) -> Regex {
    // The patterns are constants of this module.
    #[allow(clippy::expect_used)]
    Regex::new(&format!("^(?:{pattern})$")).expect("a valid constant pattern")
}

static LABEL_RE: LazyLock<Regex> = LazyLock::new(|| anchored(LABEL));
static SUBDOMAIN_RE: LazyLock<Regex> = LazyLock::new(|| anchored(&format!("{LABEL}(\\.{LABEL})*")));
static DNS1035_RE: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1035));
static LABEL_VALUE_RE: LazyLock<Regex> = LazyLock::new(|| anchored(LABEL_VALUE));
static QUALIFIED_NAME_RE: LazyLock<Regex> = LazyLock::new(|| anchored(QUALIFIED_NAME));

/// apimachinery's `RegexError`.
fn regex_error(message: &str, pattern: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{message} (e.g. {}regex used for validation is '{pattern}')",
        examples.join(" or ")
    )
}

fn max_len(n: usize) -> String {
    format!("must be no more than {n} characters")
}

fn dns1123_label(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 63 {
        errors.push(max_len(63));
    }
    if !LABEL_RE.is_match(s) {
        errors.push(regex_error(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
            LABEL,
            &["my-name", "123-abc"],
        ));
    }
    errors
}

fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 253 {
        errors.push(max_len(253));
    }
    if !SUBDOMAIN_RE.is_match(s) {
        errors.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            &format!("{LABEL}(\\.{LABEL})*"),
            &["example.com"],
        ));
    }
    errors
}

fn dns1035_label(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 63 {
        errors.push(max_len(63));
    }
    if !DNS1035_RE.is_match(s) {
        errors.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            DNS1035,
            &["my-name", "abc-123"],
        ));
    }
    errors
}

/// apimachinery's `maskTrailingDash`: a name prefix may end in `-`.
fn mask_trailing_dash(s: &str) -> String {
    match s.strip_suffix('-') {
        Some(rest) if s.len() > 1 => format!("{rest}a"),
        _ => s.to_string(),
    }
}

fn label_value(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 63 {
        errors.push(max_len(63));
    }
    if !LABEL_VALUE_RE.is_match(s) {
        errors.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            LABEL_VALUE,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

/// apimachinery's `IsQualifiedName`.
fn qualified_name(s: &str) -> Vec<String> {
    let message = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                return vec!["prefix part must be non-empty".to_string()]
                    .into_iter()
                    .chain(qualified_name_part(name, message))
                    .collect();
            }
            let mut errors: Vec<String> = dns1123_subdomain(prefix)
                .into_iter()
                .map(|e| format!("prefix part {e}"))
                .collect();
            errors.extend(qualified_name_part(name, message));
            return errors;
        }
        _ => {
            return vec![regex_error(
                &format!("a qualified name {message}"),
                &format!("({LABEL}(\\.{LABEL})*/)?{QUALIFIED_NAME}"),
                &["MyName", "my.name", "123-abc"],
            )];
        }
    };
    qualified_name_part(name, message)
}

fn qualified_name_part(name: &str, message: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errors.push(format!("name part {}", max_len(63)));
    }
    if !QUALIFIED_NAME_RE.is_match(name) {
        errors.push(regex_error(
            &format!("name part {message}"),
            QUALIFIED_NAME,
            &["MyName", "my.name", "123-abc"],
        ));
    }
    errors
}

/// The messages of format `name` for `s`: empty when `s` is valid.
pub fn validate(name: &str, s: &str) -> Vec<String> {
    let one = |ok: bool, message: &str| {
        if ok {
            Vec::new()
        } else {
            vec![message.to_string()]
        }
    };
    match name {
        "dns1123Label" => dns1123_label(s),
        "dns1123Subdomain" => dns1123_subdomain(s),
        "dns1035Label" => dns1035_label(s),
        "qualifiedName" => qualified_name(s),
        "dns1123LabelPrefix" => dns1123_label(&mask_trailing_dash(s)),
        "dns1123SubdomainPrefix" => dns1123_subdomain(&mask_trailing_dash(s)),
        "dns1035LabelPrefix" => dns1035_label(&mask_trailing_dash(s)),
        "labelValue" => label_value(s),
        "uri" => match Url::parse_request_uri(s) {
            Ok(_) => Vec::new(),
            Err(e) => vec![
                e.strip_prefix("URL parse error during conversion from string: ")
                    .unwrap_or(&e)
                    .to_string(),
            ],
        },
        "uuid" => one(
            crate::openapi::format_matches("uuid", s),
            "does not match the UUID format",
        ),
        "byte" => one(crate::openapi::format_matches("byte", s), "invalid base64"),
        "date" => one(crate::openapi::format_matches("date", s), "invalid date"),
        "datetime" => one(
            crate::openapi::format_matches("date-time", s),
            "invalid datetime",
        ),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_formats_answer_apimachinerys_messages() {
        let cases: [(&str, &str, usize); 18] = [
            ("dns1123Label", "my-name", 0),
            ("dns1123Label", "My_Name", 1),
            ("dns1123Label", &"a".repeat(64), 1),
            ("dns1123Subdomain", "example.com", 0),
            ("dns1123Subdomain", "-example.com", 1),
            ("dns1035Label", "1abc", 1),
            ("dns1035Label", "abc-1", 0),
            ("dns1123LabelPrefix", "my-prefix-", 0),
            ("dns1123Label", "my-prefix-", 1),
            ("labelValue", "", 0),
            ("labelValue", "-bad", 1),
            ("qualifiedName", "example.com/My.Name", 0),
            ("qualifiedName", "a/b/c", 1),
            ("uri", "https://example.com", 0),
            ("uri", "not a uri", 1),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", 0),
            ("date", "2024-02-30", 1),
            ("datetime", "2024-01-01T00:00:00Z", 0),
        ];
        for (name, s, errors) in cases {
            assert_eq!(
                validate(name, s).len(),
                errors,
                "{name} {s:?}: {:?}",
                validate(name, s)
            );
        }
        assert_eq!(
            validate("dns1123Label", "A"),
            [
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
    }
}
