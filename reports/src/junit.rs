//! JUnit XML for CI systems: one test case per scenario run. A run whose outcome differs from
//! its scenario's expectation is a failure; one that ended unknown is an error.
//!
//! Written with quick-junit (cargo-nextest's JUnit model and serializer): it escapes names and
//! messages for XML, drops characters XML cannot carry, and counts tests, failures and errors.

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use results::{Outcome, RunResults};
use std::time::Duration;

/// One `<testsuite>` holding every run, grouped by scenario through `classname`.
pub fn junit_xml(suite: &str, runs: &[RunResults]) -> String {
    let mut testsuite = TestSuite::new(suite);
    for r in runs {
        testsuite.add_test_case(test_case(r));
    }
    testsuite.set_time(seconds(runs.iter().map(|r| r.duration_secs).sum()));
    let mut report = Report::unnamed();
    report.add_test_suite(testsuite);
    // Serializing into memory has no I/O to fail, and every name and message is a Rust string
    // (valid UTF-8) that quick-junit escapes: there is no error to hand on.
    report.to_string().expect("a JUnit report serializes into memory")
}

fn test_case(r: &RunResults) -> TestCase {
    let rs = &r.properties.resource_safety;
    let detail = format!(
        "expected {}, outcome {}: lost updates {}, interleaved sections {}, stale writes rejected {}",
        r.expect, r.outcome, rs.lost_updates, rs.interleaved_sections, rs.rejected_writes
    );
    let status = if r.outcome == Outcome::Unknown {
        non_success(NonSuccessKind::Error, detail)
    } else if !r.matches_expectation {
        non_success(NonSuccessKind::Failure, detail)
    } else {
        TestCaseStatus::success()
    };
    let mut case = TestCase::new(format!("{} (seed {})", r.run_id, r.seed), status);
    case.set_classname(r.scenario.as_str()).set_time(seconds(r.duration_secs));
    case
}

fn non_success(kind: NonSuccessKind, message: String) -> TestCaseStatus {
    let mut status = TestCaseStatus::non_success(kind);
    status.set_message(message);
    status
}

/// A run's duration; a negative or non-finite one (a clock gone wrong) counts as zero.
fn seconds(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or_default()
}
