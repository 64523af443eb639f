//! `base32`: RFC 4648 alphabet with padding, as KCL's (base32 0.4) codec.

use super::{Args, error};
use crate::builtins::{BuiltinFn, Interp};
use crate::error::Result;
use crate::value::Value;

pub(super) const MEMBERS: &[(&str, BuiltinFn)] = &[("encode", encode), ("decode", decode)];

const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// `encode(value: str) -> str`
fn encode(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(value) = Args::new(args, kwargs).str(0, "value") else {
        return Err(error(
            "encode() missing 1 required positional argument: 'value'",
        ));
    };
    let bytes = value.as_bytes();
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    for chunk in bytes.chunks(5) {
        let mut block = [0u8; 5];
        block[..chunk.len()].copy_from_slice(chunk);
        let n = block.iter().fold(0u64, |n, b| (n << 8) | u64::from(*b));
        let symbols = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < symbols {
                out.push(char::from(ALPHABET[((n >> (35 - 5 * i)) & 31) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    Ok(Value::str(out))
}

/// `decode(value: str) -> str`: `None` when the bytes are not UTF-8.
/// Text the codec refuses gets KCL's (misleading) missing-argument message.
fn decode(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let decoded = Args::new(args, kwargs)
        .str(0, "value")
        .and_then(decode_bytes);
    match decoded {
        Some(bytes) => Ok(String::from_utf8(bytes).map_or(Value::None, Value::str)),
        None => Err(error(
            "decode() missing 1 required positional argument: 'value'",
        )),
    }
}

/// Symbols are case-insensitive and `=` reads as zero; up to six trailing
/// `=` shorten the output.
fn decode_bytes(text: &str) -> Option<Vec<u8>> {
    if !text.is_ascii() {
        return None;
    }
    let data = text.as_bytes();
    let padding = data
        .iter()
        .rev()
        .take(6)
        .take_while(|b| **b == b'=')
        .count();
    let output_len = (data.len() - padding) * 5 / 8;
    let mut out = Vec::with_capacity(data.len() * 5 / 8 + 5);
    for chunk in data.chunks(8) {
        let mut n: u64 = 0;
        for i in 0..8 {
            let value = match chunk.get(i).map(u8::to_ascii_uppercase) {
                None | Some(b'=') => 0,
                Some(c) => ALPHABET.iter().position(|a| *a == c)? as u64,
            };
            n = (n << 5) | value;
        }
        out.extend_from_slice(&n.to_be_bytes()[3..]);
    }
    out.truncate(output_len);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{call, json, s};

    // Expectations from KCL 0.12.3.
    #[test]
    fn encodes_as_kcl() {
        let cases = [
            ("0.3.0", "GAXDGLRQ"),
            ("", ""),
            ("a", "ME======"),
            ("abcdef", "MFRGGZDFMY======"),
        ];
        for (input, want) in cases {
            let got = call("base32", "encode", &[s(input)], &[]).unwrap();
            assert_eq!(got.as_str(), Some(want), "{input:?}");
        }
    }

    #[test]
    fn decodes_as_kcl() {
        let cases = [
            ("GAXDGLRQ", r#""0.3.0""#),
            ("gaxdglrq", r#""0.3.0""#),
            ("GAXDGLR=", r#""0.3.""#),
            ("GA======", r#""0""#),
            ("G", r#""""#),
            ("GAXDGLRQ========", r#""0.3.0\u0000""#),
            ("GA=A====", r#""0\u0000""#),
            ("77777777", "null"),
        ];
        for (input, want) in cases {
            let got = call("base32", "decode", &[s(input)], &[]).unwrap();
            assert_eq!(json(&got), want, "{input:?}");
        }
        for input in ["1A======", "é"] {
            let err = call("base32", "decode", &[s(input)], &[]).unwrap_err();
            assert_eq!(
                err.message,
                "decode() missing 1 required positional argument: 'value'"
            );
        }
    }
}
