//! What the timeline shows, extracted from the history in one pass: holds as each client
//! believed them, writes as the resource decided them, faults as the nemesis applied them.
//! Drawing is separate (timeline_svg) so other views can reuse this model.

use checker::{Event, EventType, Process};
use results::FaultPhase;
use std::collections::{BTreeSet, HashMap};

/// A lock hold as the client believed it: acquire ok → its next release invoke.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Hold {
    pub lane: usize,
    pub client: u64,
    pub start: u64,
    pub end: u64,
    /// No release was seen: the hold ends at the client's next acquire or at the history's end.
    pub unreleased: bool,
    pub token: Option<u64>,
    /// Overlaps a hold of another client: two clients believed they held the lock.
    pub overlaps: bool,
}

/// A write as the resource received it, in the lane of the client that sent it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct WriteMark {
    pub lane: usize,
    pub time: u64,
    pub accepted: bool,
    pub token: Option<u64>,
    pub value: Option<i64>,
}

/// A critical section as the client ran it: its read returned → it sent its write (or gave up).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Section {
    pub lane: usize,
    pub start: u64,
    pub end: u64,
}

/// A fault from its start to its stop record (or to the history's end if never healed).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FaultBand {
    pub fault: String,
    pub node: Option<String>,
    pub start: u64,
    pub end: u64,
    pub healed: bool,
    /// Error recorded when starting it: the fault was not (fully) applied.
    pub error: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Timeline {
    /// Client process numbers, ascending; a lane index points here.
    pub lanes: Vec<u64>,
    pub holds: Vec<Hold>,
    pub writes: Vec<WriteMark>,
    pub sections: Vec<Section>,
    /// Writes whose resource record names no client: they have no lane.
    pub writes_without_client: u64,
    pub faults: Vec<FaultBand>,
    /// Time of the last event (ns); at least 1 so scales never divide by zero.
    pub end: u64,
}

impl Timeline {
    /// `extra_clients`: processes that should have a lane even without events (e.g. workers
    /// that died before their first event).
    pub fn from_history(history: &[Event], extra_clients: impl IntoIterator<Item = u64>) -> Self {
        let end = history.iter().map(|e| e.time).max().unwrap_or(0).max(1);
        let mut clients: BTreeSet<u64> = extra_clients.into_iter().collect();
        for e in history {
            if let Some(c) = e.process.client() {
                clients.insert(c);
            } else if e.process.is_named(Process::RESOURCE) {
                clients.extend(e.client);
            }
        }
        let lanes: Vec<u64> = clients.into_iter().collect();
        let lane_of: HashMap<u64, usize> = lanes.iter().enumerate().map(|(i, c)| (*c, i)).collect();

        let mut holds = Vec::new();
        let mut open: HashMap<u64, (u64, Option<u64>)> = HashMap::new();
        let mut writes = Vec::new();
        let mut sections = Vec::new();
        let mut in_section: HashMap<u64, u64> = HashMap::new();
        let mut writes_without_client = 0;
        let mut faults = Faults::default();
        for e in history {
            match &e.process {
                Process::Client(c) => {
                    let close = |start: u64, token, end: u64, unreleased| Hold {
                        lane: lane_of[c],
                        client: *c,
                        start,
                        end: end.max(start),
                        unreleased,
                        token,
                        overlaps: false,
                    };
                    match (e.f.as_str(), e.kind) {
                        ("read", EventType::Ok) => {
                            in_section.insert(*c, e.time);
                        }
                        ("write", EventType::Invoke) | ("release", EventType::Invoke) => {
                            if let Some(start) = in_section.remove(c) {
                                sections.push(Section { lane: lane_of[c], start, end: e.time.max(start) });
                            }
                            if e.f == "release" {
                                if let Some((s, t)) = open.remove(c) {
                                    holds.push(close(s, t, e.time, false));
                                }
                            }
                        }
                        ("acquire", EventType::Ok) => {
                            // A second grant without a release closes the first: a client
                            // holds at most one grant of the lock at a time.
                            if let Some((s, t)) = open.insert(*c, (e.time, e.token)) {
                                holds.push(close(s, t, e.time, true));
                            }
                        }
                        ("acquire", EventType::Invoke) => {
                            // Asking again means the client no longer believes it holds it.
                            if let Some((s, t)) = open.remove(c) {
                                holds.push(close(s, t, e.time, true));
                            }
                        }
                        _ => {}
                    }
                }
                Process::Named(n) if n == Process::RESOURCE => {
                    let accepted = match e.kind {
                        EventType::Ok => true,
                        EventType::Fail => false,
                        _ => continue,
                    };
                    if e.f != "write" {
                        continue;
                    }
                    match e.client.and_then(|c| lane_of.get(&c)) {
                        Some(&lane) => writes.push(WriteMark { lane, time: e.time, accepted, token: e.token, value: e.value.as_i64() }),
                        None => writes_without_client += 1,
                    }
                }
                Process::Named(n) if n == Process::NEMESIS => faults.record(e),
                Process::Named(_) => {}
            }
        }
        for (c, (s, t)) in open {
            holds.push(Hold { lane: lane_of[&c], client: c, start: s, end: end.max(s), unreleased: true, token: t, overlaps: false });
        }
        mark_overlaps(&mut holds);
        Timeline { lanes, holds, writes, sections, writes_without_client, faults: faults.finish(end), end }
    }
}

/// Pairs nemesis start/stop records per (fault, node).
#[derive(Default)]
struct Faults {
    open: HashMap<(String, Option<String>), (u64, Option<String>)>,
    done: Vec<FaultBand>,
}

impl Faults {
    fn record(&mut self, e: &Event) {
        let key = (e.f.clone(), e.node.clone());
        match FaultPhase::of_event(e) {
            Some(FaultPhase::Start) => {
                // A repeated start while active keeps the first: the fault is already on.
                self.open.entry(key).or_insert((e.time, e.error.clone()));
            }
            Some(FaultPhase::Stop) => {
                if let Some((start, error)) = self.open.remove(&key) {
                    self.done.push(band(key, start, e.time, true, error));
                }
            }
            _ => {}
        }
    }

    fn finish(mut self, end: u64) -> Vec<FaultBand> {
        for (key, (start, error)) in self.open {
            self.done.push(band(key, start, end, false, error));
        }
        self.done.sort_by(|a, b| (a.start, &a.fault, &a.node).cmp(&(b.start, &b.fault, &b.node)));
        self.done
    }
}

fn band(key: (String, Option<String>), start: u64, end: u64, healed: bool, error: Option<String>) -> FaultBand {
    FaultBand { fault: key.0, node: key.1, start, end: end.max(start), healed, error }
}

/// Sets `overlaps` on every hold that shares time with a hold of another client.
/// O(n log n): holds sorted by start; a hold overlaps an earlier one iff the latest end among
/// earlier holds of other clients is after its start, and a later one iff the next-starting
/// hold of another client starts before its end (a client's own holds never overlap).
fn mark_overlaps(holds: &mut [Hold]) {
    holds.sort_by_key(|h| (h.start, h.end, h.client));
    // The two latest ends seen so far, from two different clients, so that one of them is
    // always from a client other than the current hold's.
    let mut best: [Option<(u64, u64)>; 2] = [None, None]; // (end, client)
    let mut flags = vec![false; holds.len()];
    for i in 0..holds.len() {
        let h = &holds[i];
        let other_end = best.iter().flatten().find(|(_, c)| *c != h.client).map(|(e, _)| *e);
        if other_end.is_some_and(|e| e > h.start) {
            flags[i] = true;
        }
        if let Some(next) = holds[i + 1..].iter().find(|n| n.client != h.client) {
            if next.start < h.end {
                flags[i] = true;
            }
        }
        update_best(&mut best, h.end, h.client);
    }
    for (h, f) in holds.iter_mut().zip(flags) {
        h.overlaps = f;
    }
}

fn update_best(best: &mut [Option<(u64, u64)>; 2], end: u64, client: u64) {
    let entry = Some((end, client));
    match *best {
        [Some((e0, c0)), _] if c0 == client => best[0] = Some((e0.max(end), c0)),
        [_, Some((e1, c1))] if c1 == client => best[1] = Some((e1.max(end), c1)),
        [b0, _] if b0.is_none_or(|(e0, _)| end > e0) => *best = [entry, b0],
        [_, b1] if b1.is_none_or(|(e1, _)| end > e1) => best[1] = entry,
        _ => {}
    }
    // Keep the latest end first (a client's own end may have grown past the other).
    if best[1].map(|b| b.0) > best[0].map(|b| b.0) {
        best.swap(0, 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(time: u64, process: Process, kind: EventType, f: &str) -> Event {
        Event::new(time, process, kind, f)
    }

    fn hold(client: u64, start: u64, end: u64) -> Hold {
        Hold { lane: 0, client, start, end, unreleased: false, token: None, overlaps: false }
    }

    #[test]
    fn overlaps_are_marked_on_both_sides_only_across_clients() {
        let mut hs = vec![
            hold(1, 0, 100), // overlaps 2's [50, 60]
            hold(2, 50, 60),
            hold(2, 200, 300), // alone: only its own client around
            hold(1, 400, 500),
            hold(3, 500, 600), // touches, does not overlap
            hold(3, 700, 800), // inside 1's hold below
            hold(1, 650, 900),
        ];
        mark_overlaps(&mut hs);
        let flagged: Vec<(u64, u64)> = hs.iter().filter(|h| h.overlaps).map(|h| (h.client, h.start)).collect();
        assert_eq!(flagged, vec![(1, 0), (2, 50), (1, 650), (3, 700)]);
    }

    #[test]
    fn a_clients_own_holds_never_overlap_it() {
        // Skewed timestamps can make one client's holds overlap; that is not two holders.
        // Client 2's hold is found even though client 1's own hold ends latest.
        let mut hs = vec![hold(1, 0, 1000), hold(1, 500, 600), hold(2, 1100, 1200), hold(2, 1150, 1300)];
        mark_overlaps(&mut hs);
        assert!(hs.iter().all(|h| !h.overlaps));
        let mut hs = vec![hold(2, 0, 300), hold(1, 10, 1000), hold(1, 200, 250)];
        mark_overlaps(&mut hs);
        assert!(hs.iter().all(|h| h.overlaps));
    }

    #[test]
    fn holds_writes_and_faults_are_extracted() {
        let c1 = Process::Client(1);
        let mut acq = ev(10, c1.clone(), EventType::Ok, "acquire");
        acq.token = Some(7);
        let mut w = ev(20, Process::Named("resource".into()), EventType::Fail, "write");
        w.client = Some(1);
        w.token = Some(7);
        w.value = 3.into();
        let mut start = ev(15, Process::Named("nemesis".into()), EventType::Info, "pause");
        start.node = Some("client-1".into());
        start.value = FaultPhase::Start.into();
        let history = vec![
            ev(5, c1.clone(), EventType::Invoke, "acquire"),
            acq,
            ev(12, c1.clone(), EventType::Ok, "read"),
            start,
            ev(18, c1.clone(), EventType::Invoke, "write"),
            w,
        ];
        let t = Timeline::from_history(&history, [4]);
        assert_eq!(t.lanes, vec![1, 4]);
        assert_eq!(t.holds.len(), 1);
        assert!(t.holds[0].unreleased && t.holds[0].token == Some(7) && t.holds[0].end == 20);
        assert_eq!(t.writes, vec![WriteMark { lane: 0, time: 20, accepted: false, token: Some(7), value: Some(3) }]);
        assert_eq!(t.sections, vec![Section { lane: 0, start: 12, end: 18 }]);
        assert_eq!(t.faults.len(), 1);
        assert!(!t.faults[0].healed && t.faults[0].end == 20);
    }
}
