//! `lockchaos clean [--all] [--nodes-file FILE]`: heals the hosts (orphans_on_hosts.rs), then finishes the runs whose lockchaos process is gone (see orphans.rs)
//! and says which runs it finished and where their results are.

use harness::containers::docker_api;
use harness::hosts::NodesFile;
use harness::orphans::{self, Finish};
use harness::orphans_on_hosts::{self, HostCleaned};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Also stop the runs still going (their lockchaos processes write their own results).
    #[arg(long)]
    all: bool,
    /// Also heal the hosts this file names of what gone runs left there (stopped servers,
    /// iptables rules, clock offsets), before their containers are removed.
    #[arg(long)]
    nodes_file: Option<PathBuf>,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut host_errors = 0;
    if let Some(path) = &args.nodes_file {
        let file = NodesFile::load(path)?;
        for (host, result) in orphans_on_hosts::clean_hosts(&file, args.all).await {
            match result {
                Ok(HostCleaned::Free) => harness::print_line!("{host}: no run left anything"),
                Ok(HostCleaned::Healed { run_id, healed }) => harness::print_line!(
                    "{host}: healed {run_id}: woke and killed {} process(es), deleted {} rule(s), removed its files",
                    healed.processes,
                    healed.rules
                ),
                Ok(HostCleaned::LeftLive { run_id }) => harness::print_line!("{host}: left {run_id}, still going (--all stops it too)"),
                Ok(HostCleaned::OtherMachine { run_id, machine }) => {
                    harness::print_line!("{host}: left {run_id}, a run of machine {machine} (--all heals it anyway)")
                }
                Err(e) => {
                    host_errors += 1;
                    harness::eprint_line!("error: {e}");
                }
            }
        }
    }
    // The ssh master connections of a killed lockchaos (this one's own are alive).
    let masters = harness::hosts::end_masters_of_gone_runs(harness::containers::controller_alive);
    if masters > 0 {
        harness::print_line!("ended {masters} ssh master connection(s) of gone runs");
    }
    let docker = docker_api::connect().await?;
    let report = orphans::clean(&docker, args.all).await?;
    for run in &report.runs {
        let woke = if run.woken.is_empty() { String::new() } else { format!("woke {} (stopped), ", run.woken.join(", ")) };
        let removed = format!("{woke}removed {} container(s) and {} network(s)", run.removed.containers, run.removed.networks);
        let folder = run.folder.as_ref().map(|f| f.display().to_string()).unwrap_or_default();
        match &run.finish {
            Finish::Finished { outcome } => {
                harness::print_line!(
                    "finished {}: {removed}; outcome {outcome} (interrupted): history.jsonl, results.json, report.html in {folder}",
                    run.run_id
                )
            }
            Finish::HadResults => harness::print_line!("removed {}: {removed}; its results were already in {folder}", run.run_id),
            Finish::NotWritten(why) => harness::print_line!("removed {}: {removed}; nothing written: {why}", run.run_id),
            Finish::Pool => harness::print_line!("removed warm pool {}: {removed}", run.run_id),
            Finish::LeftToItsProcess => {
                harness::print_line!(
                    "stopped {} (still going, --all): {removed}; its lockchaos process writes its results in {folder}",
                    run.run_id
                )
            }
        }
    }
    if report.runs.is_empty() {
        harness::print_line!("no run left anything behind");
    }
    if !report.live_left.is_empty() {
        harness::print_line!("left {} run(s) still going (--all stops them too): {}", report.live_left.len(), report.live_left.join(", "));
    }
    for e in &report.errors {
        harness::eprint_line!("error: {e}");
    }
    Ok(if report.errors.is_empty() && host_errors == 0 { ExitCode::SUCCESS } else { ExitCode::from(2) })
}
