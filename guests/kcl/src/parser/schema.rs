//! Schemas, protocols, mixins and rules: headers, parameters, bodies
//! (attributes, index signatures, mixins, check blocks).

use super::Parser;
use crate::ast::*;
use crate::lexer::TokenKind;

/// The parts of a schema body.
#[derive(Default)]
struct SchemaBody {
    doc: Option<Node<String>>,
    mixins: Vec<Node<Identifier>>,
    body: Vec<Node<Stmt>>,
    checks: Vec<Node<CheckExpr>>,
    index_signature: Option<Node<SchemaIndexSignature>>,
}

impl Parser<'_> {
    /// `[decorators] (schema|mixin|protocol) Name[args](Parent) for Host:`
    pub(super) fn parse_schema_stmt(&mut self, decorators: Vec<Node<CallExpr>>) -> Node<Stmt> {
        let lo = self.token.clone();
        let mut is_mixin = false;
        let mut is_protocol = false;
        if self.is_kw("mixin") {
            is_mixin = true;
        } else if self.is_kw("protocol") {
            is_protocol = true;
        }
        self.bump();
        let name_ident = self.parse_identifier();
        let name = Node::new(name_ident.node.name(), name_ident.span);
        if name.node.ends_with("Mixin") {
            is_mixin = true;
        } else if name.node.ends_with("Protocol") {
            is_protocol = true;
        }
        let args = if self.is(&TokenKind::OpenBracket) {
            self.parse_parameters(
                &[TokenKind::OpenBracket],
                &[TokenKind::CloseBracket],
                true,
                false,
            )
        } else {
            None
        };
        let parent_name = if self.is(&TokenKind::OpenParen) {
            self.bump();
            let parent = self.parse_identifier();
            self.bump_token(TokenKind::CloseParen);
            Some(parent)
        } else {
            None
        };
        let for_host_name = self.parse_for_host();
        self.bump_token(TokenKind::Colon);
        self.skip_newlines();
        let body = if self.is(&TokenKind::Indent) {
            self.parse_schema_body()
        } else {
            SchemaBody::default()
        };
        self.node(
            Stmt::Schema(SchemaStmt {
                doc: body.doc,
                name,
                parent_name,
                for_host_name,
                is_mixin,
                is_protocol,
                args,
                mixins: body.mixins,
                body: body.body,
                decorators,
                checks: body.checks,
                index_signature: body.index_signature,
            }),
            &lo,
        )
    }

    /// `for Host` after a schema's or rule's name.
    fn parse_for_host(&mut self) -> Option<Node<Identifier>> {
        if !self.is_kw("for") {
            return None;
        }
        self.bump();
        let lo = self.token.clone();
        let expr = self.parse_expr();
        Some(self.expr_as_identifier(*expr, &lo))
    }

    /// Parameters of a schema (`[a, b: int = 1]`) or lambda (`a, b`, or in
    /// braces before `->`). `open` empty means no opening token.
    pub(super) fn parse_parameters(
        &mut self,
        open: &[TokenKind],
        close: &[TokenKind],
        bump_close: bool,
        multiline: bool,
    ) -> Option<Node<Arguments>> {
        let lo = self.token.clone();
        let has_open = open.iter().any(|t| self.is(t));
        if has_open {
            self.bump();
        }
        if !open.is_empty() && !has_open {
            return None;
        }
        let mut args = Arguments {
            args: Vec::new(),
            defaults: Vec::new(),
            ty_list: Vec::new(),
        };
        loop {
            let marker = self.mark();
            if close.iter().any(|t| self.is(t)) {
                if bump_close {
                    self.bump();
                }
                break;
            }
            if multiline && self.is(&TokenKind::Newline) {
                self.skip_newlines();
                self.clean_all_indentations();
            }
            if matches!(self.token.kind, TokenKind::Newline | TokenKind::Eof) {
                let expected: Vec<&str> = close.iter().map(TokenKind::symbol).collect();
                self.token_error(&expected);
                break;
            }
            let name = self.parse_identifier();
            let ty = if self.is(&TokenKind::Colon) {
                self.bump();
                Some(*self.parse_type_annotation())
            } else {
                None
            };
            let default = if self.is(&TokenKind::Assign) {
                self.bump();
                Some(self.parse_expr())
            } else {
                None
            };
            args.args.push(name);
            args.ty_list.push(ty);
            args.defaults.push(default);
            if self.is(&TokenKind::Comma) {
                self.bump();
            }
            if multiline && self.is(&TokenKind::Newline) {
                self.skip_newlines();
                self.clean_all_indentations();
            }
            if self.stuck(marker) {
                break;
            }
        }
        self.skip_newlines();
        Some(self.node(args, &lo))
    }

    fn parse_schema_body(&mut self) -> SchemaBody {
        self.validate_dedent();
        self.bump_token(TokenKind::Indent);
        let mut out = SchemaBody {
            doc: if matches!(self.peek(), TokenKind::Colon) {
                None
            } else {
                self.parse_doc()
            },
            ..SchemaBody::default()
        };
        if self.is_kw("mixin") {
            out.mixins = self.parse_mixins();
            self.skip_newlines();
        }
        loop {
            let marker = self.mark();
            self.validate_dedent();
            if self.is_valid_dedent() || self.at_eof() || self.is_kw("check") {
                break;
            }
            if self.is_kw("assert") {
                let stmt = self.parse_assert_stmt();
                out.body.push(stmt);
                continue;
            }
            if self.is_kw("if") {
                let stmt = self.parse_if_stmt();
                out.body.push(stmt);
                continue;
            }
            if self.is_string_then_colon()
                || self.is(&TokenKind::At)
                || matches!(self.peek(), TokenKind::Question)
            {
                let lo = self.token.clone();
                let attr = self.parse_schema_attribute();
                let stmt = self.node(Stmt::SchemaAttr(attr), &lo);
                out.body.push(stmt);
                continue;
            }
            if self.is(&TokenKind::OpenBracket) {
                self.parse_index_signature_or_list(&mut out);
                self.skip_newlines();
                continue;
            }
            match self.parse_expr_or_assign_stmt(true) {
                Some(stmt) => out.body.push(Self::assign_as_attr(stmt)),
                None => self.bump(),
            }
            if self.stuck(marker) {
                break;
            }
        }
        out.checks = self.parse_check_block();
        self.validate_dedent();
        self.bump_token(TokenKind::Dedent(0));
        self.skip_newlines();
        out
    }

    /// `name: T = value` in a schema body declares an attribute.
    fn assign_as_attr(stmt: Node<Stmt>) -> Node<Stmt> {
        let span = stmt.span;
        match stmt.node {
            Stmt::Assign(AssignStmt {
                mut targets,
                value,
                ty: Some(ty),
            }) if targets.len() == 1 => {
                let target = targets.swap_remove(0);
                Node::new(
                    Stmt::SchemaAttr(SchemaAttr {
                        doc: String::new(),
                        name: Node::new(target.node.name.node.clone(), target.span),
                        op: Some(AugOp::Assign),
                        value: Some(value),
                        is_optional: false,
                        decorators: Vec::new(),
                        ty,
                    }),
                    span,
                )
            }
            other => Node::new(other, span),
        }
    }

    /// `mixin [A, B]`
    fn parse_mixins(&mut self) -> Vec<Node<Identifier>> {
        self.bump_kw("mixin");
        self.bump_token(TokenKind::OpenBracket);
        let has_newline = if self.is(&TokenKind::Newline) {
            self.skip_newlines();
            if self.is(&TokenKind::Indent) {
                self.bump();
            } else {
                self.token_error(&["indent"]);
            }
            true
        } else {
            false
        };
        let mut mixins = Vec::new();
        loop {
            let marker = self.mark();
            self.validate_dedent();
            if self.is(&TokenKind::CloseBracket) || self.is_valid_dedent() || self.at_eof() {
                break;
            }
            mixins.push(self.parse_identifier());
            if self.is(&TokenKind::Comma) {
                self.bump();
            }
            self.skip_newlines();
            if self.stuck(marker) {
                break;
            }
        }
        if has_newline {
            self.validate_dedent();
            if self.is_valid_dedent() {
                self.bump();
            } else {
                self.token_error(&["dedent"]);
            }
        }
        self.bump_token(TokenKind::CloseBracket);
        mixins
    }

    /// `[@decorators] name[?]: T [= value | |= value]`; the name may be a
    /// string.
    fn parse_schema_attribute(&mut self) -> SchemaAttr {
        let decorators = if self.is(&TokenKind::At) {
            let d = self.parse_decorators();
            self.skip_newlines();
            d
        } else {
            Vec::new()
        };
        let name = match &self.token.kind {
            TokenKind::Str(_) => {
                let expr = self.parse_string_expr();
                match expr.node {
                    Expr::StringLit(s) => Node::new(s.value, expr.span),
                    _ => Node::new(String::new(), expr.span),
                }
            }
            _ => {
                let ident = self.parse_identifier();
                Node::new(ident.node.name(), ident.span)
            }
        };
        let is_optional = if self.is(&TokenKind::Question) {
            self.bump();
            true
        } else {
            false
        };
        self.bump_token(TokenKind::Colon);
        let ty = *self.parse_type_annotation();
        let op = match self.token.kind {
            TokenKind::Assign => {
                self.bump();
                Some(AugOp::Assign)
            }
            TokenKind::AugAssign(kind) => {
                self.bump();
                Some(kind.op())
            }
            _ => None,
        };
        let value = op.map(|_| self.parse_expr());
        self.skip_newlines();
        SchemaAttr {
            doc: String::new(),
            name,
            op,
            value,
            is_optional,
            decorators,
            ty,
        }
    }

    /// A `[` in a schema body starts an index signature or a list
    /// expression statement.
    fn parse_index_signature_or_list(&mut self, out: &mut SchemaBody) {
        let lo = self.token.clone();
        self.bump();
        let peek = self.peek().clone();
        let peek2 = self.peek_n(2).clone();
        let is_list = match &self.token.kind {
            TokenKind::Newline | TokenKind::CloseBracket => Some(true),
            TokenKind::Ident(_)
                if !matches!(peek, TokenKind::Colon) && !matches!(peek2, TokenKind::Colon) =>
            {
                Some(true)
            }
            TokenKind::DotDotDot if matches!(peek, TokenKind::Ident(_)) => Some(false),
            TokenKind::Ident(_) => Some(false),
            _ => None,
        };
        match is_list {
            Some(true) => {
                let list = self.parse_list_expr(false);
                let stmt = self.node(Stmt::Expr(ExprStmt { exprs: vec![*list] }), &lo);
                out.body.push(stmt);
            }
            Some(false) => {
                let sig = self.parse_index_signature();
                if out.index_signature.is_some() {
                    self.error_at(
                        "duplicate schema index signature definitions, only one is allowed in the schema",
                        lo.lo,
                        lo.hi,
                    );
                }
                out.index_signature = Some(self.node(sig, &lo));
            }
            None => {
                let got = self.token.kind.describe();
                self.error_here(format!(
                    "expected a index signature or list expression here, got {got}"
                ));
            }
        }
    }

    /// After `[`: `name: str]: T = default`, `str]: T`, `...str]: T`.
    fn parse_index_signature(&mut self) -> SchemaIndexSignature {
        let (key_name, key_ty, any_other) = if self.is(&TokenKind::DotDotDot) {
            self.bump();
            (None, *self.parse_type_annotation(), true)
        } else {
            let ident = self.parse_identifier();
            if self.is(&TokenKind::CloseBracket) {
                let ty = Node::new(super::ty::named_or_basic(ident.node), ident.span);
                (None, ty, false)
            } else {
                self.bump_token(TokenKind::Colon);
                let any_other = if self.is(&TokenKind::DotDotDot) {
                    self.bump();
                    true
                } else {
                    false
                };
                let key_name = Node::new(ident.node.name(), ident.span);
                (Some(key_name), *self.parse_type_annotation(), any_other)
            }
        };
        self.bump_token(TokenKind::CloseBracket);
        self.bump_token(TokenKind::Colon);
        let value_ty = *self.parse_type_annotation();
        let value = if self.is(&TokenKind::Assign) {
            self.bump();
            Some(self.parse_expr())
        } else {
            None
        };
        self.skip_newlines();
        SchemaIndexSignature {
            key_name,
            value,
            any_other,
            key_ty,
            value_ty,
        }
    }

    /// `check:` and its indented check expressions.
    fn parse_check_block(&mut self) -> Vec<Node<CheckExpr>> {
        let mut checks = Vec::new();
        if !self.is_kw("check") {
            return checks;
        }
        self.bump();
        self.bump_token(TokenKind::Colon);
        self.skip_newlines();
        self.bump_token(TokenKind::Indent);
        self.parse_check_exprs(&mut checks);
        checks
    }

    /// Check expressions up to the end of their block, which is consumed.
    fn parse_check_exprs(&mut self, checks: &mut Vec<Node<CheckExpr>>) {
        while !self.is_valid_dedent() {
            let marker = self.mark();
            if self.at_eof() {
                self.token_error(&["newline"]);
                break;
            }
            checks.push(self.parse_check_expr());
            self.skip_newlines();
            if self.stuck(marker) {
                break;
            }
        }
        self.validate_dedent();
        self.bump_token(TokenKind::Dedent(0));
    }

    /// `test [if cond] [, msg]`
    fn parse_check_expr(&mut self) -> Node<CheckExpr> {
        let lo = self.token.clone();
        let test = self.parse_simple_expr();
        let if_cond = if self.is_kw("if") {
            self.bump();
            Some(self.parse_simple_expr())
        } else {
            None
        };
        let msg = if self.is(&TokenKind::Comma) {
            self.bump();
            Some(self.parse_primary_expr())
        } else {
            None
        };
        self.node(CheckExpr { test, if_cond, msg }, &lo)
    }

    /// `[decorators] rule Name[args](Parent, …) for Host:` and its checks.
    pub(super) fn parse_rule_stmt(&mut self, decorators: Vec<Node<CallExpr>>) -> Node<Stmt> {
        let lo = self.token.clone();
        self.bump_kw("rule");
        let name_ident = self.parse_identifier();
        let name = Node::new(name_ident.node.name(), name_ident.span);
        let args = if self.is(&TokenKind::OpenBracket) {
            self.parse_parameters(
                &[TokenKind::OpenBracket],
                &[TokenKind::CloseBracket],
                true,
                false,
            )
        } else {
            None
        };
        let mut parent_rules = Vec::new();
        if self.is(&TokenKind::OpenParen) {
            self.bump();
            loop {
                if self.is(&TokenKind::CloseParen) {
                    self.bump();
                    break;
                }
                if matches!(self.token.kind, TokenKind::Newline | TokenKind::Eof) {
                    self.token_error(&[")", ","]);
                    break;
                }
                let rule_lo = self.token.clone();
                let expr = self.parse_expr();
                parent_rules.push(self.expr_as_identifier(*expr, &rule_lo));
                if !matches!(
                    self.token.kind,
                    TokenKind::Comma | TokenKind::CloseParen | TokenKind::Newline | TokenKind::Eof
                ) {
                    self.token_error(&[",", ")"]);
                    self.bump();
                }
                if self.is(&TokenKind::Comma) {
                    self.bump();
                }
            }
        }
        let for_host_name = self.parse_for_host();
        self.bump_token(TokenKind::Colon);
        self.skip_newlines();
        self.bump_token(TokenKind::Indent);
        let doc = self.parse_doc();
        let mut checks = Vec::new();
        self.validate_dedent();
        self.parse_check_exprs(&mut checks);
        self.node(
            Stmt::Rule(RuleStmt {
                doc,
                name,
                parent_rules,
                decorators,
                checks,
                args,
                for_host_name,
            }),
            &lo,
        )
    }
}
