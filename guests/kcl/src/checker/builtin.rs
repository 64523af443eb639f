//! What the checker knows of KCL's builtins: their names, the string
//! methods' parameters (so a wrong argument count is caught before the
//! program runs, as KCL does), the system modules' members and the
//! decorators.

use super::ty::{FnTy, Param, Ty};

/// The builtin functions, callable everywhere without an import. Their
/// arguments are checked when they run, not here.
pub const BUILTIN_FUNCTIONS: &[&str] = &[
    "option",
    "print",
    "multiplyof",
    "isunique",
    "isnullish",
    "len",
    "abs",
    "all_true",
    "any_true",
    "hex",
    "bin",
    "oct",
    "ord",
    "sorted",
    "range",
    "max",
    "min",
    "sum",
    "pow",
    "round",
    "zip",
    "int",
    "float",
    "bool",
    "str",
    "list",
    "dict",
    "typeof",
    "reduce",
];

/// A builtin function's type: its arguments are left to the evaluator,
/// its result is what KCL declares.
pub fn builtin_function(name: &str) -> Option<Ty> {
    if !BUILTIN_FUNCTIONS.contains(&name) {
        return None;
    }
    let ret = match name {
        "print" => Ty::None,
        "multiplyof" | "isunique" | "isnullish" | "all_true" | "any_true" | "bool" => Ty::Bool,
        "len" | "ord" | "int" => Ty::Int,
        "hex" | "bin" | "oct" | "str" | "typeof" => Ty::Str,
        "float" => Ty::Float,
        "range" => Ty::list(Ty::Int),
        "sorted" | "zip" | "list" => Ty::list(Ty::Any),
        "dict" => Ty::dict(Ty::Any, Ty::Any),
        "pow" | "round" => Ty::Union(vec![Ty::Int, Ty::Float]),
        _ => Ty::Any,
    };
    Some(Ty::Function(
        FnTy {
            params: Vec::new(),
            ret,
            variadic: true,
        }
        .into(),
    ))
}

/// The string methods and their parameters (name, has a default);
/// `format` takes any arguments.
const STRING_METHODS: &[(&str, &[(&str, bool)])] = &[
    ("capitalize", &[]),
    ("chars", &[]),
    ("count", &[("sub", false), ("start", true), ("end", true)]),
    (
        "endswith",
        &[("val", false), ("start", true), ("end", true)],
    ),
    ("find", &[("sub", false), ("start", true), ("end", true)]),
    ("index", &[("sub", false), ("start", true), ("end", true)]),
    ("isalpha", &[]),
    ("isalnum", &[]),
    ("isdigit", &[]),
    ("islower", &[]),
    ("isspace", &[]),
    ("istitle", &[]),
    ("isupper", &[]),
    ("join", &[("iter", false)]),
    ("lower", &[]),
    ("upper", &[]),
    ("lstrip", &[("chars", true)]),
    ("rstrip", &[("chars", true)]),
    (
        "replace",
        &[("old", false), ("new", false), ("count", true)],
    ),
    ("removeprefix", &[("prefix", false)]),
    ("removesuffix", &[("suffix", false)]),
    ("rfind", &[("sub", false), ("start", true), ("end", true)]),
    ("rindex", &[("sub", false), ("start", true), ("end", true)]),
    ("rsplit", &[("sep", true), ("maxsplit", true)]),
    ("split", &[("sep", true), ("maxsplit", true)]),
    ("splitlines", &[("keepends", true)]),
    (
        "startswith",
        &[("val", false), ("start", true), ("end", true)],
    ),
    ("strip", &[("chars", true)]),
    ("title", &[]),
];

/// The type of a string method, `None` when strings have no such member.
pub fn string_method(name: &str) -> Option<Ty> {
    if name == "format" {
        return Some(Ty::Function(FnTy::variadic().into()));
    }
    let (_, params) = STRING_METHODS.iter().find(|(n, _)| *n == name)?;
    Some(Ty::Function(
        FnTy {
            params: params
                .iter()
                .map(|(name, has_default)| Param {
                    name: (*name).to_string(),
                    ty: Ty::Any,
                    has_default: *has_default,
                    span: None,
                })
                .collect(),
            ret: Ty::Any,
            variadic: false,
        }
        .into(),
    ))
}

/// The system modules and their members.
const SYSTEM_MODULES: &[(&str, &[&str])] = &[
    ("base64", &["encode", "decode"]),
    ("base32", &["encode", "decode"]),
    (
        "net",
        &[
            "CIDR_host",
            "CIDR_netmask",
            "CIDR_subnet",
            "CIDR_subnets",
            "split_host_port",
            "join_host_port",
            "fqdn",
            "parse_IP",
            "IP_string",
            "to_IP4",
            "to_IP6",
            "is_IPv4",
            "is_IPv6",
            "is_IP",
            "is_loopback_IP",
            "is_multicast_IP",
            "is_interface_local_multicast_IP",
            "is_link_local_multicast_IP",
            "is_link_local_unicast_IP",
            "is_global_unicast_IP",
            "is_unspecified_IP",
            "parse_CIDR",
            "is_IP_in_CIDR",
        ],
    ),
    ("manifests", &["yaml_stream"]),
    (
        "math",
        &[
            "ceil",
            "factorial",
            "floor",
            "gcd",
            "isfinite",
            "isinf",
            "isnan",
            "modf",
            "exp",
            "expm1",
            "log",
            "log1p",
            "log2",
            "log10",
            "pow",
            "sqrt",
        ],
    ),
    (
        "datetime",
        &[
            "ticks",
            "date",
            "now",
            "today",
            "validate",
            "is_rfc3339",
            "is_iso8601",
        ],
    ),
    (
        "regex",
        &["replace", "match", "compile", "findall", "search", "split"],
    ),
    (
        "yaml",
        &[
            "encode",
            "encode_all",
            "decode",
            "decode_all",
            "dump_to_file",
            "dump_all_to_file",
            "validate",
        ],
    ),
    (
        "json",
        &["encode", "decode", "dump_to_file", "validate", "merge"],
    ),
    (
        "crypto",
        &[
            "md5",
            "sha1",
            "sha224",
            "sha256",
            "sha384",
            "sha512",
            "blake3",
            "uuid",
            "filesha256",
        ],
    ),
    (
        "units",
        &[
            "to_n", "to_u", "to_m", "to_K", "to_M", "to_G", "to_T", "to_P", "to_Ki", "to_Mi",
            "to_Gi", "to_Ti", "to_Pi", "n", "u", "m", "k", "K", "M", "G", "T", "P", "Ki", "Mi",
            "Gi", "Ti", "Pi",
        ],
    ),
    ("collection", &["union_all"]),
    (
        "file",
        &[
            "read", "glob", "modpath", "workdir", "current", "exists", "abs", "append", "mkdir",
            "delete", "cp", "mv", "size", "write", "read_env",
        ],
    ),
    ("template", &["execute", "html_escape"]),
    ("runtime", &["catch"]),
];

pub fn is_system_module(name: &str) -> bool {
    SYSTEM_MODULES.iter().any(|(n, _)| *n == name)
}

/// The type of a system module's member, `None` when it has no such member.
pub fn system_module_member(module: &str, member: &str) -> Option<Ty> {
    if module == "units" && member == "NumberMultiplier" {
        return Some(Ty::NumberMultiplier(None));
    }
    let (_, members) = SYSTEM_MODULES.iter().find(|(n, _)| *n == module)?;
    members.contains(&member).then_some(Ty::Any)
}

/// The decorators a schema or attribute may carry.
pub const BUILTIN_DECORATORS: &[&str] = &["deprecated", "info"];

/// What a schema definition (not an instance) has as members.
pub const SCHEMA_MEMBER_FUNCTIONS: &[&str] = &["instances"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_methods_have_kcl_parameters() {
        let cases = [
            ("startswith", 1),
            ("replace", 2),
            ("lower", 0),
            ("split", 0),
        ];
        for (name, required) in cases {
            let Some(Ty::Function(f)) = string_method(name) else {
                panic!("{name} is a string method");
            };
            assert_eq!(
                f.params.iter().filter(|p| !p.has_default).count(),
                required,
                "{name}"
            );
        }
        assert!(string_method("err").is_none());
    }

    #[test]
    fn system_module_members_are_known() {
        assert!(system_module_member("math", "log").is_some());
        assert!(system_module_member("math", "err_func").is_none());
        assert_eq!(
            system_module_member("units", "NumberMultiplier"),
            Some(Ty::NumberMultiplier(None))
        );
    }
}
