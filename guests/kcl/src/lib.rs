//! The KCL configuration language.
//!
//! Stages, each in its own module: source positions (`source`), tokens
//! (`lexer`), the syntax tree (`ast`, built by `parser`), loading a program's
//! files and packages (`loader`), static checks (`checker`), evaluation
//! (`eval`) over KCL's values (`value`: the value model, unification, YAML
//! and JSON), the builtins (`builtins`) and system modules (`modules`).
//! Errors are values (`error::KclError`) at every stage: nothing panics on
//! any input.

pub mod ast;
pub mod builtins;
pub mod error;
pub mod eval;
pub mod lexer;
pub mod modules;
pub mod parser;
pub mod source;
pub mod value;

pub use error::{ErrorKind, KclError};
