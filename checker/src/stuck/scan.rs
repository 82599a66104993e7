//! The stuck property's one pass over the history: every hold, active fault and acquire
//! attempt, the free intervals between them, and the attempts indexed for the long ones.

use super::HoldEnd;
use crate::history::{Event, EventType, Process};
use std::collections::{BTreeMap, BTreeSet, HashMap};

pub(super) struct Hold<'a> {
    pub(super) process: u64,
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) ended: HoldEnd,
    pub(super) error: Option<&'a str>,
}

pub(super) struct Fault<'a> {
    pub(super) f: &'a str,
    pub(super) node: Option<&'a str>,
    pub(super) start: u64,
    pub(super) end: u64,
}

pub(super) struct Attempt {
    pub(super) process: u64,
    pub(super) start: u64,
    /// u64::MAX while pending at the end of the history.
    pub(super) end: u64,
    pub(super) granted: bool,
}

#[derive(Default)]
pub(super) struct ClientState {
    /// Since this acquire ok.
    pub(super) holding: Option<u64>,
    /// The open acquire's invoke.
    pub(super) asked: Option<u64>,
    pub(super) last: u64,
}

/// What a history shows of holds, faults and attempts.
#[derive(Default)]
pub(super) struct Scan<'a> {
    pub(super) holds: Vec<Hold<'a>>,
    pub(super) faults: Vec<Fault<'a>>,
    pub(super) attempts: Vec<Attempt>,
    /// First and last client event.
    pub(super) span: Option<(u64, u64)>,
    pub(super) keys: BTreeSet<&'a str>,
    pub(super) applies: bool,
}

pub(super) fn scan(events: &[Event]) -> Scan<'_> {
    let mut s = Scan::default();
    let mut clients: BTreeMap<u64, ClientState> = BTreeMap::new();
    let mut open_faults: HashMap<(&str, Option<&str>), u64> = HashMap::new();
    for e in events {
        let t = e.time;
        if e.process.is_named(Process::NEMESIS) {
            let fault = (e.f.as_str(), e.node.as_deref());
            match e.value.as_str() {
                Some("start") if e.error.is_none() => {
                    open_faults.entry(fault).or_insert(t);
                }
                Some("stop") => {
                    if let Some(start) = open_faults.remove(&fault) {
                        s.faults.push(Fault { f: fault.0, node: fault.1, start, end: t.max(start) });
                    }
                }
                _ => {}
            }
            continue;
        }
        let Some(p) = e.process.client() else { continue };
        s.span = Some(s.span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
        let c = clients.entry(p).or_default();
        c.last = c.last.max(t);
        match (e.f.as_str(), e.kind) {
            ("acquire", kind) => {
                s.applies = true;
                s.keys.extend(e.key.as_deref());
                if kind == EventType::Invoke {
                    c.asked = Some(t);
                    continue;
                }
                let start = c.asked.take().unwrap_or(t);
                let granted = kind == EventType::Ok;
                s.attempts.push(Attempt { process: p, start, end: t, granted });
                if granted && c.holding.is_none() {
                    c.holding = Some(t);
                }
            }
            ("release", EventType::Invoke) => {}
            ("release", kind) => {
                if let Some(start) = c.holding.take() {
                    let ended = if kind == EventType::Ok { HoldEnd::ReleaseOk } else { HoldEnd::ReleaseFailed };
                    s.holds.push(Hold { process: p, start, end: t.max(start), ended, error: e.error.as_deref() });
                }
            }
            _ => {}
        }
    }
    for (p, c) in clients {
        if let Some(start) = c.holding {
            s.holds.push(Hold { process: p, start, end: c.last.max(start), ended: HoldEnd::HolderGone, error: None });
        }
        if let Some(start) = c.asked {
            s.attempts.push(Attempt { process: p, start, end: u64::MAX, granted: false });
        }
    }
    for ((f, node), start) in open_faults {
        s.faults.push(Fault { f, node, start, end: u64::MAX });
    }
    s
}

/// What made the lock taken or free: a hold or an active fault (indices into [`Scan`]).
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Cause {
    Hold(usize),
    Fault(usize),
}

/// One maximal free interval [from, to]; `freed` None = the start, `ended` None = the end of
/// the history.
pub(super) struct Free {
    pub(super) from: u64,
    pub(super) to: u64,
    pub(super) freed: Option<Cause>,
    pub(super) ended: Option<Cause>,
}

/// The free intervals of the lock within the client span [first, last], in time order.
pub(super) fn free_intervals(s: &Scan, (first, last): (u64, u64)) -> Vec<Free> {
    let mut busy: Vec<(u64, u64, Cause)> = s.holds.iter().enumerate().map(|(i, h)| (h.start, h.end, Cause::Hold(i))).collect();
    busy.extend(s.faults.iter().enumerate().map(|(i, f)| (f.start, f.end, Cause::Fault(i))));
    // At one time a grant comes before a fault's start: it names how a stretch ended.
    busy.sort_by_key(|&(start, _, cause)| (start, matches!(cause, Cause::Fault(_))));
    let mut free = vec![];
    let mut cursor = first;
    let mut freed = None;
    for (start, end, cause) in busy {
        if start > last {
            break;
        }
        if start > cursor {
            free.push(Free { from: cursor, to: start, freed, ended: Some(cause) });
            (cursor, freed) = (end, Some(cause));
        } else if end > cursor || (end == cursor && matches!(cause, Cause::Hold(_)) && !matches!(freed, Some(Cause::Hold(_)))) {
            // A hold that ends with a heal names what freed the lock.
            (cursor, freed) = (end, Some(cause));
        }
    }
    if cursor <= last {
        free.push(Free { from: cursor, to: last, freed, ended: None });
    }
    free
}

/// Attempts sorted by start with the running maximum of their ends: whether one overlaps [l, r].
pub(super) struct Attempts<'a> {
    pub(super) by_start: Vec<&'a Attempt>,
    pub(super) max_end: Vec<u64>,
}

impl<'a> Attempts<'a> {
    pub(super) fn new(attempts: &'a [Attempt]) -> Self {
        let mut by_start: Vec<&Attempt> = attempts.iter().collect();
        by_start.sort_by_key(|a| (a.start, a.process));
        let max_end = by_start
            .iter()
            .scan(0, |m, a| {
                *m = (*m).max(a.end);
                Some(*m)
            })
            .collect();
        Attempts { by_start, max_end }
    }

    pub(super) fn any_overlaps(&self, l: u64, r: u64) -> bool {
        let n = self.by_start.partition_point(|a| a.start <= r);
        n > 0 && self.max_end[n - 1] >= l
    }

    /// When the lock was first asked for within [from, to]: `from` if an attempt began before
    /// and was still going, else the start of the first attempt after it (None: nobody asked).
    pub(super) fn first_asked(&self, from: u64, to: u64) -> Option<u64> {
        let before = self.by_start.partition_point(|a| a.start <= from);
        if before > 0 && self.max_end[before - 1] > from {
            return Some(from);
        }
        self.by_start.get(before).map(|a| a.start).filter(|start| *start < to)
    }
}
