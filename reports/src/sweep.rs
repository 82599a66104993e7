//! The price of a lock (sweep.json, sweep.html): the same workload run with 1, 2, 4, … clients,
//! one line per scenario (a lock on each backend, the conditional write, …), each point a run
//! in the store. What is measured per point: writes acknowledged per second, per key, and the
//! acquire latency; for a lock, whether the rate stays under its ceiling, 1000 / work_ms per key
//! (one holder at a time, each holding work_ms).
//!
//! The SVG holds only numbers and this file's own words; the scenario names are in the HTML
//! legend and table, which maud escapes.

use crate::matrix::ms;
use crate::rate::Rate;
use checker::{Event, EventType, Process};
use maud::{html, Markup, PreEscaped};
use plotters::prelude::*;
use results::UnknownCause;
use results::{Outcome, RunResults};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Sweep {
    /// The client counts, in order.
    pub clients: Vec<u32>,
    pub lines: Vec<SweepLine>,
}

/// One scenario swept over the client counts.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SweepLine {
    pub scenario: String,
    /// What it is, as the matrix's row says it ("redis-single", "postgres-xact, conditional
    /// write, no lock").
    pub label: String,
    /// The lock's ceiling per key, 1000 / work_ms (the shortest work): None without a lock.
    pub ceiling_per_sec: Option<f64>,
    pub points: Vec<SweepPoint>,
    /// The rate of violations over its points (one run each) with a verdict, and its 95%
    /// interval; kept up by [`SweepLine::push`].
    #[serde(default)]
    pub violation_rate: Rate,
    /// Its unknown runs by cause, kept out of the rate.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: BTreeMap<UnknownCause, u32>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SweepPoint {
    pub clients: u32,
    /// The run's report, relative to sweep.html.
    pub report: crate::href::Href,
    pub outcome: Outcome,
    /// Why it ended unknown, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown_cause: Option<UnknownCause>,
    /// Writes acknowledged to clients in the measured window, all keys.
    pub writes: u64,
    /// The window: from the first client operation, the scenario's time limit long, or to the
    /// clients' last event when they stopped sooner (the run was interrupted, or its episodes
    /// were done): a run is measured over what it ran.
    pub window_secs: f64,
    /// The scenario's time limit: the window the run was meant to have.
    #[serde(default)]
    pub time_limit_secs: u64,
    /// The run was cut short (Ctrl-C, SIGTERM or an error before its time limit).
    #[serde(default)]
    pub interrupted: bool,
    pub writes_per_sec: f64,
    /// Keys written.
    pub keys: u32,
    pub writes_per_sec_per_key: f64,
    /// Writes the clients were refused (a conditional write's conflicts), per acknowledged one.
    pub conflicts_per_write: Option<f64>,
    pub acquire_p50_ms: Option<f64>,
    pub acquire_p99_ms: Option<f64>,
    /// Writes per key in the window exceed what one holder at a time could do: the lock let
    /// two hold it (None without a lock).
    pub above_ceiling: Option<bool>,
}

impl SweepPoint {
    /// `interrupted: measured over 4.0 s of 10 s` for a run cut short, else None.
    pub fn cut_short_note(&self) -> Option<String> {
        self.interrupted.then(|| format!("interrupted: measured over {:.1} s of {} s", self.window_secs, self.time_limit_secs))
    }
}

impl SweepLine {
    pub fn new(scenario: String, label: String, ceiling_per_sec: Option<f64>) -> SweepLine {
        SweepLine { scenario, label, ceiling_per_sec, points: vec![], violation_rate: Rate::default(), unknown: BTreeMap::new() }
    }

    /// One more point, counted into the line's rate (or its unknowns).
    pub fn push(&mut self, point: SweepPoint) {
        if let Some(cause) = point.unknown_cause {
            *self.unknown.entry(cause).or_default() += 1;
        }
        self.points.push(point);
        let with_verdict = self.points.iter().filter(|p| p.outcome != Outcome::Unknown);
        let violations = with_verdict.clone().filter(|p| p.outcome == Outcome::Violation).count() as u32;
        self.violation_rate = Rate::of(violations, with_verdict.count() as u32);
    }

    /// Some point of a lock line is above its ceiling.
    pub fn above_ceiling(&self) -> bool {
        self.points.iter().any(|p| p.above_ceiling == Some(true))
    }
}

/// Measures one run. `ceiling_per_sec`: the lock's, if the run took one.
pub fn point(results: &RunResults, history: &[Event], report: crate::href::Href, ceiling_per_sec: Option<f64>) -> SweepPoint {
    let limit_ns = results.time_limit_secs * 1_000_000_000;
    let client_times = || history.iter().filter(|e| matches!(e.process, Process::Client(_))).map(|e| e.time);
    let start = client_times().min().unwrap_or(0);
    let last = client_times().max().unwrap_or(0);
    // Clients that stopped before the time limit ran only until their last event; with no span
    // at all (one event, or none) there is nothing to shorten the planned window by.
    let window_ns = if last > start { (last - start).min(limit_ns) } else { limit_ns };
    let mut writes = 0u64;
    let mut keys: BTreeSet<&str> = BTreeSet::new();
    for e in history {
        if matches!(e.process, Process::Client(_))
            && e.f == "write"
            && e.kind == EventType::Ok
            && (start..start + limit_ns).contains(&e.time)
        {
            writes += 1;
            keys.insert(e.key.as_deref().unwrap_or_default());
        }
    }
    let window_secs = window_ns as f64 / 1e9;
    let key_count = keys.len().max(1) as u32;
    let per_key = writes as f64 / window_secs / f64::from(key_count);
    let rs = &results.properties.resource_safety;
    let latency = results.properties.availability.latency_ms;
    SweepPoint {
        clients: results.clients,
        report,
        outcome: results.outcome,
        unknown_cause: results.unknown_cause(),
        writes,
        window_secs,
        time_limit_secs: results.time_limit_secs,
        interrupted: results.interrupted,
        writes_per_sec: writes as f64 / window_secs,
        keys: key_count,
        writes_per_sec_per_key: per_key,
        conflicts_per_write: (ceiling_per_sec.is_none() && rs.acknowledged_increments > 0)
            .then(|| rs.refused_writes as f64 / rs.acknowledged_increments as f64),
        acquire_p50_ms: latency.map(|l| l.p50),
        acquire_p99_ms: latency.map(|l| l.p99),
        // One holder at a time fits at most window / work sections in the window, and one
        // more whose start falls just before it.
        above_ceiling: ceiling_per_sec.map(|c| per_key > c + 1.0 / window_secs),
    }
}

const W: u32 = 760;
const H: u32 = 340;
const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

fn colour(i: usize) -> RGBColor {
    COLOURS[i % COLOURS.len()]
}

/// sweep.html: the two plots, their legend, and every point's numbers with its run's report.
pub fn render_html(sweep: &Sweep, title: &str) -> String {
    let rate: Vec<Vec<(u32, f64)>> =
        sweep.lines.iter().map(|l| l.points.iter().map(|p| (p.clients, p.writes_per_sec_per_key)).collect()).collect();
    let total: Vec<Vec<(u32, f64)>> =
        sweep.lines.iter().map(|l| l.points.iter().map(|p| (p.clients, p.writes_per_sec)).collect()).collect();
    let latency: Vec<Vec<(u32, f64)>> =
        sweep.lines.iter().map(|l| l.points.iter().filter_map(|p| p.acquire_p50_ms.map(|v| (p.clients, v))).collect()).collect();
    let ceilings: Vec<f64> = sweep.lines.iter().filter_map(|l| l.ceiling_per_sec).collect();
    let body = html! {
        p {
            "Each line one scenario, each point one run with that many clients. \
             Dashed: a lock's ceiling, 1000 / work_ms per key: one holder at a time."
        }
        ul class="legend" {
            @for (i, l) in sweep.lines.iter().enumerate() {
                @let c = colour(i);
                li {
                    span class="swatch" style=(format!("background:rgb({},{},{})", c.0, c.1, c.2)) {}
                    " " (l.label) " (" (l.scenario) "): " (l.violation_rate.words())
                    @if let Some(unknown) = UnknownCause::tally_words(&l.unknown) { "; " (unknown) }
                    @if l.above_ceiling() { strong class="bad" { " above its ceiling" } }
                }
            }
        }
        (figure("writes acknowledged per second, per key", "writes/s per key", &sweep.clients, &rate, &ceilings))
        (figure("writes acknowledged per second, all keys", "writes/s", &sweep.clients, &total, &[]))
        (figure("acquire latency, median", "ms", &sweep.clients, &latency, &[]))
        table {
            thead { tr {
                th { "scenario" } th { "clients" } th { "outcome" } th { "writes/s" } th { "keys" } th { "writes/s per key" }
                th { "ceiling" } th { "conflicts per write" } th { "acquire p50 / p99 ms" } th { "run" }
            } }
            tbody {
                @for l in &sweep.lines {
                    @for p in &l.points {
                        tr {
                            td { (l.scenario) }
                            td { (p.clients) }
                            td {
                                (p.outcome)
                                @if let Some(note) = p.cut_short_note() { br; small class="bad" { (note) } }
                            }
                            td { (format!("{:.2}", p.writes_per_sec)) }
                            td { (p.keys) }
                            td class=[(p.above_ceiling == Some(true)).then_some("bad")] { (format!("{:.2}", p.writes_per_sec_per_key)) }
                            td { (l.ceiling_per_sec.map(|c| format!("{c:.2}")).unwrap_or_else(|| "–".into())) }
                            td { (p.conflicts_per_write.map(|c| format!("{c:.1}")).unwrap_or_else(|| "–".into())) }
                            td { (ms(p.acquire_p50_ms)) " / " (ms(p.acquire_p99_ms)) }
                            td { a href=(p.report) { "report" } }
                        }
                    }
                }
            }
        }
    };
    crate::page::page(title, CSS, body)
}

fn figure(title: &str, y_desc: &str, clients: &[u32], lines: &[Vec<(u32, f64)>], ceilings: &[f64]) -> Markup {
    match plot(title, y_desc, clients, lines, ceilings) {
        Ok(svg) => html! { figure { (PreEscaped(svg)) } },
        Err(e) => html! { p { (title) ": not drawn (" (e) ")" } },
    }
}

/// x: the client counts on a log2 scale (1, 2, 4, … evenly spaced); y from 0.
fn plot(title: &str, y_desc: &str, clients: &[u32], lines: &[Vec<(u32, f64)>], ceilings: &[f64]) -> Result<String, String> {
    let x = |c: u32| f64::from(c.max(1)).log2();
    let x_max = clients.iter().copied().map(x).fold(1.0, f64::max);
    let y_max = lines.iter().flatten().map(|(_, v)| *v).chain(ceilings.iter().copied()).fold(1.0, f64::max) * 1.15;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(52)
            .build_cartesian_2d(-0.2..x_max + 0.2, 0.0..y_max)
            .map_err(|e| e.to_string())?;
        let ticks: Vec<u32> = clients.to_vec();
        chart
            .configure_mesh()
            .x_desc("clients")
            .y_desc(y_desc)
            .light_line_style(WHITE)
            .x_labels(ticks.len().max(2))
            .x_label_formatter(&|v| {
                // Label only the swept counts.
                ticks.iter().find(|c| (x(**c) - v).abs() < 0.05).map(|c| c.to_string()).unwrap_or_default()
            })
            .draw()
            .map_err(|e| e.to_string())?;
        for c in ceilings {
            let dashes = (0..40).map(|i| {
                let from = -0.2 + (x_max + 0.4) * f64::from(i) / 40.0;
                PathElement::new(vec![(from, *c), (from + (x_max + 0.4) / 80.0, *c)], BLACK.mix(0.6))
            });
            chart.draw_series(dashes).map_err(|e| e.to_string())?;
        }
        for (i, line) in lines.iter().enumerate() {
            let points: Vec<(f64, f64)> = line.iter().map(|(c, v)| (x(*c), *v)).collect();
            chart.draw_series(LineSeries::new(points.clone(), colour(i).stroke_width(2))).map_err(|e| e.to_string())?;
            chart.draw_series(points.iter().map(|p| Circle::new(*p, 3, colour(i).filled()))).map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

const CSS: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;margin-top:1em}th,td{border:1px solid #ccc;padding:.3em .6em;font-size:.9em}\
thead th{background:#f4f4f4}.bad{color:#b00}ul.legend{list-style:none;padding:0}\
.swatch{display:inline-block;width:1.2em;height:.8em}figure{margin:1em 0}";

#[cfg(test)]
mod tests {
    use super::*;

    fn write_ok(ms: u64, process: u64, key: &str) -> Event {
        let mut e = Event::new(ms * 1_000_000, Process::Client(process), EventType::Ok, "write");
        e.key = Some(key.into());
        e
    }

    fn results(time_limit_secs: u64, clients: u32) -> RunResults {
        RunResults {
            scenario: "s".into(),
            description: "d".into(),
            expect: results::Expectation::Safe,
            outcome: Outcome::Safe,
            matches_expectation: true,
            run_id: "r".into(),
            backend: "b".into(),
            seed: 1,
            clients,
            time_limit_secs,
            started_at: "2026-01-01T00:00:00Z".into(),
            duration_secs: 1.0,
            interrupted: false,
            workers: vec![],
            warnings: vec![],
            not_applied: vec![],
            refused_requests: Default::default(),
            unknown_cause: None,
            properties: checker::check(&[], &checker::CheckOptions::default()),
            claims: vec![],
        }
    }

    fn report(path: &str) -> crate::href::Href {
        crate::href::Href::to_path(std::path::Path::new(path)).unwrap()
    }

    #[test]
    fn a_rate_over_the_ceiling_is_flagged_and_one_under_it_is_not() {
        // 10 s at work 200 ms: at most 50 sections (51 with one straddling the start).
        let start = Event::new(0, Process::Client(1), EventType::Invoke, "acquire");
        let under: Vec<Event> = std::iter::once(start.clone()).chain((0..50).map(|i| write_ok(200 * i + 199, 1, "k"))).collect();
        let p = point(&results(10, 2), &under, report("r"), Some(5.0));
        assert_eq!((p.writes, p.above_ceiling), (50, Some(false)));
        let over: Vec<Event> = std::iter::once(start).chain((0..60).map(|i| write_ok(160 * i + 150, 1 + i % 2, "k"))).collect();
        let p = point(&results(10, 2), &over, report("r"), Some(5.0));
        assert_eq!((p.writes, p.above_ceiling), (60, Some(true)));
    }

    #[test]
    fn rates_are_per_key_and_only_inside_the_window() {
        let mut h = vec![Event::new(1_000_000_000, Process::Client(1), EventType::Invoke, "read")];
        h.extend((0..20).map(|i| write_ok(1000 + 100 * i, 1 + i % 2, if i % 2 == 0 { "a" } else { "b" })));
        h.push(write_ok(1000 + 10_000, 1, "a")); // past the 10 s window
        let p = point(&results(10, 2), &h, report("r"), None);
        assert_eq!((p.writes, p.keys), (20, 2));
        assert!((p.writes_per_sec_per_key - 1.0).abs() < 1e-9);
        assert_eq!(p.above_ceiling, None);
    }

    #[test]
    fn an_interrupted_run_is_measured_over_what_it_ran_and_marked() {
        // Ctrl-C 4 s into a 10 s run: 4 writes a second for the 4 s it ran.
        let mut r = results(10, 2);
        r.interrupted = true;
        let mut h = vec![Event::new(1_000_000_000, Process::Client(1), EventType::Invoke, "acquire")];
        h.extend((0..16).map(|i| write_ok(1000 + 250 * (i + 1), 1, "k")));
        let p = point(&r, &h, report("r"), Some(5.0));
        assert_eq!(p.writes, 16);
        assert!((p.window_secs - 4.0).abs() < 1e-9, "{}", p.window_secs);
        assert!((p.writes_per_sec_per_key - 4.0).abs() < 1e-9, "{}", p.writes_per_sec_per_key);
        assert!(p.interrupted);
        let mut line = SweepLine::new("s".into(), "redis".into(), Some(5.0));
        line.push(p);
        let page = render_html(&Sweep { clients: vec![2], lines: vec![line] }, "sweep");
        assert!(page.contains("interrupted: measured over 4.0 s of 10 s"), "{page}");
        // Its outcome was a verdict (safe): counted in the rate, as no unknown.
        assert!(page.contains("safe in 1 run: fails in at most 95% of runs"), "{page}");
    }

    #[test]
    fn a_run_whose_clients_stopped_early_is_measured_over_their_time() {
        // The workload ended at 6 s (its episodes were done) though the limit was 10 s.
        let mut h = vec![Event::new(0, Process::Client(1), EventType::Invoke, "acquire")];
        h.extend((0..12).map(|i| write_ok(500 * (i + 1), 1, "k")));
        let p = point(&results(10, 1), &h, report("r"), None);
        assert!((p.window_secs - 6.0).abs() < 1e-9 && (p.writes_per_sec - 2.0).abs() < 1e-9, "{p:?}");
        assert!(!p.interrupted);
    }

    #[test]
    fn the_page_escapes_names_and_draws_both_plots() {
        let mut line = SweepLine::new("<b>x</b>".into(), "redis".into(), Some(5.0));
        line.push(point(&results(10, 1), &[write_ok(10, 1, "k")], report("a/report.html"), Some(5.0)));
        let page = render_html(&Sweep { clients: vec![1, 2], lines: vec![line] }, "sweep");
        assert!(page.contains("&lt;b&gt;x&lt;/b&gt;") && !page.contains("<b>x</b>"));
        assert_eq!(page.matches("<svg").count(), 3);
    }
}
