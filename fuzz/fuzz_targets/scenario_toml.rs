//! Scenario files: loading any text gives a scenario or one error line, never a panic or a
//! hang; a scenario that loads is also held against its backend (the preflight).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match harness::scenario::load_text(text.to_string(), Path::new("fuzz.toml")) {
        Err(e) => {
            let _ = e.to_string();
        }
        Ok(loaded) => {
            if let Err(e) = harness::preflight::check(&loaded) {
                let _ = e.to_string();
            }
        }
    }
});
