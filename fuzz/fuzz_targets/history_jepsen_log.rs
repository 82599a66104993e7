//! Jepsen logs (jepsen.util lines among any others): reading any bytes gives events or an error, never a panic or a hang;
//! the events read are then checked (lock properties, and linearizability as a mutex).
#![no_main]

use checker::HistoryFormat;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| lockchaos_fuzz_common::history(data, HistoryFormat::JepsenLog));

#[path = "common.rs"]
mod lockchaos_fuzz_common;
