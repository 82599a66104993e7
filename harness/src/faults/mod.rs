//! Faults: one module each, behind one small trait. The nemesis records every inject and heal
//! as events of process "nemesis", and heals whatever is still active at the end and on abort.

pub mod kill;
pub mod pause;

use crate::containers::{Cluster, Role};
use crate::lock_backends::BackendSetup;
use crate::scenario::FaultKind;

/// What a fault may act on: the containers, and the backend (to find or restart its servers).
pub struct FaultContext<'a> {
    pub cluster: &'a Cluster,
    pub backend: &'a dyn BackendSetup,
}

impl FaultContext<'_> {
    /// Whether `target` names a node (its server process is the target) or a worker.
    pub fn is_node(&self, target: &str) -> anyhow::Result<bool> {
        Ok(self.cluster.member(target)?.role == Role::Node)
    }

    /// Sends a signal to the backend's server process inside a node.
    pub async fn signal_server(&self, node: &str, signal: &str) -> anyhow::Result<()> {
        let process = self.backend.server_process();
        self.cluster.exec_ok(node, &["pkill", &format!("-{signal}"), "-x", process]).await.map(|_| ())
    }
}

#[async_trait::async_trait]
pub trait Fault: Send + Sync {
    /// Starts the fault on one member of the cluster (a node or a worker container name).
    async fn inject(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()>;
    /// Undoes it. Must be safe to call on a target that has already been healed or has exited.
    async fn heal(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()>;
}

pub fn fault_for(kind: FaultKind) -> Box<dyn Fault> {
    match kind {
        FaultKind::Pause => Box::new(pause::Pause),
        FaultKind::Kill => Box::new(kill::Kill),
    }
}
