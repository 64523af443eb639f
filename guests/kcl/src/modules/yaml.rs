//! `yaml`: encode, decode and validate YAML text and streams;
//! `dump_to_file` and `dump_all_to_file` write to the run's scratch files
//! (see the `file` module).

use super::{Args, error};
use crate::builtins::{BuiltinFn, Interp};
use crate::error::Result;
use crate::value::Value;
use crate::value::json::EncodeOptions;

pub(super) const MEMBERS: &[(&str, BuiltinFn)] = &[
    ("encode", encode),
    ("encode_all", encode_all),
    ("decode", decode),
    ("decode_all", decode_all),
    ("dump_to_file", dump_to_file),
    ("dump_all_to_file", dump_all_to_file),
    ("validate", validate),
];

/// `sort_keys`, `ignore_private`, `ignore_none` from argument `first` on.
fn options(args: &Args, first: usize) -> EncodeOptions {
    EncodeOptions {
        sort_keys: args.bool(first, "sort_keys").unwrap_or(false),
        ignore_private: args.bool(first + 1, "ignore_private").unwrap_or(false),
        ignore_none: args.bool(first + 2, "ignore_none").unwrap_or(false),
    }
}

/// `encode(data, sort_keys=False, ignore_private=False, ignore_none=False)`
fn encode(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let args = Args::new(args, kwargs);
    let Some(data) = args.get(0, "data") else {
        return Err(error(
            "encode_all() missing 1 required positional argument: 'data'",
        ));
    };
    Ok(Value::str(crate::value::yaml::encode(
        data,
        &options(&args, 1),
    )))
}

/// `encode_all(data: [any], …)`: each item a document.
fn encode_all(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let args = Args::new(args, kwargs);
    let Some(data) = args.get(0, "data") else {
        return Err(error(
            "encode() missing 1 required positional argument: 'data'",
        ));
    };
    let items = data.as_list().ok_or_else(|| error("invalid list value"))?;
    Ok(Value::str(crate::value::yaml::encode_all(
        items,
        &options(&args, 1),
    )))
}

/// `decode(value: str) -> any`: one document.
fn decode(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(text) = Args::new(args, kwargs).str(0, "value") else {
        return Err(error(
            "decode() missing 1 required positional argument: 'value'",
        ));
    };
    crate::value::yaml::decode(text).map_err(error)
}

/// `decode_all(value: str) -> [any]`: every document.
fn decode_all(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(text) = Args::new(args, kwargs).str(0, "value") else {
        return Err(error(
            "decode_all() missing 1 required positional argument: 'value'",
        ));
    };
    crate::value::yaml::decode_all(text)
        .map(Value::list)
        .map_err(error)
}

/// `validate(value: str) -> bool`: whether the text is a YAML stream.
fn validate(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(text) = Args::new(args, kwargs).str(0, "value") else {
        return Err(error(
            "validate() missing 1 required positional argument: 'value'",
        ));
    };
    Ok(Value::Bool(crate::value::yaml::decode_all(text).is_ok()))
}

/// `dump_to_file(data, filename, sort_keys=False, ignore_private=False,
/// ignore_none=False)`: into the run's scratch files.
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
    let text = crate::value::yaml::encode(data, &options(&a, 2));
    super::file::write_file(interp, filename, &text)
        .map_err(|e| error(format!("Unable to write file '{filename}': {e}")))?;
    Ok(Value::Undefined)
}

/// `dump_all_to_file(data: [any], filename, …)`: each item a document.
fn dump_all_to_file(
    interp: &mut dyn Interp,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Value> {
    let a = Args::new(args, kwargs);
    let (Some(data), Some(filename)) = (a.get(0, "data"), a.str(1, "filename")) else {
        return Err(error(
            "dump_all_to_file() missing 2 required positional arguments: 'data' and 'filename'",
        ));
    };
    let items = data.as_list().ok_or_else(|| error("invalid list value"))?;
    let text = crate::value::yaml::encode_all(items, &options(&a, 2));
    super::file::write_file(interp, filename, &text)
        .map_err(|e| error(format!("Unable to write file '{filename}': {e}")))?;
    Ok(Value::Undefined)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{call, json, s};
    use crate::value::{Dict, Value};

    // Expectations from KCL 0.12.3 (and the grammar suite's yaml cases).
    #[test]
    fn encode_and_encode_all_as_kcl() {
        let data = Value::dict(
            [
                ("key".to_string(), Value::list(vec![Value::Int(1)])),
                ("_p".to_string(), Value::None),
            ]
            .into_iter()
            .collect::<Dict>(),
        );
        let got = call("yaml", "encode", std::slice::from_ref(&data), &[]).unwrap();
        assert_eq!(got.as_str(), Some("key:\n- 1\n_p: null\n"));
        let got = call(
            "yaml",
            "encode",
            std::slice::from_ref(&data),
            &[("ignore_private", Value::Bool(true))],
        )
        .unwrap();
        assert_eq!(got.as_str(), Some("key:\n- 1\n"));
        let all = Value::list(vec![data, Value::Int(2)]);
        let got = call(
            "yaml",
            "encode_all",
            &[all],
            &[("ignore_none", Value::Bool(true))],
        )
        .unwrap();
        assert_eq!(got.as_str(), Some("key:\n- 1\n\n---\n2\n"));
        let err = call("yaml", "encode_all", &[Value::Int(1)], &[]).unwrap_err();
        assert_eq!(err.message, "invalid list value");
    }

    #[test]
    fn decode_decode_all_and_validate_as_kcl() {
        let got = call("yaml", "decode_all", &[s("1.1\n---\nnull\n---\ntrue")], &[]).unwrap();
        assert_eq!(json(&got), "[1.1, null, true]");
        let err = call("yaml", "decode", &[s("a: 1\n---\nb: 2")], &[]).unwrap_err();
        assert_eq!(
            err.message,
            "deserializing from YAML containing more than one document is not supported"
        );
        let cases = [
            ("a:1\n---\nb:2", true),
            ("[0, 1, 2]", true),
            ("a:\n1", false),
            ("a:\n-1", false),
            ("1a   : \n1", false),
            ("a:\n- 1\n-----\na:\n- 1", false),
            ("{\"key\" + 'value'}", false),
        ];
        for (text, want) in cases {
            let got = call("yaml", "validate", &[s(text)], &[]).unwrap();
            assert_eq!(got.is_truthy(), want, "{text:?}");
        }
    }
}
