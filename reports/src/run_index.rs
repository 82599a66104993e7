//! store/index.html: every run in the store, newest first, with its verdict and a link to its
//! report. Self-contained like the reports.

use html_escape::{encode_double_quoted_attribute as attr, encode_text as esc};
use results::RunResults;

/// One run as the index lists it.
pub struct IndexEntry {
    pub results: RunResults,
    /// The run's report.html, relative to the store.
    pub report: String,
}

/// Renders the index; `entries` in any order (sorted here by start time, newest first).
pub fn render(entries: &mut [IndexEntry]) -> String {
    entries.sort_by(|a, b| b.results.started_at.cmp(&a.results.started_at).then_with(|| b.report.cmp(&a.report)));
    let matched = entries.iter().filter(|e| e.results.matches_expectation).count();
    let mut h = String::from("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>lockchaos runs</title><style>");
    h.push_str(INDEX_CSS);
    h.push_str("</style></head><body><h1>lockchaos runs</h1>");
    h.push_str(&format!("<p>{} run(s), {matched} matched their expectation. Newest first.</p>", entries.len()));
    h.push_str("<table id=\"runs\"><thead><tr><th>started (UTC)</th><th>scenario</th><th>backend</th><th>outcome</th><th>expected</th><th>lost updates</th><th>stale writes rejected</th><th>seed</th></tr></thead><tbody>");
    for e in entries.iter() {
        let r = &e.results;
        let class = if r.matches_expectation { "match" } else { "mismatch" };
        h.push_str(&format!(
            "<tr class=\"{class}\"><td>{}</td><td><a href=\"{}\">{}</a></td><td>{}</td><td class=\"outcome\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.started_at),
            attr(&e.report),
            esc(&r.scenario),
            esc(&r.backend),
            r.outcome,
            r.expect,
            r.properties.resource_safety.lost_updates,
            r.properties.resource_safety.rejected_writes,
            r.seed
        ));
    }
    h.push_str("</tbody></table></body></html>\n");
    h
}

const INDEX_CSS: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse}\
th,td{border:1px solid #ccc;padding:.3em .6em;font-size:.9em}thead th{background:#f4f4f4}\
tr.match .outcome{color:#1a7f37}tr.mismatch{background:#fde8e8}tr.mismatch .outcome{color:#b42318;font-weight:600}";
