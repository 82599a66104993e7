//! history.html: the nights side by side, a row per cell. Self-contained, no scripts; maud
//! escapes every value that comes from the stores (labels, rows, columns).

use super::{chart::chart, CellHistory, CellState, History, NightCell};
use maud::{html, Markup};
use results::UnknownCause;

pub fn render_html(h: &History, title: &str) -> String {
    let count = |s: CellState| h.cells.iter().filter(|c| c.state == s).count();
    let moved = h.moved_tonight();
    let first_last = match (h.nights.first(), h.nights.last()) {
        (Some(a), Some(b)) if h.nights.len() > 1 => format!(" ({} to {})", a.label, b.label),
        _ => String::new(),
    };
    let body = html! {
        p class="summary" {
            (h.nights.len()) " nights" (first_last) ", " (h.cells.len()) " cells: "
            (count(CellState::Changed)) " changed, " (count(CellState::Steady)) " steady, "
            (count(CellState::Unmeasured)) " with too few nights to say."
        }
        @if moved.is_empty() {
            p class="tonight steady" { "Tonight no cell moved beyond chance." }
        } @else {
            p class="tonight moved" {
                "Tonight " (moved.len()) " cell(s) moved beyond chance: "
                (moved.iter().map(|c| format!("{} × {}", c.row, c.column)).collect::<Vec<_>>().join("; "))
            }
        }
        p class="rule" {
            "A night changed when its rate of violations differs from the nights before it since the cell last changed \
             (pooled) beyond what chance explains: Fisher's exact test, two-sided, p < " (h.alpha)
            "; or when a cell safe in at least " (h.flip_min_runs) " runs before it shows a violation, which is a proof. "
            @match &h.baseline {
                Some(stores) => { "Tonight (the last night) is compared with the baseline: " (stores.join(", ")) ", pooled." }
                None => { "Tonight (the last night) is compared the same way." }
            }
        }
        table id="nights" {
            thead { tr { th { "night" } th { "started" } th { "runs" } th { "unknown, by cause (not in the rates)" } } }
            tbody {
                @for n in &h.nights {
                    tr {
                        td { @match &n.matrix_page { Some(p) => a href=(p) { (n.label) }, None => (n.label) } }
                        td { (n.started_at.as_deref().unwrap_or("–")) }
                        td { (n.runs) }
                        td class="unknown" { (UnknownCause::tally_words(&n.unknown).unwrap_or_else(|| "none".into())) }
                    }
                }
            }
        }
        table id="cells" {
            thead { tr {
                th { "cell" } th { "rate night by night" } th { "reading" }
                @for n in &h.nights { th class="night" { (n.label) } }
            } }
            tbody { @for c in &h.cells { (row(c, h)) } }
        }
        p class="legend" {
            "Each chart: a column per night; the dot is the rate of violations among the runs with a verdict \
             (red: some violation, green: none), the bar its exact 95% interval, a dashed line the night a change \
             was found. Each night's cell: violations / runs with a verdict, the unknown runs by cause beside them \
             (kept out of the rate, so a night of broken runners is not a night of changes), and its runs' reports; \
             shaded red: the night it changed; outlined red: some run that night did not match its scenario's expectation. \
             Steady: every night within chance of the nights before it. Changed: some night moved beyond chance."
        }
    };
    crate::page::page(title, HISTORY_CSS, body)
}

fn row(c: &CellHistory, h: &History) -> Markup {
    html! {
        tr class=(c.state.name()) data-state=(c.state.name()) data-row=(c.row) data-column=(c.column) {
            th { (c.row) br; span class="column" { (c.column) } }
            td { (chart(c, &h.nights)) }
            td class="reading" { (reading(c, h)) }
            @for n in &c.nights {
                @match n {
                    None => td class="night absent" { "–" },
                    Some(n) => (night_cell(n)),
                }
            }
        }
    }
}

/// The cell's state in words: the nights it changed and why, else its latest rate.
fn reading(c: &CellHistory, h: &History) -> Markup {
    html! {
        @match c.state {
            CellState::Changed => strong class="changed" { "changed" },
            CellState::Steady => strong class="steady" { "steady" },
            CellState::Unmeasured => strong { "too few nights" },
        }
        @for &i in &c.changed_at {
            @if let Some(Some(n)) = c.nights.get(i) {
                @if let Some(a) = &n.against_before {
                    div { "on " (h.nights[i].label) ": " (a.why) }
                }
            }
        }
        @if let (Some(t), Some(_)) = (&c.tonight, &h.baseline) {
            div class=[t.change.moved().then_some("moved")] { "tonight against the baseline: " (t.why) }
        }
        @if let Some(Some(last)) = c.nights.last() {
            div class="latest" { "last night: " (last.rate.words()) }
        }
    }
}

fn night_cell(n: &NightCell) -> Markup {
    let moved = n.against_before.as_ref().is_some_and(|a| a.change.moved());
    html! {
        td class={ "night" @if moved { " moved" } @if !n.matched { " unmatched" } } title=(n.rate.words()) {
            (n.rate.violations) "/" (n.rate.runs)
            @if let Some(u) = UnknownCause::tally_words(&n.unknown) { div class="unknown" { (u) } }
            div class="runs" {
                @for (i, r) in n.reports.iter().enumerate() {
                    @if i > 0 { " " }
                    a href=(r) { (i + 1) }
                }
            }
        }
    }
}

const HISTORY_CSS: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:.3em .5em;vertical-align:top;font-size:.85em}\
thead th{background:#f4f4f4}th .column{font-weight:400;color:#555}tr.changed th{background:#fff4d6}\
td.night{text-align:center;white-space:nowrap}td.night.moved{background:#fde8e8;font-weight:600}td.night.unmatched{outline:2px solid #b42318}\
td.absent{color:#aaa}.unknown{color:#8a5a00;font-size:.85em}.runs a{margin-right:.2em;font-size:.8em}\
strong.changed{color:#b42318}strong.steady{color:#1a7f37}.tonight.moved{color:#b42318;font-weight:600}.tonight.steady{color:#1a7f37}\
.rule,.legend{color:#555;font-size:.85em;max-width:60em}.moved{color:#b42318}\
svg.chart line.axis{stroke:#ddd}svg.chart line.interval{stroke:#888;stroke-width:2}svg.chart line.change{stroke:#b42318;stroke-dasharray:3 2}\
svg.chart circle.violation{fill:#b42318}svg.chart circle.safe{fill:#1a7f37}svg.chart circle.none{fill:#bbb}";
