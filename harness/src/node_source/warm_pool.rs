//! Warm pools: a backend's network and node containers kept from one run to the next of a
//! series, a matrix or an explore campaign, as Jepsen keeps its nodes between tests. The run's
//! own containers (the resource, the clients) are still made for it and removed with it.
//!
//! Between two runs the pool kills every process in its nodes (CONT first), moves the servers'
//! logs into the run's folder, and, before the next run may use it, removes the faults' files
//! and the servers' state, lays the firewall again, starts the servers and checks it all: each
//! node must read exactly as it did when the pool was built (node_state.rs), and the servers
//! must hold nothing (`WarmReset::verify_empty`). A pool that fails is torn down and the run's
//! nodes are built cold, which run.json says. A run that ended in a way the pool cannot vouch
//! for (an error, an interruption, a fault that did not heal) retires its pool.

use super::node_state;
use super::{NodeSource, Nodes, NodesRecord, RunSite};
use crate::containers::{teardown, Cluster, ContainerSpec, POOL_LABEL};
use crate::lock_backends::{BackendSetup, WarmReset};
use crate::node_image::IMAGE;
use crate::scenario::LoadedScenario;
use anyhow::Context;
use bollard::Docker;
use futures_util::future::{join_all, try_join_all};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a reset's server start may take (as a cold start's).
const SERVERS_START_LIMIT: Duration = Duration::from_secs(120);

/// What makes two runs' nodes interchangeable: the backend, its server settings (a scenario
/// with clock faults runs its servers under libfaketime), and the binary mounted in the nodes.
#[derive(Clone)]
pub struct PoolKey {
    name: String,
    /// The backend as the scenario sets it up: what the pool resets and starts.
    setup: Arc<dyn BackendSetup>,
}

impl PartialEq for PoolKey {
    fn eq(&self, other: &PoolKey) -> bool {
        self.name == other.name
    }
}

impl PoolKey {
    pub fn of(loaded: &LoadedScenario, exe: &Path) -> PoolKey {
        let s = &loaded.scenario;
        let server = serde_json::to_string(&s.server).unwrap_or_default();
        PoolKey {
            name: format!("{} faketime={} server={server} exe={}", s.backend.name(), s.nemesis.moves_clocks(), exe.display()),
            setup: Arc::from(s.backend_setup()),
        }
    }
}

/// The idle pools of one lockchaos process, for its runs to take and hand back.
pub struct WarmPools {
    idle: Mutex<Vec<Pool>>,
    /// Idle pools of one kind kept at most (one per run that can be going at once); of all
    /// kinds, [`KINDS_KEPT`] times that (a campaign's schedules switch between Redis with and
    /// without libfaketime, say). The oldest goes first.
    keep: usize,
}

/// Kinds of pool kept idle at once, at most.
const KINDS_KEPT: usize = 4;

impl WarmPools {
    pub fn new(keep: usize) -> Arc<WarmPools> {
        Arc::new(WarmPools { idle: Mutex::new(vec![]), keep: keep.max(1) })
    }

    fn take(&self, key: &PoolKey) -> Option<Pool> {
        let mut idle = self.idle.lock().expect("pools lock");
        let at = idle.iter().position(|p| &p.key == key)?;
        Some(idle.remove(at))
    }

    async fn hand_back(&self, pool: Pool) {
        let evicted = {
            let mut idle = self.idle.lock().expect("pools lock");
            let key = pool.key.clone();
            idle.push(pool);
            let mut evicted = vec![];
            while idle.iter().filter(|p| p.key == key).count() > self.keep {
                let oldest = idle.iter().position(|p| p.key == key).expect("counted");
                evicted.push(idle.remove(oldest));
            }
            let over = idle.len().saturating_sub(self.keep * KINDS_KEPT);
            evicted.extend(idle.drain(..over));
            evicted
        };
        join_all(evicted.into_iter().map(Pool::tear_down)).await;
    }

    /// Tears down every idle pool: the end of the series, matrix or campaign. Errors are
    /// returned after every pool was tried (`lockchaos clean` removes what is left).
    pub async fn close(&self) -> anyhow::Result<()> {
        let pools = std::mem::take(&mut *self.idle.lock().expect("pools lock"));
        let errors: Vec<String> =
            join_all(pools.into_iter().map(Pool::tear_down)).await.into_iter().filter_map(|r| r.err().map(|e| format!("{e:#}"))).collect();
        anyhow::ensure!(errors.is_empty(), "warm pools left behind: {}", errors.join("; "));
        Ok(())
    }

    /// The ids of the idle pools (tests look into them).
    pub fn idle_ids(&self) -> Vec<String> {
        self.idle.lock().expect("pools lock").iter().map(|p| p.id.clone()).collect()
    }
}

impl std::fmt::Debug for WarmPools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmPools").field("idle", &self.idle_ids()).field("keep", &self.keep).finish()
    }
}

/// One backend's nodes, kept warm.
struct Pool {
    id: String,
    key: PoolKey,
    /// Named and labelled as the pool (its run id is the pool's id).
    cluster: Cluster,
    /// The pool's folder: its nodes' logs until a run's end moves them into the run's folder.
    dir: PathBuf,
    nodes: Vec<String>,
    /// Each node's state as built (node_state::inspect).
    baseline: HashMap<String, String>,
    state_paths: Vec<String>,
    /// Runs served so far.
    runs: u32,
}

impl Pool {
    async fn build(docker: Docker, key: PoolKey, site: &RunSite<'_>, node_count: usize, state_paths: Vec<String>) -> anyhow::Result<Pool> {
        let id = format!("pool-{:016x}", rand::random::<u64>());
        let dir = std::env::temp_dir().join("lockchaos-pools").join(&id);
        std::fs::create_dir_all(dir.join("logs")).with_context(|| format!("cannot create the pool's folder {}", dir.display()))?;
        let labels = HashMap::from([(POOL_LABEL.to_string(), key.name.clone())]);
        let cluster = match Cluster::create_labelled(docker, &id, &dir, IMAGE, site.seed, labels).await {
            Ok(cluster) => cluster,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        let nodes: Vec<String> = (1..=node_count).map(|i| format!("n{i}")).collect();
        let mut pool = Pool { id, key, cluster, dir, nodes, baseline: HashMap::new(), state_paths, runs: 0 };
        if let Err(e) = pool.start_nodes(site.exe).await {
            let _ = pool.tear_down().await;
            return Err(e);
        }
        Ok(pool)
    }

    async fn start_nodes(&mut self, exe: &Path) -> anyhow::Result<()> {
        let logs = self.dir.join("logs");
        try_join_all(self.nodes.iter().map(|n| self.cluster.start(ContainerSpec::node(n, exe, &logs)))).await?;
        try_join_all(self.nodes.iter().map(|n| self.cluster.confine(n))).await?;
        let states = try_join_all(self.nodes.iter().map(|n| node_state::inspect(&self.cluster, n, &self.state_paths))).await?;
        self.baseline = self.nodes.iter().cloned().zip(states).collect();
        Ok(())
    }

    /// Puts every node back as built and checks it; then starts the servers and checks they
    /// hold nothing.
    async fn reset(&self, setup: &dyn BackendSetup, reset: &dyn WarmReset) -> anyhow::Result<()> {
        let egress = self.cluster.egress();
        let states = try_join_all(self.nodes.iter().map(|n| node_state::reset(&self.cluster, n, &self.state_paths, &egress))).await?;
        self.verify_nodes(states)?;
        tokio::time::timeout(SERVERS_START_LIMIT, setup.start(&self.cluster))
            .await
            .map_err(|_| anyhow::anyhow!("no answer within {SERVERS_START_LIMIT:?}"))
            .and_then(|r| r)
            .context("starting the servers again")?;
        reset.verify_empty(&self.cluster).await
    }

    /// Every node reads as it did when the pool was built: no process left, the same rules in
    /// every table, no qdisc, no fault's file, no server state.
    fn verify_nodes(&self, states: Vec<String>) -> anyhow::Result<()> {
        for (node, state) in self.nodes.iter().zip(states) {
            if let Some(difference) = node_state::difference(&self.baseline[node], &state) {
                anyhow::bail!("{node} is not clean after its reset: {difference}");
            }
        }
        Ok(())
    }

    /// Stops the servers (their log files close) and moves their logs into `logs_dir`.
    async fn end_run(&self, logs_dir: &Path) -> anyhow::Result<()> {
        let stopped = try_join_all(self.nodes.iter().map(|n| node_state::stop_processes(&self.cluster, n))).await;
        let pool_logs = self.dir.join("logs");
        for entry in std::fs::read_dir(&pool_logs)?.flatten() {
            let to = logs_dir.join(entry.file_name());
            // Another file system (the pool's folder is in the temporary one): copy, then remove.
            if std::fs::rename(entry.path(), &to).is_err() {
                std::fs::copy(entry.path(), &to)?;
                std::fs::remove_file(entry.path())?;
            }
        }
        stopped.map(|_| ())
    }

    async fn tear_down(self) -> anyhow::Result<()> {
        let removed = teardown::remove_labelled(&self.cluster.docker, Some(&self.id), None).await;
        let _ = std::fs::remove_dir_all(&self.dir);
        removed.map(|_| ()).with_context(|| format!("tearing down warm pool {}", self.id))
    }
}

/// A run's nodes from a warm pool of `pools`: an idle one of its kind, reset and verified, or
/// one built for it.
pub struct WarmNodes {
    pools: Arc<WarmPools>,
    key: PoolKey,
    state: tokio::sync::Mutex<InUse>,
    record: Mutex<NodesRecord>,
}

#[derive(Default)]
struct InUse {
    /// The run's pool.
    pool: Option<Pool>,
    /// It came from the idle pools and is reset by `prepare`.
    to_reset: bool,
    /// A pool whose reset failed, torn down once the run's own containers are off its network.
    failed: Option<(Pool, String)>,
}

impl WarmNodes {
    /// None when the scenario's backend has no verified reset (its runs start on fresh
    /// containers).
    pub fn for_run(pools: &Arc<WarmPools>, loaded: &LoadedScenario, exe: &Path) -> Option<WarmNodes> {
        loaded.scenario.backend_setup().warm_reset().ok()?;
        Some(WarmNodes {
            pools: pools.clone(),
            key: PoolKey::of(loaded, exe),
            state: tokio::sync::Mutex::new(InUse::default()),
            record: Mutex::new(NodesRecord { source: "warm-pool", ..Default::default() }),
        })
    }

    fn note(&self, pool: &Pool, built_cold_because: Option<String>) {
        *self.record.lock().expect("record lock") =
            NodesRecord { source: "warm-pool", pool: Some(pool.id.clone()), run_in_pool: Some(pool.runs), built_cold_because };
    }
}

#[async_trait::async_trait]
impl NodeSource for WarmNodes {
    /// An idle pool of this kind (reset by `prepare`), or, when there is none or the last one
    /// failed its check, a pool built now.
    async fn provision(&self, docker: Docker, site: &RunSite<'_>) -> anyhow::Result<Nodes> {
        let mut state = self.state.lock().await;
        let mut built_cold_because = None;
        if let Some((failed, why)) = state.failed.take() {
            built_cold_because = Some(why);
            let _ = failed.tear_down().await;
        }
        let (pool, to_reset) = match self.pools.take(&self.key) {
            Some(mut pool) => {
                pool.runs += 1;
                (pool, true)
            }
            None => {
                let setup = self.key.setup.as_ref();
                let reset = setup.warm_reset().map_err(anyhow::Error::msg)?;
                let mut pool = Pool::build(docker, self.key.clone(), site, setup.node_count(), reset.state_paths()).await?;
                pool.runs = 1;
                (pool, false)
            }
        };
        self.note(&pool, built_cold_because);
        let cluster = pool.cluster.join(&site.dir.run_id, &site.dir.path);
        *state = InUse { pool: Some(pool), to_reset, failed: None };
        Ok(Nodes { cluster, to_start: vec![] })
    }

    async fn prepare(&self) -> anyhow::Result<bool> {
        let mut state = self.state.lock().await;
        if !state.to_reset {
            return Ok(false);
        }
        let pool = state.pool.as_ref().expect("provisioned");
        let setup = self.key.setup.as_ref();
        let reset = setup.warm_reset().map_err(anyhow::Error::msg)?;
        match pool.reset(setup, reset).await {
            Ok(()) => Ok(true),
            Err(e) => {
                let why = format!("warm pool {}: {e:#}", pool.id);
                let pool = state.pool.take().expect("provisioned");
                state.failed = Some((pool, why.clone()));
                Err(anyhow::anyhow!(why))
            }
        }
    }

    /// The run's containers removed beside the servers' stop; the pool handed back when the
    /// run vouches for it, else torn down.
    async fn release(&self, docker: &Docker, site: &RunSite<'_>, vouched: bool) -> anyhow::Result<()> {
        let logs = site.dir.path.join("logs");
        let mut state = self.state.lock().await;
        let pool = state.pool.take();
        let ended = async {
            match &pool {
                Some(pool) => pool.end_run(&logs).await,
                None => Ok(()),
            }
        };
        let (removed, ended) = tokio::join!(teardown::remove_labelled(docker, Some(&site.dir.run_id), Some(&logs)), ended);
        if let Some((failed, _)) = state.failed.take() {
            failed.tear_down().await?;
        }
        if let Some(pool) = pool {
            if vouched && ended.is_ok() && removed.is_ok() {
                self.pools.hand_back(pool).await;
            } else {
                pool.tear_down().await?;
            }
        }
        ended?;
        removed.map(|_| ())
    }

    fn record(&self) -> NodesRecord {
        self.record.lock().expect("record lock").clone()
    }
}
