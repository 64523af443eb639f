//! Go's `fmt.Sprintf` of JSON values, as Crossplane's Go code renders them,
//! including its error texts (`%!d(string=x)`, `%!(EXTRA ...)`, ...).
//!
//! This file parses the format and dispatches arguments (Go's `print.go`);
//! `verbs` formats one argument for one verb (Go's `format.go`).

mod verbs;

use serde_json::Value;

use crate::value::{GoNumber, MAP_TYPE, SLICE_TYPE, go_type_name};

/// Go's `fmt.Sprint("%v", value)`.
pub fn format_v(value: &Value) -> String {
    sprintf("%v", std::slice::from_ref(value))
}

/// Go's `fmt.Sprintf(format, args...)`.
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut p = Printer::default();
    p.do_printf(format, args);
    p.buf
}

/// Go refuses widths and precisions above 1e6 (`tooLarge`).
const MAX_NUM: usize = 1_000_000;

#[derive(Debug, Default, Clone, Copy)]
struct Flags {
    plus: bool,
    minus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    plus_v: bool,
    sharp_v: bool,
    wid: Option<usize>,
    prec: Option<usize>,
}

#[derive(Default)]
struct Printer {
    buf: String,
    f: Flags,
    good_arg_num: bool,
    reordered: bool,
}

/// Go's `parsenum`: a decimal number in `s[start..end]`, or none.
fn parse_num(s: &[u8], start: usize, end: usize) -> (Option<usize>, usize) {
    if start >= end {
        return (None, end);
    }
    let mut num = 0usize;
    let mut found = false;
    let mut i = start;
    while i < end && s[i].is_ascii_digit() {
        if num > MAX_NUM {
            return (None, end);
        }
        num = num * 10 + usize::from(s[i] - b'0');
        found = true;
        i += 1;
    }
    (found.then_some(num), i)
}

/// Go's `parseArgNumber` on `s` starting at a `[`: (index, width, ok).
fn parse_arg_number(s: &[u8]) -> (Option<usize>, usize, bool) {
    if s.len() < 3 {
        return (None, 1, false);
    }
    for i in 1..s.len() {
        if s[i] == b']' {
            let (num, newi) = parse_num(s, 1, i);
            return match num {
                Some(n) if newi == i => (n.checked_sub(1), i + 1, true),
                _ => (None, i + 1, false),
            };
        }
    }
    (None, 1, false)
}

impl Printer {
    fn arg_number(
        &mut self,
        arg_num: usize,
        format: &[u8],
        i: usize,
        num_args: usize,
    ) -> (usize, usize, bool) {
        if format.len() <= i || format[i] != b'[' {
            return (arg_num, i, false);
        }
        self.reordered = true;
        let (index, wid, ok) = parse_arg_number(&format[i..]);
        if ok && let Some(index) = index.filter(|ix| *ix < num_args) {
            return (index, i + wid, true);
        }
        self.good_arg_num = false;
        (arg_num, i + wid, ok)
    }

    /// Go's `intFromArg` for `*` widths: only integer arguments count.
    fn int_from_arg(args: &[Value], arg_num: usize) -> (Option<i64>, usize) {
        let Some(arg) = args.get(arg_num) else {
            return (None, arg_num);
        };
        let num = match arg {
            Value::Number(n) => match GoNumber::of(n) {
                GoNumber::Int(i) if (-(MAX_NUM as i64)..=MAX_NUM as i64).contains(&i) => Some(i),
                _ => None,
            },
            _ => None,
        };
        (num, arg_num + 1)
    }

    fn do_printf(&mut self, format: &str, args: &[Value]) {
        let bytes = format.as_bytes();
        let end = bytes.len();
        let mut arg_num = 0usize;
        let mut after_index;
        self.reordered = false;
        let mut i = 0usize;
        while i < end {
            self.good_arg_num = true;
            let lasti = i;
            while i < end && bytes[i] != b'%' {
                i += 1;
            }
            if i > lasti {
                self.buf.push_str(&format[lasti..i]);
            }
            if i >= end {
                break;
            }
            i += 1;
            self.f = Flags::default();
            while i < end {
                match bytes[i] {
                    b'#' => self.f.sharp = true,
                    b'0' => self.f.zero = !self.f.minus,
                    b'+' => self.f.plus = true,
                    b'-' => {
                        self.f.minus = true;
                        self.f.zero = false;
                    }
                    b' ' => self.f.space = true,
                    _ => break,
                }
                i += 1;
            }
            (arg_num, i, after_index) = self.arg_number(arg_num, bytes, i, args.len());
            if i < end && bytes[i] == b'*' {
                i += 1;
                let (num, next) = Self::int_from_arg(args, arg_num);
                arg_num = next;
                match num {
                    Some(w) => {
                        if w < 0 {
                            self.f.minus = true;
                            self.f.zero = false;
                        }
                        self.f.wid = Some(w.unsigned_abs() as usize);
                    }
                    None => self.buf.push_str("%!(BADWIDTH)"),
                }
                after_index = false;
            } else {
                let (wid, next) = parse_num(bytes, i, end);
                self.f.wid = wid;
                i = next;
                if after_index && wid.is_some() {
                    self.good_arg_num = false;
                }
            }
            if i + 1 < end && bytes[i] == b'.' {
                i += 1;
                if after_index {
                    self.good_arg_num = false;
                }
                (arg_num, i, after_index) = self.arg_number(arg_num, bytes, i, args.len());
                if i < end && bytes[i] == b'*' {
                    i += 1;
                    let (num, next) = Self::int_from_arg(args, arg_num);
                    arg_num = next;
                    match num {
                        Some(p) if p >= 0 => self.f.prec = Some(p as usize),
                        // A negative precision means none, silently.
                        Some(_) => self.f.prec = None,
                        None => self.buf.push_str("%!(BADPREC)"),
                    }
                    after_index = false;
                } else {
                    let (prec, next) = parse_num(bytes, i, end);
                    self.f.prec = Some(prec.unwrap_or(0));
                    i = next;
                }
            }
            if !after_index {
                (arg_num, i, _) = self.arg_number(arg_num, bytes, i, args.len());
            }
            if i >= end {
                self.buf.push_str("%!(NOVERB)");
                break;
            }
            let Some(verb) = format[i..].chars().next() else {
                break;
            };
            i += verb.len_utf8();
            if verb == '%' {
                self.buf.push('%');
            } else if !self.good_arg_num {
                self.buf.push_str(&format!("%!{verb}(BADINDEX)"));
            } else if arg_num >= args.len() {
                self.buf.push_str(&format!("%!{verb}(MISSING)"));
            } else {
                if verb == 'v' {
                    self.f.sharp_v = self.f.sharp;
                    self.f.sharp = false;
                    self.f.plus_v = self.f.plus;
                    self.f.plus = false;
                }
                self.print_arg(&args[arg_num], verb);
                arg_num += 1;
            }
        }
        if !self.reordered && arg_num < args.len() {
            self.f = Flags::default();
            self.buf.push_str("%!(EXTRA ");
            for (n, arg) in args[arg_num..].iter().enumerate() {
                if n > 0 {
                    self.buf.push_str(", ");
                }
                if arg.is_null() {
                    self.buf.push_str("<nil>");
                } else {
                    self.buf.push_str(go_type_name(arg));
                    self.buf.push('=');
                    self.print_arg(arg, 'v');
                }
            }
            self.buf.push(')');
        }
    }

    fn print_arg(&mut self, arg: &Value, verb: char) {
        if arg.is_null() {
            match verb {
                'T' | 'v' => self.pad_str("<nil>"),
                _ => self.bad_verb(verb, arg),
            }
            return;
        }
        if verb == 'T' {
            self.fmt_s(go_type_name(arg));
            return;
        }
        self.print_value(arg, verb);
    }

    fn print_value(&mut self, value: &Value, verb: char) {
        match value {
            // Only reachable nested: a nil interface inside a map or slice.
            Value::Null => {
                if self.f.sharp_v {
                    self.buf.push_str("interface {}(nil)");
                } else {
                    self.buf.push_str("<nil>");
                }
            }
            Value::Bool(b) => match verb {
                't' | 'v' => self.pad_str(if *b { "true" } else { "false" }),
                _ => self.bad_verb(verb, value),
            },
            Value::Number(n) => match GoNumber::of(n) {
                GoNumber::Int(i) => self.fmt_integer(i, verb, value),
                GoNumber::Float(f) => self.fmt_float_verb(f, verb, value),
            },
            Value::String(s) => match verb {
                'v' if self.f.sharp_v => self.fmt_q(s),
                'v' | 's' => self.fmt_s(s),
                'x' => self.fmt_sx(s.as_bytes(), b"0123456789abcdefx"),
                'X' => self.fmt_sx(s.as_bytes(), b"0123456789ABCDEFX"),
                'q' => self.fmt_q(s),
                _ => self.bad_verb(verb, value),
            },
            Value::Array(items) => {
                if self.f.sharp_v {
                    self.buf.push_str(SLICE_TYPE);
                    self.buf.push('{');
                    for (n, item) in items.iter().enumerate() {
                        if n > 0 {
                            self.buf.push_str(", ");
                        }
                        self.print_value(item, verb);
                    }
                    self.buf.push('}');
                } else {
                    self.buf.push('[');
                    for (n, item) in items.iter().enumerate() {
                        if n > 0 {
                            self.buf.push(' ');
                        }
                        self.print_value(item, verb);
                    }
                    self.buf.push(']');
                }
            }
            Value::Object(map) => {
                if self.f.sharp_v {
                    self.buf.push_str(MAP_TYPE);
                    self.buf.push('{');
                } else {
                    self.buf.push_str("map[");
                }
                for (n, (k, v)) in map.iter().enumerate() {
                    if n > 0 {
                        if self.f.sharp_v {
                            self.buf.push_str(", ");
                        } else {
                            self.buf.push(' ');
                        }
                    }
                    self.print_value(&Value::String(k.clone()), verb);
                    self.buf.push(':');
                    self.print_value(v, verb);
                }
                self.buf.push(if self.f.sharp_v { '}' } else { ']' });
            }
        }
    }

    /// `%!verb(type=value)`, the value printed with `%v` and the current
    /// flags, as Go does.
    fn bad_verb(&mut self, verb: char, arg: &Value) {
        self.buf.push_str("%!");
        self.buf.push(verb);
        self.buf.push('(');
        if arg.is_null() {
            self.buf.push_str("<nil>");
        } else {
            self.buf.push_str(go_type_name(arg));
            self.buf.push('=');
            self.print_arg(arg, 'v');
        }
        self.buf.push(')');
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::approx_constant)]
mod tests {
    use super::*;

    use serde_json::json;
    #[test]
    fn sprintf_matches_go_fmt() {
        // (rule, format, args, want)
        let cases: Vec<(&str, &str, Vec<Value>, &str)> = vec![
            // Reference examples (§0, §2 combine, §3 Format).
            (
                "%d on a float is a bad verb",
                "%s-%d",
                vec![json!("x"), json!(3.0)],
                "x-%!d(float64=3)",
            ),
            ("%d on an int", "%s-%d", vec![json!("x"), json!(3)], "x-3"),
            (
                "%s on an int is a bad verb",
                "%s",
                vec![json!(3)],
                "%!s(int64=3)",
            ),
            (
                "%s on a float is a bad verb",
                "%s",
                vec![json!(3.0)],
                "%!s(float64=3)",
            ),
            ("%v on an int", "%v", vec![json!(1000000)], "1000000"),
            (
                "%v on a float uses %g exponent at 1e6",
                "%v",
                vec![json!(1000000.0)],
                "1e+06",
            ),
            ("%v on 123456.0", "%v", vec![json!(123456.0)], "123456"),
            (
                "%v on 1234567.0",
                "%v",
                vec![json!(1234567.0)],
                "1.234567e+06",
            ),
            ("%v on -2.5e6", "%v", vec![json!(-2.5e6)], "-2.5e+06"),
            ("%v on 0.0001", "%v", vec![json!(0.0001)], "0.0001"),
            ("%v on 1e-5", "%v", vec![json!(1e-5)], "1e-05"),
            (
                "too few verbs",
                "x",
                vec![json!("y")],
                "x%!(EXTRA string=y)",
            ),
            (
                "too many verbs",
                "%s-%s",
                vec![json!("a")],
                "a-%!s(MISSING)",
            ),
            ("null argument to %s", "%s", vec![Value::Null], "%!s(<nil>)"),
            ("%v bool", "%v", vec![json!(true)], "true"),
            ("%v null", "%v", vec![Value::Null], "<nil>"),
            ("%v array", "%v", vec![json!(["a", 1, true])], "[a 1 true]"),
            (
                "%v map sorted",
                "%v",
                vec![json!({"b": 1, "a": "x"})],
                "map[a:x b:1]",
            ),
            ("%s on a bool", "%s", vec![json!(true)], "%!s(bool=true)"),
            ("%q string", "%q", vec![json!("x")], "\"x\""),
            ("%x string", "%x", vec![json!("hi")], "6869"),
            ("%05.2f", "%05.2f", vec![json!(3.14159)], "03.14"),
            ("width on %s", "[%5s]", vec![json!("ab")], "[   ab]"),
            ("%% is literal", "100%%", vec![], "100%"),
            ("%% takes no argument", "%%%s", vec![json!("a")], "%a"),
            (
                "format without verbs",
                "static",
                vec![json!("x")],
                "static%!(EXTRA string=x)",
            ),
            // Argument indexes.
            (
                "explicit index reused",
                "%[1]s-%[1]s",
                vec![json!("a")],
                "a-a",
            ),
            (
                "explicit index reorders",
                "%[2]s %[1]s",
                vec![json!("a"), json!("b")],
                "b a",
            ),
            (
                "explicit index continues",
                "%[2]s %s",
                vec![json!("a"), json!("b"), json!("c")],
                "b c",
            ),
            ("bad index", "%[3]s", vec![json!("a")], "%!s(BADINDEX)"),
            (
                "zero index is bad",
                "%[0]s",
                vec![json!("a")],
                "%!s(BADINDEX)",
            ),
            (
                "reordering disables EXTRA",
                "%[1]s",
                vec![json!("a"), json!("b")],
                "a",
            ),
            (
                "unterminated index",
                "%[1s",
                vec![json!("a")],
                "%!s(BADINDEX)",
            ),
            // Integers.
            ("%d", "%d", vec![json!(42)], "42"),
            ("width", "%5d", vec![json!(42)], "   42"),
            ("left align", "%-5d|", vec![json!(42)], "42   |"),
            (
                "zero pad keeps sign first",
                "%05d",
                vec![json!(-42)],
                "-0042",
            ),
            ("plus flag", "%+d", vec![json!(42)], "+42"),
            ("space flag", "% d", vec![json!(42)], " 42"),
            ("minus overrides zero", "%-05d|", vec![json!(7)], "7    |"),
            ("hex", "%x", vec![json!(255)], "ff"),
            ("upper hex", "%X", vec![json!(255)], "FF"),
            ("hex with 0x", "%#x", vec![json!(255)], "0xff"),
            ("negative hex", "%x", vec![json!(-255)], "-ff"),
            ("octal", "%o", vec![json!(8)], "10"),
            ("octal with 0", "%#o", vec![json!(8)], "010"),
            ("octal with 0o", "%O", vec![json!(8)], "0o10"),
            ("binary", "%b", vec![json!(5)], "101"),
            ("char", "%c", vec![json!(65)], "A"),
            ("invalid char", "%c", vec![json!(-1)], "\u{fffd}"),
            ("quoted char", "%q", vec![json!(65)], "'A'"),
            ("quoted quote char", "%q", vec![json!(39)], "'\\''"),
            ("unicode", "%U", vec![json!(65)], "U+0041"),
            ("unicode with char", "%#U", vec![json!(9731)], "U+2603 '☃'"),
            ("precision pads digits", "%.3d", vec![json!(7)], "007"),
            ("zero precision zero value", "[%.0d]", vec![json!(0)], "[]"),
            ("width and precision", "%8.3d", vec![json!(7)], "     007"),
            (
                "precision disables zero flag",
                "%08.3d",
                vec![json!(7)],
                "     007",
            ),
            ("%v int ignores plus", "%+v", vec![json!(5)], "5"),
            (
                "%e on an int is a bad verb",
                "%e",
                vec![json!(3)],
                "%!e(int64=3)",
            ),
            (
                "%f on an int is a bad verb",
                "%f",
                vec![json!(3)],
                "%!f(int64=3)",
            ),
            (
                "bad verb body keeps the precision",
                "%.2f",
                vec![json!(3)],
                "%!f(int64=03)",
            ),
            (
                "huge width is no verb",
                "%017091901790959340919092959340919017929593813360",
                vec![json!(0)],
                "%!(NOVERB)%!(EXTRA int64=0)",
            ),
            (
                "EXTRA ignores flags",
                "%010.2",
                vec![json!("12345")],
                "%!(NOVERB)%!(EXTRA string=12345)",
            ),
            (
                "int64 min",
                "%d",
                vec![json!(i64::MIN)],
                "-9223372036854775808",
            ),
            (
                "beyond int64 is float64",
                "%v",
                vec![json!(u64::MAX)],
                "1.8446744073709552e+19",
            ),
            // Floats.
            (
                "%f default precision",
                "%f",
                vec![json!(3.14159)],
                "3.141590",
            ),
            ("%.2f", "%.2f", vec![json!(3.14159)], "3.14"),
            ("%.0f rounds half to even", "%.0f", vec![json!(2.5)], "2"),
            ("%e", "%e", vec![json!(123456.789)], "1.234568e+05"),
            ("%E", "%E", vec![json!(123456.789)], "1.234568E+05"),
            ("%e small", "%.2e", vec![json!(0.000123)], "1.23e-04"),
            (
                "%e three digit exponent",
                "%e",
                vec![json!(1e100)],
                "1.000000e+100",
            ),
            ("%g shortest", "%g", vec![json!(123456.789)], "123456.789"),
            ("%g large", "%g", vec![json!(1e21)], "1e+21"),
            ("%.3g", "%.3g", vec![json!(3.14159)], "3.14"),
            ("%.3g exponent", "%.3g", vec![json!(1234.5)], "1.23e+03"),
            ("%.3g of 100", "%.3g", vec![json!(100.0)], "100"),
            ("%.3g of 1.5", "%.3g", vec![json!(1.5)], "1.5"),
            ("%G", "%G", vec![json!(1e-7)], "1E-07"),
            ("plus float", "%+.1f", vec![json!(2.5)], "+2.5"),
            ("space float", "% .1f", vec![json!(2.5)], " 2.5"),
            ("float width", "%8.2f", vec![json!(3.14159)], "    3.14"),
            ("float left", "%-8.2f|", vec![json!(3.14159)], "3.14    |"),
            (
                "float zero pad negative",
                "%08.2f",
                vec![json!(-3.14159)],
                "-0003.14",
            ),
            ("sharp %g keeps zeros", "%#g", vec![json!(1.5)], "1.50000"),
            ("sharp %.0f keeps point", "%#.0f", vec![json!(3.5)], "4."),
            ("sharp %e", "%#.0e", vec![json!(3.5)], "4.e+00"),
            ("%b float", "%b", vec![json!(1.5)], "6755399441055744p-52"),
            ("%x float", "%x", vec![json!(3.5)], "0x1.cp+01"),
            ("%X float", "%X", vec![json!(-0.5)], "-0X1P-01"),
            (
                "%.1x float rounds half to even",
                "%.1x",
                vec![json!(1.96875)],
                "0x1.0p+01",
            ),
            ("%.1x float exact", "%.1x", vec![json!(1.9375)], "0x1.fp+00"),
            ("%v negative zero", "%v", vec![json!(-0.0)], "-0"),
            ("%v zero float", "%v", vec![json!(0.5 - 0.5)], "0"),
            (
                "%v shortest repr",
                "%v",
                vec![json!(0.1 + 0.2)],
                "0.30000000000000004",
            ),
            ("%v 1e20", "%v", vec![json!(1e20)], "1e+20"),
            (
                "%d on float is bad verb with %v body",
                "%d",
                vec![json!(2.5)],
                "%!d(float64=2.5)",
            ),
            // Bools, strings and bad verbs.
            ("%t", "%t", vec![json!(true)], "true"),
            ("%t width", "%5t", vec![json!(false)], "false"),
            ("%t on string", "%t", vec![json!("x")], "%!t(string=x)"),
            (
                "bad verb keeps flags",
                "%5d",
                vec![json!("x")],
                "%!d(string=    x)",
            ),
            ("unknown verb", "%z", vec![json!("x")], "%!z(string=x)"),
            ("unicode verb", "%é", vec![json!("x")], "%!é(string=x)"),
            ("%x on null", "%x", vec![Value::Null], "%!x(<nil>)"),
            ("%v null width", "%6v|", vec![Value::Null], " <nil>|"),
            ("zero pads strings", "%05s", vec![json!("ab")], "000ab"),
            (
                "precision truncates runes",
                "%.2s",
                vec![json!("héllo")],
                "hé",
            ),
            (
                "precision truncates before quoting",
                "%.1q",
                vec![json!("hello")],
                "\"h\"",
            ),
            ("%+q is ASCII only", "%+q", vec![json!("é")], "\"\\u00e9\""),
            ("%#q uses backquotes", "%#q", vec![json!("x\"y")], "`x\"y`"),
            (
                "%#q falls back to quotes",
                "%#q",
                vec![json!("a`b")],
                "\"a`b\"",
            ),
            (
                "%q escapes newlines",
                "%q",
                vec![json!("a\nb")],
                "\"a\\nb\"",
            ),
            ("% x spaces bytes", "% x", vec![json!("hi")], "68 69"),
            ("%#x prefixes once", "%#x", vec![json!("hi")], "0x6869"),
            ("% #x prefixes each", "% #x", vec![json!("hi")], "0x68 0x69"),
            ("%X string", "%X", vec![json!("hi")], "6869"),
            ("%x empty string", "[%x]", vec![json!("")], "[]"),
            ("%8x string", "%8x", vec![json!("hi")], "    6869"),
            ("%.1x string", "%.1x", vec![json!("hi")], "68"),
            // Containers.
            (
                "%s on mixed array",
                "%s",
                vec![json!(["a", 1])],
                "[a %!s(int64=1)]",
            ),
            (
                "%d on map with string keys",
                "%d",
                vec![json!({"a": 1})],
                "map[%!d(string=a):1]",
            ),
            ("%s on nil element", "%s", vec![json!([null])], "[<nil>]"),
            (
                "%v nested",
                "%v",
                vec![json!({"a": [1, {"b": null}]})],
                "map[a:[1 map[b:<nil>]]]",
            ),
            (
                "width applies per element",
                "%3v",
                vec![json!([1, 2])],
                "[  1   2]",
            ),
            ("%x on array", "%x", vec![json!(["hi", 255])], "[6869 ff]"),
            ("empty map", "%v", vec![json!({})], "map[]"),
            ("empty array", "%v", vec![json!([])], "[]"),
            ("%#v string", "%#v", vec![json!("x")], "\"x\""),
            (
                "%#v map",
                "%#v",
                vec![json!({"a": [1, "b", null]})],
                "map[string]interface {}{\"a\":[]interface {}{1, \"b\", interface {}(nil)}}",
            ),
            // Types.
            ("%T string", "%T", vec![json!("x")], "string"),
            ("%T int", "%T", vec![json!(1)], "int64"),
            ("%T float", "%T", vec![json!(1.5)], "float64"),
            ("%T map", "%T", vec![json!({})], "map[string]interface {}"),
            ("%T array", "%T", vec![json!([])], "[]interface {}"),
            ("%T null", "%T", vec![Value::Null], "<nil>"),
            // Malformed formats.
            ("trailing percent", "abc%", vec![], "abc%!(NOVERB)"),
            (
                "trailing percent with flags",
                "abc%-5",
                vec![json!(1)],
                "abc%!(NOVERB)%!(EXTRA int64=1)",
            ),
            ("missing %d", "%d", vec![], "%!d(MISSING)"),
            (
                "EXTRA lists every leftover",
                "%s",
                vec![json!("a"), json!(1), Value::Null],
                "a%!(EXTRA int64=1, <nil>)",
            ),
            (
                "EXTRA map",
                "",
                vec![json!({"k": "v"})],
                "%!(EXTRA map[string]interface {}=map[k:v])",
            ),
            ("star width", "%*d", vec![json!(5), json!(42)], "   42"),
            (
                "negative star width left-aligns",
                "%*d|",
                vec![json!(-4), json!(7)],
                "7   |",
            ),
            (
                "non-int star width",
                "%*d",
                vec![json!("x"), json!(42)],
                "%!(BADWIDTH)42",
            ),
            (
                "star precision",
                "%.*f",
                vec![json!(2), json!(3.14159)],
                "3.14",
            ),
            (
                "non-int star precision",
                "%.*f",
                vec![json!(2.5), json!(1.0)],
                "%!(BADPREC)1.000000",
            ),
            (
                "dot without digits is precision zero",
                "%.f",
                vec![json!(2.7)],
                "3",
            ),
            (
                "unicode literal text",
                "héllo %s ☃",
                vec![json!("wörld")],
                "héllo wörld ☃",
            ),
        ];
        for (rule, format, args, want) in cases {
            assert_eq!(
                sprintf(format, &args),
                want,
                "{rule}: sprintf({format:?}, {args:?})"
            );
        }
    }

    #[test]
    fn format_v_and_type_names() {
        let cases = [
            (json!("s"), "s", "string"),
            (json!(true), "true", "bool"),
            (json!(3), "3", "int64"),
            (json!(3.5), "3.5", "float64"),
            (json!({"a": 1}), "map[a:1]", "map[string]interface {}"),
            (json!([1, "x"]), "[1 x]", "[]interface {}"),
            (Value::Null, "<nil>", "<nil>"),
        ];
        for (value, v, t) in cases {
            assert_eq!(format_v(&value), v, "%v of {value}");
            assert_eq!(go_type_name(&value), t, "%T of {value}");
        }
    }
}
