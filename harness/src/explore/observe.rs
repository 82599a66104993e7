//! What one run showed the search: whether it failed (and which property, in which episode),
//! and, per episode, the patterns of the lock's behaviour around it, which the guided strategy
//! counts as new or not. Everything here is read from the run's results and history.

use checker::{CheckResults, Event, EventType, Process, Verdict};
use results::explore::Property;
use results::{FaultPhase, RunResults};
use std::collections::{BTreeMap, BTreeSet};

/// What the lock did around an episode, as the search tells behaviours apart (not code
/// coverage: what the lock's clients and resource saw).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, strum::IntoStaticStr, strum::EnumIter)]
#[strum(serialize_all = "kebab-case")]
pub enum Pattern {
    /// An acquire ended with its outcome unknown.
    AcquireUnknown,
    /// An acquire gave up (refused, or its wait timed out).
    AcquireRefused,
    /// A renewal failed or its outcome is unknown.
    RenewFailed,
    /// A release was refused: the lock was no longer the client's.
    ReleaseRefused,
    /// A release ended with its outcome unknown.
    ReleaseUnknown,
    /// A grant while another client believed it still held the lock.
    GrantWhileHeld,
    /// The resource rejected a write: the fence caught a stale holder.
    WriteFenced,
    /// A write ended with its outcome unknown.
    WriteUnknown,
    /// A client held its write back (its lock known lost, or its check failed).
    WriteHeldBack,
    /// A client process was started again (killed, or its program exited).
    ClientRestarted,
    /// Nobody was granted the lock for longer than its TTL.
    LongWithoutGrant,
    /// A lost update or an interleaved section in the resource's record.
    LostUpdate,
    /// The checker's stuck stretch began here.
    Stuck,
}

impl Pattern {
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// A failure a run showed.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    pub property: Property,
    /// The episode it happened in (by the nemesis's records); None: before any fault.
    pub episode: Option<u32>,
    /// When (history ns).
    pub at_ns: u64,
}

/// One episode as the run saw it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EpisodeSeen {
    /// Its faults took effect: each started without error, none was skipped, and no heal found
    /// one had not taken effect.
    pub fired: bool,
    /// Skipped (trigger never held, not reached), with why.
    pub skipped: Option<String>,
    pub patterns: BTreeSet<Pattern>,
}

/// What a run showed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observation {
    /// Why the run cannot count as a finding, if it cannot: interrupted, an error, a fault that
    /// failed before the failure.
    pub untrusted: Option<String>,
    pub failure: Option<Failure>,
    /// By episode index.
    pub episodes: Vec<EpisodeSeen>,
    /// The failure in the lock's words (who held, which fault, what broke).
    pub story: Vec<String>,
}

impl Observation {
    /// The failure, when the run can vouch for it.
    pub fn finding(&self) -> Option<&Failure> {
        self.failure.as_ref().filter(|_| self.untrusted.is_none())
    }
}

/// Reads a finished run. `episodes`: how many the candidate had; `ttl_ms`: for the long gap.
pub fn observe(results: &RunResults, events: &[Event], episodes: usize, ttl_ms: u64, error: Option<&str>) -> Observation {
    let by_index: BTreeMap<u64, &Event> = events.iter().map(|e| (e.index, e)).collect();
    let starts = episode_starts(events, episodes);
    let mut seen: Vec<EpisodeSeen> = vec![EpisodeSeen::default(); episodes];
    // An episode took effect when each of its faults started without error, and none was
    // skipped or found by its heal not to have taken effect (results.json's not_applied).
    let mut failed = vec![None; episodes];
    for e in events.iter().filter(|e| e.process.is_named(Process::NEMESIS)) {
        let Some(i) = e.episode.map(|i| i as usize).filter(|i| *i < episodes) else { continue };
        match (FaultPhase::of_event(e), &e.error) {
            (Some(FaultPhase::Start), None) => seen[i].fired = true,
            (Some(FaultPhase::Start), Some(why)) => failed[i] = failed[i].take().or(Some(format!("its injection failed: {why}"))),
            (Some(FaultPhase::Skipped), why) => failed[i] = failed[i].take().or(Some(why.clone().unwrap_or_else(|| "skipped".into()))),
            _ => {}
        }
    }
    for (i, n) in results.not_applied.iter().filter_map(|n| Some((episode_named(n)?, n))) {
        if let Some(slot) = failed.get_mut(i) {
            *slot = slot.take().or(Some(n.clone()));
        }
    }
    for (s, why) in seen.iter_mut().zip(failed) {
        if why.is_some() {
            s.fired = false;
            s.skipped = why;
        }
    }
    let window = |t: u64| starts.iter().rposition(|s| s.is_some_and(|s| s <= t));
    for (pattern, t) in patterns(events, &results.properties, &by_index, results.clients as u64, ttl_ms) {
        if let Some(i) = window(t) {
            seen[i].patterns.insert(pattern);
        }
    }
    let failure = failure(&results.properties, &by_index).map(|(property, at_ns)| Failure {
        property,
        episode: window(at_ns).map(|i| i as u32),
        at_ns,
    });
    let untrusted = untrusted(results, error, failure.as_ref(), &seen);
    let story = failure.as_ref().map(|f| super::story::tell(f, results, events)).unwrap_or_default();
    Observation { untrusted, failure, episodes: seen, story }
}

/// The episode a not_applied entry names (`nemesis.episode[2] (pause on …`).
fn episode_named(entry: &str) -> Option<usize> {
    entry.strip_prefix("nemesis.episode[")?.split_once(']')?.0.parse().ok()
}

/// When each episode's first fault started (history ns), by index.
fn episode_starts(events: &[Event], episodes: usize) -> Vec<Option<u64>> {
    let mut starts = vec![None; episodes];
    for e in events.iter().filter(|e| e.process.is_named(Process::NEMESIS) && FaultPhase::of_event(e) == Some(FaultPhase::Start)) {
        if let Some(slot) = e.episode.and_then(|i| starts.get_mut(i as usize)) {
            slot.get_or_insert(e.time);
        }
    }
    starts
}

/// The property that failed, most telling first, and when.
fn failure(p: &CheckResults, by_index: &BTreeMap<u64, &Event>) -> Option<(Property, u64)> {
    let time = |index: u64| by_index.get(&index).map(|e| e.time).unwrap_or(0);
    if p.resource_safety.verdict == Verdict::Invalid {
        let at = p.resource_safety.evidence.first().map(|i| time(i.write_index)).or_else(|| last_resource_write(by_index)).unwrap_or(0);
        return Some((Property::ResourceSafety, at));
    }
    if p.fencing.applies && p.fencing.verdict == Verdict::Invalid {
        let at = p.fencing.write_evidence.first().or(p.fencing.grant_evidence.first()).map(|pair| pair.later.time).unwrap_or(0);
        return Some((Property::Fencing, at));
    }
    if p.exactly_once.applies && p.exactly_once.verdict == Verdict::Invalid {
        let at = p.exactly_once.applied_twice_evidence.first().and_then(|a| a.writes.last()).map(|i| time(*i)).unwrap_or(0);
        return Some((Property::ExactlyOnce, at));
    }
    if p.stuck.applies && p.stuck.verdict == Verdict::Invalid {
        return Some((Property::Stuck, p.stuck.stretches.first().map(|s| s.from_ns).unwrap_or(0)));
    }
    None
}

/// A lost update with no interleaving to show: the last accepted write is where it shows.
fn last_resource_write(by_index: &BTreeMap<u64, &Event>) -> Option<u64> {
    by_index.values().rev().find(|e| e.process.is_named(Process::RESOURCE) && e.f == "write").map(|e| e.time)
}

/// Why a run's failure cannot be a finding: the run did not end as a run should, or a fault
/// of the failing episode (or one before it) did not take effect, so the schedule that
/// failed is not the one written.
fn untrusted(results: &RunResults, error: Option<&str>, failure: Option<&Failure>, seen: &[EpisodeSeen]) -> Option<String> {
    if results.interrupted {
        return Some(error.unwrap_or("the run was cut short").to_string());
    }
    if let Some(e) = error {
        return Some(e.to_string());
    }
    let up_to = failure.and_then(|f| f.episode).map_or(0, |i| i as usize + 1);
    seen.iter()
        .take(up_to)
        .enumerate()
        .find(|(_, s)| !s.fired)
        .map(|(i, s)| format!("nemesis.episode[{i}] did not take effect: {}", s.skipped.as_deref().unwrap_or("no record of its start")))
}

/// Every pattern the run shows, with when.
fn patterns(events: &[Event], p: &CheckResults, by_index: &BTreeMap<u64, &Event>, clients: u64, ttl_ms: u64) -> Vec<(Pattern, u64)> {
    let mut out = vec![];
    let mut holding: BTreeSet<u64> = BTreeSet::new();
    let mut restarted: BTreeSet<u64> = BTreeSet::new();
    let mut last_grant: Option<u64> = None;
    // Client K's processes are K + clients × incarnation.
    let client_of = |p: u64| (p - 1) % clients.max(1) + 1;
    for e in events {
        if e.process.is_named(Process::RESOURCE) && e.f == "write" && e.kind == EventType::Fail {
            out.push((Pattern::WriteFenced, e.time));
        }
        // A killed client holds nothing any more.
        if e.process.is_named(Process::NEMESIS) && e.f == "kill" && FaultPhase::of_event(e) == Some(FaultPhase::Start) {
            if let Some(k) = e.node.as_deref().and_then(|n| n.strip_prefix("client-")).and_then(|k| k.parse::<u64>().ok()) {
                holding.retain(|p| client_of(*p) != k);
            }
        }
        let Process::Client(c) = e.process else { continue };
        if c > clients && restarted.insert(c) {
            out.push((Pattern::ClientRestarted, e.time));
        }
        let pattern = match (e.f.as_str(), e.kind) {
            ("acquire", EventType::Ok) => {
                if holding.iter().any(|h| *h != c) {
                    out.push((Pattern::GrantWhileHeld, e.time));
                }
                holding.insert(c);
                if last_grant.is_some_and(|g| e.time - g > ttl_ms * 1_000_000) {
                    out.push((Pattern::LongWithoutGrant, e.time));
                }
                last_grant = Some(e.time);
                None
            }
            ("acquire", EventType::Info) => Some(Pattern::AcquireUnknown),
            ("acquire", EventType::Fail) => Some(Pattern::AcquireRefused),
            ("renew", EventType::Fail | EventType::Info) => Some(Pattern::RenewFailed),
            ("release", EventType::Invoke) => {
                holding.remove(&c);
                None
            }
            ("release", EventType::Fail) => Some(Pattern::ReleaseRefused),
            ("release", EventType::Info) => Some(Pattern::ReleaseUnknown),
            ("write", EventType::Info) => Some(Pattern::WriteUnknown),
            ("write", EventType::Fail) | ("check", EventType::Fail) => Some(Pattern::WriteHeldBack),
            _ => None,
        };
        out.extend(pattern.map(|pattern| (pattern, e.time)));
    }
    for i in &p.resource_safety.evidence {
        if let Some(e) = by_index.get(&i.write_index) {
            out.push((Pattern::LostUpdate, e.time));
        }
    }
    for s in &p.stuck.stretches {
        out.push((Pattern::Stuck, s.from_ns));
    }
    out
}

#[cfg(test)]
mod tests;
