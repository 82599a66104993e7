//! Where in a TOML file a thing is written: the line of a byte offset, and the line of a dotted
//! field path; and the one-line error that names them. Shared by every file lockchaos reads
//! (scenarios, nodes-files).

use std::path::PathBuf;

/// A file lockchaos reads that could not be used: `file:line: field 'a.b': what is wrong`.
#[derive(Debug, thiserror::Error)]
#[error("{}{}: {}{message}", file.display(), line.map(|l| format!(":{l}")).unwrap_or_default(), field.as_ref().map(|f| format!("field '{f}': ")).unwrap_or_default())]
pub struct FileError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub field: Option<String>,
    pub message: String,
}

/// The 1-based line of a byte offset.
pub fn line_of_offset(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The line where a dotted field path (`nemesis.timeline[0].target`) is written, if it is.
/// Falls back to the nearest enclosing table that exists (a missing field is reported at its table).
pub fn line_of_field(text: &str, field: &str) -> Option<usize> {
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    let mut item: &toml_edit::Item = doc.as_item();
    let mut best = None;
    for seg in field.split('.').filter(|s| !s.is_empty()) {
        let (name, index) = match seg.split_once('[') {
            Some((n, rest)) => (n, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (seg, None),
        };
        let Some(next) = item.get(name) else { break };
        item = next;
        if let Some(i) = index {
            let Some(next) = item.get(i) else { break };
            item = next;
        }
        best = item.span().or(best);
    }
    best.map(|s| line_of_offset(text, s.start))
}
