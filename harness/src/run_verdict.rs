//! The verdict a run folder gets, the same whoever gives it: the run itself as it ends
//! (run/finalize.rs), `lockchaos clean` finishing a run whose lockchaos process is gone
//! (orphans.rs), `lockchaos check` on the folder, and `check --recheck` over a store
//! (recheck.rs).

use crate::run_store::{self, EffectiveScenario, RunDir};
use checker::{CheckOptions, CheckResults, Event, Verdict};
use results::{ClaimCheck, Expectation, Outcome, RefusedRequests, RunResults, UnknownCause};
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

/// What stopped a run before its planned end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutShort {
    /// Ctrl-C or SIGTERM, or its lockchaos process gone (finished by `clean`).
    Interrupted,
    /// The workload failed because a client broke: its program unusable, or it died with no
    /// fault on it.
    ClientFailed,
    /// The workload failed for anything else: Docker, a container that did not start, a
    /// backend that would not come up.
    Infrastructure,
}

/// What a run's end knows besides its history that keeps the history from vouching for it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunEnding {
    pub cut_short: Option<CutShort>,
    /// The resource refused requests that no worker sent (a client writing as somebody else).
    pub refused_requests: bool,
    /// A planned fault did not take effect.
    pub faults_not_applied: bool,
}

/// A run's verdict as results.json states it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunVerdict {
    pub outcome: Outcome,
    pub matches_expectation: bool,
    /// Why the outcome is unknown; None when it is not.
    pub unknown_cause: Option<UnknownCause>,
}

impl RunEnding {
    /// The run's verdict from its history's (`check`), the scenario's `expect` and its claims
    /// as measured. The one rule a run's end, `clean` and `check --recheck` apply.
    pub fn verdict(&self, check: &CheckResults, expect: Expectation, claims: &[ClaimCheck]) -> RunVerdict {
        let outcome = self.outcome(check.outcome);
        RunVerdict { outcome, matches_expectation: self.matches(expect, outcome, claims), unknown_cause: self.unknown_cause(outcome) }
    }

    /// A cut-short run, or one whose resource refused requests, can show a violation but cannot
    /// vouch for safety (the record holds only the workers' requests, so a violation in it
    /// stands). A run whose faults did not all take effect did not test what its scenario
    /// claims, whatever its record shows.
    pub fn outcome(&self, checked: Verdict) -> Outcome {
        if self.faults_not_applied {
            return Outcome::Unknown;
        }
        Outcome::of_verdict(vouched(checked, self.cut_short.is_some() || self.refused_requests))
    }

    /// `stuck` is met by an unknown outcome, so it asks for itself what unknown stands for
    /// otherwise: a whole run whose faults all took effect.
    pub fn matches(&self, expect: Expectation, outcome: Outcome, claims: &[ClaimCheck]) -> bool {
        RunResults::matches(expect, outcome, claims)
            && (expect != Expectation::Stuck || (self.cut_short.is_none() && !self.faults_not_applied))
    }

    /// The ending a run's results.json records, for judging its history again (`check
    /// --recheck`). Who cut a run short is recorded only as the cause of an unknown outcome:
    /// a cut-short run whose results name none (it showed a violation, or its results.json is
    /// older than the cause) counts as interrupted, as [`UnknownCause::inferred`] has it.
    pub fn as_recorded(results: &RunResults, refused_requests: bool) -> RunEnding {
        let by = match results.unknown_cause {
            Some(UnknownCause::Infrastructure) => CutShort::Infrastructure,
            // Before requests refused in precedence: a cut-short run's client broke.
            Some(UnknownCause::ClientBroken) => CutShort::ClientFailed,
            _ => CutShort::Interrupted,
        };
        let cut_short = results.interrupted.then_some(by);
        RunEnding { cut_short, refused_requests, faults_not_applied: !results.not_applied.is_empty() }
    }

    /// Why an unknown outcome is unknown, the first that holds: cut short (by a signal, a client,
    /// or the machine), requests refused (a client forging), a fault not applied, else the
    /// checker. None for an outcome that is a verdict.
    pub fn unknown_cause(&self, outcome: Outcome) -> Option<UnknownCause> {
        if outcome != Outcome::Unknown {
            return None;
        }
        Some(match self.cut_short {
            Some(CutShort::Interrupted) => UnknownCause::Interrupted,
            Some(CutShort::ClientFailed) => UnknownCause::ClientBroken,
            Some(CutShort::Infrastructure) => UnknownCause::Infrastructure,
            None if self.refused_requests => UnknownCause::ClientBroken,
            None if self.faults_not_applied => UnknownCause::FaultNotApplied,
            None => UnknownCause::Undecided,
        })
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

    const WHOLE: RunEnding = RunEnding { cut_short: None, refused_requests: false, faults_not_applied: false };

    fn cut(by: CutShort) -> RunEnding {
        RunEnding { cut_short: Some(by), ..WHOLE }
    }

    #[test]
    fn each_unknown_cause_comes_from_its_own_ending() {
        let cases = [
            (cut(CutShort::Interrupted), UnknownCause::Interrupted),
            (cut(CutShort::Infrastructure), UnknownCause::Infrastructure),
            (cut(CutShort::ClientFailed), UnknownCause::ClientBroken),
            (RunEnding { refused_requests: true, ..WHOLE }, UnknownCause::ClientBroken),
            (RunEnding { faults_not_applied: true, ..WHOLE }, UnknownCause::FaultNotApplied),
            (WHOLE, UnknownCause::Undecided),
        ];
        for (ending, cause) in cases {
            assert_eq!(ending.unknown_cause(Outcome::Unknown), Some(cause), "{ending:?}");
            for verdict in [Outcome::Safe, Outcome::Violation] {
                assert_eq!(ending.unknown_cause(verdict), None, "{ending:?} reached {verdict}");
            }
        }
    }

    #[test]
    fn the_first_cause_in_precedence_is_named() {
        let everything = |by| RunEnding { cut_short: Some(by), refused_requests: true, faults_not_applied: true };
        assert_eq!(everything(CutShort::Interrupted).unknown_cause(Outcome::Unknown), Some(UnknownCause::Interrupted));
        assert_eq!(everything(CutShort::Infrastructure).unknown_cause(Outcome::Unknown), Some(UnknownCause::Infrastructure));
        assert_eq!(everything(CutShort::ClientFailed).unknown_cause(Outcome::Unknown), Some(UnknownCause::ClientBroken));
        let forged_and_missed = RunEnding { refused_requests: true, faults_not_applied: true, ..WHOLE };
        assert_eq!(forged_and_missed.unknown_cause(Outcome::Unknown), Some(UnknownCause::ClientBroken));
    }

    #[test]
    fn only_a_whole_run_with_every_fault_applied_and_no_forged_request_checks_safe() {
        assert_eq!(WHOLE.outcome(Verdict::Valid), Outcome::Safe);
        assert_eq!(WHOLE.outcome(Verdict::Invalid), Outcome::Violation);
        assert_eq!(WHOLE.outcome(Verdict::Unknown), Outcome::Unknown);
        for short in [CutShort::Interrupted, CutShort::ClientFailed, CutShort::Infrastructure] {
            assert_eq!(cut(short).outcome(Verdict::Valid), Outcome::Unknown, "{short:?}");
            assert_eq!(cut(short).outcome(Verdict::Invalid), Outcome::Violation, "a violation stands: {short:?}");
        }
        let forged = RunEnding { refused_requests: true, ..WHOLE };
        assert_eq!((forged.outcome(Verdict::Valid), forged.outcome(Verdict::Invalid)), (Outcome::Unknown, Outcome::Violation));
        let missed = RunEnding { faults_not_applied: true, ..WHOLE };
        assert_eq!((missed.outcome(Verdict::Valid), missed.outcome(Verdict::Invalid)), (Outcome::Unknown, Outcome::Unknown));
    }

    #[test]
    fn stuck_is_met_by_unknown_only_from_a_whole_run_with_every_fault_applied() {
        assert!(WHOLE.matches(Expectation::Stuck, Outcome::Unknown, &[]));
        assert!(!cut(CutShort::Interrupted).matches(Expectation::Stuck, Outcome::Unknown, &[]));
        assert!(!RunEnding { faults_not_applied: true, ..WHOLE }.matches(Expectation::Stuck, Outcome::Unknown, &[]));
        assert!(cut(CutShort::Interrupted).matches(Expectation::Violation, Outcome::Violation, &[]));
        assert!(!WHOLE.matches(Expectation::Safe, Outcome::Unknown, &[]));
    }

    #[test]
    fn an_ending_read_back_from_its_results_gives_the_same_cause() {
        let nothing = checker::check(&[], &CheckOptions::default());
        let mut results = crate::run_store::tests::results_named("demo", "r");
        let endings = [
            WHOLE,
            cut(CutShort::Interrupted),
            cut(CutShort::Infrastructure),
            cut(CutShort::ClientFailed),
            RunEnding { refused_requests: true, ..WHOLE },
            RunEnding { faults_not_applied: true, ..WHOLE },
            RunEnding { cut_short: Some(CutShort::Infrastructure), refused_requests: true, faults_not_applied: true },
        ];
        for ending in endings {
            let verdict = ending.verdict(&nothing, Expectation::Safe, &[]);
            results.interrupted = ending.cut_short.is_some();
            results.not_applied = if ending.faults_not_applied { vec!["pause on client-1".into()] } else { vec![] };
            results.unknown_cause = verdict.unknown_cause;
            assert_eq!(RunEnding::as_recorded(&results, ending.refused_requests), ending, "{verdict:?}");
        }
        // A cut-short run that showed a violation names no cause: interrupted, as inferred.
        results.interrupted = true;
        results.unknown_cause = None;
        assert_eq!(RunEnding::as_recorded(&results, false).cut_short, Some(CutShort::Interrupted));
    }

    #[test]
    fn a_verdict_is_the_outcome_its_match_and_its_cause_together() {
        // Nothing recorded: the checker cannot decide.
        let nothing = checker::check(&[], &CheckOptions::default());
        let verdict = WHOLE.verdict(&nothing, Expectation::Safe, &[]);
        assert_eq!(
            verdict,
            RunVerdict { outcome: Outcome::Unknown, matches_expectation: false, unknown_cause: Some(UnknownCause::Undecided) }
        );
        let verdict = cut(CutShort::ClientFailed).verdict(&nothing, Expectation::Safe, &[]);
        assert_eq!(verdict.unknown_cause, Some(UnknownCause::ClientBroken));
    }
}
