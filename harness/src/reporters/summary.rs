//! Each run's verdict as one line on stdout (an unknown one with why: `outcome unknown (fault not
//! applied)`), the dead workers under it, and a tally when a series has several runs:
//! `tally: 9/10 runs matched (violation expected: violation 9, safe 1, unknown 0); a violation in
//! 9 of 10 runs: 90% (55%–100%); …`: the rate over the runs with a verdict, with its 95% interval.
//! Run errors go to stderr.

use crate::events::{Event, Reporter};
use results::{Outcome, RunResults, WorkerFate};
use std::path::Path;

#[derive(Default)]
pub struct Summary {
    /// The finished runs of the series in progress.
    series: Vec<RunResults>,
    planned: u32,
}

impl Reporter for Summary {
    fn report(&mut self, event: &Event) {
        match event {
            Event::SeriesStarted { runs, .. } => {
                self.series.clear();
                self.planned = *runs;
            }
            Event::RunFinished { iteration, runs, results, dir, .. } => {
                print_line!("{}", run_line(&prefix(*iteration, *runs), results, &dir.join("report.html")));
                for n in &results.not_applied {
                    print_line!("  not applied: {n}");
                }
                if !results.refused_requests.is_empty() {
                    let r = &results.refused_requests;
                    print_line!("  the resource refused {} that no worker sent; first: {}", r.counted(), r.first.join("; "));
                }
                for w in results.workers.iter().filter(|w| w.status != WorkerFate::Finished) {
                    print_line!("  worker {} {} (exit code {:?})", w.name, w.status, w.exit_code);
                }
                self.series.push((**results).clone());
            }
            Event::RunFailed { iteration, runs, error, .. } => eprint_line!("{}error: {error}", prefix(*iteration, *runs)),
            Event::SeriesFinished { .. } if self.planned > 1 => print_line!("{}", tally(&self.series, self.planned)),
            _ => {}
        }
    }
}

fn prefix(iteration: u32, runs: u32) -> String {
    if runs > 1 {
        format!("run {iteration}/{runs}: ")
    } else {
        String::new()
    }
}

pub fn run_line(prefix: &str, r: &RunResults, report: &Path) -> String {
    let rs = &r.properties.resource_safety;
    let once = &r.properties.exactly_once;
    // The workloads that name their operations say what happened to them.
    let operations = if once.applies {
        format!(
            ", operations {} applied twice {} (deliveries {}, answered from the record {}, claims refused {})",
            once.operations, once.applied_twice, once.deliveries, once.answered_from_record, once.claims_refused
        )
    } else {
        String::new()
    };
    format!(
        "{prefix}{}: outcome {}, expected {} — lost updates {}, interleaved sections {}, accepted writes {}, stale writes rejected {}{operations} — {}",
        r.scenario,
        r.outcome_in_words(),
        r.expect,
        rs.lost_updates,
        rs.interleaved_sections,
        rs.accepted_writes,
        rs.rejected_writes,
        report.display()
    )
}

pub fn tally(runs: &[RunResults], planned: u32) -> String {
    let Some(first) = runs.first() else {
        return format!("tally: no run finished of {planned}");
    };
    let count = |o: Outcome| runs.iter().filter(|r| r.outcome == o).count();
    let matched = runs.iter().filter(|r| r.matches_expectation).count();
    // Operations acknowledged to a client count as updates too (the workloads that name them
    // record `apply`, not `write`).
    let lost: u64 = runs.iter().map(|r| r.properties.resource_safety.lost_updates + r.properties.exactly_once.acknowledged_missing).sum();
    let acked: u64 =
        runs.iter().map(|r| r.properties.resource_safety.acknowledged_increments + r.properties.exactly_once.acknowledged).sum();
    let share = if acked > 0 { 100.0 * lost as f64 / acked as f64 } else { 0.0 };
    let once: Vec<_> = runs.iter().map(|r| &r.properties.exactly_once).filter(|o| o.applies).collect();
    let operations = if once.is_empty() {
        String::new()
    } else {
        let twice: u64 = once.iter().map(|o| o.applied_twice).sum();
        let total: u64 = once.iter().map(|o| o.operations).sum();
        format!("; {twice} of {total} operations applied twice")
    };
    // The rate over the runs with a verdict, with its interval; unknowns by cause beside it.
    let rate = reports::rate::Rate::of(count(Outcome::Violation) as u32, (count(Outcome::Violation) + count(Outcome::Safe)) as u32);
    let unknown = results::UnknownCause::tally_words(&results::UnknownCause::tally(runs.iter().filter_map(RunResults::unknown_cause)))
        .map(|u| format!(" ({u})"))
        .unwrap_or_default();
    format!(
        "tally: {matched}/{} runs matched ({} expected: violation {}, safe {}, unknown {}{unknown}); {}; {lost} of {acked} acknowledged updates lost ({share:.1}%){operations}",
        runs.len(),
        first.expect,
        count(Outcome::Violation),
        count(Outcome::Safe),
        count(Outcome::Unknown),
        rate.words(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::UnknownCause;

    #[test]
    fn a_runs_line_says_why_its_outcome_is_unknown() {
        let mut r = crate::run_store::tests::results_named("demo", "r");
        let report = Path::new("store/demo/r/report.html");
        assert!(run_line("", &r, report).starts_with("demo: outcome safe, expected safe — "), "{}", run_line("", &r, report));
        r.outcome = Outcome::Unknown;
        r.unknown_cause = Some(UnknownCause::ClientBroken);
        let line = run_line("run 2/3: ", &r, report);
        assert!(line.starts_with("run 2/3: demo: outcome unknown (client program broken), expected safe — "), "{line}");
    }
}
