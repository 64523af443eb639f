//! Parse, check and evaluate arbitrary KCL: whatever the source, plait's
//! KCL returns an output or a KCL error, and never panics.
//! Input: the text of one `main.k`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plait_kcl::{RunOptions, run};

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let options = RunOptions {
        sources: vec![("main.k".to_string(), source.to_string())],
        ..RunOptions::default()
    };
    if let Err(error) = run(&options) {
        // Rendering reads the sources at the error's positions: it must
        // not panic either.
        let _ = error.render();
    }
});
