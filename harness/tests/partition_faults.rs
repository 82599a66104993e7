//! The two partition faults, run for real through the library (not the binary): a partition
//! answers the cut-off client with resets, so its requests fail at once; a partition-drop
//! drops its packets, so every request waits out the client's own timeout. Both hand the lock
//! to a second client while the first still believes it holds it.

mod common;

use checker::{Event, EventType, Process};
use harness::events::FaultChange;
use results::{FaultPhase, Outcome};
use std::time::Duration;

/// A renew that did not succeed while its client was cut off: how long it took, and why.
struct FailedRenew {
    took: Duration,
    error: String,
}

/// Runs `scenario` for 12 s; returns its outcome, the faults it reported and the failed
/// renewals of the client that was cut off.
async fn run(scenario: &str) -> (Outcome, Vec<FaultChange>, Vec<FailedRenew>) {
    let run = common::run(scenario, 12).await;
    assert!(run.results.warnings.is_empty(), "{scenario}: {:?}", run.results.warnings);
    (run.results.outcome, run.faults, failed_renewals(&run.history))
}

/// Pairs each client's renew invoke with its completion; keeps those that did not succeed.
fn failed_renewals(history: &[Event]) -> Vec<FailedRenew> {
    let mut invoked: std::collections::HashMap<u64, u64> = Default::default();
    let mut failed = vec![];
    for e in history.iter().filter(|e| e.f == "renew") {
        let Process::Client(c) = e.process else { continue };
        match e.kind {
            EventType::Invoke => {
                invoked.insert(c, e.time);
            }
            EventType::Ok => {}
            EventType::Fail | EventType::Info => {
                let start = invoked.remove(&c).expect("a completion follows its invoke");
                failed.push(FailedRenew { took: Duration::from_nanos(e.time - start), error: e.error.clone().unwrap_or_default() });
            }
        }
    }
    failed
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reset_partition_fails_requests_at_once_and_a_dropping_one_makes_them_wait() {
    let (reset, drop) = tokio::join!(run("redis-single-partition"), run("redis-single-partition-drop"));

    for (name, (outcome, faults, failed)) in [("partition", &reset), ("partition-drop", &drop)] {
        assert_eq!(*outcome, Outcome::Violation, "{name}: the cut-off holder's write is a lost update");
        let phases: Vec<_> = faults.iter().map(|c| (c.fault, c.phase, c.error.is_none())).collect();
        assert_eq!(phases, [(name, FaultPhase::Start, true), (name, FaultPhase::Stop, true)], "{name}: {faults:?}");
        assert!(!failed.is_empty(), "{name}: the cut-off client's renewals failed");
    }

    // Resets: refused at once, well inside the 2 s request timeout.
    for r in &reset.2 {
        assert!(r.error.contains("reset") || r.error.contains("refused"), "partition: {}", r.error);
        assert!(r.took < Duration::from_millis(1000), "partition: a refused renew took {:?}: {}", r.took, r.error);
    }
    // Drops: nothing answers; each renew waits out the scenario's 1 s request timeout.
    for r in &drop.2 {
        assert!(r.error.contains("timed out") || r.error.contains("no answer within"), "partition-drop: {}", r.error);
        assert!(!r.error.contains("reset") && !r.error.contains("refused"), "partition-drop: {}", r.error);
        assert!(r.took >= Duration::from_millis(950), "partition-drop: a renew gave up after only {:?}: {}", r.took, r.error);
    }
}
