//! Rule 4, **overlapping reigns** (a new-old inversion, issue #25): a register holds one value at
//! a time, so the stretches of a linearization during which it holds a value written once, and
//! the instants at which definite mutations of other values take effect, are disjoint; real-time
//! order can force two of them to overlap. docs/checker-rules.md gives the proof;
//! tests/refute_differential.rs checks it against the plain search.
//!
//! The *nodes*, each with two bounds (positions in the history):
//! - a value v written once (one producer P, not the initial value, P not also a reader of v),
//!   when P is ok or v has a reader: its reign runs from P's effect to its last reader; `u` is the
//!   earliest ret among P and v's readers (the reign has begun by then), `l` the latest call
//!   among them (the reign has not ended before then);
//! - the initial value, when no producer stores it and it has a reader: it reigns from the start
//!   (`u` before everything) to its last reader (`l` the latest call among them);
//! - a definite mutation of a value not written once: `u` its ret, `l` its call.
//!
//! Two nodes a and b with `u(a) < l(b)` and `u(b) < l(a)` refute the partition. Any cycle of
//! such "before" edges contains such a pair, so a pair is all there is to look for: nodes by `u`,
//! the two greatest `l` of each prefix, O(n log n).
//!
//! The new-old inversion is the pair (X, Y): X and Y written once, Y's write inside X's, R1 (a
//! read of Y) called after X's write returned, R2 (a read of X) called after R1 returned.

use super::refute::{Refutation, RegisterFact};
use serde_json::Value;
use std::collections::HashMap;

/// Before everything (the initial value's `u`).
const START: i64 = -1;

#[derive(Clone, Copy, Debug)]
enum Kind<'a> {
    /// A value written once, by the fact at this position.
    Once(&'a Value, usize),
    Initial(&'a Value),
    /// A definite mutation (the fact at this position) of a value not written once.
    Definite(&'a Value, usize),
}

#[derive(Clone, Copy, Debug)]
struct Node<'a> {
    kind: Kind<'a>,
    /// The earliest ret (the reign has begun before it), and the fact it is.
    u: i64,
    u_by: Option<usize>,
    /// The latest call (the reign has not ended before it), and the fact it is.
    l: i64,
    l_by: usize,
}

/// The text by which a value is grouped, when equal values are sure to have equal texts: values
/// made of null, booleans, integers, strings and arrays of those (a float has two zeros, an
/// object's text could follow its insertion order). Others are never written-once values.
fn exact_key(v: &Value) -> Option<String> {
    fn plain(v: &Value) -> bool {
        match v {
            Value::Null | Value::Bool(_) | Value::String(_) => true,
            Value::Number(n) => !n.is_f64(),
            Value::Array(items) => items.iter().all(plain),
            Value::Object(_) => false,
        }
    }
    plain(v).then(|| v.to_string())
}

#[derive(Default)]
struct Group {
    producers: Vec<usize>,
    readers: Vec<usize>,
}

/// Rule 4 over one register's operations; the first overlapping pair found.
pub fn overlapping_reigns(initial: &Value, facts: &[RegisterFact<'_>]) -> Option<Refutation> {
    let mut groups: HashMap<String, Group> = HashMap::new();
    for (i, f) in facts.iter().enumerate() {
        if let Some(k) = f.stores.and_then(exact_key) {
            groups.entry(k).or_default().producers.push(i);
        }
        if let Some(k) = f.reads.and_then(exact_key) {
            groups.entry(k).or_default().readers.push(i);
        }
    }
    let initial_key = exact_key(initial);
    let mut nodes: Vec<Node<'_>> = Vec::new();
    let mut once = vec![false; facts.len()];
    for (key, g) in &groups {
        let is_initial = initial_key.as_deref() == Some(key.as_str());
        if is_initial {
            if g.producers.is_empty() && !g.readers.is_empty() {
                let (l, l_by) = latest_call(facts, &g.readers);
                nodes.push(Node { kind: Kind::Initial(initial), u: START, u_by: None, l, l_by });
            }
            continue;
        }
        let [p] = g.producers[..] else { continue };
        if g.readers.contains(&p) || (facts[p].ret.is_none() && g.readers.is_empty()) {
            continue;
        }
        once[p] = true;
        let members: Vec<usize> = std::iter::once(p).chain(g.readers.iter().copied()).collect();
        let (l, l_by) = latest_call(facts, &members);
        let (u, u_by) = members.iter().filter_map(|&m| Some((facts[m].ret? as i64, m))).min().expect("an ok producer or an ok reader");
        nodes.push(Node { kind: Kind::Once(facts[p].stores.expect("a producer"), p), u, u_by: Some(u_by), l, l_by });
    }
    for (i, f) in facts.iter().enumerate() {
        if let (Some(v), Some(ret), false) = (f.stores, f.ret, once[i]) {
            nodes.push(Node { kind: Kind::Definite(v, i), u: ret as i64, u_by: Some(i), l: f.call as i64, l_by: i });
        }
    }
    let (a, b) = overlapping_pair(&mut nodes)?;
    Some(refutation(facts, &a, &b))
}

fn latest_call(facts: &[RegisterFact<'_>], members: &[usize]) -> (i64, usize) {
    members.iter().map(|&m| (facts[m].call as i64, m)).max().expect("members")
}

/// Two nodes a, b with `a.u < b.l` and `b.u < a.l`, if any.
fn overlapping_pair<'a>(nodes: &mut [Node<'a>]) -> Option<(Node<'a>, Node<'a>)> {
    // Ties (an ok cas bounds both the value it found and the one it stored) broken by the
    // operation a node is defined by, so that the evidence does not depend on hashing.
    let id = |n: &Node<'_>| match n.kind {
        Kind::Once(_, f) | Kind::Definite(_, f) => f,
        Kind::Initial(_) => usize::MAX,
    };
    nodes.sort_by_key(|n| (n.u, n.l, id(n)));
    // For each prefix, the positions of the node with the greatest `l` and of the one with the
    // next greatest (another node), so that for any b one of them is not b.
    let mut top: Vec<(usize, Option<usize>)> = Vec::with_capacity(nodes.len());
    let mut best: Option<(usize, Option<usize>)> = None;
    for (i, n) in nodes.iter().enumerate() {
        best = Some(match best {
            None => (i, None),
            Some((first, _)) if n.l > nodes[first].l => (i, Some(first)),
            Some((first, second)) if second.is_none_or(|s| n.l > nodes[s].l) => (first, Some(i)),
            Some(kept) => kept,
        });
        top.push(best.expect("set"));
    }
    for (bi, b) in nodes.iter().enumerate() {
        // The nodes a with a.u < b.l: a prefix.
        let k = nodes.partition_point(|a| a.u < b.l);
        let Some(&(first, second)) = k.checked_sub(1).map(|last| &top[last]) else { continue };
        let a = if first != bi { Some(first) } else { second };
        if let Some(ai) = a.filter(|&ai| nodes[ai].l > b.u) {
            return Some((nodes[ai], *b));
        }
    }
    None
}

/// What node `n` holds and when, in words.
fn describe(facts: &[RegisterFact<'_>], n: &Node<'_>) -> String {
    let index = |f: usize| facts[f].index;
    match (n.kind, n.u_by) {
        (Kind::Definite(v, w), _) => format!("operation {} stored {v} (it took effect) between its call and its return", index(w)),
        (Kind::Initial(v), _) => {
            format!("the initial value {v}, never written, was held from the start until after operation {} was called", index(n.l_by))
        }
        (Kind::Once(v, p), u) => format!(
            "{v}, written once (by operation {}), was held from before operation {} returned until after operation {} was called",
            index(p),
            index(u.expect("a written-once value's reign begins before a ret")),
            index(n.l_by)
        ),
    }
}

fn refutation(facts: &[RegisterFact<'_>], a: &Node<'_>, b: &Node<'_>) -> Refutation {
    // The operation that cannot be placed: the later-called of the two that bound the ends.
    let op = if a.l > b.l { a.l_by } else { b.l_by };
    Refutation {
        op,
        rule: format!(
            "new-old inversion: {}; {}; each began before the other ended, but the register holds one value at a time",
            describe(facts, a),
            describe(facts, b)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::refute::tests::op;
    use super::*;
    use serde_json::json;

    #[test]
    fn the_inversion_is_refuted_and_its_valid_twin_is_not() {
        let (x, y) = (json!("x"), json!("y"));
        // write x [0, 5], write y [1, 3] inside it, R1 read y [6, 7], R2 read x [8, 9].
        let mut facts = vec![
            op(0, 0, Some(5), None, Some(&x)),
            op(1, 1, Some(3), None, Some(&y)),
            op(6, 6, Some(7), Some(&y), None),
            op(8, 8, Some(9), Some(&x), None),
        ];
        let r = overlapping_reigns(&Value::Null, &facts).expect("refuted");
        assert_eq!(r.op, 3, "R2 cannot be placed");
        assert!(r.rule.starts_with("new-old inversion: "), "{}", r.rule);
        assert!(
            r.rule.contains(
                "\"x\", written once (by operation 0), was held from before operation 0 returned until after operation 8 was called"
            ) && r.rule.contains(
                "\"y\", written once (by operation 1), was held from before operation 1 returned until after operation 6 was called"
            ),
            "{}",
            r.rule
        );
        // R2 reads y: fine.
        facts[3].reads = Some(&y);
        assert_eq!(overlapping_reigns(&Value::Null, &facts), None);
        // R2 called before R1 returned still comes after y was stored (y returned first).
        facts[3] = op(8, 7, Some(9), Some(&x), None);
        facts[2] = op(6, 6, Some(8), Some(&y), None);
        assert!(overlapping_reigns(&Value::Null, &facts).is_some());
        // R2 called before y's write returned may find x before y is stored.
        facts[3] = op(2, 2, Some(9), Some(&x), None);
        assert_eq!(overlapping_reigns(&Value::Null, &facts), None);
    }

    #[test]
    fn values_written_twice_or_by_an_open_write_nobody_read_are_not_nodes() {
        let (x, y) = (json!(1), json!(2));
        let facts = [
            op(0, 0, Some(5), None, Some(&x)),
            op(1, 1, Some(3), None, Some(&y)),
            op(6, 6, Some(7), Some(&y), None),
            op(8, 8, Some(9), Some(&x), None),
            // x written again, still open: R2 may see it.
            op(10, 4, None, None, Some(&x)),
        ];
        assert_eq!(overlapping_reigns(&Value::Null, &facts), None);
        // The initial value read after an ok write of 2 returned: stale. An open write that
        // nobody read is no node (it may never have happened).
        let facts = [op(0, 0, None, None, Some(&x)), op(1, 1, Some(2), None, Some(&y)), op(3, 3, Some(4), Some(&Value::Null), None)];
        assert!(overlapping_reigns(&Value::Null, &facts).is_some(), "the initial value read after 2 was stored");
        let facts = [op(0, 0, None, None, Some(&x)), op(3, 3, Some(4), Some(&Value::Null), None)];
        assert_eq!(overlapping_reigns(&Value::Null, &facts), None);
    }

    #[test]
    fn a_value_read_again_after_an_overwrite_is_refuted_even_with_an_open_writer() {
        let (x, y) = (json!(1), json!(2));
        // Open write of 1, read 1, ok write of 2, read 1 again: rule 2 cannot (the writer never
        // returned), the reign of 1 spans the write of 2.
        let facts = [
            op(0, 0, None, None, Some(&x)),
            op(1, 1, Some(2), Some(&x), None),
            op(3, 3, Some(4), None, Some(&y)),
            op(5, 5, Some(6), Some(&x), None),
        ];
        let r = overlapping_reigns(&Value::Null, &facts).expect("refuted");
        assert_eq!(r.op, 3);
        // Floats are never grouped: 0.0 and -0.0 are one value.
        let (z, mz) = (json!(0.0), json!(-0.0));
        let facts = [op(0, 0, Some(1), None, Some(&z)), op(2, 2, Some(3), None, Some(&y)), op(4, 4, Some(5), Some(&mz), None)];
        assert_eq!(overlapping_reigns(&Value::Null, &facts), None);
    }
}
