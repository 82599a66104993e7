//! `lockchaos matrix`: the chosen scenarios, each run as a series; the table itself is built
//! by the matrix reporter from the runs' events (`reporters::matrix`).

use crate::events::EventSink;
use crate::events::Reporter;
use crate::reporters::matrix::MatrixReport;
use crate::run::RunOptions;
use crate::run_store;
use crate::scenario::LoadedScenario;
use crate::scenario_catalog;
use crate::series;
use anyhow::Context;
use results::RunResults;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The scenarios whose names match any of the comma-separated globs (`redis-*,etcd-pause-*`),
/// in name order.
pub fn select(patterns: &str) -> anyhow::Result<Vec<LoadedScenario>> {
    let globs = glob_set(patterns)?;
    let mut chosen = vec![];
    for entry in scenario_catalog::list(None)? {
        let loaded = entry?;
        if globs.is_match(&loaded.name) {
            chosen.push(loaded);
        }
    }
    if chosen.is_empty() {
        anyhow::bail!("no scenario matches `{patterns}` (see `lockchaos list`)");
    }
    Ok(chosen)
}

/// Comma-separated globs over scenario names; `*` and `?` do not stop at any character.
fn glob_set(patterns: &str) -> anyhow::Result<globset::GlobSet> {
    let mut globs = globset::GlobSetBuilder::new();
    for p in patterns.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        globs.add(globset::Glob::new(p).with_context(|| format!("bad scenario pattern `{p}`"))?);
    }
    globs.build().context("scenario patterns")
}

/// `lockchaos matrix merge`: the matrix and the article's table of the runs already in `stores`
/// (shards of one matrix, or tallies made apart), written to `out`, each run's report linked
/// where it is. A folder without results.json (a run killed or still going) is left out and
/// named. Exit status as a matrix's: 0 every run matched, 1 some did not.
pub fn merge(stores: &[PathBuf], out: &Path) -> anyhow::Result<u8> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create the store {}", out.display()))?;
    let mut report = MatrixReport::new(out.to_path_buf());
    for store in stores {
        for dir in run_store::run_folders(store)? {
            let Ok(text) = std::fs::read_to_string(dir.join("results.json")) else {
                print_line!("left out {}: no results.json (the run was killed or is still going)", dir.display());
                continue;
            };
            let results: RunResults =
                serde_json::from_str(&text).with_context(|| format!("{}: not a results.json", dir.join("results.json").display()))?;
            let scenario = crate::scenario::load_file(&dir.join("scenario.toml")).map_err(|e| anyhow::anyhow!("{e}"))?;
            report.add(results, &scenario.scenario, dir);
        }
    }
    let all_match = report.all_match();
    report.finish()?;
    Ok(if all_match { 0 } else { 1 })
}

/// Runs every chosen scenario `runs` times, until Ctrl-C or SIGTERM. Exit status: 0 every run matched its expectation,
/// 1 some did not, 2 a run ended unknown or in an error (e.g. a fault this kernel lacks).
pub async fn run_matrix(chosen: Vec<LoadedScenario>, runs: u32, opts: &RunOptions, events: &EventSink) -> u8 {
    let mut code = 0;
    for loaded in chosen {
        let series = series::run_series(Arc::new(loaded), opts, runs, events).await;
        code = code.max(series.exit_code());
        // Ctrl-C or SIGTERM means the whole matrix, not only the scenario it landed in.
        if series.interrupted_by_signal {
            break;
        }
    }
    code
}

#[cfg(test)]
mod tests {
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
            ("redlock-*, etcd-baseline", "etcd-baseline", true),
            ("", "x", false),
        ];
        for (p, n, want) in cases {
            assert_eq!(super::glob_set(p).unwrap().is_match(n), want, "{p} vs {n}");
        }
        assert!(super::glob_set("redis-[").unwrap_err().to_string().contains("bad scenario pattern `redis-[`"));
    }
}
