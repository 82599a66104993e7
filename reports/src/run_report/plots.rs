//! Plots (plotters, SVG, inline): acquire latency over time and throughput (writes the resource
//! accepted per second), with the fault periods shaded, so what a fault cost is visible at a
//! glance. No font library: plotters' SVG backend writes text as SVG text.
//!
//! plotters' SVG is put in the page as it comes (maud's `PreEscaped`): the only text passed
//! to it is this file's own (titles, axis descriptions) and the numbers on its axes; nothing
//! from the run is. Its error messages, which could be anything, go through maud's escaping.

use super::timeline::FaultBand;
use checker::{Event, EventType, Process};
use maud::{html, Markup, PreEscaped};
use plotters::prelude::*;

const W: u32 = 1100;
const H: u32 = 220;
const FAULT: RGBColor = RGBColor(200, 160, 220);

/// (time in s, latency in ms) of every granted acquire, from its invoke to its ok.
pub(crate) fn acquire_latencies(history: &[Event]) -> Vec<(f64, f64)> {
    checker::acquire_outcomes(history)
        .into_iter()
        .filter(|o| o.kind == EventType::Ok)
        .filter_map(|o| o.latency.map(|l| (o.time as f64 / 1e9, l as f64 / 1e6)))
        .collect()
}

/// Writes the resource accepted, per whole second of the run.
pub(crate) fn throughput(history: &[Event], end_s: f64) -> Vec<(f64, f64)> {
    let mut per_second = vec![0u64; end_s.ceil() as usize + 1];
    for e in history {
        if e.process.is_named(Process::RESOURCE) && e.f == "write" && e.kind == EventType::Ok {
            per_second[(e.time / 1_000_000_000) as usize] += 1;
        }
    }
    per_second.iter().enumerate().map(|(s, n)| (s as f64, *n as f64)).collect()
}

/// The two plots as inline SVG, or a note when one cannot be drawn.
pub(crate) fn render(history: &[Event], faults: &[FaultBand]) -> Markup {
    let end_s = history.iter().map(|e| e.time).max().unwrap_or(0) as f64 / 1e9;
    let latencies = acquire_latencies(history);
    let rate = throughput(history, end_s);
    let plots = [
        ("plot-latency", "acquire latency", "ms", &latencies, false),
        ("plot-throughput", "writes accepted per second", "writes/s", &rate, true),
    ];
    html! {
        @for (class, title, y_desc, points, line) in plots {
            @match plot(title, y_desc, points, line, faults, end_s.max(1.0)) {
                Ok(svg) => { figure class=(class) { (PreEscaped(svg)) } }
                Err(e) => { p { (title) ": not drawn (" (e) ")" } }
            }
        }
    }
}

fn plot(title: &str, y_desc: &str, points: &[(f64, f64)], line: bool, faults: &[FaultBand], end_s: f64) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let y_max = points.iter().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.1;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 14))
            .margin(8)
            .x_label_area_size(28)
            .y_label_area_size(48)
            .build_cartesian_2d(0.0..end_s, 0.0..y_max)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc(y_desc)
            .light_line_style(WHITE)
            .label_style(("sans-serif", 11))
            .draw()
            .map_err(|e| e.to_string())?;
        let bands =
            faults.iter().map(|f| Rectangle::new([(f.start as f64 / 1e9, 0.0), (f.end as f64 / 1e9, y_max)], FAULT.mix(0.35).filled()));
        chart.draw_series(bands).map_err(|e| e.to_string())?;
        if line {
            chart.draw_series(LineSeries::new(points.iter().copied(), BLUE.stroke_width(2))).map_err(|e| e.to_string())?;
        } else {
            chart.draw_series(points.iter().map(|&(x, y)| Circle::new((x, y), 2, BLUE.filled()))).map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    // Inline SVG in HTML needs no namespace, and the page then names no URL at all.
    Ok(svg.replace(" xmlns=\"http://www.w3.org/2000/svg\"", ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ms: u64, process: Process, kind: EventType, f: &str) -> Event {
        Event::new(ms * 1_000_000, process, kind, f)
    }

    #[test]
    fn latencies_pair_invokes_with_oks_and_throughput_counts_accepted_writes() {
        let res = || Process::Named("resource".into());
        let h = [
            ev(0, Process::Client(1), EventType::Invoke, "acquire"),
            ev(5, Process::Client(2), EventType::Invoke, "acquire"),
            ev(10, Process::Client(1), EventType::Ok, "acquire"),
            ev(400, res(), EventType::Ok, "write"),
            ev(900, Process::Client(2), EventType::Fail, "acquire"),
            ev(1200, res(), EventType::Ok, "write"),
            ev(1300, res(), EventType::Fail, "write"),
            ev(1500, Process::Client(2), EventType::Invoke, "acquire"),
            ev(2500, Process::Client(2), EventType::Ok, "acquire"),
        ];
        assert_eq!(acquire_latencies(&h), [(0.01, 10.0), (2.5, 1000.0)]);
        assert_eq!(throughput(&h, 2.5), [(0.0, 1.0), (1.0, 1.0), (2.0, 0.0), (3.0, 0.0)]);
        let band = FaultBand { fault: "pause".into(), node: None, start: 100_000_000, end: 900_000_000, healed: true, error: None };
        let svg = render(&h, &[band]).into_string();
        assert_eq!(svg.matches("<svg").count(), 2, "{svg}");
        assert!(svg.contains("acquire latency") && svg.contains("writes accepted per second") && svg.contains("time (s)"), "{svg}");
    }
}
