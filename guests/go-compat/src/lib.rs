//! Behaviours of Crossplane's Go code that plait's built-in functions must
//! reproduce byte for byte: crossplane-runtime's field paths (parsing, reads,
//! writes, wildcards, and their error texts) and Go's `fmt`, `strconv.Quote`
//! and `encoding/json` renderings of JSON values.

pub mod fieldpath;
pub mod gofmt;
