//! The measured decision table (matrix.json, matrix.html): backend × failure over the runs of
//! many scenarios, each cell with how often the lock failed, what it cost, and whether every run
//! matched its scenario's expectation. The seed's table, measured.

use crate::href::Href;
use crate::rate::Rate;
use maud::{html, Markup};
use results::{Outcome, RunResults, UnknownCause};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One finished run, with where it sits in the table.
pub struct MatrixRun<'a> {
    pub results: &'a RunResults,
    /// Row: the backend, with the resource it protected when that is not the plain ledger
    /// ("etcd, fenced ledger").
    pub row: String,
    /// Column: the failure the scenario injects ("pause", "clock-jump", "baseline").
    pub column: String,
    /// The run's report, relative to where matrix.html is written.
    pub report: Href,
    /// Its cell in the article's decision table (None: a baseline, or a fault the table has no
    /// column for).
    pub place: Option<crate::decision_table::TablePlace>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Matrix {
    pub rows: Vec<String>,
    pub columns: Vec<String>,
    pub cells: Vec<Cell>,
    /// Every cell matched its expectation in every run.
    pub all_match: bool,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Cell {
    pub row: String,
    pub column: String,
    #[serde(flatten)]
    pub tally: RunTally,
    /// What the scenarios expect ("violation", "safe"; both when they differ).
    pub expect: Vec<String>,
    pub matches_expectation: bool,
    pub acquire_attempts: u64,
    pub acquire_granted: u64,
    pub acquire_success_rate: Option<f64>,
    /// Median over the runs of each run's p50 acquire latency (ms).
    pub acquire_p50_ms: Option<f64>,
    /// Highest of the runs' p99 acquire latencies (ms).
    pub acquire_p99_ms: Option<f64>,
}

/// What any group of runs tallies, in the matrix and in the article's table alike: which
/// scenarios, how the runs ended, what the resource lost, and their reports.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct RunTally {
    pub scenarios: Vec<String>,
    pub runs: u32,
    pub runs_with_violation: u32,
    pub runs_unknown: u32,
    /// Runs whose outcome (and claims) matched their scenario's expectation.
    pub runs_matched: u32,
    /// Runs cut short (Ctrl-C, SIGTERM, an error) that did not match: not measured to their
    /// end, so neither a match nor a mismatch.
    #[serde(default)]
    pub runs_interrupted: u32,
    pub lost_updates: u64,
    pub acknowledged_updates: u64,
    pub stale_writes_rejected: u64,
    /// Operations whose effect was applied more than once; None when no run named its
    /// operations (only the idempotency key and the unique claim do).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_twice: Option<u64>,
    /// What the lock-free workloads paid instead of waiting: conditional writes refused on a
    /// conflict, claims refused, operations sent again.
    #[serde(default)]
    pub retries: u64,
    /// The rate of violations among the runs with a verdict, with its 95% interval; unknown
    /// runs are not in it (they are counted by cause in `unknown`).
    pub violation_rate: Rate,
    /// The unknown runs by why they ended unknown.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: BTreeMap<UnknownCause, u32>,
    pub reports: Vec<Href>,
}

impl RunTally {
    pub fn of(runs: &[&MatrixRun<'_>]) -> RunTally {
        let mut scenarios: Vec<String> = runs.iter().map(|r| r.results.scenario.clone()).collect();
        scenarios.sort();
        scenarios.dedup();
        let count = |f: &dyn Fn(&RunResults) -> bool| runs.iter().filter(|r| f(r.results)).count() as u32;
        let sum = |f: &dyn Fn(&RunResults) -> u64| runs.iter().map(|r| f(r.results)).sum::<u64>();
        RunTally {
            scenarios,
            runs: runs.len() as u32,
            runs_with_violation: count(&|r| r.outcome == Outcome::Violation),
            runs_unknown: count(&|r| r.outcome == Outcome::Unknown),
            runs_matched: count(&|r| r.matches_expectation),
            runs_interrupted: count(&|r| r.interrupted && !r.matches_expectation),
            lost_updates: sum(&|r| {
                let (rs, once) = (&r.properties.resource_safety, &r.properties.exactly_once);
                rs.lost_updates + rs.acknowledged_missing + once.acknowledged_missing
            }),
            acknowledged_updates: sum(&|r| r.properties.resource_safety.acknowledged_increments + r.properties.exactly_once.acknowledged),
            stale_writes_rejected: sum(&|r| r.properties.resource_safety.rejected_writes),
            applied_twice: runs
                .iter()
                .any(|r| r.results.properties.exactly_once.applies)
                .then(|| sum(&|r| r.properties.exactly_once.applied_twice)),
            retries: sum(&|r| {
                let once = &r.properties.exactly_once;
                r.properties.resource_safety.refused_writes + once.claims_refused + once.resent
            }),
            violation_rate: Rate::of(count(&|r| r.outcome == Outcome::Violation), count(&|r| r.outcome != Outcome::Unknown)),
            unknown: UnknownCause::tally(runs.iter().filter_map(|r| r.results.unknown_cause())),
            reports: runs.iter().map(|r| r.report.clone()).collect(),
        }
    }

    /// The unknown runs by cause, in words ("2 unknown: 1 infrastructure, 1 fault not applied"),
    /// or None without any.
    pub fn unknown_words(&self) -> Option<String> {
        UnknownCause::tally_words(&self.unknown)
    }

    /// Every run matched (true without runs).
    pub fn all_matched(&self) -> bool {
        self.runs_matched == self.runs
    }

    /// How the runs stand against their expectations: a run that did not match outweighs an
    /// interrupted one, which outweighs the matches.
    pub fn verdict(&self) -> Verdict {
        if self.runs == 0 {
            Verdict::NoRuns
        } else if self.runs_matched == self.runs {
            Verdict::Matched
        } else if self.runs_matched + self.runs_interrupted == self.runs {
            Verdict::Interrupted
        } else {
            Verdict::DidNotMatch
        }
    }
}

/// Where a group of runs (a cell, the whole matrix) stands against its expectations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    NoRuns,
    Matched,
    /// Every run that was not cut short matched; some were cut short.
    Interrupted,
    DidNotMatch,
}

impl Matrix {
    pub fn from_runs(runs: &[MatrixRun<'_>]) -> Matrix {
        let mut by_cell: BTreeMap<(String, String), Vec<&MatrixRun<'_>>> = BTreeMap::new();
        for r in runs {
            by_cell.entry((r.row.clone(), r.column.clone())).or_default().push(r);
        }
        let cells: Vec<Cell> = by_cell.into_iter().map(|((row, column), runs)| cell(row, column, &runs)).collect();
        let mut rows: Vec<String> = cells.iter().map(|c| c.row.clone()).collect();
        rows.dedup();
        let mut columns: Vec<String> = cells.iter().map(|c| c.column.clone()).collect();
        columns.sort_by_key(|c| (c != "baseline", c.clone()));
        columns.dedup();
        let all_match = !cells.is_empty() && cells.iter().all(|c| c.matches_expectation);
        Matrix { rows, columns, cells, all_match }
    }

    pub fn cell(&self, row: &str, column: &str) -> Option<&Cell> {
        self.cells.iter().find(|c| c.row == row && c.column == column)
    }

    /// The cells' verdicts together: the weightiest of them, or no runs without cells.
    pub fn verdict(&self) -> Verdict {
        let verdicts: Vec<Verdict> = self.cells.iter().map(|c| c.tally.verdict()).collect();
        [Verdict::DidNotMatch, Verdict::Interrupted, Verdict::Matched].into_iter().find(|v| verdicts.contains(v)).unwrap_or(Verdict::NoRuns)
    }
}

fn cell(row: String, column: String, runs: &[&MatrixRun<'_>]) -> Cell {
    let mut expect: Vec<String> = runs.iter().map(|r| r.results.expect.to_string()).collect();
    expect.sort();
    expect.dedup();
    let sum = |f: &dyn Fn(&RunResults) -> u64| runs.iter().map(|r| f(r.results)).sum::<u64>();
    let attempts = sum(&|r| r.properties.availability.attempts);
    let granted = sum(&|r| r.properties.availability.granted);
    let mut p50s: Vec<f64> = runs.iter().filter_map(|r| r.results.properties.availability.latency_ms.map(|l| l.p50)).collect();
    p50s.sort_by(f64::total_cmp);
    let tally = RunTally::of(runs);
    Cell {
        row,
        column,
        matches_expectation: tally.all_matched(),
        tally,
        expect,
        acquire_attempts: attempts,
        acquire_granted: granted,
        acquire_success_rate: (attempts > 0).then(|| granted as f64 / attempts as f64),
        acquire_p50_ms: (!p50s.is_empty()).then(|| p50s[(p50s.len() - 1) / 2]),
        acquire_p99_ms: runs.iter().filter_map(|r| r.results.properties.availability.latency_ms.map(|l| l.p99)).max_by(f64::total_cmp),
    }
}

/// Milliseconds, rounded, or a dash when there are none (shared with the sweep page).
pub(crate) fn ms(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.0}")).unwrap_or_else(|| "–".into())
}

/// matrix.html: self-contained, no scripts, no external assets. Written with maud (see
/// `run_report`), which escapes every value from the runs (scenario, row and column names).
pub fn render_html(m: &Matrix, title: &str) -> String {
    let body = html! {        p { a href="table.html" { "The same runs as the article's decision table" } }
        @match m.verdict() {
            Verdict::NoRuns => p class="summary" { "No run finished: nothing was measured." },
            Verdict::Matched => p class="summary match" { "Every cell matched its expectation in every run." },
            Verdict::Interrupted => p class="summary interrupted" { "Some runs were interrupted: their cells were not measured to the end." },
            Verdict::DidNotMatch => p class="summary mismatch" { "Some cells did not match their expectation." },
        }
        table id="matrix" {
            thead { tr { th { "backend" } @for c in &m.columns { th { (c) } } } }
            tbody {
                @for row in &m.rows {
                    tr {
                        th { (row) }
                        @for column in &m.columns {
                            @match m.cell(row, column) {
                                None => { td class="empty" {} }
                                Some(c) => { (render_cell(c)) }
                            }
                        }
                    }
                }
            }
        }
        p class="legend" {
            "Each cell: runs with a violation / runs (expected outcome); the rate of violations among the runs \
             with a verdict, with its exact 95% interval (a cell safe in every run: the most it could fail; a failure: \
             how many runs see it once with 95% probability); unknown runs by cause, kept out of the rate; lost updates of \
             acknowledged ones, stale writes the resource rejected, operations applied twice and retries (the workloads \
             without a lock), acquire success rate, acquire latency p50 \
             (median over runs) / p99 (highest of the runs) in ms. Green: every run matched its expectation; \
             yellow: every run that ran to its end did, and some were interrupted (Ctrl-C, SIGTERM, an error)."
        }
    };
    crate::page::page(title, MATRIX_CSS, body)
}

/// The class of a cell (its colour) by its verdict.
fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::NoRuns => "empty",
        Verdict::Matched => "match",
        Verdict::Interrupted => "interrupted",
        Verdict::DidNotMatch => "mismatch",
    }
}

fn render_cell(c: &Cell) -> Markup {
    html! {
        td class=(verdict_class(c.tally.verdict())) title=(c.tally.scenarios.join(", ")) {
            div class="verdict" {
                "violation " (c.tally.runs_with_violation) "/" (c.tally.runs) " "
                span class="expect" { "(expect " (c.expect.join("/")) ")" }
            }
            div class="rate" { (c.tally.violation_rate.words()) }
            @if let Some(unknown) = c.tally.unknown_words() { div class="unknown" { (unknown) } }
            @if c.tally.runs_interrupted > 0 { div { "interrupted " (c.tally.runs_interrupted) } }
            div { "lost " (c.tally.lost_updates) " of " (c.tally.acknowledged_updates) }
            div { "rejected " (c.tally.stale_writes_rejected) }
            @if let Some(twice) = c.tally.applied_twice { div { "applied twice " (twice) } }
            @if c.tally.retries > 0 { div { "retries " (c.tally.retries) } }
            div { "acquired " (c.acquire_success_rate.map(|r| format!("{:.0}%", r * 100.0)).unwrap_or_else(|| "–".into())) }
            div { "p50 " (ms(c.acquire_p50_ms)) " / p99 " (ms(c.acquire_p99_ms)) " ms" }
            div class="runs" {
                @for (i, r) in c.tally.reports.iter().enumerate() {
                    @if i > 0 { " " }
                    a href=(r) { (i + 1) }
                }
            }
        }
    }
}

const MATRIX_CSS: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:.4em .6em;vertical-align:top;font-size:.9em}\
thead th{background:#f4f4f4}td.match{background:#e9f7ec}td.mismatch{background:#fde8e8}td.empty{background:#fafafa}\
td.interrupted{background:#fff4d6}.summary.interrupted{color:#8a5a00;font-weight:600}\
.verdict{font-weight:600}.expect{font-weight:400;color:#555}.runs a{margin-right:.3em}\
.rate{color:#333}.unknown{color:#8a5a00}.summary.match{color:#1a7f37}.summary.mismatch{color:#b42318;font-weight:600}.legend{color:#555;font-size:.85em;max-width:60em}";
