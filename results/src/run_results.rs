//! results.json: the verdict of one run, written by the harness, read by every report.

use crate::{ClaimCheck, Expectation, Outcome};
use checker::bounded_read::{self, ReadError, SizeLimit};
use checker::CheckResults;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The largest results.json read. Ours are tens of KiB (each property's evidence is capped by
/// `max_evidence`); past this a file is no results.json, and the store's index, `matrix merge`
/// and `check` would otherwise read whatever sits in a store whole.
pub const RESULTS_JSON_LIMIT: SizeLimit = SizeLimit::new(16 << 20, "a results.json");

/// A results.json that could not be used; its text is one line naming the file.
#[derive(Debug, thiserror::Error)]
pub enum ResultsFileError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{}: not a results.json: {message}", path.display())]
    Malformed { path: PathBuf, message: String },
}

impl ResultsFileError {
    /// There is no such file (its run never got as far as its results).
    pub fn is_missing(&self) -> bool {
        matches!(self, ResultsFileError::Read(ReadError { problem: bounded_read::Problem::Io(e), .. }) if e.kind() == std::io::ErrorKind::NotFound)
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RunResults {
    pub scenario: String,
    pub description: String,
    /// What the scenario file says should happen.
    pub expect: Expectation,
    /// What the checker found (unknown when the run was cut short before a violation).
    pub outcome: Outcome,
    pub matches_expectation: bool,
    pub run_id: String,
    pub backend: String,
    pub seed: u64,
    pub clients: u32,
    pub time_limit_secs: u64,
    /// UTC, RFC 3339.
    pub started_at: String,
    pub duration_secs: f64,
    /// The run was stopped by Ctrl-C / SIGTERM or an error before its time limit.
    pub interrupted: bool,
    pub workers: Vec<WorkerStatus>,
    /// Things a reader should know: truncated event files, faults that failed to heal, ...
    pub warnings: Vec<String>,
    /// Planned faults that did not take effect, each naming its step and why. A run with any
    /// is `unknown`: it did not test what its scenario claims.
    #[serde(default)]
    pub not_applied: Vec<String>,
    /// Requests the resource refused because no worker of the run sent them: somebody (a
    /// client program) tried to write the record. A run with any is not `safe`.
    #[serde(default, skip_serializing_if = "RefusedRequests::is_empty")]
    pub refused_requests: RefusedRequests,
    /// Why the outcome is unknown, when it is (None otherwise, and in results.json files
    /// written before it was recorded: [`RunResults::unknown_cause`] infers it then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown_cause: Option<crate::UnknownCause>,
    /// Each property's verdict, counts and evidence.
    pub properties: CheckResults,
    /// The scenario's claimed figures (`[claims]`), as this run measured them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<ClaimCheck>,
}

impl RunResults {
    /// A run's results.json, read within [`RESULTS_JSON_LIMIT`] (a regular file only).
    pub fn read(path: &Path) -> Result<RunResults, ResultsFileError> {
        let bytes = bounded_read::read(path, RESULTS_JSON_LIMIT)?;
        serde_json::from_slice(&bytes).map_err(|e| ResultsFileError::Malformed { path: path.to_path_buf(), message: e.to_string() })
    }

    /// Whether a run matched its scenario: the expected outcome, and every claimed figure.
    pub fn matches(expect: Expectation, outcome: Outcome, claims: &[ClaimCheck]) -> bool {
        expect.is_met_by(outcome) && claims.iter().all(|c| c.met)
    }

    /// The run as an exit status: 0 it matched its expectation, 1 it did not, 2 it ended unknown
    /// without matching (`stuck` can be met by an unknown outcome). A group's is the highest.
    pub fn exit_code(&self) -> u8 {
        match (self.matches_expectation, self.outcome) {
            (true, _) => 0,
            (false, Outcome::Unknown) => 2,
            (false, _) => 1,
        }
    }
}

/// How many requests the resource refused (`at_least`: it stopped recording them), and the
/// first few, described.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct RefusedRequests {
    pub count: u64,
    #[serde(default)]
    pub at_least: bool,
    #[serde(default)]
    pub first: Vec<String>,
}

impl RefusedRequests {
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// "3 requests", "at least 1000 requests".
    pub fn counted(&self) -> String {
        let plural = if self.count == 1 { "" } else { "s" };
        format!("{}{} request{plural}", if self.at_least { "at least " } else { "" }, self.count)
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct WorkerStatus {
    pub name: String,
    pub process: u64,
    pub status: WorkerFate,
    pub exit_code: Option<i64>,
    /// Run time (ms) at which a died worker was found gone.
    pub died_at_ms: Option<u64>,
}

/// How a worker's run ended.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, strum::Display, strum::IntoStaticStr)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum WorkerFate {
    /// Exited 0 after its last round.
    Finished,
    /// Exited otherwise, or was gone before the workload ended.
    Died,
    /// Did not finish within its grace time and had to be stopped.
    Killed,
}

impl WorkerFate {
    pub fn name(self) -> &'static str {
        self.into()
    }
}
