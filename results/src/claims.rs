//! Figures a scenario claims beside its expected outcome. The article's decision table speaks in
//! figures as much as in verdicts ("a dead holder's lock is freed at its TTL", "held until TCP
//! gives up"), so a scenario can state the range its measurement must fall in, and a run
//! matches only when every claim holds.

use checker::{CheckResults, Verdict};
use serde::{Deserialize, Serialize};

/// The `[claims]` table of a scenario. Every field is optional; a run checks those given.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    /// Every kill of a client was followed by a grant to someone within `[min, max]` ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freed_after_ms: Option<Bounds>,
    /// The longest time without a grant (edges of the workload included) was within
    /// `[min, max]` ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub longest_gap_ms: Option<Bounds>,
    /// The lock was (true) or was not (false) still unavailable when the workload ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_at_end: Option<bool>,
    /// The lock got stuck (true) / did not (false): the checker's `stuck` property found a
    /// stretch in which it was free, nobody was granted it and clients still asked past the
    /// bound (invalid), or found none (valid). Unknown meets neither.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stuck: Option<bool>,
}

/// An inclusive range in milliseconds, written `[min, max]`.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq)]
#[serde(try_from = "[f64; 2]", into = "[f64; 2]")]
pub struct Bounds {
    pub min: f64,
    pub max: f64,
}

impl TryFrom<[f64; 2]> for Bounds {
    type Error = String;
    fn try_from([min, max]: [f64; 2]) -> Result<Self, String> {
        if !(min.is_finite() && max.is_finite() && 0.0 <= min && min <= max) {
            return Err(format!("[{min}, {max}] is not a range [min, max] with 0 <= min <= max"));
        }
        Ok(Bounds { min, max })
    }
}

impl From<Bounds> for [f64; 2] {
    fn from(b: Bounds) -> Self {
        [b.min, b.max]
    }
}

impl Bounds {
    fn contains(&self, v: f64) -> bool {
        self.min <= v && v <= self.max
    }
}

impl std::fmt::Display for Bounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}..{} ms", self.min, self.max)
    }
}

/// One claim as a run checked it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ClaimCheck {
    /// The claim in words: "freed_after_ms in 1500..3500 ms".
    pub claim: String,
    /// What the run measured, in words.
    pub measured: String,
    pub met: bool,
}

impl Claims {
    /// The claims a run is held to: these, and what the expectation implies (`stuck`: the
    /// lock got stuck).
    pub fn implied_by(&self, expect: crate::Expectation) -> Claims {
        let mut claims = self.clone();
        if expect == crate::Expectation::Stuck {
            claims.stuck = Some(true);
        }
        claims
    }

    /// Checks every claim given against a run's properties: the availability figures, and the
    /// stuck verdict.
    pub fn check(&self, properties: &CheckResults) -> Vec<ClaimCheck> {
        let a = &properties.availability;
        let mut checks = vec![];
        if let Some(bounds) = self.freed_after_ms {
            let claim = format!("freed_after_ms in {bounds}");
            let check = if a.freed_after_kill.is_empty() {
                ClaimCheck { claim, measured: "no client was killed".into(), met: false }
            } else {
                let measured: Vec<String> = a
                    .freed_after_kill
                    .iter()
                    .map(|f| match f.freed_after_ms {
                        Some(ms) => format!("{ms:.0} ms after {}'s kill", f.client),
                        None => format!("never freed after {}'s kill", f.client),
                    })
                    .collect();
                let met = a.freed_after_kill.iter().all(|f| f.freed_after_ms.is_some_and(|ms| bounds.contains(ms)));
                ClaimCheck { claim, measured: measured.join(", "), met }
            };
            checks.push(check);
        }
        if let Some(bounds) = self.longest_gap_ms {
            let claim = format!("longest_gap_ms in {bounds}");
            checks.push(match a.longest_gap_ms {
                Some(ms) => ClaimCheck { claim, measured: format!("{ms:.0} ms"), met: bounds.contains(ms) },
                None => ClaimCheck { claim, measured: "no client events".into(), met: false },
            });
        }
        if let Some(claimed) = self.unavailable_at_end {
            let words = |b: bool| if b { "unavailable at the end" } else { "available at the end" };
            checks.push(ClaimCheck {
                claim: words(claimed).into(),
                measured: words(a.unavailable_at_end).into(),
                met: claimed == a.unavailable_at_end,
            });
        }
        if let Some(claimed) = self.stuck {
            let stuck = &properties.stuck;
            let measured = match stuck.verdict {
                Verdict::Invalid => format!(
                    "stuck {} time(s), the longest {:.0} ms (bound {} ms)",
                    stuck.stuck_stretches, stuck.longest_stuck_ms, stuck.bound_ms
                ),
                Verdict::Valid if !stuck.applies => "no client asked for the lock".into(),
                Verdict::Valid => format!("not stuck (bound {} ms)", stuck.bound_ms),
                Verdict::Unknown => {
                    format!("not known (bound {} ms): the history ends too soon after the lock became free", stuck.bound_ms)
                }
            };
            let met = match stuck.verdict {
                Verdict::Invalid => claimed,
                Verdict::Valid => !claimed,
                Verdict::Unknown => false,
            };
            let claim = if claimed { "the lock got stuck" } else { "the lock did not get stuck" };
            checks.push(ClaimCheck { claim: claim.into(), measured, met });
        }
        checks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use checker::{Availability, CheckOptions, FreedAfterKill, Stuck};

    fn freed(ms: Option<f64>) -> FreedAfterKill {
        FreedAfterKill { client: "client-1".into(), killed_at_ns: 1, freed_after_ms: ms }
    }

    /// A run's properties with these availability figures.
    fn with(a: Availability) -> CheckResults {
        let mut p = checker::check(&[], &CheckOptions::default());
        p.availability = a;
        p
    }

    #[test]
    fn a_claim_holds_only_when_every_measurement_is_in_range() {
        let claims: Claims = parse(r#"{"freed_after_ms": [1500, 3500], "unavailable_at_end": false}"#);
        let mut p = with(Availability { freed_after_kill: vec![freed(Some(2100.0))], ..Default::default() });
        assert!(claims.check(&p).iter().all(|c| c.met), "{:?}", claims.check(&p));

        p.availability.freed_after_kill.push(freed(Some(3600.0)));
        let checks = claims.check(&p);
        assert!(!checks[0].met);
        assert_eq!(checks[0].measured, "2100 ms after client-1's kill, 3600 ms after client-1's kill");

        p.availability.freed_after_kill = vec![freed(None)];
        assert!(!claims.check(&p)[0].met, "a lock never freed is not freed in time");
        p.availability.freed_after_kill.clear();
        assert_eq!(claims.check(&p)[0].measured, "no client was killed");
        assert!(!claims.check(&p)[0].met, "no measurement, no claim met");

        p.availability.unavailable_at_end = true;
        assert!(!claims.check(&p)[1].met);
    }

    #[test]
    fn bounds_are_a_range() {
        assert!(serde_json::from_str::<Claims>(r#"{"longest_gap_ms": [5, 1]}"#).unwrap_err().to_string().contains("not a range"));
        assert!(serde_json::from_str::<Claims>(r#"{"longest_gap_ms": [-1, 1]}"#).is_err());
        assert!(serde_json::from_str::<Claims>(r#"{"gap": [1, 2]}"#).unwrap_err().to_string().contains("unknown field"));
        let c: Claims = parse(r#"{"longest_gap_ms": [6000, 12000]}"#);
        let p = with(Availability { longest_gap_ms: Some(8000.0), ..Default::default() });
        assert_eq!(c.check(&p), [ClaimCheck { claim: "longest_gap_ms in 6000..12000 ms".into(), measured: "8000 ms".into(), met: true }]);
        assert_eq!(serde_json::to_string(&c).unwrap(), r#"{"longest_gap_ms":[6000.0,12000.0]}"#);
    }

    #[test]
    fn a_stuck_claim_is_met_only_by_a_definite_verdict_that_agrees() {
        let stuck: Claims = parse(r#"{"stuck": true}"#);
        let not_stuck: Claims = parse(r#"{"stuck": false}"#);
        let mut p = with(Availability::default());
        p.stuck = Stuck { applies: true, bound_ms: 10_000, ..Stuck::not_checked() };
        let met = |c: &Claims, p: &CheckResults| {
            let checks = c.check(p);
            assert_eq!(checks.len(), 1);
            checks[0].met
        };

        p.stuck.verdict = Verdict::Invalid;
        p.stuck.stuck_stretches = 2;
        p.stuck.longest_stuck_ms = 15_600.0;
        assert!(met(&stuck, &p) && !met(&not_stuck, &p));
        assert_eq!(
            stuck.check(&p)[0],
            ClaimCheck {
                claim: "the lock got stuck".into(),
                measured: "stuck 2 time(s), the longest 15600 ms (bound 10000 ms)".into(),
                met: true
            }
        );

        p.stuck.verdict = Verdict::Valid;
        assert!(!met(&stuck, &p) && met(&not_stuck, &p));
        assert_eq!(not_stuck.check(&p)[0].measured, "not stuck (bound 10000 ms)");

        p.stuck.verdict = Verdict::Unknown;
        assert!(!met(&stuck, &p) && !met(&not_stuck, &p), "unknown meets neither claim");
        assert_eq!(serde_json::to_string(&stuck).unwrap(), r#"{"stuck":true}"#);
    }

    fn parse(json: &str) -> Claims {
        serde_json::from_str(json).unwrap()
    }
}
