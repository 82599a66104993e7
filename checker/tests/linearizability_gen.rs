//! History generator shared by the linearizability tests (included with `#[path]`), and its
//! own sanity tests when built as a test target.
//!
//! It simulates a real atomic object: each operation is invoked, takes effect at one random
//! moment (its linearization point) against the true state, then completes. Other
//! processes' events interleave at random around that moment, so concurrency windows are
//! realistic and the history is linearizable by construction unless reads are corrupted.
#![allow(dead_code)]

use checker::{Event, EventType, Process};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::collections::HashMap;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum GenModel {
    Register,
    CasRegister,
    Kv,
}

#[derive(Clone, Debug)]
pub struct Gen {
    pub model: GenModel,
    pub processes: usize,
    pub ops: usize,
    pub keys: usize,
    /// Values are drawn from 0..values; 0 = every written value is fresh (unique).
    pub values: u64,
    /// Probability that an operation ends `info` (its process then never runs again; a
    /// fresh process id takes its place, as in Jepsen).
    pub info: f64,
    /// Probability that an operation fails before taking effect.
    pub fail: f64,
    /// Probability that an ok read reports a random value instead of the real one.
    pub corrupt: f64,
}

impl Gen {
    pub fn new(model: GenModel, processes: usize, ops: usize) -> Self {
        Gen { model, processes, ops, keys: 1, values: 0, info: 0.0, fail: 0.0, corrupt: 0.0 }
    }
}

struct Pending {
    f: &'static str,
    key: String,
    value: Value,
    /// Set at the linearization point: Ok(read value or Null) or Err(()) for a cas that
    /// found another value (completes `fail`).
    outcome: Option<Result<Value, ()>>,
}

struct Slot {
    process: u64,
    pending: Option<Pending>,
}

pub fn generate(g: &Gen, seed: u64) -> Vec<Event> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut state: HashMap<String, Value> = HashMap::new();
    let mut slots: Vec<Slot> = (1..=g.processes as u64).map(|process| Slot { process, pending: None }).collect();
    let mut next_process = g.processes as u64 + 1;
    let mut fresh = 0u64;
    let mut issued = 0;
    let mut events = Vec::new();
    loop {
        let live: Vec<usize> = (0..slots.len()).filter(|&s| slots[s].pending.is_some() || issued < g.ops).collect();
        if live.is_empty() {
            return events;
        }
        let s = live[rng.random_range(0..live.len())];
        let process = slots[s].process;
        let Some(mut p) = slots[s].pending.take() else {
            issued += 1;
            let p = new_op(g, &mut rng, &state, &mut fresh);
            push(&mut events, process, EventType::Invoke, p.f, &p.key, p.value.clone());
            slots[s].pending = Some(p);
            continue;
        };
        let roll: f64 = rng.random();
        match p.outcome.take() {
            None if roll < g.fail => {
                push(&mut events, process, EventType::Fail, p.f, &p.key, p.value.clone());
            }
            None if roll < g.fail + g.info / 2.0 => {
                // Crashed before taking effect.
                push(&mut events, process, EventType::Info, p.f, &p.key, p.value.clone());
                slots[s].process = next_process;
                next_process += 1;
            }
            None => {
                p.outcome = Some(apply(g.model, &mut state, &p));
                slots[s].pending = Some(p);
            }
            Some(_) if roll < g.info / 2.0 => {
                // Took effect, but the client never learned the outcome.
                push(&mut events, process, EventType::Info, p.f, &p.key, p.value.clone());
                slots[s].process = next_process;
                next_process += 1;
            }
            Some(Err(())) => push(&mut events, process, EventType::Fail, p.f, &p.key, p.value.clone()),
            Some(Ok(out)) => {
                let value = if matches!(p.f, "read" | "get") {
                    if rng.random::<f64>() < g.corrupt {
                        random_value(g, &mut rng, &mut fresh)
                    } else {
                        out
                    }
                } else {
                    p.value.clone()
                };
                push(&mut events, process, EventType::Ok, p.f, &p.key, value);
            }
        }
    }
}

fn new_op(g: &Gen, rng: &mut StdRng, state: &HashMap<String, Value>, fresh: &mut u64) -> Pending {
    let key = format!("k{}", rng.random_range(0..g.keys));
    let current = state.get(&key).cloned().unwrap_or(Value::Null);
    let roll = rng.random_range(0..4);
    let (f, value) = match (g.model, roll) {
        (GenModel::Kv, 0 | 1) => ("get", Value::Null),
        (GenModel::Kv, 2) => ("put", json!(format!("p{}", random_value(g, rng, fresh)))),
        (GenModel::Kv, _) => ("append", json!(format!("{},", random_value(g, rng, fresh)))),
        (_, 0 | 1) => ("read", Value::Null),
        (GenModel::CasRegister, 3) => {
            // Half the time the value it holds now, so some cas succeed.
            let from = if rng.random_bool(0.5) { current } else { random_value(g, rng, fresh) };
            ("cas", json!([from, random_value(g, rng, fresh)]))
        }
        _ => ("write", random_value(g, rng, fresh)),
    };
    Pending { f, key, value, outcome: None }
}

fn random_value(g: &Gen, rng: &mut StdRng, fresh: &mut u64) -> Value {
    if g.values == 0 {
        *fresh += 1;
        json!(*fresh)
    } else {
        json!(rng.random_range(0..g.values))
    }
}

fn apply(model: GenModel, state: &mut HashMap<String, Value>, p: &Pending) -> Result<Value, ()> {
    let cell = state.entry(p.key.clone()).or_insert(Value::Null);
    match (model, p.f) {
        (_, "read" | "get") => return Ok(cell.clone()),
        (_, "write" | "put") => *cell = p.value.clone(),
        (_, "cas") if *cell == p.value[0] => *cell = p.value[1].clone(),
        (_, "cas") => return Err(()),
        (_, "append") => {
            let s = cell.as_str().unwrap_or("").to_string();
            *cell = json!(s + p.value.as_str().expect("append string"));
        }
        _ => unreachable!("unknown f {}", p.f),
    }
    Ok(Value::Null)
}

fn push(events: &mut Vec<Event>, process: u64, kind: EventType, f: &str, key: &str, value: Value) {
    let index = events.len() as u64;
    let mut e = Event::new(index * 10, Process::Client(process), kind, f);
    e.index = index;
    e.key = Some(key.to_string());
    e.value = value;
    events.push(e);
}

/// Makes the last ok read return the value of an ok write that a later ok write overwrote
/// before the read began (values are fresh: nothing else wrote it).
pub fn stale_last_read(events: &mut [Event]) {
    let last = events.iter().rposition(|e| e.kind == EventType::Ok && e.f == "read").expect("a read");
    // (invoke position, ok position, value) of every ok write before the read.
    let mut writes = vec![];
    for (i, e) in events[..last].iter().enumerate() {
        if e.kind == EventType::Ok && e.f == "write" {
            let call = events[..i].iter().rposition(|c| c.kind == EventType::Invoke && c.process == e.process).expect("its invoke");
            writes.push((call, i, events[call].value.clone()));
        }
    }
    let read_call = events[..last].iter().rposition(|c| c.kind == EventType::Invoke && c.process == events[last].process).expect("invoke");
    let (_, _, stale) = writes
        .iter()
        .find(|(_, ret, _)| writes.iter().any(|(c2, r2, _)| c2 > ret && *r2 < read_call))
        .expect("a write overwritten before the read")
        .clone();
    events[last].value = stale;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_invoke_is_completed_at_most_once_and_ops_are_counted() {
        let mut g = Gen::new(GenModel::CasRegister, 4, 50);
        g.info = 0.2;
        g.fail = 0.1;
        let events = generate(&g, 7);
        let invokes = events.iter().filter(|e| e.kind == EventType::Invoke).count();
        assert_eq!(invokes, 50);
        let mut open: HashMap<u64, usize> = HashMap::new();
        for e in &events {
            let p = e.process.client().unwrap();
            if e.kind == EventType::Invoke {
                assert!(open.insert(p, 1).is_none(), "process {p} invoked twice");
            } else {
                assert!(open.remove(&p).is_some(), "completion without invoke");
            }
        }
        assert_eq!(generate(&g, 7), events, "same seed, same history");
    }
}
