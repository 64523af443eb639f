//! What the checker knows of KCL's builtins: their names, the string
//! methods' parameters (so a wrong argument count is caught before the
//! program runs, as KCL does), the system modules' members and the
//! decorators.

use super::signatures::SIGNATURES;
use super::ty::{FnTy, Param, Ty};

/// The builtin functions' names, callable everywhere without an import.
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    SIGNATURES
        .iter()
        .filter(|(module, ..)| module.is_empty())
        .map(|(_, name, ..)| *name)
}

/// A type as `SIGNATURES` writes it.
fn signature_type(t: &str) -> Ty {
    match t {
        "str" => Ty::Str,
        "int" => Ty::Int,
        "float" => Ty::Float,
        "bool" => Ty::Bool,
        "none" => Ty::None,
        "num" => Ty::Union(vec![Ty::Int, Ty::Float]),
        "iter" => Ty::Union(vec![Ty::Str, Ty::dict(Ty::Any, Ty::Any), Ty::list(Ty::Any)]),
        "[any]" => Ty::list(Ty::Any),
        "[int]" => Ty::list(Ty::Int),
        "[str]" => Ty::list(Ty::Str),
        "[float]" => Ty::list(Ty::Float),
        "{str:any}" => Ty::dict(Ty::Str, Ty::Any),
        "{str:str}" => Ty::dict(Ty::Str, Ty::Str),
        "{any:any}" => Ty::dict(Ty::Any, Ty::Any),
        "int|str" => Ty::Union(vec![Ty::Int, Ty::Str]),
        _ => Ty::Any,
    }
}

/// The function `name` of `module` (`""`: the builtins, `"str"`: string
/// methods) as KCL declares it.
fn signature(module: &str, name: &str) -> Option<Ty> {
    let (_, _, params, ret, variadic) = SIGNATURES
        .iter()
        .find(|(m, n, ..)| *m == module && *n == name)?;
    Some(Ty::Function(
        FnTy {
            params: params
                .iter()
                .map(|(name, ty, has_default)| Param {
                    name: (*name).to_string(),
                    ty: signature_type(ty),
                    has_default: *has_default,
                    span: None,
                })
                .collect(),
            ret: signature_type(ret),
            variadic: *variadic,
        }
        .into(),
    ))
}

/// A builtin function's type, `None` when there is no such builtin.
pub fn builtin_function(name: &str) -> Option<Ty> {
    signature("", name)
}

/// The type of a string method, `None` when strings have no such member.
pub fn string_method(name: &str) -> Option<Ty> {
    signature("str", name)
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
    if !members.contains(&member) {
        return None;
    }
    Some(signature(module, member).unwrap_or(Ty::Any))
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
