//! A failure in the lock's words, from the run that showed it: which fault, who held, which
//! grant or write broke what. The evidence is the checker's (results.json); this only reads
//! it aloud, with the history's times.

use super::observe::Failure;
use checker::{Event, EventType, Process};
use results::explore::Property;
use results::{FaultPhase, RunResults};
use std::collections::BTreeMap;

/// At most this many of the clients' events are told before the failure.
const CLIENT_EVENTS_TOLD: usize = 12;

pub fn tell(failure: &Failure, results: &RunResults, events: &[Event]) -> Vec<String> {
    let by_index: BTreeMap<u64, &Event> = events.iter().map(|e| (e.index, e)).collect();
    let mut timed: Vec<(u64, String)> = vec![];
    let faults: Vec<&Event> = events
        .iter()
        .filter(|e| e.process.is_named(Process::NEMESIS) && failure.episode.is_some() && e.episode == failure.episode)
        .collect();
    let from = faults.first().map_or(0, |e| e.time.saturating_sub(2_000_000_000));
    for e in &faults {
        let what = match FaultPhase::of_event(e) {
            Some(FaultPhase::Start) => "started",
            Some(FaultPhase::Stop) => "healed",
            _ => continue,
        };
        let detail = e.detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default();
        timed.push((e.time, format!("{}: {} on {}{detail} {what}", at(e.time), e.f, e.node.as_deref().unwrap_or("?"))));
    }
    // What the clients did meanwhile that a reader needs: grants, renewals, releases, and
    // operations that ended unknown; the latest ones before the failure.
    let told: Vec<(u64, String)> = events
        .iter()
        .filter(|e| e.time >= from && e.time <= failure.at_ns)
        .filter_map(|e| Some((e.time, format!("{}: client {} {}", at(e.time), e.process.client()?, doing(e)?))))
        .collect();
    timed.extend(told.into_iter().rev().take(CLIENT_EVENTS_TOLD).rev());
    timed.sort();
    let mut lines: Vec<String> = timed.into_iter().map(|(_, line)| line).collect();
    let p = &results.properties;
    match failure.property {
        Property::ResourceSafety => {
            if let Some(i) = p.resource_safety.evidence.first() {
                let read = by_index.get(&i.read_index).map(|e| at(e.time)).unwrap_or_default();
                let write = by_index.get(&i.write_index).map(|e| at(e.time)).unwrap_or_default();
                let others: Vec<String> = i.other_writes.iter().map(|w| w.client.to_string()).collect();
                lines.push(format!(
                    "client {} read the counter at {read} and its write landed at {write}, after {} write(s) by client(s) {} that its section did not see: their increments were lost",
                    i.client,
                    i.other_writes_total,
                    others.join(", ")
                ));
            }
            if let Some(o) = p.holder_overlap.evidence.first() {
                lines.push(format!(
                    "clients {} and {} both believed they held the lock for {:.0} ms",
                    o.processes[0], o.processes[1], o.duration_ms
                ));
            }
            lines.push(format!(
                "lost updates: {} of {} acknowledged increments",
                p.resource_safety.lost_updates, p.resource_safety.acknowledged_increments
            ));
        }
        Property::Fencing => {
            if let Some(pair) = p.fencing.write_evidence.first().or(p.fencing.grant_evidence.first()) {
                lines.push(format!(
                    "token {} (at {}) came after token {} (at {}): the fence went backwards",
                    pair.later.token,
                    at(pair.later.time),
                    pair.earlier.token,
                    at(pair.earlier.time)
                ));
            }
        }
        Property::ExactlyOnce => {
            if let Some(a) = p.exactly_once.applied_twice_evidence.first() {
                lines.push(format!("operation {} was applied {} times", a.op, a.total));
            }
        }
        Property::Stuck => {
            if let Some(s) = p.stuck.stretches.first() {
                lines.push(s.in_words());
            }
        }
    }
    lines
}

/// What a client's event says, when it is one a story tells.
fn doing(e: &Event) -> Option<String> {
    let why = || e.error.as_deref().map(|x| format!(" ({x})")).unwrap_or_default();
    Some(match (e.f.as_str(), e.kind) {
        ("acquire", EventType::Ok) => format!("was granted the lock{}", e.token.map(|t| format!(" with token {t}")).unwrap_or_default()),
        ("acquire", EventType::Info) => format!("asked for the lock and got no answer{}", why()),
        ("renew", EventType::Ok) => "renewed its lock".into(),
        ("renew", EventType::Fail | EventType::Info) => format!("failed to renew its lock{}", why()),
        ("release", EventType::Ok) => "released the lock".into(),
        ("release", EventType::Fail) => format!("had its release refused{}", why()),
        ("release", EventType::Info) => format!("sent its release and got no answer{}", why()),
        ("write", EventType::Info) => format!("sent its write and got no answer{}", why()),
        _ => return None,
    })
}

/// A history time as the reports show it: seconds since the run started.
fn at(ns: u64) -> String {
    format!("{:.2} s", ns as f64 / 1e9)
}
