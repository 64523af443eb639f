//! `regex`: KCL's regular expressions, with look-around and back
//! references (fancy-regex, as KCL). `match` is not anchored: it is true
//! when the pattern matches anywhere, as in KCL.

use fancy_regex::Regex;

use super::{Args, error};
use crate::builtins::{BuiltinFn, Interp};
use crate::error::{KclError, Result};
use crate::value::Value;

pub(super) const MEMBERS: &[(&str, BuiltinFn)] = &[
    ("replace", replace),
    ("match", is_match),
    ("compile", compile),
    ("findall", findall),
    ("search", search),
    ("split", split),
];

/// The pattern compiled, or KCL's message for a bad one: the `Debug` form
/// of KCL's fancy-regex (0.7) error, behind Rust's `unwrap` text.
fn compiled(pattern: &str) -> Result<Regex> {
    Regex::new(pattern).map_err(|e| {
        error(format!(
            "called `Result::unwrap()` on an `Err` value: {}",
            kcl_error_name(&e)
        ))
    })
}

/// fancy-regex 0.7 named its errors differently, and printed the inner
/// regex crate's syntax errors in a frame of tildes.
fn kcl_error_name(e: &fancy_regex::Error) -> String {
    use fancy_regex::{CompileError, Error, ParseError};
    match e {
        Error::ParseError(_, ParseError::GeneralParseError(_)) => "ParseError".into(),
        Error::ParseError(_, ParseError::ChangingUnicodeModeUnsupported) => {
            "NonUnicodeUnsupported".into()
        }
        Error::ParseError(_, kind) => format!("{kind:?}"),
        Error::CompileError(kind) => match kind.as_ref() {
            CompileError::InvalidBackref(_) => "InvalidBackref".into(),
            CompileError::InnerError(inner) => {
                if let Some(syntax) = inner.syntax_error() {
                    let frame = "~".repeat(79);
                    format!("InnerError(Syntax(\n{frame}\n{syntax}\n{frame}\n))")
                } else if let Some(limit) = inner.size_limit() {
                    format!("InnerError(CompiledTooBig({limit}))")
                } else {
                    format!("InnerError({inner:?})")
                }
            }
            other => format!("{other:?}"),
        },
        other => format!("{other:?}"),
    }
}

fn string_and_pattern<'a>(name: &str, args: &Args<'a>) -> Result<(&'a str, &'a str)> {
    let Some(string) = args.str(0, "string") else {
        return Err(error(format!(
            "{name}() missing 2 required positional arguments: 'string' and 'pattern'"
        )));
    };
    let Some(pattern) = args.str(1, "pattern") else {
        return Err(if name == "match" {
            error("match() missing 2 required positional arguments: 'string' and 'pattern'")
        } else {
            error(format!(
                "{name}() missing the required positional argument: 'pattern'"
            ))
        });
    };
    Ok((string, pattern))
}

/// `match(string: str, pattern: str) -> bool`
fn is_match(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let (string, pattern) = string_and_pattern("match", &Args::new(args, kwargs))?;
    Ok(Value::Bool(
        compiled(pattern)?.is_match(string).unwrap_or(false),
    ))
}

/// `search(string: str, pattern: str) -> bool`
fn search(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let (string, pattern) = string_and_pattern("search", &Args::new(args, kwargs))?;
    Ok(Value::Bool(matches!(
        compiled(pattern)?.find(string),
        Ok(Some(_))
    )))
}

/// `compile(pattern: str) -> bool`: whether the pattern is valid.
fn compile(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(pattern) = Args::new(args, kwargs).str(0, "pattern") else {
        return Err(error(
            "compile() missing the required positional argument: 'pattern'",
        ));
    };
    Ok(Value::Bool(Regex::new(pattern).is_ok()))
}

/// `replace(string: str, pattern: str, replace: str, count: int = 0)`:
/// `count` 0 replaces every match; `$1` and `${name}` expand groups.
fn replace(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let args = Args::new(args, kwargs);
    let Some(string) = args.str(0, "string") else {
        return Err(error(
            "replace() missing 3 required positional arguments: 'string', 'pattern', and 'replace",
        ));
    };
    let Some(pattern) = args.str(1, "pattern") else {
        return Err(error(
            "replace() missing the required positional argument: 'pattern'",
        ));
    };
    let Some(replacement) = args.str(2, "replace") else {
        return Err(error(
            "replace() missing the required positional argument: 'replace'",
        ));
    };
    let count = args.strict_int(3, "count")?.unwrap_or(0);
    // A negative count is a huge one, as KCL's cast makes it.
    let limit = usize::try_from(count).unwrap_or(usize::MAX);
    let re = compiled(pattern)?;
    Ok(Value::str(re.replacen(string, limit, replacement)))
}

/// `findall(string: str, pattern: str) -> [str]`: with fewer than two
/// groups, each whole match; with more, each match's groups as a list.
fn findall(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let (string, pattern) = string_and_pattern("findall", &Args::new(args, kwargs))?;
    let re = compiled(pattern)?;
    let mut found = Vec::new();
    for captures in re.captures_iter(string).flatten() {
        if captures.len() < 3 {
            let whole = captures.get(0).map_or("", |m| m.as_str());
            found.push(Value::str(whole));
        } else {
            let groups = (1..captures.len())
                .map(|i| {
                    captures
                        .get(i)
                        .map(|m| Value::str(m.as_str()))
                        .ok_or_else(unset_group)
                })
                .collect::<Result<Vec<_>>>()?;
            found.push(Value::list(groups));
        }
    }
    Ok(Value::list(found))
}

/// A group that took no part in a match: KCL's `unwrap` of it fails.
fn unset_group() -> KclError {
    error("called `Option::unwrap()` on a `None` value")
}

/// `split(string: str, pattern: str, maxsplit: int = 0) -> [str]`. As
/// KCL's: once `maxsplit` pieces are cut the rest of the string is
/// dropped.
fn split(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let args = Args::new(args, kwargs);
    let (string, pattern) = string_and_pattern("split", &args)?;
    let maxsplit = args.strict_int(2, "maxsplit")?.unwrap_or(0);
    let re = compiled(pattern)?;
    let mut fields = Vec::new();
    let mut pos = 0;
    loop {
        let found = re
            .captures_from_pos(string, pos)
            .ok()
            .flatten()
            .and_then(|c| c.get(0).map(|m| (m.start(), m.end())));
        let Some((start, end)) = found else {
            fields.push(Value::str(string.get(pos..).unwrap_or("")));
            break;
        };
        fields.push(Value::str(string.get(pos..start).unwrap_or("")));
        if maxsplit > 0 && fields.len() as i64 >= maxsplit {
            break;
        }
        if end == pos {
            // KCL's loop never ends here; stop with an error instead.
            return Err(error(format!(
                "split() pattern '{pattern}' matches the empty string at {pos}: splitting would never end"
            )));
        }
        pos = end;
    }
    Ok(Value::list(fields))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{call, json, s};
    use crate::value::Value;

    // Expectations from KCL 0.12.3 (its oracle and the grammar suite).
    #[test]
    fn functions_behave_as_kcls() {
        let ip = r"^(1\d{2}|2[0-4]\d|25[0-5]|[1-9]\d|[1-9])\.(1\d{2}|2[0-4]\d|25[0-5]|[1-9]\d|\d)\.(1\d{2}|2[0-4]\d|25[0-5]|[1-9]\d|\d)\.(1\d{2}|2[0-4]\d|25[0-5]|[1-9]\d|\d)$";
        let dns = "^(?!-)[a-z0-9-]{1,63}(?<!-)$";
        let cases: &[(&str, &[Value], &str)] = &[
            ("match", &[s("abc"), s("b")], "true"),
            ("match", &[s("192.168.0.1"), s(ip)], "true"),
            ("match", &[s("192.168.0,1"), s(ip)], "false"),
            ("match", &[s("x-7"), s(dns)], "true"),
            ("match", &[s("x-"), s(dns)], "false"),
            ("search", &[s("aaaa"), s("a")], "true"),
            ("compile", &[s("$^")], "true"),
            ("compile", &[s("(")], "false"),
            ("findall", &[s("aaaa"), s("a")], r#"["a", "a", "a", "a"]"#),
            ("findall", &[s("ab12"), s("([a-z]+)")], r#"["ab"]"#),
            (
                "findall",
                &[s("ab12cd34"), s(r"([a-z]+)(\d+)")],
                r#"[["ab", "12"], ["cd", "34"]]"#,
            ),
            ("findall", &[s("abc"), s("")], r#"["", "", "", ""]"#),
            (
                "findall",
                &[s("4Gi"), s(r"^(\d{0,63})(E|P|T|G|M|K|Ei|Pi|Ti|Gi|Mi|Ki)$")],
                r#"[["4", "Gi"]]"#,
            ),
            ("replace", &[s("a,b,c"), s(","), s("|")], r#""a|b|c""#),
            (
                "replace",
                &[s("aaa"), s("a"), s("b"), Value::Int(2)],
                r#""bba""#,
            ),
            (
                "replace",
                &[s("john smith"), s(r"(\w+) (\w+)"), s("$2 $1")],
                r#""smith john""#,
            ),
            ("split", &[s("a,b,c"), s(",")], r#"["a", "b", "c"]"#),
            ("split", &[s("a,b,c"), s(","), Value::Int(1)], r#"["a"]"#),
            ("split", &[s("a1b22c"), s(r"\d")], r#"["a", "b", "", "c"]"#),
        ];
        for (name, args, want) in cases {
            let got = call("regex", name, args, &[]).unwrap();
            assert_eq!(json(&got), *want, "{name}({args:?})");
        }
    }

    #[test]
    fn errors_are_kcls() {
        let cases: &[(&str, &[Value], &str)] = &[
            (
                "match",
                &[s("abc"), s("(")],
                "called `Result::unwrap()` on an `Err` value: UnclosedOpenParen",
            ),
            (
                "match",
                &[s("a"), s("a)")],
                "called `Result::unwrap()` on an `Err` value: ParseError",
            ),
            (
                "match",
                &[s("a"), s("[z-a]")],
                "called `Result::unwrap()` on an `Err` value: InnerError(Syntax(\n~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\nregex parse error:\n    [z-a]\n     ^^^\nerror: invalid character class range, the start must be <= the end\n~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n))",
            ),
            (
                "match",
                &[s("a"), s(r"\1")],
                "called `Result::unwrap()` on an `Err` value: InvalidBackref",
            ),
            (
                "findall",
                &[s("ab"), s("(a)|(b)")],
                "called `Option::unwrap()` on a `None` value",
            ),
            (
                "split",
                &[s("abc"), s("x*")],
                "split() pattern 'x*' matches the empty string at 0: splitting would never end",
            ),
            (
                "match",
                &[s("abc")],
                "match() missing 2 required positional arguments: 'string' and 'pattern'",
            ),
        ];
        for (name, args, want) in cases {
            let err = call("regex", name, args, &[]).unwrap_err();
            assert_eq!(err.message, *want, "{name}({args:?})");
        }
    }
}
