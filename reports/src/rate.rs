//! How often a group of runs failed, and how sure that number is: the rate of violations among
//! the runs that reached a verdict, with its exact (Clopper-Pearson) 95% interval. A tally of 0
//! of n is not "safe" but "at most this often" (the one-sided 95% bound, 1 − 0.05^(1/n): 26% for
//! 0 of 10, 3% for 0 of 100), and a failure seen at some rate says how many runs it takes to
//! see it once with 95% probability.
//!
//! Exact everywhere, not Wilson's approximation: the tallies are small (3 to a few hundred runs),
//! where Wilson's interval can fall short of 95%, and the exact one costs microseconds.

use serde::{Deserialize, Serialize};
use statrs::distribution::{Beta, ContinuousCDF};

/// The confidence of every interval and bound on the pages.
pub const CONFIDENCE: f64 = 0.95;

/// A rate of violations over runs with a verdict (violation or safe); unknown runs are not in it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    /// Runs that showed a violation.
    pub violations: u32,
    /// Runs with a verdict.
    pub runs: u32,
    /// violations / runs; None without runs.
    pub rate: Option<f64>,
    /// The exact two-sided 95% interval of the rate (0 to 1 without runs).
    pub low: f64,
    pub high: f64,
    /// With no violation: the one-sided 95% upper bound ("at most").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_most: Option<f64>,
    /// With a violation in every run: the one-sided 95% lower bound ("at least").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_least: Option<f64>,
    /// With some violation: the runs it takes to see one with 95% probability at the measured
    /// rate, and at the interval's low end (the pessimist's number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_to_see_once: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_to_see_once_at_low: Option<u64>,
}

/// No runs: no rate, and an interval that says nothing.
impl Default for Rate {
    fn default() -> Self {
        Rate::of(0, 0)
    }
}

impl Rate {
    pub fn of(violations: u32, runs: u32) -> Rate {
        assert!(violations <= runs, "{violations} violations of {runs} runs");
        let (k, n) = (f64::from(violations), f64::from(runs));
        let alpha = 1.0 - CONFIDENCE;
        let rate = (runs > 0).then(|| k / n);
        let low = if violations == 0 { 0.0 } else { beta_quantile(k, n - k + 1.0, alpha / 2.0) };
        let high = if violations == runs { 1.0 } else { beta_quantile(k + 1.0, n - k, 1.0 - alpha / 2.0) };
        Rate {
            violations,
            runs,
            rate,
            low,
            high,
            at_most: (runs > 0 && violations == 0).then(|| 1.0 - alpha.powf(1.0 / n)),
            at_least: (runs > 0 && violations == runs).then(|| alpha.powf(1.0 / n)),
            runs_to_see_once: rate.and_then(runs_to_see_once),
            runs_to_see_once_at_low: (violations > 0).then(|| runs_to_see_once(low)).flatten(),
        }
    }

    /// The rate in words a person reads at one glance.
    pub fn words(&self) -> String {
        let (k, n) = (self.violations, self.runs);
        let runs = |n: u32| if n == 1 { "1 run".to_string() } else { format!("{n} runs") };
        match (self.rate, self.at_most, self.at_least) {
            (None, ..) => "no run reached a verdict".into(),
            (Some(_), Some(at_most), _) => format!("safe in {}: fails in at most {} of runs", runs(n), percent(at_most, Round::Up)),
            (Some(_), _, Some(at_least)) => format!("a violation in {}: in at least {} of runs", runs(n), percent(at_least, Round::Down)),
            (Some(rate), None, None) => {
                let seen = match (self.runs_to_see_once, self.runs_to_see_once_at_low) {
                    (Some(at), Some(low)) if low > at => format!("; {at} runs see it once (95%), {low} at its low end"),
                    (Some(at), _) => format!("; {at} runs see it once (95%)"),
                    _ => String::new(),
                };
                format!(
                    "a violation in {k} of {}: {} ({}–{}){seen}",
                    runs(n),
                    percent(rate, Round::Nearest),
                    self.interval_low(),
                    self.interval_high()
                )
            }
        }
    }

    /// The interval's ends as percentages, rounded outwards.
    pub fn interval_low(&self) -> String {
        percent(self.low, Round::Down)
    }

    pub fn interval_high(&self) -> String {
        percent(self.high, Round::Up)
    }
}

/// The quantile of Beta(a, b) at p.
fn beta_quantile(a: f64, b: f64, p: f64) -> f64 {
    Beta::new(a, b).expect("positive shape parameters").inverse_cdf(p)
}

/// The smallest n with 1 − (1 − p)^n ≥ 95%: runs that see an event of probability p at least
/// once with 95% probability. None for p = 0 (never).
pub fn runs_to_see_once(p: f64) -> Option<u64> {
    if p <= 0.0 {
        return None;
    }
    if p >= 1.0 {
        return Some(1);
    }
    Some(((1.0 - CONFIDENCE).ln() / (1.0 - p).ln()).ceil().max(1.0) as u64)
}

#[derive(Clone, Copy)]
pub enum Round {
    Up,
    Down,
    Nearest,
}

/// A rate as a percentage: whole percents from 1% up, one significant figure below (a 0.3%
/// failure is not 0%); bounds round outwards, so "at most" never understates.
pub fn percent(v: f64, round: Round) -> String {
    let pct = v * 100.0;
    let scale = if pct >= 1.0 || pct == 0.0 { 1.0 } else { 10f64.powi(-(pct.log10().floor() as i32)) };
    let scaled = pct * scale;
    // 1e-9: a bound computed as 25.000000001 is 25, not 26.
    let r = match round {
        Round::Up => (scaled - 1e-9).ceil(),
        Round::Down => (scaled + 1e-9).floor(),
        Round::Nearest => scaled.round(),
    } / scale;
    if scale > 1.0 {
        format!("{r}%")
    } else {
        format!("{r:.0}%")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-5
    }

    #[test]
    fn exact_intervals_match_published_values() {
        // Clopper-Pearson 95%, as R's binom.test(k, n)$conf.int.
        let r = Rate::of(5, 10);
        assert!(close(r.low, 0.187086) && close(r.high, 0.812914), "{r:?}");
        let r = Rate::of(1, 100);
        assert!(close(r.low, 0.000253) && close(r.high, 0.054460), "{r:?}");
        let r = Rate::of(0, 10);
        assert!(close(r.high, 0.308517) && r.low == 0.0, "{r:?}");
        let r = Rate::of(10, 10);
        assert!(close(r.low, 0.691483) && r.high == 1.0, "{r:?}");
    }

    #[test]
    fn zero_of_n_is_at_most_the_one_sided_bound() {
        let ten = Rate::of(0, 10);
        assert!(close(ten.at_most.unwrap(), 0.258866), "{ten:?}");
        assert_eq!(ten.words(), "safe in 10 runs: fails in at most 26% of runs");
        let hundred = Rate::of(0, 100);
        assert!(close(hundred.at_most.unwrap(), 0.029513), "{hundred:?}");
        assert_eq!(hundred.words(), "safe in 100 runs: fails in at most 3% of runs");
        assert_eq!((ten.runs_to_see_once, ten.at_least), (None, None));
    }

    #[test]
    fn every_run_failing_is_at_least_the_one_sided_bound() {
        let r = Rate::of(10, 10);
        assert!(close(r.at_least.unwrap(), 0.741134), "{r:?}");
        assert_eq!(r.words(), "a violation in 10 runs: in at least 74% of runs");
        assert_eq!(r.runs_to_see_once, Some(1));
    }

    #[test]
    fn a_failure_says_how_many_runs_see_it_once() {
        let r = Rate::of(1, 100);
        // 1 − 0.99^n ≥ 0.95 from n = 299; at the interval's low end (0.0253%), 11,833 runs.
        assert_eq!(r.runs_to_see_once, Some(299));
        assert_eq!(r.runs_to_see_once_at_low, runs_to_see_once(r.low));
        assert!(r.runs_to_see_once_at_low.unwrap() > 11_000, "{r:?}");
        assert_eq!(r.words(), "a violation in 1 of 100 runs: 1% (0.02%–6%); 299 runs see it once (95%), 11833 at its low end");
        // The README's example ("Reading the nightly").
        assert_eq!(Rate::of(3, 10).words(), "a violation in 3 of 10 runs: 30% (6%–66%); 9 runs see it once (95%), 44 at its low end");
        assert_eq!(Rate::of(5, 10).words(), "a violation in 5 of 10 runs: 50% (18%–82%); 5 runs see it once (95%), 15 at its low end");
    }

    #[test]
    fn no_runs_is_no_rate() {
        let r = Rate::of(0, 0);
        assert_eq!((r.rate, r.low, r.high, r.at_most), (None, 0.0, 1.0, None));
        assert_eq!(r.words(), "no run reached a verdict");
    }

    #[test]
    fn percentages_round_outwards_for_bounds() {
        assert_eq!(percent(0.258866, Round::Up), "26%");
        assert_eq!(percent(0.741134, Round::Down), "74%");
        assert_eq!(percent(0.25, Round::Up), "25%");
        assert_eq!(percent(0.000253, Round::Down), "0.02%");
        assert_eq!(percent(0.0, Round::Nearest), "0%");
        assert_eq!(percent(1.0, Round::Nearest), "100%");
    }
}
