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

mod scan;

use crate::history::Event;
use crate::verdict::Verdict;
use scan::{free_intervals, scan, Attempts, Cause};
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
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
mod tests;
