//! `runtime.catch(func)`: runs a function and returns the message of the
//! error it raised, or `Undefined` when it raised none.

use super::{Args, error};
use crate::builtins::{BuiltinFn, Interp};
use crate::error::{ErrorKind, Result};
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
        Err(e) => Ok(Value::str(e.message)),
    }
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
}
