//! Validation of a transform before anything runs, with upstream's
//! `field.Error` texts.

use plait_go_compat::field::{Error as FieldError, Path};

use super::input::{ConvertTransform, MatchTransform, MathTransform, StringTransform, Transform};
use plait_go_compat::regexp::compile_regexp;

/// Validates a transform before anything runs, as the function does for
/// its whole input.
pub fn validate(transform: &Transform) -> Result<(), FieldError> {
    let kind = transform.kind();
    let missing = || {
        FieldError::required(
            Path::new(kind),
            format!("given transform type {kind} requires configuration"),
        )
    };
    match kind {
        "math" => {
            let m = transform.math.as_ref().ok_or_else(missing)?;
            validate_math(m).map_err(|e| e.under(&Path::new("math")))
        }
        "map" => {
            let m = transform.map.as_ref().ok_or_else(missing)?;
            if m.pairs.is_empty() {
                return Err(FieldError::required(
                    Path::new("map").child("pairs"),
                    "at least one pair must be specified if a map transform is specified",
                ));
            }
            Ok(())
        }
        "match" => {
            let m = transform.match_transform.as_ref().ok_or_else(missing)?;
            validate_match(m).map_err(|e| e.under(&Path::new("match")))
        }
        "string" => {
            let s = transform.string.as_ref().ok_or_else(missing)?;
            validate_string(s).map_err(|e| e.under(&Path::new("string")))
        }
        "convert" => {
            let c = transform.convert.as_ref().ok_or_else(missing)?;
            validate_convert(c).map_err(|e| e.under(&Path::new("convert")))
        }
        other => Err(FieldError::invalid(
            Path::new("type"),
            other,
            "unknown transform type",
        )),
    }
}

pub(super) fn validate_math(m: &MathTransform) -> Result<(), FieldError> {
    let required = |field: &str, what: &str| {
        FieldError::required(
            Path::new(field),
            format!("must specify a value if a {what} math transform is specified"),
        )
    };
    match m.kind() {
        "" => Err(FieldError::required(
            Path::new("type"),
            "math transform type is required",
        )),
        "Multiply" if m.multiply.is_none() => Err(required("multiply", "multiply")),
        "ClampMin" if m.clamp_min.is_none() => Err(required("clampMin", "clamp min")),
        "ClampMax" if m.clamp_max.is_none() => Err(required("clampMax", "clamp max")),
        "Multiply" | "ClampMin" | "ClampMax" => Ok(()),
        other => Err(FieldError::invalid(
            Path::new("type"),
            other,
            "unknown math transform type",
        )),
    }
}

fn validate_match(m: &MatchTransform) -> Result<(), FieldError> {
    if m.patterns.is_empty() {
        return Err(FieldError::required(
            Path::new("patterns"),
            "at least one pattern must be specified if a match transform is specified",
        ));
    }
    for (i, p) in m.patterns.iter().enumerate() {
        let prefix = Path::new("patterns").index(i);
        match p.pattern_type.as_str() {
            "literal" | "" => {
                if p.literal.is_none() {
                    return Err(FieldError::required(
                        Path::new("literal"),
                        "literal pattern type requires a literal",
                    )
                    .under(&prefix));
                }
            }
            "regexp" => {
                let Some(re) = &p.regexp else {
                    return Err(FieldError::required(
                        Path::new("regexp"),
                        "regexp pattern type requires a regexp",
                    )
                    .under(&prefix));
                };
                if compile_regexp(re).is_err() {
                    return Err(FieldError::invalid(
                        Path::new("regexp"),
                        re.as_str(),
                        "invalid regexp",
                    )
                    .under(&prefix));
                }
            }
            other => {
                return Err(
                    FieldError::invalid(Path::new("type"), other, "unknown pattern type")
                        .under(&prefix),
                );
            }
        }
    }
    Ok(())
}

fn validate_string(s: &StringTransform) -> Result<(), FieldError> {
    match s.kind() {
        "" => Err(FieldError::required(
            Path::new("type"),
            "string transform type is required",
        )),
        "Format" if s.fmt.is_none() => Err(FieldError::required(
            Path::new("fmt"),
            "format transform requires a format",
        )),
        "Convert" if s.convert.is_none() => Err(FieldError::required(
            Path::new("convert"),
            "convert transform requires a conversion type",
        )),
        "TrimPrefix" | "TrimSuffix" if s.trim.is_none() => Err(FieldError::required(
            Path::new("trim"),
            "trim transform requires a trim value",
        )),
        "Regexp" => {
            let Some(r) = &s.regexp else {
                return Err(FieldError::required(
                    Path::new("regexp"),
                    "regexp transform requires a regexp",
                ));
            };
            if r.match_expr.is_empty() {
                return Err(FieldError::required(
                    Path::new("regexp").child("match"),
                    "regexp transform requires a match",
                ));
            }
            if compile_regexp(&r.match_expr).is_err() {
                return Err(FieldError::invalid(
                    Path::new("regexp").child("match"),
                    r.match_expr.as_str(),
                    "invalid regexp",
                ));
            }
            Ok(())
        }
        "Join" if s.join.is_none() => Err(FieldError::required(
            Path::new("join"),
            "join transform requires a join",
        )),
        "Replace" => match &s.replace {
            None => Err(FieldError::required(
                Path::new("replace"),
                "replace transform requires a replace",
            )),
            Some(r) if r.search.is_empty() => Err(FieldError::required(
                Path::new("replace").child("search"),
                "replace transform requires a search",
            )),
            Some(_) => Ok(()),
        },
        "Format" | "Convert" | "TrimPrefix" | "TrimSuffix" | "Join" => Ok(()),
        other => Err(FieldError::invalid(
            Path::new("type"),
            other,
            "unknown string transform type",
        )),
    }
}

pub(super) const IO_TYPES: [&str; 7] = [
    "string", "bool", "int", "int64", "float64", "object", "array",
];

pub(super) fn validate_convert(c: &ConvertTransform) -> Result<(), FieldError> {
    let format = c.format_or_none();
    if !matches!(format, "none" | "quantity" | "json") {
        return Err(FieldError::invalid(
            Path::new("format"),
            format,
            "invalid format",
        ));
    }
    if !IO_TYPES.contains(&c.to_type.as_str()) {
        return Err(FieldError::invalid(
            Path::new("toType"),
            c.to_type.as_str(),
            "invalid type",
        ));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use plait_go_compat::field::ErrorKind;
    use serde_json::{Value, json};

    use crate::transforms::testing::transform;

    #[test]
    fn validate_reports_field_errors_like_upstream() {
        let cases: Vec<(&str, Value, Option<&str>)> = vec![
            ("valid map", json!({"type": "map", "map": {"a": "b"}}), None),
            (
                "empty map",
                json!({"type": "map", "map": {}}),
                Some(
                    "map.pairs: Required value: at least one pair must be specified if a map transform is specified",
                ),
            ),
            (
                "missing map config",
                json!({"type": "map"}),
                Some("map: Required value: given transform type map requires configuration"),
            ),
            (
                "empty patterns",
                json!({"type": "match", "match": {"patterns": []}}),
                Some(
                    "match.patterns: Required value: at least one pattern must be specified if a match transform is specified",
                ),
            ),
            (
                "pattern without literal",
                json!({"type": "match", "match": {"patterns": [{"type": "literal"}]}}),
                Some(
                    "match.patterns[0].literal: Required value: literal pattern type requires a literal",
                ),
            ),
            (
                "untyped pattern is literal",
                json!({"type": "match", "match": {"patterns": [{"literal": "a"}]}}),
                None,
            ),
            (
                "pattern without regexp",
                json!({"type": "match", "match": {"patterns": [{"type": "literal", "literal": "a"}, {"type": "regexp"}]}}),
                Some(
                    "match.patterns[1].regexp: Required value: regexp pattern type requires a regexp",
                ),
            ),
            (
                "invalid pattern regexp",
                json!({"type": "match", "match": {"patterns": [{"type": "regexp", "regexp": "("}]}}),
                Some("match.patterns[0].regexp: Invalid value: \"(\": invalid regexp"),
            ),
            (
                "unknown pattern type",
                json!({"type": "match", "match": {"patterns": [{"type": "glob"}]}}),
                Some("match.patterns[0].type: Invalid value: \"glob\": unknown pattern type"),
            ),
            (
                "math without type",
                json!({"type": "math", "math": {"clampMax": 1}}),
                Some("math.type: Required value: math transform type is required"),
            ),
            (
                "multiply without type",
                json!({"type": "math", "math": {"multiply": 2}}),
                Some("math.type: Required value: math transform type is required"),
            ),
            (
                "multiply without value",
                json!({"type": "math", "math": {"type": "Multiply"}}),
                Some(
                    "math.multiply: Required value: must specify a value if a multiply math transform is specified",
                ),
            ),
            (
                "unknown math type",
                json!({"type": "math", "math": {"type": "Divide"}}),
                Some("math.type: Invalid value: \"Divide\": unknown math transform type"),
            ),
            (
                "string without type",
                json!({"type": "string", "string": {"trim": "x"}}),
                Some("string.type: Required value: string transform type is required"),
            ),
            ("legacy fmt", json!({"string": {"fmt": "%s"}}), None),
            (
                "format without fmt",
                json!({"type": "string", "string": {"type": "Format"}}),
                Some("string.fmt: Required value: format transform requires a format"),
            ),
            (
                "convert without conversion",
                json!({"type": "string", "string": {"type": "Convert"}}),
                Some(
                    "string.convert: Required value: convert transform requires a conversion type",
                ),
            ),
            (
                "trim without value",
                json!({"type": "string", "string": {"type": "TrimSuffix"}}),
                Some("string.trim: Required value: trim transform requires a trim value"),
            ),
            (
                "regexp without block",
                json!({"type": "string", "string": {"type": "Regexp"}}),
                Some("string.regexp: Required value: regexp transform requires a regexp"),
            ),
            (
                "regexp empty match",
                json!({"type": "string", "string": {"type": "Regexp", "regexp": {"match": ""}}}),
                Some("string.regexp.match: Required value: regexp transform requires a match"),
            ),
            (
                "regexp invalid",
                json!({"type": "string", "string": {"type": "Regexp", "regexp": {"match": "[a"}}}),
                Some("string.regexp.match: Invalid value: \"[a\": invalid regexp"),
            ),
            (
                "join without block",
                json!({"type": "string", "string": {"type": "Join"}}),
                Some("string.join: Required value: join transform requires a join"),
            ),
            (
                "replace without block",
                json!({"type": "string", "string": {"type": "Replace"}}),
                Some("string.replace: Required value: replace transform requires a replace"),
            ),
            (
                "replace empty search",
                json!({"type": "string", "string": {"type": "Replace", "replace": {"search": "", "replace": "x"}}}),
                Some("string.replace.search: Required value: replace transform requires a search"),
            ),
            (
                "unknown string type",
                json!({"type": "string", "string": {"type": "Reverse"}}),
                Some("string.type: Invalid value: \"Reverse\": unknown string transform type"),
            ),
            (
                "convert invalid format",
                json!({"type": "convert", "convert": {"toType": "string", "format": "yaml"}}),
                Some("convert.format: Invalid value: \"yaml\": invalid format"),
            ),
            (
                "convert invalid type",
                json!({"type": "convert", "convert": {"toType": "integer"}}),
                Some("convert.toType: Invalid value: \"integer\": invalid type"),
            ),
            (
                "convert valid",
                json!({"type": "convert", "convert": {"toType": "int", "format": "none"}}),
                None,
            ),
            (
                "unknown transform type",
                json!({"type": "reverse"}),
                Some("type: Invalid value: \"reverse\": unknown transform type"),
            ),
            (
                "no type, no config",
                json!({}),
                Some("type: Invalid value: \"\": unknown transform type"),
            ),
        ];
        for (rule, t, want) in cases {
            let got = validate(&transform(t)).map_err(|e| e.to_string());
            match want {
                None => assert_eq!(got, Ok(()), "{rule}"),
                Some(msg) => assert_eq!(got, Err(msg.to_string()), "{rule}"),
            }
        }
    }

    #[test]
    fn validation_errors_can_be_rooted_under_a_patch() {
        let err = validate(&transform(
            json!({"type": "math", "math": {"type": "Multiply"}}),
        ))
        .expect_err("invalid")
        .under(
            &Path::new("resources")
                .index(0)
                .child("patches")
                .index(1)
                .child("transforms")
                .index(2),
        );
        assert_eq!(
            err.path.as_str(),
            "resources[0].patches[1].transforms[2].math.multiply"
        );
        assert_eq!(err.kind, ErrorKind::Required);
        let not_supported = FieldError {
            path: Path::new("policy").child("toFieldPath"),
            kind: ErrorKind::NotSupported(json!("Merge")),
            detail: "supported values: \"Replace\"".to_string(),
        };
        assert_eq!(
            not_supported.to_string(),
            "policy.toFieldPath: Unsupported value: \"Merge\": supported values: \"Replace\""
        );
        let invalid_number = FieldError {
            path: Path::new("x"),
            kind: ErrorKind::Invalid(json!(3)),
            detail: String::new(),
        };
        assert_eq!(invalid_number.to_string(), "x: Invalid value: 3");
    }
}
