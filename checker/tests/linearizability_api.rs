//! The linearizability API: model names, the result's JSON shape, and the limits (timeout,
//! memo budget, threads) that turn an expensive search into `unknown` instead of a hang or
//! an out-of-memory.

#[path = "linearizability_gen.rs"]
mod gen;

use checker::linearizability::{check, check_with, Linearizability, ModelKind, Options};
use checker::{Event, EventType, Verdict};
use gen::{generate, Gen, GenModel};
use serde_json::json;
use std::time::{Duration, Instant};

#[test]
fn model_names_parse_and_print() {
    for kind in ModelKind::ALL {
        assert_eq!(kind.as_str().parse::<ModelKind>(), Ok(kind));
        assert_eq!(serde_json::to_value(kind).unwrap(), json!(kind.to_string()));
    }
    assert_eq!("cas-register".parse::<ModelKind>(), Ok(ModelKind::CasRegister));
    let err = "queue".parse::<ModelKind>().unwrap_err();
    assert!(err.contains("\"queue\"") && err.contains("cas-register"), "{err}");
}

/// A single-key cas-register history whose search must explore a lot before failing (its
/// anomaly, a read of a value never written, is one a rule proves at once: the limits are
/// tested on the search alone, `Options::rules` off).
fn expensive_invalid_history() -> Vec<Event> {
    let mut g = Gen::new(GenModel::CasRegister, 10, 300);
    g.values = 5;
    g.info = 0.06;
    let mut events = generate(&g, 3);
    let last_read = events.iter().rposition(|e| e.kind == EventType::Ok && e.f == "read").unwrap();
    events[last_read].value = json!(99);
    events
}

#[test]
fn result_round_trips_through_json() {
    let r = check(&expensive_invalid_history(), ModelKind::CasRegister, Duration::from_secs(60)).unwrap();
    assert_eq!(r.verdict, Verdict::Invalid);
    let text = serde_json::to_string(&r).unwrap();
    let back: Linearizability = serde_json::from_str(&text).unwrap();
    assert_eq!(back, r);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["verdict"], "invalid");
    assert_eq!(v["model"], "cas-register");
    assert!(v["failures"][0]["longest_prefix"].is_array());
}

#[test]
fn timeout_gives_unknown_promptly() {
    let events = expensive_invalid_history();
    let start = Instant::now();
    let mut opts = Options::new(Duration::ZERO);
    opts.rules = false;
    let r = check_with(&events, ModelKind::CasRegister, &opts).unwrap();
    assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
    assert_eq!(r.verdict, Verdict::Unknown, "{r:?}");
    assert_eq!(r.timed_out_partitions, ["k0"]);
    assert!(r.failures.is_empty());
    assert!(r.notes.iter().any(|n| n.contains("timeout")), "{:?}", r.notes);
}

#[test]
fn memo_budget_gives_unknown() {
    let mut opts = Options::new(Duration::from_secs(60));
    opts.max_memo_bytes = 64 << 10;
    opts.rules = false;
    let r = check_with(&expensive_invalid_history(), ModelKind::CasRegister, &opts).unwrap();
    assert_eq!(r.verdict, Verdict::Unknown, "{r:?}");
    assert_eq!(r.timed_out_partitions, ["k0"]);
    assert!(r.notes.iter().any(|n| n.contains("memo cache limit")), "{:?}", r.notes);
}

#[test]
fn parallel_partitions_give_the_same_result_as_one_thread() {
    let mut g = Gen::new(GenModel::Kv, 12, 400);
    g.keys = 8;
    g.info = 0.05;
    g.corrupt = 0.01;
    for seed in 0..10 {
        let events = generate(&g, seed);
        let mut one = Options::new(Duration::from_secs(60));
        one.threads = 1;
        let mut four = one.clone();
        four.threads = 4;
        let a = check_with(&events, ModelKind::Kv, &one).unwrap();
        let b = check_with(&events, ModelKind::Kv, &four).unwrap();
        assert_eq!(a, b, "seed {seed}");
        assert_eq!(a.partitions, 8);
    }
}
