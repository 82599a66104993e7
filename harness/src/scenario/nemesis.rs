//! The `[nemesis]` of a scenario: a timeline of steps at fixed times (or triggered by what the
//! clients do), episodes one after another, and faults drawn from the seed. Each step's fault is
//! typed (faults::Fault): its parameters are the step's other fields, and a field the fault does
//! not take is an error.

use crate::faults::Fault;
use crate::target::Target;
pub use crate::trigger::Trigger;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize, Clone, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct Nemesis {
    /// Faults at fixed times from the start of the workload.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<TimelineStep>,
    /// Faults drawn from the run's seed (same seed, same schedule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random: Option<RandomFaults>,
    /// `[[nemesis.episode]]`: faults one after another, as Jepsen's nemesis cycles: each waits
    /// for its trigger once the one before has settled (nemesis/episodes.rs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub episode: Vec<Episode>,
}

impl Nemesis {
    /// The name of every fault the scenario injects, timeline first, repeats kept.
    pub fn fault_names(&self) -> Vec<&'static str> {
        self.faults().map(Fault::name).collect()
    }

    /// Whether any fault moves a clock: the backend then runs its servers under libfaketime.
    pub fn moves_clocks(&self) -> bool {
        self.faults().any(|f| f.action().moves_clocks())
    }

    /// Every fault the scenario names: timeline, random, then episodes.
    pub fn faults(&self) -> impl Iterator<Item = &Fault> {
        let random = self.random.iter().flat_map(|r| r.faults.iter());
        self.timeline.iter().map(|s| &s.fault).chain(random).chain(self.episode.iter().map(|e| &e.fault))
    }

    /// Each fault with its target as written (an episode's once per target), for the places
    /// that judge what a scenario injects (the matrix's failure, the article's table).
    pub fn faults_on_targets(&self) -> Vec<(&Fault, &Target)> {
        let timeline = self.timeline.iter().map(|s| (&s.fault, &s.target));
        let random = self.random.iter().flat_map(|r| r.faults.iter().map(move |f| (f, &r.target)));
        let episodes = self.episode.iter().flat_map(|e| e.target.iter().map(move |t| (&e.fault, t)));
        timeline.chain(random).chain(episodes).collect()
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
    /// Fire this long after the trigger's event (its own time), not at once.
    #[serde(skip_serializing_if = "is_zero")]
    pub after_trigger_ms: u64,
    /// `fault = "name"` and its parameters, written beside the step's own fields.
    #[serde(flatten)]
    pub fault: Fault,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
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
    #[serde(default)]
    after_trigger_ms: u64,
    fault: String,
    #[serde(flatten)]
    params: toml::Table,
}

impl<'de> Deserialize<'de> for TimelineStep {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = StepAsWritten::deserialize(d)?;
        let fault = fault_of(&s.fault, s.params)?;
        Ok(TimelineStep {
            at_ms: s.at_ms,
            target: s.target,
            duration_ms: s.duration_ms,
            when: s.when,
            by: s.by,
            after_trigger_ms: s.after_trigger_ms,
            fault,
        })
    }
}

fn fault_of<E: serde::de::Error>(name: &str, params: toml::Table) -> Result<Fault, E> {
    Fault::from_params(name, params).map_err(|e| E::custom(param_error(&e.field, &e.message)))
}

/// One episode of `[[nemesis.episode]]`: once the episode before it has settled (or from the
/// workload's start, for the first), it waits for its trigger, then `after_trigger_ms`, injects its
/// fault on each target at once, heals it after `duration_ms`, and settles: the next episode
/// is due once some client is granted the lock on an acquire sent after the heal, or when the
/// run's stuck bound has passed since the heal. A run whose scenario has episodes ends its
/// workload once the last one has settled (or at its time limit).
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Episode {
    /// What the clients must do for the episode to fire; none: at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub when: Option<Trigger>,
    /// Only this client's events fire the trigger (`client-K`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<Target>,
    /// Fire this long after the trigger's event.
    #[serde(skip_serializing_if = "is_zero")]
    pub after_trigger_ms: u64,
    /// Who the fault hits: one target, or several at once (`["n1", "n2", "n3"]`: a majority).
    #[serde(serialize_with = "one_or_many::serialize")]
    pub target: Vec<Target>,
    pub duration_ms: u64,
    #[serde(flatten)]
    pub fault: Fault,
}

#[derive(Deserialize)]
struct EpisodeAsWritten {
    #[serde(default)]
    when: Option<Trigger>,
    #[serde(default)]
    by: Option<Target>,
    #[serde(default)]
    after_trigger_ms: u64,
    #[serde(deserialize_with = "one_or_many::deserialize")]
    target: Vec<Target>,
    duration_ms: u64,
    fault: String,
    #[serde(flatten)]
    params: toml::Table,
}

impl<'de> Deserialize<'de> for Episode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let e = EpisodeAsWritten::deserialize(d)?;
        let fault = fault_of(&e.fault, e.params)?;
        Ok(Episode { when: e.when, by: e.by, after_trigger_ms: e.after_trigger_ms, target: e.target, duration_ms: e.duration_ms, fault })
    }
}

/// `target = "n1"` or `target = ["n1", "n2"]`.
mod one_or_many {
    use crate::target::Target;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Target>, D::Error> {
        // Read as a value first: an untagged enum's own error would hide a bad target's words.
        let value = toml::Value::deserialize(d)?;
        let targets = match value {
            toml::Value::Array(items) => {
                items.into_iter().map(|v| Target::deserialize(v).map_err(serde::de::Error::custom)).collect::<Result<Vec<_>, _>>()?
            }
            other => vec![Target::deserialize(other).map_err(serde::de::Error::custom)?],
        };
        if targets.is_empty() {
            return Err(serde::de::Error::custom("names no target"));
        }
        Ok(targets)
    }

    pub fn serialize<S: Serializer>(targets: &[Target], s: S) -> Result<S::Ok, S::Error> {
        match targets {
            [one] => one.serialize(s),
            many => many.serialize(s),
        }
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
