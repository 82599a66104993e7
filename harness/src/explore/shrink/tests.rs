//! The shrinker against fake trials whose failures are known.

use super::*;
use crate::explore::candidate::{Candidate, EpisodePlan};
use crate::explore::space::Space;
use crate::scenario::Trigger;

/// A fake lock: it fails (lost update) when some episode pauses the holder (action 0) for at
/// least `threshold` ms; `flaky`: then only every other time it is tried.
struct Fake<'a> {
    space: &'a Space,
    threshold: u64,
    flaky: bool,
    tries: u64,
}

#[async_trait::async_trait]
impl Trial for Fake<'_> {
    async fn attempt(&mut self, choices: &[u64]) -> Attempt {
        self.tries += 1;
        let c = self.space.decode(choices);
        let breaks = c.episodes.iter().position(|e| e.action == 0 && e.duration_ms >= self.threshold);
        if breaks.is_some() && (!self.flaky || self.tries.is_multiple_of(2)) {
            Attempt::Failed { property: Property::ResourceSafety, episode: breaks, run: Some(format!("run-{}", self.tries)) }
        } else {
            Attempt::Passed
        }
    }
}

fn space() -> Space {
    Space::of(&crate::scenario_catalog::resolve("redis-single-baseline").unwrap()).unwrap()
}

fn found(space: &Space) -> Vec<u64> {
    let plan = |action, trigger, duration_ms| EpisodePlan { action, trigger, after_trigger_ms: 700, duration_ms };
    let c = Candidate {
        clients: 3,
        work_ms: None,
        episodes: vec![plan(2, Some(Trigger::Acquired), 2500), plan(0, Some(Trigger::ReleaseSent), 6000), plan(4, None, 3000)],
    };
    space.encode(&c)
}

const OPTS: ShrinkOptions = ShrinkOptions { k: 2, n: 3, max_runs: 200 };

#[tokio::test]
async fn shrinks_to_the_failing_episode_with_the_shortest_duration_and_earliest_trigger_that_still_fail() {
    let space = space();
    let mut fake = Fake { space: &space, threshold: 2000, flaky: false, tries: 0 };
    let s = shrink(&space, &mut fake, found(&space), Property::ResourceSafety, Some(1), None, OPTS).await;
    let c = space.decode(&s.choices);
    assert_eq!(c.episodes.len(), 1, "{c:?}");
    let e = &c.episodes[0];
    assert_eq!(e.action, 0);
    assert_eq!(e.after_trigger_ms, 0);
    assert_eq!(e.trigger, Some(Trigger::Waiting), "the earliest trigger a holder target takes (none reads as in-section)");
    // The durations at or above 2000 ms the space offers; the smallest is kept.
    let smallest = space.durations.iter().copied().filter(|d| *d >= 2000).min().unwrap();
    assert!(e.duration_ms >= 2000 && e.duration_ms <= smallest.max(3000), "{} (smallest failing {smallest})", e.duration_ms);
    assert_eq!(c.clients, 2, "fewer clients still fail");
    assert!(s.steps >= 3 && s.runs <= OPTS.max_runs && s.run.is_some(), "{s:?}");
}

#[tokio::test]
async fn a_flaky_failure_still_shrinks_and_nothing_that_never_fails_is_kept() {
    let space = space();
    let mut fake = Fake { space: &space, threshold: 2000, flaky: true, tries: 0 };
    let s = shrink(&space, &mut fake, found(&space), Property::ResourceSafety, Some(1), None, OPTS).await;
    let c = space.decode(&s.choices);
    assert!(c.episodes.len() < 3, "something was dropped: {c:?}");
    assert!(c.episodes.iter().any(|e| e.action == 0 && e.duration_ms >= 2000), "whatever was kept still fails: {c:?}");
}

#[tokio::test]
async fn another_propertys_failure_is_not_the_same_failure_and_the_budget_holds() {
    struct Other;
    #[async_trait::async_trait]
    impl Trial for Other {
        async fn attempt(&mut self, _: &[u64]) -> Attempt {
            Attempt::Failed { property: Property::Stuck, episode: None, run: None }
        }
    }
    let space = space();
    let start = found(&space);
    let opts = ShrinkOptions { k: 2, n: 3, max_runs: 7 };
    let s = shrink(&space, &mut Other, start.clone(), Property::ResourceSafety, Some(1), None, opts).await;
    let cut = space.decode(&s.choices);
    assert_eq!((cut.episodes.len(), s.steps), (2, 0), "the original up to its failing episode, nothing smaller: {cut:?}");
    assert_eq!(cut.episodes[..], space.decode(&start).episodes[..2]);
    assert_eq!(s.runs, 7, "stopped at the budget");
}

#[tokio::test]
async fn an_interruption_stops_with_what_is_shrunk_so_far() {
    struct Stop(u32);
    #[async_trait::async_trait]
    impl Trial for Stop {
        async fn attempt(&mut self, _: &[u64]) -> Attempt {
            self.0 += 1;
            if self.0 > 2 {
                Attempt::Interrupted
            } else {
                Attempt::Failed { property: Property::ResourceSafety, episode: None, run: None }
            }
        }
    }
    let space = space();
    let s = shrink(&space, &mut Stop(0), found(&space), Property::ResourceSafety, Some(1), None, OPTS).await;
    assert!(s.interrupted);
    assert_eq!(space.decode(&s.choices).episodes.len(), 1, "the step kept before the interruption stays");
}

#[tokio::test]
async fn a_failure_that_needs_no_fault_shrinks_to_no_fault() {
    struct Always;
    #[async_trait::async_trait]
    impl Trial for Always {
        async fn attempt(&mut self, _: &[u64]) -> Attempt {
            Attempt::Failed { property: Property::ResourceSafety, episode: None, run: None }
        }
    }
    let space = space();
    let s = shrink(&space, &mut Always, found(&space), Property::ResourceSafety, Some(1), None, OPTS).await;
    let c = space.decode(&s.choices);
    assert_eq!((c.episodes.len(), c.clients, c.work_ms), (0, 2, Some(0)), "{c:?}");
}

#[tokio::test]
async fn what_came_after_the_failing_episode_is_cut_without_a_run() {
    // A lock that sticks in episode 1 only after episode 0 (neither alone does): episode 2 was
    // never reached, and a found scenario holding it would end `unknown`.
    struct NeedsTwo<'a> {
        space: &'a Space,
        most_episodes_tried: usize,
    }
    #[async_trait::async_trait]
    impl Trial for NeedsTwo<'_> {
        async fn attempt(&mut self, choices: &[u64]) -> Attempt {
            let n = self.space.decode(choices).episodes.len();
            self.most_episodes_tried = self.most_episodes_tried.max(n);
            if n >= 2 {
                Attempt::Failed { property: Property::Stuck, episode: Some(1), run: None }
            } else {
                Attempt::Passed
            }
        }
    }
    let space = space();
    let mut trial = NeedsTwo { space: &space, most_episodes_tried: 0 };
    let s = shrink(&space, &mut trial, found(&space), Property::Stuck, Some(1), None, OPTS).await;
    assert_eq!(space.decode(&s.choices).episodes.len(), 2, "{:?}", space.decode(&s.choices));
    assert_eq!(space.decode(&s.trail[0].0).episodes.len(), 2, "the original, cut");
    assert!(trial.most_episodes_tried <= 2, "no run of the uncut schedule: {}", trial.most_episodes_tried);

    // A smaller schedule kept because it failed in an earlier episode loses what follows it.
    struct FailsFirst;
    #[async_trait::async_trait]
    impl Trial for FailsFirst {
        async fn attempt(&mut self, _: &[u64]) -> Attempt {
            Attempt::Failed { property: Property::Stuck, episode: Some(0), run: None }
        }
    }
    let start = space.normalize(&found(&space));
    let best = Shrunk { choices: start.clone(), run: None, steps: 0, runs: 0, interrupted: false, trail: vec![] };
    let mut shrinker = Shrinker { shape: &space, trial: &mut FailsFirst, property: Property::Stuck, opts: OPTS, best };
    let mut lower = start.clone();
    lower[1] = 0; // less work
    assert!(shrinker.try_keep(lower).await);
    let kept = space.decode(&shrinker.best.choices);
    assert_eq!((kept.episodes.len(), kept.work_ms), (1, Some(0)), "{kept:?}");
}
