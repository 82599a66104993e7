//! The `[nemesis]` of a scenario: a timeline of steps at fixed times (or triggered by what the
//! clients do), and faults drawn from the seed. Each step's fault is typed (faults::Fault):
//! its parameters are the step's other fields, and a field the fault does not take is an error.

use crate::faults::Fault;
use crate::target::Target;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize, Clone, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct Nemesis {
    /// Faults at fixed times from the start of the workload.
    #[serde(default)]
    pub timeline: Vec<TimelineStep>,
    /// Faults drawn from the run's seed (same seed, same schedule).
    #[serde(default)]
    pub random: Option<RandomFaults>,
}

impl Nemesis {
    /// The name of every fault the scenario injects, timeline first, repeats kept.
    pub fn fault_names(&self) -> Vec<&'static str> {
        let timeline = self.timeline.iter().map(|s| s.fault.name());
        let random = self.random.iter().flat_map(|r| r.faults.iter().map(Fault::name));
        timeline.chain(random).collect()
    }

    /// Whether any fault moves a clock: the backend then runs its servers under libfaketime.
    pub fn moves_clocks(&self) -> bool {
        let random = self.random.iter().flat_map(|r| r.faults.iter());
        self.timeline.iter().map(|s| &s.fault).chain(random).any(|f| f.action().moves_clocks())
    }
}

/// One step of the timeline: when, on whom, for how long, and which fault with its parameters.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct TimelineStep {
    pub at_ms: u64,
    pub target: Target,
    pub duration_ms: u64,
    /// Fire at the first moment from `at_ms` on when this holds (waiting up to 5 s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub when: Option<Trigger>,
    /// Only this client's events fire the trigger (`client-K`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<Target>,
    /// `fault = "name"` and its parameters, written beside the step's own fields.
    #[serde(flatten)]
    pub fault: Fault,
}

/// A step as written: its own fields, the fault's name, and every other field, which are the
/// fault's parameters.
#[derive(Deserialize)]
struct StepAsWritten {
    at_ms: u64,
    target: Target,
    duration_ms: u64,
    #[serde(default)]
    when: Option<Trigger>,
    #[serde(default)]
    by: Option<Target>,
    fault: String,
    #[serde(flatten)]
    params: toml::Table,
}

impl<'de> Deserialize<'de> for TimelineStep {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = StepAsWritten::deserialize(d)?;
        let fault = Fault::from_params(&s.fault, s.params).map_err(|e| serde::de::Error::custom(param_error(&e.field, &e.message)))?;
        Ok(TimelineStep { at_ms: s.at_ms, target: s.target, duration_ms: s.duration_ms, when: s.when, by: s.by, fault })
    }
}

/// serde errors carry no structured field, and the path tracking stops at the step: a fault
/// parameter's error travels in its message, `field `NAME`: MESSAGE`, and the loader
/// ([`split_param_error`]) puts NAME back into the path.
fn param_error(field: &str, message: &str) -> String {
    format!("field `{field}`: {message}")
}

/// The parameter and the message of an error made by [`param_error`].
pub(super) fn split_param_error(message: &str) -> Option<(&str, &str)> {
    let rest = message.strip_prefix("field `")?;
    let (field, rest) = rest.split_once("`: ")?;
    Some((field, rest))
}

/// A condition on the clients' live history that a step waits for.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Trigger {
    /// Some client's acquire has just returned ok (it holds the lock, has not released it).
    Acquired,
    /// Some client is inside its critical section (read done, write not yet sent).
    InSection,
    /// Some client has just checked that its lock is still valid and is about to write
    /// (needs `workload.check_before_write`).
    AfterCheck,
}

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RandomFaults {
    /// Faults without parameters, by name; each draw picks one.
    #[serde(with = "fault_names")]
    pub faults: Vec<Fault>,
    pub target: Target,
    /// First fault no earlier than this.
    #[serde(default = "random_start_ms")]
    pub start_ms: u64,
    /// [min, max] gap between the end of one fault and the start of the next.
    pub interval_ms: [u64; 2],
    /// [min, max] duration of each fault.
    pub duration_ms: [u64; 2],
}

fn random_start_ms() -> u64 {
    3000
}

/// `faults = ["pause", "kill"]`: faults a random schedule can draw, i.e. those that need no
/// parameters.
mod fault_names {
    use crate::faults::Fault;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(faults: &[Fault], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(faults.iter().map(Fault::name))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Fault>, D::Error> {
        let names = Vec::<String>::deserialize(d)?;
        names
            .iter()
            .map(|name| {
                Fault::from_params(name, toml::Table::new()).map_err(|e| {
                    let why = if e.message.starts_with("unknown fault") {
                        e.message
                    } else {
                        format!("{name} needs parameters: use a [[nemesis.timeline]] step")
                    };
                    serde::de::Error::custom(why)
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parameter_error_survives_the_trip_through_serde() {
        let message = param_error("offset_ms", "does not apply to a pause fault");
        assert_eq!(split_param_error(&message), Some(("offset_ms", "does not apply to a pause fault")));
        assert_eq!(split_param_error("missing field `at_ms`"), None);
    }

    #[test]
    fn a_step_writes_back_as_it_was_written() {
        let text = "at_ms = 3000\ntarget = \"n1\"\nduration_ms = 500\nfault = \"clock-strobe\"\noffset_ms = 30000\nperiod_ms = 200\n";
        let step: TimelineStep = toml::from_str(text).unwrap();
        assert_eq!(step.fault.name(), "clock-strobe");
        let again: TimelineStep = toml::from_str(&toml::to_string(&step).unwrap()).unwrap();
        assert_eq!(again, step);
    }
}
