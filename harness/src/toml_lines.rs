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

/// The dotted path of the key whose value holds byte `offset` (`ssh.connect_timeout_secs`,
/// `host[1].port`), read from the text: for the errors TOML's parser raises inside a value before
/// any field is known (an integer past i64's range), which serde then names no field for. Bare
/// and quoted keys on a `key = value` line under a `[table]` or `[[array]]` header; None for
/// anything else, and for an offset not past the `=` (a missing field's error points at its
/// table, not into a value).
pub fn key_at_offset(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or_default();
    let (key, _) = line.split_once('=')?;
    if offset - line_start <= key.len() {
        return None;
    }
    let key = dotted(key)?;
    let before = &text[..line_start];
    let header = before.lines().rev().map(str::trim).find(|l| l.starts_with('['));
    let table = match header {
        None => return Some(key),
        Some(h) if h.starts_with("[[") => {
            let name = dotted(h.trim_start_matches("[[").split("]]").next()?)?;
            let same =
                |l: &str| l.starts_with("[[") && l.trim_start_matches("[[").split("]]").next().and_then(dotted) == Some(name.clone());
            let index = before.lines().map(str::trim).filter(|l| same(l)).count() - 1;
            format!("{name}[{index}]")
        }
        Some(h) => dotted(h.trim_start_matches('[').split(']').next()?)?,
    };
    Some(format!("{table}.{key}"))
}

/// `a . "b"` as `a.b`; None unless every part is a bare or quoted key.
fn dotted(written: &str) -> Option<String> {
    let parts: Option<Vec<&str>> = written
        .split('.')
        .map(|p| {
            let p = p.trim();
            let unquoted = p.strip_prefix('"').and_then(|q| q.strip_suffix('"')).unwrap_or(p);
            let bare = !unquoted.is_empty() && unquoted.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            bare.then_some(unquoted)
        })
        .collect();
    Some(parts?.join("."))
}

#[cfg(test)]
mod tests {
    use super::key_at_offset;

    #[test]
    fn the_key_of_a_value_is_named_with_its_table_and_its_array_index() {
        let text = "top = 11\n[[host]]\nport = 21\n[[host]]\nport = 22\n\n[ssh]\nconnect_timeout_secs = 99\n[a.\"b\"]\nc = 33\nnot a key\n";
        let at = |needle: &str| key_at_offset(text, text.find(needle).unwrap());
        assert_eq!(at("11"), Some("top".into()));
        assert_eq!(at("21"), Some("host[0].port".into()));
        assert_eq!(at("22"), Some("host[1].port".into()));
        assert_eq!(at("99"), Some("ssh.connect_timeout_secs".into()));
        assert_eq!(at("33"), Some("a.b.c".into()));
        // Not inside a value: a key (a missing field's error points at its table's start).
        assert_eq!(at("port = 21"), None);
        assert_eq!(at("not a key"), None);
    }
}
