//! `lockchaos scenario NAME [--test-count N]`: one or more runs of a scenario; of each of its
//! versions in turn when it lists `[[client.versions]]`.

use harness::events::EventSink;
use harness::hosts::NodesFile;
use harness::reporters::{self, junit::Junit};
use harness::run::RunOptions;
use harness::{scenario_catalog, series};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(clap::Args)]
pub struct Args {
    /// A scenario name (see `lockchaos list`) or a path to a TOML file.
    name: String,
    /// Seconds of workload (overrides the scenario's time_limit_secs).
    #[arg(long)]
    time_limit: Option<u64>,
    /// Seed for random schedules (overrides the scenario's; otherwise one is drawn and recorded).
    #[arg(long)]
    seed: Option<u64>,
    /// Where run folders go.
    #[arg(long, default_value = "store")]
    store: PathBuf,
    /// Number of lock clients (overrides the scenario's).
    #[arg(long)]
    clients: Option<u32>,
    /// Only the final verdict line (and warnings).
    #[arg(long)]
    quiet: bool,
    /// Run the scenario this many times and print a tally (exit 0 only if every run matched).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    test_count: u32,
    /// Also write JUnit XML here: one test case per run.
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Run the backend's servers on the hosts this file names, over SSH, instead of in node
    /// containers (README: "Your own hosts").
    #[arg(long)]
    nodes_file: Option<PathBuf>,
    #[command(flatten)]
    warm: super::warm::WarmArgs,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let loaded = scenario_catalog::resolve(&args.name)?;
    let nodes = match &args.nodes_file {
        Some(path) => Some(Arc::new(NodesFile::load(path)?)),
        None => None,
    };
    let variants = harness::scenario::versions::expand(loaded)?;
    let pools = args.warm.pools(u64::from(args.test_count) * variants.len() as u64, 1);
    let opts = RunOptions {
        store: args.store,
        time_limit_secs: args.time_limit,
        seed: args.seed,
        clients: args.clients,
        exe: None,
        nodes,
        pools: pools.clone(),
    };
    let mut reporters = reporters::standard(args.quiet);
    if let Some(file) = args.junit {
        reporters.push(Box::new(Junit::new(file)));
    }
    let events = EventSink::new(reporters);
    let mut code = 0;
    for variant in variants {
        let series = series::run_series(Arc::new(variant), &opts, args.test_count, &events).await;
        code = code.max(series.exit_code());
        if series.error.is_some() {
            break;
        }
    }
    super::warm::close(pools).await;
    events.finish()?;
    Ok(ExitCode::from(code))
}
