//! Type annotations: `int`, `[T]`, `{K:V}`, `A | B`, `"lit"`, `(A) -> B`,
//! schema names.

use super::Parser;
use super::expr::parse_int;
use crate::ast::*;
use crate::lexer::TokenKind;

/// A name that is a basic type (`str` in `[str]: int`) as that type.
pub(super) fn named_or_basic(ident: Identifier) -> Type {
    match ident.names.as_slice() {
        [one] => match one.node.as_str() {
            "bool" => Type::Basic(BasicType::Bool),
            "int" => Type::Basic(BasicType::Int),
            "float" => Type::Basic(BasicType::Float),
            "str" => Type::Basic(BasicType::Str),
            "any" => Type::Any,
            _ => Type::Named(ident),
        },
        _ => Type::Named(ident),
    }
}

impl Parser<'_> {
    /// `type: type_element (| type_element)*`
    pub(super) fn parse_type_annotation(&mut self) -> Box<Node<Type>> {
        let lo = self.token.clone();
        if !self.enter() {
            let at = self.span(self.token.lo, self.token.hi);
            if !self.at_eof() {
                self.bump();
            }
            return Box::new(Node::new(Type::Any, at));
        }
        let mut elements = vec![*self.parse_type_element()];
        while self.is(&TokenKind::Pipe) {
            self.bump();
            elements.push(*self.parse_type_element());
        }
        self.leave();
        if elements.len() == 1 {
            Box::new(elements.swap_remove(0))
        } else {
            self.boxed(Type::Union(elements), &lo)
        }
    }

    fn parse_type_element(&mut self) -> Box<Node<Type>> {
        let lo = self.token.clone();
        let ty = match &self.token.kind {
            TokenKind::Ident(name) => match &**name {
                "True" | "False" | "None" | "Undefined" => {
                    let lit = match &**name {
                        "True" => LiteralType::Bool(true),
                        "False" => LiteralType::Bool(false),
                        "None" => LiteralType::None,
                        _ => LiteralType::Undefined,
                    };
                    self.bump();
                    Type::Literal(lit)
                }
                _ => {
                    let ident = self.parse_identifier();
                    return Box::new(Node::new(named_or_basic(ident.node), ident.span));
                }
            },
            TokenKind::Int { text, suffix } => {
                let lit = LiteralType::Int(parse_int(text).unwrap_or(0), *suffix);
                self.bump();
                Type::Literal(lit)
            }
            TokenKind::Float(text) => {
                let lit = LiteralType::Float(text.replace('_', "").parse().unwrap_or(0.0));
                self.bump();
                Type::Literal(lit)
            }
            TokenKind::Str(s) => {
                let lit = LiteralType::Str(s.value.clone());
                self.bump();
                Type::Literal(lit)
            }
            TokenKind::OpenBracket => {
                self.bump();
                if self.is(&TokenKind::CloseBracket) {
                    self.bump();
                    Type::List(None)
                } else {
                    let inner = self.parse_type_annotation();
                    self.bump_token(TokenKind::CloseBracket);
                    Type::List(Some(inner))
                }
            }
            TokenKind::OpenBrace => {
                self.bump();
                let key = if self.is(&TokenKind::Colon) {
                    None
                } else {
                    Some(self.parse_type_annotation())
                };
                self.bump_token(TokenKind::Colon);
                let value = if self.is(&TokenKind::CloseBrace) {
                    None
                } else {
                    Some(self.parse_type_annotation())
                };
                self.bump_token(TokenKind::CloseBrace);
                Type::Dict { key, value }
            }
            TokenKind::OpenParen => {
                self.bump();
                let mut params = Vec::new();
                while !self.is(&TokenKind::CloseParen) && !self.at_eof() && self.has_next() {
                    let marker = self.mark();
                    params.push(*self.parse_type_annotation());
                    if self.is(&TokenKind::Comma) {
                        self.bump();
                    }
                    if self.stuck(marker) {
                        break;
                    }
                }
                self.bump_token(TokenKind::CloseParen);
                let ret = if self.is(&TokenKind::Arrow) {
                    self.bump();
                    Some(self.parse_type_annotation())
                } else {
                    None
                };
                Type::Function { params, ret }
            }
            _ => {
                self.token_error(&[
                    "any",
                    "bool",
                    "int",
                    "float",
                    "str",
                    "True",
                    "False",
                    "identifier",
                    "literal",
                    "[",
                    "{",
                    ")",
                ]);
                if !self.at_eof() {
                    self.bump();
                }
                Type::Any
            }
        };
        self.boxed(ty, &lo)
    }
}
