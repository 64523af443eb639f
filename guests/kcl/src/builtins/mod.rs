//! KCL's builtin functions and the methods of its values (strings, dicts),
//! with KCL's argument rules and messages.

use crate::error::Result;
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
}

/// The builtin function of that name (`len`, `option`, `typeof`, …).
pub fn lookup(_name: &str) -> Option<BuiltinFn> {
    None
}

/// The method of that name on a value of that kind (`"s".upper`,
/// `{}.keys`).
pub fn method(_receiver: &Value, _name: &str) -> Option<BuiltinFn> {
    None
}
