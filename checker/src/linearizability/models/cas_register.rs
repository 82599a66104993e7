//! A compare-and-set register, starting from nil (Jepsen's / knossos's cas-register), or from
//! [`CasRegister::initial`].
//!
//! `f`: `read` and `write` as in [`super::register`], and `cas` with `value: [from, to]`: an
//! ok cas found `from` and stored `to`; a failed cas did not happen (dropped, but its value
//! must still be a `[from, to]` pair). An indeterminate cas may have taken effect, which
//! requires `from` at that point.

use crate::history::Event;
use crate::linearizability::model::{partition_by_key, HistoryOp, Model, Op, Partition};
use crate::linearizability::refute::{self, Refutation};
use serde_json::Value;

#[derive(Clone, Debug, Default)]
pub struct CasRegister {
    /// What every register holds before its first write or cas: `Null` (nil, the default).
    pub initial: Value,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CasInput {
    Read,
    Write(Value),
    Cas(Value, Value),
}

impl Model for CasRegister {
    /// The value held; `Null` is nil.
    type State = Value;
    type Input = CasInput;
    /// The value read (`Null` for writes and cas).
    type Output = Value;

    fn name(&self) -> &'static str {
        "cas-register"
    }

    fn init(&self) -> Value {
        self.initial.clone()
    }

    fn step(&self, state: &Value, input: &CasInput, output: Option<&Value>) -> Option<Value> {
        match input {
            CasInput::Read => (output.is_none_or(|read| read == state)).then(|| state.clone()),
            CasInput::Write(v) => Some(v.clone()),
            CasInput::Cas(from, to) => (from == state).then(|| to.clone()),
        }
    }

    fn read_only(&self, input: &CasInput) -> bool {
        *input == CasInput::Read
    }

    fn operation(&self, invoke: &Event, completion: Option<&Event>) -> Result<Option<Op<CasInput, Value>>, String> {
        let (input, output) = match (invoke.f.as_str(), completion) {
            ("read", Some(done)) => (CasInput::Read, Some(done.value.clone())),
            ("read", None) => return Ok(None),
            ("write", done) => (CasInput::Write(invoke.value.clone()), done.map(|_| Value::Null)),
            ("cas", done) => match invoke.value.as_array().map(Vec::as_slice) {
                Some([from, to]) => (CasInput::Cas(from.clone(), to.clone()), done.map(|_| Value::Null)),
                _ => return Err(format!("cas value must be [from, to], got {}", invoke.value)),
            },
            _ => return Ok(None),
        };
        Ok(Some(Op { key: invoke.key.clone(), input, output }))
    }

    fn refute(&self, ops: &[&HistoryOp<CasInput, Value>]) -> Option<Refutation> {
        let facts = refute::register_facts(ops, |op| match &op.op.input {
            CasInput::Read => (op.op.output.as_ref(), None),
            CasInput::Write(v) => (None, Some(v)),
            // An ok cas found `from`; any cas not failed may have stored `to`.
            CasInput::Cas(from, to) => (op.ret.map(|_| from), Some(to)),
        });
        refute::register(&self.initial, &facts)
    }

    fn partition(&self, ops: &[HistoryOp<CasInput, Value>]) -> Vec<Partition> {
        partition_by_key(ops)
    }
}
