//! The function libraries kube-apiserver's CEL environment gives
//! `x-kubernetes-validations` rules, registered on a `cel` environment:
//! Kubernetes' lists, regex, URL, quantity, IP, CIDR, format and semver
//! libraries, and cel-go's sets extension. Kubernetes' own types (quantity,
//! URL, IP, CIDR, semver, format) are values of their own CEL types, as
//! there: `type(quantity('1')) == kubernetes.Quantity`.

use std::any::Any;
use std::cmp::Ordering;
use std::collections::HashMap;

use cel::common::types::{
    BOOL_TYPE, CelBool, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelOptional, CelString,
    DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE, Type,
};
use cel::common::value::{CowVal, FromVal, StaticVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

use super::format;
use super::net::{Cidr, Ip};
use super::quantity::Quantity;
use super::semver::Semver;
use super::url::Url;

/// The function name errors of these libraries carry, so that they are
/// reported with the library's own text alone, as the API server does.
pub const LIBRARY_ERROR: &str = "@kubernetes";

pub fn error(message: impl ToString) -> ExecutionError {
    ExecutionError::function_error(LIBRARY_ERROR, message)
}

static QUANTITY_TYPE: Type = Type::new_unspecified_type("kubernetes.Quantity");
static URL_TYPE: Type = Type::new_unspecified_type("kubernetes.URL");
static IP_TYPE: Type = Type::new_unspecified_type("net.IP");
static CIDR_TYPE: Type = Type::new_unspecified_type("net.CIDR");
static SEMVER_TYPE: Type = Type::new_unspecified_type("kubernetes.Semver");
static FORMAT_TYPE: Type = Type::new_unspecified_type("kubernetes.NamedFormat");

/// Implements `Val` for a library type, its CEL type being `$ty`, equal by
/// `$eq`.
macro_rules! library_val {
    ($rust:ty, $ty:ident, $eq:expr) => {
        impl Val for $rust {
            fn get_type(&self) -> &Type {
                &$ty
            }
            fn cel_type() -> &'static Type {
                &$ty
            }
            fn equals(&self, other: &dyn Val) -> bool {
                other.downcast_ref::<$rust>().is_some_and(|o| $eq(self, o))
            }
            fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
                Box::new(self.clone())
            }
            fn as_any(&self) -> Option<&dyn Any> {
                Some(self)
            }
        }
        impl StaticVal for $rust {}
    };
}

library_val!(Quantity, QUANTITY_TYPE, |a: &Quantity, b: &Quantity| a
    .compare(*b)
    == Ordering::Equal);
library_val!(Url, URL_TYPE, |a: &Url, b: &Url| a == b);
library_val!(Ip, IP_TYPE, |a: &Ip, b: &Ip| a == b);
library_val!(Cidr, CIDR_TYPE, |a: &Cidr, b: &Cidr| a == b);
library_val!(Semver, SEMVER_TYPE, |a: &Semver, b: &Semver| a.compare(b)
    == Ordering::Equal);

/// A named format of the format library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedFormat(&'static str);
library_val!(
    NamedFormat,
    FORMAT_TYPE,
    |a: &NamedFormat, b: &NamedFormat| a == b
);

/// Registers every library on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    lists(env)?;
    regex(env)?;
    url(env)?;
    quantity(env)?;
    ip(env)?;
    cidr(env)?;
    named_formats(env)?;
    semver(env)?;
    sets(env)?;
    Ok(())
}

fn arg<'b, 'v, T: FromVal<'b, 'v> + Val>(val: &'b (dyn Val + 'v)) -> Result<&'b T, ExecutionError> {
    val.downcast_ref::<T>()
        .ok_or_else(|| ExecutionError::UnexpectedType {
            got: val.get_type().name().to_owned(),
            want: T::cel_type().name().to_owned(),
        })
}

/// The elements of any list value.
fn elements<'b, 'v>(list: &'b (dyn Val + 'v)) -> Result<Vec<&'b (dyn Val + 'v)>, ExecutionError> {
    let iterable = list
        .as_iterable()
        .ok_or_else(|| ExecutionError::UnexpectedType {
            got: list.get_type().name().to_owned(),
            want: "list".to_owned(),
        })?;
    let mut items = iterable.iter();
    let mut out = Vec::new();
    while let Some(item) = items.next() {
        out.push(item);
    }
    Ok(out)
}

fn no_such_overload(function: &str, args: &[&dyn Val]) -> ExecutionError {
    ExecutionError::no_such_overload(
        function,
        args.iter()
            .map(|a| a.get_type().name().to_owned())
            .collect(),
    )
}

fn compare(function: &str, a: &dyn Val, b: &dyn Val) -> Result<Ordering, ExecutionError> {
    a.as_comparer()
        .ok_or_else(|| no_such_overload(function, &[a]))?
        .compare(b)
}

type Overload = for<'b, 'v> fn(Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError>;

fn member(
    env: &mut Env,
    name: &str,
    target: Type,
    args: Vec<Type>,
    op: Overload,
) -> Result<(), DeclarationError> {
    let id = format!(
        "{}.{name}({})",
        target.name(),
        args.iter().map(Type::name).collect::<Vec<_>>().join(",")
    );
    env.add_member_overload(name, &id, target, args, op)
}

fn global(
    env: &mut Env,
    name: &str,
    args: Vec<Type>,
    op: Overload,
) -> Result<(), DeclarationError> {
    let id = format!(
        "{name}({})",
        args.iter().map(Type::name).collect::<Vec<_>>().join(",")
    );
    env.add_overload(name, &id, args, op)
}

/// `args` as the `N` arguments of an overload.
fn take_args<'b, 'v, const N: usize>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<[CowVal<'b, 'v>; N], ExecutionError> {
    args.try_into()
        .map_err(|args: Vec<_>| ExecutionError::invalid_argument_count(N, args.len()))
}

fn owned<'b, 'v, T: Val + 'v>(value: T) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(CowVal::owned(value))
}

// Kubernetes list library: isSorted, sum, min, max, indexOf, lastIndexOf.

fn lists(env: &mut Env) -> Result<(), DeclarationError> {
    member(env, "isSorted", LIST_TYPE, vec![], |args| {
        let [list] = take_args(args)?;
        let items = elements(list.as_ref())?;
        for pair in items.windows(2) {
            if compare("isSorted", pair[0], pair[1])? == Ordering::Greater {
                return owned(CelBool::from(false));
            }
        }
        owned(CelBool::from(true))
    })?;
    member(env, "sum", LIST_TYPE, vec![], |args| {
        let [list] = take_args(args)?;
        let items = elements(list.as_ref())?;
        let Some((first, rest)) = items.split_first() else {
            return owned(CelInt::from(0));
        };
        let mut total: Box<dyn Val> = first.clone_as_boxed();
        for item in rest {
            let adder = total
                .as_adder()
                .ok_or_else(|| no_such_overload("sum", &[&**item]))?;
            let next = adder.add(*item)?.into_owned();
            total = next;
        }
        Ok(CowVal::Owned(total))
    })?;
    fn extreme<'b, 'v>(
        args: Vec<CowVal<'b, 'v>>,
        name: &str,
        prefer: Ordering,
    ) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let [list] = take_args(args)?;
        let items = elements(list.as_ref())?;
        let mut best: Option<&dyn Val> = None;
        for item in items {
            best = match best {
                None => Some(item),
                Some(b) if compare(name, b, item)? == prefer => Some(item),
                keep => keep,
            };
        }
        match best {
            Some(b) => Ok(CowVal::Owned(b.clone_as_boxed())),
            None => Err(error(format!("{name} called on empty list"))),
        }
    }
    member(env, "min", LIST_TYPE, vec![], |args| {
        extreme(args, "min", Ordering::Greater)
    })?;
    member(env, "max", LIST_TYPE, vec![], |args| {
        extreme(args, "max", Ordering::Less)
    })?;
    member(env, "indexOf", LIST_TYPE, vec![DYN_TYPE], |args| {
        let [list, item] = take_args(args)?;
        let items = elements(list.as_ref())?;
        let index = items.iter().position(|i| i.equals(item.as_ref()));
        owned(CelInt::from(
            index.map_or(-1, |i| i64::try_from(i).unwrap_or(i64::MAX)),
        ))
    })?;
    member(env, "lastIndexOf", LIST_TYPE, vec![DYN_TYPE], |args| {
        let [list, item] = take_args(args)?;
        let items = elements(list.as_ref())?;
        let index = items.iter().rposition(|i| i.equals(item.as_ref()));
        owned(CelInt::from(
            index.map_or(-1, |i| i64::try_from(i).unwrap_or(i64::MAX)),
        ))
    })?;
    Ok(())
}

// Kubernetes regex library: find, findAll.

fn compiled(pattern: &str) -> Result<regex::Regex, ExecutionError> {
    regex::Regex::new(pattern).map_err(|e| error(format!("Illegal regex: {e}")))
}

fn find_all<'b, 'v>(s: &str, pattern: &str, limit: i64) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let re = compiled(pattern)?;
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let found: Vec<Box<dyn Val + 'v>> = re
        .find_iter(s)
        .take(limit)
        .map(|m| Box::new(CelString::from(m.as_str().to_string())) as Box<dyn Val + 'v>)
        .collect();
    owned(CelList::from(found))
}

fn regex(env: &mut Env) -> Result<(), DeclarationError> {
    member(env, "find", STRING_TYPE, vec![STRING_TYPE], |args| {
        let [s, pattern] = take_args(args)?;
        let re = compiled(arg::<CelString>(pattern.as_ref())?.inner())?;
        let found = re
            .find(arg::<CelString>(s.as_ref())?.inner())
            .map(|m| m.as_str().to_string())
            .unwrap_or_default();
        owned(CelString::from(found))
    })?;
    member(env, "findAll", STRING_TYPE, vec![STRING_TYPE], |args| {
        let [s, pattern] = take_args(args)?;
        find_all(
            arg::<CelString>(s.as_ref())?.inner(),
            arg::<CelString>(pattern.as_ref())?.inner(),
            -1,
        )
    })?;
    member(
        env,
        "findAll",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        |args| {
            let [s, pattern, limit] = take_args(args)?;
            find_all(
                arg::<CelString>(s.as_ref())?.inner(),
                arg::<CelString>(pattern.as_ref())?.inner(),
                *arg::<CelInt>(limit.as_ref())?.inner(),
            )
        },
    )?;
    Ok(())
}

// Kubernetes URL library.

fn url(env: &mut Env) -> Result<(), DeclarationError> {
    global(env, "url", vec![STRING_TYPE], |args| {
        let [s] = take_args(args)?;
        owned(Url::parse_request_uri(arg::<CelString>(s.as_ref())?.inner()).map_err(error)?)
    })?;
    global(env, "isURL", vec![STRING_TYPE], |args| {
        let [s] = take_args(args)?;
        owned(CelBool::from(
            Url::parse_request_uri(arg::<CelString>(s.as_ref())?.inner()).is_ok(),
        ))
    })?;
    let accessors: [(&str, Overload); 5] = [
        ("getScheme", |args| {
            let [u] = take_args(args)?;
            owned(CelString::from(arg::<Url>(u.as_ref())?.scheme.clone()))
        }),
        ("getHost", |args| {
            let [u] = take_args(args)?;
            owned(CelString::from(arg::<Url>(u.as_ref())?.host.clone()))
        }),
        ("getHostname", |args| {
            let [u] = take_args(args)?;
            owned(CelString::from(
                arg::<Url>(u.as_ref())?.hostname().to_string(),
            ))
        }),
        ("getPort", |args| {
            let [u] = take_args(args)?;
            owned(CelString::from(arg::<Url>(u.as_ref())?.port().to_string()))
        }),
        ("getEscapedPath", |args| {
            let [u] = take_args(args)?;
            owned(CelString::from(arg::<Url>(u.as_ref())?.escaped_path()))
        }),
    ];
    for (name, op) in accessors {
        member(env, name, URL_TYPE.to_owned(), vec![], op)?;
    }
    member(env, "getQuery", URL_TYPE.to_owned(), vec![], |args| {
        let [u] = take_args(args)?;
        let query = arg::<Url>(u.as_ref())?.query();
        let map: HashMap<CelMapKey, Box<dyn Val>> = query
            .into_iter()
            .map(|(k, values)| {
                let values: Vec<Box<dyn Val>> = values
                    .into_iter()
                    .map(|v| Box::new(CelString::from(v)) as Box<dyn Val>)
                    .collect();
                (
                    CelMapKey::from(k),
                    Box::new(CelList::from(values)) as Box<dyn Val>,
                )
            })
            .collect();
        owned(CelMap::from(map))
    })?;
    Ok(())
}

// Kubernetes quantity library.

fn quantity(env: &mut Env) -> Result<(), DeclarationError> {
    global(env, "quantity", vec![STRING_TYPE], |args| {
        let [s] = take_args(args)?;
        owned(Quantity::parse(arg::<CelString>(s.as_ref())?.inner()).map_err(error)?)
    })?;
    global(env, "isQuantity", vec![STRING_TYPE], |args| {
        let [s] = take_args(args)?;
        owned(CelBool::from(
            Quantity::parse(arg::<CelString>(s.as_ref())?.inner()).is_ok(),
        ))
    })?;
    let q = || QUANTITY_TYPE.to_owned();
    // A global function upstream: `sign(quantity('-1'))`, not a method.
    global(env, "sign", vec![q()], |args| {
        let [a] = take_args(args)?;
        owned(CelInt::from(arg::<Quantity>(a.as_ref())?.sign()))
    })?;
    member(env, "isGreaterThan", q(), vec![q()], |args| {
        let [a, b] = take_args(args)?;
        let order = arg::<Quantity>(a.as_ref())?.compare(*arg::<Quantity>(b.as_ref())?);
        owned(CelBool::from(order == Ordering::Greater))
    })?;
    member(env, "isLessThan", q(), vec![q()], |args| {
        let [a, b] = take_args(args)?;
        let order = arg::<Quantity>(a.as_ref())?.compare(*arg::<Quantity>(b.as_ref())?);
        owned(CelBool::from(order == Ordering::Less))
    })?;
    member(env, "compareTo", q(), vec![q()], |args| {
        let [a, b] = take_args(args)?;
        let order = arg::<Quantity>(a.as_ref())?.compare(*arg::<Quantity>(b.as_ref())?);
        owned(CelInt::from(order as i64))
    })?;
    member(env, "asApproximateFloat", q(), vec![], |args| {
        let [a] = take_args(args)?;
        owned(CelDouble::from(arg::<Quantity>(a.as_ref())?.as_f64()))
    })?;
    member(env, "asInteger", q(), vec![], |args| {
        let [a] = take_args(args)?;
        let value = arg::<Quantity>(a.as_ref())?
            .as_i64()
            .ok_or_else(|| error("cannot convert value to integer"))?;
        owned(CelInt::from(value))
    })?;
    member(env, "isInteger", q(), vec![], |args| {
        let [a] = take_args(args)?;
        owned(CelBool::from(
            arg::<Quantity>(a.as_ref())?.as_i64().is_some(),
        ))
    })?;
    fn quantity_of(v: &dyn Val) -> Result<Quantity, ExecutionError> {
        match v.downcast_ref::<Quantity>() {
            Some(q) => Ok(*q),
            None => Ok(Quantity::from_i64(*arg::<CelInt>(v)?.inner())),
        }
    }
    for other in [q(), INT_TYPE] {
        member(env, "add", q(), vec![other.to_owned()], |args| {
            let [a, b] = take_args(args)?;
            let sum = quantity_of(a.as_ref())?
                .add(quantity_of(b.as_ref())?)
                .ok_or_else(|| error("quantity overflow"))?;
            owned(sum)
        })?;
        member(env, "sub", q(), vec![other], |args| {
            let [a, b] = take_args(args)?;
            let difference = quantity_of(a.as_ref())?
                .sub(quantity_of(b.as_ref())?)
                .ok_or_else(|| error("quantity overflow"))?;
            owned(difference)
        })?;
    }
    Ok(())
}

// Kubernetes IP and CIDR libraries.

fn ip(env: &mut Env) -> Result<(), DeclarationError> {
    global(env, "ip", vec![STRING_TYPE], |args| {
        let [s] = take_args(args)?;
        owned(Ip::parse(arg::<CelString>(s.as_ref())?.inner()).map_err(error)?)
    })?;
    global(env, "isIP", vec![STRING_TYPE], |args| {
        let [s] = take_args(args)?;
        owned(CelBool::from(
            Ip::parse(arg::<CelString>(s.as_ref())?.inner()).is_ok(),
        ))
    })?;
    global(env, "ip.isCanonical", vec![STRING_TYPE], |args| {
        let [s] = take_args(args)?;
        let raw = arg::<CelString>(s.as_ref())?.inner();
        let ip = Ip::parse(raw).map_err(error)?;
        owned(CelBool::from(ip.canonical() == raw))
    })?;
    global(env, "string", vec![IP_TYPE.to_owned()], |args| {
        let [a] = take_args(args)?;
        owned(CelString::from(arg::<Ip>(a.as_ref())?.canonical()))
    })?;
    member(env, "family", IP_TYPE.to_owned(), vec![], |args| {
        let [a] = take_args(args)?;
        owned(CelInt::from(arg::<Ip>(a.as_ref())?.family()))
    })?;
    let predicates: [(&str, Overload); 5] = [
        ("isUnspecified", |args| {
            let [a] = take_args(args)?;
            owned(CelBool::from(arg::<Ip>(a.as_ref())?.is_unspecified()))
        }),
        ("isLoopback", |args| {
            let [a] = take_args(args)?;
            owned(CelBool::from(arg::<Ip>(a.as_ref())?.is_loopback()))
        }),
        ("isLinkLocalMulticast", |args| {
            let [a] = take_args(args)?;
            owned(CelBool::from(
                arg::<Ip>(a.as_ref())?.is_link_local_multicast(),
            ))
        }),
        ("isLinkLocalUnicast", |args| {
            let [a] = take_args(args)?;
            owned(CelBool::from(
                arg::<Ip>(a.as_ref())?.is_link_local_unicast(),
            ))
        }),
        ("isGlobalUnicast", |args| {
            let [a] = take_args(args)?;
            owned(CelBool::from(arg::<Ip>(a.as_ref())?.is_global_unicast()))
        }),
    ];
    for (name, op) in predicates {
        member(env, name, IP_TYPE.to_owned(), vec![], op)?;
    }
    Ok(())
}

fn cidr(env: &mut Env) -> Result<(), DeclarationError> {
    let c = || CIDR_TYPE.to_owned();
    global(env, "cidr", vec![STRING_TYPE], |args| {
        let [s] = take_args(args)?;
        owned(Cidr::parse(arg::<CelString>(s.as_ref())?.inner()).map_err(error)?)
    })?;
    global(env, "isCIDR", vec![STRING_TYPE], |args| {
        let [s] = take_args(args)?;
        owned(CelBool::from(
            Cidr::parse(arg::<CelString>(s.as_ref())?.inner()).is_ok(),
        ))
    })?;
    global(env, "string", vec![c()], |args| {
        let [a] = take_args(args)?;
        owned(CelString::from(arg::<Cidr>(a.as_ref())?.canonical()))
    })?;
    fn ip_of(v: &dyn Val) -> Result<Ip, ExecutionError> {
        match v.downcast_ref::<Ip>() {
            Some(ip) => Ok(*ip),
            None => Ip::parse(arg::<CelString>(v)?.inner()).map_err(error),
        }
    }
    fn cidr_of(v: &dyn Val) -> Result<Cidr, ExecutionError> {
        match v.downcast_ref::<Cidr>() {
            Some(c) => Ok(*c),
            None => Cidr::parse(arg::<CelString>(v)?.inner()).map_err(error),
        }
    }
    for other in [IP_TYPE.to_owned(), STRING_TYPE] {
        member(env, "containsIP", c(), vec![other], |args| {
            let [a, b] = take_args(args)?;
            owned(CelBool::from(
                arg::<Cidr>(a.as_ref())?.contains_ip(ip_of(b.as_ref())?),
            ))
        })?;
    }
    for other in [c(), STRING_TYPE] {
        member(env, "containsCIDR", c(), vec![other], |args| {
            let [a, b] = take_args(args)?;
            owned(CelBool::from(
                arg::<Cidr>(a.as_ref())?.contains_cidr(cidr_of(b.as_ref())?),
            ))
        })?;
    }
    member(env, "ip", c(), vec![], |args| {
        let [a] = take_args(args)?;
        owned(Ip(arg::<Cidr>(a.as_ref())?.addr))
    })?;
    member(env, "masked", c(), vec![], |args| {
        let [a] = take_args(args)?;
        owned(arg::<Cidr>(a.as_ref())?.masked())
    })?;
    member(env, "prefixLength", c(), vec![], |args| {
        let [a] = take_args(args)?;
        owned(CelInt::from(i64::from(arg::<Cidr>(a.as_ref())?.bits)))
    })?;
    Ok(())
}

// Kubernetes format library.

fn named_formats(env: &mut Env) -> Result<(), DeclarationError> {
    global(env, "format.named", vec![STRING_TYPE], |args| {
        let [s] = take_args(args)?;
        let name = arg::<CelString>(s.as_ref())?.inner();
        let found = format::NAMES.iter().find(|n| **n == name);
        owned(match found {
            Some(n) => CelOptional::of(Box::new(NamedFormat(n))),
            None => CelOptional::none(),
        })
    })?;
    // One zero-argument function per format: `format.dns1123Label()`.
    macro_rules! constant_formats {
        ($($name:literal),*) => {
            $(
                global(env, concat!("format.", $name), vec![], |_| owned(NamedFormat($name)))?;
            )*
        };
    }
    constant_formats!(
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
        "datetime"
    );
    member(
        env,
        "validate",
        FORMAT_TYPE.to_owned(),
        vec![STRING_TYPE],
        |args| {
            let [f, s] = take_args(args)?;
            let errors = format::validate(
                arg::<NamedFormat>(f.as_ref())?.0,
                arg::<CelString>(s.as_ref())?.inner(),
            );
            if errors.is_empty() {
                return owned(CelOptional::none());
            }
            let list: Vec<Box<dyn Val>> = errors
                .into_iter()
                .map(|e| Box::new(CelString::from(e)) as Box<dyn Val>)
                .collect();
            owned(CelOptional::of(Box::new(CelList::from(list))))
        },
    )?;
    Ok(())
}

// Kubernetes semver library, version 1 (with `normalize`).

fn semver(env: &mut Env) -> Result<(), DeclarationError> {
    let v = || SEMVER_TYPE.to_owned();
    global(env, "semver", vec![STRING_TYPE], |args| {
        let [s] = take_args(args)?;
        owned(Semver::parse(arg::<CelString>(s.as_ref())?.inner(), false).map_err(error)?)
    })?;
    global(env, "semver", vec![STRING_TYPE, BOOL_TYPE], |args| {
        let [s, normalize] = take_args(args)?;
        let normalize = *arg::<CelBool>(normalize.as_ref())?.inner();
        owned(Semver::parse(arg::<CelString>(s.as_ref())?.inner(), normalize).map_err(error)?)
    })?;
    global(env, "isSemver", vec![STRING_TYPE], |args| {
        let [s] = take_args(args)?;
        owned(CelBool::from(
            Semver::parse(arg::<CelString>(s.as_ref())?.inner(), false).is_ok(),
        ))
    })?;
    global(env, "isSemver", vec![STRING_TYPE, BOOL_TYPE], |args| {
        let [s, normalize] = take_args(args)?;
        let normalize = *arg::<CelBool>(normalize.as_ref())?.inner();
        owned(CelBool::from(
            Semver::parse(arg::<CelString>(s.as_ref())?.inner(), normalize).is_ok(),
        ))
    })?;
    fn number(v: &Semver, which: usize) -> i64 {
        let n = [v.major, v.minor, v.patch][which];
        i64::try_from(n).unwrap_or(i64::MAX)
    }
    member(env, "major", v(), vec![], |args| {
        let [a] = take_args(args)?;
        owned(CelInt::from(number(arg::<Semver>(a.as_ref())?, 0)))
    })?;
    member(env, "minor", v(), vec![], |args| {
        let [a] = take_args(args)?;
        owned(CelInt::from(number(arg::<Semver>(a.as_ref())?, 1)))
    })?;
    member(env, "patch", v(), vec![], |args| {
        let [a] = take_args(args)?;
        owned(CelInt::from(number(arg::<Semver>(a.as_ref())?, 2)))
    })?;
    member(env, "isGreaterThan", v(), vec![v()], |args| {
        let [a, b] = take_args(args)?;
        let order = arg::<Semver>(a.as_ref())?.compare(arg::<Semver>(b.as_ref())?);
        owned(CelBool::from(order == Ordering::Greater))
    })?;
    member(env, "isLessThan", v(), vec![v()], |args| {
        let [a, b] = take_args(args)?;
        let order = arg::<Semver>(a.as_ref())?.compare(arg::<Semver>(b.as_ref())?);
        owned(CelBool::from(order == Ordering::Less))
    })?;
    member(env, "compareTo", v(), vec![v()], |args| {
        let [a, b] = take_args(args)?;
        let order = arg::<Semver>(a.as_ref())?.compare(arg::<Semver>(b.as_ref())?);
        owned(CelInt::from(order as i64))
    })?;
    Ok(())
}

// cel-go's sets extension.

fn sets(env: &mut Env) -> Result<(), DeclarationError> {
    fn contains_all(a: &[&dyn Val], b: &[&dyn Val]) -> bool {
        b.iter().all(|x| a.iter().any(|y| y.equals(*x)))
    }
    global(env, "sets.contains", vec![LIST_TYPE, LIST_TYPE], |args| {
        let [a, b] = take_args(args)?;
        let (a, b) = (elements(a.as_ref())?, elements(b.as_ref())?);
        owned(CelBool::from(contains_all(&a, &b)))
    })?;
    global(env, "sets.equivalent", vec![LIST_TYPE, LIST_TYPE], |args| {
        let [a, b] = take_args(args)?;
        let (a, b) = (elements(a.as_ref())?, elements(b.as_ref())?);
        owned(CelBool::from(contains_all(&a, &b) && contains_all(&b, &a)))
    })?;
    global(env, "sets.intersects", vec![LIST_TYPE, LIST_TYPE], |args| {
        let [a, b] = take_args(args)?;
        let (a, b) = (elements(a.as_ref())?, elements(b.as_ref())?);
        owned(CelBool::from(
            a.iter().any(|x| b.iter().any(|y| x.equals(*y))),
        ))
    })?;
    Ok(())
}
