//! The checker on syntax trees built by hand (one statement a line), with
//! the messages real KCL 0.12.3 gives for the same programs.

use super::*;
use crate::ast::*;

fn sp(line: u32) -> Span {
    Span::new(0, line, 0, line, 1)
}

fn node<T>(line: u32, t: T) -> Node<T> {
    Node::new(t, sp(line))
}

fn ident(line: u32, name: &str) -> Identifier {
    Identifier {
        names: name.split('.').map(|n| node(line, n.to_string())).collect(),
    }
}

fn name(line: u32, n: &str) -> Node<Expr> {
    node(line, Expr::Identifier(ident(line, n)))
}

fn int(line: u32, v: i64) -> Node<Expr> {
    node(
        line,
        Expr::NumberLit(NumberLit {
            binary_suffix: None,
            value: NumberLitValue::Int(v),
        }),
    )
}

fn string(line: u32, v: &str) -> Node<Expr> {
    node(
        line,
        Expr::StringLit(StringLit {
            is_long_string: false,
            raw_value: format!("{v:?}"),
            value: v.to_string(),
        }),
    )
}

fn none(line: u32) -> Node<Expr> {
    node(
        line,
        Expr::NameConstantLit(NameConstantLit {
            value: NameConstant::None,
        }),
    )
}

fn binary(line: u32, left: Node<Expr>, op: BinOp, right: Node<Expr>) -> Node<Expr> {
    node(
        line,
        Expr::Binary(BinaryExpr {
            left: Box::new(left),
            op,
            right: Box::new(right),
        }),
    )
}

fn assign(line: u32, target: &str, ty: Option<Type>, value: Node<Expr>) -> Node<Stmt> {
    node(
        line,
        Stmt::Assign(AssignStmt {
            targets: vec![node(
                line,
                Target {
                    name: node(line, target.to_string()),
                    paths: vec![],
                },
            )],
            value: Box::new(value),
            ty: ty.map(|t| node(line, t)),
        }),
    )
}

fn attr(line: u32, n: &str, ty: Type, value: Option<Node<Expr>>) -> Node<Stmt> {
    node(
        line,
        Stmt::SchemaAttr(SchemaAttr {
            doc: String::new(),
            name: node(line, n.to_string()),
            op: value.as_ref().map(|_| AugOp::Assign),
            value: value.map(Box::new),
            is_optional: false,
            decorators: vec![],
            ty: node(line, ty),
        }),
    )
}

fn schema(line: u32, n: &str, args: Option<Arguments>, body: Vec<Node<Stmt>>) -> Node<Stmt> {
    node(
        line,
        Stmt::Schema(SchemaStmt {
            doc: None,
            name: node(line, n.to_string()),
            parent_name: None,
            for_host_name: None,
            is_mixin: n.ends_with("Mixin"),
            is_protocol: false,
            args: args.map(|a| node(line, a)),
            mixins: vec![],
            body,
            decorators: vec![],
            checks: vec![],
            index_signature: None,
        }),
    )
}

fn entry(line: u32, key: &str, value: Node<Expr>) -> Node<ConfigEntry> {
    node(
        line,
        ConfigEntry {
            key: Some(Box::new(name(line, key))),
            value: Box::new(value),
            operation: ConfigEntryOperation::Union,
        },
    )
}

fn instance(line: u32, n: &str, entries: Vec<Node<ConfigEntry>>) -> Node<Expr> {
    node(
        line,
        Expr::Schema(SchemaExpr {
            name: node(line, ident(line, n)),
            args: vec![],
            kwargs: vec![],
            config: Box::new(node(line, Expr::Config(ConfigExpr { items: entries }))),
        }),
    )
}

fn person_schema() -> Node<Stmt> {
    schema(
        1,
        "Person",
        None,
        vec![attr(2, "name", Type::Basic(BasicType::Str), None)],
    )
}

fn check_body(body: Vec<Node<Stmt>>) -> Vec<KclError> {
    let mut pkgs = IndexMap::new();
    pkgs.insert(
        MAIN_PKG.to_string(),
        vec![Module {
            filename: "main.k".to_string(),
            pkg: MAIN_PKG.to_string(),
            doc: None,
            body,
        }],
    );
    check_packages_all(&pkgs)
}

#[test]
fn errors_carry_kcl_kind_message_and_line() {
    let cases: Vec<(&str, Vec<Node<Stmt>>, ErrorKind, &str, u32)> = vec![
        (
            "an undefined name",
            vec![assign(
                1,
                "b",
                None,
                binary(1, name(1, "c"), BinOp::Add, int(1, 1)),
            )],
            ErrorKind::CompileError,
            "name 'c' is not defined",
            1,
        ),
        (
            "an undefined schema, with a suggestion",
            vec![
                person_schema(),
                assign(4, "p", None, instance(4, "Persn", vec![])),
            ],
            ErrorKind::CompileError,
            "name 'Persn' is not defined, did you mean '[\"Person\"]'?",
            4,
        ),
        (
            "a schema attribute of the wrong type",
            vec![
                person_schema(),
                assign(
                    4,
                    "p",
                    None,
                    instance(4, "Person", vec![entry(5, "name", int(5, 1))]),
                ),
            ],
            ErrorKind::TypeError,
            "expected str, got int(1)",
            5,
        ),
        (
            "a member the schema does not have",
            vec![
                person_schema(),
                assign(
                    4,
                    "p",
                    None,
                    instance(4, "Person", vec![entry(5, "nam", string(5, "a"))]),
                ),
            ],
            ErrorKind::CompileError,
            "Cannot add member 'nam' to schema 'Person', did you mean '[\"name\"]'?",
            5,
        ),
        (
            "an exported name assigned twice",
            vec![
                assign(1, "a", None, int(1, 1)),
                assign(2, "a", None, int(2, 2)),
            ],
            ErrorKind::ImmutableError,
            "Can not change the value of 'a', because it was declared immutable",
            2,
        ),
        (
            "a private name assigned a value of another type",
            vec![
                assign(1, "_a", None, int(1, 1)),
                assign(2, "_a", None, string(2, "s")),
            ],
            ErrorKind::TypeError,
            "expected int, got str(s)",
            2,
        ),
        (
            "an annotation the value does not fit",
            vec![assign(
                1,
                "_name",
                Some(Type::Basic(BasicType::Int)),
                string(1, "Green"),
            )],
            ErrorKind::TypeError,
            "expected int, got str(Green)",
            1,
        ),
        (
            "None in arithmetic",
            vec![assign(
                1,
                "b",
                None,
                binary(1, int(1, 1), BinOp::Add, none(1)),
            )],
            ErrorKind::TypeError,
            "unsupported operand type(s) for +: 'int(1)' and 'NoneType'",
            1,
        ),
        (
            "a conversion that cannot succeed",
            vec![assign(
                1,
                "a",
                None,
                binary(1, int(1, 1), BinOp::As, name(1, "str")),
            )],
            ErrorKind::TypeError,
            "Conversion of type 'int(1)' to type 'str' may be a mistake because neither type sufficiently overlaps with the other",
            1,
        ),
        (
            "a parameter without default after one with",
            vec![schema(
                1,
                "A",
                Some(Arguments {
                    args: vec![node(1, ident(1, "a1")), node(1, ident(1, "a2"))],
                    defaults: vec![Some(Box::new(int(1, 100))), None],
                    ty_list: vec![None, None],
                }),
                vec![],
            )],
            ErrorKind::IllegalParameterError,
            "non-default argument follows default argument",
            1,
        ),
    ];
    for (what, body, kind, message, line) in cases {
        let errors = check_body(body);
        let Some(first) = errors.first() else {
            panic!("{what}: no error");
        };
        assert_eq!(
            (
                first.kind,
                first.message.as_str(),
                first.span().map(|s| s.line)
            ),
            (kind, message, Some(line)),
            "{what}"
        );
    }
}

#[test]
fn programs_kcl_accepts_pass() {
    let cases: Vec<(&str, Vec<Node<Stmt>>)> = vec![
        (
            "a private name assigned twice",
            vec![
                assign(1, "_a", None, int(1, 1)),
                assign(2, "_a", None, int(2, 2)),
            ],
        ),
        (
            "a schema instance with its attribute",
            vec![
                person_schema(),
                assign(
                    4,
                    "p",
                    None,
                    instance(4, "Person", vec![entry(5, "name", string(5, "a"))]),
                ),
            ],
        ),
        (
            "a name a mixin leaves to its host",
            vec![schema(
                1,
                "NameMixin",
                None,
                vec![assign(2, "full", None, name(2, "first"))],
            )],
        ),
        (
            "an int where a float is declared",
            vec![assign(
                1,
                "f",
                Some(Type::Basic(BasicType::Float)),
                int(1, 1),
            )],
        ),
        (
            "a builtin call",
            vec![assign(
                1,
                "n",
                None,
                node(
                    1,
                    Expr::Call(CallExpr {
                        func: Box::new(name(1, "len")),
                        args: vec![string(1, "abc")],
                        keywords: vec![],
                    }),
                ),
            )],
        ),
    ];
    for (what, body) in cases {
        assert_eq!(check_body(body), vec![], "{what}");
    }
}

#[test]
fn relative_imports_resolve_from_the_importing_package() {
    let cases = [
        (MAIN_PKG, ".sub", "sub"),
        (MAIN_PKG, "pkg.mod", "pkg.mod"),
        ("a.b", ".c", "a.b.c"),
        ("a.b", "..c", "a.c"),
    ];
    for (pkg, raw, want) in cases {
        assert_eq!(import_pkgpath(pkg, raw), want, "{pkg} {raw}");
    }
}

#[test]
fn suggestions_follow_kcl() {
    let cases: [(&str, &[&str], &[&str]); 4] = [
        ("ErrOther", &["Other"], &["Other"]),
        ("PersonErr", &["Person", "print"], &["Person"]),
        ("nam", &["name", "age"], &["name"]),
        ("err_instances", &["instances"], &["instances"]),
    ];
    for (name, candidates, want) in cases {
        assert_eq!(
            suggestions(name, candidates.iter().copied()),
            want,
            "{name}"
        );
    }
}
