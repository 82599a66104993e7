//! The results of a run and their vocabulary, in a crate of their own below both the harness
//! (which produces them) and the reports (which present them), so neither compares strings
//! with literals: an outcome is an [`Outcome`], never `"unknown"`.
//!
//! Every type here serialises to the same JSON as before it was typed (lower-case words), so
//! results.json files of older runs still read.

mod claims;
pub mod explore;
mod run_results;
mod unknown_cause;
mod vocabulary;

pub use claims::{Bounds, ClaimCheck, Claims};
pub use run_results::{RefusedRequests, ResultsFileError, RunResults, WorkerFate, WorkerStatus, RESULTS_JSON_LIMIT};
pub use unknown_cause::UnknownCause;
pub use vocabulary::{Expectation, FaultPhase, Outcome};
