//! The reporters: each consumes the [`Event`](crate::events::Event) stream for one audience.
//!
//! - [`progress`]: what is happening now, on stderr (indicatif bars on a terminal, plain
//!   lines in CI and pipes);
//! - [`summary`]: each run's verdict line, a series' tally, on stdout;
//! - [`explore_progress`]: an explore campaign's progress (its runs' own stages left out);
//! - [`junit`]: JUnit XML, one test case per run;
//! - [`store_index`]: the store's index.html, rewritten after each run;
//! - [`matrix`]: the measured backend × failure table (matrix.json, matrix.html) and the
//!   article's decision table (table.json, table.html; places from [`table_place`]).

pub mod explore_progress;
pub mod junit;
pub mod matrix;
pub mod progress;
pub mod store_index;
pub mod summary;
pub mod table_place;

use crate::events::Reporter;
use std::io::IsTerminal;

/// The reporters every command that runs scenarios uses: progress (bars on an interactive
/// terminal outside CI, plain lines otherwise; only warnings when `quiet`), the summary, and
/// the store's index.
pub fn standard(quiet: bool) -> Vec<Box<dyn Reporter>> {
    vec![progress::for_stderr(quiet), Box::new(summary::Summary::default()), Box::new(store_index::StoreIndex)]
}

/// Whether stderr is a person's terminal (not CI, not a pipe).
pub fn interactive() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("CI").is_none()
}
