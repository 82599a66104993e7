//! `lockchaos resource`: the protected ledger on its own (a run starts it in its container).

use harness::clock::{monotonic_ns, RunClock};
use harness::resource::proof::{RunKey, KEY_ENV};
use harness::resource::ResourceMode;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    #[arg(long, default_value = "0.0.0.0:7000")]
    listen: SocketAddr,
    #[arg(long, value_enum, default_value = "unfenced")]
    mode: ResourceMode,
    /// JSON-lines log of every request, in the order received.
    #[arg(long)]
    log: PathBuf,
    /// JSON-lines record of the requests refused (not sent by a worker of the run).
    #[arg(long)]
    refused_log: PathBuf,
    /// The run's time origin (CLOCK_MONOTONIC, ns); default: now.
    #[arg(long)]
    t0_ns: Option<u64>,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let clock = RunClock { t0_ns: args.t0_ns.unwrap_or_else(monotonic_ns) };
    // The key comes in the environment, not the command line: whoever can list processes can
    // read a command line.
    let key = std::env::var(KEY_ENV).map_err(|_| anyhow::anyhow!("{KEY_ENV} is not set: the run gives the resource its key"))?;
    let key = RunKey::from_hex(&key)?;
    let logs = harness::resource::server::Logs { log: &args.log, refused: &args.refused_log };
    harness::resource::server::serve(args.listen, args.mode, key, logs, clock).await?;
    Ok(ExitCode::SUCCESS)
}
