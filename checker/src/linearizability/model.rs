//! The sequential specification side: what a model is, and the operations it is checked on.
//!
//! A model says how one operation changes the state and which outputs are possible; it knows
//! nothing about concurrency or search (stateright's split between spec and checker). The
//! search in `search.rs` only needs `init`, `step` and a hashable state.

use crate::history::Event;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::hash::Hash;

/// What a model makes of one invoke/completion pair.
#[derive(Clone, Debug, PartialEq)]
pub struct Op<I, O> {
    /// The object the operation is on (lock name, register, kv key); used for partitioning.
    pub key: Option<String>,
    pub input: I,
    /// `None`: indeterminate (info or no completion); the operation may have taken effect at
    /// any point after its invoke, or never.
    pub output: Option<O>,
}

/// An [`Op`] placed in the history.
#[derive(Clone, Debug, PartialEq)]
pub struct HistoryOp<I, O> {
    /// `Event.index` of the invoke: how evidence names the operation.
    pub index: u64,
    pub process: u64,
    /// Positions in the event slice of the invoke and of the ok completion. `ret` is `None`
    /// for indeterminate operations: they stay open until the end of time.
    pub call: usize,
    pub ret: Option<usize>,
    pub op: Op<I, O>,
}

/// A set of operations checked on their own, from [`Model::init`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    pub label: String,
    /// Positions in the operation list handed to [`Model::partition`], in history order.
    pub ops: Vec<usize>,
}

/// A sequential specification.
///
/// `Sync` because partitions are searched on several threads with one shared model.
pub trait Model: Sync {
    /// Memoised together with the set of linearized operations: keep it small and cheap to
    /// hash, it is cloned at every step of the search.
    type State: Clone + Eq + Hash + Debug + Send;
    /// `PartialEq`: indeterminate operations with equal inputs are interchangeable, and the
    /// search tries only one of them at each point.
    type Input: Debug + Sync + PartialEq;
    type Output: Debug + Sync;

    /// Name used in results ("cas-register").
    fn name(&self) -> &'static str;

    fn init(&self) -> Self::State;

    /// The state after `input` took effect in `state` and produced `output`, or `None` when
    /// that output is impossible there.
    ///
    /// `output` is `None` for an indeterminate operation: return the state as if it succeeded,
    /// or `None` if it could not have succeeded here. "Took effect but failed" needs no case
    /// of its own: it changes nothing, and the search already covers "not taken effect".
    fn step(&self, state: &Self::State, input: &Self::Input, output: Option<&Self::Output>) -> Option<Self::State>;

    /// True if `input` never changes the state (`step` returns `None` or the same state,
    /// whatever the state): a read. The search then places such an operation as soon as the
    /// model accepts it and never tries it later, which is sound (dropping it from any later
    /// linearization leaves a valid one) and prunes most of the search on read-heavy
    /// histories. Default: false, always safe.
    fn read_only(&self, _input: &Self::Input) -> bool {
        false
    }

    /// Reads an operation from its invoke and its `ok` completion (`None`: the outcome is
    /// unknown, and the returned output must then be `None`).
    ///
    /// `Ok(None)`: not an operation of this model (nemesis, another model's `f`), or one that
    /// constrains nothing (a read whose result is unknown). `Err`: the event cannot be read
    /// (a cas without `[from to]`); the caller prefixes the event index.
    ///
    /// Failed operations are also passed here, with `completion: None`, so their input is
    /// validated, and then dropped: `fail` means the operation did not happen.
    #[allow(clippy::type_complexity)]
    fn operation(&self, invoke: &Event, completion: Option<&Event>) -> Result<Option<Op<Self::Input, Self::Output>>, String>;

    /// A proof, found without the search, that one partition's operations (history order)
    /// cannot be linearized: a necessary condition of the model that fails (refute.rs, with
    /// each rule's proof in docs/checker-rules.md). `None`: no rule applies, and the search
    /// decides. Must never refute a linearizable partition. Default: none.
    fn refute(&self, _ops: &[&HistoryOp<Self::Input, Self::Output>]) -> Option<super::refute::Refutation> {
        None
    }

    /// Splits operations into independent partitions (P-compositionality). Only valid when
    /// the history is linearizable iff every partition is: e.g. per key, when the model's
    /// objects are independent. Default: one partition.
    fn partition(&self, ops: &[HistoryOp<Self::Input, Self::Output>]) -> Vec<Partition> {
        vec![Partition { label: "all".to_string(), ops: (0..ops.len()).collect() }]
    }
}

/// Label of the partition of operations without a key.
pub const NO_KEY: &str = "(no key)";

/// One partition per `Op::key`, in key order; operations without a key form their own.
pub fn partition_by_key<I, O>(ops: &[HistoryOp<I, O>]) -> Vec<Partition> {
    let mut by_key: BTreeMap<Option<&str>, Vec<usize>> = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        by_key.entry(op.op.key.as_deref()).or_default().push(i);
    }
    by_key.into_iter().map(|(key, ops)| Partition { label: key.unwrap_or(NO_KEY).to_string(), ops }).collect()
}
