//! The new-old inversion generator of issue #25 (included with `#[path]` by the tests that use
//! it, and its own sanity tests when built as a test target).
//!
//! A timed simulation of one cas-register (key "r", starting from nil) in integer ticks:
//! - phase 1: every client runs random reads, writes and cas on values 0–4 (each op lasts 2–20
//!   ticks and takes effect at one random instant inside them); a share `info` of the operations
//!   are indeterminate writes: the client gives up after `TIMEOUT` ticks without a completion
//!   (a fresh process takes its place, as in Jepsen), and the write takes effect with
//!   probability 1/2 at a random instant up to 4 × `TIMEOUT` after its call, possibly in phase 2;
//! - phase 2 (the last ~15 % of the operations): four clients run rounds of the pattern, one
//!   after another, while the others only read. A round: a write of a fresh X (taking effect at
//!   once, returning late), a write of a fresh Y called after X's call, taking effect after X's
//!   and returning before X's write returns, then a read R1 called after both returned, then a
//!   read R2 called after R1 returned.
//!
//! The valid twin reports what every read saw. The invalid one changes one R2 (of the last round
//! whose R1 saw Y) to report X: whatever the indeterminate writes did, no linearization fits, as
//! X is written once and returned before R1, which found Y, was called. Failed cas (that found
//! another value) complete `fail`.
#![allow(dead_code)]

use checker::{Event, EventType, Process};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Ticks after which a client gives up on an operation (an indeterminate write).
pub const TIMEOUT: u64 = 20;

#[derive(Clone, Copy, Debug)]
pub struct Inversion {
    /// Invocations (every one an operation; failed cas included).
    pub ops: usize,
    pub clients: usize,
    /// Share of phase-1 operations that are indeterminate writes.
    pub info: f64,
    /// The twin: every read reports what it saw (linearizable).
    pub valid: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Step {
    /// A client calls its next operation.
    Call(usize),
    /// Operation `op` takes effect.
    Effect(usize),
    /// Operation `op` completes (ok or fail).
    Done(usize),
    /// A client gives up on its indeterminate write.
    GiveUp(usize),
}

struct SimOp {
    process: u64,
    f: &'static str,
    value: Value,
    /// What it saw: the read value, or whether the cas found its `from`.
    saw: Option<Value>,
    cas_ok: bool,
    /// Position of its completion event, filled when it completes.
    done_at: Option<usize>,
}

/// A pattern round's operations (positions in the op list).
struct Round {
    x: u64,
    /// X's write (Y's is the next op).
    ox: usize,
    r1: Option<usize>,
    r2: Option<usize>,
    r1_saw_y: bool,
}

pub fn inversion(g: &Inversion, seed: u64) -> Vec<Event> {
    assert!(g.clients >= 5, "four pattern clients and at least one reader");
    let mut rng = StdRng::seed_from_u64(seed);
    let mut queue: BinaryHeap<Reverse<(u64, u64, Step)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut at = |queue: &mut BinaryHeap<Reverse<(u64, u64, Step)>>, t: u64, s: Step| {
        seq += 1;
        queue.push(Reverse((t, seq, s)));
    };
    let mut process: Vec<u64> = (1..=g.clients as u64).collect();
    let mut next_process = g.clients as u64 + 1;
    let mut ops: Vec<SimOp> = Vec::new();
    let mut events: Vec<Event> = Vec::new();
    let mut state = Value::Null;
    let phase2_from = g.ops - (g.ops * 15 / 100).max(8);
    let mut rounds: Vec<Round> = Vec::new();
    // Phase 2: a round is under way.
    let mut pattern_busy = false;
    let mut idle = [false; 4];
    for c in 0..g.clients {
        let t = rng.random_range(0..10);
        at(&mut queue, t, Step::Call(c));
    }
    while let Some(Reverse((t, _, step))) = queue.pop() {
        match step {
            Step::Call(c) => {
                let issued = ops.len();
                let phase2 = issued >= phase2_from;
                if phase2 && c < 4 {
                    // Client 0 drives the rounds (clients 1–3's ops are issued with them); one
                    // more round while the budget allows, or until one R1 saw its Y.
                    // Clients 1–3 wait for it once their phase-1 op is over.
                    idle[c] = true;
                    let eligible = rounds.iter().any(|r| r.r1_saw_y);
                    if c != 0 || pattern_busy || (issued + 4 > g.ops && eligible) {
                        continue;
                    }
                    if !idle.iter().all(|&i| i) {
                        at(&mut queue, t + 1, Step::Call(0));
                        continue;
                    }
                    pattern_busy = true;
                    let k = rounds.len() as u64;
                    let (x, y) = (100 + 2 * k, 101 + 2 * k);
                    // X takes effect at once and returns late; Y is called just after X, takes
                    // effect after it and returns before it.
                    let ox = call(&mut ops, &mut events, process[0], t, "write", json!(x));
                    let oy = call(&mut ops, &mut events, process[1], t, "write", json!(y));
                    at(&mut queue, t + 1, Step::Effect(ox));
                    at(&mut queue, t + 8, Step::Effect(oy));
                    at(&mut queue, t + 12, Step::Done(oy));
                    at(&mut queue, t + 30, Step::Done(ox));
                    rounds.push(Round { x, ox, r1: None, r2: None, r1_saw_y: false });
                    continue;
                }
                // Phase 2's readers leave room for one round.
                let reserve = if phase2 && rounds.is_empty() { 4 } else { 0 };
                if issued + reserve >= g.ops {
                    continue;
                }
                let p = process[c];
                if phase2 || rng.random::<f64>() >= g.info {
                    let (f, value) = match (phase2, rng.random_range(0..4)) {
                        (true, _) | (_, 0 | 1) => ("read", Value::Null),
                        (_, 2) => ("write", json!(rng.random_range(0..5))),
                        _ => {
                            let from = if rng.random_bool(0.5) { state.clone() } else { json!(rng.random_range(0..5)) };
                            ("cas", json!([from, rng.random_range(0..5)]))
                        }
                    };
                    let o = call(&mut ops, &mut events, p, t, f, value);
                    let d = rng.random_range(2..=TIMEOUT);
                    at(&mut queue, t + rng.random_range(1..d), Step::Effect(o));
                    at(&mut queue, t + d, Step::Done(o));
                } else {
                    let o = call(&mut ops, &mut events, p, t, "write", json!(rng.random_range(0..5)));
                    if rng.random_bool(0.5) {
                        at(&mut queue, t + rng.random_range(1..=4 * TIMEOUT), Step::Effect(o));
                    }
                    at(&mut queue, t + TIMEOUT, Step::GiveUp(c));
                }
            }
            Step::Effect(o) => {
                let op = &mut ops[o];
                match op.f {
                    "read" => op.saw = Some(state.clone()),
                    "write" => state = op.value.clone(),
                    _ => {
                        op.cas_ok = state == op.value[0];
                        if op.cas_ok {
                            state = op.value[1].clone();
                        }
                    }
                }
            }
            Step::Done(o) => {
                let op = &ops[o];
                let (kind, value) = match op.f {
                    "read" => (EventType::Ok, op.saw.clone().expect("took effect")),
                    "cas" if !op.cas_ok => (EventType::Fail, op.value.clone()),
                    _ => (EventType::Ok, op.value.clone()),
                };
                ops[o].done_at = Some(events.len());
                push(&mut events, ops[o].process, t, kind, ops[o].f, value);
                let round = rounds.last_mut().filter(|_| pattern_busy);
                match round {
                    // X returned (Y did before): R1, by client 2.
                    Some(r) if r.ox == o => {
                        let o1 = call(&mut ops, &mut events, process[2], t, "read", Value::Null);
                        r.r1 = Some(o1);
                        at(&mut queue, t + 2, Step::Effect(o1));
                        at(&mut queue, t + 4, Step::Done(o1));
                    }
                    // R1 returned: R2, by client 3.
                    Some(r) if r.r1 == Some(o) => {
                        r.r1_saw_y = ops[o].saw == Some(json!(r.x + 1));
                        let o2 = call(&mut ops, &mut events, process[3], t, "read", Value::Null);
                        r.r2 = Some(o2);
                        at(&mut queue, t + 2, Step::Effect(o2));
                        at(&mut queue, t + 4, Step::Done(o2));
                    }
                    // R2 returned: the round is over.
                    Some(r) if r.r2 == Some(o) => {
                        pattern_busy = false;
                        at(&mut queue, t + 1, Step::Call(0));
                    }
                    Some(r) if o == r.ox + 1 => {}
                    _ => {
                        let c = process.iter().position(|&p| p == ops[o].process).expect("a client");
                        at(&mut queue, t + rng.random_range(0..5), Step::Call(c));
                    }
                }
            }
            Step::GiveUp(c) => {
                process[c] = next_process;
                next_process += 1;
                at(&mut queue, t + rng.random_range(0..5), Step::Call(c));
            }
        }
    }
    if !g.valid {
        // The last round whose R1 saw its Y (a late indeterminate write may land in between).
        let r = rounds.iter().rev().find(|r| r.r1_saw_y).expect("a round whose R1 saw Y");
        let done = ops[r.r2.expect("R2")].done_at.expect("R2 completed");
        events[done].value = json!(r.x);
    }
    events
}

fn call(ops: &mut Vec<SimOp>, events: &mut Vec<Event>, process: u64, t: u64, f: &'static str, value: Value) -> usize {
    push(events, process, t, EventType::Invoke, f, value.clone());
    ops.push(SimOp { process, f, value, saw: None, cas_ok: false, done_at: None });
    ops.len() - 1
}

fn push(events: &mut Vec<Event>, process: u64, t: u64, kind: EventType, f: &str, value: Value) {
    let mut e = Event::new(t, Process::Client(process), kind, f);
    e.index = events.len() as u64;
    e.key = Some("r".to_string());
    e.value = value;
    events.push(e);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twins_differ_in_one_read_and_have_the_asked_share_of_open_writes() {
        for seed in 0..20 {
            let mut g = Inversion { ops: 2000, clients: 10, info: 0.06, valid: true };
            let valid = inversion(&g, seed);
            g.valid = false;
            let invalid = inversion(&g, seed);
            assert_eq!(valid.len(), invalid.len());
            let differ: Vec<usize> = (0..valid.len()).filter(|&i| valid[i] != invalid[i]).collect();
            assert_eq!(differ.len(), 1, "seed {seed}");
            let invokes = valid.iter().filter(|e| e.kind == EventType::Invoke).count();
            assert!((2000..=2003).contains(&invokes), "{invokes}");
            let completions = valid.len() - invokes;
            let open = invokes - completions;
            assert!((60..=180).contains(&open), "seed {seed}: {open} open writes");
        }
    }
}
