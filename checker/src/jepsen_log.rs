//! Jepsen's log, the format many published Jepsen runs were kept in (jepsen.log), read into the
//! same [`Event`]s as history.jsonl: the operations `jepsen.util` logged, one per line, among
//! every other line of the log.
//!
//! ```text
//! INFO  jepsen.util - 3\t:invoke\t:cas\t[1 4]
//! 2016-04-01 12:00:00,123{GMT}\tINFO\t[jepsen worker 3] jepsen.util: 3\t:ok\t:cas\t[1 4]
//! INFO  jepsen.util - :nemesis\t:info\t:start\tnil
//! ```
//!
//! - A line is an operation when `jepsen.util` logged it (`jepsen.util - ` or `jepsen.util: `)
//!   and its message reads PROCESS TYPE F VALUE, the fields apart by tabs or spaces: PROCESS an
//!   integer or a keyword (`:nemesis`), TYPE one of `:invoke :ok :fail :info`, F a keyword,
//!   VALUE the rest of the line, read as EDN (nil when there is none): `[1 4]`, `nil`,
//!   `:timed-out`.
//! - Every other line (other loggers, jepsen.util's other messages, stack traces) holds no
//!   operation and is skipped.
//! - An operation line whose value is not EDN is an error naming the line: a malformed history
//!   is an error, not a verdict.
//! - The log's timestamps are not reliable enough to order operations; as in an EDN history
//!   without `:time`, the line number stands in for the time, so the order is the log's.
//! - An `:info` completion's value (often `:timed-out`) is not used: an indeterminate operation
//!   is judged by its invocation, as in Jepsen.

use crate::edn::reader::integer;
use crate::edn::{op_to_event, read_one, Edn};
use crate::history::Event;
use crate::line_error::LineError;

/// What marks a line that jepsen.util logged, each with what may follow it.
const LOGGER: &str = "jepsen.util";

/// One line of a Jepsen log: `line_no` is 1-based, `ordinal` the number of events before it.
/// Ok(None): the line holds no operation.
pub(crate) fn parse_line(line: &[u8], line_no: usize, ordinal: usize) -> Result<Option<(Event, bool)>, LineError> {
    // A log holds whatever its programs printed: bytes that are not UTF-8 are replaced, and
    // only an operation line is then read closely.
    let text = String::from_utf8_lossy(line);
    let Some(message) = message(&text) else { return Ok(None) };
    let mut rest = message;
    let mut field = || {
        rest = rest.trim_start();
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let (word, after) = rest.split_at(end);
        rest = after;
        word
    };
    let (process, kind, f) = (field(), field(), field());
    // An integer of any width: one beyond u64 is an operation line with a bad process (an
    // error from `op_to_event`), not a line that holds no operation.
    let process = match (integer(process), process.strip_prefix(':')) {
        (Some(n), _) => n,
        (_, Some(name)) if !name.is_empty() => Edn::Keyword(name.to_string()),
        _ => return Ok(None),
    };
    let Some(kind) = kind.strip_prefix(':').filter(|k| matches!(*k, "invoke" | "ok" | "fail" | "info")) else {
        return Ok(None);
    };
    let Some(f) = f.strip_prefix(':').filter(|f| !f.is_empty()) else { return Ok(None) };
    let value_text = rest.trim();
    let value = if value_text.is_empty() {
        Edn::Nil
    } else {
        read_one(value_text).map_err(|e| LineError { message: format!("the value `{value_text}`: {e}"), eof: e.eof })?
    };
    let op = Edn::Map(vec![
        (Edn::Keyword("process".into()), process),
        (Edn::Keyword("type".into()), Edn::Keyword(kind.into())),
        (Edn::Keyword("f".into()), Edn::Keyword(f.into())),
        (Edn::Keyword("value".into()), value),
    ]);
    op_to_event(&op, line_no as u64, ordinal as u64).map(|e| Some((e, false))).map_err(|message| LineError { message, eof: false })
}

/// The message jepsen.util logged on this line, if it did.
fn message(text: &str) -> Option<&str> {
    let at = text.find(LOGGER)?;
    let after = &text[at + LOGGER.len()..];
    after.strip_prefix(" - ").or_else(|| after.strip_prefix(": ")).or_else(|| after.strip_prefix(':'))
}

/// Whether a line looks like a Jepsen log's (for telling the format by the content): a log
/// line (a level) of one of Jepsen's loggers, not an op map.
pub(crate) fn looks_like_log(bytes: &[u8]) -> bool {
    let line = bytes.split(|b| *b == b'\n').find(|l| !l.iter().all(u8::is_ascii_whitespace)).unwrap_or_default();
    let text = String::from_utf8_lossy(line);
    let level = ["INFO", "WARN", "DEBUG", "ERROR"].iter().any(|l| text.contains(l));
    let op_map = text.trim_start().starts_with(['{', '#', ';']);
    !op_map && text.contains("jepsen") && level
}

#[cfg(test)]
mod tests {
    use super::parse_line;
    use crate::history::{EventType, Process};
    use serde_json::json;

    fn op(line: &str) -> Option<crate::history::Event> {
        parse_line(line.as_bytes(), 7, 3).unwrap_or_else(|e| panic!("{line}: {}", e.message)).map(|(e, _)| e)
    }

    #[test]
    fn operation_lines_in_either_log_layout_with_tabs_or_spaces() {
        let e = op("INFO  jepsen.util - 3\t:invoke\t:cas\t[1 4]").unwrap();
        assert_eq!(
            (e.process, e.kind, e.f.as_str(), e.value, e.time, e.index),
            (Process::Client(3), EventType::Invoke, "cas", json!([1, 4]), 7, 3)
        );
        let e = op("2016-04-01 12:00:00,123{GMT}\tINFO\t[jepsen worker 3] jepsen.util: 3   :ok   :read   4").unwrap();
        assert_eq!((e.kind, e.f.as_str(), e.value), (EventType::Ok, "read", json!(4)));
        let e = op("INFO  jepsen.util - :nemesis\t:info\t:start\tnil").unwrap();
        assert_eq!((e.process, e.kind, e.value), (Process::Named("nemesis".into()), EventType::Info, json!(null)));
        let e = op("INFO  jepsen.util - 4\t:info\t:write\t:timed-out").unwrap();
        assert_eq!(e.value, json!("timed-out"));
        assert_eq!(op("INFO  jepsen.util - 0\t:invoke\t:read").unwrap().value, json!(null), "no value: nil");
    }

    #[test]
    fn other_lines_hold_no_operation() {
        for line in [
            "INFO  jepsen.core - Worker 0 starting",
            "INFO  jepsen.util - Running test",
            "INFO  jepsen.util - 3\t:begin\t:cas\t[1 4]",
            "\tat clojure.lang.AFn.run(AFn.java:22)",
            "some unrelated line",
        ] {
            assert!(op(line).is_none(), "{line}");
        }
    }

    #[test]
    fn an_operation_whose_value_is_not_edn_is_an_error() {
        let err = parse_line(b"INFO  jepsen.util - 3\t:ok\t:cas\t[1 4", 9, 0).unwrap_err();
        assert!(err.message.contains("the value `[1 4`") && err.eof, "{}", err.message);
        let err = parse_line(b"INFO  jepsen.util - 3\t:ok\t:cas\t}", 9, 0).unwrap_err();
        assert!(!err.eof, "{}", err.message);
    }
}
