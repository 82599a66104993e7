//! A mutex with an owner (non-reentrant).
//!
//! `f`: `acquire`, `release`, `renew`; the owner is the client process; `key` names the lock.
//! - acquire ok: the lock was free and the process now holds it;
//! - release ok: the process held it, and now it is free (a release ok by a non-holder is
//!   impossible);
//! - renew ok: the process holds it (a lease renewed by a non-holder is impossible).
//!
//! `fail` completions are dropped (nothing happened). An indeterminate acquire or release may
//! have taken effect; an indeterminate renew changes nothing and is dropped.

use crate::history::Event;
use crate::linearizability::model::{partition_by_key, HistoryOp, Model, Op, Partition};
use crate::linearizability::refute::{self, MutexFact, Refutation};

#[derive(Clone, Copy, Debug, Default)]
pub struct Mutex;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MutexInput {
    Acquire(u64),
    Release(u64),
    Renew(u64),
}

impl Model for Mutex {
    /// The holder, if any.
    type State = Option<u64>;
    type Input = MutexInput;
    /// Nothing but "ok".
    type Output = ();

    fn name(&self) -> &'static str {
        "mutex"
    }

    fn init(&self) -> Option<u64> {
        None
    }

    fn step(&self, holder: &Option<u64>, input: &MutexInput, _: Option<&()>) -> Option<Option<u64>> {
        // The output carries nothing, so an indeterminate operation steps like a successful
        // one (see `Model::step`).
        match (*input, *holder) {
            (MutexInput::Acquire(p), None) => Some(Some(p)),
            (MutexInput::Release(p), Some(h)) if h == p => Some(None),
            (MutexInput::Renew(p), Some(h)) if h == p => Some(Some(h)),
            _ => None,
        }
    }

    fn read_only(&self, input: &MutexInput) -> bool {
        matches!(input, MutexInput::Renew(_))
    }

    fn operation(&self, invoke: &Event, completion: Option<&Event>) -> Result<Option<Op<MutexInput, ()>>, String> {
        let Some(owner) = invoke.process.client() else {
            return Ok(None);
        };
        let input = match invoke.f.as_str() {
            "acquire" => MutexInput::Acquire(owner),
            "release" => MutexInput::Release(owner),
            "renew" if completion.is_some() => MutexInput::Renew(owner),
            _ => return Ok(None),
        };
        Ok(Some(Op { key: invoke.key.clone(), input, output: completion.map(|_| ()) }))
    }

    fn refute(&self, ops: &[&HistoryOp<MutexInput, ()>]) -> Option<Refutation> {
        let facts: Vec<MutexFact> = ops
            .iter()
            .filter_map(|op| {
                let acquire = match op.op.input {
                    MutexInput::Acquire(_) => true,
                    MutexInput::Release(_) => false,
                    MutexInput::Renew(_) => return None,
                };
                Some(MutexFact { index: op.index, process: op.process, call: op.call, ret: op.ret, acquire })
            })
            .collect();
        refute::mutex(&facts)
    }

    fn partition(&self, ops: &[HistoryOp<MutexInput, ()>]) -> Vec<Partition> {
        partition_by_key(ops)
    }
}
