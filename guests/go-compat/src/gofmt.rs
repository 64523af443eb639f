//! Go `fmt` formatting of JSON values, as Crossplane's Go code renders them.
//!
//! Values are JSON values seen through Go's `encoding/json` eyes: strings,
//! bools, `int64` (integral numbers), `float64`, `map[string]interface {}`,
//! `[]interface {}` and `nil`. `sprintf` follows Go's `fmt.Sprintf` for these
//! types, including its error texts (`%!d(string=x)`, `%!(EXTRA ...)`, ...).

use serde_json::{Number, Value};

const MAP_TYPE: &str = "map[string]interface {}";
const SLICE_TYPE: &str = "[]interface {}";

/// A JSON number as the Go value it decodes to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GoNumber {
    Int(i64),
    Float(f64),
}

impl GoNumber {
    /// Integers beyond int64 decode to float64 in Go.
    pub fn of(n: &Number) -> GoNumber {
        match n.as_i64() {
            Some(i) => GoNumber::Int(i),
            None => GoNumber::Float(n.as_f64().unwrap_or(f64::NAN)),
        }
    }
}

/// Go's `%T` of a JSON value.
pub fn go_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::String(_) => "string",
        Value::Number(n) => match GoNumber::of(n) {
            GoNumber::Int(_) => "int64",
            GoNumber::Float(_) => "float64",
        },
        Value::Array(_) => SLICE_TYPE,
        Value::Object(_) => MAP_TYPE,
    }
}

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

/// Go's `strconv.FormatFloat(f, 'f', -1, 64)`: shortest digits, never an
/// exponent.
pub fn format_float_f(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    format!("{f}")
}

/// Go's `encoding/json.Marshal` of a JSON value: sorted keys, HTML-safe
/// string escaping and Go's float layout (`1e+21`, `1e-7`, `3`).
pub fn go_json(value: &Value) -> String {
    let mut out = String::new();
    write_go_json(&mut out, value);
    out
}

fn write_go_json(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match GoNumber::of(n) {
            GoNumber::Int(i) => out.push_str(&i.to_string()),
            GoNumber::Float(f) => out.push_str(&go_json_float(f)),
        },
        Value::String(s) => write_go_json_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                write_go_json(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (n, (k, v)) in map.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                write_go_json_string(out, k);
                out.push(':');
                write_go_json(out, v);
            }
            out.push('}');
        }
    }
}

/// encoding/json's float layout: `'f'` unless |f| < 1e-6 or >= 1e21, and
/// two-digit negative exponents shortened (`e-07` to `e-7`).
fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let mut s = format_float(f, 'e', None);
        let n = s.len();
        if n >= 4 && &s[n - 4..n - 1] == "e-0" {
            s.remove(n - 2);
        }
        return s;
    }
    format_float_f(f)
}

fn write_go_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Turns bytes into a string the way Go's JSON encoder sanitises them: each
/// byte of an invalid UTF-8 sequence becomes U+FFFD.
pub fn go_lossy(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                let bad = e.error_len().unwrap_or(after.len());
                out.extend(std::iter::repeat_n('\u{FFFD}', bad));
                rest = &after[bad..];
            }
        }
    }
}

/// Go's `strconv.Quote`: a double-quoted Go string literal.
pub fn quote(s: &str) -> String {
    quote_with(s, '"', false)
}

fn quote_with(s: &str, quote: char, ascii_only: bool) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        push_escaped(&mut out, c, quote, ascii_only);
    }
    out.push(quote);
    out
}

fn push_escaped(out: &mut String, c: char, quote: char, ascii_only: bool) {
    if c == quote || c == '\\' {
        out.push('\\');
        out.push(c);
        return;
    }
    if ascii_only {
        if (c as u32) < 0x80 && is_go_printable(c) {
            out.push(c);
            return;
        }
    } else if is_go_printable(c) {
        out.push(c);
        return;
    }
    match c {
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        c if (c as u32) < 0x20 || c == '\u{7f}' => {
            out.push_str(&format!("\\x{:02x}", c as u32));
        }
        c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
        c => out.push_str(&format!("\\U{:08x}", c as u32)),
    }
}

/// An approximation of Go's `unicode.IsPrint` without Unicode category tables:
/// controls, non-ASCII spaces, format characters, private-use characters and
/// noncharacters are unprintable. Unassigned code points count as printable,
/// where Go would escape them.
fn is_go_printable(c: char) -> bool {
    let u = c as u32;
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let format_chars = matches!(
        u,
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x890..=0x891
            | 0x8E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    );
    let private_use = matches!(u, 0xE000..=0xF8FF | 0xF0000..=0xFFFFD | 0x100000..=0x10FFFD);
    let noncharacter = matches!(u, 0xFDD0..=0xFDEF) || (u & 0xFFFE) == 0xFFFE;
    !(format_chars || private_use || noncharacter)
}

/// Go's `strconv.CanBackquote`.
fn can_backquote(s: &str) -> bool {
    s.chars()
        .all(|c| c != '`' && c != '\u{feff}' && (c == '\t' || !(c < ' ' || c == '\u{7f}')))
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

    fn write_padding(&mut self, n: usize) {
        let pad = if self.f.zero { '0' } else { ' ' };
        self.buf.extend(std::iter::repeat_n(pad, n));
    }

    fn pad_str(&mut self, s: &str) {
        let Some(wid) = self.f.wid.filter(|w| *w > 0) else {
            self.buf.push_str(s);
            return;
        };
        let width = wid.saturating_sub(s.chars().count());
        if self.f.minus {
            self.buf.push_str(s);
            self.write_padding(width);
        } else {
            self.write_padding(width);
            self.buf.push_str(s);
        }
    }

    /// Pads without zero padding (Go clears the zero flag for these).
    fn pad_spaces(&mut self, s: &str) {
        let zero = self.f.zero;
        self.f.zero = false;
        self.pad_str(s);
        self.f.zero = zero;
    }

    fn truncate<'s>(&self, s: &'s str) -> &'s str {
        match self.f.prec {
            Some(p) => match s.char_indices().nth(p) {
                Some((idx, _)) => &s[..idx],
                None => s,
            },
            None => s,
        }
    }

    fn fmt_s(&mut self, s: &str) {
        let s = self.truncate(s);
        self.pad_str(s);
    }

    fn fmt_q(&mut self, s: &str) {
        let s = self.truncate(s);
        if self.f.sharp && can_backquote(s) {
            self.pad_str(&format!("`{s}`"));
            return;
        }
        let quoted = quote_with(s, '"', self.f.plus);
        self.pad_str(&quoted);
    }

    fn fmt_sx(&mut self, b: &[u8], digits: &[u8; 17]) {
        let length = match self.f.prec {
            Some(p) if p < b.len() => p,
            _ => b.len(),
        };
        let mut width = 2 * length;
        if width == 0 {
            if let Some(w) = self.f.wid {
                self.write_padding(w);
            }
            return;
        }
        if self.f.space {
            if self.f.sharp {
                width *= 2;
            }
            width += length - 1;
        } else if self.f.sharp {
            width += 2;
        }
        let wid = self.f.wid.unwrap_or(0);
        if wid > width && !self.f.minus {
            self.write_padding(wid - width);
        }
        if self.f.sharp {
            self.buf.push('0');
            self.buf.push(char::from(digits[16]));
        }
        for (i, c) in b[..length].iter().enumerate() {
            if self.f.space && i > 0 {
                self.buf.push(' ');
                if self.f.sharp {
                    self.buf.push('0');
                    self.buf.push(char::from(digits[16]));
                }
            }
            self.buf.push(char::from(digits[usize::from(c >> 4)]));
            self.buf.push(char::from(digits[usize::from(c & 0xF)]));
        }
        if wid > width && self.f.minus {
            self.write_padding(wid - width);
        }
    }

    fn fmt_integer(&mut self, i: i64, verb: char, arg: &Value) {
        const LOWER: &[u8; 17] = b"0123456789abcdefx";
        const UPPER: &[u8; 17] = b"0123456789ABCDEFX";
        match verb {
            'v' | 'd' => self.fmt_int_base(i, 10, verb, LOWER),
            'b' => self.fmt_int_base(i, 2, verb, LOWER),
            'o' | 'O' => self.fmt_int_base(i, 8, verb, LOWER),
            'x' => self.fmt_int_base(i, 16, verb, LOWER),
            'X' => self.fmt_int_base(i, 16, verb, UPPER),
            'c' => {
                let c = rune_of(i);
                self.pad_str(&c.to_string());
            }
            'q' => {
                let c = rune_of(i);
                let quoted = quote_with(&c.to_string(), '\'', self.f.plus);
                self.pad_str(&quoted);
            }
            'U' => self.fmt_unicode(i as u64),
            _ => self.bad_verb(verb, arg),
        }
    }

    fn fmt_int_base(&mut self, i: i64, base: u64, verb: char, digits: &[u8; 17]) {
        let negative = i < 0;
        let mut u = i.unsigned_abs();
        let mut prec = 0usize;
        if let Some(p) = self.f.prec {
            prec = p;
            if p == 0 && u == 0 {
                let zero = self.f.zero;
                self.f.zero = false;
                let w = self.f.wid.unwrap_or(0);
                self.write_padding(w);
                self.f.zero = zero;
                return;
            }
        } else if let Some(w) = self.f.wid.filter(|_| self.f.zero && !self.f.minus) {
            prec = w;
            if negative || self.f.plus || self.f.space {
                prec = prec.saturating_sub(1);
            }
        }
        let mut rev: Vec<u8> = Vec::new();
        loop {
            rev.push(digits[(u % base) as usize]);
            u /= base;
            if u == 0 {
                break;
            }
        }
        while rev.len() < prec {
            rev.push(b'0');
        }
        if self.f.sharp {
            match base {
                2 => rev.extend_from_slice(b"b0"),
                8 if rev.last() != Some(&b'0') => rev.push(b'0'),
                16 => {
                    rev.push(digits[16]);
                    rev.push(b'0');
                }
                _ => {}
            }
        }
        if verb == 'O' {
            rev.extend_from_slice(b"o0");
        }
        if negative {
            rev.push(b'-');
        } else if self.f.plus {
            rev.push(b'+');
        } else if self.f.space {
            rev.push(b' ');
        }
        rev.reverse();
        let s: String = rev.into_iter().map(char::from).collect();
        self.pad_spaces(&s);
    }

    fn fmt_unicode(&mut self, u: u64) {
        let mut prec = 4;
        if let Some(p) = self.f.prec.filter(|p| *p > 4) {
            prec = p;
        }
        let mut s = format!("U+{u:0prec$X}");
        if self.f.sharp
            && let Some(c) = u32::try_from(u).ok().and_then(char::from_u32)
            && is_go_printable(c)
        {
            s.push_str(&format!(" '{c}'"));
        }
        self.pad_spaces(&s);
    }

    fn fmt_float_verb(&mut self, f: f64, verb: char, arg: &Value) {
        match verb {
            'v' => self.fmt_float(f, 'g', None),
            'b' | 'g' | 'G' | 'x' | 'X' => self.fmt_float(f, verb, None),
            'f' | 'e' | 'E' | 'F' => self.fmt_float(f, verb, Some(6)),
            _ => self.bad_verb(verb, arg),
        }
    }

    /// Go's `fmt.fmtFloat`: strconv formatting plus sign, `#` and padding
    /// handling.
    fn fmt_float(&mut self, v: f64, verb: char, default_prec: Option<usize>) {
        let prec = self.f.prec.or(default_prec);
        let formatted = format_float(v, verb, prec);
        let mut num = if formatted.starts_with('-') || formatted.starts_with('+') {
            formatted
        } else {
            format!("+{formatted}")
        };
        if self.f.space && num.starts_with('+') && !self.f.plus {
            num.replace_range(0..1, " ");
        }
        let second = num.as_bytes().get(1).copied();
        if second == Some(b'I') || second == Some(b'N') {
            if second == Some(b'N') && !self.f.space && !self.f.plus {
                num.remove(0);
            }
            self.pad_spaces(&num);
            return;
        }
        if self.f.sharp && verb != 'b' {
            let mut digits: i64 = match verb {
                'g' | 'G' | 'x' | 'X' => prec.map_or(6, |p| p as i64),
                _ => 0,
            };
            let mut tail = String::new();
            let mut has_point = false;
            let mut saw_nonzero = false;
            let mut body = String::new();
            let bytes: Vec<char> = num.chars().collect();
            let mut idx = 1;
            while idx < bytes.len() {
                let c = bytes[idx];
                match c {
                    '.' => {
                        has_point = true;
                        body.push(c);
                    }
                    'p' | 'P' => {
                        tail = bytes[idx..].iter().collect();
                        break;
                    }
                    'e' | 'E' if verb != 'x' && verb != 'X' => {
                        tail = bytes[idx..].iter().collect();
                        break;
                    }
                    _ => {
                        if c != '0' {
                            saw_nonzero = true;
                        }
                        if saw_nonzero {
                            digits -= 1;
                        }
                        body.push(c);
                    }
                }
                idx += 1;
            }
            let mut rebuilt = String::new();
            rebuilt.push(bytes[0]);
            rebuilt.push_str(&body);
            if !has_point {
                if body == "0" {
                    digits -= 1;
                }
                rebuilt.push('.');
            }
            while digits > 0 {
                rebuilt.push('0');
                digits -= 1;
            }
            rebuilt.push_str(&tail);
            num = rebuilt;
        }
        if self.f.plus || !num.starts_with('+') {
            let len = num.chars().count();
            if let Some(w) = self.f.wid.filter(|w| self.f.zero && *w > len) {
                let sign = num.remove(0);
                self.buf.push(sign);
                self.write_padding(w - len);
                self.buf.push_str(&num);
                return;
            }
            self.pad_str(&num);
            return;
        }
        self.pad_str(&num[1..]);
    }
}

/// Go's `rune(i)` as `%c` prints it: invalid code points become U+FFFD.
fn rune_of(i: i64) -> char {
    u32::try_from(i)
        .ok()
        .and_then(char::from_u32)
        .unwrap_or('\u{FFFD}')
}

/// Decimal digits of |v| (no leading or trailing zeros; empty for zero) and
/// the decimal point position, either shortest (`sig` = None) or rounded to
/// `sig` significant digits.
fn decimal_digits(v: f64, sig: Option<usize>) -> (String, i64) {
    if v == 0.0 {
        return (String::new(), 0);
    }
    let s = match sig {
        None => format!("{:e}", v.abs()),
        Some(n) => format!("{:.*e}", n.saturating_sub(1), v.abs()),
    };
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let digits = digits.trim_end_matches('0').to_string();
    (digits, exp + 1)
}

/// Go's `%e` layout of a digit string: d.ddde±dd with `prec` decimals.
fn layout_e(neg: bool, digits: &str, dp: i64, prec: usize, e: char) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    let d = digits.as_bytes();
    out.push(d.first().map_or('0', |c| char::from(*c)));
    if prec > 0 {
        out.push('.');
        for i in 1..=prec {
            out.push(d.get(i).map_or('0', |c| char::from(*c)));
        }
    }
    out.push(e);
    let exp = if digits.is_empty() { 0 } else { dp - 1 };
    out.push(if exp < 0 { '-' } else { '+' });
    let a = exp.unsigned_abs();
    if a < 10 {
        out.push('0');
    }
    out.push_str(&a.to_string());
    out
}

/// Go's `%f` layout of a digit string with `prec` decimals.
fn layout_f(neg: bool, digits: &str, dp: i64, prec: usize) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    let d = digits.as_bytes();
    if dp > 0 {
        for i in 0..dp as usize {
            out.push(d.get(i).map_or('0', |c| char::from(*c)));
        }
    } else {
        out.push('0');
    }
    if prec > 0 {
        out.push('.');
        for i in 0..prec as i64 {
            let j = dp + i;
            let c = if j < 0 {
                b'0'
            } else {
                d.get(j as usize).copied().unwrap_or(b'0')
            };
            out.push(char::from(c));
        }
    }
    out
}

/// Go's `strconv.FormatFloat(v, verb, prec, 64)` for the verbs fmt uses.
fn format_float(v: f64, verb: char, prec: Option<usize>) -> String {
    if v.is_nan() {
        return "NaN".to_string();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    let neg = v.is_sign_negative();
    match verb {
        'b' => format_float_b(v),
        'x' | 'X' => format_float_x(v, verb, prec),
        'e' | 'E' => {
            let (digits, dp) = decimal_digits(v, prec.map(|p| p + 1));
            let p = prec.unwrap_or(digits.len().saturating_sub(1));
            layout_e(neg, &digits, dp, p, verb)
        }
        'f' | 'F' => match prec {
            Some(p) => {
                let s = format!("{:.*}", p, v.abs());
                if neg { format!("-{s}") } else { s }
            }
            None => {
                let (digits, dp) = decimal_digits(v, None);
                let p = (digits.len() as i64 - dp).max(0) as usize;
                layout_f(neg, &digits, dp, p)
            }
        },
        _ => {
            // 'g' / 'G'
            let e = if verb == 'G' { 'E' } else { 'e' };
            let shortest = prec.is_none();
            let mut p = match prec {
                Some(0) => 1,
                Some(p) => p,
                None => 0,
            };
            let (digits, dp) = decimal_digits(v, if shortest { None } else { Some(p) });
            let nd = digits.len() as i64;
            if shortest {
                p = digits.len();
            }
            let mut eprec = p as i64;
            if eprec > nd && nd >= dp {
                eprec = nd;
            }
            if shortest {
                eprec = 6;
            }
            let exp = dp - 1;
            // Zero has exp -1, which never takes the exponent form.
            if exp < -4 || exp >= eprec {
                let p = p.min(digits.len());
                return layout_e(neg, &digits, dp, p.saturating_sub(1), e);
            }
            let p = if p as i64 > dp { nd } else { p as i64 };
            layout_f(neg, &digits, dp, (p - dp).max(0) as usize)
        }
    }
}

/// Go's `%b` of a float: decimal mantissa, binary exponent.
fn format_float_b(v: f64) -> String {
    let bits = v.to_bits();
    let neg = bits >> 63 != 0;
    let mut exp = ((bits >> 52) & 0x7FF) as i64;
    let mut mant = bits & ((1 << 52) - 1);
    if exp == 0 {
        exp += 1;
    } else {
        mant |= 1 << 52;
    }
    exp += -1023 - 52;
    format!(
        "{}{}p{}{}",
        if neg { "-" } else { "" },
        mant,
        if exp >= 0 { "+" } else { "-" },
        exp.abs()
    )
}

/// Go's `%x` of a float: hexadecimal mantissa, binary exponent.
fn format_float_x(v: f64, verb: char, prec: Option<usize>) -> String {
    let bits = v.to_bits();
    let neg = bits >> 63 != 0;
    let mut exp = ((bits >> 52) & 0x7FF) as i64;
    let mut mant = bits & ((1 << 52) - 1);
    if exp == 0 {
        exp += 1;
    } else {
        mant |= 1 << 52;
    }
    exp -= 1023;
    if mant == 0 {
        exp = 0;
    }
    mant <<= 60 - 52;
    while mant != 0 && mant & (1 << 60) == 0 {
        mant <<= 1;
        exp -= 1;
    }
    if let Some(p) = prec.filter(|p| *p < 15) {
        let shift = (p * 4) as u32;
        let extra = (mant << shift) & ((1 << 60) - 1);
        mant >>= 60 - shift;
        if extra | (mant & 1) > 1 << 59 {
            mant += 1;
        }
        mant <<= 60 - shift;
        if mant & (1 << 61) != 0 {
            mant >>= 1;
            exp += 1;
        }
    }
    let hex: &[u8] = if verb == 'X' {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    out.push('0');
    out.push(verb);
    out.push(char::from(b'0' + ((mant >> 60) & 1) as u8));
    mant <<= 4;
    match prec {
        None if mant != 0 => {
            out.push('.');
            while mant != 0 {
                out.push(char::from(hex[((mant >> 60) & 15) as usize]));
                mant <<= 4;
            }
        }
        Some(p) if p > 0 => {
            out.push('.');
            for _ in 0..p {
                out.push(char::from(hex[((mant >> 60) & 15) as usize]));
                mant <<= 4;
            }
        }
        _ => {}
    }
    out.push(if verb == 'X' { 'P' } else { 'p' });
    out.push(if exp < 0 { '-' } else { '+' });
    let a = exp.unsigned_abs();
    if a < 10 {
        out.push('0');
    }
    out.push_str(&a.to_string());
    out
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

    #[test]
    fn go_json_matches_encoding_json() {
        let cases = [
            (
                "sorted keys",
                json!({"b": 1, "a": [true, null]}),
                r#"{"a":[true,null],"b":1}"#,
            ),
            ("html escaped", json!("<a&b>"), r#""\u003ca\u0026b\u003e""#),
            (
                "control chars",
                json!("\n\t\u{1}\u{8}"),
                r#""\n\t\u0001\b""#,
            ),
            ("line separator", json!("\u{2028}"), r#""\u2028""#),
            ("integral float", json!(3.0), "3"),
            ("large float", json!(1e21), "1e+21"),
            ("small float", json!(1e-7), "1e-7"),
            ("three digit exponent", json!(1e-100), "1e-100"),
            ("just below 1e21", json!(1e20), "100000000000000000000"),
            ("fraction", json!(0.5), "0.5"),
            ("unicode kept", json!("é☃"), r#""é☃""#),
        ];
        for (rule, value, want) in cases {
            assert_eq!(go_json(&value), want, "{rule}");
        }
    }

    #[test]
    fn go_lossy_replaces_each_invalid_byte() {
        let cases: [(&[u8], &str); 4] = [
            (b"abc", "abc"),
            (b"a\xe2\x86", "a\u{FFFD}\u{FFFD}"),
            (b"\xff", "\u{FFFD}"),
            (b"x\xe2\x86y", "x\u{FFFD}\u{FFFD}y"),
        ];
        for (input, want) in cases {
            assert_eq!(go_lossy(input), want, "{input:?}");
        }
    }

    #[test]
    fn format_float_f_never_uses_an_exponent() {
        let cases = [
            (1e6, "1000000"),
            (1e21, "1000000000000000000000"),
            (2.5, "2.5"),
            (-0.125, "-0.125"),
            (1e-7, "0.0000001"),
            (0.1 + 0.2, "0.30000000000000004"),
        ];
        for (f, want) in cases {
            assert_eq!(format_float_f(f), want, "{f}");
        }
    }

    #[test]
    fn quote_escapes_like_strconv_quote() {
        let cases = [
            ("plain", "\"plain\""),
            ("", "\"\""),
            ("say \"hi\"", "\"say \\\"hi\\\"\""),
            ("back\\slash", "\"back\\\\slash\""),
            ("a\nb\tc\r", "\"a\\nb\\tc\\r\""),
            ("\u{7}\u{8}\u{c}\u{b}", "\"\\a\\b\\f\\v\""),
            ("\u{1}\u{7f}", "\"\\x01\\x7f\""),
            ("héllo ☃", "\"héllo ☃\""),
            ("\u{a0}", "\"\\u00a0\""),
            ("\u{200b}", "\"\\u200b\""),
            ("\u{feff}", "\"\\ufeff\""),
            ("\u{10ffff}", "\"\\U0010ffff\""),
            ("😀", "\"😀\""),
        ];
        for (input, want) in cases {
            assert_eq!(quote(input), want, "quote({input:?})");
        }
    }
}
