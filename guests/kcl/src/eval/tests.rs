//! The evaluator end to end: programs and what KCL 0.12.3 prints for
//! them (each expectation taken from kcl-lib).

use crate::error::ErrorKind;
use crate::{RunOptions, run};

fn run_source(source: &str) -> Result<String, crate::KclError> {
    let options = RunOptions {
        sources: vec![("main.k".to_string(), source.to_string())],
        ..RunOptions::default()
    };
    run(&options).map(|o| o.yaml).map_err(|e| e.error)
}

#[test]
fn programs_print_what_kcl_prints() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "and_or_return_operands",
            r#"a = 0 or "x"
b = 1 and []
c = not None
"#,
            r#"a: x
b: []
c: true
"#,
        ),
        (
            "chained_compare_and_in",
            r#"a = 1 < 2 < 3
b = 1 < 3 < 2
c = "a" in {a: 1}
d = 2 in [1, 2]
e = "bc" in "abc"
"#,
            r#"a: true
b: false
c: true
d: true
e: true
"#,
        ),
        (
            "comprehensions",
            r#"a = [x * y for x in [1, 2] for y in [10, 20] if x * y != 20]
b = {k: v + 1 for k, v in {a: 1, b: 2}}
c = [i for i, v in ["a", "b"]]
"#,
            r#"a:
- 10
- 40
b:
  a: 2
  b: 3
c:
- 0
- 1
"#,
        ),
        (
            "config_union_override_insert",
            r#"a = {x: {y: 1}, l: [1]}
b = a | {x: {z: 2}}
c = {
    x: 1
    x = 2
    l = [1]
    l += [2]
}
"#,
            r#"a:
  x:
    'y': 1
  l:
  - 1
b:
  x:
    'y': 1
    z: 2
  l:
  - 1
c:
  x: 2
  l:
  - 1
  - 2
"#,
        ),
        (
            "dotted_keys_and_spread",
            r#"_base = {a: 1}
c = {
    **_base
    b.c.d: 1
    b.c.e: 2
}
"#,
            r#"c:
  a: 1
  b:
    c:
      d: 1
      e: 2
"#,
        ),
        (
            "float_conv",
            r#"schema S:
    x: float = 1
    y: float
s = S {y = 2}
z: float = 3
"#,
            r#"s:
  x: 1
  'y': 2
z: 3
"#,
        ),
        (
            "if_entries",
            r#"_on = True
c = {
    if _on:
        a: 1
    elif False:
        a: 2
    else:
        a: 3
    l: [1, if _on: 2, 3]
}
"#,
            r#"c:
  a: 1
  l:
  - 1
  - 2
  - 3
"#,
        ),
        (
            "if_statement",
            r#"a = 1
if a > 0:
    b = "pos"
if a < 0:
    c = "neg"
"#,
            r#"a: 1
b: pos
"#,
        ),
        (
            "index_signature",
            r#"schema Labels:
    [key: str]: str
    app: str = "web"
l = Labels {tier = "front"}
"#,
            r#"l:
  app: web
  tier: front
"#,
        ),
        (
            "instance_union_reevaluates",
            r#"schema S:
    a: int = 1
    b: int = a * 2
s = S {} | {a = 5}
"#,
            r#"s:
  a: 5
  b: 10
"#,
        ),
        (
            "int_float_ops",
            r#"a = 7 // -2
b = -7 % 3
c = 1 / 2
d = 2 ** 10
e = 7.5 // 2
f = 1 << 4
g = 6 ^ 3
h = "ab" * 3
i = [1] + [2]
"#,
            r#"a: -4
b: 2
c: 0.5
d: 1024
e: 3.0
f: 16
g: 5
h: ababab
i:
- 1
- 2
"#,
        ),
        (
            "lambda_closure_and_defaults",
            r#"f = lambda x, y = 2 { x + y }
a = f(1)
b = f(1, y = 5)
mk = lambda n { lambda x { x + n } }
c = mk(10)(1)
"#,
            r#"a: 3
b: 6
c: 11
"#,
        ),
        (
            "lazy_order",
            r#"a = b + 1
b = c * 2
c = 3
"#,
            r#"a: 7
b: 6
c: 3
"#,
        ),
        (
            "list_index_insert",
            r#"c = {l = [1, 2, 3]}
d = c | {l[0] += [0]}
"#,
            r#"c:
  l:
  - 1
  - 2
  - 3
d:
  l:
  - 0
  - 1
  - 2
  - 3
"#,
        ),
        (
            "multiple_schema_exprs_last_wins",
            r#"schema A:
    a: int = 1
A {}
A {a = 2}
"#,
            r#"a: 2
"#,
        ),
        (
            "optional_access",
            r#"d = {a: {b: 1}}
x = d?.a?.b
y = d.c?.e
"#,
            r#"d:
  a:
    b: 1
x: 1
'y': null
"#,
        ),
        (
            "optional_access_of_a_falsy_value_is_none",
            r#"ready = lambda o = "" { o?.Resource }
at = lambda o { o?[0] }
part = lambda o { o?[1:] }
lower = lambda o { o?.lower() }
a = ready()
b = [ready(0), ready([]), ready({}), ready(False)]
c = [at(""), at([]), part(""), part(None)]
d = typeof(lower(""))
e = at("xy")
"#,
            r#"a: null
b:
- null
- null
- null
- null
c:
- null
- null
- null
- null
d: UndefinedType
e: x
"#,
        ),
        (
            "private_hidden_and_final_value",
            r#"_x = 1
y = _x
_x = 2
"#,
            r#"'y': 2
"#,
        ),
        (
            "quantifiers",
            r#"a = all x in [1, 2] { x > 0 }
b = any x in [1, 2] { x > 1 }
c = map x in [1, 2] { x * 2 }
d = filter k, v in {a: 1, b: 2} { v > 1 }
"#,
            r#"a: true
b: true
c:
- 2
- 4
d:
  b: 2
"#,
        ),
        (
            "schema_body_statements",
            r#"schema S:
    n: int = 2
    if n > 1:
        big: bool = True
    items: [int] = [i for i in [] if i]
    items += [n]
s = S {}
"#,
            r#"s:
  'n': 2
  big: true
  items:
  - 2
"#,
        ),
        (
            "schema_defaults_and_config",
            r#"schema S:
    b: int = a + 1
    a: int = 1
    d: {str:str} = {x = "1"}
    n?: int
s = S {a = 5, d: {y = "2"}}
"#,
            r#"s:
  b: 6
  a: 5
  d:
    x: '1'
    'y': '2'
"#,
        ),
        (
            "schema_inheritance_and_mixin",
            r#"schema Base:
    name: str = "base"
    kind: str = "b"
schema NameMixin:
    upper: str = name + "!"
schema Child(Base):
    mixin [NameMixin]
    kind: str = "child"
c = Child {name = "x"}
"#,
            r#"c:
  name: x
  kind: child
  upper: x!
"#,
        ),
        (
            "schema_parameters",
            r#"schema Person[sep]:
    first: str
    last: str
    full: str = first + sep + last
p = Person("-") {first = "a", last = "b"}
"#,
            r#"p:
  first: a
  last: b
  full: a-b
"#,
        ),
        (
            "slices",
            r#"l = [0, 1, 2, 3, 4]
a = l[::-1]
b = l[1:-1]
c = l[-2:]
d = "hello"[::2]
e = l[-1]
"#,
            r#"l:
- 0
- 1
- 2
- 3
- 4
a:
- 4
- 3
- 2
- 1
- 0
b:
- 1
- 2
- 3
c:
- 3
- 4
d: hlo
e: 4
"#,
        ),
        (
            "string_interpolation",
            r#"n = 3
s = "n=${n}, twice=${n * 2}"
_d = {a: 1}
j = "${_d: #json}"
"#,
            r#"'n': 3
s: n=3, twice=6
j: '{"a": 1}'
"#,
        ),
        (
            "top_level_expression_output",
            r#"{k: 1}
v = 2
"#,
            r#"k: 1
v: 2
"#,
        ),
        (
            "typed_conversion",
            r#"schema P:
    name: str
a: float = 1
b: P = {name = "x"}
c: [P] = [{name = "y"}]
d: "a" | "b" = "a"
"#,
            r#"a: 1
b:
  name: x
c:
- name: 'y'
d: a
"#,
        ),
        (
            "unification_statements_merge",
            r#"schema P:
    name: str
    age: int
alice: P {name: "a"}
alice: P {age: 1}
"#,
            r#"alice:
  name: a
  age: 1
"#,
        ),
        (
            "unit_numbers",
            r#"a = 1Ki
b = 2M
"#,
            r#"a: 1024.0
b: 2000000.0
"#,
        ),
        (
            "insert_in_nested_if_applies_once",
            r#"schema S:
    l: [int] = [1]
    if True:
        if True:
            l += [2]
s = S {}
"#,
            r#"s:
  l:
  - 1
  - 2
"#,
        ),
    ];
    for (name, source, want) in cases {
        match run_source(source) {
            Ok(got) => assert_eq!(got, *want, "{name}"),
            Err(e) => panic!("{name}: {e}"),
        }
    }
}

#[test]
fn runtime_errors_have_kcls_kind_and_message() {
    let cases: &[(&str, &str, ErrorKind, &str)] = &[
        (
            "int_overflow",
            "a = 9223372036854775807 + 1\n",
            ErrorKind::IntOverflow,
            "9223372036854775808: A 64 bit integer overflow",
        ),
        (
            "as_names_why_an_instance_is_not_the_schema",
            "schema Bar:\n    bar: int = 1\nschema Foo:\n    foo: int = 1\nf: Foo | Bar = Foo {}\nb = f as Bar\n",
            ErrorKind::EvaluationError,
            "expect Bar, got Foo. For details:\nSchema Bar does not contain attribute foo\nSchema Bar's attribute bar is missing",
        ),
        (
            "an_attribute_with_a_default_is_listed_missing",
            "schema B:\n    a: int = 1\n    b: str\n\nd: {str:} = {c = 1}\nx: B = d\n",
            ErrorKind::EvaluationError,
            "expect B, got dict. For details:\nSchema B does not contain attribute c\nSchema B's attribute a is missing\nSchema B's attribute b is missing",
        ),
        (
            "as_with_every_attribute_present",
            "schema Bar:\n    bar: int = 1\nschema Foo:\n    foo: int = 1\n    bar: int = 2\nf: Foo | Bar = Foo {}\nb = f as Bar\n",
            ErrorKind::EvaluationError,
            "expect Bar, got Foo. For details:\nSchema Bar does not contain attribute foo",
        ),
        (
            "conflicting_values",
            "a = {x: 1, x: 2}\n",
            ErrorKind::EvaluationError,
            "conflicting values on the attribute 'x' between :\n    1\nand\n    2",
        ),
        (
            "required_attribute",
            "schema P:\n    name: str\n    age: int\np = P {name = \"a\"}\n",
            ErrorKind::EvaluationError,
            "attribute 'age' of P is required and can't be None or Undefined",
        ),
        (
            "check_block",
            "schema P:\n    age: int\n    check:\n        age > 0, \"positive\"\np = P {age = -1}\n",
            ErrorKind::SchemaCheckFailure,
            "Instance check failed",
        ),
        (
            "assert_message",
            "assert 1 == 2, \"no\"\n",
            ErrorKind::AssertionError,
            "no",
        ),
        (
            "optional_access_of_a_truthy_int",
            "get = lambda o { o?.x }\nr = get(1)\n",
            ErrorKind::EvaluationError,
            "invalid value 'int' to load attribute 'x'",
        ),
        (
            "optional_access_of_a_string_without_that_method",
            "get = lambda o { o?.x }\nr = get(\"a\")\n",
            ErrorKind::EvaluationError,
            "str object attr 'x' not found",
        ),
        (
            "optional_access_guards_its_first_name_alone",
            "get = lambda o { o?.x.y }\nr = get(\"\")\n",
            ErrorKind::EvaluationError,
            "invalid value 'NoneType' to load attribute 'y'",
        ),
        (
            "optional_index_out_of_range",
            "at = lambda o { o?[5] }\nr = at([1])\n",
            ErrorKind::EvaluationError,
            "list index out of range: 5",
        ),
        (
            "optional_index_of_a_truthy_int",
            "at = lambda o { o?[0] }\nr = at(1)\n",
            ErrorKind::EvaluationError,
            "'int' object is not subscriptable with 'int'",
        ),
        (
            "optional_slice_of_a_dict",
            "part = lambda o { o?[0:1] }\nr = part({a = 1})\n",
            ErrorKind::EvaluationError,
            "invalid slice object dict",
        ),
        (
            "unbounded_recursion",
            "f = lambda n { f(n + 1) }\na = f(0)\n",
            ErrorKind::RecursionError,
            "maximum recursion depth exceeded",
        ),
    ];
    for (name, source, kind, message) in cases {
        match run_source(source) {
            Ok(out) => panic!("{name}: expected an error, got {out}"),
            Err(e) => {
                assert_eq!(e.kind, *kind, "{name}: {e}");
                assert!(e.message.starts_with(message), "{name}: {}", e.message);
            }
        }
    }
}

/// Evaluates without the checker (which refuses some programs before the
/// evaluator would).
fn evaluate_only(source: &str) -> Result<crate::value::Value, crate::KclError> {
    let parsed = crate::parser::parse_file(0, "main.k", super::MAIN_PKG, source);
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
    let mut program = super::Program::default();
    program.packages.insert(
        super::MAIN_PKG.to_string(),
        vec![std::rc::Rc::new(parsed.module)],
    );
    super::evaluate(program, super::EvalOptions::default())
        .map(|e| e.output)
        .map_err(|(e, _)| e)
}

#[test]
fn exported_names_are_set_by_one_statement() {
    let e = evaluate_only("a = 1\na += 1\n").unwrap_err();
    assert_eq!(e.kind, ErrorKind::ImmutableError);
    assert_eq!(
        e.message,
        "Can not change the value of 'a', because it was declared immutable"
    );
    assert_eq!(
        e.notes,
        ["change the variable name to '_a' to make it mutable"]
    );
    let ok = evaluate_only("_a = 1\n_a += 1\nb = _a\n").unwrap();
    assert!(matches!(
        ok.as_dict().and_then(|d| d.get("b")),
        Some(crate::value::Value::Int(2))
    ));
}

#[test]
fn a_failed_check_names_its_condition() {
    let source =
        "schema P:\n    age: int\n    check:\n        age > 0, \"positive\"\np = P {age = -1}\n";
    let e = run_source(source).unwrap_err();
    let labels: Vec<&str> = e.labels.iter().map(|l| l.message.as_str()).collect();
    assert_eq!(
        labels,
        [
            "Instance check failed",
            "Check failed on the condition: positive"
        ]
    );
}

#[test]
fn a_config_converted_by_an_annotation_is_made_at_the_last_node_entered() {
    // (program, line KCL 0.12.3 points at): KCL records where the
    // conversion began, after the whole value was evaluated.
    let cases: &[(&str, u32)] = &[
        (
            "schema Data:\n    name: str\n    type: str\n\nd = {name = \"x\"}\n\nds: {str:Data} = {\n    a = d\n}\n",
            8,
        ),
        (
            "schema Data:\n    name: str\n    type: str\n\nds: [Data] = [\n    {name = \"x\"}\n]\n",
            6,
        ),
        (
            "schema Data:\n    name: str\n\nd: Data = {\n    name = None\n}\n",
            5,
        ),
        ("schema Values:\n    a: int\n\nvalues: Values = {}\n", 4),
    ];
    for (source, line) in cases {
        let e = run_source(source).unwrap_err();
        assert_eq!(e.kind, ErrorKind::EvaluationError, "{source}");
        assert!(
            e.message
                .ends_with("is required and can't be None or Undefined"),
            "{source}: {}",
            e.message
        );
        let lines: Vec<u32> = e.labels.iter().map(|l| l.span.line).collect();
        assert_eq!(lines, [*line], "{source}");
    }
}

#[test]
fn an_index_signature_default_merged_with_a_value_keeps_the_origin_kcl_reports() {
    let schemas = "schema C:\n    name: str\n    $type: str\n\nschema Cs:\n";
    // (index signature, entry, line KCL 0.12.3 points at)
    let cases: &[(&str, &str, u32)] = &[
        ("[n: str]: C = C {name: n}", "ws: C {}", 6),
        ("[n: str]: C = {name: n}", "ws: C {}", 9),
        ("[n: str]: C = C {name: n}", "ws: {}", 6),
    ];
    for (signature, entry, line) in cases {
        let source = format!("{schemas}    {signature}\n\ncs: Cs {{\n    {entry}\n}}\n");
        let e = run_source(&source).unwrap_err();
        assert_eq!(
            e.message, "attribute 'type' of C is required and can't be None or Undefined",
            "{source}"
        );
        let lines: Vec<u32> = e.labels.iter().map(|l| l.span.line).collect();
        assert_eq!(lines, [*line], "{source}");
    }
}

#[test]
fn an_empty_config_refused_as_an_argument_points_at_the_schema_body_end() {
    // (program, line): from KCL's grammar suite (schema/param_validation),
    // whose KCL is newer than 0.12.3 (0.12.3 accepts `User({})`).
    let cases: &[(&str, u32)] = &[(
        "schema User[arg: Arg]:\n    name: str = \"${arg.envName}\"\n\nschema Arg:\n    envName: \"staging\" | \"production\"\n\n_user = User({})\n",
        5,
    )];
    for (source, line) in cases {
        let e = run_source(source).unwrap_err();
        assert!(
            e.message.starts_with("expect Arg, got dict. For details:"),
            "{source}: {}",
            e.message
        );
        let lines: Vec<u32> = e.labels.iter().map(|l| l.span.line).collect();
        assert_eq!(lines, [*line], "{source}");
    }
}
