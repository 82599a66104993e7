//! Run results built from small real checks, for the presentation tests.

use checker::{check, CheckOptions, Event, EventType, Process};
use results::{Expectation, Outcome, RunResults};

const MS: u64 = 1_000_000;

/// Sections one after another by clients 1 and 2; with `lose`, client 1's last write is based
/// on a stale read (a lost update).
pub fn history(lose: bool) -> Vec<Event> {
    let mut events = vec![];
    let mut push = |ms: u64, process: Process, kind: EventType, f: &str, client: Option<u64>, value: i64| {
        let mut e = Event::new(ms * MS, process, kind, f);
        e.index = events.len() as u64;
        e.key = Some("ledger".into());
        e.client = client;
        e.value = value.into();
        events.push(e);
    };
    let res = || Process::Named("resource".into());
    for (i, c) in [1u64, 2, 1].into_iter().enumerate() {
        let t = i as u64 * 100;
        let read = if lose && i == 2 { 0 } else { i as i64 };
        push(t, Process::Client(c), EventType::Invoke, "acquire", None, 0);
        push(t + 10 + i as u64 * 10, Process::Client(c), EventType::Ok, "acquire", None, 0);
        push(t + 40, res(), EventType::Ok, "read", Some(c), read);
        push(t + 50, res(), EventType::Ok, "write", Some(c), read + 1);
        push(t + 51, Process::Client(c), EventType::Ok, "write", None, read + 1);
    }
    events
}

pub fn run(scenario: &str, expect: Expectation, lose: bool) -> RunResults {
    let properties = check(&history(lose), &CheckOptions::default());
    let outcome = Outcome::of_verdict(properties.outcome);
    RunResults {
        scenario: scenario.into(),
        description: "d".into(),
        matches_expectation: expect.is_met_by(outcome),
        expect,
        outcome,
        run_id: format!("{scenario}-run"),
        backend: "b".into(),
        seed: 7,
        clients: 2,
        time_limit_secs: 1,
        started_at: "2026-01-01T00:00:00Z".into(),
        duration_secs: 2.5,
        interrupted: false,
        workers: vec![],
        warnings: vec![],
        not_applied: vec![],
        refused_requests: Default::default(),
        unknown_cause: None,
        properties,
        claims: vec![],
    }
}
