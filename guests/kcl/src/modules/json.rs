//! `json`: encode, decode and validate JSON text; `dump_to_file` writes
//! to the run's scratch files (see the `file` module).

use super::{Args, error};
use crate::builtins::{BuiltinFn, Interp};
use crate::error::Result;
use crate::value::Value;
use crate::value::json::EncodeOptions;

pub(super) const MEMBERS: &[(&str, BuiltinFn)] = &[
    ("encode", encode),
    ("decode", decode),
    ("dump_to_file", dump_to_file),
    ("validate", validate),
];

/// `encode(data, sort_keys=False, indent=None, ignore_private=False,
/// ignore_none=False) -> str`
fn encode(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let args = Args::new(args, kwargs);
    let Some(data) = args.get(0, "data") else {
        return Err(error(
            "encode() missing 1 required positional argument: 'value'",
        ));
    };
    let options = EncodeOptions {
        sort_keys: args.bool(1, "sort_keys").unwrap_or(false),
        ignore_private: args.bool(3, "ignore_private").unwrap_or(false),
        ignore_none: args.bool(4, "ignore_none").unwrap_or(false),
    };
    let indent = args.strict_int(2, "indent")?.unwrap_or(0);
    Ok(Value::str(crate::value::json::encode(
        data, &options, indent,
    )))
}

/// `decode(value: str) -> any`
fn decode(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(text) = Args::new(args, kwargs).str(0, "value") else {
        return Err(error(
            "decode() missing 1 required positional argument: 'value'",
        ));
    };
    crate::value::json::decode(text).map_err(error)
}

/// `validate(value: str) -> bool`
fn validate(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(text) = Args::new(args, kwargs).str(0, "value") else {
        return Err(error(
            "validate() missing 1 required positional argument: 'value'",
        ));
    };
    Ok(Value::Bool(crate::value::json::decode(text).is_ok()))
}

/// `dump_to_file(data, filename, sort_keys=False, indent=None,
/// ignore_private=False, ignore_none=False)`: into the run's scratch files.
fn dump_to_file(
    interp: &mut dyn Interp,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Value> {
    let a = Args::new(args, kwargs);
    let (Some(data), Some(filename)) = (a.get(0, "data"), a.str(1, "filename")) else {
        return Err(error(
            "dump_to_file() missing 2 required positional arguments: 'data' and 'filename'",
        ));
    };
    let options = EncodeOptions {
        sort_keys: a.bool(2, "sort_keys").unwrap_or(false),
        ignore_private: a.bool(4, "ignore_private").unwrap_or(false),
        ignore_none: a.bool(5, "ignore_none").unwrap_or(false),
    };
    let indent = a.strict_int(3, "indent")?.unwrap_or(0);
    let text = crate::value::json::encode(data, &options, indent);
    super::file::write_file(interp, filename, &text)
        .map_err(|e| error(format!("Unable to write file '{filename}': {e}")))?;
    Ok(Value::Undefined)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{call, json, s};
    use crate::value::{Dict, Value};

    // Expectations from KCL 0.12.3 (and the grammar suite's json cases).
    #[test]
    fn encode_takes_kcls_options() {
        let data = Value::dict(
            [
                ("b".to_string(), Value::Int(1)),
                ("_a".to_string(), Value::None),
            ]
            .into_iter()
            .collect::<Dict>(),
        );
        type Case<'a> = (&'a [Value], &'a [(&'a str, Value)], &'a str);
        let cases: &[Case] = &[
            (&[], &[], r#"{"b": 1, "_a": null}"#),
            (&[Value::Bool(true)], &[], r#"{"_a": null, "b": 1}"#),
            (
                &[],
                &[("indent", Value::Int(2))],
                "{\n  \"b\": 1,\n  \"_a\": null\n}",
            ),
            (&[], &[("ignore_private", Value::Bool(true))], r#"{"b": 1}"#),
            (&[], &[("ignore_none", Value::Bool(true))], r#"{"b": 1}"#),
        ];
        for (extra, kwargs, want) in cases {
            let mut args = vec![data.clone()];
            args.extend(extra.iter().cloned());
            let got = call("json", "encode", &args, kwargs).unwrap();
            assert_eq!(got.as_str(), Some(*want), "{extra:?} {kwargs:?}");
        }
        let err = call("json", "encode", &[data], &[("indent", Value::None)]).unwrap_err();
        assert_eq!(err.message, "invalid int value");
    }

    #[test]
    fn decode_and_validate_as_kcl() {
        let cases = [
            (r#"{"key": "value"}"#, Ok(r#"{"key": "value"}"#)),
            ("[1, 2, 3]", Ok("[1, 2, 3]")),
            ("1.1", Ok("1.1")),
            ("null", Ok("null")),
            ("True", Err("expected value at line 1 column 1")),
            ("[0, 1, 2,]", Err("trailing comma at line 1 column 10")),
        ];
        for (text, want) in cases {
            let got = call("json", "decode", &[s(text)], &[]);
            let valid = call("json", "validate", &[s(text)], &[]).unwrap();
            match want {
                Ok(w) => {
                    assert_eq!(json(&got.unwrap()), w, "{text}");
                    assert_eq!(json(&valid), "true");
                }
                Err(w) => {
                    assert_eq!(got.unwrap_err().message, w, "{text}");
                    assert_eq!(json(&valid), "false");
                }
            }
        }
    }
}
