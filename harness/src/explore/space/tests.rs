use super::*;
use crate::scenario_catalog;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn space_of(name: &str) -> (Space, LoadedScenario) {
    let base = scenario_catalog::resolve(name).unwrap();
    (Space::of(&base).unwrap(), base)
}

fn labels(space: &Space) -> Vec<&str> {
    space.actions.iter().map(|a| a.label.as_str()).collect()
}

#[test]
fn the_actions_are_what_the_backend_can_take() {
    let (redis, _) = space_of("redis-single-baseline");
    let l = labels(&redis);
    for want in
        ["pause holder", "pause waiter", "kill holder", "partition holder from n1", "partition-drop waiter from n1", "kill n1 (restart)"]
    {
        assert!(l.contains(&want), "{want}: {l:?}");
    }
    assert!(l.iter().any(|a| a.starts_with("clock-jump n1")), "Redis honours libfaketime: {l:?}");
    assert!(!l.iter().any(|a| a.contains("leader") || a.contains("kill-session") || a.contains("failover")), "{l:?}");

    let (etcd, _) = space_of("etcd-baseline");
    let l = labels(&etcd);
    assert!(
        l.contains(&"kill leader (restart)") && l.contains(&"partition isolate n1") && l.contains(&"kill n1-n2 (a majority) (restart)"),
        "{l:?}"
    );
    assert!(!l.iter().any(|a| a.starts_with("clock-")), "etcd ignores libfaketime: {l:?}");

    let (pg, _) = space_of("postgres-session-baseline");
    assert!(labels(&pg).contains(&"kill-session holder"), "{:?}", labels(&pg));
    assert!(!pg.clocks.iter().any(|c| c.name == "ttl"), "a session lock has no TTL");
}

#[test]
fn triggers_are_those_the_scenario_can_fire() {
    let (redis, _) = space_of("redis-single-baseline");
    assert_eq!(redis.triggers[0], None);
    assert!(redis.triggers.contains(&Some(Trigger::ReleaseSent)) && redis.triggers.contains(&Some(Trigger::Waiting)));
    assert!(!redis.triggers.contains(&Some(Trigger::RenewSent)), "no renewals");
    assert!(!redis.triggers.contains(&Some(Trigger::AfterCheck)), "no check before the write");
    let (partition, _) = space_of("redis-single-partition");
    assert!(partition.triggers.contains(&Some(Trigger::RenewSent)), "it renews");
}

#[test]
fn durations_straddle_the_locks_clocks() {
    let (redis, _) = space_of("redis-single-baseline");
    let ttl = redis.clocks.iter().find(|c| c.name == "ttl").unwrap().ms;
    assert!(redis.durations.contains(&(ttl / 2)) && redis.durations.contains(&(ttl * 3 / 2)) && redis.durations.contains(&(ttl * 3)));
    assert!(redis.durations.windows(2).all(|w| w[0] < w[1]), "{:?}", redis.durations);
}

#[test]
fn a_candidate_reads_back_from_its_choices_and_any_choices_read_as_a_candidate_that_loads() {
    let mut rng = StdRng::seed_from_u64(11);
    for name in ["redis-single-baseline", "etcd-baseline", "redlock-baseline", "postgres-session-baseline", "redis-py-lock-baseline"] {
        let (space, base) = space_of(name);
        for _ in 0..60 {
            let len = rng.random_range(0..30);
            let choices: Vec<u64> =
                (0..len).map(|_| if rng.random_bool(0.5) { rng.random_range(0..4) } else { rng.random_range(0..40_000) }).collect();
            let c = space.decode(&choices);
            assert_eq!(space.decode(&space.encode(&c)), c, "{name}: {choices:?}");
            c.load(&space, &base, "probe").unwrap_or_else(|e| panic!("{name}: {choices:?} -> {c:?}: {e}"));
        }
    }
}

#[test]
fn simpler_values_are_lower_and_deleting_an_episode_drops_exactly_it() {
    let (space, _) = space_of("redis-single-baseline");
    let plan = |action, duration_ms| EpisodePlan { action, trigger: Some(Trigger::InSection), after_trigger_ms: 300, duration_ms };
    let c = Candidate { clients: 3, work_ms: None, episodes: vec![plan(0, 3000), plan(2, 6000)] };
    let choices = space.encode(&c);
    let spans = space.episode_spans(&choices);
    assert_eq!(spans, [(2, 7), (7, 12)]);
    for i in 0..choices.len() {
        assert!(space.simpler(&choices, i).iter().all(|v| *v < choices[i]), "position {i}");
    }
    assert!(space.simpler(&choices, 3).is_empty(), "the action is not lowered");
    let mut without_first = choices.clone();
    without_first.drain(2..7);
    assert_eq!(space.decode(&without_first).episodes, vec![plan(2, 6000)]);
    assert_eq!(space.describe_episode(&plan(0, 3000)), "pause holder for 3000 ms, when in-section + 300 ms");
}
