//! Exactly once: on the workloads without a lock that name their logical operations (an
//! idempotency key, a job's id: `Event.op`), no operation's effect is applied twice, and every
//! operation acknowledged to a client was applied. Computed from the database's own record.
//!
//! Records read (others are ignored):
//! - a client's `apply` (invoke: the operation's first delivery by that client; ok:
//!   acknowledged; fail: told it did not happen; info: unknown) and `claim` (fail: another
//!   client holds the job);
//! - the delivery process's `resend`: the operation sent again while the client waits;
//! - the resource's `write` with an `op`: the operation's effect, applied (one per application);
//!   its `dedup`: a delivery answered from the stored result instead of applied again.
//!
//! A delivery may be repeated (a resend after a timeout, a redelivery after a crash): that is
//! the point of the workloads, and it is counted, not judged. What is judged is the record.

use crate::history::{Event, EventType, Process};
use crate::verdict::Verdict;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Applications listed per operation applied more than once.
const MAX_LISTED_WRITES: usize = 10;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ExactlyOnce {
    /// Some event named an operation: the property has something to say.
    pub applies: bool,
    pub verdict: Verdict,
    /// Distinct operations delivered at least once.
    pub operations: u64,
    /// Deliveries: `apply` invokes and resends.
    pub deliveries: u64,
    /// Deliveries of an operation already delivered, by a client that had not claimed it: a
    /// resend after a timeout, a redelivery after a crash. (Two claimers of one job are not a
    /// resend: that is the job done twice.)
    #[serde(default)]
    pub resent: u64,
    /// Distinct operations acknowledged to a client.
    pub acknowledged: u64,
    /// Distinct operations the database applied.
    pub applied: u64,
    /// Deliveries the database answered from the stored result (`dedup` records).
    pub answered_from_record: u64,
    /// Claims that failed (`claim` fail): another client held the job (or, in the unique
    /// claim's broken variant, had done it), or the claim did not get through.
    pub claims_refused: u64,
    /// Jobs claimed (a client was told so) whose effect is not in the record: a claimer that
    /// died before doing the work, or whose effect did not get through. The cost of claiming
    /// without a lease, not a violation.
    pub claimed_not_done: u64,
    /// Operations whose effect the database applied more than once.
    pub applied_twice: u64,
    pub applied_twice_evidence: Vec<AppliedTwice>,
    /// Operations acknowledged to a client that the database never applied.
    pub acknowledged_missing: u64,
    /// `Event.index` of the first such acknowledgements.
    pub acknowledged_missing_evidence: Vec<u64>,
}

/// One operation applied more than once.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct AppliedTwice {
    pub op: String,
    /// `Event.index` of the resource's records of the applications (the first ones).
    pub writes: Vec<u64>,
    /// The clients that applied it, in the record's order.
    pub clients: Vec<u64>,
    pub total: u64,
}

impl ExactlyOnce {
    pub fn not_checked() -> ExactlyOnce {
        check_exactly_once(&[], 0)
    }
}

/// One operation's applications in the record: (`Event.index`, the client that applied it).
type Applications = Vec<(u64, Option<u64>)>;

pub fn check_exactly_once(events: &[Event], max_evidence: usize) -> ExactlyOnce {
    let mut delivered: HashSet<&str> = HashSet::new();
    let mut acknowledged: BTreeMap<&str, u64> = BTreeMap::new();
    let mut claimed_by: HashSet<(&str, u64)> = HashSet::new();
    let mut writes: HashMap<&str, Applications> = HashMap::new();
    let mut r = ExactlyOnce {
        applies: false,
        verdict: Verdict::Unknown,
        operations: 0,
        deliveries: 0,
        resent: 0,
        acknowledged: 0,
        applied: 0,
        answered_from_record: 0,
        claims_refused: 0,
        claimed_not_done: 0,
        applied_twice: 0,
        applied_twice_evidence: Vec::new(),
        acknowledged_missing: 0,
        acknowledged_missing_evidence: Vec::new(),
    };
    for e in events {
        let Some(op) = e.op.as_deref() else { continue };
        r.applies = true;
        match (&e.process, e.f.as_str(), e.kind) {
            (Process::Client(c), "apply", EventType::Invoke) => {
                r.deliveries += 1;
                if !delivered.insert(op) && !claimed_by.contains(&(op, *c)) {
                    r.resent += 1;
                }
            }
            (Process::Client(_), "apply", EventType::Ok) => {
                acknowledged.entry(op).or_insert(e.index);
            }
            (Process::Client(c), "claim", EventType::Ok) => {
                claimed_by.insert((op, *c));
            }
            (Process::Client(_), "claim", EventType::Fail) => r.claims_refused += 1,
            (p, "write", EventType::Ok) if p.is_named(Process::RESOURCE) => {
                writes.entry(op).or_default().push((e.index, e.client));
            }
            (p, "dedup", EventType::Ok) if p.is_named(Process::RESOURCE) => r.answered_from_record += 1,
            (p, "resend", _) if p.is_named(Process::DELIVERY) => {
                r.deliveries += 1;
                r.resent += 1;
            }
            _ => {}
        }
    }
    r.operations = delivered.len() as u64;
    r.acknowledged = acknowledged.len() as u64;
    r.applied = writes.len() as u64;
    let claimed: HashSet<&str> = claimed_by.iter().map(|(op, _)| *op).collect();
    r.claimed_not_done = claimed.iter().filter(|op| !writes.contains_key(*op)).count() as u64;

    // In the order of the first application, so the evidence reads along the history.
    let mut twice: Vec<(&str, &Applications)> = writes.iter().filter(|(_, w)| w.len() > 1).map(|(op, w)| (*op, w)).collect();
    twice.sort_by_key(|(_, w)| w[0].0);
    r.applied_twice = twice.len() as u64;
    for (op, w) in twice.into_iter().take(max_evidence) {
        let listed = &w[..w.len().min(MAX_LISTED_WRITES)];
        r.applied_twice_evidence.push(AppliedTwice {
            op: op.to_string(),
            writes: listed.iter().map(|(i, _)| *i).collect(),
            clients: listed.iter().filter_map(|(_, c)| *c).collect(),
            total: w.len() as u64,
        });
    }
    let mut missing: Vec<u64> = acknowledged.iter().filter(|(op, _)| !writes.contains_key(*op)).map(|(_, i)| *i).collect();
    missing.sort_unstable();
    r.acknowledged_missing = missing.len() as u64;
    r.acknowledged_missing_evidence = missing.into_iter().take(max_evidence).collect();

    r.verdict = if r.applied_twice > 0 || r.acknowledged_missing > 0 {
        Verdict::Invalid
    } else if r.applied == 0 {
        // Nothing applied: nothing was shown to happen once.
        Verdict::Unknown
    } else {
        Verdict::Valid
    };
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    struct H(Vec<Event>);

    impl H {
        fn push(&mut self, process: Process, kind: EventType, f: &str, op: &str, client: Option<u64>) -> &mut Self {
            let mut e = Event::new(self.0.len() as u64 * 10, process, kind, f);
            e.index = self.0.len() as u64;
            e.op = Some(op.into());
            e.client = client;
            self.0.push(e);
            self
        }
        fn client(&mut self, c: u64, kind: EventType, f: &str, op: &str) -> &mut Self {
            self.push(Process::Client(c), kind, f, op, None)
        }
        fn resource(&mut self, f: &str, op: &str, client: u64) -> &mut Self {
            self.push(Process::Named(Process::RESOURCE.into()), EventType::Ok, f, op, Some(client))
        }
    }

    #[test]
    fn a_resend_answered_from_the_record_is_valid() {
        let mut h = H(vec![]);
        h.client(1, EventType::Invoke, "apply", "1-1")
            .push(Process::Named(Process::DELIVERY.into()), EventType::Info, "resend", "1-1", Some(1))
            .resource("write", "1-1", 1)
            .client(1, EventType::Ok, "apply", "1-1")
            .resource("dedup", "1-1", 1);
        let r = check_exactly_once(&h.0, 10);
        assert_eq!(r.verdict, Verdict::Valid);
        assert_eq!((r.operations, r.deliveries, r.resent, r.applied, r.answered_from_record), (1, 2, 1, 1, 1));
    }

    #[test]
    fn an_operation_applied_twice_is_invalid_with_both_applications_named() {
        // Client 1 died with the operation open; its next process (3) delivered it again.
        let mut h = H(vec![]);
        h.client(1, EventType::Invoke, "apply", "1-1")
            .resource("write", "1-1", 1)
            .client(3, EventType::Invoke, "apply", "1-1")
            .resource("write", "1-1", 3)
            .client(3, EventType::Ok, "apply", "1-1");
        let r = check_exactly_once(&h.0, 10);
        assert_eq!(r.verdict, Verdict::Invalid);
        assert_eq!(r.applied_twice, 1);
        assert_eq!(r.applied_twice_evidence, vec![AppliedTwice { op: "1-1".into(), writes: vec![1, 3], clients: vec![1, 3], total: 2 }]);
        assert_eq!((r.deliveries, r.resent), (2, 1));
    }

    #[test]
    fn an_acknowledged_operation_missing_from_the_record_is_invalid() {
        let mut h = H(vec![]);
        h.client(1, EventType::Invoke, "apply", "a").resource("write", "a", 1).client(1, EventType::Ok, "apply", "a");
        h.client(2, EventType::Invoke, "apply", "b").client(2, EventType::Ok, "apply", "b");
        let r = check_exactly_once(&h.0, 10);
        assert_eq!(r.verdict, Verdict::Invalid);
        assert_eq!((r.acknowledged_missing, r.acknowledged_missing_evidence.clone()), (1, vec![4]));
    }

    #[test]
    fn refused_claims_and_claims_never_done_are_counted_not_judged() {
        let mut h = H(vec![]);
        h.client(1, EventType::Invoke, "claim", "job-1")
            .client(1, EventType::Ok, "claim", "job-1")
            .client(2, EventType::Invoke, "claim", "job-1")
            .client(2, EventType::Fail, "claim", "job-1")
            .client(1, EventType::Invoke, "apply", "job-1")
            .resource("write", "job-1", 1)
            .client(1, EventType::Ok, "apply", "job-1")
            .client(2, EventType::Invoke, "claim", "job-2")
            .client(2, EventType::Ok, "claim", "job-2");
        let r = check_exactly_once(&h.0, 10);
        assert_eq!(r.verdict, Verdict::Valid);
        assert_eq!((r.claims_refused, r.claimed_not_done), (1, 1));
    }

    #[test]
    fn two_claimers_doing_one_job_are_not_a_resend() {
        let mut h = H(vec![]);
        for c in [1, 2] {
            h.client(c, EventType::Invoke, "claim", "job-1").client(c, EventType::Ok, "claim", "job-1");
        }
        h.client(1, EventType::Invoke, "apply", "job-1").client(2, EventType::Invoke, "apply", "job-1");
        h.resource("write", "job-1", 1).resource("write", "job-1", 2);
        let r = check_exactly_once(&h.0, 10);
        assert_eq!((r.deliveries, r.resent, r.applied_twice), (2, 0, 1));
    }

    #[test]
    fn a_history_without_operations_is_not_checked() {
        let r = check_exactly_once(&[Event::new(0, Process::Client(1), EventType::Invoke, "acquire")], 10);
        assert!(!r.applies);
        assert_eq!(r.verdict, Verdict::Unknown);
    }

    #[test]
    fn evidence_is_bounded() {
        let mut h = H(vec![]);
        for k in 0..5 {
            let op = format!("op-{k}");
            h.resource("write", &op, 1).resource("write", &op, 2);
        }
        let r = check_exactly_once(&h.0, 2);
        assert_eq!((r.applied_twice, r.applied_twice_evidence.len()), (5, 2));
        assert_eq!(r.applied_twice_evidence[0].op, "op-0");
    }
}
