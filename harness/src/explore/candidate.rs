//! A candidate schedule: what one search run tries. It is decoded from a choice sequence by
//! the space (space.rs), and becomes a scenario (the base with its nemesis replaced by
//! episodes) that runs like any other.

use super::space::Space;
use crate::scenario::{Episode, LoadedScenario, Nemesis, Trigger};
use crate::worker::WorkMs;
use std::path::Path;

/// One episode: an action of the space, when it fires and for how long.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EpisodePlan {
    /// Index into [`Space::actions`].
    pub action: usize,
    /// None: at once, once the episode before has settled.
    pub trigger: Option<Trigger>,
    pub after_trigger_ms: u64,
    pub duration_ms: u64,
}

/// A whole run's schedule and the run-level knobs the shrinker may lower.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Candidate {
    pub clients: u32,
    /// The work time; `None`: the base's own (which may be a range).
    pub work_ms: Option<u64>,
    pub episodes: Vec<EpisodePlan>,
}

/// Seconds of workload a run with no episode gets beyond the stuck bound: the baseline run,
/// which shows what the lock does without faults, long enough to see it stuck.
pub const BASELINE_EXTRA_SECS: u64 = 5;

impl Candidate {
    /// The scenario this candidate runs: the base with `clients`, the work time and the
    /// episodes; `expect` as given (search runs judge by the properties, not by it).
    pub fn to_scenario(&self, space: &Space, base: &LoadedScenario) -> crate::scenario::Scenario {
        let mut s = base.scenario.clone();
        s.clients = self.clients;
        if let Some(ms) = self.work_ms {
            s.workload.work_ms = WorkMs::fixed(ms);
        }
        s.nemesis = Nemesis { timeline: vec![], random: None, episode: self.episodes.iter().map(|e| self.episode(space, e)).collect() };
        s.claims = Default::default();
        s.seed = None;
        // A cap: the run ends once its last episode has settled (or given up).
        s.time_limit_secs = if self.episodes.is_empty() {
            base.scenario.stuck_bound().as_secs() + BASELINE_EXTRA_SECS
        } else {
            let wait = space.timings.trigger_wait_ms + space.timings.settle_bound_ms;
            let per_episode: u64 = self.episodes.iter().map(|e| e.after_trigger_ms + e.duration_ms + wait).sum();
            (per_episode / 1000 + 10).min(MAX_RUN_SECS)
        };
        s
    }

    fn episode(&self, space: &Space, e: &EpisodePlan) -> Episode {
        let action = &space.actions[e.action];
        Episode {
            when: e.trigger,
            by: None,
            after_trigger_ms: e.after_trigger_ms,
            target: action.targets.clone(),
            duration_ms: e.duration_ms,
            fault: action.fault.clone(),
        }
    }

    /// The candidate's scenario, loaded as a file `name.toml` beside the base (so a client
    /// program's project is the base's; its stem, the scenario's name, is checked as any file's)
    /// and held against its backend.
    pub fn load(&self, space: &Space, base: &LoadedScenario, name: &str) -> anyhow::Result<LoadedScenario> {
        let mut scenario = self.to_scenario(space, base);
        if scenario.client.command.is_some() {
            // The candidate's file does not exist: its program's project is the base's.
            scenario.client.project = Some(base.project_root());
        }
        let text = toml::to_string(&scenario)?;
        let path = base.path.parent().unwrap_or(Path::new(".")).join(format!("{name}.toml"));
        let loaded = crate::scenario::load_text(text, &path)?;
        crate::preflight::check(&loaded)?;
        Ok(loaded)
    }

    /// The schedule in the scenario's words, one line per episode.
    pub fn describe(&self, space: &Space) -> Vec<String> {
        if self.episodes.is_empty() {
            return vec!["no fault".into()];
        }
        self.episodes.iter().map(|e| space.describe_episode(e)).collect()
    }
}

/// No search run lasts longer than this, whatever its episodes.
pub const MAX_RUN_SECS: u64 = 240;
