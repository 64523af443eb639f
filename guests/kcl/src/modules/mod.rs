//! KCL's system modules (`import regex`, `import json`, …): each member a
//! builtin function or constant.

use crate::value::Value;

/// Whether `import name` names a system module.
pub fn is_system_module(_name: &str) -> bool {
    false
}

/// The member `member` of system module `module` (`regex.match`, `math.pi`).
pub fn member(_module: &str, _member: &str) -> Option<Value> {
    None
}
