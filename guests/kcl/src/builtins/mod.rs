//! KCL's builtin functions and the methods of its values (strings, dicts),
//! with KCL's argument rules and messages.
//!
//! Modules: `display` (what `str()`, `print` and `${x}` print), `format`
//! (Python's format mini-language as `"…".format()` implements it, and the
//! `${x: #json}` interpolation specs), `functions` (the builtin table and
//! most builtins), `option` (`option()`), `order`
//! (`sorted`, `max`, `min`), `convert` (`int`/`float` and unit strings),
//! `string` (the string methods).
//!
//! KCL's builtins signal a failure with a message and no position; the
//! evaluator adds the call's position (`KclError::or_at`).

mod convert;
mod display;
mod format;
mod functions;
mod option;
mod order;
mod string;

pub use convert::parse_quantity;
pub use display::quote_str;
pub use format::{format_string, format_with_spec};

use crate::error::{ErrorKind, KclError, Result};
use crate::value::Value;

/// A builtin: positional arguments (for a method, the receiver first), then
/// keyword arguments in the order they were written.
pub type BuiltinFn = fn(&mut dyn Interp, &[Value], &[(String, Value)]) -> Result<Value>;

/// What a builtin may ask of the evaluator running it.
pub trait Interp {
    /// Calls a function value (a lambda, a builtin, a schema).
    fn call(
        &mut self,
        func: &Value,
        args: Vec<Value>,
        kwargs: Vec<(String, Value)>,
    ) -> Result<Value>;
    /// The value of a top-level option (`-D name=value`, settings files).
    fn option(&self, name: &str) -> Option<Value>;
    /// Writes `print()`'s output.
    fn print(&mut self, text: &str);
    /// Reads a file below the directory the host granted (the `file`
    /// module); `None` when no directory was granted.
    fn read_file(&self, path: &str) -> Option<std::io::Result<Vec<u8>>>;
    /// Every instance of a schema created so far, by its full name
    /// (`Schema.instances()`).
    fn instances(&self, schema_full_name: &str) -> Vec<Value>;
    /// The directory the `file` module may read below (its `glob`,
    /// `exists`, `size`, `abs`); `None` when none was granted.
    fn file_root(&self) -> Option<&std::path::Path> {
        None
    }
    /// `file.current()`, `file.workdir()`, `file.modpath()`: the file
    /// whose code is running, the run's work directory, and the root of
    /// the program's module; empty when unknown.
    fn program_path(&self, _which: crate::modules::file::ProgramPath) -> String {
        String::new()
    }
    /// The files the program wrote during the run (the `file` module's
    /// writes, `dump_to_file`); `None` refuses writes.
    fn scratch(&mut self) -> Option<&mut crate::modules::file::Scratch> {
        None
    }
    /// `manifests.yaml_stream`: the program's output becomes this YAML
    /// stream, read back and planned with `options` (KCL's custom
    /// manifests output).
    fn set_output_stream(&mut self, _yaml: String, _options: crate::value::yaml::PlanOptions) {}
    /// Unifies two values as `|` does (`collection.union_all`); only an
    /// evaluator can (schemas are re-checked), so others refuse.
    fn union(&mut self, _left: Value, _right: &Value) -> Result<Value> {
        Err(crate::error::KclError::new(
            crate::error::ErrorKind::EvaluationError,
            "unification needs the evaluator",
        ))
    }
}

/// The builtin function of that name (`len`, `option`, `typeof`, …).
pub fn lookup(name: &str) -> Option<BuiltinFn> {
    functions::lookup(name)
}

/// The method of that name on a value of that kind (`"s".upper`).
/// KCL's dicts, lists and schema instances have no methods; the evaluator
/// answers `Schema.instances` itself.
pub fn method(receiver: &Value, name: &str) -> Option<BuiltinFn> {
    match receiver {
        Value::Str(_) => string::lookup(name),
        _ => None,
    }
}

/// An argument given by keyword `name` or else at position `index`: KCL
/// looks the keyword up first.
pub(crate) fn arg<'a>(
    args: &'a [Value],
    kwargs: &'a [(String, Value)],
    index: usize,
    name: &str,
) -> Option<&'a Value> {
    kwarg(kwargs, name).or_else(|| args.get(index))
}

/// A keyword argument (the last one of that name wins, as in a dict).
pub(crate) fn kwarg<'a>(kwargs: &'a [(String, Value)], name: &str) -> Option<&'a Value> {
    kwargs.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v)
}

/// KCL's failure inside a builtin: an evaluation error with its message.
pub(crate) fn fail(message: impl Into<String>) -> KclError {
    KclError::new(ErrorKind::EvaluationError, message)
}

/// The message Rust's `Option::unwrap` panics with, which KCL reports
/// where its runtime unwraps a missing value.
pub(crate) const UNWRAP_NONE: &str = "called `Option::unwrap()` on a `None` value";

#[cfg(test)]
mod tests;
