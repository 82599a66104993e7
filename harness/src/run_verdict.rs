//! The verdict a run folder gets, the same whoever gives it: the run itself as it ends
//! (run/finalize.rs), `lockchaos clean` finishing a run whose lockchaos process is gone
//! (orphans.rs), and `lockchaos check` on the folder.

use crate::run_store::{self, EffectiveScenario, RunDir};
use checker::{CheckOptions, Event, Verdict};
use results::{RefusedRequests, RunResults};
use std::path::Path;
use std::time::Duration;

/// How a run's history is checked: the lock properties decide; the lock as a mutex is
/// informational (a lease lock under faults is not one), but it shows, porcupine-style, the
/// first grant that no mutex could have made. A history without an acquire (the workloads
/// without a lock) has no mutex to check. `stuck_bound` is the scenario's
/// ([`crate::scenario::Scenario::stuck_bound`], or [`stuck_bound`] of a run folder).
pub fn check_options(events: &[Event], stuck_bound: Duration) -> CheckOptions {
    let mut opts = CheckOptions::default();
    opts.stuck_bound = stuck_bound;
    if events.iter().any(|e| e.f == "acquire" && e.process.client().is_some()) {
        opts.linearizability = Some((checker::linearizability::ModelKind::Mutex, std::time::Duration::from_secs(30)));
    }
    opts
}

/// The stuck bound a run's scenario gave it, from its run.json's `effective` scenario (the
/// same rule as [`crate::scenario::Scenario::stuck_bound`]; without a TTL, the default).
pub fn stuck_bound(effective: &EffectiveScenario) -> Duration {
    crate::scenario::stuck_bound(effective.stuck_after_ms, effective.lock.as_ref().map_or(0, |l| l.ttl_ms))
}

/// The stuck bound of the run in `folder`: None for a folder without run.json (a bare
/// history), an error when its run.json cannot be read.
pub fn stuck_bound_of(folder: &Path) -> anyhow::Result<Option<Duration>> {
    if !folder.join("run.json").exists() {
        return Ok(None);
    }
    Ok(Some(stuck_bound(&run_store::read_inputs(folder)?.effective)))
}

/// The verdict a history supports. A cut-short run can show a violation, but cannot vouch
/// for safety: what it did not record might have broken the lock.
pub fn vouched(verdict: Verdict, cut_short: bool) -> Verdict {
    match verdict {
        Verdict::Valid if cut_short => Verdict::Unknown,
        v => v,
    }
}

/// The requests the resource of the run in `folder` refused: somebody who is no worker of the
/// run tried to write its record (resource/refusals.rs). A run with any cannot vouch for
/// safety; an unreadable record of them counts as one.
pub fn refused(folder: &Path) -> RefusedRequests {
    crate::resource::refusals::read(&folder.join(crate::resource::refusals::FILE)).unwrap_or_else(|e| RefusedRequests {
        count: 1,
        at_least: true,
        first: vec![format!("the record of refused requests cannot be read: {e:#}")],
    })
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
    fn a_run_folder_gives_its_scenarios_stuck_bound() {
        let folder = tempfile::tempdir().unwrap();
        assert_eq!(stuck_bound_of(folder.path()).unwrap(), None, "a bare history's folder");
        let run = |effective: serde_json::Value| {
            let json = serde_json::json!({"run_id": "r", "scenario": "s", "started_at": "t", "seed": 1, "effective": effective});
            std::fs::write(folder.path().join("run.json"), json.to_string()).unwrap();
            stuck_bound_of(folder.path()).unwrap()
        };
        let base = serde_json::json!({"description": "d", "expect": "safe", "backend": "redis-single", "clients": 2, "time_limit_secs": 5});
        let mut e = base.clone();
        e["lock"] = serde_json::json!({"ttl_ms": 8000});
        assert_eq!(run(e.clone()), Some(Duration::from_secs(24)), "three TTLs");
        e["stuck_after_ms"] = 3000.into();
        assert_eq!(run(e), Some(Duration::from_secs(3)), "the scenario's own");
        assert_eq!(run(base), Some(checker::stuck::DEFAULT_BOUND), "an older run.json without either");
        std::fs::write(folder.path().join("run.json"), "{").unwrap();
        assert!(stuck_bound_of(folder.path()).is_err());
        assert_eq!(check_options(&[], Duration::from_secs(7)).stuck_bound, Duration::from_secs(7));
    }

    #[test]
    fn only_a_whole_run_vouches_for_safety() {
        assert_eq!(vouched(Verdict::Valid, false), Verdict::Valid);
        assert_eq!(vouched(Verdict::Valid, true), Verdict::Unknown);
        assert_eq!(vouched(Verdict::Invalid, true), Verdict::Invalid);
        assert_eq!(vouched(Verdict::Unknown, false), Verdict::Unknown);
    }
}
