//! The determinate operations as a doubly-linked list of call and return entries in
//! real-time order, with O(1) removal and exact undo (dancing links): the search lifts an
//! operation out when it linearizes it and puts it back when it backtracks.

/// End of the list.
pub(crate) const NIL: usize = usize::MAX;

/// Calls have even entry ids, returns odd ones.
pub(crate) fn is_call(entry: usize) -> bool {
    entry & 1 == 0
}

/// The determinate operations' entries: `2*d` is the call of the `d`th one, `2*d + 1` its
/// return, `head` the sentinel.
pub(crate) struct Entries {
    pub next: Vec<usize>,
    prev: Vec<usize>,
    pub head: usize,
}

impl Entries {
    /// `times[d]` = (call position, return position) of the `d`th determinate operation.
    pub fn new(times: &[(usize, usize)]) -> Self {
        let n = times.len();
        let mut order: Vec<usize> = (0..2 * n).collect();
        // Positions in the event slice are distinct, so this order is total.
        order.sort_by_key(|&e| if is_call(e) { times[e / 2].0 } else { times[e / 2].1 });
        let head = 2 * n;
        let mut next = vec![NIL; 2 * n + 1];
        let mut prev = vec![NIL; 2 * n + 1];
        let mut last = head;
        for e in order {
            next[last] = e;
            prev[e] = last;
            last = e;
        }
        Entries { next, prev, head }
    }

    /// Removes `d`'s call and return (dancing links: `unlift` undoes it exactly).
    pub fn lift(&mut self, d: usize) {
        let (c, r) = (2 * d, 2 * d + 1);
        // The call's next always exists: its own return comes after it.
        self.next[self.prev[c]] = self.next[c];
        self.prev[self.next[c]] = self.prev[c];
        self.next[self.prev[r]] = self.next[r];
        if self.next[r] != NIL {
            self.prev[self.next[r]] = self.prev[r];
        }
    }

    pub fn unlift(&mut self, d: usize) {
        let (c, r) = (2 * d, 2 * d + 1);
        self.next[self.prev[r]] = r;
        if self.next[r] != NIL {
            self.prev[self.next[r]] = r;
        }
        self.next[self.prev[c]] = c;
        self.prev[self.next[c]] = c;
    }

    /// Determinate operations whose call comes before entry `stop`.
    pub fn calls_before(&self, stop: usize) -> Vec<usize> {
        let mut ds = Vec::new();
        let mut e = self.next[self.head];
        while e != stop && e != NIL {
            if is_call(e) {
                ds.push(e / 2);
            }
            e = self.next[e];
        }
        ds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(e: &Entries) -> Vec<usize> {
        let mut out = Vec::new();
        let mut at = e.next[e.head];
        while at != NIL {
            out.push(at);
            at = e.next[at];
        }
        out
    }

    #[test]
    fn lift_and_unlift_restore_the_list() {
        // Op 0 spans op 1; op 2 comes after both.
        let mut e = Entries::new(&[(0, 3), (1, 2), (4, 5)]);
        assert_eq!(order(&e), [0, 2, 3, 1, 4, 5]);
        e.lift(1);
        assert_eq!(order(&e), [0, 1, 4, 5]);
        assert_eq!(e.calls_before(1), [0]);
        e.lift(2);
        assert_eq!(order(&e), [0, 1]);
        e.unlift(2);
        e.unlift(1);
        assert_eq!(order(&e), [0, 2, 3, 1, 4, 5]);
        assert_eq!(e.calls_before(4), [0, 1]);
    }
}
