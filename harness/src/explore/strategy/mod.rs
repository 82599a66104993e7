//! How the search picks the next schedule: a strategy writes choice sequences (space.rs) and
//! hears what each one's run showed. Two strategies: `random` (Jepsen's nemesis, the baseline)
//! and `guided` (ours: docs/explore.md says why it should find failures in fewer runs).
//! Both are deterministic: same seed, same space, same observations → same sequences.

mod guided;
mod random;

pub use guided::Guided;
pub use random::Random;

use super::observe::Observation;
use super::space::Space;
use results::explore::Strategy as StrategyKind;

/// Episodes in one search run.
pub const EPISODES_PER_RUN: usize = 4;

pub trait Strategy: Send {
    /// The next candidate's choice sequence.
    fn next(&mut self, space: &Space) -> Vec<u64>;
    /// What the run of `choices` showed.
    fn observe(&mut self, space: &Space, choices: &[u64], seen: &Observation);
}

/// This machine's slice of a campaign spread over several (`--shard K/N`): its own stream of
/// draws and its share of the guided strategy's first pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    /// From 1.
    pub index: u64,
    pub count: u64,
}

impl Slice {
    pub const WHOLE: Slice = Slice { index: 1, count: 1 };

    /// This slice's seed: the campaign's for the whole, another stream for each shard.
    pub fn seed(&self, seed: u64) -> u64 {
        if self.count == 1 {
            seed
        } else {
            seed ^ self.index.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        }
    }

    /// Whether item `i` of a list dealt round the slices is this one's.
    pub fn holds(&self, i: usize) -> bool {
        i as u64 % self.count == self.index - 1
    }
}

pub fn make(kind: StrategyKind, space: &Space, seed: u64, slice: Slice) -> Box<dyn Strategy> {
    match kind {
        StrategyKind::Guided => Box::new(Guided::new(space, slice.seed(seed), slice)),
        StrategyKind::Random => Box::new(Random::new(slice.seed(seed))),
    }
}
