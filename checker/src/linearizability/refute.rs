//! Proofs of non-linearizability found before the search: necessary conditions of a register
//! (plain or compare-and-set) and of a mutex, cheap to check, and that, when they fail, prove a
//! partition invalid at once with the operations that show it. The search cannot do that
//! quickly when indeterminate writes stay open to the end: it must try every place each could
//! take effect before it may say "invalid". A condition that holds says nothing; the search
//! still decides. docs/checker-rules.md gives each rule's proof; tests/refute_differential.rs
//! checks them against the plain search on generated histories.
//!
//! The words, for one partition (one register):
//! - an operation's *call* and *ret* are its invoke's and ok completion's positions in the
//!   history; an indeterminate operation has no ret (open to the end).
//! - a *reader* of v: an ok read that returned v, or an ok cas from v (it found v).
//! - a *producer* of v: a write of v or a cas to v that may have taken effect (ok or
//!   indeterminate; a failed one did not happen), or the initial value.
//! - a *definite mutation*: an ok write or an ok cas (it took effect, storing its value).
//!
//! Rule 1, **nothing could have stored it**: a reader R of v, where v is not the initial value,
//! with no producer of v (other than R) called before R returned.
//! Rule 2, **stale**: a reader R of v such that every producer P of v called before R returned
//! (the initial value included when v is it) returned before some definite mutation W of
//! another value was called, W having returned before R was called.
//! Rule 3 (the mutex), **overlapping holds**: see [`mutex`].

use serde_json::Value;

/// What a register operation is, for the rules.
#[derive(Clone, Copy, Debug)]
pub struct RegisterFact<'a> {
    /// The operation's name in evidence: its invoke's `Event.index`.
    pub index: u64,
    pub call: usize,
    /// None: indeterminate.
    pub ret: Option<usize>,
    /// The value it found (ok read, ok cas's `from`).
    pub reads: Option<&'a Value>,
    /// The value it may have stored (write, cas's `to`; not failed).
    pub stores: Option<&'a Value>,
}

/// A proof that a partition cannot be linearized.
#[derive(Clone, Debug, PartialEq)]
pub struct Refutation {
    /// Position (in the partition's operations) of the operation that cannot be placed.
    pub op: usize,
    /// What it shows, naming the operations by index.
    pub rule: String,
}

/// Checks rules 1 and 2 over one register's operations (history order); the first reader
/// (by call) that breaks one.
pub fn register(initial: &Value, facts: &[RegisterFact<'_>]) -> Option<Refutation> {
    // Definite mutations by ret, to sweep in step with the readers by call.
    let mut definite: Vec<(usize, usize, &Value, u64)> = facts.iter().filter_map(|f| Some((f.ret?, f.call, f.stores?, f.index))).collect();
    definite.sort_by_key(|d| d.0);
    let mut readers: Vec<usize> = (0..facts.len()).filter(|&i| facts[i].reads.is_some()).collect();
    readers.sort_by_key(|&i| facts[i].call);
    // Of the definite mutations returned so far: the latest called, and the latest called of
    // a value other than that one's (so that for any v, one of the two stores another value).
    let mut latest: Option<(usize, &Value, u64)> = None;
    let mut latest_other: Option<(usize, &Value, u64)> = None;
    let mut next = 0;
    for r in readers {
        let reader = &facts[r];
        let v = reader.reads.expect("a reader");
        while next < definite.len() && definite[next].0 < reader.call {
            let (_, call, value, index) = definite[next];
            next += 1;
            match latest {
                Some((c, lv, _)) if call <= c => {
                    if lv != value && latest_other.is_none_or(|(oc, _, _)| call > oc) {
                        latest_other = Some((call, value, index));
                    }
                }
                old => {
                    // The old latest, of another value, is the latest of any value but the
                    // new one's; of the same value, the latest other stays what it was.
                    if let Some(old @ (_, lv, _)) = old {
                        if lv != value {
                            latest_other = Some(old);
                        }
                    }
                    latest = Some((call, value, index));
                }
            }
        }
        // The latest-called definite mutation of a value other than v, returned before R.
        let overwrite = match latest {
            Some((c, lv, i)) if lv != v => Some((c, i)),
            _ => latest_other.filter(|(_, ov, _)| *ov != v).map(|(c, _, i)| (c, i)),
        };
        let deadline = reader.ret.unwrap_or(usize::MAX);
        let producers: Vec<&RegisterFact<'_>> =
            facts.iter().enumerate().filter(|&(p, f)| p != r && f.stores == Some(v) && f.call < deadline).map(|(_, f)| f).collect();
        if producers.is_empty() && v != initial {
            return Some(Refutation {
                op: r,
                rule: format!(
                    "operation {} found {v}, but no write or cas called before it returned could have stored {v}, and the register did not start with it",
                    reader.index
                ),
            });
        }
        let Some((w_call, w_index)) = overwrite else { continue };
        // Every producer (and the initial value, when it is v) is over before W begins.
        if producers.iter().all(|p| p.ret.is_some_and(|ret| ret < w_call)) {
            let named: Vec<String> = producers.iter().map(|p| p.index.to_string()).collect();
            let from = match (named.is_empty(), v == initial) {
                (true, _) => "the initial value".to_string(),
                (false, true) => format!("the initial value and operation(s) {}", named.join(", ")),
                (false, false) => format!("operation(s) {}", named.join(", ")),
            };
            return Some(Refutation {
                op: r,
                rule: format!(
                    "stale read: operation {} found {v}, which only {from} could have stored; operation {w_index} stored another value after that and returned before operation {} began",
                    reader.index, reader.index
                ),
            });
        }
    }
    None
}

/// What a mutex operation is, for rule 3.
#[derive(Clone, Copy, Debug)]
pub struct MutexFact {
    pub index: u64,
    pub process: u64,
    pub call: usize,
    /// None: indeterminate.
    pub ret: Option<usize>,
    pub acquire: bool,
}

/// Rule 3, **overlapping holds**: an ok acquire A2 by process q, called after an ok acquire A1
/// by another process p returned, such that no release by p (ok or indeterminate) could be
/// placed between them: none called before A2 returned that was still open when A1 was
/// called. The first such A2 (by call), with the A1 it overlaps.
pub fn mutex(facts: &[MutexFact]) -> Option<Refutation> {
    // For each ok acquire of p: the earliest call of a release of p that could end its hold.
    let released_by = |a: &MutexFact| -> usize {
        facts
            .iter()
            .filter(|r| !r.acquire && r.process == a.process && r.ret.is_none_or(|ret| ret > a.call))
            .map(|r| r.call)
            .min()
            .unwrap_or(usize::MAX)
    };
    let acquires: Vec<(usize, &MutexFact, usize)> =
        facts.iter().enumerate().filter(|(_, f)| f.acquire && f.ret.is_some()).map(|(i, f)| (i, f, released_by(f))).collect();
    let mut by_call: Vec<&(usize, &MutexFact, usize)> = acquires.iter().collect();
    by_call.sort_by_key(|(_, f, _)| f.call);
    for &&(pos, a2, _) in &by_call {
        let a2_ret = a2.ret.expect("an ok acquire");
        let held = acquires
            .iter()
            .find(|(_, a1, release)| a1.process != a2.process && a1.ret.is_some_and(|ret| ret < a2.call) && *release > a2_ret);
        if let Some((_, a1, release)) = held {
            let until = if *release == usize::MAX {
                "no release of it was ever called".to_string()
            } else {
                "its first release that could end the hold was called only after".to_string()
            };
            return Some(Refutation {
                op: pos,
                rule: format!(
                    "overlapping holds: operation {} acquired the lock for process {} after operation {} had acquired it for process {}, and {until} operation {} returned",
                    a2.index, a2.process, a1.index, a1.process, a2.index
                ),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::{register, RegisterFact};
    use serde_json::{json, Value};

    fn op<'a>(index: u64, call: usize, ret: Option<usize>, reads: Option<&'a Value>, stores: Option<&'a Value>) -> RegisterFact<'a> {
        RegisterFact { index, call, ret, reads, stores }
    }

    #[test]
    fn a_value_nothing_stored_is_refuted_and_an_open_write_of_it_is_enough() {
        let (one, two) = (json!(1), json!(2));
        let facts = [op(0, 0, Some(1), None, Some(&one)), op(2, 2, Some(3), Some(&two), None)];
        let r = register(&Value::Null, &facts).unwrap();
        assert_eq!(r.op, 1);
        assert!(r.rule.contains("operation 2 found 2") && r.rule.contains("no write or cas"), "{}", r.rule);
        // An indeterminate write of 2, called before the read returned: no proof.
        let facts = [op(0, 0, None, None, Some(&two)), op(2, 2, Some(3), Some(&two), None)];
        assert_eq!(register(&Value::Null, &facts), None);
        // Called only after the read returned: it cannot have been first.
        let facts = [op(2, 0, Some(1), Some(&two), None), op(5, 2, None, None, Some(&two))];
        assert!(register(&Value::Null, &facts).is_some());
    }

    fn m(index: u64, process: u64, call: usize, ret: Option<usize>, acquire: bool) -> super::MutexFact {
        super::MutexFact { index, process, call, ret, acquire }
    }

    #[test]
    fn overlapping_holds_are_refuted_unless_a_release_could_come_between() {
        // p1 acquires, p2 acquires after it, p1 releases only later: overlap.
        let facts = [m(0, 1, 0, Some(1), true), m(2, 2, 2, Some(3), true), m(4, 1, 4, Some(5), false)];
        let r = super::mutex(&facts).unwrap();
        assert_eq!(r.op, 1);
        assert!(r.rule.contains("operation 2 acquired the lock for process 2 after operation 0"), "{}", r.rule);
        // p1's release is concurrent with p2's acquire: it may have come first.
        let facts = [m(0, 1, 0, Some(1), true), m(4, 1, 2, Some(5), false), m(2, 2, 3, Some(4), true)];
        assert_eq!(super::mutex(&facts), None);
        // An indeterminate release of p1 before p2's acquire returned: it may have happened.
        let facts = [m(0, 1, 0, Some(1), true), m(4, 1, 2, None, false), m(2, 2, 3, Some(6), true)];
        assert_eq!(super::mutex(&facts), None);
        // The same process twice is the model's business (not this rule's).
        let facts = [m(0, 1, 0, Some(1), true), m(2, 1, 2, Some(3), true)];
        assert_eq!(super::mutex(&facts), None);
    }

    #[test]
    fn a_stale_read_is_refuted_unless_something_could_have_stored_it_again() {
        let (one, two) = (json!(1), json!(2));
        // write 1 → write 2 → read 1: stale.
        let facts = [op(0, 0, Some(1), None, Some(&one)), op(2, 2, Some(3), None, Some(&two)), op(4, 4, Some(5), Some(&one), None)];
        let r = register(&Value::Null, &facts).unwrap();
        assert!(
            r.rule.starts_with("stale read: operation 4 found 1, which only operation(s) 0 could") && r.rule.contains("operation 2 stored"),
            "{}",
            r.rule
        );
        // The write of 2 overlaps the write of 1: 1 may have come last.
        let facts = [op(0, 0, Some(3), None, Some(&one)), op(2, 1, Some(2), None, Some(&two)), op(4, 4, Some(5), Some(&one), None)];
        assert_eq!(register(&Value::Null, &facts), None);
        // An indeterminate write of 1 may land after the write of 2.
        let facts = [
            op(0, 0, Some(1), None, Some(&one)),
            op(1, 0, None, None, Some(&one)),
            op(2, 2, Some(3), None, Some(&two)),
            op(4, 4, Some(5), Some(&one), None),
        ];
        assert_eq!(register(&Value::Null, &facts), None);
        // The initial value, overwritten: a later read of nil is stale.
        let facts = [op(0, 0, Some(1), None, Some(&two)), op(2, 2, Some(3), Some(&Value::Null), None)];
        assert!(register(&Value::Null, &facts).unwrap().rule.contains("only the initial value"));
    }
}
