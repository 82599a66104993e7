//! The commands: each file holds one command's arguments (clap) and its `run`, which calls the
//! library and turns the result into an exit status.

mod check;
mod clean;
mod explore;
mod history;
mod image;
mod list;
mod matrix;
mod resource;
mod scenario;
mod sweep;
mod warm;
mod worker;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "lockchaos", version, about = "Jepsen-style fault injection for distributed locks")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run one scenario (a name from `lockchaos list`, or a path to a TOML file).
    Scenario(scenario::Args),
    /// Run many scenarios and measure the backend-by-failure table: matrix.json and
    /// matrix.html in the store. Exit 0 when every cell matched its expectation in every run;
    /// with --baseline, 4 when a cell's rate moved beyond chance against it.
    Matrix(matrix::Args),
    /// The price of a lock: run scenarios with 1, 2, 4, … clients (`--clients`) and measure
    /// writes per second per key and acquire latency: sweep.json and sweep.html in the store.
    Sweep(sweep::Args),
    /// Find the failure nobody wrote down: search fault schedules against a base scenario's
    /// lock, shrink each failure to the smallest schedule that still shows it, and write it as
    /// a scenario (found-N.toml). Exit 0 nothing found, 1 something found, 2 error or
    /// interrupted before anything was found.
    Explore(explore::Args),
    /// Check a history (ours or Jepsen's EDN) or a run folder: lock safety, fencing, holder
    /// overlap, and with --model linearizability. Exit 0 valid, 1 invalid, 2 unknown or error.
    /// With --recheck, every run of the stores given, listing those whose verdict changed
    /// (exit 0 none, 1 some, 2 nothing rechecked or error).
    Check(check::Args),
    /// Many stores, each a night or a version, as one page: per cell the rate of violations
    /// night after night with its 95% interval, and the nights it changed (history.html in the
    /// store). Exit 4 when a cell moved beyond chance tonight (the last store).
    History(history::Args),
    /// List the scenarios with their expectations and descriptions.
    List(list::Args),
    /// Remove every container and network that a lockchaos run left behind (runs whose
    /// lockchaos process is gone); `--all` also those of runs still going.
    Clean(clean::Args),
    /// The node image.
    Image {
        #[command(subcommand)]
        command: image::Command,
    },
    /// Run one lock client (inside a worker container; started by `scenario`).
    #[command(hide = true)]
    Worker(worker::Args),
    /// Serve the protected resource, a ledger of counters that logs every request.
    Resource(resource::Args),
}

impl Command {
    pub async fn run(self) -> anyhow::Result<ExitCode> {
        match self {
            Command::Scenario(args) => scenario::run(args).await,
            Command::Matrix(args) => matrix::run(args).await,
            Command::Sweep(args) => sweep::run(args).await,
            Command::Explore(args) => explore::run(args).await,
            Command::Check(args) => check::run(args),
            Command::History(args) => history::run(args),
            Command::List(args) => list::run(args),
            Command::Clean(args) => clean::run(args).await,
            Command::Image { command } => image::run(command).await,
            Command::Worker(args) => worker::run(args).await,
            Command::Resource(args) => resource::run(args).await,
        }
    }
}
