//! The history rules: what makes the events read from a file one history that can be judged.
//! The properties take events in slice order, so the order must be the history's, not whatever
//! order the lines happen to be in.
//!
//! 1. **Order.** When the events carry indexes (any index is not 0), they are taken in index
//!    order, whatever their line order, and each index must name one event. Jepsen's
//!    histories and our merged history.jsonl are written in index order, so for them this
//!    changes nothing. When no event carries an index (all 0: JSON lines without `index`),
//!    line order is the order and the events are numbered 0, 1, 2… in it, so evidence can name
//!    them. A line without an index in a file with indexes counts as index 0.
//! 2. **Stand-in times follow.** An EDN op without `:time` has its line number as its time
//!    (see [`crate::edn`]); after reordering, those times are handed out again in the new order,
//!    so they still grow along the history.
//! 3. **Pairing.** A client (a numbered process) is single-threaded: its completion (`ok`,
//!    `fail`, `info`) closes its open invoke, and one without an open invoke is a malformed
//!    history. Named processes (`nemesis`, `resource`, Jepsen's `:nemesis`) write single
//!    events — the nemesis's `info`, the resource's `ok`/`fail` records — and are not paired.
//!    An invoke while one is open is left to the properties (linearizability treats the open
//!    one as indeterminate).

use crate::history::{Event, EventType, Process};
use std::collections::HashSet;

/// Where an event came from: its 1-based line, and whether the line gave its time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Origin {
    pub line: usize,
    pub time_given: bool,
}

/// A broken rule, at a line of the input.
pub(crate) struct RuleError {
    pub line: usize,
    pub message: String,
}

/// Puts `events` (in line order, `origins` alongside) in history order and checks the pairing.
pub(crate) fn apply(events: &mut [Event], origins: &mut Vec<Origin>) -> Result<(), RuleError> {
    order(events, origins)?;
    check_pairing(events, origins)
}

fn order(events: &mut [Event], origins: &mut Vec<Origin>) -> Result<(), RuleError> {
    if events.iter().all(|e| e.index == 0) {
        for (i, e) in events.iter_mut().enumerate() {
            e.index = i as u64;
        }
        return Ok(());
    }
    if events.windows(2).all(|w| w[0].index < w[1].index) {
        return Ok(());
    }
    let mut by_index: Vec<usize> = (0..events.len()).collect();
    // Stable: of two equal indexes, the first in the file comes first.
    by_index.sort_by_key(|&i| events[i].index);
    if let Some(w) = by_index.windows(2).find(|w| events[w[0]].index == events[w[1]].index) {
        let (first, again) = (origins[w[0]].line, origins[w[1]].line);
        return Err(RuleError {
            line: again,
            message: format!("index {} is also at line {first}: each event needs an index of its own", events[w[1]].index),
        });
    }
    // Line numbers standing in for times, in line order: increasing.
    let mut stand_ins =
        events.iter().zip(origins.iter()).filter(|(_, o)| !o.time_given).map(|(e, _)| e.time).collect::<Vec<_>>().into_iter();
    *origins = by_index.iter().map(|&i| origins[i]).collect();
    permute_in_place(events, &by_index);
    for (e, o) in events.iter_mut().zip(origins.iter()) {
        if !o.time_given {
            e.time = stand_ins.next().expect("one stand-in per event without a time");
        }
    }
    Ok(())
}

/// `events[j] = old events[from[j]]` for every j, by following the permutation's cycles with
/// swaps: no second vector of events (a million of them are some 400 MB).
fn permute_in_place(events: &mut [Event], from: &[usize]) {
    let mut placed = vec![false; events.len()];
    for start in 0..events.len() {
        let mut j = start;
        while !placed[j] {
            placed[j] = true;
            let k = from[j];
            if k == start {
                break;
            }
            events.swap(j, k);
            j = k;
        }
    }
}

fn check_pairing(events: &[Event], origins: &[Origin]) -> Result<(), RuleError> {
    let mut open: HashSet<u64> = HashSet::new();
    for (e, o) in events.iter().zip(origins) {
        let Process::Client(process) = e.process else {
            continue;
        };
        let kind = match e.kind {
            EventType::Invoke => {
                open.insert(process);
                continue;
            }
            EventType::Ok => "ok",
            EventType::Fail => "fail",
            EventType::Info => "info",
        };
        if !open.remove(&process) {
            return Err(RuleError {
                line: o.line,
                message: format!(
                    "{kind} of process {process} ({}) without an open invoke: a client's completion must follow its invoke",
                    e.f
                ),
            });
        }
    }
    Ok(())
}
