//! `lockchaos history STORE...`: stores, each a night or a version, oldest first, as one page
//! (history.html, history.json in --store). Exit 0 no cell moved tonight (the last store), 4 a
//! cell moved beyond chance (against its nights since it last changed, or --baseline), 3 no
//! store holds a finished run.

use harness::baseline::Baseline;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Stores to lay out, one night each, oldest first (the last is tonight).
    #[arg(required = true)]
    stores: Vec<PathBuf>,
    /// Where history.html and history.json go.
    #[arg(long, default_value = "store")]
    store: PathBuf,
    /// Compare tonight with these stores' runs, pooled (a release's, or the nights before),
    /// instead of with each cell's nights since it last changed. Repeatable.
    #[arg(long, value_name = "STORE")]
    baseline: Vec<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let baseline = if args.baseline.is_empty() { None } else { Some(Baseline::read(&args.baseline)?) };
    Ok(ExitCode::from(harness::history::write_history(&args.stores, baseline.as_ref(), &args.store)?))
}
