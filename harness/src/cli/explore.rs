//! `lockchaos explore SCENARIO`: search the faults for one that breaks the lock, shrink what
//! breaks it, hand it back as a scenario. `lockchaos explore merge STORE...`: campaigns made
//! apart (shards) as one page.

use harness::events::EventSink;
use harness::explore::runner::SeriesRunner;
use harness::explore::shrink::ShrinkOptions;
use harness::explore::strategy::Slice;
use harness::explore::{self, Budget, ExploreOptions};
use harness::reporters::{explore_progress, store_index::StoreIndex};
use harness::run::RunOptions;
use harness::{print_line, scenario_catalog};
use results::explore::Strategy;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    merge: Option<MergeCommand>,
    #[command(flatten)]
    search: Option<SearchArgs>,
}

#[derive(clap::Subcommand)]
enum MergeCommand {
    /// Lay the campaigns in these stores (shards of one campaign, or campaigns made apart) out
    /// as one explore.json and explore.html in --store, findings deduplicated.
    Merge {
        #[arg(required = true)]
        stores: Vec<PathBuf>,
        /// Where the merged page goes.
        #[arg(long, default_value = "store")]
        store: PathBuf,
    },
}

#[derive(clap::Args)]
struct SearchArgs {
    /// The base scenario (a name from `lockchaos list`, or a path): its backend, clients, lock,
    /// workload, resource and client program. Its [nemesis] and expect are ignored.
    #[arg(required = true)]
    scenario: Option<String>,
    /// Search for this many seconds (default 600).
    #[arg(long, conflicts_with = "runs")]
    budget: Option<u64>,
    /// Search for this many runs instead.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    runs: Option<u64>,
    /// Same seed, same scenario, same strategy: the same schedules (drawn and printed when absent).
    #[arg(long)]
    seed: Option<u64>,
    #[arg(long, value_enum, default_value_t = StrategyArg::Guided)]
    strategy: StrategyArg,
    /// Where runs and the campaign's files (explore/<start>/) go.
    #[arg(long, default_value = "store")]
    store: PathBuf,
    /// Search runs at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=8))]
    jobs: u32,
    /// Search only shard K of N of the seed space (each machine its own; `explore merge` joins them).
    #[arg(long)]
    shard: Option<String>,
    /// Runs of each found scenario that confirm it (0: none).
    #[arg(long, default_value_t = 10)]
    confirm: u32,
    /// Runs the shrinking of one finding may make (0: keep it as found).
    #[arg(long, default_value_t = 40)]
    shrink_runs: u64,
    /// Keep a smaller schedule only when it fails in at least K of N runs: 3/3 by default, as a
    /// flakier schedule is not a smaller one (2/3 shrinks a failure that shows in half the runs).
    #[arg(long, default_value = "3/3")]
    shrink_accept: String,
    /// Stop searching after this many distinct findings.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    max_findings: Option<u32>,
    /// Only the final line (and warnings).
    #[arg(long)]
    quiet: bool,
    /// One campaign per version of the client's library, one after another, with the same seed
    /// (so the same schedules are drawn for each): `--client-env redis==4.3.4,redis==8.2.0`.
    /// Each is named by its pin (`redis-py-lock-pause.redis-8.2.0`), as the matrix's rows are.
    #[arg(long, value_name = "PROJECT==VERSION,...")]
    client_env: Option<String>,
    /// Build every run's nodes from fresh containers (otherwise the campaign's runs keep their
    /// backend's nodes warm between runs, reset and checked: see --help of `scenario`). A
    /// plain flag here, not the shared one: clap tells this optional group's presence by its
    /// own arguments.
    #[arg(long)]
    cold: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum StrategyArg {
    Guided,
    Random,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(MergeCommand::Merge { stores, store }) = args.merge {
        let merged = explore::merge::merge(&stores, &store)?;
        print_line!(
            "{} campaign(s), {} distinct finding(s): {}",
            merged.campaigns.len(),
            merged.found.len(),
            store.join("explore.html").display()
        );
        return Ok(ExitCode::from(u8::from(!merged.found.is_empty())));
    }
    let a = args.search.expect("clap requires a scenario or merge");
    let base = scenario_catalog::resolve(a.scenario.as_deref().expect("clap requires it"))?;
    let bases = match &a.client_env {
        Some(list) => {
            let pins = harness::scenario::versions::parse_list(list)?;
            pins.iter().map(|pin| harness::scenario::versions::apply(&base, pin, None)).collect::<anyhow::Result<Vec<_>>>()?
        }
        None => vec![base],
    };
    let slice = match &a.shard {
        Some(text) => parse_shard(text)?,
        None => Slice::WHOLE,
    };
    let (k, n) = parse_fraction(&a.shrink_accept).map_err(|e| anyhow::anyhow!("--shrink-accept {e}"))?;
    let seed = a.seed.unwrap_or_else(rand::random);
    let opts = ExploreOptions {
        strategy: match a.strategy {
            StrategyArg::Guided => Strategy::Guided,
            StrategyArg::Random => Strategy::Random,
        },
        seed,
        budget: match (a.budget, a.runs) {
            (_, Some(runs)) => Budget::Runs(runs),
            (secs, None) => Budget::Seconds(secs.unwrap_or(600)),
        },
        store: a.store.clone(),
        jobs: a.jobs,
        slice,
        confirm: a.confirm,
        shrink: ShrinkOptions { k, n, max_runs: a.shrink_runs },
        max_findings: a.max_findings,
    };
    let mut exit = 0;
    // One set of pools for every campaign: the versions' runs share their backend's nodes.
    let pools = super::warm::WarmArgs { cold: a.cold }.pools(u64::MAX, a.jobs as usize);
    for base in bases {
        let code = campaign(base, opts.clone(), seed, a.quiet, pools.clone()).await;
        match code {
            Ok(code) => exit = exit.max(code),
            Err(e) => {
                super::warm::close(pools).await;
                return Err(e);
            }
        }
    }
    super::warm::close(pools).await;
    Ok(ExitCode::from(exit))
}

/// One campaign on one base scenario: its progress, its findings and its final line; its exit
/// code.
async fn campaign(
    base: harness::scenario::LoadedScenario,
    opts: ExploreOptions,
    seed: u64,
    quiet: bool,
    pools: Option<std::sync::Arc<harness::node_source::warm_pool::WarmPools>>,
) -> anyhow::Result<u8> {
    let events = EventSink::new(vec![explore_progress::for_stderr(quiet), Box::new(StoreIndex)]);
    let runner = SeriesRunner { opts: RunOptions { store: opts.store.clone(), pools, ..Default::default() }, events: events.clone() };
    let campaign = explore::explore(base, opts, &runner, &events).await;
    events.finish()?;
    let campaign = campaign?;
    for f in &campaign.results.found {
        print_line!(
            "found {} ({}): {} — reproduced {} — {}",
            f.property,
            f.kind,
            f.schedule.join("; "),
            f.reproduced,
            campaign.dir.join(&f.scenario).display()
        );
    }
    print_line!(
        "explore {}: {} (seed {}, {} search runs, {} found) — {}",
        campaign.results.scenario,
        campaign.results.stopped,
        seed,
        campaign.results.runs,
        campaign.results.found.len(),
        campaign.dir.join("explore.html").display()
    );
    Ok(campaign.exit_code())
}

/// `K/N` with 1 <= K <= N.
fn parse_shard(text: &str) -> anyhow::Result<Slice> {
    let (k, n) = parse_fraction(text).map_err(|_| anyhow::anyhow!("--shard {text}: expected K/N with 1 <= K <= N, e.g. 2/4"))?;
    Ok(Slice { index: k as u64, count: n as u64 })
}

/// `K/N` with 1 <= K <= N.
fn parse_fraction(text: &str) -> anyhow::Result<(u32, u32)> {
    let parsed = text.split_once('/').and_then(|(k, n)| Some((k.trim().parse::<u32>().ok()?, n.trim().parse::<u32>().ok()?)));
    match parsed {
        Some((k, n)) if 1 <= k && k <= n => Ok((k, n)),
        _ => anyhow::bail!("{text}: expected K/N with 1 <= K <= N, e.g. 2/3"),
    }
}
