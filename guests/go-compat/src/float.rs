//! Go's `strconv.FormatFloat` for the layouts `fmt` and `encoding/json` use.

/// Go's `strconv.FormatFloat(f, 'f', -1, 64)`: shortest digits, never an
/// exponent.
pub fn format_float_f(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    format!("{f}")
}

/// Decimal digits of |v| (no leading or trailing zeros; empty for zero) and
/// the decimal point position, either shortest (`sig` = None) or rounded to
/// `sig` significant digits.
fn decimal_digits(v: f64, sig: Option<usize>) -> (String, i64) {
    if v == 0.0 {
        return (String::new(), 0);
    }
    let s = match sig {
        None => format!("{:e}", v.abs()),
        Some(n) => format!("{:.*e}", n.saturating_sub(1), v.abs()),
    };
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let digits = digits.trim_end_matches('0').to_string();
    (digits, exp + 1)
}

/// Go's `%e` layout of a digit string: d.ddde±dd with `prec` decimals.
fn layout_e(neg: bool, digits: &str, dp: i64, prec: usize, e: char) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    let d = digits.as_bytes();
    out.push(d.first().map_or('0', |c| char::from(*c)));
    if prec > 0 {
        out.push('.');
        for i in 1..=prec {
            out.push(d.get(i).map_or('0', |c| char::from(*c)));
        }
    }
    out.push(e);
    let exp = if digits.is_empty() { 0 } else { dp - 1 };
    push_exponent(&mut out, exp);
    out
}

/// An exponent as Go writes it: a sign and at least two digits.
fn push_exponent(out: &mut String, exp: i64) {
    out.push(if exp < 0 { '-' } else { '+' });
    let a = exp.unsigned_abs();
    if a < 10 {
        out.push('0');
    }
    out.push_str(&a.to_string());
}

/// Go's `%f` layout of a digit string with `prec` decimals.
fn layout_f(neg: bool, digits: &str, dp: i64, prec: usize) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    let d = digits.as_bytes();
    if dp > 0 {
        for i in 0..dp as usize {
            out.push(d.get(i).map_or('0', |c| char::from(*c)));
        }
    } else {
        out.push('0');
    }
    if prec > 0 {
        out.push('.');
        for i in 0..prec as i64 {
            let j = dp + i;
            let c = if j < 0 {
                b'0'
            } else {
                d.get(j as usize).copied().unwrap_or(b'0')
            };
            out.push(char::from(c));
        }
    }
    out
}

/// Go's `strconv.FormatFloat(v, verb, prec, 64)` for the verbs fmt uses.
pub(crate) fn format_float(v: f64, verb: char, prec: Option<usize>) -> String {
    if v.is_nan() {
        return "NaN".to_string();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    let neg = v.is_sign_negative();
    match verb {
        'b' => format_float_b(v),
        'x' | 'X' => format_float_x(v, verb, prec),
        'e' | 'E' => {
            let (digits, dp) = decimal_digits(v, prec.map(|p| p + 1));
            let p = prec.unwrap_or(digits.len().saturating_sub(1));
            layout_e(neg, &digits, dp, p, verb)
        }
        'f' | 'F' => match prec {
            Some(p) => {
                let s = format!("{:.*}", p, v.abs());
                if neg { format!("-{s}") } else { s }
            }
            None => {
                let (digits, dp) = decimal_digits(v, None);
                let p = (digits.len() as i64 - dp).max(0) as usize;
                layout_f(neg, &digits, dp, p)
            }
        },
        _ => {
            // 'g' / 'G'
            let e = if verb == 'G' { 'E' } else { 'e' };
            let shortest = prec.is_none();
            let mut p = match prec {
                Some(0) => 1,
                Some(p) => p,
                None => 0,
            };
            let (digits, dp) = decimal_digits(v, if shortest { None } else { Some(p) });
            let nd = digits.len() as i64;
            if shortest {
                p = digits.len();
            }
            let mut eprec = p as i64;
            if eprec > nd && nd >= dp {
                eprec = nd;
            }
            if shortest {
                eprec = 6;
            }
            let exp = dp - 1;
            // Zero has exp -1, which never takes the exponent form.
            if exp < -4 || exp >= eprec {
                let p = p.min(digits.len());
                return layout_e(neg, &digits, dp, p.saturating_sub(1), e);
            }
            let p = if p as i64 > dp { nd } else { p as i64 };
            layout_f(neg, &digits, dp, (p - dp).max(0) as usize)
        }
    }
}

/// The sign, biased exponent and mantissa (with its implicit leading bit)
/// of a float, subnormals read with exponent 1 as IEEE 754 has it.
fn float_parts(v: f64) -> (bool, i64, u64) {
    let bits = v.to_bits();
    let neg = bits >> 63 != 0;
    let exp = ((bits >> 52) & 0x7FF) as i64;
    let mant = bits & ((1 << 52) - 1);
    if exp == 0 {
        (neg, 1, mant)
    } else {
        (neg, exp, mant | 1 << 52)
    }
}

/// Go's `%b` of a float: decimal mantissa, binary exponent.
fn format_float_b(v: f64) -> String {
    let (neg, mut exp, mant) = float_parts(v);
    exp += -1023 - 52;
    format!(
        "{}{}p{}{}",
        if neg { "-" } else { "" },
        mant,
        if exp >= 0 { "+" } else { "-" },
        exp.abs()
    )
}

/// Go's `%x` of a float: hexadecimal mantissa, binary exponent.
fn format_float_x(v: f64, verb: char, prec: Option<usize>) -> String {
    let (neg, mut exp, mut mant) = float_parts(v);
    exp -= 1023;
    if mant == 0 {
        exp = 0;
    }
    mant <<= 60 - 52;
    while mant != 0 && mant & (1 << 60) == 0 {
        mant <<= 1;
        exp -= 1;
    }
    if let Some(p) = prec.filter(|p| *p < 15) {
        let shift = (p * 4) as u32;
        let extra = (mant << shift) & ((1 << 60) - 1);
        mant >>= 60 - shift;
        if extra | (mant & 1) > 1 << 59 {
            mant += 1;
        }
        mant <<= 60 - shift;
        if mant & (1 << 61) != 0 {
            mant >>= 1;
            exp += 1;
        }
    }
    let hex: &[u8] = if verb == 'X' {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    out.push('0');
    out.push(verb);
    out.push(char::from(b'0' + ((mant >> 60) & 1) as u8));
    mant <<= 4;
    match prec {
        None if mant != 0 => {
            out.push('.');
            while mant != 0 {
                out.push(char::from(hex[((mant >> 60) & 15) as usize]));
                mant <<= 4;
            }
        }
        Some(p) if p > 0 => {
            out.push('.');
            for _ in 0..p {
                out.push(char::from(hex[((mant >> 60) & 15) as usize]));
                mant <<= 4;
            }
        }
        _ => {}
    }
    out.push(if verb == 'X' { 'P' } else { 'p' });
    push_exponent(&mut out, exp);
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn format_float_f_never_uses_an_exponent() {
        let cases = [
            (1e6, "1000000"),
            (1e21, "1000000000000000000000"),
            (2.5, "2.5"),
            (-0.125, "-0.125"),
            (1e-7, "0.0000001"),
            (0.1 + 0.2, "0.30000000000000004"),
        ];
        for (f, want) in cases {
            assert_eq!(format_float_f(f), want, "{f}");
        }
    }
}
