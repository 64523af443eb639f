//! The `transforms[]` of patch-and-transform patches: their input schema
//! (`pt.fn.crossplane.io/v1beta1`), validation and resolution, with
//! upstream's error texts.
//!
//! Values follow the int-preserving model: integral JSON numbers are Go
//! `int64`, others `float64` (see `plait_go_compat::value::GoNumber`).

mod eval;
mod input;
mod validate;

pub use eval::{TransformError, resolve, resolve_all};
pub use input::*;
pub use validate::validate;

#[cfg(test)]
pub(crate) mod testing {
    use serde_json::Value;

    use super::{Transform, resolve};

    pub(crate) fn transform(v: Value) -> Transform {
        serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"))
    }

    pub(crate) type Want = Result<Value, &'static str>;

    /// Resolves each case's transform on its input.
    pub(crate) fn check(cases: Vec<(&str, Value, Value, Want)>) {
        for (rule, t, input, want) in cases {
            let got = resolve(&transform(t), input);
            match want {
                Ok(w) => assert_eq!(got, Ok(w), "{rule}"),
                Err(msg) => assert_eq!(got.map_err(|e| e.message), Err(msg.to_string()), "{rule}"),
            }
        }
    }
}
