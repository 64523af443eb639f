//! Frames (scopes) and KCL's lazy evaluation of package variables and
//! schema attributes.
//!
//! A package or schema body is a list of statements and, per name, the
//! statements that set it (its setters). The body runs in order; reading a
//! name whose setters have not all run yet runs them first, so a name
//! always reads its final value, whatever the order it was written in.

use crate::collections::HashMap;
use std::cell::RefCell;
use std::rc::Rc;

use crate::collections::IndexMap;

use crate::ast::{self, Node, Stmt};
use crate::error::{ErrorKind, KclError, Result};
use crate::source::Span;
use crate::value::Value;

use super::Evaluator;

/// Which statement list a lazy body's statement lives in.
#[derive(Debug, Clone)]
pub(crate) enum Body {
    Module(Rc<ast::Module>),
    Schema(Rc<ast::SchemaStmt>),
}

#[derive(Debug, Clone)]
pub(crate) struct StmtRef {
    pub body: Body,
    pub index: usize,
    /// The package the statement was written in (a parent's or mixin's
    /// may be another package than the instance's frame).
    pub pkg: Rc<str>,
}

impl StmtRef {
    pub fn get(&self) -> Option<&Node<Stmt>> {
        match &self.body {
            Body::Module(m) => m.body.get(self.index),
            Body::Schema(s) => s.body.get(self.index),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Pending,
    Running,
    Done,
}

/// A lazy body's statements and, per name, the statements that set it.
/// It depends only on the code, so a schema type finds it once and shares
/// it with every instance (`SchemaType::body`).
#[derive(Debug, Default)]
pub(crate) struct LazyBody {
    stmts: Vec<StmtRef>,
    setters: HashMap<String, Vec<usize>>,
}

/// A lazy body as one frame runs it: which statements have run.
#[derive(Debug, Default)]
pub(crate) struct Lazy {
    body: Rc<LazyBody>,
    state: Vec<State>,
    /// The statements running, innermost last (an assignment belongs to
    /// the last).
    running: Vec<usize>,
    /// Per exported package name, the statement that set it and where.
    assigned_by: HashMap<String, (usize, Span)>,
}

/// A scope: its variables, its parent, and for package and schema bodies
/// the lazy state of their statements.
#[derive(Debug)]
pub struct Frame {
    pub(crate) vars: RefCell<IndexMap<String, Value>>,
    pub(crate) parent: Option<Rc<Frame>>,
    pub(crate) lazy: Option<RefCell<Lazy>>,
    /// The package the code of this frame belongs to.
    pub(crate) pkgpath: Rc<str>,
    /// A package's top-level frame (immutability of exported names).
    pub(crate) is_package: bool,
    /// A comprehension's or quantifier's frame: its loop variables used
    /// as config keys stand for their values.
    pub(crate) is_loop: bool,
}

/// The names a statement sets (an `if` sets what its branches set).
pub(crate) fn assigned_names(stmt: &Stmt, out: &mut Vec<String>) {
    match stmt {
        Stmt::Assign(a) => {
            for t in &a.targets {
                out.push(t.node.name.node.clone());
            }
        }
        Stmt::AugAssign(a) => out.push(a.target.node.name.node.clone()),
        Stmt::Unification(u) => {
            if let Some(first) = u.target.node.names.first() {
                out.push(first.node.clone());
            }
        }
        Stmt::SchemaAttr(a) => out.push(a.name.node.clone()),
        Stmt::Schema(s) => out.push(s.name.node.clone()),
        Stmt::Rule(r) => out.push(r.name.node.clone()),
        Stmt::If(i) => {
            for s in i.body.iter().chain(i.orelse.iter()) {
                assigned_names(&s.node, out);
            }
        }
        Stmt::TypeAlias(_) | Stmt::Expr(_) | Stmt::Assert(_) | Stmt::Import(_) => {}
    }
}

impl LazyBody {
    pub fn new(stmts: Vec<StmtRef>) -> LazyBody {
        let mut setters: HashMap<String, Vec<usize>> = HashMap::default();
        for (i, s) in stmts.iter().enumerate() {
            let mut names = Vec::new();
            if let Some(stmt) = s.get() {
                assigned_names(&stmt.node, &mut names);
            }
            for name in names {
                let list = setters.entry(name).or_default();
                if list.last() != Some(&i) {
                    list.push(i);
                }
            }
        }
        LazyBody { stmts, setters }
    }
}

impl Lazy {
    pub fn new(body: Rc<LazyBody>) -> Lazy {
        Lazy {
            state: vec![State::Pending; body.stmts.len()],
            body,
            running: Vec::new(),
            assigned_by: HashMap::default(),
        }
    }

    fn pending_setters(&self, name: &str) -> Vec<usize> {
        self.body
            .setters
            .get(name)
            .map(|list| {
                list.iter()
                    .copied()
                    .filter(|i| self.state.get(*i) == Some(&State::Pending))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn has_setter(&self, name: &str) -> bool {
        self.body.setters.contains_key(name)
    }

    /// Whether the statement running now sets `name` (it reads the value
    /// so far, as `x += 1` and `x = {**x, …}` do).
    fn running_sets(&self, name: &str) -> bool {
        match (self.running.last(), self.body.setters.get(name)) {
            (Some(i), Some(list)) => list.contains(i),
            _ => false,
        }
    }

    /// Names in the order of their first setter (KCL's output order).
    fn names_in_order(&self) -> Vec<String> {
        let mut names: Vec<(usize, &String)> = self
            .body
            .setters
            .iter()
            .filter_map(|(n, l)| l.first().map(|i| (*i, n)))
            .collect();
        names.sort();
        names.into_iter().map(|(_, n)| n.clone()).collect()
    }
}

impl Frame {
    pub fn package(pkgpath: &str, modules: &[Rc<ast::Module>]) -> Rc<Frame> {
        let stmts = modules
            .iter()
            .flat_map(|m| {
                (0..m.body.len()).map(|index| StmtRef {
                    body: Body::Module(m.clone()),
                    index,
                    pkg: Rc::from(pkgpath),
                })
            })
            .collect();
        Rc::new(Frame {
            vars: RefCell::new(IndexMap::default()),
            parent: None,
            lazy: Some(RefCell::new(Lazy::new(Rc::new(LazyBody::new(stmts))))),
            pkgpath: Rc::from(pkgpath),
            is_package: true,
            is_loop: false,
        })
    }

    pub fn child(parent: &Rc<Frame>) -> Rc<Frame> {
        Rc::new(Frame {
            vars: RefCell::new(IndexMap::default()),
            parent: Some(parent.clone()),
            lazy: None,
            pkgpath: parent.pkgpath.clone(),
            is_package: false,
            is_loop: false,
        })
    }

    /// A config literal's frame: the keys set so far, readable by the
    /// entries after them.
    pub fn config_child(parent: &Rc<Frame>) -> Rc<Frame> {
        Rc::new(Frame {
            vars: RefCell::new(IndexMap::default()),
            parent: Some(parent.clone()),
            lazy: None,
            pkgpath: parent.pkgpath.clone(),
            is_package: false,
            is_loop: false,
        })
    }

    pub fn loop_child(parent: &Rc<Frame>) -> Rc<Frame> {
        Rc::new(Frame {
            vars: RefCell::new(IndexMap::default()),
            parent: Some(parent.clone()),
            lazy: None,
            pkgpath: parent.pkgpath.clone(),
            is_package: false,
            is_loop: true,
        })
    }

    /// A comprehension's loop variable: config keys naming one use its
    /// value.
    pub fn local_variable(self: &Rc<Frame>, name: &str) -> Option<Value> {
        let mut f = Some(self.clone());
        while let Some(cur) = f {
            if cur.lazy.is_some() {
                return None;
            }
            if cur.is_loop
                && let Some(v) = cur.get_local(name)
            {
                return Some(v);
            }
            f = cur.parent.clone();
        }
        None
    }

    pub fn lazy_child(parent: &Rc<Frame>, body: Rc<LazyBody>) -> Rc<Frame> {
        Rc::new(Frame {
            vars: RefCell::new(IndexMap::default()),
            parent: Some(parent.clone()),
            lazy: Some(RefCell::new(Lazy::new(body))),
            pkgpath: parent.pkgpath.clone(),
            is_package: false,
            is_loop: false,
        })
    }

    pub fn set(&self, name: &str, value: Value) {
        let mut vars = self.vars.borrow_mut();
        match vars.get_mut(name) {
            Some(slot) => *slot = value,
            None => {
                vars.insert(name.to_string(), value);
            }
        }
    }

    pub fn get_local(&self, name: &str) -> Option<Value> {
        self.vars.borrow().get(name).cloned()
    }

    /// The package's variables in output order.
    pub fn globals_in_order(&self) -> Vec<(String, Value)> {
        let vars = self.vars.borrow();
        let order = self
            .lazy
            .as_ref()
            .map(|l| l.borrow().names_in_order())
            .unwrap_or_default();
        order
            .into_iter()
            .filter_map(|n| vars.get(&n).map(|v| (n.clone(), v.clone())))
            .collect()
    }

    /// The frame of a package (the root of the chain).
    pub fn root(self: &Rc<Frame>) -> Rc<Frame> {
        let mut f = self.clone();
        while let Some(p) = f.parent.clone() {
            f = p;
        }
        f
    }
}

impl Evaluator {
    /// Runs every statement of a lazy body not yet run.
    pub(crate) fn run_lazy_body(&mut self, frame: &Rc<Frame>) -> Result<()> {
        let len = frame
            .lazy
            .as_ref()
            .map(|l| l.borrow().body.stmts.len())
            .unwrap_or(0);
        for i in 0..len {
            self.run_lazy_stmt(frame, i)?;
        }
        Ok(())
    }

    fn run_lazy_stmt(&mut self, frame: &Rc<Frame>, i: usize) -> Result<()> {
        let Some(lazy) = &frame.lazy else {
            return Ok(());
        };
        let stmt = {
            let mut l = lazy.borrow_mut();
            if l.state.get(i) != Some(&State::Pending) {
                return Ok(());
            }
            if let Some(s) = l.state.get_mut(i) {
                *s = State::Running;
            }
            l.running.push(i);
            l.body.stmts.get(i).cloned()
        };
        let code_pkg = stmt
            .as_ref()
            .map(|s| std::mem::replace(&mut self.code_pkg, s.pkg.clone()));
        let result = match stmt.as_ref().and_then(StmtRef::get) {
            Some(node) => self.exec_stmt(frame, node),
            None => Ok(()),
        };
        if let Some(code_pkg) = code_pkg {
            self.code_pkg = code_pkg;
        }
        let mut l = lazy.borrow_mut();
        l.running.pop();
        if let Some(s) = l.state.get_mut(i) {
            *s = State::Done;
        }
        result
    }

    /// Runs the pending setters of `name` in a lazy frame.
    fn backtrack(&mut self, frame: &Rc<Frame>, name: &str) -> Result<()> {
        let pending = match &frame.lazy {
            Some(l) => {
                let l = l.borrow();
                if l.running_sets(name) {
                    return Ok(());
                }
                l.pending_setters(name)
            }
            None => return Ok(()),
        };
        for i in pending {
            self.run_lazy_stmt(frame, i)?;
        }
        Ok(())
    }

    /// Reads a name: local frames out to the package, then the package's
    /// imports are not values (see `load_identifier`), then builtins.
    pub(crate) fn lookup(&mut self, frame: &Rc<Frame>, name: &str) -> Result<Option<Value>> {
        let mut f = Some(frame.clone());
        while let Some(cur) = f {
            let has_setter = cur
                .lazy
                .as_ref()
                .is_some_and(|l| l.borrow().has_setter(name));
            if has_setter {
                self.backtrack(&cur, name)?;
            }
            if let Some(v) = cur.get_local(name) {
                return Ok(Some(v));
            }
            if has_setter && cur.is_package {
                return Ok(Some(Value::Undefined));
            }
            f = cur.parent.clone();
        }
        Ok(None)
    }

    /// Assigns a name in a frame; exported package names may be set by one
    /// statement only.
    pub(crate) fn assign_name(
        &mut self,
        frame: &Rc<Frame>,
        name: &str,
        value: Value,
        span: Span,
    ) -> Result<()> {
        if frame.is_package
            && !name.starts_with('_')
            && let Some(lazy) = &frame.lazy
        {
            let mut l = lazy.borrow_mut();
            let current = l.running.last().copied().unwrap_or(usize::MAX);
            match l.assigned_by.get(name) {
                Some((by, first_span)) if *by != current => {
                    return Err(immutable_error(name, span, *first_span));
                }
                Some(_) => {}
                None => {
                    l.assigned_by.insert(name.to_string(), (current, span));
                }
            }
        }
        frame.set(name, value);
        Ok(())
    }
}

pub(crate) fn immutable_error(name: &str, span: Span, first: Span) -> KclError {
    KclError::at(
        ErrorKind::ImmutableError,
        span,
        format!("Can not change the value of '{name}', because it was declared immutable"),
    )
    .with_label(first, format!("The variable '{name}' is declared here"))
    .with_note(format!(
        "change the variable name to '_{name}' to make it mutable"
    ))
}
