//! `lockchaos`: a thin CLI over the harness's modules.
//!
//! Exit status: 0 when a run's outcome matches the scenario's `expect`, 1 when it does not,
//! 2 when it is unknown or on error.

mod check_command;
mod clock;
mod containers;
mod event_log;
mod faults;
mod live_history;
mod lock_backends;
mod matrix_command;
mod nemesis;
mod node_image;
mod progress;
mod resource;
mod run;
mod run_store;
mod scenario;
mod scenario_catalog;
mod scenario_command;
mod schedule;
mod worker;

use clap::{Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Parser)]
#[command(name = "lockchaos", version, about = "Jepsen-style fault injection for distributed locks")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one scenario (a name from `lockchaos list`, or a path to a TOML file).
    Scenario {
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
        #[arg(long, default_value_t = 1)]
        test_count: u32,
        /// Also write JUnit XML here: one test case per run.
        #[arg(long)]
        junit: Option<PathBuf>,
    },
    /// Run many scenarios and measure the backend-by-failure table: matrix.json and
    /// matrix.html in the store. Exit 0 when every cell matched its expectation in every run.
    Matrix {
        /// Scenario names to run, as globs (`redis-*`), comma-separated (default: all).
        #[arg(long, default_value = "*")]
        scenarios: String,
        /// Runs of each scenario.
        #[arg(long, default_value_t = 1)]
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
    },
    /// Check a history (ours or Jepsen's EDN) or a run folder: lock safety, fencing, holder
    /// overlap, and with --model linearizability. Exit 0 valid, 1 invalid, 2 unknown or error.
    Check {
        /// history.jsonl, a Jepsen history.edn, or a run folder.
        file: PathBuf,
        /// Check linearizability against this model (its verdict then decides).
        #[arg(long, value_parser = parse_model)]
        model: Option<checker::linearizability::ModelKind>,
        /// jsonl or edn (default: from the extension, else from the content).
        #[arg(long, value_parser = parse_format)]
        format: Option<checker::HistoryFormat>,
        /// Seconds for the linearizability search; past it the verdict is unknown.
        #[arg(long, default_value_t = 60)]
        timeout: u64,
        /// Print the results object as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// List the scenarios with their expectations and descriptions.
    List {
        /// Scenario folder (default: ./scenarios, else the one in the source tree).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Remove every container and network that a lockchaos run left behind (runs whose
    /// lockchaos process is gone); `--all` also those of runs still going.
    Clean {
        #[arg(long)]
        all: bool,
    },
    /// The node image.
    Image {
        #[command(subcommand)]
        command: ImageCommand,
    },
    /// Run one lock client (inside a worker container; started by `scenario`).
    #[command(hide = true)]
    Worker {
        #[arg(long)]
        config: PathBuf,
    },
    /// Serve the protected resource, a ledger of counters that logs every request.
    Resource {
        #[arg(long, default_value = "0.0.0.0:7000")]
        listen: SocketAddr,
        #[arg(long, value_enum, default_value = "unfenced")]
        mode: ResourceModeArg,
        /// JSON-lines log of every request, in the order received.
        #[arg(long)]
        log: PathBuf,
        /// The run's time origin (CLOCK_MONOTONIC, ns); default: now.
        #[arg(long)]
        t0_ns: Option<u64>,
    },
}

#[derive(Subcommand)]
enum ImageCommand {
    /// Build lockchaos-node:bookworm (nothing to do when it is up to date).
    Build {
        /// Rebuild even when up to date.
        #[arg(long)]
        force: bool,
        #[arg(long, value_enum, default_value = "auto")]
        method: MethodArg,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ResourceModeArg {
    Unfenced,
    Fenced,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum MethodArg {
    /// The Dockerfile when debian:bookworm is present locally, else the offline build.
    Auto,
    /// mmdebstrap root filesystem + docker import (no registry needed).
    Offline,
    Dockerfile,
}

fn parse_model(s: &str) -> Result<checker::linearizability::ModelKind, String> {
    s.parse()
}

fn parse_format(s: &str) -> Result<checker::HistoryFormat, String> {
    s.parse::<checker::HistoryFormat>().map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    match runtime.block_on(dispatch(cli.command)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", format!("{e:#}").replace('\n', " "));
            ExitCode::from(2)
        }
    }
}

async fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Scenario { name, time_limit, seed, store, clients, quiet, test_count, junit } => {
            let loaded = scenario_catalog::resolve(&name)?;
            let opts = run::RunOptions { store, time_limit_secs: time_limit, seed, clients };
            let reporter: Arc<dyn progress::Reporter> = Arc::from(progress::reporter(quiet));
            let series = scenario_command::run_series(loaded, opts, reporter, test_count.max(1)).await?;
            if let Some(file) = junit {
                let results: Vec<_> = series.runs.iter().map(|r| r.results.clone()).collect();
                scenario_command::write_junit(&file, &results)?;
            }
            Ok(ExitCode::from(series.exit_code()))
        }
        Command::Matrix { scenarios, runs, time_limit, store, junit, quiet } => {
            let reporter: Arc<dyn progress::Reporter> = Arc::from(progress::reporter(quiet));
            let args = matrix_command::MatrixArgs { patterns: scenarios, runs: runs.max(1), time_limit, store, junit };
            matrix_command::run(args, reporter).await.map(ExitCode::from)
        }
        Command::Check { file, model, format, timeout, json } => {
            check_command::run(check_command::CheckArgs { file, model, format, timeout: std::time::Duration::from_secs(timeout), json })
        }
        Command::List { dir } => {
            let entries = scenario_catalog::list(dir.as_deref())?;
            let width = entries.iter().filter_map(|e| e.as_ref().ok()).map(|s| s.name.len()).max().unwrap_or(0);
            for entry in entries {
                match entry {
                    Ok(s) => println!("{:<width$} {:<10} {}", s.name, s.scenario.expect.to_string(), s.scenario.description),
                    Err(e) => println!("{e}"),
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Clean { all } => {
            let docker = containers::docker_api::connect().await?;
            let removed = containers::teardown::remove_leftovers(&docker, all).await?;
            let live = if removed.skipped_live > 0 {
                format!("; left {} item(s) of runs still going (--all removes them too)", removed.skipped_live)
            } else {
                String::new()
            };
            println!("removed {} container(s) and {} network(s){live}", removed.containers, removed.networks);
            Ok(ExitCode::SUCCESS)
        }
        Command::Image { command: ImageCommand::Build { force, method } } => {
            let docker = containers::docker_api::connect().await?;
            let method = match method {
                MethodArg::Auto => node_image::BuildMethod::Auto,
                MethodArg::Offline => node_image::BuildMethod::Offline,
                MethodArg::Dockerfile => node_image::BuildMethod::Dockerfile,
            };
            let reporter = progress::reporter(false);
            reporter.event(progress::RunEvent::Stage("image".into()));
            let outcome = node_image::ensure_image(&docker, method, force, &reporter.spinner()).await?;
            reporter.finish();
            match outcome {
                node_image::EnsureOutcome::AlreadyPresent => println!("{}: up to date", node_image::IMAGE),
                node_image::EnsureOutcome::Built { secs } => println!("{}: built in {secs:.0} s", node_image::IMAGE),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Worker { config } => {
            let text = std::fs::read_to_string(&config)?;
            let config: worker::WorkerConfig = serde_json::from_str(&text)?;
            worker::run(config).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Resource { listen, mode, log, t0_ns } => {
            let mode = match mode {
                ResourceModeArg::Unfenced => scenario::ResourceMode::Unfenced,
                ResourceModeArg::Fenced => scenario::ResourceMode::Fenced,
            };
            let clock = clock::RunClock { t0_ns: t0_ns.unwrap_or_else(clock::monotonic_ns) };
            resource::server::serve(listen, mode, &log, clock).await?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
