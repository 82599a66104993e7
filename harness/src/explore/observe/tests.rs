//! What a run shows the search, on hand-made histories checked by the real checker.

use super::*;
use checker::{check, CheckOptions};
use results::{Expectation, Outcome};

struct H(Vec<Event>);

impl H {
    fn op(&mut self, ms: u64, p: u64, kind: EventType, f: &str) -> &mut Self {
        self.0.push(Event::new(ms * 1_000_000, Process::Client(p), kind, f));
        self
    }
    fn call(&mut self, p: u64, f: &str, from: u64, to: u64, kind: EventType) -> &mut Self {
        self.op(from, p, EventType::Invoke, f).op(to, p, kind, f)
    }
    fn fault(&mut self, ms: u64, episode: u32, phase: FaultPhase, error: Option<&str>) -> &mut Self {
        let mut e = Event::new(ms * 1_000_000, Process::Named(Process::NEMESIS.into()), EventType::Info, "partition");
        e.node = Some("client-1".into());
        e.value = phase.into();
        e.episode = Some(episode);
        e.error = error.map(str::to_string);
        self.0.push(e);
        self
    }
    fn results(&mut self) -> (RunResults, Vec<Event>) {
        self.0.sort_by_key(|e| e.time);
        for (i, e) in self.0.iter_mut().enumerate() {
            e.index = i as u64;
        }
        let properties = check(&self.0, &CheckOptions::default());
        let results = RunResults {
            scenario: "s".into(),
            description: "d".into(),
            expect: Expectation::Safe,
            outcome: Outcome::of_verdict(properties.outcome),
            matches_expectation: false,
            run_id: "r".into(),
            backend: "redis-single".into(),
            seed: 1,
            clients: 2,
            time_limit_secs: 30,
            started_at: "t".into(),
            duration_secs: 30.0,
            interrupted: false,
            workers: vec![],
            warnings: vec![],
            not_applied: vec![],
            refused_requests: Default::default(),
            unknown_cause: None,
            properties,
            claims: vec![],
        };
        (results, self.0.clone())
    }
}

/// Client 1's release fails inside episode 0's cut (1-3 s); nobody is granted the lock after.
fn stuck_after_a_cut() -> H {
    let mut h = H(vec![]);
    h.call(1, "acquire", 0, 10, EventType::Ok).fault(1000, 0, FaultPhase::Start, None).call(1, "release", 1500, 1510, EventType::Info);
    h.fault(3000, 0, FaultPhase::Stop, None);
    for t in (50..20_000).step_by(500) {
        h.call(2, "acquire", t, t + 400, EventType::Fail);
    }
    h
}

#[test]
fn a_stuck_lock_is_laid_at_the_episode_it_began_in_and_a_later_episode_not_reached_does_not_matter() {
    let mut h = stuck_after_a_cut();
    h.fault(19_000, 1, FaultPhase::Skipped, Some("not reached: nobody was granted the lock"));
    let (results, events) = h.results();
    let seen = observe(&results, &events, 2, 2000, None);
    let f = seen.finding().expect("stuck, vouched for");
    assert_eq!((f.property, f.episode, f.at_ns), (Property::Stuck, Some(0), 3_000_000_000));
    assert!(seen.episodes[0].fired && !seen.episodes[1].fired);
    assert!(
        seen.episodes[0].patterns.contains(&Pattern::ReleaseUnknown) && seen.episodes[0].patterns.contains(&Pattern::Stuck),
        "{seen:?}"
    );
    assert!(seen.story.iter().any(|l| l.contains("partition on client-1") && l.contains("healed")), "{:?}", seen.story);
}

#[test]
fn a_failure_after_a_fault_that_did_not_take_effect_is_not_vouched_for() {
    let mut h = H(vec![]);
    h.fault(500, 0, FaultPhase::Start, Some("docker exec failed"));
    let mut rest = stuck_after_a_cut();
    for e in &mut rest.0 {
        if e.episode == Some(0) {
            e.episode = Some(1);
        }
    }
    h.0.extend(rest.0);
    let (results, events) = h.results();
    let seen = observe(&results, &events, 2, 2000, None);
    assert_eq!(seen.failure.as_ref().map(|f| f.episode), Some(Some(1)));
    assert!(seen.finding().is_none());
    assert!(seen.untrusted.unwrap().contains("nemesis.episode[0] did not take effect: its injection failed: docker exec failed"));
    // An interrupted run or an error vouches for nothing.
    let (mut results, events) = stuck_after_a_cut().results();
    assert!(observe(&results, &events, 1, 2000, Some("client-2 died")).finding().is_none());
    results.interrupted = true;
    assert!(observe(&results, &events, 1, 2000, None).finding().is_none());
}

#[test]
fn a_failure_before_any_fault_is_the_baselines_and_a_calm_run_has_none() {
    let mut h = H(vec![]);
    for t in (0..20_000).step_by(500) {
        h.call(2, "acquire", t, t + 400, EventType::Fail);
    }
    let (results, events) = h.results();
    let seen = observe(&results, &events, 0, 2000, None);
    assert_eq!(seen.finding().map(|f| (f.property, f.episode)), Some((Property::Stuck, None)));

    let mut calm = H(vec![]);
    for (i, t) in (0..10_000).step_by(200).enumerate() {
        let p = 1 + (i % 2) as u64;
        calm.call(p, "acquire", t, t + 5, EventType::Ok).call(p, "release", t + 100, t + 105, EventType::Ok);
    }
    let (results, events) = calm.results();
    assert_eq!(observe(&results, &events, 0, 2000, None), Observation::default());
}

#[test]
fn an_episode_one_of_whose_faults_failed_or_did_not_take_effect_did_not_fire() {
    // Two targets, one start failed: the episode did not take effect as written.
    let mut h = stuck_after_a_cut();
    h.fault(1001, 0, FaultPhase::Start, Some("no such container"));
    let (results, events) = h.results();
    let seen = observe(&results, &events, 1, 2000, None);
    assert!(!seen.episodes[0].fired && seen.finding().is_none(), "{seen:?}");
    // Its heal found it never took effect (a clock slew that did not run fast).
    let (mut results, events) = stuck_after_a_cut().results();
    results.not_applied = vec!["nemesis.episode[0] (clock-slew on n1, due at 0 ms) did not take effect: gained +0.2 ms".into()];
    let seen = observe(&results, &events, 1, 2000, None);
    assert!(seen.untrusted.unwrap().contains("gained +0.2 ms"));
}
