//! store/index.html: every run in the store, newest first, with its verdict and a link to its
//! report. Self-contained like the reports.

use crate::href::Href;
use maud::html;
use results::RunResults;

/// One run as the index lists it.
pub struct IndexEntry {
    pub results: RunResults,
    /// The run's report.html, relative to the store.
    pub report: Href,
}

/// Renders the index; `entries` in any order (sorted here by start time, newest first).
/// Written with maud (see `run_report`), which escapes every value from the runs; links are
/// [`Href`]s.
pub fn render(entries: &mut [IndexEntry]) -> String {
    entries.sort_by(|a, b| b.results.started_at.cmp(&a.results.started_at).then_with(|| b.report.cmp(&a.report)));
    let matched = entries.iter().filter(|e| e.results.matches_expectation).count();
    let body = html! {        p { (entries.len()) " run(s), " (matched) " matched their expectation. Newest first." }
        table id="runs" {
            thead {
                tr {
                    @for h in ["started (UTC)", "scenario", "backend", "outcome", "expected", "lost updates", "stale writes rejected", "seed"] {
                        th { (h) }
                    }
                }
            }
            tbody {
                @for e in entries.iter() {
                    @let r = &e.results;
                    tr class=(if r.matches_expectation { "match" } else { "mismatch" }) {
                        td { (r.started_at) }
                        td { a href=(e.report) { (r.scenario) } }
                        td { (r.backend) }
                        td class="outcome" { (r.outcome) }
                        td { (r.expect) }
                        td { (r.properties.resource_safety.lost_updates) }
                        td { (r.properties.resource_safety.rejected_writes) }
                        td { (r.seed) }
                    }
                }
            }
        }
    };
    crate::page::page("lockchaos runs", INDEX_CSS, body)
}

const INDEX_CSS: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse}\
th,td{border:1px solid #ccc;padding:.3em .6em;font-size:.9em}thead th{background:#f4f4f4}\
tr.match .outcome{color:#1a7f37}tr.mismatch{background:#fde8e8}tr.mismatch .outcome{color:#b42318;font-weight:600}";
