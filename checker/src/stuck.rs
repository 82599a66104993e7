//! Stuck (liveness): a lock that stays unavailable while nothing is wrong. A holder's release
//! fails on a connection error and the library leaves the key with no expiry, so every client
//! waits forever after the cut heals; a release reports ok but the key stays; a waiter is never
//! woken although the lock is free. Informational: it does not decide the run's outcome, which
//! is about safety.
//!
//! Definitions (the history's times, ns):
//! - A fault is *active* from a nemesis `start` without error to the next `stop` with the same
//!   `f` and `node` (whatever that stop's error), or to the end of the history if none. Skipped
//!   steps and starts with an error are not active.
//! - A client process *holds* the lock from its acquire ok until the completion (ok, fail or
//!   info) of its next release; if it never releases, until its own last event (it died, or the
//!   history ended). A second acquire ok while it holds does not start a new hold.
//! - An acquire *attempt* is [invoke, completion] of a client's acquire, to the end of the
//!   history if it never completed.
//! - The lock is *free* when no fault is active and no process holds it.
//! - A *stuck stretch* is a maximal free interval [from, to] without a grant (acquire ok) —
//!   `from` is when it became free (the later of the end of the last hold, the heal of the last
//!   fault, the first client event), `to` the next grant, the next fault's start, or the last
//!   client event — in which the lock was asked for (from `asked`: `from` if an attempt was
//!   going then, else the first attempt's start) for longer than the bound without a grant, and
//!   that some attempt overlaps after the bound had passed ([asked + bound, to]): somebody still
//!   wanted the lock by then. A lock nobody asked for is not stuck, however long it was free.
//!
//! Each stretch says what freed the lock at `from` ([`FreedBy`]: the later of the last hold's
//! end and the last heal; a hold wins a tie), the last hold that ended before it (so a stretch
//! that began at a heal still names the holder whose release failed during the fault), who was
//! waiting (a process with an attempt inside (from, to)) and how it ended.
//!
//! Verdict: invalid with at least one stuck stretch; unknown without one when the history ends
//! inside a free stretch no longer than the bound in which some attempt came to nothing (failed,
//! info, or still pending): it might have become stuck, the history is too short to say; valid
//! otherwise, and for a history without an acquire (`applies` false).
//!
//! The history is taken as one lock: acquires on several keys are judged together (a hold of
//! any key makes the lock taken), and a note says so.
//!
//! O(n log n): holds and faults are sorted by start and merged into busy blocks; each long free
//! interval asks whether an attempt reaches past its bound by a binary search over attempts
//! sorted by start with their running maximum end; the waiters of the stretches kept as
//! evidence come from one sweep with a heap of attempts by end.

use crate::history::{Event, EventType, Process};
use crate::verdict::Verdict;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::time::Duration;

/// The bound when nobody says otherwise ([`crate::CheckOptions::stuck_bound`]).
pub const DEFAULT_BOUND: Duration = Duration::from_secs(10);

const NS_PER_MS: u64 = 1_000_000;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Stuck {
    pub verdict: Verdict,
    /// Some client asked for the lock: the property has something to say.
    pub applies: bool,
    /// How long the lock may stay free without a grant while clients ask, in ms.
    pub bound_ms: u64,
    /// Stuck stretches found (kept as evidence or not).
    #[serde(default)]
    pub stuck_stretches: u64,
    /// The longest of them, in ms (0 without one).
    #[serde(default)]
    pub longest_stuck_ms: f64,
    /// The first stuck stretches, in time order, at most `max_evidence`.
    pub stretches: Vec<StuckStretch>,
    pub evidence_omitted: u64,
    pub notes: Vec<String>,
}

/// One stretch during which the lock was free, nobody was granted it, and clients asked.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct StuckStretch {
    pub from_ns: u64,
    pub to_ns: u64,
    pub length_ms: f64,
    /// What made the lock free at `from_ns`.
    pub freed_by: FreedBy,
    /// With `fault-healed`: the fault whose heal began the stretch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healed_fault: Option<FaultRef>,
    /// The last hold that ended at or before `from_ns` (with a hold's `freed_by`, that hold).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_holder: Option<HoldEnding>,
    pub ended_by: StretchEnd,
    /// With `grant`: the process granted the lock at `to_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub granted_to: Option<u64>,
    /// Processes with an acquire attempt inside the stretch (invoked before its end, completed
    /// after its start or never), in order.
    pub waiting: Vec<u64>,
}

/// What freed the lock before a stretch.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum FreedBy {
    /// The last holder's release returned ok: a release reported success but the lock stayed
    /// taken.
    ReleaseOk,
    /// The last holder's release ended fail or info.
    ReleaseFailed,
    /// The last holder's process never released and emitted no more events (killed, died).
    HolderGone,
    /// The stretch began at a fault's heal.
    FaultHealed,
    /// Nothing held the lock before it: the stretch began with the history's first client event.
    Start,
}

/// How a hold ended.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum HoldEnd {
    ReleaseOk,
    ReleaseFailed,
    HolderGone,
}

impl From<HoldEnd> for FreedBy {
    fn from(h: HoldEnd) -> FreedBy {
        match h {
            HoldEnd::ReleaseOk => FreedBy::ReleaseOk,
            HoldEnd::ReleaseFailed => FreedBy::ReleaseFailed,
            HoldEnd::HolderGone => FreedBy::HolderGone,
        }
    }
}

/// How a stretch ended.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum StretchEnd {
    /// A client was granted the lock.
    Grant,
    /// A fault started (the lock was no longer free, though nobody was granted it).
    FaultStarted,
    /// The history ended.
    EndOfHistory,
}

/// The end of one hold.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct HoldEnding {
    pub process: u64,
    pub ended: HoldEnd,
    /// The release's completion, or the gone holder's last event.
    pub at_ns: u64,
    /// The failed release's error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A fault as the nemesis named it: `kill` on `client-1`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct FaultRef {
    pub f: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

impl Stuck {
    /// What an older results.json without this property reads as.
    pub fn not_checked() -> Stuck {
        Stuck {
            verdict: Verdict::Unknown,
            applies: false,
            bound_ms: 0,
            stuck_stretches: 0,
            longest_stuck_ms: 0.0,
            stretches: Vec::new(),
            evidence_omitted: 0,
            notes: Vec::new(),
        }
    }
}

impl StuckStretch {
    /// The stretch in a sentence: "from 12.3 s to 27.9 s (15.6 s) the lock was free and nobody
    /// was granted it while clients 1, 2 asked; it began when client 1's release failed
    /// (connection reset); it ended when client 2 was granted it".
    pub fn in_words(&self) -> String {
        let who = match self.waiting.as_slice() {
            [] => "nobody".to_string(),
            [p] => format!("client {p}"),
            many => format!("clients {}", many.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")),
        };
        let began = match (self.freed_by, &self.last_holder, &self.healed_fault) {
            (FreedBy::Start, ..) => "at the start, before anyone held it".to_string(),
            (FreedBy::FaultHealed, holder, fault) => {
                let fault = fault.as_ref().map_or("a fault".to_string(), |f| match &f.node {
                    Some(node) => format!("{} on {node}", f.f),
                    None => f.f.clone(),
                });
                match holder {
                    Some(h) => format!("when {fault} was healed (before that, at {}, {})", secs(h.at_ns), h.in_words()),
                    None => format!("when {fault} was healed"),
                }
            }
            (_, Some(h), _) => format!("when {}", h.in_words()),
            (_, None, _) => "when its last hold ended".to_string(),
        };
        let ended = match (self.ended_by, self.granted_to) {
            (StretchEnd::Grant, Some(p)) => format!("it ended when client {p} was granted it"),
            (StretchEnd::Grant, None) => "it ended with a grant".to_string(),
            (StretchEnd::FaultStarted, _) => "it ended when a fault started".to_string(),
            (StretchEnd::EndOfHistory, _) => "it lasted to the end of the history".to_string(),
        };
        format!(
            "from {} to {} ({}) the lock was free and nobody was granted it while {who} asked; it began {began}; {ended}",
            secs(self.from_ns),
            secs(self.to_ns),
            secs(self.to_ns - self.from_ns)
        )
    }
}

impl HoldEnding {
    /// "client 1's release failed (connection reset)"
    pub fn in_words(&self) -> String {
        match self.ended {
            HoldEnd::ReleaseOk => format!("client {}'s release reported success but the lock stayed taken", self.process),
            HoldEnd::ReleaseFailed => match &self.error {
                Some(e) => format!("client {}'s release failed ({e})", self.process),
                None => format!("client {}'s release failed", self.process),
            },
            HoldEnd::HolderGone => format!("client {} stopped while holding it: no release, no more events", self.process),
        }
    }
}

struct Hold<'a> {
    process: u64,
    start: u64,
    end: u64,
    ended: HoldEnd,
    error: Option<&'a str>,
}

struct Fault<'a> {
    f: &'a str,
    node: Option<&'a str>,
    start: u64,
    end: u64,
}

struct Attempt {
    process: u64,
    start: u64,
    /// u64::MAX while pending at the end of the history.
    end: u64,
    granted: bool,
}

#[derive(Default)]
struct ClientState {
    /// Since this acquire ok.
    holding: Option<u64>,
    /// The open acquire's invoke.
    asked: Option<u64>,
    last: u64,
}

/// What a history shows of holds, faults and attempts.
#[derive(Default)]
struct Scan<'a> {
    holds: Vec<Hold<'a>>,
    faults: Vec<Fault<'a>>,
    attempts: Vec<Attempt>,
    /// First and last client event.
    span: Option<(u64, u64)>,
    keys: BTreeSet<&'a str>,
    applies: bool,
}

fn scan(events: &[Event]) -> Scan<'_> {
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
enum Cause {
    Hold(usize),
    Fault(usize),
}

/// One maximal free interval [from, to]; `freed` None = the start, `ended` None = the end of
/// the history.
struct Free {
    from: u64,
    to: u64,
    freed: Option<Cause>,
    ended: Option<Cause>,
}

/// The free intervals of the lock within the client span [first, last], in time order.
fn free_intervals(s: &Scan, (first, last): (u64, u64)) -> Vec<Free> {
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
struct Attempts<'a> {
    by_start: Vec<&'a Attempt>,
    max_end: Vec<u64>,
}

impl<'a> Attempts<'a> {
    fn new(attempts: &'a [Attempt]) -> Self {
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

    fn any_overlaps(&self, l: u64, r: u64) -> bool {
        let n = self.by_start.partition_point(|a| a.start <= r);
        n > 0 && self.max_end[n - 1] >= l
    }

    /// When the lock was first asked for within [from, to]: `from` if an attempt began before
    /// and was still going, else the start of the first attempt after it (None: nobody asked).
    fn first_asked(&self, from: u64, to: u64) -> Option<u64> {
        let before = self.by_start.partition_point(|a| a.start <= from);
        if before > 0 && self.max_end[before - 1] > from {
            return Some(from);
        }
        self.by_start.get(before).map(|a| a.start).filter(|start| *start < to)
    }
}

/// Checks the lock for stuck stretches longer than `bound`, keeping at most `max_evidence`.
pub fn check_stuck(events: &[Event], bound: Duration, max_evidence: usize) -> Stuck {
    let bound_ns = u64::try_from(bound.as_nanos()).unwrap_or(u64::MAX);
    let mut r = Stuck::not_checked();
    r.bound_ms = u64::try_from(bound.as_millis()).unwrap_or(u64::MAX);
    let s = scan(events);
    r.applies = s.applies;
    let Some(span) = s.span.filter(|_| s.applies) else {
        r.verdict = Verdict::Valid;
        return r;
    };
    if s.keys.len() > 1 {
        r.notes.push(format!("acquires name {} keys: they are judged as one lock (a hold of any key makes it taken)", s.keys.len()));
    }
    let free = free_intervals(&s, span);
    let attempts = Attempts::new(&s.attempts);

    // Holds by end: the last one before a stretch.
    let mut holds_by_end: Vec<usize> = (0..s.holds.len()).collect();
    holds_by_end.sort_by_key(|&i| (s.holds[i].end, i));
    let (mut next_hold, mut last_hold) = (0, None);
    // Attempts swept by start into a heap by end: the waiters of each kept stretch.
    let (mut next_attempt, mut open) = (0, BinaryHeap::new());

    let mut unsettled = None;
    for f in &free {
        let length = f.to - f.from;
        // Counted from when somebody asked: a lock nobody wanted for a while is not stuck.
        let asked = attempts.first_asked(f.from, f.to);
        let stuck = asked.is_some_and(|asked| f.to - asked > bound_ns && attempts.any_overlaps(asked.saturating_add(bound_ns), f.to));
        if !stuck {
            if f.ended.is_none() && length <= bound_ns {
                unsettled = s.attempts.iter().any(|a| !a.granted && a.start <= f.to && a.end > f.from).then_some(f);
            }
            continue;
        }
        r.stuck_stretches += 1;
        r.longest_stuck_ms = r.longest_stuck_ms.max(ms(length));
        if r.stretches.len() >= max_evidence {
            r.evidence_omitted += 1;
            continue;
        }
        while next_hold < holds_by_end.len() && s.holds[holds_by_end[next_hold]].end <= f.from {
            last_hold = Some(holds_by_end[next_hold]);
            next_hold += 1;
        }
        // Waiting: an attempt with some time inside the stretch (not one granted as it began).
        while next_attempt < attempts.by_start.len() && attempts.by_start[next_attempt].start < f.to {
            let a = attempts.by_start[next_attempt];
            open.push(Reverse((a.end, a.process)));
            next_attempt += 1;
        }
        while open.peek().is_some_and(|Reverse((end, _))| *end <= f.from) {
            open.pop();
        }
        let waiting: BTreeSet<u64> = open.iter().map(|Reverse((_, p))| *p).collect();
        let last_holder = match f.freed {
            Some(Cause::Hold(i)) => Some(i),
            _ => last_hold,
        };
        r.stretches.push(StuckStretch {
            from_ns: f.from,
            to_ns: f.to,
            length_ms: ms(length),
            freed_by: match f.freed {
                Some(Cause::Hold(i)) => s.holds[i].ended.into(),
                Some(Cause::Fault(_)) => FreedBy::FaultHealed,
                None => FreedBy::Start,
            },
            healed_fault: match f.freed {
                Some(Cause::Fault(i)) => Some(FaultRef { f: s.faults[i].f.to_string(), node: s.faults[i].node.map(str::to_string) }),
                _ => None,
            },
            last_holder: last_holder.map(|i| {
                let h = &s.holds[i];
                HoldEnding { process: h.process, ended: h.ended, at_ns: h.end, error: h.error.map(str::to_string) }
            }),
            ended_by: match f.ended {
                Some(Cause::Hold(_)) => StretchEnd::Grant,
                Some(Cause::Fault(_)) => StretchEnd::FaultStarted,
                None => StretchEnd::EndOfHistory,
            },
            granted_to: match f.ended {
                Some(Cause::Hold(i)) => Some(s.holds[i].process),
                _ => None,
            },
            waiting: waiting.into_iter().collect(),
        });
    }

    r.verdict = if r.stuck_stretches > 0 {
        Verdict::Invalid
    } else if let Some(f) = unsettled {
        r.notes.push(format!(
            "the history ends {} after the lock became free (at {}) with an acquire that came to nothing and no grant: \
             shorter than the bound of {}, so whether the lock was stuck cannot be told",
            secs(f.to - f.from),
            secs(f.from),
            secs(bound_ns)
        ));
        Verdict::Unknown
    } else {
        Verdict::Valid
    };
    r
}

fn ms(ns: u64) -> f64 {
    ns as f64 / NS_PER_MS as f64
}

/// "12.3 s"
fn secs(ns: u64) -> String {
    format!("{:.1} s", ns as f64 / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;
    use EventType::*;

    const BOUND: Duration = Duration::from_secs(10);

    /// A history built by process, sorted by time (stably) when done.
    #[derive(Default)]
    struct H(Vec<Event>);

    impl H {
        fn op(&mut self, ms: u64, p: u64, kind: EventType, f: &str) -> &mut Self {
            self.0.push(Event::new(ms * NS_PER_MS, Process::Client(p), kind, f));
            self
        }
        /// An invoke at `from` and its completion at `to`.
        fn call(&mut self, p: u64, f: &str, from: u64, to: u64, kind: EventType) -> &mut Self {
            self.op(from, p, Invoke, f).op(to, p, kind, f)
        }
        /// Acquires refused every 500 ms (each taking 400 ms), from `from` until `until`.
        fn refused(&mut self, p: u64, from: u64, until: u64) -> &mut Self {
            for t in (from..until).step_by(500) {
                self.call(p, "acquire", t, (t + 400).min(until), Fail);
            }
            self
        }
        fn fault(&mut self, ms: u64, f: &str, node: &str, phase: &str, error: Option<&str>) -> &mut Self {
            let mut e = Event::new(ms * NS_PER_MS, Process::Named(Process::NEMESIS.into()), Info, f);
            e.node = Some(node.into());
            e.value = phase.into();
            e.error = error.map(str::to_string);
            self.0.push(e);
            self
        }
        fn events(&self) -> Vec<Event> {
            let mut events = self.0.clone();
            events.sort_by_key(|e| e.time);
            for (i, e) in events.iter_mut().enumerate() {
                e.index = i as u64;
            }
            events
        }
        fn check(&self) -> Stuck {
            check_stuck(&self.events(), BOUND, 10)
        }
    }

    fn s(ms: u64) -> u64 {
        ms * NS_PER_MS
    }

    #[test]
    fn a_failed_release_then_everyone_waiting_is_stuck() {
        let mut h = H::default();
        h.call(1, "acquire", 0, 10, Ok).call(1, "release", 2000, 2100, Info);
        h.0.last_mut().unwrap().error = Some("connection reset".into());
        h.refused(2, 50, 20_000).refused(3, 300, 20_000);
        let r = h.check();
        assert_eq!(r.verdict, Verdict::Invalid);
        assert!(r.applies);
        assert_eq!((r.bound_ms, r.stuck_stretches, r.evidence_omitted), (10_000, 1, 0));
        let st = &r.stretches[0];
        assert_eq!((st.from_ns, st.to_ns, st.length_ms), (s(2100), s(20_000), 17_900.0));
        assert_eq!((st.freed_by, st.ended_by, st.granted_to), (FreedBy::ReleaseFailed, StretchEnd::EndOfHistory, None));
        assert_eq!(
            st.last_holder,
            Some(HoldEnding { process: 1, ended: HoldEnd::ReleaseFailed, at_ns: s(2100), error: Some("connection reset".into()) })
        );
        assert_eq!(st.waiting, [2, 3]);
        assert_eq!(r.longest_stuck_ms, 17_900.0);
    }

    /// Two clients taking turns for a minute: each released lock is granted to the other 10 ms
    /// later.
    fn contended() -> H {
        let mut h = H::default();
        h.call(1, "acquire", 0, 10, Ok);
        let mut t = 10;
        for round in 0..200 {
            let (holder, waiter) = if round % 2 == 0 { (1, 2) } else { (2, 1) };
            h.op(t + 5, waiter, Invoke, "acquire");
            h.call(holder, "release", t + 290, t + 300, Ok);
            h.op(t + 310, waiter, Ok, "acquire");
            t += 300;
        }
        h.call(1, "release", t + 290, t + 300, Ok);
        h
    }

    #[test]
    fn a_contended_run_is_not_stuck() {
        let r = contended().check();
        assert_eq!(r.verdict, Verdict::Valid, "{r:?}");
        assert!(r.stretches.is_empty());
        // The bound is in time, not in events: the same run checked against 5 ms is stuck
        // between every release and the next grant.
        let tight = check_stuck(&contended().events(), Duration::from_millis(5), 3);
        // (and from the first invoke to the first grant).
        assert_eq!((tight.verdict, tight.stuck_stretches, tight.stretches.len()), (Verdict::Invalid, 201, 3));
        assert_eq!(tight.evidence_omitted, 198);
    }

    #[test]
    fn a_live_holder_holding_long_is_not_stuck() {
        let mut h = H::default();
        // Client 1 holds for 30 s and says nothing until its release.
        h.call(1, "acquire", 0, 10, Ok).call(1, "release", 30_000, 30_010, Ok);
        h.refused(2, 50, 30_000).call(2, "acquire", 30_000, 30_020, Ok).call(2, "release", 30_300, 30_310, Ok);
        assert_eq!(h.check().verdict, Verdict::Valid, "{:?}", h.check());
    }

    /// Client 1 releases at 2 s; client 2 asks all along and is granted at `granted_at`.
    fn freed_late(granted_at: u64) -> H {
        let mut h = H::default();
        h.call(1, "acquire", 0, 10, Ok).call(1, "release", 1990, 2000, Ok);
        h.refused(2, 50, granted_at - 100).call(2, "acquire", granted_at - 100, granted_at, Ok);
        h.call(2, "release", granted_at + 300, granted_at + 310, Ok);
        h
    }

    #[test]
    fn a_lock_freed_late_is_stuck_only_past_the_bound() {
        let r = freed_late(14_000).check();
        assert_eq!(r.verdict, Verdict::Invalid);
        let st = &r.stretches[0];
        assert_eq!((st.from_ns, st.to_ns, st.length_ms), (s(2000), s(14_000), 12_000.0));
        assert_eq!((st.freed_by, st.ended_by, st.granted_to), (FreedBy::ReleaseOk, StretchEnd::Grant, Some(2)));
        assert_eq!(st.waiting, [2]);

        let r = freed_late(10_000).check();
        assert_eq!((r.verdict, r.stuck_stretches), (Verdict::Valid, 0), "8 s is within the bound");
    }

    /// Client 1's release fails at 2 s, client 2 asks and is granted at 28.5 s.
    fn waited_out(h: &mut H) -> &mut H {
        h.call(1, "acquire", 0, 10, Ok).call(1, "release", 1900, 2000, Info);
        h.refused(2, 50, 28_400).call(2, "acquire", 28_400, 28_500, Ok).call(2, "release", 28_800, 28_810, Ok)
    }

    #[test]
    fn unavailable_only_while_a_fault_is_active_is_not_stuck() {
        let mut h = H::default();
        waited_out(&mut h).fault(1500, "partition", "n1", "start", None).fault(28_000, "partition", "n1", "stop", None);
        let r = h.check();
        assert_eq!(r.verdict, Verdict::Valid, "{r:?}");

        // Without the fault, the same history is stuck from the release.
        let r = waited_out(&mut H::default()).check();
        assert_eq!((r.verdict, r.stretches[0].from_ns), (Verdict::Invalid, s(2000)));

        // A start that failed, or a skipped step, was no fault; another fault's stop heals nothing.
        let mut h = H::default();
        waited_out(&mut h)
            .fault(1500, "partition", "n1", "start", Some("iptables: permission denied"))
            .fault(1500, "pause", "n1", "skipped", Some("the same fault was active"))
            .fault(1600, "pause", "n2", "start", None)
            .fault(3000, "pause", "n1", "stop", None)
            .fault(5000, "pause", "n2", "stop", None);
        let r = h.check();
        assert_eq!(r.verdict, Verdict::Invalid);
        let st = &r.stretches[0];
        assert_eq!((st.from_ns, st.freed_by), (s(5000), FreedBy::FaultHealed));
        assert_eq!(st.healed_fault, Some(FaultRef { f: "pause".into(), node: Some("n2".into()) }));
        assert_eq!(st.last_holder.as_ref().map(|h| (h.process, h.ended)), Some((1, HoldEnd::ReleaseFailed)));
    }

    #[test]
    fn a_fault_starting_ends_a_stretch() {
        let mut h = H::default();
        waited_out(&mut h).fault(14_000, "partition", "n1", "start", None).fault(16_000, "partition", "n1", "stop", None);
        let r = h.check();
        assert_eq!(r.stuck_stretches, 2, "{r:?}");
        let ends: Vec<_> = r.stretches.iter().map(|st| (st.from_ns, st.to_ns, st.freed_by, st.ended_by)).collect();
        assert_eq!(
            ends,
            [
                (s(2000), s(14_000), FreedBy::ReleaseFailed, StretchEnd::FaultStarted),
                (s(16_000), s(28_500), FreedBy::FaultHealed, StretchEnd::Grant)
            ]
        );
    }

    /// Client 1 is granted the lock at 1 s and says nothing more; clients 2 and 3 ask until 20 s.
    fn killed_holder(h: &mut H) -> &mut H {
        h.call(1, "acquire", 990, 1000, Ok).refused(2, 0, 20_000).refused(3, 3100, 20_000)
    }

    #[test]
    fn a_killed_holders_lock_never_freed_is_stuck() {
        let r = killed_holder(&mut H::default()).check();
        assert_eq!(r.verdict, Verdict::Invalid);
        let st = &r.stretches[0];
        assert_eq!((st.from_ns, st.to_ns, st.freed_by, st.ended_by), (s(1000), s(20_000), FreedBy::HolderGone, StretchEnd::EndOfHistory));
        assert_eq!(st.last_holder, Some(HoldEnding { process: 1, ended: HoldEnd::HolderGone, at_ns: s(1000), error: None }));
        assert_eq!(st.waiting, [2, 3]);

        // Killed by the nemesis and started again as process 3: the stretch begins at the
        // restart (the kill's heal), and still names the holder that went.
        let mut h = H::default();
        killed_holder(&mut h).fault(1500, "kill", "client-1", "start", None).fault(3000, "kill", "client-1", "stop", None);
        let r = h.check();
        let st = &r.stretches[0];
        assert_eq!((st.from_ns, st.freed_by), (s(3000), FreedBy::FaultHealed));
        assert_eq!(st.healed_fault, Some(FaultRef { f: "kill".into(), node: Some("client-1".into()) }));
        assert_eq!(st.last_holder.as_ref().map(|h| (h.process, h.ended, h.at_ns)), Some((1, HoldEnd::HolderGone, s(1000))));
    }

    #[test]
    fn a_stretch_reads_as_a_sentence() {
        let mut h = H::default();
        h.call(1, "acquire", 0, 10, Ok).call(1, "release", 2000, 2100, Info).refused(2, 50, 13_000).refused(3, 300, 13_000);
        h.0[3].error = Some("connection reset".into());
        h.call(2, "acquire", 13_000, 14_000, Ok).call(2, "release", 14_100, 14_110, Ok);
        assert_eq!(
            h.check().stretches[0].in_words(),
            "from 2.1 s to 14.0 s (11.9 s) the lock was free and nobody was granted it while clients 2, 3 asked; \
             it began when client 1's release failed (connection reset); it ended when client 2 was granted it"
        );
        let mut h = H::default();
        killed_holder(&mut h).fault(1500, "kill", "client-1", "start", None).fault(3000, "kill", "client-1", "stop", None);
        assert_eq!(
            h.check().stretches[0].in_words(),
            "from 3.0 s to 20.0 s (17.0 s) the lock was free and nobody was granted it while clients 2, 3 asked; \
             it began when kill on client-1 was healed (before that, at 1.0 s, client 1 stopped while holding it: no release, \
             no more events); it lasted to the end of the history"
        );
    }

    #[test]
    fn a_release_ok_that_leaves_the_lock_taken_is_stuck() {
        let mut h = H::default();
        h.call(1, "acquire", 0, 10, Ok).call(1, "release", 1990, 2000, Ok).refused(1, 2100, 20_000).refused(2, 50, 20_000);
        let r = h.check();
        assert_eq!(r.verdict, Verdict::Invalid);
        let st = &r.stretches[0];
        assert_eq!((st.from_ns, st.freed_by, st.ended_by), (s(2000), FreedBy::ReleaseOk, StretchEnd::EndOfHistory));
        assert_eq!(st.waiting, [1, 2]);
    }

    #[test]
    fn asking_only_before_the_bound_passed_is_not_stuck() {
        // Free from 2 s to 20 s, but client 2 gave up at 5 s.
        let mut h = H::default();
        h.call(1, "acquire", 0, 10, Ok).call(1, "release", 1990, 2000, Info).refused(2, 50, 5000).op(20_000, 1, Ok, "read");
        assert_eq!(h.check().verdict, Verdict::Valid);
        // Asking once more at 12.5 s is still wanting it after the bound.
        h.call(2, "acquire", 12_500, 12_600, Fail);
        assert_eq!(h.check().verdict, Verdict::Invalid);
    }

    #[test]
    fn a_lock_nobody_asked_for_is_not_stuck_however_long_it_was_free() {
        // Free from 2 s; nobody asks until 19.9 s, and that ask is granted at once.
        let mut h = H::default();
        h.call(1, "acquire", 0, 10, Ok).call(1, "release", 1990, 2000, Ok).call(2, "acquire", 19_900, 19_901, Ok);
        h.call(2, "release", 19_950, 19_960, Ok);
        assert_eq!(h.check().verdict, Verdict::Valid, "{:?}", h.check());
        // Asked from 5 s on, granted only at 19.9 s: stuck.
        let mut h = H::default();
        h.call(1, "acquire", 0, 10, Ok).call(1, "release", 1990, 2000, Ok).refused(2, 5000, 19_800).call(2, "acquire", 19_850, 19_901, Ok);
        h.call(2, "release", 19_950, 19_960, Ok);
        assert_eq!(h.check().verdict, Verdict::Invalid);
    }

    #[test]
    fn a_short_free_stretch_at_the_end_with_a_refused_waiter_is_unknown() {
        let mut h = H::default();
        h.call(1, "acquire", 0, 10, Ok).call(1, "release", 14_990, 15_000, Info).refused(2, 100, 20_000);
        let r = h.check();
        assert_eq!((r.verdict, r.stuck_stretches), (Verdict::Unknown, 0), "{r:?}");
        assert!(r.notes[0].contains("5.0 s after the lock became free (at 15.0 s)"), "{:?}", r.notes);

        // A waiter still pending at the end came to nothing too.
        let mut h = H::default();
        h.call(1, "acquire", 0, 10, Ok).call(1, "release", 14_990, 15_000, Ok).op(50, 2, Invoke, "acquire").op(20_000, 1, Ok, "read");
        assert_eq!(h.check().verdict, Verdict::Unknown);

        // Nobody asking at the end: nothing in doubt.
        let mut h = H::default();
        h.call(1, "acquire", 0, 10, Ok).call(1, "release", 14_990, 15_000, Info).refused(2, 50, 14_000).op(20_000, 2, Ok, "read");
        assert_eq!(h.check().verdict, Verdict::Valid);
    }

    #[test]
    fn a_history_without_acquires_does_not_apply() {
        let mut h = H::default();
        h.call(1, "apply", 0, 10, Ok).call(2, "apply", 20, 30_000, Info).fault(5, "pause", "n1", "start", None);
        let r = h.check();
        assert!(!r.applies);
        assert_eq!(r.verdict, Verdict::Valid);
        let r = check_stuck(&[], BOUND, 10);
        assert_eq!((r.applies, r.verdict), (false, Verdict::Valid));
    }

    #[test]
    fn a_stretch_from_the_start_and_the_words_it_serialises_in() {
        // Nobody is granted the lock for 12 s from the first event.
        let mut h = H::default();
        h.refused(1, 0, 12_000).call(1, "acquire", 12_000, 12_100, Ok).call(1, "release", 12_200, 12_210, Ok);
        let r = h.check();
        assert_eq!(r.stretches[0].freed_by, FreedBy::Start);
        assert_eq!(r.stretches[0].last_holder, None);
        let json = serde_json::to_value(&r.stretches[0]).unwrap();
        assert_eq!((json["freed_by"].as_str(), json["ended_by"].as_str()), (Some("start"), Some("grant")));
        assert_eq!(serde_json::to_value(FreedBy::ReleaseFailed).unwrap(), "release-failed");
        assert_eq!(serde_json::to_value(StretchEnd::EndOfHistory).unwrap(), "end-of-history");
    }

    #[test]
    fn several_keys_are_judged_as_one_lock_with_a_note() {
        let mut h = H::default();
        h.call(1, "acquire", 0, 10, Ok).call(1, "release", 20, 30, Ok).call(2, "acquire", 40, 50, Ok).call(2, "release", 60, 70, Ok);
        h.0[0].key = Some("a".into());
        h.0[4].key = Some("b".into());
        let r = h.check();
        assert_eq!(r.verdict, Verdict::Valid);
        assert!(r.notes[0].contains("2 keys"), "{:?}", r.notes);
    }
}
