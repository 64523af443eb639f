//! KCL's values.
//!
//! Containers are shared (`Rc`) and copied on write (`Rc::make_mut`), so a
//! value handed to a variable, a schema attribute or a builtin is never
//! changed behind its holder's back. Dict keys are strings and keep the order
//! KCL gives them (insertion order; unification keeps the first position of
//! a key).
//!
//! The core operations every stage shares live here; each stage may add its
//! own `impl Value` block in its own module (unification in `unify.rs`,
//! display and formatting beside the builtins, YAML and JSON in `yaml.rs`
//! and `json.rs`).

pub mod json;
pub mod yaml;

use std::cmp::Ordering;
use std::rc::Rc;

use crate::collections::IndexMap;

use crate::ast::{ConfigEntryOperation, NumberBinarySuffix};

pub mod ops;
pub(crate) mod range;
pub mod unify;

#[derive(Debug, Clone)]
pub enum Value {
    Undefined,
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// A number with a unit suffix (`1Ki`): KCL's `number_multiplier`.
    Unit(UnitValue),
    Str(Rc<str>),
    List(Rc<Vec<Value>>),
    Dict(Rc<Dict>),
    Schema(Rc<SchemaValue>),
    Function(Rc<Function>),
}

/// `1Ki`: the value in base units (1024), the number as written (1) and the
/// suffix.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UnitValue {
    pub value: f64,
    pub raw: i64,
    pub suffix: NumberBinarySuffix,
}

/// A dict or config value. `ops` and `insert_indexes` hold, per key, the
/// operator a config literal wrote it with and the index of `key[i] += …`,
/// which unification applies when this value is merged into another.
///
/// `ops` is indexed like `entries` (a dict's keys keep their positions:
/// entries are never removed) and holds only as many operators as reach
/// the last key written with `=` or `+=`: a key past its end was written
/// with `:`, as nearly every key is, so most dicts never allocate it, and
/// no key is copied for its operator.
#[derive(Debug, Clone, Default)]
pub struct Dict {
    pub entries: IndexMap<String, Value>,
    ops: Vec<ConfigEntryOperation>,
    pub insert_indexes: IndexMap<String, i64>,
}

impl Dict {
    pub fn new() -> Dict {
        Dict::default()
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries.get(key)
    }

    /// Sets `key` to `value` (kept at the key's first position).
    pub fn insert(&mut self, key: impl Into<String>, value: Value) {
        self.entries.insert(key.into(), value);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.entries.iter()
    }

    pub fn op(&self, key: &str) -> ConfigEntryOperation {
        self.entries
            .get_index_of(key)
            .map_or(ConfigEntryOperation::Union, |i| self.op_at(i))
    }

    fn op_at(&self, index: usize) -> ConfigEntryOperation {
        self.ops
            .get(index)
            .copied()
            .unwrap_or(ConfigEntryOperation::Union)
    }

    /// Records that `key`, already in the dict, was written with `op`.
    pub fn set_op(&mut self, key: &str, op: ConfigEntryOperation) {
        if let Some(index) = self.entries.get_index_of(key) {
            self.set_op_at(index, op);
        }
    }

    fn set_op_at(&mut self, index: usize, op: ConfigEntryOperation) {
        match self.ops.get_mut(index) {
            Some(slot) => *slot = op,
            None if op == ConfigEntryOperation::Union => {}
            None => {
                self.ops.resize(index, ConfigEntryOperation::Union);
                self.ops.push(op);
            }
        }
    }

    /// Sets `key` to `value`, written with `op`.
    pub fn insert_with_op(&mut self, key: String, value: Value, op: ConfigEntryOperation) {
        let (index, _) = self.entries.insert_full(key, value);
        self.set_op_at(index, op);
    }

    /// The keys written with `=` or `+=`, with their operators.
    pub fn ops(&self) -> impl Iterator<Item = (&String, ConfigEntryOperation)> {
        self.ops
            .iter()
            .enumerate()
            .filter(|(_, op)| **op != ConfigEntryOperation::Union)
            .filter_map(|(i, op)| self.entries.get_index(i).map(|(k, _)| (k, *op)))
    }
}

impl FromIterator<(String, Value)> for Dict {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Dict {
        Dict {
            entries: iter.into_iter().collect(),
            ..Dict::default()
        }
    }
}

/// An instance of a schema: its type and its attributes in KCL's order.
#[derive(Debug, Clone)]
pub struct SchemaValue {
    /// The schema's name (`Person`).
    pub name: String,
    /// The package that declares it (`__main__`, `pkg.sub`).
    pub pkgpath: String,
    pub attrs: Dict,
    /// Attributes the instance's config set explicitly (not defaults).
    pub config_keys: Vec<String>,
    /// The schema arguments it was made with (`S(1, b=2) {…}`), kept to
    /// evaluate it again when it is unified with more config.
    pub args: Vec<Value>,
    pub kwargs: Vec<(String, Value)>,
    /// The schema's definition, for `instances()`, type checks and
    /// re-evaluation when the instance is unified with more config.
    pub ty: Option<Rc<crate::eval::SchemaType>>,
}

impl SchemaValue {
    /// `pkg.Name`, or `Name` for the main package, as `typeof(x, True)` and
    /// errors print it.
    pub fn full_name(&self) -> String {
        if self.pkgpath.is_empty() || self.pkgpath == "__main__" {
            self.name.clone()
        } else {
            format!("{}.{}", self.pkgpath, self.name)
        }
    }
}

/// Something callable: a builtin, a lambda, or a schema or rule (called
/// to make an instance).
#[derive(Debug, Clone)]
pub struct Function {
    pub name: String,
    pub kind: FunctionKind,
}

#[derive(Debug, Clone)]
pub enum FunctionKind {
    /// A builtin function or a system module's member.
    Builtin(crate::builtins::BuiltinFn),
    /// A method of a value (`"a".upper`), the receiver bound.
    Method {
        receiver: Value,
        method: crate::builtins::BuiltinFn,
    },
    /// A lambda with the scope it closed over.
    Lambda(Rc<crate::eval::Closure>),
    /// A schema or rule used as a value (`Person`, `instances()` on it).
    Schema(Rc<crate::eval::SchemaType>),
}

impl Value {
    pub fn str(s: impl AsRef<str>) -> Value {
        Value::Str(Rc::from(s.as_ref()))
    }

    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Rc::new(items))
    }

    pub fn dict(dict: Dict) -> Value {
        Value::Dict(Rc::new(dict))
    }

    /// The type name KCL's `typeof` and messages use.
    pub fn type_name(&self) -> String {
        match self {
            Value::Undefined => "UndefinedType".into(),
            Value::None => "NoneType".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) => "int".into(),
            Value::Float(_) => "float".into(),
            Value::Unit(_) => "number_multiplier".into(),
            Value::Str(_) => "str".into(),
            Value::List(_) => "list".into(),
            Value::Dict(_) => "dict".into(),
            Value::Schema(s) => s.name.clone(),
            Value::Function(_) => "function".into(),
        }
    }

    pub fn is_undefined(&self) -> bool {
        matches!(self, Value::Undefined)
    }

    pub fn is_none(&self) -> bool {
        matches!(self, Value::None)
    }

    /// `None` or `Undefined`.
    pub fn is_none_or_undefined(&self) -> bool {
        matches!(self, Value::None | Value::Undefined)
    }

    /// KCL's truth: `None`, `Undefined`, `False`, zero, and empty strings,
    /// lists, dicts and schemas are false.
    pub fn is_truthy(&self) -> bool {
        match self {
            Value::Undefined | Value::None => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Unit(u) => u.value != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Dict(d) => !d.is_empty(),
            Value::Schema(s) => !s.attrs.is_empty(),
            Value::Function(_) => true,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The attributes of a dict or schema instance.
    pub fn as_dict(&self) -> Option<&Dict> {
        match self {
            Value::Dict(d) => Some(d),
            Value::Schema(s) => Some(&s.attrs),
            _ => None,
        }
    }

    pub fn as_list(&self) -> Option<&[Value]> {
        match self {
            Value::List(l) => Some(l),
            _ => None,
        }
    }

    /// An int, a float or a unit number as a float.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            Value::Unit(u) => Some(u.value),
            Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
            _ => None,
        }
    }

    /// KCL's `==`: numbers compare by value across int and float, a dict
    /// equals a schema instance with the same attributes, key order does
    /// not matter.
    pub fn kcl_eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Undefined, Value::Undefined) | (Value::None, Value::None) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::List(a), Value::List(b)) => {
                a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.kcl_eq(y))
            }
            (Value::Dict(_) | Value::Schema(_), Value::Dict(_) | Value::Schema(_)) => {
                let (Some(a), Some(b)) = (self.as_dict(), other.as_dict()) else {
                    return false;
                };
                a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| v.kcl_eq(w)))
            }
            (Value::Function(a), Value::Function(b)) => Rc::ptr_eq(a, b),
            (
                Value::Int(_) | Value::Float(_) | Value::Unit(_) | Value::Bool(_),
                Value::Int(_) | Value::Float(_) | Value::Unit(_) | Value::Bool(_),
            ) => match (self, other) {
                (Value::Int(a), Value::Int(b)) => a == b,
                (Value::Bool(_), _) | (_, Value::Bool(_)) => false,
                _ => self.as_f64() == other.as_f64(),
            },
            _ => false,
        }
    }

    /// KCL's `<`, `<=`, … between two values, `None` when KCL refuses to
    /// compare them (numbers with numbers, strings with strings, lists
    /// element by element).
    pub fn kcl_cmp(&self, other: &Value) -> Option<Ordering> {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
            (
                Value::Int(_) | Value::Float(_) | Value::Unit(_) | Value::Bool(_),
                Value::Int(_) | Value::Float(_) | Value::Unit(_) | Value::Bool(_),
            ) => self.as_f64()?.partial_cmp(&other.as_f64()?),
            (Value::Str(a), Value::Str(b)) => Some(a.cmp(b)),
            (Value::List(a), Value::List(b)) => {
                for (x, y) in a.iter().zip(b.iter()) {
                    match x.kcl_cmp(y)? {
                        Ordering::Equal => continue,
                        unequal => return Some(unequal),
                    }
                }
                Some(a.len().cmp(&b.len()))
            }
            _ => None,
        }
    }
}
