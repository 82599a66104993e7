//! `lockchaos clean [--all]`: removes what runs left behind (see containers::teardown).

use harness::containers::{docker_api, teardown};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Also remove the containers and networks of runs still going.
    #[arg(long)]
    all: bool,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let docker = docker_api::connect().await?;
    let removed = teardown::remove_leftovers(&docker, args.all).await?;
    let live = if removed.skipped_live > 0 {
        format!("; left {} item(s) of runs still going (--all removes them too)", removed.skipped_live)
    } else {
        String::new()
    };
    println!("removed {} container(s) and {} network(s){live}", removed.containers, removed.networks);
    Ok(ExitCode::SUCCESS)
}
