//! Integers wider than 64 bits (neither i64 nor u64) in a history (issue 23, item 6): serde_json
//! read them as a rounded f64 and the EDN reader past i128 as one too, so a register written
//! 10^30 and read back as 10^30 + 1 was judged valid. Every format now refuses such a value
//! with an error naming the line and the integer; i64::MIN and u64::MAX still read exactly.

use checker::linearizability::{check_with, ModelKind, Options};
use checker::{parse_history, HistoryFormat, Verdict};
use serde_json::{json, Value};
use std::time::Duration;

const FORMATS: [HistoryFormat; 3] = [HistoryFormat::Jsonl, HistoryFormat::Edn, HistoryFormat::JepsenLog];

/// One register history in `format`: client 1 writes `written`, then reads `read` back. The
/// values are integer literals, written into the text as they are.
fn register_history(format: HistoryFormat, written: &str, read: &str) -> String {
    let ops = [("invoke", "write", written), ("ok", "write", written), ("invoke", "read", "null"), ("ok", "read", read)];
    ops.iter()
        .enumerate()
        .map(|(i, (kind, f, value))| {
            let time = (i + 1) * 1000;
            match format {
                HistoryFormat::Jsonl => {
                    format!(r#"{{"index":{i},"time":{time},"process":1,"type":"{kind}","f":"{f}","value":{value}}}"#)
                }
                HistoryFormat::Edn => {
                    let value = if *value == "null" { "nil" } else { value };
                    format!("{{:index {i}, :time {time}, :process 1, :type :{kind}, :f :{f}, :value {value}}}")
                }
                HistoryFormat::JepsenLog => {
                    let value = if *value == "null" { "nil" } else { value };
                    format!("INFO  jepsen.util - 1\t:{kind}\t:{f}\t{value}")
                }
            }
        })
        .map(|line| line + "\n")
        .collect()
}

/// What `lockchaos check --model register` does with the text: a parse error, or the verdict.
fn judge(format: HistoryFormat, text: &str) -> Result<Verdict, String> {
    let events = parse_history(text, Some(format)).map_err(|e| e.to_string())?.events;
    Ok(check_with(&events, ModelKind::Register, &Options::new(Duration::from_secs(20)))?.verdict)
}

/// The issue's values, each written and then read back one greater (or one less): each pair
/// rounds to the same f64. 10^40 is beyond i128 too, where EDN's reader rounded.
const WIDE: [(&str, &str); 5] = [
    ("1000000000000000000000000000000", "1000000000000000000000000000001"),
    ("-9223372036854775809", "-9223372036854775810"),
    ("18446744073709551616", "18446744073709551617"),
    ("10000000000000000000000000000000000000000", "10000000000000000000000000000000000000001"),
    ("-170141183460469231731687303715884105729", "-170141183460469231731687303715884105730"),
];

#[test]
fn a_value_beyond_64_bits_is_an_error_naming_the_line_and_the_integer_in_every_format() {
    for format in FORMATS {
        for (written, read) in WIDE {
            let text = register_history(format, written, read);
            match judge(format, &text) {
                Err(message) => {
                    assert!(message.starts_with("line 1: "), "{format}: {message}");
                    assert!(message.contains(written), "{format}: {message}");
                    assert!(message.contains("neither i64 nor u64"), "{format}: {message}");
                    assert!(!message.contains('\n'), "{format}: {message}");
                }
                Ok(verdict) => panic!("{format}: {written} written, {read} read: judged {verdict} on rounded values"),
            }
            // The read alone is refused too (the wide value on line 4).
            let text = register_history(format, "1", read);
            let message = judge(format, &text).unwrap_err();
            assert!(message.starts_with("line 4: ") && message.contains(read), "{format}: {message}");
        }
    }
}

#[test]
fn the_64_bit_limits_still_read_exactly() {
    for format in FORMATS {
        for (limit, expected, neighbour) in [
            (u64::MAX.to_string(), json!(u64::MAX), (u64::MAX - 1).to_string()),
            (i64::MIN.to_string(), json!(i64::MIN), (i64::MIN + 1).to_string()),
            (i64::MAX.to_string(), json!(i64::MAX), (i64::MAX - 1).to_string()),
        ] {
            let same = register_history(format, &limit, &limit);
            let events = parse_history(&same, Some(format)).unwrap().events;
            assert_eq!(events[0].value, expected, "{format}");
            assert_eq!(judge(format, &same), Ok(Verdict::Valid), "{format}: {limit}");
            // One apart, which an f64 cannot tell: invalid, so they were compared exactly.
            let changed = register_history(format, &limit, &neighbour);
            assert_eq!(judge(format, &changed), Ok(Verdict::Invalid), "{format}: {limit} read as {neighbour}");
        }
    }
}

/// Floats stay floats, compared as f64 (documented): a wide float is not an error. Two spellings
/// of one float are one value: serde_json's default float parsing read `1.0e30` one unit in the
/// last place off `1e30`, an invalid verdict on an unchanged value.
#[test]
fn floats_are_read_as_f64() {
    for format in [HistoryFormat::Jsonl, HistoryFormat::Edn] {
        let text = register_history(format, "1e30", "1.0e30");
        assert_eq!(parse_history(&text, Some(format)).unwrap().events[0].value, json!(1e30), "{format}");
        assert_eq!(judge(format, &text), Ok(Verdict::Valid), "{format}");
    }
}

/// A wide integer in a field that is not the value names that field.
#[test]
fn a_wide_integer_in_another_field_names_the_field() {
    let wide = "1000000000000000000000000000000";
    let jsonl = format!(r#"{{"index":0,"time":{wide},"process":1,"type":"invoke","f":"write","value":1}}"#);
    let message = parse_history(&jsonl, Some(HistoryFormat::Jsonl)).unwrap_err().to_string();
    assert!(message.starts_with("line 1: field `time`: ") && message.contains(wide), "{message}");
    // Nested in the value: still the value's field.
    let nested = format!(r#"{{"time":1,"process":1,"type":"invoke","f":"write","value":{{"a":[1,{wide}]}}}}"#);
    let message = parse_history(&nested, Some(HistoryFormat::Jsonl)).unwrap_err().to_string();
    assert!(message.starts_with("line 1: field `value`: ") && message.contains(wide), "{message}");
    // In a string it is text, kept as written.
    let text = format!(r#"{{"time":1,"process":1,"type":"invoke","f":"write","value":"{wide}"}}"#);
    assert_eq!(parse_history(&text, Some(HistoryFormat::Jsonl)).unwrap().events[0].value, Value::String(wide.into()));

    let edn = format!("{{:time {wide}0000000000, :process 1, :type :invoke, :f :write}}");
    let message = parse_history(&edn, Some(HistoryFormat::Edn)).unwrap_err().to_string();
    assert!(message.starts_with("line 1: :time ") && message.contains(wide), "{message}");
    // A Jepsen log's process beyond i128 is an operation line with a bad process, not a skipped line.
    let log = format!("INFO  jepsen.util - {wide}0000000000\t:invoke\t:write\t1\n");
    let message = parse_history(&log, Some(HistoryFormat::JepsenLog)).unwrap_err().to_string();
    assert!(message.starts_with("line 1: :process ") && message.contains(wide), "{message}");
}
