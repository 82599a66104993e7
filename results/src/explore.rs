//! explore.json: what one `lockchaos explore` campaign searched and found, written by the
//! harness, drawn by the reports (explore.html) and read again by `explore merge`.

use serde::{Deserialize, Serialize};

/// How the campaign chose its schedules.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::IntoStaticStr, strum::EnumString)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Strategy {
    /// Every fault × target × trigger once around the lock's own clocks, then more of what made
    /// the lock behave in a way not seen before.
    Guided,
    /// Jepsen's nemesis: faults of the same kinds at random times for random durations, no
    /// triggers, no feedback.
    Random,
}

/// What kind of failure a finding is.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, strum::Display, strum::IntoStaticStr)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum FailureKind {
    /// The resource's record, the fencing tokens or exactly-once broke: two holders wrote.
    Safety,
    /// The lock stayed unavailable with nothing wrong any more.
    Liveness,
}

/// The checker property a finding broke (results.json `properties` names).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, strum::Display, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Property {
    ResourceSafety,
    Fencing,
    ExactlyOnce,
    Stuck,
}

impl Property {
    pub fn kind(self) -> FailureKind {
        match self {
            Property::Stuck => FailureKind::Liveness,
            _ => FailureKind::Safety,
        }
    }

    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// explore.json.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ExploreResults {
    /// The base scenario's name and file.
    pub scenario: String,
    pub scenario_file: String,
    pub backend: String,
    pub seed: u64,
    pub strategy: Strategy,
    /// `K/N` when the campaign was one shard of N.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// UTC, RFC 3339.
    pub started_at: String,
    /// Search runs made (shrinking and confirmation runs are counted apart).
    pub runs: u64,
    /// Episodes those runs injected (each a fault on its targets).
    pub faults_tried: u64,
    pub shrink_runs: u64,
    pub confirm_runs: u64,
    /// Search runs that ended unknown or in an error (not findings).
    pub unknown_runs: u64,
    pub elapsed_s: f64,
    /// Why the search stopped: its budget, `--max-findings`, Ctrl-C, an error.
    pub stopped: String,
    pub interrupted: bool,
    /// What stopped the campaign, when an error did (its runs could not be made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub found: Vec<Finding>,
    /// The kinds of behaviour the lock showed, with the search run that first showed each
    /// (`fault: pattern`), for the page's coverage table.
    #[serde(default)]
    pub behaviours: Vec<Behaviour>,
}

/// One distinct failure, shrunk.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Finding {
    pub kind: FailureKind,
    pub property: Property,
    /// The minimal scenario's path, relative to the explore folder (`found-1.toml`).
    pub scenario: String,
    /// Search runs made until the first run that showed it (this one included).
    pub runs_to_find: u64,
    pub seconds_to_find: f64,
    /// `k/n`: how many of `--confirm` runs of the minimal scenario showed it again.
    pub reproduced: String,
    /// The minimal schedule, one line per episode, in the scenario's words.
    pub schedule: Vec<String>,
    /// What happened in the lock's words, from the run that showed it shrunk: who held, which
    /// fault, which grant or write broke what.
    pub story: Vec<String>,
    /// The run folders: where it was found, the last shrunk run that showed it, and the
    /// confirmation runs (relative to the store).
    pub found_in: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shrunk_run: Option<String>,
    #[serde(default)]
    pub confirm_runs: Vec<String>,
    /// The schedule it was found with, before shrinking.
    pub found_with: Vec<String>,
    /// Shrinking: the steps accepted and the runs they cost.
    pub shrink_steps: u64,
    pub shrink_runs: u64,
}

/// A behaviour the lock showed under a fault, first seen in search run `run`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Behaviour {
    pub fault: String,
    pub pattern: String,
    pub run: u64,
}
