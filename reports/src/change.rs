//! Did a cell's rate move beyond what chance explains? Two tallies (a baseline's and tonight's)
//! compared by Fisher's exact test, two-sided, at [`ALPHA`]; and one rule the test does not need:
//! a cell safe in at least [`FLIP_MIN_RUNS`] baseline runs that shows a violation has changed,
//! whatever the test says, because a violation is a proof and those runs put its rate at most
//! 26% (rate.rs).
//!
//! Why these numbers: a nightly compares some 70 cells, most of which fail in every run or in
//! none; such a cell reaches p < 1% only on a real change (0 of 10 against 4 of 4: p = 0.001),
//! and a cell with a middling rate, the one chance could move, has few companions. A baseline of
//! one night's 3 runs can never show a change by the test (0 of 3 against 3 of 3: p = 0.1); pool
//! nights into the baseline (`--baseline` again, or `history` over the nights).

use crate::rate::Rate;
use serde::{Deserialize, Serialize};
use statrs::distribution::{Discrete, Hypergeometric};

/// The test's threshold: a move with a smaller two-sided p-value is a change.
pub const ALPHA: f64 = 0.01;
/// The baseline runs, all safe, after which any violation is a change.
pub const FLIP_MIN_RUNS: u32 = 10;

/// How tonight's tally stands against a baseline.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Change {
    /// Within chance.
    Steady,
    /// The violation rate rose beyond chance, or a long-safe cell showed a violation.
    Rose,
    /// The violation rate fell beyond chance (a lock got safer, or a fault stopped biting).
    Fell,
    /// One side has no run with a verdict: nothing to compare.
    Unmeasured,
}

impl Change {
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// A change beyond chance, either way.
    pub fn moved(self) -> bool {
        matches!(self, Change::Rose | Change::Fell)
    }
}

/// A baseline's tally against tonight's.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Comparison {
    pub baseline: Rate,
    pub tonight: Rate,
    /// Fisher's exact test, two-sided (None when a side has no runs).
    pub p_value: Option<f64>,
    pub change: Change,
    /// One line: why it is judged so.
    pub why: String,
}

impl Comparison {
    pub fn of(baseline: Rate, tonight: Rate) -> Comparison {
        let words = |r: &Rate| format!("{} of {}", r.violations, r.runs);
        let (b, t) = (words(&baseline), words(&tonight));
        if baseline.runs == 0 || tonight.runs == 0 {
            let why = format!("not compared: {b} in the baseline, {t} tonight");
            return Comparison { baseline, tonight, p_value: None, change: Change::Unmeasured, why };
        }
        let p = fisher_two_sided(baseline.violations, baseline.runs, tonight.violations, tonight.runs);
        let rose = tonight.rate > baseline.rate;
        let (change, why) = if baseline.violations == 0 && baseline.runs >= FLIP_MIN_RUNS && tonight.violations > 0 {
            (Change::Rose, format!("safe in all {} baseline runs, a violation in {t} tonight", baseline.runs))
        } else if p < ALPHA {
            (if rose { Change::Rose } else { Change::Fell }, format!("{b} → {t}: p = {p:.2e} < {ALPHA} (Fisher's exact test)"))
        } else {
            (Change::Steady, format!("{b} → {t}: p = {p:.2} ≥ {ALPHA}, within chance"))
        };
        Comparison { baseline, tonight, p_value: Some(p), change, why }
    }
}

/// Fisher's exact test on the 2×2 table (k1 of n1, k2 of n2), two-sided: the probability, given
/// both totals, of a table at most as likely as the one seen.
pub fn fisher_two_sided(k1: u32, n1: u32, k2: u32, n2: u32) -> f64 {
    let (population, successes, draws) = (u64::from(n1 + n2), u64::from(k1 + k2), u64::from(n2));
    let h = Hypergeometric::new(population, successes, draws).expect("a valid 2×2 table");
    let seen = h.pmf(u64::from(k2));
    let lowest = successes.saturating_sub(population - draws);
    let highest = successes.min(draws);
    // 1e-7 relative: tables exactly as likely as the one seen count, despite rounding.
    let p: f64 = (lowest..=highest).map(|x| h.pmf(x)).filter(|&q| q <= seen * (1.0 + 1e-7)).sum();
    p.min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compare(k1: u32, n1: u32, k2: u32, n2: u32) -> Comparison {
        Comparison::of(Rate::of(k1, n1), Rate::of(k2, n2))
    }

    #[test]
    fn fisher_matches_published_values() {
        // R: fisher.test(matrix(c(k1, n1-k1, k2, n2-k2), 2))$p.value
        assert!((fisher_two_sided(0, 5, 5, 5) - 0.007937).abs() < 1e-6);
        assert!((fisher_two_sided(0, 3, 3, 3) - 0.1).abs() < 1e-9);
        assert!((fisher_two_sided(1, 10, 5, 10) - 0.1408669).abs() < 1e-6);
        assert!((fisher_two_sided(3, 10, 3, 10) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_real_shift_is_a_change_and_chance_is_not() {
        let shift = compare(0, 10, 4, 4);
        assert_eq!(shift.change, Change::Rose, "{shift:?}");
        let fell = compare(20, 20, 0, 5);
        assert_eq!(fell.change, Change::Fell, "{fell:?}");
        // 3 of 10 against 5 of 10: chance explains it.
        let chance = compare(3, 10, 5, 10);
        assert_eq!(chance.change, Change::Steady, "{chance:?}");
        assert!(chance.why.contains("within chance"), "{}", chance.why);
        // One night of 3 against another: the test cannot see even a full flip.
        assert_eq!(compare(3, 3, 0, 3).change, Change::Steady);
    }

    #[test]
    fn a_long_safe_cell_showing_a_violation_always_changed() {
        // 0 of 12 against 1 of 3: p = 0.2, but a violation in a cell safe 12 times is a proof.
        let c = compare(0, 12, 1, 3);
        assert!(c.p_value.unwrap() > ALPHA, "{c:?}");
        assert_eq!(c.change, Change::Rose);
        assert!(c.why.contains("safe in all 12 baseline runs"), "{}", c.why);
        // Too few baseline runs for the rule: left to the test.
        assert_eq!(compare(0, 9, 1, 3).change, Change::Steady);
    }

    #[test]
    fn a_side_without_runs_is_unmeasured() {
        assert_eq!(compare(0, 0, 1, 3).change, Change::Unmeasured);
        assert!(!Change::Unmeasured.moved() && Change::Fell.moved());
    }
}
