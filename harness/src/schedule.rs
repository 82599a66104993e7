//! The fault schedule: the scenario's fixed timeline plus faults drawn from the seed, merged into
//! one list ordered by start time. Same scenario and seed → same schedule.

use crate::scenario::{FaultKind, FaultParams, Nemesis, Target, Trigger};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedFault {
    /// Milliseconds after the workload starts.
    pub at_ms: u64,
    pub fault: FaultKind,
    /// `Client(k)`, `Node(k)` or `Holder`; random targets are drawn here.
    pub target: Target,
    pub duration_ms: u64,
    pub when: Option<Trigger>,
    /// Only this client (process number) fires the trigger.
    pub by: Option<u64>,
    /// partition: the members the target is cut off from (random ones drawn).
    pub from: Vec<Target>,
    pub params: FaultParams,
}

pub fn plan(nemesis: &Nemesis, clients: u32, nodes: u32, time_limit_ms: u64, seed: u64) -> Vec<PlannedFault> {
    let mut rng = StdRng::seed_from_u64(seed);
    let resolve = |t: &Target, rng: &mut StdRng| match t {
        Target::RandomClient => Target::Client(rng.random_range(1..=clients)),
        Target::RandomNode => Target::Node(rng.random_range(1..=nodes.max(1))),
        other => other.clone(),
    };
    let mut plan: Vec<PlannedFault> = nemesis
        .timeline
        .iter()
        .map(|s| PlannedFault {
            at_ms: s.at_ms,
            fault: s.fault,
            target: resolve(&s.target, &mut rng),
            duration_ms: s.duration_ms,
            when: s.when,
            by: match s.by {
                Some(Target::Client(k)) => Some(k as u64),
                _ => None,
            },
            from: s.from.iter().map(|t| resolve(t, &mut rng)).collect(),
            params: s.params(),
        })
        .collect();
    if let Some(r) = &nemesis.random {
        let mut at = r.start_ms;
        while at < time_limit_ms {
            let fault = r.faults[rng.random_range(0..r.faults.len())];
            let duration_ms = rng.random_range(r.duration_ms[0]..=r.duration_ms[1]);
            let target = resolve(&r.target, &mut rng);
            plan.push(PlannedFault {
                at_ms: at,
                fault,
                target,
                duration_ms,
                when: None,
                by: None,
                from: vec![],
                params: FaultParams::default(),
            });
            at += duration_ms + rng.random_range(r.interval_ms[0]..=r.interval_ms[1]);
        }
    }
    plan.sort_by_key(|p| p.at_ms);
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{RandomFaults, TimelineStep};

    fn nemesis() -> Nemesis {
        Nemesis {
            timeline: vec![TimelineStep {
                at_ms: 500,
                fault: FaultKind::Pause,
                target: Target::Holder,
                duration_ms: 100,
                when: None,
                by: None,
                from: vec![],
                offset_ms: None,
                period_ms: None,
                delay_ms: None,
                shape: None,
            }],
            random: Some(RandomFaults {
                faults: vec![FaultKind::Pause],
                target: Target::RandomClient,
                start_ms: 1000,
                interval_ms: [200, 800],
                duration_ms: [100, 300],
            }),
        }
    }

    #[test]
    fn same_seed_same_schedule_other_seed_other_schedule() {
        let a = plan(&nemesis(), 3, 5, 20_000, 7);
        assert_eq!(a, plan(&nemesis(), 3, 5, 20_000, 7));
        assert_ne!(a, plan(&nemesis(), 3, 5, 20_000, 8));
    }

    #[test]
    fn random_faults_respect_ranges_and_do_not_overlap() {
        let p = plan(&nemesis(), 3, 5, 20_000, 42);
        assert_eq!(
            p[0],
            PlannedFault {
                at_ms: 500,
                fault: FaultKind::Pause,
                target: Target::Holder,
                duration_ms: 100,
                when: None,
                by: None,
                from: vec![],
                params: FaultParams::default()
            }
        );
        let random: Vec<_> = p.iter().filter(|f| f.target != Target::Holder).collect();
        assert!(random.len() > 10, "{random:?}");
        for w in random.windows(2) {
            let gap = w[1].at_ms - (w[0].at_ms + w[0].duration_ms);
            assert!((200..=800).contains(&gap), "{w:?}");
        }
        for f in &random {
            assert!((100..=300).contains(&f.duration_ms) && f.at_ms < 20_000 && f.at_ms >= 1000);
            assert!(matches!(f.target, Target::Client(1..=3)));
        }
    }
}
