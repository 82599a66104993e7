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
            // A scenario with `[[client.versions]]` is a row per version.
            chosen.extend(crate::scenario::versions::expand(loaded)?);
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

/// The exit status of a matrix that ran nothing (a shard that holds no run) or a merge that
/// found nothing to merge: no verdict, neither a match (0) nor a mismatch (1) nor an unknown
/// run or error (2).
pub const NOTHING_RAN: u8 = 3;

/// `lockchaos matrix merge`: the matrix and the article's table of the runs already in `stores`
/// (shards of one matrix, or tallies made apart), written to `out`, each run's report linked
/// where it is. A folder that cannot be read as a finished run (no results.json, or one cut
/// short or unreadable, no scenario.toml that loads) is left out and named. A run is counted
/// once however often the stores reach it: runs are told apart by their folder's canonical
/// path. Exit status as a matrix's (0 every run matched, 1 some did not, 2 one ended unknown),
/// or [`NOTHING_RAN`] when no run is left to merge, and then nothing is written.
pub fn merge(stores: &[PathBuf], out: &Path) -> anyhow::Result<u8> {
    let mut report = MatrixReport::new(out.to_path_buf());
    read_stores(stores, &mut report)?;
    if report.runs() == 0 {
        let names: Vec<String> = stores.iter().map(|s| s.display().to_string()).collect();
        print_line!("nothing to merge: no finished run in {}", names.join(", "));
        return Ok(NOTHING_RAN);
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create the store {}", out.display()))?;
    let code = report.exit_code();
    report.finish()?;
    Ok(code)
}

/// Adds every finished run of `stores` to `report`, each once however often the stores reach
/// it (runs are told apart by their folder's canonical path); a folder that cannot be read as a
/// finished run is left out and named.
pub fn read_stores(stores: &[PathBuf], report: &mut MatrixReport) -> anyhow::Result<()> {
    for (dir, canonical) in run_store::run_folders_once(stores)? {
        match finished_run(&dir) {
            Ok((results, scenario)) => report.add(results, &scenario, canonical),
            Err(why) => print_line!("left out {}: {why}", dir.display()),
        }
    }
    Ok(())
}

/// A run folder's results and scenario, or why it cannot be merged (one line).
fn finished_run(dir: &Path) -> Result<(RunResults, crate::scenario::Scenario), String> {
    // Read within its limit: a results.json from elsewhere may be a link to a device or huge.
    let results = match RunResults::read(&dir.join("results.json")) {
        Ok(results) => results,
        Err(e) if e.is_missing() => return Err("no results.json (the run was killed or is still going)".into()),
        Err(e) => return Err(format!("results.json is cut short, too big or not a results.json: {e}")),
    };
    let scenario = crate::scenario::load_file(&dir.join("scenario.toml")).map_err(|e| e.to_string())?;
    Ok((results, scenario.scenario))
}

/// One of N shards of a matrix (`--shard K/N`, K from 1): like nextest's `--partition
/// count:K/N`, the (scenario, run) pairs in order, scenario by scenario, are dealt round the
/// shards, so each shard holds about 1/N of every scenario's runs and the shards together
/// hold each pair once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub total: u32,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || format!("`{text}` is not a shard K/N with 1 <= K <= N (e.g. 2/4)");
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, total): (u32, u32) = (k.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if index == 0 || index > total {
            return Err(bad());
        }
        Ok(Shard { index, total })
    }
}

impl Shard {
    pub const WHOLE: Shard = Shard { index: 1, total: 1 };

    /// How many of the runs of each scenario (`runs` each, in the given order) are this shard's.
    pub fn runs_of(self, scenarios: usize, runs: u32) -> Vec<u32> {
        let mut mine = vec![0; scenarios];
        for pair in 0..scenarios as u64 * u64::from(runs) {
            if pair % u64::from(self.total) == u64::from(self.index - 1) {
                mine[(pair / u64::from(runs)) as usize] += 1;
            }
        }
        mine
    }
}

/// Runs this shard's runs of the chosen scenarios, `jobs` at a time, until Ctrl-C or SIGTERM.
/// Exit status: 0 every run matched its expectation, 1 some did not, 2 a run ended unknown or
/// in an error (e.g. a fault this kernel lacks). A shard that holds no run is the caller's to
/// refuse ([`NOTHING_RAN`]).
pub async fn run_matrix(chosen: Vec<LoadedScenario>, runs: u32, shard: Shard, jobs: usize, opts: &RunOptions, events: &EventSink) -> u8 {
    let counts = shard.runs_of(chosen.len(), runs);
    if jobs > 1 {
        return run_side_by_side(chosen, counts, jobs, opts, events).await;
    }
    let mut code = 0;
    for (loaded, count) in chosen.into_iter().zip(counts) {
        if count == 0 {
            continue;
        }
        let series = series::run_series(Arc::new(loaded), opts, count, events).await;
        code = code.max(series.exit_code());
        // Ctrl-C or SIGTERM means the whole matrix, not only the scenario it landed in.
        if series.interrupted_by_signal {
            break;
        }
    }
    code
}

/// `jobs` runs at once, each a series of one (runs are isolated by their labels, networks and
/// folders). A run that errs does not stop its scenario's other runs; Ctrl-C or SIGTERM stops
/// every run going (each hears the signal) and starts no more.
async fn run_side_by_side(chosen: Vec<LoadedScenario>, counts: Vec<u32>, jobs: usize, opts: &RunOptions, events: &EventSink) -> u8 {
    use futures_util::stream::StreamExt;
    use std::sync::atomic::{AtomicBool, Ordering};
    let stopped = AtomicBool::new(false);
    let runs: Vec<Arc<LoadedScenario>> =
        chosen.into_iter().zip(counts).flat_map(|(loaded, count)| std::iter::repeat_n(Arc::new(loaded), count as usize)).collect();
    let stopped = &stopped;
    futures_util::stream::iter(runs)
        .map(|loaded| async move {
            if stopped.load(Ordering::SeqCst) {
                return 0;
            }
            let series = series::run_series(loaded, opts, 1, events).await;
            if series.interrupted_by_signal {
                stopped.store(true, Ordering::SeqCst);
            }
            series.exit_code()
        })
        .buffer_unordered(jobs)
        .fold(0, |code, run| async move { code.max(run) })
        .await
}

#[cfg(test)]
mod tests {
    use super::Shard;

    #[test]
    fn shards_deal_every_run_once_and_evenly() {
        let (scenarios, runs) = (7, 10);
        let shards: Vec<Vec<u32>> = (1..=3).map(|k| Shard { index: k, total: 3 }.runs_of(scenarios, runs)).collect();
        for s in 0..scenarios {
            assert_eq!(shards.iter().map(|c| c[s]).sum::<u32>(), runs, "scenario {s}");
        }
        let totals: Vec<u32> = shards.iter().map(|c| c.iter().sum()).collect();
        assert_eq!(totals, [24, 23, 23]);
        assert_eq!(Shard::WHOLE.runs_of(2, 3), [3, 3]);
        // More shards than pairs: the last ones run nothing.
        assert_eq!(Shard { index: 4, total: 4 }.runs_of(1, 2), [0]);
    }

    #[test]
    fn merge_leaves_out_a_results_json_that_is_a_link_to_dev_zero_naming_why() {
        let store = tempfile::tempdir().unwrap();
        let run = crate::run_store::RunDir::create(store.path(), &"demo".parse().unwrap()).unwrap();
        std::os::unix::fs::symlink("/dev/zero", run.file("results.json")).unwrap();
        let why = super::finished_run(&run.path).unwrap_err();
        assert!(why.contains("a character device, not a regular file"), "{why}");
        let out = tempfile::tempdir().unwrap();
        assert_eq!(super::merge(&[store.path().to_path_buf()], out.path()).unwrap(), super::NOTHING_RAN);
    }

    #[test]
    fn a_shard_is_k_of_n() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, total: 4 }));
        for bad in ["0/4", "5/4", "2", "a/b", "1/0", ""] {
            let e = bad.parse::<Shard>().unwrap_err();
            assert!(e.contains("is not a shard K/N"), "{bad}: {e}");
        }
    }

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
