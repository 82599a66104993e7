//! Property tests on histories of a real (simulated) atomic register and kv store, with
//! random concurrency around each operation's true linearization point:
//! - such a history is always linearizable;
//! - changing one read's value to one it cannot have seen is always caught, and the evidence
//!   names that read as unplaceable: either a value never written, or the value of a write
//!   that started only after the read returned (written values are unique).

#[path = "linearizability_gen.rs"]
mod gen;

use checker::linearizability::{check, Linearizability, ModelKind};
use checker::{Event, EventType, Verdict};
use gen::{generate, Gen, GenModel};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;

const CASES: u64 = 1000;

fn shape(model: GenModel, seed: u64) -> Gen {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
    let mut g = Gen::new(model, rng.random_range(2..=10), rng.random_range(5..=60));
    g.keys = rng.random_range(1..=3);
    g.info = [0.0, 0.05, 0.15][rng.random_range(0..3)];
    g.fail = 0.05;
    g
}

fn run(model: GenModel, events: &[Event]) -> Linearizability {
    let kind = match model {
        GenModel::Register => ModelKind::Register,
        GenModel::CasRegister => ModelKind::CasRegister,
        GenModel::Kv => ModelKind::Kv,
    };
    check(events, kind, Duration::from_secs(30)).expect("well-formed")
}

/// Position of the invoke each completion closes.
fn invoke_of(events: &[Event]) -> HashMap<usize, usize> {
    let mut open = HashMap::new();
    let mut pairs = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        let p = e.process.client().unwrap();
        if e.kind == EventType::Invoke {
            open.insert(p, i);
        } else if let Some(call) = open.remove(&p) {
            pairs.insert(i, call);
        }
    }
    pairs
}

fn is_read(e: &Event) -> bool {
    matches!(e.f.as_str(), "read" | "get")
}

/// Rewrites one ok read (chosen by `rng`) to an impossible value; returns its invoke index.
fn corrupt_one_read(events: &mut [Event], rng: &mut StdRng) -> Option<u64> {
    let reads: Vec<usize> = (0..events.len()).filter(|&i| events[i].kind == EventType::Ok && is_read(&events[i])).collect();
    let &at = reads.get(rng.random_range(0..reads.len().max(1)))?;
    let key = events[at].key.clone();
    // A write (put) invoked after the read returned: its unique value is from the future.
    let future: Vec<Value> = events[at..]
        .iter()
        .filter(|e| e.kind == EventType::Invoke && e.key == key)
        .filter(|e| matches!(e.f.as_str(), "write" | "put"))
        .map(|e| e.value.clone())
        .collect();
    events[at].value = if !future.is_empty() && rng.random_bool(0.5) {
        future[rng.random_range(0..future.len())].clone()
    } else if events[at].f == "get" {
        json!("never written")
    } else {
        json!(-1)
    };
    Some(events[invoke_of(events)[&at]].index)
}

fn properties(model: GenModel) {
    let mut caught = 0;
    for seed in 0..CASES {
        let g = shape(model, seed);
        let mut events = generate(&g, seed);
        let r = run(model, &events);
        assert_eq!(r.verdict, Verdict::Valid, "seed {seed} {g:?}: {r:?}");

        let mut rng = StdRng::seed_from_u64(seed);
        let Some(read) = corrupt_one_read(&mut events, &mut rng) else {
            continue;
        };
        let r = run(model, &events);
        assert_eq!(r.verdict, Verdict::Invalid, "seed {seed}, read {read}: {r:?}");
        assert_eq!(r.failures.len(), 1, "seed {seed}: one corrupted partition: {r:?}");
        assert!(r.failures[0].unplaceable.contains(&read), "seed {seed}: read {read} not named: {r:?}");
        caught += 1;
    }
    assert!(caught > CASES / 2, "only {caught} histories had a read to corrupt");
}

#[test]
fn register_histories_of_a_real_register() {
    properties(GenModel::Register);
}

#[test]
fn kv_histories_of_a_real_store() {
    properties(GenModel::Kv);
}

#[test]
fn cas_register_histories_of_a_real_register_are_valid() {
    for seed in 0..CASES {
        let g = shape(GenModel::CasRegister, seed);
        let r = run(GenModel::CasRegister, &generate(&g, seed));
        assert_eq!(r.verdict, Verdict::Valid, "seed {seed} {g:?}: {r:?}");
    }
}
