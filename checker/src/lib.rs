//! lockchaos checker: reads a lock history and says, with evidence, whether the lock and the
//! resource behaved. No Docker, no network: usable on histories from any tool.
//!
//! Malformed input is a [`HistoryError`]; an inconsistent history is a [`Verdict`].

pub mod availability;
pub mod bounded_read;
pub mod edn;
pub mod exactly_once;
pub mod fencing;
pub mod history;
pub mod history_rules;
pub mod holder_overlap;
pub mod jepsen_log;
mod json_line;
mod line_error;
pub mod linearizability;
pub mod parse;
pub mod resource_safety;
pub mod stuck;
pub mod verdict;
pub mod wide_integer;

pub use availability::{acquire_outcomes, check_availability, AcquireOutcome, Availability, FreedAfterKill, Percentiles};
pub use exactly_once::{check_exactly_once, AppliedTwice, ExactlyOnce};
pub use fencing::{check_fencing, Fencing, TokenPair, TokenRef};
pub use history::{Event, EventType, Process};
pub use holder_overlap::{check_holder_overlap, HolderOverlap, Overlap, OverlapStats};
pub use parse::{
    parse_edn, parse_history, parse_jsonl, read_history, read_history_file, read_history_file_as, HistoryError, HistoryFormat,
    ParsedHistory,
};
pub use resource_safety::{check_resource_safety, Interleaving, ResourceSafety, WriteRef};
pub use stuck::{check_stuck, FaultRef, FreedBy, HoldEnd, HoldEnding, StretchEnd, Stuck, StuckStretch};
pub use verdict::Verdict;

use serde::{Deserialize, Serialize};

/// Knobs for [`check`]. Build with `CheckOptions::default()` and set fields: new knobs arrive
/// with new properties, so struct literals are not allowed outside this crate.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CheckOptions {
    /// Evidence entries kept per property; the rest are counted.
    pub max_evidence: usize,
    /// Also check linearizability against this model, with this time budget (informational in
    /// the outcome; the harness checks its runs' acquire/release against the mutex model).
    pub linearizability: Option<(linearizability::ModelKind, std::time::Duration)>,
    /// How long the lock may stay free without a grant while clients ask before it counts as
    /// stuck ([`stuck`]).
    pub stuck_bound: std::time::Duration,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions { max_evidence: resource_safety::DEFAULT_MAX_EVIDENCE, linearizability: None, stuck_bound: stuck::DEFAULT_BOUND }
    }
}

/// Every property's result (results.json). Adding a property: a field here, a line in
/// [`CheckResults::verdicts`] (and in [`CheckResults::decides_outcome`] if it decides the
/// outcome), a call in [`check`].
///
/// Which properties decide `outcome` (the scenario's "violation" / "safe"):
/// - resource safety, always: the resource's own log is the ground truth;
/// - fencing, when it applies (`fencing.applies`: some grant carried a token). Redis and
///   Redlock hand out no tokens; their fencing verdict is unknown, and letting that make
///   every such run "unknown" would hide what the resource showed;
/// - exactly once, when it applies (`exactly_once.applies`: the workload names its operations,
///   as the idempotency key and the job claim do);
/// - not holder overlap. It is what clients believed, and a fenced system may well have two
///   believing holders while the resource rejects the stale write (etcd with a paused holder
///   is expected "safe"). It is reported as evidence of why a violation happened;
/// - not linearizability of the lock (mutex model) either, for the same reason: a lease lock
///   that expires under a paused holder is not a linearizable mutex, fenced or not;
/// - not stuck: it is liveness (the lock free and nobody granted it while clients asked), and
///   the outcome is about safety.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct CheckResults {
    /// Combined over [`CheckResults::outcome_verdicts`]: invalid if any is invalid, else
    /// unknown if any is unknown, else valid.
    pub outcome: Verdict,
    pub resource_safety: ResourceSafety,
    /// Defaults keep results.json files written before these properties readable.
    #[serde(default = "Fencing::not_checked")]
    pub fencing: Fencing,
    #[serde(default = "HolderOverlap::not_checked")]
    pub holder_overlap: HolderOverlap,
    #[serde(default = "ExactlyOnce::not_checked")]
    pub exactly_once: ExactlyOnce,
    /// Liveness: stretches in which the lock was free and nobody was granted it while clients
    /// asked, past a bound. Informational.
    #[serde(default = "Stuck::not_checked")]
    pub stuck: Stuck,
    /// Measurements, no verdict: acquire success rate, latency, longest time without a grant.
    #[serde(default)]
    pub availability: Availability,
    /// Present when [`CheckOptions::linearizability`] asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linearizability: Option<LinearizabilityCheck>,
}

/// The linearizability property as results.json holds it: the verdict with its evidence, or
/// (a malformed history, not an inconsistent one) why the history does not fit the model.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(untagged)]
pub enum LinearizabilityCheck {
    Checked(linearizability::Linearizability),
    NotChecked { error: String },
}

impl LinearizabilityCheck {
    pub fn verdict(&self) -> Verdict {
        match self {
            LinearizabilityCheck::Checked(l) => l.verdict,
            LinearizabilityCheck::NotChecked { .. } => Verdict::Unknown,
        }
    }
}

impl CheckResults {
    /// Each property's name (as in results.json) and verdict, in report order.
    pub fn verdicts(&self) -> Vec<(&'static str, Verdict)> {
        vec![
            ("resource_safety", self.resource_safety.verdict),
            ("fencing", self.fencing.verdict),
            ("holder_overlap", self.holder_overlap.verdict),
        ]
        .into_iter()
        .chain(self.exactly_once.applies.then_some(("exactly_once", self.exactly_once.verdict)))
        .chain(self.stuck.applies.then_some(("stuck", self.stuck.verdict)))
        .chain(self.linearizability.as_ref().map(|l| ("linearizability", l.verdict())))
        .collect()
    }

    /// The verdicts `outcome` combines (see [`CheckResults`] for why these).
    pub fn outcome_verdicts(&self) -> Vec<(&'static str, Verdict)> {
        self.verdicts().into_iter().filter(|(name, _)| self.decides_outcome(name)).collect()
    }

    /// Whether the property named `name` counts towards `outcome` in this run; the others
    /// are informational (a report can say so next to their verdict).
    pub fn decides_outcome(&self, name: &str) -> bool {
        match name {
            "resource_safety" => true,
            "fencing" => self.fencing.applies,
            "exactly_once" => self.exactly_once.applies,
            _ => false,
        }
    }
}

/// Checks every property over `events`, taken in history order.
pub fn check(events: &[Event], opts: &CheckOptions) -> CheckResults {
    let mut results = CheckResults {
        outcome: Verdict::Unknown,
        resource_safety: check_resource_safety(events, opts.max_evidence),
        fencing: check_fencing(events, opts.max_evidence),
        holder_overlap: check_holder_overlap(events, opts.max_evidence),
        exactly_once: check_exactly_once(events, opts.max_evidence),
        stuck: check_stuck(events, opts.stuck_bound, opts.max_evidence),
        availability: check_availability(events),
        linearizability: opts.linearizability.map(|(model, timeout)| match linearizability::check(events, model, timeout) {
            Ok(l) => LinearizabilityCheck::Checked(l),
            Err(error) => LinearizabilityCheck::NotChecked { error },
        }),
    };
    results.outcome = Verdict::combine_all(results.outcome_verdicts().into_iter().map(|(_, v)| v));
    results
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_without_the_newer_properties_still_read() {
        let mut old = serde_json::to_value(check(&[], &CheckOptions::default())).unwrap();
        let map = old.as_object_mut().unwrap();
        map.remove("fencing");
        map.remove("holder_overlap");
        let read: CheckResults = serde_json::from_value(old).unwrap();
        assert_eq!(read.fencing, Fencing::not_checked());
        assert!(!read.decides_outcome("fencing"));
        assert_eq!(read.holder_overlap, HolderOverlap::not_checked());
    }

    #[test]
    fn fencing_decides_the_outcome_only_when_tokens_were_granted() {
        let r = check(&[], &CheckOptions::default());
        let names: Vec<&str> = r.outcome_verdicts().iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["resource_safety"]);
        assert_eq!(r.verdicts().len(), 3);
    }

    #[test]
    fn stuck_is_reported_when_clients_asked_and_never_decides_the_outcome() {
        let op = |ms: u64, p: u64, kind: EventType, f: &str| Event::new(ms * 1_000_000, Process::Client(p), kind, f);
        // Client 1's release fails; client 2 asks for 20 s and is never granted the lock.
        let mut events = vec![op(0, 1, EventType::Invoke, "acquire"), op(10, 1, EventType::Ok, "acquire")];
        events.extend([op(100, 1, EventType::Invoke, "release"), op(200, 1, EventType::Info, "release")]);
        events.extend([op(300, 2, EventType::Invoke, "acquire"), op(20_300, 2, EventType::Fail, "acquire")]);
        let mut opts = CheckOptions::default();
        let r = check(&events, &opts);
        assert_eq!(r.stuck.verdict, Verdict::Invalid);
        assert!(r.verdicts().contains(&("stuck", Verdict::Invalid)));
        assert!(!r.decides_outcome("stuck"));
        assert!(r.outcome_verdicts().iter().all(|(name, _)| *name != "stuck"));
        assert_ne!(r.outcome, Verdict::Invalid, "a stuck lock is no violation");

        // The bound comes from the options: 20 s free at the end is too short to tell against 30 s.
        opts.stuck_bound = std::time::Duration::from_secs(30);
        let r = check(&events, &opts);
        assert_eq!((r.stuck.verdict, r.stuck.bound_ms), (Verdict::Unknown, 30_000));

        // Without an acquire the property is not listed.
        assert!(check(&[op(0, 1, EventType::Invoke, "apply")], &opts).verdicts().iter().all(|(name, _)| *name != "stuck"));
    }

    #[test]
    fn results_without_stuck_still_read() {
        let mut old = serde_json::to_value(check(&[], &CheckOptions::default())).unwrap();
        old.as_object_mut().unwrap().remove("stuck");
        let read: CheckResults = serde_json::from_value(old).unwrap();
        assert_eq!(read.stuck, Stuck::not_checked());
        assert!(!read.stuck.applies);
    }
}
