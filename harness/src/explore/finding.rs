//! A failure the search saw, made a finding: shrunk (unless one of its kind was), written as
//! found-N.toml, confirmed by runs of that file, and stepped back along the shrinking when the
//! smallest schedule reproduces too rarely.

use super::observe::{self, Failure};
use super::runner::RunSeen;
use super::shrink::{self, Attempt, Trial};
use super::{candidate, found, Search, Stop};
use crate::events::ExplorePhase;
use results::explore::{Finding, Property};
use std::path::Path;

/// At most this many steps back along the shrinking when the smallest reproduces too rarely.
const MAX_STEPS_BACK: usize = 3;

impl Search<'_> {
    /// A failure the search just saw: shrink it (unless one of its kind was), confirm it,
    /// write it down. Err: interrupted meanwhile (what is done so far is kept).
    pub(super) async fn found(
        &mut self,
        choices: &[u64],
        candidate: &candidate::Candidate,
        failure: Failure,
        run: &RunSeen,
    ) -> Result<(), Stop> {
        let episode = failure.episode.map(|i| i as usize);
        let plan = episode.and_then(|i| candidate.episodes.get(i));
        let kind = (failure.property, plan.map_or("no fault".into(), |p| self.space.actions[p.action].label.clone()));
        let where_ = plan.map_or("with no fault".to_string(), |p| self.space.describe_episode(p));
        if !self.shrunk_kinds.insert(kind) {
            self.note(ExplorePhase::Search, format!("{} again ({where_}): already found", failure.property));
            return Ok(());
        }
        let seconds = self.clock.elapsed().as_secs_f64();
        let runs_to_find = self.results.runs;
        self.note(ExplorePhase::Shrink, format!("found {} in run {runs_to_find} ({where_}); shrinking", failure.property));
        let found_in = run.dir.as_ref().map(|d| self.store_relative(d)).unwrap_or_default();
        let space = self.space.clone();
        let shrink_opts = self.opts.shrink;
        let mut trial = RealTrial { search: self, property: failure.property, name: "shrink" };
        let shrunk =
            shrink::shrink(&space, &mut trial, choices.to_vec(), failure.property, episode, Some(found_in.clone()), shrink_opts).await;
        self.results.shrink_runs += shrunk.runs;
        let minimal = self.space.decode(&shrunk.choices);
        let schedule = minimal.describe(&self.space);
        if let Some(same) = self.results.found.iter().find(|f| f.property == failure.property && f.schedule == schedule) {
            self.note(ExplorePhase::Search, format!("it shrank to {}, found already", same.scenario));
            return Ok(());
        }
        let n = self.results.found.len() + 1;
        let file = format!("found-{n}.toml");
        let shown_in = shrunk.run.clone().unwrap_or_else(|| found_in.clone());
        let story = self.story_of(&shown_in, &minimal).unwrap_or_else(|| run.observation.story.clone());
        let mut finding = Finding {
            kind: failure.property.kind(),
            property: failure.property,
            scenario: file.clone(),
            runs_to_find,
            seconds_to_find: seconds,
            reproduced: "0/0".into(),
            schedule,
            story,
            found_in,
            shrunk_run: shrunk.run.clone(),
            confirm_runs: vec![],
            found_with: candidate.describe(&self.space),
            shrink_steps: shrunk.steps,
            shrink_runs: shrunk.runs,
        };
        let path = self.dir.join(&file);
        found::write(&path, &self.space, &self.base, &minimal, &finding, self.opts.seed, self.opts.strategy)
            .map_err(|e| Stop::Error(format!("{e:#}")))?;
        self.results.found.push(finding.clone());
        let _ = self.write();
        if shrunk.interrupted {
            return Err(Stop::Interrupted("interrupted while shrinking".into()));
        }
        // Confirmed; when it shows in fewer than 9 of 10 runs, the shrinking went a step too
        // far (k of n passed by luck): step back along the kept sequences, up to three times.
        let mut trail = shrunk.trail.clone();
        let mut minimal = minimal;
        // The most reliable schedule confirmed so far, with its confirmation.
        let mut best: Option<(candidate::Candidate, Finding, u32)> = None;
        loop {
            let note = format!("{file}: {}; confirming with {} runs", finding.schedule.join("; "), self.opts.confirm);
            self.note(ExplorePhase::Confirm, note);
            let (reproduced, tried, runs, interrupted) = self.confirm(&path, failure.property).await?;
            finding.reproduced = format!("{reproduced}/{tried}");
            finding.confirm_runs = runs;
            self.note(ExplorePhase::Confirm, format!("{file} reproduced in {}", finding.reproduced));
            if best.as_ref().is_none_or(|(_, _, r)| reproduced > *r) && !interrupted {
                best = Some((minimal.clone(), finding.clone(), reproduced));
            }
            let steps_back = shrunk.trail.len() - trail.len();
            let reliable = reproduced * 10 >= tried * 9;
            if interrupted || reliable || trail.len() < 2 || steps_back >= MAX_STEPS_BACK {
                if !interrupted {
                    (minimal, finding) = best.take().map(|(m, f, _)| (m, f)).expect("one confirmed");
                }
                found::write(&path, &self.space, &self.base, &minimal, &finding, self.opts.seed, self.opts.strategy)
                    .map_err(|e| Stop::Error(format!("{e:#}")))?;
                *self.results.found.last_mut().expect("just pushed") = finding.clone();
                if interrupted {
                    return Err(Stop::Interrupted("interrupted while confirming".into()));
                }
                return Ok(());
            }
            trail.pop();
            let (choices, run) = trail.last().cloned().expect("two or more");
            minimal = self.space.decode(&choices);
            let was = std::mem::replace(&mut finding.schedule, minimal.describe(&self.space));
            finding.shrunk_run = run.clone();
            finding.shrink_steps -= 1;
            finding.story = run.as_deref().and_then(|r| self.story_of(r, &minimal)).unwrap_or_default();
            finding.reproduced = "0/0".into();
            finding.confirm_runs = vec![];
            self.note(
                ExplorePhase::Confirm,
                format!("{file}: {} reproduced too rarely; a step back to {}", was.join("; "), finding.schedule.join("; ")),
            );
            found::write(&path, &self.space, &self.base, &minimal, &finding, self.opts.seed, self.opts.strategy)
                .map_err(|e| Stop::Error(format!("{e:#}")))?;
        }
    }

    /// Runs the found scenario `confirm` times: how many showed the failure again (its
    /// expectation met, exactly what `lockchaos scenario` exits 0 for), how many ran, their
    /// folders, and whether a signal stopped it.
    async fn confirm(&mut self, path: &Path, property: Property) -> Result<(u32, u32, Vec<String>, bool), Stop> {
        let loaded = crate::scenario_catalog::load(path).map_err(|e| Stop::Error(format!("the found scenario does not load: {e}")))?;
        let mut loaded = loaded;
        let name = format!("{}-{}", self.base.name, path.file_stem().unwrap_or_default().to_string_lossy());
        loaded.name = name.parse().map_err(|e| Stop::Error(format!("the found scenario's runs: {e}")))?;
        let (mut reproduced, mut runs) = (0, vec![]);
        for tried in 0..self.opts.confirm {
            if self.signalled() {
                return Ok((reproduced, tried, runs, true));
            }
            let seed = self.next_seed();
            let run = self.runner.run(loaded.clone(), seed).await;
            self.results.confirm_runs += 1;
            if run.interrupted {
                return Ok((reproduced, tried, runs, true));
            }
            if run.matches.unwrap_or(false) && run.observation.finding().is_some_and(|f| f.property == property) {
                reproduced += 1;
            }
            runs.extend(run.dir.as_ref().map(|d| self.store_relative(d)));
        }
        Ok((reproduced, self.opts.confirm, runs, false))
    }

    /// The story of a stored run, read again from its folder.
    fn story_of(&self, run: &str, candidate: &candidate::Candidate) -> Option<Vec<String>> {
        let dir = self.opts.store.join(run);
        let results = results::RunResults::read(&dir.join("results.json")).ok()?;
        let events = checker::read_history_file(&dir.join("history.jsonl")).ok()?.events;
        let seen = observe::observe(&results, &events, candidate.episodes.len(), self.base.scenario.lock.ttl_ms, None);
        Some(seen.story)
    }
}

/// Shrinking's runs: each candidate sequence run for real under `<base>-shrink`.
struct RealTrial<'s, 'a> {
    search: &'s mut Search<'a>,
    property: Property,
    name: &'static str,
}

#[async_trait::async_trait]
impl Trial for RealTrial<'_, '_> {
    async fn attempt(&mut self, choices: &[u64]) -> Attempt {
        let s = &mut *self.search;
        if s.signalled() {
            return Attempt::Interrupted;
        }
        let candidate = s.space.decode(choices);
        let Ok(loaded) = candidate.load(&s.space, &s.base, &format!("{}-{}", s.base.name, self.name)) else {
            return Attempt::Passed;
        };
        s.note(ExplorePhase::Shrink, format!("trying {}", candidate.describe(&s.space).join("; ")));
        let seed = s.next_seed();
        let run = s.runner.run(loaded, seed).await;
        if run.interrupted {
            return Attempt::Interrupted;
        }
        match run.observation.finding() {
            Some(f) if f.property == self.property => Attempt::Failed {
                property: f.property,
                episode: f.episode.map(|i| i as usize),
                run: run.dir.as_ref().map(|d| s.store_relative(d)),
            },
            _ => Attempt::Passed,
        }
    }
}
