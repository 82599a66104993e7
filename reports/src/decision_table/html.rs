//! table.html: the article's table as measured. Self-contained, no scripts; maud escapes every
//! value that comes from the runs.

use super::{DecisionTable, LockSystem, TableCell, TableColumn};
use maud::{html, Markup};

pub fn render_html(t: &DecisionTable, title: &str) -> String {
    let disagree = t.cells.iter().filter(|c| c.agrees == Some(false)).count();
    let unmeasured = t.cells.iter().filter(|c| c.cannot_run_here.is_none() && c.tally.runs == 0).count();
    let body = html! {        p class="summary" {
            (t.cells.len()) " cells: " (disagree) " where the measurement disagrees with the article, "
            (unmeasured) " not measured in this matrix. "
            a href="matrix.html" { "The backend × fault matrix" }
        }
        table id="decision-table" {
            thead { tr { th { "lock" } @for c in TableColumn::ALL { th { (c.title()) } } } }
            tbody {
                @for system in LockSystem::ALL {
                    tr {
                        th { (system.title()) }
                        @for column in TableColumn::ALL { (render_cell(t.cell(system, column))) }
                    }
                }
            }
        }
        p class="legend" {
            "Each cell: the article's claim, then what the runs measured: runs with a violation / runs, \
             updates lost of those acknowledged, and where the column asks for it the time from a holder's \
             kill to the next grant (freed after), the longest time without a grant, or the tokens. \
             The rate is over the runs with a verdict, with its exact 95% interval; unknown runs are counted by cause beside it. \
             Green: every run matched its scenario (whose expectation is the claim); red: they disagree; \
             interrupted: the runs that did not match were cut short (Ctrl-C, SIGTERM, an error), so they tell neither way."
        }
    };
    crate::page::page(title, TABLE_CSS, body)
}

fn render_cell(c: &TableCell) -> Markup {
    let class = match (&c.cannot_run_here, c.agrees) {
        (Some(_), _) => "cannot-run",
        (None, None) if c.tally.runs_interrupted > 0 => "interrupted",
        (None, None) => "not-measured",
        (None, Some(true)) => "agrees",
        (None, Some(false)) => "disagrees",
    };
    html! {
        td class=(class) data-system=(format!("{:?}", c.system)) data-column=(format!("{:?}", c.column)) title=(c.tally.scenarios.join(", ")) {
            div class="claim" { "Article: " (c.claim) }
            @if let Some(why) = &c.cannot_run_here {
                div class="measured" { "cannot run here: " (why) }
            } @else if c.tally.runs == 0 {
                div class="measured" { "not measured: no run of this matrix tests this cell" }
            } @else {
                div class="measured" {
                    @if c.agrees == Some(false) { strong { "disagrees: " } }
                    @if c.agrees.is_none() && c.tally.runs_interrupted > 0 { strong { "interrupted: " } }
                    (measurement(c))
                    @if c.tally.runs_interrupted > 0 { "; " (c.tally.runs_interrupted) " run(s) interrupted" }
                }
                div class="runs" {
                    @for (i, r) in c.tally.reports.iter().enumerate() {
                        @if i > 0 { " " }
                        a href=(r) { (i + 1) }
                    }
                }
            }
        }
    }
}

/// The cell's figures in words, those its column is about first.
fn measurement(c: &TableCell) -> String {
    let mut parts = vec![];
    match c.column {
        TableColumn::Fencing => {
            parts.push(format!("{} grants with a token, {} not above the one before", c.grants_with_token, c.non_increasing_grants));
            parts.push(format!(
                "{} stale writes rejected, {} accepted out of order",
                c.tally.stale_writes_rejected, c.accepted_out_of_order
            ));
            parts.push(format!("{}/{} runs matched", c.tally.runs_matched, c.tally.runs));
            return parts.join("; ");
        }
        TableColumn::HolderDies => {
            let freed: Vec<f64> = c.freed_after_ms.iter().flatten().copied().collect();
            let never = c.freed_after_ms.iter().filter(|f| f.is_none()).count();
            if let (Some(lo), Some(hi)) = (freed.iter().copied().reduce(f64::min), freed.iter().copied().reduce(f64::max)) {
                parts.push(format!("freed after {lo:.0}–{hi:.0} ms ({} kills)", freed.len()));
            }
            if never > 0 {
                parts.push(format!("{never} kills never freed before the end"));
            }
        }
        _ => {}
    }
    parts.push(format!("violation {}/{} runs ({})", c.tally.runs_with_violation, c.tally.runs, c.tally.violation_rate.words()));
    parts.extend(c.tally.unknown_words());
    parts.push(format!("lost {} of {}", c.tally.lost_updates, c.tally.acknowledged_updates));
    if c.column == TableColumn::Partition || c.column == TableColumn::FailoverRestart {
        if let Some(gap) = c.longest_gap_ms {
            parts.push(format!("longest gap {gap:.0} ms"));
        }
        if c.runs_unavailable_at_end > 0 {
            parts.push(format!("{} runs ended with the lock still held", c.runs_unavailable_at_end));
        }
    }
    parts.push(format!("{}/{} matched", c.tally.runs_matched, c.tally.runs));
    parts.join("; ")
}

const TABLE_CSS: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:.4em .6em;vertical-align:top;font-size:.85em;max-width:16em}\
thead th{background:#f4f4f4}td.agrees{background:#e9f7ec}td.disagrees{background:#fde8e8}\
td.cannot-run{background:#f3f3f3;color:#555}td.not-measured{background:#fff8e1}td.interrupted{background:#fff4d6}\
.claim{color:#555;font-style:italic;margin-bottom:.3em}.runs a{margin-right:.3em}\
.legend{color:#555;font-size:.85em;max-width:60em}";
