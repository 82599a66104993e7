//! Human-readable evidence for lockchaos runs: the per-run report, the store's index, the
//! measured matrix, the sweep, explore campaigns and JUnit XML. Presentation only: what a run produced is in `results`.

pub mod decision_table;
pub mod explore;
pub mod junit;
pub mod matrix;
mod page;
pub mod run_index;
pub mod run_report;
pub mod sweep;

pub use decision_table::DecisionTable;
pub use matrix::{Matrix, MatrixRun};
