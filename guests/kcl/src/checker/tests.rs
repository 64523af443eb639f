//! The checker on small programs, with the errors (kind, message, line and
//! column as KCL prints them) real KCL 0.12.3 reports for them, and
//! programs KCL accepts that must pass.

use super::*;
use crate::parser::parse_file;

fn check_source(src: &str) -> Vec<KclError> {
    let parsed = parse_file(0, "main.k", MAIN_PKG, src);
    assert_eq!(parsed.errors, vec![], "the test program parses");
    // Modules held by value, as `run` passes them; the loader's `Rc`s are
    // checked in `the_deepest_nesting…`.
    let mut pkgs = indexmap::IndexMap::new();
    pkgs.insert(MAIN_PKG.to_string(), vec![parsed.module]);
    let errors = check_packages_all(&pkgs);
    assert_eq!(check_packages(&pkgs).err(), errors.first().cloned());
    errors
}

/// (what, program, kind, message, line, column from 1) of the first error.
const ERRORS: &[(&str, &str, ErrorKind, &str, u32, u32)] = &[
    (
        "an undefined name",
        "b = c + 1\n",
        ErrorKind::CompileError,
        "name 'c' is not defined",
        1,
        5,
    ),
    (
        "an undefined schema, with a suggestion",
        "schema Person:\n    name: str\n\np = PersonErr {}\n",
        ErrorKind::CompileError,
        "name 'PersonErr' is not defined, did you mean '[\"Person\"]'?",
        4,
        5,
    ),
    (
        "a schema attribute of the wrong type",
        "schema Person:\n    name: str\n\np = Person {\n    name: 1\n}\n",
        ErrorKind::TypeError,
        "expected str, got int(1)",
        5,
        5,
    ),
    (
        "a member the schema does not have",
        "schema Person:\n    name: str\n\np = Person {\n    nam: \"a\"\n}\n",
        ErrorKind::CompileError,
        "Cannot add member 'nam' to schema 'Person', did you mean '[\"name\"]'?",
        5,
        5,
    ),
    (
        "a dotted key read as nested configs",
        "schema Name:\n    name: str\n\nschema Person:\n    name: Name\n\np = Person {\n    name.err_name: \"Alice\"\n}\n",
        ErrorKind::CompileError,
        "Cannot add member 'err_name' to schema 'Name'",
        8,
        10,
    ),
    (
        "an exported name assigned twice",
        "a = 1\na = 2\n",
        ErrorKind::ImmutableError,
        "Can not change the value of 'a', because it was declared immutable",
        2,
        1,
    ),
    (
        "an exported name assigned in both branches of an if",
        "if True:\n    a = 1\nelse:\n    a = 2\n",
        ErrorKind::ImmutableError,
        "Can not change the value of 'a', because it was declared immutable",
        4,
        5,
    ),
    (
        "a private name assigned a value of another type",
        "_a = 1\n_a = \"s\"\n",
        ErrorKind::TypeError,
        "expected int, got str(s)",
        2,
        1,
    ),
    (
        "an annotation the value does not fit",
        "_name: int = \"Green\"\n",
        ErrorKind::TypeError,
        "expected int, got str(Green)",
        1,
        1,
    ),
    (
        "a unit number where an int is declared",
        "y: int = 1Ki\n",
        ErrorKind::TypeError,
        "expected int, got number_multiplier(1Ki)",
        1,
        1,
    ),
    (
        "None in arithmetic",
        "b = 1 + None\n",
        ErrorKind::TypeError,
        "unsupported operand type(s) for +: 'int(1)' and 'NoneType'",
        1,
        5,
    ),
    (
        "a unit number in arithmetic",
        "x = 1Ki + 1\n",
        ErrorKind::TypeError,
        "unsupported operand type(s) for +: 'number_multiplier(1Ki)' and 'int(1)'",
        1,
        5,
    ),
    (
        "a conversion that cannot succeed",
        "a = 1 as str\n",
        ErrorKind::TypeError,
        "Conversion of type 'int(1)' to type 'str' may be a mistake because neither type sufficiently overlaps with the other",
        1,
        5,
    ),
    (
        "a parameter without default after one with",
        "schema A[a1 = 100, a2]:\n    a: int = a1\n",
        ErrorKind::IllegalParameterError,
        "non-default argument follows default argument",
        1,
        15,
    ),
    (
        "a string method without its argument",
        "a = \"\".startswith()\n",
        ErrorKind::CompileError,
        "expected 1 positional argument, found 0",
        1,
        5,
    ),
    (
        "a keyword a schema does not take",
        "schema Person[_name]:\n    name: str = _name\n\nperson = Person(_naem=\"Alice\") {}\n",
        ErrorKind::CompileError,
        "\"Person\" got an unexpected keyword argument '_naem', did you mean '_name'?",
        4,
        17,
    ),
    (
        "a literal type the value is not",
        "schema A:\n    x: \"TCP\" | \"UDP\"\n\na = A {\n    x: \"HTTP\"\n}\n",
        ErrorKind::TypeError,
        "expected str(TCP) | str(UDP), got str(HTTP)",
        5,
        5,
    ),
    (
        "a system module member that does not exist",
        "import math\n\na = math.err_func(1)\n",
        ErrorKind::TypeError,
        "attribute 'err_func' not found in 'module 'math''",
        3,
        5,
    ),
    (
        "a schema inheriting from a variable",
        "a: int = 2\n\nschema Son(a):\n    x: int\n",
        ErrorKind::IllegalInheritError,
        "invalid schema inherit object type, expect schema, got 'int'",
        3,
        12,
    ),
    (
        "schemas inheriting from each other",
        "schema Parent(Son):\n    a: int\n\nschema Son(Parent):\n    b: int\n",
        ErrorKind::CompileError,
        "There is a circular reference between schemas Parent, Son",
        1,
        8,
    ),
    (
        "an unknown decorator",
        "@err_deprecated\nschema A:\n    a: int\n",
        ErrorKind::CompileError,
        "UnKnown decorator err_deprecated",
        1,
        2,
    ),
    (
        "three loop variables",
        "data = [1]\ndataLoop = [i for i, j, k in data]\n",
        ErrorKind::CompileError,
        "the number of loop variables is 3, which can only be 1 or 2",
        2,
        23,
    ),
    (
        "an unknown format spec",
        "a = 1\ndata = \"${a: #js}\"\n",
        ErrorKind::CompileError,
        "#js is a invalid format spec",
        2,
        11,
    ),
    (
        "an optional selector on a module",
        "import math\n\na = math?.log(10)\n",
        ErrorKind::CompileError,
        "For the module type, the use of '?.log' is unnecessary and it can be modified as '.log'",
        3,
        9,
    ),
    (
        "a system module function given a value of the wrong type",
        "import regex\nx0 = regex.match(\"x\", 1)\n",
        ErrorKind::TypeError,
        "expected str, got int(1)",
        2,
        23,
    ),
    (
        "a builtin given a value of the wrong type",
        "d = len(1.5)\n",
        ErrorKind::TypeError,
        "expected str | {any:any} | [any], got float(1.5)",
        1,
        9,
    ),
    (
        "a system module function without its argument",
        "import file\nb = file.glob()\n",
        ErrorKind::CompileError,
        "expected 1 positional argument, found 0",
        2,
        5,
    ),
    (
        "None as a type",
        "schema A:\n    val0: None\n\na = A {}\n",
        ErrorKind::CompileError,
        "name 'None' is not defined",
        2,
        11,
    ),
];

#[test]
fn errors_carry_kcl_kind_message_and_position() {
    for (what, src, kind, message, line, column) in ERRORS {
        let errors = check_source(src);
        let Some(first) = errors.first() else {
            panic!("{what}: no error");
        };
        assert_eq!(
            (
                first.kind,
                first.message.as_str(),
                first.span().map(|s| (s.line, s.column + 1))
            ),
            (*kind, *message, Some((*line, *column))),
            "{what}"
        );
    }
}

#[test]
fn a_type_error_points_at_the_declaration_too() {
    let src = "schema Person:\n    firstName: str\n    cards: [int]\n\nJohnDoe = Person {\n    \"firstName\": \"John\",\n    \"cards\": [1, \"2\"]\n}\n";
    let errors = check_source(src);
    let labels: Vec<(u32, u32, &str)> = errors
        .first()
        .map(|e| {
            e.labels
                .iter()
                .map(|l| (l.span.line, l.span.column + 1, l.message.as_str()))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        labels,
        vec![
            (7, 5, "expected [int], got [int(1) | str(2)]"),
            (
                3,
                5,
                "variable is defined here, its type is [int], but got [int(1) | str(2)]"
            ),
        ]
    );
}

#[test]
fn a_spread_of_a_schema_with_attributes_of_its_own_type_ends() {
    let src =
        "schema A:\n    a?: A\n    b?: A\n    c?: A\n\n_a = A {}\nx = {**_a}\ny: A = {**_a}\n";
    assert_eq!(check_source(src), vec![]);
}

/// Programs real KCL runs without an error.
const ACCEPTED: &[(&str, &str)] = &[
    ("a private name assigned twice", "_a = 1\n_a = 2\n"),
    (
        "a config key referring to an earlier key",
        "c = {a: 1, b: a}\n",
    ),
    (
        "a schema attribute read before it is declared",
        "schema S:\n    b = a\n    a: int = 1\n\ns = S {}\n",
    ),
    (
        "a loop variable's name reused as a config key later",
        "res = [a for a in [1]]\nschema M:\n    [str]: [{str:str}]\n\nt: M {b += [{a = \"a\"}]}\n",
    ),
    (
        "a negative index as a config key",
        "a = {\n    arr = [1, 1, 1]\n    arr[-2] = 2\n}\n",
    ),
    (
        "a name a mixin leaves to its host",
        "schema NameMixin:\n    full = first\n",
    ),
    (
        "a capitalized unknown name in a mixin (KCL 0.12.3)",
        "mixin BrokenMixin:\n    something: str = \"abc\"\n    broken = UndefinedSchema {}\n\nschema Foo:\n    mixin [BrokenMixin]\n\nfoo = Foo {}\n",
    ),
    ("an int where a float is declared", "f: float = 1\n"),
    ("a builtin call", "n = len(\"abc\")\n"),
    (
        "a rule instance with its protocol's attributes",
        "protocol XProtocol:\n    [...str]: str\n    alice: str\n\nrule XRule for XProtocol:\n    alice == \"Alice\"\n\nx = XRule {\n    alice = \"Alice\"\n    bob = \"Bob\"\n}\n",
    ),
    (
        "a lambda called with its arguments",
        "f = lambda x: int, y: str = \"a\" {\n    x\n}\nz = f(1)\n",
    ),
];

#[test]
fn programs_kcl_accepts_pass() {
    for (what, src) in ACCEPTED {
        assert_eq!(check_source(src), vec![], "{what}");
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

#[test]
fn the_deepest_nesting_the_parser_allows_fits_in_a_small_stack() {
    let depth = 95;
    let programs = [
        format!("a = {}1{}\n", "[".repeat(depth), "]".repeat(depth)),
        format!("a = {}1{}\n", "{a: ".repeat(depth), "}".repeat(depth)),
        format!("a = {}1{}\n", "(".repeat(depth), ")".repeat(depth)),
        format!("a = {}1\n", "not ".repeat(depth)),
        format!(
            "schema A:\n    a?: A\n\nx = {}A {{}}{}\n",
            "A {a: ".repeat(depth),
            "}".repeat(depth)
        ),
    ];
    let mut checked = 0;
    for src in programs {
        let parsed = parse_file(0, "main.k", MAIN_PKG, &src);
        if !parsed.errors.is_empty() {
            continue;
        }
        checked += 1;
        let run = std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(move || {
                let mut pkgs = indexmap::IndexMap::new();
                pkgs.insert(MAIN_PKG.to_string(), vec![Rc::new(parsed.module)]);
                check_packages_all(&pkgs).len()
            })
            .map(|handle| handle.join());
        assert!(matches!(run, Ok(Ok(_))), "{src}");
    }
    assert_eq!(checked, 5, "every program parses");
}

#[test]
fn a_package_of_no_files_has_no_members() {
    /// message, line, column from 1
    type Reported = (&'static str, u32, u32);
    let cases: &[(&str, &[Reported])] = &[
        ("import ext.io.nope as n\na = 1\n", &[]),
        (
            "import ext.io.nope as n\na = n.x\n",
            &[("attribute 'x' not found in 'module 'ext.io.nope''", 2, 5)],
        ),
        (
            "import ext.io.nope\nschema S:\n    v: nope.T\n",
            &[("attribute 'T' not found in 'module 'ext.io.nope''", 3, 8)],
        ),
    ];
    for (src, want) in cases {
        let parsed = parse_file(0, "main.k", MAIN_PKG, src);
        assert_eq!(parsed.errors, vec![], "the test program parses");
        let mut pkgs: indexmap::IndexMap<String, Vec<ast::Module>> = indexmap::IndexMap::new();
        pkgs.insert(MAIN_PKG.to_string(), vec![parsed.module]);
        pkgs.insert("ext.io.nope".to_string(), Vec::new());
        let errors: Vec<(String, u32, u32)> = check_packages_all(&pkgs)
            .iter()
            .map(|e| {
                let span = e.span();
                (
                    e.message.clone(),
                    span.map_or(0, |s| s.line),
                    span.map_or(0, |s| s.column + 1),
                )
            })
            .collect();
        let want: Vec<(String, u32, u32)> = want
            .iter()
            .map(|(m, l, c)| (m.to_string(), *l, *c))
            .collect();
        assert_eq!(errors, want, "{src}");
    }
}
