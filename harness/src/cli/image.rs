//! `lockchaos image build`: the node image (a no-op when it is up to date).

use harness::containers::docker_api;
use harness::events::{Event, EventSink, Stage};
use harness::node_image::{self, BuildMethod, EnsureOutcome};
use harness::reporters::progress;
use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Build lockchaos-node:bookworm (nothing to do when it is up to date).
    Build {
        /// Rebuild even when up to date.
        #[arg(long)]
        force: bool,
        #[arg(long, value_enum, default_value = "auto")]
        method: BuildMethod,
    },
}

pub async fn run(command: Command) -> anyhow::Result<ExitCode> {
    let Command::Build { force, method } = command;
    let docker = docker_api::connect().await?;
    let events = EventSink::new(vec![progress::for_stderr(false)]);
    events.emit(Event::Stage(Stage::Image));
    let build_line = |line: &str| events.emit(Event::ImageBuildLine(line.to_string()));
    let outcome = node_image::ensure_image(&docker, method, force, &build_line).await;
    events.finish()?;
    match outcome? {
        EnsureOutcome::AlreadyPresent => harness::print_line!("{}: up to date", node_image::IMAGE),
        EnsureOutcome::Built { secs } => harness::print_line!("{}: built in {secs:.0} s", node_image::IMAGE),
    }
    Ok(ExitCode::SUCCESS)
}
