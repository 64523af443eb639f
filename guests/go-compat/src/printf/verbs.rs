//! How one argument prints for one verb, with the flags, width and
//! precision in effect (Go's `fmt/format.go`).

use serde_json::Value;

use super::Printer;
use crate::float::format_float;
use crate::strconv::{can_backquote, is_go_printable, quote_with};

impl Printer {
    fn write_padding(&mut self, n: usize) {
        let pad = if self.f.zero { '0' } else { ' ' };
        self.buf.extend(std::iter::repeat_n(pad, n));
    }

    pub(super) fn pad_str(&mut self, s: &str) {
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

    pub(super) fn fmt_s(&mut self, s: &str) {
        let s = self.truncate(s);
        self.pad_str(s);
    }

    pub(super) fn fmt_q(&mut self, s: &str) {
        let s = self.truncate(s);
        if self.f.sharp && can_backquote(s) {
            self.pad_str(&format!("`{s}`"));
            return;
        }
        let quoted = quote_with(s, '"', self.f.plus);
        self.pad_str(&quoted);
    }

    pub(super) fn fmt_sx(&mut self, b: &[u8], digits: &[u8; 17]) {
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

    pub(super) fn fmt_integer(&mut self, i: i64, verb: char, arg: &Value) {
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

    pub(super) fn fmt_float_verb(&mut self, f: f64, verb: char, arg: &Value) {
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
