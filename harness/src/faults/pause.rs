//! Process pause: SIGSTOP the worker (PID 1 of its container, so the real client freezes, as in
//! a GC pause or a VM steal), SIGCONT it when the fault ends.

use super::Fault;
use crate::containers::Cluster;

pub struct Pause;

#[async_trait::async_trait]
impl Fault for Pause {
    async fn inject(&self, cluster: &Cluster, target: &str) -> anyhow::Result<()> {
        cluster.signal(target, "SIGSTOP").await
    }

    async fn heal(&self, cluster: &Cluster, target: &str) -> anyhow::Result<()> {
        match cluster.signal(target, "SIGCONT").await {
            // A container that has exited has nothing left to resume.
            Err(e) if format!("{e:#}").contains("is not running") => Ok(()),
            other => other,
        }
    }
}
