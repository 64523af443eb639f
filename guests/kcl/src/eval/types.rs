//! Types at run time: annotations check values and convert them (an int
//! where a float is expected becomes a float, a dict where a schema is
//! expected becomes an instance), with KCL's "expect T, got U" messages.

use std::rc::Rc;

use crate::ast::{self, BasicType, LiteralType, Type};
use crate::error::{ErrorKind, KclError, Result};
use crate::value::{Dict, FunctionKind, Value};

use super::{Evaluator, Frame, SchemaType};

/// A type as KCL prints it in messages.
pub(crate) fn type_to_string(ty: &Type) -> String {
    match ty {
        Type::Any => "any".into(),
        Type::Named(id) => id.name(),
        Type::Basic(b) => match b {
            BasicType::Bool => "bool",
            BasicType::Int => "int",
            BasicType::Float => "float",
            BasicType::Str => "str",
        }
        .into(),
        Type::List(inner) => match inner {
            Some(t) => format!("[{}]", type_to_string(&t.node)),
            None => "[]".into(),
        },
        Type::Dict { key, value } => format!(
            "{{{}:{}}}",
            key.as_ref()
                .map(|k| type_to_string(&k.node))
                .unwrap_or_default(),
            value
                .as_ref()
                .map(|v| type_to_string(&v.node))
                .unwrap_or_default()
        ),
        Type::Union(types) => types
            .iter()
            .map(|t| type_to_string(&t.node))
            .collect::<Vec<_>>()
            .join(" | "),
        Type::Literal(l) => match l {
            LiteralType::Bool(b) => if *b { "True" } else { "False" }.into(),
            LiteralType::Int(i, suffix) => {
                format!("{i}{}", suffix.map(|s| s.as_str()).unwrap_or_default())
            }
            LiteralType::Float(f) => {
                if f.fract() == 0.0 && f.is_finite() {
                    format!("{f:.1}")
                } else {
                    f.to_string()
                }
            }
            LiteralType::Str(s) => format!("{s:?}"),
            LiteralType::None => "None".into(),
            LiteralType::Undefined => "Undefined".into(),
        },
        Type::Function { params, ret } => format!(
            "({}) -> {}",
            params
                .iter()
                .map(|p| type_to_string(&p.node))
                .collect::<Vec<_>>()
                .join(", "),
            ret.as_ref()
                .map(|r| type_to_string(&r.node))
                .unwrap_or_else(|| "any".into())
        ),
    }
}

fn mismatch(expected: &Type, got: String) -> KclError {
    KclError::new(
        ErrorKind::EvaluationError,
        format!("expect {}, got {got}", type_to_string(expected)),
    )
}

impl Evaluator {
    /// The type name `typeof(x, full_name=True)` and messages print:
    /// a schema instance's `pkg.Name`.
    pub(crate) fn type_of_full(&self, v: &Value) -> String {
        match v {
            Value::Schema(s) => s.full_name(),
            other => other.type_name(),
        }
    }

    /// A named type that is a builtin type's name, resolved to it.
    pub(crate) fn normalize_named_type(&self, frame: &Rc<Frame>, ty: Type) -> Type {
        match &ty {
            Type::Named(id) if id.names.len() == 1 => match id.name().as_str() {
                "int" => Type::Basic(BasicType::Int),
                "float" => Type::Basic(BasicType::Float),
                "str" => Type::Basic(BasicType::Str),
                "bool" => Type::Basic(BasicType::Bool),
                "any" => Type::Any,
                name => self
                    .aliases
                    .get(&*frame.pkgpath)
                    .and_then(|a| a.get(name))
                    .cloned()
                    .unwrap_or(ty),
            },
            _ => ty,
        }
    }

    fn named_schema(
        &mut self,
        frame: &Rc<Frame>,
        id: &ast::Identifier,
    ) -> Result<Option<Rc<SchemaType>>> {
        let span = id.names.first().map(|n| n.span).unwrap_or_default();
        match self.load_identifier(frame, id, span) {
            Ok(Value::Function(f)) => match &f.kind {
                FunctionKind::Schema(ty) => Ok(Some(ty.clone())),
                _ => Ok(None),
            },
            Ok(_) => Ok(None),
            Err(e) if e.kind == ErrorKind::NameError => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether a value already has a type (no conversion): `as` and
    /// unions use it.
    pub(crate) fn value_matches_type(
        &mut self,
        frame: &Rc<Frame>,
        v: &Value,
        ty: &Type,
    ) -> Result<bool> {
        Ok(match (ty, v) {
            (_, Value::None | Value::Undefined) => true,
            (Type::Any, _) => true,
            (Type::Basic(BasicType::Int), Value::Int(_) | Value::Unit(_)) => true,
            (Type::Basic(BasicType::Float), Value::Float(_) | Value::Int(_) | Value::Unit(_)) => {
                true
            }
            (Type::Basic(BasicType::Str), Value::Str(_)) => true,
            (Type::Basic(BasicType::Bool), Value::Bool(_)) => true,
            (Type::List(inner), Value::List(items)) => match inner {
                Some(t) => {
                    for item in items.iter() {
                        if !self.value_matches_type(frame, item, &t.node)? {
                            return Ok(false);
                        }
                    }
                    true
                }
                None => true,
            },
            (Type::Dict { key: _, value }, Value::Dict(_) | Value::Schema(_)) => match value {
                Some(t) => {
                    let items: Vec<Value> = v
                        .as_dict()
                        .map(|d| d.entries.values().cloned().collect())
                        .unwrap_or_default();
                    for item in &items {
                        if !self.value_matches_type(frame, item, &t.node)? {
                            return Ok(false);
                        }
                    }
                    true
                }
                None => true,
            },
            (Type::Union(types), _) => {
                for t in types {
                    if self.value_matches_type(frame, v, &t.node)? {
                        return Ok(true);
                    }
                }
                false
            }
            (Type::Literal(l), _) => literal_matches(l, v),
            (Type::Function { .. }, Value::Function(_)) => true,
            (Type::Named(id), Value::Unit(_)) if id.name() == "units.NumberMultiplier" => true,
            (Type::Named(id), _) => {
                let resolved = self.normalize_named_type(frame, ty.clone());
                if !matches!(resolved, Type::Named(_)) {
                    return self.value_matches_type(frame, v, &resolved);
                }
                match (self.named_schema(frame, id)?, v) {
                    (Some(schema), Value::Schema(s)) => schema_is(s.ty.as_ref(), &schema),
                    _ => false,
                }
            }
            _ => false,
        })
    }

    /// Checks a value against an annotation and converts it as KCL does.
    pub(crate) fn convert_to_type(
        &mut self,
        frame: &Rc<Frame>,
        v: Value,
        ty: &Type,
    ) -> Result<Value> {
        if v.is_none_or_undefined() {
            return Ok(v);
        }
        match self.try_convert(frame, &v, ty)? {
            Some(converted) => Ok(converted),
            None => Err(self.type_mismatch(frame, &v, ty)?),
        }
    }

    /// KCL's "expect T, got U" for a value, with the "For details" lines
    /// of a config that is no instance of the schemas `T` names.
    pub(crate) fn type_mismatch(
        &mut self,
        frame: &Rc<Frame>,
        v: &Value,
        ty: &Type,
    ) -> Result<KclError> {
        let details = self.mismatch_details(frame, v, ty)?;
        let mut e = mismatch(ty, self.type_of_full(v));
        if !details.is_empty() {
            e.message = format!("{}. For details:\n{}", e.message, details.join("\n"));
        }
        Ok(e)
    }

    /// An argument checked against a parameter's type: `{}` where a schema
    /// with required attributes is expected is a type error there, not an
    /// instance missing them (a variable's `{}` is an instance).
    pub(crate) fn convert_argument(
        &mut self,
        frame: &Rc<Frame>,
        v: Value,
        ty: &Type,
    ) -> Result<Value> {
        if let (Value::Dict(d), Type::Named(id)) = (&v, ty)
            && d.is_empty()
            && let Some(schema) = self.named_schema(frame, id)?
        {
            let (attrs, _) = super::schema::schema_attrs(&schema);
            if attrs.iter().any(|a| !a.optional && !a.has_default) {
                let e = self.type_mismatch(frame, &v, ty)?;
                // KCL ran the schema's body on the config before it
                // refused it: the error is on the last line that ran.
                return Err(match super::schema::body_end(&schema) {
                    Some(end) => e.or_at(end),
                    None => e,
                });
            }
        }
        self.convert_to_type(frame, v, ty)
    }

    /// Why a config is not an instance of the schemas a type names
    /// (KCL's "For details" lines).
    fn mismatch_details(&mut self, frame: &Rc<Frame>, v: &Value, ty: &Type) -> Result<Vec<String>> {
        let Some(config) = v.as_dict() else {
            return Ok(Vec::new());
        };
        let members: Vec<&Type> = match ty {
            Type::Union(types) => types.iter().map(|t| &t.node).collect(),
            other => vec![other],
        };
        let mut details = Vec::new();
        for member in members {
            let Type::Named(id) = member else {
                continue;
            };
            let Some(schema) = self.named_schema(frame, id)? else {
                continue;
            };
            let name = id.name();
            let (attrs, has_index_signature) = super::schema::schema_attrs(&schema);
            if !has_index_signature {
                for key in config.entries.keys() {
                    if !key.starts_with('_') && !attrs.iter().any(|a| a.name == *key) {
                        details.push(format!("Schema {name} does not contain attribute {key}"));
                    }
                }
            }
            for attr in attrs.iter().filter(|a| !a.optional) {
                if config.get(&attr.name).is_none() {
                    details.push(format!(
                        "Schema {name}'s attribute {} is missing",
                        attr.name
                    ));
                }
            }
        }
        Ok(details)
    }

    /// The value converted to the type, or `None` when it does not fit.
    fn try_convert(&mut self, frame: &Rc<Frame>, v: &Value, ty: &Type) -> Result<Option<Value>> {
        if v.is_none_or_undefined() {
            return Ok(Some(v.clone()));
        }
        Ok(match (ty, v) {
            (Type::Any, _) => Some(v.clone()),
            (Type::Basic(_), _) => {
                if self.value_matches_type(frame, v, ty)? {
                    Some(v.clone())
                } else {
                    None
                }
            }
            (Type::List(inner), Value::List(items)) => match inner {
                None => Some(v.clone()),
                Some(t) => {
                    let mut out = Vec::with_capacity(items.len());
                    for item in items.iter() {
                        match self.try_convert(frame, item, &t.node)? {
                            Some(c) => out.push(c),
                            None => return Ok(None),
                        }
                    }
                    Some(Value::list(out))
                }
            },
            (Type::Dict { key: _, value }, Value::Dict(d)) => match value {
                None => Some(v.clone()),
                Some(t) => {
                    // Values nearly always fit as they are: the dict is
                    // copied only when a conversion changes one.
                    let mut out: Option<Dict> = None;
                    for (i, item) in d.entries.values().enumerate() {
                        let Some(c) = self.try_convert(frame, item, &t.node)? else {
                            return Ok(None);
                        };
                        if out.is_none() && c.is_same(item) {
                            continue;
                        }
                        let out = out.get_or_insert_with(|| d.as_ref().clone());
                        if let Some((_, slot)) = out.entries.get_index_mut(i) {
                            *slot = c;
                        }
                    }
                    Some(out.map_or_else(|| v.clone(), Value::dict))
                }
            },
            (Type::Dict { .. }, Value::Schema(_)) => Some(v.clone()),
            (Type::Union(types), _) => {
                // A value that already fits one member keeps its type;
                // else the first member it converts to.
                for t in types {
                    if !matches!(v, Value::Dict(_)) && self.value_matches_type(frame, v, &t.node)? {
                        return Ok(Some(v.clone()));
                    }
                }
                for t in types {
                    if let Some(c) = self.try_convert(frame, v, &t.node)? {
                        return Ok(Some(c));
                    }
                }
                None
            }
            (Type::Literal(l), _) => literal_matches(l, v).then(|| v.clone()),
            (Type::Function { .. }, Value::Function(_)) => Some(v.clone()),
            (Type::Named(id), Value::Unit(_)) if id.name() == "units.NumberMultiplier" => {
                Some(v.clone())
            }
            (Type::Named(id), _) => {
                let resolved = self.normalize_named_type(frame, ty.clone());
                if !matches!(resolved, Type::Named(_)) {
                    return self.try_convert(frame, v, &resolved);
                }
                match (self.named_schema(frame, id)?, v) {
                    (Some(schema), Value::Schema(s)) => {
                        schema_is(s.ty.as_ref(), &schema).then(|| v.clone())
                    }
                    (Some(schema), Value::Dict(d)) => {
                        if !self.dict_fits_schema(&schema, d) {
                            return Ok(None);
                        }
                        Some(self.instantiate(
                            &schema,
                            d.as_ref().clone(),
                            Vec::new(),
                            Vec::new(),
                            // Where a config entry wrote it, else the last
                            // node entered (KCL's panic line).
                            match self.config_position(d) {
                                unknown if unknown == crate::source::Span::default() => {
                                    self.last_node
                                }
                                written => written,
                            },
                        )?)
                    }
                    _ => None,
                }
            }
            _ => None,
        })
    }
}

/// Whether an instance's schema is `want` or inherits from it.
fn schema_is(have: Option<&Rc<SchemaType>>, want: &Rc<SchemaType>) -> bool {
    let mut cur = have.cloned();
    while let Some(ty) = cur {
        if Rc::ptr_eq(&ty, want) || (ty.name == want.name && ty.pkgpath == want.pkgpath) {
            return true;
        }
        cur = ty.parent.clone();
    }
    false
}

fn literal_matches(l: &LiteralType, v: &Value) -> bool {
    match (l, v) {
        (LiteralType::Bool(a), Value::Bool(b)) => a == b,
        (LiteralType::Int(a, None), Value::Int(b)) => a == b,
        (LiteralType::Int(a, Some(s)), Value::Unit(u)) => *a == u.raw && *s == u.suffix,
        (LiteralType::Float(a), Value::Float(b)) => a == b,
        (LiteralType::Str(a), Value::Str(b)) => a.as_str() == &**b,
        (LiteralType::None, Value::None) => true,
        (LiteralType::Undefined, Value::Undefined) => true,
        _ => false,
    }
}
