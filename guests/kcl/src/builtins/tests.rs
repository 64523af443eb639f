//! The builtins against KCL 0.12.3 itself: each case is a call written in
//! KCL and what `typeof(call) + "|" + str(call)` gives (or `ERR` and the
//! runtime's message) under `kcl-lib` 0.12.3. Calls KCL's checker refuses
//! before running are left out: the checker answers those.
//!
//! The calls are read by a small reader of literals and calls, so the cases
//! stay in KCL's own syntax.

use crate::collections::HashMap;
use std::rc::Rc;

use crate::ast::NumberBinarySuffix;
use crate::error::Result;
use crate::value::{Dict, Function, FunctionKind, SchemaValue, UnitValue, Value};

use super::{Interp, lookup, method};

#[derive(Default)]
struct TestInterp {
    options: HashMap<String, Value>,
    printed: String,
}

impl Interp for TestInterp {
    fn call(&mut self, _: &Value, _: Vec<Value>, _: Vec<(String, Value)>) -> Result<Value> {
        Ok(Value::Undefined)
    }
    fn option(&self, name: &str) -> Option<Value> {
        self.options.get(name).cloned()
    }
    fn print(&mut self, text: &str) {
        self.printed.push_str(text);
    }
    fn read_file(&self, _: &str) -> Option<std::io::Result<Vec<u8>>> {
        None
    }
    fn instances(&self, _: &str) -> Vec<Value> {
        Vec::new()
    }
}

/// Reads KCL literals and calls: `name(args)` and `"text".method(args)`,
/// arguments being literals, `key=literal`, and `*` or `/` of two numbers.
struct Reader<'a> {
    text: &'a str,
    pos: usize,
}

type Call = (Option<Value>, String, Vec<Value>, Vec<(String, Value)>);

impl<'a> Reader<'a> {
    fn new(text: &'a str) -> Reader<'a> {
        Reader { text, pos: 0 }
    }

    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn skip_spaces(&mut self) {
        while self.rest().starts_with(' ') {
            self.pos += 1;
        }
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_spaces();
        if self.rest().starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, token: &str) {
        assert!(self.eat(token), "expected {token:?} at {:?}", self.rest());
    }

    fn ident(&mut self) -> Option<String> {
        self.skip_spaces();
        let len = self
            .rest()
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(self.rest().len());
        if len == 0 || self.rest().starts_with(|c: char| c.is_ascii_digit()) {
            return None;
        }
        let name = self.rest()[..len].to_string();
        self.pos += len;
        Some(name)
    }

    fn call(&mut self) -> Call {
        let receiver = if self.rest().starts_with(['"', '\'']) {
            let s = self.string();
            self.expect(".");
            Some(s)
        } else {
            None
        };
        let name = self.ident().unwrap_or_default();
        self.expect("(");
        let mut args = Vec::new();
        let mut kwargs = Vec::new();
        while !self.eat(")") {
            let start = self.pos;
            match self.ident() {
                Some(key) if self.eat("=") => kwargs.push((key, self.expr())),
                _ => {
                    self.pos = start;
                    args.push(self.expr());
                }
            }
            self.eat(",");
        }
        (receiver, name, args, kwargs)
    }

    fn expr(&mut self) -> Value {
        let left = self.literal();
        let op = if self.eat("*") {
            '*'
        } else if self.eat("/") {
            '/'
        } else {
            return left;
        };
        let right = self.literal();
        let (a, b) = (left.as_f64().unwrap_or(0.0), right.as_f64().unwrap_or(0.0));
        Value::Float(if op == '*' { a * b } else { a / b })
    }

    fn literal(&mut self) -> Value {
        self.skip_spaces();
        if self.rest().starts_with(['"', '\'']) {
            return self.string();
        }
        if self.eat("[") {
            let mut items = Vec::new();
            while !self.eat("]") {
                items.push(self.expr());
                self.eat(",");
            }
            return Value::list(items);
        }
        if self.eat("{") {
            let mut dict = Dict::new();
            while !self.eat("}") {
                let key = self.literal().to_kcl_string();
                self.expect(":");
                dict.insert(key, self.expr());
                self.eat(",");
            }
            return Value::dict(dict);
        }
        if self.eat("-") {
            return match self.literal() {
                Value::Int(i) => Value::Int(i.wrapping_neg()),
                Value::Float(f) => Value::Float(-f),
                other => panic!("cannot negate {other:?}"),
            };
        }
        if let Some(name) = self.ident() {
            return match name.as_str() {
                "True" => Value::Bool(true),
                "False" => Value::Bool(false),
                "None" => Value::None,
                "Undefined" => Value::Undefined,
                _ => panic!("unknown name {name}"),
            };
        }
        self.number()
    }

    fn number(&mut self) -> Value {
        let len = self
            .rest()
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == '+' || c == '-'))
            .unwrap_or(self.rest().len());
        let digits = &self.rest()[..len];
        self.pos += len;
        for suffix in [
            "Ki", "Mi", "Gi", "Ti", "Pi", "n", "u", "m", "k", "K", "M", "G", "T", "P",
        ] {
            if self.rest().starts_with(suffix) {
                self.pos += suffix.len();
                let raw: i64 = digits.parse().unwrap_or_default();
                let suffix = NumberBinarySuffix::from_str(suffix).unwrap_or(NumberBinarySuffix::K);
                let multiplier = match suffix.as_str() {
                    "n" => 1e-9,
                    "u" => 1e-6,
                    "m" => 1e-3,
                    "k" | "K" => 1e3,
                    "M" => 1e6,
                    "G" => 1e9,
                    "T" => 1e12,
                    "P" => 1e15,
                    "Ki" => 1024.0,
                    "Mi" => 1024f64.powi(2),
                    "Gi" => 1024f64.powi(3),
                    "Ti" => 1024f64.powi(4),
                    _ => 1024f64.powi(5),
                };
                return Value::Unit(UnitValue {
                    value: raw as f64 * multiplier,
                    raw,
                    suffix,
                });
            }
        }
        if digits.contains(['.', 'e']) {
            Value::Float(digits.parse().unwrap_or(f64::NAN))
        } else {
            // `-9223372036854775808` is read as the negation of this.
            Value::Int(digits.parse::<u64>().map_or(0, |n| n as i64))
        }
    }

    fn string(&mut self) -> Value {
        let quote = self.rest().chars().next().unwrap_or('"');
        self.pos += 1;
        let mut out = String::new();
        let mut chars = self.rest().char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                c if c == quote => {
                    self.pos += i + 1;
                    return Value::str(out);
                }
                '\\' => {
                    let Some((_, escaped)) = chars.next() else {
                        break;
                    };
                    match escaped {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        'x' | 'u' => {
                            let width = if escaped == 'x' { 2 } else { 4 };
                            let hex: String = chars.by_ref().take(width).map(|(_, c)| c).collect();
                            let code = u32::from_str_radix(&hex, 16).unwrap_or(0);
                            out.push(char::from_u32(code).unwrap_or('?'));
                        }
                        other => out.push(other),
                    }
                }
                c => out.push(c),
            }
        }
        panic!("unterminated string in {}", self.text)
    }
}

/// `typeof(result) + "|" + str(result)`, or `ERR message`.
fn run_call(interp: &mut TestInterp, call: &str) -> String {
    let (receiver, name, mut args, kwargs) = Reader::new(call).call();
    let func = match &receiver {
        Some(recv) => method(recv, &name),
        None => lookup(&name),
    };
    let Some(func) = func else {
        return format!("no builtin {name}");
    };
    if let Some(recv) = receiver {
        args.insert(0, recv);
    }
    match func(interp, &args, &kwargs) {
        Ok(Value::None) => "None|None".to_string(),
        Ok(value) => format!("{}|{}", value.runtime_type_str(), value.to_kcl_string()),
        Err(e) => format!("ERR {}", e.message),
    }
}

fn check(cases: &[(&str, &str)]) {
    let mut failures = Vec::new();
    for (call, expected) in cases {
        let got = run_call(&mut TestInterp::default(), call);
        if got != *expected {
            failures.push(format!("{call}\n  expected: {expected}\n  got:      {got}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from KCL:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn calls_give_what_kcl_gives() {
    check(ORACLE_CASES);
}

#[test]
fn option_reads_the_value_or_the_default_and_converts_it() {
    // As KCL holds `-D n=42 -D flag=true -D list=[1]` (read as JSON).
    let mut interp = TestInterp::default();
    interp.options.insert("n".into(), Value::Int(42));
    interp.options.insert("flag".into(), Value::Bool(true));
    interp
        .options
        .insert("list".into(), Value::list(vec![Value::Int(1)]));
    let cases = [
        (r#"option("n")"#, "int|42"),
        (r#"option("n", type="int")"#, "int|42"),
        (r#"option("n", type="float")"#, "float|42.0"),
        (r#"option("flag", type="bool")"#, "bool|True"),
        (r#"option("list", type="list")"#, "list|[1]"),
        (
            r#"option("list", type="dict")"#,
            "ERR cannot use '[1]' as type 'dict'",
        ),
        (r#"option("missing")"#, "None|None"),
        (r#"option("missing", default=1)"#, "int|1"),
        (r#"option("missing", default="2", type="int")"#, "int|2"),
        (
            r#"option("missing", type="bool", default="true")"#,
            "bool|True",
        ),
        (
            r#"option("missing", type="bool", default="yes")"#,
            "bool|False",
        ),
        (
            r#"option("missing", default=None, type="bool")"#,
            "UndefinedType|Undefined",
        ),
        (r#"option("missing", default=3, type="str")"#, "str|3"),
        (r#"option("missing", default=1.0, type="str")"#, "str|1"),
        (
            r#"option("missing", default="x", type="float")"#,
            "float|0.0",
        ),
        (r#"option("missing", default=1.5, type="int")"#, "int|1"),
        (
            r#"option("missing", required=True)"#,
            "ERR option('missing') must be initialized, try '-D missing=?' argument",
        ),
        (r#"option("missing", required=True, default=1)"#, "int|1"),
        (r#"option(key="n", required=True)"#, "int|42"),
        (
            r#"option("missing", default="abc", type="int")"#,
            "ERR cannot use 'abc' as type 'int'",
        ),
        (
            r#"option("missing", default=[1], type="[int]")"#,
            "ERR unknown type '[int]'",
        ),
        (
            r#"option("missing", default=1, type="list")"#,
            "ERR cannot use '1' as type 'list'",
        ),
    ];
    for (call, expected) in cases {
        assert_eq!(run_call(&mut interp, call), expected, "{call}");
    }
}

#[test]
fn print_joins_with_spaces_and_ignores_sep() {
    // KCL 0.12.3: print("a", 1, [1, "b"], sep="--") logs `a 1 [1, b]\n`.
    let cases = [
        (r#"print("a", 1, [1, "b"], sep="--")"#, "a 1 [1, b]\n"),
        (r#"print("x", end="|")"#, "x|"),
        (r#"print()"#, "\n"),
        (r#"print("y", end=None)"#, "yNone"),
        (r#"print("z", end=1)"#, "z1"),
        (
            r#"print({"a": "b"}, 1.0, None, True)"#,
            "{'a': 'b'} 1.0 None True\n",
        ),
    ];
    for (call, expected) in cases {
        let mut interp = TestInterp::default();
        assert_eq!(run_call(&mut interp, call), "None|None", "{call}");
        assert_eq!(interp.printed, expected, "{call}");
    }
}

fn schema(name: &str, pkgpath: &str, attrs: &[(&str, Value)]) -> Value {
    Value::Schema(Rc::new(SchemaValue {
        name: name.into(),
        pkgpath: pkgpath.into(),
        attrs: attrs
            .iter()
            .map(|(k, v)| ((*k).to_string(), v.clone()))
            .collect(),
        config_keys: Vec::new(),
        args: Vec::new(),
        kwargs: Vec::new(),
        ty: None,
    }))
}

#[test]
fn schema_instances_print_and_type_as_kcl_does() {
    // schema P: x: int = 1; y: str = "s"; z?: [str] = ["q"]
    let p = schema(
        "P",
        "__main__",
        &[
            ("x", Value::Int(1)),
            ("y", Value::str("s")),
            ("z", Value::list(vec![Value::str("q")])),
        ],
    );
    assert_eq!(p.to_kcl_string(), "{'x': 1, 'y': 's', 'z': [q]}");
    assert_eq!(
        Value::list(vec![p.clone()]).to_kcl_string(),
        "[{'x': 1, 'y': 's', 'z': [q]}]"
    );
    let mut interp = TestInterp::default();
    let call = |interp: &mut TestInterp, name: &str, arg: &Value, kwargs: &[(String, Value)]| {
        lookup(name)
            .map(|f| f(interp, std::slice::from_ref(arg), kwargs).map(|v| v.to_kcl_string()))
    };
    let full = [("full_name".to_string(), Value::Bool(true))];
    assert_eq!(call(&mut interp, "typeof", &p, &[]), Some(Ok("P".into())));
    assert_eq!(call(&mut interp, "typeof", &p, &full), Some(Ok("P".into())));
    let q = schema("Q", "pkg.sub", &[("a", Value::Int(0))]);
    assert_eq!(call(&mut interp, "typeof", &q, &[]), Some(Ok("Q".into())));
    assert_eq!(
        call(&mut interp, "typeof", &q, &full),
        Some(Ok("pkg.sub.Q".into()))
    );
    assert_eq!(call(&mut interp, "len", &p, &[]), Some(Ok("3".into())));
    assert_eq!(call(&mut interp, "max", &p, &[]), Some(Ok("z".into())));
    assert_eq!(
        call(&mut interp, "list", &p, &[]),
        Some(Ok("[x, y, z]".into()))
    );
    assert_eq!(
        call(&mut interp, "sorted", &p, &[]),
        Some(Err(super::fail("sorted only for str|list|dict type")))
    );
    // KCL 0.12.3's all_true on an instance is true only when no attribute
    // is truthy; any_true is as expected.
    assert_eq!(
        call(&mut interp, "all_true", &p, &[]),
        Some(Ok("False".into()))
    );
    assert_eq!(
        call(&mut interp, "all_true", &q, &[]),
        Some(Ok("True".into()))
    );
    assert_eq!(
        call(&mut interp, "any_true", &q, &[]),
        Some(Ok("False".into()))
    );
    assert_eq!(
        call(&mut interp, "dict", &p, &[]),
        Some(Ok("{'x': 1, 'y': 's', 'z': [q]}".into()))
    );
}

#[test]
fn functions_print_as_function() {
    // KCL 0.12.3: str(len) and typeof(len) are both `function`.
    let len = Value::Function(Rc::new(Function {
        name: "len".into(),
        kind: FunctionKind::Builtin(lookup("len").unwrap_or(|_, _, _| Ok(Value::None))),
    }));
    assert_eq!(len.to_kcl_string(), "function");
    assert_eq!(len.runtime_type_str(), "function");
    assert_eq!(Value::list(vec![len.clone()]).to_kcl_string(), "[function]");
}

#[test]
fn interpolation_specs_print_json_and_yaml() {
    // KCL 0.12.3: x = {"a": [1, "b"], "c": None, "_d": 1.5, "e": {"f": True},
    // "g": 1Ki}; "${x: #json}", "${x: #yaml}", "${[1, 'x']: #JSON}", "${'s': #yaml}".
    let x = Reader::new(r#"{"a": [1, "b"], "c": None, "_d": 1.5, "e": {"f": True}, "g": 1Ki}"#)
        .literal();
    let cases = [
        (
            x.clone(),
            "#json",
            r#"{"a": [1, "b"], "c": null, "_d": 1.5, "e": {"f": true}, "g": 1024.0}"#,
        ),
        (
            x,
            "#yaml",
            "a:\n- 1\n- b\nc: null\n_d: 1.5\ne:\n  f: true\ng: 1024.0\n",
        ),
        (
            Value::list(vec![Value::Int(1), Value::str("x")]),
            "#JSON",
            r#"[1, "x"]"#,
        ),
        (Value::str("s"), "#yaml", "s\n"),
    ];
    for (value, spec, expected) in cases {
        assert_eq!(
            super::format_with_spec(&value, spec).map_err(|e| e.message),
            Ok(expected.to_string()),
            "{spec}"
        );
    }
}

#[test]
fn interpolation_specs_other_than_json_and_yaml_are_refused() {
    let err = super::format_with_spec(&Value::Int(1), "#toml");
    assert_eq!(
        err.map_err(|e| e.message),
        Err("Invalid string interpolation format specification".to_string())
    );
}

#[test]
fn unknown_names_are_not_builtins() {
    assert!(lookup("catch").is_none());
    assert!(method(&Value::str("a"), "foo").is_none());
    assert!(method(&Value::list(Vec::new()), "upper").is_none());
    // KCL 0.12.3's builtin table and string methods, and `reduce`.
    let builtins = [
        "option",
        "print",
        "multiplyof",
        "isunique",
        "isnullish",
        "len",
        "abs",
        "all_true",
        "any_true",
        "hex",
        "bin",
        "oct",
        "ord",
        "sorted",
        "range",
        "max",
        "min",
        "sum",
        "pow",
        "round",
        "zip",
        "int",
        "float",
        "bool",
        "str",
        "list",
        "dict",
        "typeof",
        "reduce",
    ];
    let string_methods = [
        "capitalize",
        "chars",
        "count",
        "endswith",
        "find",
        "format",
        "index",
        "isalpha",
        "isalnum",
        "isdigit",
        "islower",
        "isspace",
        "istitle",
        "isupper",
        "join",
        "lower",
        "upper",
        "lstrip",
        "rstrip",
        "replace",
        "removeprefix",
        "removesuffix",
        "rfind",
        "rindex",
        "rsplit",
        "split",
        "splitlines",
        "startswith",
        "strip",
        "title",
    ];
    assert!(builtins.iter().all(|n| lookup(n).is_some()));
    assert!(
        string_methods
            .iter()
            .all(|n| method(&Value::str(""), n).is_some())
    );
}

#[test]
fn quantities_read_unit_suffixes() {
    let cases: &[(&str, Result<i64, &str>)] = &[
        ("5", Ok(5)),
        ("2Ki", Ok(2048)),
        ("3k", Ok(3000)),
        ("1m", Ok(0)),
        ("-1Gi", Ok(-1_073_741_824)),
        ("Ki", Err("number can't be empty")),
        (
            "1.5",
            Err(
                "called `Result::unwrap()` on an `Err` value: ParseIntError { kind: InvalidDigit }",
            ),
        ),
    ];
    for (text, expected) in cases {
        let got = super::parse_quantity(text);
        assert_eq!(
            got.map_err(|e| e.message),
            expected.map_err(str::to_string),
            "{text}"
        );
    }
}

#[test]
fn int_with_a_base_other_than_10_reads_prefixed_digits() {
    // KCL's grammar suite (builtins/int/base_parameter), after 0.12.3.
    let cases = [
        (r#"int("0xe4", base=16)"#, "int|228"),
        (r#"int("0XFF", base=16)"#, "int|255"),
        (r#"int("e4", base=16)"#, "int|228"),
        (r#"int("0o755", base=8)"#, "int|493"),
        (r#"int("0b1010", base=2)"#, "int|10"),
        (r#"int("-0x10", base=16)"#, "int|-16"),
        (r#"int("z", 36)"#, "int|35"),
        (
            r#"int("1Ki", 16)"#,
            "ERR invalid literal for int() with base 16: '1Ki'",
        ),
    ];
    for (call, expected) in cases {
        assert_eq!(
            run_call(&mut TestInterp::default(), call),
            expected,
            "{call}"
        );
    }
}

include!("oracle_cases.rs");
