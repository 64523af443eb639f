//! Expressions: operators with KCL's precedence, primary expressions
//! (selectors, calls, subscripts) and operands.

use super::Parser;
use crate::ast::*;
use crate::lexer::{Token, TokenKind};

/// KCL's binding strengths, weakest first. The comparison levels differ
/// from Python's, and every comparison joins one chain (`a < b == c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Precedence {
    Lowest,
    As,
    LogicOr,
    LogicAnd,
    Equals,
    InOrNotIn,
    IsOrIsNot,
    LessGreater,
    BitOr,
    BitXor,
    BitAnd,
    Shift,
    Sum,
    Product,
    Power,
}

enum BinOrCmp {
    Bin(BinOp),
    Cmp(CmpOp),
}

fn precedence(token: &Token) -> Precedence {
    match &token.kind {
        TokenKind::Ident(name) => match &**name {
            "as" => Precedence::As,
            "or" => Precedence::LogicOr,
            "and" => Precedence::LogicAnd,
            "in" => Precedence::InOrNotIn,
            "is" => Precedence::IsOrIsNot,
            _ => Precedence::Lowest,
        },
        TokenKind::Plus | TokenKind::Minus => Precedence::Sum,
        TokenKind::Star | TokenKind::Slash | TokenKind::Percent | TokenKind::SlashSlash => {
            Precedence::Product
        }
        TokenKind::StarStar => Precedence::Power,
        TokenKind::Caret => Precedence::BitXor,
        TokenKind::Amp => Precedence::BitAnd,
        TokenKind::Pipe => Precedence::BitOr,
        TokenKind::Shl | TokenKind::Shr => Precedence::Shift,
        TokenKind::EqEq | TokenKind::NotEq => Precedence::Equals,
        TokenKind::Lt | TokenKind::LtEq | TokenKind::Gt | TokenKind::GtEq => {
            Precedence::LessGreater
        }
        _ => Precedence::Lowest,
    }
}

fn bin_or_cmp(token: &Token) -> Option<BinOrCmp> {
    Some(match &token.kind {
        TokenKind::Ident(name) => match &**name {
            "as" => BinOrCmp::Bin(BinOp::As),
            "or" => BinOrCmp::Bin(BinOp::Or),
            "and" => BinOrCmp::Bin(BinOp::And),
            "in" => BinOrCmp::Cmp(CmpOp::In),
            "is" => BinOrCmp::Cmp(CmpOp::Is),
            "not" => BinOrCmp::Cmp(CmpOp::Not),
            _ => return None,
        },
        TokenKind::Plus => BinOrCmp::Bin(BinOp::Add),
        TokenKind::Minus => BinOrCmp::Bin(BinOp::Sub),
        TokenKind::Star => BinOrCmp::Bin(BinOp::Mul),
        TokenKind::Slash => BinOrCmp::Bin(BinOp::Div),
        TokenKind::Percent => BinOrCmp::Bin(BinOp::Mod),
        TokenKind::StarStar => BinOrCmp::Bin(BinOp::Pow),
        TokenKind::SlashSlash => BinOrCmp::Bin(BinOp::FloorDiv),
        TokenKind::Caret => BinOrCmp::Bin(BinOp::BitXor),
        TokenKind::Amp => BinOrCmp::Bin(BinOp::BitAnd),
        TokenKind::Pipe => BinOrCmp::Bin(BinOp::BitOr),
        TokenKind::Shl => BinOrCmp::Bin(BinOp::LShift),
        TokenKind::Shr => BinOrCmp::Bin(BinOp::RShift),
        TokenKind::EqEq => BinOrCmp::Cmp(CmpOp::Eq),
        TokenKind::NotEq => BinOrCmp::Cmp(CmpOp::NotEq),
        TokenKind::Lt => BinOrCmp::Cmp(CmpOp::Lt),
        TokenKind::LtEq => BinOrCmp::Cmp(CmpOp::LtE),
        TokenKind::Gt => BinOrCmp::Cmp(CmpOp::Gt),
        TokenKind::GtEq => BinOrCmp::Cmp(CmpOp::GtE),
        _ => return None,
    })
}

const OPERAND_START: &[&str] = &["identifier", "literal", "(", "[", "{"];

impl Parser<'_> {
    /// `test: if_expr | simple_expr`
    pub(super) fn parse_expr(&mut self) -> NodeRef<Expr> {
        if matches!(self.token.kind, TokenKind::Indent) {
            self.error_here("unexpected token 'indent'");
            self.bump();
        }
        if !self.enter() {
            let missing = self.missing_expr();
            if !self.at_eof() {
                self.bump();
            }
            return missing;
        }
        let lo = self.token.clone();
        let operand = self.parse_simple_expr();
        let expr = if self.is_kw("if") {
            self.parse_if_expr(operand, &lo)
        } else {
            operand
        };
        self.leave();
        expr
    }

    pub(super) fn parse_simple_expr(&mut self) -> NodeRef<Expr> {
        self.parse_binary(Precedence::Lowest)
    }

    fn parse_binary(&mut self, min: Precedence) -> NodeRef<Expr> {
        let lo = self.token.clone();
        let mut x = self.parse_unary_expr();
        let mut cmp_left: Option<NodeRef<Expr>> = None;
        let mut ops: Vec<CmpOp> = Vec::new();
        let mut comparators: Vec<Node<Expr>> = Vec::new();
        // Each operator applied to the left side nests the tree one level
        // deeper, as much as a bracket would.
        let mut levels = 0;
        loop {
            let mut two_words = false;
            let mut prec = precedence(&self.token);
            let peek_is = |kw: &str| matches!(self.peek(), TokenKind::Ident(n) if &**n == kw);
            if self.is_kw("not") && peek_is("in") {
                prec = Precedence::InOrNotIn;
                two_words = true;
            }
            if self.is_kw("is") && peek_is("not") {
                prec = Precedence::IsOrIsNot;
                two_words = true;
            }
            if prec <= min {
                break;
            }
            let op = if two_words {
                if self.is_kw("not") {
                    BinOrCmp::Cmp(CmpOp::NotIn)
                } else {
                    BinOrCmp::Cmp(CmpOp::IsNot)
                }
            } else {
                match bin_or_cmp(&self.token) {
                    Some(op) => op,
                    None => break,
                }
            };
            self.bump();
            if two_words {
                self.bump();
            }
            let y = self.parse_binary(prec);
            if !self.enter() {
                break;
            }
            levels += 1;
            match op {
                BinOrCmp::Cmp(op) => {
                    if ops.is_empty() {
                        // The chain's left side moves into the comparison.
                        let missing = self.missing_expr();
                        cmp_left = Some(std::mem::replace(&mut x, missing));
                    }
                    ops.push(op);
                    comparators.push(*y);
                }
                BinOrCmp::Bin(op) => {
                    if let Some(left) = cmp_left.take() {
                        x = self.boxed(
                            Expr::Compare(Compare {
                                left,
                                ops: std::mem::take(&mut ops),
                                comparators: std::mem::take(&mut comparators),
                            }),
                            &lo,
                        );
                    }
                    x = self.boxed(
                        Expr::Binary(BinaryExpr {
                            left: x,
                            op,
                            right: y,
                        }),
                        &lo,
                    );
                }
            }
        }
        self.leave_weighted(levels);
        match cmp_left {
            Some(left) => self.boxed(
                Expr::Compare(Compare {
                    left,
                    ops,
                    comparators,
                }),
                &lo,
            ),
            None => x,
        }
    }

    /// `body if cond else orelse`
    fn parse_if_expr(&mut self, body: NodeRef<Expr>, lo: &Token) -> NodeRef<Expr> {
        self.bump_kw("if");
        let cond = self.parse_simple_expr();
        let orelse = if self.is_kw("else") {
            self.bump();
            self.parse_expr()
        } else {
            self.token_error(&["else"]);
            self.missing_expr()
        };
        self.boxed(Expr::If(IfExpr { body, cond, orelse }), lo)
    }

    /// A unary operator applies to a primary expression only: `-2 ** 2`
    /// is `(-2) ** 2` and `not a == b` is `(not a) == b` in KCL.
    fn parse_unary_expr(&mut self) -> NodeRef<Expr> {
        let lo = self.token.clone();
        let op = match &self.token.kind {
            TokenKind::Plus => UnaryOp::UAdd,
            TokenKind::Minus => UnaryOp::USub,
            TokenKind::Tilde => UnaryOp::Invert,
            TokenKind::Bang => UnaryOp::Not,
            TokenKind::Ident(n) if &**n == "not" => UnaryOp::Not,
            _ => return self.parse_primary_expr(),
        };
        self.bump();
        let operand = self.parse_primary_expr();
        self.boxed(Expr::Unary(UnaryExpr { op, operand }), &lo)
    }

    pub(super) fn parse_primary_expr(&mut self) -> NodeRef<Expr> {
        let lo = self.token.clone();
        let mut operand = self.parse_operand_expr();
        // Each selector, call or subscript nests the tree one level deeper.
        let mut levels = 0;
        loop {
            let is_suffix = match &self.token.kind {
                TokenKind::Dot | TokenKind::OpenParen | TokenKind::OpenBracket => true,
                TokenKind::Question => {
                    matches!(self.peek(), TokenKind::Dot | TokenKind::OpenBracket)
                }
                _ => false,
            };
            if !is_suffix || !self.enter() {
                break;
            }
            levels += 1;
            operand = match &self.token.kind {
                TokenKind::OpenParen => {
                    let call = self.parse_call(operand);
                    self.boxed(Expr::Call(call), &lo)
                }
                TokenKind::Dot => self.parse_selector_expr(operand, &lo),
                TokenKind::Question if matches!(self.peek(), TokenKind::Dot) => {
                    self.parse_selector_expr(operand, &lo)
                }
                _ => self.parse_subscript_expr(operand, &lo),
            };
        }
        self.leave_weighted(levels);
        operand
    }

    /// `value.attr`, `value?.attr`
    fn parse_selector_expr(&mut self, value: NodeRef<Expr>, lo: &Token) -> NodeRef<Expr> {
        let has_question = if self.is(&TokenKind::Question) {
            self.bump();
            true
        } else {
            false
        };
        self.bump(); // `.`
        if matches!(self.token.kind, TokenKind::Ident(_)) {
            let attr = self.parse_identifier();
            self.boxed(
                Expr::Selector(SelectorExpr {
                    value,
                    attr,
                    has_question,
                }),
                lo,
            )
        } else {
            self.token_error(&["identifier"]);
            let at = self.span(self.token.lo, self.token.lo);
            let attr = Node::new(
                Identifier {
                    names: vec![Node::new(String::new(), at)],
                },
                at,
            );
            Box::new(Node::new(
                Expr::Selector(SelectorExpr {
                    value,
                    attr,
                    has_question,
                }),
                self.span(lo.lo, self.token.lo),
            ))
        }
    }

    /// `func(args, name=value)`
    pub(super) fn parse_call(&mut self, func: NodeRef<Expr>) -> CallExpr {
        if self.is(&TokenKind::OpenParen) {
            self.bump();
        } else {
            self.token_error(&["("]);
        }
        let has_newline = if self.is(&TokenKind::Newline) {
            self.skip_newlines();
            self.clean_all_indentations();
            if self.is(&TokenKind::CloseParen) {
                self.bump();
                return CallExpr {
                    func,
                    args: vec![],
                    keywords: vec![],
                };
            }
            true
        } else {
            false
        };
        let (args, keywords) = if self.is(&TokenKind::CloseParen) {
            (vec![], vec![])
        } else {
            self.parse_arguments(has_newline)
        };
        if self.is(&TokenKind::Comma) {
            self.bump();
        }
        if self.is(&TokenKind::CloseParen) {
            self.bump();
        } else {
            self.token_error(&[")"]);
        }
        CallExpr {
            func,
            args,
            keywords,
        }
    }

    fn parse_arguments(&mut self, has_newline: bool) -> (Vec<Node<Expr>>, Vec<Node<Keyword>>) {
        let mut args = Vec::new();
        let mut keywords = Vec::new();
        let mut has_keyword = false;
        loop {
            let marker = self.mark();
            self.clean_all_indentations();
            let at_end = match &self.token.kind {
                TokenKind::CloseParen | TokenKind::Eof => true,
                TokenKind::Newline => !has_newline,
                _ => self.is_kw("for"),
            };
            if at_end {
                break;
            }
            let lo = self.token.clone();
            let expr = self.parse_expr();
            let arg_hi = self.prev_token.clone();
            if self.is(&TokenKind::Assign) {
                self.bump();
                let arg = match expr.node {
                    Expr::Identifier(ident) => ident,
                    _ => {
                        self.token_error(&["identifier"]);
                        Identifier {
                            names: vec![Node::new(String::new(), expr.span)],
                        }
                    }
                };
                let arg = Node::new(arg, self.span(lo.lo, arg_hi.hi));
                let value = self.parse_expr();
                keywords.push(self.node(
                    Keyword {
                        arg,
                        value: Some(value),
                    },
                    &lo,
                ));
                has_keyword = true;
            } else {
                if matches!(expr.node, Expr::Missing) {
                    self.token_error(&[","]);
                    self.bump();
                } else {
                    args.push(*expr);
                }
                if has_keyword {
                    self.error_at("positional argument follows keyword argument", lo.lo, lo.hi);
                }
            }
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
        (args, keywords)
    }

    /// `value[index]`, `value[lower:upper:step]`, `value?[…]`
    fn parse_subscript_expr(&mut self, value: NodeRef<Expr>, lo: &Token) -> NodeRef<Expr> {
        let has_question = if self.is(&TokenKind::Question) {
            self.bump();
            true
        } else {
            false
        };
        if self.is(&TokenKind::OpenBracket) {
            self.bump();
        } else {
            self.token_error(&["["]);
        }
        let mut is_slice = false;
        let mut colons = 0;
        let mut exprs: [Option<NodeRef<Expr>>; 3] = [None, None, None];
        let mut slot = 0usize;
        let mut consecutive = 0i32;
        for round in 0..=4 {
            match &self.token.kind {
                TokenKind::Colon => {
                    self.bump();
                    is_slice = true;
                    colons += 1;
                    slot += 1;
                    if colons > 2 {
                        self.token_error(&["expression", "]"]);
                    }
                    consecutive -= 1;
                }
                TokenKind::CloseBracket => break,
                _ => {
                    if !is_slice && round == 1 {
                        self.error_here("a list should have only one expr");
                    }
                    let e = self.parse_expr();
                    if let Some(place) = exprs.get_mut(slot) {
                        *place = Some(e);
                    }
                    consecutive += 1;
                    if consecutive > 1 {
                        self.error_here("consecutive exprs found");
                    }
                }
            }
        }
        if self.is(&TokenKind::CloseBracket) {
            self.bump();
        } else {
            self.token_error(&["]"]);
        }
        let [first, second, third] = exprs;
        let subscript = if is_slice {
            Subscript {
                value,
                index: None,
                lower: first,
                upper: second,
                step: third,
                has_question,
            }
        } else {
            if first.is_none() {
                let got = self.token.kind.describe();
                self.error_here(format!("expected expression got {got}"));
            }
            Subscript {
                value,
                index: first,
                lower: None,
                upper: None,
                step: None,
                has_question,
            }
        };
        self.boxed(Expr::Subscript(subscript), lo)
    }

    /// Identifiers, literals, lambdas, quantifiers, schema expressions and
    /// bracketed expressions.
    fn parse_operand_expr(&mut self) -> NodeRef<Expr> {
        let lo = self.token.clone();
        match &self.token.kind {
            TokenKind::Ident(name) => match &**name {
                "None" => self.parse_constant(NameConstant::None),
                "Undefined" => self.parse_constant(NameConstant::Undefined),
                "True" => self.parse_constant(NameConstant::True),
                "False" => self.parse_constant(NameConstant::False),
                "lambda" => self.parse_lambda_expr(),
                "all" | "any" | "map" | "filter" => self.parse_quant_expr(),
                _ => {
                    let ident = self.parse_identifier();
                    match &self.token.kind {
                        TokenKind::OpenBrace => self.parse_schema_expr(ident, vec![], vec![], &lo),
                        TokenKind::OpenParen => {
                            let func = Box::new(Node::new(
                                Expr::Identifier(ident.node.clone()),
                                ident.span,
                            ));
                            let call = self.parse_call(func);
                            if self.is(&TokenKind::OpenBrace) {
                                self.parse_schema_expr(ident, call.args, call.keywords, &lo)
                            } else {
                                self.boxed(Expr::Call(call), &lo)
                            }
                        }
                        _ => Box::new(Node::new(Expr::Identifier(ident.node), ident.span)),
                    }
                }
            },
            TokenKind::Int { .. } | TokenKind::Float(_) => self.parse_number(),
            TokenKind::Str(_) => self.parse_string_expr(),
            TokenKind::OpenParen => self.parse_paren_expr(),
            TokenKind::OpenBracket => self.parse_list_expr(true),
            TokenKind::OpenBrace => self.parse_config_expr(),
            _ => {
                self.token_error(OPERAND_START);
                self.missing_expr()
            }
        }
    }

    fn parse_constant(&mut self, value: NameConstant) -> NodeRef<Expr> {
        let lo = self.token.clone();
        self.bump();
        self.boxed(Expr::NameConstantLit(NameConstantLit { value }), &lo)
    }

    fn parse_number(&mut self) -> NodeRef<Expr> {
        let lo = self.token.clone();
        let lit = match self.token.kind.clone() {
            TokenKind::Int { text, suffix } => match parse_int(&text) {
                Some(v) => NumberLit {
                    binary_suffix: suffix,
                    value: NumberLitValue::Int(v),
                },
                None => {
                    self.token_error(&["int"]);
                    NumberLit {
                        binary_suffix: suffix,
                        value: NumberLitValue::Int(0),
                    }
                }
            },
            TokenKind::Float(text) => match text.replace('_', "").parse::<f64>() {
                Ok(v) => NumberLit {
                    binary_suffix: None,
                    value: NumberLitValue::Float(v),
                },
                Err(_) => {
                    self.token_error(&["float"]);
                    NumberLit {
                        binary_suffix: None,
                        value: NumberLitValue::Float(0.0),
                    }
                }
            },
            _ => {
                self.token_error(&["int", "float"]);
                NumberLit {
                    binary_suffix: None,
                    value: NumberLitValue::Int(0),
                }
            }
        };
        self.bump();
        self.boxed(Expr::NumberLit(lit), &lo)
    }

    fn parse_paren_expr(&mut self) -> NodeRef<Expr> {
        let lo = self.token.clone();
        self.bump();
        let expr = self.parse_expr();
        if self.is(&TokenKind::CloseParen) {
            self.bump();
        } else {
            self.token_error(&[")"]);
        }
        self.boxed(Expr::Paren(ParenExpr { expr }), &lo)
    }

    /// `all x in xs { test }`, `map k, v in d { … if … }`
    fn parse_quant_expr(&mut self) -> NodeRef<Expr> {
        let lo = self.token.clone();
        let op = match &self.token.kind {
            TokenKind::Ident(n) if &**n == "all" => QuantOperation::All,
            TokenKind::Ident(n) if &**n == "any" => QuantOperation::Any,
            TokenKind::Ident(n) if &**n == "filter" => QuantOperation::Filter,
            _ => QuantOperation::Map,
        };
        self.bump();
        let mut variables = vec![self.parse_identifier()];
        if self.is(&TokenKind::Comma) {
            self.bump();
            variables.push(self.parse_identifier());
        }
        if self.is_kw("in") {
            self.bump();
        } else {
            self.token_error(&["in"]);
        }
        let target = self.parse_quant_target();
        if self.is(&TokenKind::OpenBrace) {
            self.bump();
        } else {
            self.token_error(&["{"]);
        }
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
        let test = self.parse_simple_expr();
        let if_cond = if self.is_kw("if") {
            self.bump();
            Some(self.parse_expr())
        } else {
            None
        };
        if has_newline {
            if self.is(&TokenKind::Newline) {
                self.skip_newlines();
            } else {
                self.token_error(&["newline"]);
            }
            self.validate_dedent();
            if self.is_valid_dedent() {
                self.bump();
            } else {
                self.token_error(&["dedent"]);
            }
        }
        if self.is(&TokenKind::CloseBrace) {
            self.bump();
        } else {
            self.token_error(&["}"]);
        }
        self.boxed(
            Expr::Quant(QuantExpr {
                target,
                variables,
                op,
                test,
                if_cond,
            }),
            &lo,
        )
    }

    /// What a quantifier iterates: a name with selectors and subscripts,
    /// a string, or a list or config literal.
    fn parse_quant_target(&mut self) -> NodeRef<Expr> {
        let lo = self.token.clone();
        match &self.token.kind {
            TokenKind::Ident(name) => {
                if matches!(
                    &**name,
                    "None" | "Undefined" | "lambda" | "any" | "all" | "map" | "filter"
                ) {
                    self.token_error(&[
                        "None",
                        "Undefined",
                        "lambda",
                        "any",
                        "all",
                        "map",
                        "filter",
                    ]);
                    return self.missing_expr();
                }
                let ident = self.parse_identifier();
                let mut operand = Box::new(Node::new(Expr::Identifier(ident.node), ident.span));
                let mut levels = 0;
                loop {
                    let is_suffix = match &self.token.kind {
                        TokenKind::Dot | TokenKind::OpenBracket => true,
                        TokenKind::Question => {
                            matches!(self.peek(), TokenKind::Dot | TokenKind::OpenBracket)
                        }
                        _ => false,
                    };
                    if !is_suffix || !self.enter() {
                        break;
                    }
                    levels += 1;
                    operand = match &self.token.kind {
                        TokenKind::Dot => self.parse_selector_expr(operand, &lo),
                        TokenKind::Question if matches!(self.peek(), TokenKind::Dot) => {
                            self.parse_selector_expr(operand, &lo)
                        }
                        _ => self.parse_subscript_expr(operand, &lo),
                    };
                }
                self.leave_weighted(levels);
                operand
            }
            TokenKind::Str(_) => self.parse_string_expr(),
            TokenKind::OpenBracket => self.parse_list_expr(true),
            TokenKind::OpenBrace => self.parse_config_expr(),
            _ => {
                self.token_error(&["identifier", "literal"]);
                self.missing_expr()
            }
        }
    }

    /// `Name {…}` or `Name(args) {…}` once the name (and arguments) are read.
    pub(super) fn parse_schema_expr(
        &mut self,
        name: Node<Identifier>,
        args: Vec<Node<Expr>>,
        kwargs: Vec<Node<Keyword>>,
        lo: &Token,
    ) -> NodeRef<Expr> {
        let schema = self.parse_schema_expr_node(name, args, kwargs, lo);
        Box::new(Node::new(Expr::Schema(schema.node), schema.span))
    }

    pub(super) fn parse_schema_expr_node(
        &mut self,
        name: Node<Identifier>,
        args: Vec<Node<Expr>>,
        kwargs: Vec<Node<Keyword>>,
        lo: &Token,
    ) -> Node<SchemaExpr> {
        let config = self.parse_config_expr();
        self.node(
            SchemaExpr {
                name,
                args,
                kwargs,
                config,
            },
            lo,
        )
    }

    /// `lambda x, y: int = 1 -> T { stmts }`
    fn parse_lambda_expr(&mut self) -> NodeRef<Expr> {
        let lo = self.token.clone();
        self.bump_kw("lambda");
        // `lambda {x: int} -> T {…}`: braces around the parameters.
        let mut braced_params = false;
        if self.is(&TokenKind::OpenBrace) {
            let mut depth = 1usize;
            let mut n = 1;
            loop {
                match self.peek_n(n) {
                    TokenKind::OpenBrace => depth += 1,
                    TokenKind::CloseBrace => {
                        depth -= 1;
                        if depth == 0 {
                            braced_params = matches!(self.peek_n(n + 1), TokenKind::Arrow);
                            break;
                        }
                    }
                    TokenKind::Eof => break,
                    _ => {}
                }
                n += 1;
            }
        }
        let mut args = None;
        if braced_params {
            args = self.parse_parameters(
                &[TokenKind::OpenBrace],
                &[TokenKind::CloseBrace],
                true,
                true,
            );
        } else if !matches!(
            self.token.kind,
            TokenKind::Arrow | TokenKind::OpenBrace | TokenKind::OpenParen | TokenKind::OpenBracket
        ) {
            args =
                self.parse_parameters(&[], &[TokenKind::Arrow, TokenKind::OpenBrace], false, false);
        }
        let return_ty = if self.is(&TokenKind::Arrow) {
            self.bump();
            Some(*self.parse_type_annotation())
        } else {
            None
        };
        self.bump_token(TokenKind::OpenBrace);
        let has_newline = if self.is(&TokenKind::Newline) {
            self.skip_newlines();
            self.clean_all_indentations();
            true
        } else {
            false
        };
        let mut body = Vec::new();
        loop {
            let marker = self.mark();
            self.clean_all_indentations();
            if matches!(self.token.kind, TokenKind::CloseBrace | TokenKind::Eof) {
                break;
            }
            if let Some(stmt) = self.parse_stmt() {
                body.push(stmt);
                self.skip_newlines();
            } else {
                self.bump();
            }
            if self.stuck(marker) {
                break;
            }
        }
        if has_newline {
            self.clean_all_dedent();
        }
        self.bump_token(TokenKind::CloseBrace);
        self.boxed(
            Expr::Lambda(LambdaExpr {
                args,
                body,
                return_ty,
            }),
            &lo,
        )
    }

    /// `a` or `a.b.c`
    pub(super) fn parse_identifier(&mut self) -> Node<Identifier> {
        let lo = self.token.clone();
        let mut names = Vec::new();
        match &self.token.kind {
            TokenKind::Ident(name) => {
                let name = Self::ident_name(name);
                names.push(Node::new(name, self.span(self.token.lo, self.token.hi)));
                self.bump();
            }
            _ => {
                self.token_error(&["identifier"]);
                let at = self.span(self.token.lo, self.token.lo);
                return Node::new(
                    Identifier {
                        names: vec![Node::new(String::new(), at)],
                    },
                    at,
                );
            }
        }
        while self.is(&TokenKind::Dot) {
            self.bump();
            match &self.token.kind {
                TokenKind::Ident(name) => {
                    let name = Self::ident_name(name);
                    names.push(Node::new(name, self.span(self.token.lo, self.token.hi)));
                    self.bump();
                }
                _ => {
                    self.token_error(&["identifier"]);
                    let at = self.span(self.token.lo, self.token.lo);
                    names.push(Node::new(String::new(), at));
                }
            }
        }
        self.node(Identifier { names }, &lo)
    }

    /// An expression that must be a name (`type Name = …`, `for Host`).
    pub(super) fn expr_as_identifier(&mut self, expr: Node<Expr>, lo: &Token) -> Node<Identifier> {
        match expr.node {
            Expr::Identifier(ident) => Node::new(ident, expr.span),
            _ => {
                self.error_at("expected identifier", lo.lo, lo.hi);
                Node::new(
                    Identifier {
                        names: vec![Node::new(String::new(), expr.span)],
                    },
                    expr.span,
                )
            }
        }
    }

    /// An assignment target: a name followed by `.attr` and `[index]`.
    pub(super) fn expr_as_target(&self, expr: &Node<Expr>) -> Result<Node<Target>, String> {
        let mut paths = Vec::new();
        Self::target_paths(expr, &mut paths)?;
        let mut paths = paths.into_iter();
        match paths.next() {
            Some(MemberOrIndex::Member(name)) => Ok(Node::new(
                Target {
                    name,
                    paths: paths.collect(),
                },
                expr.span,
            )),
            _ => Err(format!(
                "'{}' is an illegal expression for assignment",
                expr_name(&expr.node)
            )),
        }
    }

    fn target_paths(expr: &Node<Expr>, out: &mut Vec<MemberOrIndex>) -> Result<(), String> {
        let name = expr_name(&expr.node);
        match &expr.node {
            Expr::Identifier(ident) => {
                out.extend(ident.names.iter().cloned().map(MemberOrIndex::Member));
                Ok(())
            }
            Expr::Selector(sel) => {
                if sel.has_question {
                    return Err(format!(
                        "'{name}' is an illegal expression for assignment, because the left-hand side of an assignment expression may not be an optional attribute access."
                    ));
                }
                Self::target_paths(&sel.value, out)?;
                out.extend(
                    sel.attr
                        .node
                        .names
                        .iter()
                        .cloned()
                        .map(MemberOrIndex::Member),
                );
                Ok(())
            }
            Expr::Subscript(sub) => {
                if sub.has_question {
                    return Err(format!(
                        "'{name}' is an illegal expression for assignment, because the left-hand side of an assignment expression may not be an optional subscript access."
                    ));
                }
                Self::target_paths(&sub.value, out)?;
                match &sub.index {
                    Some(index) => {
                        out.push(MemberOrIndex::Index(index.clone()));
                        Ok(())
                    }
                    None => Err(format!(
                        "'{name}' is an illegal expression for assignment, because the left-hand side of an assignment expression may not be a slice access."
                    )),
                }
            }
            _ => Err(format!("'{name}' is an illegal expression for assignment")),
        }
    }
}

/// KCL's name for an expression's kind, as its messages print it.
pub(crate) fn expr_name(expr: &Expr) -> &'static str {
    match expr {
        Expr::Identifier(_) => "IdentifierExpression",
        Expr::Unary(_) => "UnaryExpression",
        Expr::Binary(_) => "BinaryExpression",
        Expr::If(_) => "IfExpression",
        Expr::Selector(_) => "SelectorExpression",
        Expr::Call(_) => "CallExpression",
        Expr::Paren(_) => "ParenExpression",
        Expr::Quant(_) => "QuantExpression",
        Expr::List(_) => "ListExpression",
        Expr::ListIfItem(_) => "ListIfItemExpression",
        Expr::ListComp(_) => "ListCompExpression",
        Expr::Starred(_) => "StarredExpression",
        Expr::DictComp(_) => "DictCompExpression",
        Expr::ConfigIfEntry(_) => "ConfigIfEntryExpression",
        Expr::Schema(_) => "SchemaExpression",
        Expr::Config(_) => "ConfigExpression",
        Expr::Lambda(_) => "LambdaExpression",
        Expr::Subscript(_) => "SubscriptExpression",
        Expr::Compare(_) => "CompareExpression",
        Expr::NumberLit(_) => "NumberLitExpression",
        Expr::StringLit(_) => "StringLitExpression",
        Expr::NameConstantLit(_) => "NameConstantLitExpression",
        Expr::JoinedString(_) => "JoinedStringExpression",
        Expr::FormattedValue(_) => "FormattedValueExpression",
        Expr::Missing => "MissingExpression",
    }
}

/// An integer literal's value; `None` when it does not fit in 64 bits.
pub(crate) fn parse_int(text: &str) -> Option<i64> {
    let digits: String = text.chars().filter(|&c| c != '_').collect();
    let (radix, body) = match digits.get(..2) {
        Some("0x" | "0X") => (16, &digits[2..]),
        Some("0o" | "0O") => (8, &digits[2..]),
        Some("0b" | "0B") => (2, &digits[2..]),
        _ if digits.len() > 1 && digits.starts_with('0') => (8, &digits[1..]),
        _ => (10, digits.as_str()),
    };
    if body.is_empty() {
        return Some(0);
    }
    i64::from_str_radix(body, radix).ok()
}
