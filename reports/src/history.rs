//! Many nights of one matrix as one page (history.json, history.html): per cell, the rate of
//! violations and its 95% interval night after night, the nights it changed, and each night's
//! runs linked.
//!
//! A cell's nights are cut into stretches by the change rule (change.rs): each night is compared
//! with the nights before it since the cell last changed, pooled; a night that moved beyond
//! chance starts a new stretch. The last night is "tonight": compared with its stretch, or with
//! a pooled baseline when one is given (`--baseline`), and a cell that moved tonight is what
//! makes `lockchaos history` exit non-zero.

mod chart;
mod html;

pub use html::render_html;

use crate::change::{Change, Comparison, ALPHA, FLIP_MIN_RUNS};
use crate::href::Href;
use crate::matrix::{Cell, Matrix};
use crate::rate::Rate;
use results::UnknownCause;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One night (or version) as read from its store.
#[derive(Clone)]
pub struct NightInput {
    pub label: String,
    /// When its first run started (RFC 3339).
    pub started_at: Option<String>,
    /// Its own matrix page, relative to history.html.
    pub matrix_page: Option<Href>,
    /// Its runs as a matrix, every report linked relative to history.html.
    pub matrix: Matrix,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct History {
    pub nights: Vec<Night>,
    pub cells: Vec<CellHistory>,
    /// What tonight was compared with: the stores pooled as a baseline, or None (each cell's
    /// nights since its last change).
    pub baseline: Option<Vec<String>>,
    /// The change rule's numbers, stated on the page.
    pub alpha: f64,
    pub flip_min_runs: u32,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Night {
    pub label: String,
    pub started_at: Option<String>,
    pub matrix_page: Option<Href>,
    pub runs: u32,
    /// Its unknown runs by cause, over every cell.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: BTreeMap<UnknownCause, u32>,
}

/// One cell of the matrix across the nights.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct CellHistory {
    pub row: String,
    pub column: String,
    /// One per night, None where that night did not run the cell.
    pub nights: Vec<Option<NightCell>>,
    /// The nights (indices) at which the cell changed beyond chance.
    pub changed_at: Vec<usize>,
    pub state: CellState,
    /// The last night against its stretch or the baseline (None when the last night did not run it).
    pub tonight: Option<Comparison>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct NightCell {
    pub rate: Rate,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: BTreeMap<UnknownCause, u32>,
    /// Every run matched its scenario's expectation.
    pub matched: bool,
    pub reports: Vec<Href>,
    /// This night against the nights before it since the cell last changed (None for its first).
    pub against_before: Option<Comparison>,
}

/// How a cell reads across the nights.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, strum::Display, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum CellState {
    /// Every night within chance of the ones before it.
    Steady,
    /// It moved beyond chance on some night (`changed_at`).
    Changed,
    /// Fewer than two nights with a verdict: nothing to compare.
    Unmeasured,
}

impl CellState {
    pub fn name(self) -> &'static str {
        self.into()
    }
}

impl History {
    pub fn build(inputs: &[NightInput], baseline: Option<(Vec<String>, &Matrix)>) -> History {
        let keys: BTreeSet<(String, String)> =
            inputs.iter().flat_map(|n| n.matrix.cells.iter().map(|c| (c.row.clone(), c.column.clone()))).collect();
        let cells = keys
            .into_iter()
            .map(|(row, column)| {
                let cells: Vec<Option<&Cell>> = inputs.iter().map(|n| n.matrix.cell(&row, &column)).collect();
                let base = baseline.as_ref().map(|(_, m)| m.cell(&row, &column).map(|c| c.tally.violation_rate).unwrap_or_default());
                cell_history(row, column, &cells, base)
            })
            .collect();
        let nights = inputs
            .iter()
            .map(|n| Night {
                label: n.label.clone(),
                started_at: n.started_at.clone(),
                matrix_page: n.matrix_page.clone(),
                runs: n.matrix.cells.iter().map(|c| c.tally.runs).sum(),
                unknown: n.matrix.cells.iter().flat_map(|c| c.tally.unknown.iter()).fold(BTreeMap::new(), |mut by, (cause, k)| {
                    *by.entry(*cause).or_default() += k;
                    by
                }),
            })
            .collect();
        History { nights, cells, baseline: baseline.map(|(labels, _)| labels), alpha: ALPHA, flip_min_runs: FLIP_MIN_RUNS }
    }

    /// The cells that moved beyond chance tonight.
    pub fn moved_tonight(&self) -> Vec<&CellHistory> {
        self.cells.iter().filter(|c| c.tonight.as_ref().is_some_and(|t| t.change.moved())).collect()
    }
}

fn cell_history(row: String, column: String, cells: &[Option<&Cell>], baseline: Option<Rate>) -> CellHistory {
    let mut nights: Vec<Option<NightCell>> = vec![];
    let mut changed_at = vec![];
    // The pooled tally of the current stretch: the nights since the last change.
    let mut stretch: Option<(u32, u32)> = None;
    for (i, cell) in cells.iter().enumerate() {
        let Some(c) = cell else {
            nights.push(None);
            continue;
        };
        let rate = c.tally.violation_rate;
        let against_before = stretch.map(|(k, n)| Comparison::of(Rate::of(k, n), rate));
        let moved = against_before.as_ref().is_some_and(|a| a.change.moved());
        if moved {
            changed_at.push(i);
        }
        stretch = match (stretch, moved || rate.runs == 0) {
            (Some((k, n)), false) => Some((k + rate.violations, n + rate.runs)),
            // A night with no verdict adds nothing to its stretch.
            (Some(s), true) if rate.runs == 0 => Some(s),
            _ if rate.runs == 0 => None,
            _ => Some((rate.violations, rate.runs)),
        };
        nights.push(Some(NightCell {
            rate,
            unknown: c.tally.unknown.clone(),
            matched: c.tally.all_matched(),
            reports: c.tally.reports.clone(),
            against_before,
        }));
    }
    let last = nights.last().and_then(Option::as_ref);
    let tonight = match (last, baseline) {
        (Some(t), Some(base)) => Some(Comparison::of(base, t.rate)),
        (Some(t), None) => t.against_before.clone(),
        (None, _) => None,
    };
    let with_verdict = nights.iter().flatten().filter(|n| n.rate.runs > 0).count();
    let state = if !changed_at.is_empty() || tonight.as_ref().is_some_and(|t| t.change.moved()) {
        CellState::Changed
    } else if with_verdict < 2 && !tonight.as_ref().is_some_and(|t| t.change != Change::Unmeasured) {
        CellState::Unmeasured
    } else {
        CellState::Steady
    };
    CellHistory { row, column, nights, changed_at, state, tonight }
}
