//! Wing & Gong's linearizability search with Lowe's improvements, as porcupine implements it.
//!
//! The history is a doubly-linked list of call and return entries in real-time order. The
//! search walks it from the head: at a call it tries to linearize that operation next (the
//! model accepts its output in the current state, and the (linearized set, new state) pair
//! was not explored before), lifting the call and its return out of the list and restarting
//! from the head. Reaching a return means the operation returning there must have been
//! linearized already and was not: backtrack to the last choice. Memoising (set, state)
//! pairs is what keeps this from being exponential on most histories (Lowe).
//!
//! Indeterminate operations return "at infinity", after every real return: once the walk
//! reaches one of those, every determinate operation is linearized, and the indeterminate
//! ones left over simply never took effect.

use super::bitset::{Bitset, FastBuild};
use super::model::{HistoryOp, Model};
use std::collections::HashSet;
use std::time::Instant;

const NIL: usize = usize::MAX;
/// Steps between two looks at the clock: often enough to stop within a millisecond or so,
/// rarely enough that reading the clock costs nothing measurable.
const CLOCK_EVERY: u64 = 1024;

pub(crate) struct Limits {
    pub deadline: Instant,
    /// Estimated bytes the memo cache may hold; past it the search gives up (unknown)
    /// instead of running out of memory.
    pub max_cache_bytes: usize,
}

#[derive(Debug, PartialEq)]
pub(crate) enum Outcome {
    Linearizable,
    NotLinearizable(Failure),
    GaveUp(GiveUp),
}

#[derive(Debug, PartialEq, Clone, Copy)]
pub(crate) enum GiveUp {
    Timeout,
    CacheFull,
}

/// The deepest point the search reached. Operations are positions in the searched slice.
#[derive(Debug, PartialEq)]
pub(crate) struct Failure {
    /// A linearization of a prefix of the history, longest found, in linearization order.
    pub prefix: Vec<usize>,
    /// Every operation that could go next after `prefix` in real-time order; the model
    /// accepts none of them in `state`. In history order.
    pub unplaceable: Vec<usize>,
    /// The model state after `prefix`, `Debug`-formatted.
    pub state: String,
}

/// Entry ids: `2*op` is the call of `op`, `2*op + 1` its return; `HEAD` is the sentinel.
struct Entries {
    next: Vec<usize>,
    prev: Vec<usize>,
    head: usize,
}

impl Entries {
    fn new<I, O>(ops: &[&HistoryOp<I, O>]) -> Self {
        let n = ops.len();
        let time = |e: usize| {
            let op = ops[e / 2];
            if e % 2 == 0 {
                op.call
            } else {
                op.ret.unwrap_or(usize::MAX)
            }
        };
        // Positions in the event slice are distinct, so only returns at infinity tie.
        let mut order: Vec<usize> = (0..2 * n).collect();
        order.sort_by_key(|&e| (time(e), e));
        let head = 2 * n;
        let mut next = vec![NIL; 2 * n + 1];
        let mut prev = vec![NIL; 2 * n + 1];
        let mut last = head;
        for e in order {
            next[last] = e;
            prev[e] = last;
            last = e;
        }
        Entries { next, prev, head }
    }

    /// Removes `op`'s call and return (dancing links: `unlift` undoes it exactly).
    fn lift(&mut self, op: usize) {
        let (c, r) = (2 * op, 2 * op + 1);
        // The call's next always exists: its own return comes after it.
        self.next[self.prev[c]] = self.next[c];
        self.prev[self.next[c]] = self.prev[c];
        self.next[self.prev[r]] = self.next[r];
        if self.next[r] != NIL {
            self.prev[self.next[r]] = self.prev[r];
        }
    }

    fn unlift(&mut self, op: usize) {
        let (c, r) = (2 * op, 2 * op + 1);
        self.next[self.prev[r]] = r;
        if self.next[r] != NIL {
            self.prev[self.next[r]] = r;
        }
        self.next[self.prev[c]] = c;
        self.prev[self.next[c]] = c;
    }

    /// Operations whose call comes before entry `stop`, in history order.
    fn calls_before(&self, stop: usize) -> Vec<usize> {
        let mut ops = Vec::new();
        let mut e = self.next[self.head];
        while e != stop && e != NIL {
            if e % 2 == 0 {
                ops.push(e / 2);
            }
            e = self.next[e];
        }
        ops.sort_unstable();
        ops
    }
}

/// Searches for a linearization of `ops` (one partition, in history order) from `init()`.
pub(crate) fn search<M: Model>(
    model: &M,
    ops: &[&HistoryOp<M::Input, M::Output>],
    limits: &Limits,
) -> Outcome {
    let n = ops.len();
    let linearized = Bitset::new(n);
    let entry_bytes = std::mem::size_of::<(Bitset, M::State)>() + linearized.heap_bytes() + 24;
    let mut search = Search {
        model,
        ops,
        entries: Entries::new(ops),
        linearized,
        cache: HashSet::default(),
        max_entries: (limits.max_cache_bytes / entry_bytes).max(1),
        calls: Vec::new(),
        state: model.init(),
        deepest: None,
    };
    search.run(limits.deadline)
}

struct Search<'a, M: Model> {
    model: &'a M,
    ops: &'a [&'a HistoryOp<M::Input, M::Output>],
    entries: Entries,
    linearized: Bitset,
    cache: HashSet<(Bitset, M::State), FastBuild>,
    max_entries: usize,
    /// The choices made so far: operation linearized, state before it, and whether it was
    /// forced (a read placed as soon as possible: no other order needs trying).
    calls: Vec<(usize, M::State, bool)>,
    state: M::State,
    deepest: Option<Failure>,
}

impl<M: Model> Search<'_, M> {
    fn run(&mut self, deadline: Instant) -> Outcome {
        let mut entry = self.entries.next[self.entries.head];
        let mut steps: u64 = 0;
        while entry != NIL {
            steps += 1;
            if steps % CLOCK_EVERY == 0 && Instant::now() >= deadline {
                return Outcome::GaveUp(GiveUp::Timeout);
            }
            let op = entry / 2;
            if entry % 2 == 0 {
                let input = &self.ops[op].op.input;
                let output = self.ops[op].op.output.as_ref();
                let Some(next_state) = self.model.step(&self.state, input, output) else {
                    entry = self.entries.next[entry];
                    continue;
                };
                let forced = self.model.read_only(input);
                self.linearized.set(op);
                // Probe by moving the bitset in and out: no allocation when already seen,
                // which is most of the time once the search starts backtracking.
                let probe = (std::mem::take(&mut self.linearized), next_state);
                let seen = self.cache.contains(&probe);
                let next_state;
                (self.linearized, next_state) = probe;
                if !seen {
                    self.cache.insert((self.linearized.clone(), next_state.clone()));
                    if self.cache.len() > self.max_entries {
                        return Outcome::GaveUp(GiveUp::CacheFull);
                    }
                    let before = std::mem::replace(&mut self.state, next_state);
                    self.calls.push((op, before, forced));
                    self.entries.lift(op);
                    entry = self.entries.next[self.entries.head];
                    continue;
                }
                self.linearized.clear(op);
                if !forced {
                    entry = self.entries.next[entry];
                    continue;
                }
                // The read's config was explored and failed, and it dominates this one
                // (see `Model::read_only`): this one fails too.
            } else if self.ops[op].ret.is_none() {
                // The first return at infinity: nothing determinate is left (see module docs).
                return Outcome::Linearizable;
            } else {
                self.record_dead_end(entry);
            }
            match self.backtrack() {
                Some(next) => entry = next,
                None => { self.stats(steps);
                    return Outcome::NotLinearizable(self.deepest.take().expect("a dead end"))
                }
            }
        }
        Outcome::Linearizable
    }

    fn stats(&self, steps: u64) { if std::env::var("LIN_STATS").is_ok() { eprintln!("steps {steps} cache {} n {}", self.cache.len(), self.ops.len()); } }

    /// A return whose operation is not linearized: this branch is dead. The deepest dead end
    /// is the evidence: the first time a depth is reached, every candidate failed the model
    /// (one that passed would have gone deeper, here or earlier).
    fn record_dead_end(&mut self, entry: usize) {
        if self.deepest.as_ref().is_none_or(|d| self.calls.len() > d.prefix.len()) {
            self.deepest = Some(Failure {
                prefix: self.calls.iter().map(|&(op, _, _)| op).collect(),
                unplaceable: self.entries.calls_before(entry),
                state: format!("{:?}", self.state),
            });
        }
    }

    /// Undoes choices up to the last unforced one; returns the entry after it, where the
    /// search goes on, or `None` when no choice is left.
    fn backtrack(&mut self) -> Option<usize> {
        loop {
            let (op, before, forced) = self.calls.pop()?;
            self.state = before;
            self.linearized.clear(op);
            self.entries.unlift(op);
            if !forced {
                return Some(self.entries.next[2 * op]);
            }
        }
    }
}
