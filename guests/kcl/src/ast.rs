//! The syntax tree the parser builds and the checker and evaluator walk.
//!
//! It follows KCL's own tree (`kclvm_ast`) closely, so that positions in
//! errors land where KCL puts them: every node carries the span of its
//! source text.

use crate::source::Span;

/// A node of the tree with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Node<T> {
    pub node: T,
    pub span: Span,
}

impl<T> Node<T> {
    pub fn new(node: T, span: Span) -> Node<T> {
        Node { node, span }
    }
}

pub type NodeRef<T> = Box<Node<T>>;

/// The package of the files a program runs.
pub const MAIN_PKG: &str = "__main__";

/// One parsed file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Module {
    /// The file's path as given to the parser.
    pub filename: String,
    /// The package the file belongs to (`__main__` for the files run).
    pub pkg: String,
    /// The module's docstring: a string literal as its first statement.
    pub doc: Option<Node<String>>,
    pub body: Vec<Node<Stmt>>,
}

// A schema statement is much larger than the others, but statements are
// few and are walked in place; boxing it would change every match on it.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Stmt {
    /// `type Name = <type>`
    TypeAlias(TypeAliasStmt),
    /// An expression on its own line (its values are not exported, except
    /// a schema instance or config at the top level, which KCL outputs).
    Expr(ExprStmt),
    /// `name: Schema {...}`
    Unification(UnificationStmt),
    /// `a = b = value`, `a: type = value`, `a.b[0] = value`
    Assign(AssignStmt),
    /// `a += value`, `a -= value`, …
    AugAssign(AugAssignStmt),
    /// `assert test, msg` or `assert test if cond, msg`
    Assert(AssertStmt),
    If(IfStmt),
    Import(ImportStmt),
    /// An attribute declaration in a schema body: `name?: type = value`.
    SchemaAttr(SchemaAttr),
    Schema(SchemaStmt),
    Rule(RuleStmt),
}

#[derive(Debug, Clone, PartialEq)]
pub struct TypeAliasStmt {
    pub type_name: Node<Identifier>,
    /// The type's source text, as written after `=`.
    pub type_value: Node<String>,
    pub ty: Node<Type>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ExprStmt {
    pub exprs: Vec<Node<Expr>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct UnificationStmt {
    pub target: Node<Identifier>,
    /// Always a `SchemaExpr`.
    pub value: Node<SchemaExpr>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AssignStmt {
    pub targets: Vec<Node<Target>>,
    pub value: NodeRef<Expr>,
    pub ty: Option<Node<Type>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AugAssignStmt {
    pub target: Node<Target>,
    pub value: NodeRef<Expr>,
    pub op: AugOp,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AssertStmt {
    pub test: NodeRef<Expr>,
    pub if_cond: Option<NodeRef<Expr>>,
    pub msg: Option<NodeRef<Expr>>,
}

/// `if cond: body elif …: … else: orelse`; an `elif` is an `IfStmt` alone in
/// `orelse`.
#[derive(Debug, Clone, PartialEq)]
pub struct IfStmt {
    pub cond: NodeRef<Expr>,
    pub body: Vec<Node<Stmt>>,
    pub orelse: Vec<Node<Stmt>>,
}

/// `import a.b.c as d`
#[derive(Debug, Clone, PartialEq)]
pub struct ImportStmt {
    /// The path as written, dots included (`.sub`, `..pkg.mod`).
    pub rawpath: Node<String>,
    /// The name the module is bound to: `asname`, else the last part of
    /// the path.
    pub name: String,
    pub asname: Option<Node<String>>,
    /// The package the import resolves to (`pkg.sub`, a system module's
    /// name, an external package's `name.sub`), as the loader found it;
    /// empty until a program is loaded.
    pub pkgpath: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SchemaStmt {
    pub doc: Option<Node<String>>,
    pub name: Node<String>,
    /// `schema A(Parent):`
    pub parent_name: Option<Node<Identifier>>,
    /// `schema AMixin for AProtocol:`
    pub for_host_name: Option<Node<Identifier>>,
    /// The name ends in `Mixin`.
    pub is_mixin: bool,
    /// Declared with `protocol` instead of `schema`.
    pub is_protocol: bool,
    /// `schema A[a, b: int = 1]:`
    pub args: Option<Node<Arguments>>,
    pub mixins: Vec<Node<Identifier>>,
    pub body: Vec<Node<Stmt>>,
    pub decorators: Vec<Node<CallExpr>>,
    pub checks: Vec<Node<CheckExpr>>,
    pub index_signature: Option<Node<SchemaIndexSignature>>,
}

/// `[name: str]: int = default` or `[...str]: int`
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaIndexSignature {
    pub key_name: Option<Node<String>>,
    pub value: Option<NodeRef<Expr>>,
    /// `[...str]`: the signature applies to every key, also declared ones.
    pub any_other: bool,
    pub key_ty: Node<Type>,
    pub value_ty: Node<Type>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SchemaAttr {
    pub doc: String,
    pub name: Node<String>,
    /// `=` or `|=` (`AugOp::BitOr`); `None` without a default.
    pub op: Option<AugOp>,
    pub value: Option<NodeRef<Expr>>,
    pub is_optional: bool,
    pub decorators: Vec<Node<CallExpr>>,
    pub ty: Node<Type>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RuleStmt {
    pub doc: Option<Node<String>>,
    pub name: Node<String>,
    pub parent_rules: Vec<Node<Identifier>>,
    pub decorators: Vec<Node<CallExpr>>,
    pub checks: Vec<Node<CheckExpr>>,
    pub args: Option<Node<Arguments>>,
    pub for_host_name: Option<Node<Identifier>>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Identifier(Identifier),
    Unary(UnaryExpr),
    Binary(BinaryExpr),
    /// `body if cond else orelse`
    If(IfExpr),
    /// `value.attr`, `value?.attr`
    Selector(SelectorExpr),
    Call(CallExpr),
    Paren(ParenExpr),
    /// `all x in xs { test }`, `any`, `map`, `filter`
    Quant(QuantExpr),
    List(ListExpr),
    /// `if cond: a, b elif …` inside a list literal.
    ListIfItem(ListIfItemExpr),
    ListComp(ListComp),
    /// `*value` in a list, `**value` in a config (as a `ConfigEntry`
    /// without a key).
    Starred(StarredExpr),
    DictComp(DictComp),
    /// `if cond: k: v …` inside a config literal.
    ConfigIfEntry(ConfigIfEntryExpr),
    /// `Name {…}`, `Name(args) {…}`, `pkg.Name {…}`
    Schema(SchemaExpr),
    Config(ConfigExpr),
    Lambda(LambdaExpr),
    /// `value[index]`, `value[lower:upper:step]`, `value?[index]`
    Subscript(Subscript),
    /// `a < b <= c`, `a in b`, `a is not b`
    Compare(Compare),
    NumberLit(NumberLit),
    StringLit(StringLit),
    NameConstantLit(NameConstantLit),
    /// A string with `${…}` interpolations.
    JoinedString(JoinedString),
    /// `${value: spec}` inside a `JoinedString`.
    FormattedValue(FormattedValue),
    /// What the parser leaves where an expression was expected and none
    /// was written, after it reported the error.
    Missing,
}

/// An assignment target: `name`, `name.attr`, `name[index]`, `name.a[0].b`.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub name: Node<String>,
    pub paths: Vec<MemberOrIndex>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum MemberOrIndex {
    Member(Node<String>),
    Index(NodeRef<Expr>),
}

/// `a` or `a.b.c`: a dotted name (a package member, or attributes read
/// from a variable).
#[derive(Debug, Clone, PartialEq)]
pub struct Identifier {
    pub names: Vec<Node<String>>,
}

impl Identifier {
    pub fn name(&self) -> String {
        // Nearly every name is one segment: no list of parts to join.
        if let [only] = self.names.as_slice() {
            return only.node.clone();
        }
        self.names
            .iter()
            .map(|n| n.node.as_str())
            .collect::<Vec<_>>()
            .join(".")
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct UnaryExpr {
    pub op: UnaryOp,
    pub operand: NodeRef<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BinaryExpr {
    pub left: NodeRef<Expr>,
    pub op: BinOp,
    pub right: NodeRef<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct IfExpr {
    pub body: NodeRef<Expr>,
    pub cond: NodeRef<Expr>,
    pub orelse: NodeRef<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SelectorExpr {
    pub value: NodeRef<Expr>,
    pub attr: Node<Identifier>,
    /// `?.`
    pub has_question: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CallExpr {
    pub func: NodeRef<Expr>,
    pub args: Vec<Node<Expr>>,
    pub keywords: Vec<Node<Keyword>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ParenExpr {
    pub expr: NodeRef<Expr>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantOperation {
    All,
    Any,
    Filter,
    Map,
}

#[derive(Debug, Clone, PartialEq)]
pub struct QuantExpr {
    pub target: NodeRef<Expr>,
    /// One or two loop variables (`k, v` over a dict, `i, x` over a list).
    pub variables: Vec<Node<Identifier>>,
    pub op: QuantOperation,
    pub test: NodeRef<Expr>,
    pub if_cond: Option<NodeRef<Expr>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ListExpr {
    pub elts: Vec<Node<Expr>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ListIfItemExpr {
    pub if_cond: NodeRef<Expr>,
    pub exprs: Vec<Node<Expr>>,
    /// Another `ListIfItem` for `elif`, or a `List` for `else`.
    pub orelse: Option<NodeRef<Expr>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ListComp {
    pub elt: NodeRef<Expr>,
    pub generators: Vec<Node<CompClause>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StarredExpr {
    pub value: NodeRef<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DictComp {
    pub entry: ConfigEntry,
    pub generators: Vec<Node<CompClause>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConfigIfEntryExpr {
    pub if_cond: NodeRef<Expr>,
    pub items: Vec<Node<ConfigEntry>>,
    /// Another `ConfigIfEntry` for `elif`, or a `Config` for `else`.
    pub orelse: Option<NodeRef<Expr>>,
}

/// `for a, b in iter if cond if cond2`
#[derive(Debug, Clone, PartialEq)]
pub struct CompClause {
    pub targets: Vec<Node<Identifier>>,
    pub iter: NodeRef<Expr>,
    pub ifs: Vec<Node<Expr>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SchemaExpr {
    pub name: Node<Identifier>,
    pub args: Vec<Node<Expr>>,
    pub kwargs: Vec<Node<Keyword>>,
    /// A `Config` (or `ConfigIfEntry`-bearing config).
    pub config: NodeRef<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConfigExpr {
    pub items: Vec<Node<ConfigEntry>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConfigEntryOperation {
    /// `:`
    Union,
    /// `=`
    Override,
    /// `+=`
    Insert,
}

impl ConfigEntryOperation {
    pub fn symbol(self) -> &'static str {
        match self {
            ConfigEntryOperation::Union => ":",
            ConfigEntryOperation::Override => "=",
            ConfigEntryOperation::Insert => "+=",
        }
    }
}

/// `key: value`, `key = value`, `key += value`, `a.b.c: value`,
/// `**value` (no key), `if …` (no key, the value is a `ConfigIfEntry`).
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigEntry {
    pub key: Option<NodeRef<Expr>>,
    pub value: NodeRef<Expr>,
    pub operation: ConfigEntryOperation,
}

/// A line of a schema's or rule's `check:` block.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckExpr {
    pub test: NodeRef<Expr>,
    pub if_cond: Option<NodeRef<Expr>>,
    pub msg: Option<NodeRef<Expr>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LambdaExpr {
    pub args: Option<Node<Arguments>>,
    pub body: Vec<Node<Stmt>>,
    pub return_ty: Option<Node<Type>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Subscript {
    pub value: NodeRef<Expr>,
    pub index: Option<NodeRef<Expr>>,
    pub lower: Option<NodeRef<Expr>>,
    pub upper: Option<NodeRef<Expr>>,
    pub step: Option<NodeRef<Expr>>,
    /// `?[`
    pub has_question: bool,
}

/// `name=value` in a call.
#[derive(Debug, Clone, PartialEq)]
pub struct Keyword {
    pub arg: Node<Identifier>,
    pub value: Option<NodeRef<Expr>>,
}

/// Parameters of a lambda, schema or rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Arguments {
    pub args: Vec<Node<Identifier>>,
    pub defaults: Vec<Option<NodeRef<Expr>>>,
    pub ty_list: Vec<Option<Node<Type>>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Compare {
    pub left: NodeRef<Expr>,
    pub ops: Vec<CmpOp>,
    pub comparators: Vec<Node<Expr>>,
}

/// The unit suffix of a number literal (`1Ki`, `2M`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumberBinarySuffix {
    N,
    U,
    M,
    K,
    KUpper,
    MUpper,
    G,
    T,
    P,
    Ki,
    Mi,
    Gi,
    Ti,
    Pi,
}

impl NumberBinarySuffix {
    // Named as the evaluator and parser call it; `FromStr` would need an
    // error type for what is just "not a suffix".
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(s: &str) -> Option<NumberBinarySuffix> {
        Some(match s {
            "n" => NumberBinarySuffix::N,
            "u" => NumberBinarySuffix::U,
            "m" => NumberBinarySuffix::M,
            "k" => NumberBinarySuffix::K,
            "K" => NumberBinarySuffix::KUpper,
            "M" => NumberBinarySuffix::MUpper,
            "G" => NumberBinarySuffix::G,
            "T" => NumberBinarySuffix::T,
            "P" => NumberBinarySuffix::P,
            "Ki" => NumberBinarySuffix::Ki,
            "Mi" => NumberBinarySuffix::Mi,
            "Gi" => NumberBinarySuffix::Gi,
            "Ti" => NumberBinarySuffix::Ti,
            "Pi" => NumberBinarySuffix::Pi,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            NumberBinarySuffix::N => "n",
            NumberBinarySuffix::U => "u",
            NumberBinarySuffix::M => "m",
            NumberBinarySuffix::K => "k",
            NumberBinarySuffix::KUpper => "K",
            NumberBinarySuffix::MUpper => "M",
            NumberBinarySuffix::G => "G",
            NumberBinarySuffix::T => "T",
            NumberBinarySuffix::P => "P",
            NumberBinarySuffix::Ki => "Ki",
            NumberBinarySuffix::Mi => "Mi",
            NumberBinarySuffix::Gi => "Gi",
            NumberBinarySuffix::Ti => "Ti",
            NumberBinarySuffix::Pi => "Pi",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NumberLitValue {
    Int(i64),
    Float(f64),
}

#[derive(Debug, Clone, PartialEq)]
pub struct NumberLit {
    pub binary_suffix: Option<NumberBinarySuffix>,
    pub value: NumberLitValue,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StringLit {
    /// Triple-quoted.
    pub is_long_string: bool,
    /// The literal as written, quotes and prefixes included.
    pub raw_value: String,
    /// The value, escapes resolved.
    pub value: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameConstant {
    True,
    False,
    None,
    Undefined,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NameConstantLit {
    pub value: NameConstant,
}

/// `"a ${b} c"`: `values` alternates `StringLit`s and `FormattedValue`s.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinedString {
    pub is_long_string: bool,
    pub values: Vec<Node<Expr>>,
    pub raw_value: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FormattedValue {
    pub is_long_string: bool,
    pub value: NodeRef<Expr>,
    /// What follows `:` inside `${…}` (`#json`, `#yaml`, or a format spec).
    pub format_spec: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    FloorDiv,
    LShift,
    RShift,
    BitXor,
    BitAnd,
    BitOr,
    And,
    Or,
    /// `value as Type`: the right side is an `Identifier` naming the type.
    As,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::Pow => "**",
            BinOp::FloorDiv => "//",
            BinOp::LShift => "<<",
            BinOp::RShift => ">>",
            BinOp::BitXor => "^",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::As => "as",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AugOp {
    Assign,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    FloorDiv,
    LShift,
    RShift,
    BitXor,
    BitAnd,
    BitOr,
}

impl AugOp {
    pub fn symbol(self) -> &'static str {
        match self {
            AugOp::Assign => "=",
            AugOp::Add => "+=",
            AugOp::Sub => "-=",
            AugOp::Mul => "*=",
            AugOp::Div => "/=",
            AugOp::Mod => "%=",
            AugOp::Pow => "**=",
            AugOp::FloorDiv => "//=",
            AugOp::LShift => "<<=",
            AugOp::RShift => ">>=",
            AugOp::BitXor => "^=",
            AugOp::BitAnd => "&=",
            AugOp::BitOr => "|=",
        }
    }

    /// The binary operator an augmented assignment applies (`None` for `=`).
    pub fn bin_op(self) -> Option<BinOp> {
        Some(match self {
            AugOp::Assign => return None,
            AugOp::Add => BinOp::Add,
            AugOp::Sub => BinOp::Sub,
            AugOp::Mul => BinOp::Mul,
            AugOp::Div => BinOp::Div,
            AugOp::Mod => BinOp::Mod,
            AugOp::Pow => BinOp::Pow,
            AugOp::FloorDiv => BinOp::FloorDiv,
            AugOp::LShift => BinOp::LShift,
            AugOp::RShift => BinOp::RShift,
            AugOp::BitXor => BinOp::BitXor,
            AugOp::BitAnd => BinOp::BitAnd,
            AugOp::BitOr => BinOp::BitOr,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    /// `+`
    UAdd,
    /// `-`
    USub,
    /// `~`
    Invert,
    /// `not`
    Not,
}

impl UnaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            UnaryOp::UAdd => "+",
            UnaryOp::USub => "-",
            UnaryOp::Invert => "~",
            UnaryOp::Not => "not",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtE,
    Gt,
    GtE,
    Is,
    In,
    NotIn,
    Not,
    IsNot,
}

impl CmpOp {
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::NotEq => "!=",
            CmpOp::Lt => "<",
            CmpOp::LtE => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtE => ">=",
            CmpOp::Is => "is",
            CmpOp::In => "in",
            CmpOp::NotIn => "not in",
            CmpOp::Not => "not",
            CmpOp::IsNot => "is not",
        }
    }
}

/// A type annotation.
#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    Any,
    /// A schema or type alias by name (`Person`, `pkg.Person`).
    Named(Identifier),
    Basic(BasicType),
    /// `[T]`; `None` inner type for `[]`.
    List(Option<Box<Node<Type>>>),
    /// `{K:V}`; either side may be omitted (`{str:}`).
    Dict {
        key: Option<Box<Node<Type>>>,
        value: Option<Box<Node<Type>>>,
    },
    Union(Vec<Node<Type>>),
    Literal(LiteralType),
    /// `(int, str) -> bool`
    Function {
        params: Vec<Node<Type>>,
        ret: Option<Box<Node<Type>>>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BasicType {
    Bool,
    Int,
    Float,
    Str,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LiteralType {
    Bool(bool),
    /// An integer literal type, with its unit suffix (`1Ki`).
    Int(i64, Option<NumberBinarySuffix>),
    Float(f64),
    Str(String),
    None,
    Undefined,
}
