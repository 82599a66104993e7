//! `lockchaos matrix`: runs the chosen scenarios and measures the backend-by-failure table
//! (`STORE/matrix.json`, `STORE/matrix.html`), with `--junit` one test case per run, and with
//! `--baseline` compares it with other stores' runs (`harness::baseline`, exit 4 on a move).

use anyhow::Context;
use harness::baseline::Baseline;
use harness::events::EventSink;
use harness::reporters::{self, junit::Junit, matrix::MatrixReport};
use harness::run::RunOptions;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    merge: Option<Merge>,
    /// Scenario names to run, as globs (`redis-*`), comma-separated (default: all).
    #[arg(long, default_value = "*")]
    scenarios: String,
    /// Runs of each scenario.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// Seconds of workload per run (overrides each scenario's time_limit_secs).
    #[arg(long)]
    time_limit: Option<u64>,
    /// Where run folders and the matrix go.
    #[arg(long, default_value = "store")]
    store: PathBuf,
    /// Also write JUnit XML here: one test case per run.
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Only the per-run lines and the table.
    #[arg(long)]
    quiet: bool,
    /// Run only shard K of N (`--shard 2/4`): the (scenario, run) pairs dealt round N shards,
    /// so N machines together run the whole matrix; `lockchaos matrix merge` joins their stores.
    #[arg(long, value_name = "K/N")]
    shard: Option<harness::matrix::Shard>,
    /// Runs at once on this machine (each run is isolated by its labels and network). With more
    /// than one, progress is one line per finished run. Timing-sensitive scenarios may match
    /// less often on a loaded machine: see the README.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    jobs: u32,
    /// Run the backends' servers on the hosts this file names, over SSH (README: "Your own
    /// hosts"); the scenarios the hosts cannot run are left out and named. One run at a time:
    /// a run claims every host.
    #[arg(long, conflicts_with = "shard")]
    nodes_file: Option<PathBuf>,
    /// Each chosen scenario once per version of its client's library, as rows of their own
    /// (`--client-env redis==4.3.4,redis==8.2.0`): the pin from PyPI in the client program's
    /// environment, in place of any other pin of that project. Each row is named by its pin
    /// (`redis-py-lock-pause.redis-8.2.0`).
    #[arg(long, value_name = "PROJECT==VERSION,...")]
    client_env: Option<String>,
    /// Compare this matrix with these stores' runs, pooled (a release's, the nights before),
    /// cell by cell: exit 4 when a cell's rate of violations moved beyond chance (Fisher's
    /// exact test, p < 0.01, or a violation in a cell safe in 10 baseline runs); the cells are
    /// named and STORE/baseline.json holds every comparison. Repeatable.
    #[arg(long, value_name = "STORE")]
    baseline: Vec<PathBuf>,
    #[command(flatten)]
    warm: super::warm::WarmArgs,
}

#[derive(clap::Subcommand)]
enum Merge {
    /// Lay the runs already in these stores (shards, tallies) out as one matrix and one table:
    /// matrix.json, matrix.html, table.json, table.html in --store. Nothing is run.
    Merge {
        /// Stores to read (each STORE/<scenario>/<run>/ with results.json and scenario.toml).
        #[arg(required = true)]
        stores: Vec<PathBuf>,
        /// Where the merged matrix goes.
        #[arg(long, default_value = "store")]
        store: PathBuf,
        /// As `matrix --baseline`: the merged matrix against these stores' runs; exit 4 when a
        /// cell moved beyond chance. Repeatable.
        #[arg(long, value_name = "STORE")]
        baseline: Vec<PathBuf>,
    },
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(Merge::Merge { stores, store, baseline }) = args.merge {
        let baseline = read_baseline(&baseline)?;
        let code = harness::matrix::merge(&stores, &store)?;
        return Ok(ExitCode::from(against_baseline(code, &store, baseline.as_ref())?));
    }
    // A baseline that cannot be read fails before any run.
    let baseline = read_baseline(&args.baseline)?;
    let mut chosen = harness::matrix::select(&args.scenarios)?;
    if let Some(list) = &args.client_env {
        let pins = harness::scenario::versions::parse_list(list)?;
        let variants = chosen.iter().flat_map(|s| pins.iter().map(move |pin| harness::scenario::versions::apply(s, pin, None)));
        chosen = variants.collect::<anyhow::Result<_>>()?;
    }
    let nodes = match &args.nodes_file {
        Some(path) => {
            if args.jobs > 1 {
                anyhow::bail!("--nodes-file runs one run at a time (a run claims every host): drop --jobs {}", args.jobs);
            }
            let file = harness::hosts::NodesFile::load(path)?;
            let (fit, left): (Vec<_>, Vec<_>) = chosen.into_iter().partition(|s| harness::preflight::check_hosts(s, &file).is_ok());
            if !left.is_empty() {
                let names: Vec<&str> = left.iter().map(|s| s.name.as_str()).collect();
                harness::print_line!("left out {} scenario(s) the hosts cannot run: {}", names.len(), names.join(", "));
            }
            if fit.is_empty() {
                anyhow::bail!("none of the chosen scenarios can run on the hosts of {}", path.display());
            }
            chosen = fit;
            Some(std::sync::Arc::new(file))
        }
        None => None,
    };
    let shard = args.shard.unwrap_or(harness::matrix::Shard::WHOLE);
    let held: u32 = shard.runs_of(chosen.len(), args.runs).iter().sum();
    if held == 0 {
        harness::print_line!(
            "nothing ran: shard {}/{} holds none of the {} run(s) of the chosen scenarios",
            shard.index,
            shard.total,
            chosen.len() as u64 * u64::from(args.runs)
        );
        return Ok(ExitCode::from(harness::matrix::NOTHING_RAN));
    }
    // Every run needs Docker: say so once, before any run or file.
    harness::containers::docker_api::connect().await?;
    std::fs::create_dir_all(&args.store).with_context(|| format!("cannot create the store {}", args.store.display()))?;
    // Stages and bars of runs side by side would interleave: one line per finished run instead.
    let mut reporters = reporters::standard(args.quiet || args.jobs > 1);
    reporters.push(Box::new(MatrixReport::new(args.store.clone())));
    if let Some(file) = args.junit {
        reporters.push(Box::new(Junit::new(file)));
    }
    let events = EventSink::new(reporters);
    let pools = args.warm.pools(u64::from(held), args.jobs as usize);
    let opts = RunOptions {
        store: args.store,
        time_limit_secs: args.time_limit,
        seed: None,
        clients: None,
        exe: None,
        nodes,
        pools: pools.clone(),
    };
    let code = harness::matrix::run_matrix(chosen, args.runs, shard, args.jobs as usize, &opts, &events).await;
    super::warm::close(pools).await;
    events.finish()?;
    Ok(ExitCode::from(against_baseline(code, &opts.store, baseline.as_ref())?))
}

fn read_baseline(stores: &[PathBuf]) -> anyhow::Result<Option<Baseline>> {
    Ok(if stores.is_empty() { None } else { Some(Baseline::read(stores)?) })
}

/// The matrix's exit status, or [`harness::baseline::MOVED`] when a cell moved against the
/// baseline (nothing is compared when nothing ran).
fn against_baseline(code: u8, store: &std::path::Path, baseline: Option<&Baseline>) -> anyhow::Result<u8> {
    match baseline {
        Some(b) if code != harness::matrix::NOTHING_RAN => {
            let moved = harness::baseline::judge(store, b, &harness::baseline::written_matrix(store)?)?;
            Ok(if moved != 0 { moved } else { code })
        }
        _ => Ok(code),
    }
}
