//! Proofs of non-linearizability found before the search: necessary conditions of a register
//! (plain or compare-and-set) and of a mutex, checked in O(n log n), that, when they fail,
//! prove a partition invalid at once with the operations that show it. The search cannot do that
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
//! Rule 4, **overlapping reigns** (a new-old inversion): see reigns.rs.

use super::model::HistoryOp;
use serde_json::Value;
use std::collections::HashMap;

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

/// A register's operations as facts: `split` says what each found and may have stored.
pub fn register_facts<'a, I, O>(
    ops: &[&'a HistoryOp<I, O>],
    split: impl Fn(&'a HistoryOp<I, O>) -> (Option<&'a Value>, Option<&'a Value>),
) -> Vec<RegisterFact<'a>> {
    ops.iter()
        .map(|op| {
            let (reads, stores) = split(op);
            RegisterFact { index: op.index, call: op.call, ret: op.ret, reads, stores }
        })
        .collect()
}

/// A proof that a partition cannot be linearized.
#[derive(Clone, Debug, PartialEq)]
pub struct Refutation {
    /// Position (in the partition's operations) of the operation that cannot be placed.
    pub op: usize,
    /// What it shows, naming the operations by index.
    pub rule: String,
}

/// Checks rules 1 and 2 over one register's operations (history order), the first reader (by
/// call) that breaks one; then rule 4 (reigns.rs).
pub fn register(initial: &Value, facts: &[RegisterFact<'_>]) -> Option<Refutation> {
    // Definite mutations by ret, to sweep in step with the readers by call.
    let mut definite: Vec<(usize, usize, &Value, u64)> = facts.iter().filter_map(|f| Some((f.ret?, f.call, f.stores?, f.index))).collect();
    definite.sort_by_key(|d| d.0);
    let mut readers: Vec<usize> = (0..facts.len()).filter(|&i| facts[i].reads.is_some()).collect();
    readers.sort_by_key(|&i| facts[i].call);
    // Of the definite mutations returned so far, by call, of each value.
    let mut latest: Latest<&Value, u64> = Latest::default();
    let mut next = 0;
    let index = ProducerIndex::new(facts);
    for r in readers {
        let reader = &facts[r];
        let v = reader.reads.expect("a reader");
        while next < definite.len() && definite[next].0 < reader.call {
            let (_, call, value, index) = definite[next];
            next += 1;
            latest.offer(call, value, index);
        }
        // The latest-called definite mutation of a value other than v, returned before R.
        let overwrite = latest.not_of(v);
        // The index says whether a rule may hold; the exact check (the rule as stated, over
        // every operation) decides, so an index that groups values coarsely can cost time but
        // never a wrong refutation.
        let (called, latest_ret) = index.before(v, reader.ret.unwrap_or(usize::MAX), reader.stores == Some(v));
        let rule1 = called == 0 && v != initial;
        let rule2 = overwrite.is_some_and(|(w_call, _)| latest_ret.is_none_or(|ret| ret < w_call));
        if rule1 || rule2 {
            if let Some(refutation) = exact(initial, facts, r, overwrite) {
                return Some(refutation);
            }
        }
    }
    super::reigns::overlapping_reigns(initial, facts)
}

/// Of the items offered so far, the one with the greatest score, and the one with the greatest
/// score of another kind than that one's: so that for any kind, one of the two is of another
/// (the latest-called mutation of a value other than v; the longest hold of a process other
/// than q), in O(1) per item.
struct Latest<K, T> {
    best: Option<(usize, K, T)>,
    other: Option<(usize, K, T)>,
}

impl<K, T> Default for Latest<K, T> {
    fn default() -> Self {
        Latest { best: None, other: None }
    }
}

impl<K: PartialEq + Copy, T: Copy> Latest<K, T> {
    fn offer(&mut self, score: usize, kind: K, item: T) {
        match self.best {
            Some((best, best_kind, _)) if score <= best => {
                if best_kind != kind && self.other.is_none_or(|(o, _, _)| score > o) {
                    self.other = Some((score, kind, item));
                }
            }
            old => {
                // The old best, of another kind, is the best of any kind but the new one's; of
                // the same kind, the best other stays what it was.
                if let Some(old @ (_, old_kind, _)) = old {
                    if old_kind != kind {
                        self.other = Some(old);
                    }
                }
                self.best = Some((score, kind, item));
            }
        }
    }

    /// The greatest score of a kind other than `kind`, with its item.
    fn not_of(&self, kind: K) -> Option<(usize, T)> {
        match self.best {
            Some((score, k, item)) if k != kind => Some((score, item)),
            _ => self.other.filter(|(_, k, _)| *k != kind).map(|(score, _, item)| (score, item)),
        }
    }
}

/// Each value's producers by call, with the running latest ret (an open producer counts as
/// never returning): how many were called before a time, and when the last of those returned,
/// in O(log n). Values are grouped by their JSON text, which equal values share but for a
/// few (`-0.0` and `0.0`): the exact check has the last word.
struct ProducerIndex {
    by_value: HashMap<String, (Vec<usize>, Vec<usize>)>,
}

impl ProducerIndex {
    fn new(facts: &[RegisterFact<'_>]) -> Self {
        let mut groups: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
        for f in facts {
            if let Some(v) = f.stores {
                groups.entry(v.to_string()).or_default().push((f.call, f.ret.unwrap_or(usize::MAX)));
            }
        }
        let by_value = groups
            .into_iter()
            .map(|(key, mut ps)| {
                ps.sort_unstable();
                let calls = ps.iter().map(|p| p.0).collect();
                let latest = ps.iter().scan(0, |m, p| Some(std::mem::replace(m, (*m).max(p.1)).max(p.1))).collect();
                (key, (calls, latest))
            })
            .collect();
        ProducerIndex { by_value }
    }

    /// (producers of `v` called before `deadline`, the latest ret among them: None when there
    /// is none). `self_too`: the reader is one of them (a cas from v to v); it is not counted,
    /// and as its ret is not told apart here, the latest ret is then taken as never.
    fn before(&self, v: &Value, deadline: usize, self_too: bool) -> (usize, Option<usize>) {
        let Some((calls, latest)) = self.by_value.get(&v.to_string()) else { return (0, None) };
        let n = calls.partition_point(|&c| c < deadline);
        match (n, self_too) {
            (0, _) => (0, None),
            (n, false) => (n, Some(latest[n - 1])),
            (n, true) => (n - 1, Some(usize::MAX)),
        }
    }
}

/// Rules 1 and 2 for reader `r`, as stated, over every operation.
fn exact(initial: &Value, facts: &[RegisterFact<'_>], r: usize, overwrite: Option<(usize, u64)>) -> Option<Refutation> {
    let reader = &facts[r];
    let v = reader.reads.expect("a reader");
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
    let (w_call, w_index) = overwrite?;
    // Every producer (and the initial value, when it is v) is over before W begins.
    if !producers.iter().all(|p| p.ret.is_some_and(|ret| ret < w_call)) {
        return None;
    }
    let named: Vec<String> = producers.iter().map(|p| p.index.to_string()).collect();
    let from = match (named.is_empty(), v == initial) {
        (true, _) => "the initial value".to_string(),
        (false, true) => format!("the initial value and operation(s) {}", named.join(", ")),
        (false, false) => format!("operation(s) {}", named.join(", ")),
    };
    Some(Refutation {
        op: r,
        rule: format!(
            "stale read: operation {} found {v}, which only {from} could have stored; operation {w_index} stored another value after that and returned before operation {} began",
            reader.index, reader.index
        ),
    })
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
    // Each process's releases by ret (an open one: never), with the earliest call among those
    // from each on: the earliest release that could end a hold begun at a given time.
    let mut releases: HashMap<u64, Vec<(usize, usize)>> = HashMap::new();
    for f in facts.iter().filter(|f| !f.acquire) {
        releases.entry(f.process).or_default().push((f.ret.unwrap_or(usize::MAX), f.call));
    }
    let releases: HashMap<u64, (Vec<usize>, Vec<usize>)> = releases
        .into_iter()
        .map(|(p, mut rs)| {
            rs.sort_unstable();
            let mut earliest: Vec<usize> = rs.iter().map(|r| r.1).collect();
            for i in (0..earliest.len().saturating_sub(1)).rev() {
                earliest[i] = earliest[i].min(earliest[i + 1]);
            }
            (p, (rs.iter().map(|r| r.0).collect(), earliest))
        })
        .collect();
    // A release of p ends a hold whose acquire was called at `call` only if it returned after
    // that (or never): the earliest call among those.
    let released_by = |a: &MutexFact| -> usize {
        let Some((rets, earliest)) = releases.get(&a.process) else { return usize::MAX };
        earliest.get(rets.partition_point(|&ret| ret <= a.call)).copied().unwrap_or(usize::MAX)
    };
    // Ok acquires: (ret, release that could end it, process, position), swept by ret while the
    // second acquires are taken by call.
    let mut firsts: Vec<(usize, usize, u64, usize)> =
        facts.iter().enumerate().filter(|(_, f)| f.acquire).filter_map(|(i, f)| Some((f.ret?, released_by(f), f.process, i))).collect();
    firsts.sort_unstable();
    let mut seconds: Vec<usize> = (0..facts.len()).filter(|&i| facts[i].acquire && facts[i].ret.is_some()).collect();
    seconds.sort_by_key(|&i| facts[i].call);
    // Of the acquires returned so far, by how long each could be held, of each process.
    let mut longest: Latest<u64, usize> = Latest::default();
    let mut next = 0;
    for a2 in seconds {
        let second = &facts[a2];
        while next < firsts.len() && firsts[next].0 < second.call {
            let (_, release, process, pos) = firsts[next];
            next += 1;
            longest.offer(release, process, pos);
        }
        let held = longest.not_of(second.process);
        let second_ret = second.ret.expect("an ok acquire");
        if let Some((release, a1)) = held.filter(|h| h.0 > second_ret) {
            let first = &facts[a1];
            let until = if release == usize::MAX {
                "no release of it was ever called".to_string()
            } else {
                "its first release that could end the hold was called only after".to_string()
            };
            return Some(Refutation {
                op: a2,
                rule: format!(
                    "overlapping holds: operation {} acquired the lock for process {} after operation {} had acquired it for process {}, and {until} operation {} returned",
                    second.index, second.process, first.index, first.process, second.index
                ),
            });
        }
    }
    None
}

#[cfg(test)]
pub(crate) mod tests {
    use super::{register, RegisterFact};
    use serde_json::{json, Value};

    /// A fact in the tests' shorthand (reigns.rs's tests share it).
    pub(crate) fn op<'a>(
        index: u64,
        call: usize,
        ret: Option<usize>,
        reads: Option<&'a Value>,
        stores: Option<&'a Value>,
    ) -> RegisterFact<'a> {
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
