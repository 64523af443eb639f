use super::*;
use crate::ast::*;

fn parse(src: &str) -> ParseResult {
    parse_file(0, "main.k", "__main__", src)
}

fn messages(src: &str) -> Vec<String> {
    parse(src).errors.into_iter().map(|e| e.message).collect()
}

/// The value of `x = <expr>` written back with explicit parentheses.
fn shape(src: &str) -> String {
    let result = parse(&format!("x = {src}\n"));
    assert!(result.errors.is_empty(), "{src}: {:?}", result.errors);
    match &result.module.body[0].node {
        Stmt::Assign(a) => show(&a.value.node),
        other => panic!("{src}: {other:?}"),
    }
}

fn show(e: &Expr) -> String {
    match e {
        Expr::Identifier(i) => i.name(),
        Expr::NumberLit(n) => match (n.value, n.binary_suffix) {
            (NumberLitValue::Int(v), Some(s)) => format!("{v}{}", s.as_str()),
            (NumberLitValue::Int(v), None) => v.to_string(),
            (NumberLitValue::Float(v), _) => format!("{v:?}"),
        },
        Expr::StringLit(s) => format!("{:?}", s.value),
        Expr::NameConstantLit(c) => format!("{:?}", c.value),
        Expr::Unary(u) if u.op == UnaryOp::Not => format!("(not {})", show(&u.operand.node)),
        Expr::Unary(u) => format!("({}{})", u.op.symbol(), show(&u.operand.node)),
        Expr::Binary(b) => format!(
            "({} {} {})",
            show(&b.left.node),
            b.op.symbol(),
            show(&b.right.node)
        ),
        Expr::Compare(c) => {
            let mut out = format!("({}", show(&c.left.node));
            for (op, r) in c.ops.iter().zip(&c.comparators) {
                out.push_str(&format!(" {} {}", op.symbol(), show(&r.node)));
            }
            out + ")"
        }
        Expr::If(i) => format!(
            "({} if {} else {})",
            show(&i.body.node),
            show(&i.cond.node),
            show(&i.orelse.node)
        ),
        Expr::Paren(p) => show(&p.expr.node),
        Expr::Selector(s) => format!(
            "{}{}{}",
            show(&s.value.node),
            if s.has_question { "?." } else { "." },
            s.attr.node.name()
        ),
        Expr::Subscript(s) => {
            let part =
                |e: &Option<NodeRef<Expr>>| e.as_ref().map_or(String::new(), |e| show(&e.node));
            let q = if s.has_question { "?" } else { "" };
            match &s.index {
                Some(i) => format!("{}{q}[{}]", show(&s.value.node), show(&i.node)),
                None => format!(
                    "{}{q}[{}:{}:{}]",
                    show(&s.value.node),
                    part(&s.lower),
                    part(&s.upper),
                    part(&s.step)
                ),
            }
        }
        Expr::Call(c) => {
            let mut args: Vec<String> = c.args.iter().map(|a| show(&a.node)).collect();
            args.extend(c.keywords.iter().map(|k| {
                format!(
                    "{}={}",
                    k.node.arg.node.name(),
                    k.node
                        .value
                        .as_ref()
                        .map_or(String::new(), |v| show(&v.node))
                )
            }));
            format!("{}({})", show(&c.func.node), args.join(", "))
        }
        Expr::List(l) => format!(
            "[{}]",
            l.elts
                .iter()
                .map(|e| show(&e.node))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Expr::Starred(s) => format!("*{}", show(&s.value.node)),
        Expr::ListIfItem(i) => format!(
            "if {}: {}{}",
            show(&i.if_cond.node),
            i.exprs
                .iter()
                .map(|e| show(&e.node))
                .collect::<Vec<_>>()
                .join(", "),
            i.orelse
                .as_ref()
                .map_or(String::new(), |o| format!(" else {}", show(&o.node)))
        ),
        Expr::Config(c) => format!(
            "{{{}}}",
            c.items
                .iter()
                .map(|e| show_entry(&e.node))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Expr::ConfigIfEntry(i) => format!(
            "if {}: {}{}",
            show(&i.if_cond.node),
            i.items
                .iter()
                .map(|e| show_entry(&e.node))
                .collect::<Vec<_>>()
                .join(", "),
            i.orelse
                .as_ref()
                .map_or(String::new(), |o| format!(" else {}", show(&o.node)))
        ),
        Expr::ListComp(c) => format!("[{}{}]", show(&c.elt.node), show_comp(&c.generators)),
        Expr::DictComp(c) => format!("{{{}{}}}", show_entry(&c.entry), show_comp(&c.generators)),
        Expr::Schema(s) => format!("{} {}", s.name.node.name(), show(&s.config.node)),
        Expr::Quant(q) => format!(
            "{:?} {} in {} {{{}}}",
            q.op,
            q.variables
                .iter()
                .map(|v| v.node.name())
                .collect::<Vec<_>>()
                .join(", "),
            show(&q.target.node),
            show(&q.test.node)
        ),
        Expr::Lambda(l) => format!("lambda[{} stmts]", l.body.len()),
        Expr::JoinedString(j) => j
            .values
            .iter()
            .map(|v| match &v.node {
                Expr::StringLit(s) => s.value.clone(),
                other => show(other),
            })
            .collect(),
        Expr::FormattedValue(f) => format!(
            "${{{}{}}}",
            show(&f.value.node),
            f.format_spec
                .as_ref()
                .map_or(String::new(), |s| format!(": {s}"))
        ),
        Expr::Missing => "?".into(),
    }
}

fn show_entry(e: &ConfigEntry) -> String {
    match &e.key {
        Some(k) => format!(
            "{} {} {}",
            show(&k.node),
            e.operation.symbol(),
            show(&e.value.node)
        ),
        None => match &e.value.node {
            Expr::ConfigIfEntry(_) => show(&e.value.node),
            other => format!("**{}", show(other)),
        },
    }
}

fn show_comp(gens: &[Node<CompClause>]) -> String {
    gens.iter()
        .map(|g| {
            let targets: Vec<String> = g.node.targets.iter().map(|t| t.node.name()).collect();
            let ifs: String = g
                .node
                .ifs
                .iter()
                .map(|i| format!(" if {}", show(&i.node)))
                .collect();
            format!(
                " for {} in {}{ifs}",
                targets.join(", "),
                show(&g.node.iter.node)
            )
        })
        .collect()
}

#[test]
fn expressions_follow_kcl_precedence() {
    let cases = [
        ("1 + 2 * 3", "(1 + (2 * 3))"),
        ("1 - 2 - 3", "((1 - 2) - 3)"),
        ("-2 ** 2", "((-2) ** 2)"),
        ("not a == b", "((not a) == b)"),
        ("a or b and c", "(a or (b and c))"),
        ("a | b & c ^ d", "(a | ((b & c) ^ d))"),
        ("1 << 2 + 3", "(1 << (2 + 3))"),
        ("a < b == c", "(a < b == c)"),
        ("a not in b", "(a not in b)"),
        ("a is not None", "(a is not None)"),
        ("a in b and c", "((a in b) and c)"),
        ("x as int", "(x as int)"),
        ("a if b else c if d else e", "(a if b else (c if d else e))"),
        ("a // b % c", "((a // b) % c)"),
        ("a?.b?[0]", "a?.b?[0]"),
        ("a.b.c[1:2]", "a.b.c[1:2:]"),
        ("a[::2]", "a[::2]"),
        ("f(1, k=2)(3)", "f(1, k=2)(3)"),
        ("1Ki + 2M", "(1Ki + 2M)"),
        ("0x1F + 0o17 + 0b101", "((31 + 15) + 5)"),
        ("1.5e3", "1500.0"),
        ("[1, *a, if b: 2 else: 3]", "[1, *a, if b: 2 else [3]]"),
        (
            "{a: 1, b = 2, c += [3], **d}",
            "{a : 1, b = 2, c += [3], **d}",
        ),
        ("{a.b.c: 1}", "{a.b.c : 1}"),
        (
            "{if a: b = 1 elif c: d = 2 else: e = 3}",
            "{if a: b = 1 else if c: d = 2 else {e = 3}}",
        ),
        (
            "[x for x in y if x for z in x]",
            "[x for x in y if x for z in x]",
        ),
        ("{k: v for k, v in d}", "{k : v for k, v in d}"),
        ("all x in xs { x > 0 }", "All x in xs {(x > 0)}"),
        ("map k, v in d { v }", "Map k, v in d {v}"),
        ("Person {name: 1}", "Person {name : 1}"),
        ("pkg.Person {}", "pkg.Person {}"),
        ("\"a${b}c\"", "a${b}c"),
        ("\"${x: #json}\"", "${x: #json}"),
        ("\"$${x}\"", "$${x}"),
        ("\"\\${x}\"", "${x}"),
        ("r\"${x}\"", "\"${x}\""),
        ("lambda x: int, y = 1 -> int { x + y }", "lambda[1 stmts]"),
        ("$if + 1", "(if + 1)"),
    ];
    for (src, want) in cases {
        assert_eq!(shape(src), want, "{src}");
    }
}

#[test]
fn statements() {
    let src = r#""""module doc"""
import a.b as c
import .sub
type Color = "red" | "blue"
a = b = 1
x: int = 2
s: Schema {k: 1}
t: Schema(1) {}
a.b[0] += 1
assert a > 0 if b, "msg"
if a:
    b = 1
elif c:
    d = 2
else:
    e = 3
@deprecated(version="1.0")
schema S[n: int = 1](Base) for P:
    """schema doc"""
    mixin [M]
    a?: str = "x"
    b: [int] |= [1]
    "c-d": {str:int}
    [...str]: int
    if a:
        b = [2]
    check:
        a, "m"
        b if a
protocol P:
    a: str
rule R(Base) for P:
    a > 0
f = lambda x {
    y = x
    y
}
"#;
    let result = parse(src);
    assert!(result.errors.is_empty(), "{:?}", result.errors);
    let module = result.module;
    assert_eq!(
        module.doc.map(|d| d.node),
        Some("\"\"\"module doc\"\"\"".to_string())
    );
    let kinds: Vec<&str> = module
        .body
        .iter()
        .map(|s| match &s.node {
            Stmt::TypeAlias(_) => "type",
            Stmt::Expr(_) => "expr",
            Stmt::Unification(_) => "unification",
            Stmt::Assign(_) => "assign",
            Stmt::AugAssign(_) => "augassign",
            Stmt::Assert(_) => "assert",
            Stmt::If(_) => "if",
            Stmt::Import(_) => "import",
            Stmt::SchemaAttr(_) => "attr",
            Stmt::Schema(_) => "schema",
            Stmt::Rule(_) => "rule",
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            "import",
            "import",
            "type",
            "assign",
            "assign",
            "unification",
            "unification",
            "augassign",
            "assert",
            "if",
            "schema",
            "schema",
            "rule",
            "assign"
        ]
    );
    let Stmt::Import(import) = &module.body[0].node else {
        unreachable!()
    };
    assert_eq!(
        (import.rawpath.node.as_str(), import.name.as_str()),
        ("a.b", "c")
    );
    let Stmt::TypeAlias(alias) = &module.body[2].node else {
        unreachable!()
    };
    assert_eq!(alias.type_value.node, "\"red\" | \"blue\"");
    let Stmt::Assign(assign) = &module.body[3].node else {
        unreachable!()
    };
    assert_eq!(assign.targets.len(), 2);
    let Stmt::AugAssign(aug) = &module.body[7].node else {
        unreachable!()
    };
    assert_eq!(aug.target.node.paths.len(), 2);
    let Stmt::If(if_stmt) = &module.body[9].node else {
        unreachable!()
    };
    assert!(matches!(&if_stmt.orelse[0].node, Stmt::If(elif) if elif.orelse.len() == 1));
    let Stmt::Schema(schema) = &module.body[10].node else {
        unreachable!()
    };
    assert_eq!(schema.decorators.len(), 1);
    assert_eq!(schema.mixins.len(), 1);
    assert_eq!(schema.checks.len(), 2);
    assert!(
        schema
            .index_signature
            .as_ref()
            .is_some_and(|s| s.node.any_other)
    );
    let attrs: Vec<(String, Option<AugOp>, bool)> = schema
        .body
        .iter()
        .filter_map(|s| match &s.node {
            Stmt::SchemaAttr(a) => Some((a.name.node.clone(), a.op, a.is_optional)),
            _ => None,
        })
        .collect();
    assert_eq!(
        attrs,
        vec![
            ("a".to_string(), Some(AugOp::Assign), true),
            ("b".to_string(), Some(AugOp::BitOr), false),
            ("c-d".to_string(), None, false),
        ]
    );
    let Stmt::Schema(protocol) = &module.body[11].node else {
        unreachable!()
    };
    assert!(protocol.is_protocol);
    let Stmt::Rule(rule) = &module.body[12].node else {
        unreachable!()
    };
    assert_eq!((rule.parent_rules.len(), rule.checks.len()), (1, 1));
}

#[test]
fn types() {
    let cases = [
        ("int", "Basic(Int)"),
        ("[str]", "List(Some(Basic(Str)))"),
        ("{str:}", "Dict { key: Some(Basic(Str)), value: None }"),
        (
            "\"a\" | 1",
            "Union([Literal(Str(\"a\")), Literal(Int(1, None))])",
        ),
        (
            "(int) -> str",
            "Function { params: [Basic(Int)], ret: Some(Basic(Str)) }",
        ),
        ("pkg.S", "Named(pkg.S)"),
        ("any", "Any"),
        ("None", "Literal(None)"),
    ];
    fn show_ty(t: &Type) -> String {
        match t {
            Type::Named(i) => format!("Named({})", i.name()),
            Type::List(inner) => {
                format!("List({:?})", inner.as_ref().map(|t| show_ty(&t.node))).replace('"', "")
            }
            Type::Dict { key, value } => format!(
                "Dict {{ key: {}, value: {} }}",
                key.as_ref()
                    .map_or("None".into(), |t| format!("Some({})", show_ty(&t.node))),
                value
                    .as_ref()
                    .map_or("None".into(), |t| format!("Some({})", show_ty(&t.node)))
            ),
            Type::Union(ts) => format!(
                "Union([{}])",
                ts.iter()
                    .map(|t| show_ty(&t.node))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Type::Function { params, ret } => format!(
                "Function {{ params: [{}], ret: {} }}",
                params
                    .iter()
                    .map(|t| show_ty(&t.node))
                    .collect::<Vec<_>>()
                    .join(", "),
                ret.as_ref()
                    .map_or("None".into(), |t| format!("Some({})", show_ty(&t.node)))
            ),
            other => format!("{other:?}"),
        }
    }
    for (src, want) in cases {
        let result = parse(&format!("x: {src} = 1\n"));
        assert!(result.errors.is_empty(), "{src}: {:?}", result.errors);
        let Stmt::Assign(a) = &result.module.body[0].node else {
            unreachable!()
        };
        let ty = a.ty.as_ref().map(|t| show_ty(&t.node)).unwrap_or_default();
        assert_eq!(ty, want, "{src}");
    }
}

#[test]
fn syntax_errors_have_kcl_messages() {
    let cases: &[(&str, &[&str])] = &[
        ("a = (1", &["expected one of [\")\"] got newline"]),
        (
            "a = [i for i() in d]",
            &[
                "expected one of [\"in\"] got (",
                "expected one of [\"identifier\", \"literal\", \"(\", \"[\", \"{\"] got )",
                "expected one of [\"]\"] got )",
                "unexpected token ')'",
                "unexpected token ']'",
            ],
        ),
        (
            "f(a=1, 2)",
            &["positional argument follows keyword argument"],
        ),
        ("a = 1mi", &["invalid int binary suffix"]),
        (
            "b = \"${b = a}\"",
            &["invalid string interpolation expression: 'b = a'"],
        ),
        (
            "if a:\n   b = 1\n  c = 2\n",
            &[
                "invalid indentation with 2 spaces, try to align indents by adding or removing spaces",
            ],
        ),
        (
            "if a:\n    b = 1\n\tc = 2\n",
            &["inconsistent use of tabs and spaces in indentation"],
        ),
        (
            "if a:\n    b = 1\nelse if c:\n    d = 1\n",
            &[
                "'else if' here is invalid in KCL, consider using the 'elif' keyword",
                "expected one of [\":\"] got identifier",
                "expected one of [\"identifier\", \"literal\", \"(\", \"[\", \"{\"] got :",
                "expected one of [\"any\", \"bool\", \"int\", \"float\", \"str\", \"True\", \"False\", \"identifier\", \"literal\", \"[\", \"{\", \")\"] got newline",
                "expected one of [\"=\"] got indent",
                "'MissingExpression' is an illegal expression for assignment",
                "unexpected token 'indent'",
                "unexpected token 'dedent'",
            ],
        ),
        (
            "a?.b = 1",
            &[
                "'SelectorExpression' is an illegal expression for assignment, because the left-hand side of an assignment expression may not be an optional attribute access.",
            ],
        ),
        (
            "1 = 2",
            &["'NumberLitExpression' is an illegal expression for assignment"],
        ),
        (
            "schema A:\n    [str]: str\n    [str]: int\n",
            &["duplicate schema index signature definitions, only one is allowed in the schema"],
        ),
        ("a = \"abc", &["unterminated string"]),
        (
            "a = 99999999999999999999",
            &["expected one of [\"int\"] got 99999999999999999999"],
        ),
        ("b = 00", &["no valid digits found for number"]),
        (
            "b = 0b102",
            &["invalid digit for a base 2 literal, start: 8, stop: 9"],
        ),
    ];
    for (src, want) in cases {
        let got = messages(src);
        let want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
        assert_eq!(got, want, "{src}");
    }
}

#[test]
fn error_positions_are_kcl_lines_and_columns() {
    let result = parse("a = 1\nb = (lastName not None)\n");
    let positions: Vec<(u32, u32, String)> = result
        .errors
        .iter()
        .map(|e| {
            let s = e.span().unwrap_or_default();
            (s.line, s.column + 1, e.message.clone())
        })
        .collect();
    assert_eq!(
        positions[0],
        (2, 15, "expected one of [\")\"] got identifier".to_string())
    );
}

/// Deterministic pseudo-random bytes: no dependency, same cases each run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn random_input_never_panics() {
    const ALPHABET: &[u8] = b"abcxyz019_ \t\n\n\n()[]{}:=+-*/%<>!|&^~.,?@$#'\"\\rif else elif for in lambda schema check";
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..3000 {
        let len = (rng.next() % 80) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| ALPHABET[(rng.next() % ALPHABET.len() as u64) as usize])
            .collect();
        let src = String::from_utf8_lossy(&bytes);
        let _ = parse(&src);
    }
    for _ in 0..500 {
        let len = (rng.next() % 64) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let _ = parse(&String::from_utf8_lossy(&bytes));
    }
}

#[test]
fn truncated_programs_never_panic() {
    let program = r#"
schema Person[n: int = 1](Base):
    """doc"""
    mixin [A]
    name?: str = "x${n: #json}"
    [k: str]: int
    check:
        len(name) > 0 if name, "msg"
p = Person(1) {name: "a", **b, if c: d = 1 elif e: f += [2] else: g = 3}
l = [x * 2 for x in range(10) if x % 2 == 0]
f = lambda x: int -> int {
    if x > 0:
        x
    else:
        -x
}
q = all k, v in {a = 1} { v > 0 }
assert p.name?.upper() == "A", "m"
"#;
    for end in 0..program.len() {
        if let Some(prefix) = program.get(..end) {
            let _ = parse(prefix);
        }
    }
}

/// Nesting past the limit is one error, and the limit is reached well
/// within a 1 MiB stack (WebAssembly's default) even unoptimized.
#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let run = || {
        for open in [
            "(",
            "[",
            "{a:",
            "-(",
            "lambda {",
            "f(",
            "{if a: b:",
            "[if a: ",
            "\"${",
        ] {
            let src = format!("a = {}1", open.repeat(5000));
            let result = parse(&src);
            let messages: Vec<&str> = result.errors.iter().map(|e| e.message.as_str()).collect();
            assert!(
                messages.contains(&"the program nests too deeply to parse"),
                "{open}"
            );
        }
        let nested_ifs: String = (0..3000)
            .map(|i| format!("{}if a:\n", " ".repeat(i)))
            .collect();
        assert!(!parse(&nested_ifs).errors.is_empty());
        // Chains a loop builds nest the tree as deeply as brackets do.
        let elifs: String = (0..5000).map(|_| "elif b:\n    c = 1\n").collect();
        let chains = [
            format!("a = 1{}", " + 1".repeat(5000)),
            format!("a = 1{}", " < 1 + 1".repeat(5000)),
            format!("a = b{}", ".c()".repeat(5000)),
            format!("a = b{}", "[0]".repeat(5000)),
            format!("a = all x in b{} {{x}}", "[0]".repeat(5000)),
            format!("if a:\n    c = 1\n{elifs}"),
            format!("a = [if a: 1{}]", " elif b: 1".repeat(5000)),
            format!("a = {{if a: b = 1{}}}", " elif b: c = 1".repeat(5000)),
        ];
        for src in &chains {
            let result = parse(src);
            let messages: Vec<&str> = result.errors.iter().map(|e| e.message.as_str()).collect();
            assert!(
                messages.contains(&"the program nests too deeply to parse"),
                "{}",
                src.get(..40).unwrap_or(src)
            );
        }
    };
    let thread = std::thread::Builder::new().stack_size(1 << 20).spawn(run);
    assert!(thread.is_ok_and(|t| t.join().is_ok()));
}

/// Every `.k` file of KCL's grammar suite parses without error but where
/// a syntax error is expected (run with `--ignored` where the suite is
/// fetched).
#[test]
#[ignore]
fn grammar_suite_parses() {
    let Some(home) = std::env::var_os("HOME") else {
        return;
    };
    let root = std::path::Path::new(&home).join(".cache/plait/kcl-grammar/tests/grammar");
    let mut stack = vec![root];
    let (mut total, mut failed) = (0, 0);
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "k") {
                files.push(path);
            }
        }
        // Cases expecting output, and cases expecting an error other than
        // a syntax error, must parse.
        let expects_syntax_error = std::fs::read_to_string(dir.join("stderr.golden"))
            .is_ok_and(|g| g.contains("InvalidSyntax"));
        let has_golden = dir.join("stdout.golden").exists() || dir.join("stderr.golden").exists();
        if !has_golden || expects_syntax_error {
            continue;
        }
        for file in files {
            let Ok(src) = std::fs::read_to_string(&file) else {
                continue;
            };
            total += 1;
            let result = parse(&src);
            let golden = std::fs::read_to_string(dir.join("stderr.golden")).unwrap_or_default();
            let expected = !golden.trim().is_empty()
                && result
                    .errors
                    .iter()
                    .any(|e| e.message.contains(golden.trim()));
            if !result.errors.is_empty() && !expected {
                failed += 1;
                let e = &result.errors[0];
                let at = e.span().map(|s| (s.line, s.column + 1)).unwrap_or_default();
                println!("FAIL {}:{}:{}: {}", file.display(), at.0, at.1, e.message);
            }
        }
    }
    println!("parsed {} of {total} files", total - failed);
    assert_eq!(failed, 0);
}

/// KCL's grammar-suite cases whose expected stderr holds syntax errors:
/// ours, rendered, hold the same syntax errors (run with `--ignored`).
#[test]
#[ignore]
fn grammar_suite_syntax_errors() {
    let Some(home) = std::env::var_os("HOME") else {
        return;
    };
    let root = std::path::Path::new(&home).join(".cache/plait/kcl-grammar/tests/grammar");
    let mut stack = vec![root];
    let (mut total, mut matched) = (0, 0);
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.path().is_dir() {
                stack.push(entry.path());
            }
        }
        let Ok(golden) = std::fs::read_to_string(dir.join("stderr.golden")) else {
            continue;
        };
        if !golden.contains("InvalidSyntax") {
            continue;
        }
        let Ok(src) = std::fs::read_to_string(dir.join("main.k")) else {
            continue;
        };
        total += 1;
        let mut want = String::new();
        let mut keep = false;
        for line in golden.lines() {
            if line.starts_with("error[") {
                keep = line.contains("InvalidSyntax");
            }
            if keep && !line.trim().is_empty() {
                want.push_str(line);
                want.push('\n');
            }
        }
        let mut sources = crate::source::SourceMap::default();
        sources.add(crate::source::SourceFile::new(
            "${CWD}/main.k",
            src.as_str(),
        ));
        let result = parse_file(0, "${CWD}/main.k", "__main__", &src);
        let got: String = crate::diagnostic::render_all(&result.errors, &sources)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| format!("{l}\n"))
            .collect();
        if got.contains(&want) {
            matched += 1;
        } else {
            println!("MISMATCH {}\n--- want\n{want}--- got\n{got}", dir.display());
        }
    }
    println!("syntax errors as KCL's in {matched} of {total} cases");
}

/// Writes the syntax errors of every `.k` file in `$KCL_SYNTAX_DIR` beside
/// it (`.ours`), rendered as KCL does and without blank lines, to compare
/// with the `InvalidSyntax` blocks of kcl-lib's `exec_program` error (which
/// lists them twice).
#[test]
#[ignore]
fn render_syntax_errors_of_dir() {
    let Some(dir) = std::env::var_os("KCL_SYNTAX_DIR") else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "k") {
            continue;
        }
        let Ok(src) = std::fs::read_to_string(&path) else {
            continue;
        };
        let name = path.to_string_lossy().into_owned();
        let mut sources = crate::source::SourceMap::default();
        sources.add(crate::source::SourceFile::new(name.as_str(), src.as_str()));
        let result = parse_file(0, &name, "__main__", &src);
        let text: String = crate::diagnostic::render_all(&result.errors, &sources)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| format!("{l}\n"))
            .collect();
        let _ = std::fs::write(path.with_extension("ours"), text);
    }
}

/// Parse speed over the grammar suite's files (run with `--ignored
/// --release`): lines parsed per millisecond.
#[test]
#[ignore]
fn grammar_suite_parse_speed() {
    let Some(home) = std::env::var_os("HOME") else {
        return;
    };
    let root = std::path::Path::new(&home).join(".cache/plait/kcl-grammar/tests/grammar");
    let mut sources = Vec::new();
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "k") {
                sources.extend(std::fs::read_to_string(&path));
            }
        }
    }
    let lines: usize = sources.iter().map(|s| s.lines().count()).sum();
    let start = std::time::Instant::now();
    let rounds: u32 = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    for _ in 0..rounds {
        for src in &sources {
            let _ = parse(src);
        }
    }
    let ms = start.elapsed().as_secs_f64() * 1000.0 / f64::from(rounds);
    println!(
        "{lines} lines in {ms:.2} ms: {:.0} lines/ms",
        lines as f64 / ms
    );
    let start = std::time::Instant::now();
    for _ in 0..rounds {
        for src in &sources {
            let _ = crate::lexer::tokenize(src, 0);
        }
    }
    let lex_ms = start.elapsed().as_secs_f64() * 1000.0 / f64::from(rounds);
    println!("of which lexing {lex_ms:.2} ms");
}

/// The tagged nodes of a module with their spans, as kcl-lib's `parse_file`
/// JSON tags them: to compare positions with KCL's (see
/// `ast_positions_of_dir`).
mod tagged {
    use crate::ast::*;
    use crate::source::Span;

    pub fn module(m: &Module) -> Vec<Item> {
        let mut out = Vec::new();
        for s in &m.body {
            stmt(s, &mut out);
        }
        out
    }

    /// A node: its tag and span, and for the nodes whose values are
    /// compared with kcl-lib's, a line of them (`Kind values…`).
    pub struct Item {
        pub tag: String,
        pub span: Span,
        pub detail: Option<String>,
    }

    fn push(out: &mut Vec<Item>, tag: &str, span: Span) {
        out.push(Item {
            tag: tag.to_string(),
            span,
            detail: None,
        });
    }

    /// `push` with the node's values.
    fn push_detail(out: &mut Vec<Item>, tag: &str, span: Span, detail: String) {
        out.push(Item {
            tag: tag.to_string(),
            span,
            detail: Some(detail),
        });
    }

    /// A string as Python's `json.dumps(s, ensure_ascii=False)` writes it.
    fn json_str(s: &str) -> String {
        let mut out = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    fn py_bool(b: bool) -> &'static str {
        if b { "True" } else { "False" }
    }

    fn name(n: &Node<String>, out: &mut Vec<Item>) {
        push(out, "Name", n.span);
    }

    /// An identifier that is a node of its own (not an expression).
    fn ident(i: &Node<Identifier>, out: &mut Vec<Item>) {
        push(out, "Ident", i.span);
        i.node.names.iter().for_each(|n| name(n, out));
    }

    fn stmt(s: &Node<Stmt>, out: &mut Vec<Item>) {
        let tag = match &s.node {
            Stmt::TypeAlias(_) => "TypeAlias",
            Stmt::Expr(_) => "Expr",
            Stmt::Unification(_) => "Unification",
            Stmt::Assign(_) => "Assign",
            Stmt::AugAssign(_) => "AugAssign",
            Stmt::Assert(_) => "Assert",
            Stmt::If(_) => "If",
            Stmt::Import(_) => "Import",
            Stmt::SchemaAttr(_) => "SchemaAttr",
            Stmt::Schema(_) => "Schema",
            Stmt::Rule(_) => "Rule",
        };
        let detail = match &s.node {
            Stmt::SchemaAttr(a) => Some(format!(
                "SchemaAttr {} {} {}",
                a.name.node,
                a.op.map_or("None".to_string(), |o| format!("{o:?}")),
                py_bool(a.is_optional)
            )),
            Stmt::Schema(x) => Some(format!(
                "SchemaStmt {} {} {}",
                x.name.node,
                py_bool(x.is_mixin),
                py_bool(x.is_protocol)
            )),
            Stmt::AugAssign(a) => Some(format!("AugAssign {:?}", a.op)),
            _ => None,
        };
        match detail {
            Some(d) => push_detail(out, tag, s.span, d),
            None => push(out, tag, s.span),
        }
        match &s.node {
            Stmt::TypeAlias(t) => {
                ident(&t.type_name, out);
                name(&t.type_value, out);
                ty(&t.ty, out);
            }
            Stmt::Expr(e) => e.exprs.iter().for_each(|e| expr(e, out)),
            Stmt::Unification(u) => {
                ident(&u.target, out);
                push(out, "SchemaExpr", u.value.span);
                schema_expr(&u.value.node, out);
            }
            Stmt::Assign(a) => {
                a.targets.iter().for_each(|t| target(t, out));
                expr(&a.value, out);
                if let Some(t) = &a.ty {
                    ty(t, out);
                }
            }
            Stmt::AugAssign(a) => {
                target(&a.target, out);
                expr(&a.value, out);
            }
            Stmt::Assert(a) => {
                expr(&a.test, out);
                opt(&a.if_cond, out);
                opt(&a.msg, out);
            }
            Stmt::If(i) => {
                expr(&i.cond, out);
                i.body.iter().for_each(|s| stmt(s, out));
                i.orelse.iter().for_each(|s| stmt(s, out));
            }
            Stmt::Import(i) => {
                name(&i.rawpath, out);
                i.asname.iter().for_each(|n| name(n, out));
            }
            Stmt::SchemaAttr(a) => {
                name(&a.name, out);
                a.decorators.iter().for_each(|d| decorator(d, out));
                opt(&a.value, out);
                ty(&a.ty, out);
            }
            Stmt::Schema(s) => {
                name(&s.name, out);
                s.parent_name.iter().for_each(|p| ident(p, out));
                s.for_host_name.iter().for_each(|p| ident(p, out));
                s.mixins.iter().for_each(|m| ident(m, out));
                if let Some(args) = &s.args {
                    arguments(args, out);
                }
                s.body.iter().for_each(|s| stmt(s, out));
                s.decorators.iter().for_each(|d| decorator(d, out));
                s.checks.iter().for_each(|c| check(c, out));
                if let Some(sig) = &s.index_signature {
                    push(out, "IndexSignature", sig.span);
                    sig.node.key_name.iter().for_each(|n| name(n, out));
                    opt(&sig.node.value, out);
                    ty(&sig.node.key_ty, out);
                    ty(&sig.node.value_ty, out);
                }
            }
            Stmt::Rule(r) => {
                name(&r.name, out);
                r.parent_rules.iter().for_each(|p| ident(p, out));
                r.for_host_name.iter().for_each(|p| ident(p, out));
                r.decorators.iter().for_each(|d| decorator(d, out));
                r.checks.iter().for_each(|c| check(c, out));
                if let Some(args) = &r.args {
                    arguments(args, out);
                }
            }
        }
    }

    fn target(t: &Node<Target>, out: &mut Vec<Item>) {
        push(out, "Target", t.span);
        name(&t.node.name, out);
        for p in &t.node.paths {
            match p {
                MemberOrIndex::Member(n) => name(n, out),
                MemberOrIndex::Index(e) => expr(e, out),
            }
        }
    }

    fn check(c: &Node<CheckExpr>, out: &mut Vec<Item>) {
        push(out, "CheckExpr", c.span);
        expr(&c.node.test, out);
        opt(&c.node.if_cond, out);
        opt(&c.node.msg, out);
    }

    fn decorator(d: &Node<CallExpr>, out: &mut Vec<Item>) {
        push(out, "CallExpr", d.span);
        call(&d.node, out);
    }

    fn keyword(k: &Node<Keyword>, out: &mut Vec<Item>) {
        push(out, "Keyword", k.span);
        ident(&k.node.arg, out);
        opt(&k.node.value, out);
    }

    fn opt(e: &Option<NodeRef<Expr>>, out: &mut Vec<Item>) {
        if let Some(e) = e {
            expr(e, out);
        }
    }

    fn call(c: &CallExpr, out: &mut Vec<Item>) {
        expr(&c.func, out);
        c.args.iter().for_each(|a| expr(a, out));
        c.keywords.iter().for_each(|k| keyword(k, out));
    }

    fn arguments(a: &Node<Arguments>, out: &mut Vec<Item>) {
        push(out, "Arguments", a.span);
        a.node.args.iter().for_each(|i| ident(i, out));
        a.node.defaults.iter().for_each(|d| opt(d, out));
        a.node.ty_list.iter().flatten().for_each(|t| ty(t, out));
    }

    fn schema_expr(s: &SchemaExpr, out: &mut Vec<Item>) {
        ident(&s.name, out);
        s.args.iter().for_each(|a| expr(a, out));
        s.kwargs.iter().for_each(|k| keyword(k, out));
        expr(&s.config, out);
    }

    fn entry(e: &ConfigEntry, out: &mut Vec<Item>) {
        opt(&e.key, out);
        expr(&e.value, out);
    }

    fn entry_node(e: &Node<ConfigEntry>, out: &mut Vec<Item>) {
        let detail = format!("Entry {:?}", e.node.operation);
        push_detail(out, "ConfigEntry", e.span, detail);
        entry(&e.node, out);
    }

    fn comp(g: &Node<CompClause>, out: &mut Vec<Item>) {
        push(out, "CompClause", g.span);
        g.node.targets.iter().for_each(|t| ident(t, out));
        expr(&g.node.iter, out);
        g.node.ifs.iter().for_each(|i| expr(i, out));
    }

    fn ty(t: &Node<Type>, out: &mut Vec<Item>) {
        let tag = match &t.node {
            Type::Any => "Any",
            Type::Named(_) => "Named",
            Type::Basic(_) => "Basic",
            Type::List(_) => "List",
            Type::Dict { .. } => "Dict",
            Type::Union(_) => "Union",
            Type::Literal(_) => "Literal",
            Type::Function { .. } => "Function",
        };
        push(out, tag, t.span);
        match &t.node {
            Type::Named(i) => i.names.iter().for_each(|n| name(n, out)),
            Type::List(Some(inner)) => ty(inner, out),
            Type::Dict { key, value } => {
                key.iter().for_each(|k| ty(k, out));
                value.iter().for_each(|v| ty(v, out));
            }
            Type::Union(ts) => ts.iter().for_each(|t| ty(t, out)),
            Type::Function { params, ret } => {
                params.iter().for_each(|p| ty(p, out));
                ret.iter().for_each(|r| ty(r, out));
            }
            _ => {}
        }
    }

    fn expr(e: &Node<Expr>, out: &mut Vec<Item>) {
        let tag = match &e.node {
            Expr::Identifier(_) => "Identifier",
            Expr::Unary(_) => "Unary",
            Expr::Binary(_) => "Binary",
            Expr::If(_) => "If",
            Expr::Selector(_) => "Selector",
            Expr::Call(_) => "Call",
            Expr::Paren(_) => "Paren",
            Expr::Quant(_) => "Quant",
            Expr::List(_) => "List",
            Expr::ListIfItem(_) => "ListIfItem",
            Expr::ListComp(_) => "ListComp",
            Expr::Starred(_) => "Starred",
            Expr::DictComp(_) => "DictComp",
            Expr::ConfigIfEntry(_) => "ConfigIfEntry",
            Expr::Schema(_) => "Schema",
            Expr::Config(_) => "Config",
            Expr::Lambda(_) => "Lambda",
            Expr::Subscript(_) => "Subscript",
            Expr::Compare(_) => "Compare",
            Expr::NumberLit(_) => "NumberLit",
            Expr::StringLit(_) => "StringLit",
            Expr::NameConstantLit(_) => "NameConstantLit",
            Expr::JoinedString(_) => "JoinedString",
            Expr::FormattedValue(_) => "FormattedValue",
            Expr::Missing => "Missing",
        };
        let detail = match &e.node {
            Expr::StringLit(x) => Some(format!(
                "StringLit {} {} {}",
                json_str(&x.value),
                json_str(&x.raw_value),
                py_bool(x.is_long_string)
            )),
            Expr::NumberLit(n) => {
                let (kind, value) = match n.value {
                    NumberLitValue::Int(v) => ("Int", v.to_string()),
                    NumberLitValue::Float(v) => ("Float", format!("{v:?}")),
                };
                let suffix = n.binary_suffix.map_or("None", |s| s.as_str());
                Some(format!("NumberLit {kind} {value} {suffix}"))
            }
            Expr::NameConstantLit(c) => Some(format!("Const {:?}", c.value)),
            Expr::FormattedValue(f) => Some(format!(
                "Spec {}",
                f.format_spec
                    .as_deref()
                    .map_or("null".to_string(), json_str)
            )),
            Expr::Binary(b) => Some(format!("Binary {:?}", b.op)),
            Expr::Unary(u) => Some(format!("Unary {:?}", u.op)),
            Expr::Compare(c) => Some(format!(
                "Compare {}",
                c.ops
                    .iter()
                    .map(|o| format!("{o:?}"))
                    .collect::<Vec<_>>()
                    .join(",")
            )),
            Expr::Quant(q) => Some(format!("Quant {:?}", q.op)),
            Expr::Identifier(i) => Some(format!("Identifier {}", i.name())),
            _ => None,
        };
        match detail {
            Some(d) => push_detail(out, tag, e.span, d),
            None => push(out, tag, e.span),
        }
        match &e.node {
            Expr::Identifier(i) => i.names.iter().for_each(|n| name(n, out)),
            Expr::Unary(u) => expr(&u.operand, out),
            Expr::Binary(b) => {
                expr(&b.left, out);
                expr(&b.right, out);
            }
            Expr::If(i) => {
                expr(&i.body, out);
                expr(&i.cond, out);
                expr(&i.orelse, out);
            }
            Expr::Selector(s) => {
                expr(&s.value, out);
                ident(&s.attr, out);
            }
            Expr::Call(c) => call(c, out),
            Expr::Paren(p) => expr(&p.expr, out),
            Expr::Quant(q) => {
                expr(&q.target, out);
                q.variables.iter().for_each(|v| ident(v, out));
                expr(&q.test, out);
                opt(&q.if_cond, out);
            }
            Expr::List(l) => l.elts.iter().for_each(|e| expr(e, out)),
            Expr::ListIfItem(i) => {
                expr(&i.if_cond, out);
                i.exprs.iter().for_each(|e| expr(e, out));
                opt(&i.orelse, out);
            }
            Expr::ListComp(c) => {
                expr(&c.elt, out);
                c.generators.iter().for_each(|g| comp(g, out));
            }
            Expr::Starred(s) => expr(&s.value, out),
            Expr::DictComp(c) => {
                entry(&c.entry, out);
                c.generators.iter().for_each(|g| comp(g, out));
            }
            Expr::ConfigIfEntry(i) => {
                expr(&i.if_cond, out);
                i.items.iter().for_each(|e| entry_node(e, out));
                opt(&i.orelse, out);
            }
            Expr::Schema(s) => schema_expr(s, out),
            Expr::Config(c) => c.items.iter().for_each(|e| entry_node(e, out)),
            Expr::Lambda(l) => {
                if let Some(args) = &l.args {
                    arguments(args, out);
                }
                l.body.iter().for_each(|s| stmt(s, out));
                if let Some(t) = &l.return_ty {
                    ty(t, out);
                }
            }
            Expr::Subscript(s) => {
                expr(&s.value, out);
                opt(&s.index, out);
                opt(&s.lower, out);
                opt(&s.upper, out);
                opt(&s.step, out);
            }
            Expr::Compare(c) => {
                expr(&c.left, out);
                c.comparators.iter().for_each(|e| expr(e, out));
            }
            Expr::JoinedString(j) => {
                for v in &j.values {
                    match &v.node {
                        // KCL gives a literal part no position: its value
                        // is compared through the whole string's.
                        Expr::StringLit(_) => push(out, "StringLit", v.span),
                        _ => expr(v, out),
                    }
                }
            }
            Expr::FormattedValue(f) => expr(&f.value, out),
            _ => {}
        }
    }
}

/// Writes the nodes of every `.k` file in `$KCL_AST_DIR` beside it
/// (`.ours.txt`, one `Tag line:col-end_line:end_col` a line, sorted), to
/// compare with what kcl-lib's `API().parse_file(ParseFileArgs(path=…))`
/// gives: in its `ast_json`, every object with `node` and `line` is a node,
/// tagged by the node's `type`, else by its keys (`name, paths, pkgpath` is
/// a Target, `key, operation, value` a ConfigEntry, `ctx, names, pkgpath`
/// an Ident, `ifs, iter, targets` a CompClause, `args, config, kwargs,
/// name` a SchemaExpr, `arg, value` a Keyword, `args, defaults, ty_list`
/// Arguments, `any_other, key_name, key_ty, value, value_ty` an
/// IndexSignature, `if_cond, msg, test` a CheckExpr, `args, func,
/// keywords` a CallExpr), or `Name` when the node is a string (comments
/// and docs left out). `.oursv.txt` lists the values of literals,
/// identifiers, operators, config entries' operations and schemas' and
/// attributes' flags, as `line:col Kind values` (see `tagged::Item`).
#[test]
#[ignore]
fn ast_positions_of_dir() {
    let Some(dir) = std::env::var_os("KCL_AST_DIR") else {
        return;
    };
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "k") {
            continue;
        }
        let Ok(src) = std::fs::read_to_string(&path) else {
            continue;
        };
        let result = parse(&src);
        let items = tagged::module(&result.module);
        let mut values: Vec<(u32, u32, String)> = items
            .iter()
            .filter_map(|i| {
                let d = i.detail.as_ref()?;
                Some((
                    i.span.line,
                    i.span.column,
                    format!("{}:{} {d}", i.span.line, i.span.column),
                ))
            })
            .collect();
        values.sort();
        let values: String = values.iter().map(|(_, _, l)| format!("{l}\n")).collect();
        let _ = std::fs::write(path.with_extension("oursv.txt"), values);
        let mut nodes: Vec<(u32, u32, u32, u32, String)> = items
            .into_iter()
            .map(|i| {
                (
                    i.span.line,
                    i.span.column,
                    i.span.end_line,
                    i.span.end_column,
                    i.tag,
                )
            })
            .collect();
        nodes.sort();
        let text: String = nodes
            .iter()
            .map(|(l, c, el, ec, t)| format!("{t} {l}:{c}-{el}:{ec}\n"))
            .collect();
        let _ = std::fs::write(path.with_extension("ours.txt"), text);
    }
}
