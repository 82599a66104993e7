//! The per-run HTML report (report.html): one self-contained page (inline CSS and SVG, no
//! scripts, no external assets) so it can be mailed, archived and opened offline.
//!
//! Each section is a small function returning its [`Markup`], and [`render`] only puts them
//! in order, so a richer report can add, replace or reorder sections. Over 400 lines for that
//! reason: the short sections stay here, the large pictures in `run_report/`.
//!
//! The markup is written with maud's `html!` rather than askama's template files: maud keeps
//! that "one small function per section" shape, type-checks each template with the code
//! around it, and needs no template directory. maud escapes every spliced value `(…)`, in
//! element content and attributes alike, so the strings a run produces (scenario text, errors,
//! keys, values, node names, warnings, tooltips) cannot become markup: histories and error
//! messages are untrusted. Only this crate's own CSS and plotters' SVG are inserted as
//! `PreEscaped`.

mod availability;
mod linearizability_svg;
mod plots;
mod stuck;
mod timeline;
mod timeline_svg;
mod violations;

use crate::href::Href;
use checker::{CheckResults, Event, Verdict};
use maud::{html, Markup, PreEscaped, DOCTYPE};
use results::{Outcome, RunResults, WorkerFate};
use std::path::Path;

const CSS: &str = include_str!("run_report/report.css");

/// Renders report.html for one run from its results.json and its history (in history order).
pub fn render(results: &RunResults, history: &[Event]) -> String {
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            (head(results))
            body {
                main {
                    (header(results))
                    (properties(&results.properties))
                    (availability::section(&results.properties.availability, &results.claims))
                    (stuck::section(&results.properties.stuck))
                    (violations::section(&results.properties, history))
                    (linearizability_section(&results.properties, history))
                    (timeline_section(results, history))
                    (workers(results))
                    (warnings(results))
                    (footer())
                }
            }
        }
    };
    let mut page = page.into_string();
    page.push('\n');
    page
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

/// An SVG coordinate or length with one decimal ("12.3"); the geometry is computed here, its
/// text goes through maud like every other value.
#[derive(Clone, Copy)]
pub(crate) struct F1(pub f64);

impl std::fmt::Display for F1 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.1}", self.0)
    }
}

/// `class="bad"` when `bad`, no class attribute otherwise (for maud's `class=[…]`).
pub(crate) fn bad_if(bad: bool) -> Option<&'static str> {
    bad.then_some("bad")
}

fn head(r: &RunResults) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { "lockchaos: " (r.scenario) " (" (r.outcome) ")" }
            style { (PreEscaped(CSS)) }
        }
    }
}

fn header(r: &RunResults) -> Markup {
    // Grey when the checker could not decide: "unknown" is neither a pass nor a failure.
    let (class, relation) = if r.outcome == Outcome::Unknown {
        ("unknown", "the run could not settle it")
    } else if r.matches_expectation {
        ("good", "as expected")
    } else {
        ("bad", "NOT as expected")
    };
    html! {
        header {
            h1 { (r.scenario) }
            p class="description" { (r.description) }
            div class={ "verdict " (class) } {
                div class="outcome" { (r.outcome) }
                @if let Some(cause) = r.unknown_cause() { div class="cause" { (cause.words()) } }
                div class="expectation" { "expected: " (r.expect) " — " (relation) }
            }
            dl class="facts" {
                dt { "run" } dd { (r.run_id) }
                dt { "seed" } dd { (r.seed) }
                dt { "backend" } dd { (r.backend) }
                dt { "clients" } dd { (r.clients) }
                dt { "time limit" } dd { (r.time_limit_secs) " s" }
                dt { "started" } dd { (r.started_at) }
                dt { "duration" } dd { (format_args!("{:.1}", r.duration_secs)) " s" }
                dt { "interrupted" }
                dd {
                    @if r.interrupted { span class="bad" { "yes: stopped before its time limit" } } @else { "no" }
                }
            }
        }
    }
}

fn properties(c: &CheckResults) -> Markup {
    html! {
        section id="properties" {
            h2 { "Properties" }
            table {
                tr { th { "property" } th { "verdict" } th { "details" } }
                @for (name, verdict) in c.verdicts() {
                    tr {
                        td {
                            (name)
                            // Evidence-only properties (believed overlaps, fencing without
                            // tokens) are marked, so a reader sees which verdicts the outcome
                            // rests on.
                            @if !c.decides_outcome(name) { br; small { "informational" } }
                        }
                        td class=(verdict_class(verdict)) { (verdict) }
                        td { (property_details(name, c)) }
                    }
                }
            }
        }
    }
}

/// Counts of one property, by the name [`CheckResults::verdicts`] gives it.
/// A new property adds an arm here.
fn property_details(name: &str, c: &CheckResults) -> Markup {
    match name {
        "resource_safety" => resource_safety_details(&c.resource_safety),
        "fencing" => fencing_details(&c.fencing),
        "holder_overlap" => holder_overlap_details(&c.holder_overlap),
        "exactly_once" => exactly_once_details(&c.exactly_once),
        "stuck" => stuck_details(&c.stuck),
        "linearizability" => match &c.linearizability {
            Some(checker::LinearizabilityCheck::Checked(l)) => linearizability_details(l),
            Some(checker::LinearizabilityCheck::NotChecked { error }) => {
                html! { p { "the history does not fit the model: " (error) } }
            }
            None => html! {},
        },
        _ => html! {},
    }
}

/// A list of counts (`bad` ones in red), then the checker's notes.
fn count_list(items: &[(&str, String, bool)], notes: &[String]) -> Markup {
    html! {
        ul class="counts" {
            @for (label, value, bad) in items {
                li class=[bad_if(*bad)] { (label) ": " (value) }
            }
        }
        @if !notes.is_empty() {
            ul class="notes" { @for n in notes { li { (n) } } }
        }
    }
}

fn fencing_details(f: &checker::fencing::Fencing) -> Markup {
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

fn linearizability_details(l: &checker::linearizability::Linearizability) -> Markup {
    let mut items = vec![
        ("model", l.model.clone(), false),
        ("operations", format!("{} ({} with unknown outcome)", l.operations, l.indeterminate), false),
        ("partitions", l.partitions.to_string(), false),
    ];
    for f in &l.failures {
        // Proved by a rule before any search: its words name the operations.
        if let Some(rule) = &f.rule {
            items.push(("partition", format!("{}: {rule}", f.partition), true));
            continue;
        }
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

fn holder_overlap_details(o: &checker::holder_overlap::HolderOverlap) -> Markup {
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

fn exactly_once_details(o: &checker::ExactlyOnce) -> Markup {
    count_list(
        &[
            ("operations", o.operations.to_string(), false),
            ("deliveries", o.deliveries.to_string(), false),
            ("sent again (after a timeout, a crash)", o.resent.to_string(), false),
            ("answered from the record (duplicates)", o.answered_from_record.to_string(), false),
            ("claims refused (the job taken, or the claim failed)", o.claims_refused.to_string(), false),
            ("acknowledged", o.acknowledged.to_string(), false),
            ("applied", o.applied.to_string(), false),
            ("applied more than once", o.applied_twice.to_string(), o.applied_twice > 0),
            ("acknowledged, never applied", o.acknowledged_missing.to_string(), o.acknowledged_missing > 0),
            ("claimed, never done (the claimer died)", o.claimed_not_done.to_string(), false),
        ],
        &[],
    )
}

fn stuck_details(s: &checker::Stuck) -> Markup {
    count_list(
        &[
            ("bound", format!("{} ms free without a grant while clients ask", s.bound_ms), false),
            ("stuck stretches", s.stuck_stretches.to_string(), s.stuck_stretches > 0),
            ("longest", format!("{:.0} ms", s.longest_stuck_ms), s.stuck_stretches > 0),
        ],
        &s.notes,
    )
}

fn resource_safety_details(rs: &checker::ResourceSafety) -> Markup {
    // Violation counts are red only when non-zero, so a clean run reads calmly.
    html! {
        ul class="counts" {
            li { "accepted writes: " (rs.accepted_writes) }
            li { "rejected writes (stale writes rejected): " (rs.rejected_writes) }
            li class=[bad_if(rs.lost_updates > 0)] { "lost updates: " (rs.lost_updates) }
            li class=[bad_if(rs.interleaved_sections > 0)] { "interleaved sections: " (rs.interleaved_sections) }
            li { "interleavings stopped by fencing: " (rs.fenced_interleavings) }
            li { "acknowledged increments: " (rs.acknowledged_increments) }
            li { "writes refused to the client (conflicts, lock known lost): " (rs.refused_writes) }
            li {
                "final values: "
                @if rs.final_values.is_empty() { "none" }
                @for (i, (k, v)) in rs.final_values.iter().enumerate() {
                    @if i > 0 { ", " }
                    (k) " = " (v)
                }
            }
        }
        @if !rs.notes.is_empty() {
            p { "Records the checker could not interpret:" }
            ul class="notes" { @for n in &rs.notes { li { (n) } } }
        }
    }
}

/// Porcupine's picture of the first failing partition, when the lock was checked as a mutex
/// (or another model) and found not linearizable.
fn linearizability_section(c: &CheckResults, history: &[Event]) -> Markup {
    let Some(checker::LinearizabilityCheck::Checked(l)) = &c.linearizability else { return html! {} };
    let Some(failure) = l.failures.first() else { return html! {} };
    // Proved by a rule before any search: no prefix to draw, the rule's words say it all.
    if let Some(rule) = &failure.rule {
        return html! {
            section id="linearizability" {
                h2 {
                    "Linearizability"
                    @if !c.decides_outcome("linearizability") { " (informational: a lease lock under faults is not a mutex)" }
                }
                p { "Model " code { (l.model) } ", partition " code { (failure.partition) } ": " (rule) }
            }
        };
    }
    let Some(figure) = linearizability_svg::render(failure, history) else { return html! {} };
    html! {
        section id="linearizability" {
            h2 {
                "Linearizability"
                @if !c.decides_outcome("linearizability") { " (informational: a lease lock under faults is not a mutex)" }
            }
            p { "Model " code { (l.model) } ": no order of the operations is consistent with the model beyond this point." }
            (figure)
        }
    }
}

fn timeline_section(r: &RunResults, history: &[Event]) -> Markup {
    html! {
        section id="timeline" {
            h2 { "Timeline" }
            @if history.is_empty() {
                p { "No events were recorded: nothing to draw." }
            } @else {
                @let model = timeline::Timeline::from_history(history, r.workers.iter().map(|w| w.process));
                (timeline_svg::render(&model, &r.properties.stuck.stretches))
                h3 { "Acquire latency and throughput" }
                p class="note" { "Shaded: fault periods." }
                div class="plots" { (plots::render(history, &model.faults)) }
            }
        }
    }
}

fn workers(r: &RunResults) -> Markup {
    html! {
        section id="workers" {
            h2 { "Workers" }
            @if r.workers.is_empty() {
                p { "No workers recorded." }
            } @else {
                table {
                    tr { th { "worker" } th { "process" } th { "status" } th { "exit code" } th { "died at (ms)" } }
                    @for w in &r.workers {
                        tr {
                            td { (w.name) }
                            td { (w.process) }
                            td class=[bad_if(w.status != WorkerFate::Finished)] { (w.status) }
                            td { @if let Some(c) = w.exit_code { (c) } @else { "–" } }
                            td { @if let Some(ms) = w.died_at_ms { (ms) } @else { "–" } }
                        }
                    }
                }
            }
        }
    }
}

fn warnings(r: &RunResults) -> Markup {
    html! {
        @if !r.not_applied.is_empty() {
            section id="not-applied" {
                h2 { "Faults that did not take effect" }
                p { "The run did not test what its scenario claims: its outcome is unknown." }
                ul class="warnings" { @for n in &r.not_applied { li { (n) } } }
            }
        }
        @if !r.refused_requests.is_empty() {
            section id="refused" {
                h2 { "Requests the resource refused" }
                p {
                    "The resource refused " (r.refused_requests.counted())
                    " that no worker of the run sent (a client program tried to write the record). "
                    "The record holds only the workers' requests, so a violation in it stands; the run cannot be judged safe."
                }
                ul class="warnings" { @for n in &r.refused_requests.first { li { (n) } } }
            }
        }
        section id="warnings" {
            h2 { "Warnings" }
            @if r.warnings.is_empty() {
                p { "None." }
            } @else {
                ul class="warnings" { @for w in &r.warnings { li { (w) } } }
            }
        }
    }
}

/// Relative links: the report sits in the run folder next to these files.
fn footer() -> Markup {
    let files = ["history.jsonl", "results.json", "scenario.toml"].map(|f| (Href::to_path(Path::new(f)), f.to_string()));
    let logs = (Href::to_folder(Path::new("logs")), "logs/".to_string());
    html! {
        footer {
            "Run files: "
            @for (i, (href, name)) in files.into_iter().chain([logs]).enumerate() {
                @if i > 0 { " · " }
                a href=[href] { (name) }
            }
        }
    }
}
