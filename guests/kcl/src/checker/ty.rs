//! The checker's types: what KCL's resolver knows of a value before it
//! runs, printed as KCL prints them in its messages (`int(1)`,
//! `[str | int]`, `{str(a):int(1)}`).

use crate::collections::IndexMap;
use std::fmt;
use std::rc::Rc;

use crate::ast::NumberBinarySuffix;
use crate::source::Span;

/// Index of a schema or rule definition in the checker's arena.
pub type SchemaId = usize;

#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    Any,
    None,
    Bool,
    BoolLit(bool),
    Int,
    IntLit(i64),
    Float,
    FloatLit(f64),
    Str,
    StrLit(Rc<str>),
    List(Rc<Ty>),
    Dict(Rc<DictTy>),
    Union(Vec<Ty>),
    Schema(SchemaTy),
    /// `1Ki` as a type (`Some`), or `units.NumberMultiplier` (`None`).
    NumberMultiplier(Option<(i64, NumberBinarySuffix)>),
    Function(Rc<FnTy>),
    Module(Rc<ModuleTy>),
}

/// A dict type; `attrs` are the keys a literal was written with, so that a
/// dict checked against a schema is checked key by key.
#[derive(Debug, Clone, PartialEq)]
pub struct DictTy {
    pub key: Ty,
    pub val: Ty,
    /// Shared: widening or copying a dict type keeps its keys as they are.
    pub attrs: Rc<IndexMap<String, (Ty, Span)>>,
}

/// A schema type: the definition (`instance == false`, as in
/// `Person.instances()`) or a value of it.
#[derive(Debug, Clone)]
pub struct SchemaTy {
    pub id: SchemaId,
    pub name: Rc<str>,
    pub pkg: Rc<str>,
    pub instance: bool,
}

impl PartialEq for SchemaTy {
    fn eq(&self, other: &SchemaTy) -> bool {
        self.id == other.id && self.instance == other.instance
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: String,
    pub ty: Ty,
    pub has_default: bool,
    pub span: Option<Span>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FnTy {
    pub params: Vec<Param>,
    pub ret: Ty,
    pub variadic: bool,
}

impl FnTy {
    /// A function whose arguments are not checked.
    pub fn variadic() -> FnTy {
        FnTy {
            params: Vec::new(),
            ret: Ty::Any,
            variadic: true,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModuleKind {
    User,
    System,
    Plugin,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModuleTy {
    pub pkgpath: String,
    pub kind: ModuleKind,
}

impl Ty {
    pub fn list(item: Ty) -> Ty {
        Ty::List(Rc::new(item))
    }

    pub fn dict(key: Ty, val: Ty) -> Ty {
        Ty::Dict(Rc::new(DictTy {
            key,
            val,
            attrs: Rc::default(),
        }))
    }

    pub fn is_any(&self) -> bool {
        matches!(self, Ty::Any)
    }
    pub fn is_none(&self) -> bool {
        matches!(self, Ty::None)
    }
    pub fn is_int(&self) -> bool {
        matches!(self, Ty::Int | Ty::IntLit(_))
    }
    pub fn is_float(&self) -> bool {
        matches!(self, Ty::Float | Ty::FloatLit(_))
    }
    pub fn is_bool(&self) -> bool {
        matches!(self, Ty::Bool | Ty::BoolLit(_))
    }
    pub fn is_str(&self) -> bool {
        matches!(self, Ty::Str | Ty::StrLit(_))
    }
    pub fn is_number(&self) -> bool {
        self.is_int() || self.is_float()
    }
    pub fn is_literal(&self) -> bool {
        matches!(
            self,
            Ty::BoolLit(_) | Ty::IntLit(_) | Ty::FloatLit(_) | Ty::StrLit(_)
        )
    }
    pub fn is_primitive(&self) -> bool {
        matches!(self, Ty::Bool | Ty::Int | Ty::Float | Ty::Str)
    }
    pub fn is_list(&self) -> bool {
        matches!(self, Ty::List(_))
    }
    pub fn is_dict(&self) -> bool {
        matches!(self, Ty::Dict(_))
    }
    pub fn is_schema(&self) -> bool {
        matches!(self, Ty::Schema(_))
    }
    pub fn is_union(&self) -> bool {
        matches!(self, Ty::Union(_))
    }
    pub fn is_iterable(&self) -> bool {
        self.is_str() || self.is_list() || self.is_dict() || self.is_schema()
    }
    /// A type a config key may have.
    pub fn is_key(&self) -> bool {
        match self {
            Ty::Str | Ty::StrLit(_) => true,
            Ty::Union(types) => types.iter().all(Ty::is_key),
            _ => false,
        }
    }
    /// KCL refuses to assign a module.
    pub fn is_assignable(&self) -> bool {
        !matches!(self, Ty::Module(_))
    }

    /// Whether every member (or the type itself) satisfies `pred`.
    pub fn all_kinds(&self, pred: impl Fn(&Ty) -> bool) -> bool {
        match self {
            Ty::Union(types) => types.iter().all(pred),
            ty => pred(ty),
        }
    }

    /// A literal's type widened to its variable type (`int(1)` → `int`),
    /// as KCL records the type of an inferred variable.
    pub fn widen(&self) -> Ty {
        match self {
            Ty::None => Ty::Any,
            Ty::BoolLit(_) => Ty::Bool,
            Ty::IntLit(_) => Ty::Int,
            Ty::FloatLit(_) => Ty::Float,
            Ty::StrLit(_) => Ty::Str,
            Ty::List(item) => Ty::list(item.widen()),
            Ty::Dict(d) => Ty::Dict(Rc::new(DictTy {
                key: d.key.widen(),
                val: d.val.widen(),
                attrs: d.attrs.clone(),
            })),
            Ty::Union(types) => sup(&types.iter().map(Ty::widen).collect::<Vec<_>>()),
            ty => ty.clone(),
        }
    }

    /// Only a union is widened before an operator is checked.
    pub fn widen_union(&self) -> Ty {
        if self.is_union() {
            self.widen()
        } else {
            self.clone()
        }
    }

    pub fn list_item(&self) -> Ty {
        match self {
            Ty::List(item) => (**item).clone(),
            _ => Ty::Any,
        }
    }

    /// The key type of a dict or schema, for `**` and comprehensions.
    pub fn config_key(&self) -> Ty {
        match self {
            Ty::Dict(d) => d.key.clone(),
            Ty::Schema(_) => Ty::Str,
            _ => Ty::Any,
        }
    }
}

fn float_str(v: f64) -> String {
    // KCL prints a float literal type with Rust's shortest form: 123.0 is
    // `float(123)`.
    format!("{v}")
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Any => f.write_str("any"),
            Ty::None => f.write_str("NoneType"),
            Ty::Bool => f.write_str("bool"),
            Ty::BoolLit(v) => write!(f, "bool({})", if *v { "True" } else { "False" }),
            Ty::Int => f.write_str("int"),
            Ty::IntLit(v) => write!(f, "int({v})"),
            Ty::Float => f.write_str("float"),
            Ty::FloatLit(v) => write!(f, "float({})", float_str(*v)),
            Ty::Str => f.write_str("str"),
            Ty::StrLit(v) => write!(f, "str({v})"),
            Ty::List(item) => write!(f, "[{item}]"),
            Ty::Dict(d) => write!(f, "{{{}:{}}}", d.key, d.val),
            Ty::Union(types) => {
                for (i, ty) in types.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" | ")?;
                    }
                    write!(f, "{ty}")?;
                }
                Ok(())
            }
            Ty::Schema(s) => f.write_str(&s.name),
            Ty::NumberMultiplier(Some((v, suffix))) => {
                write!(f, "number_multiplier({v}{})", suffix.as_str())
            }
            Ty::NumberMultiplier(None) => f.write_str("number_multiplier"),
            Ty::Function(func) => {
                f.write_str("(")?;
                for (i, p) in func.params.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}", p.ty)?;
                }
                write!(f, ") -> {}", func.ret)
            }
            Ty::Module(m) => write!(f, "module '{}'", m.pkgpath),
        }
    }
}

/// The schema facts `subsume` needs: a schema's base, by id.
pub trait SchemaBases {
    fn base_of(&self, id: SchemaId) -> Option<SchemaId>;
}

/// Whether schema `sub` is `sup` or inherits from it.
pub fn is_sub_schema_of(bases: &dyn SchemaBases, sub: SchemaId, sup: SchemaId) -> bool {
    let mut cur = Some(sub);
    // A cycle in inheritance is reported elsewhere; bound the walk.
    for _ in 0..256 {
        match cur {
            Some(id) if id == sup => return true,
            Some(id) => cur = bases.base_of(id),
            None => return false,
        }
    }
    false
}

/// KCL's `subsume`: whether a value of type `lhs` may be used where `rhs`
/// is expected (`check_left_any`: an `any` on the left is accepted).
pub fn subsume(bases: &dyn SchemaBases, lhs: &Ty, rhs: &Ty, check_left_any: bool) -> bool {
    if (check_left_any && lhs.is_any()) || rhs.is_any() || lhs.is_none() {
        return true;
    }
    match (lhs, rhs) {
        (Ty::Union(types), _) => types.iter().all(|t| subsume(bases, t, rhs, false)),
        (_, Ty::Union(types)) => types.iter().any(|t| subsume(bases, lhs, t, false)),
        (Ty::Schema(l), _) => match rhs {
            Ty::Schema(r) => is_sub_schema_of(bases, l.id, r.id),
            _ => false,
        },
        _ if lhs.is_int() && matches!(rhs, Ty::Float | Ty::FloatLit(_)) => true,
        (Ty::NumberMultiplier(l), Ty::NumberMultiplier(r)) => match (l, r) {
            (Some(l), Some(r)) => l == r,
            (Some(_), None) => true,
            (None, r) => r.is_none(),
        },
        _ if lhs.is_primitive() && rhs.is_primitive() => lhs == rhs,
        _ if lhs.is_literal() => {
            if rhs.is_literal() {
                lhs == rhs
            } else if rhs.is_primitive() {
                // int and bool literals widen to float; any literal to its own kind.
                (matches!(rhs, Ty::Float) && !lhs.is_str())
                    || lhs.to_string().contains(&rhs.to_string())
            } else {
                false
            }
        }
        (Ty::List(l), Ty::List(r)) => subsume(bases, l, r, check_left_any),
        (Ty::Dict(l), Ty::Dict(r)) => {
            subsume(bases, &l.key, &r.key, check_left_any)
                && subsume(bases, &l.val, &r.val, check_left_any)
        }
        (Ty::Str, Ty::StrLit(_)) => true,
        (Ty::Function(l), Ty::Function(r)) => {
            l.params.len() == r.params.len()
                && l.params
                    .iter()
                    .zip(r.params.iter())
                    .all(|(lp, rp)| subsume(bases, &rp.ty, &lp.ty, check_left_any))
                && subsume(bases, &l.ret, &r.ret, check_left_any)
        }
        _ => lhs == rhs,
    }
}

/// Whether `ty` may be assigned where `expected` is declared.
pub fn assignable_to(bases: &dyn SchemaBases, ty: &Ty, expected: &Ty) -> bool {
    ty.is_assignable() && subsume(bases, ty, expected, true)
}

/// Whether `upper` is an upper bound of `ty`.
pub fn is_upper_bound(bases: &dyn SchemaBases, upper: &Ty, ty: &Ty) -> bool {
    subsume(bases, ty, upper, false)
}

/// The most distinct types `sup` keeps track of.
const MAX_UNION: usize = 256;

struct NoBases;

impl SchemaBases for NoBases {
    fn base_of(&self, _: SchemaId) -> Option<SchemaId> {
        None
    }
}

/// The least upper bound KCL computes for the types of a list's items,
/// an `if` expression's branches, …: unions flattened, duplicates and
/// subtypes removed (a literal gives way to its variable type), `any`
/// when nothing is left.
pub fn sup(types: &[Ty]) -> Ty {
    sup_with(&NoBases, types)
}

pub fn sup_with(bases: &dyn SchemaBases, types: &[Ty]) -> Ty {
    let mut set: Vec<Ty> = Vec::new();
    fn add(set: &mut Vec<Ty>, ty: &Ty) {
        match ty {
            Ty::Union(types) => types.iter().for_each(|t| add(set, t)),
            ty => {
                if set.len() <= MAX_UNION && !set.contains(ty) {
                    set.push(ty.clone())
                }
            }
        }
    }
    types.iter().for_each(|t| add(&mut set, t));
    // One type (the common case: a literal's items all of one type) is its
    // own upper bound.
    if set.len() <= 1 {
        return set.pop().unwrap_or(Ty::Any);
    }
    // Removing subtypes compares every pair: a list of thousands of
    // distinct literals would take seconds. Past a bound the type is left
    // unknown, which can only let a program through to the evaluator.
    if set.len() > MAX_UNION {
        return Ty::Any;
    }
    // KCL marks what to drop, then removes each by swapping the last
    // element into its place: the order of what is left follows that.
    let mut removed = vec![false; set.len()];
    for i in 0..set.len() {
        if removed[i] {
            continue;
        }
        for j in i + 1..set.len() {
            if removed[j] {
                continue;
            }
            if subsume(bases, &set[i], &set[j], false) {
                removed[i] = true;
                break;
            } else if subsume(bases, &set[j], &set[i], false) {
                removed[j] = true;
            }
        }
    }
    let mut items: Vec<(bool, Ty)> = removed.into_iter().zip(set).collect();
    let mut i = 0;
    while i < items.len() {
        if items[i].0 {
            items.swap_remove(i);
        } else {
            i += 1;
        }
    }
    let mut result: Vec<Ty> = items.into_iter().map(|(_, t)| t).collect();
    match result.len() {
        0 => Ty::Any,
        1 => result.remove(0),
        _ => Ty::Union(result),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_print_as_kcl_prints_them() {
        let cases = [
            (Ty::IntLit(1), "int(1)"),
            (Ty::FloatLit(123.0), "float(123)"),
            (Ty::FloatLit(1.1), "float(1.1)"),
            (Ty::BoolLit(true), "bool(True)"),
            (Ty::StrLit("aa\"ab".into()), "str(aa\"ab)"),
            (Ty::None, "NoneType"),
            (Ty::list(Ty::Union(vec![Ty::Str, Ty::Int])), "[str | int]"),
            (Ty::dict(Ty::Any, Ty::Any), "{any:any}"),
            (
                Ty::NumberMultiplier(Some((123, NumberBinarySuffix::KUpper))),
                "number_multiplier(123K)",
            ),
        ];
        for (ty, want) in cases {
            assert_eq!(ty.to_string(), want);
        }
    }

    #[test]
    fn sup_keeps_distinct_literals_and_drops_subtypes() {
        let cases = [
            (
                vec![Ty::IntLit(1), Ty::StrLit("2".into())],
                "int(1) | str(2)",
            ),
            (vec![Ty::IntLit(1), Ty::IntLit(1)], "int(1)"),
            (vec![Ty::IntLit(1), Ty::Int], "int"),
            (vec![], "any"),
            (vec![Ty::Str, Ty::Any], "any"),
            ((0..1000).map(Ty::IntLit).collect(), "any"),
        ];
        for (types, want) in cases {
            assert_eq!(sup(&types).to_string(), want, "{types:?}");
        }
    }

    #[test]
    fn subsume_follows_kcl() {
        let cases = [
            (Ty::IntLit(1), Ty::Float, true),
            (Ty::IntLit(1), Ty::Int, true),
            (Ty::StrLit("a".into()), Ty::Int, false),
            (Ty::BoolLit(true), Ty::Float, true),
            (Ty::Int, Ty::Str, false),
            (Ty::None, Ty::Str, true),
            (Ty::list(Ty::IntLit(1)), Ty::list(Ty::Str), false),
            (
                Ty::Union(vec![Ty::Int, Ty::Str]),
                Ty::Union(vec![Ty::Str, Ty::Int]),
                true,
            ),
            (Ty::Str, Ty::StrLit("a".into()), true),
        ];
        for (l, r, want) in cases {
            assert_eq!(subsume(&NoBases, &l, &r, true), want, "{l} <: {r}");
        }
    }
}
