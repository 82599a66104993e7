//! `--baseline STORE...`: tonight's matrix against the runs of other stores, pooled (last
//! release's, or the last nights'), cell by cell, by the change rule of `reports::change`
//! (Fisher's exact test at 1%, and a violation in a cell safe in 10 runs). Moved cells are named
//! on stdout and in `STORE/baseline.json`, and make the command exit [`MOVED`].

use crate::matrix;
use crate::reporters::matrix::MatrixReport;
use anyhow::Context;
use reports::change::{Change, Comparison, ALPHA, FLIP_MIN_RUNS};
use reports::Matrix;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The exit status of a command whose tonight moved beyond chance against its baseline. It
/// outweighs a mismatch (1) and an unknown run (2): it is what a nightly acts on.
pub const MOVED: u8 = 4;

/// The runs of the baseline stores, pooled as one matrix.
pub struct Baseline {
    pub stores: Vec<PathBuf>,
    pub matrix: Matrix,
}

impl Baseline {
    /// Reads every finished run of `stores`; a baseline without one is an error (it could not
    /// show any change).
    pub fn read(stores: &[PathBuf]) -> anyhow::Result<Baseline> {
        let mut report = MatrixReport::new(PathBuf::new());
        matrix::read_stores(stores, &mut report)?;
        if report.runs() == 0 {
            anyhow::bail!("the baseline ({}) holds no finished run", Self::names(stores).join(", "));
        }
        Ok(Baseline { stores: stores.to_vec(), matrix: report.matrix(Path::new("."))? })
    }

    pub fn labels(&self) -> Vec<String> {
        Self::names(&self.stores)
    }

    fn names(stores: &[PathBuf]) -> Vec<String> {
        stores.iter().map(|s| s.display().to_string()).collect()
    }
}

/// A cell of tonight's matrix (or of the baseline's only) compared.
#[derive(Serialize, Debug)]
pub struct CellChange {
    pub row: String,
    pub column: String,
    #[serde(flatten)]
    pub comparison: Comparison,
}

/// Every cell of either matrix, tonight's against the baseline's, in row and column order.
pub fn compare(baseline: &Matrix, tonight: &Matrix) -> Vec<CellChange> {
    let keys: std::collections::BTreeSet<(&str, &str)> =
        baseline.cells.iter().chain(&tonight.cells).map(|c| (c.row.as_str(), c.column.as_str())).collect();
    let rate = |m: &Matrix, row: &str, column: &str| m.cell(row, column).map(|c| c.tally.violation_rate).unwrap_or_default();
    keys.into_iter()
        .map(|(row, column)| CellChange {
            row: row.into(),
            column: column.into(),
            comparison: Comparison::of(rate(baseline, row, column), rate(tonight, row, column)),
        })
        .collect()
}

#[derive(Serialize)]
struct BaselineFile<'a> {
    baseline: Vec<String>,
    alpha: f64,
    flip_min_runs: u32,
    cells: &'a [CellChange],
}

/// Compares `tonight` with the baseline, names each moved cell, writes `store/baseline.json`,
/// and returns [`MOVED`] when a cell moved, else 0.
pub fn judge(store: &Path, baseline: &Baseline, tonight: &Matrix) -> anyhow::Result<u8> {
    let cells = compare(&baseline.matrix, tonight);
    let file = store.join("baseline.json");
    let json = BaselineFile { baseline: baseline.labels(), alpha: ALPHA, flip_min_runs: FLIP_MIN_RUNS, cells: &cells };
    std::fs::write(&file, serde_json::to_vec_pretty(&json)?).with_context(|| format!("writing {}", file.display()))?;
    let moved: Vec<&CellChange> = cells.iter().filter(|c| c.comparison.change.moved()).collect();
    for c in &moved {
        let way = if c.comparison.change == Change::Rose { "ROSE" } else { "FELL" };
        print_line!("{way}: {} × {}: {}", c.row, c.column, c.comparison.why);
    }
    let unmeasured = cells.iter().filter(|c| c.comparison.change == Change::Unmeasured).count();
    print_line!(
        "against the baseline ({}): {} of {} cells moved beyond chance, {unmeasured} not compared — {}",
        baseline.labels().join(", "),
        moved.len(),
        cells.len(),
        file.display()
    );
    Ok(if moved.is_empty() { 0 } else { MOVED })
}

/// Tonight's matrix as its command wrote it (`store/matrix.json`).
pub fn written_matrix(store: &Path) -> anyhow::Result<Matrix> {
    let file = store.join("matrix.json");
    let bytes = checker::bounded_read::read(&file, MATRIX_JSON_LIMIT)?;
    serde_json::from_slice(&bytes).with_context(|| format!("{}: not a matrix.json", file.display()))
}

/// matrix.json holds a cell per row and column with its reports' links: megabytes at most.
const MATRIX_JSON_LIMIT: checker::bounded_read::SizeLimit = checker::bounded_read::SizeLimit::new(256 << 20, "a matrix.json");
