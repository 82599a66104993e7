//! A series: one scenario run N times in a row (`lockchaos scenario NAME --test-count N`, and
//! each scenario of a matrix), reported through the event stream.

use crate::events::{Event, EventSink};
use crate::run::{self, RunOptions};
use crate::scenario::LoadedScenario;
use results::RunResults;
use std::sync::Arc;

/// How a series ended.
#[derive(Default)]
pub struct Series {
    /// The results of every run that produced them.
    pub runs: Vec<RunResults>,
    /// Their run folders, in the same order.
    pub dirs: Vec<std::path::PathBuf>,
    /// The error that stopped the series, if one did.
    pub error: Option<String>,
    /// Ctrl-C or SIGTERM stopped it: a matrix stops too.
    pub interrupted_by_signal: bool,
}

impl Series {
    /// 0 when every run matched its expectation, 1 when some did not, 2 when any run ended
    /// unknown (and so met no expectation: `stuck` can be met by an unknown outcome) or the
    /// series ended in error.
    pub fn exit_code(&self) -> u8 {
        let runs = self.runs.iter().map(RunResults::exit_code).max().unwrap_or(0);
        if self.error.is_some() {
            2
        } else {
            runs
        }
    }
}

/// Runs the scenario `count` times, one after the other (runs share the machine's cores). A
/// run that ends in an error (refused, interrupted, a backend that would not start) stops the
/// series.
pub async fn run_series(loaded: Arc<LoadedScenario>, opts: &RunOptions, count: u32, events: &EventSink) -> Series {
    let runs = count.max(1);
    let mut series = Series::default();
    events.emit(Event::SeriesStarted { scenario: loaded.clone(), runs });
    for iteration in 1..=runs {
        events.emit(Event::RunStarted { scenario: loaded.clone(), iteration, runs });
        match run::run((*loaded).clone(), opts.clone(), events).await {
            Ok(outcome) => {
                let results = outcome.results.clone();
                events.emit(Event::RunFinished {
                    scenario: loaded.clone(),
                    iteration,
                    runs,
                    results: Box::new(outcome.results),
                    dir: outcome.dir.clone(),
                });
                series.runs.push(results);
                series.dirs.push(outcome.dir.clone());
                series.interrupted_by_signal = outcome.interrupted_by_signal;
                if let Some(error) = outcome.error {
                    let error = format!("{error} (partial results in {})", outcome.dir.display());
                    events.emit(Event::RunFailed {
                        scenario: loaded.clone(),
                        iteration,
                        runs,
                        error: error.clone(),
                        dir: Some(outcome.dir),
                    });
                    series.error = Some(error);
                    break;
                }
            }
            Err(e) => {
                let error = format!("{e:#}").replace('\n', " ");
                events.emit(Event::RunFailed { scenario: loaded.clone(), iteration, runs, error: error.clone(), dir: None });
                series.error = Some(error);
                break;
            }
        }
    }
    events.emit(Event::SeriesFinished { scenario: loaded });
    series
}
