//! `runtime.catch(func)`: runs a function and returns the message of the
//! error it raised, or `Undefined` when it raised none.

use super::{Args, error};
use crate::builtins::{BuiltinFn, Interp};
use crate::error::{ErrorKind, KclError, Result};
use crate::value::Value;

pub(super) const MEMBERS: &[(&str, BuiltinFn)] = &[("catch", catch)];

/// `catch(func: () -> any) -> str`. A stop imposed by the host (deadline,
/// memory) is not the program's error and is not caught.
fn catch(interp: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let Some(func) = Args::new(args, kwargs).get(0, "func") else {
        return Err(error("catch() takes exactly one argument (0 given)"));
    };
    if !matches!(func, Value::Function(_)) {
        return Ok(Value::Undefined);
    }
    match interp.call(func, Vec::new(), Vec::new()) {
        Ok(_) => Ok(Value::Undefined),
        Err(e) if e.kind == ErrorKind::Interrupted => Err(e),
        Err(e) => Ok(Value::str(raised_message(e))),
    }
}

/// The message KCL's runtime raised, before its diagnostic dressed it: a
/// failed check raises its own message (empty without one), which the
/// diagnostic shows on the check's line.
fn raised_message(e: KclError) -> String {
    if e.kind == ErrorKind::SchemaCheckFailure
        && let Some(check) = e.labels.get(1)
        && let Some(message) = check.message.strip_prefix("Check failed on the condition")
    {
        return message.strip_prefix(": ").unwrap_or(message).to_owned();
    }
    e.message
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{call, json};
    use crate::value::Value;

    #[test]
    fn catches_the_message_of_a_failing_call() {
        let failing = crate::modules::member("json", "decode").unwrap();
        // `json.decode()` without its argument fails with KCL's message.
        let got = call("runtime", "catch", &[failing], &[]).unwrap();
        assert_eq!(
            got.as_str(),
            Some("decode() missing 1 required positional argument: 'value'")
        );
        let fine = crate::modules::member("crypto", "uuid").unwrap();
        assert_eq!(
            json(&call("runtime", "catch", &[fine], &[]).unwrap()),
            "null"
        );
        assert!(matches!(
            call("runtime", "catch", &[Value::Int(1)], &[]).unwrap(),
            Value::Undefined
        ));
    }

    #[test]
    fn a_failed_check_gives_its_own_message() {
        use crate::error::{ErrorKind, KclError};
        use crate::source::Span;
        let failed = |label: &str| {
            KclError::at(
                ErrorKind::SchemaCheckFailure,
                Span::default(),
                "Instance check failed",
            )
            .with_label(Span::default(), label)
        };
        let cases = [
            (
                "Check failed on the condition: age must be in the range (0, 10)",
                "age must be in the range (0, 10)",
            ),
            ("Check failed on the condition", ""),
        ];
        for (label, want) in cases {
            assert_eq!(super::raised_message(failed(label)), want);
        }
    }
}
