//! Why a run ended `unknown`: one of a few stated kinds, so a tally counts verdicts only and a
//! night of broken runners is not read as a night of regressions.

use crate::{Outcome, RunResults};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Why a run could not vouch either way. The kinds are ordered by precedence: when several
/// hold, the first in this order is the one named (an interruption explains the rest).
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, strum::Display, strum::IntoStaticStr, strum::EnumIter,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum UnknownCause {
    /// Ctrl-C or SIGTERM, or the lockchaos process gone (the run finished by `clean`).
    Interrupted,
    /// The machine under the run: a container that did not start, a Docker error, a backend
    /// that would not come up, a node too loaded to keep a timed trigger.
    Infrastructure,
    /// The client program under test broke: it was unusable (outside the protocol, refused its
    /// start), died with no fault on it, or sent requests as somebody else.
    ClientBroken,
    /// A planned fault did not take effect (its injection failed, its trigger never held).
    FaultNotApplied,
    /// The whole run was seen and every fault took effect, but the checker could not decide
    /// (its search ran out of time, or nothing was written to judge).
    Undecided,
}

impl UnknownCause {
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// The kind in words a reader takes in at a glance.
    pub fn words(self) -> &'static str {
        match self {
            UnknownCause::Interrupted => "interrupted",
            UnknownCause::Infrastructure => "infrastructure",
            UnknownCause::ClientBroken => "client program broken",
            UnknownCause::FaultNotApplied => "fault not applied",
            UnknownCause::Undecided => "checker undecided",
        }
    }

    /// Unknown runs counted by cause.
    pub fn tally(causes: impl IntoIterator<Item = UnknownCause>) -> BTreeMap<UnknownCause, u32> {
        causes.into_iter().fold(BTreeMap::new(), |mut by, cause| {
            *by.entry(cause).or_default() += 1;
            by
        })
    }

    /// Such a count in words ("2 unknown: 1 infrastructure, 1 fault not applied"); None when
    /// there is no unknown run.
    pub fn tally_words(by: &BTreeMap<UnknownCause, u32>) -> Option<String> {
        let total: u32 = by.values().sum();
        let kinds: Vec<String> = by.iter().map(|(cause, n)| format!("{n} {}", cause.words())).collect();
        (total > 0).then(|| format!("{total} unknown: {}", kinds.join(", ")))
    }

    /// The cause of an unknown run as its results say it, for results.json files written before
    /// the cause was recorded: an interruption or error (told apart only by the recorded cause,
    /// so counted as an interruption), requests refused (a client writing as somebody else),
    /// faults not applied, else the checker.
    pub fn inferred(results: &RunResults) -> UnknownCause {
        if results.interrupted {
            UnknownCause::Interrupted
        } else if !results.refused_requests.is_empty() {
            UnknownCause::ClientBroken
        } else if !results.not_applied.is_empty() {
            UnknownCause::FaultNotApplied
        } else {
            UnknownCause::Undecided
        }
    }
}

impl RunResults {
    /// Why this run ended unknown; None when it reached a verdict.
    pub fn unknown_cause(&self) -> Option<UnknownCause> {
        (self.outcome == Outcome::Unknown).then(|| self.unknown_cause.unwrap_or_else(|| UnknownCause::inferred(self)))
    }

    /// The outcome in one short phrase, with why when it is unknown: `safe`, `violation`,
    /// `unknown (client program broken)`.
    pub fn outcome_in_words(&self) -> String {
        self.outcome.with_cause(self.unknown_cause())
    }
}

impl Outcome {
    /// The outcome in one short phrase, with why when it is unknown (`cause`: None for a
    /// verdict).
    pub fn with_cause(self, cause: Option<UnknownCause>) -> String {
        match cause {
            Some(cause) => format!("{self} ({})", cause.words()),
            None => self.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(outcome: Outcome, unknown_cause: Option<UnknownCause>) -> RunResults {
        RunResults {
            scenario: "s".into(),
            description: "d".into(),
            expect: crate::Expectation::Safe,
            outcome,
            matches_expectation: false,
            run_id: "r".into(),
            backend: "redis-single".into(),
            seed: 1,
            clients: 2,
            time_limit_secs: 1,
            started_at: "t".into(),
            duration_secs: 1.0,
            interrupted: false,
            workers: vec![],
            warnings: vec![],
            not_applied: vec![],
            refused_requests: Default::default(),
            unknown_cause,
            properties: checker::check(&[], &checker::CheckOptions::default()),
            claims: vec![],
        }
    }

    #[test]
    fn an_unknown_outcome_says_why_in_words_and_a_verdict_says_nothing_more() {
        assert_eq!(results(Outcome::Unknown, Some(UnknownCause::ClientBroken)).outcome_in_words(), "unknown (client program broken)");
        assert_eq!(results(Outcome::Safe, None).outcome_in_words(), "safe");
        assert_eq!(results(Outcome::Violation, None).outcome_in_words(), "violation");
        // An older results.json: the cause inferred from what it records.
        let mut older = results(Outcome::Unknown, None);
        older.not_applied = vec!["pause on client-1 did not take effect".into()];
        assert_eq!(older.outcome_in_words(), "unknown (fault not applied)");
    }

    #[test]
    fn unknowns_are_counted_and_said_by_cause() {
        use UnknownCause::*;
        let by = UnknownCause::tally([Infrastructure, FaultNotApplied, Infrastructure]);
        assert_eq!(UnknownCause::tally_words(&by).as_deref(), Some("3 unknown: 2 infrastructure, 1 fault not applied"));
        assert_eq!(UnknownCause::tally_words(&UnknownCause::tally([])), None);
        assert_eq!(serde_json::to_string(&ClientBroken).unwrap(), "\"client_broken\"");
    }
}
