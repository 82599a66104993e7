//! Where a run's nodes come from: fresh containers made for the run ([`fresh`]), a warm pool's
//! containers kept from one run to the next and reset between them ([`warm_pool`]), or hosts
//! named in a nodes-file and reached over SSH ([`hosts`]). The run asks its source for a
//! cluster with clean nodes and hands them back at the end without knowing which it has.

pub mod fresh;
pub mod hosts;
pub mod node_state;
pub mod warm_pool;

use crate::containers::{Cluster, ContainerSpec};
use crate::run_store::RunDir;
use crate::scenario::LoadedScenario;
use bollard::Docker;
use serde::Serialize;
use std::path::Path;

/// What a source needs to know of the run it serves.
pub struct RunSite<'a> {
    pub dir: &'a RunDir,
    /// The host-built binary mounted into the containers.
    pub exe: &'a Path,
    pub seed: u64,
    pub loaded: &'a LoadedScenario,
}

/// The run's cluster as a source hands it over.
pub struct Nodes {
    pub cluster: Cluster,
    /// Node containers still to start (with the resource's, side by side): a fresh source's.
    pub to_start: Vec<ContainerSpec>,
}

/// One way of getting a run's nodes.
#[async_trait::async_trait]
pub trait NodeSource: Send + Sync {
    /// Once the run has its folder, before anything runs: hosts are claimed for the run.
    async fn claim(&self, _dir: &RunDir, _loaded: &LoadedScenario) -> anyhow::Result<()> {
        Ok(())
    }

    /// The run's network and nodes.
    async fn provision(&self, docker: Docker, site: &RunSite<'_>) -> anyhow::Result<Nodes>;

    /// Makes the nodes clean, beside the start of the run's own containers: Ok(true) when the
    /// backend's servers were started too (a warm pool's reset), Ok(false) when they are still
    /// to start. Err: the nodes cannot be vouched for; the run removes its containers and asks
    /// `provision` again, which then builds fresh nodes (the reason goes to run.json).
    async fn prepare(&self) -> anyhow::Result<bool> {
        Ok(false)
    }

    /// After the run (whatever its ending): its own containers removed with their logs saved,
    /// and its nodes torn down or, when `vouched` (the run ended normally, every fault healed),
    /// handed back for the next run.
    async fn release(&self, docker: &Docker, site: &RunSite<'_>, vouched: bool) -> anyhow::Result<()>;

    /// What run.json says of where the nodes came from.
    fn record(&self) -> NodesRecord;
}

/// run.json's `nodes`.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct NodesRecord {
    /// `fresh-containers`, `warm-pool` or `ssh-hosts`.
    pub source: &'static str,
    /// The warm pool's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// Which run of its pool this is (1: the pool was built for it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_in_pool: Option<u32>,
    /// Why a warm pool was not used as it stood: a reset that failed or did not verify, so the
    /// pool was torn down and this run's nodes were built cold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub built_cold_because: Option<String>,
}
