//! JUnit XML for CI systems: one test case per scenario run. A run whose outcome differs from
//! its scenario's expectation is a failure; one that ended unknown is an error.

use html_escape::encode_double_quoted_attribute as attr;
use results::{Outcome, RunResults};

/// One `<testsuite>` holding every run, grouped by scenario through `classname`.
pub fn junit_xml(suite: &str, runs: &[RunResults]) -> String {
    let failures = runs.iter().filter(|r| !r.matches_expectation && r.outcome != Outcome::Unknown).count();
    let errors = runs.iter().filter(|r| r.outcome == Outcome::Unknown).count();
    let time: f64 = runs.iter().map(|r| r.duration_secs).sum();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x.push_str(&format!(
        "<testsuites><testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{time:.3}\">\n",
        attr(suite),
        runs.len()
    ));
    for r in runs {
        x.push_str(&format!(
            "  <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\">",
            attr(&r.scenario),
            attr(&format!("{} (seed {})", r.run_id, r.seed)),
            r.duration_secs
        ));
        let rs = &r.properties.resource_safety;
        let detail = format!(
            "expected {}, outcome {}: lost updates {}, interleaved sections {}, stale writes rejected {}",
            r.expect, r.outcome, rs.lost_updates, rs.interleaved_sections, rs.rejected_writes
        );
        if r.outcome == Outcome::Unknown {
            x.push_str(&format!("<error message=\"{}\"/>", attr(&detail)));
        } else if !r.matches_expectation {
            x.push_str(&format!("<failure message=\"{}\"/>", attr(&detail)));
        }
        x.push_str("</testcase>\n");
    }
    x.push_str("</testsuite></testsuites>\n");
    x
}
