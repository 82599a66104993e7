//! `lockchaos sweep SCENARIO… --clients 1,2,4,8,16`: the price of a lock. Each scenario runs
//! once per client count (each run in the store), measured into STORE/sweeps/<start>/sweep.json
//! and sweep.html: writes per second per key, acquire latency, and each lock against its
//! ceiling, 1000 / work_ms.

use harness::events::EventSink;
use harness::reporters;
use harness::scenario_catalog;
use harness::sweep::{run_sweep, SweepOptions};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Scenario names (see `lockchaos list`) or paths to TOML files; one line each.
    #[arg(required_unless_present = "render")]
    scenarios: Vec<String>,
    /// Run nothing: draw DIR/sweep.html again from DIR/sweep.json (a sweep made earlier).
    #[arg(long, value_name = "DIR", conflicts_with = "scenarios")]
    render: Option<PathBuf>,
    /// The client counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16", value_parser = clap::value_parser!(u32).range(1..=150))]
    clients: Vec<u32>,
    /// Seconds of workload per run (overrides each scenario's time_limit_secs).
    #[arg(long)]
    time_limit: Option<u64>,
    /// Where run folders and the sweep go.
    #[arg(long, default_value = "store")]
    store: PathBuf,
    /// Only the per-run lines.
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    warm: super::warm::WarmArgs,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(dir) = args.render {
        harness::sweep::render_again(&dir)?;
        println!("sweep: {}", dir.join("sweep.html").display());
        return Ok(ExitCode::SUCCESS);
    }
    // Every scenario is loaded (and refused, naming file, line and field) before any run.
    let scenarios = args.scenarios.iter().map(|s| scenario_catalog::resolve(s)).collect::<anyhow::Result<Vec<_>>>()?;
    std::fs::create_dir_all(&args.store)?;
    let events = EventSink::new(reporters::standard(args.quiet));
    let pools = args.warm.pools((scenarios.len() * args.clients.len()) as u64, 1);
    let opts = SweepOptions { store: args.store, clients: args.clients, time_limit_secs: args.time_limit, pools: pools.clone() };
    let outcome = run_sweep(scenarios, &opts, &events).await;
    super::warm::close(pools).await;
    events.finish()?;
    let outcome = outcome?;
    for line in &outcome.sweep.lines {
        let rates: Vec<String> = line
            .points
            .iter()
            .map(|p| {
                let note = p.cut_short_note().map(|n| format!(" ({n})")).unwrap_or_default();
                format!("{}: {:.2}{note}", p.clients, p.writes_per_sec_per_key)
            })
            .collect();
        let ceiling = line.ceiling_per_sec.map(|c| format!(" (ceiling {c:.2})")).unwrap_or_default();
        let above = if line.above_ceiling() { " ABOVE ITS CEILING" } else { "" };
        println!("sweep {}: writes/s per key by clients {}{ceiling}{above}", line.scenario, rates.join(", "));
    }
    println!("sweep: {}", outcome.dir.join("sweep.html").display());
    Ok(ExitCode::from(outcome.exit_code))
}
