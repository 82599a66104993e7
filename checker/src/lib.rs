//! lockchaos checker: reads a lock history and says, with evidence, whether the lock and the
//! resource behaved. No Docker, no network: usable on histories from any tool.
//!
//! Malformed input is a [`HistoryError`]; an inconsistent history is a [`Verdict`].

pub mod history;
pub mod parse;
pub mod resource_safety;
pub mod verdict;

pub use history::{Event, EventType, Process};
pub use parse::{parse_jsonl, read_history_file, HistoryError, ParsedHistory};
pub use resource_safety::{check_resource_safety, Interleaving, ResourceSafety, WriteRef};
pub use verdict::Verdict;

use serde::{Deserialize, Serialize};

/// Knobs for [`check`]. Build with `CheckOptions::default()` and set fields: new knobs arrive
/// with new properties, so struct literals are not allowed outside this crate.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CheckOptions {
    /// Evidence entries kept per property; the rest are counted.
    pub max_evidence: usize,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            max_evidence: resource_safety::DEFAULT_MAX_EVIDENCE,
        }
    }
}

/// Every property's result (results.json). Adding a property: a field here, a line in
/// [`CheckResults::verdicts`], a call in [`check`].
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct CheckResults {
    /// Invalid if any property is invalid, else unknown if any is unknown, else valid.
    pub outcome: Verdict,
    pub resource_safety: ResourceSafety,
}

impl CheckResults {
    /// Each property's name (as in results.json) and verdict, in report order.
    pub fn verdicts(&self) -> Vec<(&'static str, Verdict)> {
        vec![("resource_safety", self.resource_safety.verdict)]
    }
}

/// Checks every property over `events`, taken in history order.
pub fn check(events: &[Event], opts: &CheckOptions) -> CheckResults {
    let mut results = CheckResults {
        outcome: Verdict::Unknown,
        resource_safety: check_resource_safety(events, opts.max_evidence),
    };
    results.outcome = Verdict::combine_all(results.verdicts().into_iter().map(|(_, v)| v));
    results
}
