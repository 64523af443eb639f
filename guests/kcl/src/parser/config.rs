//! List and config literals, their `if` items and comprehensions.

use super::Parser;
use crate::ast::*;
use crate::lexer::TokenKind;
use crate::source::Span;

impl Parser<'_> {
    /// `[items]` or `[expr for … in … if …]`. `bump_open` is false when the
    /// caller already read the `[`.
    pub(super) fn parse_list_expr(&mut self, bump_open: bool) -> NodeRef<Expr> {
        let lo = if bump_open {
            let t = self.token.clone();
            self.bump();
            t
        } else {
            self.prev_token.clone()
        };
        if self.is(&TokenKind::CloseBracket) {
            self.bump();
            return self.boxed(Expr::List(ListExpr { elts: vec![] }), &lo);
        }
        if self.is(&TokenKind::Newline) {
            self.skip_newlines();
            self.clean_all_indentations();
            if self.is(&TokenKind::CloseBracket) {
                self.bump();
                return self.boxed(Expr::List(ListExpr { elts: vec![] }), &lo);
            }
        }
        let item_start = self.token.clone();
        let mut items = self.parse_list_items();
        let generators = self.parse_comp_clauses();
        self.skip_newlines();
        self.clean_all_indentations();
        if self.is(&TokenKind::CloseBracket) {
            self.bump();
        } else {
            self.token_error(&["]"]);
        }
        if generators.is_empty() {
            return self.boxed(Expr::List(ListExpr { elts: items }), &lo);
        }
        if items.is_empty() {
            self.error_at(
                "missing list comp clause expression",
                item_start.lo,
                item_start.hi,
            );
            return self.boxed(Expr::List(ListExpr { elts: items }), &lo);
        }
        if items.len() > 1 {
            self.error_at(
                format!(
                    "multiple list comp clause expression found: expected 1, got {}",
                    items.len()
                ),
                item_start.lo,
                item_start.hi,
            );
        }
        let elt = Box::new(items.swap_remove(0));
        self.boxed(Expr::ListComp(ListComp { elt, generators }), &lo)
    }

    fn parse_list_items(&mut self) -> Vec<Node<Expr>> {
        let at_end = |p: &Self| {
            matches!(p.token.kind, TokenKind::CloseBracket | TokenKind::Eof) || p.is_kw("for")
        };
        if at_end(self) {
            return Vec::new();
        }
        let mut items = vec![*self.parse_list_item()];
        if self.is(&TokenKind::Comma) {
            self.bump();
        }
        self.skip_newlines();
        loop {
            let marker = self.mark();
            self.clean_all_indentations();
            if at_end(self) {
                break;
            }
            let item = self.parse_list_item();
            if matches!(item.node, Expr::Missing) {
                self.token_error(&[","]);
                self.bump();
            } else {
                items.push(*item);
            }
            if self.is(&TokenKind::Comma) {
                self.bump();
            }
            self.skip_newlines();
            if self.stuck(marker) {
                break;
            }
        }
        items
    }

    /// An expression, `*spread` or `if cond: items` inside a list.
    fn parse_list_item(&mut self) -> NodeRef<Expr> {
        let lo = self.token.clone();
        if self.is(&TokenKind::Star) {
            self.bump();
            let value = self.parse_expr();
            return self.boxed(Expr::Starred(StarredExpr { value }), &lo);
        }
        if self.is_kw("if") {
            if !self.enter() {
                return self.missing_expr();
            }
            let item = self.parse_if_item_expr();
            self.leave();
            return item;
        }
        self.parse_expr()
    }

    fn parse_if_item_expr(&mut self) -> NodeRef<Expr> {
        let lo = self.token.clone();
        self.bump_kw("if");
        let if_cond = self.parse_expr();
        self.bump_token(TokenKind::Colon);
        let mut multiline = self.is(&TokenKind::Newline);
        let exprs = self.parse_if_item_block(multiline);
        let mut if_item = ListIfItemExpr {
            if_cond,
            exprs,
            orelse: None,
        };
        self.skip_newlines();
        let mut elifs: Vec<(ListIfItemExpr, Span)> = Vec::new();
        let mut levels = 0;
        loop {
            let marker = self.mark();
            // Each `elif` nests the tree one level deeper.
            if !self.is_kw("elif") || !self.enter() {
                break;
            }
            levels += 1;
            let elif_lo = self.token.clone();
            self.bump_kw("elif");
            let cond = self.parse_expr();
            self.bump_token(TokenKind::Colon);
            if self.is(&TokenKind::Newline) {
                multiline = true;
            }
            let exprs = self.parse_if_item_block(multiline);
            elifs.push((
                ListIfItemExpr {
                    if_cond: cond,
                    exprs,
                    orelse: None,
                },
                self.span_from(&elif_lo),
            ));
            if self.stuck(marker) {
                break;
            }
        }
        self.skip_newlines();
        if self.is_kw("else") {
            let else_lo = self.token.clone();
            self.bump_kw("else");
            self.bump_token(TokenKind::Colon);
            if self.is(&TokenKind::Newline) {
                multiline = true;
            }
            let elts = self.parse_if_item_block(multiline);
            if_item.orelse = Some(self.boxed(Expr::List(ListExpr { elts }), &else_lo));
        }
        let mut orelse = if_item.orelse.take();
        while let Some((mut elif, span)) = elifs.pop() {
            elif.orelse = orelse;
            orelse = Some(Box::new(Node::new(Expr::ListIfItem(elif), span)));
        }
        if_item.orelse = orelse;
        self.leave_weighted(levels);
        self.boxed(Expr::ListIfItem(if_item), &lo)
    }

    fn parse_if_item_block(&mut self, multiline: bool) -> Vec<Node<Expr>> {
        if !multiline {
            return vec![*self.parse_list_item()];
        }
        self.skip_newlines();
        self.bump_token(TokenKind::Indent);
        let mut body = Vec::new();
        loop {
            let marker = self.mark();
            self.validate_dedent();
            if self.is_valid_dedent() || self.at_eof() {
                break;
            }
            body.push(*self.parse_list_item());
            if self.is(&TokenKind::Comma) {
                self.bump();
            }
            self.skip_newlines();
            if self.stuck(marker) {
                break;
            }
        }
        self.validate_dedent();
        self.bump_token(TokenKind::Dedent(0));
        body
    }

    /// `{entries}` or `{k: v for … in …}`
    pub(super) fn parse_config_expr(&mut self) -> NodeRef<Expr> {
        let lo = self.token.clone();
        self.bump();
        if self.is(&TokenKind::CloseBrace) {
            self.bump();
            return self.boxed(Expr::Config(ConfigExpr { items: vec![] }), &lo);
        }
        let has_newline = if self.is(&TokenKind::Newline) {
            self.skip_newlines();
            self.clean_all_indentations();
            if self.is(&TokenKind::CloseBrace) {
                self.bump();
                return self.boxed(Expr::Config(ConfigExpr { items: vec![] }), &lo);
            }
            true
        } else {
            false
        };
        let item_start = self.token.clone();
        let mut items = self.parse_config_entries(has_newline);
        let generators = self.parse_comp_clauses();
        self.skip_newlines();
        self.clean_all_indentations();
        if self.is(&TokenKind::CloseBrace) {
            self.bump();
        } else {
            self.token_error(&["}"]);
        }
        if generators.is_empty() {
            return self.boxed(Expr::Config(ConfigExpr { items }), &lo);
        }
        if items.is_empty() {
            self.error_at(
                "missing config comp clause expression",
                item_start.lo,
                item_start.hi,
            );
            return self.boxed(Expr::Config(ConfigExpr { items }), &lo);
        }
        if items.len() > 1 {
            self.error_at(
                format!(
                    "multiple config comp clause expression found: expected 1, got {}",
                    items.len()
                ),
                item_start.lo,
                item_start.hi,
            );
        }
        let entry = items.swap_remove(0).node;
        self.boxed(Expr::DictComp(DictComp { entry, generators }), &lo)
    }

    fn parse_config_entries(&mut self, has_newline: bool) -> Vec<Node<ConfigEntry>> {
        let at_end = |p: &Self| match p.token.kind {
            TokenKind::CloseBrace | TokenKind::Eof => true,
            TokenKind::Newline => !has_newline,
            _ => p.is_kw("for"),
        };
        if at_end(self) {
            return Vec::new();
        }
        let mut entries = vec![self.parse_config_entry()];
        if self.is(&TokenKind::Comma) {
            self.bump();
        }
        if has_newline {
            self.skip_newlines();
        }
        loop {
            let marker = self.mark();
            self.clean_all_indentations();
            if at_end(self) {
                break;
            }
            entries.push(self.parse_config_entry());
            if self.is(&TokenKind::Comma) {
                self.bump();
            }
            if has_newline {
                self.skip_newlines();
            }
            if self.stuck(marker) {
                break;
            }
        }
        entries
    }

    /// `key: value`, `key = value`, `key += value`, `**spread`, `if …`
    fn parse_config_entry(&mut self) -> Node<ConfigEntry> {
        let lo = self.token.clone();
        if self.is(&TokenKind::StarStar) {
            self.bump();
            let value = self.parse_expr();
            return self.node(
                ConfigEntry {
                    key: None,
                    value,
                    operation: ConfigEntryOperation::Union,
                },
                &lo,
            );
        }
        if self.is_kw("if") {
            let value = if self.enter() {
                let v = self.parse_if_entry_expr();
                self.leave();
                v
            } else {
                self.missing_expr()
            };
            return self.node(
                ConfigEntry {
                    key: None,
                    value,
                    operation: ConfigEntryOperation::Union,
                },
                &lo,
            );
        }
        let key = self.parse_expr();
        let operation = self.parse_entry_operation();
        self.bump();
        let value = self.parse_expr();
        self.node(
            ConfigEntry {
                key: Some(key),
                value,
                operation,
            },
            &lo,
        )
    }

    /// The operator after a config key (`:`, `=`, `+=`); not consumed.
    fn parse_entry_operation(&mut self) -> ConfigEntryOperation {
        match &self.token.kind {
            TokenKind::Colon => ConfigEntryOperation::Union,
            TokenKind::Assign => ConfigEntryOperation::Override,
            TokenKind::AugAssign(crate::lexer::AugKind::Plus) => ConfigEntryOperation::Insert,
            _ => {
                self.token_error(&[":", "=", "+="]);
                ConfigEntryOperation::Override
            }
        }
    }

    pub(super) fn parse_comp_clauses(&mut self) -> Vec<Node<CompClause>> {
        let mut clauses = Vec::new();
        while self.is_kw("for") {
            clauses.push(self.parse_comp_clause());
        }
        clauses
    }

    /// `for a, b in iter if cond …`
    fn parse_comp_clause(&mut self) -> Node<CompClause> {
        let lo = self.token.clone();
        self.bump();
        let mut targets = vec![self.parse_identifier()];
        while self.is(&TokenKind::Comma) {
            self.bump();
            targets.push(self.parse_identifier());
        }
        if !self.is_kw("in") {
            self.token_error(&["in"]);
        }
        self.bump();
        let iter = self.parse_simple_expr();
        self.skip_newlines();
        let mut ifs = Vec::new();
        while self.is_kw("if") {
            self.bump();
            ifs.push(*self.parse_expr());
        }
        self.node(CompClause { targets, iter, ifs }, &lo)
    }

    /// `if cond: entries (elif cond: entries)* (else: entries)?` inside a
    /// config literal.
    fn parse_if_entry_expr(&mut self) -> NodeRef<Expr> {
        let lo = self.token.clone();
        self.bump_kw("if");
        let if_cond = self.parse_expr();
        self.bump_token(TokenKind::Colon);
        let multiline = self.is(&TokenKind::Newline);
        let items = self.parse_if_entry_block(multiline);
        let mut if_entry = ConfigIfEntryExpr {
            if_cond,
            items,
            orelse: None,
        };
        self.skip_newlines();
        let mut elifs: Vec<(ConfigIfEntryExpr, Span)> = Vec::new();
        let mut levels = 0;
        let mut multiline = false;
        let mut last = self.token.clone();
        loop {
            let marker = self.mark();
            // Each `elif` nests the tree one level deeper.
            if !self.is_kw("elif") || !self.enter() {
                break;
            }
            levels += 1;
            let elif_lo = self.token.clone();
            self.bump_kw("elif");
            let cond = self.parse_expr();
            self.bump_token(TokenKind::Colon);
            if self.is(&TokenKind::Newline) {
                multiline = true;
            }
            let items = self.parse_if_entry_block(multiline);
            elifs.push((
                ConfigIfEntryExpr {
                    if_cond: cond,
                    items,
                    orelse: None,
                },
                self.span_from(&elif_lo),
            ));
            last = self.prev_token.clone();
            if self.stuck(marker) {
                break;
            }
        }
        self.skip_newlines();
        if self.is_kw("else") {
            let else_lo = self.token.clone();
            self.bump_kw("else");
            self.bump_token(TokenKind::Colon);
            let multiline = self.is(&TokenKind::Newline);
            let items = self.parse_if_entry_block(multiline);
            if_entry.orelse = Some(self.boxed(Expr::Config(ConfigExpr { items }), &else_lo));
            last = self.prev_token.clone();
        }
        if self.is(&TokenKind::Comma) {
            self.bump();
        }
        self.skip_newlines();
        let mut orelse = if_entry.orelse.take();
        while let Some((mut elif, span)) = elifs.pop() {
            elif.orelse = orelse;
            orelse = Some(Box::new(Node::new(Expr::ConfigIfEntry(elif), span)));
        }
        if_entry.orelse = orelse;
        self.leave_weighted(levels);
        Box::new(Node::new(
            Expr::ConfigIfEntry(if_entry),
            self.span(lo.lo, last.hi.max(lo.lo)),
        ))
    }

    fn parse_if_entry_block(&mut self, multiline: bool) -> Vec<Node<ConfigEntry>> {
        if multiline {
            self.skip_newlines();
            self.bump_token(TokenKind::Indent);
        }
        let mut items = Vec::new();
        if !multiline {
            self.parse_if_entry_item(&mut items, false);
            return items;
        }
        while self.parse_if_entry_item(&mut items, true) {
            if self.at_eof() {
                break;
            }
            if self.is(&TokenKind::Comma) {
                self.bump();
            }
            self.skip_newlines();
        }
        self.skip_newlines();
        items
    }

    /// One entry of an `if` block in a config; `false` at the block's end.
    fn parse_if_entry_item(&mut self, items: &mut Vec<Node<ConfigEntry>>, multiline: bool) -> bool {
        let marker = self.mark();
        if multiline {
            if self.is_valid_dedent() {
                self.bump();
                return false;
            }
        } else if self.is(&TokenKind::Newline) {
            return false;
        }
        if self.is_kw("elif") || self.is_kw("else") || self.at_eof() {
            return false;
        }
        if self.is_kw("if") {
            let value = if self.enter() {
                let v = self.parse_if_entry_expr();
                self.leave();
                v
            } else {
                self.missing_expr()
            };
            let span = value.span;
            items.push(Node::new(
                ConfigEntry {
                    key: None,
                    value,
                    operation: ConfigEntryOperation::Override,
                },
                span,
            ));
            return true;
        }
        self.validate_dedent();
        if self.is_valid_dedent() || self.is(&TokenKind::Newline) {
            return false;
        }
        if self.is(&TokenKind::StarStar) {
            self.bump();
            let value = self.parse_primary_expr();
            let span = value.span;
            items.push(Node::new(
                ConfigEntry {
                    key: None,
                    value,
                    operation: ConfigEntryOperation::Override,
                },
                span,
            ));
            return true;
        }
        let key = self.parse_expr();
        let operation = self.parse_entry_operation();
        if matches!(
            self.token.kind,
            TokenKind::Colon | TokenKind::Assign | TokenKind::AugAssign(_)
        ) && operation_matches(&self.token.kind, operation)
        {
            self.bump();
        }
        let value = self.parse_expr();
        let span = key.span.to(value.span);
        items.push(Node::new(
            ConfigEntry {
                key: Some(key),
                value,
                operation,
            },
            span,
        ));
        !self.stuck(marker)
    }
}

fn operation_matches(token: &TokenKind, op: ConfigEntryOperation) -> bool {
    matches!(
        (token, op),
        (TokenKind::Colon, ConfigEntryOperation::Union)
            | (TokenKind::Assign, ConfigEntryOperation::Override)
            | (
                TokenKind::AugAssign(crate::lexer::AugKind::Plus),
                ConfigEntryOperation::Insert
            )
    )
}
