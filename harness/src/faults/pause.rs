//! Process pause, as in a GC pause or a VM steal. On a client, the whole container is frozen
//! (the cgroup freezer, `docker pause`) and thawed when the fault ends: the worker and a client
//! program with every process it started. On a node, SIGSTOP then SIGCONT to the backend's
//! server process.

use super::{FaultAction, FaultContext};
use serde::{Deserialize, Serialize};

/// No parameters: the step's target and duration say it all.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Pause {}

#[async_trait::async_trait]
impl FaultAction for Pause {
    async fn inject(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        if ctx.is_node(target)? {
            ctx.signal_server(target, "STOP").await
        } else {
            ctx.cluster.freeze(target).await
        }
    }

    async fn heal(&self, ctx: &FaultContext<'_>, target: &str) -> anyhow::Result<()> {
        let result = if ctx.is_node(target)? { ctx.signal_server(target, "CONT").await } else { ctx.cluster.thaw(target).await };
        match result {
            // A container that has exited has nothing left to resume.
            Err(e) if format!("{e:#}").contains("is not running") || format!("{e:#}").contains("is not paused") => Ok(()),
            other => other,
        }
    }
}
