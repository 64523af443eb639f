//! Condition and event messages as Go's `text/template` renders them with
//! the captured groups (a `map[string]string`) as data, for the actions
//! such messages use: field references (`{{ .Error }}`), the whole map
//! (`{{ . }}`) and comments, with `{{-`/`-}}` trimming.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("template: :{line}: {reason}")]
    Parse { line: usize, reason: String },
    #[error(
        "template: :{line}: {{{{{action}}}}} is not supported by plait's built-in function-status-transformer, whose messages take field references ({{{{ .Name }}}}) only"
    )]
    Unsupported { line: usize, action: String },
}

/// Renders `text` with `values` as Go's `template.Execute` would.
pub fn render(text: &str, values: &BTreeMap<String, String>) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut consumed = 0;
    while let Some(open) = rest.find("{{") {
        let line = 1 + text[..consumed + open].matches('\n').count();
        let mut literal = &rest[..open];
        let mut body = &rest[open + 2..];
        if let Some(trimmed) = body.strip_prefix("- ") {
            literal = literal.trim_end();
            body = trimmed;
        }
        let Some(close) = body.find("}}") else {
            // Go's lexer meets the lone `}` as an operand, or runs out of text.
            let reason = if body.contains('}') {
                "unexpected \"}\" in operand".to_string()
            } else {
                "unclosed action".to_string()
            };
            return Err(TemplateError::Parse { line, reason });
        };
        out.push_str(literal);
        let mut action = &body[..close];
        let mut after = &body[close + 2..];
        if let Some(trimmed) = action.strip_suffix(" -") {
            action = trimmed;
            after = after.trim_start();
        }
        out.push_str(&evaluate(action.trim(), values, line)?);
        consumed = text.len() - after.len();
        rest = after;
    }
    out.push_str(rest);
    Ok(out)
}

fn evaluate(
    action: &str,
    values: &BTreeMap<String, String>,
    line: usize,
) -> Result<String, TemplateError> {
    if action.starts_with("/*") && action.ends_with("*/") {
        return Ok(String::new());
    }
    if action.is_empty() {
        return Err(TemplateError::Parse {
            line,
            reason: "missing value for command".into(),
        });
    }
    if action == "." {
        // fmt's %v of a map: keys sorted, `map[k:v k:v]`.
        let pairs: Vec<String> = values.iter().map(|(k, v)| format!("{k}:{v}")).collect();
        return Ok(format!("map[{}]", pairs.join(" ")));
    }
    let field = action
        .strip_prefix('.')
        .filter(|name| {
            name.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_alphanumeric() || c == '_')
        })
        .ok_or_else(|| TemplateError::Unsupported {
            line,
            action: action.to_string(),
        })?;
    // A map lookup of a missing key prints Go's zero-value marker.
    Ok(values
        .get(field)
        .cloned()
        .unwrap_or_else(|| "<no value>".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_field_references_as_text_template_does() {
        let values: BTreeMap<String, String> = [("Error", "disk full"), ("Zone", "a")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let cases = [
            ("{{ .Error }}", Ok("disk full")),
            (
                "failed: {{.Error}} in {{ .Zone }}",
                Ok("failed: disk full in a"),
            ),
            ("a  {{- .Zone -}}  b", Ok("aab")),
            ("{{ .Missing }}", Ok("<no value>")),
            ("{{ . }}", Ok("map[Error:disk full Zone:a]")),
            ("x{{/* note */}}y", Ok("xy")),
            ("no actions", Ok("no actions")),
            (
                "{{ .Error }",
                Err("template: :1: unexpected \"}\" in operand"),
            ),
            ("line\n{{ .Error ", Err("template: :2: unclosed action")),
            ("{{ }}", Err("template: :1: missing value for command")),
        ];
        for (text, want) in cases {
            let got = render(text, &values).map_err(|e| e.to_string());
            assert_eq!(
                got.as_deref(),
                want.map_err(str::to_string).as_deref(),
                "{text}"
            );
        }
        let unsupported = render("{{ upper .Error }}", &values).map_err(|e| e.to_string());
        assert!(
            unsupported
                .as_ref()
                .is_err_and(|e| e.contains("{{upper .Error}} is not supported")),
            "{unsupported:?}"
        );
    }
}
