//! The evaluator: runs a checked program and produces its top-level
//! values.

use crate::ast;
use std::rc::Rc;

/// A lambda and the scope it closed over.
#[derive(Debug)]
pub struct Closure {
    pub lambda: Rc<ast::LambdaExpr>,
}

/// A schema or rule definition as the evaluator holds it.
#[derive(Debug)]
pub struct SchemaType {
    pub name: String,
    pub pkgpath: String,
}
