//! Parse, get, set and expand arbitrary paths against small JSON documents.
//! Input: `<path>\n<json document>`; a non-JSON document fuzzes a fixed one.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plait_patch_and_transform::fieldpath::{FieldPath, expand_wildcards, get_value, set_value};
use serde_json::{Value, json};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (path, doc) = text.split_once('\n').unwrap_or((text, ""));
    let mut doc: Value = serde_json::from_str(doc)
        .unwrap_or_else(|_| json!({"spec": {"a": [1, {"b": null}], "m": {"x.y": "z"}, "n": null}}));
    if let Ok(parsed) = FieldPath::parse(path) {
        // Rendering must parse again to the same segments when it can.
        let _ = FieldPath::parse(&parsed.to_string());
    }
    let _ = get_value(&doc, path);
    if let Ok(paths) = expand_wildcards(&doc, path) {
        for p in paths {
            let _ = get_value(&doc, &p);
        }
    }
    let _ = set_value(&mut doc, path, json!("v"));
});
