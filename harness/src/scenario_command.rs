//! `lockchaos scenario NAME [--test-count N]`: one or more runs of a scenario, each printed as
//! one line, with a tally when there are several.

use crate::progress::Reporter;
use crate::run::{self, RunOptions};
use crate::scenario::LoadedScenario;
use results::{Outcome, RunResults, WorkerFate};
use std::sync::Arc;

/// The runs of a series and how it ended.
pub struct Series {
    pub runs: Vec<run::RunOutcome>,
    /// An error stopped the series (it is printed).
    pub error: Option<String>,
}

impl Series {
    /// 0 when every run matched its expectation, 1 when some did not, 2 when any run ended
    /// unknown or the series ended in error.
    pub fn exit_code(&self) -> u8 {
        let unknown = self.error.is_some() || self.runs.iter().any(|r| r.results.outcome == Outcome::Unknown);
        match (unknown, self.runs.iter().all(|r| r.results.matches_expectation)) {
            (true, _) => 2,
            (false, true) => 0,
            (false, false) => 1,
        }
    }
}

/// Runs the scenario `count` times (sequentially: runs share the machine's two cores). An
/// error or Ctrl-C stops the series; a single run's error is returned as the error.
pub async fn run_series(loaded: LoadedScenario, opts: RunOptions, reporter: Arc<dyn Reporter>, count: u32) -> anyhow::Result<Series> {
    let mut series = Series { runs: vec![], error: None };
    for i in 1..=count {
        let outcome = match run::run(loaded.clone(), opts.clone(), reporter.clone()).await {
            Ok(o) => o,
            Err(e) if count > 1 => {
                let e = format!("{e:#}").replace('\n', " ");
                println!("run {i}/{count}: error: {e}");
                series.error = Some(e);
                break;
            }
            Err(e) => return Err(e),
        };
        let prefix = if count > 1 { format!("run {i}/{count}: ") } else { String::new() };
        print_run(&prefix, &outcome.results, &outcome.dir.join("report.html"));
        series.runs.push(outcome);
    }
    if count > 1 {
        let results: Vec<RunResults> = series.runs.iter().map(|r| r.results.clone()).collect();
        print_tally(&results, count);
    }
    Ok(series)
}

/// `--junit FILE`: one test case per run.
pub fn write_junit(file: &std::path::Path, results: &[RunResults]) -> anyhow::Result<()> {
    std::fs::write(file, reports::junit::junit_xml("lockchaos", results))
        .map_err(|e| anyhow::anyhow!("cannot write JUnit XML to {}: {e}", file.display()))
}

fn print_run(prefix: &str, r: &RunResults, report: &std::path::Path) {
    let rs = &r.properties.resource_safety;
    println!(
        "{prefix}{}: outcome {} (expected {}) — lost updates {}, interleaved sections {}, accepted writes {}, stale writes rejected {} — {}",
        r.scenario,
        r.outcome,
        r.expect,
        rs.lost_updates,
        rs.interleaved_sections,
        rs.accepted_writes,
        rs.rejected_writes,
        report.display()
    );
    for w in r.workers.iter().filter(|w| w.status != WorkerFate::Finished) {
        println!("  worker {} {} (exit code {:?})", w.name, w.status, w.exit_code);
    }
}

/// `tally: 9/10 runs matched (violation expected: violation 9, safe 1, unknown 0); lost 7.1% of acknowledged updates`
fn print_tally(runs: &[RunResults], planned: u32) {
    let Some(first) = runs.first() else {
        println!("tally: no run finished of {planned}");
        return;
    };
    let count = |o: Outcome| runs.iter().filter(|r| r.outcome == o).count();
    let matched = runs.iter().filter(|r| r.matches_expectation).count();
    let lost: u64 = runs.iter().map(|r| r.properties.resource_safety.lost_updates).sum();
    let acked: u64 = runs.iter().map(|r| r.properties.resource_safety.acknowledged_increments).sum();
    let share = if acked > 0 { 100.0 * lost as f64 / acked as f64 } else { 0.0 };
    println!(
        "tally: {matched}/{} runs matched ({} expected: violation {}, safe {}, unknown {}); {lost} of {acked} acknowledged updates lost ({share:.1}%)",
        runs.len(),
        first.expect,
        count(Outcome::Violation),
        count(Outcome::Safe),
        count(Outcome::Unknown),
    );
}
