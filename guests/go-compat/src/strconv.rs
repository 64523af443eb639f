//! Go's `strconv` quoting: `Quote`, and the escaping `fmt`'s `%q` shares.

/// Go's `strconv.Quote`: a double-quoted Go string literal.
pub fn quote(s: &str) -> String {
    quote_with(s, '"', false)
}

pub(crate) fn quote_with(s: &str, quote: char, ascii_only: bool) -> String {
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
pub(crate) fn is_go_printable(c: char) -> bool {
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
pub(crate) fn can_backquote(s: &str) -> bool {
    s.chars()
        .all(|c| c != '`' && c != '\u{feff}' && (c == '\t' || !(c < ' ' || c == '\u{7f}')))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

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
