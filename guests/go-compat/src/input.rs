//! A function's input read as function-sdk-go's `request.GetInput` reads it
//! into a Go struct: the input `Struct` is printed by `protojson` (object
//! members sorted by name) and decoded by go-json-experiment with
//! `RejectUnknownMembers`, which stops at the first member a struct does not
//! declare, or at the first struct given something other than an object.
//!
//! Each Rust input type derives its field reading as an inherent
//! `deserialize` (`#[serde(remote = "Self")]`) and [`go_structs!`]
//! implements `Deserialize` around it, naming the Go type for errors.
//! Decode through the trait (`serde_json::from_*`,
//! `<T as Deserialize>::deserialize`); `T::deserialize` names the inherent
//! function, which reads arrays and takes any member name.
//!
//! Errors come in the order upstream meets them only when objects are read
//! in sorted order: decode a [`Value`] through [`from_sorted_value`].

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::Value;

/// A Go struct, as go-json-experiment names it in its errors.
#[derive(Debug)]
pub struct GoStruct {
    /// Its `reflect.Type` string, e.g. `v1beta1.StringCombine`.
    pub name: &'static str,
    /// JSON names of fields the Rust type reads that this Go struct lacks
    /// (one Rust type can stand for several Go structs); refused as unknown.
    pub lacks: &'static [&'static str],
}

/// serde's derived reading of a struct's fields, from any map.
pub trait ReadFields<'de>: Sized {
    fn read_fields<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error>;
}

/// Reads `T` as go-json-experiment reads the Go struct `go`: from an object
/// only, refusing a member name the struct does not declare.
pub fn deserialize_struct<'de, T, D>(deserializer: D, go: &'static GoStruct) -> Result<T, D::Error>
where
    T: ReadFields<'de>,
    D: Deserializer<'de>,
{
    deserializer.deserialize_any(ObjectOnly {
        go,
        marker: PhantomData,
    })
}

/// Decodes `value` with its objects' members in sorted order, as `protojson`
/// prints them, so the first error is the one upstream reports.
pub fn from_sorted_value<T: DeserializeOwned>(mut value: Value) -> Result<T, serde_json::Error> {
    value.sort_all_objects();
    serde_json::from_value(value)
}

/// function-sdk-go's `request.GetInput` into `*<go_type>`: an absent input
/// is the zero value; one that does not decode is refused with
/// [`get_input_error`]'s message.
pub fn get_input<T: DeserializeOwned + Default>(
    input: Option<&Value>,
    go_type: &str,
) -> Result<T, String> {
    match input {
        None => Ok(T::default()),
        Some(value) => from_sorted_value(value.clone()).map_err(|e| get_input_error(go_type, e)),
    }
}

/// What function-sdk-go's `request.GetInput` says when it cannot read the
/// input into `*<go_type>` (e.g. `v1beta1.Resources`).
pub fn get_input_error(go_type: &str, cause: impl fmt::Display) -> String {
    format!(
        "cannot get function input *{go_type} from *v1.RunFunctionRequest: \
         cannot unmarshal JSON from *structpb.Struct into *{go_type}: {cause}"
    )
}

/// go-json-experiment's error for a member the struct does not declare. The
/// name is quoted as `protojson` printed it.
pub fn unknown_name_error(go_type: &str, name: &str) -> String {
    // The library words its errors "cannot" or "unable to" at random (to
    // keep callers from matching them); this is the first of the two.
    format!(
        "json: cannot unmarshal Go value of type {go_type}: unknown name {}",
        protojson_quote(name)
    )
}

/// go-json-experiment's error for a struct given another kind of value.
fn kind_error(kind: &str, go_type: &str) -> String {
    format!("json: cannot unmarshal JSON {kind} into Go value of type {go_type}")
}

/// A string as `protojson` prints it: `"` and `\` escaped, control
/// characters as `\b \f \n \r \t` or `\u00XX`, everything else as is.
pub fn protojson_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Reads a Go struct or slice field: `null` is the zero value, as Go's
/// decoding leaves it.
pub fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + serde::Deserialize<'de>,
{
    Ok(<Option<T> as serde::Deserialize>::deserialize(deserializer)?.unwrap_or_default())
}

/// Reads a Go `string` or `*string` field: a JSON string, or `null` for
/// none; another kind of value is refused as go-json-experiment refuses it.
pub fn go_string<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    struct GoString;
    impl<'de> Visitor<'de> for GoString {
        type Value = Option<String>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON string for Go value of type string")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(v.to_owned()))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(Some(v))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Err(E::custom(kind_error("boolean", "string")))
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Err(E::custom(kind_error("number", "string")))
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Err(E::custom(kind_error("number", "string")))
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Err(E::custom(kind_error("number", "string")))
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
            Err(de::Error::custom(kind_error("array", "string")))
        }
        fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
            Err(de::Error::custom(kind_error("object", "string")))
        }
    }
    deserializer.deserialize_any(GoString)
}

struct ObjectOnly<T> {
    go: &'static GoStruct,
    marker: PhantomData<fn() -> T>,
}

impl<T> ObjectOnly<T> {
    fn wrong_kind<E: de::Error>(&self, kind: &str) -> E {
        E::custom(kind_error(kind, self.go.name))
    }
}

impl<'de, T: ReadFields<'de>> Visitor<'de> for ObjectOnly<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a JSON object for Go value of type {}", self.go.name)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::read_fields(Fields { map, go: self.go })
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<T, E> {
        Err(self.wrong_kind("boolean"))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<T, E> {
        Err(self.wrong_kind("number"))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<T, E> {
        Err(self.wrong_kind("number"))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<T, E> {
        Err(self.wrong_kind("number"))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<T, E> {
        Err(self.wrong_kind("string"))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<T, A::Error> {
        Err(self.wrong_kind("array"))
    }
}

/// The members of one object, handed to serde's derived field reading.
struct Fields<A> {
    map: A,
    go: &'static GoStruct,
}

impl<'de, A: MapAccess<'de>> Deserializer<'de> for Fields<A> {
    type Error = A::Error;

    /// Derived structs ask for a struct; anything else reads the members
    /// unchecked.
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, A::Error> {
        visitor.visit_map(self.map)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        visitor.visit_map(KnownNames {
            map: self.map,
            fields,
            go: self.go,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// An object's members, each name checked against the Go struct's.
struct KnownNames<A> {
    map: A,
    fields: &'static [&'static str],
    go: &'static GoStruct,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for KnownNames<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let known = KnownName {
            fields: self.fields,
            go: self.go,
        };
        match self.map.next_key_seed(known)? {
            None => Ok(None),
            Some(name) => seed
                .deserialize(BorrowedStrDeserializer::new(name))
                .map(Some),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// Reads a member name, refusing one the Go struct does not declare.
struct KnownName {
    fields: &'static [&'static str],
    go: &'static GoStruct,
}

impl<'de> DeserializeSeed<'de> for KnownName {
    type Value = &'static str;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<&'static str, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for KnownName {
    type Value = &'static str;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a member name of Go value of type {}", self.go.name)
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<&'static str, E> {
        self.fields
            .iter()
            .find(|field| **field == name && !self.go.lacks.contains(field))
            .copied()
            .ok_or_else(|| E::custom(unknown_name_error(self.go.name, name)))
    }
}

/// Implements `Deserialize` for each listed type as go-json-experiment reads
/// the named Go struct (see the module documentation):
/// `go_structs!(Resources => "v1beta1.Resources", ...)`.
#[macro_export]
macro_rules! go_structs {
    ($($t:ident => $go:literal),* $(,)?) => {$(
        impl<'de> $crate::input::ReadFields<'de> for $t {
            fn read_fields<D: $crate::__serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                $t::deserialize(deserializer)
            }
        }
        impl<'de> $crate::__serde::Deserialize<'de> for $t {
            fn deserialize<D: $crate::__serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                static GO: $crate::input::GoStruct = $crate::input::GoStruct { name: $go, lacks: &[] };
                $crate::input::deserialize_struct(deserializer, &GO)
            }
        }
    )*};
}

/// Kubernetes' `metav1.ObjectMeta`, as an input's `metadata` is read: only
/// its member names are checked; the values are not kept.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct ObjectMeta {
    #[serde(default)]
    name: Option<de::IgnoredAny>,
    #[serde(default)]
    generate_name: Option<de::IgnoredAny>,
    #[serde(default)]
    namespace: Option<de::IgnoredAny>,
    #[serde(default)]
    self_link: Option<de::IgnoredAny>,
    #[serde(default)]
    uid: Option<de::IgnoredAny>,
    #[serde(default)]
    resource_version: Option<de::IgnoredAny>,
    #[serde(default)]
    generation: Option<de::IgnoredAny>,
    #[serde(default)]
    creation_timestamp: Option<de::IgnoredAny>,
    #[serde(default)]
    deletion_timestamp: Option<de::IgnoredAny>,
    #[serde(default)]
    deletion_grace_period_seconds: Option<de::IgnoredAny>,
    #[serde(default)]
    labels: Option<de::IgnoredAny>,
    #[serde(default)]
    annotations: Option<de::IgnoredAny>,
    #[serde(default)]
    owner_references: Option<Vec<OwnerReference>>,
    #[serde(default)]
    finalizers: Option<de::IgnoredAny>,
    #[serde(default)]
    managed_fields: Option<Vec<ManagedFieldsEntry>>,
}

/// `metav1.OwnerReference`, names only.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct OwnerReference {
    #[serde(default)]
    api_version: Option<de::IgnoredAny>,
    #[serde(default)]
    kind: Option<de::IgnoredAny>,
    #[serde(default)]
    name: Option<de::IgnoredAny>,
    #[serde(default)]
    uid: Option<de::IgnoredAny>,
    #[serde(default)]
    controller: Option<de::IgnoredAny>,
    #[serde(default)]
    block_owner_deletion: Option<de::IgnoredAny>,
}

/// `metav1.ManagedFieldsEntry`, names only.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
pub struct ManagedFieldsEntry {
    #[serde(default)]
    manager: Option<de::IgnoredAny>,
    #[serde(default)]
    operation: Option<de::IgnoredAny>,
    #[serde(default)]
    api_version: Option<de::IgnoredAny>,
    #[serde(default)]
    time: Option<de::IgnoredAny>,
    #[serde(default)]
    fields_type: Option<de::IgnoredAny>,
    #[serde(rename = "fieldsV1", default)]
    fields_v1: Option<de::IgnoredAny>,
    #[serde(default)]
    subresource: Option<de::IgnoredAny>,
}

go_structs!(
    ObjectMeta => "v1.ObjectMeta",
    OwnerReference => "v1.OwnerReference",
    ManagedFieldsEntry => "v1.ManagedFieldsEntry",
);

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Default, Deserialize)]
    #[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
    struct Outer {
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        inner: Option<Inner>,
        #[serde(default)]
        items: Vec<Inner>,
        #[serde(default)]
        metadata: Option<ObjectMeta>,
    }

    #[derive(Debug, Default, Deserialize)]
    #[serde(remote = "Self", deny_unknown_fields, rename_all = "camelCase")]
    struct Inner {
        #[serde(rename = "type", default)]
        type_: Option<String>,
        #[serde(default)]
        extra_in_rust: Option<String>,
    }

    /// `Inner` as a Go struct without `extraInRust`.
    #[derive(Debug)]
    struct Narrow(Inner);

    impl<'de> Deserialize<'de> for Narrow {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            static GO: GoStruct = GoStruct {
                name: "v1beta1.Narrow",
                lacks: &["extraInRust"],
            };
            deserialize_struct::<Inner, D>(d, &GO).map(Narrow)
        }
    }

    go_structs!(Outer => "v1beta1.Outer", Inner => "v1beta1.Inner");

    /// Decoded from a tree (sorted) and from text (as written); both must
    /// refuse alike, the tree with upstream's message.
    fn decode(input: &Value) -> [Result<Outer, String>; 2] {
        [
            from_sorted_value::<Outer>(input.clone()).map_err(|e| e.to_string()),
            serde_json::from_str::<Outer>(&input.to_string()).map_err(|e| e.to_string()),
        ]
    }

    #[test]
    fn unknown_names_are_refused_with_go_json_experiments_message() {
        let cases = [
            (
                "at the top",
                json!({"name": "a", "nmae": "b"}),
                r#"json: cannot unmarshal Go value of type v1beta1.Outer: unknown name "nmae""#,
            ),
            (
                "in a nested struct",
                json!({"inner": {"type": "x", "typo": 1}}),
                r#"json: cannot unmarshal Go value of type v1beta1.Inner: unknown name "typo""#,
            ),
            (
                "in a list of structs",
                json!({"items": [{"type": "x"}, {"Type": "y"}]}),
                r#"json: cannot unmarshal Go value of type v1beta1.Inner: unknown name "Type""#,
            ),
            (
                "in metadata",
                json!({"metadata": {"name": "a", "label": {}}}),
                r#"json: cannot unmarshal Go value of type v1.ObjectMeta: unknown name "label""#,
            ),
            (
                "in an owner reference",
                json!({"metadata": {"ownerReferences": [{"kind": "A", "owner": true}]}}),
                r#"json: cannot unmarshal Go value of type v1.OwnerReference: unknown name "owner""#,
            ),
            (
                "the first in sorted order, depth first",
                json!({"zz": 1, "inner": {"b": 1}, "items": [{"a": 1}]}),
                r#"json: cannot unmarshal Go value of type v1beta1.Inner: unknown name "b""#,
            ),
            (
                "a name quoted as protojson prints it",
                json!({"we\"ird\n\u{1}é": 1}),
                r#"json: cannot unmarshal Go value of type v1beta1.Outer: unknown name "we\"ird\n\u0001é""#,
            ),
        ];
        for (name, input, message) in cases {
            let [tree, text] = decode(&input);
            assert_eq!(tree.expect_err(name), message, "{name}");
            let text = text.expect_err(name);
            assert!(text.contains("unknown name"), "{name}: {text}");
        }
    }

    #[test]
    fn declared_names_are_read() {
        let input = json!({"name": "a", "inner": {"type": "x", "extraInRust": "y"},
            "items": [{"type": "z"}],
            "metadata": {"name": "n", "namespace": "ns", "labels": {"a": "b"}, "annotations": {},
                "uid": "u", "generateName": "g", "selfLink": "", "resourceVersion": "1",
                "generation": 2, "creationTimestamp": null, "deletionTimestamp": "2024-01-01T00:00:00Z",
                "deletionGracePeriodSeconds": 3, "finalizers": ["f"],
                "ownerReferences": [{"apiVersion": "v1", "kind": "A", "name": "a", "uid": "u",
                    "controller": true, "blockOwnerDeletion": false}],
                "managedFields": [{"manager": "m", "operation": "Apply", "apiVersion": "v1",
                    "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {},
                    "subresource": ""}]}});
        for decoded in decode(&input) {
            let outer = decoded.unwrap();
            assert_eq!(outer.name.as_deref(), Some("a"));
            let inner = outer.inner.unwrap();
            assert_eq!(
                (inner.type_.as_deref(), inner.extra_in_rust.as_deref()),
                (Some("x"), Some("y"))
            );
            assert_eq!(outer.items[0].type_.as_deref(), Some("z"));
        }
    }

    #[test]
    fn a_go_struct_lacking_a_rust_field_refuses_it() {
        let refused = serde_json::from_value::<Narrow>(json!({"type": "a", "extraInRust": "b"}))
            .unwrap_err()
            .to_string();
        assert_eq!(
            refused,
            r#"json: cannot unmarshal Go value of type v1beta1.Narrow: unknown name "extraInRust""#
        );
        let read = serde_json::from_value::<Narrow>(json!({"type": "a"})).unwrap();
        assert_eq!(read.0.type_.as_deref(), Some("a"));
    }

    #[test]
    fn structs_read_only_from_objects() {
        let cases = [
            (json!([]), "JSON array"),
            (json!({"inner": ["x"]}), "JSON array"),
            (json!({"inner": "x"}), "JSON string"),
            (json!({"inner": 1}), "JSON number"),
            (json!({"inner": 1.5}), "JSON number"),
            (json!({"inner": true}), "JSON boolean"),
        ];
        for (input, kind) in cases {
            let go_type = if input.is_array() { "Outer" } else { "Inner" };
            let [tree, text] = decode(&input);
            let expected =
                format!("json: cannot unmarshal {kind} into Go value of type v1beta1.{go_type}");
            assert_eq!(tree.expect_err(&input.to_string()), expected, "{input}");
            assert!(text.unwrap_err().starts_with(&expected), "{input}");
        }
        // A null struct is no struct, as with a Go pointer.
        for decoded in decode(&json!({"inner": null})) {
            assert!(decoded.unwrap().inner.is_none());
        }
    }

    #[test]
    fn go_strings_refuse_other_kinds_as_go_does() {
        #[derive(Debug, Deserialize)]
        struct S {
            #[serde(default, deserialize_with = "go_string")]
            s: Option<String>,
        }
        let read = |v: Value| {
            serde_json::from_value::<S>(v)
                .map(|s| s.s)
                .map_err(|e| e.to_string())
        };
        assert_eq!(read(json!({"s": "x"})), Ok(Some("x".to_owned())));
        assert_eq!(read(json!({"s": null})), Ok(None));
        assert_eq!(read(json!({})), Ok(None));
        for (value, kind) in [
            (json!(5), "number"),
            (json!(1.5), "number"),
            (json!(true), "boolean"),
            (json!([]), "array"),
            (json!({}), "object"),
        ] {
            assert_eq!(
                read(json!({ "s": value })),
                Err(format!(
                    "json: cannot unmarshal JSON {kind} into Go value of type string"
                )),
                "{value}"
            );
        }
    }

    #[test]
    fn get_input_errors_read_as_function_sdk_gos() {
        assert_eq!(
            get_input_error("v1beta1.Input", "json: boom"),
            "cannot get function input *v1beta1.Input from *v1.RunFunctionRequest: \
             cannot unmarshal JSON from *structpb.Struct into *v1beta1.Input: json: boom"
        );
    }
}
