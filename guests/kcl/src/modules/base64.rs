//! `base64`: standard alphabet with padding; decoding reports what KCL's
//! decoder (base64 0.13) reports, and the decoded bytes must be UTF-8.

use super::{Args, error, unwrap_error};
use crate::builtins::{BuiltinFn, Interp};
use crate::error::Result;
use crate::value::Value;

pub(super) const MEMBERS: &[(&str, BuiltinFn)] = &[("encode", encode), ("decode", decode)];

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `encode(value: str, encoding: str = "utf-8") -> str` (KCL ignores
/// `encoding`).
fn encode(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(value) = Args::new(args, kwargs).str(0, "value") else {
        return Err(error(
            "encode() missing 1 required positional argument: 'value'",
        ));
    };
    Ok(Value::str(encode_bytes(value.as_bytes())))
}

pub(crate) fn encode_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk.first().copied().unwrap_or(0),
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `decode(value: str) -> str`
fn decode(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(value) = Args::new(args, kwargs).str(0, "value") else {
        return Err(error(
            "decode() missing 1 required positional argument: 'value'",
        ));
    };
    let bytes = decode_bytes(value.as_bytes()).map_err(unwrap_error)?;
    String::from_utf8(bytes)
        .map(Value::str)
        .map_err(|e| unwrap_error(e.utf8_error()))
}

/// base64 0.13's decoding errors, printed with their `Debug` form (so
/// their names are KCL's).
#[allow(clippy::enum_variant_names)]
#[derive(Debug, PartialEq)]
enum DecodeError {
    InvalidByte(usize, u8),
    InvalidLength,
    InvalidLastSymbol(usize, u8),
}

fn morsel(b: u8) -> Option<u8> {
    ALPHABET.iter().position(|&a| a == b).map(|p| p as u8)
}

/// Decodes as base64 0.13 does: padding optional, the input read in
/// 8-character blocks of which the last is checked for padding, and its
/// first complaint reported.
fn decode_bytes(input: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let remainder = input.len() % 8;
    if remainder == 1 || remainder == 5 {
        if let Some(&last) = input.last()
            && last != b'='
            && morsel(last).is_none()
        {
            return Err(DecodeError::InvalidByte(input.len() - 1, last));
        }
        return Err(DecodeError::InvalidLength);
    }
    let last_block = if remainder == 0 {
        8.min(input.len())
    } else {
        remainder
    };
    let leftover_start = input.len() - last_block;
    let mut bits: Vec<u8> = Vec::with_capacity(input.len());
    for (i, &b) in input.iter().enumerate().take(leftover_start) {
        bits.push(morsel(b).ok_or(DecodeError::InvalidByte(i, b))?);
    }
    let mut padding = 0;
    let mut first_padding = 0;
    let mut last_symbol = 0;
    let mut leftover: Vec<u8> = Vec::with_capacity(8);
    for (i, &b) in input.iter().enumerate().skip(leftover_start) {
        let in_block = i - leftover_start;
        if b == b'=' {
            if in_block % 4 < 2 {
                let at = if padding > 0 { first_padding } else { i };
                return Err(DecodeError::InvalidByte(at, b));
            }
            if padding == 0 {
                first_padding = i;
            }
            padding += 1;
            continue;
        }
        if padding > 0 {
            return Err(DecodeError::InvalidByte(first_padding, b'='));
        }
        last_symbol = b;
        leftover.push(morsel(b).ok_or(DecodeError::InvalidByte(i, b))?);
    }
    // The last symbol may not carry bits that no output byte holds.
    let used_bits = match leftover.len() {
        2 => 8,
        3 => 16,
        4 => 24,
        6 => 32,
        7 => 40,
        _ => 48,
    };
    let mut packed: u64 = 0;
    for (k, m) in leftover.iter().enumerate() {
        packed |= u64::from(*m) << (58 - 6 * k);
    }
    if !leftover.is_empty() && packed & (u64::MAX >> used_bits) != 0 {
        return Err(DecodeError::InvalidLastSymbol(
            leftover_start + leftover.len() - 1,
            last_symbol,
        ));
    }
    bits.extend_from_slice(&leftover);
    let mut out = Vec::with_capacity(bits.len() * 3 / 4);
    for group in bits.chunks(4) {
        let mut n: u32 = 0;
        for (k, m) in group.iter().enumerate() {
            n |= u32::from(*m) << (18 - 6 * k);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..group.len()]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{call, s};
    use crate::value::Value;

    // Expectations from KCL 0.12.3.
    #[test]
    fn encodes_and_decodes_as_kcl() {
        let cases: &[(&str, &str, &str)] = &[
            ("encode", "0.3.0", "MC4zLjA="),
            ("encode", "", ""),
            ("encode", "ab", "YWI="),
            ("encode", "abc", "YWJj"),
            ("decode", "MC4zLjA=", "0.3.0"),
            ("decode", "MC4zLjA", "0.3.0"),
            ("decode", "YQ", "a"),
            ("decode", "", ""),
            ("decode", "YWJjZGVmZ2hpams=", "abcdefghijk"),
        ];
        for (name, input, want) in cases {
            let got = call("base64", name, &[s(input)], &[]).unwrap();
            assert_eq!(got.as_str(), Some(*want), "{name}({input:?})");
        }
    }

    #[test]
    fn decode_errors_are_kcls() {
        let cases: &[(&str, &str)] = &[
            ("MC4zLjA==", "InvalidLength"),
            ("M", "InvalidLength"),
            ("MC4zLjA=x", "InvalidLength"),
            ("!!!!", "InvalidByte(0, 33)"),
            ("YR==", "InvalidLastSymbol(1, 82)"),
            ("Y Q==", "InvalidLength"),
            ("Y===", "InvalidByte(1, 61)"),
            ("wyg=", "Utf8Error { valid_up_to: 0, error_len: Some(1) }"),
        ];
        for (input, want) in cases {
            let err = call("base64", "decode", &[s(input)], &[]).unwrap_err();
            assert_eq!(
                err.message,
                format!("called `Result::unwrap()` on an `Err` value: {want}"),
                "{input:?}"
            );
        }
        let err = call("base64", "decode", &[], &[]).unwrap_err();
        assert_eq!(
            err.message,
            "decode() missing 1 required positional argument: 'value'"
        );
        assert_eq!(
            call("base64", "encode", &[], &[("value", Value::str("a"))])
                .unwrap()
                .as_str(),
            Some("YQ==")
        );
    }
}
