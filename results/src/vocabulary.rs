//! The words runs are judged in.

use checker::{Event, Process, Verdict};
use serde::{Deserialize, Serialize};

/// What a run showed about the lock.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, strum::Display, strum::IntoStaticStr)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Outcome {
    /// The resource's record shows the lock failed to protect it.
    Violation,
    /// The whole run was seen and the lock protected the resource.
    Safe,
    /// The run cannot vouch either way: cut short, or the checker could not decide.
    Unknown,
}

impl Outcome {
    /// The checker's verdict in the scenario's words.
    pub fn of_verdict(v: Verdict) -> Outcome {
        match v {
            Verdict::Invalid => Outcome::Violation,
            Verdict::Valid => Outcome::Safe,
            Verdict::Unknown => Outcome::Unknown,
        }
    }

    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// What a scenario says its runs should show.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, strum::Display, strum::IntoStaticStr)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Expectation {
    Violation,
    Safe,
    /// The lock gets stuck (a liveness failure, the checker's `stuck` property): implies the
    /// claim `stuck = true`, and any safety outcome but a violation (a lock stuck from the start
    /// leaves nothing written to judge, so an unknown outcome meets it).
    Stuck,
}

impl Expectation {
    /// An unknown outcome matches no expectation of safety (`stuck` asks nothing of it but
    /// that it is not a violation: its claim is the lock's).
    pub fn is_met_by(self, outcome: Outcome) -> bool {
        matches!(
            (self, outcome),
            (Expectation::Violation, Outcome::Violation)
                | (Expectation::Safe, Outcome::Safe)
                | (Expectation::Stuck, Outcome::Safe | Outcome::Unknown)
        )
    }

    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// What a nemesis event records about its fault: the event's `value` in the history.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::IntoStaticStr)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum FaultPhase {
    /// The fault was injected (or an injection was attempted: see the event's `error`).
    Start,
    /// The fault was healed.
    Stop,
    /// A planned step did not fire (its trigger never held, or the same fault was active).
    Skipped,
}

impl FaultPhase {
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// The phase a history event records, when it is a nemesis event with one.
    pub fn of_event(e: &Event) -> Option<FaultPhase> {
        if !e.process.is_named(Process::NEMESIS) {
            return None;
        }
        serde_json::from_value(e.value.clone()).ok()
    }
}

impl From<FaultPhase> for serde_json::Value {
    fn from(p: FaultPhase) -> Self {
        p.name().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use checker::EventType;

    #[test]
    fn words_serialise_as_before_they_were_typed() {
        assert_eq!(serde_json::to_string(&Outcome::Unknown).unwrap(), "\"unknown\"");
        assert_eq!(serde_json::from_str::<Expectation>("\"violation\"").unwrap(), Expectation::Violation);
        assert_eq!(serde_json::Value::from(FaultPhase::Stop), serde_json::json!("stop"));
        // Display and name() say the same words as serde.
        assert_eq!((Outcome::Unknown.to_string(), Expectation::Safe.name()), ("unknown".to_string(), "safe"));
    }

    #[test]
    fn only_a_matching_definite_outcome_meets_an_expectation() {
        assert!(Expectation::Safe.is_met_by(Outcome::Safe));
        assert!(!Expectation::Safe.is_met_by(Outcome::Violation));
        assert!(!Expectation::Safe.is_met_by(Outcome::Unknown));
        assert!(!Expectation::Violation.is_met_by(Outcome::Unknown));
        assert!(Expectation::Stuck.is_met_by(Outcome::Unknown) && Expectation::Stuck.is_met_by(Outcome::Safe));
        assert!(!Expectation::Stuck.is_met_by(Outcome::Violation));
    }

    #[test]
    fn a_fault_phase_is_read_only_from_nemesis_events() {
        let mut e = Event::new(5, Process::Named(Process::NEMESIS.into()), EventType::Info, "pause");
        e.value = FaultPhase::Start.into();
        assert_eq!(FaultPhase::of_event(&e), Some(FaultPhase::Start));
        e.process = Process::Client(1);
        assert_eq!(FaultPhase::of_event(&e), None);
    }
}
