//! `lockchaos explore`: find the failure nobody wrote down. From a base scenario (backend,
//! clients, lock, workload, resource; its own faults ignored) the search runs schedules of
//! fault episodes (space.rs: every fault the lock can take, on the holder, a waiter or nodes,
//! fired by the lock's own events, for durations around its own clocks), chosen by a strategy
//! (strategy/), learns from what each run showed (observe.rs), shrinks each distinct failure to
//! the smallest schedule that still shows it in k of n runs (shrink.rs), confirms it, and hands
//! it back as a scenario (found.rs). Its seam to the run is runner.rs: a scenario in, what it
//! showed out, so the search runs as the matrix and the sweep do and tests drive it with a
//! fake. docs/explore.md describes the search.

pub mod candidate;
mod finding;
mod found;
pub mod merge;
pub mod observe;
pub mod runner;
pub mod shrink;
pub mod space;
mod story;
pub mod strategy;

use crate::events::{Event, EventSink, ExploreNote, ExplorePhase};
use observe::Observation;
use results::explore::{Behaviour, ExploreResults, Property, Strategy as StrategyKind};
use runner::{RunSeen, Runner};
use shrink::ShrinkOptions;
use space::Space;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;
use strategy::Slice;

/// Why a finding's shrinking or confirmation stopped the campaign.
enum Stop {
    Interrupted(String),
    Error(String),
}

/// Search runs ending in an error one after another that stop the campaign: the machine or
/// the base is broken, and more runs would only spend the budget on it.
const ERRORS_IN_A_ROW: u32 = 3;

/// When the search stops looking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    Seconds(u64),
    Runs(u64),
}

#[derive(Clone, Debug)]
pub struct ExploreOptions {
    pub strategy: StrategyKind,
    pub seed: u64,
    pub budget: Budget,
    /// The store: runs go there as usual, the campaign's files under `explore/<start>/`.
    pub store: PathBuf,
    /// Search runs at once.
    pub jobs: u32,
    pub slice: Slice,
    /// Runs of each found scenario that confirm it (0: none).
    pub confirm: u32,
    pub shrink: ShrinkOptions,
    /// Stop searching after this many distinct findings.
    pub max_findings: Option<u32>,
}

/// A finished (or stopped) campaign: what explore.json holds, and where.
pub struct Campaign {
    pub results: ExploreResults,
    pub dir: PathBuf,
}

impl Campaign {
    /// 1: something found; 2: nothing found, and the search was stopped (Ctrl-C, an error) or
    /// none of its runs counted (each ended in an error or unknown: it tested nothing); 0:
    /// nothing found in runs that counted.
    pub fn exit_code(&self) -> u8 {
        let r = &self.results;
        let counted = r.runs.saturating_sub(r.unknown_runs);
        match (r.found.is_empty(), r.interrupted || r.error.is_some() || counted == 0) {
            (false, _) => 1,
            (true, true) => 2,
            (true, false) => 0,
        }
    }
}

/// Runs a campaign on `base` with `runner`, reporting to `events`.
pub async fn explore(
    base: crate::scenario::LoadedScenario,
    opts: ExploreOptions,
    runner: &dyn Runner,
    events: &EventSink,
) -> anyhow::Result<Campaign> {
    let space = Space::of(&base)?;
    // Ctrl-C or SIGTERM: the run it lands in heals and records itself (run::run listens too);
    // the campaign then stops, keeping what it found.
    let signalled = Arc::new(AtomicBool::new(false));
    let listener = {
        let signalled = signalled.clone();
        tokio::spawn(async move {
            crate::run::shutdown_signal().await;
            signalled.store(true, Ordering::Relaxed);
        })
    };
    let started = chrono::Utc::now();
    let dir = campaign_dir(&opts.store, started)?;
    let mut c = Search {
        space,
        base,
        opts: opts.clone(),
        runner,
        events: events.clone(),
        dir: dir.clone(),
        clock: Instant::now(),
        results: ExploreResults {
            scenario: String::new(),
            scenario_file: String::new(),
            backend: String::new(),
            seed: opts.seed,
            strategy: opts.strategy,
            shard: (opts.slice.count > 1).then(|| format!("{}/{}", opts.slice.index, opts.slice.count)),
            started_at: started.to_rfc3339(),
            runs: 0,
            faults_tried: 0,
            shrink_runs: 0,
            confirm_runs: 0,
            unknown_runs: 0,
            elapsed_s: 0.0,
            stopped: String::new(),
            interrupted: false,
            error: None,
            found: vec![],
            behaviours: vec![],
        },
        seen_behaviours: HashSet::new(),
        shrunk_kinds: HashSet::new(),
        run_seeds: 0,
        signalled,
    };
    c.results.scenario = c.base.name.to_string();
    c.results.scenario_file = c.base.path.display().to_string();
    c.results.backend = c.base.scenario.backend.name().to_string();
    c.note(
        ExplorePhase::Search,
        format!(
            "{} with the {} strategy, seed {}; the lock's clocks: {}",
            c.base.name,
            opts.strategy,
            opts.seed,
            c.space.clocks_in_words()
        ),
    );
    let stopped = c.search().await;
    listener.abort();
    c.results.stopped = stopped;
    c.results.elapsed_s = c.clock.elapsed().as_secs_f64();
    c.write()?;
    let done = format!(
        "{}: {} search runs, {} faults tried, {} found ({})",
        c.results.stopped,
        c.results.runs,
        c.results.faults_tried,
        c.results.found.len(),
        dir.join("explore.html").display()
    );
    c.note(ExplorePhase::Done, done);
    Ok(Campaign { results: c.results, dir })
}

/// `STORE/explore/<start>`, made anew (a second campaign in the same second gets `-2`).
fn campaign_dir(store: &Path, started: chrono::DateTime<chrono::Utc>) -> anyhow::Result<PathBuf> {
    let stamp = started.format("%Y%m%dT%H%M%SZ").to_string();
    let parent = store.join("explore");
    std::fs::create_dir_all(&parent)?;
    for n in 1.. {
        let dir = if n == 1 { parent.join(&stamp) } else { parent.join(format!("{stamp}-{n}")) };
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e.into()),
        }
    }
    unreachable!("some suffix is free")
}

struct Search<'a> {
    space: Space,
    base: crate::scenario::LoadedScenario,
    opts: ExploreOptions,
    runner: &'a dyn Runner,
    events: EventSink,
    dir: PathBuf,
    clock: Instant,
    results: ExploreResults,
    seen_behaviours: HashSet<(String, String)>,
    /// The (property, action) of failures already shrunk: another failure of the same kind is
    /// counted, not shrunk again.
    shrunk_kinds: HashSet<(Property, String)>,
    run_seeds: u64,
    /// Ctrl-C or SIGTERM arrived.
    signalled: Arc<AtomicBool>,
}

impl Search<'_> {
    fn signalled(&self) -> bool {
        self.signalled.load(Ordering::Relaxed)
    }

    fn note(&self, phase: ExplorePhase, text: String) {
        self.events.emit(Event::Explore(ExploreNote {
            phase,
            text,
            runs: self.results.runs,
            faults: self.results.faults_tried,
            found: self.results.found.len() as u64,
        }));
    }

    /// The seed of the next run: the campaign's seed and the run's number, mixed.
    fn next_seed(&mut self) -> u64 {
        self.run_seeds += 1;
        let mut z = self.opts.seed ^ self.opts.slice.index.rotate_left(32) ^ self.run_seeds.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn budget_left(&self) -> bool {
        match self.opts.budget {
            Budget::Seconds(s) => self.clock.elapsed().as_secs() < s,
            Budget::Runs(n) => self.results.runs < n,
        }
    }

    /// Searches until the budget is spent, enough is found or a signal stops it; says which.
    async fn search(&mut self) -> String {
        let mut strategy = strategy::make(self.opts.strategy, &self.space, self.opts.seed, self.opts.slice);
        let mut errors_in_a_row = 0;
        loop {
            if self.signalled() {
                self.results.interrupted = true;
                return "interrupted".into();
            }
            if !self.budget_left() {
                return "budget spent".into();
            }
            if self.opts.max_findings.is_some_and(|m| self.results.found.len() as u32 >= m) {
                return format!("{} finding(s), as --max-findings asked", self.results.found.len());
            }
            let jobs = match self.opts.budget {
                Budget::Runs(n) => (self.opts.jobs as u64).min(n - self.results.runs).max(1),
                Budget::Seconds(_) => self.opts.jobs as u64,
            };
            let batch: Vec<Vec<u64>> = (0..jobs).map(|_| strategy.next(&self.space)).collect();
            let mut runs = vec![];
            for choices in &batch {
                let candidate = self.space.decode(choices);
                let number = self.results.runs + runs.len() as u64 + 1;
                self.note(ExplorePhase::Search, format!("run {number}: {}", candidate.describe(&self.space).join("; ")));
                let loaded = match candidate.load(&self.space, &self.base, &format!("{}-explore", self.base.name)) {
                    Ok(loaded) => loaded,
                    Err(e) => return self.stop_with_error(format!("a candidate would not load: {e:#}")),
                };
                let seed = self.next_seed();
                runs.push(self.runner.run(loaded, seed));
            }
            let seen: Vec<RunSeen> = futures_util::future::join_all(runs).await;
            let mut interrupted = false;
            for (choices, run) in batch.iter().zip(seen) {
                self.results.runs += 1;
                interrupted |= run.interrupted;
                errors_in_a_row = if run.error.is_some() && !run.interrupted { errors_in_a_row + 1 } else { 0 };
                let candidate = self.space.decode(choices);
                self.results.faults_tried += run.observation.episodes.iter().filter(|e| e.fired).count() as u64;
                strategy.observe(&self.space, choices, &run.observation);
                self.record_behaviours(&candidate, &run.observation);
                if run.observation.untrusted.is_some() {
                    self.results.unknown_runs += 1;
                }
                self.note(ExplorePhase::Search, format!("run {}: {}", self.results.runs, seen_in_words(&run.observation)));
                if interrupted {
                    continue;
                }
                if errors_in_a_row >= ERRORS_IN_A_ROW {
                    let last = run.error.clone().unwrap_or_default();
                    return self.stop_with_error(format!("{ERRORS_IN_A_ROW} search runs in a row ended in an error; the last: {last}"));
                }
                if let Some(failure) = run.observation.finding().cloned() {
                    match self.found(choices, &candidate, failure, &run).await {
                        Ok(()) => {}
                        Err(Stop::Interrupted(why)) => {
                            self.results.interrupted = true;
                            let _ = self.write();
                            return why;
                        }
                        Err(Stop::Error(why)) => return self.stop_with_error(why),
                    }
                }
            }
            let _ = self.write();
            if interrupted {
                self.results.interrupted = true;
                return "interrupted".into();
            }
        }
    }

    /// Stops the campaign on an error: recorded, and the reason to print.
    fn stop_with_error(&mut self, why: String) -> String {
        self.results.error = Some(why.clone());
        let _ = self.write();
        format!("error: {why}")
    }

    fn record_behaviours(&mut self, candidate: &candidate::Candidate, seen: &Observation) {
        for (plan, episode) in candidate.episodes.iter().zip(&seen.episodes) {
            let fault = self.space.actions[plan.action].fault.name().to_string();
            for p in &episode.patterns {
                if self.seen_behaviours.insert((fault.clone(), p.name().to_string())) {
                    self.results.behaviours.push(Behaviour { fault: fault.clone(), pattern: p.name().into(), run: self.results.runs });
                }
            }
        }
    }

    fn store_relative(&self, dir: &Path) -> String {
        dir.strip_prefix(&self.opts.store).unwrap_or(dir).display().to_string()
    }

    /// explore.json and explore.html, as they stand.
    fn write(&mut self) -> anyhow::Result<()> {
        self.results.elapsed_s = self.clock.elapsed().as_secs_f64();
        std::fs::write(self.dir.join("explore.json"), serde_json::to_vec_pretty(&self.results)?)?;
        std::fs::write(self.dir.join("explore.html"), reports::explore::render(&self.results))?;
        Ok(())
    }
}

/// A search run's result in one line.
fn seen_in_words(seen: &Observation) -> String {
    match (&seen.failure, &seen.untrusted) {
        (Some(f), None) => {
            format!("{} failed in {}", f.property, f.episode.map_or("the baseline".into(), |i| format!("nemesis.episode[{i}]")))
        }
        (_, Some(why)) => format!("not counted: {why}"),
        (None, None) => {
            let fired = seen.episodes.iter().filter(|e| e.fired).count();
            format!("{fired} episode(s) took effect, nothing failed")
        }
    }
}
