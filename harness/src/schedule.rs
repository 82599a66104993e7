//! The fault schedule: the scenario's fixed timeline plus faults drawn from the seed, merged into
//! one list ordered by start time, and the episodes, each a group of steps (one per target)
//! that the nemesis starts once the episode before has settled. Same scenario and seed → same
//! schedule.

use crate::faults::Fault;
use crate::scenario::{Nemesis, Trigger};
use crate::target::Target;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[derive(Clone, Debug, PartialEq)]
pub struct PlannedFault {
    /// Milliseconds after the workload starts.
    pub at_ms: u64,
    /// The fault with its parameters; random members among them already drawn.
    pub fault: Fault,
    /// `Client(k)`, `Node(k)`, `Holder`, `Leader` or `AllNodes`; random targets are drawn here.
    pub target: Target,
    pub duration_ms: u64,
    pub when: Option<Trigger>,
    /// Only this client (`client-K`: K) fires the trigger.
    pub by: Option<u64>,
    /// Where the step comes from, for messages: `nemesis.timeline[2]`, `nemesis.random`.
    pub origin: String,
    /// The target as written when it was drawn from the seed (`random-client`, `random-node`):
    /// a drawn target that is down when the step fires is drawn again among the live ones.
    pub drawn_from: Option<Target>,
    /// Fire this long after the trigger's event (or after `at_ms`, without a trigger).
    pub delay_ms: u64,
    /// The episode (its index in `[[nemesis.episode]]`) the step belongs to; its `at_ms` is
    /// set when the episode falls due.
    pub episode: Option<u32>,
}

/// What the nemesis is to do: the steps by time, and the episodes in order (each its steps,
/// one per target, sharing one trigger).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    pub steps: Vec<PlannedFault>,
    pub episodes: Vec<Vec<PlannedFault>>,
}

/// The origin of the random schedule's steps.
pub const RANDOM_ORIGIN: &str = "nemesis.random";

impl PlannedFault {
    /// Drawn by the random schedule (one of a stream), not written in the timeline.
    pub fn from_random_schedule(&self) -> bool {
        self.origin == RANDOM_ORIGIN
    }
}

pub fn plan(nemesis: &Nemesis, clients: u32, nodes: u32, time_limit_ms: u64, seed: u64) -> Plan {
    let mut rng = StdRng::seed_from_u64(seed);
    let draw = |t: &Target, rng: &mut StdRng| match t {
        Target::RandomClient => Target::Client(rng.random_range(1..=clients)),
        Target::RandomNode => Target::Node(rng.random_range(1..=nodes.max(1))),
        other => other.clone(),
    };
    let mut plan: Vec<PlannedFault> = vec![];
    for (i, s) in nemesis.timeline.iter().enumerate() {
        let target = draw(&s.target, &mut rng);
        let mut fault = s.fault.clone();
        for member in fault.action_mut().members_mut() {
            *member = draw(member, &mut rng);
        }
        let by = match s.by {
            Some(Target::Client(k)) => Some(k as u64),
            _ => None,
        };
        let drawn_from = is_random(&s.target).then(|| s.target.clone());
        let origin = format!("nemesis.timeline[{i}]");
        let delay_ms = s.after_trigger_ms;
        plan.push(PlannedFault {
            at_ms: s.at_ms,
            fault,
            target,
            duration_ms: s.duration_ms,
            when: s.when,
            by,
            origin,
            drawn_from,
            delay_ms,
            episode: None,
        });
    }
    if let Some(r) = &nemesis.random {
        let mut at = r.start_ms;
        while at < time_limit_ms {
            let fault = r.faults[rng.random_range(0..r.faults.len())].clone();
            let duration_ms = rng.random_range(r.duration_ms[0]..=r.duration_ms[1]);
            let target = draw(&r.target, &mut rng);
            let drawn_from = is_random(&r.target).then(|| r.target.clone());
            plan.push(PlannedFault {
                at_ms: at,
                fault,
                target,
                duration_ms,
                when: None,
                by: None,
                origin: RANDOM_ORIGIN.into(),
                drawn_from,
                delay_ms: 0,
                episode: None,
            });
            at += duration_ms + rng.random_range(r.interval_ms[0]..=r.interval_ms[1]);
        }
    }
    plan.sort_by_key(|p| p.at_ms);
    // Drawn last, so a scenario's timeline and random schedule draw as they did before it had
    // episodes.
    let episodes = nemesis
        .episode
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let by = match e.by {
                Some(Target::Client(k)) => Some(k as u64),
                _ => None,
            };
            e.target
                .iter()
                .map(|t| {
                    let mut fault = e.fault.clone();
                    for member in fault.action_mut().members_mut() {
                        *member = draw(member, &mut rng);
                    }
                    PlannedFault {
                        at_ms: 0,
                        fault,
                        target: draw(t, &mut rng),
                        duration_ms: e.duration_ms,
                        when: e.when,
                        by,
                        origin: format!("nemesis.episode[{i}]"),
                        drawn_from: is_random(t).then(|| t.clone()),
                        delay_ms: e.after_trigger_ms,
                        episode: Some(i as u32),
                    }
                })
                .collect()
        })
        .collect();
    Plan { steps: plan, episodes }
}

fn is_random(t: &Target) -> bool {
    matches!(t, Target::RandomClient | Target::RandomNode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{RandomFaults, TimelineStep};

    fn pause() -> Fault {
        Fault::from_params("pause", toml::Table::new()).unwrap()
    }

    fn nemesis() -> Nemesis {
        Nemesis {
            timeline: vec![TimelineStep {
                at_ms: 500,
                fault: pause(),
                target: Target::Holder,
                duration_ms: 100,
                when: None,
                by: None,
                after_trigger_ms: 0,
            }],
            random: Some(RandomFaults {
                faults: vec![pause()],
                target: Target::RandomClient,
                start_ms: 1000,
                interval_ms: [200, 800],
                duration_ms: [100, 300],
            }),
            episode: vec![],
        }
    }

    #[test]
    fn same_seed_same_schedule_other_seed_other_schedule() {
        let a = plan(&nemesis(), 3, 5, 20_000, 7);
        assert_eq!(a, plan(&nemesis(), 3, 5, 20_000, 7));
        assert_ne!(a, plan(&nemesis(), 3, 5, 20_000, 8));
        assert!(a.episodes.is_empty());
    }

    #[test]
    fn random_faults_respect_ranges_and_do_not_overlap() {
        let p = plan(&nemesis(), 3, 5, 20_000, 42).steps;
        let first = PlannedFault {
            at_ms: 500,
            fault: pause(),
            target: Target::Holder,
            duration_ms: 100,
            when: None,
            by: None,
            origin: "nemesis.timeline[0]".into(),
            drawn_from: None,
            delay_ms: 0,
            episode: None,
        };
        assert_eq!(p[0], first);
        let random: Vec<_> = p.iter().filter(|f| f.target != Target::Holder).collect();
        assert!(random.len() > 10, "{random:?}");
        for w in random.windows(2) {
            let gap = w[1].at_ms - (w[0].at_ms + w[0].duration_ms);
            assert!((200..=800).contains(&gap), "{w:?}");
        }
        for f in &random {
            assert!((100..=300).contains(&f.duration_ms) && f.at_ms < 20_000 && f.at_ms >= 1000);
            assert!(matches!(f.target, Target::Client(1..=3)));
            assert_eq!((f.origin.as_str(), &f.drawn_from), ("nemesis.random", &Some(Target::RandomClient)));
        }
    }

    #[test]
    fn random_members_of_a_partition_are_drawn_too() {
        let text = "at_ms = 0\ntarget = \"random-client\"\nduration_ms = 100\nfault = \"partition\"\nfrom = [\"random-node\"]\n";
        let step: TimelineStep = toml::from_str(text).unwrap();
        let p = plan(&Nemesis { timeline: vec![step], random: None, episode: vec![] }, 2, 3, 1000, 1).steps;
        let Fault::Partition(partition) = &p[0].fault else { panic!("{p:?}") };
        assert!(matches!(p[0].target, Target::Client(1..=2)), "{p:?}");
        assert!(matches!(partition.from[..], [Target::Node(1..=3)]), "{p:?}");
    }

    #[test]
    fn an_episode_is_a_step_per_target_sharing_its_trigger_and_drawn_after_the_rest() {
        let text = r#"
[[timeline]]
at_ms = 0
target = "random-client"
duration_ms = 100
fault = "pause"

[[episode]]
when = "in-section"
after_trigger_ms = 250
target = ["n1", "random-node"]
duration_ms = 300
fault = "kill"

[[episode]]
target = "holder"
duration_ms = 2000
fault = "partition"
from = ["n2"]
"#;
        let nemesis: Nemesis = toml::from_str(text).unwrap();
        let p = plan(&nemesis, 2, 3, 10_000, 5);
        let without: Nemesis = Nemesis { episode: vec![], ..nemesis.clone() };
        assert_eq!(p.steps, plan(&without, 2, 3, 10_000, 5).steps, "episodes draw after the timeline");
        assert_eq!(p.episodes.len(), 2);
        let first = &p.episodes[0];
        assert_eq!(first.len(), 2);
        assert_eq!((first[0].target.clone(), first[0].delay_ms, first[0].when), (Target::Node(1), 250, Some(Trigger::InSection)));
        assert!(matches!(first[1].target, Target::Node(1..=3)));
        assert_eq!(first[1].drawn_from, Some(Target::RandomNode));
        assert!(first.iter().all(|s| s.episode == Some(0) && s.origin == "nemesis.episode[0]"));
        assert_eq!((p.episodes[1][0].episode, p.episodes[1][0].target.clone()), (Some(1), Target::Holder));
        // Written back as written: one target as a word, several as a list.
        let again: Nemesis = toml::from_str(&toml::to_string(&nemesis).unwrap()).unwrap();
        assert_eq!(again.episode, nemesis.episode);
        assert!(toml::to_string(&nemesis).unwrap().contains("target = \"holder\""));
    }
}
