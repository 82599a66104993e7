//! A read/write register, starting from nil (or from [`Register::initial`]).
//!
//! `f`: `read` (the ok completion's `value` is the value read; `null` = nil) and `write` (the
//! invoke's `value` is the value written); `key` names the register. An indeterminate read
//! constrains nothing and is dropped; an indeterminate write may have taken effect.

use crate::history::Event;
use crate::linearizability::model::{partition_by_key, HistoryOp, Model, Op, Partition};
use crate::linearizability::refute::{self, Refutation};
use serde_json::Value;

#[derive(Clone, Debug, Default)]
pub struct Register {
    /// What every register holds before its first write: `Null` (nil, the default), or e.g.
    /// `0` for a history whose unwritten registers read as 0.
    pub initial: Value,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegisterInput {
    Read,
    Write(Value),
}

impl Model for Register {
    /// The value held; `Null` is nil.
    type State = Value;
    type Input = RegisterInput;
    /// The value read (`Null` for writes).
    type Output = Value;

    fn name(&self) -> &'static str {
        "register"
    }

    fn init(&self) -> Value {
        self.initial.clone()
    }

    fn step(&self, state: &Value, input: &RegisterInput, output: Option<&Value>) -> Option<Value> {
        match input {
            RegisterInput::Read => (output.is_none_or(|read| read == state)).then(|| state.clone()),
            RegisterInput::Write(v) => Some(v.clone()),
        }
    }

    fn read_only(&self, input: &RegisterInput) -> bool {
        *input == RegisterInput::Read
    }

    fn operation(&self, invoke: &Event, completion: Option<&Event>) -> Result<Option<Op<RegisterInput, Value>>, String> {
        let (input, output) = match (invoke.f.as_str(), completion) {
            ("read", Some(done)) => (RegisterInput::Read, Some(done.value.clone())),
            ("write", done) => (RegisterInput::Write(invoke.value.clone()), done.map(|_| Value::Null)),
            _ => return Ok(None),
        };
        Ok(Some(Op { key: invoke.key.clone(), input, output }))
    }

    fn refute(&self, ops: &[&HistoryOp<RegisterInput, Value>]) -> Option<Refutation> {
        let facts = refute::register_facts(ops, |op| match &op.op.input {
            RegisterInput::Read => (op.op.output.as_ref(), None),
            RegisterInput::Write(v) => (None, Some(v)),
        });
        refute::register(&self.initial, &facts)
    }

    fn partition(&self, ops: &[HistoryOp<RegisterInput, Value>]) -> Vec<Partition> {
        partition_by_key(ops)
    }
}
