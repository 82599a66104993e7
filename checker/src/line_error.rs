//! What a line parser (JSON lines in json_line.rs, EDN op maps in edn.rs, Jepsen's log in
//! jepsen_log.rs) says about a line it could not read; parse.rs turns it into a
//! [`crate::HistoryError`] naming the file and line.

/// One line that did not parse. `eof` = the input ended inside a value: on an unterminated
/// last line that is a cut line (a warning), anywhere else a malformed one.
pub(crate) struct LineError {
    pub message: String,
    pub eof: bool,
}
