//! The methods of KCL strings (`"a-b".split("-")`), with KCL 0.12.3's
//! semantics where they differ from Python's: indices and lengths count
//! bytes, `split("")` splits around every character, `splitlines` breaks
//! only at `\n`, `\r` and `\r\n`, and `startswith`-like methods read their
//! range only from positional arguments.

use crate::error::Result;
use crate::value::Value;

use super::format::format_string;
use super::functions::iterate;
use super::{BuiltinFn, Interp, UNWRAP_NONE, fail};

type Kwargs = [(String, Value)];

/// The string method of that name.
pub(super) fn lookup(name: &str) -> Option<BuiltinFn> {
    Some(match name {
        "capitalize" => capitalize,
        "chars" => chars,
        "count" => count,
        "endswith" => endswith,
        "find" => find,
        "format" => format,
        "index" => index,
        "isalpha" => isalpha,
        "isalnum" => isalnum,
        "isdigit" => isdigit,
        "islower" => islower,
        "isspace" => isspace,
        "istitle" => istitle,
        "isupper" => isupper,
        "join" => join,
        "lower" => lower,
        "upper" => upper,
        "lstrip" => lstrip,
        "rstrip" => rstrip,
        "replace" => replace,
        "removeprefix" => removeprefix,
        "removesuffix" => removesuffix,
        "rfind" => rfind,
        "rindex" => rindex,
        "rsplit" => rsplit,
        "split" => split,
        "splitlines" => splitlines,
        "startswith" => startswith,
        "strip" => strip,
        "title" => title,
        _ => return None,
    })
}

/// The receiver and the arguments after it.
fn receiver<'a>(args: &'a [Value], method: &str) -> Result<(&'a str, &'a [Value])> {
    match args.split_first() {
        Some((Value::Str(s), rest)) => Ok((s, rest)),
        _ => Err(fail(format!("invalid self value in str_{method}"))),
    }
}

/// A positional argument, with `None` and `Undefined` taken as absent.
fn given(args: &[Value], index: usize) -> Option<&Value> {
    args.get(index).filter(|v| !v.is_none_or_undefined())
}

/// KCL's `as_int`: ints, floats truncated, unit numbers; else 0.
fn as_int(value: &Value) -> i64 {
    match value {
        Value::Int(i) => *i,
        Value::Float(f) => *f as i64,
        Value::Unit(u) => u.value as i64,
        _ => 0,
    }
}

/// KCL's `as_str`: a string, else the empty string.
fn as_str(value: &Value) -> &str {
    value.as_str().unwrap_or("")
}

/// `s[start:end]` as `count`, `find` and friends read their optional range:
/// Python's slice rules over bytes; `None` when the range is empty or
/// reversed (`Err` when it cuts a character, where KCL fails).
fn sub_range<'a>(s: &'a str, args: &[Value], first: usize) -> Result<Option<(&'a str, usize)>> {
    let len = s.len() as i64;
    let mut start = given(args, first).map_or(0, as_int);
    let mut end = given(args, first + 1).map_or(len, as_int);
    if end > len {
        end = len;
    } else if end < 0 {
        end = (end + len).max(0);
    }
    if start < 0 {
        start = (start + len).max(0);
    }
    if start > end {
        return Ok(None);
    }
    let (start, end) = (start as usize, end as usize);
    s.get(start..end)
        .map(|sub| Some((sub, start)))
        .ok_or_else(|| fail(UNWRAP_NONE))
}

/// The required first argument of `count`, `find`, `startswith`…, as a
/// string.
fn needle<'a>(rest: &'a [Value], method: &str) -> Result<&'a str> {
    match rest.first() {
        None => Err(fail(format!(
            "{method}() takes at least 1 argument (0 given)"
        ))),
        Some(Value::Str(s)) => Ok(s),
        Some(_) => Err(fail(format!("Invalid str object in str_{method}"))),
    }
}

fn capitalize(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    let (s, _) = receiver(args, "capitalize")?;
    let mut chars = s.chars();
    Ok(Value::str(match chars.next() {
        Some(first) => format!("{}{}", first.to_uppercase(), chars.as_str().to_lowercase()),
        None => String::new(),
    }))
}

fn chars(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    let (s, _) = receiver(args, "chars")?;
    Ok(Value::list(
        s.chars().map(|c| Value::str(c.to_string())).collect(),
    ))
}

fn count(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    let (s, rest) = receiver(args, "count")?;
    let sub = needle(rest, "count")?;
    let n = sub_range(s, rest, 1)?.map_or(0, |(range, _)| range.matches(sub).count());
    Ok(Value::Int(n as i64))
}

fn startswith(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    let (s, rest) = receiver(args, "startswith")?;
    let prefix = needle(rest, "startswith")?;
    Ok(Value::Bool(
        sub_range(s, rest, 1)?.is_some_and(|(range, _)| range.starts_with(prefix)),
    ))
}

fn endswith(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    let (s, rest) = receiver(args, "endswith")?;
    let suffix = needle(rest, "endswith")?;
    Ok(Value::Bool(
        sub_range(s, rest, 1)?.is_some_and(|(range, _)| range.ends_with(suffix)),
    ))
}

/// `find`, `rfind`, `index`, `rindex`: the byte offset of the first (last)
/// match in the range; -1 or KCL's error when there is none.
fn search(args: &[Value], method: &str, from_end: bool, required: bool) -> Result<Value> {
    let (s, rest) = receiver(args, method)?;
    let sub = needle(rest, method)?;
    let found = sub_range(s, rest, 1)?.and_then(|(range, offset)| {
        let at = if from_end {
            range.rfind(sub)
        } else {
            range.find(sub)
        };
        at.map(|i| i + offset)
    });
    match found {
        Some(i) => Ok(Value::Int(i as i64)),
        None if required => Err(fail("substring not found")),
        None => Ok(Value::Int(-1)),
    }
}

fn find(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    search(args, "find", false, false)
}

fn rfind(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    search(args, "rfind", true, false)
}

fn index(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    search(args, "index", false, true)
}

fn rindex(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    search(args, "rindex", true, true)
}

fn format(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let (s, rest) = receiver(args, "format")?;
    format_string(s, rest, kwargs).map(Value::str)
}

/// `is…` tests: false for the empty string.
fn test_chars(args: &[Value], method: &str, test: fn(&str) -> bool) -> Result<Value> {
    let (s, _) = receiver(args, method)?;
    Ok(Value::Bool(test(s)))
}

fn isalpha(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    test_chars(args, "isalpha", |s| {
        !s.is_empty() && s.chars().all(char::is_alphabetic)
    })
}

fn isalnum(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    test_chars(args, "isalnum", |s| {
        !s.is_empty() && s.chars().all(char::is_alphanumeric)
    })
}

/// ASCII digits and the superscript digits. KCL compares the low 16 bits
/// of each character, so characters beyond the first plane whose low bits
/// name a superscript digit count too.
fn isdigit(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    const SUPERSCRIPTS: [u32; 10] = [
        0x2070, 0x00B9, 0x00B2, 0x00B3, 0x2074, 0x2075, 0x2076, 0x2077, 0x2078, 0x2079,
    ];
    test_chars(args, "isdigit", |s| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_digit() || SUPERSCRIPTS.contains(&(u32::from(c) & 0xFFFF)))
    })
}

/// Some cased character and none of the opposite case.
fn has_only_case(s: &str, case: fn(char) -> bool, opposite: fn(char) -> bool) -> bool {
    let mut cased = false;
    for c in s.chars() {
        if opposite(c) {
            return false;
        }
        cased |= case(c);
    }
    cased
}

fn islower(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    test_chars(args, "islower", |s| {
        has_only_case(s, char::is_lowercase, char::is_uppercase)
    })
}

fn isupper(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    test_chars(args, "isupper", |s| {
        has_only_case(s, char::is_uppercase, char::is_lowercase)
    })
}

/// Python's whitespace: Unicode's, plus the separators U+001C to U+001F.
fn isspace(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    test_chars(args, "isspace", |s| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
    })
}

/// Unicode's titlecase letters (general category Lt).
fn is_titlecase(c: char) -> bool {
    matches!(
        c,
        '\u{01C5}'
            | '\u{01C8}'
            | '\u{01CB}'
            | '\u{01F2}'
            | '\u{1F88}'..='\u{1F8F}'
            | '\u{1F98}'..='\u{1F9F}'
            | '\u{1FA8}'..='\u{1FAF}'
            | '\u{1FBC}'
            | '\u{1FCC}'
            | '\u{1FFC}'
    )
}

fn istitle(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    test_chars(args, "istitle", |s| {
        let mut cased = false;
        let mut previous_cased = false;
        for c in s.chars() {
            if c.is_uppercase() || is_titlecase(c) {
                if previous_cased {
                    return false;
                }
                previous_cased = true;
                cased = true;
            } else if c.is_lowercase() {
                if !previous_cased {
                    return false;
                }
                previous_cased = true;
                cased = true;
            } else {
                previous_cased = false;
            }
        }
        cased
    })
}

/// A character's titlecase mapping: its uppercase, except for the
/// characters Unicode gives a distinct titlecase (digraphs such as `ǆ`,
/// `ß`, ligatures such as `ﬁ`, Greek letters with a subscript iota).
fn push_titlecase(out: &mut String, c: char) {
    let special = match c {
        '\u{01C4}'..='\u{01C6}' => "\u{01C5}",
        '\u{01C7}'..='\u{01C9}' => "\u{01C8}",
        '\u{01CA}'..='\u{01CC}' => "\u{01CB}",
        '\u{01F1}'..='\u{01F3}' => "\u{01F2}",
        'ß' => "Ss",
        'ﬀ' => "Ff",
        'ﬁ' => "Fi",
        'ﬂ' => "Fl",
        'ﬃ' => "Ffi",
        'ﬄ' => "Ffl",
        'ﬅ' | 'ﬆ' => "St",
        'և' => "Եւ",
        'ﬓ' => "Մն",
        'ﬔ' => "Մե",
        'ﬕ' => "Մի",
        'ﬖ' => "Վն",
        'ﬗ' => "Մխ",
        '\u{1FB3}' => "\u{1FBC}",
        '\u{1FC3}' => "\u{1FCC}",
        '\u{1FF3}' => "\u{1FFC}",
        '\u{1F80}'..='\u{1F87}' | '\u{1F90}'..='\u{1F97}' | '\u{1FA0}'..='\u{1FA7}' => {
            if let Some(t) = char::from_u32(u32::from(c) + 8) {
                out.push(t);
            }
            return;
        }
        _ => {
            out.extend(c.to_uppercase());
            return;
        }
    };
    out.push_str(special);
}

fn title(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    let (s, _) = receiver(args, "title")?;
    let mut out = String::with_capacity(s.len());
    let mut previous_cased = false;
    for c in s.chars() {
        if c.is_lowercase() {
            if previous_cased {
                out.push(c);
            } else {
                push_titlecase(&mut out, c);
            }
            previous_cased = true;
        } else if c.is_uppercase() || is_titlecase(c) {
            if previous_cased {
                out.extend(c.to_lowercase());
            } else {
                out.push(c);
            }
            previous_cased = true;
        } else {
            previous_cased = false;
            out.push(c);
        }
    }
    Ok(Value::str(out))
}

fn lower(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    let (s, _) = receiver(args, "lower")?;
    Ok(Value::str(s.to_lowercase()))
}

fn upper(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    let (s, _) = receiver(args, "upper")?;
    Ok(Value::str(s.to_uppercase()))
}

/// `sep.join(iterable)`: the items as `str()` prints them.
fn join(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    let (sep, rest) = receiver(args, "join")?;
    let items = iterate(rest.first().ok_or_else(|| fail(UNWRAP_NONE))?)?;
    Ok(Value::str(
        items
            .iter()
            .map(Value::to_kcl_string)
            .collect::<Vec<_>>()
            .join(sep),
    ))
}

/// `strip`, `lstrip`, `rstrip`: the given characters (a non-string strips
/// nothing), else Unicode whitespace.
fn strip_with(args: &[Value], method: &str, left: bool, right: bool) -> Result<Value> {
    let (s, rest) = receiver(args, method)?;
    let stripped = match given(rest, 0) {
        Some(chars) => {
            let chars = as_str(chars);
            let is_stripped = |c: char| chars.contains(c);
            match (left, right) {
                (true, true) => s.trim_matches(is_stripped),
                (true, false) => s.trim_start_matches(is_stripped),
                _ => s.trim_end_matches(is_stripped),
            }
        }
        None => match (left, right) {
            (true, true) => s.trim(),
            (true, false) => s.trim_start(),
            _ => s.trim_end(),
        },
    };
    Ok(Value::str(stripped))
}

fn strip(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    strip_with(args, "strip", true, true)
}

fn lstrip(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    strip_with(args, "lstrip", true, false)
}

fn rstrip(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    strip_with(args, "rstrip", false, true)
}

/// `replace(old, new, count=-1)`: a negative count replaces every match.
fn replace(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    let (s, rest) = receiver(args, "replace")?;
    let old = rest
        .first()
        .ok_or_else(|| fail("expect 1 argument, found 0"))?;
    let new = rest
        .get(1)
        .ok_or_else(|| fail("expect 2 arguments, found 1"))?;
    let (old, new) = (as_str(old), as_str(new));
    Ok(Value::str(match given(rest, 2).map(as_int) {
        Some(n) if n >= 0 => s.replacen(old, new, saturating_usize(n)),
        _ => s.replace(old, new),
    }))
}

fn saturating_usize(n: i64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

fn removeprefix(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    let (s, rest) = receiver(args, "removeprefix")?;
    let prefix = rest
        .first()
        .ok_or_else(|| fail("expect 1 argument, found 0"))?;
    Ok(Value::str(s.strip_prefix(as_str(prefix)).unwrap_or(s)))
}

fn removesuffix(_: &mut dyn Interp, args: &[Value], _: &Kwargs) -> Result<Value> {
    let (s, rest) = receiver(args, "removesuffix")?;
    let suffix = rest
        .first()
        .ok_or_else(|| fail("expect 1 argument, found 0"))?;
    Ok(Value::str(s.strip_suffix(as_str(suffix)).unwrap_or(s)))
}

/// `split`'s and `rsplit`'s `sep` and `maxsplit`: positional first, then
/// by keyword; `None` means absent.
fn split_args<'a>(rest: &'a [Value], kwargs: &'a Kwargs) -> (Option<&'a Value>, i64) {
    let pick = |index: usize, name: &str| {
        rest.get(index)
            .or_else(|| super::kwarg(kwargs, name))
            .filter(|v| !v.is_none_or_undefined())
    };
    let sep = pick(0, "sep");
    let maxsplit = pick(1, "maxsplit").map_or(-1, as_int);
    (sep, maxsplit)
}

/// KCL splits on ASCII whitespace and the vertical tab.
fn is_split_space(c: char) -> bool {
    c.is_ascii_whitespace() || c == '\u{0b}'
}

fn split(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let (s, rest) = receiver(args, "split")?;
    let (sep, maxsplit) = split_args(rest, kwargs);
    let parts: Vec<&str> = match sep {
        Some(sep) if maxsplit < 0 => s.split(as_str(sep)).collect(),
        Some(sep) => s
            .splitn(saturating_usize(maxsplit).saturating_add(1), as_str(sep))
            .collect(),
        None => {
            let mut parts = Vec::new();
            let mut start = 0;
            let mut left = maxsplit;
            for (offset, _) in s.match_indices(is_split_space) {
                if offset == start {
                    start += 1;
                    continue;
                }
                if left == 0 {
                    break;
                }
                parts.push(&s[start..offset]);
                start = offset + 1;
                left -= 1;
            }
            if start != s.len() {
                parts.push(&s[start..]);
            }
            parts
        }
    };
    Ok(Value::list(parts.into_iter().map(Value::str).collect()))
}

fn rsplit(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let (s, rest) = receiver(args, "rsplit")?;
    let (sep, maxsplit) = split_args(rest, kwargs);
    let mut parts: Vec<&str> = match sep {
        Some(sep) if maxsplit < 0 => s.rsplit(as_str(sep)).collect(),
        Some(sep) => s
            .rsplitn(saturating_usize(maxsplit).saturating_add(1), as_str(sep))
            .collect(),
        None => {
            let mut parts = Vec::new();
            let mut left = maxsplit;
            let mut haystack = s;
            while let Some(offset) = haystack.rfind(is_split_space) {
                if offset + 1 != haystack.len() {
                    if left == 0 {
                        break;
                    }
                    parts.push(&haystack[offset + 1..]);
                    left -= 1;
                }
                haystack = &haystack[..offset];
            }
            if !haystack.is_empty() {
                parts.push(haystack);
            }
            parts
        }
    };
    parts.reverse();
    Ok(Value::list(parts.into_iter().map(Value::str).collect()))
}

/// Lines split at `\n`, `\r` and `\r\n`, the breaks kept with `keepends`.
fn splitlines(_: &mut dyn Interp, args: &[Value], kwargs: &Kwargs) -> Result<Value> {
    let (s, rest) = receiver(args, "splitlines")?;
    let keepends = rest
        .first()
        .or_else(|| super::kwarg(kwargs, "keepends"))
        .is_some_and(Value::is_truthy);
    let bytes = s.as_bytes();
    let mut lines = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let break_len = match bytes[i] {
            b'\n' => 1,
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => 2,
            b'\r' => 1,
            _ => {
                i += 1;
                continue;
            }
        };
        let end = if keepends { i + break_len } else { i };
        lines.push(Value::str(&s[start..end]));
        i += break_len;
        start = i;
    }
    if start != s.len() {
        lines.push(Value::str(&s[start..]));
    }
    Ok(Value::list(lines))
}
