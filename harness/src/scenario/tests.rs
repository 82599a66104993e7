//! Scenario parser errors: each bad file must yield one line naming file, line and field.

use super::*;
use crate::target::Target;
use std::path::Path;

const GOOD: &str = r#"
description = "d"
expect = "violation"
backend = "redis-single"
clients = 2

[workload]
work_ms = 100

[[nemesis.timeline]]
at_ms = 1000
fault = "pause"
target = "client-2"
duration_ms = 500
"#;

#[test]
fn good_file_parses_with_defaults() {
    let s = parse(GOOD, Path::new("x.toml")).unwrap();
    assert_eq!(s.expect, Expectation::Violation);
    assert_eq!(s.workload.work_ms, crate::worker::WorkMs::fixed(100));
    assert_eq!(s.workload.key, "ledger");
    assert_eq!(s.lock.ttl_ms, 2000);
    assert_eq!(s.nemesis.timeline[0].target, Target::Client(2));
}
