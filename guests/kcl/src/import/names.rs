//! The names `kcl import -m crd` derives: Go-style type names for nested
//! schemas, snake-case file names, humanized docstrings, attribute names
//! KCL accepts, and numbers printed as Go's `%v` prints them.

/// The initialisms kept upper-case in a type name (`vpcId` → `VpcID`).
const INITIALISMS: &[&str] = &[
    "ACL", "API", "ASCII", "CPU", "CSS", "DNS", "EOF", "GUID", "HTML", "HTTPS", "HTTP", "ID", "IP",
    "IPv4", "IPv6", "JSON", "LHS", "OAI", "QPS", "RAM", "RHS", "RPC", "SLA", "SMTP", "SQL", "SSH",
    "TCP", "TLS", "TTL", "UDP", "UI", "UID", "UUID", "URI", "URL", "UTF8", "VM", "XML", "XMPP",
    "XSRF", "XSS",
];

/// Words KCL reserves: an attribute so named is written `$name`.
const RESERVED_WORDS: &[&str] = &[
    "import", "as", "rule", "schema", "mixin", "protocol", "relaxed", "check", "for", "assert",
    "if", "elif", "else", "or", "and", "not", "in", "is", "final", "lambda", "all", "filter",
    "map", "type",
];

/// File-name endings that get a `_swagger` suffix (Go build constraints, as
/// the generator's Go heritage decides).
const RESERVED_FILE_SUFFIXES: &[&str] = &[
    "aix",
    "android",
    "darwin",
    "dragonfly",
    "freebsd",
    "hurd",
    "illumos",
    "js",
    "linux",
    "nacl",
    "netbsd",
    "openbsd",
    "plan9",
    "solaris",
    "windows",
    "zos",
    "386",
    "amd64",
    "amd64p32",
    "arm",
    "armbe",
    "arm64",
    "arm64be",
    "mips",
    "mipsle",
    "mips64",
    "mips64le",
    "mips64p32",
    "mips64p32le",
    "ppc",
    "ppc64",
    "ppc64le",
    "riscv",
    "riscv64",
    "s390",
    "s390x",
    "sparc",
    "sparc64",
    "wasm",
    "test",
];

fn initialism_at(chars: &[char]) -> Option<&'static str> {
    INITIALISMS
        .iter()
        .filter(|initialism| {
            let len = initialism.chars().count();
            chars.len() >= len
                && initialism.chars().zip(chars).all(|(a, b)| a == *b)
                && !chars.get(len).is_some_and(|c| c.is_lowercase())
        })
        .max_by_key(|initialism| initialism.len())
        .copied()
}

/// Splits a name into words: at separators, before an upper-case letter,
/// an upper-case run letter by letter unless it is a known initialism;
/// digits stay with the word before them (`EC2NodeClass` → `E C2 Node Class`).
pub fn words(name: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for chunk in name.split(|c: char| !c.is_alphanumeric()) {
        // A lone lower-case letter joins the word before it
        // (`cluster.x-k8s.io` → `clusterx k8s io`).
        if chunk.len() == 1
            && chunk.chars().all(|c| c.is_ascii_lowercase())
            && let Some(last) = out.last_mut()
        {
            last.push_str(chunk);
            continue;
        }
        let chars: Vec<char> = chunk.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            if chars[i].is_uppercase() {
                if let Some(initialism) = initialism_at(&chars[i..]) {
                    out.push(initialism.to_string());
                    i += initialism.chars().count();
                    continue;
                }
                let start = i;
                i += 1;
                while i < chars.len() && !chars[i].is_uppercase() {
                    i += 1;
                }
                out.push(chars[start..i].iter().collect());
            } else {
                let start = i;
                while i < chars.len() && !chars[i].is_uppercase() {
                    i += 1;
                }
                out.push(chars[start..i].iter().collect());
            }
        }
    }
    out
}

fn initialism_of(word: &str) -> Option<&'static str> {
    INITIALISMS
        .iter()
        .find(|initialism| initialism.eq_ignore_ascii_case(word))
        .copied()
}

/// A Go type name: every word capitalized, initialisms upper-case
/// (`stable.example.com.v1.CronTab` → `StableExampleComV1CronTab`).
pub fn go_name(name: &str) -> String {
    let mut out = String::new();
    for word in words(name) {
        if initialism_of(&word).is_some() {
            out.push_str(&word.to_uppercase());
            continue;
        }
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        }
    }
    if out.chars().next().is_some_and(|c| !c.is_alphabetic()) {
        out.insert(0, 'X');
    }
    out
}

/// The words of a name in lower case, initialisms as written (`cronSpec` →
/// `cron spec`, `dnsConfig` → `dns config`, `sinkUri` → `sink Uri`): a
/// docstring for what has no description.
pub fn humanize(name: &str) -> String {
    words(name)
        .iter()
        .map(|word| match initialism_of(word) {
            Some(_) => word.clone(),
            None => word.to_lowercase(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The snake-case file name of a definition (`stable.example.com.v1.CronTab`
/// → `stable_example_com_v1_cron_tab`).
pub fn file_name(name: &str) -> String {
    let mut parts: Vec<String> = words(name).iter().map(|w| w.to_lowercase()).collect();
    if parts
        .last()
        .is_some_and(|last| RESERVED_FILE_SUFFIXES.contains(&last.as_str()))
    {
        parts.push("swagger".to_string());
    }
    parts.join("_")
}

/// An attribute name as KCL accepts it, and whether it had to be quoted.
pub fn attribute_name(name: &str) -> (String, bool) {
    let mut chars = name.chars();
    let identifier = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !identifier {
        return (format!("\"{name}\""), true);
    }
    if RESERVED_WORDS.contains(&name) {
        return (format!("${name}"), false);
    }
    (name.to_string(), false)
}

/// A schema name that is a KCL keyword gets a `$`.
pub fn schema_name(name: &str) -> String {
    let name = name.replace(['-', '.'], "_");
    if RESERVED_WORDS.contains(&name.as_str()) {
        format!("${name}")
    } else {
        name
    }
}

/// A float as Go's `%v` prints it: the shortest digits, in exponent form
/// when the exponent is below -4 or at least 6 (`1e+06`, `65535`, `0.5`).
pub fn go_float(value: f64) -> String {
    if value == 0.0 {
        return "0".to_string();
    }
    if !value.is_finite() {
        return if value.is_nan() {
            "NaN".to_string()
        } else if value > 0.0 {
            "+Inf".to_string()
        } else {
            "-Inf".to_string()
        };
    }
    // Rust's `{:e}` gives the shortest round-tripping digits.
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-4..6).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exponent.abs());
    }
    format!("{value}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_derived_as_the_generator_derives_them() {
        let cases = [
            (
                "stable.example.com.v1.CronTab",
                "StableExampleComV1CronTab",
                "stable_example_com_v1_cron_tab",
                "stable example com v1 cron tab",
            ),
            (
                "karpenter.k8s.aws.v1beta1.EC2NodeClass",
                "KarpenterK8sAwsV1beta1EC2NodeClass",
                "karpenter_k8s_aws_v1beta1_e_c2_node_class",
                "karpenter k8s aws v1beta1 e c2 node class",
            ),
            (
                "infrastructure.clusterx.k8s.io.v1beta1.AWSClusterRoleIdentity",
                "InfrastructureClusterxK8sIoV1beta1AWSClusterRoleIdentity",
                "infrastructure_clusterx_k8s_io_v1beta1_a_w_s_cluster_role_identity",
                "infrastructure clusterx k8s io v1beta1 a w s cluster role identity",
            ),
            (
                "operator.victoriametrics.com.v1beta1.VMAgent",
                "OperatorVictoriametricsComV1beta1VMAgent",
                "operator_victoriametrics_com_v1beta1_vm_agent",
                "operator victoriametrics com v1beta1 VM agent",
            ),
            ("vpcId", "VpcID", "vpc_id", "vpc Id"),
            ("ipv6-pool", "IPV6Pool", "ipv6_pool", "ipv6 pool"),
            (
                "infrastructure.cluster.x-k8s.io.v1beta1.AWSClusterRoleIdentity",
                "InfrastructureClusterxK8sIoV1beta1AWSClusterRoleIdentity",
                "infrastructure_clusterx_k8s_io_v1beta1_a_w_s_cluster_role_identity",
                "infrastructure clusterx k8s io v1beta1 a w s cluster role identity",
            ),
            (
                "ec2.aws.upbound.io.v1beta1.VPC",
                "Ec2AwsUpboundIoV1beta1VPC",
                "ec2_aws_upbound_io_v1beta1_v_p_c",
                "ec2 aws upbound io v1beta1 v p c",
            ),
            (
                "example.org.v1.Test",
                "ExampleOrgV1Test",
                "example_org_v1_test_swagger",
                "example org v1 test",
            ),
        ];
        for (name, go, file, human) in cases {
            assert_eq!(go_name(name), go, "go name of {name}");
            assert_eq!(file_name(name), file, "file name of {name}");
            assert_eq!(humanize(name), human, "human name of {name}");
        }
    }

    #[test]
    fn attribute_names_are_quoted_or_escaped_when_kcl_needs_it() {
        let cases = [
            ("spec", ("spec", false)),
            ("x-kubernetes", ("\"x-kubernetes\"", true)),
            ("$ref", ("\"$ref\"", true)),
            ("type", ("$type", false)),
            ("9lives", ("\"9lives\"", true)),
        ];
        for (name, (escaped, quoted)) in cases {
            assert_eq!(
                attribute_name(name),
                (escaped.to_string(), quoted),
                "{name}"
            );
        }
    }

    #[test]
    fn floats_print_as_go_prints_them() {
        let cases = [
            (65535.0, "65535"),
            (1e6, "1e+06"),
            (100000.0, "100000"),
            (0.5, "0.5"),
            (0.00001, "1e-05"),
            (2147483647.0, "2.147483647e+09"),
            (-3.0, "-3"),
            (0.0, "0"),
        ];
        for (value, printed) in cases {
            assert_eq!(go_float(value), printed, "{value}");
        }
    }
}
