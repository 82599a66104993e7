//! `lockchaos matrix`: runs the chosen scenarios and measures the backend-by-failure table.
//! Writes `<store>/matrix.json` and `<store>/matrix.html` (linking every run's report), and with
//! `--junit` one test case per run. A scenario that cannot run here (a fault this kernel lacks)
//! is reported and left out of the table; the exit status then says so.

use crate::progress::Reporter;
use crate::run::RunOptions;
use crate::scenario_catalog;
use crate::scenario_command;
use anyhow::Context;
use reports::{matrix, Matrix, MatrixRun};
use results::RunResults;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub struct MatrixArgs {
    /// Comma-separated globs over scenario names.
    pub patterns: String,
    pub runs: u32,
    pub time_limit: Option<u64>,
    pub store: PathBuf,
    pub junit: Option<PathBuf>,
}

/// `*` any run of characters, `?` one character; the whole name must match.
pub fn glob_matches(pattern: &str, name: &str) -> bool {
    fn go(p: &[char], n: &[char]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some('*'), _) => go(&p[1..], n) || (!n.is_empty() && go(p, &n[1..])),
            (Some('?'), Some(_)) => go(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &n[1..]),
            _ => false,
        }
    }
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    go(&p, &n)
}

/// Exit status: 0 every cell matched in every run, 1 some did not, 2 a scenario could not run
/// or a run ended unknown.
pub async fn run(args: MatrixArgs, reporter: Arc<dyn Reporter>) -> anyhow::Result<u8> {
    let patterns: Vec<&str> = args.patterns.split(',').map(str::trim).filter(|p| !p.is_empty()).collect();
    let mut chosen = vec![];
    for entry in scenario_catalog::list(None)? {
        let loaded = entry?;
        if patterns.iter().any(|p| glob_matches(p, &loaded.name)) {
            chosen.push(loaded);
        }
    }
    if chosen.is_empty() {
        anyhow::bail!("no scenario matches `{}` (see `lockchaos list`)", args.patterns);
    }
    let opts = RunOptions { store: args.store.clone(), time_limit_secs: args.time_limit, seed: None, clients: None };
    let mut finished: Vec<(RunResults, String, String, PathBuf)> = vec![];
    let mut code = 0u8;
    for loaded in chosen {
        let (row, column) = (loaded.scenario.matrix_row(), loaded.scenario.matrix_column());
        println!("== {} ({row} × {column}), {} run(s)", loaded.name, args.runs);
        let series = match scenario_command::run_series(loaded.clone(), opts.clone(), reporter.clone(), args.runs).await {
            Ok(s) => s,
            Err(e) => {
                println!("{}: not run: {}", loaded.name, format!("{e:#}").replace('\n', " "));
                code = 2;
                continue;
            }
        };
        code = code.max(series.exit_code());
        for r in series.runs {
            finished.push((r.results, row.clone(), column.clone(), r.dir));
        }
    }
    let store = args.store.canonicalize().unwrap_or(args.store.clone());
    let runs: Vec<MatrixRun> = finished
        .iter()
        .map(|(results, row, column, dir)| MatrixRun {
            results,
            row: row.clone(),
            column: column.clone(),
            report: relative(&store, &dir.join("report.html")),
        })
        .collect();
    let m = Matrix::from_runs(&runs);
    let json = store.join("matrix.json");
    std::fs::write(&json, serde_json::to_vec_pretty(&m)?).with_context(|| format!("writing {}", json.display()))?;
    let html = store.join("matrix.html");
    std::fs::write(&html, matrix::render_html(&m, "lockchaos matrix")).with_context(|| format!("writing {}", html.display()))?;
    print_table(&m);
    println!(
        "matrix: {} — {}",
        html.display(),
        if m.all_match { "every cell matched its expectation" } else { "some cells did not match" }
    );
    if let Some(file) = &args.junit {
        let results: Vec<RunResults> = finished.iter().map(|(r, ..)| r.clone()).collect();
        scenario_command::write_junit(file, &results)?;
    }
    Ok(code)
}

fn relative(base: &Path, path: &Path) -> String {
    let path = path.canonicalize().unwrap_or(path.to_path_buf());
    path.strip_prefix(base).map(|p| p.display().to_string()).unwrap_or_else(|_| path.display().to_string())
}

/// The cells as plain lines, for a terminal or a CI log.
fn print_table(m: &Matrix) {
    for c in &m.cells {
        println!(
            "{:<40} {:<22} violation {}/{} (expect {}) lost {} rejected {} acquired {} {}",
            c.row,
            c.column,
            c.runs_with_violation,
            c.runs,
            c.expect.join("/"),
            c.lost_updates,
            c.stale_writes_rejected,
            c.acquire_success_rate.map(|r| format!("{:.0}%", r * 100.0)).unwrap_or_else(|| "-".into()),
            if c.matches_expectation { "matches" } else { "DOES NOT MATCH" }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::glob_matches;

    #[test]
    fn globs_match_whole_names() {
        let cases = [
            ("*", "redis-single-pause", true),
            ("redis-*", "redis-single-pause", true),
            ("redis-*", "redlock-pause", false),
            ("*-pause", "redlock-pause", true),
            ("*pause*", "etcd-pause-fenced", true),
            ("etcd-?aseline", "etcd-baseline", true),
            ("etcd", "etcd-baseline", false),
            ("", "x", false),
        ];
        for (p, n, want) in cases {
            assert_eq!(glob_matches(p, n), want, "{p} vs {n}");
        }
    }
}
