//! The string formats of apimachinery's `util/validation`: each check
//! returns the messages kube-apiserver v1.34 gives, none when the string
//! is valid.

/// Go's `RegexError`: the format's description, its examples and the
/// regular expression.
fn regex_error(message: &str, format: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{message} (regex used for validation is '{format}')");
    }
    let shown: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{message} (e.g. {}regex used for validation is '{format}')",
        shown.join(" or ")
    )
}

pub(crate) fn max_len_error(max: usize) -> String {
    format!("must be no more than {max} characters")
}

pub(crate) fn inclusive_range_error(lo: i64, hi: i64) -> String {
    format!("must be between {lo} and {hi}, inclusive")
}

const LABEL_FORMAT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const SUBDOMAIN_FORMAT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035_FORMAT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const LABEL_KEY_FORMAT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_MESSAGE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, by hand: this runs for every name.
fn is_label_shape(s: &str) -> bool {
    let b = s.as_bytes();
    let inner = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-';
    let end = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty() && end(&b[0]) && end(&b[b.len() - 1]) && b.iter().all(inner)
}

fn is_subdomain_shape(s: &str) -> bool {
    s.split('.').all(is_label_shape)
}

/// `IsDNS1123Label`: a namespace's or a container's name.
pub(crate) fn dns1123_label(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 63 {
        errors.push(max_len_error(63));
    }
    if !is_label_shape(s) {
        if is_subdomain_shape(s) {
            errors.push("must not contain dots".to_string());
        } else {
            errors.push(regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
                LABEL_FORMAT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errors
}

/// `IsDNS1123Subdomain`: most objects' names.
pub(crate) fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 253 {
        errors.push(max_len_error(253));
    }
    if !is_subdomain_shape(s) {
        errors.push(subdomain_regex_error());
    }
    errors
}

fn subdomain_regex_error() -> String {
    regex_error(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        SUBDOMAIN_FORMAT,
        &["example.com"],
    )
}

/// `IsDNS1035Label`: a Service's name, an Ingress backend's service.
pub(crate) fn dns1035_label(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 63 {
        errors.push(max_len_error(63));
    }
    if !(is_label_shape(s) && s.as_bytes()[0].is_ascii_lowercase()) {
        errors.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            DNS1035_FORMAT,
            &["my-name", "abc-123"],
        ));
    }
    errors
}

/// `IsWildcardDNS1123Subdomain`: `*.example.com`.
pub(crate) fn wildcard_dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 253 {
        errors.push(max_len_error(253));
    }
    if !s.strip_prefix("*.").is_some_and(is_subdomain_shape) {
        errors.push(regex_error(
            "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character",
            &format!("\\*\\.{SUBDOMAIN_FORMAT}"),
            &["*.example.com"],
        ));
    }
    errors
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
fn is_label_key_name(s: &str) -> bool {
    let b = s.as_bytes();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.');
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(inner)
}

/// `IsQualifiedName`: a label or annotation key, a finalizer.
pub(crate) fn qualified_name(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_string());
            } else {
                errors.extend(
                    dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    LABEL_KEY_MESSAGE,
                    LABEL_KEY_FORMAT,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errors.push(format!("name part {}", max_len_error(63)));
    }
    if !is_label_key_name(name) {
        errors.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_MESSAGE,
                LABEL_KEY_FORMAT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errors
}

/// `IsValidLabelValue`.
pub(crate) fn label_value(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 63 {
        errors.push(max_len_error(63));
    }
    if !(s.is_empty() || is_label_key_name(s)) {
        errors.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?",
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

/// `IsValidPortName`: an IANA service name.
pub(crate) fn port_name(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 15 {
        errors.push(max_len_error(15));
    }
    if s.is_empty()
        || !s
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
    {
        errors.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
        );
    }
    if !s.bytes().any(|c| c.is_ascii_lowercase()) {
        errors.push("must contain at least one letter (a-z)".to_string());
    }
    if s.contains("--") {
        errors.push("must not contain consecutive hyphens".to_string());
    }
    if s.starts_with('-') || s.ends_with('-') {
        errors.push("must not begin or end with a hyphen".to_string());
    }
    errors
}

/// `IsValidPortNum`.
pub(crate) fn port_number(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) {
        Vec::new()
    } else {
        vec![inclusive_range_error(1, 65535)]
    }
}

/// `IsRelaxedEnvVarName`, the rule of v1.34 (RelaxedEnvironmentVariableValidation).
pub(crate) fn env_var_name(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.is_empty() {
        errors.push("environment variable name must be non-empty".to_string());
    }
    if s.chars().any(|c| !(' '..='~').contains(&c) || c == '=') {
        errors.push(
            "a valid environment variable name must consist only of printable ASCII characters other than '='"
                .to_string(),
        );
    }
    errors
}

/// `IsConfigMapKey`: a ConfigMap's or Secret's key.
pub(crate) fn config_map_key(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 253 {
        errors.push(max_len_error(253));
    }
    if s.is_empty()
        || !s
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'))
    {
        errors.push(regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            "[-._a-zA-Z0-9]+",
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    errors.extend(chdir_prefix(s));
    errors
}

fn chdir_prefix(s: &str) -> Vec<String> {
    match s {
        "." => vec!["must not be '.'".to_string()],
        ".." => vec!["must not be '..'".to_string()],
        _ if s.starts_with("..") => vec!["must not start with '..'".to_string()],
        _ => Vec::new(),
    }
}

/// `IsValidPercent`.
pub(crate) fn percent(s: &str) -> Vec<String> {
    let digits = s.strip_suffix('%').unwrap_or("");
    if !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()) {
        return Vec::new();
    }
    vec![regex_error(
        "a valid percent string must be a numeric string followed by an ending '%'",
        "[0-9]+%",
        &["1%", "93%"],
    )]
}

/// `path.IsValidPathSegmentName`: an RBAC object's name.
pub(crate) fn path_segment_name(s: &str) -> Vec<String> {
    if s == "." || s == ".." {
        return vec![format!("may not be '{s}'")];
    }
    let mut errors = Vec::new();
    for illegal in ["/", "%"] {
        if s.contains(illegal) {
            errors.push(format!("may not contain '{illegal}'"));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_as_apimachinery_checks_them() {
        type Check = fn(&str) -> Vec<String>;
        let cases: &[(Check, &str, usize)] = &[
            (dns1123_label, "web-1", 0),
            (dns1123_label, "web.1", 1),
            (dns1123_label, "Web", 1),
            (dns1123_label, "-web", 1),
            (dns1123_label, &"a".repeat(64), 1),
            (dns1123_subdomain, "web.example.com", 0),
            (dns1123_subdomain, "My_Pod", 1),
            (dns1123_subdomain, "a..b", 1),
            (dns1035_label, "web", 0),
            (dns1035_label, "1web", 1),
            (wildcard_dns1123_subdomain, "*.example.com", 0),
            (wildcard_dns1123_subdomain, "foo.*.com", 1),
            (qualified_name, "app.kubernetes.io/name", 0),
            (qualified_name, "-app", 1),
            (qualified_name, "Example_com/app", 1),
            (qualified_name, "a/b/c", 1),
            (qualified_name, "/app", 1),
            (label_value, "", 0),
            (label_value, "v1.2.3", 0),
            (label_value, "a b", 1),
            (port_name, "http", 0),
            (port_name, "8080", 1),
            (port_name, "Http", 1),
            (port_name, "-a--b", 2),
            (env_var_name, "MY_VAR.1", 0),
            (env_var_name, "A=B", 1),
            (config_map_key, ".env", 0),
            (config_map_key, "my key", 1),
            (config_map_key, "..x", 1),
            (percent, "25%", 0),
            (percent, "abc", 1),
            (path_segment_name, "system:view", 0),
            (path_segment_name, "a/b", 1),
        ];
        for (check, value, errors) in cases {
            assert_eq!(check(value).len(), *errors, "{value}: {:?}", check(value));
        }
    }

    #[test]
    fn messages_are_apimachinerys() {
        assert_eq!(
            label_value("a b")[0],
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        );
        assert_eq!(dns1123_label("team.a"), vec!["must not contain dots"]);
    }
}
