//! Resolve arbitrary transforms on arbitrary inputs.
//! Input: `<transform json>\n<input json>`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plait_patch_and_transform::transforms::{Transform, resolve, validate};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (transform, input) = text.split_once('\n').unwrap_or((text, "null"));
    let Ok(transform) = serde_json::from_str::<Transform>(transform) else {
        return;
    };
    let input: Value = serde_json::from_str(input).unwrap_or(Value::Null);
    let _ = validate(&transform);
    let _ = resolve(&transform, input);
});
