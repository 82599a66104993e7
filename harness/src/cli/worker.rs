//! `lockchaos worker --config FILE`: one lock client, PID 1 of its container (started by a run).

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The worker's configuration, written by the run into the run folder.
    #[arg(long)]
    config: PathBuf,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.config)?;
    let config: harness::worker::WorkerConfig = serde_json::from_str(&text)?;
    harness::worker::run(config).await?;
    Ok(ExitCode::SUCCESS)
}
