//! `Options::initial`: the value each register or kv key holds before its first write. Jepsen's
//! models start from nil (`null`, the default); porcupine's kv model reads an absent key as
//! `""`, and many register tests start from 0. The same history is invalid under one
//! convention and valid under the other.

use checker::linearizability::{check_with, Linearizability, ModelKind, Options};
use checker::{parse_jsonl, Event, Verdict};
use serde_json::{json, Value};
use std::time::Duration;

/// `(process, type, f, key, value)` per event, in history order.
fn history(ops: &[(u64, &str, &str, &str, Value)]) -> Vec<Event> {
    let text: String = ops
        .iter()
        .enumerate()
        .map(|(i, (p, kind, f, key, value))| {
            json!({"index": i, "time": 1000 * (i + 1), "process": p, "type": kind, "f": f, "key": key, "value": value}).to_string() + "\n"
        })
        .collect();
    parse_jsonl(&text).unwrap().events
}

fn check(events: &[Event], model: ModelKind, initial: Value) -> Result<Linearizability, String> {
    let mut opts = Options::new(Duration::from_secs(20));
    opts.initial = initial;
    check_with(events, model, &opts)
}

/// Porcupine's kv convention: gets of keys never written return "", appends to them start
/// from "". Key x is read absent, appended to (concurrently with a get that sees the append),
/// key z is only ever read.
fn porcupine_kv() -> Vec<Event> {
    history(&[
        (1, "invoke", "get", "x", json!(null)),
        (1, "ok", "get", "x", json!("")),
        (2, "invoke", "put", "y", json!("1")),
        (2, "ok", "put", "y", json!("1")),
        (1, "invoke", "append", "x", json!("a")),
        (3, "invoke", "get", "x", json!(null)),
        (1, "ok", "append", "x", json!("a")),
        (3, "ok", "get", "x", json!("a")),
        (2, "invoke", "get", "z", json!(null)),
        (2, "ok", "get", "z", json!("")),
    ])
}

#[test]
fn kv_absent_keys_read_as_the_initial_value() {
    let events = porcupine_kv();
    let nil = check(&events, ModelKind::Kv, Value::Null).unwrap();
    assert_eq!(nil.verdict, Verdict::Invalid, "{nil:?}");
    // Both keys read as "" before any write fail under nil; y (put, then never read) does not.
    let failed: Vec<&str> = nil.failures.iter().map(|f| f.partition.as_str()).collect();
    assert_eq!(failed, ["x", "z"]);
    assert_eq!(nil.failures[0].state, "Null");

    let empty = check(&events, ModelKind::Kv, json!("")).unwrap();
    assert_eq!(empty.verdict, Verdict::Valid, "{empty:?}");
    assert_eq!(empty.partitions, 3);

    // Under "" an absent key no longer reads as null.
    let mut events = events;
    events[9].value = Value::Null;
    let r = check(&events, ModelKind::Kv, json!("")).unwrap();
    assert_eq!(r.verdict, Verdict::Invalid, "{r:?}");
    assert_eq!(r.failures[0].partition, "z");
    assert_eq!(r.failures[0].state, "String(\"\")");
}

#[test]
fn kv_append_starts_from_the_initial_value() {
    let events = history(&[
        (1, "invoke", "append", "x", json!("b")),
        (1, "ok", "append", "x", json!("b")),
        (2, "invoke", "get", "x", json!(null)),
        (2, "ok", "get", "x", json!("ab")),
    ]);
    assert_eq!(check(&events, ModelKind::Kv, Value::Null).unwrap().verdict, Verdict::Invalid);
    assert_eq!(check(&events, ModelKind::Kv, json!("a")).unwrap().verdict, Verdict::Valid);
    // Appending to a number is impossible, also when the number is the initial value.
    assert_eq!(check(&events, ModelKind::Kv, json!(0)).unwrap().verdict, Verdict::Invalid);
}

/// A register read as 0 before any write, then written and read back.
fn register_from_zero() -> Vec<Event> {
    history(&[
        (1, "invoke", "read", "r", json!(null)),
        (1, "ok", "read", "r", json!(0)),
        (2, "invoke", "write", "r", json!(1)),
        (2, "ok", "write", "r", json!(1)),
        (1, "invoke", "read", "r", json!(null)),
        (1, "ok", "read", "r", json!(1)),
    ])
}

#[test]
fn register_reads_the_initial_value_before_any_write() {
    let events = register_from_zero();
    let nil = check(&events, ModelKind::Register, Value::Null).unwrap();
    assert_eq!(nil.verdict, Verdict::Invalid, "{nil:?}");
    assert_eq!(nil.failures[0].unplaceable, [0]);
    assert_eq!(check(&events, ModelKind::Register, json!(0)).unwrap().verdict, Verdict::Valid);
    // The value, not just any non-null: starting from 7 the first read is still impossible.
    assert_eq!(check(&events, ModelKind::Register, json!(7)).unwrap().verdict, Verdict::Invalid);
    // 0 and "0" are different JSON values.
    assert_eq!(check(&events, ModelKind::Register, json!("0")).unwrap().verdict, Verdict::Invalid);
}

#[test]
fn cas_register_starts_from_the_initial_value() {
    let events = history(&[
        (1, "invoke", "cas", "r", json!([0, 1])),
        (1, "ok", "cas", "r", json!([0, 1])),
        (2, "invoke", "read", "r", json!(null)),
        (2, "ok", "read", "r", json!(1)),
    ]);
    assert_eq!(check(&events, ModelKind::CasRegister, Value::Null).unwrap().verdict, Verdict::Invalid);
    assert_eq!(check(&events, ModelKind::CasRegister, json!(0)).unwrap().verdict, Verdict::Valid);
}

#[test]
fn the_mutex_model_takes_no_initial_value() {
    let events = history(&[(1, "invoke", "acquire", "l", json!(null)), (1, "ok", "acquire", "l", json!(null))]);
    assert_eq!(check(&events, ModelKind::Mutex, Value::Null).unwrap().verdict, Verdict::Valid);
    let err = check(&events, ModelKind::Mutex, json!(0)).unwrap_err();
    assert!(err.contains("mutex") && err.contains("initial"), "{err}");
}

#[test]
fn the_result_names_a_non_null_initial_value() {
    let events = porcupine_kv();
    let r = check(&events, ModelKind::Kv, json!("")).unwrap();
    assert_eq!(r.initial, json!(""));
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["initial"], json!(""));
    assert_eq!(serde_json::from_value::<Linearizability>(v).unwrap(), r);
    // The default is left out, so results written before the option read back the same.
    let nil = check(&events, ModelKind::Kv, Value::Null).unwrap();
    let v = serde_json::to_value(&nil).unwrap();
    assert!(v.get("initial").is_none(), "{v}");
    assert_eq!(serde_json::from_value::<Linearizability>(v).unwrap(), nil);
}
