//! `kcl run -r` (`--strict_range_check`, function-kcl's
//! `strictRangeCheck`): `+`, `-`, `*`, `**` and `<<` on numbers must stay
//! within 32 bits, as KCL checks them: an int operand or result outside
//! `i32` is `IntOverflow`, a float one beyond `f32`'s largest magnitude
//! `FloatOverflow`. Each message names the operation's full result, as
//! KCL's does (computed as KCL's release build computes it, wrapping).

use crate::ast::BinOp;
use crate::error::{ErrorKind, KclError, Result};
use crate::value::Value;

fn i32_overflow(v: i64) -> bool {
    i32::try_from(v).is_err()
}

fn f32_overflow(v: f64) -> bool {
    v > f64::from(f32::MAX) || v < f64::from(f32::MIN)
}

fn int_error(wide: i128) -> KclError {
    KclError::new(
        ErrorKind::IntOverflow,
        format!("{wide}: A 32 bit integer overflow"),
    )
}

fn float_error(v: f64) -> KclError {
    let mut text = format!("{v:e}");
    if !text.contains("e-") {
        text = text.replacen('e', "e+", 1);
    }
    KclError::new(
        ErrorKind::FloatOverflow,
        format!("{text}: A 32-bit floating point number overflow"),
    )
}

/// Whether `left op right` stays in 32 bits; the error KCL raises when
/// it does not. Other operators and operands are not checked.
pub(crate) fn check(left: &Value, op: BinOp, right: &Value) -> Result<()> {
    match (left, right) {
        (Value::Int(a), Value::Int(b)) => check_ints(*a, op, *b),
        (Value::Float(a), Value::Float(b)) => check_floats(*a, op, *b),
        (Value::Int(a), Value::Float(b)) => check_floats(*a as f64, op, *b),
        (Value::Float(a), Value::Int(b)) => check_floats(*a, op, *b as f64),
        _ => Ok(()),
    }
}

fn check_ints(a: i64, op: BinOp, b: i64) -> Result<()> {
    let operands = i32_overflow(a) || i32_overflow(b);
    // As KCL reads the operands: truncated to 32 bits, the exponent and
    // shift as unsigned.
    let (a32, b32) = (a as i32, b as i32);
    let (overflow, wide) = match op {
        BinOp::Add => (
            a32.checked_add(b32).is_none(),
            i128::from(a) + i128::from(b),
        ),
        BinOp::Sub => (
            a32.checked_sub(b32).is_none(),
            i128::from(a) - i128::from(b),
        ),
        BinOp::Mul => (
            a32.checked_mul(b32).is_none(),
            i128::from(a) * i128::from(b),
        ),
        BinOp::Pow => (
            a32.checked_pow(b as u32).is_none(),
            i128::from(a).wrapping_pow(b as u32),
        ),
        BinOp::LShift => (
            a32.checked_shl(b as u32).is_none(),
            i128::from(a).wrapping_shl(b as u32),
        ),
        _ => return Ok(()),
    };
    if operands || overflow {
        return Err(int_error(wide));
    }
    Ok(())
}

fn check_floats(a: f64, op: BinOp, b: f64) -> Result<()> {
    let operands = f32_overflow(a) || f32_overflow(b);
    let (result, exponent_overflow) = match op {
        BinOp::Add => (a + b, false),
        BinOp::Sub => (a - b, false),
        BinOp::Mul => (a * b, false),
        BinOp::Pow => (a.powf(b), i32_overflow(b as i64)),
        _ => return Ok(()),
    };
    if operands || exponent_overflow || f32_overflow(result) {
        return Err(float_error(result));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Messages as KCL 0.12.3 prints them under `-r` (the oracle test
    // `flag_strict_range_check_*` runs the same operations through kcl-lib).
    #[test]
    fn results_beyond_32_bits_are_overflows_with_kcls_message() {
        let cases = [
            (
                Value::Int(i64::from(i32::MAX)),
                BinOp::Add,
                Value::Int(1),
                Some("2147483648: A 32 bit integer overflow"),
            ),
            (
                Value::Int(i64::from(i32::MAX)),
                BinOp::Sub,
                Value::Int(-1),
                Some("2147483648: A 32 bit integer overflow"),
            ),
            (
                Value::Int(65536),
                BinOp::Mul,
                Value::Int(65536),
                Some("4294967296: A 32 bit integer overflow"),
            ),
            (
                Value::Int(2),
                BinOp::Pow,
                Value::Int(31),
                Some("2147483648: A 32 bit integer overflow"),
            ),
            (
                Value::Int(1),
                BinOp::LShift,
                Value::Int(40),
                Some("1099511627776: A 32 bit integer overflow"),
            ),
            (
                Value::Int(3_000_000_000),
                BinOp::Add,
                Value::Int(0),
                Some("3000000000: A 32 bit integer overflow"),
            ),
            (
                Value::Float(3e38),
                BinOp::Add,
                Value::Float(3e38),
                Some("6e+38: A 32-bit floating point number overflow"),
            ),
            (
                Value::Int(2),
                BinOp::Mul,
                Value::Float(2e38),
                Some("4e+38: A 32-bit floating point number overflow"),
            ),
            (
                Value::Int(i64::from(i32::MAX)),
                BinOp::Add,
                Value::Int(0),
                None,
            ),
            (Value::Int(1), BinOp::LShift, Value::Int(31), None),
            (Value::Int(i64::MAX), BinOp::Div, Value::Int(2), None),
            (Value::Float(1.5), BinOp::Mul, Value::Float(2.0), None),
        ];
        for (left, op, right, want) in cases {
            let got = check(&left, op, &right).err().map(|e| e.message);
            assert_eq!(got.as_deref(), want, "{left:?} {op:?} {right:?}");
        }
    }
}
