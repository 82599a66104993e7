//! Availability of the lock as its clients saw it: how many acquires succeeded, how long they
//! took, and the longest stretch between two grants. Measurements, not a verdict: they show what
//! a fault cost (a partitioned Postgres holder keeps the lock until its session dies), and they
//! fill the matrix's success-rate and latency columns.
//!
//! Each client process is sequential, so an acquire's completion pairs with that process's last
//! acquire invoke.

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
    /// The longest time between two consecutive grants (any clients), in ms: how long the
    /// lock could not be had, at worst.
    pub longest_gap_ms: Option<f64>,
    /// When that gap began and ended (history time, ns): the two grants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub longest_gap_between_ns: Option<[u64; 2]>,
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
    if let Some(w) = grants.windows(2).max_by_key(|w| w[1] - w[0]) {
        a.longest_gap_ms = Some((w[1] - w[0]) as f64 / 1e6);
        a.longest_gap_between_ns = Some([w[0], w[1]]);
    }
    a
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
