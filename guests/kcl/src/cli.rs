//! What `kcl run`'s command line checks before a program runs, shared by
//! `plait kcl run` and the `kcl_run` example.

use crate::{ErrorKind, KclError};

/// `-D name=value` as KCL splits it: exactly one `=`, with a name and a value
/// that are not blank; the value is kept as written (the evaluator parses it).
pub fn top_level_argument(spec: &str) -> Result<(String, String), KclError> {
    let mut parts = spec.split('=');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(name), Some(value), None) if !name.trim().is_empty() && !value.trim().is_empty() => {
            Ok((name.to_string(), value.to_string()))
        }
        _ => Err(KclError::new(
            ErrorKind::EvaluationError,
            "Invalid value for top level arguments",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_level_argument_splits_name_and_value_as_written() {
        let cases = [
            ("key=value", ("key", "value")),
            ("key4=[1,2,3]", ("key4", "[1,2,3]")),
            (r#"id="000000123456""#, ("id", r#""000000123456""#)),
            (" key = value ", (" key ", " value ")),
        ];
        for (spec, (name, value)) in cases {
            assert_eq!(
                top_level_argument(spec),
                Ok((name.to_string(), value.to_string())),
                "{spec}"
            );
        }
    }

    #[test]
    fn top_level_argument_refuses_what_kcl_refuses() {
        for spec in ["key=value=", "=123", "key=", "key", " =value", "key= "] {
            let error = top_level_argument(spec).expect_err(spec);
            assert_eq!(error.kind, ErrorKind::EvaluationError, "{spec}");
            assert_eq!(error.message, "Invalid value for top level arguments");
        }
    }
}
