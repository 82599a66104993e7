//! The search's seam to a run: a scenario in, what it showed out. The real runner runs it as
//! `lockchaos scenario` does (a series of one, the same events, the run in the store) and reads
//! its folder; tests give the search a runner of their own whose failures are known.

use super::observe::{self, Observation};
use crate::events::EventSink;
use crate::run::RunOptions;
use crate::scenario::LoadedScenario;
use crate::series;
use std::path::PathBuf;
use std::sync::Arc;

/// What running one scenario gave.
#[derive(Clone, Debug, Default)]
pub struct RunSeen {
    pub observation: Observation,
    /// Its folder, when it got one.
    pub dir: Option<PathBuf>,
    /// Ctrl-C or SIGTERM ended it: the search stops.
    pub interrupted: bool,
    /// It could not run at all, or ended in an error (then `observation.untrusted` says so).
    pub error: Option<String>,
    /// Whether it matched its scenario's expectation (and claims), when it got results.
    pub matches: Option<bool>,
}

#[async_trait::async_trait]
pub trait Runner: Send + Sync {
    /// Runs `scenario` (its episodes as written) with `seed`.
    async fn run(&self, scenario: LoadedScenario, seed: u64) -> RunSeen;
}

/// Runs scenarios for real, into `opts.store`, reporting to `events`.
pub struct SeriesRunner {
    pub opts: RunOptions,
    pub events: EventSink,
}

#[async_trait::async_trait]
impl Runner for SeriesRunner {
    async fn run(&self, scenario: LoadedScenario, seed: u64) -> RunSeen {
        let episodes = scenario.scenario.nemesis.episode.len();
        let ttl_ms = scenario.scenario.lock.ttl_ms;
        let opts = RunOptions { seed: Some(seed), ..self.opts.clone() };
        let series = series::run_series(Arc::new(scenario), &opts, 1, &self.events).await;
        let dir = series.dirs.first().cloned();
        let Some(results) = series.runs.first() else {
            let error = series.error.unwrap_or_else(|| "the run gave no results".into());
            let observation = Observation { untrusted: Some(error.clone()), ..Default::default() };
            return RunSeen { observation, dir, interrupted: series.interrupted_by_signal, error: Some(error), matches: None };
        };
        let history = dir.as_ref().map(|d| checker::read_history_file(&d.join("history.jsonl")));
        let observation = match history {
            Some(Ok(parsed)) => observe::observe(results, &parsed.events, episodes, ttl_ms, series.error.as_deref()),
            Some(Err(e)) => Observation { untrusted: Some(format!("its history could not be read: {e}")), ..Default::default() },
            None => Observation { untrusted: Some("the run has no folder".into()), ..Default::default() },
        };
        let matches = Some(results.matches_expectation);
        RunSeen { observation, dir, interrupted: series.interrupted_by_signal, error: series.error, matches }
    }
}
