//! KCL's system modules (`import regex`, `import json`, …): each member a
//! builtin function or a constant, with KCL 0.12.3's results and messages.
//!
//! A member reads its arguments as KCL's runtime does: a keyword argument
//! of the parameter's name first, else the positional one; a string
//! parameter given something else reads as `""`, a bool parameter reads
//! the value's truth. Failures are `EvaluationError`s with KCL's message;
//! the evaluator adds the call's position.

use std::rc::Rc;

use crate::builtins::BuiltinFn;
use crate::error::{ErrorKind, KclError, Result};
use crate::value::{Function, FunctionKind, Value};

mod base32;
mod base64;
mod collection;
mod crypto;
mod datetime;
pub mod file;
mod json;
mod manifests;
mod math;
mod net;
mod regex;
mod runtime;
mod template;
mod units;
mod yaml;

/// The system modules and, for each, its function members.
const MODULES: &[(&str, &[(&str, BuiltinFn)])] = &[
    ("base32", base32::MEMBERS),
    ("base64", base64::MEMBERS),
    ("collection", collection::MEMBERS),
    ("crypto", crypto::MEMBERS),
    ("datetime", datetime::MEMBERS),
    ("file", file::MEMBERS),
    ("json", json::MEMBERS),
    ("manifests", manifests::MEMBERS),
    ("math", math::MEMBERS),
    ("net", net::MEMBERS),
    ("regex", regex::MEMBERS),
    ("runtime", runtime::MEMBERS),
    ("template", template::MEMBERS),
    ("units", units::MEMBERS),
    ("yaml", yaml::MEMBERS),
];

/// Whether `import name` names a system module.
pub fn is_system_module(name: &str) -> bool {
    MODULES.iter().any(|(module, _)| *module == name)
}

/// The member `member` of system module `module` (`regex.match`,
/// `units.Ki`).
pub fn member(module: &str, member: &str) -> Option<Value> {
    if module == "units"
        && let Some(constant) = units::constant(member)
    {
        return Some(constant);
    }
    let (_, members) = MODULES.iter().find(|(name, _)| *name == module)?;
    let (name, func) = members.iter().find(|(name, _)| *name == member)?;
    Some(Value::Function(Rc::new(Function {
        name: (*name).to_owned(),
        kind: FunctionKind::Builtin(*func),
    })))
}

/// A member's arguments, read as KCL's runtime reads them.
pub(crate) struct Args<'a> {
    args: &'a [Value],
    kwargs: &'a [(String, Value)],
}

impl<'a> Args<'a> {
    pub(crate) fn new(args: &'a [Value], kwargs: &'a [(String, Value)]) -> Args<'a> {
        Args { args, kwargs }
    }

    /// The keyword argument `name`, else the positional argument `index`.
    pub(crate) fn get(&self, index: usize, name: &str) -> Option<&'a Value> {
        self.kwargs
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
            .or_else(|| self.args.get(index))
    }

    /// A string parameter: anything but a string reads as `""`.
    pub(crate) fn str(&self, index: usize, name: &str) -> Option<&'a str> {
        self.get(index, name).map(|v| v.as_str().unwrap_or(""))
    }

    /// A bool parameter: the value's truth.
    pub(crate) fn bool(&self, index: usize, name: &str) -> Option<bool> {
        self.get(index, name).map(Value::is_truthy)
    }

    /// An int parameter that must be an int (KCL's "invalid int value").
    pub(crate) fn strict_int(&self, index: usize, name: &str) -> Result<Option<i64>> {
        match self.get(index, name) {
            None => Ok(None),
            Some(Value::Int(i)) => Ok(Some(*i)),
            Some(_) => Err(error("invalid int value")),
        }
    }
}

/// A runtime failure of a member, as KCL reports it.
pub(crate) fn error(message: impl Into<String>) -> KclError {
    KclError::new(ErrorKind::EvaluationError, message)
}

/// The message Rust's `unwrap` on an `Err` gives, which KCL prints where
/// its runtime unwraps.
pub(crate) fn unwrap_error(debug: impl std::fmt::Debug) -> KclError {
    error(format!(
        "called `Result::unwrap()` on an `Err` value: {debug:?}"
    ))
}

/// Lowercase hex of bytes (digests).
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;
    use crate::builtins::Interp;

    /// An interpreter for member tests: no options, prints collected, calls
    /// only of builtins.
    #[derive(Default)]
    pub(crate) struct TestInterp {
        pub(crate) printed: String,
        pub(crate) output: Option<(String, crate::value::yaml::PlanOptions)>,
        pub(crate) scratch: crate::modules::file::Scratch,
    }

    impl Interp for TestInterp {
        fn call(
            &mut self,
            func: &Value,
            args: Vec<Value>,
            kwargs: Vec<(String, Value)>,
        ) -> Result<Value> {
            match func {
                Value::Function(f) => match &f.kind {
                    FunctionKind::Builtin(b) => b(self, &args, &kwargs),
                    _ => Err(error("only builtins can be called here")),
                },
                _ => Err(error("not callable")),
            }
        }
        fn option(&self, _name: &str) -> Option<Value> {
            None
        }
        fn print(&mut self, text: &str) {
            self.printed.push_str(text);
        }
        fn read_file(&self, _path: &str) -> Option<std::io::Result<Vec<u8>>> {
            None
        }
        fn instances(&self, _schema_full_name: &str) -> Vec<Value> {
            Vec::new()
        }
        fn scratch(&mut self) -> Option<&mut crate::modules::file::Scratch> {
            Some(&mut self.scratch)
        }
        fn set_output_stream(&mut self, yaml: String, options: crate::value::yaml::PlanOptions) {
            self.output = Some((yaml, options));
        }
    }

    /// Calls `module.member(args, kwargs)`.
    pub(crate) fn call(
        module: &str,
        name: &str,
        args: &[Value],
        kwargs: &[(&str, Value)],
    ) -> Result<Value> {
        let Some(Value::Function(f)) = member(module, name) else {
            panic!("{module}.{name} is not a function member");
        };
        let FunctionKind::Builtin(b) = f.kind else {
            panic!("{module}.{name} is not a builtin");
        };
        let kwargs: Vec<(String, Value)> = kwargs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        b(&mut TestInterp::default(), args, &kwargs)
    }

    /// A value as JSON text, to compare results compactly.
    pub(crate) fn json(value: &Value) -> String {
        crate::value::json::encode(value, &Default::default(), 0)
    }

    pub(crate) fn s(text: &str) -> Value {
        Value::str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_module_of_kcl_is_a_system_module() {
        for name in [
            "base32",
            "base64",
            "collection",
            "crypto",
            "datetime",
            "file",
            "json",
            "manifests",
            "math",
            "net",
            "regex",
            "runtime",
            "template",
            "units",
            "yaml",
        ] {
            assert!(is_system_module(name), "{name}");
        }
        assert!(!is_system_module("os"));
    }

    #[test]
    fn members_are_functions_or_unit_constants() {
        assert!(matches!(member("regex", "match"), Some(Value::Function(_))));
        assert!(matches!(member("units", "Ki"), Some(Value::Int(1024))));
        assert!(member("regex", "fullmatch").is_none());
        assert!(member("os", "getenv").is_none());
    }
}
