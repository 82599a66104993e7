//! The per-run HTML report (report.html): one self-contained page (inline CSS and SVG, no
//! scripts, no external assets) so it can be mailed, archived and opened offline.
//!
//! Plain first version. Each section is a small function returning its HTML, and [`render`]
//! only concatenates them, so a richer report can add, replace or reorder sections.
//! Every string that comes from a run (scenario text, errors, keys, values) goes through
//! [`esc`]: histories and error messages are untrusted.

mod linearizability_svg;
mod plots;
mod timeline;
mod timeline_svg;
mod violations;

use checker::{CheckResults, Event, Verdict};
use results::{Outcome, RunResults, WorkerFate};

const CSS: &str = include_str!("run_report/report.css");

/// Renders report.html for one run from its results.json and its history (in history order).
pub fn render(results: &RunResults, history: &[Event]) -> String {
    let sections = [
        header(results),
        properties(&results.properties),
        violations::section(&results.properties, history),
        linearizability_section(&results.properties, history),
        timeline_section(results, history),
        workers(results),
        warnings(results),
        footer(),
    ];
    let mut page = head(results);
    page.push_str("<body>\n<main>\n");
    for s in &sections {
        page.push_str(s);
    }
    page.push_str("</main>\n</body>\n</html>\n");
    page
}

/// Escapes text for element content and double-quoted attributes alike.
pub(crate) fn esc(s: &str) -> String {
    html_escape::encode_double_quoted_attribute(s).into_owned()
}

/// Run time in seconds with millisecond precision, from nanoseconds ("12.345").
pub(crate) fn secs(ns: u64) -> String {
    format!("{}.{:03}", ns / 1_000_000_000, (ns / 1_000_000) % 1000)
}

/// CSS class of a property verdict: the same three colours everywhere on the page.
pub(crate) fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Valid => "good",
        Verdict::Invalid => "bad",
        Verdict::Unknown => "unknown",
    }
}

fn head(r: &RunResults) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>lockchaos: {} ({})</title>\n<style>\n{CSS}</style>\n</head>\n",
        esc(&r.scenario),
        r.outcome,
    )
}

fn header(r: &RunResults) -> String {
    // Grey when the checker could not decide: "unknown" is neither a pass nor a failure.
    let (class, relation) = if r.outcome == Outcome::Unknown {
        ("unknown", "the run could not settle it")
    } else if r.matches_expectation {
        ("good", "as expected")
    } else {
        ("bad", "NOT as expected")
    };
    let interrupted = if r.interrupted { "<span class=\"bad\">yes: stopped before its time limit</span>" } else { "no" };
    let facts = [
        ("run", esc(&r.run_id)),
        ("seed", r.seed.to_string()),
        ("backend", esc(&r.backend)),
        ("clients", r.clients.to_string()),
        ("time limit", format!("{} s", r.time_limit_secs)),
        ("started", esc(&r.started_at)),
        ("duration", format!("{:.1} s", r.duration_secs)),
        ("interrupted", interrupted.to_string()),
    ];
    let mut dl = String::new();
    for (k, v) in facts {
        dl.push_str(&format!("<dt>{k}</dt><dd>{v}</dd>"));
    }
    format!(
        "<header>\n<h1>{}</h1>\n<p class=\"description\">{}</p>\n\
         <div class=\"verdict {class}\"><div class=\"outcome\">{}</div>\
         <div class=\"expectation\">expected: {} &mdash; {relation}</div></div>\n\
         <dl class=\"facts\">{dl}</dl>\n</header>\n",
        esc(&r.scenario),
        esc(&r.description),
        r.outcome,
        r.expect,
    )
}

fn properties(c: &CheckResults) -> String {
    let mut rows = String::new();
    for (name, verdict) in c.verdicts() {
        // Evidence-only properties (believed overlaps, fencing without tokens) are marked, so
        // a reader sees which verdicts the outcome rests on.
        let role = if c.decides_outcome(name) { "" } else { "<br><small>informational</small>" };
        rows.push_str(&format!(
            "<tr><td>{}{role}</td><td class=\"{}\">{}</td><td>{}</td></tr>\n",
            esc(name),
            verdict_class(verdict),
            verdict,
            property_details(name, c),
        ));
    }
    format!(
        "<section id=\"properties\">\n<h2>Properties</h2>\n<table>\n\
         <tr><th>property</th><th>verdict</th><th>details</th></tr>\n{rows}</table>\n</section>\n"
    )
}

/// Counts of one property, by the name [`CheckResults::verdicts`] gives it.
/// A new property adds an arm here.
fn property_details(name: &str, c: &CheckResults) -> String {
    match name {
        "resource_safety" => resource_safety_details(&c.resource_safety),
        "fencing" => fencing_details(&c.fencing),
        "holder_overlap" => holder_overlap_details(&c.holder_overlap),
        "linearizability" => match &c.linearizability {
            Some(checker::LinearizabilityCheck::Checked(l)) => linearizability_details(l),
            Some(checker::LinearizabilityCheck::NotChecked { error }) => {
                format!("<p>the history does not fit the model: {}</p>", esc(error))
            }
            None => String::new(),
        },
        _ => String::new(),
    }
}

fn count_list(items: &[(&str, String, bool)], notes: &[String]) -> String {
    let mut out = String::from("<ul class=\"counts\">");
    for (label, value, bad) in items {
        let class = if *bad { " class=\"bad\"" } else { "" };
        out.push_str(&format!("<li{class}>{label}: {}</li>", esc(value)));
    }
    out.push_str("</ul>");
    if !notes.is_empty() {
        out.push_str("<ul class=\"notes\">");
        for n in notes {
            out.push_str(&format!("<li>{}</li>", esc(n)));
        }
        out.push_str("</ul>");
    }
    out
}

fn fencing_details(f: &checker::fencing::Fencing) -> String {
    count_list(
        &[
            ("grants with a token", format!("{} of {}", f.grants_with_token, f.grants), false),
            ("grants whose token did not increase", f.non_increasing_grants.to_string(), f.non_increasing_grants > 0),
            ("writes accepted with a lower token", f.accepted_writes_out_of_order.to_string(), f.accepted_writes_out_of_order > 0),
            ("stale writes rejected", f.stale_writes_rejected.to_string(), false),
        ],
        &f.notes,
    )
}

fn linearizability_details(l: &checker::linearizability::Linearizability) -> String {
    let mut items = vec![
        ("model", l.model.clone(), false),
        ("operations", format!("{} ({} with unknown outcome)", l.operations, l.indeterminate), false),
        ("partitions", l.partitions.to_string(), false),
    ];
    for f in &l.failures {
        let prefix = f.longest_prefix.iter().map(|i| format!("#{i}")).collect::<Vec<_>>().join(" ");
        let stuck = f.unplaceable.iter().map(|i| format!("#{i}")).collect::<Vec<_>>().join(", ");
        items.push((
            "partition",
            format!(
                "{}: linearizable up to {} operation(s) [{prefix}]; none of {stuck} can come next (state {})",
                f.partition,
                f.longest_prefix.len(),
                f.state
            ),
            true,
        ));
    }
    for p in &l.timed_out_partitions {
        items.push(("undecided in time", p.clone(), false));
    }
    count_list(&items, &l.notes)
}

fn holder_overlap_details(o: &checker::holder_overlap::HolderOverlap) -> String {
    let ignoring = &o.believed_overlap_ignoring_validity;
    count_list(
        &[
            ("acquires", o.acquires.to_string(), false),
            ("overlapping holds (within validity)", o.overlaps.to_string(), o.overlaps > 0),
            ("total overlap", format!("{:.0} ms", o.total_overlap_ms), false),
            ("longest overlap", format!("{:.0} ms", o.longest_overlap_ms), false),
            ("ignoring validity (until release)", format!("{} overlaps, {:.0} ms", ignoring.overlaps, ignoring.total_overlap_ms), false),
        ],
        &o.notes,
    )
}

fn resource_safety_details(rs: &checker::ResourceSafety) -> String {
    // Violation counts are red only when non-zero, so a clean run reads calmly.
    let flag = |n: u64| if n > 0 { " class=\"bad\"" } else { "" };
    let finals: Vec<String> = rs.final_values.iter().map(|(k, v)| format!("{} = {v}", esc(k))).collect();
    let finals = if finals.is_empty() { "none".to_string() } else { finals.join(", ") };
    let mut out = format!(
        "<ul class=\"counts\">\
         <li>accepted writes: {}</li>\
         <li>rejected writes (stale writes rejected): {}</li>\
         <li{}>lost updates: {}</li>\
         <li{}>interleaved sections: {}</li>\
         <li>interleavings stopped by fencing: {}</li>\
         <li>acknowledged increments: {}</li>\
         <li>final values: {finals}</li></ul>",
        rs.accepted_writes,
        rs.rejected_writes,
        flag(rs.lost_updates),
        rs.lost_updates,
        flag(rs.interleaved_sections),
        rs.interleaved_sections,
        rs.fenced_interleavings,
        rs.acknowledged_increments,
    );
    if !rs.notes.is_empty() {
        out.push_str("<p>Records the checker could not interpret:</p><ul class=\"notes\">");
        for n in &rs.notes {
            out.push_str(&format!("<li>{}</li>", esc(n)));
        }
        out.push_str("</ul>");
    }
    out
}

/// Porcupine's picture of the first failing partition, when the lock was checked as a mutex
/// (or another model) and found not linearizable.
fn linearizability_section(c: &CheckResults, history: &[Event]) -> String {
    let Some(checker::LinearizabilityCheck::Checked(l)) = &c.linearizability else { return String::new() };
    let Some(failure) = l.failures.first() else { return String::new() };
    let figure = linearizability_svg::render(failure, history);
    if figure.is_empty() {
        return String::new();
    }
    let decides = if c.decides_outcome("linearizability") { "" } else { " (informational: a lease lock under faults is not a mutex)" };
    format!(
        "<section id=\"linearizability\">\n<h2>Linearizability{}</h2>\n<p>Model <code>{}</code>: no order of the operations is consistent with the model beyond this point.</p>\n{figure}</section>\n",
        esc(decides),
        esc(&l.model)
    )
}

fn timeline_section(r: &RunResults, history: &[Event]) -> String {
    let body = if history.is_empty() {
        "<p>No events were recorded: nothing to draw.</p>\n".to_string()
    } else {
        let model = timeline::Timeline::from_history(history, r.workers.iter().map(|w| w.process));
        let plots = plots::render(history, &model.faults);
        format!(
            "{}<h3>Acquire latency and throughput</h3>\n<p class=\"note\">Shaded: fault periods.</p>\n<div class=\"plots\">{plots}</div>\n",
            timeline_svg::render(&model)
        )
    };
    format!("<section id=\"timeline\">\n<h2>Timeline</h2>\n{body}</section>\n")
}

fn workers(r: &RunResults) -> String {
    if r.workers.is_empty() {
        return "<section id=\"workers\">\n<h2>Workers</h2>\n<p>No workers recorded.</p>\n</section>\n".to_string();
    }
    let mut rows = String::new();
    for w in &r.workers {
        let class = if w.status == WorkerFate::Finished { "" } else { " class=\"bad\"" };
        let opt = |v: Option<String>| v.unwrap_or_else(|| "&ndash;".to_string());
        rows.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td{class}>{}</td><td>{}</td><td>{}</td></tr>\n",
            esc(&w.name),
            w.process,
            w.status,
            opt(w.exit_code.map(|c| c.to_string())),
            opt(w.died_at_ms.map(|ms| ms.to_string())),
        ));
    }
    format!(
        "<section id=\"workers\">\n<h2>Workers</h2>\n<table>\n<tr><th>worker</th><th>process</th>\
         <th>status</th><th>exit code</th><th>died at (ms)</th></tr>\n{rows}</table>\n</section>\n"
    )
}

fn warnings(r: &RunResults) -> String {
    let body = if r.warnings.is_empty() {
        "<p>None.</p>\n".to_string()
    } else {
        let items: String = r.warnings.iter().map(|w| format!("<li>{}</li>\n", esc(w))).collect();
        format!("<ul class=\"warnings\">\n{items}</ul>\n")
    };
    format!("<section id=\"warnings\">\n<h2>Warnings</h2>\n{body}</section>\n")
}

/// Relative links: the report sits in the run folder next to these files.
fn footer() -> String {
    let links = ["history.jsonl", "results.json", "scenario.toml", "logs/"].map(|f| format!("<a href=\"{f}\">{f}</a>")).join(" &middot; ");
    format!("<footer>Run files: {links}</footer>\n")
}
