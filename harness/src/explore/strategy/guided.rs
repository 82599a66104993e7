//! Ours: a baseline run with no fault; then every action × trigger once, first for a duration
//! past the lock's main clock (a lease outlived), then for one within it (a blip the lock
//! should ride out), the clients' faults before the nodes'; then more of what made the lock do
//! something not seen before under that fault (docs/explore.md). Feedback is what the lock did
//! around each episode (observe.rs's patterns), not code coverage.

use super::{Slice, Strategy, EPISODES_PER_RUN};
use crate::explore::candidate::{Candidate, EpisodePlan};
use crate::explore::observe::{Observation, Pattern};
use crate::explore::space::Space;
use crate::scenario::Trigger;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::{HashSet, VecDeque};

/// The order the first pass takes triggers in: those that catch a holder mid-section first.
const TRIGGER_ORDER: [Option<Trigger>; 8] = [
    Some(Trigger::InSection),
    Some(Trigger::Acquired),
    Some(Trigger::Waiting),
    Some(Trigger::WriteSent),
    Some(Trigger::ReleaseSent),
    Some(Trigger::RenewSent),
    Some(Trigger::AfterCheck),
    None,
];

pub struct Guided {
    rng: StdRng,
    baseline_done: bool,
    first_pass: VecDeque<EpisodePlan>,
    /// Episodes whose turn never came (an earlier one left the lock stuck): tried once more.
    retry: VecDeque<EpisodePlan>,
    retried: HashSet<EpisodePlan>,
    /// (fault, pattern) pairs seen so far.
    seen: HashSet<(String, Pattern)>,
    /// Episodes that showed something new, with how often each was mutated since.
    corpus: Vec<(EpisodePlan, u32)>,
}

impl Guided {
    pub fn new(space: &Space, seed: u64, slice: Slice) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let main = space.clocks.first().map_or(1000, |c| c.ms);
        // Well past the clock (a lease outlived with room for its server's own lag, as etcd's
        // expiry sweep), and well within it.
        let above = main * 3 / 2;
        let below = main / 2;
        let mut plans = vec![];
        for duration_ms in [above, below] {
            for trigger in TRIGGER_ORDER.iter().filter(|t| space.triggers.contains(t)) {
                // The lock's own parties first (what a lease is about), then one node, then
                // several; shuffled by the seed within each.
                for tier in 0..3 {
                    let mut group: Vec<EpisodePlan> = (0..space.actions.len())
                        .filter(|a| tier_of(space, *a) == tier && fits(space, *a, *trigger))
                        .map(|action| EpisodePlan { action, trigger: *trigger, after_trigger_ms: 0, duration_ms })
                        .collect();
                    group.shuffle(&mut rng);
                    plans.extend(group);
                }
            }
        }
        let first_pass = plans.into_iter().enumerate().filter(|(i, _)| slice.holds(*i)).map(|(_, p)| p).collect();
        Guided {
            rng,
            baseline_done: false,
            first_pass,
            retry: VecDeque::new(),
            retried: HashSet::new(),
            seen: HashSet::new(),
            corpus: vec![],
        }
    }

    /// A variation of an episode that showed something new: one dimension moved.
    fn mutate(&mut self, space: &Space, p: &EpisodePlan) -> EpisodePlan {
        let mut m = p.clone();
        for _ in 0..8 {
            match self.rng.random_range(0..4) {
                0 => {
                    let i = space.durations.partition_point(|d| *d < p.duration_ms);
                    let j = if self.rng.random_bool(0.5) { i + 1 } else { i.wrapping_sub(1) };
                    m.duration_ms = space.durations.get(j).copied().unwrap_or(p.duration_ms * 2);
                }
                1 => {
                    let work = space.base_work_ms;
                    let offsets = [0, work / 2, work.saturating_sub(100), space.clocks.first().map_or(0, |c| c.ms / 2)];
                    m.after_trigger_ms = offsets[self.rng.random_range(0..offsets.len())];
                }
                2 => {
                    let triggers: Vec<Option<Trigger>> = space.triggers.iter().copied().filter(|t| fits(space, p.action, *t)).collect();
                    m.trigger = triggers[self.rng.random_range(0..triggers.len())];
                }
                _ => {
                    let a = &space.actions[p.action];
                    let siblings: Vec<usize> = (0..space.actions.len())
                        .filter(|i| {
                            let b = &space.actions[*i];
                            (b.fault.name() == a.fault.name() || b.targets == a.targets) && fits(space, *i, p.trigger)
                        })
                        .collect();
                    m.action = siblings[self.rng.random_range(0..siblings.len())];
                }
            }
            if m != *p {
                break;
            }
        }
        m
    }

    /// Any episode of the guided kind, for when nothing new has shown yet.
    fn anything(&mut self, space: &Space) -> EpisodePlan {
        let actions: Vec<usize> = (0..space.actions.len()).filter(|a| !space.actions[*a].targets.iter().any(is_fixed_client)).collect();
        let action = actions[self.rng.random_range(0..actions.len())];
        let triggers: Vec<Option<Trigger>> = space.triggers.iter().copied().filter(|t| fits(space, action, *t)).collect();
        let trigger = triggers[self.rng.random_range(0..triggers.len())];
        let duration_ms = space.durations[self.rng.random_range(0..space.durations.len())];
        EpisodePlan { action, trigger, after_trigger_ms: 0, duration_ms }
    }
}

/// Whether the guided search tries `action` with `trigger`: a waiter only when one waits, a
/// target that follows the lock only with a trigger, fixed clients never (they are the random
/// nemesis's).
fn fits(space: &Space, action: usize, trigger: Option<Trigger>) -> bool {
    let a = &space.actions[action];
    if a.targets.iter().any(is_fixed_client) {
        return false;
    }
    if a.targets.contains(&crate::target::Target::Waiter) {
        return trigger == Some(Trigger::Waiting);
    }
    !(a.follows_the_lock && trigger.is_none())
}

/// 0: the lock's clients (holder, waiter); 1: one node; 2: several nodes.
fn tier_of(space: &Space, action: usize) -> u8 {
    let a = &space.actions[action];
    if a.targets.iter().any(|t| t.is_client()) {
        0
    } else if a.targets.len() == 1 && a.targets[0] != crate::target::Target::AllNodes {
        1
    } else {
        2
    }
}

fn is_fixed_client(t: &crate::target::Target) -> bool {
    matches!(t, crate::target::Target::Client(_))
}

impl Strategy for Guided {
    fn next(&mut self, space: &Space) -> Vec<u64> {
        let mut episodes = vec![];
        if !self.baseline_done {
            self.baseline_done = true;
            return space.encode(&Candidate { clients: space.base_clients, work_ms: None, episodes });
        }
        while episodes.len() < EPISODES_PER_RUN {
            let next = match self.retry.pop_front().or_else(|| self.first_pass.pop_front()) {
                Some(p) => p,
                None if self.corpus.is_empty() => self.anything(space),
                None => {
                    // The least mutated, the newest among equals.
                    let i = (0..self.corpus.len()).rev().min_by_key(|i| self.corpus[*i].1).expect("not empty");
                    self.corpus[i].1 += 1;
                    let p = self.corpus[i].0.clone();
                    self.mutate(space, &p)
                }
            };
            episodes.push(next);
        }
        space.encode(&Candidate { clients: space.base_clients, work_ms: None, episodes })
    }

    fn observe(&mut self, space: &Space, choices: &[u64], seen: &Observation) {
        let candidate = space.decode(choices);
        let not_run = crate::explore::observe::EpisodeSeen::default();
        for (i, plan) in candidate.episodes.iter().enumerate() {
            // A run that ended in an error saw none of its episodes: they did not have their turn.
            let episode = seen.episodes.get(i).unwrap_or(&not_run);
            if !episode.fired {
                if self.retried.insert(plan.clone()) {
                    self.retry.push_back(plan.clone());
                }
                continue;
            }
            let fault = space.actions[plan.action].fault.name().to_string();
            let mut new = false;
            for p in &episode.patterns {
                new |= self.seen.insert((fault.clone(), *p));
            }
            if new {
                self.corpus.push((plan.clone(), 0));
            }
        }
    }
}
