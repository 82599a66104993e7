//! Differential test: our search against stateright's `LinearizabilityTester` (exhaustive,
//! slow, and independent of our code) on thousands of small random register and
//! cas-register histories. Both must agree on every one.
//!
//! Info operations are included: stateright models an invocation that never returns as "in
//! flight", which may or may not have taken effect. It allows one only as a thread's last
//! operation, and the generator obliges: a process whose operation ended `info` never runs
//! again (a fresh process id takes its place, as in Jepsen). Failed operations did not
//! happen, so they are not shown to stateright at all.

#[path = "linearizability_gen.rs"]
mod gen;

use checker::linearizability::{check, ModelKind};
use checker::{Event, EventType, Verdict};
use gen::{generate, Gen, GenModel};
use serde_json::Value;
use stateright::semantics::register::{Register, RegisterOp, RegisterRet};
use stateright::semantics::{ConsistencyTester, LinearizabilityTester, SequentialSpec};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// Jepsen's cas-register as a stateright spec (stateright ships only plain registers).
#[derive(Clone, Debug, PartialEq)]
struct CasSpec(Value);

#[derive(Clone, Debug, PartialEq)]
enum CasOp {
    Read,
    Write(Value),
    Cas(Value, Value),
}

#[derive(Clone, Debug, PartialEq)]
enum CasRet {
    Read(Value),
    Done,
    Refused,
}

impl SequentialSpec for CasSpec {
    type Op = CasOp;
    type Ret = CasRet;
    fn invoke(&mut self, op: &CasOp) -> CasRet {
        match op {
            CasOp::Read => CasRet::Read(self.0.clone()),
            CasOp::Write(v) => {
                self.0 = v.clone();
                CasRet::Done
            }
            CasOp::Cas(from, to) if *from == self.0 => {
                self.0 = to.clone();
                CasRet::Done
            }
            CasOp::Cas(..) => CasRet::Refused,
        }
    }
}

/// Positions of invokes whose completion is `fail`.
fn failed_invokes(events: &[Event]) -> HashSet<usize> {
    let mut open = HashMap::new();
    let mut failed = HashSet::new();
    for (i, e) in events.iter().enumerate() {
        let p = e.process.client().expect("generated clients only");
        match e.kind {
            EventType::Invoke => {
                open.insert(p, i);
            }
            EventType::Fail => {
                failed.insert(open.remove(&p).expect("open invoke"));
            }
            _ => {
                open.remove(&p);
            }
        }
    }
    failed
}

/// Feeds the history to a stateright tester; `op` and `ret` translate events.
fn reference<S: SequentialSpec + Clone>(spec: S, events: &[Event], op: impl Fn(&Event) -> S::Op, ret: impl Fn(&Event) -> S::Ret) -> bool
where
    S::Op: Clone + std::fmt::Debug,
    S::Ret: Clone + std::fmt::Debug + PartialEq,
{
    let failed = failed_invokes(events);
    let mut tester = LinearizabilityTester::new(spec);
    for (i, e) in events.iter().enumerate() {
        let p = e.process.client().unwrap();
        match e.kind {
            EventType::Invoke if failed.contains(&i) => {}
            EventType::Invoke => {
                tester.on_invoke(p, op(e)).expect("well-formed");
            }
            EventType::Ok => {
                tester.on_return(p, ret(e)).expect("well-formed");
            }
            // fail: never shown; info: stays in flight.
            EventType::Fail | EventType::Info => {}
        }
    }
    tester.is_consistent()
}

fn register_reference(events: &[Event]) -> bool {
    reference(
        Register(Value::Null),
        events,
        |e| match e.f.as_str() {
            "read" => RegisterOp::Read,
            _ => RegisterOp::Write(e.value.clone()),
        },
        |e| match e.f.as_str() {
            "read" => RegisterRet::ReadOk(e.value.clone()),
            _ => RegisterRet::WriteOk,
        },
    )
}

fn cas_reference(events: &[Event]) -> bool {
    reference(
        CasSpec(Value::Null),
        events,
        |e| match e.f.as_str() {
            "read" => CasOp::Read,
            "write" => CasOp::Write(e.value.clone()),
            _ => CasOp::Cas(e.value[0].clone(), e.value[1].clone()),
        },
        |e| match e.f.as_str() {
            "read" => CasRet::Read(e.value.clone()),
            _ => CasRet::Done,
        },
    )
}

#[test]
fn agrees_with_stateright_on_small_random_histories() {
    let mut counts: HashMap<(ModelKind, bool), usize> = HashMap::new();
    let mut disagreements = Vec::new();
    for seed in 0..10_000u64 {
        // Vary the shape with the seed: 2–4 processes, 1–8 operations, 1–3 values (few
        // values make many orders plausible, which is where searches go wrong).
        let model = if seed % 2 == 0 { GenModel::Register } else { GenModel::CasRegister };
        let mut g = Gen::new(model, 2 + (seed % 3) as usize, 1 + (seed / 3 % 8) as usize);
        g.values = 1 + seed / 24 % 3;
        g.info = [0.0, 0.2, 0.5][(seed / 72 % 3) as usize];
        g.fail = 0.1;
        g.corrupt = 0.4;
        let events = generate(&g, seed);
        let (kind, expected) = match model {
            GenModel::Register => (ModelKind::Register, register_reference(&events)),
            _ => (ModelKind::CasRegister, cas_reference(&events)),
        };
        let ours = check(&events, kind, Duration::from_secs(10)).expect("well-formed");
        let valid = match ours.verdict {
            Verdict::Valid => true,
            Verdict::Invalid => false,
            // Nothing to check (every operation failed): stateright calls that consistent.
            Verdict::Unknown if ours.operations == 0 => true,
            Verdict::Unknown => panic!("seed {seed}: {ours:?}"),
        };
        *counts.entry((kind, expected)).or_default() += 1;
        if valid != expected {
            disagreements.push(format!("seed {seed} {kind}: stateright {expected}, ours {ours:?}"));
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} disagreement(s):\n{}",
        disagreements.len(),
        disagreements[..disagreements.len().min(5)].join("\n")
    );
    // Both verdicts must be well represented, or the comparison proves little.
    for kind in [ModelKind::Register, ModelKind::CasRegister] {
        for expected in [true, false] {
            let n = counts.get(&(kind, expected)).copied().unwrap_or(0);
            assert!(n >= 1000, "only {n} {kind} histories with verdict {expected}: {counts:?}");
        }
    }
}
