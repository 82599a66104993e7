//! Draws a [`Timeline`] as inline SVG: one lane per client, holds as bars (red when two
//! clients believed they held the lock at once), the resource's write decisions as ticks,
//! faults as labelled bands across all lanes, the stuck stretches the checker kept as
//! dashed orange bands, seconds along the bottom.
//!
//! Size is bounded whatever the history's length: holds closer than a pixel merge into one
//! bar, writes are drawn as one path per lane and kind with one tick per pixel column, and a
//! hard cap on bars and bands stops the rest (the page says how many were left out).
//!
//! Coordinates and path data are computed here; every element and every text (labels,
//! tooltips, which carry fault and node names from the run) is written with maud, which
//! escapes it.

use super::timeline::{FaultBand, Hold, Timeline, WriteMark};
use super::{secs, F1};
use checker::StuckStretch;
use maud::{html, Markup};
use std::collections::BTreeSet;

const LEFT: f64 = 90.0;
const PLOT_W: f64 = 1000.0;
const RIGHT: f64 = 20.0;
const LABEL_ROW_H: f64 = 14.0;
const MAX_LABEL_ROWS: usize = 4;
const LANE_H: f64 = 22.0;
const BAR_Y: f64 = 5.0;
const BAR_H: f64 = 12.0;
const AXIS_H: f64 = 30.0;
/// Bars carry a tooltip each (~120 bytes): 10k keeps the page near 1 MB.
const MAX_BARS: usize = 10_000;
const MAX_FAULTS: usize = 500;
/// Up to this many writes, each tick is its own element with the write's token and value in
/// its tooltip; beyond, one path per lane and kind.
const MAX_LABELLED_WRITES: usize = 400;

/// Horizontal scale: run time (ns) → x.
struct Scale {
    end: u64,
}

impl Scale {
    fn x(&self, t: u64) -> f64 {
        LEFT + PLOT_W * (t as f64 / self.end as f64)
    }
}

/// The SVG plus its legend and notes, ready to put in the page. `stuck`: the checker's stuck
/// stretches (already bounded by its evidence limit).
pub(super) fn render(t: &Timeline, stuck: &[StuckStretch]) -> Markup {
    let scale = Scale { end: t.end };
    let label_rows = label_rows(&t.faults[..t.faults.len().min(MAX_FAULTS)], &scale);
    let rows_used = label_rows.iter().max().map_or(0, |r| r + 1);
    let lanes_top = 6.0 + rows_used as f64 * LABEL_ROW_H;
    let lanes_h = t.lanes.len().max(1) as f64 * LANE_H;
    let height = lanes_top + lanes_h + AXIS_H;
    let width = LEFT + PLOT_W + RIGHT;

    let mut notes = Vec::new();
    let faults = faults(t, &scale, &label_rows, lanes_top, lanes_h, &mut notes);
    let axis = axis(&scale, lanes_top, lanes_h);
    let lanes = lanes(t, &scale, lanes_top, &mut notes);
    if t.writes_without_client > 0 {
        notes.push(format!("{} write record(s) of the resource name no client and are not drawn.", t.writes_without_client));
    }
    html! {
        div class="timeline-box" {
            svg class="timeline" viewBox={ "0 0 " (width) " " (height) } width=(width) height=(height) role="img"
                aria-label="timeline of lock holds, writes and faults" {
                (stuck_bands(stuck, &scale, lanes_top, lanes_h))
                (faults)
                (axis)
                (lanes)
            }
        }
        (legend(!stuck.is_empty()))
        @for n in &notes { p class="note" { (n) } }
    }
}

fn legend(stuck: bool) -> Markup {
    html! {
        p class="legend" {
            span class="sw hold" {} "lock held (as the client believed: acquire ok → release) "
            span class="sw hold overlap" {} "held while another client also held it "
            span class="sw section" {} "critical section (read → write) "
            span class="sw w-ok" {} "write accepted by the resource (tooltip: token, value) "
            span class="sw w-fail" {} "write rejected "
            span class="sw fault" {} "fault active"
            @if stuck { span class="sw stuck" {} "stuck: the lock free, nobody granted it, clients asking" }
        }
    }
}

/// Label row per band: the first row whose previous label ends before this band starts, so
/// overlapping faults stay readable; when all rows are taken, the one that frees up first.
fn label_rows(faults: &[FaultBand], scale: &Scale) -> Vec<usize> {
    let mut row_end = [f64::MIN; MAX_LABEL_ROWS];
    faults
        .iter()
        .map(|f| {
            let x = label_x(f, scale);
            let free = row_end.iter().position(|e| *e <= x);
            let row = free.unwrap_or_else(|| (0..MAX_LABEL_ROWS).min_by(|a, b| row_end[*a].total_cmp(&row_end[*b])).unwrap_or(0));
            row_end[row] = x + label_width(f) + 6.0;
            row
        })
        .collect()
}

/// ~6 px per character at the label's font size.
fn label_width(f: &FaultBand) -> f64 {
    6.0 * fault_label(f).chars().count() as f64
}

/// Label start: at its band, moved left when it would run off the right edge.
fn label_x(f: &FaultBand, scale: &Scale) -> f64 {
    let x = scale.x(f.start) + 2.0;
    x.min(LEFT + PLOT_W + RIGHT - label_width(f)).max(0.0)
}

fn fault_label(f: &FaultBand) -> String {
    let mut label = f.fault.clone();
    if let Some(n) = &f.node {
        label.push(' ');
        label.push_str(n);
    }
    if f.error.is_some() {
        label.push_str(" (not applied)");
    } else if !f.healed {
        label.push_str(" (not healed)");
    }
    label
}

fn faults(t: &Timeline, scale: &Scale, rows: &[usize], top: f64, h: f64, notes: &mut Vec<String>) -> Markup {
    if t.faults.len() > MAX_FAULTS {
        notes.push(format!("{} more fault(s) not drawn.", t.faults.len() - MAX_FAULTS));
    }
    html! {
        @for (f, row) in t.faults.iter().zip(rows) {
            @let x0 = scale.x(f.start);
            @let label = fault_label(f);
            g class=(if f.error.is_some() { "fault failed" } else { "fault" }) {
                title {
                    (label) ": " (secs(f.start)) "–" (secs(f.end)) " s"
                    @if let Some(e) = &f.error { "; error: " (e) }
                }
                rect x=(F1(x0)) y=(F1(top)) width=(F1((scale.x(f.end) - x0).max(1.0))) height=(F1(h)) {}
                text x=(F1(label_x(f, scale))) y=(F1(6.0 + LABEL_ROW_H * (*row as f64 + 1.0) - 3.0)) { (label) }
            }
        }
    }
}

fn stuck_bands(stuck: &[StuckStretch], scale: &Scale, top: f64, h: f64) -> Markup {
    html! {
        @for st in stuck {
            @let x0 = scale.x(st.from_ns);
            rect class="stuck" x=(F1(x0)) y=(F1(top)) width=(F1((scale.x(st.to_ns) - x0).max(1.0))) height=(F1(h)) {
                title { "stuck " (secs(st.from_ns)) "–" (secs(st.to_ns)) " s: " (st.in_words()) }
            }
        }
    }
}

fn axis(scale: &Scale, top: f64, h: f64) -> Markup {
    let span = scale.end as f64 / 1e9;
    let step = nice_step(span / 8.0);
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    let bottom = top + h;
    // Ticks at whole multiples of the step; the 1e-9 slack keeps the last tick despite rounding.
    let ticks = (0..=50u32).map(|k| f64::from(k) * step).take_while(|s| *s <= span * (1.0 + 1e-9));
    html! {
        g class="axis" {
            line x1=(LEFT) y1=(F1(bottom)) x2=(F1(LEFT + PLOT_W)) y2=(F1(bottom)) {}
            @for s in ticks {
                @let x = LEFT + PLOT_W * s / span;
                line class="grid" x1=(F1(x)) y1=(F1(top)) x2=(F1(x)) y2=(F1(bottom + 4.0)) {}
                text x=(F1(x)) y=(F1(bottom + 16.0)) { (format!("{s:.decimals$}")) }
            }
            text class="unit" x=(F1(LEFT + PLOT_W)) y=(F1(bottom + 28.0)) { "time (s)" }
        }
    }
}

/// 1, 2 or 5 times a power of ten, at least `raw`: tick labels a reader can add up.
fn nice_step(raw: f64) -> f64 {
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let m = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

fn lanes(t: &Timeline, scale: &Scale, top: f64, notes: &mut Vec<String>) -> Markup {
    let mut by_lane: Vec<Vec<&Hold>> = vec![Vec::new(); t.lanes.len()];
    for h in &t.holds {
        by_lane[h.lane].push(h);
    }
    let mut writes: Vec<[BTreeSet<i64>; 2]> = vec![Default::default(); t.lanes.len()];
    let mut labelled: Vec<Vec<&WriteMark>> = vec![Vec::new(); t.lanes.len()];
    for w in &t.writes {
        if t.writes.len() <= MAX_LABELLED_WRITES {
            labelled[w.lane].push(w);
        } else {
            // One tick per pixel column is all a reader can see anyway.
            writes[w.lane][usize::from(!w.accepted)].insert(scale.x(w.time).round() as i64);
        }
    }
    let mut sections: Vec<Vec<(f64, f64)>> = vec![Vec::new(); t.lanes.len()];
    for s in &t.sections {
        sections[s.lane].push((scale.x(s.start), scale.x(s.end)));
    }
    let mut budget = MAX_BARS;
    let mut dropped = 0usize;
    let out = html! {
        @for (lane, client) in t.lanes.iter().enumerate() {
            @let y = top + lane as f64 * LANE_H;
            @let [ok, fail] = &writes[lane];
            g class="lane" data-client=(client) {
                text class="lane-label" x=(F1(LEFT - 6.0)) y=(F1(y + BAR_Y + BAR_H - 2.0)) { "client " (client) }
                (bars(&mut by_lane[lane], *client, scale, y, &mut budget, &mut dropped))
                (section_path(&mut sections[lane], y + BAR_Y + BAR_H - 2.0, *client))
                @for w in &labelled[lane] { (labelled_tick(w, scale, y)) }
                (ticks(ok, "w-ok", y, BAR_Y, *client, "accepted"))
                (ticks(fail, "w-fail", y + BAR_Y + BAR_H, LANE_H - BAR_Y - BAR_H, *client, "rejected"))
            }
        }
    };
    if dropped > 0 {
        notes.push(format!("{dropped} lock hold bar(s) not drawn: the timeline shows at most {MAX_BARS}."));
    }
    out
}

/// A run of holds drawn as one bar: neighbours within a pixel of the same colour merge.
struct Bar {
    x0: f64,
    x1: f64,
    red: bool,
    first: usize,
    count: usize,
    start: u64,
    end: u64,
}

fn bars(holds: &mut [&Hold], client: u64, scale: &Scale, y: f64, budget: &mut usize, dropped: &mut usize) -> Markup {
    holds.sort_by_key(|h| h.start);
    let mut merged: Vec<Bar> = Vec::new();
    for (i, h) in holds.iter().enumerate() {
        let x0 = scale.x(h.start);
        let x1 = scale.x(h.end).max(x0 + 1.0);
        match merged.last_mut() {
            Some(b) if b.red == h.overlaps && x0 <= b.x1 + 1.0 => {
                b.x1 = b.x1.max(x1);
                b.end = b.end.max(h.end);
                b.count += 1;
            }
            _ => merged.push(Bar { x0, x1, red: h.overlaps, first: i, count: 1, start: h.start, end: h.end }),
        }
    }
    let mut drawn = Vec::with_capacity(merged.len().min(*budget));
    for b in merged {
        if *budget == 0 {
            *dropped += b.count;
        } else {
            *budget -= 1;
            drawn.push(b);
        }
    }
    html! {
        @for b in &drawn {
            rect class=(if b.red { "hold overlap" } else { "hold" }) x=(F1(b.x0)) y=(F1(y + BAR_Y)) width=(F1(b.x1 - b.x0)) height=(BAR_H) {
                title {
                    @if b.count == 1 {
                        @let h = holds[b.first];
                        "client " (client) " held the lock " (secs(h.start)) "–" (secs(h.end)) " s"
                        @if let Some(t) = h.token { ", token " (t) }
                        @if h.unreleased { " (no release seen)" }
                    } @else {
                        (b.count) " holds of client " (client) ", " (secs(b.start)) "–" (secs(b.end)) " s (merged at this scale)"
                    }
                }
            }
        }
    }
}

/// One write as its own tick, accepted above the bar and rejected below, with what it carried.
fn labelled_tick(w: &WriteMark, scale: &Scale, y: f64) -> Markup {
    let x = scale.x(w.time).round();
    let (class, y0, len, what) =
        if w.accepted { ("w-ok", y, BAR_Y, "accepted") } else { ("w-fail", y + BAR_Y + BAR_H, LANE_H - BAR_Y - BAR_H, "rejected") };
    html! {
        path class=(class) d=(format!("M{x} {y0:.1}v{len}")) {
            title {
                "write " (what) " at " (secs(w.time)) " s"
                @match w.token { Some(t) => { ", token " (t) } None => { ", no token" } }
                @if let Some(v) = w.value { ", value " (v) }
            }
        }
    }
}

/// A lane's critical sections (read returned → write sent) as one path of strokes along the
/// bottom of its bars, sections within a pixel merged.
fn section_path(spans: &mut [(f64, f64)], y: f64, client: u64) -> Markup {
    if spans.is_empty() {
        return html! {};
    }
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut merged: Vec<(f64, f64)> = vec![];
    for &(a, b) in spans.iter() {
        match merged.last_mut() {
            Some(last) if a <= last.1 + 1.0 => last.1 = last.1.max(b),
            _ => merged.push((a, b.max(a + 1.0))),
        }
    }
    let d: String = merged.iter().map(|(a, b)| format!("M{a:.1} {y:.1}H{b:.1}")).collect();
    html! {
        path class="section" d=(d) { title { "client " (client) ": critical sections (read returned → write sent)" } }
    }
}

/// All ticks of one lane and kind as a single path: compact at any history size.
fn ticks(xs: &BTreeSet<i64>, class: &str, y: f64, len: f64, client: u64, what: &str) -> Markup {
    if xs.is_empty() {
        return html! {};
    }
    let d: String = xs.iter().map(|x| format!("M{x} {y:.1}v{len}")).collect();
    html! {
        path class=(class) d=(d) { title { "client " (client) ": writes " (what) " by the resource" } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(1.3), 2.0);
        assert_eq!(nice_step(3.0), 5.0);
        assert!((nice_step(0.013) - 0.02).abs() < 1e-12);
    }
}
