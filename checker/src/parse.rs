//! Reading a history: one event per line, as JSON (history.jsonl) or as a Jepsen EDN op map.
//!
//! Malformed input is an error (the history cannot be judged), which is different from an
//! inconsistent history (a verdict). The one tolerated defect is a truncated last line: a run
//! killed mid-write leaves exactly that, and the events before it are still good evidence.
//!
//! Over 400 lines: the readers of both formats share the line loop, its bounds and its errors;
//! a JSON line's own reading is in `json_line.rs`, EDN's in `edn/`.

use crate::history::Event;
use crate::history_rules::{self, Origin};
use std::io::{BufRead, BufReader, Read};
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
    /// The file is not one to read as a history (not a regular file, larger than
    /// [`HISTORY_LIMIT`]) or could not be opened.
    #[error(transparent)]
    File(#[from] crate::bounded_read::ReadError),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `line` is 1-based; `message` is one line of text.
    #[error("{}: {message}", location(.path.as_deref(), *.line))]
    Line { path: Option<PathBuf>, line: usize, message: String },
}

/// `path:12` when reading a file (the form editors jump to), `line 12` for bare text.
fn location(path: Option<&Path>, line: usize) -> String {
    match path {
        Some(p) => format!("{}:{line}", p.display()),
        None => format!("line {line}"),
    }
}

/// The on-disk shapes a history can come in: our JSON lines, or Jepsen's EDN op maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HistoryFormat {
    Jsonl,
    Edn,
    /// Jepsen's log lines (jepsen.log): see [`crate::jepsen_log`].
    JepsenLog,
}

impl HistoryFormat {
    /// By file extension: `.edn` is EDN, `.jsonl` / `.json` JSON lines, anything else unknown.
    pub fn from_path(path: &Path) -> Option<HistoryFormat> {
        match path.extension()?.to_str()? {
            "edn" => Some(HistoryFormat::Edn),
            "jsonl" | "json" => Some(HistoryFormat::Jsonl),
            "log" => Some(HistoryFormat::JepsenLog),
            _ => None,
        }
    }

    /// By content: a log line of one of Jepsen's loggers (`INFO  jepsen.core - …`) is a Jepsen
    /// log; an op map opening with a keyword (`{:process …`), a tagged record
    /// (`#jepsen.history.Op{…`) or a `;` comment is EDN; anything else is taken as JSON lines.
    pub fn sniff(bytes: &[u8]) -> HistoryFormat {
        HistoryFormat::sniff_content(bytes).unwrap_or(HistoryFormat::Jsonl)
    }

    /// As [`HistoryFormat::sniff`], `None` when there is nothing but whitespace and commas.
    fn sniff_content(bytes: &[u8]) -> Option<HistoryFormat> {
        if crate::jepsen_log::looks_like_log(bytes) {
            return Some(HistoryFormat::JepsenLog);
        }
        let blank = |b: &u8| b.is_ascii_whitespace() || *b == b',';
        let mut rest = bytes.iter().skip_while(|b| blank(b));
        Some(match rest.next()? {
            b'{' => match rest.find(|b| !blank(b)) {
                Some(b':') => HistoryFormat::Edn,
                _ => HistoryFormat::Jsonl,
            },
            b'#' | b';' => HistoryFormat::Edn,
            _ => HistoryFormat::Jsonl,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            HistoryFormat::Jsonl => "jsonl",
            HistoryFormat::Edn => "edn",
            HistoryFormat::JepsenLog => "jepsen-log",
        }
    }
}

impl std::fmt::Display for HistoryFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for HistoryFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "jsonl" | "json" => Ok(HistoryFormat::Jsonl),
            "edn" => Ok(HistoryFormat::Edn),
            "jepsen-log" => Ok(HistoryFormat::JepsenLog),
            _ => Err(format!("unknown history format `{s}` (expected jsonl, edn or jepsen-log)")),
        }
    }
}

/// The longest line read, newline excluded. Far above any event (ours are a few hundred bytes,
/// a Jepsen op with a large value some kilobytes), and reached within moments on endless input
/// without newlines (/dev/zero), which is then an error instead of memory eaten until none is left.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// The largest history file read, far past any run's (a 10-minute run of 64 clients writes some
/// hundred MiB): the checker holds every event in memory, a few times its line's size, so a file
/// past this would not be checked on the machines lockchaos runs on anyway.
pub const HISTORY_LIMIT: crate::bounded_read::SizeLimit = crate::bounded_read::SizeLimit::new(4 << 30, "a history");

/// Parses JSON-lines text (the history format: see the README, "What a run leaves in the
/// store") as a history: see [`crate::history_rules`].
pub fn parse_jsonl(text: impl AsRef<[u8]>) -> Result<ParsedHistory, HistoryError> {
    read_events(text.as_ref(), None, Some(HistoryFormat::Jsonl), Reading::History)
}

/// Parses Jepsen EDN op maps, one per line (see [`crate::edn`] for how they are read), as a
/// history: see [`crate::history_rules`].
pub fn parse_edn(text: impl AsRef<[u8]>) -> Result<ParsedHistory, HistoryError> {
    read_events(text.as_ref(), None, Some(HistoryFormat::Edn), Reading::History)
}

/// Parses history text (bytes: a cut multi-byte character is a truncated line, not an
/// unreadable input) in `format`, or in the format [`HistoryFormat::sniff`] finds in its
/// first line that is not blank; as a history: see [`crate::history_rules`].
pub fn parse_history(text: impl AsRef<[u8]>, format: Option<HistoryFormat>) -> Result<ParsedHistory, HistoryError> {
    read_events(text.as_ref(), None, format, Reading::History)
}

/// Reads a history file to judge it (what `lockchaos check` does): in `format`, or by extension
/// (`.edn`, `.jsonl`), failing that by content; line by line, never whole (see
/// [`MAX_LINE_BYTES`]), from a regular file or a pipe, of at most [`HISTORY_LIMIT`]; then the history rules ([`crate::history_rules`]): index order, and
/// each client completion after its invoke. Errors and warnings name the file.
pub fn read_history(path: &Path, format: Option<HistoryFormat>) -> Result<ParsedHistory, HistoryError> {
    read_file(path, format, Reading::History)
}

/// The events of one file as written, in line order, without the history rules: for a part
/// of a history, such as one party's event log (the run's merge reads workers/*.jsonl this
/// way, then orders and numbers everything itself). Format as [`read_history`]'s.
pub fn read_history_file(path: &Path) -> Result<ParsedHistory, HistoryError> {
    read_history_file_as(path, None)
}

/// [`read_history_file`] in `format` (`None`: by extension, else by content).
pub fn read_history_file_as(path: &Path, format: Option<HistoryFormat>) -> Result<ParsedHistory, HistoryError> {
    read_file(path, format, Reading::AsWritten)
}

fn read_file(path: &Path, format: Option<HistoryFormat>, reading: Reading) -> Result<ParsedHistory, HistoryError> {
    // A pipe is taken (`check <(zcat history.jsonl.gz)`), within the same bound.
    let file = crate::bounded_read::open_stream(path, HISTORY_LIMIT)?;
    let format = format.or_else(|| HistoryFormat::from_path(path));
    read_events(BufReader::with_capacity(1 << 16, file), Some(path), format, reading)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// The lines' events as they are.
    AsWritten,
    /// A history: the history rules apply.
    History,
}

/// Reads `reader` line by line and parses every line that is not blank. Lines are bytes, not
/// text: a run killed mid-write can cut a multi-byte character in half, and that must surface
/// as a truncated last line, not as an unreadable file. `format` `None` = sniffed from the
/// first line with content.
fn read_events(
    mut reader: impl BufRead,
    path: Option<&Path>,
    mut format: Option<HistoryFormat>,
    reading: Reading,
) -> Result<ParsedHistory, HistoryError> {
    let mut out = ParsedHistory::default();
    let mut origins = Vec::new();
    let mut buf = Vec::new();
    let mut line_no = 0;
    let line_error = |line: usize, message: String| HistoryError::Line { path: path.map(Path::to_path_buf), line, message };
    loop {
        buf.clear();
        let read = (&mut reader).take(MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut buf);
        let n = read.map_err(|source| match path {
            // Past the history's limit (a file that grew while read) is said as such.
            Some(p) => HistoryError::File(crate::bounded_read::into_read_error(p, source)),
            None => HistoryError::Io { path: PathBuf::from("-"), source },
        })?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let line = buf.strip_suffix(b"\n");
        let unterminated = line.is_none();
        let line = line.unwrap_or(&buf);
        if line.len() > MAX_LINE_BYTES {
            return Err(line_error(line_no, format!("line longer than {} MiB: not a history event", MAX_LINE_BYTES >> 20)));
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let format = match format {
            Some(f) => f,
            // Only commas (blank in EDN) before the first op: nothing to tell the format by yet.
            None => match HistoryFormat::sniff_content(line) {
                Some(f) => *format.insert(f),
                None => continue,
            },
        };
        let parsed = match format {
            HistoryFormat::Jsonl => crate::json_line::parse_line(line),
            HistoryFormat::Edn => crate::edn::parse_line(line, line_no, out.events.len()),
            HistoryFormat::JepsenLog => crate::jepsen_log::parse_line(line, line_no, out.events.len()),
        };
        match parsed {
            Ok(Some((event, time_given))) => {
                out.events.push(event);
                origins.push(Origin { line: line_no, time_given });
            }
            // The line holds no event (an EDN comment).
            Ok(None) => {}
            // Only an end-of-input error is a cut line: an unterminated line that is complete
            // but not an event was written whole, so it is malformed like any other.
            Err(e) if unterminated && e.eof => {
                out.warnings.push(format!("{}: truncated last line ignored ({})", location(path, line_no), e.message))
            }
            Err(e) => return Err(line_error(line_no, e.message)),
        }
    }
    if reading == Reading::History {
        history_rules::apply(&mut out.events, &mut origins).map_err(|e| line_error(e.line, e.message))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{EventType, Process};

    const A: &str = r#"{"index":0,"time":10,"process":1,"type":"invoke","f":"acquire","key":"ledger","value":null}"#;
    const B: &str = r#"{"index":1,"time":20,"process":"resource","type":"ok","f":"read","key":"ledger","value":5,"client":1}"#;

    fn line_error(text: &str) -> (usize, String) {
        match parse_jsonl(text) {
            Err(HistoryError::Line { path: None, line, message }) => (line, message),
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
        let (line, message) = line_error(&format!("{}\n", A.replace("\"time\":10", "\"time\":\"10\"")));
        assert_eq!(line, 1);
        assert!(message.starts_with("invalid type: string \"10\""), "{message}");
    }

    #[test]
    fn truncated_last_line_is_a_warning() {
        let text = format!("{A}\n{B}\n{}", &B[..40]);
        let h = parse_jsonl(&text).unwrap();
        assert_eq!(h.events.len(), 2);
        assert_eq!(h.warnings.len(), 1);
        assert!(h.warnings[0].starts_with("line 3: truncated last line ignored"), "{:?}", h.warnings);
    }

    #[test]
    fn complete_unterminated_last_line_is_kept() {
        let h = parse_jsonl(format!("{A}\n{B}")).unwrap();
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
        assert!(text.starts_with(&format!("{}:2: expected", path.display())), "{text}");

        let missing = Path::new("/nonexistent/history.jsonl");
        let err = read_history_file(missing).unwrap_err();
        assert!(matches!(err, HistoryError::File(_)));
        assert!(err.to_string().starts_with("/nonexistent/history.jsonl: cannot read: "), "{err}");
    }

    #[test]
    fn format_by_extension_else_by_content() {
        use HistoryFormat::{Edn, JepsenLog, Jsonl};
        assert_eq!(HistoryFormat::sniff(b" \n{ :process 0}"), Edn);
        assert_eq!(HistoryFormat::sniff(b"#jepsen.history.Op{:index 0}"), Edn);
        assert_eq!(HistoryFormat::sniff(b"; comment\n"), Edn);
        assert_eq!(HistoryFormat::sniff(A.as_bytes()), Jsonl);
        assert_eq!(HistoryFormat::sniff(b""), Jsonl);
        assert_eq!(HistoryFormat::sniff(b"INFO  jepsen.core - Worker 0 starting\n"), JepsenLog);
        assert_eq!(HistoryFormat::sniff(b"2016-04-01 12:00:00,123{GMT}\tINFO\t[main] jepsen.core: Running\n"), JepsenLog);
        assert_eq!(HistoryFormat::sniff(b"#jepsen.history.Op{:index 0, :f :INFO}"), Edn);
        assert_eq!("jepsen-log".parse::<HistoryFormat>(), Ok(JepsenLog));
        assert_eq!(HistoryFormat::from_path(std::path::Path::new("runs/jepsen.log")), Some(JepsenLog));
        assert_eq!(HistoryFormat::from_path(Path::new("a/h.edn")), Some(Edn));
        assert_eq!(HistoryFormat::from_path(Path::new("history.jsonl")), Some(Jsonl));
        assert_eq!(HistoryFormat::from_path(Path::new("history")), None);
        assert_eq!("edn".parse::<HistoryFormat>(), Ok(Edn));
        assert!("xml".parse::<HistoryFormat>().is_err());

        let edn = "{:process :resource, :type :ok, :f :read, :value 5, :time 3}\n";
        let h = parse_history(edn, None).unwrap();
        assert_eq!(h.events[0].value, 5);
        assert!(parse_history(edn, Some(Jsonl)).is_err());

        // No telling extension: the content decides; a forced format wins over `.jsonl`.
        let dir = std::env::temp_dir();
        let bare = dir.join(format!("checker-sniff-{}", std::process::id()));
        std::fs::write(&bare, edn).unwrap();
        let read = read_history_file(&bare);
        let forced = dir.join(format!("checker-sniff-{}.jsonl", std::process::id()));
        std::fs::write(&forced, edn).unwrap();
        let forced_read = read_history_file_as(&forced, Some(Edn));
        let by_ext = read_history_file(&forced);
        std::fs::remove_file(&bare).unwrap();
        std::fs::remove_file(&forced).unwrap();
        assert_eq!(read.unwrap().events.len(), 1);
        assert_eq!(forced_read.unwrap().events.len(), 1);
        assert!(by_ext.is_err());
    }

    #[test]
    fn a_line_longer_than_16_mib_is_an_error_naming_it() {
        let long = format!("{{\"time\":1,\"f\":\"{}\"}}", "x".repeat(16 << 20));
        let (line, message) = line_error(&format!("{A}\n{long}\n{B}\n"));
        assert_eq!(line, 2);
        assert!(message.starts_with("line longer than 16 MiB"), "{message}");
        // Unterminated too (/dev/zero): too long is an error, never a truncated last line.
        let (line, message) = line_error(&format!("{A}\n{}", "\0".repeat((16 << 20) + 1)));
        assert_eq!(line, 2);
        assert!(message.starts_with("line longer than 16 MiB"), "{message}");
    }

    #[test]
    fn truncated_multibyte_character_is_a_truncated_line() {
        let mut bytes = format!("{A}\n").into_bytes();
        bytes.extend_from_slice(b"{\"time\":1,\"process\":\"\xc3");
        let h = parse_jsonl(&bytes).unwrap();
        assert_eq!(h.events.len(), 1);
        assert_eq!(h.warnings.len(), 1);
    }
}
