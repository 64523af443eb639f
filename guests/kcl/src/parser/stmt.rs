//! Statements: assignments, `if`, `assert`, `import`, `type`, and the
//! module around them.

use super::Parser;
use crate::ast::*;
use crate::lexer::TokenKind;
use crate::source::Span;

/// A statement's parse takes about three expressions' worth of stack.
const STMT_WEIGHT: usize = 3;

impl Parser<'_> {
    /// `start: (NEWLINE | statement)*`, with the module's docstring.
    pub(super) fn parse_module(&mut self) -> (Option<Node<String>>, Vec<Node<Stmt>>) {
        let doc = self.parse_doc();
        let mut body = Vec::new();
        while !self.at_eof() {
            let marker = self.mark();
            if let Some(stmt) = self.parse_stmt() {
                body.push(stmt);
            } else {
                self.bump();
            }
            if self.stuck(marker) {
                break;
            }
        }
        (doc, body)
    }

    /// A triple-quoted string opening a module, schema or rule: its text
    /// as written.
    pub(super) fn parse_doc(&mut self) -> Option<Node<String>> {
        match &self.token.kind {
            TokenKind::Str(lit) if lit.is_long => {
                let raw = lit.raw.clone();
                let expr = self.parse_string_expr();
                self.skip_newlines();
                Some(Node::new(raw, expr.span))
            }
            _ => None,
        }
    }

    pub(super) fn parse_stmt(&mut self) -> Option<Node<Stmt>> {
        self.skip_newlines();
        if self.at_eof() {
            return None;
        }
        if !self.enter_weighted(STMT_WEIGHT) {
            return None;
        }
        let stmt = match self.parse_compound_stmt() {
            Some(stmt) => Some(stmt),
            None => self.parse_simple_stmt(),
        };
        self.leave_weighted(STMT_WEIGHT);
        if stmt.is_none() {
            let got = self.token.kind.describe();
            self.error_here(format!("unexpected token '{got}'"));
        }
        stmt
    }

    fn parse_compound_stmt(&mut self) -> Option<Node<Stmt>> {
        self.skip_newlines();
        if self.at_eof() {
            return None;
        }
        if self.is_kw("if") {
            return Some(self.parse_if_stmt());
        }
        let decorators = if self.is(&TokenKind::At) {
            self.parse_decorators()
        } else {
            Vec::new()
        };
        if self.is_kw("schema") || self.is_kw("mixin") || self.is_kw("protocol") {
            return Some(self.parse_schema_stmt(decorators));
        }
        if self.is_kw("rule") {
            return Some(self.parse_rule_stmt(decorators));
        }
        None
    }

    fn parse_simple_stmt(&mut self) -> Option<Node<Stmt>> {
        self.skip_newlines();
        if self.at_eof() {
            return None;
        }
        if self.is_kw("import") {
            return Some(self.parse_import_stmt());
        }
        if self.is_kw("type") {
            return Some(self.parse_type_alias_stmt());
        }
        if self.is_kw("assert") {
            return Some(self.parse_assert_stmt());
        }
        match &self.token.kind {
            TokenKind::Tilde | TokenKind::Bang => {
                let lo = self.token.clone();
                let expr = self.parse_expr();
                let stmt = self.node(Stmt::Expr(ExprStmt { exprs: vec![*expr] }), &lo);
                self.skip_newlines();
                Some(stmt)
            }
            TokenKind::Ident(_)
            | TokenKind::Int { .. }
            | TokenKind::Float(_)
            | TokenKind::Str(_)
            | TokenKind::OpenParen
            | TokenKind::OpenBracket
            | TokenKind::OpenBrace => self.parse_expr_or_assign_stmt(false),
            _ => None,
        }
    }

    /// An indented block: INDENT statement+ DEDENT.
    fn parse_block_stmt_list(&mut self) -> Vec<Node<Stmt>> {
        let mut stmts = Vec::new();
        self.validate_dedent();
        self.bump_token(TokenKind::Indent);
        loop {
            if self.at_eof() {
                break;
            }
            self.validate_dedent();
            if self.is_valid_dedent() {
                self.bump();
                break;
            }
            let marker = self.mark();
            match self.parse_stmt() {
                Some(stmt) => stmts.push(stmt),
                None => self.bump(),
            }
            if self.stuck(marker) {
                break;
            }
        }
        self.skip_newlines();
        stmts
    }

    /// Assignments (`a = b = v`, `a: T = v`, `a.b[0] = v`), augmented
    /// assignments, `name: Schema {…}`, expressions, and in a schema body,
    /// attribute declarations.
    pub(super) fn parse_expr_or_assign_stmt(&mut self, in_schema: bool) -> Option<Node<Stmt>> {
        let lo = self.token.clone();
        let mut targets = vec![self.parse_expr()];
        let mut target_spans = vec![self.ordered_span_from(&lo)];
        let mut value: Option<NodeRef<Expr>> = None;
        let mut ty: Option<Node<Type>> = None;

        if self.is(&TokenKind::Colon) {
            self.bump();
            let typ = self.parse_type_annotation();
            if matches!(self.token.kind, TokenKind::OpenBrace | TokenKind::OpenParen)
                && let Type::Named(ident) = &typ.node
            {
                let name = Node::new(ident.clone(), typ.span);
                let (args, kwargs) = if self.is(&TokenKind::OpenParen) {
                    let func = Box::new(Node::new(Expr::Identifier(ident.clone()), typ.span));
                    let call = self.parse_call(func);
                    (call.args, call.keywords)
                } else {
                    (vec![], vec![])
                };
                let schema = self.parse_schema_expr_node(name, args, kwargs, &lo);
                let first = targets.swap_remove(0);
                let target = self.expr_as_identifier(*first, &lo);
                self.skip_newlines();
                return Some(self.node(
                    Stmt::Unification(UnificationStmt {
                        target,
                        value: schema,
                    }),
                    &lo,
                ));
            }
            ty = Some(*typ);
        } else if let TokenKind::AugAssign(kind) = self.token.kind {
            self.bump();
            return match self.expr_as_target(&targets[0]) {
                Ok(target) => {
                    let value = self.parse_expr();
                    let stmt = self.node(
                        Stmt::AugAssign(AugAssignStmt {
                            target,
                            value,
                            op: kind.op(),
                        }),
                        &lo,
                    );
                    self.skip_newlines();
                    Some(stmt)
                }
                Err(message) => {
                    self.errors.push(crate::error::KclError::at(
                        crate::error::ErrorKind::InvalidSyntax,
                        target_spans[0],
                        message,
                    ));
                    self.parse_expr();
                    self.skip_newlines();
                    None
                }
            };
        }

        while self.is(&TokenKind::Assign) {
            self.bump();
            let start = self.token.clone();
            let expr = self.parse_expr();
            if let Some(previous) = value.take() {
                targets.push(previous);
            }
            target_spans.push(self.ordered_span_from(&start));
            value = Some(expr);
        }

        // `name: T |= value` in a schema.
        if let TokenKind::AugAssign(kind) = self.token.kind
            && targets.len() == 1
            && in_schema
            && let (Some(t), Expr::Identifier(ident)) = (ty.clone(), &targets[0].node)
        {
            self.bump();
            let name = Node::new(ident.name(), targets[0].span);
            let value = self.parse_expr();
            self.skip_newlines();
            return Some(self.node(
                Stmt::SchemaAttr(SchemaAttr {
                    doc: String::new(),
                    name,
                    op: Some(kind.op()),
                    value: Some(value),
                    is_optional: false,
                    decorators: Vec::new(),
                    ty: t,
                }),
                &lo,
            ));
        }

        let end = self.prev_token.clone();
        let stmt_span = self.span(lo.lo, end.hi.max(lo.lo));
        if let Some(value) = value {
            let targets = self.targets_of(&targets, &target_spans);
            self.skip_newlines();
            return Some(Node::new(
                Stmt::Assign(AssignStmt { targets, value, ty }),
                stmt_span,
            ));
        }
        if targets.len() == 1
            && in_schema
            && let (Some(t), Expr::Identifier(ident)) = (ty.clone(), &targets[0].node)
        {
            let name = Node::new(ident.name(), targets[0].span);
            self.skip_newlines();
            return Some(Node::new(
                Stmt::SchemaAttr(SchemaAttr {
                    doc: String::new(),
                    name,
                    op: None,
                    value: None,
                    is_optional: false,
                    decorators: Vec::new(),
                    ty: t,
                }),
                stmt_span,
            ));
        }
        if ty.is_none() {
            let span = match (targets.first(), targets.last()) {
                (Some(first), Some(last)) => first.span.to(last.span),
                _ => stmt_span,
            };
            self.skip_newlines();
            return Some(Node::new(
                Stmt::Expr(ExprStmt {
                    exprs: targets.into_iter().map(|t| *t).collect(),
                }),
                span,
            ));
        }
        let missing = self.missing_expr();
        self.skip_newlines();
        self.token_error(&["="]);
        if in_schema {
            return None;
        }
        let span = match (targets.first(), targets.last()) {
            (Some(first), Some(last)) => first.span.to(last.span),
            _ => stmt_span,
        };
        let targets = self.targets_of(&targets, &target_spans);
        Some(Node::new(
            Stmt::Assign(AssignStmt {
                targets,
                value: missing,
                ty,
            }),
            span,
        ))
    }

    fn targets_of(&mut self, exprs: &[NodeRef<Expr>], spans: &[Span]) -> Vec<Node<Target>> {
        let mut targets = Vec::new();
        for (i, expr) in exprs.iter().enumerate() {
            match self.expr_as_target(expr) {
                Ok(t) => targets.push(t),
                Err(message) => {
                    let span = spans.get(i).copied().unwrap_or(expr.span);
                    self.errors.push(crate::error::KclError::at(
                        crate::error::ErrorKind::InvalidSyntax,
                        span,
                        message,
                    ));
                }
            }
        }
        targets
    }

    /// `assert test [if cond] [, msg]`
    pub(super) fn parse_assert_stmt(&mut self) -> Node<Stmt> {
        let lo = self.token.clone();
        self.bump_kw("assert");
        let test = self.parse_simple_expr();
        let if_cond = if self.is_kw("if") {
            self.bump();
            Some(self.parse_simple_expr())
        } else {
            None
        };
        let msg = if self.is(&TokenKind::Comma) {
            self.bump();
            Some(self.parse_expr())
        } else {
            None
        };
        let stmt = self.node(Stmt::Assert(AssertStmt { test, if_cond, msg }), &lo);
        self.skip_newlines();
        stmt
    }

    /// `import .a.b as c`
    fn parse_import_stmt(&mut self) -> Node<Stmt> {
        let lo = self.token.clone();
        self.bump_kw("import");
        let path_lo = self.token.clone();
        let mut path = String::new();
        while self.is(&TokenKind::DotDotDot) {
            path.push_str("...");
            self.bump();
        }
        while self.is(&TokenKind::Dot) {
            path.push('.');
            self.bump();
        }
        let dotted = self.parse_identifier();
        let path_span = self.span_from(&path_lo);
        let asname = if self.is_kw("as") {
            self.bump();
            let ident = self.parse_identifier();
            match ident.node.names.as_slice() {
                [one] => Some(one.clone()),
                _ => {
                    self.error_here("Invalid import asname");
                    None
                }
            }
        } else {
            None
        };
        path.push_str(&dotted.node.name());
        let name = match &asname {
            Some(n) => n.node.clone(),
            None => dotted
                .node
                .names
                .last()
                .map(|n| n.node.clone())
                .unwrap_or_default(),
        };
        let stmt = self.node(
            Stmt::Import(ImportStmt {
                rawpath: Node::new(path, path_span),
                name,
                asname,
                pkgpath: String::new(),
            }),
            &lo,
        );
        self.skip_newlines();
        stmt
    }

    /// `type Name = T`
    fn parse_type_alias_stmt(&mut self) -> Node<Stmt> {
        self.bump_kw("type");
        let name_lo = self.token.clone();
        let expr = self.parse_expr();
        let type_name = self.expr_as_identifier(*expr, &name_lo);
        let type_name = Node::new(type_name.node, self.span_from(&name_lo));
        self.bump_token(TokenKind::Assign);
        let ty_lo = self.token.clone();
        let ty = self.parse_type_annotation();
        let text = self
            .src
            .get(ty_lo.lo..self.prev_token.hi.max(ty_lo.lo))
            .unwrap_or("")
            .to_string();
        let type_value = Node::new(text, self.span_from(&ty_lo));
        let stmt = Node::new(
            Stmt::TypeAlias(TypeAliasStmt {
                type_name,
                type_value,
                ty: *ty,
            }),
            self.span_from(&name_lo),
        );
        self.skip_newlines();
        stmt
    }

    /// The body after `if cond:`: one statement on the same line, or an
    /// indented block.
    fn parse_if_body(&mut self) -> Vec<Node<Stmt>> {
        if !self.is(&TokenKind::Newline) {
            match self.parse_expr_or_assign_stmt(false) {
                Some(stmt) => vec![stmt],
                None => {
                    self.bump();
                    vec![]
                }
            }
        } else {
            self.skip_newlines();
            self.parse_block_stmt_list()
        }
    }

    /// `if c: … elif c: … else: …`
    pub(super) fn parse_if_stmt(&mut self) -> Node<Stmt> {
        let lo = self.token.clone();
        self.bump_kw("if");
        let cond = self.parse_expr();
        self.bump_token(TokenKind::Colon);
        let body = self.parse_if_body();
        let mut if_stmt = IfStmt {
            cond,
            body,
            orelse: Vec::new(),
        };
        self.skip_newlines();
        let mut elifs: Vec<(IfStmt, Span)> = Vec::new();
        // Each `elif` nests the tree one level deeper.
        let mut levels = 0;
        while self.is_kw("elif") && self.enter() {
            levels += 1;
            let elif_lo = self.token.clone();
            self.bump();
            let cond = self.parse_expr();
            self.bump_token(TokenKind::Colon);
            let body = self.parse_if_body();
            let span = self.span_from(&elif_lo);
            elifs.push((
                IfStmt {
                    cond,
                    body,
                    orelse: Vec::new(),
                },
                span,
            ));
        }
        self.skip_newlines();
        if self.is_kw("else") {
            let else_lo = self.token.lo;
            self.bump();
            if self.is_kw("if") {
                self.error_at(
                    "'else if' here is invalid in KCL, consider using the 'elif' keyword",
                    else_lo,
                    self.token.hi,
                );
                self.bump();
            }
            if !self.is(&TokenKind::Colon) {
                self.token_error(&[":"]);
            }
            self.bump();
            if_stmt.orelse = self.parse_if_body();
        }
        let mut orelse = std::mem::take(&mut if_stmt.orelse);
        while let Some((mut elif, span)) = elifs.pop() {
            let span = match orelse.last() {
                Some(last) => span.to(last.span),
                None => span,
            };
            elif.orelse = orelse;
            orelse = vec![Node::new(Stmt::If(elif), span)];
        }
        if_stmt.orelse = orelse;
        self.leave_weighted(levels);
        let stmt = self.node(Stmt::If(if_stmt), &lo);
        self.skip_newlines();
        stmt
    }

    /// `@name` or `@name(args)` lines before a schema, rule or attribute.
    pub(super) fn parse_decorators(&mut self) -> Vec<Node<CallExpr>> {
        let mut decorators = Vec::new();
        while self.is(&TokenKind::At) {
            self.bump();
            let expr = self.parse_expr();
            let span = expr.span;
            match expr.node {
                Expr::Identifier(ident) => decorators.push(Node::new(
                    CallExpr {
                        func: Box::new(Node::new(Expr::Identifier(ident), span)),
                        args: Vec::new(),
                        keywords: Vec::new(),
                    },
                    span,
                )),
                Expr::Call(call) => decorators.push(Node::new(call, span)),
                _ => self.token_error(&["identifier"]),
            }
            self.skip_newlines();
        }
        self.skip_newlines();
        decorators
    }

    /// Whether the token starts a string literal followed by `:`.
    pub(super) fn is_string_then_colon(&self) -> bool {
        matches!(self.token.kind, TokenKind::Str(_)) && matches!(self.peek(), TokenKind::Colon)
    }
}
