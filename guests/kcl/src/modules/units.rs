//! `units`: the SI and IEC multipliers as constants, and `to_<suffix>`
//! that prints a number in a unit (truncated toward zero).

use super::{Args, error};
use crate::builtins::{BuiltinFn, Interp};
use crate::error::{ErrorKind, KclError, Result};
use crate::value::Value;

pub(super) const MEMBERS: &[(&str, BuiltinFn)] = &[
    ("to_n", to_n),
    ("to_u", to_u),
    ("to_m", to_m),
    ("to_K", to_k),
    ("to_M", to_mega),
    ("to_G", to_g),
    ("to_T", to_t),
    ("to_P", to_p),
    ("to_Ki", to_ki),
    ("to_Mi", to_mi),
    ("to_Gi", to_gi),
    ("to_Ti", to_ti),
    ("to_Pi", to_pi),
];

/// `units.n` … `units.Pi`: the multiplier, an int from `k` up and a float
/// below; `units.NumberMultiplier` (the type's name) reads as `1.0`.
pub(super) fn constant(name: &str) -> Option<Value> {
    Some(match name {
        "n" => Value::Float(1e-9),
        "u" => Value::Float(1e-6),
        "m" => Value::Float(0.001),
        "k" | "K" => Value::Int(1_000),
        "M" => Value::Int(1_000_000),
        "G" => Value::Int(1_000_000_000),
        "T" => Value::Int(1_000_000_000_000),
        "P" => Value::Int(1_000_000_000_000_000),
        "Ki" => Value::Int(1 << 10),
        "Mi" => Value::Int(1 << 20),
        "Gi" => Value::Int(1 << 30),
        "Ti" => Value::Int(1 << 40),
        "Pi" => Value::Int(1 << 50),
        "NumberMultiplier" => Value::Float(1.0),
        _ => return None,
    })
}

/// The number in `suffix`'s unit, truncated, with the suffix.
fn to_unit(num: f64, divisor: f64, suffix: &str) -> Value {
    // A float-to-int `as` saturates (and makes NaN 0), as KCL's does.
    Value::str(format!("{}{suffix}", (num / divisor) as i64))
}

/// `to_n`, `to_u`, `to_m` read their argument as `float()` does.
fn small_unit(
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
    divisor: f64,
    suffix: &str,
) -> Result<Value> {
    let Some(num) = Args::new(args, kwargs).get(0, "num") else {
        return Err(error(format!(
            "{name}() missing 1 required positional argument: 'num'"
        )));
    };
    Ok(to_unit(to_float(num)?, divisor, suffix))
}

/// KCL's `float(x)` for the values a number may come as.
fn to_float(value: &Value) -> Result<f64> {
    let overflow = || {
        KclError::new(
            ErrorKind::FloatOverflow,
            "inf: A 64-bit floating point number overflow",
        )
    };
    let invalid = |shown: &str| {
        error(format!(
            "invalid literal for float() with base 10: '{shown}'"
        ))
    };
    match value {
        Value::Int(i) => Ok(*i as f64),
        Value::Float(f) if f.is_infinite() => Err(overflow()),
        Value::Float(f) => Ok(*f),
        Value::Unit(u) => Ok(u.value),
        Value::Bool(b) => Ok(if *b { 1.0 } else { 0.0 }),
        Value::Str(s) => match s.parse::<f64>() {
            Ok(f) if f.is_infinite() => Err(overflow()),
            Ok(f) => Ok(f),
            Err(_) => Err(invalid(s)),
        },
        Value::None => Err(invalid("None")),
        other => Err(invalid(&other.type_name())),
    }
}

/// `to_K` … `to_Pi` read an int or a float; anything else counts as 0.
fn large_unit(
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
    divisor: f64,
    suffix: &str,
) -> Result<Value> {
    let Some(num) = Args::new(args, kwargs).get(0, "num") else {
        return Err(error(format!(
            "{name}() missing 1 required positional argument: 'num'"
        )));
    };
    let num = match num {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        _ => 0.0,
    };
    Ok(to_unit(num, divisor, suffix))
}

fn to_n(_: &mut dyn Interp, a: &[Value], k: &[(String, Value)]) -> Result<Value> {
    small_unit("to_n", a, k, 1e-9, "n")
}
fn to_u(_: &mut dyn Interp, a: &[Value], k: &[(String, Value)]) -> Result<Value> {
    small_unit("to_u", a, k, 1e-6, "u")
}
fn to_m(_: &mut dyn Interp, a: &[Value], k: &[(String, Value)]) -> Result<Value> {
    small_unit("to_m", a, k, 0.001, "m")
}
fn to_k(_: &mut dyn Interp, a: &[Value], k: &[(String, Value)]) -> Result<Value> {
    large_unit("to_K", a, k, 1e3, "K")
}
fn to_mega(_: &mut dyn Interp, a: &[Value], k: &[(String, Value)]) -> Result<Value> {
    large_unit("to_M", a, k, 1e6, "M")
}
fn to_g(_: &mut dyn Interp, a: &[Value], k: &[(String, Value)]) -> Result<Value> {
    large_unit("to_G", a, k, 1e9, "G")
}
fn to_t(_: &mut dyn Interp, a: &[Value], k: &[(String, Value)]) -> Result<Value> {
    large_unit("to_T", a, k, 1e12, "T")
}
fn to_p(_: &mut dyn Interp, a: &[Value], k: &[(String, Value)]) -> Result<Value> {
    large_unit("to_P", a, k, 1e15, "P")
}
fn to_ki(_: &mut dyn Interp, a: &[Value], k: &[(String, Value)]) -> Result<Value> {
    large_unit("to_Ki", a, k, 1024.0, "Ki")
}
fn to_mi(_: &mut dyn Interp, a: &[Value], k: &[(String, Value)]) -> Result<Value> {
    large_unit("to_Mi", a, k, 1024.0 * 1024.0, "Mi")
}
fn to_gi(_: &mut dyn Interp, a: &[Value], k: &[(String, Value)]) -> Result<Value> {
    large_unit("to_Gi", a, k, 1024.0 * 1024.0 * 1024.0, "Gi")
}
fn to_ti(_: &mut dyn Interp, a: &[Value], k: &[(String, Value)]) -> Result<Value> {
    large_unit("to_Ti", a, k, 1024.0 * 1024.0 * 1024.0 * 1024.0, "Ti")
}
fn to_pi(_: &mut dyn Interp, a: &[Value], k: &[(String, Value)]) -> Result<Value> {
    large_unit(
        "to_Pi",
        a,
        k,
        1024.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "Pi",
    )
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{call, s};
    use crate::value::Value;

    // Expectations from KCL 0.12.3 (the grammar suite's units cases).
    #[test]
    fn prints_numbers_in_units_as_kcl() {
        let cases: &[(&str, Value, &str)] = &[
            ("to_n", Value::Float(1e-9), "1n"),
            ("to_u", Value::Float(1e-6), "1u"),
            ("to_m", Value::Float(1e-1), "100m"),
            ("to_m", s("0.5"), "500m"),
            ("to_K", Value::Int(1000), "1K"),
            ("to_K", Value::Int(1_000_000), "1000K"),
            ("to_P", Value::Int(10_000_000_000_000_000), "10P"),
            ("to_Ki", Value::Int(1024), "1Ki"),
            ("to_Gi", Value::Float(4294967296.0), "4Gi"),
            ("to_Pi", Value::Int(1 << 50), "1Pi"),
            ("to_Ki", s("2048"), "0Ki"),
            ("to_Ki", Value::Int(-1536), "-1Ki"),
        ];
        for (name, num, want) in cases {
            let got = call("units", name, std::slice::from_ref(num), &[]).unwrap();
            assert_eq!(got.as_str(), Some(*want), "{name}({num:?})");
        }
        let err = call("units", "to_m", &[s("x")], &[]).unwrap_err();
        assert_eq!(err.message, "invalid literal for float() with base 10: 'x'");
    }

    #[test]
    fn constants_are_kcls() {
        let n = crate::modules::member("units", "n").unwrap();
        assert!(matches!(n, Value::Float(f) if f == 1e-9));
        let pi = crate::modules::member("units", "Pi").unwrap();
        assert!(matches!(pi, Value::Int(1_125_899_906_842_624)));
    }
}
