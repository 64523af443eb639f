//! Behaviours of Crossplane's Go code that plait's built-in functions must
//! reproduce byte for byte: crossplane-runtime's field paths (parsing, reads,
//! writes, wildcards, and their error texts), Go's `fmt`, `strconv` and
//! `encoding/json` renderings of JSON values, `encoding/json`'s refusal to
//! read a struct from anything but an object, function-sdk-go's strict
//! reading of a function's input into Go structs, and Kubernetes'
//! `field.Error`.

pub mod field;
pub mod fieldpath;
pub mod float;
pub mod input;
pub mod json;
pub mod printf;
pub mod strconv;
pub mod value;

#[doc(hidden)]
pub use serde as __serde;

/// Makes each listed type read only from a JSON object, as Go's
/// `encoding/json` does for a struct. serde's derived code also reads a
/// struct from an array, field by field in declaration order; so each type
/// derives its field-reading code as an inherent `deserialize`
/// (`#[serde(remote = "Self")]`) and this implements the trait around it.
/// Deserialize such a type through the trait (`serde_json::from_*`,
/// `<T as Deserialize>::deserialize`): `T::deserialize` names the inherent
/// function, which still reads arrays.
#[macro_export]
macro_rules! deserialize_from_objects_only {
    ($($t:ident),* $(,)?) => {$(
        impl<'de> $crate::__serde::Deserialize<'de> for $t {
            fn deserialize<D: $crate::__serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct ObjectOnly;
                impl<'de> $crate::__serde::de::Visitor<'de> for ObjectOnly {
                    type Value = $t;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str(concat!("struct ", stringify!($t)))
                    }
                    fn visit_map<A: $crate::__serde::de::MapAccess<'de>>(self, map: A) -> Result<$t, A::Error> {
                        $t::deserialize($crate::__serde::de::value::MapAccessDeserializer::new(map))
                    }
                }
                deserializer.deserialize_map(ObjectOnly)
            }
        }
    )*};
}
