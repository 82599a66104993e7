use super::*;
use crate::faults::pause::Pause;
use crate::schedule;

fn step(at_ms: u64, origin: &str, target: Target, when: Option<Trigger>) -> PlannedFault {
    PlannedFault {
        at_ms,
        fault: Fault::Pause(Pause {}),
        target,
        duration_ms: 100,
        when,
        by: None,
        origin: origin.into(),
        drawn_from: None,
        delay_ms: 0,
        episode: None,
    }
}

fn nemesis(dir: &std::path::Path, plan: Vec<PlannedFault>) -> Nemesis {
    let log = EventLog::create(&dir.join("nemesis.jsonl")).unwrap();
    let timings = EpisodeTimings { trigger_wait_ms: 10_000, settle_bound_ms: 10_000 };
    Nemesis::new(Plan { steps: plan, episodes: vec![] }, timings, log, RunClock::start_now(), 1, 3, 1)
}

#[test]
fn a_heal_that_finds_its_fault_never_took_effect_names_it_and_a_measured_one_is_recorded() {
    use crate::faults::clock_slew::ClockSlew;
    let dir = tempfile::tempdir().unwrap();
    let mut n = nemesis(dir.path(), vec![]);
    let mut planned = step(2000, "nemesis.timeline[2]", Target::Node(3), None);
    planned.fault = Fault::ClockSlew(ClockSlew { rate: 1.05 });
    let active = Active { injection: Injection { fault: planned.fault.clone(), target: "n3".into() }, heal_at_ms: 9000, step: planned };

    // A heal that failed for another reason is an error of the heal, not a claim about the fault.
    let (_, error) = n.heal_outcome(&active, Err(anyhow::anyhow!("docker exec failed")));
    assert_eq!(error.as_deref(), Some("docker exec failed"));
    assert!(n.not_applied().is_empty());

    let (measured, _) = n.heal_outcome(&active, Ok(Some("gained +350.0 ms".into())));
    assert_eq!(with_measured(active.injection.detail(), measured).as_deref(), Some("x1.05; gained +350.0 ms"));
    assert!(n.not_applied().is_empty());

    let never = NotInEffect("gained +0.2 ms (the rate says +350.0 ms): the server's clock did not run at the slew's rate".into());
    let (measured, error) = n.heal_outcome(&active, Err(never.into()));
    assert_eq!(measured, None);
    assert!(error.unwrap().contains("did not run at the slew's rate"));
    assert_eq!(
        n.not_applied(),
        ["nemesis.timeline[2] (clock-slew on n3, due at 2000 ms) did not take effect: gained +0.2 ms (the rate says +350.0 ms): the server's clock did not run at the slew's rate"]
    );
}

#[test]
fn steps_left_at_the_end_are_named_with_why_and_a_fired_random_stream_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let random = |at| step(at, schedule::RANDOM_ORIGIN, Target::Client(2), None);
    let plan = vec![
        step(9000, "nemesis.timeline[0]", Target::Client(1), None),
        step(9100, "nemesis.timeline[1]", Target::Holder, None),
        step(9200, "nemesis.timeline[2]", Target::Client(1), None),
        random(9990),
        step(10_000, "nemesis.timeline[3]", Target::Client(1), None),
    ];
    let mut n = nemesis(dir.path(), plan.clone());
    n.random_fired = true;
    n.drop_unfired(10_000).unwrap();
    let why: Vec<&str> = n.not_applied().iter().map(|w| w.split_once(": ").map_or(w.as_str(), |(_, why)| why)).collect();
    assert_eq!(
        why,
        [
            "the nemesis had not reached it when the workload ended (the workload ended at 10000 ms)",
            "no client entered its critical section after it fell due (the workload ended at 10000 ms)",
            "it waited behind an earlier step that never fired (the workload ended at 10000 ms)",
        ],
        "{:?}",
        n.not_applied()
    );

    // A random step waits while the random fault before it is still on (healed late), and
    // only then: timeline faults do not hold it back.
    let mut n = nemesis(dir.path(), vec![]);
    let on = |step| Active { injection: Injection { fault: Fault::Pause(Pause {}), target: "client-2".into() }, heal_at_ms: 600, step };
    n.active = vec![on(step(100, "nemesis.timeline[0]", Target::Client(2), None))];
    assert!(!n.behind_a_random_fault(&random(500)));
    n.active.push(on(random(100)));
    assert!(n.behind_a_random_fault(&random(500)));
    assert!(!n.behind_a_random_fault(&step(500, "nemesis.timeline[0]", Target::Client(2), None)));

    // A random stream none of whose steps took effect claims nothing it did.
    let mut n = nemesis(dir.path(), vec![random(500), random(9990)]);
    n.drop_unfired(10_000).unwrap();
    assert_eq!(n.not_applied().len(), 2, "{:?}", n.not_applied());
}
