//! Behaviours of Crossplane's Go code that plait's built-in functions must
//! reproduce byte for byte: crossplane-runtime's field paths (parsing, reads,
//! writes, wildcards, and their error texts), Go's `fmt`, `strconv` and
//! `encoding/json` renderings of JSON values, function-sdk-go's strict reading
//! of a function's input into Go structs, and Kubernetes' `field.Error`.

pub mod duration;
pub mod field;
pub mod fieldpath;
pub mod float;
pub mod input;
pub mod json;
pub mod printf;
#[cfg(feature = "regexp")]
pub mod regexp;
pub mod response;
pub mod sort;
pub mod strconv;
pub mod value;

#[doc(hidden)]
pub use serde as __serde;
