//! One line of a JSON-lines history (history.jsonl: see the README, "What a run leaves in the
//! store") read into an [`Event`]; parse.rs reads the lines and names the file and line.

use crate::history::Event;
use crate::line_error::LineError;

/// One JSON line's event. An integer literal wider than 64 bits is an error (see
/// [`crate::wide_integer`]): serde_json would have read it rounded. It is looked for once the
/// line has parsed, or failed for a wrong type (`time` holding one is "invalid type: floating
/// point"), never in a syntax error or a cut line, which keep their own message.
pub(crate) fn parse_line(line: &[u8]) -> Result<Option<(Event, bool)>, LineError> {
    let parsed = serde_json::from_slice::<Event>(line);
    if let Err(e) = &parsed {
        if e.classify() != serde_json::error::Category::Data {
            return Err(LineError { message: describe(e), eof: e.is_eof() });
        }
    }
    if let Some(wide) = crate::wide_integer::find_in_json(line) {
        return Err(LineError { message: wide.to_string(), eof: false });
    }
    parsed.map(|e| Some((e, true))).map_err(|e| LineError { message: describe(&e), eof: false })
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
