//! results.json: the verdict of one run, written by the harness, read by every report.

use checker::CheckResults;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RunResults {
    pub scenario: String,
    pub description: String,
    /// "violation" or "safe": what the scenario file says should happen.
    pub expect: String,
    /// "violation", "safe" or "unknown": what the checker found.
    pub outcome: String,
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
    /// Things a reader should know: truncated event files, faults that could not be applied, ...
    pub warnings: Vec<String>,
    /// Each property's verdict, counts and evidence.
    pub properties: CheckResults,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct WorkerStatus {
    pub name: String,
    pub process: u64,
    /// "finished", "died" (exited before the workload ended) or "killed" (had to be stopped).
    pub status: String,
    pub exit_code: Option<i64>,
    /// Run time (ms) at which a died worker was found gone.
    pub died_at_ms: Option<u64>,
}

impl RunResults {
    /// Maps the checker's verdict onto the scenario vocabulary.
    pub fn outcome_of(check: &CheckResults) -> &'static str {
        match check.outcome {
            checker::Verdict::Invalid => "violation",
            checker::Verdict::Valid => "safe",
            checker::Verdict::Unknown => "unknown",
        }
    }
}
