//! `lockchaos history STORE...`: many stores, each a night or a version, oldest first, laid out
//! as one page (`DIR/history.html`, `DIR/history.json`, `reports::history`): per cell the rate
//! night after night with its interval, the nights it changed, each night's runs linked. The
//! last store is tonight; a cell that moved tonight (against its nights since it last changed,
//! or against `--baseline`) makes the command exit [`baseline::MOVED`].

use crate::baseline::{self, Baseline};
use crate::matrix;
use crate::reporters::matrix::MatrixReport;
use anyhow::Context;
use reports::history::{History, NightInput};
use std::path::{Path, PathBuf};

pub fn write_history(stores: &[PathBuf], baseline: Option<&Baseline>, out: &Path) -> anyhow::Result<u8> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create the store {}", out.display()))?;
    let from = out.canonicalize().with_context(|| format!("cannot resolve {}", out.display()))?;
    let labels = labels(stores);
    let mut nights = vec![];
    for (store, label) in stores.iter().zip(labels) {
        let mut report = MatrixReport::new(store.clone());
        matrix::read_stores(std::slice::from_ref(store), &mut report)?;
        if report.runs() == 0 {
            print_line!("{}: no finished run (an empty night)", store.display());
        }
        let page = store.join("matrix.html");
        let matrix_page = if page.is_file() { Some(crate::paths::link(&from, &page)?) } else { None };
        nights.push(NightInput { label, started_at: report.first_started(), matrix_page, matrix: report.matrix(&from)? });
    }
    if nights.iter().all(|n| n.matrix.cells.is_empty()) {
        print_line!(
            "nothing to lay out: no finished run in {}",
            stores.iter().map(|s| s.display().to_string()).collect::<Vec<_>>().join(", ")
        );
        return Ok(matrix::NOTHING_RAN);
    }
    let history = History::build(&nights, baseline.map(|b| (b.labels(), &b.matrix)));
    let json = out.join("history.json");
    std::fs::write(&json, serde_json::to_vec_pretty(&history)?).with_context(|| format!("writing {}", json.display()))?;
    let html = out.join("history.html");
    std::fs::write(&html, reports::history::render_html(&history, "lockchaos: the nights, cell by cell"))
        .with_context(|| format!("writing {}", html.display()))?;
    for c in &history.cells {
        for &i in &c.changed_at {
            if let Some(Some(n)) = c.nights.get(i) {
                let why = n.against_before.as_ref().map_or("", |a| a.why.as_str());
                print_line!("changed: {} × {} on {}: {why}", c.row, c.column, history.nights[i].label);
            }
        }
    }
    let moved = history.moved_tonight();
    for c in &moved {
        if let (Some(t), Some(_)) = (&c.tonight, baseline) {
            print_line!("moved against the baseline: {} × {}: {}", c.row, c.column, t.why);
        }
    }
    let count = |s| history.cells.iter().filter(|c| c.state == s).count();
    use reports::history::CellState;
    print_line!(
        "history: {} — {} nights, {} cells: {} changed, {} steady; tonight {} moved beyond chance",
        html.display(),
        history.nights.len(),
        history.cells.len(),
        count(CellState::Changed),
        count(CellState::Steady),
        moved.len()
    );
    Ok(if moved.is_empty() { 0 } else { baseline::MOVED })
}

/// Each store's name as its night's label: its folder's name, or the path as given when two
/// stores share a name.
fn labels(stores: &[PathBuf]) -> Vec<String> {
    let names: Vec<String> =
        stores.iter().map(|s| s.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| s.display().to_string())).collect();
    let unique = names.iter().collect::<std::collections::HashSet<_>>().len() == names.len();
    if unique {
        names
    } else {
        stores.iter().map(|s| s.display().to_string()).collect()
    }
}
