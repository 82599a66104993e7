//! A key-value store: get, put and append per key; keys are independent, so the history is
//! partitioned by key and each key's value is one partition's state.
//!
//! `f`: `get` (or `read`), `put` (or `write`), `append`. The key is the event's `key` field;
//! without one, the `value` must be Jepsen's independent tuple `[key, value]` (a number key
//! is used as its JSON text). Values: a get's ok value is the value read; put stores its value;
//! append's value must be a string and is appended to the current string (nil counts as "";
//! appending to a non-string value is impossible). A key never written holds
//! [`Kv::initial`]: `null` by default (Jepsen's nil), `""` for porcupine's kv convention.
//! An indeterminate get is dropped; an indeterminate put or append may have taken effect.

use crate::history::Event;
use crate::linearizability::model::{partition_by_key, HistoryOp, Model, Op, Partition};
use serde_json::Value;

#[derive(Clone, Debug, Default)]
pub struct Kv {
    /// What every key holds before it is first written: `Null` (nil, the default), or `""`
    /// for histories whose absent keys read as the empty string (porcupine's kv model).
    pub initial: Value,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvInput {
    Get,
    Put(Value),
    Append(String),
}

impl Model for Kv {
    /// One key's value (partitions hold one key each), from [`Kv::initial`].
    type State = Value;
    type Input = KvInput;
    /// The value read (`Null` for put and append).
    type Output = Value;

    fn name(&self) -> &'static str {
        "kv"
    }

    fn init(&self) -> Value {
        self.initial.clone()
    }

    fn step(&self, state: &Value, input: &KvInput, output: Option<&Value>) -> Option<Value> {
        match input {
            KvInput::Get => (output.is_none_or(|read| read == state)).then(|| state.clone()),
            KvInput::Put(v) => Some(v.clone()),
            KvInput::Append(suffix) => match state {
                Value::Null => Some(Value::String(suffix.clone())),
                Value::String(s) => Some(Value::String(format!("{s}{suffix}"))),
                _ => None,
            },
        }
    }

    fn read_only(&self, input: &KvInput) -> bool {
        *input == KvInput::Get
    }

    fn operation(&self, invoke: &Event, completion: Option<&Event>) -> Result<Option<Op<KvInput, Value>>, String> {
        let f = invoke.f.as_str();
        if !matches!(f, "get" | "read" | "put" | "write" | "append") {
            return Ok(None);
        }
        let (key, value) = key_and_value(invoke)?;
        let (input, output) = match (f, completion) {
            ("get" | "read", None) => return Ok(None),
            ("get" | "read", Some(done)) => (KvInput::Get, Some(key_and_value(done)?.1)),
            ("put" | "write", done) => (KvInput::Put(value), done.map(|_| Value::Null)),
            (_, done) => match value {
                Value::String(s) => (KvInput::Append(s), done.map(|_| Value::Null)),
                other => return Err(format!("append value must be a string, got {other}")),
            },
        };
        Ok(Some(Op { key: Some(key), input, output }))
    }

    fn partition(&self, ops: &[HistoryOp<KvInput, Value>]) -> Vec<Partition> {
        partition_by_key(ops)
    }
}

/// The `key` field and `value`, or Jepsen's `[key, value]` tuple when there is no key field.
fn key_and_value(event: &Event) -> Result<(String, Value), String> {
    if let Some(key) = &event.key {
        return Ok((key.clone(), event.value.clone()));
    }
    match event.value.as_array().map(Vec::as_slice) {
        Some([Value::String(k), v]) => Ok((k.clone(), v.clone())),
        Some([k, v]) => Ok((k.to_string(), v.clone())),
        _ => Err(format!("kv {} needs a key field or a [key, value] value, got {}", event.f, event.value)),
    }
}
