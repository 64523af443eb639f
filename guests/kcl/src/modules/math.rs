//! `math`: KCL's math functions, with its int or float results (an int
//! argument often gives an int) and its messages.

use super::error;
use crate::builtins::{BuiltinFn, Interp};
use crate::error::{KclError, Result};
use crate::value::Value;

pub(super) const MEMBERS: &[(&str, BuiltinFn)] = &[
    ("ceil", ceil),
    ("factorial", factorial),
    ("floor", floor),
    ("gcd", gcd),
    ("isfinite", isfinite),
    ("isinf", isinf),
    ("isnan", isnan),
    ("modf", modf),
    ("exp", exp),
    ("expm1", expm1),
    ("log", log),
    ("log1p", log1p),
    ("log2", log2),
    ("log10", log10),
    ("pow", pow),
    ("sqrt", sqrt),
];

/// The argument when it is an int: an int positional argument, else an
/// int keyword argument.
fn int_arg(args: &[Value], kwargs: &[(String, Value)], i: usize, name: &str) -> Option<i64> {
    let int = |v: Option<&Value>| match v {
        Some(Value::Int(x)) => Some(*x),
        _ => None,
    };
    int(args.get(i)).or_else(|| int(kwargs.iter().find(|(k, _)| k == name).map(|(_, v)| v)))
}

/// The argument when it is a float (a number with a unit is not).
fn float_arg(args: &[Value], kwargs: &[(String, Value)], i: usize, name: &str) -> Option<f64> {
    let float = |v: Option<&Value>| match v {
        Some(Value::Float(x)) => Some(*x),
        _ => None,
    };
    float(args.get(i)).or_else(|| float(kwargs.iter().find(|(k, _)| k == name).map(|(_, v)| v)))
}

fn one_argument(name: &str) -> KclError {
    error(format!("{name}() takes exactly one argument (0 given)"))
}

/// A function of one number: `on_int` for an int, `on_float` for a float.
fn unary(
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
    on_int: impl FnOnce(i64) -> Value,
    on_float: impl FnOnce(f64) -> Value,
) -> Result<Value> {
    if let Some(x) = int_arg(args, kwargs, 0, "x") {
        return Ok(on_int(x));
    }
    if let Some(x) = float_arg(args, kwargs, 0, "x") {
        return Ok(on_float(x));
    }
    Err(one_argument(name))
}

/// `ceil(x) -> int`
fn ceil(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    unary("ceil", args, kwargs, Value::Int, |x| {
        Value::Int(x.ceil() as i64)
    })
}

/// `floor(x) -> int`
fn floor(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    unary("floor", args, kwargs, Value::Int, |x| {
        Value::Int(x.floor() as i64)
    })
}

fn factorial_of(n: i64) -> Result<i64> {
    // 21! does not fit an i64.
    if n >= 21 {
        return Err(error("factorial() result overflow"));
    }
    Ok((1..=n).product::<i64>().max(1))
}

/// `factorial(x) -> int`: of an integral float, a float.
fn factorial(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    if let Some(x) = int_arg(args, kwargs, 0, "x").filter(|x| *x >= 0) {
        return factorial_of(x).map(Value::Int);
    }
    if let Some(x) =
        float_arg(args, kwargs, 0, "x").filter(|x| *x >= 0.0 && (*x as i64) as f64 == *x)
    {
        return factorial_of(x as i64).map(|f| Value::Float(f as f64));
    }
    if !args.is_empty() {
        return Err(error("factorial() only accepts integral values"));
    }
    Err(one_argument("factorial"))
}

/// `gcd(a: int, b: int) -> int` (never negative, but for `i64::MIN`).
fn gcd(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let (Some(a), Some(b)) = (int_arg(args, kwargs, 0, "a"), int_arg(args, kwargs, 1, "b")) else {
        return Err(error(format!(
            "gcd() takes exactly two arguments ({} given)",
            args.len()
        )));
    };
    let (mut x, mut y) = (a.unsigned_abs(), b.unsigned_abs());
    while y != 0 {
        (x, y) = (y, x % y);
    }
    Ok(Value::Int(x as i64))
}

/// `isfinite(x) -> bool`
fn isfinite(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    unary(
        "isfinite",
        args,
        kwargs,
        |_| Value::Bool(true),
        |x| Value::Bool(x.is_finite()),
    )
}

/// `isinf(x) -> bool` (a bool is not infinite either).
fn isinf(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    unary(
        "isinf",
        args,
        kwargs,
        |_| Value::Bool(false),
        |x| Value::Bool(x.is_infinite()),
    )
    .or_else(|e| match args.first() {
        Some(Value::Bool(_)) => Ok(Value::Bool(false)),
        _ => Err(e),
    })
}

/// `isnan(x) -> bool`
fn isnan(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    unary(
        "isnan",
        args,
        kwargs,
        |_| Value::Bool(false),
        |x| Value::Bool(x.is_nan()),
    )
}

/// `modf(x) -> [float]`: the fractional and the integral part.
fn modf(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let pair = |a: f64, b: f64| Value::list(vec![Value::Float(a), Value::Float(b)]);
    unary(
        "modf",
        args,
        kwargs,
        |x| pair(0.0, x as f64),
        |x| {
            if x.is_infinite() {
                pair(0.0_f64.copysign(x), x)
            } else if x.is_nan() {
                pair(x, x)
            } else {
                pair(x.fract(), x.trunc())
            }
        },
    )
}

/// `exp(x) -> float`
fn exp(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    unary(
        "exp",
        args,
        kwargs,
        |x| Value::Float((x as f64).exp()),
        |x| Value::Float(x.exp()),
    )
}

/// `expm1(x) -> float`
fn expm1(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    unary(
        "expm1",
        args,
        kwargs,
        |x| Value::Float((x as f64).exp_m1()),
        |x| Value::Float(x.exp_m1()),
    )
}

/// `log(x, e=math.e)`: of an int, an int (truncated). The base is read as
/// KCL reads it: a positional float; the keyword `e` only when a
/// positional base is there but not a float; else `e`.
fn log(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let base = match args.get(1) {
        Some(Value::Float(b)) => *b,
        Some(v) if !v.is_none_or_undefined() => {
            float_arg(&[], kwargs, 0, "e").unwrap_or(std::f64::consts::E)
        }
        _ => std::f64::consts::E,
    };
    unary(
        "log",
        args,
        kwargs,
        |x| Value::Int((x as f64).log(base) as i64),
        |x| Value::Float(x.log(base)),
    )
}

/// `log1p(x) -> float`: KCL's adds 1 before `ln_1p`, so this is
/// `ln(x + 2)`; kept for the same results.
fn log1p(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    unary(
        "log1p",
        args,
        kwargs,
        |x| Value::Float((x.wrapping_add(1) as f64).ln_1p()),
        |x| Value::Float((x + 1.0).ln_1p()),
    )
}

/// `log2(x)`: of an int, an int (truncated).
fn log2(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    unary(
        "log2",
        args,
        kwargs,
        |x| Value::Int((x as f64).log2() as i64),
        |x| Value::Float(x.log2()),
    )
}

/// `log10(x) -> float`
fn log10(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    unary(
        "log10",
        args,
        kwargs,
        |x| Value::Float((x as f64).log10()),
        |x| Value::Float(x.log10()),
    )
}

/// `pow(x, n)`: int to a non-negative int power is an int (wrapping on
/// overflow, as KCL's release build does), anything else a float. KCL
/// names the exponent `n`.
fn pow(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    if let Some(x) = int_arg(args, kwargs, 0, "x") {
        if let Some(n) = int_arg(args, kwargs, 1, "n") {
            return Ok(if n < 0 {
                Value::Float((x as f64).powf(n as f64))
            } else {
                Value::Int(x.wrapping_pow(n as u32))
            });
        }
        if let Some(n) = float_arg(args, kwargs, 1, "n") {
            return Ok(Value::Float((x as f64).powf(n)));
        }
    }
    if let Some(x) = float_arg(args, kwargs, 0, "x") {
        if let Some(n) = int_arg(args, kwargs, 1, "n") {
            return Ok(Value::Float(x.powi(n as i32)));
        }
        if let Some(n) = float_arg(args, kwargs, 1, "n") {
            return Ok(Value::Float(x.powf(n)));
        }
    }
    Err(one_argument("pow"))
}

/// `sqrt(x) -> float`
fn sqrt(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    unary(
        "sqrt",
        args,
        kwargs,
        |x| Value::Float((x as f64).sqrt()),
        |x| Value::Float(x.sqrt()),
    )
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{call, json};
    use crate::value::Value;

    fn int(i: i64) -> Value {
        Value::Int(i)
    }
    fn float(f: f64) -> Value {
        Value::Float(f)
    }

    // Expectations from KCL 0.12.3 (its oracle and the grammar suite, whose
    // inputs include 2.7183).
    #[test]
    #[allow(clippy::approx_constant)]
    fn results_and_their_types_are_kcls() {
        let cases: &[(&str, &[Value], &str)] = &[
            ("ceil", &[float(-45.17)], "-45"),
            ("ceil", &[float(100.12)], "101"),
            ("ceil", &[float(1e30)], "9223372036854775807"),
            ("floor", &[float(-45.17)], "-46"),
            ("floor", &[int(3)], "3"),
            ("exp", &[int(2)], "7.38905609893065"),
            ("exp", &[float(-6.89)], "0.0010179138409954387"),
            ("expm1", &[int(32)], "78962960182679.69"),
            ("factorial", &[int(5)], "120"),
            ("factorial", &[float(5.0)], "120.0"),
            ("factorial", &[int(0)], "1"),
            ("gcd", &[int(60), int(48)], "12"),
            ("gcd", &[int(-4), int(6)], "2"),
            ("isfinite", &[int(1)], "true"),
            ("isfinite", &[float(f64::NAN)], "false"),
            ("isinf", &[Value::Bool(true)], "false"),
            ("isnan", &[float(f64::NAN)], "true"),
            ("log", &[float(2.7183)], "1.0000066849139877"),
            ("log", &[int(8), int(2)], "2"),
            ("log", &[int(8), float(2.0)], "3"),
            ("log", &[float(8.0)], "2.0794415416798357"),
            ("log10", &[int(2)], "0.3010299956639812"),
            ("log1p", &[int(1)], "1.0986122886681096"),
            ("log2", &[float(2.7183)], "1.4427046851812222"),
            ("log2", &[int(8)], "3"),
            // KCL prints ...456: its YAML output reads floats back lossily.
            ("modf", &[float(100.12)], "[0.12000000000000455, 100.0]"),
            ("modf", &[float(-3.5)], "[-0.5, -3.0]"),
            ("modf", &[float(f64::NEG_INFINITY)], "[-0.0, null]"),
            ("pow", &[int(9), int(3)], "729"),
            ("pow", &[int(10), int(20)], "7766279631452241920"),
            ("pow", &[float(2.0), int(-1)], "0.5"),
            ("pow", &[int(2), float(0.5)], "1.4142135623730951"),
            ("sqrt", &[int(9)], "3.0"),
        ];
        for (name, args, want) in cases {
            let got = call("math", name, args, &[]).unwrap();
            assert_eq!(json(&got), *want, "{name}({args:?})");
        }
        let got = call("math", "pow", &[], &[("x", int(2)), ("n", int(3))]).unwrap();
        assert_eq!(json(&got), "8");
        let got = call("math", "log", &[float(8.0)], &[("e", float(2.0))]).unwrap();
        assert_eq!(json(&got), "2.0794415416798357");
    }

    #[test]
    fn errors_are_kcls() {
        let cases: &[(&str, &[Value], &str)] = &[
            ("factorial", &[int(21)], "factorial() result overflow"),
            (
                "factorial",
                &[int(-1)],
                "factorial() only accepts integral values",
            ),
            (
                "factorial",
                &[float(1.5)],
                "factorial() only accepts integral values",
            ),
            (
                "factorial",
                &[],
                "factorial() takes exactly one argument (0 given)",
            ),
            (
                "ceil",
                &[Value::str("1")],
                "ceil() takes exactly one argument (0 given)",
            ),
            (
                "gcd",
                &[int(1)],
                "gcd() takes exactly two arguments (1 given)",
            ),
            (
                "pow",
                &[int(1)],
                "pow() takes exactly one argument (0 given)",
            ),
        ];
        for (name, args, want) in cases {
            let err = call("math", name, args, &[]).unwrap_err();
            assert_eq!(err.message, *want, "{name}({args:?})");
        }
    }
}
