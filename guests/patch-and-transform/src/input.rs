//! The function's input, `pt.fn.crossplane.io/v1beta1` `Resources`.
//!
//! Read as upstream reads it (see [`plait_go_compat::input`]): a member
//! name upstream's Go structs do not declare is refused with upstream's
//! message, naming the Go struct. Enumerations (patch types, policies,
//! strategies, check types) stay strings here so that validation can report
//! an unknown value with upstream's message.

use plait_go_compat::input::{GoStruct, ObjectMeta, deserialize_struct, from_sorted_value};
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
    pub metadata: Option<ObjectMeta>,
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
    /// Members are read in sorted order, as upstream reads them, so an
    /// input with several faults is refused for the one upstream names.
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
        let mut resources: Resources = from_sorted_value(input)?;
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
        match serde_json::from_str::<Option<Resources>>(text) {
            Ok(resources) => Ok(resources.unwrap_or_default().with_legacy_fields_inferred()),
            // The text is read in the order it is written; the tree, read
            // sorted, finds the fault upstream reports (without a position).
            Err(in_text) => match serde_json::from_str::<Value>(text) {
                Ok(tree) => Err(Self::from_value(tree).err().unwrap_or(in_text)),
                Err(_) => Err(in_text),
            },
        }
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
    #[serde(default, deserialize_with = "patch_set_patches")]
    pub patches: Vec<Patch>,
}

/// Patches between the XR and the environment, run before any template.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct Environment {
    #[serde(default, deserialize_with = "environment_patches")]
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
    #[serde(default, deserialize_with = "composed_patches")]
    pub patches: Vec<Patch>,
    #[serde(default, deserialize_with = "nullable")]
    pub connection_details: Vec<ConnectionDetail>,
    #[serde(default, deserialize_with = "nullable")]
    pub readiness_checks: Vec<ReadinessCheck>,
    /// A plait extension (upstream refuses it as an unknown name): the names
    /// of the composed resources this one is created after, once they are
    /// ready (and deleted before). Written onto the resource as
    /// [`crate::DEPENDS_ON_ANNOTATION`].
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
/// share these fields but for `patchSetName` (only a template's patches
/// have it), and validation checks what each place allows.
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

    /// The toFieldPath policy name as written; `Replace` when unset.
    pub fn to_field_path_policy_name(&self) -> &str {
        self.policy
            .as_ref()
            .and_then(|p| p.to_field_path.as_deref())
            .unwrap_or("Replace")
    }

    /// The toFieldPath policy; `None` for a name validation would reject.
    pub fn to_field_path_policy(&self) -> Option<ToFieldPathPolicy> {
        ToFieldPathPolicy::parse(self.to_field_path_policy_name())
    }
}

/// The Go struct a patch is read as, by where it appears.
static COMPOSED_PATCH: GoStruct = GoStruct {
    name: "v1beta1.ComposedPatch",
    lacks: &[],
};
static PATCH_SET_PATCH: GoStruct = GoStruct {
    name: "v1beta1.PatchSetPatch",
    lacks: &["patchSetName"],
};
static ENVIRONMENT_PATCH: GoStruct = GoStruct {
    name: "v1beta1.EnvironmentPatch",
    lacks: &["patchSetName"],
};
static CONNECTION_SECRET_PATCH: GoStruct = GoStruct {
    name: "v1beta1.ConnectionSecretPatch",
    lacks: &["patchSetName"],
};

/// A list of patches read as `[]<go>`; `null` reads as empty.
fn patches_as<'de, D: Deserializer<'de>>(
    deserializer: D,
    go: &'static GoStruct,
) -> Result<Vec<Patch>, D::Error> {
    struct Placed(Patch);
    struct PlacedSeed(&'static GoStruct);
    impl<'de> serde::de::DeserializeSeed<'de> for PlacedSeed {
        type Value = Placed;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Placed, D::Error> {
            deserialize_struct::<Patch, D>(d, self.0).map(Placed)
        }
    }
    struct List(&'static GoStruct);
    impl<'de> serde::de::Visitor<'de> for List {
        type Value = Vec<Patch>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "a list of {}", self.0.name)
        }
        fn visit_unit<E>(self) -> Result<Vec<Patch>, E> {
            Ok(Vec::new())
        }
        fn visit_none<E>(self) -> Result<Vec<Patch>, E> {
            Ok(Vec::new())
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Vec<Patch>, D::Error> {
            d.deserialize_seq(self)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Vec<Patch>, A::Error> {
            let mut patches = Vec::with_capacity(seq.size_hint().unwrap_or(0));
            while let Some(Placed(patch)) = seq.next_element_seed(PlacedSeed(self.0))? {
                patches.push(patch);
            }
            Ok(patches)
        }
    }
    deserializer.deserialize_option(List(go))
}

fn composed_patches<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Patch>, D::Error> {
    patches_as(d, &COMPOSED_PATCH)
}

fn patch_set_patches<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Patch>, D::Error> {
    patches_as(d, &PATCH_SET_PATCH)
}

fn environment_patches<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Patch>, D::Error> {
    patches_as(d, &ENVIRONMENT_PATCH)
}

fn connection_secret_patches<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Patch>, D::Error> {
    patches_as(d, &CONNECTION_SECRET_PATCH)
}

/// How a patch reads and writes. (Native Crossplane v1's `mergeOptions` is
/// refused as upstream refuses it; plait's converter from `mode: Resources`
/// turns it into a `toFieldPath` policy first.)
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct PatchPolicy {
    #[serde(default)]
    pub from_field_path: Option<String>,
    #[serde(default)]
    pub to_field_path: Option<String>,
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
    #[serde(default, deserialize_with = "connection_secret_patches")]
    pub patches: Vec<Patch>,
}

plait_go_compat::go_structs!(
    Resources => "v1beta1.Resources",
    PatchSet => "v1beta1.PatchSet",
    Environment => "v1beta1.Environment",
    ComposedTemplate => "v1beta1.ComposedTemplate",
    Patch => "v1beta1.ComposedPatch",
    PatchPolicy => "v1beta1.PatchPolicy",
    Combine => "v1beta1.Combine",
    CombineVariable => "v1beta1.CombineVariable",
    StringCombine => "v1beta1.StringCombine",
    ConnectionDetail => "v1beta1.ConnectionDetail",
    ReadinessCheck => "v1beta1.ReadinessCheck",
    MatchConditionCheck => "v1beta1.MatchConditionReadinessCheck",
    WriteConnectionSecretToRef => "v1beta1.WriteConnectionSecretToRef",
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

    fn resource_with_patch(patch: Value) -> Value {
        json!({"resources": [{"name": "a", "base": {"kind": "A"}, "patches": [patch]}]})
    }

    #[test]
    fn unknown_fields_are_refused_as_upstream() {
        let unknown = |go: &str, name: &str| {
            format!("json: cannot unmarshal Go value of type v1beta1.{go}: unknown name \"{name}\"")
        };
        let cases = [
            (
                "top level",
                json!({"resources": [], "extra": true}),
                unknown("Resources", "extra"),
            ),
            (
                "template",
                json!({"resources": [{"name": "a", "bogus": 1}]}),
                unknown("ComposedTemplate", "bogus"),
            ),
            (
                "a composed patch, names are case-sensitive",
                resource_with_patch(json!({"fromFieldPath": "a", "toFieldpath": "b"})),
                unknown("ComposedPatch", "toFieldpath"),
            ),
            (
                "combine string type",
                resource_with_patch(json!({"type": "CombineFromComposite", "toFieldPath": "a",
                    "combine": {"strategy": "string", "variables": [{"fromFieldPath": "b"}],
                        "string": {"type": "Format", "fmt": "%s"}}})),
                unknown("StringCombine", "type"),
            ),
            (
                "combine variable",
                resource_with_patch(json!({"type": "CombineFromComposite", "toFieldPath": "a",
                    "combine": {"strategy": "string", "string": {"fmt": "%s"},
                        "variables": [{"fromFieldPath": "b", "policy": "Required"}]}})),
                unknown("CombineVariable", "policy"),
            ),
            (
                "legacy mergeOptions",
                resource_with_patch(json!({"fromFieldPath": "a",
                    "policy": {"mergeOptions": {"keepMapValues": true}}})),
                unknown("PatchPolicy", "mergeOptions"),
            ),
            (
                "a transform, four levels down",
                resource_with_patch(json!({"fromFieldPath": "a", "transforms": [
                    {"type": "string", "string": {"type": "Regexp",
                        "regexp": {"match": "x", "group": 1, "flags": "i"}}}]})),
                unknown("StringTransformRegexp", "flags"),
            ),
            (
                "patchSetName outside a template",
                json!({"patchSets": [{"name": "p", "patches": [
                    {"fromFieldPath": "a", "patchSetName": "q"}]}]}),
                unknown("PatchSetPatch", "patchSetName"),
            ),
            (
                "an environment patch",
                json!({"environment": {"patches": [{"type": "FromCompositeFieldPath",
                    "fromFieldPath": "a", "patchSetName": "q"}]}}),
                unknown("EnvironmentPatch", "patchSetName"),
            ),
            (
                "a connection secret patch",
                json!({"writeConnectionSecretToRef": {"name": "s", "patches": [
                    {"fromFieldPath": "a", "toFieldPath": "name", "patchSetName": "q"}]}}),
                unknown("ConnectionSecretPatch", "patchSetName"),
            ),
            (
                "connection detail",
                json!({"resources": [{"name": "a", "connectionDetails": [
                    {"name": "n", "type": "FromValue", "value": "v", "secret": "s"}]}]}),
                unknown("ConnectionDetail", "secret"),
            ),
            (
                "readiness check",
                json!({"resources": [{"name": "a", "readinessChecks": [
                    {"type": "MatchCondition", "matchCondition": {"type": "Ready", "status": "True",
                        "reason": "Available"}}]}]}),
                unknown("MatchConditionReadinessCheck", "reason"),
            ),
            (
                "metadata",
                json!({"metadata": {"name": "x", "label": {}}, "resources": []}),
                "json: cannot unmarshal Go value of type v1.ObjectMeta: unknown name \"label\""
                    .to_owned(),
            ),
            (
                // protojson prints members sorted, so upstream meets
                // `patchSets` before `resources`, and `a` before `z`.
                "the first in sorted order",
                json!({"resources": [{"name": "a", "zzz": 1}],
                    "patchSets": [{"name": "p", "patches": [{"fromFieldPath": "a", "oops": 1}], "aaa": 1}]}),
                unknown("PatchSet", "aaa"),
            ),
        ];
        for (name, input, cause) in cases {
            for parsed in parse_both(&input) {
                let error = parsed.expect_err(name).to_string();
                assert_eq!(error, cause, "{name}");
            }
        }
    }

    #[test]
    fn every_field_of_upstreams_input_types_is_accepted() {
        let patch = json!({"type": "CombineFromComposite", "fromFieldPath": "a", "toFieldPath": "b",
            "combine": {"variables": [{"fromFieldPath": "c"}], "strategy": "string", "string": {"fmt": "%s"}},
            "transforms": [
                {"type": "math", "math": {"type": "Multiply", "multiply": 2, "clampMin": 1, "clampMax": 3}},
                {"type": "map", "map": {"any": "thing", "goes": {"here": [1]}}},
                {"type": "match", "match": {"patterns": [{"type": "regexp", "literal": "l", "regexp": "r",
                    "result": {"x": 1}}], "fallbackValue": 1, "fallbackTo": "Value"}},
                {"type": "string", "string": {"type": "Format", "fmt": "%s", "convert": "ToUpper",
                    "trim": "t", "regexp": {"match": "m", "group": 1}, "join": {"separator": ","},
                    "replace": {"search": "s", "replace": "r"}}},
                {"type": "convert", "convert": {"toType": "int", "format": "quantity"}}],
            "policy": {"fromFieldPath": "Required", "toFieldPath": "MergeObjects"}});
        let mut composed_patch = patch.clone();
        composed_patch["patchSetName"] = json!("p");
        let input = json!({
            "apiVersion": "pt.fn.crossplane.io/v1beta1", "kind": "Resources",
            "metadata": {"name": "x", "namespace": "y", "labels": {"a": "b"}, "annotations": {}},
            "patchSets": [{"name": "p", "patches": [patch]}],
            "environment": {"patches": [patch]},
            "resources": [{"name": "a", "base": {"kind": "A"}, "patches": [composed_patch],
                "connectionDetails": [{"name": "n", "type": "FromFieldPath",
                    "fromConnectionSecretKey": "k", "fromFieldPath": "f", "value": "v"}],
                "readinessChecks": [{"type": "MatchCondition", "fieldPath": "f", "matchString": "s",
                    "matchInteger": 1, "matchCondition": {"type": "Ready", "status": "True"}}],
                "dependsOn": ["b"]}],
            "writeConnectionSecretToRef": {"name": "s", "namespace": "n", "patches": [patch]},
        });
        for parsed in parse_both(&input) {
            let resources = parsed.unwrap();
            assert_eq!(
                resources.resources[0].patches[0].patch_set_name.as_deref(),
                Some("p")
            );
            assert_eq!(resources.resources[0].depends_on, ["b"]);
        }
    }

    #[test]
    fn arrays_where_objects_belong_are_rejected() {
        // serde alone would read each array positionally into the struct.
        let cases = [
            (json!([]), "Resources"),
            (json!({"patchSets": [["common", []]]}), "PatchSet"),
            (json!({"environment": []}), "Environment"),
            (
                json!({"resources": [["a", {"kind": "A"}]]}),
                "ComposedTemplate",
            ),
            (
                resource_with_patch(json!(["FromCompositeFieldPath", "spec.a"])),
                "ComposedPatch",
            ),
            (
                json!({"patchSets": [{"name": "p", "patches": [["FromCompositeFieldPath"]]}]}),
                "PatchSetPatch",
            ),
            (
                resource_with_patch(json!({"fromFieldPath": "a", "policy": ["Required"]})),
                "PatchPolicy",
            ),
            (
                resource_with_patch(json!({"fromFieldPath": "a",
                    "transforms": [["string", {"fmt": "%s"}]]})),
                "Transform",
            ),
            (
                resource_with_patch(json!({"fromFieldPath": "a",
                    "transforms": [{"type": "math", "math": [2]}]})),
                "MathTransform",
            ),
            (
                json!({"resources": [{"name": "a", "readinessChecks": [["None"]]}]}),
                "ReadinessCheck",
            ),
            (
                json!({"resources": [{"name": "a", "connectionDetails": [["password"]]}]}),
                "ConnectionDetail",
            ),
            (
                json!({"writeConnectionSecretToRef": ["s", "ns"]}),
                "WriteConnectionSecretToRef",
            ),
        ];
        for (input, go) in cases {
            for parsed in parse_both(&input) {
                let error = parsed.expect_err(&input.to_string()).to_string();
                assert_eq!(
                    error,
                    format!("json: cannot unmarshal JSON array into Go value of type v1beta1.{go}"),
                    "{input}"
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
