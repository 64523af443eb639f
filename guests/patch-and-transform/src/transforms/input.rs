//! The transforms' input schema (`pt.fn.crossplane.io/v1beta1`).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// One entry of a patch's `transforms`.
///
/// `type` may be omitted when exactly one configuration block is set, as
/// legacy native Compositions do (`string: {fmt: ...}`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct Transform {
    #[serde(rename = "type", default)]
    pub transform_type: String,
    pub math: Option<MathTransform>,
    pub map: Option<MapTransform>,
    #[serde(rename = "match")]
    pub match_transform: Option<MatchTransform>,
    pub string: Option<StringTransform>,
    pub convert: Option<ConvertTransform>,
}

impl Transform {
    /// The transform type, inferred from the only configuration block when
    /// `type` is absent.
    pub fn kind(&self) -> &str {
        if !self.transform_type.is_empty() {
            return &self.transform_type;
        }
        let set = [
            ("math", self.math.is_some()),
            ("map", self.map.is_some()),
            ("match", self.match_transform.is_some()),
            ("string", self.string.is_some()),
            ("convert", self.convert.is_some()),
        ];
        let mut present = set.iter().filter(|(_, is_set)| *is_set);
        match (present.next(), present.next()) {
            (Some((kind, _)), None) => kind,
            _ => "",
        }
    }
}

/// `math`: Multiply, ClampMin or ClampMax with int64 operands.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct MathTransform {
    #[serde(rename = "type", default)]
    pub math_type: String,
    pub multiply: Option<i64>,
    pub clamp_min: Option<i64>,
    pub clamp_max: Option<i64>,
}

impl MathTransform {
    /// The math type; without one, validation refuses the transform, as
    /// upstream does.
    pub fn kind(&self) -> &str {
        &self.math_type
    }
}

/// `map`: the input string looked up in the pairs.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct MapTransform {
    pub pairs: BTreeMap<String, Value>,
}

/// `match`: the first matching pattern's result, else the fallback.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct MatchTransform {
    #[serde(default)]
    pub patterns: Vec<MatchTransformPattern>,
    /// `null` stands for "not set", as with upstream's raw JSON.
    #[serde(default)]
    pub fallback_value: Value,
    #[serde(default)]
    pub fallback_to: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct MatchTransformPattern {
    #[serde(rename = "type", default)]
    pub pattern_type: String,
    pub literal: Option<String>,
    pub regexp: Option<String>,
    #[serde(default)]
    pub result: Value,
}

/// `string`: Format, Convert, TrimPrefix, TrimSuffix, Regexp, Join, Replace.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct StringTransform {
    #[serde(rename = "type", default)]
    pub string_type: String,
    pub fmt: Option<String>,
    pub convert: Option<String>,
    pub trim: Option<String>,
    pub regexp: Option<StringTransformRegexp>,
    pub join: Option<StringTransformJoin>,
    pub replace: Option<StringTransformReplace>,
}

impl StringTransform {
    /// The string type; a legacy transform with only `fmt` formats.
    pub fn kind(&self) -> &str {
        if self.string_type.is_empty() && self.fmt.is_some() {
            return "Format";
        }
        &self.string_type
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct StringTransformRegexp {
    #[serde(rename = "match", default)]
    pub match_expr: String,
    pub group: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct StringTransformJoin {
    #[serde(default)]
    pub separator: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct StringTransformReplace {
    #[serde(default)]
    pub search: String,
    #[serde(default)]
    pub replace: String,
}

/// `convert`: a cast to `toType`, optionally parsing a `format`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct ConvertTransform {
    #[serde(default)]
    pub to_type: String,
    pub format: Option<String>,
}

impl ConvertTransform {
    pub(crate) fn format_or_none(&self) -> &str {
        self.format.as_deref().unwrap_or("none")
    }
}

plait_go_compat::go_structs!(
    Transform => "v1beta1.Transform",
    MathTransform => "v1beta1.MathTransform",
    MatchTransform => "v1beta1.MatchTransform",
    MatchTransformPattern => "v1beta1.MatchTransformPattern",
    StringTransform => "v1beta1.StringTransform",
    StringTransformRegexp => "v1beta1.StringTransformRegexp",
    StringTransformJoin => "v1beta1.StringTransformJoin",
    StringTransformReplace => "v1beta1.StringTransformReplace",
    ConvertTransform => "v1beta1.ConvertTransform",
);

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_are_refused_naming_the_go_struct() {
        let cases = [
            (json!({"type": "map", "mapp": {}}), "Transform", "mapp"),
            (
                json!({"type": "math", "math": {"type": "Multiply", "multiply": 2, "divide": 3}}),
                "MathTransform",
                "divide",
            ),
            (
                json!({"type": "string", "string": {"type": "Format", "fmt": "%s", "format": "x"}}),
                "StringTransform",
                "format",
            ),
            (
                json!({"type": "match", "match": {"patterns": [{"type": "literal", "literal": "a", "value": 1}]}}),
                "MatchTransformPattern",
                "value",
            ),
            (
                json!({"type": "match", "match": {"patterns": [], "fallback": 1}}),
                "MatchTransform",
                "fallback",
            ),
            (
                json!({"type": "string", "string": {"type": "Join", "join": {"separator": ",", "sep": ","}}}),
                "StringTransformJoin",
                "sep",
            ),
            (
                json!({"type": "string", "string": {"type": "Replace", "replace": {"search": "a", "with": "b"}}}),
                "StringTransformReplace",
                "with",
            ),
            (
                json!({"type": "convert", "convert": {"toType": "int", "from": "string"}}),
                "ConvertTransform",
                "from",
            ),
        ];
        for (transform, go, name) in cases {
            let error = plait_go_compat::input::from_sorted_value::<Transform>(transform.clone())
                .expect_err(&transform.to_string())
                .to_string();
            assert_eq!(
                error,
                format!(
                    "json: cannot unmarshal Go value of type v1beta1.{go}: unknown name \"{name}\""
                ),
                "{transform}"
            );
        }
    }

    #[test]
    fn map_pairs_take_any_name() {
        let transform: Transform =
            serde_json::from_value(json!({"type": "map", "map": {"type": "x", "fmt": 1}})).unwrap();
        assert_eq!(transform.map.unwrap().pairs.len(), 2);
    }

    #[test]
    fn values_of_the_wrong_type_are_refused() {
        let transform = json!({"type": "math", "math": {"type": "Multiply", "multiply": 2.5}});
        assert!(serde_json::from_value::<Transform>(transform).is_err());
    }
}
