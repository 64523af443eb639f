//! Calls: builtins, methods, lambdas (a new frame whose parent is the
//! frame the lambda was written in) and schemas called as functions.

use std::borrow::Cow;
use std::rc::Rc;

use crate::ast::{self, Node, Stmt};
use crate::error::{ErrorKind, KclError, Result};
use crate::source::Span;
use crate::value::{Dict, FunctionKind, Value};

use super::{Closure, Evaluator, Frame};

/// Keyword arguments in the order they were written.
pub(crate) type Keywords = Vec<(String, Value)>;

/// A call's arguments.
pub(crate) struct Arguments {
    pub args: Vec<Value>,
    pub kwargs: Keywords,
    /// A schema's parameters not given are `Undefined`; a lambda's are an
    /// error.
    pub missing_undefined: bool,
}

impl Evaluator {
    pub(crate) fn eval_call(
        &mut self,
        frame: &Rc<Frame>,
        call: &ast::CallExpr,
        span: Span,
    ) -> Result<Value> {
        let func = self.eval_expr(frame, &call.func)?;
        let (args, kwargs) = self.eval_arguments(frame, &call.args, &call.keywords)?;
        // KCL calls what is no function (`x?.method()` when `x` is None)
        // to Undefined, once the arguments are evaluated.
        if !matches!(func, Value::Function(_)) {
            return Ok(Value::Undefined);
        }
        self.call_value(&func, args, kwargs, span)
    }

    pub(crate) fn eval_arguments(
        &mut self,
        frame: &Rc<Frame>,
        args: &[Node<ast::Expr>],
        keywords: &[Node<ast::Keyword>],
    ) -> Result<(Vec<Value>, Keywords)> {
        let mut values = Vec::with_capacity(args.len());
        for a in args {
            match &a.node {
                ast::Expr::Starred(s) => {
                    let v = self.eval_expr(frame, &s.value)?;
                    if let Some(items) = v.as_list() {
                        values.extend(items.iter().cloned());
                    }
                }
                _ => values.push(self.eval_expr(frame, a)?),
            }
        }
        let mut kwargs = Vec::with_capacity(keywords.len());
        for k in keywords {
            let v = match &k.node.value {
                Some(v) => self.eval_expr(frame, v)?,
                None => Value::None,
            };
            kwargs.push((k.node.arg.node.name(), v));
        }
        Ok((values, kwargs))
    }

    pub(crate) fn call_value(
        &mut self,
        func: &Value,
        args: Vec<Value>,
        kwargs: Vec<(String, Value)>,
        span: Span,
    ) -> Result<Value> {
        let Value::Function(f) = func else {
            return Err(KclError::at(
                ErrorKind::EvaluationError,
                span,
                format!("'{}' object is not callable", func.type_name()),
            ));
        };
        self.enter(span)?;
        let result = match &f.kind {
            FunctionKind::Builtin(b) => b(self, &args, &kwargs),
            FunctionKind::Method { receiver, .. }
                if f.name == "instances"
                    && matches!(receiver, Value::Function(r) if matches!(r.kind, FunctionKind::Schema(_))) =>
            {
                let full_pkg = args
                    .first()
                    .or_else(|| kwargs.iter().find(|(k, _)| k == "full_pkg").map(|(_, v)| v))
                    .is_some_and(Value::is_truthy);
                let name = match receiver {
                    Value::Function(r) => match &r.kind {
                        FunctionKind::Schema(ty) => ty.full_name(),
                        _ => String::new(),
                    },
                    _ => String::new(),
                };
                Ok(Value::list(self.schema_instances(&name, full_pkg)))
            }
            FunctionKind::Method { receiver, method } => {
                let mut all = Vec::with_capacity(args.len() + 1);
                all.push(receiver.clone());
                all.extend(args);
                method(self, &all, &kwargs)
            }
            FunctionKind::Lambda(closure) => self.call_lambda(closure, args, kwargs, span),
            FunctionKind::Schema(ty) => {
                let ty = ty.clone();
                self.instantiate(&ty, Dict::new(), args, kwargs, span)
            }
        };
        self.leave();
        result.map_err(|e| super::locate(e, span))
    }

    fn call_lambda(
        &mut self,
        closure: &Rc<Closure>,
        args: Vec<Value>,
        kwargs: Vec<(String, Value)>,
        span: Span,
    ) -> Result<Value> {
        let lambda = closure.lambda.clone();
        let scope = Frame::child(&closure.frame);
        self.bind_parameters(
            &scope,
            &closure.frame,
            lambda.args.as_ref(),
            Arguments {
                args,
                kwargs,
                missing_undefined: false,
            },
            "lambda",
            span,
        )?;
        let value = self.exec_body_for_value(&scope, &lambda.body)?;
        match &lambda.return_ty {
            Some(ty) => self.convert_to_type(&closure.frame, value, &ty.node),
            None => Ok(value),
        }
    }

    /// Runs a lambda's body; its value is the last expression statement's.
    fn exec_body_for_value(&mut self, scope: &Rc<Frame>, body: &[Node<Stmt>]) -> Result<Value> {
        let Some((last, init)) = body.split_last() else {
            return Ok(Value::None);
        };
        self.exec_stmts(scope, init)?;
        match &last.node {
            Stmt::Expr(e) => {
                let mut value = Value::None;
                for expr in &e.exprs {
                    value = self.eval_expr(scope, expr)?;
                }
                Ok(value)
            }
            Stmt::If(i) => {
                let branch = if self.eval_expr(scope, &i.cond)?.is_truthy() {
                    &i.body
                } else {
                    &i.orelse
                };
                self.exec_body_for_value(scope, branch)
            }
            // An assignment's value is the lambda's when it comes last.
            Stmt::Assign(a) => {
                self.exec_stmt(scope, last)?;
                match a.targets.first() {
                    Some(t) if t.node.paths.is_empty() => {
                        Ok(scope.get_local(&t.node.name.node).unwrap_or(Value::None))
                    }
                    _ => Ok(Value::None),
                }
            }
            Stmt::AugAssign(a) => {
                self.exec_stmt(scope, last)?;
                Ok(scope
                    .get_local(&a.target.node.name.node)
                    .unwrap_or(Value::None))
            }
            _ => {
                self.exec_stmt(scope, last)?;
                Ok(Value::None)
            }
        }
    }

    /// Binds call arguments to parameters in `scope` (defaults are
    /// evaluated in `defining`, the frame the function was written in).
    pub(crate) fn bind_parameters(
        &mut self,
        scope: &Rc<Frame>,
        defining: &Rc<Frame>,
        params: Option<&Node<ast::Arguments>>,
        call: Arguments,
        what: &str,
        span: Span,
    ) -> Result<()> {
        let Arguments {
            args,
            kwargs,
            missing_undefined,
        } = call;
        let empty = ast::Arguments {
            args: Vec::new(),
            defaults: Vec::new(),
            ty_list: Vec::new(),
        };
        let params = params.map_or(&empty, |p| &p.node);
        let names: Vec<Cow<'_, str>> = params.args.iter().map(|a| local_name(&a.node)).collect();
        if args.len() > names.len() {
            return Err(KclError::at(
                ErrorKind::TypeError,
                span,
                format!(
                    "{what}() takes {} positional argument{} but {} were given",
                    names.len(),
                    if names.len() == 1 { "" } else { "s" },
                    args.len()
                ),
            ));
        }
        let mut values: Vec<Option<Value>> = vec![None; names.len()];
        for (slot, v) in values.iter_mut().zip(args) {
            *slot = Some(v);
        }
        for (k, v) in kwargs {
            match names.iter().position(|n| *n == k) {
                Some(i) => {
                    if let Some(slot) = values.get_mut(i) {
                        *slot = Some(v);
                    }
                }
                None => {
                    return Err(KclError::at(
                        ErrorKind::EvaluationError,
                        span,
                        format!("{what}() got an unexpected keyword argument '{k}'"),
                    ));
                }
            }
        }
        for (i, name) in names.iter().enumerate() {
            let value = match values.get_mut(i).and_then(Option::take) {
                Some(v) => v,
                None => match params.defaults.get(i).and_then(Option::as_ref) {
                    Some(default) => self.eval_expr(defining, default)?,
                    None if missing_undefined => Value::Undefined,
                    None => {
                        return Err(KclError::at(
                            ErrorKind::EvaluationError,
                            span,
                            format!("{what}() missing 1 required positional argument: '{name}'"),
                        ));
                    }
                },
            };
            let value = match params.ty_list.get(i).and_then(Option::as_ref) {
                Some(ty) => self.convert_argument(defining, value, &ty.node)?,
                None => value,
            };
            scope.set(name, value);
        }
        Ok(())
    }
}

/// A parameter's or loop variable's name, borrowed from the code when it
/// is one segment (as nearly every one is): binding it copies it at most
/// once, into the frame.
pub(crate) fn local_name(id: &ast::Identifier) -> Cow<'_, str> {
    match id.names.as_slice() {
        [only] => Cow::Borrowed(only.node.as_str()),
        _ => Cow::Owned(id.name()),
    }
}
