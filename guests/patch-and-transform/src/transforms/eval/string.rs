//! The `string` transform: formatting, conversions, trimming, regexp
//! extraction, joining and replacing, as Go's `fmt` and `strings` do them.

use base64::Engine as _;
use serde_json::Value;
use sha1::Digest as _;

use plait_go_compat::json::{go_json, go_lossy};
use plait_go_compat::printf::{format_v, sprintf};
use plait_go_compat::strconv::quote;

use crate::transforms::input::{StringTransform, StringTransformJoin, StringTransformRegexp};
use plait_go_compat::regexp::compile_regexp;

pub(super) fn resolve_string(s: &StringTransform, input: Value) -> Result<String, String> {
    let kind = s.kind();
    let not_set = |what: &str| format!("string transform of type {kind} {what} is not set");
    match kind {
        "Format" => {
            let f = s.fmt.as_ref().ok_or_else(|| not_set("fmt"))?;
            Ok(sprintf(f, std::slice::from_ref(&input)))
        }
        "Convert" => {
            let c = s.convert.as_ref().ok_or_else(|| not_set("convert"))?;
            string_convert(c, &input)
        }
        "TrimPrefix" | "TrimSuffix" => {
            let trim = s.trim.as_ref().ok_or_else(|| not_set("trim"))?;
            let v = format_v(&input);
            let trimmed = if kind == "TrimPrefix" {
                v.strip_prefix(trim.as_str())
            } else {
                v.strip_suffix(trim.as_str())
            };
            Ok(trimmed.map_or_else(|| v.clone(), str::to_string))
        }
        "Regexp" => {
            let r = s.regexp.as_ref().ok_or_else(|| not_set("regexp"))?;
            string_regexp(r, &input)
        }
        "Join" => {
            let j = s.join.as_ref().ok_or_else(|| not_set("join"))?;
            string_join(j, &input)
        }
        "Replace" => {
            let r = s.replace.as_ref().ok_or_else(|| not_set("replace"))?;
            Ok(format_v(&input).replace(&r.search, &r.replace))
        }
        other => Err(format!(
            "type {other} is not supported for string transform type"
        )),
    }
}

/// The bytes upstream hashes: a string's own bytes, anything else's JSON.
fn hash_input(input: &Value) -> Vec<u8> {
    match input {
        Value::String(s) => s.as_bytes().to_vec(),
        other => go_json(other).into_bytes(),
    }
}

fn string_convert(conversion: &str, input: &Value) -> Result<String, String> {
    let s = format_v(input);
    match conversion {
        "ToUpper" => Ok(map_chars(&s, |c| c.to_uppercase())),
        "ToLower" => Ok(map_chars(&s, |c| c.to_lowercase())),
        "ToJson" => Ok(go_json(input)),
        "ToBase64" => Ok(base64::engine::general_purpose::STANDARD.encode(s.as_bytes())),
        "FromBase64" => go_base64_decode(s.as_bytes())
            .map(|bytes| go_lossy(&bytes))
            .map_err(|pos| {
                format!("string is not valid base64: illegal base64 data at input byte {pos}")
            }),
        "ToSha1" => Ok(hex::encode(sha1::Sha1::digest(hash_input(input)))),
        "ToSha256" => Ok(hex::encode(sha2::Sha256::digest(hash_input(input)))),
        "ToSha512" => Ok(hex::encode(sha2::Sha512::digest(hash_input(input)))),
        "ToAdler32" => Ok(adler32(&hash_input(input)).to_string()),
        other => Err(format!("type {other} is not supported for string convert")),
    }
}

/// Go's `strings.ToUpper`/`ToLower` map each rune to one rune; where
/// Unicode's full mapping has several (`ß` to `SS`), Go keeps the rune.
fn map_chars<I: Iterator<Item = char>>(s: &str, f: impl Fn(char) -> I) -> String {
    s.chars()
        .map(|c| {
            let mut mapped = f(c);
            match (mapped.next(), mapped.next()) {
                (Some(m), None) => m,
                _ => c,
            }
        })
        .collect()
}

fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &byte in chunk {
            a += u32::from(byte);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

/// Go's `base64.StdEncoding.DecodeString`: padding required, `\r` and `\n`
/// skipped, non-zero trailing bits tolerated. The error is the offset of the
/// first illegal byte.
fn go_base64_decode(src: &[u8]) -> Result<Vec<u8>, usize> {
    fn decode_char(c: u8) -> Option<u8> {
        match c {
            b'A'..=b'Z' => Some(c - b'A'),
            b'a'..=b'z' => Some(c - b'a' + 26),
            b'0'..=b'9' => Some(c - b'0' + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    }
    let is_newline = |c: u8| c == b'\n' || c == b'\r';
    let mut out = Vec::new();
    let mut si = 0;
    loop {
        let mut dbuf = [0u8; 4];
        let mut dlen = 4;
        let mut j = 0;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(out);
                }
                return Err(si - j);
            }
            let c = src[si];
            si += 1;
            if let Some(v) = decode_char(c) {
                dbuf[j] = v;
                j += 1;
                continue;
            }
            if is_newline(c) {
                continue;
            }
            if c != b'=' {
                return Err(si - 1);
            }
            // Padding: only valid as the third or fourth character.
            match j {
                0 | 1 => return Err(si - 1),
                2 => {
                    while si < src.len() && is_newline(src[si]) {
                        si += 1;
                    }
                    if si == src.len() {
                        return Err(src.len());
                    }
                    if src[si] != b'=' {
                        return Err(si - 1);
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < src.len() && is_newline(src[si]) {
                si += 1;
            }
            if si < src.len() {
                return Err(si);
            }
            dlen = j;
            break;
        }
        let val = (u32::from(dbuf[0]) << 18)
            | (u32::from(dbuf[1]) << 12)
            | (u32::from(dbuf[2]) << 6)
            | u32::from(dbuf[3]);
        let bytes = [(val >> 16) as u8, (val >> 8) as u8, val as u8];
        out.extend_from_slice(&bytes[..dlen - 1]);
        if dlen < 4 {
            return Ok(out);
        }
    }
}

fn string_regexp(r: &StringTransformRegexp, input: &Value) -> Result<String, String> {
    let re = compile_regexp(&r.match_expr).map_err(|e| format!("could not compile regexp: {e}"))?;
    let group = r.group.unwrap_or(0);
    let no_match = || {
        format!(
            "regexp {} had no matches for group {group}",
            quote(&r.match_expr)
        )
    };
    let haystack = format_v(input);
    let captures = re.captures(&haystack).ok_or_else(no_match)?;
    // A negative group would crash upstream; it simply matches nothing here.
    let index = usize::try_from(group).map_err(|_| no_match())?;
    if index >= captures.len() {
        return Err(no_match());
    }
    Ok(captures.get(index).map_or("", |m| m.as_str()).to_string())
}

/// Joins the `%v` of each element. Upstream appends the separator after
/// every element and then drops the last *byte*: `", "` yields `a, b,` and a
/// multi-byte separator leaves a broken UTF-8 tail (shown as U+FFFD, as Go's
/// JSON encoder writes it). Reproduced on purpose, per the reference digest.
fn string_join(j: &StringTransformJoin, input: &Value) -> Result<String, String> {
    let Value::Array(items) = input else {
        return Err("could not parse input array".to_string());
    };
    let mut bytes = Vec::new();
    for item in items {
        bytes.extend_from_slice(format_v(item).as_bytes());
        bytes.extend_from_slice(j.separator.as_bytes());
    }
    if !j.separator.is_empty() {
        bytes.pop();
    }
    Ok(go_lossy(&bytes))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::transforms::testing::check;

    #[test]
    fn string_transform() {
        let fmt = |f: &str| json!({"type": "string", "string": {"type": "Format", "fmt": f}});
        let conv = |c: &str| json!({"type": "string", "string": {"type": "Convert", "convert": c}});
        check(vec![
            ("format", fmt("db-%s"), json!("x"), Ok(json!("db-x"))),
            ("format %d on int", fmt("%d"), json!(3), Ok(json!("3"))),
            (
                "format %d on float",
                fmt("%d"),
                json!(3.0),
                Ok(json!("%!d(float64=3)")),
            ),
            (
                "format without verb",
                fmt("static"),
                json!("x"),
                Ok(json!("static%!(EXTRA string=x)")),
            ),
            (
                "format explicit index",
                fmt("%[1]s-%[1]s"),
                json!("a"),
                Ok(json!("a-a")),
            ),
            (
                "legacy fmt without types",
                json!({"string": {"fmt": "%s-x"}}),
                json!("a"),
                Ok(json!("a-x")),
            ),
            (
                "legacy fmt without string type",
                json!({"type": "string", "string": {"fmt": "%s!"}}),
                json!("a"),
                Ok(json!("a!")),
            ),
            ("upper", conv("ToUpper"), json!("abc"), Ok(json!("ABC"))),
            (
                "upper on a map",
                conv("ToUpper"),
                json!({"a": "b"}),
                Ok(json!("MAP[A:B]")),
            ),
            (
                "upper keeps ß like Go",
                conv("ToUpper"),
                json!("straße"),
                Ok(json!("STRAßE")),
            ),
            (
                "lower unicode",
                conv("ToLower"),
                json!("ÄBC"),
                Ok(json!("äbc")),
            ),
            ("base64", conv("ToBase64"), json!("hi"), Ok(json!("aGk="))),
            (
                "base64 of null",
                conv("ToBase64"),
                Value::Null,
                Ok(json!("PG5pbD4=")),
            ),
            (
                "from base64",
                conv("FromBase64"),
                json!("aGk="),
                Ok(json!("hi")),
            ),
            (
                "from base64 skips newlines",
                conv("FromBase64"),
                json!("aG\nk="),
                Ok(json!("hi")),
            ),
            (
                "from base64 unpadded",
                conv("FromBase64"),
                json!("aGk"),
                Err(
                    "string transform could not resolve: string is not valid base64: illegal base64 data at input byte 0",
                ),
            ),
            (
                "from base64 bad char",
                conv("FromBase64"),
                json!("a!k="),
                Err(
                    "string transform could not resolve: string is not valid base64: illegal base64 data at input byte 1",
                ),
            ),
            (
                "from base64 trailing garbage",
                conv("FromBase64"),
                json!("aGk=x"),
                Err(
                    "string transform could not resolve: string is not valid base64: illegal base64 data at input byte 4",
                ),
            ),
            (
                "from base64 missing second pad",
                conv("FromBase64"),
                json!("aA="),
                Err(
                    "string transform could not resolve: string is not valid base64: illegal base64 data at input byte 3",
                ),
            ),
            (
                "to json map",
                conv("ToJson"),
                json!({"b": "<x>", "a": 3.0}),
                Ok(json!("{\"a\":3,\"b\":\"\\u003cx\\u003e\"}")),
            ),
            (
                "to json large float",
                conv("ToJson"),
                json!(1e21),
                Ok(json!("1e+21")),
            ),
            (
                "to json small float",
                conv("ToJson"),
                json!(1e-7),
                Ok(json!("1e-7")),
            ),
            (
                "sha1 of string",
                conv("ToSha1"),
                json!("hi"),
                Ok(json!("c22b5f9178342609428d6f51b2c5af4c0bde6a42")),
            ),
            (
                "sha256 of string",
                conv("ToSha256"),
                json!("hi"),
                Ok(json!(
                    "8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4"
                )),
            ),
            (
                "sha256 of number hashes its JSON",
                conv("ToSha256"),
                json!(1234),
                Ok(json!(
                    "03ac674216f3e15c761ee1a5e255f067953623c8b388b4459e13f978d7c846f4"
                )),
            ),
            (
                "sha512 of empty",
                conv("ToSha512"),
                json!(""),
                Ok(json!(
                    "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"
                )),
            ),
            (
                "adler32 of empty",
                conv("ToAdler32"),
                json!(""),
                Ok(json!("1")),
            ),
            (
                "adler32 of Wikipedia",
                conv("ToAdler32"),
                json!("Wikipedia"),
                Ok(json!("300286872")),
            ),
            (
                "unknown conversion",
                conv("ToRot13"),
                json!("x"),
                Err(
                    "string transform could not resolve: type ToRot13 is not supported for string convert",
                ),
            ),
            (
                "trim prefix once",
                json!({"type": "string", "string": {"type": "TrimPrefix", "trim": "x-"}}),
                json!("x-x-a"),
                Ok(json!("x-a")),
            ),
            (
                "trim suffix once",
                json!({"type": "string", "string": {"type": "TrimSuffix", "trim": "-x"}}),
                json!("a-x-x"),
                Ok(json!("a-x")),
            ),
            (
                "trim prefix of number",
                json!({"type": "string", "string": {"type": "TrimPrefix", "trim": "1"}}),
                json!(123),
                Ok(json!("23")),
            ),
            (
                "trim without match",
                json!({"type": "string", "string": {"type": "TrimSuffix", "trim": "z"}}),
                json!("abc"),
                Ok(json!("abc")),
            ),
            (
                "regexp whole match",
                json!({"type": "string", "string": {"type": "Regexp", "regexp": {"match": "[0-9]+"}}}),
                json!("ab12cd34"),
                Ok(json!("12")),
            ),
            (
                "regexp group",
                json!({"type": "string", "string": {"type": "Regexp", "regexp": {"match": "arn:aws:iam::(\\d+):(.*)", "group": 1}}}),
                json!("arn:aws:iam::123:role/x"),
                Ok(json!("123")),
            ),
            (
                "regexp non-participating group",
                json!({"type": "string", "string": {"type": "Regexp", "regexp": {"match": "a(x)?", "group": 1}}}),
                json!("ab"),
                Ok(json!("")),
            ),
            (
                "regexp no match",
                json!({"type": "string", "string": {"type": "Regexp", "regexp": {"match": "z+"}}}),
                json!("abc"),
                Err("string transform could not resolve: regexp \"z+\" had no matches for group 0"),
            ),
            (
                "regexp group too large",
                json!({"type": "string", "string": {"type": "Regexp", "regexp": {"match": "a", "group": 1}}}),
                json!("abc"),
                Err("string transform could not resolve: regexp \"a\" had no matches for group 1"),
            ),
            (
                "regexp bad pattern",
                json!({"type": "string", "string": {"type": "Regexp", "regexp": {"match": "a)"}}}),
                json!("abc"),
                Err(
                    "string transform could not resolve: could not compile regexp: error parsing regexp: unexpected ): `a)`",
                ),
            ),
            (
                "join",
                json!({"type": "string", "string": {"type": "Join", "join": {"separator": ","}}}),
                json!(["a", "b", "c"]),
                Ok(json!("a,b,c")),
            ),
            (
                "join numbers with %v",
                json!({"type": "string", "string": {"type": "Join", "join": {"separator": ","}}}),
                json!([0, 1.5, true]),
                Ok(json!("0,1.5,true")),
            ),
            (
                "join multi-char separator keeps all but the last byte",
                json!({"type": "string", "string": {"type": "Join", "join": {"separator": ", "}}}),
                json!(["a", "b"]),
                Ok(json!("a, b,")),
            ),
            (
                "join multi-byte separator leaves broken bytes",
                json!({"type": "string", "string": {"type": "Join", "join": {"separator": "→"}}}),
                json!(["a", "b"]),
                Ok(json!("a→b\u{FFFD}\u{FFFD}")),
            ),
            (
                "join empty separator",
                json!({"type": "string", "string": {"type": "Join", "join": {"separator": ""}}}),
                json!(["a", "b"]),
                Ok(json!("ab")),
            ),
            (
                "join empty array",
                json!({"type": "string", "string": {"type": "Join", "join": {"separator": ","}}}),
                json!([]),
                Ok(json!("")),
            ),
            (
                "join non-array",
                json!({"type": "string", "string": {"type": "Join", "join": {"separator": ","}}}),
                json!("a"),
                Err("string transform could not resolve: could not parse input array"),
            ),
            (
                "replace all",
                json!({"type": "string", "string": {"type": "Replace", "replace": {"search": "-", "replace": "_"}}}),
                json!("a-b-c"),
                Ok(json!("a_b_c")),
            ),
            (
                "replace on number",
                json!({"type": "string", "string": {"type": "Replace", "replace": {"search": "0", "replace": ""}}}),
                json!(1000),
                Ok(json!("1")),
            ),
            (
                "format not set",
                json!({"type": "string", "string": {"type": "Format"}}),
                json!("x"),
                Err(
                    "string transform could not resolve: string transform of type Format fmt is not set",
                ),
            ),
            (
                "convert not set",
                json!({"type": "string", "string": {"type": "Convert"}}),
                json!("x"),
                Err(
                    "string transform could not resolve: string transform of type Convert convert is not set",
                ),
            ),
            (
                "trim not set",
                json!({"type": "string", "string": {"type": "TrimPrefix"}}),
                json!("x"),
                Err(
                    "string transform could not resolve: string transform of type TrimPrefix trim is not set",
                ),
            ),
            (
                "regexp not set",
                json!({"type": "string", "string": {"type": "Regexp"}}),
                json!("x"),
                Err(
                    "string transform could not resolve: string transform of type Regexp regexp is not set",
                ),
            ),
            (
                "join not set",
                json!({"type": "string", "string": {"type": "Join"}}),
                json!("x"),
                Err(
                    "string transform could not resolve: string transform of type Join join is not set",
                ),
            ),
            (
                "replace not set",
                json!({"type": "string", "string": {"type": "Replace"}}),
                json!("x"),
                Err(
                    "string transform could not resolve: string transform of type Replace replace is not set",
                ),
            ),
            (
                "unknown string type",
                json!({"type": "string", "string": {"type": "Reverse"}}),
                json!("x"),
                Err(
                    "string transform could not resolve: type Reverse is not supported for string transform type",
                ),
            ),
        ]);
    }
}
