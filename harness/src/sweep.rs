//! A sweep (`lockchaos sweep SCENARIO… --clients 1,2,4,8,16`): each scenario run once per client
//! count, each run an ordinary run in the store, then measured together (reports/src/sweep.rs)
//! into `STORE/sweeps/<UTC start>/sweep.json` and `sweep.html`. The price of a lock: with one
//! holder at a time, the writes per key cannot pass 1000 / work_ms however many clients wait.

use crate::events::EventSink;
use crate::reporters::matrix::row;
use crate::run::RunOptions;
use crate::scenario::LoadedScenario;
use crate::series;
use anyhow::Context;
use reports::sweep::{self, Sweep, SweepLine};
use results::Outcome;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub struct SweepOptions {
    pub store: PathBuf,
    pub clients: Vec<u32>,
    pub time_limit_secs: Option<u64>,
    /// Warm pools for the sweep's runs (node_source/warm_pool.rs); None: fresh containers.
    pub pools: Option<std::sync::Arc<crate::node_source::warm_pool::WarmPools>>,
}

/// How a sweep ended: what it measured, where it wrote it, and its exit status (0: every run
/// matched its expectation and no lock passed its ceiling; 1: one did not or one did; 2: a run
/// ended unknown or in an error, or the sweep was interrupted).
pub struct SweepOutcome {
    pub sweep: Sweep,
    pub dir: PathBuf,
    pub exit_code: u8,
}

/// The lock's ceiling per key: 1000 / the shortest work time. None without a lock (or with no
/// work, where the ceiling is the servers' speed, not the lock's).
pub fn ceiling_per_sec(s: &LoadedScenario) -> Option<f64> {
    let w = &s.scenario.workload;
    (w.kind.takes_lock() && w.work_ms.min > 0).then(|| 1000.0 / w.work_ms.min as f64)
}

pub async fn run_sweep(scenarios: Vec<LoadedScenario>, opts: &SweepOptions, events: &EventSink) -> anyhow::Result<SweepOutcome> {
    let store = std::fs::canonicalize(&opts.store).with_context(|| format!("cannot resolve the store {}", opts.store.display()))?;
    let dir = new_folder(&store.join("sweeps"))?;
    let mut sweep = Sweep { clients: opts.clients.clone(), lines: Vec::new() };
    let mut exit_code = 0;
    'scenarios: for loaded in scenarios {
        let ceiling = ceiling_per_sec(&loaded);
        let mut line = SweepLine::new(loaded.name.to_string(), row(&loaded.scenario), ceiling);
        let loaded = Arc::new(loaded);
        for &clients in &opts.clients {
            let run_opts = RunOptions {
                store: store.clone(),
                time_limit_secs: opts.time_limit_secs,
                seed: None,
                clients: Some(clients),
                exe: None,
                nodes: None,
                pools: opts.pools.clone(),
            };
            let series = series::run_series(loaded.clone(), &run_opts, 1, events).await;
            let (Some(results), Some(run_dir)) = (series.runs.first(), series.dirs.first()) else {
                exit_code = 2;
                sweep.lines.push(line);
                break 'scenarios;
            };
            // A run whose history cannot be read is a point not measured: the sweep stops there
            // and keeps what it measured.
            let history = match checker::read_history_file(&run_dir.join("history.jsonl")) {
                Ok(h) => h,
                Err(e) => {
                    print_line!("sweep: {} with {clients} clients not measured: {e}", line.scenario);
                    exit_code = 2;
                    sweep.lines.push(line);
                    break 'scenarios;
                }
            };
            let point = sweep::point(results, &history.events, crate::paths::link(&dir, &run_dir.join("report.html"))?, ceiling);
            exit_code = exit_code.max(match (results.outcome, results.matches_expectation && point.above_ceiling != Some(true)) {
                (Outcome::Unknown, _) => 2,
                (_, true) => 0,
                (_, false) => 1,
            });
            line.push(point);
            if series.error.is_some() || series.interrupted_by_signal {
                exit_code = 2;
                sweep.lines.push(line);
                break 'scenarios;
            }
        }
        sweep.lines.push(line);
    }
    std::fs::write(dir.join("sweep.json"), serde_json::to_vec_pretty(&sweep)?).with_context(|| format!("writing {}", dir.display()))?;
    write_html(&dir, &sweep)?;
    Ok(SweepOutcome { sweep, dir, exit_code })
}

fn write_html(dir: &Path, sweep: &Sweep) -> anyhow::Result<()> {
    std::fs::write(dir.join("sweep.html"), sweep::render_html(sweep, "lockchaos sweep: the price of a lock"))
        .with_context(|| format!("writing {}", dir.join("sweep.html").display()))
}

/// The largest sweep.json read: ours are a few KiB (a point per scenario and client count).
const SWEEP_JSON_LIMIT: checker::bounded_read::SizeLimit = checker::bounded_read::SizeLimit::new(16 << 20, "a sweep.json");

/// sweep.html drawn again from the folder's sweep.json.
pub fn render_again(dir: &Path) -> anyhow::Result<()> {
    let file = dir.join("sweep.json");
    let bytes = checker::bounded_read::read(&file, SWEEP_JSON_LIMIT)?;
    let sweep: Sweep = serde_json::from_slice(&bytes).with_context(|| format!("{}: not a sweep", file.display()))?;
    write_html(dir, &sweep)
}

/// `sweeps/<UTC start>/`, or `-2`, `-3`, … when a sweep started in the same second.
fn new_folder(sweeps: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(sweeps).with_context(|| format!("cannot create {}", sweeps.display()))?;
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    for n in 1..=1000 {
        let dir = sweeps.join(if n == 1 { stamp.clone() } else { format!("{stamp}-{n}") });
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", dir.display())),
        }
    }
    anyhow::bail!("1000 sweeps started in one second in {}", sweeps.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ceiling_is_a_lock_workload_s_shortest_work() {
        let load = |text: &str| crate::scenario::load_text(text.to_string(), Path::new("s.toml")).expect("scenario");
        let lock = load("description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\n[workload]\nwork_ms = [200, 400]\n");
        assert_eq!(ceiling_per_sec(&lock), Some(5.0));
        let cas = load("description = \"d\"\nexpect = \"safe\"\nbackend = \"postgres-xact\"\n[workload]\nkind = \"conditional-write\"\nwork_ms = 200\n");
        assert_eq!(ceiling_per_sec(&cas), None);
    }
}
