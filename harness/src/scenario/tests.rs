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

#[test]
fn the_stuck_bound_is_the_scenarios_or_three_ttls_and_at_least_10_s() {
    let mut s = parse(GOOD, Path::new("x.toml")).unwrap();
    assert_eq!(s.stuck_bound(), std::time::Duration::from_secs(10), "3 x 2000 ms is below 10 s");
    s.lock.ttl_ms = 5000;
    assert_eq!(s.stuck_bound(), std::time::Duration::from_secs(15));
    let s = parse(&format!("stuck_after_ms = 2500\n{GOOD}"), Path::new("x.toml")).unwrap();
    assert_eq!(s.stuck_bound(), std::time::Duration::from_millis(2500));
}
