//! Shrinking, as property-based testing does it: from a failing choice sequence, try smaller
//! ones and keep each that still fails the same way, until none does or the budget is spent.
//! It knows only sequences: which spans are episodes (to drop them) and which simpler values
//! each position takes (to lower it) come from the space, and whether a sequence fails comes
//! from the trial, so the same shrinker serves every strategy and a test can drive it with a
//! fake.
//!
//! Runs are noisy: a smaller sequence is kept only when it fails in at least `k` of `n` runs
//! (stopping as soon as either is settled). What came after a failure is cut without a run:
//! episodes that start after it cannot have caused it, and after a stuck lock they are never
//! reached (a found scenario holding them would end `unknown`). Passes, repeated while one
//! keeps something:
//! 1. the failing episode alone (the rest dropped), then each episode dropped, last first (all
//!    of them, when the failure needs no fault);
//! 2. each value lowered, in the order the shape gives (the space: each episode's duration and
//!    delay, then its trigger, then the run's clients and work): a binary search over its
//!    simpler values for the smallest that still fails (at most `MAX_TRIES_PER_VALUE` tried).

use results::explore::Property;

/// The most simpler values tried in one place per pass.
pub const MAX_TRIES_PER_VALUE: usize = 3;

/// One run of a sequence.
#[derive(Clone, Debug, PartialEq)]
pub enum Attempt {
    /// It failed: the property, the episode it failed in (None: before any), and where the
    /// run is (to show the shrunk run).
    Failed { property: Property, episode: Option<usize>, run: Option<String> },
    /// It ran and did not fail that way (or could not vouch for it).
    Passed,
    /// Ctrl-C: stop now, keep what is shrunk so far.
    Interrupted,
}

/// Runs candidates for the shrinker.
#[async_trait::async_trait]
pub trait Trial: Send {
    async fn attempt(&mut self, choices: &[u64]) -> Attempt;
}

/// Where the choice sequence's parts are, and what is simpler in each place (the space).
pub trait Shape: Sync {
    /// The (start, end) of each episode's values, in order.
    fn episodes(&self, choices: &[u64]) -> Vec<(usize, usize)>;
    /// Simpler values for position `i`, smallest first.
    fn simpler(&self, choices: &[u64], i: usize) -> Vec<u64>;
    /// The positions to lower, in the order to lower them: the safest first, so that a step
    /// back undoes the riskiest.
    fn lowering_order(&self, choices: &[u64]) -> Vec<usize>;
    /// The sequence written as its candidate reads: two sequences that read the same are one.
    fn normalize(&self, choices: &[u64]) -> Vec<u64>;
}

impl Shape for super::space::Space {
    fn episodes(&self, choices: &[u64]) -> Vec<(usize, usize)> {
        self.episode_spans(choices)
    }
    fn simpler(&self, choices: &[u64], i: usize) -> Vec<u64> {
        super::space::Space::simpler(self, choices, i)
    }
    fn normalize(&self, choices: &[u64]) -> Vec<u64> {
        self.encode(&self.decode(choices))
    }
    fn lowering_order(&self, choices: &[u64]) -> Vec<usize> {
        super::space::Space::lowering_order(self, choices)
    }
}

#[derive(Clone, Copy, Debug)]
pub struct ShrinkOptions {
    pub k: u32,
    pub n: u32,
    /// Runs the shrinking may make in all.
    pub max_runs: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Shrunk {
    pub choices: Vec<u64>,
    /// The last run that showed the kept sequence failing (the original's, if nothing shrank).
    pub run: Option<String>,
    /// Smaller sequences kept.
    pub steps: u64,
    pub runs: u64,
    pub interrupted: bool,
    /// Every sequence kept, from the original to `choices`, each with the run that showed it:
    /// a step back when the smallest proves less reliable than k of n said.
    pub trail: Vec<(Vec<u64>, Option<String>)>,
}

struct Shrinker<'a, T: Trial> {
    shape: &'a dyn Shape,
    trial: &'a mut T,
    property: Property,
    opts: ShrinkOptions,
    best: Shrunk,
}

/// Shrinks `choices`, which failed with `property` in episode `episode` (None: with no fault).
pub async fn shrink<T: Trial>(
    shape: &dyn Shape,
    trial: &mut T,
    choices: Vec<u64>,
    property: Property,
    episode: Option<usize>,
    run: Option<String>,
    opts: ShrinkOptions,
) -> Shrunk {
    let choices = shape.normalize(&choices);
    let choices = match episode {
        Some(i) => cut_after(shape, &choices, i),
        None => choices,
    };
    let trail = vec![(choices.clone(), run.clone())];
    let best = Shrunk { choices, run, steps: 0, runs: 0, interrupted: false, trail };
    let mut s = Shrinker { shape, trial, property, opts, best };
    if let Some(i) = episode {
        s.keep_only_episode(i).await;
    }
    while !s.done() {
        let before = s.best.steps;
        s.drop_episodes().await;
        s.lower_values().await;
        if s.best.steps == before {
            break;
        }
    }
    s.best
}

impl<T: Trial> Shrinker<'_, T> {
    fn done(&self) -> bool {
        self.best.interrupted || self.best.runs >= self.opts.max_runs
    }

    /// Whether `candidate` fails the same way in k of n runs; keeps it when it does.
    async fn try_keep(&mut self, candidate: Vec<u64>) -> bool {
        let candidate = self.shape.normalize(&candidate);
        if candidate == self.shape.normalize(&self.best.choices) || self.done() {
            return false;
        }
        let (mut failed, mut passed, mut run) = (0, 0, None);
        // The latest episode a failing run failed in; None once one failed before any.
        let mut failed_by: Option<Option<usize>> = None;
        while failed < self.opts.k && passed <= self.opts.n - self.opts.k && !self.done() {
            self.best.runs += 1;
            match self.trial.attempt(&candidate).await {
                Attempt::Failed { property, episode, run: r } if property == self.property => {
                    failed += 1;
                    run = r.or(run);
                    failed_by = Some(match (failed_by, episode) {
                        (Some(Some(a)), Some(b)) => Some(a.max(b)),
                        (None, e) => e,
                        _ => None,
                    });
                }
                Attempt::Failed { .. } | Attempt::Passed => passed += 1,
                Attempt::Interrupted => {
                    self.best.interrupted = true;
                    return false;
                }
            }
        }
        let kept = failed >= self.opts.k;
        let candidate = match failed_by {
            Some(Some(i)) if kept => cut_after(self.shape, &candidate, i),
            _ => candidate,
        };
        if kept {
            self.best.trail.push((candidate.clone(), run.clone()));
            self.best.choices = candidate;
            self.best.run = run;
            self.best.steps += 1;
        }
        kept
    }

    /// The failing episode alone, when there are others.
    async fn keep_only_episode(&mut self, i: usize) {
        let spans = self.shape.episodes(&self.best.choices);
        let Some(&(start, end)) = spans.get(i) else { return };
        if spans.len() < 2 {
            return;
        }
        let c = &self.best.choices;
        let first = spans[0].0;
        let last = spans[spans.len() - 1].1;
        let alone: Vec<u64> = c[..first].iter().chain(&c[start..end]).chain(&c[last..]).copied().collect();
        self.try_keep(alone).await;
    }

    /// Each episode dropped in turn, last first.
    async fn drop_episodes(&mut self) {
        let mut i = self.shape.episodes(&self.best.choices).len();
        while i > 0 && !self.done() {
            i -= 1;
            // The last one too: a failure that needs no fault shrinks to none.
            let spans = self.shape.episodes(&self.best.choices);
            let Some(&(start, end)) = spans.get(i) else { continue };
            let mut without = self.best.choices.clone();
            without.drain(start..end);
            self.try_keep(without).await;
        }
    }

    /// Each value lowered to the smallest simpler one that still fails: a binary search over
    /// the simpler values (a longer fault, a later trigger failing when a shorter, earlier one
    /// does), at most `MAX_TRIES_PER_VALUE` tries per place.
    async fn lower_values(&mut self) {
        for i in self.shape.lowering_order(&self.best.choices) {
            let ladder = self.shape.simpler(&self.best.choices, i);
            let (mut lo, mut hi, mut tries) = (0, ladder.len(), 0);
            while lo < hi && tries < MAX_TRIES_PER_VALUE {
                if self.done() {
                    return;
                }
                tries += 1;
                let mid = (lo + hi) / 2;
                let mut lower = self.best.choices.clone();
                lower[i] = ladder[mid];
                if self.try_keep(lower).await {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
        }
    }
}

/// `choices` without the episodes after episode `i`.
fn cut_after(shape: &dyn Shape, choices: &[u64], i: usize) -> Vec<u64> {
    match shape.episodes(choices).get(i) {
        Some(&(_, end)) if end < choices.len() => shape.normalize(&[&choices[..end], &[0]].concat()),
        _ => choices.to_vec(),
    }
}

#[cfg(test)]
mod tests;
