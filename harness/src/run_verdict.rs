//! The verdict a run folder gets, the same whoever gives it: the run itself as it ends
//! (run/finalize.rs), `lockchaos clean` finishing a run whose lockchaos process is gone
//! (orphans.rs), and `lockchaos check` on the folder.

use crate::run_store::RunDir;
use checker::{CheckOptions, Event, Verdict};
use results::RunResults;

/// How a run's history is checked: the lock properties decide; the lock as a mutex is
/// informational (a lease lock under faults is not one), but it shows, porcupine-style, the
/// first grant that no mutex could have made. A history without an acquire (the workloads
/// without a lock) has no mutex to check.
pub fn check_options(events: &[Event]) -> CheckOptions {
    let mut opts = CheckOptions::default();
    if events.iter().any(|e| e.f == "acquire" && e.process.client().is_some()) {
        opts.linearizability = Some((checker::linearizability::ModelKind::Mutex, std::time::Duration::from_secs(30)));
    }
    opts
}

/// The verdict a history supports. A cut-short run can show a violation, but cannot vouch
/// for safety: what it did not record might have broken the lock.
pub fn vouched(verdict: Verdict, cut_short: bool) -> Verdict {
    match verdict {
        Verdict::Valid if cut_short => Verdict::Unknown,
        v => v,
    }
}

/// Writes results.json and report.html into the run folder.
pub fn write(dir: &RunDir, results: &RunResults, events: &[Event]) -> anyhow::Result<()> {
    std::fs::write(dir.file("results.json"), serde_json::to_vec_pretty(results)?)?;
    std::fs::write(dir.file("report.html"), reports::run_report::render(results, events))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_whole_run_vouches_for_safety() {
        assert_eq!(vouched(Verdict::Valid, false), Verdict::Valid);
        assert_eq!(vouched(Verdict::Valid, true), Verdict::Unknown);
        assert_eq!(vouched(Verdict::Invalid, true), Verdict::Invalid);
        assert_eq!(vouched(Verdict::Unknown, false), Verdict::Unknown);
    }
}
