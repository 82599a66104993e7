//! Wing & Gong's linearizability search with Lowe's improvements, as porcupine implements it,
//! plus prunings that keep indeterminate operations and reads from blowing it up.
//!
//! Determinate operations form a doubly-linked list of call and return entries in real-time
//! order (`entries.rs`). At each configuration (linearized set, state) the candidates are
//! the calls before the first return in the list: the search tries to linearize one (the
//! model accepts its output here and the configuration reached is new), lifting its call and
//! return out of the list and restarting from the head. When no candidate is left, the
//! operation returning first should have been linearized already: dead end, backtrack.
//! Memoising configurations is what keeps this from being exponential on most histories.
//!
//! Indeterminate operations never return: they are kept apart and tried after the
//! determinate candidates, while their call precedes the first return; once no determinate
//! operation is left, the rest simply never took effect. Prunings, sound because one
//! configuration *dominates* another (any linearization from the other gives one from it):
//! - with the same determinate set and state, fewer placed indeterminate operations dominate
//!   more (the extra ones can simply never take effect), so the memo keeps, per (determinate
//!   set, state), the minimal sets of placed indeterminate operations, and skips supersets;
//!   an indeterminate operation that would not change the state is never placed;
//! - a read ([`Model::read_only`]) accepted now dominates every order placing it later, so it
//!   is not a choice point;
//! - indeterminate operations with equal inputs whose calls have both happened are
//!   interchangeable from then on, so only the earliest unplaced one is tried (the placed
//!   ones of each such class are always its first ones).
//!
//! Measured limit: the search stays exponential in the number of indeterminate operations
//! concurrent with an invalid stretch (each may take effect anywhere after its call); the
//! timeout and the memo budget turn that into `unknown`.

use super::bitset::{Bitset, FastBuild};
use super::entries::{is_call, Entries, NIL};
use super::model::{HistoryOp, Model};
use std::collections::HashMap;
use std::time::Instant;

/// Steps between two looks at the clock: often enough to stop within a millisecond or so,
/// rarely enough that reading the clock costs nothing measurable. A power of two.
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
    /// Proved by a rule before any search (refute.rs).
    Refuted(super::refute::Refutation),
    GaveUp(GiveUp),
}

#[derive(Debug, PartialEq, Clone, Copy)]
pub(crate) enum GiveUp {
    Timeout,
    CacheFull,
}

/// The first dead end with the most determinate operations linearized. Operations are
/// positions in the searched slice.
#[derive(Debug, PartialEq)]
pub(crate) struct Failure {
    /// A linearization of a prefix of the history, in order (indeterminate operations that
    /// took effect included).
    pub prefix: Vec<usize>,
    /// The determinate operations that could go next in real-time order; the model accepts
    /// none of them in `state` (one that it accepted would have led deeper). History order.
    pub unplaceable: Vec<usize>,
    /// The model state after `prefix`, `Debug`-formatted.
    pub state: String,
}

/// Where the scan of candidates is: a list entry, or the `i`th indeterminate operation
/// while the first return in the list is entry `frontier`.
#[derive(Clone, Copy)]
enum Cursor {
    Main(usize),
    Info { i: usize, frontier: usize },
}

#[derive(Clone, Copy)]
enum Placed {
    Det(usize),
    Info(usize),
}

struct Choice<S> {
    placed: Placed,
    before: S,
    /// Nothing else needs trying here (see `Model::read_only`).
    forced: bool,
    /// Where the scan resumes after undoing an indeterminate placement.
    resume: Cursor,
}

enum Try {
    Placed,
    Rejected,
    /// A forced choice whose configuration is dominated: this configuration fails too.
    DeadEnd,
    Full,
}

/// Searches for a linearization of `ops` (one partition, in history order) from `init()`.
pub(crate) fn search<M: Model>(model: &M, ops: &[&HistoryOp<M::Input, M::Output>], limits: &Limits) -> Outcome {
    let (det, info): (Vec<usize>, Vec<usize>) = (0..ops.len()).partition(|&o| ops[o].ret.is_some());
    let times: Vec<(usize, usize)> = det.iter().map(|&o| (ops[o].call, ops[o].ret.unwrap_or(NIL))).collect();
    let twin = info.iter().enumerate().map(|(i, &o)| (0..i).rev().find(|&j| ops[info[j]].op.input == ops[o].op.input)).collect();
    let (det_set, info_set) = (Bitset::new(det.len()), Bitset::new(info.len()));
    let item_bytes = std::mem::size_of::<((Bitset, M::State), Vec<Bitset>)>() + det_set.heap_bytes() + 2 * info_set.heap_bytes() + 48;
    let mut search = Search {
        model,
        ops,
        entries: Entries::new(&times),
        det,
        info,
        twin,
        det_set,
        info_set,
        cache: HashMap::default(),
        items: 0,
        max_items: (limits.max_cache_bytes / item_bytes).max(1),
        calls: Vec::new(),
        state: model.init(),
        depth: 0,
        deepest: None,
        deepest_depth: 0,
    };
    let init = search.state.clone();
    search.remember(init);
    search.run(limits.deadline)
}

struct Search<'a, M: Model> {
    model: &'a M,
    ops: &'a [&'a HistoryOp<M::Input, M::Output>],
    entries: Entries,
    /// Positions in `ops` of the determinate and the indeterminate operations.
    det: Vec<usize>,
    info: Vec<usize>,
    /// For each indeterminate operation, the previous one with an equal input.
    twin: Vec<Option<usize>>,
    det_set: Bitset,
    info_set: Bitset,
    /// (determinate set, state) → minimal sets of indeterminate operations placed.
    cache: HashMap<(Bitset, M::State), Vec<Bitset>, FastBuild>,
    items: usize,
    max_items: usize,
    calls: Vec<Choice<M::State>>,
    state: M::State,
    /// Determinate operations linearized, and the most at any dead end so far.
    depth: usize,
    deepest: Option<Failure>,
    deepest_depth: usize,
}

impl<M: Model> Search<'_, M> {
    fn run(&mut self, deadline: Instant) -> Outcome {
        let mut cursor = Cursor::Main(self.entries.next[self.entries.head]);
        let mut steps: u64 = 0;
        loop {
            steps += 1;
            if steps & (CLOCK_EVERY - 1) == 0 && Instant::now() >= deadline {
                return Outcome::GaveUp(GiveUp::Timeout);
            }
            let tried = match cursor {
                // Every determinate operation is linearized.
                Cursor::Main(NIL) => return Outcome::Linearizable,
                Cursor::Main(e) if is_call(e) => {
                    let next = Cursor::Main(self.entries.next[e]);
                    (self.place(Placed::Det(e / 2), cursor), next)
                }
                Cursor::Main(frontier) => {
                    cursor = Cursor::Info { i: 0, frontier };
                    continue;
                }
                Cursor::Info { i, frontier } => {
                    let before = self.ops[self.det[frontier / 2]].ret.unwrap_or(NIL);
                    match self.info.get(i) {
                        Some(&o) if self.ops[o].call < before => {
                            let next = Cursor::Info { i: i + 1, frontier };
                            let twin_free = self.twin[i].is_some_and(|j| !self.info_set.get(j));
                            if self.info_set.get(i) || twin_free {
                                cursor = next;
                                continue;
                            }
                            (self.place(Placed::Info(i), next), next)
                        }
                        _ => {
                            self.record_dead_end(frontier);
                            (Try::DeadEnd, cursor)
                        }
                    }
                }
            };
            cursor = match tried {
                (Try::Placed, _) => Cursor::Main(self.entries.next[self.entries.head]),
                (Try::Rejected, next) => next,
                (Try::DeadEnd, _) => match self.backtrack() {
                    Some(resume) => resume,
                    None => return Outcome::NotLinearizable(self.deepest.take().expect("a dead end")),
                },
                (Try::Full, _) => return Outcome::GaveUp(GiveUp::CacheFull),
            };
        }
    }

    /// Tries to linearize `placed` next; `resume` is where to go on after undoing it.
    fn place(&mut self, placed: Placed, resume: Cursor) -> Try {
        let (o, forced) = match placed {
            Placed::Det(d) => (self.det[d], self.model.read_only(&self.ops[self.det[d]].op.input)),
            Placed::Info(i) => (self.info[i], false),
        };
        let op = &self.ops[o].op;
        let Some(next) = self.model.step(&self.state, &op.input, op.output.as_ref()) else {
            return Try::Rejected;
        };
        if matches!(placed, Placed::Info(_)) && next == self.state {
            // Taking effect changes nothing: dominated by never taking effect.
            return Try::Rejected;
        }
        match placed {
            Placed::Det(d) => self.det_set.set(d),
            Placed::Info(i) => self.info_set.set(i),
        }
        let (fresh, next) = self.remember(next);
        if !fresh {
            match placed {
                Placed::Det(d) => self.det_set.clear(d),
                Placed::Info(i) => self.info_set.clear(i),
            }
            return if forced { Try::DeadEnd } else { Try::Rejected };
        }
        if self.items > self.max_items {
            return Try::Full;
        }
        let before = std::mem::replace(&mut self.state, next);
        self.calls.push(Choice { placed, before, forced, resume });
        if let Placed::Det(d) = placed {
            self.entries.lift(d);
            self.depth += 1;
        }
        Try::Placed
    }

    /// Records the current sets with state `next` unless a recorded configuration dominates
    /// them; returns whether it was new, and `next` back.
    fn remember(&mut self, next: M::State) -> (bool, M::State) {
        // The determinate set is moved into the probe and back: no allocation on a hit.
        let probe = (std::mem::take(&mut self.det_set), next);
        let found = self.cache.get_mut(&probe).map(|minimal| {
            if minimal.iter().any(|m| m.is_subset(&self.info_set)) {
                return false;
            }
            let before = minimal.len();
            minimal.retain(|m| !self.info_set.is_subset(m));
            self.items -= before - minimal.len();
            minimal.push(self.info_set.clone());
            true
        });
        let (det_set, next) = probe;
        self.det_set = det_set;
        let fresh = found.unwrap_or_else(|| {
            let key = (self.det_set.clone(), next.clone());
            self.cache.insert(key, vec![self.info_set.clone()]);
            true
        });
        self.items += fresh as usize;
        (fresh, next)
    }

    /// Dead end at `frontier`, the first return in the list. The deepest (most determinate
    /// operations linearized), first reached, is the evidence.
    fn record_dead_end(&mut self, frontier: usize) {
        if self.deepest.is_none() || self.depth > self.deepest_depth {
            self.deepest_depth = self.depth;
            let op = |p: Placed| match p {
                Placed::Det(d) => self.det[d],
                Placed::Info(i) => self.info[i],
            };
            self.deepest = Some(Failure {
                prefix: self.calls.iter().map(|c| op(c.placed)).collect(),
                unplaceable: self.entries.calls_before(frontier).into_iter().map(|d| self.det[d]).collect(),
                state: format!("{:?}", self.state),
            });
        }
    }

    /// Undoes choices up to the last unforced one; returns where the scan resumes, or `None`
    /// when no choice is left.
    fn backtrack(&mut self) -> Option<Cursor> {
        loop {
            let choice = self.calls.pop()?;
            self.state = choice.before;
            let resume = match choice.placed {
                Placed::Det(d) => {
                    self.det_set.clear(d);
                    self.entries.unlift(d);
                    self.depth -= 1;
                    Cursor::Main(self.entries.next[2 * d])
                }
                Placed::Info(i) => {
                    self.info_set.clear(i);
                    choice.resume
                }
            };
            if !choice.forced {
                return Some(resume);
            }
        }
    }
}
