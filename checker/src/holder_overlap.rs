//! Holder overlap: times at which two clients each believed they held the same lock.
//!
//! A client believes it holds a key from its acquire ok until the first of: its next release
//! invoke or acquire invoke on that key, the end of the history, and its own validity end
//! (acquire-ok time + `validity_ms`; a renew ok with `validity_ms` moves that end). Two
//! different clients' beliefs on one key that intersect are one overlap.
//!
//! This is what the clients thought, not what the resource saw: a fenced system can have
//! believed overlaps and still lose nothing, so the run outcome does not depend on it (see
//! `lib.rs`); resource safety and fencing say whether an overlap did damage.
//!
//! Two readings are reported. The main one honours validity: a client that checks its
//! remaining validity before writing stops believing at its validity end. The one ignoring
//! validity runs to the release: that is what a client that never checks the clock acts on
//! (the pause between check and write lands in the difference between the two).
//!
//! O(n log n + p): per key, held intervals sorted by start are swept against the ones still
//! held; p, the overlapping pairs, is at most n times the number of simultaneous holders.

use crate::history::{Event, EventType};
use crate::verdict::Verdict;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BinaryHeap, HashMap};

const NS_PER_MS: u64 = 1_000_000;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct HolderOverlap {
    pub verdict: Verdict,
    /// Client acquire ok events.
    pub acquires: u64,
    pub acquires_with_validity: u64,
    /// Pairs of intersecting beliefs (validity honoured).
    pub overlaps: u64,
    /// Summed over pairs: a moment shared by three holders counts once per pair.
    pub total_overlap_ms: f64,
    pub longest_overlap_ms: f64,
    /// Overlaps by start time, at most `max_evidence`.
    pub evidence: Vec<Overlap>,
    pub evidence_omitted: u64,
    /// The same counts with beliefs running to the release, whatever the validity said.
    pub believed_overlap_ignoring_validity: OverlapStats,
    pub notes: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct OverlapStats {
    pub overlaps: u64,
    pub total_overlap_ms: f64,
    pub longest_overlap_ms: f64,
}

/// Two clients believing they hold `key` from `start_time` to `end_time` (ns).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Overlap {
    pub key: Option<String>,
    /// The earlier holder first.
    pub processes: [u64; 2],
    /// `Event.index` of each holder's acquire ok, in the order of `processes`.
    pub acquire_indices: [u64; 2],
    pub start_time: u64,
    pub end_time: u64,
    pub duration_ms: f64,
}

impl HolderOverlap {
    /// The result when nothing was checked; also what an older results.json without this
    /// property reads as.
    pub fn not_checked() -> HolderOverlap {
        HolderOverlap {
            verdict: Verdict::Unknown,
            acquires: 0,
            acquires_with_validity: 0,
            overlaps: 0,
            total_overlap_ms: 0.0,
            longest_overlap_ms: 0.0,
            evidence: Vec::new(),
            evidence_omitted: 0,
            believed_overlap_ignoring_validity: OverlapStats::default(),
            notes: Vec::new(),
        }
    }
}

/// One belief, from acquire ok to `until` (release / next acquire / end of history).
struct Held {
    process: u64,
    acquire_index: u64,
    start: u64,
    until: u64,
    validity_end: Option<u64>,
}

struct Open {
    acquire_index: u64,
    start: u64,
    validity_end: Option<u64>,
}

/// Computes believed holder overlaps, keeping at most `max_evidence` overlaps as evidence.
pub fn check_holder_overlap(events: &[Event], max_evidence: usize) -> HolderOverlap {
    let mut r = HolderOverlap::not_checked();
    let mut open: HashMap<(u64, Option<&str>), Open> = HashMap::new();
    let mut held: BTreeMap<Option<&str>, Vec<Held>> = BTreeMap::new();
    let end_of_history = events.iter().map(|e| e.time).max().unwrap_or(0);

    for e in events {
        let Some(process) = e.process.client() else {
            continue;
        };
        let key = e.key.as_deref();
        let close = |open: &mut HashMap<_, Open>, held: &mut BTreeMap<_, Vec<Held>>| {
            if let Some(o) = open.remove(&(process, key)) {
                held.entry(key).or_default().push(Held {
                    process,
                    acquire_index: o.acquire_index,
                    start: o.start,
                    until: e.time,
                    validity_end: o.validity_end,
                });
            }
        };
        let validity_end = e.validity_ms.map(|v| e.time.saturating_add(v.saturating_mul(NS_PER_MS)));
        match (e.f.as_str(), e.kind) {
            ("acquire" | "release", EventType::Invoke) => close(&mut open, &mut held),
            ("acquire", EventType::Ok) => {
                close(&mut open, &mut held);
                r.acquires += 1;
                r.acquires_with_validity += u64::from(validity_end.is_some());
                let o = Open { acquire_index: e.index, start: e.time, validity_end };
                open.insert((process, key), o);
            }
            ("renew", EventType::Ok) => {
                if let (Some(o), Some(end)) = (open.get_mut(&(process, key)), validity_end) {
                    o.validity_end = Some(end);
                }
            }
            _ => {}
        }
    }
    for ((process, key), o) in open {
        held.entry(key).or_default().push(Held {
            process,
            acquire_index: o.acquire_index,
            start: o.start,
            until: end_of_history,
            validity_end: o.validity_end,
        });
    }

    // The earliest `max_evidence` overlaps, chosen with a bounded max-heap: a broken lock can
    // produce overlaps quadratic in the clients, and only a few are worth showing.
    let mut kept: BinaryHeap<Candidate> = BinaryHeap::new();
    let mut ignoring = Tally::default();
    let mut honouring = Tally::default();
    let keys: Vec<Option<&str>> = held.keys().copied().collect();
    for (key_no, list) in held.values().enumerate() {
        let believed = |h: &Held| h.validity_end.map_or(h.until, |v| v.min(h.until));
        sweep(list, believed, |o| {
            honouring.add(&o);
            kept.push(Candidate {
                start: o.start,
                acquire_indices: [o.a.acquire_index, o.b.acquire_index],
                end: o.end,
                processes: [o.a.process, o.b.process],
                key_no,
            });
            if kept.len() > max_evidence {
                kept.pop();
                r.evidence_omitted += 1;
            }
        });
        sweep(list, |h| h.until, |o| ignoring.add(&o));
    }
    r.overlaps = honouring.count;
    r.total_overlap_ms = ms(honouring.total);
    r.longest_overlap_ms = ms(honouring.longest);
    r.believed_overlap_ignoring_validity =
        OverlapStats { overlaps: ignoring.count, total_overlap_ms: ms(ignoring.total), longest_overlap_ms: ms(ignoring.longest) };
    r.evidence = kept
        .into_sorted_vec()
        .into_iter()
        .map(|c| Overlap {
            key: keys[c.key_no].map(str::to_string),
            processes: c.processes,
            acquire_indices: c.acquire_indices,
            start_time: c.start,
            end_time: c.end,
            duration_ms: ms(c.end - c.start),
        })
        .collect();

    if r.acquires > 0 && r.acquires_with_validity == 0 {
        r.notes.push(
            "no grant carried validity_ms: clients are taken to believe they hold the lock \
             until they release it"
                .into(),
        );
    }
    r.verdict = if r.overlaps > 0 {
        Verdict::Invalid
    } else if r.acquires == 0 {
        Verdict::Unknown
    } else {
        Verdict::Valid
    };
    r
}

/// An intersection found by [`sweep`]: `a` started first.
struct Found<'a> {
    a: &'a Held,
    b: &'a Held,
    start: u64,
    end: u64,
}

/// An overlap kept as evidence; field order is the report order (start, then acquires).
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Candidate {
    start: u64,
    acquire_indices: [u64; 2],
    end: u64,
    processes: [u64; 2],
    key_no: usize,
}

#[derive(Default)]
struct Tally {
    count: u64,
    total: u64,
    longest: u64,
}

impl Tally {
    fn add(&mut self, o: &Found) {
        let len = o.end - o.start;
        self.count += 1;
        self.total = self.total.saturating_add(len);
        self.longest = self.longest.max(len);
    }
}

/// Calls `found` for every pair of different processes whose [start, end(h)) intersect.
fn sweep<'a>(list: &'a [Held], end: impl Fn(&Held) -> u64, mut found: impl FnMut(Found<'a>)) {
    let mut order: Vec<(&Held, u64)> = list.iter().map(|h| (h, end(h))).filter(|(h, e)| *e > h.start).collect();
    order.sort_by_key(|(h, _)| (h.start, h.acquire_index));
    // Still held at the current start; small (the simultaneous holders), so a plain Vec.
    let mut active: Vec<(&Held, u64)> = Vec::new();
    for (b, b_end) in order {
        active.retain(|(_, a_end)| *a_end > b.start);
        for &(a, a_end) in &active {
            if a.process != b.process {
                found(Found { a, b, start: b.start, end: a_end.min(b_end) });
            }
        }
        active.push((b, b_end));
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / NS_PER_MS as f64
}
