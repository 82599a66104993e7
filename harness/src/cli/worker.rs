//! `lockchaos worker --config FILE`: one lock client, PID 1 of its container (started by a run).

use harness::lock_backends::ClientGone;
use harness::worker::{EXIT_PROGRAM_EXITED, EXIT_UNUSABLE};
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
    match harness::worker::run(config).await {
        Ok(()) => Ok(ExitCode::SUCCESS),
        // The run reads these exit codes; the line on stderr is in the client's log.
        Err(e) => match e.downcast_ref::<ClientGone>() {
            Some(gone) => {
                eprintln!("lockchaos worker: {gone}");
                Ok(ExitCode::from(match gone {
                    ClientGone::Unusable(_) => EXIT_UNUSABLE,
                    ClientGone::Exited(_) => EXIT_PROGRAM_EXITED,
                }))
            }
            None => Err(e),
        },
    }
}
