//! The function's input, `pt.fn.crossplane.io/v1beta1` `Resources`.
//!
//! Unknown fields are rejected, as upstream does. Enumerations (patch types,
//! policies, strategies, check types) stay strings here so that validation
//! can report an unknown value with upstream's message.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::merge::ToFieldPathPolicy;
use crate::transforms::Transform;

/// Go decodes `null` into an empty slice; serde would refuse it.
fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Patch & Transform resource templates.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct Resources {
    #[serde(default)]
    pub api_version: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub metadata: Option<Value>,
    #[serde(default, deserialize_with = "nullable")]
    pub patch_sets: Vec<PatchSet>,
    #[serde(default)]
    pub environment: Option<Environment>,
    #[serde(default, deserialize_with = "nullable")]
    pub resources: Vec<ComposedTemplate>,
    /// Where the connection Secret of a v2 XR goes.
    #[serde(default)]
    pub write_connection_secret_to_ref: Option<WriteConnectionSecretToRef>,
}

impl Resources {
    /// Parses the input and fills in what upstream's converter from native
    /// `mode: Resources` Compositions fills in (see [`ConnectionDetail`]).
    pub fn from_value(mut input: Value) -> Result<Self, serde_json::Error> {
        // Bases are free-form objects that serde would rebuild key by key;
        // they are moved out first and put back as they are.
        let bases: Vec<Option<Value>> = match input.get_mut("resources") {
            Some(Value::Array(templates)) => templates
                .iter_mut()
                .map(|t| t.as_object_mut().and_then(|t| t.remove("base")))
                .collect(),
            _ => Vec::new(),
        };
        let mut resources = <Resources as Deserialize>::deserialize(input)?;
        for (template, base) in resources.resources.iter_mut().zip(bases) {
            if let Some(base) = base {
                // `base: null` reads as no base, as serde would have it.
                template.base = Some(base).filter(|b| !b.is_null());
            }
        }
        Ok(resources.with_legacy_fields_inferred())
    }

    /// Parses the input from its JSON text, as [`Resources::from_value`]
    /// does from a tree. `null` reads as an empty input, as in Go.
    pub fn from_json_text(text: &str) -> Result<Self, serde_json::Error> {
        let resources: Option<Resources> = serde_json::from_str(text)?;
        Ok(resources.unwrap_or_default().with_legacy_fields_inferred())
    }

    fn with_legacy_fields_inferred(mut self) -> Self {
        for template in &mut self.resources {
            for detail in &mut template.connection_details {
                detail.infer_legacy_fields();
            }
        }
        self
    }
}

/// A named set of patches any template may include.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct PatchSet {
    #[serde(default)]
    pub name: String,
    #[serde(default, deserialize_with = "nullable")]
    pub patches: Vec<Patch>,
}

/// Patches between the XR and the environment, run before any template.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct Environment {
    #[serde(default, deserialize_with = "nullable")]
    pub patches: Vec<Patch>,
}

/// One composed resource template.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct ComposedTemplate {
    #[serde(default)]
    pub name: String,
    /// Without a base, the template patches the resource a previous step produced.
    #[serde(default)]
    pub base: Option<Value>,
    #[serde(default, deserialize_with = "nullable")]
    pub patches: Vec<Patch>,
    #[serde(default, deserialize_with = "nullable")]
    pub connection_details: Vec<ConnectionDetail>,
    #[serde(default, deserialize_with = "nullable")]
    pub readiness_checks: Vec<ReadinessCheck>,
    /// A plait extension: the names of the composed resources this one is
    /// created after, once they are ready (and deleted before). Written
    /// onto the resource as [`crate::DEPENDS_ON_ANNOTATION`].
    #[serde(default, deserialize_with = "nullable")]
    pub depends_on: Vec<String>,
}

pub const FROM_COMPOSITE_FIELD_PATH: &str = "FromCompositeFieldPath";
pub const TO_COMPOSITE_FIELD_PATH: &str = "ToCompositeFieldPath";
pub const COMBINE_FROM_COMPOSITE: &str = "CombineFromComposite";
pub const COMBINE_TO_COMPOSITE: &str = "CombineToComposite";
pub const FROM_ENVIRONMENT_FIELD_PATH: &str = "FromEnvironmentFieldPath";
pub const TO_ENVIRONMENT_FIELD_PATH: &str = "ToEnvironmentFieldPath";
pub const COMBINE_FROM_ENVIRONMENT: &str = "CombineFromEnvironment";
pub const COMBINE_TO_ENVIRONMENT: &str = "CombineToEnvironment";
pub const PATCH_SET: &str = "PatchSet";

/// A patch. Upstream has one Go type per place a patch can appear; they
/// share these fields, and validation checks what each place allows.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct Patch {
    #[serde(rename = "type", default)]
    pub type_: Option<String>,
    #[serde(default)]
    pub from_field_path: Option<String>,
    #[serde(default)]
    pub to_field_path: Option<String>,
    #[serde(default)]
    pub combine: Option<Combine>,
    #[serde(default)]
    pub patch_set_name: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub transforms: Vec<Transform>,
    #[serde(default)]
    pub policy: Option<PatchPolicy>,
}

impl Patch {
    /// The type, `FromCompositeFieldPath` when unset.
    pub fn patch_type(&self) -> &str {
        match self.type_.as_deref() {
            None | Some("") => FROM_COMPOSITE_FIELD_PATH,
            Some(t) => t,
        }
    }

    pub fn from_field_path(&self) -> &str {
        self.from_field_path.as_deref().unwrap_or_default()
    }

    /// The path written to; defaults to `fromFieldPath`.
    pub fn to_field_path(&self) -> &str {
        self.to_field_path
            .as_deref()
            .unwrap_or_else(|| self.from_field_path())
    }

    /// `policy.fromFieldPath`, `Optional` when unset.
    pub fn from_field_path_policy(&self) -> &str {
        self.policy
            .as_ref()
            .and_then(|p| p.from_field_path.as_deref())
            .unwrap_or("Optional")
    }

    pub fn is_required(&self) -> bool {
        self.from_field_path_policy() == "Required"
    }

    /// The toFieldPath policy name as written, or the one a legacy
    /// `mergeOptions` maps to; `Replace` when neither is set.
    pub fn to_field_path_policy_name(&self) -> &str {
        let Some(policy) = &self.policy else {
            return "Replace";
        };
        if let Some(name) = &policy.to_field_path {
            return name;
        }
        match &policy.merge_options {
            Some(legacy) => policy_name(ToFieldPathPolicy::from_merge_options(
                legacy.keep_map_values.unwrap_or(false),
                legacy.append_slice.unwrap_or(false),
            )),
            None => "Replace",
        }
    }

    /// The toFieldPath policy; `None` for a name validation would reject.
    pub fn to_field_path_policy(&self) -> Option<ToFieldPathPolicy> {
        ToFieldPathPolicy::parse(self.to_field_path_policy_name())
    }
}

fn policy_name(policy: ToFieldPathPolicy) -> &'static str {
    match policy {
        ToFieldPathPolicy::Replace => "Replace",
        ToFieldPathPolicy::MergeObjects => "MergeObjects",
        ToFieldPathPolicy::MergeObjectsAppendArrays => "MergeObjectsAppendArrays",
        ToFieldPathPolicy::ForceMergeObjects => "ForceMergeObjects",
        ToFieldPathPolicy::ForceMergeObjectsAppendArrays => "ForceMergeObjectsAppendArrays",
    }
}

/// How a patch reads and writes.
///
/// `mergeOptions` is native Crossplane v1's spelling of the toFieldPath
/// policy. Upstream P&T rejects it as an unknown field; we accept it on
/// purpose (a deliberate leniency), because real Compositions carry it inside
/// a P&T input, and map it the way `crossplane beta convert` does. An explicit
/// `toFieldPath` wins over it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct PatchPolicy {
    #[serde(default)]
    pub from_field_path: Option<String>,
    #[serde(default)]
    pub to_field_path: Option<String>,
    #[serde(default)]
    pub merge_options: Option<LegacyMergeOptions>,
}

/// Native Crossplane v1 `policy.mergeOptions`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct LegacyMergeOptions {
    #[serde(default)]
    pub keep_map_values: Option<bool>,
    #[serde(default)]
    pub append_slice: Option<bool>,
}

/// Combines several values into one (strategy `string` only).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct Combine {
    #[serde(default, deserialize_with = "nullable")]
    pub variables: Vec<CombineVariable>,
    #[serde(default)]
    pub strategy: String,
    #[serde(default)]
    pub string: Option<StringCombine>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct CombineVariable {
    #[serde(default)]
    pub from_field_path: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct StringCombine {
    #[serde(default)]
    pub fmt: String,
    /// Not part of upstream's `StringCombine`, which rejects it. Native
    /// Crossplane silently dropped it (the API server prunes unknown fields)
    /// and real Compositions copied from string transforms carry
    /// `type: Format` here, so we accept and ignore it: a deliberate leniency.
    #[serde(rename = "type", default)]
    pub type_: Option<String>,
}

pub const FROM_CONNECTION_SECRET_KEY: &str = "FromConnectionSecretKey";
pub const FROM_FIELD_PATH: &str = "FromFieldPath";
pub const FROM_VALUE: &str = "FromValue";

/// A connection detail the XR gets from a composed resource.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct ConnectionDetail {
    #[serde(default)]
    pub name: String,
    #[serde(rename = "type", default)]
    pub type_: String,
    #[serde(default)]
    pub from_connection_secret_key: Option<String>,
    #[serde(default)]
    pub from_field_path: Option<String>,
    #[serde(default)]
    pub value: Option<String>,
}

impl ConnectionDetail {
    /// Native Crossplane v1 inferred a missing `type` from the field that is
    /// set and named a secret-key detail after its key. Upstream P&T requires
    /// both; we keep the native behaviour (a deliberate leniency) because
    /// Compositions converted from `mode: Resources` rely on it.
    fn infer_legacy_fields(&mut self) {
        if self.type_.is_empty() {
            if self.from_connection_secret_key.is_some() {
                self.type_ = FROM_CONNECTION_SECRET_KEY.to_owned();
            } else if self.from_field_path.is_some() {
                self.type_ = FROM_FIELD_PATH.to_owned();
            } else if self.value.is_some() {
                self.type_ = FROM_VALUE.to_owned();
            }
        }
        if self.name.is_empty()
            && self.type_ == FROM_CONNECTION_SECRET_KEY
            && let Some(key) = &self.from_connection_secret_key
        {
            self.name = key.clone();
        }
    }
}

/// A readiness check on an observed composed resource.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct ReadinessCheck {
    #[serde(rename = "type", default)]
    pub type_: String,
    #[serde(default)]
    pub field_path: Option<String>,
    #[serde(default)]
    pub match_string: Option<String>,
    #[serde(default)]
    pub match_integer: Option<i64>,
    /// Without it a `MatchCondition` check uses the CRD default, `Ready`
    /// `True` (upstream would dereference nil).
    #[serde(default)]
    pub match_condition: Option<MatchConditionCheck>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct MatchConditionCheck {
    #[serde(rename = "type", default)]
    pub type_: String,
    #[serde(default)]
    pub status: String,
}

/// The connection Secret of a v2 XR.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct WriteConnectionSecretToRef {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    /// Only FromCompositeFieldPath and CombineFromComposite, to `name` or `namespace`.
    #[serde(default, deserialize_with = "nullable")]
    pub patches: Vec<Patch>,
}

plait_go_compat::deserialize_from_objects_only!(
    Resources,
    PatchSet,
    Environment,
    ComposedTemplate,
    Patch,
    PatchPolicy,
    LegacyMergeOptions,
    Combine,
    CombineVariable,
    StringCombine,
    ConnectionDetail,
    ReadinessCheck,
    MatchConditionCheck,
    WriteConnectionSecretToRef,
);

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The input parsed from its tree (native hosts) and from its text
    /// (WebAssembly guests); both must read it the same way.
    fn parse_both(input: &Value) -> [Result<Resources, serde_json::Error>; 2] {
        [
            Resources::from_value(input.clone()),
            Resources::from_json_text(&input.to_string()),
        ]
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let cases = [
            json!({"resources": [{"name": "a", "bogus": 1}]}),
            json!({"resources": [], "extra": true}),
            json!({"resources": [{"name": "a", "patches": [{"fromFieldPath": "a", "toFieldpath": "b"}]}]}),
        ];
        for input in cases {
            for parsed in parse_both(&input) {
                assert!(parsed.is_err(), "{input}");
            }
        }
    }

    #[test]
    fn arrays_where_objects_belong_are_rejected() {
        // serde alone would read each array positionally into the struct.
        let cases = [
            (json!([]), "struct Resources"),
            (json!({"patchSets": [["common", []]]}), "struct PatchSet"),
            (json!({"environment": []}), "struct Environment"),
            (
                json!({"resources": [["a", {"kind": "A"}]]}),
                "struct ComposedTemplate",
            ),
            (
                json!({"resources": [{"name": "a", "patches": [["FromCompositeFieldPath", "spec.a"]]}]}),
                "struct Patch",
            ),
            (
                json!({"resources": [{"name": "a", "patches": [{"fromFieldPath": "a",
                "policy": ["Required"]}]}]}),
                "struct PatchPolicy",
            ),
            (
                json!({"resources": [{"name": "a", "patches": [{"fromFieldPath": "a",
                "transforms": [["string", {"fmt": "%s"}]]}]}]}),
                "struct Transform",
            ),
            (
                json!({"resources": [{"name": "a", "patches": [{"fromFieldPath": "a",
                "transforms": [{"type": "math", "math": [2]}]}]}]}),
                "struct MathTransform",
            ),
            (
                json!({"resources": [{"name": "a", "readinessChecks": [["None"]]}]}),
                "struct ReadinessCheck",
            ),
            (
                json!({"resources": [{"name": "a", "connectionDetails": [["password"]]}]}),
                "struct ConnectionDetail",
            ),
            (
                json!({"writeConnectionSecretToRef": ["s", "ns"]}),
                "struct WriteConnectionSecretToRef",
            ),
        ];
        for (input, expected) in cases {
            for parsed in parse_both(&input) {
                let error = parsed.expect_err(&input.to_string()).to_string();
                assert!(
                    error.contains(&format!("invalid type: sequence, expected {expected}")),
                    "{input}: {error}"
                );
            }
        }
    }

    #[test]
    fn nulls_read_as_empty_lists() {
        let input = json!({"apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources",
            "patchSets": null, "resources": [{"name": "a", "patches": null, "base": null}]});
        for parsed in parse_both(&input) {
            let resources = parsed.unwrap();
            assert!(resources.patch_sets.is_empty());
            assert!(resources.resources[0].patches.is_empty());
            assert!(resources.resources[0].base.is_none());
        }
    }

    #[test]
    fn parsing_the_input_text_reads_what_parsing_its_tree_reads() {
        let bench = crate::bench_input::request(3).input.unwrap();
        let cases = [
            bench,
            json!({"resources": [{"name": "a", "base": {"kind": "A", "spec": {"n": 1, "f": 1.5}},
                "connectionDetails": [{"fromConnectionSecretKey": "password"}],
                "readinessChecks": [{"type": "MatchInteger", "fieldPath": "status.n", "matchInteger": 3}]}],
                "environment": {"patches": [{"type": "FromEnvironmentFieldPath", "fromFieldPath": "a"}]}}),
            json!({}),
        ];
        for input in cases {
            let [tree, text] = parse_both(&input);
            assert_eq!(
                format!("{:?}", tree.unwrap()),
                format!("{:?}", text.unwrap()),
                "{input}"
            );
        }
        assert_eq!(
            format!("{:?}", Resources::from_json_text("null").unwrap()),
            format!("{:?}", Resources::default()),
            "a null input reads as an empty one"
        );
    }

    #[test]
    fn combine_string_tolerates_a_format_type() {
        let patch: Patch =
            serde_json::from_value(json!({"type": "CombineFromComposite", "toFieldPath": "a",
            "combine": {"strategy": "string", "variables": [{"fromFieldPath": "b"}],
                        "string": {"type": "Format", "fmt": "%s"}}}))
            .unwrap();
        assert_eq!(patch.combine.unwrap().string.unwrap().fmt, "%s");
    }

    #[test]
    fn patch_defaults() {
        let patch: Patch = serde_json::from_value(json!({"fromFieldPath": "spec.a"})).unwrap();
        assert_eq!(patch.patch_type(), FROM_COMPOSITE_FIELD_PATH);
        assert_eq!(patch.to_field_path(), "spec.a");
        assert_eq!(patch.from_field_path_policy(), "Optional");
        assert_eq!(
            patch.to_field_path_policy(),
            Some(ToFieldPathPolicy::Replace)
        );
    }

    #[test]
    fn legacy_merge_options_become_policies() {
        let cases = [
            (
                json!({"mergeOptions": {"keepMapValues": true}}),
                "MergeObjects",
            ),
            (
                json!({"mergeOptions": {"keepMapValues": true, "appendSlice": true}}),
                "MergeObjectsAppendArrays",
            ),
            (
                json!({"mergeOptions": {"appendSlice": true}}),
                "ForceMergeObjectsAppendArrays",
            ),
            (json!({"mergeOptions": {}}), "ForceMergeObjects"),
            (
                json!({"toFieldPath": "Replace", "mergeOptions": {"keepMapValues": true}}),
                "Replace",
            ),
            (json!({"fromFieldPath": "Required"}), "Replace"),
        ];
        for (policy, expected) in cases {
            let patch: Patch =
                serde_json::from_value(json!({"fromFieldPath": "a", "policy": policy})).unwrap();
            assert_eq!(patch.to_field_path_policy_name(), expected, "{policy}");
        }
    }

    #[test]
    fn untyped_connection_details_are_inferred() {
        let cases = [
            (
                json!({"fromConnectionSecretKey": "password"}),
                "password",
                FROM_CONNECTION_SECRET_KEY,
            ),
            (
                json!({"name": "pw", "fromConnectionSecretKey": "password"}),
                "pw",
                FROM_CONNECTION_SECRET_KEY,
            ),
            (
                json!({"name": "host", "fromFieldPath": "status.host"}),
                "host",
                FROM_FIELD_PATH,
            ),
            (json!({"name": "port", "value": "5432"}), "port", FROM_VALUE),
            (
                json!({"name": "port", "type": "FromValue", "fromConnectionSecretKey": "x"}),
                "port",
                FROM_VALUE,
            ),
        ];
        for (detail, name, type_) in cases {
            let input = json!({"resources": [{"name": "a", "connectionDetails": [detail]}]});
            for parsed in parse_both(&input) {
                let resources = parsed.unwrap();
                let got = &resources.resources[0].connection_details[0];
                assert_eq!(
                    (got.name.as_str(), got.type_.as_str()),
                    (name, type_),
                    "{detail}"
                );
            }
        }
    }
}
