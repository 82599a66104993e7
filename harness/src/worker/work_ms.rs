//! The work time of a section: a fixed number of milliseconds, or a range drawn uniformly each
//! round (`work_ms = [0, 2000]`, as Jepsen's etcd lock test sleeps a random 0–2 s under the
//! lock). Draws come from the run's seed and the process number, so a run can be repeated.

use rand::rngs::StdRng;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// `work_ms = 300` or `work_ms = [min, max]`.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(try_from = "WorkMsText", into = "WorkMsText")]
pub struct WorkMs {
    pub min: u64,
    pub max: u64,
}

/// How a scenario writes it.
#[derive(Deserialize, Serialize)]
#[serde(untagged)]
enum WorkMsText {
    Fixed(u64),
    Range([u64; 2]),
}

impl TryFrom<WorkMsText> for WorkMs {
    type Error = String;
    fn try_from(text: WorkMsText) -> Result<Self, String> {
        match text {
            WorkMsText::Fixed(ms) => Ok(WorkMs { min: ms, max: ms }),
            WorkMsText::Range([min, max]) if min <= max => Ok(WorkMs { min, max }),
            WorkMsText::Range([min, max]) => Err(format!("[{min}, {max}] is not a range [min, max] with min <= max")),
        }
    }
}

impl From<WorkMs> for WorkMsText {
    fn from(w: WorkMs) -> Self {
        if w.min == w.max {
            WorkMsText::Fixed(w.min)
        } else {
            WorkMsText::Range([w.min, w.max])
        }
    }
}

impl WorkMs {
    pub const fn fixed(ms: u64) -> Self {
        WorkMs { min: ms, max: ms }
    }

    /// One round's work time.
    pub fn draw(&self, rng: &mut StdRng) -> u64 {
        if self.min == self.max {
            self.min
        } else {
            rng.random_range(self.min..=self.max)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[derive(Deserialize, Serialize, Debug)]
    struct W {
        work_ms: WorkMs,
    }

    #[test]
    fn a_number_or_a_range_drawn_from_the_seed() {
        let fixed: W = toml::from_str("work_ms = 300").unwrap();
        assert_eq!(fixed.work_ms, WorkMs::fixed(300));
        assert_eq!(toml::to_string(&fixed).unwrap().trim(), "work_ms = 300");
        let range: W = toml::from_str("work_ms = [0, 2000]").unwrap();
        assert_eq!(toml::to_string(&range).unwrap().trim(), "work_ms = [0, 2000]");
        let draws = |seed| {
            let mut rng = StdRng::seed_from_u64(seed);
            (0..200).map(|_| range.work_ms.draw(&mut rng)).collect::<Vec<_>>()
        };
        assert_eq!(draws(7), draws(7), "same seed, same draws");
        assert!(draws(7).iter().all(|&d| d <= 2000) && draws(7).iter().any(|&d| d < 1000) && draws(7).iter().any(|&d| d > 1000));
        let err = toml::from_str::<W>("work_ms = [5, 1]").unwrap_err().to_string();
        assert!(err.contains("not a range"), "{err}");
    }
}
