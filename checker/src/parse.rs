//! Reading history.jsonl: one event per line.
//!
//! Malformed input is an error (the history cannot be judged), which is different from an
//! inconsistent history (a verdict). The one tolerated defect is a truncated last line: a run
//! killed mid-write leaves exactly that, and the events before it are still good evidence.

use crate::history::Event;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Events in file order, plus what was tolerated while reading them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParsedHistory {
    pub events: Vec<Event>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Error)]
pub enum HistoryError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `line` is 1-based; `message` is one line of text.
    #[error("{}: {message}", location(.path.as_deref(), *.line))]
    Line {
        path: Option<PathBuf>,
        line: usize,
        message: String,
    },
}

/// `path:12` when reading a file (the form editors jump to), `line 12` for bare text.
fn location(path: Option<&Path>, line: usize) -> String {
    match path {
        Some(p) => format!("{}:{line}", p.display()),
        None => format!("line {line}"),
    }
}

/// Parses JSON-lines text (see the "History format" section of DESIGN.md).
pub fn parse_jsonl(text: &str) -> Result<ParsedHistory, HistoryError> {
    parse_bytes(text.as_bytes(), None)
}

/// Reads and parses a history file; errors and warnings name the file.
pub fn read_history_file(path: &Path) -> Result<ParsedHistory, HistoryError> {
    // Bytes, not a String: a run killed mid-write can cut a multi-byte character in half,
    // and that must surface as a truncated last line, not as an unreadable file.
    let bytes = std::fs::read(path).map_err(|source| HistoryError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_bytes(&bytes, Some(path))
}

fn parse_bytes(bytes: &[u8], path: Option<&Path>) -> Result<ParsedHistory, HistoryError> {
    let ends_with_newline = bytes.last() == Some(&b'\n');
    let mut out = ParsedHistory::default();
    let mut lines = bytes.split(|&b| b == b'\n').enumerate().peekable();
    while let Some((i, raw)) = lines.next() {
        let line_no = i + 1;
        // After a final '\n', split yields one empty piece: it is blank and skipped below.
        let unterminated = lines.peek().is_none() && !ends_with_newline;
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Event>(line) {
            Ok(event) => out.events.push(event),
            // Only an end-of-input error is a cut line: an unterminated line that is complete
            // JSON but not an event was written whole, so it is malformed like any other.
            Err(e) if unterminated && e.is_eof() => out.warnings.push(format!(
                "{}: truncated last line ignored ({})",
                location(path, line_no),
                describe(&e)
            )),
            Err(e) => {
                return Err(HistoryError::Line {
                    path: path.map(Path::to_path_buf),
                    line: line_no,
                    message: describe(&e),
                })
            }
        }
    }
    Ok(out)
}

/// serde_json's message without its "at line 1 column N" suffix (every line is line 1 to it);
/// the column is kept for syntax errors, where it points at the bad character.
fn describe(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full);
    match e.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            format!("{message} at column {}", e.column())
        }
        _ => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{EventType, Process};

    const A: &str = r#"{"index":0,"time":10,"process":1,"type":"invoke","f":"acquire","key":"ledger","value":null}"#;
    const B: &str = r#"{"index":1,"time":20,"process":"resource","type":"ok","f":"read","key":"ledger","value":5,"client":1}"#;

    fn line_error(text: &str) -> (usize, String) {
        match parse_jsonl(text) {
            Err(HistoryError::Line {
                path: None,
                line,
                message,
            }) => (line, message),
            other => panic!("expected a line error, got {other:?}"),
        }
    }

    #[test]
    fn parses_events_and_skips_blank_and_crlf() {
        let text = format!("{A}\r\n\n   \n{B}\n");
        let h = parse_jsonl(&text).unwrap();
        assert!(h.warnings.is_empty());
        assert_eq!(h.events.len(), 2);
        assert_eq!(h.events[0].process, Process::Client(1));
        assert_eq!(h.events[1].process, Process::Named("resource".into()));
        assert_eq!(h.events[1].kind, EventType::Ok);
        assert_eq!(h.events[1].client, Some(1));
    }

    #[test]
    fn empty_input_is_empty_history() {
        assert_eq!(parse_jsonl("").unwrap(), ParsedHistory::default());
        assert_eq!(parse_jsonl("\n\n").unwrap(), ParsedHistory::default());
    }

    #[test]
    fn missing_field_names_line_and_field() {
        let text = format!("{A}\n{{\"process\":1,\"type\":\"ok\",\"f\":\"read\"}}\n{B}\n");
        let err = parse_jsonl(&text).unwrap_err();
        assert_eq!(err.to_string(), "line 2: missing field `time`");
    }

    #[test]
    fn syntax_error_in_middle_line_is_an_error_with_column() {
        let (line, message) = line_error(&format!("{A}\n\n{{\"time\":1,,}}\n{B}\n"));
        assert_eq!(line, 3);
        assert!(message.contains("at column 11"), "{message}");
        assert!(!message.contains('\n'));
    }

    #[test]
    fn unknown_type_is_an_error_even_on_an_unterminated_last_line() {
        let (line, message) = line_error(&A.replace("\"invoke\"", "\"maybe\""));
        assert_eq!(line, 1);
        assert!(message.contains("unknown variant `maybe`"), "{message}");
    }

    #[test]
    fn wrong_field_type_is_an_error() {
        let (line, message) = line_error(&format!(
            "{}\n",
            A.replace("\"time\":10", "\"time\":\"10\"")
        ));
        assert_eq!(line, 1);
        assert!(
            message.starts_with("invalid type: string \"10\""),
            "{message}"
        );
    }

    #[test]
    fn truncated_last_line_is_a_warning() {
        let text = format!("{A}\n{B}\n{}", &B[..40]);
        let h = parse_jsonl(&text).unwrap();
        assert_eq!(h.events.len(), 2);
        assert_eq!(h.warnings.len(), 1);
        assert!(
            h.warnings[0].starts_with("line 3: truncated last line ignored"),
            "{:?}",
            h.warnings
        );
    }

    #[test]
    fn complete_unterminated_last_line_is_kept() {
        let h = parse_jsonl(&format!("{A}\n{B}")).unwrap();
        assert_eq!(h.events.len(), 2);
        assert!(h.warnings.is_empty());
    }

    #[test]
    fn bad_last_line_with_newline_is_an_error() {
        // Terminated by '\n', so the writer finished it: it is malformed, not truncated.
        let (line, _) = line_error(&format!("{A}\n{}\n", &B[..40]));
        assert_eq!(line, 2);
    }

    #[test]
    fn file_errors_name_the_file() {
        let path = std::env::temp_dir().join(format!("checker-parse-{}.jsonl", std::process::id()));
        std::fs::write(&path, format!("{A}\nnot json\n")).unwrap();
        let err = read_history_file(&path).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("{}:2: expected", path.display())),
            "{text}"
        );

        let missing = Path::new("/nonexistent/history.jsonl");
        let err = read_history_file(missing).unwrap_err();
        assert!(matches!(err, HistoryError::Io { .. }));
        assert!(
            err.to_string().starts_with("/nonexistent/history.jsonl: "),
            "{err}"
        );
    }

    #[test]
    fn truncated_multibyte_character_is_a_truncated_line() {
        let mut bytes = format!("{A}\n").into_bytes();
        bytes.extend_from_slice(b"{\"time\":1,\"process\":\"\xc3");
        let h = parse_bytes(&bytes, None).unwrap();
        assert_eq!(h.events.len(), 1);
        assert_eq!(h.warnings.len(), 1);
    }
}
