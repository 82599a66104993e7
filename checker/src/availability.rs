//! Availability of the lock as its clients saw it: how many acquires succeeded, how long they
//! took, the longest stretch without a grant, and how long a killed holder kept the lock.
//! Measurements, not a verdict: they show what a fault cost (a partitioned Postgres holder keeps
//! the lock until its session dies), and they fill the matrix's success-rate and latency columns.
//!
//! Each client process is sequential, so an acquire's completion pairs with that process's last
//! acquire invoke. The workload is the span from the first client event to the last: the
//! stretches before the first grant and after the last count as time without a grant, so a
//! lock held by a cut-off holder to the end of the run is measured whole.

use crate::history::{Event, EventType, Process};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Availability {
    /// Acquire attempts that completed (ok + fail + info).
    pub attempts: u64,
    pub granted: u64,
    pub refused: u64,
    /// Acquires whose outcome is unknown (info).
    pub unknown: u64,
    /// granted / attempts; None without attempts.
    pub success_rate: Option<f64>,
    /// Time from invoke to ok of granted acquires, in ms.
    pub latency_ms: Option<Percentiles>,
    /// The longest time without a grant (to any client), in ms: between two grants, or from
    /// the workload's start to the first grant, or from the last grant to its end. How long the
    /// lock could not be had, at worst. None without client events.
    pub longest_gap_ms: Option<f64>,
    /// When that gap began and ended (history time, ns): grants, or the workload's ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub longest_gap_between_ns: Option<[u64; 2]>,
    /// The lock could still not be had when the workload ended: the last grant's holder never
    /// released it, and every client that asked after that grant was refused or got no answer
    /// (or nobody was ever granted it while clients asked).
    #[serde(default)]
    pub unavailable_at_end: bool,
    /// One per kill of a client (the nemesis's `kill` of `client-K`), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub freed_after_kill: Vec<FreedAfterKill>,
}

/// How long the lock stayed taken after a client was killed: the article's "holder dies" cell.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct FreedAfterKill {
    /// The killed client (`client-2`).
    pub client: String,
    /// When the kill took effect (history time, ns).
    pub killed_at_ns: u64,
    /// From the kill to the next grant to anyone, in ms; None when nobody was granted the lock
    /// again before the workload ended.
    pub freed_after_ms: Option<f64>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct Percentiles {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

impl Percentiles {
    /// Nearest-rank percentiles of `values` (any order); None when empty.
    pub fn of(values: &mut [f64]) -> Option<Percentiles> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let rank = |p: f64| values[((p * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1];
        Some(Percentiles { p50: rank(0.50), p99: rank(0.99), max: values[values.len() - 1] })
    }
}

/// One completed acquire: when it completed, how long it took (ns), and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AcquireOutcome {
    pub time: u64,
    /// From the process's invoke; None when the invoke was not seen.
    pub latency: Option<u64>,
    pub kind: EventType,
}

/// Every completed acquire of the client processes, in history order, paired with its invoke
/// (each client process is sequential).
pub fn acquire_outcomes(events: &[Event]) -> Vec<AcquireOutcome> {
    let mut invoked: HashMap<u64, u64> = HashMap::new();
    let mut out = vec![];
    for e in events.iter().filter(|e| e.f == "acquire") {
        let Process::Client(p) = e.process else { continue };
        if e.kind == EventType::Invoke {
            invoked.insert(p, e.time);
            continue;
        }
        let latency = invoked.remove(&p).map(|start| e.time.saturating_sub(start));
        out.push(AcquireOutcome { time: e.time, latency, kind: e.kind });
    }
    out
}

pub fn check_availability(events: &[Event]) -> Availability {
    let mut a = Availability::default();
    let mut latencies = vec![];
    let mut grants = vec![];
    for o in acquire_outcomes(events) {
        a.attempts += 1;
        match o.kind {
            EventType::Ok => {
                a.granted += 1;
                grants.push(o.time);
                latencies.extend(o.latency.map(|l| l as f64 / 1e6));
            }
            EventType::Fail => a.refused += 1,
            EventType::Info => a.unknown += 1,
            EventType::Invoke => unreachable!("acquire_outcomes returns completions"),
        }
    }
    a.success_rate = (a.attempts > 0).then(|| a.granted as f64 / a.attempts as f64);
    a.latency_ms = Percentiles::of(&mut latencies);
    grants.sort_unstable();
    let client_times = || events.iter().filter(|e| e.process.client().is_some()).map(|e| e.time);
    if let (Some(start), Some(end)) = (client_times().min(), client_times().max()) {
        // The workload's ends bound the first and the last stretch; the earliest wins a tie.
        let bounds: Vec<u64> = std::iter::once(start).chain(grants.iter().copied()).chain(std::iter::once(end)).collect();
        let w = bounds.windows(2).rev().max_by_key(|w| w[1] - w[0]).expect("at least two bounds");
        a.longest_gap_ms = Some((w[1] - w[0]) as f64 / 1e6);
        a.longest_gap_between_ns = Some([w[0], w[1]]);
        a.unavailable_at_end = unavailable_at_end(events, grants.last().copied());
    }
    a.freed_after_kill = freed_after_kills(events, &grants);
    a
}

/// Whether the lock was still taken when the workload ended (see
/// [`Availability::unavailable_at_end`]); `last_grant` is the time of the last acquire ok.
fn unavailable_at_end(events: &[Event], last_grant: Option<u64>) -> bool {
    let after = last_grant.unwrap_or(0);
    let holder = last_grant.and_then(|t| events.iter().find(|e| e.time == t && e.f == "acquire" && e.kind == EventType::Ok));
    let released = holder
        .is_some_and(|h| events.iter().any(|e| e.process == h.process && e.f == "release" && e.kind == EventType::Ok && e.time >= after));
    // Acquires asked after the last grant (by its invoke) that came to nothing.
    let mut asked: HashMap<u64, u64> = HashMap::new();
    let mut denied = false;
    for e in events.iter().filter(|e| e.f == "acquire") {
        let Process::Client(p) = e.process else { continue };
        match e.kind {
            EventType::Invoke => {
                asked.insert(p, e.time);
            }
            EventType::Fail | EventType::Info => denied |= asked.remove(&p).is_some_and(|t| last_grant.is_none() || t > after),
            EventType::Ok => {
                asked.remove(&p);
            }
        }
    }
    denied && !released
}

/// For every kill of a client that took effect (a nemesis `kill` start on `client-K` without an
/// error), the time to the next grant. `grants` are the acquire oks' times, sorted.
fn freed_after_kills(events: &[Event], grants: &[u64]) -> Vec<FreedAfterKill> {
    events
        .iter()
        .filter(|e| e.process.is_named(Process::NEMESIS) && e.f == "kill" && e.value == "start" && e.error.is_none())
        .filter_map(|e| {
            let client = e.node.as_deref().filter(|n| n.starts_with("client-"))?;
            let next = grants.iter().find(|&&g| g > e.time);
            Some(FreedAfterKill {
                client: client.to_string(),
                killed_at_ns: e.time,
                freed_after_ms: next.map(|g| (g - e.time) as f64 / 1e6),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(time_ms: u64, process: u64, kind: EventType) -> Event {
        Event::new(time_ms * 1_000_000, Process::Client(process), kind, "acquire")
    }

    #[test]
    fn counts_latencies_and_the_longest_gap_between_grants() {
        use EventType::*;
        let events = [
            ev(0, 1, Invoke),
            ev(10, 1, Ok),
            ev(5, 2, Invoke),
            ev(500, 2, Fail),
            ev(510, 2, Invoke),
            ev(2010, 2, Ok), // 2 s without a grant
            ev(2100, 1, Invoke),
            ev(2130, 1, Info),
            ev(2200, 1, Invoke),
            ev(2220, 1, Ok),
        ];
        let a = check_availability(&events);
        assert_eq!((a.attempts, a.granted, a.refused, a.unknown), (5, 3, 1, 1));
        assert_eq!(a.success_rate, Some(0.6));
        let l = a.latency_ms.unwrap();
        assert_eq!((l.p50, l.p99, l.max), (20.0, 1500.0, 1500.0));
        assert_eq!(a.longest_gap_ms, Some(2000.0));
        assert_eq!(a.longest_gap_between_ns, Some([10_000_000, 2_010_000_000]));
    }

    fn op(time_ms: u64, process: u64, kind: EventType, f: &str) -> Event {
        Event::new(time_ms * 1_000_000, Process::Client(process), kind, f)
    }

    fn kill(time_ms: u64, client: &str) -> Event {
        let mut e = Event::new(time_ms * 1_000_000, Process::Named(Process::NEMESIS.into()), EventType::Info, "kill");
        e.node = Some(client.into());
        e.value = "start".into();
        e
    }

    #[test]
    fn the_stretches_before_the_first_grant_and_after_the_last_count() {
        use EventType::*;
        // Granted at 3 s, never released (cut off); the other client is refused to the end.
        let mut events = vec![op(0, 2, Invoke, "read"), op(2990, 1, Invoke, "acquire"), op(3000, 1, Ok, "acquire")];
        for t in (3100..20_000).step_by(1000) {
            events.extend([op(t, 2, Invoke, "acquire"), op(t + 900, 2, Fail, "acquire")]);
        }
        events.extend([op(19_950, 1, Invoke, "release"), op(20_000, 1, Info, "release")]);
        let a = check_availability(&events);
        assert_eq!(a.longest_gap_ms, Some(17_000.0), "from the grant to the end of the workload");
        assert_eq!(a.longest_gap_between_ns, Some([3_000_000_000, 20_000_000_000]));
        assert!(a.unavailable_at_end);

        // The same start, but the holder's release lands: the lock was free again.
        let n = events.len();
        events[n - 1] = op(20_000, 1, Ok, "release");
        assert!(!check_availability(&events).unavailable_at_end);
    }

    #[test]
    fn a_slow_first_grant_is_the_longest_gap() {
        use EventType::*;
        let events = [op(0, 1, Invoke, "acquire"), op(4000, 1, Ok, "acquire"), op(4100, 1, Invoke, "release"), op(4200, 1, Ok, "release")];
        let a = check_availability(&events);
        assert_eq!((a.longest_gap_ms, a.longest_gap_between_ns), (Some(4000.0), Some([0, 4_000_000_000])));
        assert!(!a.unavailable_at_end);
    }

    #[test]
    fn never_granted_while_clients_asked_is_unavailable_at_the_end() {
        use EventType::*;
        let a = check_availability(&[op(0, 1, Invoke, "acquire"), op(5000, 1, Fail, "acquire")]);
        assert_eq!(a.longest_gap_ms, Some(5000.0));
        assert!(a.unavailable_at_end);
    }

    #[test]
    fn an_ordinary_ending_is_not_unavailable() {
        use EventType::*;
        // Client 2 waits through client 1's last section, is granted after its release.
        let events = [
            op(0, 1, Invoke, "acquire"),
            op(10, 1, Ok, "acquire"),
            op(20, 2, Invoke, "acquire"),
            op(1000, 1, Invoke, "release"),
            op(1010, 1, Ok, "release"),
            op(1030, 2, Ok, "acquire"),
            op(2000, 2, Invoke, "release"),
            op(2010, 2, Ok, "release"),
        ];
        assert!(!check_availability(&events).unavailable_at_end);
    }

    #[test]
    fn a_killed_holders_lock_is_measured_to_the_next_grant() {
        use EventType::*;
        let mut failed_kill = kill(9000, "client-2");
        failed_kill.error = Some("no such container".into());
        let events = [
            op(0, 1, Invoke, "acquire"),
            op(100, 1, Ok, "acquire"),
            kill(500, "client-1"),
            kill(600, "n1"), // a server, not a client: not a holder's death
            op(200, 2, Invoke, "acquire"),
            op(2600, 2, Ok, "acquire"),
            kill(3000, "client-2"),
            failed_kill,
        ];
        let a = check_availability(&events);
        let freed: Vec<_> = a.freed_after_kill.iter().map(|f| (f.client.as_str(), f.killed_at_ns, f.freed_after_ms)).collect();
        assert_eq!(freed, [("client-1", 500_000_000, Some(2100.0)), ("client-2", 3_000_000_000, None)]);
    }

    #[test]
    fn no_acquires_no_figures() {
        let a = check_availability(&[]);
        assert_eq!((a.attempts, a.success_rate, a.latency_ms, a.longest_gap_ms), (0, None, None, None));
    }

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        let p = Percentiles::of(&mut v).unwrap();
        assert_eq!((p.p50, p.p99, p.max), (50.0, 99.0, 100.0));
    }
}
