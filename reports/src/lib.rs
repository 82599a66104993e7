//! Human-readable evidence for lockchaos runs: the per-run report, the store's index, the
//! measured matrix, the sweep, explore campaigns and JUnit XML. Presentation only: what a run produced is in `results`.
//!
//! Escaping, page by page: maud escapes every spliced value as text or as an attribute (always
//! double-quoted); every link is an [`href::Href`], a relative path of percent-encoded segments.

pub mod change;
pub mod decision_table;
pub mod explore;
pub mod history;
pub mod href;
pub mod junit;
pub mod matrix;
mod page;
pub mod rate;
pub mod run_index;
pub mod run_report;
pub mod sweep;

pub use decision_table::DecisionTable;
pub use matrix::{Matrix, MatrixRun};
