//! `lockchaos image`: the node image (`build`, a no-op when it is up to date) and the cached
//! client environments derived from it (`ls`, `prune`).

use harness::client_env;
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
    /// List the node image and the cached client environments (built from scenarios'
    /// `[client]` debian / python / build), newest first.
    Ls,
    /// Remove every cached client environment no container uses, with its build log; the next
    /// run that needs one builds it again. The node image stays.
    Prune,
}

pub async fn run(command: Command) -> anyhow::Result<ExitCode> {
    let docker = docker_api::connect().await?;
    match command {
        Command::Build { force, method } => build(&docker, force, method).await,
        Command::Ls => ls(&docker).await,
        Command::Prune => prune(&docker).await,
    }
}

async fn build(docker: &bollard::Docker, force: bool, method: BuildMethod) -> anyhow::Result<ExitCode> {
    let events = EventSink::new(vec![progress::for_stderr(false)]);
    events.emit(Event::Stage(Stage::Image));
    let build_line = |line: &str| events.emit(Event::ImageBuildLine(line.to_string()));
    let outcome = node_image::ensure_image(docker, method, force, &build_line).await;
    events.finish()?;
    match outcome? {
        EnsureOutcome::AlreadyPresent => harness::print_line!("{}: up to date", node_image::IMAGE),
        EnsureOutcome::Built { secs } => harness::print_line!("{}: built in {secs:.0} s", node_image::IMAGE),
    }
    Ok(ExitCode::SUCCESS)
}

async fn ls(docker: &bollard::Docker) -> anyhow::Result<ExitCode> {
    let node = match node_image::is_up_to_date(docker).await? {
        Some(true) => "up to date",
        Some(false) => "out of date (the next run rebuilds it)",
        None => "not built (the next run builds it)",
    };
    harness::print_line!("{}: {node}", node_image::IMAGE);
    let envs = client_env::list(docker).await?;
    if envs.is_empty() {
        harness::print_line!("no client environments cached");
    }
    for env in envs {
        let created = chrono::DateTime::from_timestamp(env.created, 0).map(|t| t.format("%Y-%m-%d %H:%M").to_string()).unwrap_or_default();
        let mib = env.size_bytes as f64 / (1 << 20) as f64;
        harness::print_line!(
            "{}  {created}  {mib:.0} MiB  built for {}  {}  (log: {})",
            env.image.tag,
            env.scenario,
            env.summary,
            env.image.log_path().display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn prune(docker: &bollard::Docker) -> anyhow::Result<ExitCode> {
    let (removed, kept) = client_env::prune(docker).await?;
    for env in &removed {
        harness::print_line!("removed {} ({})", env.image.tag, env.summary);
    }
    for (env, why) in &kept {
        harness::print_line!("kept {}: {why}", env.image.tag);
    }
    harness::print_line!("{} client environment(s) removed, {} kept", removed.len(), kept.len());
    Ok(if kept.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
