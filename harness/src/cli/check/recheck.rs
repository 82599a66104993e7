//! `lockchaos check --recheck STORE...`: what `harness::recheck` found, as one line per run whose
//! verdict changed and a closing count (or as JSON), and its exit status.

use harness::recheck::{ChangedRun, RecheckReport};
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(stores: &[PathBuf], json: bool) -> anyhow::Result<ExitCode> {
    let report = harness::recheck::recheck(stores)?;
    if json {
        harness::print_line!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for left_out in &report.unreadable {
            harness::print_line!("left out {}: {}", left_out.folder.display(), left_out.why);
        }
        for changed in &report.changed {
            harness::print_line!("{}", changed_line(changed));
        }
        harness::print_line!("{}", closing_line(&report));
    }
    if report.rechecked == 0 {
        let names: Vec<String> = stores.iter().map(|s| s.display().to_string()).collect();
        anyhow::bail!("nothing rechecked: no run folder with a readable results.json in {}", names.join(", "));
    }
    Ok(ExitCode::from(if report.changed.is_empty() { 0 } else { 1 }))
}

/// `store/s/r: s: safe → violation; resource_safety valid → invalid; matches expectation yes → no`.
fn changed_line(run: &ChangedRun) -> String {
    let (old, new) = (run.outcome.old.with_cause(run.unknown_cause.old), run.outcome.new.with_cause(run.unknown_cause.new));
    let mut parts = vec![if run.outcome.changed() { format!("{old} → {new}") } else { format!("{new}, unchanged") }];
    for p in &run.properties {
        let verdict = |v: Option<checker::Verdict>| v.map_or_else(|| "not judged".to_string(), |v| v.to_string());
        parts.push(format!("{} {} → {}", p.property, verdict(p.old), verdict(p.new)));
    }
    if run.matches_expectation.changed() {
        let yes_no = |matched: bool| if matched { "yes" } else { "no" };
        parts.push(format!("matches expectation {} → {}", yes_no(run.matches_expectation.old), yes_no(run.matches_expectation.new)));
    }
    format!("{}: {}: {}", run.folder.display(), run.scenario, parts.join("; "))
}

fn closing_line(report: &RecheckReport) -> String {
    let unreadable = report.unreadable.len();
    let named = if unreadable > 0 { " (named above)" } else { "" };
    format!(
        "rechecked {} runs: {} verdicts changed, {} unchanged, {unreadable} could not be read{named}",
        report.rechecked,
        report.changed.len(),
        report.unchanged
    )
}
