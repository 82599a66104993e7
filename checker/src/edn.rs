//! Jepsen histories: one EDN op map per line, read into the same [`Event`]s as history.jsonl.
//!
//! `{:process 0, :type :invoke, :f :read, :key "3", :value nil, :time 1234, :index 7}`
//!
//! - `:type` and `:f` are keywords (or strings); the event keeps the name without the colon.
//! - `:process` is an integer (a client) or a name (`:nemesis` → `Named("nemesis")`).
//! - `:value` becomes JSON: nil → null, keywords and symbols → strings, vectors, lists and
//!   sets → arrays, maps → objects (keys by name), tagged values → their inner value. An
//!   integer that fits neither i64 nor u64 is an error naming it, as in JSON lines (see
//!   [`crate::wide_integer`]); floats, ratios and `M` decimals are f64.
//! - `:error` of any shape is kept as text: a string, keyword or symbol by its name
//!   (`:timeout` → `timeout`, as for `:f`), anything else printed as EDN (`[:timeout "x"]`).
//! - Jepsen histories without `:time` keep real-time order by position only, so the line
//!   number stands in for the time; without `:index`, events are numbered in line order.
//! - Our own optional fields are accepted too: `:token`, `:node`, `:client`, and
//!   `:validity_ms` (also spelled `:validity-ms`). Other keys (`:latency`, …) are ignored.

pub mod reader;

pub use reader::{read_one, Edn, ReadError};

use crate::wide_integer::WideInteger;

use crate::history::{Event, EventType, Process};
use crate::line_error::LineError;
use serde_json::Value;

/// One line of an EDN history: `line_no` is 1-based, `ordinal` the number of events before it.
/// A line of only commas and comments holds no event. With the event: whether the op gave its
/// `:time` (the history rules move stand-in times when they reorder).
pub(crate) fn parse_line(line: &[u8], line_no: usize, ordinal: usize) -> Result<Option<(Event, bool)>, LineError> {
    let text = std::str::from_utf8(line).map_err(|e| {
        let column = String::from_utf8_lossy(&line[..e.valid_up_to()]).chars().count() + 1;
        LineError {
            message: format!("invalid UTF-8 at column {column}"),
            // No error length = the bytes stop inside a character: a cut line.
            eof: e.error_len().is_none(),
        }
    })?;
    let form = match read_one(text) {
        Ok(form) => form,
        Err(e) if e.eof && is_blank(text) => return Ok(None),
        Err(e) => return Err(LineError { message: e.to_string(), eof: e.eof }),
    };
    let time_given = !matches!(form.get("time"), None | Some(Edn::Nil));
    op_to_event(&form, line_no as u64, ordinal as u64).map(|e| Some((e, time_given))).map_err(|message| LineError { message, eof: false })
}

/// Only whitespace, commas and `;` comments.
fn is_blank(text: &str) -> bool {
    let code = text.split(';').next().unwrap_or("");
    code.chars().all(|c| c.is_whitespace() || c == ',')
}

/// Converts one op map. `default_time` and `default_index` fill a missing `:time` / `:index`.
pub fn op_to_event(op: &Edn, default_time: u64, default_index: u64) -> Result<Event, String> {
    if !matches!(op, Edn::Map(_)) && !matches!(op, Edn::Tagged(_, m) if matches!(**m, Edn::Map(_))) {
        return Err(format!("expected an op map, found {}", op.kind()));
    }
    let t = required(op, "type")?;
    let kind = match name(t) {
        Some("invoke") => EventType::Invoke,
        Some("ok") => EventType::Ok,
        Some("fail") => EventType::Fail,
        Some("info") => EventType::Info,
        _ => return Err(format!(":type must be :invoke, :ok, :fail or :info, found {t}")),
    };
    let process = match required(op, "process")? {
        v @ (Edn::Int(_) | Edn::BigInt(_)) => Process::Client(as_u64(v).ok_or_else(|| format!(":process {v} is not a client number"))?),
        v => Process::Named(name(v).ok_or_else(|| format!(":process must be an integer or a name, found {}", v.kind()))?.to_string()),
    };
    let f = text(required(op, "f")?);
    let mut e = Event::new(uint(op, "time")?.unwrap_or(default_time), process, kind, f);
    e.index = uint(op, "index")?.unwrap_or(default_index);
    e.key = op.get("key").and_then(optional_text);
    e.value = op.get("value").map_or(Ok(Value::Null), to_json).map_err(|wide| format!(":value: {wide}"))?;
    e.token = uint(op, "token")?;
    e.node = op.get("node").and_then(optional_text);
    e.error = op.get("error").and_then(optional_text);
    e.validity_ms = match uint(op, "validity_ms")? {
        Some(v) => Some(v),
        None => uint(op, "validity-ms")?,
    };
    e.client = uint(op, "client")?;
    Ok(e)
}

fn required<'a>(op: &'a Edn, key: &str) -> Result<&'a Edn, String> {
    op.get(key).ok_or_else(|| format!("missing :{key}"))
}

/// A non-negative integer field; absent and nil are both `None`.
fn uint(op: &Edn, key: &str) -> Result<Option<u64>, String> {
    match op.get(key) {
        None | Some(Edn::Nil) => Ok(None),
        Some(v @ (Edn::Int(_) | Edn::BigInt(_))) => {
            as_u64(v).map(Some).ok_or_else(|| format!(":{key} must be an integer from 0 to {}, found {v}", u64::MAX))
        }
        Some(v) => Err(format!(":{key} must be a non-negative integer, found {}", v.kind())),
    }
}

/// An integer that fits u64 (an [`Edn::BigInt`] never does).
fn as_u64(v: &Edn) -> Option<u64> {
    match v {
        Edn::Int(i) => u64::try_from(*i).ok(),
        _ => None,
    }
}

/// The bare name of a keyword, symbol or string.
fn name(v: &Edn) -> Option<&str> {
    match v {
        Edn::Keyword(s) | Edn::Symbol(s) | Edn::Str(s) => Some(s),
        _ => None,
    }
}

/// A name as is, anything else printed as EDN (`:error [:timeout "x"]` stays readable).
fn text(v: &Edn) -> String {
    name(v).map_or_else(|| v.to_string(), str::to_string)
}

fn optional_text(v: &Edn) -> Option<String> {
    match v {
        Edn::Nil => None,
        v => Some(text(v)),
    }
}

/// An EDN value as JSON (see the module docs for the mapping). An integer beyond i64 and u64
/// has no JSON value here that is not another value (a rounded float, or a string of its
/// digits that a string value could equal): it is an error.
pub fn to_json(v: &Edn) -> Result<Value, WideInteger> {
    Ok(match v {
        Edn::Nil => Value::Null,
        Edn::Bool(b) => Value::Bool(*b),
        Edn::Int(i) => match (i64::try_from(*i), u64::try_from(*i)) {
            (Ok(i), _) => i.into(),
            (_, Ok(u)) => u.into(),
            _ => return Err(WideInteger { literal: i.to_string() }),
        },
        Edn::BigInt(digits) => return Err(WideInteger { literal: digits.clone() }),
        Edn::Float(x) => serde_json::Number::from_f64(*x).map_or_else(|| Value::String(v.to_string()), Value::Number),
        Edn::Str(s) | Edn::Keyword(s) | Edn::Symbol(s) => Value::String(s.clone()),
        Edn::Char(c) => Value::String(c.to_string()),
        Edn::List(items) | Edn::Vector(items) | Edn::Set(items) => Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Edn::Map(entries) => Value::Object(entries.iter().map(|(k, v)| Ok((text(k), to_json(v)?))).collect::<Result<_, _>>()?),
        Edn::Tagged(_, inner) => to_json(inner)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(line: &str) -> Result<Event, String> {
        op_to_event(&read_one(line).map_err(|e| e.to_string())?, 99, 7)
    }

    #[test]
    fn reads_values_of_every_shape() {
        let v = read_one(r#"[nil true -12 1.5 "a\"b\\c\n" \x :k/w sym (1 2) #{3} {:a [4]} #inst "t"]"#).unwrap();
        assert_eq!(to_json(&v).unwrap(), json!([null, true, -12, 1.5, "a\"b\\c\n", "x", "k/w", "sym", [1, 2], [3], {"a": [4]}, "t"]));
        // Printing reads back to the same value.
        assert_eq!(read_one(&v.to_string()).unwrap(), v);
    }

    #[test]
    fn commas_comments_and_discard_are_blank() {
        let v = read_one("{:a 1,, :b #_ ignored 2} ; trailing comment").unwrap();
        assert_eq!(to_json(&v).unwrap(), json!({"a": 1, "b": 2}));
        // Before a closing bracket, after the form, and discarding a discard.
        let v = read_one("#_ 0 [1 #_ 2 #_ #_ 3 4] #_ {:x 5}").unwrap();
        assert_eq!(to_json(&v).unwrap(), json!([1]));
    }

    #[test]
    fn a_long_run_of_discards_is_read_without_recursion() {
        // Each `#_ 1` used to cost a stack frame at the same depth, escaping the nesting limit:
        // a 5 MB line of them overflowed the stack and aborted `lockchaos check`.
        let text = "#_ 1 ".repeat(1_000_000) + "2";
        assert_eq!(read_one(&text).unwrap(), Edn::Int(2));
        // Discards nested in discards still count towards the nesting limit.
        assert!(read_one(&("#_ ".repeat(1000) + "1")).unwrap_err().message.starts_with("nesting deeper than"));
    }

    #[test]
    fn integers_are_read_exactly_and_values_beyond_64_bits_refused() {
        let json = |text: &str| to_json(&read_one(text).unwrap()).map_err(|wide| wide.literal);
        assert_eq!(json("18446744073709551615"), Ok(json!(u64::MAX)));
        assert_eq!(json("-9223372036854775808N"), Ok(json!(i64::MIN)));
        assert_eq!(json("-5N"), Ok(json!(-5)));
        // Their digits once stood for them, equal to the string "99999999999999999999999".
        assert_eq!(json("[1 99999999999999999999999]"), Err("99999999999999999999999".into()));
        assert_eq!(json("{:a #{-9223372036854775809}}"), Err("-9223372036854775809".into()));
        // Beyond i128, read exactly rather than as a float: printed as written.
        let wide = "+000170141183460469231731687303715884105728N";
        assert_eq!(read_one(wide).unwrap(), Edn::BigInt("170141183460469231731687303715884105728".into()));
        assert_eq!(
            read_one(&format!("[:too-big -{}]", &wide[1..])).unwrap().to_string(),
            "[:too-big -170141183460469231731687303715884105728]"
        );
        assert_eq!(json(wide), Err("170141183460469231731687303715884105728".into()));
        // A float beyond f64 would be infinity, another value.
        for overflow in ["1e400", "-1e400M", "1/0"] {
            assert!(read_one(overflow).unwrap_err().message.starts_with("cannot read"), "{overflow}");
        }
        assert_eq!(json("1/4"), Ok(json!(0.25)));
    }

    #[test]
    fn errors_say_where_and_whether_input_ended() {
        let e = read_one("{:a [1 2}").unwrap_err();
        assert_eq!((e.column, e.eof), (9, false), "{e}");
        let e = read_one(r#"{:a "unterminated"#).unwrap_err();
        assert!(e.eof, "{e}");
        let e = read_one("{:a 1} {:b 2}").unwrap_err();
        assert_eq!((e.message.as_str(), e.column), ("unexpected text after the form", 8));
        assert!(read_one(&"[".repeat(1000)).is_err());
    }

    #[test]
    fn op_fields_and_defaults() {
        let e =
            event(r#"{:process :nemesis, :type :info, :f :start-partition, :value [:isolated {"n1" #{"n2"}}], :error [:timeout "slow"]}"#)
                .unwrap();
        assert_eq!(e.process, Process::Named("nemesis".into()));
        assert_eq!((e.time, e.index), (99, 7));
        assert_eq!(e.f, "start-partition");
        assert_eq!(e.value, json!(["isolated", {"n1": ["n2"]}]));
        assert_eq!(e.error.as_deref(), Some(r#"[:timeout "slow"]"#));

        let e =
            event("#jepsen.history.Op{:index 3, :time 5, :type :ok, :process 2, :f :acquire, :token 12, :validity-ms 500, :key :ledger}")
                .unwrap();
        assert_eq!((e.index, e.time, e.token, e.validity_ms), (3, 5, Some(12), Some(500)));
        assert_eq!(e.key.as_deref(), Some("ledger"));
    }

    #[test]
    fn op_errors_name_the_field() {
        assert_eq!(event("{:process 1, :f :read}").unwrap_err(), "missing :type");
        assert_eq!(event("{:process 1, :type :maybe, :f :read}").unwrap_err(), ":type must be :invoke, :ok, :fail or :info, found :maybe");
        assert_eq!(event("{:process -1, :type :ok, :f :read}").unwrap_err(), ":process -1 is not a client number");
        assert_eq!(
            event("{:process 1, :type :ok, :f :read, :time \"5\"}").unwrap_err(),
            ":time must be a non-negative integer, found a string"
        );
        assert_eq!(
            event("{:process 1, :type :ok, :f :read, :time -1}").unwrap_err(),
            ":time must be an integer from 0 to 18446744073709551615, found -1"
        );
        assert_eq!(event("[1 2]").unwrap_err(), "expected an op map, found a vector");
    }
}
