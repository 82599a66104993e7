//! `--cold`, shared by the commands that run a scenario more than once (scenario with
//! --test-count, matrix, sweep, explore): their runs keep a backend's nodes warm between runs
//! (node_source/warm_pool.rs) unless told not to.

use harness::node_source::warm_pool::WarmPools;
use std::sync::Arc;

#[derive(clap::Args, Clone, Copy, Debug)]
pub struct WarmArgs {
    /// Build every run's nodes from fresh containers. Otherwise runs after the first reuse
    /// their backend's node containers, reset and verified clean between runs (Redis, Redlock,
    /// etcd, postgres-session; run.json `nodes` says which a run had).
    #[arg(long)]
    pub cold: bool,
}

impl WarmArgs {
    /// Pools for `runs` runs, `jobs` at a time; None for a single run or with --cold.
    pub fn pools(self, runs: u64, jobs: usize) -> Option<Arc<WarmPools>> {
        (!self.cold && runs > 1).then(|| WarmPools::new(jobs))
    }
}

/// Tears the pools down at the command's end, whatever its outcome; what cannot be removed is
/// a warning (`lockchaos clean` removes it later).
pub async fn close(pools: Option<Arc<WarmPools>>) {
    if let Some(pools) = pools {
        if let Err(e) = pools.close().await {
            harness::print_line!("warning: {e:#}");
        }
    }
}
