//! Figures a scenario claims beside its expected outcome. The article's decision table speaks in
//! figures as much as in verdicts ("a dead holder's lock is freed at its TTL", "held until TCP
//! gives up"), so a scenario can state the range its measurement must fall in, and a run
//! matches only when every claim holds.

use checker::Availability;
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
    /// Checks every claim given against a run's availability figures.
    pub fn check(&self, a: &Availability) -> Vec<ClaimCheck> {
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
        checks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use checker::FreedAfterKill;

    fn freed(ms: Option<f64>) -> FreedAfterKill {
        FreedAfterKill { client: "client-1".into(), killed_at_ns: 1, freed_after_ms: ms }
    }

    #[test]
    fn a_claim_holds_only_when_every_measurement_is_in_range() {
        let claims: Claims = parse(r#"{"freed_after_ms": [1500, 3500], "unavailable_at_end": false}"#);
        let mut a = Availability { freed_after_kill: vec![freed(Some(2100.0))], ..Default::default() };
        assert!(claims.check(&a).iter().all(|c| c.met), "{:?}", claims.check(&a));

        a.freed_after_kill.push(freed(Some(3600.0)));
        let checks = claims.check(&a);
        assert!(!checks[0].met);
        assert_eq!(checks[0].measured, "2100 ms after client-1's kill, 3600 ms after client-1's kill");

        a.freed_after_kill = vec![freed(None)];
        assert!(!claims.check(&a)[0].met, "a lock never freed is not freed in time");
        a.freed_after_kill.clear();
        assert_eq!(claims.check(&a)[0].measured, "no client was killed");
        assert!(!claims.check(&a)[0].met, "no measurement, no claim met");

        a.unavailable_at_end = true;
        assert!(!claims.check(&a)[1].met);
    }

    #[test]
    fn bounds_are_a_range() {
        assert!(serde_json::from_str::<Claims>(r#"{"longest_gap_ms": [5, 1]}"#).unwrap_err().to_string().contains("not a range"));
        assert!(serde_json::from_str::<Claims>(r#"{"longest_gap_ms": [-1, 1]}"#).is_err());
        assert!(serde_json::from_str::<Claims>(r#"{"gap": [1, 2]}"#).unwrap_err().to_string().contains("unknown field"));
        let c: Claims = parse(r#"{"longest_gap_ms": [6000, 12000]}"#);
        let a = Availability { longest_gap_ms: Some(8000.0), ..Default::default() };
        assert_eq!(c.check(&a), [ClaimCheck { claim: "longest_gap_ms in 6000..12000 ms".into(), measured: "8000 ms".into(), met: true }]);
        assert_eq!(serde_json::to_string(&c).unwrap(), r#"{"longest_gap_ms":[6000.0,12000.0]}"#);
    }

    fn parse(json: &str) -> Claims {
        serde_json::from_str(json).unwrap()
    }
}
