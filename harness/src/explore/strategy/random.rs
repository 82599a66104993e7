//! The baseline: Jepsen's nemesis. Faults of the same kinds on fixed clients and nodes (never
//! "whoever holds the lock"), at random times (a random gap after the one before), for random
//! durations in seconds (not the lock's clocks), without triggers and without feedback.

use super::{Strategy, EPISODES_PER_RUN};
use crate::explore::candidate::{Candidate, EpisodePlan};
use crate::explore::observe::Observation;
use crate::explore::space::Space;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Jepsen's default nemesis interval is 10 s between operations of one fault kind; these runs
/// are short, so gaps are up to 5 s and faults last up to 10 s.
const MAX_GAP_MS: u64 = 5000;
const MIN_FAULT_MS: u64 = 100;
const MAX_FAULT_MS: u64 = 10_000;

pub struct Random {
    rng: StdRng,
}

impl Random {
    pub fn new(seed: u64) -> Self {
        Random { rng: StdRng::seed_from_u64(seed) }
    }
}

impl Strategy for Random {
    fn next(&mut self, space: &Space) -> Vec<u64> {
        let fixed: Vec<usize> = (0..space.actions.len()).filter(|i| !space.actions[*i].follows_the_lock).collect();
        let episodes = (0..EPISODES_PER_RUN)
            .map(|_| EpisodePlan {
                action: fixed[self.rng.random_range(0..fixed.len())],
                trigger: None,
                after_trigger_ms: self.rng.random_range(0..=MAX_GAP_MS),
                duration_ms: self.rng.random_range(MIN_FAULT_MS..=MAX_FAULT_MS),
            })
            .collect();
        space.encode(&Candidate { clients: space.base_clients, work_ms: None, episodes })
    }

    fn observe(&mut self, _: &Space, _: &[u64], _: &Observation) {}
}
