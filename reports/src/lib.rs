//! Human-readable evidence for lockchaos runs.

pub mod run_report;
pub mod run_results;

pub use run_results::{RunResults, WorkerStatus};
pub mod junit;
pub mod matrix;
pub mod run_index;

pub use matrix::{Matrix, MatrixRun};
