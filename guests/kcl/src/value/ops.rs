//! KCL's arithmetic, bitwise, comparison and membership operators on
//! values, with KCL's int/float rules and messages: int results that leave
//! the 64-bit range are an error, `/` always gives a float, `//` and `%`
//! round towards negative infinity as Python does.

use std::rc::Rc;

use crate::ast::{BinOp, CmpOp, UnaryOp};
use crate::error::{ErrorKind, KclError, Result};
use crate::value::{Dict, Value};

fn unsupported(op: &str, a: &Value, b: &Value) -> KclError {
    KclError::new(
        ErrorKind::EvaluationError,
        format!(
            "unsupported operand type(s) for {op}: '{}' and '{}'",
            a.type_name(),
            b.type_name()
        ),
    )
}

fn int_overflow(wide: i128) -> KclError {
    KclError::new(
        ErrorKind::IntOverflow,
        format!("{wide}: A 64 bit integer overflow"),
    )
}

fn checked(wide: i128) -> Result<Value> {
    i64::try_from(wide)
        .map(Value::Int)
        .map_err(|_| int_overflow(wide))
}

fn zero_division() -> KclError {
    KclError::new(
        ErrorKind::EvaluationError,
        "integer division or modulo by zero",
    )
}

fn float_zero_division() -> KclError {
    KclError::new(ErrorKind::EvaluationError, "float division by zero")
}

/// A number operand: ints stay exact, everything else is a float (a unit
/// number counts by its value in base units, a bool as 0 or 1).
#[derive(Clone, Copy)]
enum Num {
    Int(i64),
    Float(f64),
}

fn num(v: &Value) -> Option<Num> {
    match v {
        Value::Int(i) => Some(Num::Int(*i)),
        Value::Bool(b) => Some(Num::Int(i64::from(*b))),
        Value::Float(f) => Some(Num::Float(*f)),
        Value::Unit(u) => Some(Num::Float(u.value)),
        _ => None,
    }
}

fn floats(a: Num, b: Num) -> (f64, f64) {
    let f = |n| match n {
        Num::Int(i) => i as f64,
        Num::Float(f) => f,
    };
    (f(a), f(b))
}

fn python_mod_f(a: f64, b: f64) -> f64 {
    let r = a % b;
    if r != 0.0 && (r < 0.0) != (b < 0.0) {
        r + b
    } else {
        r
    }
}

impl Value {
    /// `self op other` for every binary operator but `and`, `or` and `as`,
    /// which the evaluator handles (they do not evaluate both sides or need
    /// types).
    pub fn binary(&self, op: BinOp, other: &Value) -> Result<Value> {
        match op {
            BinOp::Add => self.add(other),
            BinOp::Sub => self.arith(other, "-", |a, b| checked(a - b), |a, b| Ok(a - b)),
            BinOp::Mul => self.mul(other),
            BinOp::Div => {
                let (Some(a), Some(b)) = (num(self), num(other)) else {
                    return Err(unsupported("/", self, other));
                };
                let (x, y) = floats(a, b);
                if y == 0.0 {
                    return Err(float_zero_division());
                }
                Ok(Value::Float(x / y))
            }
            BinOp::FloorDiv => self.arith(
                other,
                "//",
                |a, b| {
                    if b == 0 {
                        return Err(zero_division());
                    }
                    let q = a / b;
                    checked(if a % b != 0 && (a < 0) != (b < 0) {
                        q - 1
                    } else {
                        q
                    })
                },
                |a, b| {
                    if b == 0.0 {
                        return Err(float_zero_division());
                    }
                    Ok((a / b).floor())
                },
            ),
            BinOp::Mod => self.arith(
                other,
                "%",
                |a, b| {
                    if b == 0 {
                        return Err(zero_division());
                    }
                    let r = a % b;
                    checked(if r != 0 && (r < 0) != (b < 0) {
                        r + b
                    } else {
                        r
                    })
                },
                |a, b| {
                    if b == 0.0 {
                        return Err(float_zero_division());
                    }
                    Ok(python_mod_f(a, b))
                },
            ),
            BinOp::Pow => self.pow(other),
            BinOp::LShift => self.int_op(other, "<<", |a, b| {
                let shift = u32::try_from(b).map_err(|_| negative_shift())?;
                if shift >= 64 {
                    return if a == 0 {
                        Ok(Value::Int(0))
                    } else {
                        Err(int_overflow(i128::MAX))
                    };
                }
                checked(i128::from(a) << shift).and_then(|v| match v {
                    Value::Int(r) if (r >> shift) == a => Ok(v),
                    _ => Err(int_overflow((i128::from(a)) << shift.min(63))),
                })
            }),
            BinOp::RShift => self.int_op(other, ">>", |a, b| {
                let shift = u32::try_from(b).map_err(|_| negative_shift())?;
                Ok(Value::Int(a >> shift.min(63)))
            }),
            BinOp::BitAnd => self.int_op(other, "&", |a, b| Ok(Value::Int(a & b))),
            BinOp::BitXor => self.int_op(other, "^", |a, b| Ok(Value::Int(a ^ b))),
            BinOp::BitOr => self.bit_or(other),
            BinOp::And => Ok(if self.is_truthy() {
                other.clone()
            } else {
                self.clone()
            }),
            BinOp::Or => Ok(if self.is_truthy() {
                self.clone()
            } else {
                other.clone()
            }),
            BinOp::As => Err(unsupported("as", self, other)),
        }
    }

    fn arith(
        &self,
        other: &Value,
        symbol: &str,
        int: impl Fn(i128, i128) -> Result<Value>,
        float: impl Fn(f64, f64) -> Result<f64>,
    ) -> Result<Value> {
        match (num(self), num(other)) {
            (Some(Num::Int(a)), Some(Num::Int(b))) => int(i128::from(a), i128::from(b)),
            (Some(a), Some(b)) => {
                let (x, y) = floats(a, b);
                float(x, y).map(Value::Float)
            }
            _ => Err(unsupported(symbol, self, other)),
        }
    }

    fn int_op(
        &self,
        other: &Value,
        symbol: &str,
        f: impl Fn(i64, i64) -> Result<Value>,
    ) -> Result<Value> {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => f(*a, *b),
            _ => Err(unsupported(symbol, self, other)),
        }
    }

    fn add(&self, other: &Value) -> Result<Value> {
        match (self, other) {
            (Value::Str(a), Value::Str(b)) => {
                let mut s = String::with_capacity(a.len() + b.len());
                s.push_str(a);
                s.push_str(b);
                Ok(Value::str(s))
            }
            (Value::List(a), Value::List(b)) => {
                let mut items = Vec::with_capacity(a.len() + b.len());
                items.extend(a.iter().cloned());
                items.extend(b.iter().cloned());
                Ok(Value::list(items))
            }
            (Value::List(_), other) => Err(KclError::new(
                ErrorKind::EvaluationError,
                format!(
                    "can only concatenate list (not \"{}\") to list",
                    other.type_name()
                ),
            )),
            _ => self.arith(other, "+", |a, b| checked(a + b), |a, b| Ok(a + b)),
        }
    }

    fn mul(&self, other: &Value) -> Result<Value> {
        let repeat = |n: i64| usize::try_from(n).unwrap_or(0);
        match (self, other) {
            (Value::Str(s), Value::Int(n)) | (Value::Int(n), Value::Str(s)) => {
                let times = repeat(*n);
                too_large(s.len(), times)?;
                Ok(Value::str(s.repeat(times)))
            }
            (Value::List(l), Value::Int(n)) | (Value::Int(n), Value::List(l)) => {
                let times = repeat(*n);
                too_large(l.len(), times)?;
                let mut items = Vec::with_capacity(l.len().saturating_mul(times));
                for _ in 0..times {
                    items.extend(l.iter().cloned());
                }
                Ok(Value::list(items))
            }
            _ => self.arith(other, "*", |a, b| checked(a * b), |a, b| Ok(a * b)),
        }
    }

    fn pow(&self, other: &Value) -> Result<Value> {
        match (num(self), num(other)) {
            (Some(Num::Int(a)), Some(Num::Int(b))) if b >= 0 => {
                let exp = u32::try_from(b).map_err(|_| int_overflow(i128::MAX))?;
                match a.checked_pow(exp) {
                    Some(r) => Ok(Value::Int(r)),
                    None => Err(int_overflow(
                        i128::from(a).checked_pow(exp).unwrap_or(i128::MAX),
                    )),
                }
            }
            (Some(a), Some(b)) => {
                let (x, y) = floats(a, b);
                Ok(Value::Float(x.powf(y)))
            }
            _ => Err(unsupported("**", self, other)),
        }
    }

    /// `|`: bitwise or of ints, union of lists, dicts and schemas, and
    /// `None | x` is `x`.
    pub fn bit_or(&self, other: &Value) -> Result<Value> {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => Ok(Value::Int(a | b)),
            (Value::None | Value::Undefined, _) => Ok(other.clone()),
            (_, Value::None | Value::Undefined) => Ok(self.clone()),
            _ => Err(unsupported("|", self, other)),
        }
    }

    /// `+x`, `-x`, `~x`, `not x`.
    pub fn unary(&self, op: UnaryOp) -> Result<Value> {
        let bad = || {
            KclError::new(
                ErrorKind::EvaluationError,
                format!(
                    "bad operand type for unary {}: '{}'",
                    op.symbol(),
                    self.type_name()
                ),
            )
        };
        match (op, self) {
            (UnaryOp::Not, v) => Ok(Value::Bool(!v.is_truthy())),
            (UnaryOp::UAdd, Value::Int(_) | Value::Float(_)) => Ok(self.clone()),
            (UnaryOp::UAdd, Value::Bool(b)) => Ok(Value::Int(i64::from(*b))),
            (UnaryOp::USub, Value::Int(i)) => checked(-i128::from(*i)),
            (UnaryOp::USub, Value::Bool(b)) => Ok(Value::Int(-i64::from(*b))),
            // KCL negates a float by subtracting it from zero: `-0.0` is 0.0.
            (UnaryOp::USub, Value::Float(f)) => Ok(Value::Float(0.0 - f)),
            (UnaryOp::Invert, Value::Int(i)) => Ok(Value::Int(!i)),
            (UnaryOp::Invert, Value::Bool(b)) => Ok(Value::Int(!i64::from(*b))),
            _ => Err(bad()),
        }
    }

    /// One comparison of a chain: `self op other`.
    pub fn compare(&self, op: CmpOp, other: &Value) -> Result<bool> {
        use std::cmp::Ordering::*;
        let order = |accept: &[std::cmp::Ordering]| -> Result<bool> {
            match self.kcl_cmp(other) {
                Some(o) => Ok(accept.contains(&o)),
                None => Err(KclError::new(
                    ErrorKind::EvaluationError,
                    format!(
                        "'{}' not supported between instances of '{}' and '{}'",
                        op.symbol(),
                        self.type_name(),
                        other.type_name()
                    ),
                )),
            }
        };
        match op {
            CmpOp::Eq => Ok(self.kcl_eq(other)),
            CmpOp::NotEq => Ok(!self.kcl_eq(other)),
            CmpOp::Lt => order(&[Less]),
            CmpOp::LtE => order(&[Less, Equal]),
            CmpOp::Gt => order(&[Greater]),
            CmpOp::GtE => order(&[Greater, Equal]),
            CmpOp::Is => Ok(self.is_same(other)),
            CmpOp::IsNot | CmpOp::Not => Ok(!self.is_same(other)),
            CmpOp::In => self.is_in(other),
            CmpOp::NotIn => self.is_in(other).map(|b| !b),
        }
    }

    /// `is`: identity for containers, equality for scalars of the same
    /// type (as KCL compares them).
    pub(crate) fn is_same(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::List(a), Value::List(b)) => Rc::ptr_eq(a, b) || (a.is_empty() && b.is_empty()),
            (Value::Dict(a), Value::Dict(b)) => Rc::ptr_eq(a, b),
            (Value::Schema(a), Value::Schema(b)) => Rc::ptr_eq(a, b),
            (Value::Int(_), Value::Float(_)) | (Value::Float(_), Value::Int(_)) => false,
            _ => {
                std::mem::discriminant(self) == std::mem::discriminant(other) && self.kcl_eq(other)
            }
        }
    }

    /// `self in other`: a substring, a list element, a dict or schema key.
    pub fn is_in(&self, other: &Value) -> Result<bool> {
        match other {
            Value::Str(s) => match self {
                Value::Str(sub) => Ok(s.contains(&**sub)),
                _ => Ok(false),
            },
            Value::List(items) => Ok(items.iter().any(|x| x.kcl_eq(self))),
            Value::Dict(_) | Value::Schema(_) => Ok(match (self, other.as_dict()) {
                (Value::Str(k), Some(d)) => d.get(k).is_some(),
                _ => false,
            }),
            Value::None | Value::Undefined => Ok(false),
            _ => Err(KclError::new(
                ErrorKind::EvaluationError,
                format!(
                    "'in' not supported between instances of '{}' and '{}'",
                    self.type_name(),
                    other.type_name()
                ),
            )),
        }
    }

    /// A dict with the same entries and no operator marks.
    pub fn plain_dict(entries: impl IntoIterator<Item = (String, Value)>) -> Value {
        Value::dict(entries.into_iter().collect::<Dict>())
    }
}

/// The most items (or bytes) a repetition may make: more is a runaway
/// program, refused before it exhausts memory.
const MAX_REPEAT: usize = 1 << 28;

fn too_large(len: usize, times: usize) -> Result<()> {
    if len.saturating_mul(times) > MAX_REPEAT {
        return Err(KclError::new(
            ErrorKind::EvaluationError,
            format!("repeating {len} items {times} times makes a value too large"),
        ));
    }
    Ok(())
}

fn negative_shift() -> KclError {
    KclError::new(ErrorKind::EvaluationError, "negative shift count")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(i: i64) -> Value {
        Value::Int(i)
    }

    #[test]
    fn int_and_float_arithmetic_follows_python_rules() {
        let cases: &[(Value, BinOp, Value, &str)] = &[
            (int(7), BinOp::FloorDiv, int(-2), "Int(-4)"),
            (int(-7), BinOp::Mod, int(3), "Int(2)"),
            (int(7), BinOp::Mod, int(-3), "Int(-2)"),
            (int(1), BinOp::Div, int(2), "Float(0.5)"),
            (int(2), BinOp::Pow, int(10), "Int(1024)"),
            (int(2), BinOp::Pow, int(-1), "Float(0.5)"),
            (Value::Float(7.5), BinOp::FloorDiv, int(2), "Float(3.0)"),
            (int(1), BinOp::LShift, int(4), "Int(16)"),
            (int(6), BinOp::BitXor, int(3), "Int(5)"),
        ];
        for (a, op, b, want) in cases {
            let got = a.binary(*op, b).map(|v| format!("{v:?}"));
            assert_eq!(got.as_deref(), Ok(*want), "{a:?} {op:?} {b:?}");
        }
    }

    #[test]
    fn int_overflow_is_an_error_with_kcls_message() {
        let err = int(i64::MAX).binary(BinOp::Add, &int(1)).unwrap_err();
        assert_eq!(
            err.message,
            "9223372036854775808: A 64 bit integer overflow"
        );
        assert!(int(3).binary(BinOp::Pow, &int(100)).is_err());
        assert!(int(i64::MIN).unary(UnaryOp::USub).is_err());
    }

    #[test]
    fn negating_a_float_subtracts_it_from_zero_as_kcl_does() {
        let cases = [(0.0, "0.0"), (-0.0, "0.0"), (1.5, "-1.5"), (-2.0, "2.0")];
        for (f, want) in cases {
            let Ok(Value::Float(got)) = Value::Float(f).unary(UnaryOp::USub) else {
                panic!("-{f} is not a float");
            };
            assert_eq!(format!("{got:?}"), want, "-{f}");
        }
    }

    #[test]
    fn division_by_zero_is_an_error() {
        let err = int(1).binary(BinOp::Div, &int(0)).unwrap_err();
        assert_eq!(err.message, "float division by zero");
        let err = int(1).binary(BinOp::Mod, &int(0)).unwrap_err();
        assert_eq!(err.message, "integer division or modulo by zero");
    }

    #[test]
    fn strings_and_lists_repeat_and_concatenate() {
        let s = Value::str("ab").binary(BinOp::Mul, &int(3)).unwrap();
        assert_eq!(s.as_str(), Some("ababab"));
        let l = Value::list(vec![int(1)])
            .binary(BinOp::Add, &Value::list(vec![int(2)]))
            .unwrap();
        assert_eq!(l.as_list().map(<[Value]>::len), Some(2));
        let err = int(1).binary(BinOp::Add, &Value::str("a")).unwrap_err();
        assert_eq!(
            err.message,
            "unsupported operand type(s) for +: 'int' and 'str'"
        );
    }

    #[test]
    fn membership_covers_strings_lists_and_dicts() {
        let d = Value::plain_dict([("k".to_string(), int(1))]);
        assert!(Value::str("k").is_in(&d).unwrap());
        assert!(Value::str("b").is_in(&Value::str("abc")).unwrap());
        assert!(int(2).is_in(&Value::list(vec![int(1), int(2)])).unwrap());
        assert!(!Value::str("x").is_in(&d).unwrap());
    }
}
