//! Faults: one module each, behind one small trait. The nemesis records every inject and heal
//! as events of process "nemesis", and heals whatever is still active at the end and on abort.

pub mod pause;

use crate::containers::Cluster;
use crate::scenario::FaultKind;

#[async_trait::async_trait]
pub trait Fault: Send + Sync {
    /// Starts the fault on one member of the cluster (a node or a worker container name).
    async fn inject(&self, cluster: &Cluster, target: &str) -> anyhow::Result<()>;
    /// Undoes it. Must be safe to call on a target that has already been healed or has exited.
    async fn heal(&self, cluster: &Cluster, target: &str) -> anyhow::Result<()>;
}

pub fn fault_for(kind: FaultKind) -> Box<dyn Fault> {
    match kind {
        FaultKind::Pause => Box::new(pause::Pause),
    }
}
