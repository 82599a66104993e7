//! A cell's small chart: one column per night, the rate a dot, its 95% interval a bar, a night
//! that changed marked by a dashed line before it. Inline SVG, no script; each dot links to that
//! night's matrix and says its tally on hover.

use super::{CellHistory, Night};
use maud::{html, Markup};

const STEP: f64 = 18.0;
const HEIGHT: f64 = 44.0;
const PAD: f64 = 6.0;

/// y of a rate: 0 at the bottom, 1 at the top.
fn y(rate: f64) -> f64 {
    PAD + (1.0 - rate) * (HEIGHT - 2.0 * PAD)
}

pub fn chart(cell: &CellHistory, nights: &[Night]) -> Markup {
    let width = PAD * 2.0 + STEP * nights.len().max(1) as f64;
    let x = |i: usize| PAD + STEP * (i as f64 + 0.5);
    html! {
        svg class="chart" width=(width) height=(HEIGHT) viewBox=(format!("0 0 {width} {HEIGHT}")) role="img"
            aria-label=(format!("{} × {}: the violation rate night by night", cell.row, cell.column)) {
            line class="axis" x1="0" x2=(width) y1=(y(0.0)) y2=(y(0.0)) {}
            line class="axis" x1="0" x2=(width) y1=(y(1.0)) y2=(y(1.0)) {}
            @for &i in &cell.changed_at {
                line class="change" x1=(x(i) - STEP / 2.0) x2=(x(i) - STEP / 2.0) y1="0" y2=(HEIGHT) {}
            }
            @for (i, night) in cell.nights.iter().enumerate() {
                @if let Some(n) = night {
                    @let (label, class) = match n.rate.rate {
                        Some(r) if r > 0.0 => (format!("{}: {}", nights[i].label, n.rate.words()), "dot violation"),
                        Some(_) => (format!("{}: {}", nights[i].label, n.rate.words()), "dot safe"),
                        None => (format!("{}: no verdict", nights[i].label), "dot none"),
                    };
                    @if let Some(r) = n.rate.rate {
                        line class="interval" x1=(x(i)) x2=(x(i)) y1=(y(n.rate.low)) y2=(y(n.rate.high)) {}
                        @match &nights[i].matrix_page {
                            Some(page) => a href=(page) { circle class=(class) cx=(x(i)) cy=(y(r)) r="3.5" { title { (label) } } },
                            None => circle class=(class) cx=(x(i)) cy=(y(r)) r="3.5" { title { (label) } },
                        }
                    } @else {
                        circle class=(class) cx=(x(i)) cy=(y(0.5)) r="2.5" { title { (label) } }
                    }
                }
            }
        }
    }
}
