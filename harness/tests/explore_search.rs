//! The search itself, against a fake runner whose failures are known (no containers): the
//! candidate sequence is determined by the seed, scenario and strategy; a failure is found,
//! shrunk to its one episode, written as a scenario that loads, confirmed, and laid out in
//! explore.json; a campaign merged from shards keeps each finding once.

use harness::events::EventSink;
use harness::explore::observe::{EpisodeSeen, Failure, Observation, Pattern};
use harness::explore::runner::{RunSeen, Runner};
use harness::explore::shrink::ShrinkOptions;
use harness::explore::strategy::Slice;
use harness::explore::{self, Budget, ExploreOptions};
use harness::scenario::{Expectation, LoadedScenario};
use harness::scenario_catalog;
use harness::target::Target;
use results::explore::{FailureKind, Property, Strategy};
use std::sync::Mutex;

/// A lock that loses an update whenever its holder is paused for its TTL or more, in the
/// episode that does it; and shows a behaviour for every fault longer than its TTL.
struct FakeLock {
    ttl_ms: u64,
    /// Every schedule run, as TOML.
    schedules: Mutex<Vec<String>>,
}

impl FakeLock {
    fn new() -> Self {
        FakeLock { ttl_ms: 2000, schedules: Mutex::new(vec![]) }
    }
    fn schedules(&self) -> Vec<String> {
        self.schedules.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl Runner for FakeLock {
    async fn run(&self, s: LoadedScenario, _seed: u64) -> RunSeen {
        let episodes = &s.scenario.nemesis.episode;
        self.schedules.lock().unwrap().push(toml::to_string(&s.scenario.nemesis).unwrap());
        let breaks =
            |e: &harness::scenario::Episode| e.fault.name() == "pause" && e.target == [Target::Holder] && e.duration_ms >= self.ttl_ms;
        let failing = episodes.iter().position(breaks);
        let seen = episodes
            .iter()
            .map(|e| EpisodeSeen {
                fired: true,
                skipped: None,
                patterns: if e.duration_ms > self.ttl_ms { [Pattern::AcquireRefused].into() } else { Default::default() },
            })
            .collect();
        let failure = failing.map(|i| Failure { property: Property::ResourceSafety, episode: Some(i as u32), at_ns: 0 });
        let matches = Some(failure.is_some() == (s.scenario.expect == Expectation::Violation));
        let observation = Observation {
            untrusted: None,
            failure,
            episodes: seen,
            story: vec!["the fake lock lost an update\u{1b}[31m (a client's own words, control characters and all)".into()],
        };
        RunSeen { observation, dir: None, interrupted: false, error: None, matches }
    }
}

fn opts(store: &std::path::Path, strategy: Strategy, seed: u64, runs: u64) -> ExploreOptions {
    ExploreOptions {
        strategy,
        seed,
        budget: Budget::Runs(runs),
        store: store.to_path_buf(),
        jobs: 1,
        slice: Slice::WHOLE,
        confirm: 3,
        shrink: ShrinkOptions { k: 2, n: 3, max_runs: 30 },
        max_findings: None,
    }
}

fn base() -> LoadedScenario {
    scenario_catalog::resolve("redis-single-baseline").unwrap()
}

async fn campaign(strategy: Strategy, seed: u64, runs: u64) -> (Vec<String>, explore::Campaign) {
    let store = tempfile::tempdir().unwrap();
    let lock = FakeLock::new();
    let c = explore::explore(base(), opts(store.path(), strategy, seed, runs), &lock, &EventSink::none()).await.unwrap();
    std::mem::forget(store);
    (lock.schedules(), c)
}

#[tokio::test]
async fn same_seed_same_scenario_same_strategy_same_candidates_and_another_seed_others() {
    for strategy in [Strategy::Guided, Strategy::Random] {
        let (a, _) = campaign(strategy, 7, 12).await;
        let (b, _) = campaign(strategy, 7, 12).await;
        let (c, _) = campaign(strategy, 8, 12).await;
        assert!(a.len() >= 12, "{strategy}: {}", a.len());
        assert_eq!(a, b, "{strategy}: the same seed gave other schedules");
        assert_ne!(a, c, "{strategy}: another seed gave the same schedules");
    }
    // Runs side by side: a batch is chosen before its runs are seen, so the same --jobs gives
    // the same schedules too.
    let two = |seed| async move {
        let store = tempfile::tempdir().unwrap();
        let lock = FakeLock::new();
        let mut o = opts(store.path(), Strategy::Guided, seed, 12);
        o.jobs = 2;
        explore::explore(base(), o, &lock, &EventSink::none()).await.unwrap();
        lock.schedules()
    };
    assert_eq!(two(7).await, two(7).await);
}

#[tokio::test]
async fn a_failure_is_found_shrunk_to_its_episode_written_as_a_scenario_and_confirmed() {
    let (schedules, c) = campaign(Strategy::Guided, 3, 6).await;
    assert_eq!(c.exit_code(), 1);
    let r = &c.results;
    assert_eq!(r.found.len(), 1, "one kind of failure, found once: {:?}", r.found);
    let f = &r.found[0];
    assert_eq!((f.kind, f.property), (FailureKind::Safety, Property::ResourceSafety));
    assert!(f.runs_to_find <= 3, "the first pass pauses the holder past its lease early: {}", f.runs_to_find);
    assert_eq!(f.schedule.len(), 1, "{:?}", f.schedule);
    assert!(f.schedule[0].starts_with("pause holder for 2500 ms"), "the shortest failing duration of the space: {:?}", f.schedule);
    assert_eq!(f.reproduced, "3/3");
    assert!(f.shrink_steps >= 1 && r.shrink_runs == f.shrink_runs && r.confirm_runs == 3);
    // Search runs, shrinking runs and confirmation runs, in that order, all through the runner.
    assert_eq!(schedules.len() as u64, r.runs + r.shrink_runs + r.confirm_runs);

    let found = scenario_catalog::load(&c.dir.join(&f.scenario)).unwrap();
    let s = &found.scenario;
    assert_eq!(s.expect, Expectation::Violation);
    assert_eq!(s.nemesis.episode.len(), 1);
    assert_eq!((s.nemesis.episode[0].fault.name(), &s.nemesis.episode[0].target[..]), ("pause", &[Target::Holder][..]));
    assert!(s.nemesis.timeline.is_empty() && s.nemesis.random.is_none());
    assert!(found.text.starts_with("# Found by `lockchaos explore"), "{}", found.text);
    assert!(found.text.contains("# What happened:\n#   the fake lock lost an update [31m"), "control characters blanked: {}", found.text);

    let json: results::explore::ExploreResults = serde_json::from_slice(&std::fs::read(c.dir.join("explore.json")).unwrap()).unwrap();
    assert_eq!(&json, r);
    assert_eq!((json.seed, json.strategy, json.runs), (3, Strategy::Guided, 6));
    assert!(json.elapsed_s > 0.0 && !json.behaviours.is_empty());
    let html = std::fs::read_to_string(c.dir.join("explore.html")).unwrap();
    assert!(html.contains("found-1.toml") && html.contains("3/3"));
}

#[tokio::test]
async fn nothing_found_exits_0_and_shards_search_apart_and_merge_into_one_page() {
    struct Safe;
    #[async_trait::async_trait]
    impl Runner for Safe {
        async fn run(&self, s: LoadedScenario, _: u64) -> RunSeen {
            let episodes = s.scenario.nemesis.episode.iter().map(|_| EpisodeSeen { fired: true, ..Default::default() }).collect();
            RunSeen { observation: Observation { episodes, ..Default::default() }, matches: Some(true), ..Default::default() }
        }
    }
    let store = tempfile::tempdir().unwrap();
    let c = explore::explore(base(), opts(store.path(), Strategy::Guided, 1, 3), &Safe, &EventSink::none()).await.unwrap();
    assert_eq!((c.exit_code(), c.results.found.len()), (0, 0));

    // Two shards of one campaign: each its own slice, each finding the failure. Merged with a
    // third store holding the first shard's campaign again: each distinct finding once.
    let stores = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let mut firsts = vec![];
    let mut schedules = std::collections::BTreeSet::new();
    for (i, store) in stores.iter().enumerate() {
        let lock = FakeLock::new();
        let mut o = opts(store.path(), Strategy::Guided, 5, 8);
        o.slice = Slice { index: i as u64 + 1, count: 2 };
        let c = explore::explore(base(), o, &lock, &EventSink::none()).await.unwrap();
        assert_eq!(c.results.shard.as_deref(), Some(format!("{}/2", i + 1).as_str()));
        assert_eq!(c.results.found.len(), 1);
        schedules.insert(c.results.found[0].schedule.clone());
        firsts.push(lock.schedules()[1].clone());
    }
    assert_ne!(firsts[0], firsts[1], "the shards try different schedules");
    let again = tempfile::tempdir().unwrap();
    let copy = again.path().join("explore");
    std::fs::create_dir_all(&copy).unwrap();
    let first = std::fs::read_dir(stores[0].path().join("explore")).unwrap().next().unwrap().unwrap().path();
    std::fs::create_dir_all(copy.join("again")).unwrap();
    for f in std::fs::read_dir(&first).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, copy.join("again").join(f.file_name().unwrap())).unwrap();
    }
    let out = tempfile::tempdir().unwrap();
    let all = [stores[0].path().to_path_buf(), stores[1].path().to_path_buf(), again.path().to_path_buf()];
    let merged = explore::merge::merge(&all, out.path()).unwrap();
    assert_eq!((merged.campaigns.len(), merged.found.len()), (3, schedules.len()));
    assert_eq!(merged.found.iter().map(|m| m.also_in.len()).sum::<usize>(), 3 - schedules.len(), "the repeats are named, not listed again");
    let html = std::fs::read_to_string(out.path().join("explore.html")).unwrap();
    assert!(html.contains(&format!("{}found-1.toml", merged.found[0].folder)), "{html}");
}

#[tokio::test]
async fn a_shrunk_schedule_that_reproduces_too_rarely_steps_back_to_a_reliable_one() {
    /// Fails for a holder paused 3000 ms or more; a shorter pause past the TTL fails only the
    /// first time it is tried (a lucky race), which a 1-of-1 shrink keeps.
    struct Lucky {
        tried: Mutex<std::collections::HashSet<u64>>,
    }
    #[async_trait::async_trait]
    impl Runner for Lucky {
        async fn run(&self, s: LoadedScenario, _: u64) -> RunSeen {
            let episodes = &s.scenario.nemesis.episode;
            let failing = episodes.iter().position(|e| {
                let holder_paused = e.fault.name() == "pause" && e.target == [Target::Holder];
                holder_paused && (e.duration_ms >= 3000 || (e.duration_ms >= 2000 && self.tried.lock().unwrap().insert(e.duration_ms)))
            });
            let seen = episodes.iter().map(|_| EpisodeSeen { fired: true, ..Default::default() }).collect();
            let failure = failing.map(|i| Failure { property: Property::ResourceSafety, episode: Some(i as u32), at_ns: 0 });
            let matches = Some(failure.is_some() == (s.scenario.expect == Expectation::Violation));
            RunSeen { observation: Observation { failure, episodes: seen, ..Default::default() }, matches, ..Default::default() }
        }
    }
    let store = tempfile::tempdir().unwrap();
    let mut o = opts(store.path(), Strategy::Guided, 3, 6);
    o.shrink = ShrinkOptions { k: 1, n: 1, max_runs: 30 };
    o.confirm = 10;
    o.max_findings = Some(1);
    let lucky = Lucky { tried: Mutex::new(Default::default()) };
    let c = explore::explore(base(), o, &lucky, &EventSink::none()).await.unwrap();
    let f = &c.results.found[0];
    assert_eq!(f.reproduced, "10/10", "{f:?}");
    assert!(f.schedule[0].starts_with("pause holder for 3000 ms"), "stepped back from the lucky 2500 ms: {f:?}");
    assert_eq!(c.results.confirm_runs, 20, "the lucky one's ten, then the reliable one's");
    let written = scenario_catalog::load(&c.dir.join(&f.scenario)).unwrap();
    assert_eq!(written.scenario.nemesis.episode[0].duration_ms, 3000);
}

#[tokio::test]
async fn runs_that_keep_ending_in_an_error_stop_the_campaign_with_exit_2() {
    struct Broken(Mutex<u32>);
    #[async_trait::async_trait]
    impl Runner for Broken {
        async fn run(&self, _: LoadedScenario, _: u64) -> RunSeen {
            *self.0.lock().unwrap() += 1;
            let error = "cannot connect to the Docker daemon".to_string();
            RunSeen {
                observation: Observation { untrusted: Some(error.clone()), ..Default::default() },
                error: Some(error),
                ..Default::default()
            }
        }
    }
    let store = tempfile::tempdir().unwrap();
    let broken = Broken(Mutex::new(0));
    let c = explore::explore(base(), opts(store.path(), Strategy::Guided, 1, 50), &broken, &EventSink::none()).await.unwrap();
    assert_eq!(*broken.0.lock().unwrap(), 3, "stopped after three errors in a row");
    assert_eq!(c.exit_code(), 2);
    assert!(c.results.error.as_deref().unwrap().contains("cannot connect to the Docker daemon"), "{:?}", c.results.error);
    let html = std::fs::read_to_string(c.dir.join("explore.html")).unwrap();
    assert!(html.contains("Stopped by an error") && html.contains("Nothing in 0 search runs that counted"), "{html}");
}
